//! `ApiServer`: lifecycle, connections, authentication and the Rust-side API for tests.
//!
//! One accept thread and one thread per connection, all named and all joined by
//! [`ApiServer::stop`] (or drop). Stopping shuts every socket down, so blocked reads and
//! idle watches end at once.

use std::collections::HashMap;
use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::conversion::ConversionHost;
use super::db::Db;
use super::discovery::DiscoveryHost;
use super::faults::{Fault, Faults, Target};
use super::http;
use super::peer::Peer;
use super::pod_logs::LogsHost;
use super::resources::Subresources;
use super::store::{Store, TypeKey};
use super::tls;
use super::webhooks::AdmissionHost;
use super::{answers, handlers};
use crate::api::{ApiResource, Status};
use crate::client::{Auth, ClientConfig, Identity, Secret};

/// How many requests [`ApiServer::request_headers`] keeps.
const MAX_HEADER_LOG: usize = 10_000;

/// One request as [`ApiServer::request_headers`] records it.
#[derive(Clone, Debug)]
pub struct RequestHeaders {
    /// `METHOD /path?query`, as in [`ApiServer::requests`].
    pub request: String,
    /// Its headers in order, names in lower case (a repeated header appears repeatedly).
    pub headers: Vec<(String, String)>,
}

impl RequestHeaders {
    /// Every value of header `name` (lower case), in order.
    pub fn values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Options of an [`ApiServer`].
#[derive(Clone, Debug)]
pub struct ApiServerBuilder {
    tls: bool,
    client_certs: bool,
    tokens: Vec<String>,
    user_tokens: Vec<(String, crate::api::UserInfo)>,
    basic: Option<(String, String)>,
    history_limit: usize,
    bookmark_interval: Duration,
    pub(crate) resources: Vec<ApiResource>,
    subresources: Vec<(ApiResource, Subresources)>,
    schemas: Vec<(ApiResource, Vec<String>)>,
    /// Structural schemas (a CRD's `openAPIV3Schema`) by resource.
    openapi_schemas: Vec<(ApiResource, Value)>,
    pub(crate) short_names: Vec<(ApiResource, Vec<String>)>,
    /// CRDs converted by a webhook (`conversion.rs`).
    pub(crate) conversions: Vec<super::crd::Conversion>,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            tls: false,
            client_certs: false,
            tokens: Vec::new(),
            user_tokens: Vec::new(),
            basic: None,
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(1),
            resources: Vec::new(),
            subresources: Vec::new(),
            schemas: Vec::new(),
            openapi_schemas: Vec::new(),
            short_names: Vec::new(),
            conversions: Vec::new(),
        }
    }
}

impl ApiServerBuilder {
    /// Serve HTTPS with the committed test certificate (see [`tls::CA_PEM`](crate::testing::CA_PEM)).
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Serve HTTPS and accept client certificates signed by the test CA as authentication.
    pub fn client_certificates(mut self) -> Self {
        self.tls = true;
        self.client_certs = true;
        self
    }

    /// Require this bearer token (several calls allow several tokens). Its user is
    /// `kube-admin` in `system:masters` (for `SelfSubjectReview` and `TokenReview`).
    pub fn token(mut self, token: &str) -> Self {
        self.tokens.push(token.into());
        self
    }

    /// Accepts `token` as the user `username` in `groups` (and `system:authenticated`):
    /// for API requests, `TokenReview` and `SelfSubjectReview` (see `reviews.rs`). It does
    /// not by itself make the server require a token.
    pub fn user_token(mut self, token: &str, username: &str, groups: &[&str]) -> Self {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        groups.push("system:authenticated".into());
        self.user_tokens.push((
            token.into(),
            crate::api::UserInfo {
                username: username.into(),
                groups,
                ..Default::default()
            },
        ));
        self
    }

    /// Accepts `token` as `user` exactly as given (uid, groups and `extra`, e.g. the
    /// `scopes` of a scoped token): for API requests, `TokenReview` and `SelfSubjectReview`.
    /// It does not by itself make the server require a token.
    pub fn user_info_token(mut self, token: &str, user: crate::api::UserInfo) -> Self {
        self.user_tokens.push((token.into(), user));
        self
    }

    /// Accept HTTP basic authentication with this user and password.
    pub fn basic_auth(mut self, username: &str, password: &str) -> Self {
        self.basic = Some((username.into(), password.into()));
        self
    }

    /// How many change events each resource keeps for watches and paging (default 10,000).
    /// Older starting points get 410 Expired.
    pub fn history_limit(mut self, events: usize) -> Self {
        self.history_limit = events;
        self
    }

    /// How often a watch that asked for bookmarks gets one (default 1 s).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// Names the kind of a resource before any of its objects exists (lists say `PodList`).
    pub fn resource(mut self, ar: &ApiResource) -> Self {
        self.resources.push(ar.clone());
        self
    }

    /// Declares the subresources a resource serves (and names its kind, like
    /// [`resource`](Self::resource)). Without it the real built-ins' are assumed (see
    /// [`Subresources`]); a custom resource has none.
    pub fn subresources(mut self, ar: &ApiResource, subresources: Subresources) -> Self {
        self.resources.push(ar.clone());
        self.subresources.push((ar.clone(), subresources));
        self
    }

    /// Declares the top-level fields a resource knows besides `apiVersion`, `kind` and
    /// `metadata` (its schema, as far as `fieldValidation` is concerned). Without it: a table
    /// for ConfigMap, Secret, Pod, the workloads, Lease and both Events; `spec` and `status`
    /// for a custom resource; no check for other built-ins.
    pub fn schema_fields(mut self, ar: &ApiResource, fields: &[&str]) -> Self {
        self.resources.push(ar.clone());
        self.schemas
            .push((ar.clone(), fields.iter().map(|f| (*f).to_owned()).collect()));
        self
    }

    /// Declares a resource's short names for discovery (a CRD's `names.shortNames`, e.g.
    /// `wdg`), and names its kind like [`resource`](Self::resource). Built-in resources
    /// have the real server's.
    pub fn short_names(mut self, ar: &ApiResource, names: &[&str]) -> Self {
        self.resources.push(ar.clone());
        self.short_names
            .push((ar.clone(), names.iter().map(|n| (*n).to_owned()).collect()));
        self
    }

    /// Serves a custom resource as its `apiextensions.k8s.io/v1` CustomResourceDefinition
    /// describes it: names and scope, the `status` and `scale` subresources, and the storage
    /// version's `openAPIV3Schema` (objects are validated against it and its undeclared
    /// fields pruned; see `schema.rs`). An error names what the definition lacks. With
    /// `spec.conversion.strategy: Webhook`, its other served versions are read and written
    /// through the conversion webhook (see *Webhooks* in the [module docs](crate::testing)).
    ///
    /// ```
    /// use kube_informer::testing::ApiServer;
    /// let crd = serde_json::json!({"spec": {"group": "lab.example.com", "scope": "Namespaced",
    ///     "names": {"plural": "widgets", "kind": "Widget"},
    ///     "versions": [{"name": "v1", "served": true, "storage": true,
    ///         "subresources": {"status": {}},
    ///         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
    ///             "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}}}}}}]}});
    /// let server = ApiServer::builder().custom_resource_definition(&crd).unwrap().start();
    /// # drop(server);
    /// ```
    pub fn custom_resource_definition(mut self, crd: &Value) -> Result<Self, String> {
        let d = super::crd::parse(crd)?;
        self.resources.push(d.resource.clone());
        self.subresources
            .push((d.resource.clone(), d.subresources.clone()));
        if !d.short_names.is_empty() {
            self.short_names
                .push((d.resource.clone(), d.short_names.clone()));
        }
        if let Some(c) = d.conversion {
            self.conversions.push(c);
        }
        if let Some(schema) = d.schema {
            self.openapi_schemas.push((d.resource, schema));
        }
        Ok(self)
    }

    /// Starts the server on `127.0.0.1` with a free port.
    pub fn start(self) -> ApiServer {
        ApiServer::start_with(self)
    }
}

/// The objects and version of an [`ApiServer`] at one moment: see
/// [`ApiServer::backup`].
#[derive(Clone)]
pub struct Backup(super::store::Snapshot);

impl std::fmt::Debug for Backup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backup")
            .field("resource_version", &self.0.rv)
            .finish_non_exhaustive()
    }
}

/// State shared by the server's threads.
pub(crate) struct Shared {
    /// The store, its change notification and the stop flag: what every room takes
    /// (`storage/db.rs`); reached through `Deref` as `shared.store`, `shared.changed`.
    pub db: Db,
    /// Set while the server is down ([`ApiServer::go_down`]): the accept loop ends.
    down: AtomicBool,
    pub faults: Mutex<Faults>,
    pub streaming_list_supported: AtomicBool,
    /// Whether `/api` and `/apis` answer aggregated discovery when asked for it.
    pub aggregated_discovery: AtomicBool,
    pub initial_events_end_bookmark: AtomicBool,
    pub bookmark_interval: Duration,
    /// How long a list at a version the server has not reached waits for it before the
    /// 504 (milliseconds; kube-apiserver: 3 s).
    pub too_large_wait_ms: AtomicU64,
    requests: Mutex<Vec<String>>,
    /// The headers of the first [`MAX_HEADER_LOG`] requests, beside their lines.
    request_headers: Mutex<Vec<RequestHeaders>>,
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    opts: ApiServerBuilder,
    /// The containers' logs (`pod_logs.rs`).
    pub pod_logs: super::pod_logs::PodLogs,
    /// Known tokens and the authorisation rule (`reviews.rs`).
    pub identities: super::reviews::Identities,
    /// Webhook services (`clientConfig.service`): (namespace, name) to a base URL.
    pub webhook_services: Mutex<HashMap<(String, String), String>>,
    /// Objects converted for lists in a non-storage version (`conversion.rs`).
    pub converted: super::conversion::Converted,
    /// What exec, attach and port-forward reach.
    #[cfg(feature = "ws")]
    pub runtime: super::runtime::Runtime,
}

impl Shared {
    pub(crate) fn take_fault(&self, kind: Target, continued: bool) -> Option<Fault> {
        self.faults.lock().take(kind, continued)
    }
}

impl std::ops::Deref for Shared {
    type Target = Db;

    fn deref(&self) -> &Db {
        &self.db
    }
}

// What each room needs of the server, given by the server: the rooms name the traits, the
// server implements them, so that no room depends on the server.

impl AdmissionHost for Shared {
    fn identities(&self) -> &super::reviews::Identities {
        &self.identities
    }
    fn webhook_services(&self) -> &Mutex<HashMap<(String, String), String>> {
        &self.webhook_services
    }
}

impl ConversionHost for Shared {
    fn conversions(&self) -> &[super::crd::Conversion] {
        &self.opts.conversions
    }
    fn converted(&self) -> &super::conversion::Converted {
        &self.converted
    }
    fn watch_converted<S: Peer>(
        &self,
        req: &http::Request,
        stored: &TypeKey,
        namespace: Option<&str>,
        api_version: &str,
        convert: &dyn Fn(&str) -> Option<String>,
        peer: &mut S,
    ) -> answers::Outcome {
        handlers::watch_converted(req, stored, namespace, api_version, convert, peer, self)
    }
}

impl DiscoveryHost for Shared {
    fn configured_resources(&self) -> &[ApiResource] {
        &self.opts.resources
    }
    fn configured_short_names(&self) -> &[(ApiResource, Vec<String>)] {
        &self.opts.short_names
    }
    fn aggregated_discovery(&self) -> bool {
        self.aggregated_discovery.load(Ordering::SeqCst)
    }
}

impl LogsHost for Shared {
    fn pod_logs(&self) -> &super::pod_logs::PodLogs {
        &self.pod_logs
    }
}

/// A kube-apiserver stand-in on `127.0.0.1`: real HTTP/1.1 (and TLS), real list and watch
/// semantics, and fault injection. See the [module docs](crate::testing).
pub struct ApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    /// The accept thread; `None` while the server is down or once it is stopped.
    accept: Mutex<Option<JoinHandle<()>>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    tls_config: Option<Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url())
            .finish()
    }
}

impl ApiServer {
    /// A plain-HTTP server with no authentication.
    pub fn start() -> ApiServer {
        Self::builder().start()
    }

    /// Options for a server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    fn start_with(opts: ApiServerBuilder) -> ApiServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("listener address");
        let mut store = Store::new(opts.history_limit);
        for ar in &opts.resources {
            store.register(ar);
        }
        for (ar, s) in &opts.subresources {
            store.configure(&TypeKey::of(ar), Some(s), None);
        }
        for (ar, f) in &opts.schemas {
            store.configure(&TypeKey::of(ar), None, Some(f));
        }
        for (ar, schema) in &opts.openapi_schemas {
            store.collection(&TypeKey::of(ar)).info.schema = Some(schema.clone());
        }
        let shared = Arc::new(Shared {
            db: Db::new(store),
            down: AtomicBool::new(false),
            faults: Mutex::new(Faults::default()),
            streaming_list_supported: AtomicBool::new(true),
            aggregated_discovery: AtomicBool::new(true),
            initial_events_end_bookmark: AtomicBool::new(true),
            bookmark_interval: opts.bookmark_interval,
            too_large_wait_ms: AtomicU64::new(3000),
            requests: Mutex::new(Vec::new()),
            request_headers: Mutex::new(Vec::new()),
            conns: Mutex::new(HashMap::new()),
            identities: super::reviews::Identities::new(&opts.tokens, &opts.user_tokens),
            next_conn: AtomicU64::new(0),
            opts,
            pod_logs: Default::default(),
            webhook_services: Mutex::new(HashMap::new()),
            converted: Default::default(),
            #[cfg(feature = "ws")]
            runtime: super::runtime::Runtime::default(),
        });
        let workers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let tls_config = shared
            .opts
            .tls
            .then(|| tls::server_config(shared.opts.client_certs));
        let accept = spawn_accept(listener, &shared, &workers, tls_config.clone())
            .expect("spawn accept thread");
        ApiServer {
            shared,
            addr,
            accept: Mutex::new(Some(accept)),
            workers,
            tls_config,
        }
    }

    /// Where the webhooks of the Service `namespace`/`name` listen: a webhook configuration's
    /// `clientConfig.service` naming it is called at `base_url` followed by the service's
    /// `path` (`https://127.0.0.1:8443` and `/validate`). The port in the configuration is
    /// not looked at. See `webhooks.rs` in the [module docs](crate::testing).
    pub fn webhook_service(&self, namespace: &str, name: &str, base_url: &str) {
        self.shared
            .webhook_services
            .lock()
            .insert((namespace.to_owned(), name.to_owned()), base_url.to_owned());
    }

    /// The container runtime behind exec, attach and port-forward (feature `ws`).
    #[cfg(feature = "ws")]
    pub fn runtime(&self) -> &super::Runtime {
        &self.shared.runtime
    }

    /// Creates a running pod bound to node `lab-node` with these containers (one `main`
    /// when none is named), as exec, attach and port-forward need; returns it as stored, or
    /// the Status of the failed create (`AlreadyExists` when the name is taken).
    pub fn create_pod(
        &self,
        namespace: &str,
        name: &str,
        containers: &[&str],
    ) -> Result<Value, Status> {
        let containers: Vec<Value> = if containers.is_empty() {
            vec!["main"]
        } else {
            containers.to_vec()
        }
        .iter()
        .map(|c| serde_json::json!({"name": c, "image": "busybox:1.36", "stdin": true}))
        .collect();
        let pod = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": "lab-node", "containers": containers},
            "status": {"phase": "Running"}
        });
        self.create(&ApiResource::new("", "v1", "Pod", "pods", true), pod)
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let scheme = if self.shared.opts.tls {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A client configuration that reaches this server: its URL, the test CA when serving
    /// TLS, the first token (or the basic credentials, or the admin client certificate when
    /// those are the only way in). The client-side rate limit is off.
    pub fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new(self.url());
        c.qps = 0.0;
        let o = &self.shared.opts;
        if o.tls {
            c.ca_pem = Some(tls::CA_PEM.as_bytes().to_vec());
        }
        if let Some(t) = o.tokens.first() {
            c.auth = Auth::Bearer(Secret::new(t.as_str()));
        } else if let Some((u, p)) = &o.basic {
            c.auth = Auth::Basic {
                username: u.clone(),
                password: Secret::new(p.as_str()),
            };
        } else if o.client_certs {
            c.identity = Some(Identity {
                cert_pem: tls::ADMIN_CERT_PEM.as_bytes().to_vec(),
                key_pem: Secret::new(tls::ADMIN_KEY_PEM),
            });
        }
        c
    }

    /// Creates an object, as `POST` would; returns it as stored. Like a test fixture, the
    /// object is taken as given: status included, unknown fields kept, no managed fields. For a namespaced resource
    /// the namespace comes from `metadata.namespace` (default `default`).
    pub fn create(&self, ar: &ApiResource, object: Value) -> Result<Value, Status> {
        let ns = self.namespace_of(ar, &object);
        let stored = self.write(|s| s.create(&TypeKey::of(ar), ns.as_deref(), object))?;
        Ok(stored)
    }

    /// Replaces an object, as `PUT` would (a `metadata.resourceVersion` must be current). An
    /// update that changes nothing keeps the object's resourceVersion and sends no event, as
    /// on a real server ([`touch`](Self::touch) makes an event without a change).
    pub fn update(&self, ar: &ApiResource, object: Value) -> Result<Value, Status> {
        let ns = self.namespace_of(ar, &object);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        self.write(|s| s.update(&TypeKey::of(ar), ns.as_deref(), &name, object))
    }

    /// Applies a JSON merge patch to an object (one that changes nothing: no new version,
    /// no event).
    pub fn patch(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Value, Status> {
        let ns = ar.namespaced.then(|| namespace.unwrap_or("default"));
        self.write(|s| s.patch(&TypeKey::of(ar), ns, name, patch))
    }

    /// Bumps an object's resourceVersion without changing anything else: a MODIFIED event
    /// that costs the server a string copy (for benchmarks that need events fast).
    pub fn touch(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Status> {
        let ns = ar.namespaced.then(|| namespace.unwrap_or("default"));
        self.shared.store.lock().touch(&TypeKey::of(ar), ns, name)?;
        self.shared.notify();
        Ok(())
    }

    /// Deletes an object at once (one DELETED event, pods too); returns its last state.
    /// An object with finalizers stays, marked with `deletionTimestamp`, until an update
    /// removes them.
    pub fn delete(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Status> {
        let ns = ar.namespaced.then(|| namespace.unwrap_or("default"));
        self.write(|s| s.delete(&TypeKey::of(ar), ns, name))
    }

    /// One object as stored now; a missing one is the 404 `NotFound` Status a `GET` would
    /// answer (as [`Api::get`](crate::Api::get) fails), like every helper that can fail.
    ///
    /// ```
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::testing::ApiServer;
    /// let server = ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "a", "namespace": "lab"}})).unwrap();
    /// assert_eq!(server.get(&cms, Some("lab"), "a").unwrap()["metadata"]["name"], "a");
    /// let missing = server.get(&cms, Some("lab"), "b").unwrap_err();
    /// assert!(missing.is_not_found());
    /// assert_eq!(missing.message, r#"configmaps "b" not found"#);
    /// ```
    pub fn get(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Status> {
        let ns = ar.namespaced.then(|| namespace.unwrap_or("default"));
        let stored = self.shared.store.lock().get(&TypeKey::of(ar), ns, name)?;
        Ok(serde_json::from_str(&stored.json).unwrap_or(Value::Null))
    }

    /// Every object of a resource as stored now, in key order (`None`: all namespaces). It
    /// cannot fail (a resource no object was written to lists empty), so it answers the
    /// objects themselves.
    pub fn list(&self, ar: &ApiResource, namespace: Option<&str>) -> Vec<Value> {
        let mut store = self.shared.store.lock();
        let rv = store.rv;
        let ns = namespace.filter(|_| ar.namespaced);
        store
            .collection(&TypeKey::of(ar))
            .snapshot(rv, None, ns)
            .unwrap_or_default()
            .iter()
            .filter_map(|o| serde_json::from_str(&o.json).ok())
            .collect()
    }

    /// `(key, resourceVersion)` of every object of a resource: what a synced cache must hold.
    pub fn keys_and_versions(&self, ar: &ApiResource) -> Vec<(String, String)> {
        let mut store = self.shared.store.lock();
        store
            .collection(&TypeKey::of(ar))
            .objects
            .iter()
            .map(|(k, o)| (k.clone(), o.rv.to_string()))
            .collect()
    }

    /// The newest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().rv
    }

    /// Forgets all change history: every older resourceVersion and continue token now gets
    /// 410 Expired, for lists (what etcd compaction does) and watches alike (a real watch
    /// cache keeps serving its own window for a while after a compaction; this one models
    /// the moment that window has moved on too).
    pub fn compact(&self) {
        self.shared.store.lock().compact();
        self.shared.notify();
    }

    /// How long a list at a version the server has not reached waits for the server to get
    /// there before it answers 504 `ResourceVersionTooLarge` (default 3 s, as kube-apiserver
    /// waits for its cache: captured, `list-future-resourceversion*.json`). A write that
    /// reaches the version meanwhile ends the wait and the list is answered.
    pub fn set_too_large_wait(&self, wait: Duration) {
        let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.shared.too_large_wait_ms.store(ms, Ordering::SeqCst);
    }

    /// A copy of every object and of the version, as an etcd snapshot holds them, for
    /// [`restore`](Self::restore).
    pub fn backup(&self) -> Backup {
        Backup(self.shared.store.lock().backup())
    }

    /// Restores `backup`, as a cluster whose etcd is restored from a snapshot (or rebuilt
    /// behind the same address): the server restarts ([`restart`](Self::restart): every
    /// connection dropped, a new watch cache) with the backup's objects at the backup's
    /// versions, and the history before it gone. The resourceVersion goes **back**: a
    /// client's version from after the backup is in the server's future, so a watch from it
    /// is answered with nothing (until the server's versions reach it again) and a list at
    /// it with 504 `ResourceVersionTooLarge`, as kube-apiserver does.
    ///
    /// ```
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::testing::ApiServer;
    ///
    /// let server = ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "old"}})).unwrap();
    /// let backup = server.backup();
    /// let before = server.resource_version();
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "lost"}})).unwrap();
    /// server.restore(&backup).unwrap();
    /// assert!(server.resource_version() <= before + 1);
    /// let names: Vec<String> = server.keys_and_versions(&cms).into_iter().map(|(k, _)| k).collect();
    /// assert_eq!(names, ["default/old"]);
    /// ```
    pub fn restore(&self, backup: &Backup) -> std::io::Result<()> {
        self.go_down();
        self.shared.store.lock().restore(&backup.0);
        self.come_back()
    }

    /// Makes the next request of `target` fail with `fault`.
    pub fn inject(&self, target: Target, fault: Fault) {
        self.shared.faults.lock().push(target, fault);
    }

    /// How many injected faults no request has used yet.
    pub fn pending_faults(&self) -> usize {
        self.shared.faults.lock().len()
    }

    /// Drops all faults not yet used.
    pub fn clear_faults(&self) {
        self.shared.faults.lock().clear();
    }

    /// With `false`, streaming lists (`sendInitialEvents=true`) are refused the way an
    /// API server on etcd 3.4 refuses them: HTTP 200 and one ERROR event with code 500.
    pub fn set_streaming_list_supported(&self, supported: bool) {
        self.shared
            .streaming_list_supported
            .store(supported, Ordering::SeqCst);
    }

    /// With `false`, streaming lists are accepted but never closed by the
    /// `k8s.io/initial-events-end` bookmark (what a server does when the client forgets
    /// `allowWatchBookmarks`, as in the capture `streaming-list-without-allowWatchBookmarks`).
    pub fn set_initial_events_end_bookmark(&self, send: bool) {
        self.shared
            .initial_events_end_bookmark
            .store(send, Ordering::SeqCst);
    }

    /// Stops serving `ar`, as kube-apiserver does when the resource's CRD is deleted: every
    /// object of it is deleted (watchers get their DELETED events, as the CRD's cleanup
    /// sends them), then its open watches end cleanly, and from then on every request for it
    /// and its group's discovery documents answer kube-apiserver's plain-text `404 page not
    /// found` (`crd-deleted/` captures; the client reads it as a `NotFound`), and `/apis`
    /// no longer lists it, until [`serve_resource`](Self::serve_resource).
    ///
    /// A CRD deleted through the API does this by itself (with the CRD's own events, see
    /// `crd_lifecycle.rs`); this is the shortcut for a resource declared with the builder.
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::testing::ApiServer;
    /// use kube_informer::{Api, Client, ListParams};
    /// let server = ApiServer::start();
    /// let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    /// server.create(&widgets, serde_json::json!({"metadata": {"name": "w"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::all_with(Client::new(server.client_config())?, &widgets);
    /// server.remove_resource(&widgets);
    /// assert!(api.list(&ListParams::default()).unwrap_err().is_not_found());
    /// server.serve_resource(&widgets);
    /// assert!(api.list(&ListParams::default())?.items.is_empty());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn remove_resource(&self, ar: &ApiResource) {
        let tk = TypeKey::of(ar);
        {
            let mut store = self.shared.store.lock();
            let d = super::store::DeleteOptions {
                grace_period: Some(0),
                fixture: true,
                ..Default::default()
            };
            let _ = store.delete_collection(&tk, None, &Default::default(), &d);
            // Under the store's lock: a watch sees the deletions before it sees the end.
            let rv = store.rv;
            store.serving.remove(&tk, rv);
        }
        self.shared.notify();
    }

    /// Serves `ar` again after [`remove_resource`](Self::remove_resource) (its CRD created
    /// again), with no objects. (Unlike a CRD created again through the API, its first list
    /// is not refused with 429.)
    pub fn serve_resource(&self, ar: &ApiResource) {
        let tk = TypeKey::of(ar);
        super::crd_lifecycle::restore(&mut self.shared.store.lock(), &tk, 0);
    }

    /// Drops every open connection (a network blip, a load balancer or proxy restarting);
    /// the objects, the history and the watch cache stay. For a restart of the API server
    /// itself, see [`restart`](Self::restart).
    pub fn disconnect_all(&self) {
        for (_, s) in self.shared.conns.lock().drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.shared.notify();
    }

    /// Takes the server down, as a crash or a restart would: it stops listening (connecting
    /// is refused) and drops every open connection; the objects and their history stay.
    /// [`come_back`](Self::come_back) listens again on the same port.
    ///
    /// ```
    /// use kube_informer::api::{ApiResource, DynamicObject};
    /// use kube_informer::testing::ApiServer;
    /// use kube_informer::{Api, Client, ListParams};
    ///
    /// let server = ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "kept"}})).unwrap();
    /// let api: Api<DynamicObject> =
    ///     Api::namespaced_with(Client::new(server.client_config()).unwrap(), "default", &cms);
    ///
    /// server.go_down();
    /// assert!(std::net::TcpStream::connect(server.addr()).is_err());
    /// assert!(api.list(&ListParams::default()).is_err());
    /// server.come_back().unwrap();
    /// let list = api.list(&ListParams::default()).unwrap();
    /// assert_eq!(list.items[0].metadata.name(), "kept");
    /// ```
    pub fn go_down(&self) {
        let Some(accept) = self.accept.lock().take() else {
            return;
        };
        self.shared.down.store(true, Ordering::SeqCst);
        // Wake the accept loop with a connection of our own; it ends and closes the port.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = accept.join();
        self.disconnect_all();
    }

    /// Listens again on the same address after [`go_down`](Self::go_down) (nothing to do if
    /// the server is up). Fails if the port was taken meanwhile, or after [`stop`](Self::stop).
    ///
    /// Like a real kube-apiserver that restarts with its etcd kept, it comes back with a new
    /// watch cache: the resourceVersion moves on (the server's own first write) and watches
    /// from any older version get an ERROR event with 410 `Expired`, while Exact lists (and
    /// paged lists at a version) still answer older states from the history, and lists with
    /// `resourceVersionMatch=NotOlderThan`, unpaged lists at a version and consistent lists
    /// answer the present. Add [`compact`](Self::compact) for a restart after etcd compaction.
    pub fn come_back(&self) -> std::io::Result<()> {
        let mut accept = self.accept.lock();
        if accept.is_some() {
            return Ok(());
        }
        if self.shared.stopped.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the test API server is stopped"));
        }
        let listener = TcpListener::bind(self.addr)?;
        // A new process: its watch cache starts now (see `Store::restart_watch_cache`).
        self.shared.store.lock().restart_watch_cache();
        self.shared.down.store(false, Ordering::SeqCst);
        *accept = Some(spawn_accept(
            listener,
            &self.shared,
            &self.workers,
            self.tls_config.clone(),
        )?);
        Ok(())
    }

    /// [`go_down`](Self::go_down) then [`come_back`](Self::come_back): a restart.
    pub fn restart(&self) -> std::io::Result<()> {
        self.go_down();
        self.come_back()
    }

    /// Whether `/api` and `/apis` answer aggregated discovery (`apidiscovery.k8s.io/v2`)
    /// when the `Accept` header asks for it (default true). Off, they answer the legacy
    /// documents, like a server older than Kubernetes 1.26.
    pub fn set_aggregated_discovery(&self, served: bool) {
        self.shared
            .aggregated_discovery
            .store(served, Ordering::SeqCst);
    }

    /// A token of the service account `namespace/name` for `audiences` (none:
    /// [`API_AUDIENCE`](crate::testing::API_AUDIENCE)), valid for an hour, as a `TokenRequest` would
    /// give, without the service account having to exist (see `reviews.rs`).
    pub fn issue_token(&self, namespace: &str, name: &str, audiences: &[&str]) -> String {
        let audiences: Vec<String> = audiences.iter().map(|a| a.to_string()).collect();
        self.shared
            .identities
            .issue(namespace, name, "", &audiences, 3600)
            .0
    }

    /// The rule `SubjectAccessReview`s of users outside `system:masters` are allowed by
    /// (default: none is).
    ///
    /// ```
    /// use kube_informer::testing::ApiServer;
    ///
    /// let server = ApiServer::start();
    /// server.set_authorizer(|spec| {
    ///     spec.user.starts_with("system:serviceaccount:monitoring:")
    ///         && spec.non_resource_attributes.as_ref().is_some_and(|a| a.path == "/metrics" && a.verb == "get")
    /// });
    /// ```
    pub fn set_authorizer(
        &self,
        rule: impl Fn(&crate::api::SubjectAccessReviewSpec) -> bool + Send + Sync + 'static,
    ) {
        self.shared.identities.set_authorizer(Arc::new(rule));
    }

    /// Every request so far, as `METHOD /path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.shared.requests.lock().clone()
    }

    /// Every request so far (the first 10,000) with the headers it carried, in order, names
    /// in lower case, credentials included: for tests of what a client sends
    /// (`Authorization`, `Impersonate-*`, ...).
    pub fn request_headers(&self) -> Vec<RequestHeaders> {
        self.shared.request_headers.lock().clone()
    }

    /// How many client connections are open now (each watch holds one; an idle connection
    /// a client keeps for reuse counts too).
    pub fn open_connections(&self) -> usize {
        self.shared.conns.lock().len()
    }

    /// How many requests came so far (cheaper than [`requests`](Self::requests)`.len()`:
    /// for watching a client's request rate).
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().len()
    }

    /// The state the request handlers share (for the pod helpers of sibling files).
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Stops accepting, drops every connection and joins every thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if self.shared.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(accept) = self.accept.lock().take() {
            // Wake the accept loop with a connection of our own.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
            let _ = accept.join();
        }
        self.disconnect_all();
        let handles = std::mem::take(&mut *self.workers.lock());
        for h in handles {
            let _ = h.join();
        }
    }

    fn namespace_of(&self, ar: &ApiResource, object: &Value) -> Option<String> {
        ar.namespaced.then(|| {
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("default")
                .to_owned()
        })
    }

    fn write(
        &self,
        f: impl FnOnce(&mut Store) -> Result<super::store::Stored, Status>,
    ) -> Result<Value, Status> {
        let stored = f(&mut self.shared.store.lock())?;
        self.shared.notify();
        Ok(serde_json::from_str(&stored.json).unwrap_or(Value::Null))
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn spawn_accept(
    listener: TcpListener,
    shared: &Arc<Shared>,
    workers: &Arc<Mutex<Vec<JoinHandle<()>>>>,
    tls_config: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<JoinHandle<()>> {
    let shared = Arc::clone(shared);
    let workers = Arc::clone(workers);
    std::thread::Builder::new()
        .name("kiapi/accept".into())
        .spawn(move || accept_loop(listener, shared, workers, tls_config))
}

fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    tls_config: Option<Arc<rustls::ServerConfig>>,
) {
    for stream in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) || shared.down.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            shared.conns.lock().insert(id, clone);
        }
        let shared2 = Arc::clone(&shared);
        let tls_config = tls_config.clone();
        let spawned = std::thread::Builder::new()
            .name("kiapi/conn".into())
            .spawn(move || {
                match tls_config {
                    Some(cfg) => match rustls::ServerConnection::new(cfg) {
                        Ok(conn) => {
                            serve_connection(rustls::StreamOwned::new(conn, stream), &shared2)
                        }
                        Err(e) => log::warn!("test API server: TLS setup: {e}"),
                    },
                    None => serve_connection(stream, &shared2),
                }
                shared2.conns.lock().remove(&id);
            });
        let mut w = workers.lock();
        w.retain(|h| !h.is_finished());
        if let Ok(h) = spawned {
            w.push(h);
        }
    }
}

fn tcp_peer_closed(s: &TcpStream) -> bool {
    let _ = s.set_nonblocking(true);
    let mut b = [0u8; 1];
    let closed = match s.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = s.set_nonblocking(false);
    closed
}

impl Peer for TcpStream {
    fn has_client_certificate(&self) -> bool {
        false
    }
    fn drop_connection(&mut self) {
        let _ = self.shutdown(Shutdown::Both);
    }
    fn peer_closed(&self) -> bool {
        tcp_peer_closed(self)
    }
    #[cfg(feature = "ws")]
    fn into_parts(self) -> (TcpStream, Option<rustls::Connection>) {
        (self, None)
    }
}

impl Peer for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn has_client_certificate(&self) -> bool {
        self.conn.peer_certificates().is_some_and(|c| !c.is_empty())
    }
    fn drop_connection(&mut self) {
        let _ = self.sock.shutdown(Shutdown::Both);
    }
    fn peer_closed(&self) -> bool {
        tcp_peer_closed(&self.sock)
    }
    #[cfg(feature = "ws")]
    fn into_parts(self) -> (TcpStream, Option<rustls::Connection>) {
        (self.sock, Some(rustls::Connection::Server(self.conn)))
    }
}

fn serve_connection<S: Peer>(stream: S, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    let st = Status::failure(400, "BadRequest", e.to_string());
                    let _ = answers::write_status(reader.get_mut(), &st, &[]);
                }
                return;
            }
        };
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        {
            let mut log = shared.requests.lock();
            let mut line = format!("{} {}", req.method, req.path);
            let mut q: Vec<_> = req.query.iter().collect();
            q.sort();
            for (i, (k, v)) in q.iter().enumerate() {
                line.push(if i == 0 { '?' } else { '&' });
                line.push_str(&format!("{k}={v}"));
            }
            let mut headers = shared.request_headers.lock();
            if headers.len() < MAX_HEADER_LOG {
                headers.push(RequestHeaders {
                    request: line.clone(),
                    headers: req.header_list.clone(),
                });
            }
            if log.len() < 100_000 {
                log.push(line);
            }
        }
        let stream = reader.get_mut();
        if !authorized(&req, stream.has_client_certificate(), shared) {
            let st = Status::failure(401, "Unauthorized", "Unauthorized");
            if answers::write_status(stream, &st, &[]).is_err() {
                return;
            }
            continue;
        }
        #[cfg(feature = "ws")]
        if super::pod_exec::wants(&req) {
            super::pod_exec::serve(&req, reader, shared, &shared.runtime);
            return;
        }
        let keep = req.keep_alive();
        match handlers::handle(&req, stream, shared) {
            answers::Outcome::KeepAlive if keep => {}
            _ => return,
        }
    }
}

fn authorized(req: &http::Request, client_cert: bool, shared: &Shared) -> bool {
    let o = &shared.opts;
    if o.tokens.is_empty() && o.basic.is_none() && !o.client_certs {
        return true;
    }
    if client_cert {
        return true;
    }
    let Some(h) = req.header("authorization") else {
        return false;
    };
    if let Some(t) = h.strip_prefix("Bearer ") {
        return o.tokens.iter().any(|x| x == t.trim()) || shared.identities.accepts(t.trim());
    }
    if let (Some(b), Some((u, p))) = (h.strip_prefix("Basic "), &o.basic) {
        use base64::Engine as _;
        let want = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        return b.trim() == want;
    }
    false
}
