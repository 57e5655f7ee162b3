//! Discovery: which groups, versions and resources a server has, cached in memory and on
//! disk like kubectl, and the REST mapper that turns what a user types into an
//! [`ApiResource`](crate::api::ApiResource).
//!
//! Why a room of its own: informers and `Api` need a resource's place (group, version,
//! plural, scope); users know a kind or a short name. Discovery is the server's own answer,
//! and asking it on every start of a program is slow on large clusters, hence the caches.
//!
//! - `types.rs`: the model ([`ServerGroup`], [`ServerResource`], [`DiscoveryData`],
//!   [`ServerVersion`]) and the legacy documents it is read from and cached as;
//! - `aggregated.rs`: `apidiscovery.k8s.io/v2`, one document for all groups, with ETags;
//! - `legacy.rs`: the fallback, `/api`, `/apis` and one document per group-version;
//! - `disk_cache.rs`: kubectl's cache directory and files ([`DiskCache`]);
//! - `client.rs`: [`Discovery`], memory then disk then server, one refresh on a miss;
//! - `mapper.rs`: [`RestMapper`].
//!
//! Limits: the server's answers are trusted for the preferred version (the first one of a
//! group); a group-version the legacy path cannot fetch (404, 503) is skipped with a
//! warning (and, with a disk cache, asked for alone on each later read, as kubectl does);
//! see each file for its own.
//!
//! # From what a user types to an `ApiResource`
//!
//! [`Client::discovery`](crate::Client::discovery) asks the server what it serves:
//! aggregated discovery, or the legacy documents on older servers. A [`RestMapper`] turns
//! `deploy`, `Widget` or `deployments.apps` into the
//! [`ApiResource`](crate::api::ApiResource) that [`Api`](crate::Api) and
//! `factory.dynamic_informer` take. It follows kubectl's precedence:
//!
//! - a plural or a singular name wins over a short name, which wins over a kind;
//! - groups come in the server's order;
//! - within a group, the preferred version comes first, then the other versions (so a
//!   resource that only an older version serves is still found).
//!
//! With [`Discovery::with_kubectl_disk_cache`] the answers are shared with kubectl through
//! `~/.kube/cache/discovery/<host>/` for 10 minutes. As with kubectl, a group-version missing
//! from the cache (one that answered 404 or 503, an aggregated API that was down) is fetched
//! alone.
//!
//! ```
//! use kube_informer::discovery::{Discovery, RestMapper};
//! use kube_informer::Client;
//!
//! # let server = kube_informer::testing::ApiServer::start();
//! # let client = Client::new(server.client_config())?;
//! let mapper = RestMapper::new(Discovery::new(client.clone()));
//! let deployments = mapper.resolve("deploy")?; // apps/v1 deployments, namespaced
//! assert_eq!(deployments.url_path(Some("lab")), "/apis/apps/v1/namespaces/lab/deployments");
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! An informer for a resource known only by its kind:
//!
//! ```
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::discovery::RestMapper;
//! use kube_informer::testing::ApiServer;
//! use kube_informer::Client;
//!
//! let server = ApiServer::start();
//! let client = Client::new(server.client_config()).unwrap();
//! let cms = RestMapper::new(client.discovery()).resolve("cm").unwrap();
//! let factory = SharedInformerFactory::new(client);
//! let informer = factory.dynamic_informer(&cms);
//! factory.start().unwrap();
//! assert!(informer.lister().list_all().is_empty());
//! factory.shutdown();
//! ```

mod aggregated;
mod client;
mod disk_cache;
mod legacy;
mod mapper;
mod types;

pub use aggregated::AGGREGATED_ACCEPT;
pub use client::{Discovery, Origin};
pub use disk_cache::{host_dir_name, DiskCache, DEFAULT_TTL};
pub use mapper::RestMapper;
pub use types::{DiscoveryData, ServerGroup, ServerResource, ServerVersion};
