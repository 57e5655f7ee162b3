//! k8s-openapi's types through the whole library (feature `k8s-openapi`), over real HTTP
//! against the test API server: `Api<Pod>` (every verb), `Api<ConfigMap>`, a cluster-scoped
//! kind, an informer of Pods with its lister, an index and a 410 relist, a controller
//! reconciling typed ConfigMaps, the owner trigger and the finalizer helper on typed objects,
//! `strip_managed_fields`, and the captured responses decoded into k8s-openapi's types.
//!
//! Run with a Kubernetes version feature: `cargo test --features k8s-openapi,k8s-openapi/v1_35`.
#![cfg(feature = "k8s-openapi")]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_informer::api::{ApiResource, Meta, Object, ObjectList, Resource, WatchEvent};
use kube_informer::cache::{
    strip_managed_fields, FactoryOptions, IndexFn, InformerConfig, ReflectorConfig,
    SharedIndexInformer, SharedInformerFactory,
};
use kube_informer::client::DeleteResponse;
use kube_informer::controller::{finalizer, Action, Controller, FinalizerEvent};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{
    Api, Client, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams,
};
use serde_json::json;

const NS: &str = "lab";

fn client(server: &ApiServer) -> Client {
    let mut c = server.client_config();
    c.qps = 0.0;
    Client::new(c).unwrap()
}

fn meta(ns: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: ns.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn pod(name: &str, node: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..meta(Some(NS), name)
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_owned),
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.27".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: meta(Some(NS), name),
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

#[test]
fn the_traits_come_from_k8s_openapi_s_own() {
    assert_eq!(
        ApiResource::of::<Pod>(),
        ApiResource::new("", "v1", "Pod", "pods", true)
    );
    assert_eq!(
        ApiResource::of::<Deployment>(),
        ApiResource::new("apps", "v1", "Deployment", "deployments", true)
    );
    assert_eq!(
        ApiResource::of::<Node>(),
        ApiResource::new("", "v1", "Node", "nodes", false)
    );
    assert_eq!(<Lease as Resource>::PLURAL, "leases");
    assert!(!ApiResource::of::<Namespace>().namespaced);
    // Both `metadata()` methods are there; ours is called through `Object`.
    let p = pod("web-0", None);
    assert_eq!(Object::metadata(&p).key(), "lab/web-0");
    assert_eq!(Object::metadata(&p).label("app"), Some("web"));
}

#[test]
fn api_pod_reads_writes_and_watches() {
    let server = ApiServer::start();
    let api: Api<Pod> = Api::namespaced(client(&server), NS);
    let rv = server.resource_version().to_string();

    // create, get
    let created = api
        .create(&PostParams::default(), &pod("web-0", None))
        .unwrap();
    assert_eq!(created.metadata.name(), "web-0");
    assert!(created.metadata.uid.is_some());
    assert!(!created.metadata.resource_version().is_empty());
    let got = api.get("web-0").unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(got.spec.as_ref().unwrap().containers[0].name, "app");
    // The server's defaults decode into the typed fields.
    assert_eq!(
        got.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );

    // a paged list
    for i in 1..7 {
        api.create(&PostParams::default(), &pod(&format!("web-{i}"), None))
            .unwrap();
    }
    let first: ObjectList<Pod> = api.list(&ListParams::default().limit(3)).unwrap();
    assert_eq!(first.items.len(), 3);
    assert!(first.metadata.continue_token.is_some());
    let pages: Vec<_> = api
        .pages(&ListParams::default().limit(3))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(pages.len(), 3);
    let all = api.list_all(&ListParams::default().limit(3)).unwrap();
    let names: Vec<_> = all.items.iter().map(|p| p.metadata.name()).collect();
    assert_eq!(
        names,
        (0..7).map(|i| format!("web-{i}")).collect::<Vec<_>>()
    );
    let selected = api.list(&ListParams::default().labels("app=web")).unwrap();
    assert_eq!(selected.items.len(), 7);

    // replace: the read object with a new label
    let mut changed = api.get("web-1").unwrap();
    changed
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("tier".into(), "front".into());
    let replaced = api
        .replace("web-1", &PostParams::default(), &changed)
        .unwrap();
    assert_eq!(Object::metadata(&replaced).label("tier"), Some("front"));
    assert_ne!(
        replaced.metadata.resource_version,
        changed.metadata.resource_version
    );

    // patch: merge, then server-side apply of a typed object
    let merged = api
        .patch(
            "web-2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/note": "hi"}}})),
        )
        .unwrap();
    assert_eq!(
        Object::metadata(&merged).annotation("example.com/note"),
        Some("hi")
    );
    let mut applied_pod = pod("web-applied", None);
    applied_pod
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("applied".into(), "yes".into());
    let applied = api
        .patch(
            "web-applied",
            &PatchParams::apply("typed-test"),
            &Patch::Apply(&applied_pod),
        )
        .unwrap();
    assert_eq!(Object::metadata(&applied).label("applied"), Some("yes"));
    let managers: Vec<_> = applied
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.clone(), m.operation.clone()))
        .collect();
    assert!(
        managers.contains(&(Some("typed-test".into()), Some("Apply".into()))),
        "{managers:?}"
    );

    // delete: an unscheduled pod is removed at once and answered as it was deleted
    match api.delete("web-6", &DeleteParams::default()).unwrap() {
        DeleteResponse::Object(p) => {
            assert_eq!(p.metadata.name(), "web-6");
            assert!(Object::metadata(&p).is_being_deleted());
        }
        other => panic!("{other:?}"),
    }
    assert!(api.get("web-6").unwrap_err().is_not_found());

    // watch from before it all: every change comes typed
    // (8 added, 2 modified, the deleted pod marked then removed: 12 events; the server then
    // drops the connection, which ends the stream with an error.)
    server.inject(Target::Watch, Fault::CloseAfterEvents(12));
    let events: Vec<_> = api
        .watch(&WatchParams::from_version(&rv))
        .unwrap()
        .map_while(Result::ok)
        .collect();
    assert_eq!(events.len(), 12);
    let added: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Added(p) => Some(p.metadata.name().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(added.len(), 8, "{added:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, WatchEvent::Modified(p) if Object::metadata(p).label("tier") == Some("front"))));
    assert!(events
        .iter()
        .any(|e| matches!(e, WatchEvent::Deleted(p) if p.metadata.name() == "web-6")));
}

#[test]
fn api_config_map_and_a_cluster_scoped_kind() {
    let server = ApiServer::start();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), NS);
    let cm = cms
        .create(
            &PostParams::default(),
            &config_map("settings", &[("mode", "fast")]),
        )
        .unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["mode"], "fast");
    let patched = cms
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"extra": "1"}})),
        )
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap().len(), 2);
    let applied = cms
        .patch(
            "settings",
            &PatchParams::apply("typed-test").force(),
            &Patch::Apply(config_map("settings", &[("mode", "slow")])),
        )
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap()["mode"], "slow");
    assert_eq!(cms.list(&ListParams::default()).unwrap().items.len(), 1);
    match cms.delete("settings", &DeleteParams::default()).unwrap() {
        DeleteResponse::Status(s) => assert_eq!(s.status, "Success"),
        other => panic!("{other:?}"),
    }

    // Cluster-scoped: no namespace in paths or keys.
    let namespaces: Api<Namespace> = Api::all(client(&server));
    let created = namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta(None, "team-a"),
                ..Namespace::default()
            },
        )
        .unwrap();
    assert_eq!(Object::metadata(&created).key(), "team-a");
    let nodes: Api<Node> = Api::all(client(&server));
    nodes
        .create(
            &PostParams::default(),
            &Node {
                metadata: meta(None, "node-1"),
                ..Node::default()
            },
        )
        .unwrap();
    let listed = nodes.list(&ListParams::default()).unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(Object::metadata(&listed.items[0]).key(), "node-1");
    assert!(server
        .requests()
        .iter()
        .any(|r| r.starts_with("GET /api/v1/nodes")));
}

fn by_node() -> (String, IndexFn<Pod>) {
    (
        "node".to_owned(),
        Arc::new(|p: &Pod| {
            Ok(p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect())
        }),
    )
}

#[test]
fn an_informer_of_pods_lists_watches_indexes_and_relists() {
    let server = ApiServer::start();
    let api: Api<Pod> = Api::namespaced(client(&server), NS);
    for i in 0..5 {
        let node = ["n1", "n2"][i % 2];
        api.create(
            &PostParams::default(),
            &pod(&format!("web-{i}"), Some(node)),
        )
        .unwrap();
    }
    let options = FactoryOptions::new()
        .reflector(
            ReflectorConfig::new()
                .page_size(2)
                .backoff(Duration::from_millis(50), Duration::from_millis(400)),
        )
        .strip_managed_fields(true);
    let factory = SharedInformerFactory::with_options(client(&server), options);
    let pods = factory.informer::<Pod>();
    pods.add_indexers([by_node()]).unwrap();
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    let lister = pods.lister();
    assert_eq!(lister.list_all().len(), 5);
    assert_eq!(lister.by_index("node", "n1").unwrap().len(), 3);
    assert_eq!(lister.by_index("node", "n2").unwrap().len(), 2);
    let p = lister.get(Some(NS), "web-0").unwrap();
    assert_eq!(p.spec.as_ref().unwrap().node_name.as_deref(), Some("n1"));
    // Every HTTP write recorded managed fields; the factory's transform dropped them.
    assert!(
        server.get(&pods_resource(), Some(NS), "web-0").unwrap()["metadata"]
            .get("managedFields")
            .is_some()
    );
    assert!(p.metadata.managed_fields.is_none());
    assert_eq!(lister.list(&"app=web".parse().unwrap()).len(), 5);
    assert_eq!(
        lister
            .list_namespace(NS, &"app=none".parse().unwrap())
            .len(),
        0
    );

    // A change arrives by watch and moves the pod in the index.
    api.patch(
        "web-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"moved": "yes"}}})),
    )
    .unwrap();
    wait_until("the labelled pod in the cache", || {
        lister
            .get(Some(NS), "web-1")
            .is_some_and(|p| Object::metadata(p.as_ref()).label("moved") == Some("yes"))
    });

    // The server comes back having compacted its history and lost a pod: 410, relist.
    let is_list = |r: &String| r.starts_with("GET ") && !r.contains("watch=");
    let lists_before = server.requests().iter().filter(|r| is_list(r)).count();
    server.go_down();
    server.delete(&pods_resource(), Some(NS), "web-2").unwrap();
    server.compact();
    server.come_back().unwrap();
    wait_until("the lost pod gone after a relist", || {
        lister.get(Some(NS), "web-2").is_none() && lister.list_all().len() == 4
    });
    assert_eq!(lister.by_index("node", "n1").unwrap().len(), 2);
    let lists_after = server.requests().iter().filter(|r| is_list(r)).count();
    assert!(lists_after > lists_before, "a relist happened");
    factory.shutdown();
}

fn pods_resource() -> ApiResource {
    ApiResource::of::<Pod>()
}

#[test]
fn a_controller_reconciles_typed_config_maps_by_key() {
    let server = ApiServer::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), NS);
    for i in 0..4 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), &[("want", &i.to_string())]),
        )
        .unwrap();
    }
    let factory = SharedInformerFactory::new(client(&server));
    let informer = factory.informer::<ConfigMap>();
    let lister = informer.lister();
    let writer = api.clone();
    let (tx, rx) = crossbeam_channel::unbounded();
    let controller = Controller::builder("config-maps", informer)
        .workers(2)
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            let (ns, name) = key.split_once('/').unwrap();
            let Some(cm) = lister.get(Some(ns), name) else {
                return Ok(Action::Done);
            };
            let want = cm.data.as_ref().and_then(|d| d.get("want")).cloned();
            if Object::metadata(cm.as_ref()).annotation("example.com/seen") != want.as_deref() {
                writer.patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {"example.com/seen": want}}})),
                )?;
            }
            tx.send(key.to_owned()).ok();
            Ok(Action::Done)
        })
        .unwrap();
    let mut keys = std::collections::BTreeSet::new();
    while keys.len() < 4 {
        keys.insert(rx.recv_timeout(PATIENCE).expect("a reconciled key"));
    }
    assert_eq!(
        keys.into_iter().collect::<Vec<_>>(),
        ["lab/cm-0", "lab/cm-1", "lab/cm-2", "lab/cm-3"]
    );
    for i in 0..4 {
        let cm = api.get(&format!("cm-{i}")).unwrap();
        assert_eq!(
            Object::metadata(&cm).annotation("example.com/seen"),
            Some(i.to_string().as_str())
        );
    }
    controller.stop();
    factory.shutdown();
}

fn deployment(name: &str) -> Deployment {
    Deployment {
        metadata: meta(Some(NS), name),
        ..Deployment::default()
    }
}

#[test]
fn the_owner_trigger_reads_typed_owner_references() {
    let server = ApiServer::start();
    let c = client(&server);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    let replicasets: Api<ReplicaSet> = Api::namespaced(c.clone(), NS);
    let web = deployments
        .create(&PostParams::default(), &deployment("web"))
        .unwrap();
    let factory = SharedInformerFactory::new(c);
    let owned = factory.informer::<ReplicaSet>().lister();
    let (tx, rx) = crossbeam_channel::unbounded();
    let controller = Controller::builder("deployments", factory.informer::<Deployment>())
        .owns(factory.informer::<ReplicaSet>())
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            let n = owned.list_all().len();
            tx.send(format!("{key} replicasets={n}")).ok();
            Ok(Action::Done)
        })
        .unwrap();
    // The Deployment never changes: its only other reconcile comes from the ReplicaSet it
    // controls (an owner reference read from k8s-openapi's ObjectMeta).
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), "lab/web replicasets=0");
    let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
        uid: web.metadata.uid.clone().unwrap(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    replicasets
        .create(
            &PostParams::default(),
            &ReplicaSet {
                metadata: ObjectMeta {
                    owner_references: Some(vec![owner]),
                    ..meta(Some(NS), "web-1")
                },
                ..ReplicaSet::default()
            },
        )
        .unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), "lab/web replicasets=1");
    controller.stop();
    factory.shutdown();
}

#[test]
fn the_finalizer_helper_works_on_typed_objects() {
    let server = ApiServer::start();
    let c = client(&server);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    deployments
        .create(&PostParams::default(), &deployment("web"))
        .unwrap();
    let factory = SharedInformerFactory::new(c);
    let informer = factory.informer::<Deployment>();
    let lister = informer.lister();
    let finalizer_api = deployments.clone();
    let (tx, rx) = crossbeam_channel::unbounded();
    let controller = Controller::builder("deployments", informer)
        .run(move |key: &str| -> Result<Action, kube_informer::Error> {
            let name = key.split_once('/').unwrap().1;
            let Some(d) = lister.get(Some(NS), name) else {
                return Ok(Action::Done);
            };
            finalizer(&finalizer_api, "example.com/typed", d, |event| {
                let what = match event {
                    FinalizerEvent::Apply(d) => format!("apply {}", d.metadata.name()),
                    FinalizerEvent::Cleanup(d) => format!("cleanup {}", d.metadata.name()),
                };
                tx.send(what).ok();
                Ok::<_, kube_informer::Error>(Action::Done)
            })
            .map_err(|e| kube_informer::Error::Config(e.to_string()))
        })
        .unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), "apply web");
    wait_until("the finalizer added", || {
        deployments.get("web").is_ok_and(|d| {
            Object::metadata(&d).finalizers() == Some(&["example.com/typed".to_owned()][..])
        })
    });
    // Deleting it runs the cleanup, then the finalizer goes and so does the Deployment.
    deployments.delete("web", &DeleteParams::default()).unwrap();
    while rx.recv_timeout(PATIENCE).unwrap() != "cleanup web" {}
    wait_until("the Deployment gone", || {
        deployments.get("web").is_err_and(|e| e.is_not_found())
    });
    controller.stop();
    factory.shutdown();
}

#[test]
fn strip_managed_fields_on_a_k8s_openapi_type() {
    let server = ApiServer::start();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), NS);
    let mut cm = api
        .patch(
            "applied",
            &PatchParams::apply("typed-test"),
            &Patch::Apply(config_map("applied", &[("a", "1")])),
        )
        .unwrap();
    assert!(cm
        .metadata
        .managed_fields
        .as_ref()
        .is_some_and(|m| !m.is_empty()));
    (strip_managed_fields::<ConfigMap>())(&mut cm);
    assert!(cm.metadata.managed_fields.is_none());
    assert_eq!(cm.data.as_ref().unwrap()["a"], "1");

    // Through a plain informer's transform too.
    let config = InformerConfig::new().transform(strip_managed_fields());
    let inf: SharedIndexInformer<ConfigMap> = SharedIndexInformer::new(api.clone(), config);
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let cached = inf.lister().get(Some(NS), "applied").unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    inf.stop();

    // Skipped while decoding (never decoded), and kept when not asked.
    for strip in [true, false] {
        let config = InformerConfig::<ConfigMap>::new()
            .reflector(ReflectorConfig::new().strip_managed_fields(strip));
        let inf: SharedIndexInformer<ConfigMap> = SharedIndexInformer::new(api.clone(), config);
        inf.start().unwrap();
        assert!(inf.wait_for_cache_sync(PATIENCE));
        let cached = inf.lister().get(Some(NS), "applied").unwrap();
        assert_eq!(cached.metadata.managed_fields.is_none(), strip);
        assert_eq!(cached.data.as_ref().unwrap()["a"], "1");
        inf.stop();
    }
}

/// A custom resource as kube-derive's `CustomResource` would declare it: it implements
/// k8s-openapi's `Resource` and `Metadata` (not our traits), and gets ours from them.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
struct Widget {
    metadata: ObjectMeta,
    spec: WidgetSpec,
}

#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
struct WidgetSpec {
    size: i64,
}

impl k8s_openapi::Resource for Widget {
    const API_VERSION: &'static str = "example.com/v1";
    const GROUP: &'static str = "example.com";
    const KIND: &'static str = "Widget";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "widgets";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Widget {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[test]
fn a_custom_resource_with_k8s_openapi_s_traits_is_first_class_too() {
    let widgets = ApiResource::of::<Widget>();
    assert_eq!(
        widgets,
        ApiResource::new("example.com", "v1", "Widget", "widgets", true)
    );
    let server = ApiServer::builder().resource(&widgets).start();
    let api: Api<Widget> = Api::namespaced(client(&server), NS);
    let w = Widget {
        metadata: meta(Some(NS), "w-1"),
        spec: WidgetSpec { size: 3 },
    };
    let created = api.create(&PostParams::default(), &w).unwrap();
    assert_eq!(created.spec.size, 3);
    let factory = SharedInformerFactory::new(client(&server));
    let informer = factory.informer::<Widget>();
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    let cached = informer.lister().get(Some(NS), "w-1").unwrap();
    assert_eq!(
        Object::metadata(cached.as_ref()).uid(),
        created.metadata.uid.as_deref()
    );
    factory.shutdown();
}

// ---- captured responses into k8s-openapi's types ----

/// Decodes `name` as `T` and checks that its metadata reads as the raw JSON's.
fn decodes_as<T: Object + serde::Serialize>(name: &str) -> T {
    let bytes = fixture(name);
    let raw: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let obj: T = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    check_meta(name, obj.metadata(), &raw["metadata"]);
    assert_round_trip(name, &obj, &raw);
    obj
}

/// Nothing is lost or changed: encoding the typed object again gives the captured JSON, but
/// for explicit `null`s, which k8s-openapi's types leave out (`eventTime: null` in Events),
/// and the kind and apiVersion they add to list items.
fn assert_round_trip<T: serde::Serialize>(name: &str, obj: &T, raw: &serde_json::Value) {
    fn without_nulls(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
            serde_json::Value::Array(a) => a.iter().map(without_nulls).collect(),
            other => other.clone(),
        }
    }
    let mut back = serde_json::to_value(obj).unwrap();
    // List items come without kind and apiVersion; k8s-openapi's types always write them.
    if raw.get("kind").is_none() {
        let m = back.as_object_mut().unwrap();
        m.remove("kind");
        m.remove("apiVersion");
    }
    assert_eq!(
        without_nulls(&back),
        without_nulls(raw),
        "{name}: round trip"
    );
}

fn check_meta<M: Meta>(name: &str, meta: &M, raw: &serde_json::Value) {
    assert_eq!(meta.name(), raw["name"].as_str().unwrap_or(""), "{name}");
    assert_eq!(
        meta.namespace(),
        raw["namespace"].as_str().unwrap_or(""),
        "{name}"
    );
    assert_eq!(meta.uid(), raw["uid"].as_str(), "{name}");
    assert_eq!(
        meta.resource_version(),
        raw["resourceVersion"].as_str().unwrap_or(""),
        "{name}"
    );
    let labels = raw["labels"].as_object().map_or(0, |l| l.len());
    assert_eq!(meta.labels().count(), labels, "{name}");
    assert_eq!(
        meta.owner_references().count(),
        raw["ownerReferences"].as_array().map_or(0, Vec::len),
        "{name}"
    );
}

fn list_decodes_as<T: Object + serde::Serialize>(name: &str) -> usize {
    let bytes = fixture(name);
    let raw: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let list: ObjectList<T> =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let items = raw["items"].as_array().unwrap();
    assert_eq!(list.items.len(), items.len(), "{name}");
    for (item, raw_item) in list.items.iter().zip(items) {
        check_meta(name, item.metadata(), &raw_item["metadata"]);
        assert_round_trip(name, item, raw_item);
    }
    list.items.len()
}

#[test]
fn captured_pods_decode_into_k8s_openapi_types() {
    let pods = fixtures_where(|n| {
        n.ends_with(".json")
            && n.starts_with("list-pods")
            && !n.contains("410")
            && !n.contains("table")
            && !n.contains("metadata")
            && !n.contains("unknown-as")
    });
    assert!(pods.len() >= 10, "{pods:?}");
    let mut total = 0;
    for name in &pods {
        total += list_decodes_as::<Pod>(name);
    }
    assert!(total >= 50, "{total}");
    let pod: Pod = decodes_as("get-pod.json");
    assert!(!pod.spec.unwrap().containers.is_empty());
    let status: Pod = decodes_as("get-pod-status.json");
    assert!(status.status.unwrap().phase.is_some());
    for name in fixtures_where(|n| n.starts_with("delete-pod") && n.ends_with(".json")) {
        let pod: Pod = decodes_as(&name);
        assert!(Object::metadata(&pod).is_being_deleted(), "{name}");
    }
    decodes_as::<Pod>("put-pod-status.json");
    decodes_as::<Pod>("strategic-merge-patch-pod.json");
    decodes_as::<Pod>("patch-pod-status-strategic.json");
}

#[test]
fn captured_watches_of_pods_decode_into_k8s_openapi_types() {
    let mut objects = 0;
    for name in fixtures_where(|n| {
        n.ends_with(".jsonl") && !n.starts_with("crd") && !n.contains("metadata")
    }) {
        let text = String::from_utf8(fixture(&name)).unwrap();
        for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let raw: serde_json::Value = serde_json::from_str(line).unwrap();
            if raw["object"]["kind"] != "Pod" && raw["type"] != "BOOKMARK" {
                continue;
            }
            let ev = WatchEvent::<Pod>::from_json(line.as_bytes())
                .unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
            if let WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) = &ev {
                check_meta(&name, Object::metadata(p), &raw["object"]["metadata"]);
                assert_round_trip(&name, p, &raw["object"]);
                objects += 1;
            }
        }
    }
    assert!(objects >= 10, "{objects}");
}

#[test]
fn captured_config_maps_leases_events_and_deployments_decode() {
    /// Every `.json` capture whose `kind` is `kind`, decoded as `T`; how many.
    fn every<T: Object + serde::Serialize>(kind: &str) -> usize {
        let mut n = 0;
        for name in fixtures_where(|n| n.ends_with(".json")) {
            let raw: serde_json::Value = serde_json::from_slice(&fixture(&name)).unwrap();
            if raw["kind"] == kind {
                decodes_as::<T>(&name);
                n += 1;
            }
        }
        n
    }
    assert!(every::<ConfigMap>("ConfigMap") >= 10);
    assert!(every::<Deployment>("Deployment") >= 5);
    assert!(every::<Lease>("Lease") >= 3);
    assert!(every::<k8s_openapi::api::autoscaling::v1::Scale>("Scale") >= 3);
    assert!(list_decodes_as::<ConfigMap>("deletecollection-configmaps.json") >= 1);
    let core: k8s_openapi::api::core::v1::Event = decodes_as("event-create-core-v1.json");
    assert!(core.reason.is_some());
    let events: k8s_openapi::api::events::v1::Event = decodes_as("event-create-events-v1.json");
    assert!(events.event_time.is_some());
}
