//! `ApiServer`: a real HTTP server on `127.0.0.1` that answers like kube-apiserver, for this
//! crate's tests, the examples' demo mode, and your own controller tests.
//!
//! It keeps objects of any resource path in memory under one increasing resourceVersion and
//! serves them the way the captures of a real API server show:
//! - **list** with `limit`/`continue` over a consistent snapshot, `remainingItemCount`,
//!   and kube-apiserver's resourceVersion rules (see `read_versions.rs`, replayed against
//!   the captured table in `tests/rv_matrix.rs`): `resourceVersion=0` served whole (limit
//!   ignored); a paged list at a version, or `resourceVersionMatch=Exact`, is the state at
//!   that version rebuilt from the history (410 once compacted); `NotOlderThan` and unpaged
//!   lists at a version answer the present; a future version is 504 `Timeout`
//!   (`ResourceVersionTooLarge`, `Retry-After: 1`) after waiting up to 3 s for the server to
//!   get there, as captured (a watch from one is 200 and silent until the server gets there);
//!   `backup` and `restore` put the server's versions back, as restoring etcd does; refused combinations are 422 and 400 as
//!   the real server words them; continue tokens expire (HTTP 410 with a fresh token) once
//!   the history has moved on;
//! - **watch** from a resourceVersion inside the watch cache's window, replaying the event
//!   history; an older version gets HTTP 200 and one `ERROR` event with a 410 `Expired`
//!   Status; a watch from `0` or no version opens with the current state (closed by the
//!   `k8s.io/initial-events-end` bookmark when bookmarks are allowed); bookmarks every
//!   `bookmark_interval` and two seconds before `timeoutSeconds` runs out (none for shorter
//!   watches); label and field selectors (objects moving in or out of the selection come as
//!   ADDED/DELETED); streaming lists (`sendInitialEvents=true`) closed by the
//!   initial-events-end bookmark, or refused like etcd 3.4 does;
//! - **writes** over HTTP, as the v1.36 captures show them (see *Writes* below), and from
//!   Rust ([`ApiServer::create`], ...);
//! - **patches** by `Content-Type`: JSON patch (RFC 6902, every operation, with the real
//!   server's quirks), JSON merge patch, strategic merge patch (built-in resources only; lists
//!   merged by their merge key), and server-side apply (`application/apply-patch+yaml`:
//!   `fieldManager` required, create on a missing object, conflicts between managers as a 409
//!   listing the fields, `force=true`); every HTTP write records `metadata.managedFields`
//!   (an `Update` entry for the writer, `Apply` entries for appliers) so appliers conflict
//!   with other writers as they would on a real cluster. Which lists are keyed (and by
//!   what) is decided by field name for built-in resources (`containers` by `name`,
//!   `conditions` by `type`, ...) and by a custom resource's schema
//!   (`x-kubernetes-list-type` set / map with its keys / atomic, `x-kubernetes-map-type`);
//!   set and map-list duplicates are refused as kube-apiserver refuses them (see
//!   `list_types.rs`); a few defaults are filled in (see `defaults.rs`);
//! - **CustomResourceDefinitions** written over HTTP (create, update, patch, apply) are checked as
//!   kube-apiserver checks them (structural schemas, see `structural.rs`; a 422 listing the
//!   problems) and their resource served at once, with its schema and subresources, listed by
//!   discovery, and the CRD `NamesAccepted` and `Established` before the write is answered
//!   (so `apply_crd` and `kubectl wait` return promptly); deleting one deletes its objects
//!   (open watches get a DELETED each, then end cleanly) and its resource answers the
//!   plain-text `404 page not found` afterwards; created again, its first list is a 429
//!   `storage is (re)initializing` (see `crd_lifecycle.rs`, and `tests/crd_lifecycle.rs`
//!   for the captures it is checked against);
//! - **discovery**: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/G`, `/apis/G/V` and
//!   aggregated discovery with ETags, for the built-ins of a real server and every registered
//!   resource (see `discovery.rs`; [`ApiServer::set_aggregated_discovery`] turns v2 off);
//! - **auth**: bearer tokens, basic auth, TLS with client certificates (401 with the real
//!   Status body otherwise); `TokenReview`, `SubjectAccessReview`, `SelfSubjectReview` and
//!   service-account `TokenRequest`s answered (`reviews.rs`: who is who, and the
//!   authorisation rule, [`ApiServer::set_authorizer`]);
//! - **pod logs and evictions** (`pod_logs.rs`, `eviction.rs`): `pods/{name}/log` as the
//!   captures show it, from a container log the test writes ([`ApiServer::append_log`],
//!   [`ApiServer::terminate_container`], [`ApiServer::drop_log_streams`] for a kubelet
//!   restart), and `pods/{name}/eviction` honouring PodDisruptionBudgets; pods and nodes in
//!   one call ([`ApiServer::add_pod`], [`ApiServer::add_pod_on`], [`ApiServer::add_node`]);
//! - **faults** ([`Fault`], [`Target`]): error statuses (with `Retry-After`), connections
//!   dropped after N events or bytes, garbage lines, stalls; [`ApiServer::compact`] for
//!   expiry, [`ApiServer::disconnect_all`] for dropped connections,
//!   [`ApiServer::restart`] for a kube-apiserver restart with etcd kept (a new watch cache:
//!   older watches get 410, Exact lists still read the history), and
//!   [`ApiServer::go_down`] / [`ApiServer::come_back`] for a server that is away for a while
//!   (connections refused) and restarts on the same port with the same objects.
//!
//! The server's own helpers that read or write one object ([`ApiServer::get`],
//! [`ApiServer::create`], `update`, `patch`, `touch`, `delete`, [`ApiServer::add_pod`] and
//! the other pod and node fixtures) answer a `Result` whose error is the [`Status`] the real
//! server would send for that request over HTTP (`NotFound`, `AlreadyExists`, `Conflict`,
//! `Invalid`, ...), as [`Api`](crate::Api)'s calls do. They never panic.
//!
//! [`Status`]: crate::api::Status
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
//!
//! # In your own tests
//!
//! The module comes with the `testing` feature, off by default, so a program that depends on
//! this crate builds no test server and carries no test keys. Its certificates and private
//! keys (`src/testing/serving/certs/`) are committed and so public: for tests and demos only. Enable
//! the feature where you test, as a dev-dependency feature; cargo then turns it on for your
//! tests, examples and benches, never in your release build:
//!
//! ```toml
//! [dependencies]
//! kube-informer = "0.1"
//!
//! [dev-dependencies]
//! kube-informer = { version = "0.1", features = ["testing"] }
//! ```
//!
//! Then start an [`ApiServer`] in each test and build the client from
//! [`ApiServer::client_config`], as every example in these docs does. Tests over real
//! loopback HTTP catch what mocks hide: paging, resourceVersions, 410s, dropped connections.
//!
//! # Writes
//!
//! As kube-apiserver v1.36.2 answers them: `tests/write_matrix.rs` replays the 179 steps of
//! `tests/fixtures/semantics/write-matrix.json` over HTTP and compares every answer, warning,
//! stored object and watch event.
//!
//! - **create** (201), **update** (PUT; a `metadata.resourceVersion` and a `metadata.uid`
//!   in the body are preconditions, 409 otherwise; a custom resource cannot be updated
//!   without a resourceVersion, 422, while a built-in can), **patch** (the four types by
//!   `Content-Type`, 415 for others such as `application/json`; see `patch.rs`), **delete**
//!   and **deletecollection**.
//! - A write that changes nothing (the same PUT, patch or apply again, a `/status` write of
//!   what `/status` does not take, a main-resource write of only `status` when the status
//!   subresource exists, a `/scale` write of the current replicas) answers 200 with the
//!   object at its SAME resourceVersion and sends no watch event (Rust-side writes too).
//! - **Validation** (422 `Invalid`, a cause per problem; see `validation.rs` and
//!   `object_meta.rs`): names (a DNS-1123 subdomain of at most 253 characters; name or
//!   generateName required, a generateName checked too), label keys and values, annotation
//!   keys and total size, finalizers (qualified names; one without a domain is warned of),
//!   owner references (apiVersion, kind, name, uid; one controller), a custom resource's body
//!   `kind` (422) and `apiVersion` (400, `crd_version.rs`), a `/scale` write's replicas
//!   (>= 0), and a custom resource against its CRD's schema (`schema.rs`: types, bounds,
//!   lengths, `enum`, `required`; a `/status` write against the `status` schema, its fields
//!   named relative to `status`: `crd_status.rs`). The CRD comes from
//!   [`ApiServerBuilder::custom_resource_definition`], which also declares its scope and
//!   subresources.
//! - Custom resources are pruned as kube-apiserver prunes them (`crd-matrix.json`, group
//!   `pruning`): a field named twice keeps its last value and is warned of
//!   (`duplicate field "spec.size"`) or, under `Strict`, listed first in the 400
//!   (`duplicate_fields.rs`, every resource); `Strict` on a JSON or merge patch of a custom
//!   resource is a 422 on the field `patch` quoting the patched object; an
//!   `x-kubernetes-embedded-resource` keeps its `apiVersion`, `kind` and `metadata` (that
//!   metadata pruned to `ObjectMeta`'s fields, warned last), requires the first two and does
//!   not validate the third (`crd_embedded.rs`).
//! - **Defaults** of a custom resource's schema (`crd_defaults.rs`), as kube-apiserver fills
//!   them in while decoding: on create, update, both patches, apply, `/status` writes and
//!   dry runs, before admission webhooks and again after them; in nested objects, array
//!   items and map values, below an object default too; `null` kept on a `nullable` field,
//!   defaulted (or, without a default, dropped) on another; and on GET, LIST and WATCH of
//!   objects stored before their CRD gained a default (stored as they are until their next
//!   write). `tests/crd_matrix.rs` replays kube-apiserver's answers (`crd-matrix.json`).
//! - Options: `dryRun=All` answers as if written and changes nothing (a create answers 201
//!   with a uid and creationTimestamp but no resourceVersion; no watch event);
//!   `generateName` (the prefix cut to 58 bytes + 5 characters of the API server's
//!   alphabet, drawn again on a clash); `fieldValidation` `Strict` (400 listing every unknown field), `Warn` (the
//!   default: the fields are dropped and each gets a `Warning: 299 - "unknown field \"f\""`
//!   response header) or `Ignore` (dropped silently); a custom resource with a schema is
//!   pruned below the top level too (`unknown field "spec.bogus"`), and an apply carrying
//!   unknown fields is the real server's HTTP 500, whatever `fieldValidation` says;
//!   `fieldManager` (managed fields).
//! - `metadata.generation` for pods, the workloads and custom resources only: 1 on create,
//!   +1 when `spec` changes and when a deletion marks the object.
//! - Deletes read `DeleteOptions` from a JSON body and `gracePeriodSeconds`, `orphanDependents`,
//!   `propagationPolicy`, `dryRun` from the query. Preconditions (uid, resourceVersion) fail
//!   with the captured 409 (whose `details.kind` is the Kind). An object with finalizers, or
//!   deleted with `Foreground` / `Orphan` (finalizer `foregroundDeletion` / `orphan` added),
//!   stays with `deletionTimestamp` and `deletionGracePeriodSeconds: 0` and is answered as
//!   it is (a MODIFIED event; 202 instead of 200 when `orphanDependents: false` was given).
//!   Deleting it again answers the same object unchanged, unless a propagation policy
//!   changes the garbage collector's finalizers (`Background` drops `foregroundDeletion` and
//!   `orphan`; an object left without finalizers is deleted at once). A pod with
//!   `spec.nodeName` and no grace given stays Terminating with its grace period
//!   (`spec.terminationGracePeriodSeconds`, default 30); with grace 0 (also when already
//!   Terminating), or unscheduled, a pod is marked (MODIFIED) then removed (DELETED), and the
//!   answer is the pod as deleted.
//!   Anything else is removed (DELETED) and answered with a `Status` of `Success` naming it.
//!   An update or patch that removes the last finalizer of an object being deleted (with no
//!   grace period left: `deletionGracePeriodSeconds: 0`) deletes it (one DELETED event) and
//!   answers the object as that write left it at its PREVIOUS resourceVersion; one that adds
//!   a finalizer to it is refused (422, as the real server).
//! - `deletecollection` (DELETE on a collection, label and field selectors): every selected
//!   object deleted as above; the answer is a `<Kind>List` of them as they were, at the
//!   version after the deletions.
//! - Subresources ([`Subresources`], declared with [`ApiServerBuilder::subresources`];
//!   defaults follow the real built-ins, none for custom resources): `status` (GET: the
//!   whole object; PUT/PATCH change only `status`, and of the metadata a built-in's take the
//!   annotations (not the labels; pods: both), a custom resource's nothing; writes to the
//!   main resource keep the stored `status`) and `scale` (an `autoscaling/v1` `Scale` from
//!   the object's replicas and selector; PUT/PATCH/apply set the object's replicas, with the
//!   Scale's managed fields as the real server keeps them: see `scale.rs`).
//!   Other subresources are 404.
//! - Events (`events.rs`): an `events.k8s.io/v1` Event written without `eventTime` is
//!   refused with the captured 422; written Events get the fields the real server adds
//!   (`deprecatedSource: {}` and the null `deprecated*Timestamp`s; `core/v1`: `eventTime:
//!   null` and empty `reportingComponent` / `reportingInstance`).
//!
//! Simplifications (what a real server does that this one does not):
//! - Built-in or custom is decided by the group ([`is_builtin_group`]), not by discovery.
//! - Known fields (for `fieldValidation`): `ObjectMeta`'s fields for every resource, plus a
//!   table of top-level fields for ConfigMap, Secret, Pod, the workloads, Service, Node,
//!   Namespace, Lease and both Events; a custom resource's CRD schema, else `spec` and
//!   `status` unless [`ApiServerBuilder::schema_fields`] declares others; other built-ins
//!   are not checked, and no built-in below its top level. Unknown fields are reported in
//!   alphabetical order (the real server: in the order of the body; the captures agree).
//! - The built-in types are not modelled: only the defaults of `defaults.rs` (containers,
//!   pod specs, Deployments) are filled in, and a built-in object's own fields are not
//!   validated (only its metadata and, through `/scale`, its replicas): a Deployment whose
//!   selector does not match its template is accepted. How often an update reports a bad
//!   label (four causes) is taken from the capture of an apply.
//! - Custom resource CEL rules (`x-kubernetes-validations`, see `schemas/crd_cel.rs`) run on an
//!   interpreter of our own (`schemas/cel/`) without static type checking: a mistyped rule is
//!   refused when it runs (`no such overload`), not when its CRD is written; its cost units
//!   are its own; the `format`, `url`, `ip`/`cidr` and `semver` libraries are
//!   not implemented.
//! - Custom resource defaults: a CRD whose defaults do not validate against its own schema
//!   is accepted (kube-apiserver refuses it); validating webhooks see an object as the
//!   mutating webhooks left it, not defaulted again in between; reads default but do not
//!   prune (a field a later schema no longer declares shows until the next write); Rust-side
//!   writes are stored as given (their reads show the defaults).
//! - No built-in admission: nothing of what admission plugins add (a pod's service account,
//!   tolerations, priority) and no quota or policy checks (admission webhooks are called:
//!   see *Webhooks*).
//! - An HTTP create of a resource with the status subresource starts its status afresh
//!   only for custom resources (dropped), pods (`Pending` and the QoS class) and Deployments
//!   (empty); other kinds keep the `status` they are given.
//! - No garbage collector: `foregroundDeletion` and `orphan` finalizers stay until an update
//!   removes them; no kubelet: a Terminating pod stays until deleted with grace 0. A second
//!   delete of an object being deleted changes nothing (the real server may shorten a pod's
//!   grace period; here only grace 0 does, removing it).
//! - The `Scale` view: `spec.replicas` left out when 0 (`omitempty`), `status.replicas` 0
//!   when the object has none, the selector made of `matchLabels` only (`matchExpressions`
//!   are left out).
//! - Rust-side writes ([`ApiServer::create`], [`ApiServer::update`], [`ApiServer::patch`])
//!   set the whole object as given (status included, no field validation, no managed
//!   fields), like a test fixture; [`ApiServer::delete`] removes an object at once with one
//!   DELETED event, pods too (finalizers still hold the object).
//! - `events.k8s.io/v1` and `core/v1` Events are stored apart: each API lists only the
//!   Events written through it (the real server serves one set through both); the eventTime
//!   check is not made for a server-side apply.
//! - An allowed eviction deletes the pod at once (grace period 0: the stand-in kubelet is
//!   quick, and no `DisruptionTarget` condition is added), so a drain never waits on a
//!   Terminating pod here. A PodDisruptionBudget never computed (no
//!   `status.observedGeneration`) is computed on the spot, as the disruption controller
//!   would have; one computed is used as stored, as kube-apiserver does (see `eviction.rs`).
//! - Namespaces are not objects that must exist (see `patch.rs` for apply's exception).

//!
//! # Webhooks
//!
//! Admission webhooks are called as kube-apiserver calls them (`webhooks.rs`), so a test can
//! run a webhook end to end: create `admissionregistration.k8s.io/v1`
//! `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s through the
//! server's API, then write over HTTP. On a create, update, patch or delete, every webhook
//! whose `rules` match (operations, apiGroups, apiVersions, `resources` with `*`,
//! `pods/status`, `*/*` as kube-apiserver reads them, `scope`), whose `namespaceSelector`
//! matches the namespace's labels (a Namespace object's, if there is one, plus
//! `kubernetes.io/metadata.name`) and whose `objectSelector` matches the object's or the
//! old object's labels is sent an `AdmissionReview` over HTTPS trusting only its
//! `caBundle`, within its `timeoutSeconds` (default 10, at most 30): mutating webhooks
//! first (configurations by name, webhooks in order), each one's JSON patch applied before
//! the next, then the validating ones on the result. A denial is answered as kube-apiserver
//! words it (`admission webhook "X" denied the request: ...`, its code, at least 400), the
//! webhooks' warnings become `Warning` headers, a webhook that cannot be called (refused,
//! timed out: `context deadline exceeded`, an untrusted certificate, a non-200 answer) or
//! whose answer kube-apiserver refuses (another `uid`, not an `admission.k8s.io/v1`
//! `AdmissionReview`, a `patchType` without a `patch` or the other way round, a patch from a
//! validating webhook) is a 500 `InternalError` `failed calling webhook "X": received
//! invalid webhook response: ...` in its words under `failurePolicy: Fail` (the default)
//! and skipped without a warning under `Ignore`; a denial's Status keeps only the code (at
//! least 400) and reason the webhook gave. A review carries what kube-apiserver sends:
//! `CreateOptions` for a create and an apply that creates, `UpdateOptions` for an update,
//! any patch and an apply that updates (with `fieldManager` when given), `DeleteOptions`
//! with the delete's options, the caller as `userInfo`, `oldObject` on updates and deletes;
//! a `deletecollection` is one review per object, naming none. A dry run meeting a webhook
//! whose `sideEffects` is not
//! `None`/`NoneOnDryRun` is a 400 `does not support dry run`. `clientConfig.url` must be
//! `https`; a `clientConfig.service` is called at the URL registered with
//! [`ApiServer::webhook_service`] plus its `path`.
//!
//! A CRD given with `spec.conversion.strategy: Webhook`
//! ([`ApiServerBuilder::custom_resource_definition`]) is stored in its storage version and
//! served in its other versions through its conversion webhook (`conversion.rs`), one
//! object per review: get, list (served from objects converted once, paged and selected
//! on them; 429 `storage is (re)initializing` while one cannot be), create and update (the
//! body converted to the storage version, the answer back), JSON and merge patches,
//! delete, and watch (each event's object converted once per resourceVersion for every
//! watcher; bookmarks as they are). A failed conversion is a 500 `conversion
//! webhook for <group/version>, Kind=<Kind> failed: ...` (no reason); a converter that
//! changes the kind, name, namespace or uid is refused (`returned invalid object: must have
//! the same name: a != b`), one that changes labels or annotations is taken.
//!
//! What the webhook calls simplify:
//! - `matchPolicy` is always `Exact` (a rule matches the version the request was made in,
//!   never an equivalent one); `matchConditions` (CEL) are not evaluated (the webhook is
//!   called as if they held); `reinvocationPolicy: IfNeeded` is not honoured (each mutating
//!   webhook is called once).
//! - Not sent to webhooks: `/scale` writes, Rust-side writes ([`ApiServer::create`], ...),
//!   and writes of the webhook configurations.
//! - Validating webhooks see the object as the mutating ones left it, before the server's
//!   defaults, generated name and system fields (on a create no `uid` or
//!   `creationTimestamp`; the writer's managed fields entry is added after admission);
//!   they are called one after the other (kube-apiserver: in parallel) and the first denial
//!   answers. An apply a mutating webhook changed is stored with the apply's managed fields
//!   (the webhook's change attributed to no manager, as on the real server).
//! - A service's certificate is checked against the host of its registered URL, not
//!   `<service>.<namespace>.svc`. `userInfo` is the caller a token names; a caller without
//!   credentials (an open server, a client certificate) is `kube-admin`.
//! - A write in a converted version is admitted in the storage version (its rules match
//!   that version).
//! - Conversion: no server-side apply or `/scale` in a non-storage version (405 saying
//!   so; JSON and merge patches and `/status` are converted); a
//!   watch's selector there sees the stored labels (a list's sees the converted ones); discovery lists the storage version only; the conversion webhook's
//!   timeout is 30 s (kube-apiserver's). A create in another version converts the body as
//!   sent (the real server converts it after giving it a uid, creationTimestamp and
//!   generation), and a written object is converted at the next list or watch event that
//!   needs it, not at once.

// The test server passes `Status` bodies around by value: they are what it answers with,
// and no hot path of the library goes through here.
#![allow(clippy::result_large_err)]

mod admission;
mod kubelet;
mod schemas;
mod serving;
mod storage;
mod writing;

// The rooms' public modules, at the paths they had before the rooms.
#[cfg(feature = "ws")]
pub use kubelet::{container_files, runtime};
// Used by the rest of the crate's unit tests (`api::crd`, `webhook::json_diff`) at these paths.
pub use admission::reviews::API_AUDIENCE;
#[cfg(feature = "ws")]
pub use kubelet::container_files::ContainerFiles;
#[cfg(feature = "ws")]
pub use kubelet::runtime::{CommandOutput, ExecInput, Runtime};
#[cfg(all(test, feature = "crd"))]
pub(crate) use schemas::{crd, structural};
pub use serving::faults::{Fault, Target};
pub use serving::server::{ApiServer, ApiServerBuilder, Backup, RequestHeaders};
pub use serving::tls::{
    ADMIN_CERT_PEM, ADMIN_KEY_PEM, CA_PEM, OTHER_CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM,
    STRANGER_CERT_PEM, STRANGER_KEY_PEM,
};
pub use storage::resources::{is_builtin_group, ScaleSubresource, Subresources};
#[cfg(all(test, feature = "webhook"))]
pub(crate) use writing::json_patch;
