//! Managed fields (`metadata.managedFields`): which manager owns which field, in the
//! `FieldsV1` format the server writes, and how a non-apply write changes them.
//!
//! A field set is a tree keyed like `FieldsV1`: `f:<name>` for a map field, `k:<json>` for
//! an element of a list keyed by some of its fields (`k:{"name":"app"}`), `v:<json>` for an
//! element of a list used as a set (`finalizers`); a node "is a member" when the field itself
//! is owned (`"."` when it also has owned children, `{}` when it has none).
//!
//! Non-apply writes (create, update, every patch but apply) record an `Update` entry for
//! their manager (the `fieldManager` query parameter, else the User-Agent up to its first
//! `/`), like the real server: the fields the write ADDED or CHANGED (compared with the
//! object before it) join the writer's entry and leave every other entry; fields the write
//! REMOVED leave every entry; entries left empty disappear; entries are sorted like the
//! server sorts them (Apply before Update, then by time, manager, apiVersion, subresource).
//!
//! The shape of an object ([`Schema`], walked as [`Node`]s) says how its lists and maps are
//! owned, as structured-merge-diff reads it from the OpenAPI schema:
//! - a custom resource's schema decides: `x-kubernetes-list-type: set` (each value owned
//!   as `v:<json>`), `map` (each item as `k:{...}` of its `x-kubernetes-list-map-keys`, a
//!   key the item leaves out taking its schema `default`), `atomic` or none (the list as a
//!   whole); `x-kubernetes-map-type: atomic` (the map as a whole) or granular (the
//!   default); fields the schema does not declare (`x-kubernetes-preserve-unknown-fields`)
//!   have granular maps and atomic lists; its `metadata` is a built-in one's.
//!
//! Simplifications (the real server reads the built-in types' OpenAPI schema; this one has
//! none of them):
//! - which lists of a built-in resource are keyed, and by what, is decided by field name
//!   (table in `builtin_list_kind`);
//! - a map created by the write is owned as a member (`"."`) unless it is one of the
//!   always-present structs of the built-in types, recognised by name (`metadata`, `spec`,
//!   `status`, `template`, `strategy`); a few atomic structs are recognised by name
//!   (`involvedObject`, `regarding`, `related`, a label selector `selector`);
//! - only the defaults of `defaults.rs` are filled in, owned by the writer that caused them
//!   as on a real server;
//! - `metadata.managedFields` sent in a body are taken as the starting point, as given (an
//!   empty list keeps the stored ones).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A set of owned fields, as a tree (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    /// The field at this node is itself owned.
    pub member: bool,
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Reads a `fieldsV1` value. Unknown shapes are skipped, never a panic.
    pub fn from_fields_v1(v: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        if let Value::Object(m) = v {
            for (k, child) in m {
                if k == "." {
                    set.member = true;
                    continue;
                }
                let mut c = FieldSet::from_fields_v1(child);
                if c.children.is_empty() {
                    c.member = true;
                }
                set.children.insert(k.clone(), c);
            }
        }
        set
    }

    /// Writes the set as `fieldsV1`.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, c) in &self.children {
            m.insert(k.clone(), c.to_fields_v1());
        }
        Value::Object(m)
    }

    /// Marks the field at `path` as owned.
    pub fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for p in path {
            node = node.children.entry(p.clone()).or_default();
        }
        node.member = true;
    }

    /// Whether the field at `path` is owned.
    pub fn contains(&self, path: &[String]) -> bool {
        let mut node = self;
        for p in path {
            match node.children.get(p) {
                Some(c) => node = c,
                None => return false,
            }
        }
        node.member
    }

    /// Every owned path, depth first.
    pub fn paths(&self) -> Vec<Vec<String>> {
        fn walk(s: &FieldSet, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            if s.member && !prefix.is_empty() {
                out.push(prefix.clone());
            }
            for (k, c) in &s.children {
                prefix.push(k.clone());
                walk(c, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// Adds every path of `other`.
    pub fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (k, c) in &other.children {
            self.children.entry(k.clone()).or_default().union(c);
        }
    }

    /// Drops the paths owned in `other` (only those nodes, not what lies below them).
    pub fn subtract(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (k, c) in &other.children {
            if let Some(mine) = self.children.get_mut(k) {
                mine.subtract(c);
                if mine.is_empty() {
                    self.children.remove(k);
                }
            }
        }
    }

    /// Drops the paths owned in `other` together with everything below them.
    pub fn subtract_subtrees(&mut self, other: &FieldSet) {
        for (k, c) in &other.children {
            if c.member {
                self.children.remove(k);
            } else if let Some(mine) = self.children.get_mut(k) {
                mine.subtract_subtrees(c);
                if mine.is_empty() {
                    self.children.remove(k);
                }
            }
        }
    }

    /// The paths owned in both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (k, c) in &self.children {
            if let Some(o) = other.children.get(k) {
                let i = c.intersection(o);
                if !i.is_empty() {
                    out.children.insert(k.clone(), i);
                }
            }
        }
        out
    }
}

/// How the elements of a list are told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced and owned as a whole.
    Atomic,
    /// Elements keyed by these fields, each with the default its schema gives it (a key
    /// an element leaves out takes its default; without one it is left out of the key).
    Map(Vec<(String, Option<Value>)>),
    /// Elements are scalars, each owned on its own.
    Set,
}

/// What the server knows of an object's shape: a built-in resource (list keys and atomic
/// structs by field name, see [`list_kind`]) or a custom one, with its CRD's
/// `openAPIV3Schema` when it has one (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
/// `x-kubernetes-map-type`; the `metadata` of a custom resource is a built-in one's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Schema {
    pub builtin: bool,
    pub crd: Option<Arc<Value>>,
}

impl Schema {
    /// A built-in resource's (or a custom one's without a schema: every list atomic).
    pub fn builtin(builtin: bool) -> Schema {
        Schema { builtin, crd: None }
    }

    /// The node of the whole object.
    pub fn root(&self) -> Node<'_> {
        Node {
            builtin: self.builtin,
            root: true,
            name: "",
            schema: self.crd.as_deref().filter(|_| !self.builtin),
        }
    }
}

/// One place in an object's shape: the field name (what the built-in rules go by) and, for
/// a custom resource, the schema of the value there (`None` where the schema does not
/// declare it: `x-kubernetes-preserve-unknown-fields`, where maps are granular and lists
/// atomic, as structured-merge-diff deduces them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node<'a> {
    builtin: bool,
    root: bool,
    name: &'a str,
    schema: Option<&'a Value>,
}

impl<'a> Node<'a> {
    /// The node of the field `name` of the object here.
    pub fn field(self, name: &'a str) -> Node<'a> {
        if self.root && !self.builtin && name == "metadata" {
            // A custom resource's metadata is an ObjectMeta like any other.
            return Node {
                builtin: true,
                root: false,
                name,
                schema: None,
            };
        }
        let schema = self.schema.and_then(|s| {
            s.get("properties")
                .and_then(|p| p.get(name))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
        });
        Node {
            builtin: self.builtin,
            root: false,
            name,
            schema,
        }
    }

    /// Whether the custom resource's schema declares the field `name` here (in
    /// `properties`: a "named" field, not a key of a free-form map). Always false for a
    /// built-in resource, whose shape the server only knows by field name.
    pub fn declares(self, name: &str) -> bool {
        let server_owned = self.root && matches!(name, "metadata" | "apiVersion" | "kind");
        !self.builtin
            && !server_owned
            && self
                .schema
                .and_then(|s| s.get("properties"))
                .is_some_and(|p| p.get(name).is_some())
    }

    /// Whether this is a place in a custom resource (outside its `metadata`).
    pub fn is_custom(self) -> bool {
        !self.builtin
    }

    /// The node of the items of the list here.
    pub fn items(self) -> Node<'a> {
        Node {
            builtin: self.builtin,
            root: false,
            name: "",
            schema: self.schema.and_then(|s| s.get("items")),
        }
    }

    /// How the elements of the list here (whose items, old and new, are `items`) are told
    /// apart.
    pub fn list_kind(self, items: &[Value]) -> ListKind {
        if self.builtin {
            return builtin_list_kind(self.name, items);
        }
        let Some(s) = self.schema else {
            return ListKind::Atomic;
        };
        match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") if items.iter().all(|i| !i.is_object() && !i.is_array()) => ListKind::Set,
            Some("map") if items.iter().all(Value::is_object) => {
                let props = s.pointer("/items/properties");
                let keys: Vec<(String, Option<Value>)> = s
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|k| {
                        let default = props.and_then(|p| p.get(k)?.get("default")).cloned();
                        (k.to_owned(), default)
                    })
                    .collect();
                // A map list without keys (kube-apiserver refuses such a CRD) would make
                // every item the same one: owned as a whole instead.
                if keys.is_empty() {
                    ListKind::Atomic
                } else {
                    ListKind::Map(keys)
                }
            }
            _ => ListKind::Atomic,
        }
    }

    /// Whether the map here is owned as a whole (a change anywhere inside is a change of
    /// the map).
    pub fn atomic_map(self, v: &Map<String, Value>) -> bool {
        if self.builtin {
            return builtin_atomic_map(self.name, v);
        }
        self.schema.is_some_and(|s| {
            s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
        })
    }

    /// A built-in struct that always exists: creating it is not owning it.
    pub fn always_present(self) -> bool {
        self.builtin && builtin_always_present(self.name)
    }
}

/// The list kind of the built-in field `name` (see the module docs).
fn builtin_list_kind(name: &str, items: &[Value]) -> ListKind {
    let keyed: &[&str] = match name {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => &["name"][..],
        "volumeMounts" => &["mountPath"],
        "volumeDevices" => &["devicePath"],
        "ports" => {
            if items.iter().any(|i| i.get("containerPort").is_some()) {
                &["containerPort", "protocol"]
            } else {
                &["port", "protocol"]
            }
        }
        "conditions" | "addresses" => &["type"],
        "podIPs" | "hostIPs" | "hostAliases" => &["ip"],
        "ownerReferences" => &["uid"],
        "taints" => &["key", "effect"],
        "topologySpreadConstraints" => &["topologyKey", "whenUnsatisfiable"],
        "finalizers" => return ListKind::Set,
        _ => return ListKind::Atomic,
    };
    if items.iter().all(Value::is_object) {
        ListKind::Map(keyed.iter().map(|k| ((*k).to_owned(), None)).collect())
    } else {
        ListKind::Atomic
    }
}

/// Built-in maps owned as a whole (a change anywhere inside is a change of the map).
fn builtin_atomic_map(name: &str, v: &Map<String, Value>) -> bool {
    matches!(name, "involvedObject" | "regarding" | "related")
        || (name == "selector"
            && (v.contains_key("matchLabels") || v.contains_key("matchExpressions")))
}

/// Built-in structs that always exist: creating them is not owning them.
fn builtin_always_present(name: &str) -> bool {
    matches!(
        name,
        "metadata" | "spec" | "status" | "template" | "strategy"
    )
}

/// The `FieldsV1` name of a list element.
pub(crate) fn element_key(kind: &ListKind, item: &Value) -> Option<String> {
    match kind {
        ListKind::Atomic => None,
        ListKind::Set => Some(format!("v:{item}")),
        ListKind::Map(keys) => {
            let mut k = Map::new();
            for (f, default) in keys.iter() {
                if let Some(v) = item.get(f).or(default.as_ref()) {
                    k.insert(f.clone(), v.clone());
                }
            }
            Some(format!("k:{}", Value::Object(k)))
        }
    }
}

/// Metadata fields the server sets itself: never owned.
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The top-level fields of an object that can be owned, as `(name, value)`.
fn owned_top_level(obj: &Value) -> Vec<(&str, Value)> {
    let Some(m) = obj.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                if let Value::Object(meta) = v {
                    let kept: Map<String, Value> = meta
                        .iter()
                        .filter(|(k, _)| !SERVER_METADATA.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if !kept.is_empty() {
                        out.push(("metadata", Value::Object(kept)));
                    }
                }
            }
            _ => out.push((k.as_str(), v.clone())),
        }
    }
    out
}

/// What a write changed: `changed` (added or modified fields) and `removed`.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    pub changed: FieldSet,
    pub removed: FieldSet,
}

/// Compares two versions of an object (`None`: it did not exist).
pub(crate) fn diff(schema: &Schema, old: Option<&Value>, new: &Value) -> Diff {
    let mut d = Diff::default();
    let empty = Value::Object(Map::new());
    let old_top: BTreeMap<&str, Value> =
        owned_top_level(old.unwrap_or(&empty)).into_iter().collect();
    let new_top: BTreeMap<&str, Value> = owned_top_level(new).into_iter().collect();
    let mut path = Vec::new();
    let names: std::collections::BTreeSet<&str> =
        old_top.keys().chain(new_top.keys()).copied().collect();
    let root = schema.root();
    for name in names {
        path.push(format!("f:{name}"));
        diff_field(
            root.field(name),
            old_top.get(name),
            new_top.get(name),
            &mut path,
            &mut d,
        );
        path.pop();
    }
    d
}

fn diff_field(
    node: Node<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<String>,
    d: &mut Diff,
) {
    match (old, new) {
        (None, None) => {}
        (Some(_), None) => d.removed.insert(path),
        (None, Some(v)) => added(node, v, path, d),
        (Some(o), Some(n)) => match (o, n) {
            (Value::Object(om), Value::Object(nm)) if !node.atomic_map(nm) => {
                let keys: std::collections::BTreeSet<&String> =
                    om.keys().chain(nm.keys()).collect();
                for k in keys {
                    path.push(format!("f:{k}"));
                    diff_field(node.field(k), om.get(k), nm.get(k), path, d);
                    path.pop();
                }
            }
            (Value::Array(ol), Value::Array(nl)) => {
                let all: Vec<Value> = ol.iter().chain(nl.iter()).cloned().collect();
                let kind = node.list_kind(&all);
                if kind == ListKind::Atomic {
                    if o != n {
                        d.changed.insert(path);
                    }
                    return;
                }
                let index = |l: &[Value]| -> BTreeMap<String, Value> {
                    l.iter()
                        .filter_map(|i| Some((element_key(&kind, i)?, i.clone())))
                        .collect()
                };
                let (oi, ni) = (index(ol), index(nl));
                let keys: std::collections::BTreeSet<&String> =
                    oi.keys().chain(ni.keys()).collect();
                for k in keys {
                    path.push(k.clone());
                    diff_element(node.items(), oi.get(k), ni.get(k), path, d);
                    path.pop();
                }
            }
            _ => {
                if o != n {
                    d.changed.insert(path);
                }
            }
        },
    }
}

fn diff_element(
    node: Node<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<String>,
    d: &mut Diff,
) {
    match (old, new) {
        (Some(_), None) => d.removed.insert(path),
        (None, Some(v)) => {
            d.changed.insert(path);
            if let Value::Object(m) = v {
                for (k, c) in m {
                    path.push(format!("f:{k}"));
                    added(node.field(k), c, path, d);
                    path.pop();
                }
            }
        }
        (Some(Value::Object(om)), Some(Value::Object(nm))) => {
            let keys: std::collections::BTreeSet<&String> = om.keys().chain(nm.keys()).collect();
            for k in keys {
                path.push(format!("f:{k}"));
                diff_field(node.field(k), om.get(k), nm.get(k), path, d);
                path.pop();
            }
        }
        (Some(o), Some(n)) => {
            if o != n {
                d.changed.insert(path);
            }
        }
        (None, None) => {}
    }
}

/// A field that did not exist before: it and everything inside it is new.
fn added(node: Node<'_>, v: &Value, path: &mut Vec<String>, d: &mut Diff) {
    match v {
        Value::Object(m) if !node.atomic_map(m) => {
            if !node.always_present() || m.is_empty() {
                d.changed.insert(path);
            }
            for (k, c) in m {
                path.push(format!("f:{k}"));
                added(node.field(k), c, path, d);
                path.pop();
            }
        }
        Value::Array(l) => {
            let kind = node.list_kind(l);
            d.changed.insert(path);
            if kind != ListKind::Atomic {
                for item in l {
                    if let Some(k) = element_key(&kind, item) {
                        path.push(k);
                        diff_element(node.items(), None, Some(item), path, d);
                        path.pop();
                    }
                }
            }
        }
        _ => d.changed.insert(path),
    }
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: String,
    pub fields: FieldSet,
}

impl Entry {
    fn from_json(v: &Value) -> Option<Entry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        Some(Entry {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            time: s("time"),
            subresource: s("subresource"),
            fields: FieldSet::from_fields_v1(v.get("fieldsV1")?),
        })
    }

    /// The entry as the server writes it (its key order too, for core resources).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), self.manager.clone().into());
        m.insert("operation".into(), self.operation.clone().into());
        m.insert("apiVersion".into(), self.api_version.clone().into());
        m.insert("time".into(), self.time.clone().into());
        m.insert("fieldsType".into(), "FieldsV1".into());
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(m)
    }

    pub fn same_manager(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// The entries of an object (those it cannot read are dropped).
pub(crate) fn entries_of(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Entry::from_json).collect())
        .unwrap_or_default()
}

/// Sorts entries like the server, drops empty ones, and stores them in `obj`.
pub(crate) fn store_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|p, q| {
        (
            &p.operation,
            &p.time,
            &p.manager,
            &p.api_version,
            &p.subresource,
        )
            .cmp(&(
                &q.operation,
                &q.time,
                &q.manager,
                &q.api_version,
                &q.subresource,
            ))
    });
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// Who is writing: the manager and the subresource a write goes through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Writer {
    pub manager: String,
    /// `""` for the main resource, else e.g. `"status"`.
    pub subresource: String,
    /// The apiVersion of the resource (`v1`, `apps/v1`).
    pub api_version: String,
    pub schema: Schema,
    /// When, as the server stamps it (`2026-11-23T04:37:17Z`).
    pub time: String,
}

/// Records a non-apply write of `new` over `old` (`None`: a create) in `new`'s managedFields.
///
/// The starting entries are those `new` carries (a body may set them), else `old`'s.
pub(crate) fn record_update(old: Option<&Value>, new: &mut Value, w: &Writer) {
    // An empty list in the body changes nothing (the real server's rule too).
    let mut entries = match new.pointer("/metadata/managedFields") {
        Some(Value::Array(l)) if !l.is_empty() => entries_of(new),
        _ => old.map(entries_of).unwrap_or_default(),
    };
    let d = diff(&w.schema, old, new);
    for e in entries.iter_mut() {
        e.fields.subtract_subtrees(&d.removed);
        if !e.same_manager(&w.manager, "Update", &w.subresource) {
            e.fields.subtract(&d.changed);
        }
    }
    if !d.changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.same_manager(&w.manager, "Update", &w.subresource))
        {
            Some(e) => {
                e.fields.union(&d.changed);
                e.time = w.time.clone();
                e.api_version = w.api_version.clone();
            }
            None => entries.push(Entry {
                manager: w.manager.clone(),
                operation: "Update".into(),
                api_version: w.api_version.clone(),
                time: w.time.clone(),
                subresource: w.subresource.clone(),
                fields: d.changed,
            }),
        }
    }
    store_entries(new, entries);
}

/// [`record_update`] on the maps the store keeps objects in.
pub(crate) fn record_update_map(
    old: Option<&Map<String, Value>>,
    new: &mut Map<String, Value>,
    w: &Writer,
) {
    let old = old.map(|m| Value::Object(m.clone()));
    let mut v = Value::Object(std::mem::take(new));
    record_update(old.as_ref(), &mut v, w);
    if let Value::Object(m) = v {
        *new = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CORE: bool = true;
    const CUSTOM: bool = false;

    fn writer(manager: &str, builtin: bool) -> Writer {
        Writer {
            manager: manager.into(),
            subresource: String::new(),
            api_version: "v1".into(),
            schema: Schema::builtin(builtin),
            time: "2026-11-23T05:00:00Z".into(),
        }
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {}},
            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}});
        let s = FieldSet::from_fields_v1(&v);
        assert!(s.contains(&["f:data".into()]));
        assert!(s.contains(&["f:metadata".into(), "f:labels".into()]));
        assert!(!s.contains(&["f:metadata".into()]));
        assert_eq!(s.to_fields_v1(), v);
    }

    #[test]
    fn create_owns_everything_but_server_fields() {
        // The capture create-configmap-generatename.
        let mut obj = json!({"metadata": {"generateName": "cm-gen-", "name": "cm-gen-x",
            "namespace": "ns", "uid": "u"}, "data": {"k": "v"}});
        record_update(None, &mut obj, &writer("fixture-capture", CORE));
        let e = &obj["metadata"]["managedFields"][0];
        assert_eq!(e["manager"], "fixture-capture");
        assert_eq!(e["operation"], "Update");
        assert_eq!(
            e["fieldsV1"],
            json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:generateName": {}}})
        );
        // A custom resource's spec is owned as a member, a built-in one's is not.
        let mut w = json!({"metadata": {"name": "w"}, "spec": {"color": "red"}});
        record_update(None, &mut w, &writer("kubectl-create", CUSTOM));
        assert_eq!(
            w["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {".": {}, "f:color": {}}})
        );
        let mut l = json!({"metadata": {"name": "l"}, "spec": {"holder": "a"},
            "involvedObject": {"kind": "Pod"}});
        record_update(None, &mut l, &writer("m", CORE));
        assert_eq!(
            l["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {"f:holder": {}}, "f:involvedObject": {}})
        );
    }

    #[test]
    fn update_moves_changed_fields_and_drops_removed_ones() {
        // The capture json-patch-configmap: kubectl-create owned data; fixture-capture changes
        // size, removes color and adds labels.
        let old = json!({"metadata": {"name": "cm", "managedFields": [
            {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
             "time": "2026-11-23T04:37:17Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {".": {}, "f:color": {}, "f:size": {}}}}]},
            "data": {"color": "red", "size": "1"}});
        let mut new = json!({"metadata": {"name": "cm", "labels": {"patched": "json-patch"},
            "managedFields": old["metadata"]["managedFields"].clone()},
            "data": {"size": "2"}});
        let mut w = writer("fixture-capture", CORE);
        w.time = "2026-11-23T04:37:17Z".into();
        record_update(Some(&old), &mut new, &w);
        assert_eq!(
            new["metadata"]["managedFields"],
            json!([
                {"manager": "fixture-capture", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-23T04:37:17Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:data": {"f:size": {}},
                              "f:metadata": {"f:labels": {".": {}, "f:patched": {}}}}},
                {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-23T04:37:17Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:data": {}}}
            ])
        );
    }

    #[test]
    fn keyed_lists_are_tracked_per_element() {
        let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "image": "a"}, {"name": "side", "image": "b", "command": ["x"]}],
            "tolerations": [{"key": "a"}]}});
        let new = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "image": "a"}, {"name": "side", "image": "c", "command": ["x"]},
            {"name": "extra", "image": "d", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
            "tolerations": [{"key": "b"}]}});
        let d = diff(&Schema::builtin(CORE), Some(&old), &new);
        assert_eq!(
            d.changed.to_fields_v1(),
            json!({"f:spec": {"f:containers": {
                "k:{\"name\":\"extra\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}":
                        {".": {}, "f:containerPort": {}, "f:protocol": {}}}},
                "k:{\"name\":\"side\"}": {"f:image": {}}},
                "f:tolerations": {}}})
        );
        assert!(d.removed.is_empty());
        // The same lists of a custom resource are atomic.
        let d = diff(&Schema::builtin(CUSTOM), Some(&old), &new);
        assert_eq!(
            d.changed.to_fields_v1(),
            json!({"f:spec": {"f:containers": {}, "f:tolerations": {}}})
        );
        // Finalizers are a set.
        let d = diff(
            &Schema::builtin(CORE),
            Some(&json!({"metadata": {"finalizers": ["a"]}})),
            &json!({"metadata": {"finalizers": ["a", "b"]}}),
        );
        assert_eq!(
            d.changed.to_fields_v1(),
            json!({"f:metadata": {"f:finalizers": {"v:\"b\"": {}}}})
        );
    }

    #[test]
    fn entries_sort_like_the_server() {
        let mut obj = json!({"metadata": {}});
        let e = |m: &str, op: &str, t: &str| Entry {
            manager: m.into(),
            operation: op.into(),
            api_version: "v1".into(),
            time: t.into(),
            subresource: String::new(),
            fields: FieldSet::from_fields_v1(&json!({"f:a": {}})),
        };
        store_entries(
            &mut obj,
            vec![
                e("z", "Update", "2026-01-01T00:00:01Z"),
                e("b", "Update", "2026-01-01T00:00:00Z"),
                e("a", "Update", "2026-01-01T00:00:00Z"),
                e("y", "Apply", "2026-01-01T00:00:09Z"),
            ],
        );
        let names: Vec<&str> = obj["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["y", "a", "b", "z"]);
    }
}
