//! # kube-informer
//!
//! Kubernetes informers for programs without an async runtime: a blocking API client with
//! paged lists and chunked watch streams, and (in later modules) the client-go cache
//! machinery built on OS threads.
//!
//! ```
//! use kube_informer::api::{ApiResource, DynamicObject};
//! use kube_informer::testing::ApiServer;
//! use kube_informer::{Api, Client, ListParams};
//!
//! // An API server on 127.0.0.1 that answers like kube-apiserver (use a real cluster's
//! // ClientConfig instead in production).
//! let server = ApiServer::start();
//! let pods = ApiResource::new("", "v1", "Pod", "pods", true);
//! server.create(&pods, serde_json::json!({"metadata": {"name": "web-0", "namespace": "lab"}}));
//!
//! let client = Client::new(server.client_config()).unwrap();
//! let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &pods);
//! let list = api.list_all(&ListParams::default()).unwrap();
//! assert_eq!(list.items[0].metadata.name(), "web-0");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod cache;
pub mod client;
pub mod config;
pub mod controller;
mod error;
#[cfg(feature = "testing")]
pub mod testing;
pub mod workqueue;

pub use client::{Api, Client, ClientConfig, ListParams, WatchParams};
pub use error::{Error, Result};

// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
