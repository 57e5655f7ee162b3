//! Create or patch: read the object, change it in a closure, write only what changed.
//!
//! Why, and how it reads and writes: see [`CreateOrPatch`] (this module is private; its
//! docs are on the type).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::{Meta, Object};
use crate::cache::Lister;
use crate::client::{retry_on_conflict, Api, Patch, PatchParams, PostParams, RetryBackoff};
use crate::error::{Error, Result};

/// What [`CreateOrPatch::run`] did (controller-runtime's `OperationResult`), with the object
/// as the server returned it (or as read, when unchanged).
#[derive(Clone, Debug)]
pub enum OperationResult<K> {
    /// The object did not exist and was created.
    Created(K),
    /// The object existed and a patch was sent.
    Updated(K),
    /// The object already was as wanted: nothing was written.
    Unchanged(K),
}

impl<K> OperationResult<K> {
    /// The object.
    pub fn object(&self) -> &K {
        match self {
            Self::Created(o) | Self::Updated(o) | Self::Unchanged(o) => o,
        }
    }

    /// The object, owned.
    pub fn into_object(self) -> K {
        match self {
            Self::Created(o) | Self::Updated(o) | Self::Unchanged(o) => o,
        }
    }

    /// True when something was written.
    pub fn changed(&self) -> bool {
        !matches!(self, Self::Unchanged(_))
    }

    /// `"created"`, `"updated"` or `"unchanged"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Created(_) => "created",
            Self::Updated(_) => "updated",
            Self::Unchanged(_) => "unchanged",
        }
    }
}

/// Reads an object, changes it, writes only what changed.
///
/// Why: "get, change, write only if changed, retry on conflict" is the body of most
/// reconciles, and written by hand it goes wrong in the same few ways: a write on every
/// reconcile (each one an event that reconciles again), a replace that drops what another
/// writer set in between, a merge patch from a stale cache that silently overwrites a newer
/// object. controller-runtime's `CreateOrPatch` is the model; the two ways of writing are the
/// caller's choice ([`apply`](Self::apply)):
///
/// - **Merge patch** (the default): the closure edits the *current* object (or, when it does
///   not exist, the `object` given, which is then created). The JSON merge patch (RFC 7386)
///   from before to after is sent, and nothing when they are equal. The patch always carries
///   the `metadata.resourceVersion` it was computed from, so the server refuses it (409
///   Conflict) when the object changed since it was read: a merge patch replaces whole
///   arrays, so without the precondition a patch computed from an older read (a cache is
///   always a little behind, and so is a read from the server by the time the patch
///   arrives) would undo another writer's change to the same list. A conflict is retried
///   ([`retry_on_conflict`](crate::client::retry_on_conflict)'s back-off) with a fresh read
///   from the server, the closure run again.
/// - **Server-side apply** ([`apply`](Self::apply)): the closure builds this field
///   manager's *intent* starting from the `object` given, never from the current object (an
///   apply configuration holds only the fields its manager cares about: taking the whole
///   current object would make it co-own every field of every other writer). The apply is
///   sent unless the current object already holds every field of the intent with its value
///   and the manager owns no field the intent dropped (read from `managedFields`, down into
///   keyed lists: an env var of a container; applying would remove such a field). No resourceVersion is sent: the server merges by field
///   ownership, so a stale read can only cost an extra, harmless apply, or skip one that
///   the next reconcile (after the cache catches up) makes. A field another manager owns
///   with another value fails with 409 unless [`force`](Self::force) is set; it is
///   not retried (the answer would be the same).
///
/// The read comes from the server, or from an informer's [`Lister`] when one is given
/// ([`lister`](Self::lister)): then the first attempt reads the cache (no request), an
/// object missing from the cache is looked up on the server before it is created, and every
/// retry after a conflict reads the server.
///
/// Only the main resource is written: a resource with a `status` subresource ignores changes
/// to `status` there (write those with [`Api::patch_status`]).
///
/// ```
/// use kube_informer::api::{ApiResource, DynamicObject};
/// use kube_informer::controller::{CreateOrPatch, OperationResult};
/// use kube_informer::{Api, Client};
/// # let server = kube_informer::testing::ApiServer::start();
/// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
/// let blank = DynamicObject::new("settings", &cms);
/// // Sets data.color (fields by path: see DynamicObject::set, get and edit); the object is
/// // created the first time.
/// let set_color = |cm: &mut DynamicObject| cm.set(&["data", "color"], "blue");
/// let first = CreateOrPatch::new(&api).run(blank.clone(), set_color)?;
/// assert!(matches!(first, OperationResult::Created(_)));
/// assert_eq!(first.object().get::<String>(&["data", "color"])?.as_deref(), Some("blue"));
/// // The second time there is nothing to write.
/// let second = CreateOrPatch::new(&api).run(blank, set_color)?;
/// assert!(matches!(second, OperationResult::Unchanged(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CreateOrPatch<'a, K> {
    api: &'a Api<K>,
    lister: Option<&'a Lister<K>>,
    apply: Option<(String, bool)>,
    field_manager: Option<String>,
    backoff: RetryBackoff,
}

impl<K> std::fmt::Debug for CreateOrPatch<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateOrPatch")
            .field("api", self.api)
            .field("lister", &self.lister.is_some())
            .field("apply", &self.apply)
            .field("field_manager", &self.field_manager)
            .finish()
    }
}

impl<'a, K: Object + Serialize + Clone> CreateOrPatch<'a, K> {
    /// Reads from the server, writes merge patches, retries conflicts with the default
    /// back-off (client-go's `DefaultRetry`).
    pub fn new(api: &'a Api<K>) -> Self {
        CreateOrPatch {
            api,
            lister: None,
            apply: None,
            field_manager: None,
            backoff: RetryBackoff::default(),
        }
    }

    /// Reads the object from this informer's cache first (see [`CreateOrPatch`]).
    pub fn lister(mut self, lister: &'a Lister<K>) -> Self {
        self.lister = Some(lister);
        self
    }

    /// Writes with server-side apply as `field_manager`; the closure builds the intent from
    /// the `object` given to [`run`](Self::run) (see [`CreateOrPatch`]).
    pub fn apply(mut self, field_manager: &str) -> Self {
        self.apply = Some((field_manager.to_owned(), false));
        self.field_manager = Some(field_manager.to_owned());
        self
    }

    /// Apply only: take the fields another manager owns instead of failing with 409.
    pub fn force(mut self) -> Self {
        if let Some((_, force)) = self.apply.as_mut() {
            *force = true;
        }
        self
    }

    /// The field manager named on creates and merge patches (`managedFields`).
    pub fn field_manager(mut self, name: &str) -> Self {
        self.field_manager = Some(name.to_owned());
        if let Some((manager, _)) = self.apply.as_mut() {
            *manager = name.to_owned();
        }
        self
    }

    /// How conflicts are retried (merge patches only).
    pub fn backoff(mut self, backoff: RetryBackoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Reads the object named by `object`'s name (in the Api's namespace), runs `mutate`,
    /// and writes what changed; `object` is what gets created when there is none (merge
    /// patch), or the starting point of the intent (apply). `mutate` may run more than once
    /// (once per attempt); its error ends the call, nothing written.
    pub fn run(
        &self,
        object: K,
        mut mutate: impl FnMut(&mut K) -> Result<()>,
    ) -> Result<OperationResult<K>> {
        let name = Object::metadata(&object).name().to_owned();
        if name.is_empty() {
            return Err(Error::InvalidInput(format!(
                "create or patch {}: the object needs a name",
                self.api.resource().plural
            )));
        }
        match &self.apply {
            Some((manager, force)) => self.run_apply(&name, object, manager, *force, mutate),
            None => {
                let mut attempt = 0u32;
                retry_on_conflict(&self.backoff, || {
                    attempt += 1;
                    self.merge_attempt(&name, &object, attempt == 1, &mut mutate)
                })
            }
        }
    }

    /// The current object: from the cache on `cached` reads when there is a lister (and the
    /// cache has it), else from the server; `None` when it does not exist.
    fn read(&self, name: &str, cached: bool) -> Result<Option<K>> {
        if cached {
            if let Some(hit) = self.lister.and_then(|l| l.get(self.api.namespace(), name)) {
                return Ok(Some((*hit).clone()));
            }
        }
        match self.api.get(name) {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn post_params(&self) -> PostParams {
        PostParams {
            field_manager: self.field_manager.clone(),
            ..Default::default()
        }
    }

    fn merge_attempt(
        &self,
        name: &str,
        template: &K,
        first: bool,
        mutate: &mut impl FnMut(&mut K) -> Result<()>,
    ) -> Result<OperationResult<K>> {
        let mut cached = first;
        // Twice at most: a create that finds the object created meanwhile reads it again.
        for _ in 0..2 {
            let Some(current) = self.read(name, cached)? else {
                let mut new = template.clone();
                mutate(&mut new)?;
                match self.api.create(&self.post_params(), &new) {
                    Ok(o) => return Ok(OperationResult::Created(o)),
                    Err(e) if e.is_already_exists() => {
                        cached = false;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            };
            let mut after = current.clone();
            mutate(&mut after)?;
            let (before_v, after_v) = (to_value(&current)?, to_value(&after)?);
            let Some(mut patch) = merge_patch(&before_v, &after_v) else {
                return Ok(OperationResult::Unchanged(current));
            };
            // The precondition: refused with 409 when the object moved on since the read.
            let rv = Object::metadata(&current).resource_version().to_owned();
            if let Value::Object(p) = &mut patch {
                let meta = p
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = meta {
                    m.insert("resourceVersion".into(), Value::String(rv));
                }
            }
            let params = PatchParams {
                field_manager: self.field_manager.clone(),
                ..Default::default()
            };
            let written = self.api.patch(name, &params, &Patch::Merge(patch))?;
            return Ok(OperationResult::Updated(written));
        }
        Err(Error::InvalidInput(format!(
            "create or patch {} {name:?}: created and deleted by others while we wrote",
            self.api.resource().plural
        )))
    }

    fn run_apply(
        &self,
        name: &str,
        template: K,
        manager: &str,
        force: bool,
        mut mutate: impl FnMut(&mut K) -> Result<()>,
    ) -> Result<OperationResult<K>> {
        let current = self.read(name, true)?;
        let mut intent = template;
        mutate(&mut intent)?;
        let mut intent_v = to_value(&intent)?;
        self.complete_intent(&mut intent_v);
        if let Some(current) = current.as_ref() {
            let current_v = to_value(current)?;
            if contains(&current_v, &intent_v) && !drops_owned_field(&current_v, manager, &intent_v)
            {
                return Ok(OperationResult::Unchanged(current.clone()));
            }
        }
        let mut params = PatchParams::apply(manager);
        params.force = force;
        let written = self.api.patch(name, &params, &Patch::Apply(&intent_v))?;
        Ok(match current {
            None => OperationResult::Created(written),
            Some(_) => OperationResult::Updated(written),
        })
    }

    /// Gives an apply configuration its `apiVersion` and `kind` (required) and drops the
    /// metadata only the server sets.
    fn complete_intent(&self, intent: &mut Value) {
        let Value::Object(map) = intent else { return };
        let r = self.api.resource();
        for (key, value) in [("apiVersion", r.api_version()), ("kind", r.kind.clone())] {
            if !map.get(key).is_some_and(Value::is_string) {
                map.insert(key.into(), Value::String(value));
            }
        }
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            for server_set in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(server_set);
            }
        }
    }
}

/// [`CreateOrPatch::new`]`(api).run(object, mutate)`: read from the server, merge patch.
pub fn create_or_patch<K: Object + Serialize + Clone>(
    api: &Api<K>,
    object: K,
    mutate: impl FnMut(&mut K) -> Result<()>,
) -> Result<OperationResult<K>> {
    CreateOrPatch::new(api).run(object, mutate)
}

fn to_value<K: Serialize>(o: &K) -> Result<Value> {
    serde_json::to_value(o).map_err(|e| {
        Error::InvalidInput(format!(
            "create or patch: the object does not serialize: {e}"
        ))
    })
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after`; `None` when equal.
/// Members gone from an object become `null`; anything else that differs is sent whole
/// (arrays included: a merge patch cannot edit one in place).
pub(crate) fn merge_patch(before: &Value, after: &Value) -> Option<Value> {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = Map::new();
            for key in b.keys() {
                if !a.contains_key(key) {
                    out.insert(key.clone(), Value::Null);
                }
            }
            for (key, av) in a {
                match b.get(key) {
                    None => {
                        out.insert(key.clone(), av.clone());
                    }
                    Some(bv) => {
                        if let Some(d) = merge_patch(bv, av) {
                            out.insert(key.clone(), d);
                        }
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        _ if before == after => None,
        _ => Some(after.clone()),
    }
}

/// True when `current` already holds everything `intent` sets: objects member by member,
/// arrays element by element (same length; the server's elements may carry defaulted
/// members the intent leaves out), anything else equal. A `null` in the intent asks for
/// the member to be absent.
pub(crate) fn contains(current: &Value, intent: &Value) -> bool {
    match (current, intent) {
        (Value::Object(c), Value::Object(i)) => i.iter().all(|(k, iv)| match c.get(k) {
            Some(cv) => contains(cv, iv),
            None => iv.is_null(),
        }),
        (Value::Array(c), Value::Array(i)) => {
            c.len() == i.len() && c.iter().zip(i).all(|(cv, iv)| contains(cv, iv))
        }
        _ => current == intent,
    }
}

/// True when `manager`'s last apply (its `Apply` entry in `managedFields`) owns a field that
/// `intent` no longer sets: applying would remove it, so the apply is needed. Paths are
/// followed into lists too: an element of a keyed list (`k:{"name":"app"}`: a container, an
/// env var) must still be in the intent's list, and so must every field owned inside it; a
/// value of a set (`v:"x"`) must still be in it.
fn drops_owned_field(current: &Value, manager: &str, intent: &Value) -> bool {
    let Some(entries) = current
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return false;
    };
    entries
        .iter()
        .filter(|e| {
            e["manager"] == manager
                && e["operation"] == "Apply"
                && e.get("subresource")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
        })
        .any(|e| owned_missing(&e["fieldsV1"], intent))
}

/// Whether some path of a `fieldsV1` set is missing from `intent`.
fn owned_missing(fields: &Value, intent: &Value) -> bool {
    let Value::Object(set) = fields else {
        return false;
    };
    set.iter().any(|(key, sub)| {
        if let Some(member) = key.strip_prefix("f:") {
            return match intent {
                Value::Object(m) => match m.get(member) {
                    None | Some(Value::Null) => true,
                    Some(v) => owned_missing(sub, v),
                },
                _ => false,
            };
        }
        let Value::Array(items) = intent else {
            // `.` (the node itself), or a list entry where the intent has no list.
            return false;
        };
        if let Some(k) = key.strip_prefix("k:") {
            // An entry whose key does not parse is the server's business, not a drop.
            let Ok(Value::Object(want)) = serde_json::from_str::<Value>(k) else {
                return false;
            };
            return match keyed_element(items, &want) {
                Some(item) => owned_missing(sub, item),
                None => true,
            };
        }
        if let Some(v) = key.strip_prefix("v:") {
            return serde_json::from_str::<Value>(v).is_ok_and(|v| !items.contains(&v));
        }
        // `i:<index>` (atomic lists are owned whole, never by index in an apply's set).
        false
    })
}

/// The element of a keyed list whose key fields are `key`: one with every key field equal,
/// else one with those it has equal (at least one) and the others left out (the server
/// defaults a missing key field, as a port's `protocol`, before it records the key).
fn keyed_element<'v>(items: &'v [Value], key: &Map<String, Value>) -> Option<&'v Value> {
    let matches = |item: &Value, lenient: bool| {
        let Value::Object(item) = item else {
            return false;
        };
        let mut present = 0;
        let equal = key.iter().all(|(k, want)| match item.get(k) {
            Some(got) => {
                present += 1;
                got == want
            }
            None => lenient,
        });
        equal && present > 0
    };
    items
        .iter()
        .find(|item| matches(item, false))
        .or_else(|| items.iter().find(|item| matches(item, true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_patch_carries_only_the_difference() {
        let before = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
            "data": {"k": "v"}, "list": [1, 2]});
        let after = json!({"metadata": {"name": "a", "labels": {"x": "1", "z": "3"}},
            "data": {"k": "v"}, "list": [1, 2, 3]});
        assert_eq!(
            merge_patch(&before, &after),
            Some(json!({"metadata": {"labels": {"y": null, "z": "3"}}, "list": [1, 2, 3]}))
        );
        assert_eq!(merge_patch(&before, &before), None);
    }

    #[test]
    fn containment_ignores_defaulted_members_but_not_other_values() {
        let current = json!({"spec": {"replicas": 2, "template": {"containers": [
            {"name": "app", "image": "nginx", "imagePullPolicy": "Always"}]}}});
        let same =
            json!({"spec": {"template": {"containers": [{"name": "app", "image": "nginx"}]}}});
        let other = json!({"spec": {"replicas": 3}});
        assert!(contains(&current, &same));
        assert!(!contains(&current, &other));
        assert!(contains(&current, &json!({"spec": {"paused": null}})));
    }

    #[test]
    fn a_field_the_manager_owned_and_dropped_needs_an_apply() {
        let current = json!({"metadata": {"managedFields": [
            {"manager": "me", "operation": "Apply", "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}},
            {"manager": "other", "operation": "Apply", "fieldsV1": {"f:data": {"f:c": {}}}}]},
            "data": {"a": "1", "b": "2", "c": "3"}});
        assert!(drops_owned_field(
            &current,
            "me",
            &json!({"data": {"a": "1"}})
        ));
        assert!(!drops_owned_field(
            &current,
            "me",
            &json!({"data": {"a": "1", "b": "2"}})
        ));
        assert!(!drops_owned_field(&current, "nobody", &json!({})));
    }

    #[test]
    fn fields_owned_inside_keyed_list_elements_count() {
        let current = json!({"metadata": {"managedFields": [
            {"manager": "me", "operation": "Apply", "fieldsV1": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {},
                    "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}},
                              "k:{\"name\":\"B\"}": {".": {}, "f:name": {}, "f:value": {}}},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}},
                "k:{\"name\":\"side\"}": {".": {}, "f:name": {}}},
                "f:finalizers": {"v:\"x\"": {}}}}}]}});
        let container = |env: Value| json!({"name": "app", "image": "nginx", "env": env, "ports": [{"containerPort": 80}]});
        let all = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
            {"name": "side"}], "finalizers": ["x"]}});
        assert!(!drops_owned_field(&current, "me", &all));
        // An env var dropped from container `app`.
        let no_b = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}])), {"name": "side"}],
            "finalizers": ["x"]}});
        assert!(drops_owned_field(&current, "me", &no_b));
        // A field dropped inside a kept env var.
        let b_valueless = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}, {"name": "B"}])), {"name": "side"}],
            "finalizers": ["x"]}});
        assert!(drops_owned_field(&current, "me", &b_valueless));
        // A whole container dropped; a set value dropped.
        let no_side = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]))],
            "finalizers": ["x"]}});
        assert!(drops_owned_field(&current, "me", &no_side));
        // An element that cannot be told apart (no key field) is not the owned one.
        let unnamed = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
            {"image": "side"}], "finalizers": ["x"]}});
        assert!(drops_owned_field(&current, "me", &unnamed));
        let no_x = json!({"spec": {"containers": [
            container(json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
            {"name": "side"}], "finalizers": []}});
        assert!(drops_owned_field(&current, "me", &no_x));
    }
}
