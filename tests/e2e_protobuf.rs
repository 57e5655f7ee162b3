//! End-to-end, opt-in (feature `protobuf` with k8s-openapi's types): a typed `Pod` informer
//! over protobuf and a custom resource informer in JSON, side by side on one client, against
//! a real cluster:
//!
//! ```text
//! KUBE_E2E=1 cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test e2e_protobuf -- --ignored --nocapture
//! ```
//!
//! The `real_*` test is ignored by default and, even when run, only prints `skipped: ...`
//! unless `KUBE_E2E=1` is set and a kubeconfig (or an in-cluster service account) is found
//! the way kubectl finds one. It needs the rights to create a namespace and a CRD, and touches
//! only what it creates: a namespace `kube-informer-e2e-<random>` and a CRD
//! `gadgets.e2e-pb-<random>.kube-informer.test`, deleted at the end by guards (also when the
//! test fails). Its pods name a scheduler that does not exist: they stay Pending, nothing
//! runs them, and a delete removes them at once.
//!
//! The same body runs in `cargo test` (the protobuf step of `.ci/run`) against
//! `testing::ApiServer` over TLS (`fake_*`), told to answer what a cluster would (the CRD's
//! `Established` condition).
#![cfg(all(feature = "protobuf", feature = "k8s-openapi"))]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::e2e::{self, Env};
use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::{ApiResource, DynamicObject, Meta, Object, PartialObjectMetadata};
use kube_informer::cache::{InformerConfig, ReflectorConfig, SharedIndexInformer};
use kube_informer::{Api, DeleteParams, ListParams, Method, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

/// Bound for anything the test waits on; a real cluster can be slow (never a timing
/// assertion).
const PATIENCE: Duration = Duration::from_secs(60);
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    e2e::wait_until(what, PATIENCE, cond)
}

/// What one handler was told, in order: `+name@rv`, `~name@old->new`, `-name`.
#[derive(Clone, Default)]
struct Told(Arc<Mutex<Vec<String>>>);

impl Told {
    fn saw(&self, s: &str) -> bool {
        self.0.lock().unwrap().iter().any(|e| e == s)
    }
}

fn name_rv<K: Object>(o: &K) -> (String, String) {
    let m = o.metadata();
    (m.name().to_owned(), m.resource_version().to_owned())
}

/// An informer on `api` whose handler writes into a `Told`.
fn informer<K: Object + Send + Sync + 'static>(api: Api<K>) -> (SharedIndexInformer<K>, Told) {
    let inf = SharedIndexInformer::new(
        api,
        InformerConfig::new().reflector(
            ReflectorConfig::new().backoff(Duration::from_millis(100), Duration::from_secs(1)),
        ),
    );
    let told = Told::default();
    let (a, u, d) = (told.clone(), told.clone(), told.clone());
    inf.add_event_handler(
        inf.handler_fns()
            .on_add(move |o: Arc<K>, _| {
                let (n, rv) = name_rv(o.as_ref());
                a.0.lock().unwrap().push(format!("+{n}@{rv}"));
            })
            .on_update(move |old: Arc<K>, new: Arc<K>| {
                let ((n, old), (_, new)) = (name_rv(old.as_ref()), name_rv(new.as_ref()));
                u.0.lock().unwrap().push(format!("~{n}@{old}->{new}"));
            })
            .on_delete(move |gone| {
                let (n, _) = name_rv(gone.object().as_ref());
                d.0.lock().unwrap().push(format!("-{n}"));
            }),
    )
    .unwrap();
    (inf, told)
}

/// name -> resourceVersion of an informer's cache.
fn cached<K: Object>(inf: &SharedIndexInformer<K>) -> BTreeMap<String, String> {
    inf.store()
        .list()
        .iter()
        .map(|o| name_rv(o.as_ref()))
        .collect()
}

/// name -> resourceVersion the server lists now (metadata only, whatever the resource).
fn listed(api: &Api<PartialObjectMetadata>) -> BTreeMap<String, String> {
    api.list(&ListParams::default())
        .expect("list")
        .items
        .iter()
        .map(name_rv)
        .collect()
}

/// A pod that needs no node: a scheduler nobody runs, so it stays Pending and nothing runs
/// it; deleting it removes it at once (no kubelet to wait for).
fn pod(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": {"app": "e2e"}},
           "spec": {"schedulerName": "kube-informer-e2e-none", "automountServiceAccountToken": false,
                    "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}})
}

/// The scenario: a typed `Pod` informer (protobuf on the wire) and a `DynamicObject` informer
/// of a custom resource (JSON: kube-apiserver serves custom resources in JSON only) on one
/// client, both synced, both told of an update and a delete, both caches equal to the server.
fn typed_protobuf_and_custom_resource_json_side_by_side(env: &Env) {
    let group = format!("e2e-pb-{}.kube-informer.test", e2e::random_suffix());
    let gadgets_ar = ApiResource::new(&group, "v1", "Gadget", "gadgets", true);
    let _crd = e2e::open_crd(env, &gadgets_ar);
    let ns_owned = e2e::namespace(&env.client, "kube-informer-e2e");
    let ns = ns_owned.name.clone();

    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &ns);
    let pod_names: Api<PartialObjectMetadata> =
        Api::namespaced_with(env.client.clone(), &ns, &ApiResource::of::<Pod>());
    let gadgets: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns, &gadgets_ar);
    let gadget_names: Api<PartialObjectMetadata> =
        Api::namespaced_with(env.client.clone(), &ns, &gadgets_ar);
    let gadget = |name: &str, size: u32| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
               "metadata": {"name": name, "namespace": ns}, "spec": {"size": size}})
    };

    // A new namespace admits pods once its `default` ServiceAccount exists (a moment on a
    // real cluster), and a new CRD serves objects a moment after `Established`: retry both.
    let create_pod = |name: &str| -> Pod {
        let mut made = None;
        wait_until(&format!("pod {name} to be admitted"), || {
            match pods.create(&PostParams::default(), &pod(&ns, name)) {
                Ok(p) => {
                    made = Some(p);
                    true
                }
                Err(e) if e.to_string().contains("serviceaccount") => false,
                Err(e) => panic!("creating pod {name}: {e}"),
            }
        });
        made.expect("created")
    };
    let p0 = create_pod("p0");
    create_pod("p1");
    let mut first = None;
    wait_until("the new resource to accept objects", || {
        match gadgets.create(&PostParams::default(), &gadget("g0", 0)) {
            Ok(o) => {
                first = Some(o);
                true
            }
            Err(e) if e.code() == Some(404) => false,
            Err(e) => panic!("creating the first gadget: {e}"),
        }
    });
    let g0 = first.expect("created");
    gadgets
        .create(&PostParams::default(), &gadget("g1", 1))
        .unwrap();

    // Both informers on one client; both sync.
    let (pod_inf, pods_told) = informer(pods.clone());
    let (gadget_inf, gadgets_told) = informer(gadgets.clone());
    pod_inf.start().unwrap();
    gadget_inf.start().unwrap();
    assert!(
        pod_inf.wait_for_cache_sync(PATIENCE),
        "the pod informer's sync"
    );
    assert!(
        gadget_inf.wait_for_cache_sync(PATIENCE),
        "the gadget informer's sync"
    );
    // Handlers are told on their own threads, after the cache: synced is not yet told.
    let (p0_name, p0_rv) = name_rv(&p0);
    let p0_added = format!("+{p0_name}@{p0_rv}");
    wait_until("the pod handler told of p0", || pods_told.saw(&p0_added));
    let (_, g0_rv) = name_rv(&g0);
    let g0_added = format!("+g0@{g0_rv}");
    wait_until("the gadget handler told of g0", || {
        gadgets_told.saw(&g0_added)
    });
    assert_eq!(cached(&pod_inf).len(), 2);
    assert_eq!(cached(&gadget_inf).len(), 2);

    // An update and a delete of each, through the watches.
    let p0b = pods
        .patch(
            "p0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
        )
        .unwrap();
    let g0b = gadgets
        .patch(
            "g0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 10}})),
        )
        .unwrap();
    pods.delete("p1", &DeleteParams::default()).unwrap();
    gadgets.delete("g1", &DeleteParams::default()).unwrap();
    let (_, p0b_rv) = name_rv(&p0b);
    let (_, g0b_rv) = name_rv(&g0b);
    wait_until("the pod's update and delete", || {
        pods_told.saw(&format!("~p0@{p0_rv}->{p0b_rv}")) && pods_told.saw("-p1")
    });
    wait_until("the gadget's update and delete", || {
        gadgets_told.saw(&format!("~g0@{g0_rv}->{g0b_rv}")) && gadgets_told.saw("-g1")
    });
    wait_until("both caches equal to the server", || {
        cached(&pod_inf) == listed(&pod_names) && cached(&gadget_inf) == listed(&gadget_names)
    });
    let cached_p0 = pod_inf.store().get(&format!("{ns}/p0")).expect("p0 cached");
    assert_eq!(
        Object::metadata(cached_p0.as_ref()).label("seen"),
        Some("yes")
    );
    assert_eq!(cached_p0.spec.as_ref().unwrap().containers[0].name, "app");
    let cached_g0 = gadget_inf
        .store()
        .get(&format!("{ns}/g0"))
        .expect("g0 cached");
    assert_eq!(
        cached_g0.decode_field::<Value>("spec").unwrap(),
        Some(json!({"size": 10}))
    );

    // On the test server, what the informers asked for (before the GETs below add to the
    // log): protobuf first for pods, lists and watches; never protobuf for the custom resource.
    if let Some(server) = &env.fake {
        let asked = |path: &str| -> Vec<(String, String)> {
            server
                .request_headers()
                .iter()
                .filter(|r| r.request.contains(path))
                .flat_map(|r| {
                    r.values("accept")
                        .into_iter()
                        .map(|a| (r.request.clone(), a.to_owned()))
                })
                // Not the metadata-only lists of `listed`.
                .filter(|(_, a)| !a.contains("as=PartialObjectMetadata"))
                .collect()
        };
        let pod_asked = asked(&format!("/namespaces/{ns}/pods"));
        assert!(
            pod_asked.iter().any(|(r, _)| r.contains("watch=")),
            "{pod_asked:?}"
        );
        assert!(
            pod_asked.iter().all(|(_, a)| a.starts_with(PROTOBUF)),
            "{pod_asked:?}"
        );
        let gadget_asked = asked(&format!("/namespaces/{ns}/gadgets"));
        assert!(
            gadget_asked.iter().any(|(r, _)| r.contains("watch=")),
            "{gadget_asked:?}"
        );
        assert!(
            gadget_asked.iter().all(|(_, a)| !a.contains("protobuf")),
            "{gadget_asked:?}"
        );
    }
    // From this server (a real one included): the typed informer's Accept gets protobuf back
    // for pods, and the JSON fallback for the custom resource.
    let content_type = |path: String| {
        env.client
            .request(Method::GET, &path)
            .query("limit", "1")
            .accept(<Pod as Object>::PROTOBUF_LIST_ACCEPT)
            .send()
            .expect("a GET with the typed informer's Accept")
            .header("content-type")
            .unwrap_or("")
            .to_owned()
    };
    let pod_type = content_type(format!("/api/v1/namespaces/{ns}/pods"));
    assert!(pod_type.starts_with(PROTOBUF), "pods answered {pod_type:?}");
    let gadget_type = content_type(format!("/apis/{group}/v1/namespaces/{ns}/gadgets"));
    assert!(
        gadget_type.starts_with("application/json"),
        "gadgets answered {gadget_type:?}"
    );
    pod_inf.stop();
    gadget_inf.stop();
}

#[test]
#[ignore = "needs a cluster: KUBE_E2E=1 cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test e2e_protobuf -- --ignored"]
fn real_typed_protobuf_and_custom_resource_json_side_by_side() {
    if let Some(env) = Env::real() {
        typed_protobuf_and_custom_resource_json_side_by_side(&env);
    }
}

#[test]
fn fake_typed_protobuf_and_custom_resource_json_side_by_side() {
    typed_protobuf_and_custom_resource_json_side_by_side(&Env::fake());
}
