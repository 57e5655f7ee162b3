//! What an informer tells about itself: synced or not, watching or not, the last error with
//! its Status, how many failures in a row, how long since the last event, and counters a
//! program can export to its metrics system.
//!
//! Without this a 401, a 403 or a refused connection during the initial list is invisible
//! unless a logger or a callback is installed: `wait_for_cache_sync` just says `false`. A
//! health view is a plain value (no runtime, no metrics crate): print it, log it, or copy
//! its counters into whatever the program exports.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use crate::api::Status;
use crate::error::Error;

/// Why a reflector listed again after its first list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RelistCause {
    /// The version to resume from is gone (410 Expired) or not yet served (too large).
    Expired,
    /// The watch failed in a way that may have lost an event (a bad line, a refused watch).
    WatchError,
    /// A list "at least as fresh as" the version whose watch had just failed answered a
    /// version no newer than it (a watch from there would fail again): listed consistently.
    StaleList,
    /// The server's present version is older than the one the informer reached (restored
    /// from a backup, rebuilt behind the same address): listed consistently from scratch.
    ServerBehind,
}

impl RelistCause {
    /// Every cause, in order.
    pub const ALL: [RelistCause; 4] = [
        RelistCause::Expired,
        RelistCause::WatchError,
        RelistCause::StaleList,
        RelistCause::ServerBehind,
    ];

    /// A short name, for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            RelistCause::Expired => "expired",
            RelistCause::WatchError => "watch_error",
            RelistCause::StaleList => "stale_list",
            RelistCause::ServerBehind => "server_behind",
        }
    }
}

impl fmt::Display for RelistCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Counters of one reflector since it started. They only grow (the version excepted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReflectorStats {
    /// Lists that completed (the first one and every relist).
    pub lists: u64,
    /// List attempts that failed (each is retried).
    pub list_failures: u64,
    /// Relists, by cause.
    pub relists: BTreeMap<RelistCause, u64>,
    /// Watches started after the first one (reconnects, server timeouts included).
    pub watch_restarts: u64,
    /// Watch events handed to the FIFO (ADDED, MODIFIED, DELETED).
    pub events: u64,
    /// Bookmarks received.
    pub bookmarks: u64,
    /// Errors, by kind: `transport`, `io`, `decode`, `watch_line`, `api_<code>` (`api_410`,
    /// `api_403`, ...), `config`, `invalid_input`, `cancelled`.
    pub errors: BTreeMap<String, u64>,
    /// The resourceVersion of the last list, event or bookmark ("" before the first).
    pub last_resource_version: String,
}

/// An error as the health view keeps it: what it said, its Status, when.
#[derive(Clone, Debug, PartialEq)]
pub struct LastError {
    /// The error's message (it names the request; it never carries credentials).
    pub message: String,
    /// The server's Status, for API failures.
    pub status: Option<Status>,
    /// The error's kind, as counted in [`ReflectorStats::errors`].
    pub kind: String,
    /// How long ago it happened (at the time of the snapshot).
    pub ago: Duration,
}

/// One handler's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandlerStats {
    /// The registration's id (in registration order).
    pub id: u64,
    /// Notifications handed to the handler (calls of `on_add`/`on_update`/`on_delete`).
    pub delivered: u64,
    /// Notifications merged into another one while the handler lagged behind (see the
    /// listener's memory policy), or cancelled out (an add and a delete it never saw).
    pub coalesced: u64,
    /// Notifications waiting for the handler now.
    pub backlog: usize,
    /// Panics of the handler (each caught and reported).
    pub panics: u64,
}

/// A snapshot of an informer's health. `Display` prints it on one line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InformerHealth {
    /// The informer's name (its resource, or the factory's name for it).
    pub name: String,
    /// Started and not yet stopped.
    pub running: bool,
    /// The initial list is in the cache.
    pub synced: bool,
    /// A watch connection is open.
    pub watching: bool,
    /// Objects in the cache.
    pub cached: usize,
    /// Failures since the last list or watch that succeeded.
    pub consecutive_failures: u32,
    /// How long lists and watches have kept failing: since the first failure after the last
    /// success (`None` while the last attempt succeeded). Probes judge a watch by it.
    pub failing_for: Option<Duration>,
    /// How long the resource has not been served: every list and watch since then was
    /// answered 404 (a custom resource whose CRD was deleted, an API group switched off).
    /// A *gone* resource is not *failing*: [`failing_for`](Self::failing_for) is `None`
    /// meanwhile. The reflector keeps asking, on a slow back-off
    /// ([`ReflectorConfig::gone_backoff_max`](super::ReflectorConfig::gone_backoff_max)),
    /// and lists again as soon as the resource is served again.
    pub gone_for: Option<Duration>,
    /// The most recent error, even if things recovered since.
    pub last_error: Option<LastError>,
    /// Time since the last list, event or bookmark.
    pub since_last_event: Option<Duration>,
    /// The reflector's counters.
    pub reflector: ReflectorStats,
    /// Every registered handler's counters.
    pub handlers: Vec<HandlerStats>,
}

impl InformerHealth {
    /// Synced, and no failure since the last success.
    pub fn is_healthy(&self) -> bool {
        self.synced && self.consecutive_failures == 0
    }

    /// True while the resource is not served (see [`gone_for`](Self::gone_for)).
    pub fn is_gone(&self) -> bool {
        self.gone_for.is_some()
    }
}

impl fmt::Display for InformerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.running, self.synced) {
            (false, _) => "not running",
            (true, true) => "synced",
            (true, false) => "not synced",
        };
        write!(f, "{}: {state}, {} cached", self.name, self.cached)?;
        if let Some(d) = self.gone_for {
            write!(f, ", gone (not served for {:.0}s)", d.as_secs_f64())?;
        }
        if self.running {
            f.write_str(if self.watching {
                ", watching"
            } else {
                ", not watching"
            })?;
        }
        if let Some(d) = self.since_last_event {
            write!(f, ", last event {:.1}s ago", d.as_secs_f64())?;
        }
        let relists: u64 = self.reflector.relists.values().sum();
        write!(
            f,
            ", lists {} (relists {relists}), events {}",
            self.reflector.lists, self.reflector.events
        )?;
        if self.consecutive_failures > 0 {
            write!(f, ", {} failures in a row", self.consecutive_failures)?;
        }
        if let Some(e) = &self.last_error {
            write!(
                f,
                "; last error {:.1}s ago: {}",
                e.ago.as_secs_f64(),
                e.message
            )?;
        }
        Ok(())
    }
}

/// The kind of an error, as counted in [`ReflectorStats::errors`].
pub(crate) fn error_kind(e: &Error) -> String {
    match e {
        Error::Api { status, .. } => format!("api_{}", status.code),
        Error::Transport { .. } => "transport".into(),
        Error::Io { .. } => "io".into(),
        Error::Decode { .. } => "decode".into(),
        Error::WatchLine { .. } => "watch_line".into(),
        Error::Config(_) => "config".into(),
        Error::InvalidInput(_) => "invalid_input".into(),
        Error::Pod { .. } => "pod".into(),
        Error::Cancelled { .. } => "cancelled".into(),
    }
}

/// What a reflector records as it goes; snapshots are taken from it.
#[derive(Debug, Default)]
pub(crate) struct HealthRecord {
    /// The counters, with the resourceVersion of the last list, event or bookmark.
    pub stats: ReflectorStats,
    pub consecutive_failures: u32,
    /// The first failure after the last success.
    pub failing_since: Option<Instant>,
    /// The first of the 404s in a row that say the resource is not served.
    pub gone_since: Option<Instant>,
    pub last_error: Option<(LastError, Instant)>,
    /// When the last list, event or bookmark came.
    pub last_activity: Option<Instant>,
    pub watches: u64,
}

impl HealthRecord {
    /// Counts an error and keeps it as the last one.
    pub fn failed(&mut self, e: &Error) {
        let kind = error_kind(e);
        *self.stats.errors.entry(kind.clone()).or_default() += 1;
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.failing_since.get_or_insert_with(Instant::now);
        if e.is_not_found() {
            self.gone_since.get_or_insert_with(Instant::now);
        } else if e.status().is_some() {
            // Another answer from the server: it serves the resource (a 403, a 500); a
            // dropped connection or a refused one says nothing either way.
            self.gone_since = None;
        }
        let last = LastError {
            message: e.to_string(),
            status: e.status().cloned(),
            kind,
            ago: Duration::ZERO,
        };
        self.last_error = Some((last, Instant::now()));
    }

    /// A list or a watch worked: the run of failures is over.
    pub fn succeeded(&mut self) {
        self.consecutive_failures = 0;
        self.failing_since = None;
        self.gone_since = None;
    }

    /// How long lists and watches have kept failing, unless the resource is gone (a gone
    /// resource is not failing: see [`InformerHealth::gone_for`]).
    pub fn failing_for(&self) -> Option<Duration> {
        match self.gone_since {
            Some(_) => None,
            None => self.failing_since.map(|t| t.elapsed()),
        }
    }

    /// How long the resource has not been served (`None` while it is).
    pub fn gone_for(&self) -> Option<Duration> {
        self.gone_since.map(|t| t.elapsed())
    }

    /// A list, event or bookmark brought the server's state up to `rv`.
    pub fn reached(&mut self, rv: &str) {
        rv.clone_into(&mut self.stats.last_resource_version);
        self.last_activity = Some(Instant::now());
    }

    /// The last error, aged to now.
    pub fn last_error(&self) -> Option<LastError> {
        self.last_error.as_ref().map(|(e, at)| LastError {
            ago: at.elapsed(),
            ..e.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_says_what_is_wrong_on_one_line() {
        let mut rec = HealthRecord::default();
        let e = Error::Api {
            request: "GET /api/v1/pods?limit=500".into(),
            status: Box::new(Status::failure(403, "Forbidden", "pods is forbidden")),
        };
        rec.failed(&e);
        rec.failed(&e);
        let h = InformerHealth {
            name: "pods".into(),
            running: true,
            consecutive_failures: rec.consecutive_failures,
            last_error: rec.last_error(),
            reflector: rec.stats.clone(),
            ..Default::default()
        };
        let line = h.to_string();
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with("pods: not synced, 0 cached, not watching"),
            "{line}"
        );
        assert!(line.contains("2 failures in a row"), "{line}");
        assert!(line.contains("403 Forbidden: pods is forbidden"), "{line}");
        assert_eq!(h.reflector.errors.get("api_403"), Some(&2));
        assert_eq!(h.last_error.unwrap().status.unwrap().code, 403);
        assert!(rec.failing_since.is_some());
        rec.succeeded();
        assert_eq!(rec.consecutive_failures, 0);
        assert!(rec.failing_since.is_none());
        assert!(rec.last_error().is_some(), "the last error stays visible");
    }

    #[test]
    fn a_run_of_404s_is_gone_not_failing_until_the_server_says_otherwise() {
        let not_found = Error::Api {
            request: "GET /apis/lab.example.com/v1/widgets?limit=500".into(),
            status: Box::new(Status::failure(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )),
        };
        let mut rec = HealthRecord::default();
        rec.failed(&not_found);
        assert!(rec.gone_for().is_some());
        assert!(rec.failing_for().is_none(), "gone is not failing");
        // A dropped connection says nothing about the resource: still gone.
        rec.failed(&Error::Io {
            request: "watch".into(),
            source: std::io::Error::other("Peer disconnected"),
        });
        assert!(rec.gone_for().is_some());
        // Another answer of the server (a 500) means it serves the resource: failing.
        let e500 = Error::Api {
            request: "GET".into(),
            status: Box::new(Status::failure(500, "InternalError", "etcd")),
        };
        rec.failed(&e500);
        assert!(rec.gone_for().is_none());
        assert!(rec.failing_for().is_some());
        rec.failed(&not_found);
        assert!(rec.gone_for().is_some());
        rec.succeeded();
        assert!(rec.gone_for().is_none() && rec.failing_for().is_none());
        let h = InformerHealth {
            name: "widgets".into(),
            running: true,
            gone_for: Some(Duration::from_secs(12)),
            ..Default::default()
        };
        assert!(h.is_gone() && !h.is_healthy());
        assert!(h.to_string().contains(", gone (not served for 12s)"), "{h}");
    }
}
