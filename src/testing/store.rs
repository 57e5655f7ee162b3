//! The test API server's object store: what etcd plus the watch cache do for a real one.
//!
//! One global, increasing resourceVersion; per resource a map `key -> object` ordered like
//! etcd keys (`namespace/name`), and a bounded history of change events. The history makes
//! three things real: watches resume from any version still inside it, lists page over a
//! consistent snapshot (older states are rebuilt by undoing later events), and anything older
//! than it is `410 Expired`, exactly when a real server would say so.
//!
//! Objects are kept as compact JSON text without `kind`/`apiVersion` (as list items are sent),
//! serialised once on write, so serving lists and events is copying bytes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::api::{ApiResource, LabelSelector, Status, StatusDetails, StringMap};

/// `namespace/name`, or `name` for cluster-scoped objects: etcd's key order.
pub(crate) type Key = String;

/// One version of one object.
#[derive(Debug)]
pub(crate) struct StoredObject {
    pub rv: u64,
    pub namespace: String,
    pub name: String,
    /// Compact JSON without `kind` and `apiVersion`.
    pub json: Arc<str>,
    pub labels: StringMap,
}

pub(crate) type Stored = Arc<StoredObject>;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, with the state before it (to rebuild snapshots and filter watches).
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub ty: EventType,
    pub key: Key,
    /// The new state; for a deletion, the last state stamped with the deletion's version.
    pub object: Stored,
    pub prev: Option<Stored>,
}

/// Which part of the API a request addresses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TypeKey {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl TypeKey {
    pub fn of(ar: &ApiResource) -> Self {
        TypeKey {
            group: ar.group.clone(),
            version: ar.version.clone(),
            plural: ar.plural.clone(),
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// All objects of one resource.
#[derive(Debug)]
pub(crate) struct Collection {
    pub kind: String,
    pub api_version: String,
    /// Core-group list items are sent without `kind`/`apiVersion`, others with them.
    pub core: bool,
    pub objects: BTreeMap<Key, Stored>,
    pub history: VecDeque<Arc<Event>>,
    /// Events at or below this version are gone; older starting points get 410.
    pub compacted: u64,
    /// All keys in order, rebuilt after writes: counts "how many after this key" for
    /// `remainingItemCount` without walking the map on every page.
    sorted_keys: Option<Vec<Key>>,
}

impl Collection {
    fn new(tk: &TypeKey, kind: Option<&str>) -> Self {
        let kind = kind
            .map(str::to_owned)
            .unwrap_or_else(|| guess_kind(&tk.plural));
        Collection {
            kind,
            api_version: tk.api_version(),
            core: tk.group.is_empty(),
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            sorted_keys: None,
        }
    }

    /// `{"kind":K,"apiVersion":V,` + the rest of `json`: an object as events carry it.
    pub fn with_type_meta(&self, json: &str) -> String {
        let rest = json.strip_prefix('{').unwrap_or(json);
        let mut s = String::with_capacity(json.len() + 64);
        s.push_str("{\"kind\":");
        s.push_str(&Value::from(self.kind.as_str()).to_string());
        s.push_str(",\"apiVersion\":");
        s.push_str(&Value::from(self.api_version.as_str()).to_string());
        if rest != "}" {
            s.push(',');
        }
        s.push_str(rest);
        s
    }

    /// Events after `rv`, or `Err(oldest available)` when some are gone.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Arc<Event>>, u64> {
        if rv < self.compacted {
            return Err(self.compacted + 1);
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }

    /// The objects as they were at `rv`, in key order, from just after `after`; `None` when
    /// that state is older than the history.
    pub fn snapshot(&self, rv: u64, after: Option<&str>, ns: Option<&str>) -> Option<Vec<Stored>> {
        self.snapshot_page(rv, after, ns, &|_| true, None, false)
            .map(|(page, _)| page)
    }

    /// How many current objects (of namespace `ns`, if given) sort after `key`.
    fn count_after(&mut self, key: &str, ns: Option<&str>) -> usize {
        let objects = &self.objects;
        let keys = self
            .sorted_keys
            .get_or_insert_with(|| objects.keys().cloned().collect());
        let from = keys.partition_point(|k| k.as_str() <= key);
        let to = match ns {
            Some(n) => {
                let prefix = format!("{n}/");
                keys.partition_point(|k| k.as_str() < prefix.as_str() || k.starts_with(&prefix))
            }
            None => keys.len(),
        };
        to.saturating_sub(from)
    }

    /// A page of a list: like [`snapshot_page`](Self::snapshot_page), but counting what
    /// remains only when asked (`remainingItemCount` is not sent with selectors), and from an
    /// index when the page is of the current state.
    pub fn list_page(
        &mut self,
        rv: u64,
        after: Option<&str>,
        ns: Option<&str>,
        keep: &dyn Fn(&StoredObject) -> bool,
        limit: Option<usize>,
        count_rest: bool,
    ) -> Option<(Vec<Stored>, usize)> {
        let current = self.history.back().is_none_or(|e| e.rv <= rv);
        if count_rest && current {
            let (page, more) = self.snapshot_page(rv, after, ns, keep, limit, false)?;
            let rest = match (more, page.last()) {
                (0, _) | (_, None) => 0,
                (_, Some(last)) => {
                    let key = if last.namespace.is_empty() {
                        last.name.clone()
                    } else {
                        format!("{}/{}", last.namespace, last.name)
                    };
                    self.count_after(&key, ns)
                }
            };
            return Some((page, rest));
        }
        self.snapshot_page(rv, after, ns, keep, limit, count_rest)
    }

    /// One page of the state at `rv`: up to `limit` objects `keep` accepts, from just after
    /// `after`, and how many more it accepts beyond the page (counted, not copied).
    pub fn snapshot_page(
        &self,
        rv: u64,
        after: Option<&str>,
        ns: Option<&str>,
        keep: &dyn Fn(&StoredObject) -> bool,
        limit: Option<usize>,
        count_rest: bool,
    ) -> Option<(Vec<Stored>, usize)> {
        if rv < self.compacted {
            return None;
        }
        // The state at `rv` of every key changed since: the `prev` of its first later event.
        let mut overrides: BTreeMap<&str, Option<&Stored>> = BTreeMap::new();
        for ev in self.history.iter().rev() {
            if ev.rv <= rv {
                break;
            }
            overrides.insert(ev.key.as_str(), ev.prev.as_ref());
        }
        let prefix = ns.map(|n| format!("{n}/"));
        let lower = match (after, prefix.as_deref()) {
            (Some(a), Some(p)) if a < p => Bound::Included(p),
            (Some(a), _) => Bound::Excluded(a),
            (None, Some(p)) => Bound::Included(p),
            (None, None) => Bound::Unbounded,
        };
        let in_ns = |k: &str| prefix.as_deref().is_none_or(|p| k.starts_with(p));
        let mut objs = self
            .objects
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| in_ns(k))
            .filter(|(k, _)| !overrides.contains_key(k.as_str()))
            .map(|(k, v)| (k.as_str(), v))
            .peekable();
        let mut olds = overrides
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| in_ns(k))
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .peekable();
        let mut page = Vec::new();
        let mut more = 0usize;
        loop {
            let take_old = match (objs.peek(), olds.peek()) {
                (Some((a, _)), Some((b, _))) => b < a,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => break,
            };
            let next = if take_old { olds.next() } else { objs.next() };
            let Some((_, v)) = next else { break };
            if !keep(v) {
                continue;
            }
            if limit.is_some_and(|l| page.len() >= l) {
                more += 1;
                if !count_rest {
                    break;
                }
            } else {
                page.push(Arc::clone(v));
            }
        }
        Some((page, more))
    }
}

/// `pods` -> `Pod`, `networkpolicies` -> `Networkpolicy`: only for resources nobody named.
fn guess_kind(plural: &str) -> String {
    let singular = plural
        .strip_suffix("ies")
        .map(|s| format!("{s}y"))
        .or_else(|| plural.strip_suffix("sses").map(|s| format!("{s}ss")))
        .or_else(|| plural.strip_suffix('s').map(str::to_owned))
        .unwrap_or_else(|| plural.to_owned());
    let mut c = singular.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Label and field filters of a list or watch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub labels: LabelSelector,
    /// `(field, value, equal)` for `metadata.name` and `metadata.namespace`.
    pub fields: Vec<(String, String, bool)>,
}

impl Filter {
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Filter, Status> {
        let labels = LabelSelector::parse(labels.unwrap_or(""))
            .map_err(|e| Status::failure(400, "BadRequest", e.to_string()))?;
        let mut parsed = Vec::new();
        for term in fields
            .unwrap_or("")
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let (field, value, eq) = if let Some((f, v)) = term.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, v, true)
            } else {
                return Err(Status::failure(
                    400,
                    "BadRequest",
                    format!("invalid field selector term {term:?}"),
                ));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(Status::failure(
                    400,
                    "BadRequest",
                    format!("field label not supported: {field}"),
                ));
            }
            parsed.push((field.to_owned(), value.trim().to_owned(), eq));
        }
        Ok(Filter {
            labels,
            fields: parsed,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, o: &StoredObject) -> bool {
        self.labels.matches(&o.labels)
            && self.fields.iter().all(|(f, v, eq)| {
                let actual = if f == "metadata.name" {
                    &o.name
                } else {
                    &o.namespace
                };
                (actual == v) == *eq
            })
    }
}

/// The whole store.
#[derive(Debug)]
pub(crate) struct Store {
    pub rv: u64,
    pub collections: HashMap<TypeKey, Collection>,
    pub history_limit: usize,
    uid_seq: u64,
    uid_prefix: u32,
}

/// A failure Status with `details` naming the object, as the API server sends them.
pub(crate) fn object_status(
    code: u16,
    reason: &str,
    message: String,
    plural: &str,
    name: &str,
) -> Status {
    let mut st = Status::failure(code, reason, message);
    st.details = Some(StatusDetails {
        name: Some(name.to_owned()).filter(|n| !n.is_empty()),
        kind: Some(plural.to_owned()),
        ..Default::default()
    });
    st
}

fn bad_request(message: impl Into<String>) -> Status {
    Status::failure(400, "BadRequest", message)
}

impl Store {
    pub fn new(history_limit: usize) -> Self {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Store {
            rv: 1,
            collections: HashMap::new(),
            history_limit: history_limit.max(1),
            uid_seq: 0,
            uid_prefix: seed,
        }
    }

    pub fn collection(&mut self, tk: &TypeKey) -> &mut Collection {
        self.collections
            .entry(tk.clone())
            .or_insert_with(|| Collection::new(tk, None))
    }

    /// Names the kind of a resource before any object of it exists.
    pub fn register(&mut self, ar: &ApiResource) {
        let tk = TypeKey::of(ar);
        let c = self.collection(&tk);
        c.kind = ar.kind.clone();
    }

    /// Drops all history: every older resourceVersion and continue token is now expired.
    pub fn compact(&mut self) {
        let rv = self.rv;
        for c in self.collections.values_mut() {
            c.history.clear();
            c.compacted = rv;
        }
    }

    fn new_uid(&mut self) -> String {
        self.uid_seq += 1;
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            self.uid_prefix,
            (self.uid_seq >> 32) & 0xffff,
            (self.uid_seq >> 20) & 0xfff,
            (self.uid_seq >> 8) & 0xfff,
            self.uid_seq
        )
    }

    fn record(
        &mut self,
        tk: &TypeKey,
        ty: EventType,
        key: Key,
        object: Stored,
        prev: Option<Stored>,
    ) {
        let limit = self.history_limit;
        let rv = object.rv;
        let c = self.collection(tk);
        if ty != EventType::Modified {
            c.sorted_keys = None;
        }
        match ty {
            EventType::Deleted => {
                c.objects.remove(&key);
            }
            _ => {
                c.objects.insert(key.clone(), Arc::clone(&object));
            }
        }
        c.history.push_back(Arc::new(Event {
            rv,
            ty,
            key,
            object,
            prev,
        }));
        while c.history.len() > limit {
            if let Some(old) = c.history.pop_front() {
                c.compacted = old.rv;
            }
        }
    }

    /// Creates an object. `ns` is the namespace from the URL (`None` for cluster-scoped).
    pub fn create(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        body: Value,
    ) -> Result<Stored, Status> {
        let mut obj = into_object(body)?;
        self.adopt_kind(tk, &mut obj);
        let meta = metadata_of(&mut obj);
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    let n = format!("{prefix}{:05x}", (self.uid_seq * 7919 + 13) & 0xfffff);
                    meta.insert("name".into(), n.clone().into());
                    n
                }
                _ => {
                    return Err(Status::failure(
                        422,
                        "Invalid",
                        format!("{} \"\" is invalid: metadata.name: Required value: name or generateName is required", tk.plural),
                    ))
                }
            },
        };
        let namespace = check_namespace(meta, ns)?;
        let key = make_key(&namespace, &name);
        if self.collection(tk).objects.contains_key(&key) {
            return Err(object_status(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", tk.plural),
                &tk.plural,
                &name,
            ));
        }
        let uid = self.new_uid();
        let meta = metadata_of(&mut obj);
        meta.insert("uid".into(), uid.into());
        meta.insert("creationTimestamp".into(), rfc3339_now().into());
        meta.entry("generation").or_insert(1.into());
        meta.remove("deletionTimestamp");
        self.rv += 1;
        let stored = seal(obj, self.rv, namespace, name);
        self.record(tk, EventType::Added, key, Arc::clone(&stored), None);
        Ok(stored)
    }

    /// Replaces an object. A `metadata.resourceVersion` in the body must match the stored one.
    pub fn update(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        body: Value,
    ) -> Result<Stored, Status> {
        let mut obj = into_object(body)?;
        self.adopt_kind(tk, &mut obj);
        let namespace = ns.unwrap_or("").to_owned();
        let key = make_key(&namespace, name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        let meta = metadata_of(&mut obj);
        if let Some(body_name) = meta.get("name").and_then(Value::as_str) {
            if body_name != name {
                return Err(bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
        }
        check_namespace(meta, ns)?;
        if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str) {
            if !rv.is_empty() && rv != current.rv.to_string() {
                // Named like kube-apiserver names it: the group-qualified resource, and the
                // group in `details` (status-409-lease-update-stale-rv.json).
                let resource = match tk.group.as_str() {
                    "" => tk.plural.clone(),
                    g => format!("{}.{g}", tk.plural),
                };
                let mut st = object_status(
                    409,
                    "Conflict",
                    format!("Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
                    &tk.plural,
                    name,
                );
                if let Some(d) = st.details.as_mut() {
                    d.group = Some(tk.group.clone()).filter(|g| !g.is_empty());
                }
                return Err(st);
            }
        }
        let old: Map<String, Value> = serde_json::from_str(&current.json).unwrap_or_default();
        let old_meta = old.get("metadata").and_then(Value::as_object);
        let meta = metadata_of(&mut obj);
        meta.insert("name".into(), name.into());
        for field in ["uid", "creationTimestamp", "deletionTimestamp"] {
            match old_meta.and_then(|m| m.get(field)) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        let generation = old_meta
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let spec_changed = old.get("spec") != obj.get("spec");
        metadata_of(&mut obj).insert(
            "generation".into(),
            (generation + i64::from(spec_changed)).into(),
        );
        self.rv += 1;
        let stored = seal(obj, self.rv, namespace, name.to_owned());
        self.record(
            tk,
            EventType::Modified,
            key,
            Arc::clone(&stored),
            Some(current),
        );
        Ok(stored)
    }

    /// Applies a JSON merge patch (RFC 7386) to an object.
    pub fn patch(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Stored, Status> {
        let key = make_key(ns.unwrap_or(""), name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        let mut doc: Value = serde_json::from_str(&current.json).unwrap_or_default();
        merge_patch(&mut doc, patch);
        // A patch without a resourceVersion applies to whatever is current.
        let has_rv = patch
            .pointer("/metadata/resourceVersion")
            .is_some_and(|v| !v.is_null());
        if !has_rv {
            if let Some(m) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
        }
        self.update(tk, ns, name, doc)
    }

    /// Deletes an object; returns its last state, stamped with the deletion's version.
    pub fn delete(&mut self, tk: &TypeKey, ns: Option<&str>, name: &str) -> Result<Stored, Status> {
        let namespace = ns.unwrap_or("").to_owned();
        let key = make_key(&namespace, name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        let mut obj: Map<String, Value> = serde_json::from_str(&current.json).unwrap_or_default();
        self.rv += 1;
        metadata_of(&mut obj);
        let stored = seal(obj, self.rv, namespace, name.to_owned());
        self.record(
            tk,
            EventType::Deleted,
            key,
            Arc::clone(&stored),
            Some(current),
        );
        Ok(stored)
    }

    /// A MODIFIED event without parsing anything: the stored JSON is copied with only its
    /// resourceVersion changed. For benchmarks that need events faster than real updates.
    pub fn touch(&mut self, tk: &TypeKey, ns: Option<&str>, name: &str) -> Result<Stored, Status> {
        let namespace = ns.unwrap_or("").to_owned();
        let key = make_key(&namespace, name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        self.rv += 1;
        let json: Arc<str> = current
            .json
            .replacen(
                &format!("\"resourceVersion\":\"{}\"", current.rv),
                &format!("\"resourceVersion\":\"{}\"", self.rv),
                1,
            )
            .into();
        let stored = Arc::new(StoredObject {
            rv: self.rv,
            namespace,
            name: name.to_owned(),
            json,
            labels: current.labels.clone(),
        });
        self.record(
            tk,
            EventType::Modified,
            key,
            Arc::clone(&stored),
            Some(current),
        );
        Ok(stored)
    }

    pub fn get(&mut self, tk: &TypeKey, ns: Option<&str>, name: &str) -> Result<Stored, Status> {
        let key = make_key(ns.unwrap_or(""), name);
        self.collection(tk)
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| not_found(tk, name))
    }

    /// Takes `kind` (naming the collection's kind) and `apiVersion` out of a body.
    fn adopt_kind(&mut self, tk: &TypeKey, obj: &mut Map<String, Value>) {
        obj.remove("apiVersion");
        if let Some(Value::String(kind)) = obj.remove("kind") {
            let c = self.collection(tk);
            if c.objects.is_empty() {
                c.kind = kind;
            }
        }
    }
}

pub(crate) fn not_found(tk: &TypeKey, name: &str) -> Status {
    object_status(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", tk.plural),
        &tk.plural,
        name,
    )
}

fn make_key(namespace: &str, name: &str) -> Key {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

fn into_object(body: Value) -> Result<Map<String, Value>, Status> {
    match body {
        Value::Object(m) => Ok(m),
        _ => Err(bad_request("the body must be a JSON object")),
    }
}

fn metadata_of(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let m = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut().expect("metadata was just made an object")
}

/// Sets (or checks) the namespace of a body against the URL's; returns it.
fn check_namespace(meta: &mut Map<String, Value>, ns: Option<&str>) -> Result<String, Status> {
    match ns {
        Some(ns) => {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                    return Err(bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {}
            }
            meta.insert("namespace".into(), ns.into());
            Ok(ns.to_owned())
        }
        None => {
            meta.remove("namespace");
            Ok(String::new())
        }
    }
}

/// Stamps the version and serialises an object once.
fn seal(mut obj: Map<String, Value>, rv: u64, namespace: String, name: String) -> Stored {
    let meta = metadata_of(&mut obj);
    meta.insert("resourceVersion".into(), rv.to_string().into());
    let labels = meta
        .get("labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let json: Arc<str> = Value::Object(obj).to_string().into();
    Arc::new(StoredObject {
        rv,
        namespace,
        name,
        json,
        labels,
    })
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target
        .as_object_mut()
        .expect("target was just made an object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The current time as `2026-11-22T02:04:06Z`.
pub(crate) fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> TypeKey {
        TypeKey {
            group: String::new(),
            version: "v1".into(),
            plural: "pods".into(),
        }
    }

    #[test]
    fn snapshot_rebuilds_older_states() {
        let mut s = Store::new(100);
        let tk = pods();
        for n in ["a", "b", "c"] {
            s.create(&tk, Some("ns"), json!({"metadata": {"name": n}}))
                .unwrap();
        }
        let at = s.rv;
        s.delete(&tk, Some("ns"), "b").unwrap();
        s.create(&tk, Some("ns"), json!({"metadata": {"name": "bb"}}))
            .unwrap();
        s.update(
            &tk,
            Some("ns"),
            "a",
            json!({"metadata": {"name": "a"}, "spec": {"x": 1}}),
        )
        .unwrap();
        let now_rv = s.rv;
        let c = s.collection(&tk);
        let then: Vec<_> = c
            .snapshot(at, None, None)
            .unwrap()
            .iter()
            .map(|o| (o.name.clone(), o.rv))
            .collect();
        assert_eq!(
            then,
            vec![("a".into(), 2), ("b".into(), 3), ("c".into(), 4)]
        );
        let after_a: Vec<_> = c
            .snapshot(at, Some("ns/a"), Some("ns"))
            .unwrap()
            .iter()
            .map(|o| o.name.clone())
            .collect();
        assert_eq!(after_a, vec!["b", "c"]);
        let now: Vec<_> = c
            .snapshot(now_rv, None, None)
            .unwrap()
            .iter()
            .map(|o| o.name.clone())
            .collect();
        assert_eq!(now, vec!["a", "bb", "c"]);
    }

    #[test]
    fn history_bound_compacts() {
        let mut s = Store::new(2);
        let tk = pods();
        for n in ["a", "b", "c", "d"] {
            s.create(&tk, Some("ns"), json!({"metadata": {"name": n}}))
                .unwrap();
        }
        let c = s.collection(&tk);
        assert_eq!(c.compacted, 3);
        assert!(c.events_after(2).is_err());
        assert_eq!(c.events_after(3).unwrap().len(), 2);
        assert!(c.snapshot(2, None, None).is_none());
    }

    #[test]
    fn kinds_and_dates() {
        assert_eq!(guess_kind("pods"), "Pod");
        assert_eq!(guess_kind("networkpolicies"), "Networkpolicy");
        let now = rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
    }
}
