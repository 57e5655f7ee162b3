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
//!   the objects it owns and to other resources too), a finalizer helper, and leader
//!   election on Leases so that one replica of many acts;
//! - `testing` (with the `testing` feature, off by default): an API server on 127.0.0.1 for
//!   tests and demos.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use kube_informer::api::{ApiResource, DynamicObject};
//! use kube_informer::cache::{HandlerFns, SharedInformerFactory};
//! use kube_informer::testing::ApiServer;
//! use kube_informer::Client;
//!
//! // An API server on 127.0.0.1 that answers like kube-apiserver; with a real cluster use
//! // `kube_informer::config::Config::infer()?.client()?` instead.
//! let server = ApiServer::start();
//! let pods = ApiResource::new("", "v1", "Pod", "pods", true);
//! server.create(&pods, serde_json::json!({"metadata": {"name": "web-0", "namespace": "lab"}})).unwrap();
//!
//! let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
//! let informer = factory.dynamic_informer(&pods);
//! let (tx, rx) = std::sync::mpsc::channel();
//! informer
//!     .add_event_handler(HandlerFns::new().on_add(move |pod: Arc<DynamicObject>, _initial| {
//!         tx.send(pod.metadata.key()).unwrap();
//!     }))
//!     .unwrap();
//! factory.start().unwrap();
//! assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/web-0");
//! assert!(informer.lister().get(Some("lab"), "web-0").is_some());
//! factory.shutdown(); // every thread joined
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly rustdoc): each feature-gated item says which feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod api;
pub mod cache;
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
mod sync;
#[cfg(feature = "testing")]
pub mod testing;
mod thread_name;
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
