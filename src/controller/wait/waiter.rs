//! The wait itself: one object watched until a condition holds, a timeout passes or the
//! caller cancels.
//!
//! How it watches, retries and ends: see [`Wait`] (this module is private; its docs are
//! on the type).

use std::fmt;
use std::time::{Duration, Instant};

use super::condition::{Condition, Verdict};
use crate::api::{Meta, Object, WatchEvent};
use crate::cache::Backoff;
use crate::client::{Api, Cancel, ListParams, WatchParams};
use crate::error::Error;

/// The longest single watch request; longer waits chain several.
const MAX_WATCH_SECONDS: u64 = 300;

/// Why a wait ended without its condition.
pub enum WaitError<K> {
    /// The timeout passed first.
    TimedOut {
        /// The object waited on, e.g. `deployments lab/web`.
        object: String,
        /// What was still missing at the end (the condition's last
        /// [`Verdict::Waiting`]).
        waiting_for: String,
        /// The last state seen (`None`: it did not exist).
        last: Option<Box<K>>,
    },
    /// The condition said it will not hold ([`Verdict::Failed`]).
    Failed {
        /// The object waited on.
        object: String,
        /// The condition's reason.
        reason: String,
        /// The state it judged.
        last: Option<Box<K>>,
    },
    /// The wait's [`Cancel`] fired.
    Cancelled {
        /// The object waited on.
        object: String,
    },
    /// A request failed with an error that retrying would not mend.
    Api(Error),
}

impl<K> WaitError<K> {
    /// The last state seen, for a timeout or a failure.
    pub fn last(&self) -> Option<&K> {
        match self {
            WaitError::TimedOut { last, .. } | WaitError::Failed { last, .. } => last.as_deref(),
            _ => None,
        }
    }

    /// True for [`WaitError::TimedOut`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, WaitError::TimedOut { .. })
    }
}

impl<K: Object> fmt::Display for WaitError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::TimedOut {
                object,
                waiting_for,
                last,
            } => {
                write!(
                    f,
                    "timed out waiting for {object}: still waiting for {waiting_for}"
                )?;
                match last {
                    Some(o) => write!(
                        f,
                        " (last seen at resourceVersion {})",
                        o.metadata().resource_version()
                    ),
                    None => write!(f, " (it does not exist)"),
                }
            }
            WaitError::Failed { object, reason, .. } => {
                write!(f, "waiting for {object} failed: {reason}")
            }
            WaitError::Cancelled { object } => write!(f, "waiting for {object} was cancelled"),
            WaitError::Api(e) => write!(f, "waiting: {e}"),
        }
    }
}

/// Names the last state by key and version only: an object (a Secret) can hold secrets.
impl<K: Object> fmt::Debug for WaitError<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = |l: &Option<Box<K>>| {
            l.as_ref()
                .map(|o| format!("{}@{}", o.metadata().key(), o.metadata().resource_version()))
        };
        match self {
            WaitError::TimedOut {
                object,
                waiting_for,
                last: l,
            } => f
                .debug_struct("TimedOut")
                .field("object", object)
                .field("waiting_for", waiting_for)
                .field("last", &last(l))
                .finish(),
            WaitError::Failed {
                object,
                reason,
                last: l,
            } => f
                .debug_struct("Failed")
                .field("object", object)
                .field("reason", reason)
                .field("last", &last(l))
                .finish(),
            WaitError::Cancelled { object } => {
                f.debug_struct("Cancelled").field("object", object).finish()
            }
            WaitError::Api(e) => f.debug_tuple("Api").field(e).finish(),
        }
    }
}

impl<K: Object> std::error::Error for WaitError<K> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WaitError::Api(e) => Some(e),
            _ => None,
        }
    }
}

/// A wait on one object until a condition holds, a timeout passes or the caller cancels.
///
/// How: a list narrowed to the name (`fieldSelector=metadata.name=NAME`) gives the object,
/// or its absence, and a resourceVersion even when it does not exist (which a get cannot);
/// a watch with the same selector from that version brings every change after it. The
/// condition is checked on the listed state and after every event. A watch that ends (the
/// server's timeout, a dropped connection) is started again from the last version seen; a
/// 410 Gone (the version was compacted away) starts over with a fresh list. Transient
/// errors (5xx, 429, connection failures) are retried with back-off (jitter, capped at 5 s);
/// any other error (403, 404 of the resource itself) ends the wait with
/// [`WaitError::Api`].
///
/// The timeout bounds everything: each watch asks the server to end at the deadline
/// (`timeoutSeconds`), and back-off pauses end there too. A [`Cancel`] (given to
/// [`Wait::cancel`], or already held by the Api's client) ends a wait from another thread at
/// once: it shuts the watch's connection down.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::controller::wait::{conditions, Wait};
/// use kube_informer::{Api, Client};
/// # let server = kube_informer::testing::ApiServer::start();
/// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
/// let waiter = std::thread::spawn({
///     let api = api.clone();
///     move || Wait::new(&api, "settings", Duration::from_secs(60)).until(conditions::exists())
/// });
/// server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
/// let cm = waiter.join().unwrap()?.expect("it exists");
/// assert_eq!(cm.metadata.name(), "settings");
///
/// // A timeout reports what was still missing, and the last state seen.
/// let err = Wait::new(&api, "settings", Duration::from_millis(100))
///     .until(|o: Option<&DynamicObject>| o.is_some_and(|o| o.metadata.label("ready").is_some()))
///     .unwrap_err();
/// assert!(err.is_timeout());
/// assert_eq!(err.last().unwrap().metadata.name(), "settings");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Wait<'a, K> {
    api: &'a Api<K>,
    name: String,
    timeout: Duration,
    cancel: Option<Cancel>,
}

impl<K> fmt::Debug for Wait<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("api", self.api)
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<'a, K: Object> Wait<'a, K> {
    /// A wait on the object `name` of `api` (in its namespace), of at most `timeout`.
    pub fn new(api: &'a Api<K>, name: &str, timeout: Duration) -> Self {
        Wait {
            api,
            name: name.to_owned(),
            timeout,
            cancel: None,
        }
    }

    /// Ends the wait with [`WaitError::Cancelled`] when `cancel` fires (from any thread).
    pub fn cancel(mut self, cancel: &Cancel) -> Self {
        self.cancel = Some(cancel.clone());
        self
    }

    /// The Api, with the wait's [`Cancel`] when one was given.
    pub(super) fn api(&self) -> Api<K> {
        match &self.cancel {
            Some(c) => self.api.clone().with_cancel(c.clone()),
            None => self.api.clone(),
        }
    }

    /// The object's name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        let r = self.api.resource();
        let plural = if r.group.is_empty() {
            r.plural.clone()
        } else {
            format!("{}.{}", r.plural, r.group)
        };
        match self.api.namespace() {
            Some(ns) => format!("{plural} {ns}/{}", self.name),
            None => format!("{plural} {}", self.name),
        }
    }

    /// Waits until `condition` holds; returns the object as it then was (`None` when the
    /// condition held of its absence, as [`deleted`](super::conditions::deleted) does).
    pub fn until<C: Condition<K>>(&self, condition: C) -> Result<Option<K>, WaitError<K>> {
        let object = self.describe();
        if self.name.is_empty() {
            return Err(WaitError::Api(Error::InvalidInput(format!(
                "wait: {}: an object name is required",
                self.api.resource().plural
            ))));
        }
        let api = self.api();
        let cancel = api.client().cancel_token().cloned();
        let deadline = Instant::now().checked_add(self.timeout);
        let selector = format!("metadata.name={}", self.name);
        let mut backoff = Backoff::new(
            Duration::from_millis(100),
            Duration::from_secs(5),
            Duration::from_secs(60),
        );
        let mut last: Option<K> = None;
        let mut waiting_for = String::from("the first read");
        let cancelled = || cancel.as_ref().is_some_and(Cancel::is_cancelled);
        let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));

        // What ends the wait, given the latest state.
        macro_rules! judge {
            () => {
                match condition.check(last.as_ref()) {
                    Verdict::Met => return Ok(last),
                    Verdict::Failed(reason) => {
                        return Err(WaitError::Failed {
                            object,
                            reason,
                            last: last.map(Box::new),
                        })
                    }
                    Verdict::Waiting(w) => waiting_for = w,
                }
            };
        }
        // Sorts a request's error: return it, or go on after a pause.
        macro_rules! on_error {
            ($e:expr) => {{
                let e: Error = $e;
                if e.is_cancelled() || cancelled() {
                    return Err(WaitError::Cancelled { object });
                }
                if !(e.is_transient()
                    || e.is_gone()
                    || matches!(e, Error::Io { .. } | Error::Transport { .. }))
                {
                    return Err(WaitError::Api(e));
                }
                log::debug!("waiting for {object}: {e}; retrying");
                if pause(&mut backoff, cancel.as_ref(), remaining()) {
                    return Err(WaitError::Cancelled { object });
                }
            }};
        }

        // A zero timeout still makes one read and one check.
        let mut tried = false;
        'list: loop {
            if cancelled() {
                return Err(WaitError::Cancelled { object });
            }
            if tried && remaining() == Some(Duration::ZERO) {
                return Err(WaitError::TimedOut {
                    object,
                    waiting_for,
                    last: last.map(Box::new),
                });
            }
            tried = true;
            let list = match api.list(&ListParams::default().fields(&selector)) {
                Ok(l) => l,
                Err(e) => {
                    on_error!(e);
                    continue 'list;
                }
            };
            last = list
                .items
                .into_iter()
                .find(|o| o.metadata().name() == self.name);
            let mut rv = list.metadata.resource_version.unwrap_or_default();
            judge!();
            loop {
                let left = remaining();
                if left == Some(Duration::ZERO) {
                    return Err(WaitError::TimedOut {
                        object,
                        waiting_for,
                        last: last.map(Box::new),
                    });
                }
                let seconds = left
                    .map_or(MAX_WATCH_SECONDS, |d| d.as_secs_f64().ceil() as u64)
                    .clamp(1, MAX_WATCH_SECONDS);
                let params = WatchParams::from_version(&rv)
                    .fields(&selector)
                    .timeout(seconds as u32);
                let stream = match api.watch(&params) {
                    Ok(s) => s,
                    Err(e) if e.is_gone() => continue 'list,
                    Err(e) => {
                        on_error!(e);
                        continue;
                    }
                };
                let (started, mut heard) = (Instant::now(), false);
                for event in stream {
                    heard = true;
                    match event {
                        Ok(WatchEvent::Added(o)) | Ok(WatchEvent::Modified(o)) => {
                            rv = o.metadata().resource_version().to_owned();
                            last = Some(o);
                        }
                        Ok(WatchEvent::Deleted(o)) => {
                            rv = o.metadata().resource_version().to_owned();
                            last = None;
                        }
                        Ok(WatchEvent::Bookmark(b)) => {
                            rv = b.resource_version;
                            continue;
                        }
                        Ok(WatchEvent::Error(status)) => {
                            // The stream reports these as errors; kept for completeness.
                            on_error!(Error::Api {
                                request: "watch".into(),
                                status
                            });
                            continue 'list;
                        }
                        Err(e) if e.is_gone() => continue 'list,
                        Err(Error::WatchLine { .. }) => continue,
                        Err(e) => {
                            on_error!(e);
                            break;
                        }
                    }
                    backoff.reset();
                    judge!();
                }
                if cancelled() {
                    return Err(WaitError::Cancelled { object });
                }
                // A watch closed at once, again and again, must not spin.
                if !heard
                    && started.elapsed() < Duration::from_secs(1)
                    && pause(&mut backoff, cancel.as_ref(), remaining())
                {
                    return Err(WaitError::Cancelled { object });
                }
            }
        }
    }
}

/// Sleeps the back-off's next delay (at most until the deadline); true when cancelled.
pub(super) fn pause(
    backoff: &mut Backoff,
    cancel: Option<&Cancel>,
    remaining: Option<Duration>,
) -> bool {
    let d = backoff.next_delay().min(remaining.unwrap_or(Duration::MAX));
    match cancel {
        Some(c) => c.sleep(d),
        None => {
            std::thread::sleep(d);
            false
        }
    }
}

/// [`Wait::new`]`(api, name, timeout).until(condition)`.
pub fn await_condition<K: Object, C: Condition<K>>(
    api: &Api<K>,
    name: &str,
    condition: C,
    timeout: Duration,
) -> Result<Option<K>, WaitError<K>> {
    Wait::new(api, name, timeout).until(condition)
}
