//! The life of a CustomResourceDefinition written through the API, as kube-apiserver v1.36
//! lives it (`crd-deleted/` captures): accepted and established, deleted with its objects,
//! created again.
//!
//! Why it matters: an operator's test creates its CRD and waits for `Established` (as
//! `apply_crd`, `kubectl wait` and controller-runtime's envtest do); a server that never
//! sets the condition makes every such test wait out its timeout. And an operator must
//! survive its CRD being deleted under its informers; a test server that keeps answering
//! for the resource hides what the real one does.
//!
//! - **Created** (or updated): `spec.names` gets its defaults (`singular`, `listKind`) and
//!   `spec.conversion.strategy` `None` when missing; a create answers with the status a new
//!   CRD has (`conditions: null`, empty `acceptedNames`, `storedVersions`), then the
//!   server's controllers write `acceptedNames` and the conditions `NamesAccepted`
//!   (`NoConflicts`) and `Established` (`InitialNamesAccepted`) — one MODIFIED event right
//!   after the create, before any other request is answered (the real server: within a few
//!   milliseconds). Discovery lists the resource from then on.
//! - **Deleted**: the answer is the CRD marked (`deletionTimestamp`, the finalizer
//!   `customresourcecleanup.apiextensions.k8s.io`, `Terminating` `InstanceDeletionPending`);
//!   then, as the captured watch shows, a MODIFIED `InstanceDeletionInProgress`, one DELETED
//!   per custom object (a new version each, no `deletionTimestamp`), and the CRD's DELETED.
//!   Open watches of the resource get their DELETED events, then their stream ends cleanly
//!   (no ERROR, no BOOKMARK). From then on every request for the resource and the group's
//!   discovery documents answer the Go mux's `404 page not found` in `text/plain`, not a
//!   JSON `Status`, and `/apis` no longer lists the group.
//! - **Created again**: the resource is served with no objects; its first list answers **429**
//!   `storage is (re)initializing` with `Retry-After: 1`, as the captured one did.
//!
//! Simplifications: all of this happens inside the write's request (the real server takes a
//! few milliseconds for the conditions and about a second before it ends open watches);
//! names are always accepted (no check for a kind or short name another CRD of the group
//! already uses); custom objects' own finalizers do not hold the cleanup up (they go at
//! once); a CRD that keeps another finalizer of its own stays `Terminating` and its resource
//! stays served, empty; only the first list after a re-creation is refused with 429 (the
//! real server refuses lists until its new watch cache is ready, about a second).

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use super::crd::Definition;
use super::store::{DeleteOptions, Deleted, Store, TypeKey};
use crate::api::{ApiResource, Status};

/// The finalizer kube-apiserver puts on a CRD being deleted until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Per resource: whether a CRD's deletion took it away, and since when.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    removed: bool,
    /// How many times it was removed: a watch opened before a removal ends after it.
    epoch: u64,
    /// The store's version once the removal had deleted every object.
    removed_at: u64,
    /// Lists still to refuse with 429 (created again: its new watch cache initialising).
    initializing: u32,
}

/// Which resources CRDs written through the API serve, and which their deletion took away.
/// Kept in the store, so that it changes under the same lock as the objects.
#[derive(Debug, Default)]
pub(crate) struct Serving {
    states: HashMap<TypeKey, State>,
    /// The resources of the CRDs written through the API, for discovery (with their short
    /// names), in a stable order.
    defined: BTreeMap<(String, String, String), (ApiResource, Vec<String>)>,
}

impl Serving {
    /// Whether requests for `tk` answer the plain-text 404.
    pub fn is_removed(&self, tk: &TypeKey) -> bool {
        self.states.get(tk).is_some_and(|s| s.removed)
    }

    /// The current removal epoch of `tk` (a watch notes it when it opens).
    pub fn epoch(&self, tk: &TypeKey) -> u64 {
        self.states.get(tk).map_or(0, |s| s.epoch)
    }

    /// For a watch opened in `epoch`: the version up to which it still sends events before
    /// it ends, once the resource was removed since (or is removed now).
    pub fn ended(&self, tk: &TypeKey, epoch: u64) -> Option<u64> {
        let s = self.states.get(tk)?;
        (s.removed || s.epoch != epoch).then_some(s.removed_at)
    }

    /// Takes `tk` away at version `rv` (its objects already deleted).
    pub fn remove(&mut self, tk: &TypeKey, rv: u64) {
        let s = self.states.entry(tk.clone()).or_default();
        s.removed = true;
        s.epoch += 1;
        s.removed_at = rv;
        s.initializing = 0;
        self.defined
            .remove(&(tk.group.clone(), tk.version.clone(), tk.plural.clone()));
    }

    /// Serves `tk` again; true when it had been removed.
    pub fn restore(&mut self, tk: &TypeKey, initializing_lists: u32) -> bool {
        match self.states.get_mut(tk) {
            Some(s) if s.removed => {
                s.removed = false;
                s.initializing = initializing_lists;
                true
            }
            _ => false,
        }
    }

    /// Whether this list must be refused while the resource's new cache initialises.
    pub fn take_initializing(&mut self, tk: &TypeKey) -> bool {
        match self.states.get_mut(tk) {
            Some(s) if !s.removed && s.initializing > 0 => {
                s.initializing -= 1;
                true
            }
            _ => false,
        }
    }

    /// Discovery lists what `d` declares.
    pub fn define(&mut self, d: &Definition) {
        let r = &d.resource;
        self.defined.insert(
            (r.group.clone(), r.version.clone(), r.plural.clone()),
            (r.clone(), d.short_names.clone()),
        );
    }

    /// The resources of CRDs written through the API, with their short names.
    pub fn defined(&self) -> impl Iterator<Item = &(ApiResource, Vec<String>)> {
        self.defined.values()
    }
}

/// The 429 of a list while a re-created resource's watch cache initialises (captured in
/// `recreated-list-immediately.json`; `Retry-After: 1` comes from `retryAfterSeconds`).
pub(crate) fn initializing() -> Status {
    let mut st = Status::failure(429, "TooManyRequests", "storage is (re)initializing");
    st.details = Some(crate::api::StatusDetails {
        retry_after_seconds: Some(1),
        ..Default::default()
    });
    st
}

/// The resources a CRD's served versions name (every served version: the ones served
/// through conversion go with the storage one).
fn served_resources(crd: &Value) -> Vec<TypeKey> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str);
    let (Some(group), Some(plural)) = (group, plural) else {
        return Vec::new();
    };
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .filter_map(|v| v["name"].as_str())
        .map(|v| TypeKey {
            group: group.to_owned(),
            version: v.to_owned(),
            plural: plural.to_owned(),
        })
        .collect()
}

/// The defaults kube-apiserver gives a CRD's spec: `names.singular` (the lower-cased kind),
/// `names.listKind` (`<Kind>List`) and `conversion.strategy: None`.
pub(crate) fn default_spec(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !kind.is_empty() {
            let missing = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
            if missing(names.get("singular")) {
                names.insert("singular".into(), kind.to_ascii_lowercase().into());
            }
            if missing(names.get("listKind")) {
                names.insert("listKind".into(), format!("{kind}List").into());
            }
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(c) = conversion {
        c.entry("strategy").or_insert_with(|| "None".into());
    }
}

/// The status a CRD is created with: no conditions yet, no accepted names, its storage
/// version stored.
pub(crate) fn initial_status(crd: &mut Value, d: &Definition) {
    if let Some(m) = crd.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
                   "storedVersions": [d.resource.version]}),
        );
    }
}

/// `status.acceptedNames` as the naming controller writes them: the spec's names.
fn accepted_names(crd: &Value) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    for field in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        if let Some(v) = names.get(field).filter(|v| !v.is_null()) {
            out.insert(field.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// Sets the condition `ty` of `status.conditions`; its `lastTransitionTime` moves only when
/// its status does. True when anything changed.
fn set_condition(obj: &mut Map<String, Value>, ty: &str, reason: &str, message: &str) -> bool {
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return false;
    };
    let now = super::store::rfc3339_now();
    match list.iter_mut().find(|c| c["type"] == ty) {
        Some(c) if c["status"] == "True" && c["reason"] == reason && c["message"] == message => {
            false
        }
        Some(c) => {
            if c["status"] != "True" {
                c["lastTransitionTime"] = now.into();
            }
            c["status"] = "True".into();
            c["reason"] = reason.into();
            c["message"] = message.into();
            true
        }
        None => {
            list.push(
                json!({"type": ty, "status": "True", "lastTransitionTime": now,
                "reason": reason, "message": message}),
            );
            true
        }
    }
}

/// The `managedFields` entry of the server's status writes (as captured).
fn record_status_manager(obj: &mut Map<String, Value>, conditions: &[&str]) {
    let mut owned = Map::new();
    for ty in conditions {
        owned.insert(
            format!("k:{{\"type\":\"{ty}\"}}"),
            json!({".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {},
                   "f:status": {}, "f:type": {}}),
        );
    }
    let entry = json!({"manager": "kube-apiserver", "operation": "Update",
        "apiVersion": "apiextensions.k8s.io/v1", "time": super::store::rfc3339_now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:acceptedNames": {"f:kind": {}, "f:listKind": {},
            "f:plural": {}, "f:singular": {}}, "f:conditions": owned}},
        "subresource": "status"});
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let entries = meta.entry("managedFields").or_insert_with(|| json!([]));
    if let Some(list) = entries.as_array_mut() {
        list.retain(|e| !(e["manager"] == "kube-apiserver" && e["subresource"] == "status"));
        list.push(entry);
    }
}

/// Does what kube-apiserver's naming and establishing controllers do for the CRD `name`:
/// accepted names from the spec, `NamesAccepted` and `Established` true. One MODIFIED
/// event when anything changed; nothing for a CRD being deleted.
pub(crate) fn establish(store: &mut Store, tk: &TypeKey, name: &str) {
    let Ok(current) = store.get(tk, None, name) else {
        return;
    };
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(&current.json) else {
        return;
    };
    if obj
        .get("metadata")
        .is_some_and(|m| m.get("deletionTimestamp").is_some())
    {
        return;
    }
    let names = accepted_names(&Value::Object(obj.clone()));
    let mut changed = obj
        .get("status")
        .and_then(|s| s.get("acceptedNames"))
        .is_none_or(|a| *a != names);
    changed |= set_condition(
        &mut obj,
        "NamesAccepted",
        "NoConflicts",
        "no conflicts found",
    );
    changed |= set_condition(
        &mut obj,
        "Established",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    );
    if !changed {
        return;
    }
    obj["status"]["acceptedNames"] = names;
    record_status_manager(&mut obj, &["Established", "NamesAccepted"]);
    let _ = store.server_write(tk, None, name, Some(obj));
}

/// A CRD deleted through the API (see the module docs): the answer is the CRD as marked;
/// its objects are deleted and its resource taken away before this returns. A dry run, or
/// a CRD already being deleted, is an ordinary delete.
pub(crate) fn delete(
    store: &mut Store,
    tk: &TypeKey,
    name: &str,
    d: &DeleteOptions,
) -> Result<Deleted, Status> {
    let current = store.get(tk, None, name)?;
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(&current.json) else {
        return store.delete_with(tk, None, name, d);
    };
    let being_deleted = obj
        .get("metadata")
        .is_some_and(|m| m.get("deletionTimestamp").is_some());
    if d.dry_run || being_deleted {
        return store.delete_with(tk, None, name, d);
    }
    store.check_delete_preconditions(tk, name, &current, d)?;
    let crd = Value::Object(obj.clone());
    // 1. Marked: the answer (one MODIFIED).
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert(
            "deletionTimestamp".into(),
            super::store::rfc3339_now().into(),
        );
        meta.insert("deletionGracePeriodSeconds".into(), 0.into());
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
                list.push(CLEANUP_FINALIZER.into());
            }
        }
    }
    set_condition(
        &mut obj,
        "Terminating",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
    let marked = store.server_write(tk, None, name, Some(obj.clone()))?;
    // 2. The cleanup starts (MODIFIED), deletes every object (a DELETED each) ...
    set_condition(
        &mut obj,
        "Terminating",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    );
    store.server_write(tk, None, name, Some(obj.clone()))?;
    let resources = served_resources(&crd);
    for r in &resources {
        let keys: Vec<(String, String)> = store
            .collection(r)
            .objects
            .values()
            .map(|o| (o.namespace.clone(), o.name.clone()))
            .collect();
        for (ns, n) in keys {
            let ns = Some(ns.as_str()).filter(|s| !s.is_empty());
            let _ = store.server_write(r, ns, &n, None);
        }
    }
    // 3. ... and takes its finalizer off: the CRD goes (DELETED) unless another holds it.
    let mut others = Vec::new();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(list) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
            list.retain(|f| f != CLEANUP_FINALIZER);
            others.clone_from(list);
        }
        if others.is_empty() {
            meta.remove("finalizers");
        }
    }
    if others.is_empty() {
        store.server_write(tk, None, name, None)?;
        let rv = store.rv;
        for r in &resources {
            store.serving.remove(r, rv);
        }
    } else {
        store.server_write(tk, None, name, Some(obj))?;
    }
    Ok(Deleted::Pending(marked))
}

/// Serves a CRD's resource again after [`delete`] took it away, with no objects; its next
/// `initializing_lists` lists answer 429 (see [`initializing`]).
pub(crate) fn restore(store: &mut Store, tk: &TypeKey, initializing_lists: u32) {
    store.serving.restore(tk, initializing_lists);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tk() -> TypeKey {
        TypeKey {
            group: "g.example.com".into(),
            version: "v1".into(),
            plural: "gizmos".into(),
        }
    }

    #[test]
    fn a_watch_from_before_a_removal_ends_at_it_even_after_a_recreation() {
        let mut s = Serving::default();
        let opened = s.epoch(&tk());
        assert_eq!(s.ended(&tk(), opened), None);
        s.remove(&tk(), 7);
        assert!(s.is_removed(&tk()));
        assert_eq!(s.ended(&tk(), opened), Some(7));
        assert!(s.restore(&tk(), 1));
        assert!(!s.is_removed(&tk()));
        assert_eq!(s.ended(&tk(), opened), Some(7), "the old watch still ends");
        assert_eq!(s.ended(&tk(), s.epoch(&tk())), None, "a new one does not");
        assert!(s.take_initializing(&tk()));
        assert!(!s.take_initializing(&tk()), "one 429, then served");
    }

    #[test]
    fn conditions_move_their_transition_time_only_when_their_status_changes() {
        let mut obj = Map::new();
        assert!(set_condition(&mut obj, "Established", "R", "m"));
        assert!(!set_condition(&mut obj, "Established", "R", "m"));
        obj["status"]["conditions"][0]["lastTransitionTime"] = "then".into();
        assert!(set_condition(&mut obj, "Established", "R2", "m2"));
        assert_eq!(obj["status"]["conditions"][0]["lastTransitionTime"], "then");
        assert_eq!(obj["status"]["conditions"][0]["reason"], "R2");
    }

    #[test]
    fn names_get_their_defaults() {
        let mut crd = json!({"spec": {"names": {"plural": "gizmos", "kind": "Gizmo"}}});
        default_spec(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "gizmo");
        assert_eq!(crd["spec"]["names"]["listKind"], "GizmoList");
        assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
        assert_eq!(
            accepted_names(&crd),
            json!({"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"})
        );
    }
}
