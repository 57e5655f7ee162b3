//! Thread names that still say something after Linux cuts them.
//!
//! `ps -L`, `top -H`, `/proc/<pid>/task/*/comm` and debuggers show a thread's name cut to 15
//! bytes on Linux (Rust's `std` cuts it there before handing it to the kernel). A name like
//! `kube-informer/pods/reflector` shows as `kube-informer/p`: every thread of an informer
//! looks alike. The library's threads are named `ki/<subject>/<role>` instead, with the
//! subject (a resource, controller, lease, queue or component) shortened to fit, so that the
//! cut name keeps both the role and a recognisable part of the subject: `ki/pods/refl`,
//! `ki/pods/lis3`, `ki/deploym/wrk1`, `ki/node-la/elec`.
//!
//! Roles: `refl` (reflector), `rsyn` (resync timer), `inf` (informer: FIFO to cache to
//! handlers), `lis<N>` (the listener thread of handler N), `page` (a list page fetched ahead),
//! `sldl` (streaming-list deadline), `stop` (a factory's parallel stop), `wrk<N>` (controller
//! worker N), `elec` / `lead` / `wdog` (leader election's elector, term and watchdog),
//! `dlay` (a work queue's delay timer), `ev` (an event recorder), `acpt` and `conn` (a
//! server's accepting thread and its connections' threads: `ki/probes/acpt`,
//! `ki/webhook/conn`), `start` / `stop` (a manager: `ki/mgr/start`), and an exec
//! credential plugin's pipe readers (`ki/exec/stdout`, `ki/exec/stderr`).

/// The longest thread name Linux keeps, in bytes.
pub(crate) const MAX_THREAD_NAME: usize = 15;

/// `ki/<subject>/<role>`, at most [`MAX_THREAD_NAME`] bytes: the role is kept whole, the
/// subject is reduced to its last `/` segment, cut before its first `.` or space (so
/// `deployments.apps` and `pods.v1 (DynamicObject)` become `deployments` and `pods`), then
/// cut to the room left (on a character boundary, at least one character).
pub(crate) fn thread_name(subject: &str, role: &str) -> String {
    let subject = subject.rsplit('/').find(|s| !s.is_empty()).unwrap_or("");
    let subject = subject
        .split(['.', ' '])
        .find(|s| !s.is_empty())
        .unwrap_or(subject);
    let room = MAX_THREAD_NAME.saturating_sub("ki/".len() + 1 + role.len());
    let mut cut = subject.len().min(room.max(1));
    while !subject.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("ki/{}/{role}", &subject[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_and_keep_subject_and_role() {
        let cases = [
            ("pods", "refl", "ki/pods/refl"),
            ("pods", "lis3", "ki/pods/lis3"),
            ("deployments", "wrk1", "ki/deploym/wrk1"),
            ("deployments.apps", "inf", "ki/deployme/inf"),
            ("pods.v1 (DynamicObject)", "stop", "ki/pods/stop"),
            ("example.com/log-test", "ev", "ki/log-test/ev"),
            ("replicasets", "lis12", "ki/replic/lis12"),
            ("", "http", "ki//http"),
            ("prêt-à-porter", "refl", "ki/prêt-/refl"),
        ];
        for (subject, role, want) in cases {
            let got = thread_name(subject, role);
            assert_eq!(got, want, "{subject} {role}");
            assert!(got.len() <= MAX_THREAD_NAME, "{got}");
        }
    }
}
