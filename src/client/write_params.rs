//! Options of writes: [`PostParams`] (create, replace), [`PatchParams`] (patch, apply) and
//! [`DeleteParams`] (delete, delete collection), as kube-apiserver names them.
//!
//! Create, replace and patch options travel in the query (`dryRun=All`,
//! `fieldManager=...`, `fieldValidation=Strict|Warn|Ignore`, `force=true`); delete options
//! travel as a `DeleteOptions` body, as kubectl and client-go send them, and no body at all
//! when none is set.

use serde::Serialize;

use super::params::Query;

/// How the server treats fields its schema does not know (`fieldValidation=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the write (400 BadRequest `strict decoding error: unknown field ...`).
    Strict,
    /// Drop the fields and say so in `Warning:` headers (the server's default).
    Warn,
    /// Drop the fields silently.
    Ignore,
}

impl FieldValidation {
    fn as_str(self) -> &'static str {
        match self {
            FieldValidation::Strict => "Strict",
            FieldValidation::Warn => "Warn",
            FieldValidation::Ignore => "Ignore",
        }
    }
}

/// The setters [`PostParams`] and [`PatchParams`] share (their fields have the same names).
macro_rules! write_option_setters {
    () => {
        /// Sets `dry_run`.
        pub fn dry_run(mut self) -> Self {
            self.dry_run = true;
            self
        }

        /// Sets the field manager.
        pub fn field_manager(mut self, manager: &str) -> Self {
            self.field_manager = Some(manager.to_owned());
            self
        }

        /// Sets the field validation.
        pub fn validation(mut self, v: FieldValidation) -> Self {
            self.field_validation = Some(v);
            self
        }
    };
}

/// The query parameters creates, replaces and patches share.
fn write_common_query(
    q: &mut Query,
    dry_run: bool,
    field_manager: Option<&str>,
    field_validation: Option<FieldValidation>,
) {
    if dry_run {
        q.pair("dryRun", "All");
    }
    q.opt("fieldManager", field_manager);
    q.opt(
        "fieldValidation",
        field_validation.map(FieldValidation::as_str),
    );
}

/// Options of a create or replace (kube-rs's `PostParams`).
///
/// ```
/// use kube_informer::client::{FieldValidation, PostParams};
/// let pp = PostParams::default().dry_run().field_manager("my-controller").validation(FieldValidation::Strict);
/// assert!(pp.dry_run);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostParams {
    /// Validate and answer as if written, but store nothing (`dryRun=All`).
    pub dry_run: bool,
    /// Who makes the write, recorded in `managedFields` (default: the server derives it
    /// from the User-Agent).
    pub field_manager: Option<String>,
    /// How unknown fields are treated (default: the server's, `Warn`).
    pub field_validation: Option<FieldValidation>,
}

impl PostParams {
    write_option_setters!();

    pub(crate) fn write_query(&self, q: &mut Query) {
        write_common_query(
            q,
            self.dry_run,
            self.field_manager.as_deref(),
            self.field_validation,
        );
    }
}

/// Options of a patch (kube-rs's `PatchParams`). A server-side apply needs a field manager:
/// use [`PatchParams::apply`].
///
/// ```
/// use kube_informer::client::PatchParams;
/// let pp = PatchParams::apply("node-labeler").force();
/// assert_eq!(pp.field_manager.as_deref(), Some("node-labeler"));
/// assert!(pp.force);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchParams {
    /// Validate and answer as if written, but store nothing (`dryRun=All`).
    pub dry_run: bool,
    /// Who makes the write (required for [`Patch::Apply`](super::Patch::Apply)).
    pub field_manager: Option<String>,
    /// How unknown fields are treated.
    pub field_validation: Option<FieldValidation>,
    /// Apply only: take the fields other managers own instead of failing with 409
    /// (`force=true`).
    pub force: bool,
}

impl PatchParams {
    /// Options of a server-side apply by `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchParams {
            field_manager: Some(manager.to_owned()),
            ..Default::default()
        }
    }

    /// Sets `force` (apply only): the conflicting fields change owner.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    write_option_setters!();

    pub(crate) fn write_query(&self, q: &mut Query) {
        write_common_query(
            q,
            self.dry_run,
            self.field_manager.as_deref(),
            self.field_validation,
        );
        if self.force {
            q.pair("force", "true");
        }
    }
}

/// What happens to an object's dependents (those whose `ownerReferences` name it) when it
/// is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PropagationPolicy {
    /// The object goes once its dependents are gone (it carries the `foregroundDeletion`
    /// finalizer until then, and the delete answers with the object).
    Foreground,
    /// The object goes at once; the garbage collector deletes the dependents after.
    Background,
    /// The dependents are kept, their owner reference removed (`orphan` finalizer).
    Orphan,
}

/// Conditions the object must meet for a delete to proceed (else 409 Conflict).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's uid must be this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Options of a delete, sent as a `DeleteOptions` body (kube-rs's `DeleteParams`).
///
/// ```
/// use kube_informer::client::{DeleteParams, PropagationPolicy};
/// let dp = DeleteParams::foreground().grace_period(0).precondition_uid("2e5b...");
/// assert_eq!(dp.propagation_policy, Some(PropagationPolicy::Foreground));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// Validate and answer as if deleted, but delete nothing.
    pub dry_run: bool,
    /// Seconds the object (a pod) may take to stop; 0 deletes at once.
    pub grace_period_seconds: Option<u32>,
    /// What happens to the dependents.
    pub propagation_policy: Option<PropagationPolicy>,
    /// Conditions for the delete to proceed.
    pub preconditions: Option<Preconditions>,
}

impl DeleteParams {
    /// Deletes the dependents first.
    pub fn foreground() -> Self {
        Self::with_policy(PropagationPolicy::Foreground)
    }

    /// Deletes the object now, the dependents after.
    pub fn background() -> Self {
        Self::with_policy(PropagationPolicy::Background)
    }

    /// Keeps the dependents.
    pub fn orphan() -> Self {
        Self::with_policy(PropagationPolicy::Orphan)
    }

    fn with_policy(p: PropagationPolicy) -> Self {
        DeleteParams {
            propagation_policy: Some(p),
            ..Default::default()
        }
    }

    /// Sets `dry_run`.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets the grace period.
    pub fn grace_period(mut self, seconds: u32) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Deletes only if the object's uid is `uid`.
    pub fn precondition_uid(mut self, uid: &str) -> Self {
        self.preconditions.get_or_insert_with(Default::default).uid = Some(uid.to_owned());
        self
    }

    /// Deletes only if the object's resourceVersion is `rv`.
    pub fn precondition_resource_version(mut self, rv: &str) -> Self {
        self.preconditions
            .get_or_insert_with(Default::default)
            .resource_version = Some(rv.to_owned());
        self
    }

    /// The `DeleteOptions` body, or `None` when no option is set (then no body is sent).
    pub(crate) fn body(&self) -> Option<Vec<u8>> {
        if *self == DeleteParams::default() {
            return None;
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct DeleteOptions<'a> {
            kind: &'static str,
            api_version: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            grace_period_seconds: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            preconditions: Option<&'a Preconditions>,
            #[serde(skip_serializing_if = "Option::is_none")]
            propagation_policy: Option<PropagationPolicy>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            dry_run: Vec<&'static str>,
        }
        serde_json::to_vec(&DeleteOptions {
            kind: "DeleteOptions",
            api_version: "v1",
            grace_period_seconds: self.grace_period_seconds,
            preconditions: self.preconditions.as_ref(),
            propagation_policy: self.propagation_policy,
            dry_run: if self.dry_run { vec!["All"] } else { vec![] },
        })
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(f: impl FnOnce(&mut Query)) -> String {
        let mut q = Query::default();
        f(&mut q);
        q.finish()
    }

    #[test]
    fn options_use_the_servers_names() {
        assert_eq!(
            query(|q| PostParams::default()
                .dry_run()
                .field_manager("me")
                .validation(FieldValidation::Strict)
                .write_query(q)),
            "?dryRun=All&fieldManager=me&fieldValidation=Strict"
        );
        assert_eq!(
            query(|q| PatchParams::apply("bob").force().write_query(q)),
            "?fieldManager=bob&force=true"
        );
        assert_eq!(DeleteParams::default().body(), None);
        let body = DeleteParams::orphan()
            .dry_run()
            .grace_period(0)
            .precondition_uid("u")
            .precondition_resource_version("7")
            .body()
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
            serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": "u", "resourceVersion": "7"},
                "propagationPolicy": "Orphan", "dryRun": ["All"]})
        );
    }
}
