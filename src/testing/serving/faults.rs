//! Fault injection: what can go wrong between a client and an API server, on demand.
//!
//! Each injected fault hits the next request of its [`Target`] once (inject it several times
//! to hit several requests), so a test says exactly which request fails and how.

use std::time::Duration;

/// Which requests a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Any request.
    Any,
    /// List calls (first pages and continued pages).
    List,
    /// Only list calls that carry a continue token.
    ListContinue,
    /// Watch calls (including streaming lists).
    Watch,
    /// Reads of one object.
    Get,
    /// Creates, updates, patches and deletes.
    Write,
}

/// Something going wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and a Status body; with `retry_after`, also a
    /// `Retry-After` header (429 and 503 are what servers send it with).
    Status {
        /// HTTP status code (500, 503, 429, 410, ...).
        code: u16,
        /// Seconds for the `Retry-After` header.
        retry_after: Option<u32>,
    },
    /// Watch: drop the connection (no proper end of the body) after this many events.
    CloseAfterEvents(usize),
    /// Watch: send this many events, then go silent with the connection open (a dead peer
    /// the client can only detect by its read timeout).
    SilenceAfterEvents(usize),
    /// Send this many bytes of the body, then drop the connection (mid-line for a watch,
    /// short of `Content-Length` for other answers).
    CloseAfterBytes(usize),
    /// Watch: after this many events (initial events of a streaming list count), one ERROR
    /// event with a Status of this code (410 `Expired`, 504 `Timeout`, else
    /// `InternalError`), then the body ends properly, as kube-apiserver ends a failed watch.
    ErrorEventAfter(usize, u16),
    /// Refused as "too large resource version", as kube-apiserver's watch cache refuses a
    /// request it cannot serve within 3 s (it lags behind etcd): a watch (a streaming list
    /// too) gets one ERROR event, 504 `Timeout` with the cause `ResourceVersionTooLarge`,
    /// before any event; any other request a 504 with that Status.
    TooLargeResourceVersion,
    /// Watch: send a line that is not JSON before the first event.
    GarbageLine,
    /// Wait this long before answering.
    Stall(Duration),
}

impl Fault {
    /// An answer with this status code and no `Retry-After`.
    pub fn status(code: u16) -> Fault {
        Fault::Status {
            code,
            retry_after: None,
        }
    }

    /// A 429 Too Many Requests with `Retry-After: secs`.
    pub fn too_many_requests(secs: u32) -> Fault {
        Fault::Status {
            code: 429,
            retry_after: Some(secs),
        }
    }
}

/// Pending faults, first in first out per target.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pending: Vec<(Target, Fault)>,
}

impl Faults {
    pub fn push(&mut self, target: Target, fault: Fault) {
        self.pending.push((target, fault));
    }

    /// Takes the first fault that applies to a request of kind `kind`.
    pub fn take(&mut self, kind: Target, continued: bool) -> Option<Fault> {
        let i = self.pending.iter().position(|(t, _)| {
            *t == Target::Any
                || *t == kind
                || (*t == Target::ListContinue && kind == Target::List && continued)
        })?;
        Some(self.pending.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn clear(&mut self) {
        self.pending.clear();
    }
}
