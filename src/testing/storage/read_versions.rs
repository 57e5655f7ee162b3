//! Which state a read answers: kube-apiserver's resourceVersion rules for lists and watches.
//!
//! A real kube-apiserver serves reads from two places: etcd, which keeps every version until
//! it is compacted, and its watch cache, which holds the present and a window of recent
//! events that starts when the server starts. Which one answers depends on the parameters,
//! and a client that gets this wrong can loop for ever (a paged list at an old version is an
//! *Exact* read: after a restart it answers the old state, whose version the new watch cache
//! refuses). The rules below are those of the captured table
//! (`tests/fixtures/semantics/rv-matrix.json`, kube-apiserver 1.36.2):
//!
//! | `resourceVersion` | `resourceVersionMatch` | `limit` | answer |
//! |---|---|---|---|
//! | unset | unset | any | the present, paged |
//! | unset | set | any | 422 (a match needs a version) |
//! | `0` | unset / `NotOlderThan` | any | the present, whole (the limit is ignored) |
//! | `0` | `Exact` | any | 422 |
//! | `N` | unset | none | the present (served "at least as fresh as" `N`) |
//! | `N` | unset | set | the state at `N` exactly (legacy: a paged list is Exact) |
//! | `N` | `NotOlderThan` | any | the present, paged |
//! | `N` | `Exact` | any | the state at `N`, paged |
//!
//! A version older than the history (etcd compacted) is 410 `Expired` for the Exact reads; a
//! version newer than the present is 504 `Timeout` with the cause `ResourceVersionTooLarge`
//! (after waiting up to three seconds for the version to be reached, as the real server
//! waits for its cache: [`ApiServer::set_too_large_wait`](crate::testing::ApiServer::set_too_large_wait)). Continue pages carry their version in the
//! token: a `resourceVersion` beside one is 400, a `resourceVersionMatch` beside one is 422.
//!
//! Watches start from a version inside the watch cache's window (older: one ERROR event with
//! 410), from the present with the current state as ADDED events (`resourceVersion` unset or
//! `0`, or `sendInitialEvents=true`, whose version is a lower bound: a future one is an ERROR
//! event with 504), or, from a future version, with nothing until the server gets there.

use crate::api::{Status, StatusCause, StatusDetails};

/// The state a list answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListAt {
    /// The present; `paged` false when the limit is ignored (`resourceVersion=0`).
    Present { paged: bool },
    /// The state at this version exactly, rebuilt from the history.
    Exact(u64),
}

/// One rejected option, as kube-apiserver's field errors say it.
struct FieldError {
    field: &'static str,
    /// `FieldValueForbidden`, `FieldValueNotSupported`.
    reason: &'static str,
    /// The text after `field: `.
    detail: String,
}

fn forbidden(field: &'static str, why: &str) -> FieldError {
    FieldError {
        field,
        reason: "FieldValueForbidden",
        detail: format!("Forbidden: {why}"),
    }
}

fn not_supported(field: &'static str, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError {
        field,
        reason: "FieldValueNotSupported",
        detail: format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    }
}

/// 422 `Invalid` on `ListOptions.meta.k8s.io ""`, one cause per error (several are listed
/// in brackets, as the real server joins them).
fn invalid_options(errors: Vec<FieldError>) -> Result<(), Status> {
    if errors.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.detail))
        .collect();
    let joined = if texts.len() == 1 {
        texts[0].clone()
    } else {
        format!("[{}]", texts.join(", "))
    };
    let mut st = Status::failure(
        422,
        "Invalid",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {joined}"),
    );
    st.details = Some(StatusDetails {
        group: Some("meta.k8s.io".into()),
        kind: Some("ListOptions".into()),
        causes: errors
            .into_iter()
            .map(|e| StatusCause {
                reason: e.reason.into(),
                message: e.detail,
                field: e.field.into(),
            })
            .collect(),
        ..Default::default()
    });
    Err(st)
}

/// The options of a list, before anything is read: 422 for combinations the server refuses.
pub(crate) fn validate_list(
    resource_version: &str,
    rv_match: &str,
    continued: bool,
    send_initial_events: bool,
) -> Result<(), Status> {
    let mut errors = Vec::new();
    if !rv_match.is_empty() {
        if resource_version.is_empty() {
            errors.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continued {
            errors.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rv_match != "Exact" && rv_match != "NotOlderThan" {
            errors.push(not_supported(
                "resourceVersionMatch",
                rv_match,
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if rv_match == "Exact" && resource_version == "0" {
            errors.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if send_initial_events {
        errors.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    invalid_options(errors)
}

/// The options of a watch: `sendInitialEvents` (given at all: `Some`) needs
/// `resourceVersionMatch=NotOlderThan`, and a match needs `sendInitialEvents`.
pub(crate) fn validate_watch(
    rv_match: &str,
    send_initial_events: Option<bool>,
) -> Result<(), Status> {
    let mut errors = Vec::new();
    if send_initial_events.is_some() && rv_match != "NotOlderThan" {
        errors.push(forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !rv_match.is_empty() {
        if send_initial_events.is_none() {
            errors.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            errors.push(not_supported(
                "resourceVersionMatch",
                rv_match,
                &["NotOlderThan"],
            ));
        }
    }
    invalid_options(errors)
}

/// Which state a list (first page) at `rv` answers, given the present version `current`.
pub(crate) fn list_at(
    rv: Option<u64>,
    rv_match: &str,
    limited: bool,
    current: u64,
) -> Result<ListAt, Status> {
    let Some(rv) = rv else {
        return Ok(ListAt::Present { paged: true });
    };
    if rv == 0 {
        return Ok(ListAt::Present { paged: false });
    }
    if rv > current {
        return Err(too_large(rv, current));
    }
    let exact = rv_match == "Exact" || (rv_match.is_empty() && limited);
    Ok(if exact {
        ListAt::Exact(rv)
    } else {
        ListAt::Present { paged: true }
    })
}

/// 504: a version the server has not reached.
pub(crate) fn too_large(rv: u64, current: u64) -> Status {
    let mut st = Status::failure(
        504,
        "Timeout",
        format!("Timeout: Too large resource version: {rv}, current: {current}"),
    );
    st.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        retry_after_seconds: Some(1),
        ..Default::default()
    });
    st
}

/// 410: an Exact list at a version etcd no longer has.
pub(crate) fn list_expired() -> Status {
    Status::failure(
        410,
        "Expired",
        "The resourceVersion for the provided list is too old.",
    )
}

/// 400: a continue page must not name a version of its own (the token carries it).
pub(crate) fn check_continue_version(resource_version: &str) -> Result<(), Status> {
    if resource_version.is_empty() || resource_version == "0" {
        Ok(())
    } else {
        Err(Status::failure(
            400,
            "BadRequest",
            "specifying resource version is not allowed when using continue",
        ))
    }
}

/// 410 in a watch: a version older than the watch cache's window.
pub(crate) fn watch_too_old(rv: u64, oldest: u64) -> Status {
    Status::failure(
        410,
        "Expired",
        format!("too old resource version: {rv} ({oldest})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_the_module_docs() {
        let present = Ok(ListAt::Present { paged: true });
        assert_eq!(list_at(None, "", true, 9), present);
        assert_eq!(
            list_at(Some(0), "", true, 9),
            Ok(ListAt::Present { paged: false })
        );
        assert_eq!(list_at(Some(4), "", false, 9), present);
        assert_eq!(list_at(Some(4), "", true, 9), Ok(ListAt::Exact(4)));
        assert_eq!(list_at(Some(4), "NotOlderThan", true, 9), present);
        assert_eq!(list_at(Some(4), "Exact", false, 9), Ok(ListAt::Exact(4)));
        assert_eq!(
            list_at(Some(10), "NotOlderThan", false, 9)
                .unwrap_err()
                .code,
            504
        );
        assert!(validate_list("", "Exact", false, false).is_err());
        assert!(validate_list("0", "Exact", false, false).is_err());
        assert!(validate_list("0", "NotOlderThan", false, false).is_ok());
        let two = validate_list("", "Bogus", true, false).unwrap_err();
        assert!(
            two.message.contains(": [resourceVersionMatch: Forbidden"),
            "{}",
            two.message
        );
        assert_eq!(two.details.unwrap().causes.len(), 3);
        assert!(validate_watch("", None).is_ok());
        assert!(validate_watch("NotOlderThan", Some(true)).is_ok());
        assert!(validate_watch("NotOlderThan", None).is_err());
        assert!(validate_watch("", Some(true)).is_err());
        assert!(check_continue_version("5").is_err());
        assert!(check_continue_version("0").is_ok());
    }
}
