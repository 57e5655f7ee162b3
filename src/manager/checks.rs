//! The health checks behind `/healthz` and `/readyz`, as plain values.
//!
//! kube-apiserver's convention, which the kubelet, load balancers and people already read:
//! a probe is a list of named checks; it passes when all pass; a failing one says why. A
//! [`Report`] prints as kube-apiserver's `?verbose` body does (`[+]name ok`,
//! `[-]name failed: reason`, then `<probe> check passed|failed`), with the reason shown
//! rather than withheld: a controller's reasons are about its own informers and Lease, not
//! secrets.
//!
//! What the checks are (see [`Manager`](super::Manager)):
//! - **liveness** (`/healthz`, `/livez`): `ping` (the process answers), `watches` (no
//!   informer's lists and watches have kept failing longer than
//!   [`unhealthy_after`](super::ManagerBuilder::unhealthy_after), 5 minutes by default:
//!   past that, a restart is the remedy a kubelet can give — fresh connections, fresh
//!   credentials).
//! - **readiness** (`/readyz`): `informer-sync` (every informer of the manager's factory has
//!   synced), `watches` (none has kept failing longer than
//!   [`unready_after`](super::ManagerBuilder::unready_after), 30 s by default: its cache may
//!   be stale), `controllers` (every controller started), `leader-election` (with one: this
//!   replica leads, or stands by cleanly — the elector runs and its last read or write of
//!   the Lease succeeded), `shutdown` (not stopping); with
//!   [`unready_when_failing`](super::ManagerBuilder::unready_when_failing) (off by default),
//!   `reconciles` (no controller's every reconcile has failed for longer than its bound).

use std::fmt;
use std::time::Duration;

use crate::cache::InformerHealth;
use crate::controller::ControllerHealth;

/// One named check's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's name (`ping`, `informer-sync`, `watches`, `controllers`,
    /// `leader-election`, `shutdown`, and `reconciles` when asked for).
    pub name: &'static str,
    /// `None` when it passed; why it failed otherwise.
    pub failure: Option<String>,
}

impl Check {
    pub(crate) fn pass(name: &'static str) -> Self {
        Check {
            name,
            failure: None,
        }
    }

    pub(crate) fn new(name: &'static str, failure: Option<String>) -> Self {
        Check { name, failure }
    }
}

/// Which probe a report answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Is the process alive and not stuck (`/healthz`, `/livez`).
    Liveness,
    /// Should it get work (`/readyz`).
    Readiness,
}

impl Probe {
    fn word(self) -> &'static str {
        match self {
            Probe::Liveness => "healthz",
            Probe::Readiness => "readyz",
        }
    }
}

/// A probe's checks. `Display` is kube-apiserver's verbose body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Which probe.
    pub probe: Probe,
    /// Every check, in a fixed order.
    pub checks: Vec<Check>,
}

impl Report {
    /// True when every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.failure.is_none())
    }

    /// Only the check named `name` (for `/readyz/<name>`), if there is one.
    pub fn only(&self, name: &str) -> Option<Report> {
        let check = self.checks.iter().find(|c| c.name == name)?;
        Some(Report {
            probe: self.probe,
            checks: vec![check.clone()],
        })
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            match &c.failure {
                None => writeln!(f, "[+]{} ok", c.name)?,
                Some(why) => writeln!(f, "[-]{} failed: {}", c.name, why.replace('\n', " "))?,
            }
        }
        let verdict = if self.passed() { "passed" } else { "failed" };
        write!(f, "{} check {verdict}", self.probe.word())
    }
}

/// `informer-sync`: every informer synced.
pub(crate) fn informer_sync(all: &[InformerHealth]) -> Check {
    let unsynced: Vec<String> = all
        .iter()
        .filter(|h| !h.synced)
        .map(|h| match &h.last_error {
            Some(e) => format!("{} not synced (last error: {})", h.name, e.message),
            None => format!("{} not synced", h.name),
        })
        .collect();
    Check::new(
        "informer-sync",
        (!unsynced.is_empty()).then(|| unsynced.join("; ")),
    )
}

/// `watches`: no informer failing for longer than `bound`.
pub(crate) fn watches(all: &[InformerHealth], bound: Duration) -> Check {
    let failing: Vec<String> = all
        .iter()
        .filter(|h| h.failing_for.is_some_and(|d| d > bound))
        .map(|h| {
            let d = h.failing_for.unwrap_or_default();
            let last = h
                .last_error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("unknown error");
            format!(
                "{} has failed to list or watch for {:.0}s ({} failures in a row, more than {:?} allowed; last error: {last})",
                h.name,
                d.as_secs_f64(),
                h.consecutive_failures,
                bound
            )
        })
        .collect();
    Check::new("watches", (!failing.is_empty()).then(|| failing.join("; ")))
}

/// `reconciles`: no controller whose every reconcile has failed for longer than `bound`.
pub(crate) fn reconciles(all: &[ControllerHealth], bound: Duration) -> Check {
    let failing: Vec<String> = all
        .iter()
        .filter(|h| h.failing_longer_than(bound))
        .map(|h| {
            let last: Vec<String> = h
                .failing_keys
                .iter()
                .min_by_key(|k| k.ago)
                .map(|k| format!("{}: {}", k.key, k.message))
                .into_iter()
                .collect();
            format!(
                "controller {}: every reconcile has failed for {:.0}s ({} in a row, {} keys failing, more than {:?} allowed; last error: {})",
                h.name,
                h.failing_for.unwrap_or_default().as_secs_f64(),
                h.consecutive_failures,
                h.failing_keys.len(),
                bound,
                last.first().map_or("unknown", String::as_str)
            )
        })
        .collect();
    Check::new(
        "reconciles",
        (!failing.is_empty()).then(|| failing.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_names_a_controller_failing_longer_than_the_bound() {
        let health = |failing_for: Option<Duration>| ControllerHealth {
            name: "web".into(),
            stats: Default::default(),
            failing_for,
            consecutive_failures: 7,
            failing_keys: vec![crate::controller::KeyError {
                key: "lab/web".into(),
                message: "forbidden".into(),
                panicked: false,
                failures: 7,
                ago: Duration::from_secs(1),
            }],
        };
        let bound = Duration::from_secs(60);
        assert_eq!(reconciles(&[health(None)], bound).failure, None);
        assert_eq!(
            reconciles(&[health(Some(Duration::from_secs(30)))], bound).failure,
            None
        );
        let why = reconciles(&[health(Some(Duration::from_secs(90)))], bound)
            .failure
            .unwrap();
        assert!(
            why.starts_with(
                "controller web: every reconcile has failed for 90s (7 in a row, 1 keys failing"
            ),
            "{why}"
        );
        assert!(why.ends_with("last error: lab/web: forbidden)"), "{why}");
    }

    #[test]
    fn prints_like_kube_apiserver_verbose() {
        let r = Report {
            probe: Probe::Readiness,
            checks: vec![
                Check::pass("ping"),
                Check::new("informer-sync", Some("pods not synced".into())),
            ],
        };
        assert!(!r.passed());
        assert_eq!(
            r.to_string(),
            "[+]ping ok\n[-]informer-sync failed: pods not synced\nreadyz check failed"
        );
        assert_eq!(
            r.only("ping").unwrap().to_string(),
            "[+]ping ok\nreadyz check passed"
        );
        assert!(r.only("nope").is_none());
    }
}
