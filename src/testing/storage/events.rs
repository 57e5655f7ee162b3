//! What the test server does for Events beyond storing them, as the v1.36 captures show:
//! an `events.k8s.io/v1` Event without `eventTime` is refused (422, `eventTime: Required
//! value`), and a written Event carries the fields the real server adds: `deprecatedSource:
//! {}`, `deprecatedFirstTimestamp: null` and `deprecatedLastTimestamp: null` for
//! `events.k8s.io/v1`; `eventTime: null`, `reportingComponent: ""` and `reportingInstance: ""`
//! for `core/v1` (when not given).
//!
//! Simplification: the two APIs store their Events apart (the real server serves one set of
//! Events through both, converted), so a test lists Events through the API it wrote them
//! with. No other field of an Event is validated.

use serde_json::{Map, Value};

use super::type_key::TypeKey;
use crate::api::{Status, StatusCause, StatusDetails};

fn is_events(tk: &TypeKey) -> Option<bool> {
    match (tk.group.as_str(), tk.version.as_str(), tk.plural.as_str()) {
        ("events.k8s.io", "v1", "events") => Some(true),
        ("", "v1", "events") => Some(false),
        _ => None,
    }
}

/// The 422 of an `events.k8s.io/v1` Event written without `eventTime`.
pub(crate) fn validate(tk: &TypeKey, body: &Value) -> Result<(), Status> {
    if is_events(tk) != Some(true) {
        return Ok(());
    }
    if body.get("eventTime").is_some_and(|t| !t.is_null()) {
        return Ok(());
    }
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut st = Status::failure(
        422,
        "Invalid",
        format!("Event {name:?} is invalid: eventTime: Required value"),
    );
    st.details = Some(StatusDetails {
        name: Some(name),
        kind: Some("Event".into()),
        causes: vec![StatusCause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "eventTime".into(),
        }],
        ..Default::default()
    });
    Err(st)
}

/// The fields the real server adds to a written Event (see the module docs).
pub(crate) fn defaults(tk: &TypeKey, obj: &mut Map<String, Value>) {
    match is_events(tk) {
        Some(true) => {
            obj.entry("deprecatedSource")
                .or_insert_with(|| Value::Object(Map::new()));
            obj.entry("deprecatedFirstTimestamp").or_insert(Value::Null);
            obj.entry("deprecatedLastTimestamp").or_insert(Value::Null);
        }
        Some(false) => {
            obj.entry("eventTime").or_insert(Value::Null);
            obj.entry("reportingComponent").or_insert_with(|| "".into());
            obj.entry("reportingInstance").or_insert_with(|| "".into());
        }
        None => {}
    }
}
