//! `Api<K>`: the requests for one resource, in one namespace or across all of them.

use std::collections::HashSet;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use ureq::http::Method;

use super::client::{describe, is_protobuf, Bound, Client, Outgoing};
use super::deleted::DeleteResponse;
use super::params::{ListParams, Query, WatchParams};
use super::patch::Patch;
use super::request::{Request, Response};
use super::scale::Scale;
use super::watch::WatchStream;
use super::write_params::{DeleteParams, PatchParams, PostParams};
use crate::api::url_encoding::path_segment;
use crate::api::{accept, list_accept, write_accept};
use crate::api::{ApiResource, Meta, Object, ObjectList, Resource, Status};
use crate::error::{Error, Result};
use crate::json::known_ends::{with_known_ends, KnownEnds};

/// Page size the pager uses when none is given (client-go's default).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// At most this many items are reserved ahead from a list's `remainingItemCount`.
const MAX_RESERVED_ITEMS: usize = 10_000;

/// Requests for the objects of one resource.
///
/// ```no_run
/// # use kube_informer::{Api, Client, ClientConfig, ListParams, api::DynamicObject, api::ApiResource};
/// # fn main() -> kube_informer::Result<()> {
/// let client = Client::new(ClientConfig::new("https://127.0.0.1:6443"))?;
/// let pods = ApiResource::new("", "v1", "Pod", "pods", true);
/// let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &pods);
/// let all = api.list_all(&ListParams::default().labels("app=web"))?;
/// println!("{} pods at resourceVersion {:?}", all.items.len(), all.metadata.resource_version);
/// # Ok(()) }
/// ```
pub struct Api<K> {
    client: Client,
    resource: ApiResource,
    namespace: Option<String>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource> Api<K> {
    /// All objects, across namespaces for a namespaced kind.
    pub fn all(client: Client) -> Self {
        Self::all_with(client, &ApiResource::of::<K>())
    }

    /// Objects of one namespace.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Self::namespaced_with(client, namespace, &ApiResource::of::<K>())
    }

    /// Objects of the client's default namespace.
    pub fn default_namespaced(client: Client) -> Self {
        let ns = client.default_namespace().to_owned();
        Self::namespaced(client, &ns)
    }
}

impl<K: Object> Api<K> {
    /// All objects of a resource known at run time.
    pub fn all_with(client: Client, resource: &ApiResource) -> Self {
        Api {
            client,
            resource: resource.clone(),
            namespace: None,
            _kind: PhantomData,
        }
    }

    /// Objects of one namespace of a resource known at run time.
    pub fn namespaced_with(client: Client, namespace: &str, resource: &ApiResource) -> Self {
        Api {
            client,
            resource: resource.clone(),
            namespace: resource.namespaced.then(|| namespace.to_owned()),
            _kind: PhantomData,
        }
    }

    /// The resource these requests are for.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace, or `None` for all namespaces / cluster-scoped.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same resource, namespace and client, reading metadata only: every get, list,
    /// paged list and watch of the returned `Api` asks the server for
    /// [`PartialObjectMetadata`](crate::api::PartialObjectMetadata).
    ///
    /// ```
    /// # use kube_informer::{Api, Client, ListParams, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    /// # server.create(&pods, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    /// #     "spec": {"containers": [{"name": "app", "image": "nginx"}]}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &pods);
    /// let names: Vec<String> = api.metadata().list_all(&ListParams::default())?
    ///     .items.into_iter().map(|o| o.metadata.key()).collect();
    /// assert_eq!(names, ["lab/web"]);
    /// assert!(api.get_metadata("web")?.metadata.uid.is_some());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn metadata(&self) -> Api<crate::api::PartialObjectMetadata> {
        Api {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _kind: PhantomData,
        }
    }

    /// One object's metadata only; see [`metadata`](Self::metadata).
    pub fn get_metadata(&self, name: &str) -> Result<crate::api::PartialObjectMetadata> {
        self.metadata().get(name)
    }

    /// The same requests on a client whose requests give up when `cancel` fires (see
    /// [`Client::with_cancel`]).
    pub fn with_cancel(mut self, cancel: super::Cancel) -> Self {
        self.client = self.client.with_cancel(cancel);
        self
    }

    /// The collection's path (the namespace percent-encoded by `url_path`).
    fn collection(&self) -> String {
        self.resource.url_path(self.namespace.as_deref())
    }

    fn item(&self, name: &str) -> Result<String> {
        if name.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{}: an object name is required",
                self.resource.plural
            )));
        }
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidInput(format!(
                "{} {name:?}: a namespaced resource needs a namespace for this request",
                self.resource.plural
            )));
        }
        let mut path = self.collection();
        path.push('/');
        path_segment(name, &mut path);
        Ok(path)
    }

    /// The path of one object's subresource.
    fn sub(&self, name: &str, subresource: &str) -> Result<String> {
        if subresource.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{} {name:?}: a subresource name is required",
                self.resource.plural
            )));
        }
        let mut path = self.item(name)?;
        path.push('/');
        path_segment(subresource, &mut path);
        Ok(path)
    }

    /// Reads one object.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// assert_eq!(api.get("settings")?.metadata.name(), "settings");
    /// assert!(api.get("missing").unwrap_err().is_not_found());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Result<K> {
        let request = self.client.request(Method::GET, &self.item(name)?);
        answer(request.accept(accept::<K>()).send()?)
    }

    /// Sends a write (or a subresource read) answered by one `K`, accepting protobuf first
    /// for built-in types with the `protobuf` feature, and decodes the answer as its
    /// `Content-Type` says.
    fn send_object(&self, request: Request) -> Result<K> {
        answer(request.accept(write_accept::<K>()).send()?)
    }

    /// Reads one page (or, without a limit, the whole list). Not bounded by the client's
    /// request timeout, however long the list takes to arrive; each read is bounded by
    /// [`ClientConfig::list_read_timeout`](super::ClientConfig::list_read_timeout).
    pub fn list(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let path = self.list_path(params);
        let (raw, protobuf) = self.client.list_raw_into(
            &path,
            params.continue_token.is_some(),
            list_accept::<K>(),
            Vec::new(),
        )?;
        CheckedPage::unchecked(raw, protobuf).decode(&path).0
    }

    /// The path and query of a list call.
    pub(crate) fn list_path(&self, params: &ListParams) -> String {
        let mut q = Query::default();
        params.write_query(&mut q);
        format!("{}{}", self.collection(), q.finish())
    }

    /// Pages of a list, `limit` (default 500) items at a time. See [`Pages`].
    ///
    /// Mind kube-apiserver's rules for versions: a paged list at a `resource_version`
    /// without `resource_version_match` is an *Exact* read (the state at that version, 410
    /// once etcd compacted it), not "at least as fresh"; ask for `NotOlderThan` by name for
    /// that. The version goes with the first page only (the continue token carries it), and
    /// if a continue token expires the rest is one consistent list of the present (marked
    /// [`Page::restarted`]), as client-go's pager does.
    pub fn pages(&self, params: &ListParams) -> Pages<K> {
        let mut params = params.clone();
        params.limit.get_or_insert(DEFAULT_PAGE_SIZE);
        Pages {
            api: self.clone(),
            params,
            done: false,
            restarted: false,
            in_flight: Default::default(),
            spare: Vec::new(),
        }
    }

    /// The whole list, read page by page, as one `ObjectList` whose metadata is the last
    /// page's. An expired continue token restarts it as one full, consistent list of the
    /// present (items are not mixed from two snapshots). A `resource_version` is read as
    /// [`pages`](Self::pages) says.
    pub fn list_all(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let mut items = Vec::new();
        let mut last = None;
        for page in self.pages(params) {
            let page = page?;
            if page.restarted {
                items.clear();
            }
            let mut list = page.list;
            if items.is_empty() {
                // The server's count is a hint, never trusted beyond a sane bound: a broken
                // or hostile server must not make the client allocate (or overflow) at will.
                let more = list.metadata.remaining_item_count.unwrap_or(0).max(0);
                let more = usize::try_from(more).unwrap_or(usize::MAX);
                items.reserve(
                    list.items
                        .len()
                        .saturating_add(more.min(MAX_RESERVED_ITEMS)),
                );
            }
            items.append(&mut list.items);
            last = Some(list);
        }
        let mut list = last.expect("a pager yields at least one page or an error");
        list.metadata.continue_token = None;
        list.metadata.remaining_item_count = None;
        list.items = items;
        Ok(list)
    }

    /// The items of a paged list one by one. If a continue token expires part way, the rest
    /// comes from one full list, skipping objects already yielded (by namespace/name).
    pub fn list_items(&self, params: &ListParams) -> impl Iterator<Item = Result<K>> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut pages = self.pages(params);
        let mut current = Vec::new().into_iter();
        let mut failed = false;
        std::iter::from_fn(move || loop {
            if let Some(item) = current.next() {
                let item: K = item;
                if !seen.insert(item.metadata().key()) {
                    continue;
                }
                return Some(Ok(item));
            }
            if failed {
                return None;
            }
            match pages.next()? {
                Ok(page) => current = page.list.items.into_iter(),
                Err(e) => {
                    failed = true;
                    return Some(Err(e));
                }
            }
        })
    }

    /// Starts a watch. Events come from the returned stream as they arrive.
    pub fn watch(&self, params: &WatchParams) -> Result<WatchStream<K>> {
        self.watch_with_idle_timeout(params, None)
    }

    /// Starts a watch whose connection counts as dead after `idle` without a byte from the
    /// server (besides the server-side timeout plus the client's margin). Meant for watches
    /// with bookmarks, which hear from the server about once a minute even when nothing
    /// changes.
    pub fn watch_with_idle_timeout(
        &self,
        params: &WatchParams,
        idle: Option<std::time::Duration>,
    ) -> Result<WatchStream<K>> {
        let mut q = Query::default();
        params.write_query(&mut q);
        let path = format!("{}{}", self.collection(), q.finish());
        let request = describe(&Method::GET, &path);
        let agent = self
            .client
            .watch_agent(params.timeout_seconds, idle, &request)?;
        // Registered before connecting: cancelling ends the wait for the headers too.
        let attached = self.client.attach_agent(&agent, &request)?;
        let mut out = Outgoing::get(&path, Bound::Agent);
        out.accept = accept::<K>();
        let res = self.client.send(&agent, &out)?;
        let framed = is_protobuf(res.headers());
        let reader = res.into_body().into_reader();
        Ok(WatchStream::new(
            reader,
            request,
            agent,
            attached,
            self.client.cancel_token().cloned(),
            framed,
        ))
    }

    /// A request builder on `path` with this Api's client.
    fn request(&self, method: Method, path: &str) -> Request {
        self.client.request(method, path)
    }

    /// A write of `body` as JSON.
    fn write<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: Query,
        body: &B,
    ) -> Request {
        self.request(method, &format!("{path}{}", query.finish()))
            .json(body)
    }

    /// A create or update of `body` answered by one `K`: in protobuf when
    /// [`protobuf_body`](super::protobuf_body) says it can go so exactly (feature
    /// `protobuf`), otherwise (and after a 415 to the protobuf) in JSON.
    fn write_object<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        params: &PostParams,
        body: &B,
    ) -> Result<K> {
        let mut q = Query::default();
        params.write_query(&mut q);
        let path = format!("{path}{}", q.finish());
        #[cfg(feature = "protobuf")]
        if let Some(bytes) =
            super::protobuf_body::encode::<K, B>(&self.client, &self.resource, params, body)
        {
            let request = self
                .request(method.clone(), &path)
                .content_type(crate::protobuf::CONTENT_TYPE)
                .body(bytes);
            match self.send_object(request) {
                // 415 Unsupported Media Type: nothing was written; the same write in JSON,
                // once, and JSON for this type from now on.
                Err(e) if e.code() == Some(415) => {
                    log::debug!("{e}; sending the write again as JSON");
                    super::protobuf_body::refused(&self.client, &self.resource);
                }
                other => return other,
            }
        }
        self.send_object(self.request(method, &path).json(body))
    }

    /// A patch: its content type, its options, and apply's field manager checked first.
    fn patch_at<P: Serialize>(
        &self,
        path: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Request> {
        if patch.is_apply() && params.field_manager.as_deref().unwrap_or("").is_empty() {
            // The server would answer 422 (fieldManager Required).
            return Err(Error::InvalidInput(format!(
                "PATCH {path}: a server-side apply needs a field manager (PatchParams::apply(\"name\"))"
            )));
        }
        let body = patch
            .to_body()
            .map_err(|e| Error::InvalidInput(format!("PATCH {path}: encoding the patch: {e}")))?;
        let mut q = Query::default();
        params.write_query(&mut q);
        Ok(self
            .request(Method::PATCH, &format!("{path}{}", q.finish()))
            .content_type(patch.content_type())
            .body(body))
    }

    /// Creates an object (in this Api's namespace); returns it as stored (or, with
    /// `dry_run`, as it would be). With `metadata.generateName` and no `name`, the server
    /// picks the name (`cm-gen-` + 5 random characters).
    ///
    /// The body is JSON, or (feature `protobuf`) protobuf for a built-in `K` when it carries
    /// exactly what the JSON would: see
    /// [`ClientConfig::protobuf_bodies`](super::ClientConfig::protobuf_bodies), which also
    /// turns it off. The same holds for [`replace`](Self::replace) and
    /// [`replace_status`](Self::replace_status).
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::PostParams, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// let cm = api.create(&PostParams::default(), &serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "settings"}, "data": {"color": "blue"}}))?;
    /// assert_eq!(cm.metadata.name(), "settings");
    /// assert!(api.create(&PostParams::default(), &cm).unwrap_err().is_already_exists());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn create<B: Serialize + ?Sized>(&self, params: &PostParams, object: &B) -> Result<K> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidInput(format!(
                "create {}: a namespaced resource needs a namespace",
                self.resource.plural
            )));
        }
        self.write_object(Method::POST, &self.collection(), params, object)
    }

    /// Replaces an object; with a `metadata.resourceVersion` the write fails with 409 if the
    /// object changed since (see [`retry_on_conflict`](super::retry_on_conflict)).
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::PostParams, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// let mut cm = serde_json::to_value(api.get("settings")?).unwrap();
    /// cm["data"] = serde_json::json!({"color": "green"});
    /// api.replace("settings", &PostParams::default(), &cm)?;
    /// // The same write again carries a resourceVersion that is no longer current.
    /// assert!(api.replace("settings", &PostParams::default(), &cm).unwrap_err().is_conflict());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn replace<B: Serialize + ?Sized>(
        &self,
        name: &str,
        params: &PostParams,
        object: &B,
    ) -> Result<K> {
        self.write_object(Method::PUT, &self.item(name)?, params, object)
    }

    /// Patches an object with any kind of [`Patch`] (see its docs for which kind when). A
    /// [`Patch::Apply`] without a field manager fails with [`Error::InvalidInput`] before any
    /// request is made.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::{Patch, PatchParams}, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// let patch = Patch::Merge(serde_json::json!({"metadata": {"labels": {"tier": "web"}}}));
    /// let cm = api.patch("settings", &PatchParams::default(), &patch)?;
    /// assert_eq!(cm.metadata.label("tier"), Some("web"));
    /// // Apply needs a field manager: refused before sending.
    /// let apply = Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    /// assert!(api.patch("settings", &PatchParams::default(), &apply).is_err());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    ///
    /// Server-side apply, a conflict between managers, and the takeover:
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::{Patch, PatchParams}, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// let cm = |color: &str| serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "settings"}, "data": {"color": color}});
    /// // Creates the object; alice now owns data.color.
    /// api.patch("settings", &PatchParams::apply("alice"), &Patch::Apply(cm("red")))?;
    /// let err = api.patch("settings", &PatchParams::apply("bob"), &Patch::Apply(cm("green"))).unwrap_err();
    /// assert!(err.is_conflict());
    /// let conflicts = err.status().unwrap().field_manager_conflicts();
    /// assert_eq!((conflicts[0].field.as_str(), conflicts[0].manager()), (".data.color", Some("alice")));
    /// // Take it over.
    /// api.patch("settings", &PatchParams::apply("bob").force(), &Patch::Apply(cm("green")))?;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn patch<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.send_object(self.patch_at(&self.item(name)?, params, patch)?)
    }

    /// Deletes an object. The answer is the object when it is still being deleted (or, for
    /// a pod deleted with grace 0, its last state), or a `Status` when it is gone: see
    /// [`DeleteResponse`]. Options (propagation, preconditions, grace period, dry run) go in
    /// a `DeleteOptions` body; with none, no body is sent.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::DeleteParams, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # server.create(&cms, serde_json::json!({"metadata": {"name": "settings", "namespace": "lab"}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// api.delete("settings", &DeleteParams::default())?;
    /// assert!(api.get("settings").unwrap_err().is_not_found());
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn delete(&self, name: &str, params: &DeleteParams) -> Result<DeleteResponse<K>> {
        let path = self.item(name)?;
        let mut req = self
            .request(Method::DELETE, &path)
            .accept(write_accept::<K>());
        if let Some(body) = params.body() {
            req = req.body(body);
        }
        let res = req.send()?;
        #[cfg(feature = "protobuf")]
        if is_protobuf(res.headers()) {
            return match crate::api::protobuf_answers::object_or_status::<K>(res.body()) {
                Ok(Ok(object)) => Ok(DeleteResponse::Object(object)),
                Ok(Err(status)) => Ok(DeleteResponse::Status(status)),
                Err(message) => Err(Error::Decode {
                    request: res.request().to_owned(),
                    message,
                }),
            };
        }
        DeleteResponse::decode(res.request(), res.body())
    }

    fn delete_at<T: DeserializeOwned>(
        &self,
        path: String,
        params: &DeleteParams,
    ) -> Result<DeleteResponse<T>> {
        let mut req = self.request(Method::DELETE, &path);
        if let Some(body) = params.body() {
            req = req.body(body);
        }
        let res = req.send()?;
        DeleteResponse::decode(res.request(), res.body())
    }

    /// Deletes every object of this Api's namespace (or every one, cluster-scoped) that the
    /// list parameters select (their label and field selectors). The answer is the list of
    /// the deleted objects as they were before deletion, or a `Status`.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, ListParams, client::DeleteParams, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// # for (n, b) in [("a", "old"), ("b", "new")] {
    /// #     server.create(&cms, serde_json::json!({"metadata": {"name": n, "namespace": "lab", "labels": {"batch": b}}})).unwrap();
    /// # }
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &cms);
    /// let gone = api.delete_collection(&DeleteParams::default(), &ListParams::default().labels("batch=old"))?;
    /// let list = gone.object().expect("the deleted objects");
    /// assert_eq!(list.items[0].metadata.name(), "a");
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn delete_collection(
        &self,
        params: &DeleteParams,
        list: &ListParams,
    ) -> Result<DeleteResponse<ObjectList<K>>> {
        let mut q = Query::default();
        q.opt("labelSelector", list.label_selector.as_deref());
        q.opt("fieldSelector", list.field_selector.as_deref());
        let path = format!("{}{}", self.collection(), q.finish());
        self.delete_at(path, params)
    }

    /// Reads an object through its `status` subresource (the server answers with the whole
    /// object).
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::{Patch, PatchParams, PostParams}, api::{ApiResource, DynamicObject}};
    /// # use kube_informer::testing::{ApiServer, Subresources};
    /// let widgets = ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true);
    /// // A custom resource with the status subresource on (as its CRD would declare).
    /// let server = ApiServer::builder().subresources(&widgets, Subresources::none().with_status()).start();
    /// # server.create(&widgets, serde_json::json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
    /// #     "metadata": {"name": "w-1", "namespace": "lab"}, "spec": {"size": 1}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &widgets);
    /// let w = api.get_status("w-1")?;
    /// // Only status changes through the subresource (spec and labels sent are ignored).
    /// let mut whole = serde_json::to_value(&w).unwrap();
    /// whole["status"] = serde_json::json!({"ready": true});
    /// api.replace_status("w-1", &PostParams::default(), &whole)?;
    /// // A controller applies its status with its own field manager.
    /// let status = serde_json::json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
    ///     "metadata": {"name": "w-1"}, "status": {"ready": true}});
    /// let w = api.patch_status("w-1", &PatchParams::apply("widget-controller").force(), &Patch::Apply(status))?;
    /// assert_eq!(w.decode_field::<serde_json::Value>("status").unwrap().unwrap()["ready"], true);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn get_status(&self, name: &str) -> Result<K> {
        self.send_object(self.request(Method::GET, &self.sub(name, "status")?))
    }

    /// Replaces an object's status (the whole object is sent; only its status, and for
    /// built-in types its metadata, is stored). See [`get_status`](Self::get_status).
    pub fn replace_status<B: Serialize + ?Sized>(
        &self,
        name: &str,
        params: &PostParams,
        object: &B,
    ) -> Result<K> {
        self.write_object(Method::PUT, &self.sub(name, "status")?, params, object)
    }

    /// Patches an object's status (any kind of [`Patch`]). See
    /// [`get_status`](Self::get_status).
    pub fn patch_status<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        self.send_object(self.patch_at(&self.sub(name, "status")?, params, patch)?)
    }

    /// Reads the `scale` subresource.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, client::{Patch, PatchParams, PostParams, Scale}, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let deps = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    /// # server.create(&deps, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    /// #     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &deps);
    /// let mut scale = api.get_scale("web")?;
    /// println!("{} wanted, selector {:?}", scale.spec.replicas, scale.status.as_ref().and_then(|s| s.selector.clone()));
    /// scale.spec.replicas = 3;
    /// api.replace_scale("web", &PostParams::default(), &scale)?; // 409 if the Deployment moved
    /// let scale = api.patch_scale("web", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"replicas": 5}})))?;
    /// assert_eq!(scale.spec.replicas, 5);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn get_scale(&self, name: &str) -> Result<Scale> {
        self.request(Method::GET, &self.sub(name, "scale")?)
            .send_json()
    }

    /// Replaces the `scale` subresource. See [`get_scale`](Self::get_scale).
    pub fn replace_scale(&self, name: &str, params: &PostParams, scale: &Scale) -> Result<Scale> {
        let mut q = Query::default();
        params.write_query(&mut q);
        self.write(Method::PUT, &self.sub(name, "scale")?, q, scale)
            .send_json()
    }

    /// Patches the `scale` subresource. See [`get_scale`](Self::get_scale).
    pub fn patch_scale<P: Serialize>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Scale> {
        self.patch_at(&self.sub(name, "scale")?, params, patch)?
            .send_json()
    }

    /// A request builder for any other subresource of one object, bytes in and bytes out:
    /// `…/pods/web-0/eviction`, `…/serviceaccounts/default/token`, `…/pods/web-0/log`
    /// (use [`Request::lines`] to follow a log). The method, body, content type and query
    /// are the caller's.
    ///
    /// ```
    /// # use kube_informer::{Api, Client, Method, api::{ApiResource, DynamicObject}};
    /// # let server = kube_informer::testing::ApiServer::start();
    /// # let deps = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    /// # server.create(&deps, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"},
    /// #     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}})).unwrap();
    /// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(server.client_config())?, "lab", &deps);
    /// let res = api.subresource(Method::GET, "web", "scale")?.send()?;
    /// let raw: serde_json::Value = serde_json::from_slice(res.body()).unwrap();
    /// assert_eq!(raw["spec"]["replicas"], 2);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    ///
    /// An eviction and a log (shown `no_run`: `testing::ApiServer` serves neither):
    ///
    /// ```no_run
    /// # use kube_informer::{Api, Client, ClientConfig, Method, api::{ApiResource, DynamicObject}};
    /// # let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    /// # let api: Api<DynamicObject> = Api::namespaced_with(Client::new(ClientConfig::new("https://127.0.0.1:6443"))?, "lab", &pods);
    /// let eviction = br#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"lab"}}"#;
    /// let res = api.subresource(Method::POST, "web-0", "eviction")?.body(eviction.to_vec()).send()?;
    /// assert_eq!(res.status(), 201);
    /// let log = api.subresource(Method::GET, "web-0", "log")?.query("tailLines", "10").accept("*/*").send()?;
    /// println!("{}", String::from_utf8_lossy(log.body()));
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn subresource(&self, method: Method, name: &str, subresource: &str) -> Result<Request> {
        Ok(self.request(method, &self.sub(name, subresource)?))
    }
}

/// One page of a paged list.
#[derive(Debug)]
pub struct Page<K> {
    /// The page.
    pub list: ObjectList<K>,
    /// True when the continue token expired and this page starts a full list over: drop
    /// what earlier pages gave.
    pub restarted: bool,
}

/// Iterator over the pages of a list; ends after the page with no continue token, or after
/// the first error.
///
/// Pages are fetched on short-lived named threads, up to two ahead of the caller: as soon as a
/// page's bytes arrive its continue token is read from their start (before the items are
/// decoded) and the next page's request starts, so the server's work and the transfer overlap
/// the decoding. Pages are decoded on the caller's thread: the objects are then allocated
/// where the watch will allocate their successors, which matters to arena allocators such as
/// glibc's (objects decoded on other threads left their memory stranded in other arenas when
/// the watch replaced them: +470 MiB over 100,000 updates in the benchmark). What needs no
/// allocation is done on the fetching thread: for types the library's scanner decodes
/// ([`Object::SCANNED`]), the page's UTF-8 and JSON grammar are checked there and the ends of
/// its large containers recorded, so the caller's decoding jumps over them. The buffers of
/// decoded pages are reused for the next fetches. Every thread is joined before its page is
/// returned, and when the iterator is dropped.
///
/// When a continue token has expired (410), it does what client-go's pager does: one request
/// for the whole list without a limit, marked [`Page::restarted`].
pub struct Pages<K> {
    api: Api<K>,
    params: ListParams,
    done: bool,
    restarted: bool,
    /// Pages being fetched, oldest (the next to return) first.
    in_flight: std::collections::VecDeque<PageTask<K>>,
    /// Buffers of pages already decoded, for the next fetches (at most `PAGES_IN_FLIGHT`).
    spare: Vec<Vec<u8>>,
}

/// How many pages are fetched at once.
const PAGES_IN_FLIGHT: usize = 2;

/// One page being fetched on its own thread.
struct PageTask<K> {
    params: ListParams,
    /// The page's continue token, sent as soon as its bytes arrive (`None`: last page, the
    /// token could not be peeked, or the request failed).
    token: crossbeam_channel::Receiver<Option<String>>,
    /// Whether the token was already taken (and the following page started).
    followed: bool,
    thread: std::thread::JoinHandle<Result<CheckedPage>>,
    path: String,
    kind: PhantomData<K>,
}

impl<K> Drop for Pages<K> {
    fn drop(&mut self) {
        for task in self.in_flight.drain(..) {
            let _ = task.thread.join();
        }
    }
}

impl<K: Object> Pages<K> {
    /// Starts fetching the page for `params`; `None` if no thread could start.
    fn spawn(&mut self, params: ListParams) -> Option<PageTask<K>> {
        let (tx, token) = crossbeam_channel::bounded(1);
        let client = self.api.client.clone();
        let path = self.api.list_path(&params);
        let request = path.clone();
        let continued = params.continue_token.is_some();
        let buffer = self.spare.pop().unwrap_or_default();
        let thread = std::thread::Builder::new()
            .name(crate::thread_name::thread_name(
                &self.api.resource.plural,
                "page",
            ))
            .spawn(move || {
                let raw = client.list_raw_into(&request, continued, list_accept::<K>(), buffer);
                let token = match &raw {
                    Ok((raw, false)) => peek_continue(raw),
                    #[cfg(feature = "protobuf")]
                    Ok((raw, true)) => crate::api::protobuf_answers::peek_continue(raw),
                    _ => None,
                };
                let _ = tx.send(token);
                raw.map(|(raw, protobuf)| {
                    if protobuf || !K::SCANNED {
                        CheckedPage::unchecked(raw, protobuf)
                    } else {
                        CheckedPage::check(raw)
                    }
                })
            })
            .ok()?;
        Some(PageTask {
            params,
            token,
            followed: false,
            thread,
            path,
            kind: PhantomData,
        })
    }

    /// Keeps `PAGES_IN_FLIGHT` pages going, starting with the current parameters.
    fn fill(&mut self) {
        if self.in_flight.is_empty() {
            match self.spawn(self.params.clone()) {
                Some(task) => self.in_flight.push_back(task),
                None => return,
            }
        }
        while self.in_flight.len() < PAGES_IN_FLIGHT {
            let Some(last) = self.in_flight.back_mut() else {
                return;
            };
            if last.followed {
                return;
            }
            last.followed = true;
            let Ok(Some(token)) = last.token.recv() else {
                return;
            };
            let params = last.params.following(token);
            match self.spawn(params) {
                Some(task) => self.in_flight.push_back(task),
                None => return,
            }
        }
    }

    /// Joins every page still in flight, dropping them (after an error or a restart).
    fn abandon_in_flight(&mut self) {
        for task in self.in_flight.drain(..) {
            let _ = task.thread.join();
        }
    }

    /// The page for the current parameters.
    fn take_current(&mut self) -> Result<ObjectList<K>> {
        self.fill();
        match self.in_flight.pop_front() {
            Some(task) => {
                debug_assert!(task.params == self.params);
                let page = task.thread.join().unwrap_or_else(|_| {
                    Err(Error::InvalidInput(
                        "the thread fetching a list page panicked".into(),
                    ))
                })?;
                let (list, buffer) = page.decode(&task.path);
                if self.spare.len() < PAGES_IN_FLIGHT {
                    self.spare.push(buffer);
                }
                list
            }
            // No thread could be started: fetch and decode here.
            None => {
                let path = self.api.list_path(&self.params);
                let continued = self.params.continue_token.is_some();
                let (raw, protobuf) = self.api.client.list_raw_into(
                    &path,
                    continued,
                    list_accept::<K>(),
                    Vec::new(),
                )?;
                CheckedPage::unchecked(raw, protobuf).decode(&path).0
            }
        }
    }
}

impl<K: Object> Iterator for Pages<K> {
    type Item = Result<Page<K>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.take_current() {
            Ok(list) => {
                match list
                    .metadata
                    .continue_token
                    .clone()
                    .filter(|c| !c.is_empty())
                {
                    Some(token) => self.params = self.params.following(token),
                    None => self.done = true,
                }
                // A page started from a peeked token that is not the decoded one (it cannot
                // happen with a well-formed page) is dropped and the right one fetched.
                if self.done || self.in_flight.front().map(|t| &t.params) != Some(&self.params) {
                    self.abandon_in_flight();
                }
                let restarted = std::mem::take(&mut self.restarted);
                Some(Ok(Page { list, restarted }))
            }
            Err(e) if e.is_gone() && self.params.continue_token.is_some() => {
                log::debug!("{e}; restarting as one full list");
                self.abandon_in_flight();
                self.params.continue_token = None;
                self.params.limit = None;
                self.restarted = true;
                self.next()
            }
            Err(e) => {
                self.abandon_in_flight();
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A list page's bytes, checked on the thread that fetched them (for types decoded by the
/// library's scanner, see [`Object::SCANNED`]).
enum CheckedPage {
    /// UTF-8 and valid JSON, with where its large containers end: decoding jumps over them.
    Checked(String, KnownEnds),
    /// Not checked, or the check failed: decoding walks it all and says what is wrong.
    Unchecked(Vec<u8>),
    /// A protobuf page (feature `protobuf`), decoded by the codec.
    #[cfg(feature = "protobuf")]
    Protobuf(Vec<u8>),
}

impl CheckedPage {
    /// A page not checked ahead: JSON, or protobuf when the answer said so.
    fn unchecked(raw: Vec<u8>, protobuf: bool) -> CheckedPage {
        #[cfg(feature = "protobuf")]
        if protobuf {
            return CheckedPage::Protobuf(raw);
        }
        let _ = protobuf;
        CheckedPage::Unchecked(raw)
    }

    /// Checks the page's encoding and its whole JSON grammar, recording container ends.
    fn check(raw: Vec<u8>) -> CheckedPage {
        match String::from_utf8(raw) {
            Ok(text) => match KnownEnds::check(&text) {
                Ok(ends) => CheckedPage::Checked(text, ends),
                Err(_) => CheckedPage::Unchecked(text.into_bytes()),
            },
            Err(e) => CheckedPage::Unchecked(e.into_bytes()),
        }
    }

    /// Decodes the page, its items with [`Object::from_json_prefix`]; gives the page's
    /// buffer back for reuse. A page that is a failure `Status` is that failure.
    fn decode<K: Object>(self, path: &str) -> (Result<ObjectList<K>>, Vec<u8>) {
        let (list, raw) = self.decode_page(path);
        (failure_in_page(list, &raw, path), raw)
    }

    fn decode_page<K: Object>(self, path: &str) -> (Result<ObjectList<K>>, Vec<u8>) {
        let decode_error = |message: String| Error::Decode {
            request: describe(&Method::GET, path),
            message: format!("decoding the list: {message}"),
        };
        match self {
            CheckedPage::Checked(text, ends) => {
                let list = with_known_ends(&text, ends, || ObjectList::from_json(&text));
                (
                    list.map_err(|e| decode_error(crate::error::json_error_summary(&e))),
                    text.into_bytes(),
                )
            }
            CheckedPage::Unchecked(raw) => {
                let list = match std::str::from_utf8(&raw) {
                    Ok(text) => ObjectList::from_json(text)
                        .map_err(|e| decode_error(crate::error::json_error_summary(&e))),
                    Err(e) => Err(decode_error(format!(
                        "not UTF-8 (at byte {})",
                        e.valid_up_to()
                    ))),
                };
                (list, raw)
            }
            #[cfg(feature = "protobuf")]
            CheckedPage::Protobuf(raw) => (
                crate::api::protobuf_answers::list(&raw).map_err(decode_error),
                raw,
            ),
        }
    }
}

/// A 2xx list answer that is a failure `Status` (a proxy or an aggregated server answering
/// an error with 200) is that error, as client-go's `Result.Into` makes of it: a 410 in it
/// relists as a 410 does. Read as a list, the JSON of a Status is an empty list (it has no
/// `items`: a cache replaced by it loses every object) and its protobuf is no list at all.
fn failure_in_page<K>(
    list: Result<ObjectList<K>>,
    raw: &[u8],
    path: &str,
) -> Result<ObjectList<K>> {
    let status = match &list {
        Ok(l) if l.kind.as_deref() == Some("Status") => serde_json::from_slice::<Status>(raw).ok(),
        #[cfg(feature = "protobuf")]
        Err(_) if raw.starts_with(crate::protobuf::MAGIC) => {
            crate::api::protobuf_answers::status(raw)
        }
        _ => None,
    };
    match status {
        Some(status) if status.status != "Success" => Err(Error::Api {
            request: describe(&Method::GET, path),
            status: Box::new(status),
        }),
        _ => list,
    }
}

/// One object from a 2xx answer, in protobuf or JSON as its `Content-Type` says.
fn answer<K: Object>(res: Response) -> Result<K> {
    #[cfg(feature = "protobuf")]
    if is_protobuf(res.headers()) {
        return crate::api::protobuf_answers::object(res.body()).map_err(|message| Error::Decode {
            request: res.request().to_owned(),
            message,
        });
    }
    res.json()
}

/// The continue token of a raw list page, read from the list metadata at its start without
/// decoding the items; `None` when there is none or the metadata does not come first.
fn peek_continue(raw: &[u8]) -> Option<String> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    use std::cell::RefCell;

    /// Reads keys up to `metadata`, keeps its continue token, and stops parsing there (by
    /// returning an error) so the items are never scanned.
    struct Peek<'a>(&'a RefCell<Option<String>>);
    impl<'de> Visitor<'de> for Peek<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match &*key {
                    "metadata" => {
                        let meta: crate::api::ListMeta = map.next_value()?;
                        *self.0.borrow_mut() = meta.continue_token.filter(|c| !c.is_empty());
                        return Err(serde::de::Error::custom("metadata read"));
                    }
                    "items" => return Err(serde::de::Error::custom("items before metadata")),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }

    let token = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(raw);
    let _ = (&mut de).deserialize_map(Peek(&token));
    token.into_inner()
}

#[cfg(test)]
mod tests {
    use super::{peek_continue, CheckedPage};
    use crate::api::DynamicObject;
    use crate::error::Error;

    #[test]
    fn a_checked_page_decodes_as_an_unchecked_one() {
        let page = r#"{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[
            {"metadata":{"name":"a","namespace":"n","labels":{"app":"web","tier":"front"},
              "managedFields":[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{"f:x":{}}}}]},
             "spec":{"containers":[{"name":"c","image":"registry.example.com/web:1"}]},
             "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}},
            {"metadata":{"name":"b","namespace":"n"},"data":{"k":"a value long enough to be recorded"}}]}"#;
        let checked = CheckedPage::check(page.as_bytes().to_vec());
        assert!(matches!(checked, CheckedPage::Checked(..)));
        let (fast, buffer) = checked.decode::<DynamicObject>("/pods");
        assert_eq!(buffer, page.as_bytes(), "the buffer comes back for reuse");
        let fast = fast.unwrap();
        let slow = CheckedPage::Unchecked(page.as_bytes().to_vec())
            .decode::<DynamicObject>("/pods")
            .0
            .unwrap();
        assert_eq!(
            serde_json::to_string(&fast.items).unwrap(),
            serde_json::to_string(&slow.items).unwrap()
        );
        assert_eq!(fast.items.len(), 2);
    }

    #[test]
    fn a_bad_page_gets_the_same_error_checked_or_not() {
        for bad in [
            &br#"{"items":[{"metadata":{"name":"a"},"spec":{"x":[1,2}}]}"#[..],
            br#"{"items":[{"metadata":{"name":7}}]}"#,
            b"{\"items\":[{\"metadata\":{\"name\":\"\xff\"}}]}",
        ] {
            let message = |page: CheckedPage| match page.decode::<DynamicObject>("/pods").0 {
                Err(Error::Decode { message, .. }) => message,
                other => panic!("{other:?}"),
            };
            assert_eq!(
                message(CheckedPage::check(bad.to_vec())),
                message(CheckedPage::Unchecked(bad.to_vec()))
            );
        }
    }

    #[test]
    fn peeks_the_continue_token_without_the_items() {
        let page = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"251","continue":"eyJ2Ijoi","remainingItemCount":40},"items":[{"broken json"#;
        assert_eq!(peek_continue(page).as_deref(), Some("eyJ2Ijoi"));
        let last = br#"{"kind":"PodList","metadata":{"resourceVersion":"251"},"items":[]}"#;
        assert_eq!(peek_continue(last), None);
        let items_first = br#"{"items":[],"metadata":{"continue":"x"}}"#;
        assert_eq!(peek_continue(items_first), None);
        assert_eq!(peek_continue(b"garbage"), None);
    }
}
