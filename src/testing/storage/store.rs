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

use super::managed_fields::{Schema, Writer};
use super::merge_patch::merge_patch;
use super::resources::{is_builtin_group, ResourceInfo, Subresources};
pub(crate) use super::type_key::TypeKey;
use super::validation::{self, FieldError, Write};
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
    /// Its protobuf, made at the first protobuf answer that needs it (`encoded.rs`).
    #[cfg_attr(not(feature = "protobuf"), allow(dead_code))]
    pub encoded: super::encoded::Encoded,
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

/// `fieldValidation`: what a write does with fields the resource does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// 400 BadRequest listing them.
    Strict,
    /// Dropped, one `Warning` header each (the default).
    #[default]
    Warn,
    /// Dropped silently.
    Ignore,
}

/// The options of one write: the query parameters a real server reads, and who writes.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteOptions {
    /// `dryRun=All`: answer as if written, change nothing.
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// `Some("status")` for a write through `/status`.
    pub subresource: Option<String>,
    /// `fieldManager`, else the User-Agent up to its first `/`: the write records an
    /// `Update` entry for it in `metadata.managedFields` (see `managed_fields`).
    pub field_manager: Option<String>,
    /// The `managedFields` a server-side apply computed: stored as they are, and no `Update`
    /// entry is recorded.
    pub managed_fields: Option<Value>,
    /// A Rust-side write ([`ApiServer::create`](crate::testing::ApiServer::create), ...): sets the
    /// whole object as given (status included, unknown fields kept), like a test fixture.
    pub fixture: bool,
    /// Fields the request body named twice (see `duplicate_fields.rs`): reported as the
    /// unknown fields are, before them.
    pub duplicate_fields: Vec<String>,
}

impl WriteOptions {
    /// The options of a Rust-side write.
    pub fn fixture() -> Self {
        WriteOptions {
            fixture: true,
            ..Default::default()
        }
    }
}

/// A write's result: the object as stored (or as it would be, on a dry run) and the
/// warnings for the `Warning` response headers.
#[derive(Debug)]
pub(crate) struct Written {
    pub stored: Stored,
    pub warnings: Vec<String>,
}

/// `DeleteOptions`, from the body and the query.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub grace_period: Option<i64>,
    /// `Foreground`, `Background` or `Orphan`.
    pub propagation: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
    /// `orphanDependents` (deprecated, still honoured for the answer's code: `false` on an
    /// object that stays answers 202 Accepted).
    pub orphan_dependents: Option<bool>,
    /// A Rust-side delete ([`ApiServer::delete`](crate::testing::ApiServer::delete)): an object no
    /// finalizer holds goes with one DELETED event, pods too (no marking first).
    pub fixture: bool,
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// The object is gone; its last state.
    Gone(Stored),
    /// The object stays, being deleted (finalizers, or a pod's grace period).
    Pending(Stored),
}

/// All objects of one resource.
#[derive(Debug)]
pub(crate) struct Collection {
    pub kind: String,
    pub api_version: String,
    /// Subresources, generation, known fields.
    pub info: ResourceInfo,
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
            .or_else(|| super::builtins::builtin_kind(&tk.group, &tk.version, &tk.plural))
            .unwrap_or_else(|| guess_kind(&tk.plural));
        Collection {
            kind,
            api_version: tk.api_version(),
            info: ResourceInfo::defaults(tk),
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            sorted_keys: None,
        }
    }

    /// `{"kind":K,"apiVersion":V,` + the rest of `json`: an object as events carry it (a
    /// custom resource's defaulted as a read from etcd is: see `crd_defaults.rs`).
    pub fn with_type_meta(&self, json: &str) -> String {
        let defaulted = self.defaulted(json);
        let json = defaulted.as_deref().unwrap_or(json);
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

    /// A stored custom resource as a read decodes it, when its schema's defaults change it.
    pub fn defaulted(&self, json: &str) -> Option<String> {
        super::crd_defaults::on_read(self.info.schema.as_ref()?, json)
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

/// `pods` -> `Pod`, `networkpolicies` -> `Networkpolicy`: only for resources nobody named
/// that are not built-in ones.
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
    /// `(field, value, equal)` for `metadata.name`, `metadata.namespace`, and the pod
    /// fields `spec.nodeName` and `status.phase` (an absent field reads as "").
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
            if !matches!(
                field,
                "metadata.name" | "metadata.namespace" | "spec.nodeName" | "status.phase"
            ) {
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
                let actual = match f.as_str() {
                    "metadata.name" => o.name.clone(),
                    "metadata.namespace" => o.namespace.clone(),
                    other => {
                        // A pod field: read from the stored JSON (tests only, small stores).
                        let pointer = format!("/{}", other.replace('.', "/"));
                        serde_json::from_str::<serde_json::Value>(&o.json)
                            .ok()
                            .and_then(|j| {
                                j.pointer(&pointer)
                                    .and_then(|x| x.as_str())
                                    .map(str::to_owned)
                            })
                            .unwrap_or_default()
                    }
                };
                (actual == *v) == *eq
            })
    }
}

/// Every collection's objects and the version, at one moment (see `Store::backup`).
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub rv: u64,
    objects: HashMap<TypeKey, BTreeMap<Key, Stored>>,
}

/// The whole store.
#[derive(Debug)]
pub(crate) struct Store {
    pub rv: u64,
    /// Where the watch cache's window starts: watches from an older version get 410, while
    /// Exact lists still read older versions from the history (etcd). Moved by a restart.
    pub watch_cache_start: u64,
    pub collections: HashMap<TypeKey, Collection>,
    pub history_limit: usize,
    uid_seq: u64,
    uid_prefix: u32,
    /// State of the generator of `generateName` suffixes.
    rng: u64,
    /// Which resources CRDs serve, and which a CRD's deletion took away (`crd_lifecycle.rs`).
    pub serving: super::crd_lifecycle::Serving,
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
            watch_cache_start: 0,
            collections: HashMap::new(),
            history_limit: history_limit.max(1),
            uid_seq: 0,
            uid_prefix: seed,
            rng: u64::from(seed) << 16 | 0x9e37_79b9,
            serving: Default::default(),
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

    /// Declares a resource's subresources and (with `fields`) its known top-level fields.
    pub fn configure(
        &mut self,
        tk: &TypeKey,
        subresources: Option<&Subresources>,
        fields: Option<&[String]>,
    ) {
        let c = self.collection(tk);
        if let Some(s) = subresources {
            c.info.subresources = s.clone();
        }
        if let Some(f) = fields {
            c.info.fields = Some(f.to_vec());
        }
    }

    /// Drops all history: every older resourceVersion and continue token is now expired.
    pub fn compact(&mut self) {
        let rv = self.rv;
        for c in self.collections.values_mut() {
            c.history.clear();
            c.compacted = rv;
        }
    }

    /// Every collection's objects and the version: what an etcd snapshot holds.
    pub fn backup(&self) -> Snapshot {
        Snapshot {
            rv: self.rv,
            objects: self
                .collections
                .iter()
                .map(|(tk, c)| (tk.clone(), c.objects.clone()))
                .collect(),
        }
    }

    /// Puts a snapshot back, as restoring etcd does: its objects at its versions, the
    /// version back to its own, no history before it (older starting points get 410). The
    /// collections keep what they know of their resource (kind, subresources, schema).
    pub fn restore(&mut self, snapshot: &Snapshot) {
        self.rv = snapshot.rv;
        for (tk, c) in self.collections.iter_mut() {
            c.objects = snapshot.objects.get(tk).cloned().unwrap_or_default();
            c.history.clear();
            c.compacted = snapshot.rv;
            c.sorted_keys = None;
        }
    }

    /// What a kube-apiserver restart with etcd kept does to versions: the server writes
    /// something of its own as it starts (the version moves on), and its new watch cache
    /// starts there. Watches from any older version now get 410; lists at older versions
    /// that the history still holds answer them as before (Exact reads go to etcd).
    pub fn restart_watch_cache(&mut self) {
        self.rv += 1;
        self.watch_cache_start = self.rv;
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
        self.create_with(tk, ns, body, &WriteOptions::fixture())
            .map(|w| w.stored)
    }

    /// Creates an object with the options of a request.
    pub fn create_with(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        body: Value,
        o: &WriteOptions,
    ) -> Result<Written, Status> {
        let mut obj = into_object(body)?;
        let foreign_kind = self.adopt_kind(tk, &mut obj, o)?;
        let mut warnings = self.check_fields(tk, &mut obj, o)?;
        if !o.fixture {
            super::resources::status_on_create(tk, &self.collection(tk).info, &mut obj);
            self.default_custom(tk, &mut obj);
        }
        let has_generation = self.collection(tk).info.generation;
        let meta = metadata_of(&mut obj);
        let given = meta
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        let prefix = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        let namespace = check_namespace(meta, ns)?;
        let name = match (given, prefix) {
            (Some(n), _) => n,
            (None, Some(mut prefix)) => {
                // The server keeps 58 bytes of the prefix (its names' 63 less the suffix).
                let mut keep = prefix.len().min(super::object_meta::GENERATE_PREFIX_MAX);
                while !prefix.is_char_boundary(keep) {
                    keep -= 1;
                }
                prefix.truncate(keep);
                // A clash with an existing name draws again (the real server answers 409 and
                // its clients retry; a handful of draws makes a clash vanishingly rare).
                let mut name = format!("{prefix}{}", self.random_suffix());
                for _ in 0..16 {
                    if !self
                        .collection(tk)
                        .objects
                        .contains_key(&make_key(&namespace, &name))
                    {
                        break;
                    }
                    name = format!("{prefix}{}", self.random_suffix());
                }
                name
            }
            (None, None) => {
                let e = FieldError::required("metadata.name", "name or generateName is required");
                return Err(self.invalid(tk, "", &[e]));
            }
        };
        if !o.fixture {
            let mut named = metadata_of(&mut obj).clone();
            named.insert("name".into(), name.clone().into());
            self.validate(
                tk,
                &obj,
                None,
                &named,
                Write::Create,
                &name,
                foreign_kind.as_deref(),
            )?;
            warnings.extend(super::object_meta::finalizer_warnings(
                named.get("finalizers"),
                None,
            ));
        }
        let key = make_key(&namespace, &name);
        if self.collection(tk).objects.contains_key(&key) {
            return Err(resource_status(
                tk,
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", resource_name(tk)),
                &name,
            ));
        }
        let uid = self.new_uid();
        let meta = metadata_of(&mut obj);
        meta.insert("name".into(), name.clone().into());
        meta.insert("uid".into(), uid.into());
        meta.insert("creationTimestamp".into(), rfc3339_now().into());
        if has_generation {
            meta.insert("generation".into(), 1.into());
        } else {
            meta.remove("generation");
        }
        for f in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
        ] {
            meta.remove(f);
        }
        self.record_managed_fields(tk, None, &mut obj, o);
        let stored = self.commit(
            tk,
            EventType::Added,
            key,
            obj,
            None,
            namespace,
            name,
            o.dry_run,
        );
        Ok(Written { stored, warnings })
    }

    /// Replaces an object. A `metadata.resourceVersion` in the body must match the stored one.
    pub fn update(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        body: Value,
    ) -> Result<Stored, Status> {
        self.update_with(tk, ns, name, body, &WriteOptions::fixture())
            .map(|w| w.stored)
    }

    /// Replaces an object (or, with `o.subresource == Some("status")`, its status) with the
    /// options of a request. Removing the last finalizer of an object being deleted deletes it.
    pub fn update_with(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        body: Value,
        o: &WriteOptions,
    ) -> Result<Written, Status> {
        let mut obj = into_object(body)?;
        let foreign_kind = self.adopt_kind(tk, &mut obj, o)?;
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
        let body_rv = meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty());
        if body_rv.is_none() && !o.fixture && !self.collection(tk).info.builtin {
            // Custom resources do not allow unconditional updates.
            let e = FieldError::invalid(
                "metadata.resourceVersion",
                &Value::from(0),
                "must be specified for an update",
            );
            return Err(validation::invalid(
                &resource_name(tk),
                &tk.plural,
                &tk.group,
                name,
                &[e],
            ));
        }
        if let Some(rv) = body_rv {
            if rv != current.rv.to_string() {
                return Err(conflict(tk, name));
            }
        }
        let old_uid = serde_json::from_str::<Value>(&current.json)
            .ok()
            .and_then(|v| v.pointer("/metadata/uid")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        if let Some(uid) = metadata_of(&mut obj)
            .get("uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty() && *u != old_uid)
        {
            // A uid in the body is a precondition: the object may have been recreated.
            let key = if is_builtin_group(&tk.group) {
                format!("/registry/{}/{}", tk.plural, key)
            } else {
                format!("/registry/{}/{}/{}", tk.group, tk.plural, key)
            };
            return Err(resource_status(
                tk,
                409,
                "Conflict",
                format!("Operation cannot be fulfilled on {} \"{name}\": StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}", resource_name(tk)),
                name,
            ));
        }
        let mut warnings = self.check_fields(tk, &mut obj, o)?;
        let (has_generation, has_status) = {
            let info = &self.collection(tk).info;
            (info.generation, info.subresources.status)
        };
        let mut old: Map<String, Value> = serde_json::from_str(&current.json).unwrap_or_default();
        if !o.fixture {
            // Both as decoding shows them: the stored object defaulted on read, the new one
            // pruned and defaulted (see `crd_defaults.rs`).
            self.default_custom(tk, &mut old);
            if o.subresource.as_deref() == Some("status") {
                obj = status_write(tk, &old, obj);
            } else if has_status {
                match old.get("status") {
                    Some(s) => obj.insert("status".into(), s.clone()),
                    None => obj.remove("status"),
                };
            }
            self.default_custom(tk, &mut obj);
        }
        let old_meta = old.get("metadata").and_then(Value::as_object);
        let meta = metadata_of(&mut obj);
        meta.insert("name".into(), name.into());
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old_meta.and_then(|m| m.get(field)) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        let old_generation = old_meta
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64);
        let spec_changed = old.get("spec") != obj.get("spec");
        let meta = metadata_of(&mut obj);
        match old_generation {
            Some(g) => {
                meta.insert("generation".into(), (g + i64::from(spec_changed)).into());
            }
            None if has_generation => {
                meta.insert("generation".into(), 1.into());
            }
            None => {
                meta.remove("generation");
            }
        }
        let being_deleted = old_meta.is_some_and(|m| m.contains_key("deletionTimestamp"));
        let finalizers = string_list(meta.get("finalizers"));
        let before = string_list(old_meta.and_then(|m| m.get("finalizers")));
        // The real server's rule: the write that takes the last finalizer off an object
        // marked for deletion with no grace period left deletes it. A pod still in its grace
        // period stays (its kubelet would finish it).
        let finishes_deletion = being_deleted
            && finalizers.is_empty()
            && !before.is_empty()
            && old_meta
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64)
                == Some(0);
        if being_deleted {
            let mut added: Vec<&String> =
                finalizers.iter().filter(|f| !before.contains(f)).collect();
            added.sort();
            added.dedup();
            if !added.is_empty() {
                return Err(new_finalizers_forbidden(
                    tk,
                    &self.collection(tk).kind,
                    name,
                    &added,
                ));
            }
        }
        if !o.fixture {
            let meta = metadata_of(&mut obj).clone();
            if o.subresource.as_deref() == Some("status") {
                self.validate_status(tk, &obj, &old, name, foreign_kind.as_deref())?;
            } else {
                self.validate(
                    tk,
                    &obj,
                    Some(&old),
                    &meta,
                    Write::Update,
                    name,
                    foreign_kind.as_deref(),
                )?;
            }
            warnings.extend(super::object_meta::finalizer_warnings(
                meta.get("finalizers"),
                old_meta.and_then(|m| m.get("finalizers")),
            ));
        }
        self.record_managed_fields(tk, Some(&old), &mut obj, o);
        if finishes_deletion {
            // The answer is the object as this write left it, at the version it had before
            // (the real server answers with what it read before the deletion; the watch sees
            // one DELETED).
            let answer = seal(
                obj.clone(),
                Some(current.rv),
                namespace.clone(),
                name.to_owned(),
            );
            self.commit(
                tk,
                EventType::Deleted,
                key,
                obj,
                Some(current),
                namespace,
                name.to_owned(),
                o.dry_run,
            );
            return Ok(Written {
                stored: answer,
                warnings,
            });
        }
        if unchanged(&old, &obj) {
            // Nothing to write: etcd is not touched, so no new version and no event.
            return Ok(Written {
                stored: current,
                warnings,
            });
        }
        let stored = self.commit(
            tk,
            EventType::Modified,
            key,
            obj,
            Some(current),
            namespace,
            name.to_owned(),
            o.dry_run,
        );
        Ok(Written { stored, warnings })
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

    /// Deletes an object at once (grace period 0); returns its last state, stamped with the
    /// deletion's version. An object with finalizers stays, marked as being deleted.
    pub fn delete(&mut self, tk: &TypeKey, ns: Option<&str>, name: &str) -> Result<Stored, Status> {
        let d = DeleteOptions {
            grace_period: Some(0),
            fixture: true,
            ..Default::default()
        };
        match self.delete_with(tk, ns, name, &d)? {
            Deleted::Gone(s) | Deleted::Pending(s) => Ok(s),
        }
    }

    /// Deletes an object the way the real server does with `DeleteOptions`: preconditions,
    /// finalizers (the object stays with `deletionTimestamp`), propagation policies
    /// `Foreground` and `Orphan` (their finalizer is added; no garbage collector removes it),
    /// and the graceful deletion of a pod bound to a node.
    pub fn delete_with(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        d: &DeleteOptions,
    ) -> Result<Deleted, Status> {
        let namespace = ns.unwrap_or("").to_owned();
        let key = make_key(&namespace, name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        let mut obj: Map<String, Value> = serde_json::from_str(&current.json).unwrap_or_default();
        self.check_delete_preconditions(tk, name, &current, d)?;
        let meta = metadata_of(&mut obj);
        let is_pod = tk.group.is_empty() && tk.plural == "pods";
        let mut finalizers = string_list(meta.get("finalizers"));
        if meta.contains_key("deletionTimestamp") {
            return Ok(self.delete_again(tk, key, current, obj, d, finalizers));
        }
        let grace = if is_pod {
            let spec = obj.get("spec");
            let bound = spec
                .and_then(|s| s.get("nodeName"))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            let default = spec
                .and_then(|s| s.get("terminationGracePeriodSeconds"))
                .and_then(Value::as_i64)
                .unwrap_or(30);
            match d.grace_period {
                Some(g) => g.max(0),
                None if bound => default,
                None => 0,
            }
        } else {
            0
        };
        let policy_finalizer = match d.propagation.as_deref() {
            Some("Foreground") => Some("foregroundDeletion"),
            Some("Orphan") => Some("orphan"),
            _ => None,
        };
        if let Some(f) = policy_finalizer {
            if !finalizers.iter().any(|x| x == f) {
                finalizers.push(f.to_owned());
            }
        }
        let stays = !finalizers.is_empty() || grace > 0;
        if !stays && (!is_pod || d.fixture) {
            let stored = self.commit(
                tk,
                EventType::Deleted,
                key,
                obj,
                Some(current),
                namespace,
                name.to_owned(),
                d.dry_run,
            );
            return Ok(Deleted::Gone(stored));
        }
        // Graceful deletion: the object is marked first (a MODIFIED event), as the real
        // server does for pods even when their grace is 0.
        let meta = metadata_of(&mut obj);
        meta.insert("deletionTimestamp".into(), rfc3339_in(grace).into());
        meta.insert("deletionGracePeriodSeconds".into(), grace.into());
        if !finalizers.is_empty() {
            meta.insert("finalizers".into(), finalizers.into());
        }
        if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
            meta.insert("generation".into(), (g + 1).into());
        }
        let marked = self.commit(
            tk,
            EventType::Modified,
            key.clone(),
            obj.clone(),
            Some(current),
            namespace.clone(),
            name.to_owned(),
            d.dry_run,
        );
        if stays {
            return Ok(Deleted::Pending(marked));
        }
        let stored = self.commit(
            tk,
            EventType::Deleted,
            key,
            obj,
            Some(marked),
            namespace,
            name.to_owned(),
            d.dry_run,
        );
        Ok(Deleted::Gone(stored))
    }

    /// A delete's preconditions (uid, resourceVersion) against the stored object: the
    /// captured 409 when one fails.
    pub fn check_delete_preconditions(
        &mut self,
        tk: &TypeKey,
        name: &str,
        current: &StoredObject,
        d: &DeleteOptions,
    ) -> Result<(), Status> {
        let kind = self.collection(tk).kind.clone();
        let obj: Value = serde_json::from_str(&current.json).unwrap_or_default();
        let uid = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(want) = d.precondition_uid.as_deref() {
            if want != uid {
                return Err(precondition_failed(&kind, name, format!("the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated")));
            }
        }
        if let Some(want) = d.precondition_rv.as_deref() {
            let have = current.rv.to_string();
            if want != have {
                return Err(precondition_failed(&kind, name, format!("the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({have}). The object might have been modified")));
            }
        }
        Ok(())
    }

    /// The server's own write of an existing object (a CRD's conditions, its deletion
    /// marks, the cleanup of its custom objects): `Some(obj)` is stored exactly as given
    /// (one MODIFIED event; nothing checked, no managed fields recorded), `None` removes the
    /// object whatever holds it (one DELETED event with its last state). Both at a new
    /// version.
    pub fn server_write(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        name: &str,
        obj: Option<Map<String, Value>>,
    ) -> Result<Stored, Status> {
        let namespace = ns.unwrap_or("").to_owned();
        let key = make_key(&namespace, name);
        let Some(current) = self.collection(tk).objects.get(&key).cloned() else {
            return Err(not_found(tk, name));
        };
        let (ty, obj) = match obj {
            Some(o) => (EventType::Modified, o),
            None => (
                EventType::Deleted,
                serde_json::from_str(&current.json).unwrap_or_default(),
            ),
        };
        Ok(self.commit(
            tk,
            ty,
            key,
            obj,
            Some(current),
            namespace,
            name.to_owned(),
            false,
        ))
    }

    /// A delete of an object already being deleted. A propagation policy sets the garbage
    /// collector's finalizers as a first delete would (`Background` takes `orphan` and
    /// `foregroundDeletion` off, `Foreground` and `Orphan` put theirs on instead of the
    /// other's), and an object left without finalizers goes. A pod in its grace period
    /// deleted with grace 0 is marked again (MODIFIED) and goes (DELETED). Anything else
    /// answers the object as it is, unchanged.
    fn delete_again(
        &mut self,
        tk: &TypeKey,
        key: Key,
        current: Stored,
        mut obj: Map<String, Value>,
        d: &DeleteOptions,
        finalizers: Vec<String>,
    ) -> Deleted {
        let (namespace, name) = (current.namespace.clone(), current.name.clone());
        let is_pod = tk.group.is_empty() && tk.plural == "pods";
        let mut wanted = finalizers.clone();
        match d.propagation.as_deref() {
            Some("Background") => wanted.retain(|f| f != "orphan" && f != "foregroundDeletion"),
            Some("Foreground") => {
                wanted.retain(|f| f != "orphan");
                if !wanted.iter().any(|f| f == "foregroundDeletion") {
                    wanted.push("foregroundDeletion".into());
                }
            }
            Some("Orphan") => {
                wanted.retain(|f| f != "foregroundDeletion");
                if !wanted.iter().any(|f| f == "orphan") {
                    wanted.push("orphan".into());
                }
            }
            _ => {}
        }
        if wanted != finalizers {
            let meta = metadata_of(&mut obj);
            if wanted.is_empty() {
                meta.remove("finalizers");
                let stored = self.commit(
                    tk,
                    EventType::Deleted,
                    key,
                    obj,
                    Some(current),
                    namespace,
                    name,
                    d.dry_run,
                );
                return Deleted::Gone(stored);
            }
            meta.insert("finalizers".into(), wanted.into());
            let stored = self.commit(
                tk,
                EventType::Modified,
                key,
                obj,
                Some(current),
                namespace,
                name,
                d.dry_run,
            );
            return Deleted::Pending(stored);
        }
        if !(is_pod && d.grace_period == Some(0) && finalizers.is_empty()) {
            return Deleted::Pending(current);
        }
        let meta = metadata_of(&mut obj);
        meta.insert("deletionTimestamp".into(), rfc3339_now().into());
        meta.insert("deletionGracePeriodSeconds".into(), 0.into());
        let marked = self.commit(
            tk,
            EventType::Modified,
            key.clone(),
            obj.clone(),
            Some(current),
            namespace.clone(),
            name.clone(),
            d.dry_run,
        );
        let stored = self.commit(
            tk,
            EventType::Deleted,
            key,
            obj,
            Some(marked),
            namespace,
            name,
            d.dry_run,
        );
        Deleted::Gone(stored)
    }

    /// `deletecollection`: deletes every object of `ns` (all namespaces when `None`) that
    /// `filter` selects, each as [`delete_with`](Self::delete_with) would; returns them as they
    /// were before (the list's items) and the version after.
    pub fn delete_collection(
        &mut self,
        tk: &TypeKey,
        ns: Option<&str>,
        filter: &Filter,
        d: &DeleteOptions,
    ) -> Result<(Vec<Stored>, u64), Status> {
        let prefix = ns.map(|n| format!("{n}/"));
        let chosen: Vec<Stored> = self
            .collection(tk)
            .objects
            .iter()
            .filter(|(k, o)| {
                prefix.as_deref().is_none_or(|p| k.starts_with(p)) && filter.matches(o)
            })
            .map(|(_, o)| Arc::clone(o))
            .collect();
        let mut items = Vec::with_capacity(chosen.len());
        for o in chosen {
            let ns = (!o.namespace.is_empty()).then_some(o.namespace.as_str());
            self.delete_with(tk, ns, &o.name, d)?;
            items.push(o);
        }
        Ok((items, self.rv))
    }

    /// The managed-fields hook of every HTTP write: the defaults of built-in objects first
    /// (see `defaults`), then an apply's computed entries, or an `Update` entry for the
    /// writer (see `managed_fields`). Rust-side writes are left as given.
    fn record_managed_fields(
        &mut self,
        tk: &TypeKey,
        old: Option<&Map<String, Value>>,
        obj: &mut Map<String, Value>,
        o: &WriteOptions,
    ) {
        if o.fixture {
            return;
        }
        self.defaults_and_owners(tk, old, obj, o);
        // Fields the real server writes out as zero values (not defaults): no one owns them.
        super::events::defaults(tk, obj);
    }

    fn defaults_and_owners(
        &mut self,
        tk: &TypeKey,
        old: Option<&Map<String, Value>>,
        obj: &mut Map<String, Value>,
        o: &WriteOptions,
    ) {
        let builtin = self.collection(tk).info.builtin;
        if builtin {
            super::defaults::apply(&tk.plural, obj);
        }
        if let Some(entries) = &o.managed_fields {
            let meta = metadata_of(obj);
            match entries {
                Value::Array(l) if l.is_empty() => meta.remove("managedFields"),
                v => meta.insert("managedFields".into(), v.clone()),
            };
            return;
        }
        let Some(manager) = o.field_manager.as_deref() else {
            return;
        };
        let mut w = writer(tk, builtin, o, manager);
        w.schema.crd = self.collection(tk).info.schema.clone().map(Arc::new);
        // An object stored by a Rust-side write may lack the defaults: compared as if it had
        // them, so filling them in is nobody's change.
        let old_defaulted = old.filter(|_| builtin).map(|m| {
            let mut m = m.clone();
            super::defaults::apply(&tk.plural, &mut m);
            m
        });
        let old = old_defaulted.as_ref().or(old);
        super::managed_fields::record_update_map(old, obj, &w);
    }

    /// Fills in a custom resource's schema defaults (and drops its non-nullable nulls), as
    /// decoding does; see `crd_defaults.rs`.
    fn default_custom(&mut self, tk: &TypeKey, obj: &mut Map<String, Value>) {
        if let Some(schema) = &self.collection(tk).info.schema {
            super::crd_defaults::apply(schema, obj);
        }
    }

    /// The 422 for `errors` of an object of `tk` named `name`.
    fn invalid(&mut self, tk: &TypeKey, name: &str, errors: &[FieldError]) -> Status {
        let kind = self.collection(tk).kind.clone();
        validation::invalid(
            &validation::qualified(&kind, &tk.group),
            &kind,
            &tk.group,
            name,
            errors,
        )
    }

    /// Validates an HTTP write's object: its metadata `meta` (see `validation`) and, for a
    /// custom resource with a schema, its values (see `schema`), its list types (see
    /// `list_types`: ratcheted against `old`, the object before an update) and its CEL rules
    /// (see `crd_cel`, also ratcheted against `old`).
    /// `foreign_kind`: the body's `kind` when it is not the custom resource's (reported
    /// first, and the 422 names that kind, as kube-apiserver's does).
    #[allow(clippy::too_many_arguments)]
    fn validate(
        &mut self,
        tk: &TypeKey,
        obj: &Map<String, Value>,
        old: Option<&Map<String, Value>>,
        meta: &Map<String, Value>,
        write: Write,
        name: &str,
        foreign_kind: Option<&str>,
    ) -> Result<(), Status> {
        let c = self.collection(tk);
        let info = &c.info;
        let mut errors = kind_errors(&c.kind, foreign_kind);
        errors.extend(validation::object_meta(info.builtin, meta, write));
        if let Some(schema) = &info.schema {
            errors.extend(super::schema::validate(schema, obj));
            errors.extend(super::crd_embedded::validate(schema, obj));
            errors.extend(super::list_types::validate_update(schema, obj, old));
            let api_version = format!("{}/{}", tk.group, tk.version);
            let root = super::crd_cel::Root {
                api_version: &api_version,
                kind: &c.kind,
                meta,
            };
            errors.extend(super::crd_cel::validate(schema, root, obj, old, &errors));
        }
        self.refuse(tk, name, foreign_kind, &errors)
    }

    /// The status seam: validates a `/status` write (`new`, the stored object with the
    /// body's status) against the stored `old`: the kind, the metadata's update checks and,
    /// for a custom resource with a schema, the status against the schema's `status`
    /// (see `crd_status.rs`, where the CEL rules of a status write belong).
    fn validate_status(
        &mut self,
        tk: &TypeKey,
        new: &Map<String, Value>,
        old: &Map<String, Value>,
        name: &str,
        foreign_kind: Option<&str>,
    ) -> Result<(), Status> {
        let c = self.collection(tk);
        let info = &c.info;
        let mut errors = kind_errors(&c.kind, foreign_kind);
        let meta = new
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        errors.extend(validation::object_meta(info.builtin, &meta, Write::Update));
        if let Some(schema) = &info.schema {
            errors.extend(super::crd_status::validate(schema, new, old));
            errors.extend(super::crd_embedded::validate(schema, new));
            errors.extend(super::list_types::validate_update(schema, new, Some(old)));
            // As the status strategy does: every rule of the whole object, ratcheted against
            // the stored one (so `spec`, reset to the stored spec, passes unchanged).
            let api_version = format!("{}/{}", tk.group, tk.version);
            let root = super::crd_cel::Root {
                api_version: &api_version,
                kind: &c.kind,
                meta: &meta,
            };
            errors.extend(super::crd_cel::validate(
                schema,
                root,
                new,
                Some(old),
                &errors,
            ));
        }
        self.refuse(tk, name, foreign_kind, &errors)
    }

    /// Ok without `errors`, else their 422 (naming `foreign_kind` if the body had one).
    fn refuse(
        &mut self,
        tk: &TypeKey,
        name: &str,
        foreign_kind: Option<&str>,
        errors: &[FieldError],
    ) -> Result<(), Status> {
        if errors.is_empty() {
            return Ok(());
        }
        Err(match foreign_kind {
            Some(kind) => validation::invalid(
                &validation::qualified(kind, &tk.group),
                kind,
                &tk.group,
                name,
                errors,
            ),
            None => self.invalid(tk, name, errors),
        })
    }

    /// Unknown fields of a write: refused (`Strict`), dropped with one warning each (`Warn`),
    /// or dropped silently (`Ignore`). Rust-side writes keep everything.
    fn check_fields(
        &mut self,
        tk: &TypeKey,
        obj: &mut Map<String, Value>,
        o: &WriteOptions,
    ) -> Result<Vec<String>, Status> {
        if o.fixture {
            return Ok(Vec::new());
        }
        let c = self.collection(tk);
        let strict = o.field_validation == FieldValidation::Strict;
        let unknown = c.info.unknown_fields(obj, !strict);
        if unknown.is_empty() && o.duplicate_fields.is_empty() {
            return Ok(Vec::new());
        }
        let listed: Vec<String> = o
            .duplicate_fields
            .iter()
            .map(|f| format!("duplicate field \"{f}\""))
            .chain(unknown.iter().map(|f| format!("unknown field \"{f}\"")))
            .collect();
        match o.field_validation {
            FieldValidation::Strict => Err(bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
                listed.join(", "),
                kind = c.kind,
                v = tk.version,
            ))),
            FieldValidation::Warn => Ok(listed),
            FieldValidation::Ignore => Ok(Vec::new()),
        }
    }

    /// Five characters of the API server's name alphabet (no vowels, no look-alikes).
    fn random_suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| {
                // xorshift64*: plenty for names, no dependency.
                let mut x = self.rng;
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                self.rng = x;
                let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
                ALPHABET[(r % ALPHABET.len() as u64) as usize] as char
            })
            .collect()
    }

    /// Stores one change and records its event; with `dry_run`, only says what would be
    /// stored (a created object then has no resourceVersion, a changed one keeps its own).
    #[allow(clippy::too_many_arguments)]
    fn commit(
        &mut self,
        tk: &TypeKey,
        ty: EventType,
        key: Key,
        obj: Map<String, Value>,
        prev: Option<Stored>,
        namespace: String,
        name: String,
        dry_run: bool,
    ) -> Stored {
        if dry_run {
            let rv = prev.as_ref().map(|p| p.rv);
            return seal(obj, rv, namespace, name);
        }
        self.rv += 1;
        let stored = seal(obj, Some(self.rv), namespace, name);
        self.record(tk, ty, key, Arc::clone(&stored), prev);
        stored
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
            encoded: Default::default(),
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

    /// Takes `kind` (naming the collection's kind) and `apiVersion` out of a body. A custom
    /// resource's HTTP write must name its resource's version (else a 400, as decoding
    /// refuses it) and its kind: another kind is returned, for validation to report (a 422
    /// naming field `kind`).
    fn adopt_kind(
        &mut self,
        tk: &TypeKey,
        obj: &mut Map<String, Value>,
        o: &WriteOptions,
    ) -> Result<Option<String>, Status> {
        let api_version = obj.remove("apiVersion");
        let kind = obj.remove("kind");
        let c = self.collection(tk);
        if !o.fixture && !c.info.builtin && c.info.schema.is_some() {
            let expected = tk.api_version();
            if let Some(Value::String(v)) = &api_version {
                if *v != expected {
                    return Err(bad_request(format!(
                        "the API version in the data ({v}) does not match the expected API version ({expected})"
                    )));
                }
            }
            return Ok(match kind {
                Some(Value::String(k)) if !c.kind.is_empty() && k != c.kind => Some(k),
                _ => None,
            });
        }
        if let Some(Value::String(kind)) = kind {
            if c.objects.is_empty() {
                c.kind = kind;
            }
        }
        Ok(None)
    }
}

pub(crate) fn not_found(tk: &TypeKey, name: &str) -> Status {
    resource_status(
        tk,
        404,
        "NotFound",
        format!("{} \"{name}\" not found", resource_name(tk)),
        name,
    )
}

/// `pods`, or `deployments.apps` for a resource of a named group: how messages name it.
pub(crate) fn resource_name(tk: &TypeKey) -> String {
    if tk.group.is_empty() {
        tk.plural.clone()
    } else {
        format!("{}.{}", tk.plural, tk.group)
    }
}

/// A failure Status with `details` naming the object (and its group), as the API server
/// sends them.
pub(crate) fn resource_status(
    tk: &TypeKey,
    code: u16,
    reason: &str,
    message: String,
    name: &str,
) -> Status {
    let mut st = object_status(code, reason, message, &tk.plural, name);
    if let Some(d) = st.details.as_mut() {
        d.group = Some(tk.group.clone()).filter(|g| !g.is_empty());
    }
    st
}

/// The 409 of a write with a stale resourceVersion.
pub(crate) fn conflict(tk: &TypeKey, name: &str) -> Status {
    resource_status(
        tk,
        409,
        "Conflict",
        format!("Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again", resource_name(tk)),
        name,
    )
}

/// The 409 of a delete whose precondition fails: here `details.kind` is the Kind (captured).
fn precondition_failed(kind: &str, name: &str, why: String) -> Status {
    object_status(
        409,
        "Conflict",
        format!("Operation cannot be fulfilled on {kind} \"{name}\": {why}"),
        kind,
        name,
    )
}

/// The 422 for finalizers added to an object that is being deleted: reported by both of an
/// update's metadata checks (see `validation`).
fn new_finalizers_forbidden(tk: &TypeKey, kind: &str, name: &str, added: &[&String]) -> Status {
    let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    let e = FieldError::forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            list.join(", ")
        ),
    );
    validation::invalid(
        &validation::qualified(kind, &tk.group),
        kind,
        &tk.group,
        name,
        &[e.clone(), e],
    )
}

/// The error of a body whose `kind` (`foreign`) is not the resource's `kind`.
fn kind_errors(kind: &str, foreign: Option<&str>) -> Vec<FieldError> {
    foreign
        .map(|f| FieldError::invalid("kind", &Value::from(f), &format!("must be {kind}")))
        .into_iter()
        .collect()
}

/// The strings of a JSON list (finalizers); anything else is empty.
fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A write through `/status`: the stored object with the body's `status`; of the body's
/// metadata, built-ins take the annotations (the real status strategies reset everything
/// else of the metadata), pods also the labels, custom resources nothing. The rest of the
/// body is ignored.
fn status_write(
    tk: &TypeKey,
    old: &Map<String, Value>,
    mut body: Map<String, Value>,
) -> Map<String, Value> {
    let mut next = old.clone();
    match body.remove("status") {
        Some(s) => next.insert("status".into(), s),
        None => next.remove("status"),
    };
    let body_meta = metadata_of(&mut body).clone();
    let meta = metadata_of(&mut next);
    if let Some(rv) = body_meta.get("resourceVersion") {
        meta.insert("resourceVersion".into(), rv.clone());
    }
    let taken: &[&str] = if tk.group.is_empty() && tk.plural == "pods" {
        &["labels", "annotations"]
    } else if is_builtin_group(&tk.group) {
        &["annotations"]
    } else {
        &[]
    };
    for f in taken {
        match body_meta.get(*f) {
            Some(v) => meta.insert((*f).into(), v.clone()),
            None => meta.remove(*f),
        };
    }
    next
}

/// Whether a write leaves an object as it was: equal but for its resourceVersion and the
/// times of its managed fields (which the real server does not bump for a write that changes
/// nothing).
fn unchanged(old: &Map<String, Value>, new: &Map<String, Value>) -> bool {
    fn comparable(o: &Map<String, Value>) -> Map<String, Value> {
        let mut o = o.clone();
        if let Some(Value::Object(meta)) = o.get_mut("metadata") {
            meta.remove("resourceVersion");
            if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
                for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                    e.remove("time");
                }
            }
        }
        o
    }
    comparable(old) == comparable(new)
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
fn seal(mut obj: Map<String, Value>, rv: Option<u64>, namespace: String, name: String) -> Stored {
    let meta = metadata_of(&mut obj);
    match rv {
        Some(rv) => meta.insert("resourceVersion".into(), rv.to_string().into()),
        None => meta.remove("resourceVersion"),
    };
    let rv = rv.unwrap_or(0);
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
        encoded: Default::default(),
    })
}

/// The current time as `2026-11-22T02:04:06Z`.
pub(crate) fn rfc3339_now() -> String {
    rfc3339_in(0)
}

/// The time `secs` seconds from now, as `2026-11-22T02:04:06Z`.
pub(crate) fn rfc3339_in(secs: i64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let secs = now.saturating_add_signed(secs);
    format!(
        "{}Z",
        crate::config::time::format_date_time(i64::try_from(secs).unwrap_or(i64::MAX))
    )
}

/// Who is writing through `o`, for the managed fields of `tk`.
pub(crate) fn writer(tk: &TypeKey, builtin: bool, o: &WriteOptions, manager: &str) -> Writer {
    Writer {
        manager: manager.to_owned(),
        subresource: o.subresource.clone().unwrap_or_default(),
        api_version: tk.api_version(),
        schema: Schema::builtin(builtin),
        time: rfc3339_now(),
    }
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
        // Built-ins nobody registered get their real kind from the captured discovery.
        let mut s = Store::new(10);
        for (group, plural, kind) in [
            ("", "configmaps", "ConfigMap"),
            ("networking.k8s.io", "networkpolicies", "NetworkPolicy"),
            ("lab.example.com", "networkpolicies", "Networkpolicy"),
        ] {
            let tk = TypeKey {
                group: group.into(),
                version: "v1".into(),
                plural: plural.into(),
            };
            assert_eq!(s.collection(&tk).kind, kind);
        }
        let now = rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
    }
}
