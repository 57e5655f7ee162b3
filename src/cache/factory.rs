//! `SharedInformerFactory`: one informer per resource, shared by every part of a program
//! that asks for it, started and stopped together.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::health::InformerHealth;
use super::informer::{InformerConfig, SharedIndexInformer};
use super::reflector::ReflectorConfig;
use crate::api::{ApiResource, DynamicObject, Object, Resource};
use crate::client::{Api, Client};
use crate::error::Result;

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

/// Options every informer of a factory gets.
#[derive(Clone, Debug, Default)]
pub struct FactoryOptions {
    /// Watch one namespace only (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Label selector for every list and watch.
    pub label_selector: Option<String>,
    /// Field selector for every list and watch.
    pub field_selector: Option<String>,
    /// Default resync period of handlers.
    pub default_resync: Duration,
    /// Drop `managedFields` from every cached object: skipped while decoding (see
    /// [`ReflectorConfig::strip_managed_fields`]), never decoded.
    pub strip_managed_fields: bool,
    /// Reflector settings (page size, streaming list, back-off); selectors above win.
    pub reflector: ReflectorConfig,
}

/// Hands out shared informers, one per resource, and runs them together.
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

    /// The shared informer for objects of type `K` at `resource`.
    pub fn informer_for<K: Object>(&self, resource: &ApiResource) -> SharedIndexInformer<K> {
        let key = (std::any::TypeId::of::<K>(), resource.clone());
        let mut informers = self.informers.lock();
        if let Some((_, existing)) = informers.get(&key) {
            if let Some(i) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>() {
                return i.clone();
            }
        }
        let api = match (&self.options.namespace, resource.namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, resource),
            _ => Api::all_with(self.client.clone(), resource),
        };
        let mut reflector = self.options.reflector.clone();
        reflector.label_selector = self
            .options
            .label_selector
            .clone()
            .or(reflector.label_selector);
        reflector.field_selector = self
            .options
            .field_selector
            .clone()
            .or(reflector.field_selector);
        reflector.strip_managed_fields |= self.options.strip_managed_fields;
        let config = InformerConfig {
            reflector,
            default_resync: self.options.default_resync,
            ..Default::default()
        };
        let informer = SharedIndexInformer::new(api, config);
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
