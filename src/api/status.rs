//! `Status`: the body the API server sends with every failure, and inside watch ERROR events.
//!
//! Errors are decided by `code` and `reason` (`410`/`Expired` means "relist"), so both are
//! typed; the human message is kept as sent. When an error body is not a `Status`, the client
//! makes one from the HTTP code whose message gives the body's length and content type but
//! not its text (it may be anything, object data included).

use serde::{Deserialize, Serialize};

use super::meta::ListMeta;

/// The API's error (or success) report, as in `status-*.json` captures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `"Success"` or `"Failure"`.
    #[serde(default)]
    pub status: String,
    /// Human-readable explanation.
    #[serde(default)]
    pub message: String,
    /// Machine-readable reason, e.g. `NotFound`, `Expired`, `Conflict`.
    #[serde(default)]
    pub reason: String,
    /// Extra data about the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code this Status stands for (0 when the server left it out).
    #[serde(default)]
    pub code: u16,
    /// List metadata; an expired continue token's Status carries a fresh `continue` here.
    #[serde(default)]
    pub metadata: ListMeta,
}

impl Status {
    /// A failure Status with the given code, reason and message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Status {
        Status {
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
            metadata: ListMeta::default(),
        }
    }

    /// True for 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// True for 410 Gone / `Expired`: the resource version or continue token is too old.
    pub fn is_gone(&self) -> bool {
        self.code == 410 || self.reason == "Expired" || self.reason == "Gone"
    }

    /// The fields of a server-side apply conflict: the causes with reason
    /// `FieldManagerConflict`, each naming the `field` (`.data.color`) and, in its
    /// `message`, the manager that owns it (`conflict with "alice"`). Empty for any other
    /// Status.
    ///
    /// ```
    /// let st: kube_informer::api::Status = serde_json::from_str(r#"{"kind":"Status","status":"Failure",
    ///   "message":"Apply failed with 1 conflict: conflict with \"alice\": .data.color","reason":"Conflict",
    ///   "details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"alice\"","field":".data.color"}]},"code":409}"#).unwrap();
    /// let c = st.field_manager_conflicts();
    /// assert_eq!(c[0].field, ".data.color");
    /// assert_eq!(c[0].manager(), Some("alice"));
    /// ```
    pub fn field_manager_conflicts(&self) -> Vec<&StatusCause> {
        self.details
            .iter()
            .flat_map(|d| &d.causes)
            .filter(|c| c.reason == "FieldManagerConflict")
            .collect()
    }
}

/// `details` of a [`Status`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// API group of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind (or resource) of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// UID of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Individual causes, e.g. each invalid field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// One cause inside [`StatusDetails`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCause {
    /// Machine-readable cause, e.g. `FieldValueInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field concerned, e.g. `spec.containers[0].image`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl StatusCause {
    /// For a `FieldManagerConflict` cause, the manager that owns the field (the quoted name
    /// in `conflict with "alice"`, or with `"alice" using v1`); `None` when the message has
    /// no quoted name.
    pub fn manager(&self) -> Option<&str> {
        let rest = self.message.strip_prefix("conflict with \"")?;
        rest.split_once('"').map(|(m, _)| m)
    }
}
