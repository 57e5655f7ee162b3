//! End-to-end suite against a real cluster, opt-in:
//!
//! ```text
//! KUBE_E2E=1 cargo test --test e2e -- --ignored --nocapture
//! ```
//!
//! The `real_*` tests are ignored by default, and even when run they only print
//! `skipped: ...` unless `KUBE_E2E=1` is set and a kubeconfig (or an in-cluster service
//! account) is found the way kubectl finds one (`KUBECONFIG`, `~/.kube/config`).
//!
//! One scenario needs an API server it may restart (a lab or kind cluster, never a shared
//! one): `real_informer_recovers_after_an_apiserver_restart` runs only when
//! `KUBE_E2E_RESTART` names a shell command that restarts kube-apiserver with etcd kept,
//! and otherwise prints `skipped: needs a restartable API server`. Every other scenario
//! needs only the rights to create a namespace (and, for one, a CRD).
//!
//! They touch only what they create: a namespace `kube-informer-e2e-<random>` (deleted at the
//! end, also when a test fails, by a guard), the objects inside it, and for the custom
//! resource test a CRD `widgets.e2e-<random>.kube-informer.test` (deleted the same way). The
//! 403 test only reads, as a user with no rights (impersonation). The discovery test writes
//! its disk cache into a temporary directory, never into `~/.kube/cache`.
//!
//! The same test bodies run in `cargo test` against `testing::ApiServer` over TLS (the
//! `fake_*` tests), so this code cannot rot unseen; there the server is told to answer what a
//! cluster would (the CRD's `Established` condition, the 403).

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::e2e::{self, Env, Owned};
use kube_informer::api::{ApiResource, DynamicObject, PartialObjectMetadata};
use kube_informer::cache::{
    DeletedObject, EventHandler, HandlerFns, InformerConfig, ReflectorConfig, RelistCause,
    SharedIndexInformer,
};
use kube_informer::client::PatchOperation;
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::discovery::{Discovery, DiskCache, Origin, RestMapper};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{
    Api, Client, ClientConfig, DeleteParams, Error, ListParams, Patch, PatchParams, PostParams,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// Bound for anything these tests wait on; a real cluster can be slow (never a timing
/// assertion).
const PATIENCE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Where the tests run: `common::e2e` (a real cluster or the test server playing one).

/// The test server over TLS, serving ConfigMaps.
fn fake_env() -> Env {
    Env::fake_from(e2e::fake_server().resource(&configmaps()))
}

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

/// A namespace of the test's own, deleted on drop (also when the test panics).
fn test_namespace(env: &Env) -> Owned {
    e2e::namespace(&env.client, "kube-informer-e2e")
}

/// Waits until `cond` holds; panics with `what` after [`PATIENCE`].
fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    e2e::wait_until(what, PATIENCE, cond)
}

// ---------------------------------------------------------------------------------------
// What a handler saw.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Add(String, String),
    Update(String, String, String),
    Delete(String),
}

/// Records every notification, and rebuilds the objects (name -> resourceVersion).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Recorded>>);

#[derive(Default)]
struct Recorded {
    events: Vec<Seen>,
    objects: BTreeMap<String, String>,
}

impl Recorder {
    fn saw(&self, s: &Seen) -> bool {
        self.0.lock().events.contains(s)
    }
    fn saw_delete_of(&self, name: &str) -> bool {
        self.saw(&Seen::Delete(name.to_owned()))
    }
    fn view(&self) -> BTreeMap<String, String> {
        self.0.lock().objects.clone()
    }
    fn events(&self) -> Vec<Seen> {
        self.0.lock().events.clone()
    }
}

impl EventHandler<DynamicObject> for Recorder {
    fn on_add(&mut self, o: Arc<DynamicObject>, _initial: bool) {
        let (name, rv) = (o.metadata.name().to_owned(), rv(&o));
        let mut s = self.0.lock();
        s.events.push(Seen::Add(name.clone(), rv.clone()));
        s.objects.insert(name, rv);
    }
    fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
        let name = new.metadata.name().to_owned();
        let mut s = self.0.lock();
        s.events
            .push(Seen::Update(name.clone(), rv(&old), rv(&new)));
        s.objects.insert(name, rv(&new));
    }
    fn on_delete(&mut self, gone: DeletedObject<DynamicObject>) {
        let name = gone.object().metadata.name().to_owned();
        let mut s = self.0.lock();
        s.events.push(Seen::Delete(name.clone()));
        s.objects.remove(&name);
    }
}

fn rv(o: &DynamicObject) -> String {
    o.metadata.resource_version().to_owned()
}

/// name -> resourceVersion of what the server lists now.
fn listed(api: &Api<DynamicObject>) -> BTreeMap<String, String> {
    api.list(&ListParams::default())
        .expect("list")
        .items
        .iter()
        .map(|o| (o.metadata.name().to_owned(), rv(o)))
        .collect()
}

/// name -> resourceVersion of what the informer's cache holds.
fn cached(inf: &SharedIndexInformer<DynamicObject>) -> BTreeMap<String, String> {
    inf.store()
        .list()
        .iter()
        .map(|o| (o.metadata.name().to_owned(), rv(o)))
        .collect()
}

/// Waits until the cache and the handler's view equal what the server lists.
fn wait_converged(
    api: &Api<DynamicObject>,
    inf: &SharedIndexInformer<DynamicObject>,
    rec: &Recorder,
) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let want = listed(api);
        let (cache, view) = (cached(inf), rec.view());
        if cache == want && view == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no convergence within {PATIENCE:?}: server {want:?}, cache {cache:?}, handler {view:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn informer_config() -> InformerConfig<DynamicObject> {
    InformerConfig::new().reflector(
        ReflectorConfig::new().backoff(Duration::from_millis(100), Duration::from_secs(1)),
    )
}

// ---------------------------------------------------------------------------------------
// The test bodies.

/// (9) kube-apiserver restarts with its etcd kept (what a control plane's rolling upgrade
/// does): the informer's watch gets 410, and it must get back to the present — every change
/// made after the restart reaches the handler once, nothing deleted comes back — in a few
/// lists, not a list → watch → 410 loop. `restart` restarts the API server and returns once
/// it is asked to (the body waits until the server answers again).
fn informer_recovers_after_an_apiserver_restart(env: &Env, restart: &dyn Fn()) {
    let ns = test_namespace(env);
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": ns.name}, "data": {"v": "0"}})
    };
    for name in ["kept", "doomed"] {
        api.create(&PostParams::default(), &cm(name)).unwrap();
    }
    let inf = SharedIndexInformer::new(api.clone(), informer_config());
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "initial sync");
    wait_until("watching", || inf.is_watching());
    let lists_before = inf.health().reflector.lists;

    restart();
    wait_until("the API server answering again", || {
        api.list(&ListParams::default()).is_ok()
    });
    let after = api.create(&PostParams::default(), &cm("after")).unwrap();
    let kept = api
        .patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "1"}})),
        )
        .unwrap();
    api.delete("doomed", &DeleteParams::default()).unwrap();
    wait_until("the changes made after the restart", || {
        rec.saw(&Seen::Add("after".into(), rv(&after))) && rec.saw_delete_of("doomed")
    });
    wait_converged(&api, &inf, &rec);
    assert_eq!(rec.view().get("kept"), Some(&rv(&kept)));
    let events = rec.events();
    let count = |s: &Seen| events.iter().filter(|e| *e == s).count();
    assert_eq!(
        count(&Seen::Add("after".into(), rv(&after))),
        1,
        "{events:?}"
    );
    assert_eq!(count(&Seen::Delete("doomed".into())), 1, "{events:?}");
    let gone_at = events
        .iter()
        .position(|e| *e == Seen::Delete("doomed".into()))
        .unwrap();
    assert!(
        !events[gone_at + 1..].iter().any(|e| matches!(e,
            Seen::Add(n, _) | Seen::Update(n, _, _) if n == "doomed")),
        "the deleted object came back: {events:?}"
    );
    let health = inf.health().reflector;
    assert!(
        health.relists.get(&RelistCause::Expired).is_some_and(|n| *n >= 1),
        "the restart was not seen (no 410 on the watch: did the restart command restart kube-apiserver?): {health:?}"
    );
    let lists = health.lists - lists_before;
    assert!(lists <= 3, "{lists} lists after the restart: {health:?}");
    println!(
        "e2e: back to the present after the restart in {lists} list(s), relists {:?}",
        health.relists
    );
    inf.stop();
}

/// (1) ConfigMaps created, updated and deleted: the handler sees each, the cache converges.
fn configmaps_seen_by_an_informer(env: &Env) {
    let ns = test_namespace(env);
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    let inf = SharedIndexInformer::new(api.clone(), informer_config());
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "initial sync");

    let cm = |name: &str, v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": ns.name}, "data": {"v": v}})
    };
    let one = api.create(&PostParams::default(), &cm("one", "1")).unwrap();
    let rv1 = rv(&one);
    wait_until("the add of one", || {
        rec.saw(&Seen::Add("one".into(), rv1.clone()))
    });
    let one = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .unwrap();
    let rv2 = rv(&one);
    assert_ne!(rv1, rv2);
    wait_until("the update of one", || {
        rec.saw(&Seen::Update("one".into(), rv1.clone(), rv2.clone()))
    });
    let cached_one = inf
        .store()
        .get(&format!("{}/one", ns.name))
        .expect("cached");
    assert_eq!(
        cached_one.decode_field::<Value>("data").unwrap(),
        Some(json!({"v": "2"}))
    );
    api.delete("one", &DeleteParams::default()).unwrap();
    wait_until("the delete of one", || rec.saw_delete_of("one"));
    assert!(inf.store().get(&format!("{}/one", ns.name)).is_none());

    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &cm(&format!("many-{i}"), &i.to_string()),
        )
        .unwrap();
    }
    api.patch(
        "many-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "x"}})),
    )
    .unwrap();
    api.delete("many-3", &DeleteParams::default()).unwrap();
    wait_converged(&api, &inf, &rec);
    assert!(!inf.store().contains(&format!("{}/many-3", ns.name)));
    inf.stop();
}

/// (2) A custom resource through `DynamicObject`: CRD created and Established, objects
/// created, listed and watched, the CRD deleted at the end.
fn custom_resource_via_dynamic_object(env: &Env) {
    let group = format!("e2e-{}.kube-informer.test", e2e::random_suffix());
    let widgets = ApiResource::new(&group, "v1", "Widget", "widgets", true);
    let crd = e2e::open_crd(env, &widgets);
    let (crd_api, crd_name) = (&crd.api, &crd.name);
    wait_until("the CRD to be Established", || {
        e2e::established(crd_api, crd_name)
    });

    let ns = test_namespace(env);
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &widgets);
    let widget = |name: &str, size: u32| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": name, "namespace": ns.name}, "spec": {"size": size}})
    };
    // Established can come a moment before the new resource is served: a 404 until then.
    let mut first = None;
    wait_until("the new resource to accept objects", || {
        match api.create(&PostParams::default(), &widget("w0", 0)) {
            Ok(o) => {
                first = Some(o);
                true
            }
            Err(e) if e.code() == Some(404) => false,
            Err(e) => panic!("creating the first widget: {e}"),
        }
    });
    let w0 = first.expect("created");
    assert_eq!(w0.kind.as_deref(), Some("Widget"));

    let inf = SharedIndexInformer::new(api.clone(), informer_config());
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "initial sync");
    wait_until("the initial add of w0", || {
        rec.saw(&Seen::Add("w0".into(), rv(&w0)))
    });
    let w1 = api
        .create(&PostParams::default(), &widget("w1", 1))
        .unwrap();
    api.create(&PostParams::default(), &widget("w2", 2))
        .unwrap();
    let w1b = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 10}})),
        )
        .unwrap();
    api.delete("w2", &DeleteParams::default()).unwrap();
    wait_until("the add, update and delete of widgets", || {
        rec.saw(&Seen::Add("w1".into(), rv(&w1)))
            && rec.saw(&Seen::Update("w1".into(), rv(&w1), rv(&w1b)))
            && rec.saw_delete_of("w2")
    });
    wait_converged(&api, &inf, &rec);
    let cached_w1 = inf.store().get(&format!("{}/w1", ns.name)).expect("w1");
    assert_eq!(
        cached_w1.decode_field::<Value>("spec").unwrap(),
        Some(json!({"size": 10}))
    );
    let list = api.list(&ListParams::default()).unwrap();
    let names: Vec<_> = list.items.iter().map(|o| o.metadata.name()).collect();
    assert_eq!(names, ["w0", "w1"]);
    inf.stop();
}

/// (3) A request the server forbids: `Error::Api` with the 403 Status.
fn forbidden_is_an_error_with_its_status(env: &Env) {
    let mut config = env.config.clone();
    config.impersonate_user = Some("kube-informer-e2e-nobody".into());
    let client = Client::new(config).unwrap();
    let secrets = ApiResource::new("", "v1", "Secret", "secrets", true);
    let api: Api<DynamicObject> = Api::namespaced_with(client, "kube-system", &secrets);
    if let Some(server) = &env.fake {
        // The test server has no authorizer: it answers as one would.
        server.inject(Target::List, Fault::status(403));
    }
    match api.list(&ListParams::default()) {
        Err(Error::Api { request, status }) => {
            assert_eq!(status.code, 403, "{request}: {status:?}");
            assert_eq!(status.reason, "Forbidden", "{request}: {status:?}");
            assert!(!status.message.is_empty(), "{status:?}");
            println!("e2e: 403 as expected: {}", status.message);
        }
        Err(other) => panic!("expected a 403 Status, got {other}"),
        Ok(list) => panic!(
            "listing secrets as a user with no rights succeeded ({} items)",
            list.items.len()
        ),
    }
}

/// (4) The connection is cut mid-watch and stays down while objects change; after it comes
/// back the informer catches up and no change is lost.
fn watch_resumes_after_the_connection_is_cut(env: &Env) {
    let ns = test_namespace(env);
    let direct: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    let fwd = Forwarder::start(&env.config.server);
    let through = Client::new(fwd.client_config(&env.config)).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(through, &ns.name, &configmaps());
    let inf = SharedIndexInformer::new(api, informer_config());
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "initial sync");
    wait_until("watching", || inf.is_watching());

    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": ns.name}, "data": {"v": "0"}})
    };
    let before = direct
        .create(&PostParams::default(), &cm("before"))
        .unwrap();
    let doomed = direct
        .create(&PostParams::default(), &cm("doomed"))
        .unwrap();
    wait_until("the adds made before the cut", || {
        rec.saw(&Seen::Add("before".into(), rv(&before)))
            && rec.saw(&Seen::Add("doomed".into(), rv(&doomed)))
    });

    fwd.cut_and_refuse();
    wait_until("the watch to notice the cut", || !inf.is_watching());
    let during = direct
        .create(&PostParams::default(), &cm("during"))
        .unwrap();
    let before2 = direct
        .patch(
            "before",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "1"}})),
        )
        .unwrap();
    direct.delete("doomed", &DeleteParams::default()).unwrap();
    let seen_while_cut = rec.events();
    assert!(
        !rec.saw(&Seen::Add("during".into(), rv(&during))),
        "an event arrived while the connection was cut: {seen_while_cut:?}"
    );
    fwd.resume();

    wait_until("the changes made during the cut", || {
        rec.saw(&Seen::Add("during".into(), rv(&during)))
            && rec.saw(&Seen::Update("before".into(), rv(&before), rv(&before2)))
            && rec.saw_delete_of("doomed")
    });
    wait_converged(&direct, &inf, &rec);
    println!(
        "e2e: {} connections forwarded, the informer reconnected",
        fwd.connections()
    );
    inf.stop();
}

// ---------------------------------------------------------------------------------------
// A TCP forwarder that can cut its connections.

struct FwdShared {
    upstream: Vec<SocketAddr>,
    refusing: AtomicBool,
    stopped: AtomicBool,
    open: Mutex<Vec<TcpStream>>,
    pipes: Mutex<Vec<JoinHandle<()>>>,
    accepted: Mutex<usize>,
}

/// Listens on `127.0.0.1`, and pipes each connection to the API server, a thread per
/// direction; [`cut_and_refuse`](Self::cut_and_refuse) drops them all and turns new ones
/// away until [`resume`](Self::resume).
struct Forwarder {
    addr: SocketAddr,
    shared: Arc<FwdShared>,
    accept: Option<JoinHandle<()>>,
}

/// (5) The writes a controller makes: server-side apply with a conflict between managers and
/// its takeover, a JSON patch whose `test` fails, the status and scale subresources, and
/// delete preconditions that do not hold.
fn writes_a_controller_makes(env: &Env) {
    let ns = test_namespace(env);
    let cms: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    let mine = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": data});
    cms.patch(
        "applied",
        &PatchParams::apply("alice"),
        &Patch::Apply(mine(json!({"color": "red", "size": "1"}))),
    )
    .unwrap();
    let err = cms
        .patch(
            "applied",
            &PatchParams::apply("bob"),
            &Patch::Apply(mine(json!({"color": "green"}))),
        )
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let st = err.status().unwrap();
    let conflicts = st.field_manager_conflicts();
    assert_eq!(conflicts.len(), 1, "{st:?}");
    assert_eq!(conflicts[0].field, ".data.color");
    assert_eq!(conflicts[0].manager(), Some("alice"));
    let forced = cms
        .patch(
            "applied",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(mine(json!({"color": "green"}))),
        )
        .unwrap();
    assert_eq!(
        forced.decode_field::<Value>("data").unwrap(),
        Some(json!({"color": "green", "size": "1"}))
    );

    // A JSON patch whose test fails changes nothing.
    let err = cms
        .patch(
            "applied",
            &PatchParams::default(),
            &Patch::json(vec![
                PatchOperation::test("/data/size", "2"),
                PatchOperation::remove("/data/size"),
            ]),
        )
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(
        cms.get("applied")
            .unwrap()
            .decode_field::<Value>("data")
            .unwrap(),
        Some(json!({"color": "green", "size": "1"}))
    );

    // Delete preconditions that do not hold.
    let current = cms.get("applied").unwrap();
    let err = cms
        .delete(
            "applied",
            &DeleteParams::default().precondition_uid("00000000-0000-0000-0000-000000000000"),
        )
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let stale = current.metadata.resource_version().to_owned();
    cms.patch(
        "applied",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"size": "3"}})),
    )
    .unwrap();
    let err = cms
        .delete(
            "applied",
            &DeleteParams::default().precondition_resource_version(&stale),
        )
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let gone = cms
        .delete(
            "applied",
            &DeleteParams::default().precondition_uid(current.metadata.uid.as_deref().unwrap()),
        )
        .unwrap();
    assert!(
        gone.status().is_some(),
        "a ConfigMap's delete answers a Status"
    );

    // Status and scale of a Deployment (no replicas, so no pods).
    let deps: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &ns.name,
        &ApiResource::new("apps", "v1", "Deployment", "deployments", true),
    );
    deps.create(
        &PostParams::default(),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}),
    )
    .unwrap();
    let status = |d: &DynamicObject| {
        d.decode_field::<Value>("status")
            .unwrap()
            .unwrap_or(Value::Null)
    };
    let d = deps
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"collisionCount": 3}})),
        )
        .unwrap();
    assert_eq!(status(&d)["collisionCount"], 3);
    let d = deps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}, "status": {"collisionCount": 9}})),
        )
        .unwrap();
    assert_ne!(
        status(&d)["collisionCount"],
        9,
        "the main resource ignores status"
    );
    let scale = deps.get_scale("web").unwrap();
    assert_eq!(scale.spec.replicas, 0);
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app=web")
    );
    // A Scale read before someone else scaled is refused (its resourceVersion is stale).
    let scaled = deps
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .unwrap();
    assert_eq!(scaled.spec.replicas, 1);
    let err = deps
        .replace_scale("web", &PostParams::default(), &scale)
        .unwrap_err();
    assert!(
        err.is_conflict(),
        "a Scale with a stale resourceVersion: {err}"
    );
    let mut current = deps.get_scale("web").unwrap();
    current.spec.replicas = 0;
    let patched = deps
        .replace_scale("web", &PostParams::default(), &current)
        .unwrap();
    assert_eq!(patched.spec.replicas, 0);
}

/// `(scheme, host, port, path)` of `https://host:port/path`.
fn split_url(url: &str) -> (String, String, u16, String) {
    let (scheme, rest) = url.split_once("://").expect("a server URL with a scheme");
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let default_port = if scheme == "https" { 443 } else { 80 };
    let (host, port) = if let Some(end) = authority.strip_prefix('[').and_then(|a| a.find(']')) {
        let host = &authority[1..end + 1];
        let port = authority[end + 2..]
            .strip_prefix(':')
            .and_then(|p| p.parse().ok());
        (host.to_owned(), port.unwrap_or(default_port))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().expect("a port")),
            None => (authority.to_owned(), default_port),
        }
    };
    (
        scheme.to_owned(),
        host,
        port,
        path.trim_end_matches('/').to_owned(),
    )
}

impl Forwarder {
    fn start(server_url: &str) -> Forwarder {
        let (_, host, port, _) = split_url(server_url);
        let upstream: Vec<SocketAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .unwrap_or_else(|e| panic!("resolving {host}:{port}: {e}"))
            .collect();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(FwdShared {
            upstream,
            refusing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            open: Mutex::new(Vec::new()),
            pipes: Mutex::new(Vec::new()),
            accepted: Mutex::new(0),
        });
        let s = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("e2e/forward-accept".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = conn else { continue };
                    let server = if s.refusing.load(Ordering::SeqCst) {
                        None
                    } else {
                        TcpStream::connect_timeout(&s.upstream[0], Duration::from_secs(10)).ok()
                    };
                    // Registered under the lock `cut_and_refuse` takes: no connection slips
                    // past a cut.
                    let mut open = s.open.lock();
                    let clones = server.as_ref().map(|server| {
                        (
                            client.try_clone(),
                            server.try_clone(),
                            client.try_clone(),
                            server.try_clone(),
                        )
                    });
                    let (Some(server), Some((Ok(c2), Ok(s2), Ok(c3), Ok(s3)))) = (server, clones)
                    else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    if s.refusing.load(Ordering::SeqCst) {
                        let _ = client.shutdown(Shutdown::Both);
                        let _ = server.shutdown(Shutdown::Both);
                        continue;
                    }
                    *s.accepted.lock() += 1;
                    open.extend([c3, s3]);
                    drop(open);
                    let mut pipes = s.pipes.lock();
                    pipes.retain(|p| !p.is_finished());
                    for (from, to) in [(client, s2), (server, c2)] {
                        if let Ok(h) = std::thread::Builder::new()
                            .name("e2e/forward-pipe".into())
                            .spawn(move || pipe(from, to))
                        {
                            pipes.push(h);
                        }
                    }
                }
            })
            .unwrap();
        Forwarder {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `config` re-addressed to the forwarder; the certificate is still checked against the
    /// real server's name.
    fn client_config(&self, config: &ClientConfig) -> ClientConfig {
        let (scheme, host, _, path) = split_url(&config.server);
        let mut c = config.clone();
        c.server = format!("{scheme}://{}{path}", self.addr);
        // A proxy could not reach the forwarder on this machine's loopback.
        c.proxy = None;
        if scheme == "https" && c.tls_server_name.is_none() {
            c.tls_server_name = Some(host);
        }
        c
    }

    /// Drops every connection and turns new ones away.
    fn cut_and_refuse(&self) {
        let mut open = self.shared.open.lock();
        self.shared.refusing.store(true, Ordering::SeqCst);
        for s in open.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn resume(&self) {
        self.shared.refusing.store(false, Ordering::SeqCst);
    }

    fn cut(&self) {
        for s in self.shared.open.lock().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn connections(&self) -> usize {
        *self.shared.accepted.lock()
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        self.cut();
        for p in std::mem::take(&mut *self.shared.pipes.lock()) {
            let _ = p.join();
        }
    }
}

/// Copies one direction until either side ends, then ends both.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// (5) Two leader electors on one Lease: one leads; stopped cleanly, it releases the lease
/// and the other takes over; the record counts one transition.
fn two_electors_hand_over(env: &Env) {
    use kube_informer::controller::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Lease};

    let ns = test_namespace(env);
    // (identity, started) in the order the callbacks ran; `false` entries are stops.
    let terms: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let start = |id: &str| {
        let (t1, t2) = (Arc::clone(&terms), Arc::clone(&terms));
        let (id1, id2) = (id.to_owned(), id.to_owned());
        let config = LeaderElectionConfig::new(&ns.name, "e2e-leader", id)
            .lease_duration(Duration::from_secs(6))
            .renew_deadline(Duration::from_secs(4))
            .retry_period(Duration::from_millis(500));
        let callbacks = LeaderCallbacks::new(move |term| {
            t1.lock().push((id1.clone(), true));
            term.wait();
        })
        .on_stopped_leading(move || t2.lock().push((id2.clone(), false)));
        LeaderElector::start(env.client.clone(), config, callbacks).unwrap()
    };
    let mut electors = vec![start("e2e-a"), start("e2e-b")];
    let starts = || terms.lock().iter().filter(|t| t.1).count();
    wait_until("a leader", || starts() == 1);
    let leader = terms.lock()[0].0.clone();
    let i = electors
        .iter()
        .position(|e| e.identity() == leader)
        .unwrap();
    let first = electors.remove(i);
    assert!(first.is_leader());
    first.stop();
    wait_until("the other elector to take over", || starts() == 2);
    let successor = electors.pop().unwrap();
    assert!(successor.is_leader());
    assert_ne!(successor.identity(), leader);
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &ns.name);
    let spec = leases.get("e2e-leader").unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(successor.identity()));
    assert_eq!(spec.lease_transitions, Some(1));
    successor.stop();
    let spec = leases.get("e2e-leader").unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""), "released");
    assert_eq!(
        terms.lock().iter().map(|t| t.1).collect::<Vec<_>>(),
        [true, false, true, false],
        "one term at a time"
    );
}

/// (5b) A sharded controller: ConfigMaps of the test's namespace spread over two shards,
/// one stopping cleanly and a third joining; labels converge to the rendezvous assignment
/// over the live shards, every shard caches exactly its objects, its Lease is released on
/// stop, and no ConfigMap is ever inside two shards' reconciles at once.
fn sharded_controller_moves_objects_between_shards(env: &Env) {
    use kube_informer::cache::SharedInformerFactory;
    use kube_informer::controller::sharding::{
        shard_for, Ring, ShardConfig, Sharder, SharderConfig,
    };
    use kube_informer::controller::{Action, Controller, LeaderElectionConfig, Lease};

    let ns = test_namespace(env);
    let ring = Ring::new("e2e-shards", &ns.name).unwrap();
    let cms: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    for i in 0..12 {
        cms.create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("item-{i:02}"), "labels": {"e2e/sharded": "true"}}}),
        )
        .unwrap();
    }
    let inside: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let timings = |c: LeaderElectionConfig| {
        c.lease_duration(Duration::from_secs(6))
            .renew_deadline(Duration::from_secs(4))
            .retry_period(Duration::from_millis(500))
    };
    struct Replica {
        id: String,
        sharder: Sharder,
        controller: Controller<DynamicObject>,
        factory: SharedInformerFactory,
        informer: SharedIndexInformer<DynamicObject>,
    }
    let start = |id: &str| {
        let sharder = Sharder::start(
            env.client.clone(),
            SharderConfig::new(ring.clone(), &configmaps(), id)
                .namespace(&ns.name)
                .selector("e2e/sharded=true")
                .fence_duration(Duration::from_secs(6))
                .resync(Duration::from_secs(3))
                .leader_election(timings(LeaderElectionConfig::new(
                    &ns.name,
                    &ring.sharder_lease(),
                    id,
                ))),
        )
        .unwrap();
        let shard = ShardConfig::new(ring.clone(), id)
            .unwrap()
            .lease_duration(Duration::from_secs(6))
            .renew_deadline(Duration::from_secs(4))
            .retry_period(Duration::from_millis(500));
        let options = shard.factory_options().namespace(&ns.name);
        let factory = SharedInformerFactory::with_options(env.client.clone(), options);
        let informer = factory.dynamic_informer(&configmaps());
        let (inside, overlaps, me) = (Arc::clone(&inside), Arc::clone(&overlaps), id.to_owned());
        let controller = Controller::builder(&format!("e2e-{id}"), informer.clone())
            .sharded(env.client.clone(), shard)
            .run(move |key: &str| -> Result<Action, Error> {
                if let Some(other) = inside.lock().insert(key.to_owned(), me.clone()) {
                    overlaps.lock().push(format!("{key}: {me} while {other}"));
                }
                std::thread::sleep(Duration::from_millis(5));
                inside.lock().remove(key);
                Ok(Action::Done)
            })
            .unwrap();
        Replica {
            id: id.to_owned(),
            sharder,
            controller,
            factory,
            informer,
        }
    };
    let shard_label = ring.shard_label();
    let converged = |live: &[&str], replicas: &[&Replica]| {
        let Ok(list) = cms.list_all(&ListParams::default().labels("e2e/sharded=true")) else {
            return false;
        };
        let mut per: BTreeMap<String, usize> = BTreeMap::new();
        for cm in &list.items {
            let want = shard_for(&cm.metadata.key(), live);
            if cm.metadata.label(&shard_label) != want
                || cm.metadata.label(&ring.drain_label()).is_some()
            {
                return false;
            }
            *per.entry(want.unwrap_or("").to_owned()).or_default() += 1;
        }
        replicas
            .iter()
            .all(|r| r.informer.store().len() == per.get(&r.id).copied().unwrap_or(0))
    };
    let a = start("shard-a");
    let b = start("shard-b");
    wait_until("the ConfigMaps spread over shard-a and shard-b", || {
        converged(&["shard-a", "shard-b"], &[&a, &b])
    });
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), &ns.name);
    let holder = |name: &str| leases.get(name).ok().and_then(|l| l.spec?.holder_identity);
    assert_eq!(
        holder(&ring.shard_lease("shard-a")).as_deref(),
        Some("shard-a")
    );
    a.controller.stop();
    assert_ne!(
        holder(&ring.shard_lease("shard-a")).as_deref(),
        Some("shard-a"),
        "stop released the shard Lease"
    );
    a.sharder.stop();
    a.factory.shutdown();
    wait_until("every ConfigMap on shard-b", || {
        converged(&["shard-b"], &[&b])
    });
    let c = start("shard-c");
    wait_until("the ConfigMaps spread over shard-b and shard-c", || {
        converged(&["shard-b", "shard-c"], &[&b, &c])
    });
    for r in [b, c] {
        r.controller.stop();
        r.sharder.stop();
        r.factory.shutdown();
    }
    assert!(
        overlaps.lock().is_empty(),
        "reconciled by two shards at once: {:?}",
        overlaps.lock()
    );
}

/// (6) The event recorder: an Event about an object the test made, then its first repeat
/// as a series of 2 (`events.k8s.io/v1`; read back through the API).
fn an_event_about_an_object(env: &Env) {
    use kube_informer::controller::{
        EventRecorder, EventRecorderConfig, EventType, ObjectReference,
    };

    let ns = test_namespace(env);
    let cms: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    let cm = cms
        .create(
            &PostParams::default(),
            &json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "evented"}}),
        )
        .unwrap();
    let about = ObjectReference::from_object(&configmaps(), &cm);
    let recorder = EventRecorder::start(
        env.client.clone(),
        EventRecorderConfig::new("kube-informer.test/e2e", "e2e-0"),
    )
    .unwrap();
    recorder.record(&about, EventType::Normal, "Synced", "Reconcile", "first");
    let events = ApiResource::new("events.k8s.io", "v1", "Event", "events", true);
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns.name, &events);
    let ours = || -> Vec<serde_json::Value> {
        api.list(&ListParams::default())
            .map(|l| l.items)
            .unwrap_or_default()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|e| e["regarding"]["uid"].as_str() == cm.metadata.uid.as_deref())
            .collect()
    };
    wait_until("the Event", || ours().len() == 1);
    let e = &ours()[0];
    assert_eq!(e["reason"], "Synced");
    assert_eq!(e["type"], "Normal");
    assert_eq!(e["note"], "first");
    assert_eq!(e["reportingController"], "kube-informer.test/e2e");
    assert_eq!(e["regarding"]["name"], "evented");
    recorder.record(&about, EventType::Normal, "Synced", "Reconcile", "again");
    wait_until("the series count 2", || {
        let l = ours();
        l.len() == 1 && l[0]["series"]["count"] == 2
    });
    // The counter moves just after the server answered.
    wait_until("the patch counted", || recorder.stats().patched == 1);
    let stats = recorder.stats();
    assert_eq!((stats.created, stats.failed), (1, 0), "{stats:?}");
    recorder.stop();
}

/// (8) Discovery and a metadata-only informer: the mapper finds ConfigMaps by short name and
/// kind; kubectl's disk cache is written and read back by a second client without a request;
/// an informer of `PartialObjectMetadata` sees a ConfigMap's labels change and its delete.
fn discovery_and_a_metadata_only_informer(env: &Env) {
    let cache_root = tempfile::tempdir().unwrap();
    let disk = || DiskCache::new(cache_root.path(), &env.config.server);
    let first = Discovery::new(env.client.clone()).with_disk_cache(disk());
    let mapper = RestMapper::new(first);
    for q in ["cm", "configmaps", "ConfigMap", "v1/ConfigMap"] {
        assert_eq!(mapper.resolve(q).unwrap(), configmaps(), "{q}");
    }
    let deployments = mapper.resolve("deploy").unwrap();
    assert_eq!(
        (deployments.group.as_str(), deployments.plural.as_str()),
        ("apps", "deployments")
    );
    let err = mapper.resolve("configmapz").unwrap_err().to_string();
    assert!(err.contains("configmaps"), "a close match is named: {err}");
    let second = Discovery::new(env.client.clone()).with_disk_cache(disk());
    let (_, origin) = second.data_with_origin().unwrap();
    assert_eq!(
        origin,
        Origin::Disk,
        "the second client reads the first one's files"
    );

    let ns = test_namespace(env);
    let api: Api<PartialObjectMetadata> =
        Api::namespaced_with(env.client.clone(), &ns.name, &mapper.resolve("cm").unwrap());
    let inf = SharedIndexInformer::new(api.clone(), InformerConfig::default());
    let deleted = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = deleted.clone();
    inf.add_event_handler(HandlerFns::new().on_delete(
        move |gone: DeletedObject<PartialObjectMetadata>| {
            seen.lock().push(gone.object().metadata.name().to_owned());
        },
    ))
    .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE), "initial sync");
    let writer: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &ns.name, &configmaps());
    writer
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "meta", "namespace": ns.name, "labels": {"stage": "one"}},
            "data": {"big": "x".repeat(1000)}}),
        )
        .unwrap();
    let key = format!("{}/meta", ns.name);
    let label = |stage: &str| {
        inf.store()
            .get(&key)
            .and_then(|o| o.metadata.label("stage").map(|l| l == stage))
            == Some(true)
    };
    wait_until("the metadata of meta", || label("one"));
    let cached = inf.store().get(&key).unwrap();
    assert_eq!(
        cached.kind.as_deref(),
        Some("PartialObjectMetadata"),
        "only metadata was asked for and kept"
    );
    writer
        .patch(
            "meta",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"stage": "two"}}})),
        )
        .unwrap();
    wait_until("the label change of meta", || label("two"));
    writer.delete("meta", &DeleteParams::default()).unwrap();
    wait_until("the delete of meta", || {
        deleted.lock().contains(&"meta".to_owned())
    });
    assert!(inf.store().get(&key).is_none());
    inf.stop();
}

// ---------------------------------------------------------------------------------------
// Against a real cluster (opt-in).

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_configmaps_seen_by_an_informer() {
    if let Some(env) = Env::real() {
        configmaps_seen_by_an_informer(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_custom_resource_via_dynamic_object() {
    if let Some(env) = Env::real() {
        custom_resource_via_dynamic_object(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_forbidden_is_an_error_with_its_status() {
    if let Some(env) = Env::real() {
        forbidden_is_an_error_with_its_status(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_watch_resumes_after_the_connection_is_cut() {
    if let Some(env) = Env::real() {
        watch_resumes_after_the_connection_is_cut(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_writes_a_controller_makes() {
    if let Some(env) = Env::real() {
        writes_a_controller_makes(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_sharded_controller_moves_objects_between_shards() {
    if let Some(env) = Env::real() {
        sharded_controller_moves_objects_between_shards(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_two_electors_hand_over() {
    if let Some(env) = Env::real() {
        two_electors_hand_over(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_an_event_about_an_object() {
    if let Some(env) = Env::real() {
        an_event_about_an_object(&env);
    }
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --test e2e -- --ignored"]
fn real_discovery_and_a_metadata_only_informer() {
    if let Some(env) = Env::real() {
        discovery_and_a_metadata_only_informer(&env);
    }
}

/// Needs a kube-apiserver the suite may restart: `KUBE_E2E_RESTART` is a shell command that
/// restarts it with etcd kept (for a kind cluster, for example
/// `docker exec kind-control-plane sh -c 'crictl stop $(crictl ps -q --name kube-apiserver)'`).
/// Skipped, saying so, without one.
#[test]
#[ignore = "needs a cluster whose API server it may restart: KUBE_E2E=1 KUBE_E2E_RESTART='...' cargo test --test e2e -- --ignored"]
fn real_informer_recovers_after_an_apiserver_restart() {
    let Some(env) = Env::real() else { return };
    let Ok(command) = std::env::var("KUBE_E2E_RESTART") else {
        println!("skipped: needs a restartable API server: set KUBE_E2E_RESTART to a shell command that restarts kube-apiserver (etcd kept)");
        return;
    };
    informer_recovers_after_an_apiserver_restart(&env, &|| {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .status()
            .unwrap_or_else(|e| panic!("KUBE_E2E_RESTART could not run: {e}"));
        assert!(status.success(), "KUBE_E2E_RESTART failed: {status}");
    });
}

// ---------------------------------------------------------------------------------------
// The same bodies against the test API server, in every `cargo test`.

#[test]
fn fake_discovery_and_a_metadata_only_informer() {
    discovery_and_a_metadata_only_informer(&fake_env());
}

#[test]
fn fake_an_event_about_an_object() {
    an_event_about_an_object(&fake_env());
}

#[test]
fn fake_writes_a_controller_makes() {
    writes_a_controller_makes(&fake_env());
}

#[test]
fn fake_configmaps_seen_by_an_informer() {
    configmaps_seen_by_an_informer(&fake_env());
}

#[test]
fn fake_custom_resource_via_dynamic_object() {
    custom_resource_via_dynamic_object(&fake_env());
}

#[test]
fn fake_forbidden_is_an_error_with_its_status() {
    forbidden_is_an_error_with_its_status(&fake_env());
}

#[test]
fn fake_sharded_controller_moves_objects_between_shards() {
    sharded_controller_moves_objects_between_shards(&fake_env());
}

#[test]
fn fake_two_electors_hand_over() {
    two_electors_hand_over(&fake_env());
}

#[test]
fn fake_informer_recovers_after_an_apiserver_restart() {
    let env = fake_env();
    let server = env.fake.as_ref().expect("the test API server");
    informer_recovers_after_an_apiserver_restart(&env, &|| server.restart().unwrap());
}

#[test]
fn fake_watch_resumes_after_the_connection_is_cut() {
    watch_resumes_after_the_connection_is_cut(&fake_env());
}

/// The way in of the real suite, a kubeconfig, here naming the test API server.
#[test]
fn fake_through_a_kubeconfig_watch_resumes_after_the_connection_is_cut() {
    use base64::Engine as _;
    let server = ApiServer::builder()
        .tls()
        .token("e2e-token")
        .bookmark_interval(Duration::from_millis(200))
        .start();
    let ca = base64::engine::general_purpose::STANDARD.encode(kube_informer::testing::CA_PEM);
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: e2e\nclusters:\n- name: fake\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: me\n  user:\n    token: e2e-token\ncontexts:\n- name: e2e\n  context: {{cluster: fake, user: me}}\n",
        server.url()
    );
    let config = Config::from_kubeconfig_str(&kubeconfig, &KubeconfigOptions::default()).unwrap();
    watch_resumes_after_the_connection_is_cut(&Env::from_config(&config, Some(server)));
}

#[test]
fn server_urls_are_split_for_the_forwarder() {
    assert_eq!(
        split_url("https://10.0.0.1:6443"),
        ("https".into(), "10.0.0.1".into(), 6443, "".into())
    );
    assert_eq!(
        split_url("https://[::1]:6443/k8s/"),
        ("https".into(), "::1".into(), 6443, "/k8s".into())
    );
    assert_eq!(
        split_url("https://api.example.com"),
        ("https".into(), "api.example.com".into(), 443, "".into())
    );
}
