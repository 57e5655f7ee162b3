//! `ApiServer`: a real HTTP server on `127.0.0.1` that answers like kube-apiserver, for this
//! crate's tests, the examples' demo mode, and your own controller tests.
//!
//! It keeps objects of any resource path in memory under one increasing resourceVersion and
//! serves them the way the captures of a real API server show:
//! - **list** with `limit`/`continue` over a consistent snapshot, `remainingItemCount`,
//!   `resourceVersion=0` served whole (limit ignored), `resourceVersionMatch=Exact`, and
//!   continue tokens that expire (HTTP 410 with a fresh token) once the history has moved on;
//! - **watch** from a resourceVersion, replaying the bounded event history; a version older
//!   than the history gets HTTP 200 and one `ERROR` event with a 410 `Expired` Status;
//!   bookmarks on request; `timeoutSeconds`; label and field selectors (objects moving in or
//!   out of the selection come as ADDED/DELETED); streaming lists (`sendInitialEvents=true`)
//!   closed by the `k8s.io/initial-events-end` bookmark, or refused like etcd 3.4 does;
//! - **writes** over HTTP (POST, PUT with resourceVersion preconditions, merge PATCH, DELETE)
//!   and from Rust ([`ApiServer::create`], ...);
//! - **patches** by `Content-Type`: JSON patch (RFC 6902, every operation, with the real
//!   server's quirks), JSON merge patch, strategic merge patch (built-in resources only; lists
//!   merged by their merge key), and server-side apply (`application/apply-patch+yaml`:
//!   `fieldManager` required, create on a missing object, conflicts between managers as a 409
//!   listing the fields, `force=true`); every HTTP write records `metadata.managedFields`
//!   (an `Update` entry for the writer, `Apply` entries for appliers) so appliers conflict
//!   with other writers as they would on a real cluster. The test server has no OpenAPI
//!   schema: which lists are keyed (and by what) is decided by field name for built-in
//!   resources (`containers` by `name`, `conditions` by `type`, ...) and every list of a
//!   custom resource is atomic; only container and pod-condition defaults are filled in;
//!   values are not validated;
//! - **auth**: bearer tokens, basic auth, TLS with client certificates (401 with the real
//!   Status body otherwise);
//! - **faults** ([`Fault`], [`Target`]): error statuses (with `Retry-After`), connections
//!   dropped after N events or bytes, garbage lines, stalls; [`ApiServer::compact`] for
//!   expiry, [`ApiServer::disconnect_all`] for dropped connections, and
//!   [`ApiServer::go_down`] / [`ApiServer::come_back`] for a server that is away for a while
//!   (connections refused) and restarts on the same port with the same objects.
//!
//! ```
//! use kube_informer::api::{ApiResource, DynamicObject, WatchEvent};
//! use kube_informer::testing::{ApiServer, Fault, Target};
//! use kube_informer::{Api, Client, WatchParams};
//!
//! let server = ApiServer::start();
//! let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
//! let api: Api<DynamicObject> =
//!     Api::namespaced_with(Client::new(server.client_config()).unwrap(), "default", &cms);
//!
//! let rv = server.resource_version().to_string();
//! server.create(&cms, serde_json::json!({"metadata": {"name": "a"}})).unwrap();
//! server.inject(Target::Watch, Fault::CloseAfterEvents(1));
//! let events: Vec<_> = api.watch(&WatchParams::from_version(&rv)).unwrap().collect();
//! assert!(matches!(&events[0], Ok(WatchEvent::Added(o)) if o.metadata.name() == "a"));
//! ```

// The test server passes `Status` bodies around by value: they are what it answers with,
// and no hot path of the library goes through here.
#![allow(clippy::result_large_err)]

mod apply;
mod defaults;
mod faults;
mod handlers;
mod http;
mod json_patch;
mod managed_fields;
mod patch;
mod resources;
mod scale;
mod server;
mod store;
mod strategic_merge;
mod tls;
mod writes;

pub use faults::{Fault, Target};
pub use resources::{is_builtin_group, ScaleSubresource, Subresources};
pub use server::{ApiServer, ApiServerBuilder};
pub use tls::{
    ADMIN_CERT_PEM, ADMIN_KEY_PEM, CA_PEM, OTHER_CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM,
    STRANGER_CERT_PEM, STRANGER_KEY_PEM,
};
