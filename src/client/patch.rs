//! [`Patch`]: the four kinds of patch kube-apiserver accepts, and typed RFC 6902 operations.
//!
//! # Which patch when
//!
//! - [`Patch::Apply`] (server-side apply, `application/apply-patch+yaml`): the controller's
//!   default. Send the fields *you* own, as a partial object with `apiVersion`, `kind` and
//!   `metadata.name`; the server merges them, records you as their manager (a field manager
//!   is required: [`PatchParams::apply`](super::PatchParams::apply)), removes fields you
//!   stopped sending, and answers 409 when another manager owns a field you set (see
//!   [`Status::field_manager_conflicts`](crate::api::Status::field_manager_conflicts));
//!   `force` takes them over. It creates the object when missing. Works for every resource.
//! - [`Patch::Merge`] (JSON merge patch, RFC 7386): a small change to a few fields; `null`
//!   deletes a key; a list is replaced whole. Works for every resource.
//! - [`Patch::Strategic`] (strategic merge patch): like a merge patch, but lists of the
//!   built-in types are merged by their key (containers by `name`, conditions by `type`).
//!   Built-in types only: custom resources answer 415.
//! - [`Patch::Json`] (JSON patch, RFC 6902): exact operations on paths, including a `test`
//!   that makes the whole patch fail (422) unless a value is what you expect: optimistic
//!   concurrency on one field, without a resourceVersion.
//!
//! The body is encoded as JSON for every kind (JSON is valid YAML, so apply needs no YAML
//! encoder).

use serde::Serialize;

/// A patch of one kind, with its body (kube-rs's `Patch`).
///
/// `P` is the body's type (any `Serialize`, `serde_json::Value` included); a JSON patch
/// carries operations instead, so build it with [`Patch::json`], which fixes `P`.
///
/// ```
/// use kube_informer::client::{Patch, PatchOperation};
/// let merge = Patch::Merge(serde_json::json!({"metadata": {"labels": {"tier": "web"}}}));
/// assert_eq!(merge.content_type(), "application/merge-patch+json");
/// let json = Patch::json(vec![PatchOperation::test("/data/size", "1"), PatchOperation::remove("/data/color")]);
/// assert_eq!(json.content_type(), "application/json-patch+json");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Patch<P> {
    /// JSON merge patch (RFC 7386).
    Merge(P),
    /// JSON patch (RFC 6902): the operations, applied in order, all or nothing.
    Json(Vec<PatchOperation>),
    /// Strategic merge patch (built-in types only).
    Strategic(P),
    /// Server-side apply: the fields the field manager owns.
    Apply(P),
}

impl Patch<()> {
    /// A JSON patch (the body type is fixed so that none needs naming).
    pub fn json(operations: Vec<PatchOperation>) -> Self {
        Patch::Json(operations)
    }
}

impl<P: Serialize> Patch<P> {
    /// The `Content-Type` of this kind of patch.
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
            Patch::Apply(_) => "application/apply-patch+yaml",
        }
    }

    /// True for a server-side apply.
    pub fn is_apply(&self) -> bool {
        matches!(self, Patch::Apply(_))
    }

    /// The body's bytes.
    pub(crate) fn to_body(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Patch::Merge(p) | Patch::Strategic(p) | Patch::Apply(p) => serde_json::to_vec(p),
            Patch::Json(ops) => serde_json::to_vec(ops),
        }
    }
}

/// One RFC 6902 operation. Paths are JSON Pointers (RFC 6901): `/metadata/labels/app`;
/// a key holding `/` or `~` is escaped with [`escape_pointer_token`] (or built with
/// [`pointer()`]).
///
/// ```
/// use kube_informer::client::{pointer, PatchOperation};
/// // Set a label only if the replicas are still 3 (the whole patch fails with 422 otherwise).
/// let ops = vec![
///     PatchOperation::test("/spec/replicas", 3),
///     PatchOperation::add(&pointer(&["metadata", "labels", "example.com/checked"]), "yes"),
/// ];
/// assert_eq!(
///     serde_json::to_string(&ops).unwrap(),
///     r#"[{"op":"test","path":"/spec/replicas","value":3},{"op":"add","path":"/metadata/labels/example.com~1checked","value":"yes"}]"#
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOperation {
    /// Adds `value` at `path` (replacing a map key's value; inserting into a list, `-` for
    /// its end). The parent must exist.
    Add {
        /// Where.
        path: String,
        /// What.
        value: serde_json::Value,
    },
    /// Removes what is at `path` (it must exist).
    Remove {
        /// Where.
        path: String,
    },
    /// Replaces what is at `path` (kube-apiserver also adds a missing map key).
    Replace {
        /// Where.
        path: String,
        /// The new value.
        value: serde_json::Value,
    },
    /// Moves what is at `from` to `path`.
    Move {
        /// From where.
        from: String,
        /// To where.
        path: String,
    },
    /// Copies what is at `from` to `path`.
    Copy {
        /// From where.
        from: String,
        /// To where.
        path: String,
    },
    /// Fails the whole patch (422) unless what is at `path` equals `value`.
    Test {
        /// Where.
        path: String,
        /// The expected value.
        value: serde_json::Value,
    },
}

impl PatchOperation {
    /// An `add`.
    pub fn add(path: &str, value: impl Into<serde_json::Value>) -> Self {
        PatchOperation::Add {
            path: path.into(),
            value: value.into(),
        }
    }

    /// A `remove`.
    pub fn remove(path: &str) -> Self {
        PatchOperation::Remove { path: path.into() }
    }

    /// A `replace`.
    pub fn replace(path: &str, value: impl Into<serde_json::Value>) -> Self {
        PatchOperation::Replace {
            path: path.into(),
            value: value.into(),
        }
    }

    /// A `move`.
    pub fn move_to(from: &str, path: &str) -> Self {
        PatchOperation::Move {
            from: from.into(),
            path: path.into(),
        }
    }

    /// A `copy`.
    pub fn copy_to(from: &str, path: &str) -> Self {
        PatchOperation::Copy {
            from: from.into(),
            path: path.into(),
        }
    }

    /// A `test`.
    pub fn test(path: &str, value: impl Into<serde_json::Value>) -> Self {
        PatchOperation::Test {
            path: path.into(),
            value: value.into(),
        }
    }
}

/// One JSON Pointer reference token, escaped: `~` as `~0`, `/` as `~1`
/// (`app.kubernetes.io/name` -> `app.kubernetes.io~1name`).
///
/// ```
/// assert_eq!(kube_informer::client::escape_pointer_token("a/b~c"), "a~1b~0c");
/// ```
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON Pointer from unescaped tokens.
///
/// ```
/// use kube_informer::client::pointer;
/// assert_eq!(pointer(&["metadata", "labels", "app.kubernetes.io/name"]), "/metadata/labels/app.kubernetes.io~1name");
/// ```
pub fn pointer(tokens: &[&str]) -> String {
    let mut out = String::new();
    for t in tokens {
        out.push('/');
        out.push_str(&escape_pointer_token(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_encode_as_rfc_6902() {
        let ops = vec![
            PatchOperation::test("/data/size", "1"),
            PatchOperation::replace("/data/size", "2"),
            PatchOperation::add(
                "/metadata/labels",
                serde_json::json!({"patched": "json-patch"}),
            ),
            PatchOperation::remove("/data/color"),
            PatchOperation::move_to("/a", "/b"),
            PatchOperation::copy_to("/b", "/c"),
        ];
        let v = serde_json::to_value(&ops).unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                {"op": "test", "path": "/data/size", "value": "1"},
                {"op": "replace", "path": "/data/size", "value": "2"},
                {"op": "add", "path": "/metadata/labels", "value": {"patched": "json-patch"}},
                {"op": "remove", "path": "/data/color"},
                {"op": "move", "from": "/a", "path": "/b"},
                {"op": "copy", "from": "/b", "path": "/c"}
            ])
        );
    }

    #[test]
    fn pointer_tokens_are_escaped_tilde_first() {
        assert_eq!(escape_pointer_token("~1"), "~01");
        assert_eq!(pointer(&[]), "");
        assert_eq!(pointer(&["a/b"]), "/a~1b");
    }
}
