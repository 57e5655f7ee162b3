//! # kube-informer
//!
//! Kubernetes informers for programs without an async runtime. The flow is client-go's, on
//! OS threads: a [`Reflector`](cache::Reflector) lists a resource page by page and watches it
//! (one chunked response, one JSON event per line), a [`DeltaFifo`](cache::DeltaFifo) keeps
//! each object's changes in order, and a [`SharedIndexInformer`](cache::SharedIndexInformer)
//! applies them to an indexed cache that [`Lister`](cache::Lister)s read without touching the
//! API server, then tells every registered handler on its own thread.
//!
//! - [`config`]: kubeconfig / in-cluster configuration and credentials;
//! - [`client`]: the blocking API client ([`Api`]: paged lists, watch streams, every write
//!   with its options; [`Client::request`]: any other request);
//! - [`discovery`]: the server's groups, versions and resources (aggregated or legacy
//!   discovery, cached in memory and in kubectl's disk cache), and the
//!   [`RestMapper`](discovery::RestMapper) from a kind or short name to an `ApiResource`;
//! - [`api`]: the object model ([`api::Resource`], [`api::DynamicObject`], [`api::WatchEvent`]);
//! - [`cache`]: store, DeltaFIFO, reflector, shared informers, listers, factory;
//! - [`workqueue`] and [`controller`]: the controller pattern on worker threads (reacting to
//!   the objects it owns and to other resources too), a finalizer helper, an event recorder,
//!   leader election on Leases so that one replica of many acts, and sharding so that many
//!   replicas share the work;
//! - [`manager`]: several controllers over one factory, with health checks, probes (feature
//!   `probes`) and metrics (feature `metrics`, module `metrics`);
//! - [`pod`]: logs (a follow that resumes), eviction and drain; with the `ws` feature, exec
//!   and attach (wired to the program's stdin, stdout and stderr, or to its terminal, in one
//!   call), port-forward and cp;
//! - `serve` and `webhook` (features `probes` / `webhook`): a bounded HTTP(S) server,
//!   admission and conversion webhooks;
//! - `testing` (with the `testing` feature, off by default): an API server on 127.0.0.1 for
//!   tests and demos.
//!
//! # A five-minute tour
//!
//! Each step below runs as it is (it is a doctest) against `testing::ApiServer`, an API
//! server on 127.0.0.1 that answers like kube-apiserver (feature `testing`: enable it in your
//! `[dev-dependencies]`). With a real cluster, build the client with
//! `kube_informer::config::Config::infer()?.client()?` (kubeconfig, or in-cluster) instead.
//!
//! ## 1. An informer: the objects, and every change to them
//!
//! A [`SharedInformerFactory`](cache::SharedInformerFactory) makes one informer per resource,
//! however many parts of the program ask for it. Handlers run on a thread of their own each.
//!
//! ```
//! use std::time::Duration;
//!
//! use kube_informer::api::ApiResource;
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::testing::ApiServer;
//! use kube_informer::Client;
//!
//! let server = ApiServer::start();
//! let pods = ApiResource::new("", "v1", "Pod", "pods", true);
//! server.create(&pods, serde_json::json!({"metadata": {"name": "web-0", "namespace": "lab"}})).unwrap();
//!
//! let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
//! let informer = factory.dynamic_informer(&pods);
//! let (tx, rx) = std::sync::mpsc::channel();
//! informer.add_event_handler(
//!     informer
//!         .handler_fns()
//!         .on_add({
//!             let tx = tx.clone();
//!             move |pod, _initial| tx.send(format!("ADD {}", pod.metadata.key())).unwrap()
//!         })
//!         .on_delete(move |gone| tx.send(format!("DELETE {}", gone.object().metadata.key())).unwrap()),
//! )?;
//! factory.start()?;
//! assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "ADD lab/web-0"); // the initial list
//! server.create(&pods, serde_json::json!({"metadata": {"name": "web-1", "namespace": "lab"}})).unwrap();
//! assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "ADD lab/web-1"); // the watch
//! server.delete(&pods, Some("lab"), "web-0").unwrap();
//! assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "DELETE lab/web-0");
//! factory.shutdown(); // every thread joined (also on drop)
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! ## 2. A lister: reads from the cache, never from the API server
//!
//! Once the informers have synced, a [`Lister`](cache::Lister) answers from memory with
//! shared (`Arc`) objects: by name, by label selector, by namespace, or by an index of yours.
//!
//! ```
//! use std::time::Duration;
//!
//! use kube_informer::api::{ApiResource, LabelSelector};
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::testing::ApiServer;
//! use kube_informer::Client;
//!
//! let server = ApiServer::start();
//! let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
//! for (ns, name, app) in [("lab", "web-a", "web"), ("lab", "db", "db"), ("shop", "web-b", "web")] {
//!     server.create(&cms, serde_json::json!({"metadata": {"name": name, "namespace": ns,
//!         "labels": {"app": app}}})).unwrap();
//! }
//!
//! let factory = SharedInformerFactory::new(Client::new(server.client_config())?);
//! let lister = factory.dynamic_informer(&cms).lister();
//! factory.start()?;
//! assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).all_synced());
//!
//! assert!(lister.get(Some("lab"), "db").is_some());
//! let web = LabelSelector::parse("app=web")?;
//! let mut names: Vec<String> = lister.list(&web).iter().map(|cm| cm.metadata.key()).collect();
//! names.sort();
//! assert_eq!(names, ["lab/web-a", "shop/web-b"]);
//! assert_eq!(lister.list_namespace("shop", &web).len(), 1);
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! ## 3. A write: the blocking client
//!
//! [`Api`] has every verb: create, replace, the four kinds of patch (server-side apply among
//! them), delete, the `status` and `scale` subresources. A failed request is an
//! [`Error`] carrying the server's `Status`.
//!
//! ```
//! use kube_informer::api::{ApiResource, DynamicObject};
//! use kube_informer::testing::ApiServer;
//! use kube_informer::{Api, Client, DeleteParams, Patch, PatchParams, PostParams};
//!
//! let server = ApiServer::start();
//! let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
//! let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
//!
//! let body = serde_json::json!({"metadata": {"name": "settings"}, "data": {"color": "blue"}});
//! let created = api.create(&PostParams::default(), &body)?;
//! assert_eq!(created.metadata.namespace(), "lab");
//! assert!(api.create(&PostParams::default(), &body).unwrap_err().is_already_exists()); // 409
//!
//! // Server-side apply, as the field manager "tour": the create's manager owns `.data.color`,
//! // so changing it is a conflict that names the field, until the apply forces it.
//! let apply = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "settings", "labels": {"tier": "web"}}, "data": {"color": "green"}});
//! let err = api.patch("settings", &PatchParams::apply("tour"), &Patch::Apply(&apply)).unwrap_err();
//! assert_eq!(err.status().unwrap().field_manager_conflicts()[0].field, ".data.color");
//! let applied = api.patch("settings", &PatchParams::apply("tour").force(), &Patch::Apply(&apply))?;
//! assert_eq!(applied.metadata.label("tier"), Some("web"));
//! assert_eq!(applied.get::<String>(&["data", "color"])?.as_deref(), Some("green"));
//!
//! api.delete("settings", &DeleteParams::default())?;
//! assert!(api.get("settings").unwrap_err().is_not_found()); // 404
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! ## 4. A controller: reconcile what changed
//!
//! A [`Controller`](controller::Controller) turns an informer's events into keys in a
//! rate-limited work queue; worker threads call your `reconcile` with each key, which reads
//! the cache and writes to the server. An error retries the key with back-off; leader
//! election, owned objects, finalizers and sharding are in [`controller`], a runner of many
//! controllers with probes in [`manager`].
//!
//! ```
//! use std::time::Duration;
//!
//! use kube_informer::api::{ApiResource, DynamicObject};
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::controller::{Action, Controller};
//! use kube_informer::testing::ApiServer;
//! use kube_informer::{Api, Client, Patch, PatchParams};
//!
//! let server = ApiServer::start();
//! let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
//! server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
//!
//! // The controller: every ConfigMap gets the label `example.com/seen=true`.
//! let client = Client::new(server.client_config())?;
//! let factory = SharedInformerFactory::new(client.clone());
//! let informer = factory.dynamic_informer(&cms);
//! let lister = informer.lister();
//! let api: Api<DynamicObject> = Api::all_with(client, &cms);
//! let (done, labelled) = crossbeam_channel::unbounded();
//! let controller = Controller::builder("seen-labeller", informer).run(
//!     move |key: &str| -> Result<Action, kube_informer::Error> {
//!         let (namespace, name) = key.split_once('/').expect("a namespaced key");
//!         let Some(cm) = lister.get(Some(namespace), name) else {
//!             return Ok(Action::Done); // deleted meanwhile: nothing to do
//!         };
//!         if cm.metadata.label("example.com/seen").is_none() {
//!             let patch = serde_json::json!({"metadata": {"labels": {"example.com/seen": "true"}}});
//!             Api::<DynamicObject>::namespaced_with(api.client().clone(), namespace, api.resource())
//!                 .patch(name, &PatchParams::default(), &Patch::Merge(patch))?;
//!             done.send(key.to_owned()).ok();
//!         }
//!         Ok(Action::Done)
//!     },
//! )?;
//!
//! assert_eq!(labelled.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/settings");
//! server.create(&cms, serde_json::json!({"metadata": {"name": "later", "namespace": "shop"}})).unwrap();
//! assert_eq!(labelled.recv_timeout(Duration::from_secs(30)).unwrap(), "shop/later");
//! let later = server.get(&cms, Some("shop"), "later").unwrap();
//! assert_eq!(later["metadata"]["labels"]["example.com/seen"], "true");
//! controller.stop(); // workers and handlers joined
//! # Ok::<(), kube_informer::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly rustdoc): each feature-gated item says which feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod api;
pub mod cache;
mod civil_time;
pub mod client;
pub mod config;
pub mod controller;
mod deadline;
pub mod discovery;
mod error;
mod json;
pub mod manager;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod pod;
#[cfg(feature = "protobuf")]
#[cfg_attr(docsrs, doc(cfg(feature = "protobuf")))]
pub mod protobuf;
#[cfg(any(feature = "probes", feature = "webhook"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "probes", feature = "webhook"))))]
pub mod serve;
mod sync;
#[cfg(feature = "testing")]
pub mod testing;
mod thread_name;
#[cfg(feature = "webhook")]
pub mod webhook;
pub mod workqueue;

pub use client::{
    Api, Client, ClientConfig, DeleteParams, ListParams, Method, Patch, PatchParams, PostParams,
    WatchParams,
};
pub use error::{Error, Result};

// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
