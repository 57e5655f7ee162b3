//! Which `log` targets can print credentials, and how to keep them out of your logs.
//!
//! kube-informer itself never logs a credential or object data at any level. Its HTTP
//! client, ureq, is careful at `debug` (it prints only harmless headers and redacts the
//! rest), but at `trace` the `ureq_proto` crate hex-dumps every byte it sends and receives
//! (target `ureq_proto::util`): request headers with the `Authorization` header (bearer
//! token, basic credentials) and response bodies (a Secret's data, for a Secrets
//! informer). No setting of ureq turns that off, and the way the header is passed does not
//! matter: the dump is of the bytes on the wire. A library cannot filter another crate's
//! records without taking over the process's logger, so kube-informer installs nothing and
//! recommends this instead:
//!
//! - with `env_logger` (or anything reading `RUST_LOG` the same way), silence the target:
//!   `RUST_LOG=trace,ureq_proto=off` (a level of `debug` or lower for `ureq_proto` is enough);
//! - with a logger of your own, drop records whose target
//!   [`is_sensitive_log_target`] says is one of [`SENSITIVE_LOG_TARGETS`].
//!
//! ```
//! use kube_informer::config::is_sensitive_log_target;
//!
//! struct MyLogger;
//! impl log::Log for MyLogger {
//!     fn enabled(&self, m: &log::Metadata) -> bool {
//!         !is_sensitive_log_target(m.target())
//!     }
//!     fn log(&self, r: &log::Record) {
//!         if self.enabled(r.metadata()) {
//!             eprintln!("{} {}: {}", r.level(), r.target(), r.args());
//!         }
//!     }
//!     fn flush(&self) {}
//! }
//! # assert!(is_sensitive_log_target("ureq_proto::util"));
//! # assert!(!is_sensitive_log_target("kube_informer::cache::reflector"));
//! ```

/// Log targets (and their sub-targets) that print request and response bytes, credentials
/// included, at `trace`.
pub const SENSITIVE_LOG_TARGETS: &[&str] = &["ureq_proto"];

/// Whether a record of `target` may carry credentials or object data (it is one of
/// [`SENSITIVE_LOG_TARGETS`] or below one): drop such records.
pub fn is_sensitive_log_target(target: &str) -> bool {
    SENSITIVE_LOG_TARGETS.iter().any(|t| {
        target
            .strip_prefix(t)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}
