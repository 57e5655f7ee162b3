//! [`retry_on_conflict`]: optimistic concurrency made bearable (client-go's
//! `RetryOnConflict`).
//!
//! A replace carrying the `metadata.resourceVersion` it read fails with 409 Conflict when
//! someone wrote the object in between. The cure is to read again, apply the change again,
//! and write again: the closure does all three, and this helper calls it again after a short
//! wait with jitter, a bounded number of times. Only a 409 whose reason is `Conflict` (or
//! has no reason) is retried: `AlreadyExists` (also 409) and every other error come back at
//! once, as does the last conflict when the steps run out.
//!
//! [`Client::retry_on_conflict`] does the same and gives up with
//! [`Error::Cancelled`](crate::Error::Cancelled) as soon as the client's
//! [`Cancel`](super::Cancel) fires (waits sleep on it).

use std::time::Duration;

use super::cancel::Cancel;
use super::client::Client;
use crate::error::{Error, Result};

/// How [`retry_on_conflict`] waits: `steps` attempts in all, the first wait `initial`, each
/// next one `factor` times longer up to `max`, each stretched by a random fraction up to
/// `jitter`. The default is client-go's `DefaultRetry`: 5 steps, 10 ms, factor 1, jitter 0.1.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::client::RetryBackoff;
/// // client-go's DefaultBackoff: 4 steps from 10 ms, five times longer each.
/// let b = RetryBackoff::new().steps(4).factor(5.0);
/// assert_eq!(b, RetryBackoff::new().steps(4).factor(5.0).initial(Duration::from_millis(10)));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RetryBackoff {
    /// How many attempts in all (at least one is made).
    pub(crate) steps: u32,
    /// The first wait.
    pub(crate) initial: Duration,
    /// How much longer each wait is than the one before (1: all the same).
    pub(crate) factor: f64,
    /// Up to this fraction of a wait is added at random.
    pub(crate) jitter: f64,
    /// No wait is longer than this (before jitter).
    pub(crate) max: Duration,
}

impl RetryBackoff {
    /// client-go's `DefaultRetry` (the same as `RetryBackoff::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// How many attempts in all (at least one is made).
    pub fn steps(mut self, value: u32) -> Self {
        self.steps = value;
        self
    }

    /// The first wait.
    pub fn initial(mut self, value: Duration) -> Self {
        self.initial = value;
        self
    }

    /// How much longer each wait is than the one before (1: all the same).
    pub fn factor(mut self, value: f64) -> Self {
        self.factor = value;
        self
    }

    /// Up to this fraction of a wait is added at random.
    pub fn jitter(mut self, value: f64) -> Self {
        self.jitter = value;
        self
    }

    /// No wait is longer than this (before jitter).
    pub fn max(mut self, value: Duration) -> Self {
        self.max = value;
        self
    }
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            steps: 5,
            initial: Duration::from_millis(10),
            factor: 1.0,
            jitter: 0.1,
            max: Duration::from_secs(10),
        }
    }
}

/// Calls `f` until it succeeds, fails with something other than a conflict, or the steps
/// run out (then the last conflict is returned): client-go's `RetryOnConflict`.
///
/// A replace carrying the `metadata.resourceVersion` it read fails with 409 Conflict when
/// someone wrote the object in between. The cure is to read again, apply the change again,
/// and write again: the closure does all three, and this helper calls it again after a short
/// wait with jitter, a bounded number of times. Only a 409 whose reason is `Conflict` (or
/// has no reason) is retried: `AlreadyExists` (also 409) and every other error come back at
/// once, as does the last conflict when the steps run out.
///
/// [`Client::retry_on_conflict`] does the same and gives up with
/// [`Error::Cancelled`](crate::Error::Cancelled) as soon as the client's
/// [`Cancel`](super::Cancel) fires (waits sleep on it).
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::client::{retry_on_conflict, PostParams, RetryBackoff};
/// use kube_informer::{Api, Client};
/// # let server = kube_informer::testing::ApiServer::start();
/// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// # server.create(&cms, serde_json::json!({"metadata": {"name": "counter", "namespace": "lab"}, "data": {"n": "0"}})).unwrap();
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
/// let updated = retry_on_conflict(&RetryBackoff::default(), || {
///     // Read, change, write: the write carries the resourceVersion just read.
///     let mut cm: serde_json::Value = serde_json::to_value(api.get("counter")?).unwrap();
///     let n: u32 = cm["data"]["n"].as_str().unwrap_or("0").parse().unwrap_or(0);
///     cm["data"]["n"] = (n + 1).to_string().into();
///     api.replace("counter", &PostParams::default(), &cm)
/// })?;
/// assert_eq!(updated.decode_field::<serde_json::Value>("data").unwrap().unwrap()["n"], "1");
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub fn retry_on_conflict<T>(backoff: &RetryBackoff, f: impl FnMut() -> Result<T>) -> Result<T> {
    retry(backoff, None, f)
}

impl Client {
    /// [`retry_on_conflict`], its waits ended by this client's [`Cancel`] (if it has one):
    /// cancelled, it returns [`Error::Cancelled`].
    pub fn retry_on_conflict<T>(
        &self,
        backoff: &RetryBackoff,
        f: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        retry(backoff, self.cancel_token(), f)
    }
}

/// True for the 409s worth another read-modify-write.
fn is_retryable_conflict(e: &Error) -> bool {
    e.status()
        .is_some_and(|s| s.code == 409 && (s.reason == "Conflict" || s.reason.is_empty()))
}

fn retry<T>(
    backoff: &RetryBackoff,
    cancel: Option<&Cancel>,
    mut f: impl FnMut() -> Result<T>,
) -> Result<T> {
    let steps = backoff.steps.max(1);
    let mut wait = backoff.initial.min(backoff.max);
    let mut rng = seed();
    for step in 1..=steps {
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Err(cancelled());
        }
        match f() {
            Err(e) if step < steps && is_retryable_conflict(&e) => {
                log::debug!("{e}; retrying (attempt {} of {steps})", step + 1);
            }
            other => return other,
        }
        let jitter = backoff.jitter.clamp(0.0, 10.0) * next_fraction(&mut rng);
        let this = wait.mul_f64(1.0 + jitter);
        let cancelled_while_waiting = match cancel {
            Some(c) => c.sleep(this),
            None => {
                std::thread::sleep(this);
                false
            }
        };
        if cancelled_while_waiting {
            return Err(cancelled());
        }
        wait = Duration::try_from_secs_f64(wait.as_secs_f64() * backoff.factor.max(0.0))
            .unwrap_or(backoff.max)
            .min(backoff.max);
    }
    unreachable!("the last step returns")
}

fn cancelled() -> Error {
    Error::Cancelled {
        request: "retry on conflict".into(),
    }
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9_7f4a_7c15)
        | 1
}

/// xorshift64*: a fraction in [0, 1), plenty for jitter.
fn next_fraction(rng: &mut u64) -> f64 {
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    (rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Status;

    fn err(code: u16, reason: &str) -> Error {
        Error::Api {
            request: "PUT /x".into(),
            status: Box::new(Status::failure(code, reason, "m")),
        }
    }

    fn quick() -> RetryBackoff {
        RetryBackoff::new().initial(Duration::from_millis(1))
    }

    #[test]
    fn retries_conflicts_only_and_boundedly() {
        let mut calls = 0;
        let r: Result<()> = retry_on_conflict(&quick(), || {
            calls += 1;
            Err(err(409, "Conflict"))
        });
        assert!(r.unwrap_err().is_conflict());
        assert_eq!(calls, 5);

        let mut calls = 0;
        let r = retry_on_conflict(&quick(), || {
            calls += 1;
            if calls < 3 {
                Err(err(409, "Conflict"))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.unwrap(), 3);

        for other in [err(409, "AlreadyExists"), err(500, ""), err(422, "Invalid")] {
            let mut calls = 0;
            let _ = retry_on_conflict(&quick(), || -> Result<()> {
                calls += 1;
                Err(err(other.code().unwrap(), &other.status().unwrap().reason))
            });
            assert_eq!(calls, 1, "{other}");
        }
    }

    #[test]
    fn a_cancelled_token_stops_the_retries() {
        let cancel = Cancel::new();
        cancel.cancel();
        let mut calls = 0;
        let r: Result<()> = retry(&RetryBackoff::default(), Some(&cancel), || {
            calls += 1;
            Err(err(409, "Conflict"))
        });
        assert!(r.unwrap_err().is_cancelled());
        assert_eq!(calls, 0);
    }
}
