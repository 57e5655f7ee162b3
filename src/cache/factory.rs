//! `SharedInformerFactory`: one informer per resource, shared by every part of a program
//! that asks for it, started and stopped together.
//!
//! **By default, the whole cluster.** A factory made with [`SharedInformerFactory::new`]
//! lists and watches every namespace with no selector, as client-go's does: its informer of
//! ConfigMaps caches every ConfigMap in the cluster, and so does a controller's
//! [`owns`](crate::controller::ControllerBuilder::owns) given that informer (the memory of
//! all of them, and RBAC to list and watch them cluster-wide). Narrow it for every resource
//! ([`FactoryOptions::namespace`], [`FactoryOptions::labels`]) or for one
//! ([`SharedInformerFactory::set_scope`], shown there), as controller-runtime's cache
//! options do.
//!
//! **Per-resource scope.** The factory's options (namespace, selectors, stripping
//! `managedFields`) are defaults; an [`InformerScope`] set for one resource overrides them for
//! that resource's informers: all Pods of one label beside all ConfigMaps of two namespaces,
//! from one factory, synced and checked together. Several namespaces make one informer
//! (one cache, one set of handlers, listers and indexes across them) over one watch per
//! namespace, or over one cluster-wide watch filtered here ([`NamespaceWatch`]).
//!
//! **Informers that go away.** [`remove_informer`](SharedInformerFactory::remove_informer)
//! stops one (its threads joined, its handlers stopped) and forgets it: health and sync no
//! longer mention it, and asking for it again makes a new one. A resource that stops being
//! served (a CRD deleted) needs no removal: its informer reports it *gone*
//! ([`InformerHealth::gone_for`]) and lists again by itself when it is served again.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::catch::Transform;
use super::health::InformerHealth;
use super::informer::{InformerConfig, NamespaceWatch, SharedIndexInformer};
use super::reflector::ReflectorConfig;
use crate::api::{ApiResource, DynamicObject, Object, Resource};
use crate::client::{Api, Client};
use crate::error::{Error, Result};

/// What the factory needs from an informer of any type.
trait ManagedInformer: Send + Sync {
    fn start(&self) -> Result<()>;
    fn stop(&self);
    fn wait_for_cache_sync(&self, timeout: Duration) -> bool;
    fn health(&self) -> InformerHealth;
    fn as_any(&self) -> &dyn Any;
}

impl<K: Object> ManagedInformer for SharedIndexInformer<K> {
    fn start(&self) -> Result<()> {
        SharedIndexInformer::start(self)
    }
    fn stop(&self) {
        SharedIndexInformer::stop(self)
    }
    fn wait_for_cache_sync(&self, timeout: Duration) -> bool {
        SharedIndexInformer::wait_for_cache_sync(self, timeout)
    }
    fn health(&self) -> InformerHealth {
        SharedIndexInformer::health(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One informer per object type and resource.
type InformerKey = (std::any::TypeId, ApiResource);

/// An informer and the name it is reported under.
type NamedInformer = (String, Arc<dyn ManagedInformer>);

/// Options every informer of a factory gets, except where a resource's [`InformerScope`]
/// says otherwise. A builder, every setting with its default.
///
/// ```
/// use kube_informer::cache::{FactoryOptions, ReflectorConfig};
/// use std::time::Duration;
/// let options = FactoryOptions::new()
///     .namespace("default")
///     .labels("app=web")
///     .default_resync(Duration::from_secs(600))
///     .strip_managed_fields(true)
///     .reflector(ReflectorConfig::new().streaming_list(true));
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
pub struct FactoryOptions {
    /// Watch one namespace only (`None`: all namespaces).
    pub(crate) namespace: Option<String>,
    /// Label selector for every list and watch.
    pub(crate) label_selector: Option<String>,
    /// Field selector for every list and watch.
    pub(crate) field_selector: Option<String>,
    /// Default resync period of handlers.
    pub(crate) default_resync: Duration,
    /// Drop `managedFields` from every cached object: skipped while decoding (see
    /// [`ReflectorConfig::strip_managed_fields`]), never decoded.
    pub(crate) strip_managed_fields: bool,
    /// Reflector settings (page size, streaming list, back-off); selectors above win.
    pub(crate) reflector: ReflectorConfig,
}

impl FactoryOptions {
    /// The defaults (the same as `FactoryOptions::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Watch this namespace only (the default: all namespaces).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Label selector for every list and watch.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    /// Field selector for every list and watch.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }

    /// Default resync period of handlers (zero: no resync, the default).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// Drop `managedFields` from every cached object: skipped while decoding (see
    /// [`ReflectorConfig::strip_managed_fields`]), never decoded.
    pub fn strip_managed_fields(mut self, on: bool) -> Self {
        self.strip_managed_fields = on;
        self
    }

    /// Reflector settings (page size, streaming list, back-off); the selectors set here
    /// win over the reflector's.
    pub fn reflector(mut self, reflector: ReflectorConfig) -> Self {
        self.reflector = reflector;
        self
    }
}

/// Which namespaces an informer lists and watches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Namespaces {
    /// Every namespace (one cluster-wide list and watch).
    All,
    /// One namespace.
    One(String),
    /// Several namespaces, as one informer (see [`NamespaceWatch`] for how they are
    /// watched). An empty list means every namespace.
    Several(Vec<String>),
}

/// A transform for informers of one object type, its type erased.
#[derive(Clone)]
struct TypedTransform {
    type_name: &'static str,
    /// A `Transform<K>`.
    transform: Arc<dyn Any + Send + Sync>,
}

/// What one resource's informers list and watch, overriding the factory's
/// [`FactoryOptions`]: namespaces, selectors, transform. What is not set here is the
/// factory's. Set it with [`SharedInformerFactory::set_scope`] (or
/// [`ManagerBuilder::scope`](crate::manager::ManagerBuilder::scope)) before asking for the
/// informer.
///
/// ```
/// use kube_informer::api::ApiResource;
/// use kube_informer::cache::{InformerScope, SharedInformerFactory};
/// use kube_informer::Client;
/// use std::time::Duration;
/// let server = kube_informer::testing::ApiServer::start();
/// let pods = ApiResource::new("", "v1", "Pod", "pods", true);
/// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// server.create(&cms, serde_json::json!({"metadata": {"name": "x", "namespace": "b"}})).unwrap();
/// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
/// // All Pods labelled app=web; the ConfigMaps of namespaces a and b.
/// factory.set_scope(&pods, InformerScope::new().label_selector("app=web"))?;
/// factory.set_scope(&cms, InformerScope::new().namespaces(["a", "b"]))?;
/// let pod_informer = factory.dynamic_informer(&pods);
/// let cm_informer = factory.dynamic_informer(&cms);
/// factory.start()?;
/// assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).all_synced());
/// assert_eq!(cm_informer.store().list_keys(), ["b/x"]);
/// factory.shutdown();
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct InformerScope {
    namespaces: Option<Namespaces>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    strip_managed_fields: Option<bool>,
    namespace_watch: NamespaceWatch,
    transform: Option<TypedTransform>,
}

impl std::fmt::Debug for InformerScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerScope")
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("strip_managed_fields", &self.strip_managed_fields)
            .field("namespace_watch", &self.namespace_watch)
            .field("transform", &self.transform.as_ref().map(|t| t.type_name))
            .finish()
    }
}

impl InformerScope {
    /// A scope that overrides nothing (the factory's options apply).
    pub fn new() -> Self {
        Self::default()
    }

    /// Lists and watches one namespace (of a namespaced resource; a cluster-scoped one
    /// ignores namespaces).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespaces = Some(Namespaces::One(namespace.into()));
        self
    }

    /// Lists and watches these namespaces, as one informer (see [`NamespaceWatch`]).
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        let all: Vec<String> = namespaces.into_iter().map(Into::into).collect();
        self.namespaces = Some(Namespaces::Several(all));
        self
    }

    /// Lists and watches every namespace, whatever the factory's namespace.
    pub fn all_namespaces(mut self) -> Self {
        self.namespaces = Some(Namespaces::All);
        self
    }

    /// How several namespaces are watched: one watch each (the default) or one
    /// cluster-wide watch filtered on this side.
    pub fn namespace_watch(mut self, watch: NamespaceWatch) -> Self {
        self.namespace_watch = watch;
        self
    }

    /// The label selector of every list and watch ("" for none, whatever the factory's).
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// The field selector of every list and watch ("" for none, whatever the factory's).
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Whether `metadata.managedFields` are skipped while decoding (see
    /// [`ReflectorConfig::strip_managed_fields`]).
    pub fn strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = Some(strip);
        self
    }

    /// Changes every object of type `K` before it is cached. It applies to the resource's informers
    /// of type `K` only (a metadata informer of the same resource has another type).
    pub fn transform<K: crate::api::Object>(mut self, transform: Transform<K>) -> Self {
        self.transform = Some(TypedTransform {
            type_name: std::any::type_name::<K>(),
            transform: Arc::new(transform),
        });
        self
    }

    /// The namespaces this scope asks for (`None`: the factory's).
    pub fn namespaces_asked(&self) -> Option<&Namespaces> {
        self.namespaces.as_ref()
    }
}

/// Hands out shared informers, one per resource, and runs them together.
///
/// **By default, the whole cluster**: every namespace, no selector, as client-go's factory.
/// Its informer of ConfigMaps caches every ConfigMap in the cluster, and so does a
/// controller's [`owns`](crate::controller::ControllerBuilder::owns) given that informer
/// (the memory of all of them, and RBAC to list and watch them cluster-wide). Narrow it for
/// every resource ([`FactoryOptions::namespace`], [`FactoryOptions::labels`]) or for one
/// ([`set_scope`](Self::set_scope), with an example), as controller-runtime's cache options
/// do.
///
/// ```no_run
/// # use kube_informer::{Client, ClientConfig, api::{ApiResource, DynamicObject}};
/// use kube_informer::cache::SharedInformerFactory;
/// # fn main() -> kube_informer::Result<()> {
/// # let client = Client::new(ClientConfig::new("https://127.0.0.1:6443"))?;
/// let factory = SharedInformerFactory::new(client);
/// let pods = factory.dynamic_informer(&ApiResource::new("", "v1", "Pod", "pods", true));
/// factory.start()?;
/// let report = factory.wait_for_cache_sync(std::time::Duration::from_secs(30));
/// if !report.all_synced() {
///     eprintln!("{report}"); // which informer did not sync, and its last error
/// }
/// println!("{} pods cached", pods.store().len());
/// factory.shutdown();
/// # Ok(()) }
/// ```
pub struct SharedInformerFactory {
    client: Client,
    options: FactoryOptions,
    informers: Mutex<HashMap<InformerKey, NamedInformer>>,
    /// Per-resource overrides of `options`; taken after `informers` when both are held.
    scopes: Mutex<HashMap<ApiResource, InformerScope>>,
    started: Mutex<bool>,
}

impl std::fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("options", &self.options)
            .field("informers", &self.informers.lock().len())
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory with default options.
    pub fn new(client: Client) -> Self {
        Self::with_options(client, FactoryOptions::default())
    }

    /// A factory with options.
    pub fn with_options(client: Client, options: FactoryOptions) -> Self {
        SharedInformerFactory {
            client,
            options,
            informers: Mutex::new(HashMap::new()),
            scopes: Mutex::new(HashMap::new()),
            started: Mutex::new(false),
        }
    }

    /// The shared informer for a compile-time resource type.
    pub fn informer<K: Resource>(&self) -> SharedIndexInformer<K> {
        self.informer_for(&ApiResource::of::<K>())
    }

    /// The shared informer for a resource known at run time (custom resources).
    pub fn dynamic_informer(&self, resource: &ApiResource) -> SharedIndexInformer<DynamicObject> {
        self.informer_for(resource)
    }

    /// The shared informer for the metadata only of `resource` (built-in or custom): its
    /// lists and watches ask the server for
    /// [`PartialObjectMetadata`](crate::api::PartialObjectMetadata), so the cache holds no
    /// `spec` or `status`. Listers and indexes work as for any informer.
    ///
    /// ```
    /// use kube_informer::{Client, api::ApiResource, cache::SharedInformerFactory};
    /// use std::time::Duration;
    /// let server = kube_informer::testing::ApiServer::start();
    /// let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    /// server.create(&pods, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    ///     "spec": {"containers": [{"name": "app", "image": "nginx"}]}})).unwrap();
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let informer = factory.metadata_informer(&pods);
    /// factory.start()?;
    /// assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).all_synced());
    /// let web = informer.lister().get(Some("lab"), "web").expect("cached");
    /// assert_eq!(web.kind.as_deref(), Some("PartialObjectMetadata"));
    /// factory.shutdown();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn metadata_informer(
        &self,
        resource: &ApiResource,
    ) -> SharedIndexInformer<crate::api::PartialObjectMetadata> {
        self.informer_for(resource)
    }

    /// The shared informer for objects of type `K` at `resource`, made on first request as
    /// the resource's [`InformerScope`] (if one was set) and the factory's options say, and
    /// started at once if the factory was.
    pub fn informer_for<K: Object>(&self, resource: &ApiResource) -> SharedIndexInformer<K> {
        let key = (std::any::TypeId::of::<K>(), resource.clone());
        let mut informers = self.informers.lock();
        if let Some((_, existing)) = informers.get(&key) {
            if let Some(i) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>() {
                return i.clone();
            }
        }
        let scope = self
            .scopes
            .lock()
            .get(resource)
            .cloned()
            .unwrap_or_default();
        let informer = self.make_informer::<K>(resource, scope);
        let type_name = std::any::type_name::<K>();
        let short = type_name.rsplit("::").next().unwrap_or(type_name);
        let name = format!("{}.{} ({short})", resource.plural, resource.api_version());
        if *self.started.lock() {
            if let Err(e) = informer.start() {
                log::error!("kube-informer: starting the {name} informer: {e}");
            }
        }
        informers.insert(key, (name, Arc::new(informer.clone())));
        informer
    }

    /// An informer of `resource` as its scope and the factory's options say.
    fn make_informer<K: Object>(
        &self,
        resource: &ApiResource,
        scope: InformerScope,
    ) -> SharedIndexInformer<K> {
        let o = &self.options;
        let mut reflector = o.reflector.clone();
        // The scope, else the factory's options, else the reflector settings; "" is none.
        let pick = |scoped: &Option<String>, factory: &Option<String>, base: Option<String>| {
            scoped
                .clone()
                .or_else(|| factory.clone())
                .or(base)
                .filter(|s| !s.is_empty())
        };
        reflector.label_selector = pick(
            &scope.label_selector,
            &o.label_selector,
            reflector.label_selector.take(),
        );
        reflector.field_selector = pick(
            &scope.field_selector,
            &o.field_selector,
            reflector.field_selector.take(),
        );
        // `managedFields` are skipped while decoding (the scope's choice, else the factory's
        // added to the reflector settings').
        match scope.strip_managed_fields {
            Some(strip) => reflector.strip_managed_fields = strip,
            None => reflector.strip_managed_fields |= o.strip_managed_fields,
        }
        let transform = scope.transform.as_ref().and_then(|t| {
            let typed = t.transform.downcast_ref::<Transform<K>>().cloned();
            if typed.is_none() {
                log::debug!(
                    "kube-informer: the scope's transform of {} is for {}, not {}",
                    resource.plural,
                    t.type_name,
                    std::any::type_name::<K>()
                );
            }
            typed
        });
        let mut config = InformerConfig::new()
            .reflector(reflector)
            .default_resync(o.default_resync);
        if let Some(transform) = transform {
            config = config.transform(transform);
        }
        let namespaces = scope.namespaces.unwrap_or_else(|| match &o.namespace {
            Some(ns) => Namespaces::One(ns.clone()),
            None => Namespaces::All,
        });
        let client = self.client.clone();
        match namespaces {
            Namespaces::One(ns) if resource.namespaced => {
                SharedIndexInformer::new(Api::namespaced_with(client, &ns, resource), config)
            }
            Namespaces::Several(all) => SharedIndexInformer::for_namespaces(
                Api::all_with(client, resource),
                all,
                scope.namespace_watch,
                config,
            ),
            _ => SharedIndexInformer::new(Api::all_with(client, resource), config),
        }
    }

    /// Sets what `resource`'s informers list and watch (namespaces, selectors, transform),
    /// overriding the factory's options for it. Set it before asking for the informer: an
    /// error says so when one of `resource` exists already (a shared informer does not
    /// change its scope under those who use it; [`remove_informer`](Self::remove_informer)
    /// it first).
    ///
    /// The usual case: a controller [`owns`](crate::controller::ControllerBuilder::owns)
    /// ConfigMaps it labels, and should not cache every ConfigMap in the cluster.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::{Client, api::ApiResource};
    /// use kube_informer::cache::{InformerScope, SharedInformerFactory};
    /// let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "web-config", "namespace": "lab",
    ///     "labels": {"app.kubernetes.io/managed-by": "web-config"}}})).unwrap();
    /// server.create(&cms, serde_json::json!({"metadata": {"name": "other", "namespace": "shop"}})).unwrap();
    ///
    /// // By default: every ConfigMap of every namespace.
    /// let everything = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let all = everything.dynamic_informer(&cms);
    /// everything.start()?;
    /// assert!(everything.wait_for_cache_sync(Duration::from_secs(30)).all_synced());
    /// assert_eq!(all.store().len(), 2);
    ///
    /// // Scoped: only those the controller labels.
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// factory.set_scope(&cms, InformerScope::new()
    ///     .label_selector("app.kubernetes.io/managed-by=web-config"))?;
    /// let owned = factory.dynamic_informer(&cms);
    /// factory.start()?;
    /// assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).all_synced());
    /// assert_eq!(owned.store().len(), 1);
    /// # everything.shutdown(); factory.shutdown();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn set_scope(&self, resource: &ApiResource, scope: InformerScope) -> Result<()> {
        let informers = self.informers.lock();
        if let Some((name, _)) = informers
            .iter()
            .find(|((_, r), _)| r == resource)
            .map(|(_, v)| v)
        {
            return Err(Error::InvalidInput(format!(
                "the informer {name} exists already: set its scope before asking for it, or remove it first"
            )));
        }
        self.scopes.lock().insert(resource.clone(), scope);
        Ok(())
    }

    /// The scope set for `resource`, if any.
    pub fn scope(&self, resource: &ApiResource) -> Option<InformerScope> {
        self.scopes.lock().get(resource).cloned()
    }

    /// Stops the informer of objects `K` at `resource` and forgets it: its threads are
    /// joined and its handlers stopped (clones of it that others hold are stopped too), and
    /// the factory's health and sync no longer count it. A later
    /// [`informer_for`](Self::informer_for) makes a new one. Returns whether there was one.
    ///
    /// ```
    /// use kube_informer::{Client, api::{ApiResource, DynamicObject}, cache::SharedInformerFactory};
    /// let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
    /// let first = factory.dynamic_informer(&cms);
    /// factory.start()?;
    /// assert!(factory.remove_informer::<DynamicObject>(&cms));
    /// assert!(!first.health().running);
    /// assert!(factory.health().is_empty());
    /// let second = factory.dynamic_informer(&cms); // a new one, started with the factory
    /// assert!(second.wait_for_cache_sync(std::time::Duration::from_secs(30)));
    /// factory.shutdown();
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn remove_informer<K: Object>(&self, resource: &ApiResource) -> bool {
        let key = (std::any::TypeId::of::<K>(), resource.clone());
        // Stopped outside the lock: stopping joins threads.
        let removed = self.informers.lock().remove(&key);
        match removed {
            Some((_, informer)) => {
                informer.stop();
                true
            }
            None => false,
        }
    }

    /// Stops and forgets every informer of `resource`, whatever its object type (see
    /// [`remove_informer`](Self::remove_informer)); returns how many there were.
    pub fn remove_resource(&self, resource: &ApiResource) -> usize {
        let removed: Vec<NamedInformer> = {
            let mut informers = self.informers.lock();
            let keys: Vec<InformerKey> = informers
                .keys()
                .filter(|(_, r)| r == resource)
                .cloned()
                .collect();
            keys.iter().filter_map(|k| informers.remove(k)).collect()
        };
        for (_, informer) in &removed {
            informer.stop();
        }
        removed.len()
    }

    /// Starts every informer (and those asked for later). Idempotent, non-blocking.
    pub fn start(&self) -> Result<()> {
        *self.started.lock() = true;
        for (_, i) in self.informers.lock().values() {
            i.start()?;
        }
        Ok(())
    }

    /// Waits (up to `timeout` in all) for every informer's cache to sync, and says which
    /// did and, for those that did not, why ([`SyncReport`]).
    pub fn wait_for_cache_sync(&self, timeout: Duration) -> SyncReport {
        let deadline = crate::deadline::after(timeout);
        let informers: Vec<NamedInformer> = self.informers.lock().values().cloned().collect();
        for (_, i) in informers {
            i.wait_for_cache_sync(deadline.saturating_duration_since(Instant::now()));
        }
        SyncReport {
            informers: self.health(),
        }
    }

    /// Every informer's health, by name (see [`InformerHealth`]).
    pub fn health(&self) -> Vec<InformerHealth> {
        let mut all: Vec<InformerHealth> = self
            .informers
            .lock()
            .values()
            .map(|(name, i)| {
                let mut h = i.health();
                h.name = name.clone();
                h
            })
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Stops every informer and joins all their threads. The informers stop at the same
    /// time (one short-lived thread each), so stopping takes as long as the slowest one —
    /// within a second — not the sum over informers.
    pub fn shutdown(&self) {
        let informers: Vec<NamedInformer> = self.informers.lock().values().cloned().collect();
        std::thread::scope(|scope| {
            let mut inline = Vec::new();
            let mut stopping = Vec::new();
            for (name, i) in &informers {
                let spawned = std::thread::Builder::new()
                    .name(crate::thread_name::thread_name(name, "stop"))
                    .spawn_scoped(scope, || i.stop());
                match spawned {
                    Ok(handle) => stopping.push(handle),
                    Err(_) => inline.push(i),
                }
            }
            // No thread to spare: stop those here, while the others stop in parallel.
            for i in inline {
                i.stop();
            }
            // Joined one by one: the scope alone waits for their work, not for the threads
            // to be gone, and "shutdown joins every thread" is the promise.
            for handle in stopping {
                let _ = handle.join();
            }
        });
    }
}

impl Drop for SharedInformerFactory {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What [`SharedInformerFactory::wait_for_cache_sync`] found: every informer's health, in
/// name order. `Display` lists the informers that did not sync, each with its last error.
#[derive(Clone, Debug, Default)]
pub struct SyncReport {
    /// Each informer's health when the wait ended.
    pub informers: Vec<InformerHealth>,
}

impl SyncReport {
    /// True when every informer synced.
    pub fn all_synced(&self) -> bool {
        self.informers.iter().all(|h| h.synced)
    }

    /// The informers that did not sync.
    pub fn not_synced(&self) -> impl Iterator<Item = &InformerHealth> {
        self.informers.iter().filter(|h| !h.synced)
    }

    /// Whether the informer of that name synced (`None`: no such informer).
    pub fn synced(&self, name: &str) -> Option<bool> {
        self.informers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.synced)
    }
}

impl std::fmt::Display for SyncReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let synced = self.informers.iter().filter(|h| h.synced).count();
        write!(f, "{synced} of {} informers synced", self.informers.len())?;
        for h in self.not_synced() {
            write!(f, "\n  {h}")?;
        }
        Ok(())
    }
}
