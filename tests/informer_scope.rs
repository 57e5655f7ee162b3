//! Issue 32: informers scoped per resource. Two namespaces of three as one informer — one
//! watch per namespace, or one cluster-wide watch filtered here — through churn, 410s and
//! dropped connections in both: the cache, the listers and every handler hold exactly the
//! server's objects of those two namespaces, nothing of the third. And informers removed
//! from a factory: stopped, joined, forgotten, made anew on request. Over loopback HTTP
//! against `testing::ApiServer`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::{
    FactoryOptions, InformerScope, NamespaceWatch, ReflectorConfig, SharedIndexInformer,
    SharedInformerFactory, NAMESPACE_INDEX,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::Client;

fn configmaps(plural: &str) -> ApiResource {
    // A plural of its own per test: thread names and the server's paths tell tests apart.
    ApiResource::new("", "v1", "ConfigMap", plural, true)
}

fn cm(ns: &str, name: &str, n: usize) -> serde_json::Value {
    serde_json::json!({"metadata": {"name": name, "namespace": ns}, "data": {"n": n.to_string()}})
}

fn fast_options() -> FactoryOptions {
    FactoryOptions::new().reflector(
        ReflectorConfig::new().backoff(Duration::from_millis(20), Duration::from_millis(100)),
    )
}

/// Creates, updates and deletes objects in every namespace of `namespaces`.
fn churn_in(server: &ApiServer, ar: &ApiResource, namespaces: &[&str], round: usize) {
    for ns in namespaces {
        for i in 0..6 {
            let name = format!("r{round}-{i}");
            server.create(ar, cm(ns, &name, 0)).unwrap();
            if i % 2 == 0 {
                server
                    .patch(
                        ar,
                        Some(ns),
                        &name,
                        &serde_json::json!({"data": {"n": "1"}}),
                    )
                    .unwrap();
            }
            if i % 3 == 0 {
                server.delete(ar, Some(ns), &name).unwrap();
            }
        }
    }
}

/// The server's objects of `namespaces`, as `key -> resourceVersion`.
fn expected(server: &ApiServer, ar: &ApiResource, namespaces: &[&str]) -> BTreeMap<String, String> {
    server
        .keys_and_versions(ar)
        .into_iter()
        .filter(|(k, _)| namespaces.iter().any(|ns| k.starts_with(&format!("{ns}/"))))
        .collect()
}

fn cached(informer: &SharedIndexInformer<DynamicObject>) -> BTreeMap<String, String> {
    informer
        .store()
        .list()
        .iter()
        .map(|o| (o.metadata.key(), o.metadata.resource_version().to_owned()))
        .collect()
}

fn two_of_three_hold_exactly_theirs(watch: NamespaceWatch, plural: &str) {
    let ar = configmaps(plural);
    let server = ApiServer::builder()
        .resource(&ar)
        .bookmark_interval(Duration::from_millis(100))
        .start();
    for ns in ["a", "b", "c"] {
        for i in 0..3 {
            server.create(&ar, cm(ns, &format!("seed-{i}"), 0)).unwrap();
        }
    }
    let factory = SharedInformerFactory::with_options(
        Client::new(server.client_config()).unwrap(),
        fast_options(),
    );
    factory
        .set_scope(
            &ar,
            InformerScope::new()
                .namespaces(["b", "a", "a"])
                .namespace_watch(watch),
        )
        .unwrap();
    let informer = factory.dynamic_informer(&ar);
    assert_eq!(informer.namespaces(), ["a", "b"]);
    let view = View::default();
    informer.add_event_handler(view.clone()).unwrap();
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    let mine = ["a", "b"];
    assert_eq!(cached(&informer), expected(&server, &ar, &mine));

    // Churn in all three; between rounds: a 410 for one of the watches (a relist of one
    // namespace must leave the other's objects alone), every connection dropped, and the
    // history compacted under the dropped watches (every namespace relists).
    let before = informer.health().reflector.relists.values().sum::<u64>();
    churn_in(&server, &ar, &["a", "b", "c"], 0);
    // Every watch open first (a fault taken by a watch whose answer the disconnection
    // then cuts would be lost).
    wait_until("every watch open", || informer.is_watching());
    server.inject(
        Target::Watch,
        Fault::Status {
            code: 410,
            retry_after: None,
        },
    );
    server.disconnect_all();
    churn_in(&server, &ar, &["a", "b", "c"], 1);
    wait_until("a relist after the 410", || {
        informer.health().reflector.relists.values().sum::<u64>() > before
    });
    server.disconnect_all();
    churn_in(&server, &ar, &["a", "b", "c"], 2);
    server.compact();
    server.disconnect_all();
    churn_in(&server, &ar, &["a", "b", "c"], 3);

    let want = expected(&server, &ar, &mine);
    wait_until("the cache equals the server's objects of a and b", || {
        cached(&informer) == want
    });
    wait_until("the handler's view equals them too", || {
        view.snapshot().into_iter().collect::<BTreeMap<_, _>>() == want
    });
    assert!(view.violations().is_empty(), "{:?}", view.violations());
    assert!(
        !cached(&informer).keys().any(|k| k.starts_with("c/")),
        "nothing of the third namespace"
    );
    // Every deletion the handler heard of happened on the server (a relist of one namespace
    // announced no deletion of the other's objects): at most one per deleted object.
    let deleted_on_server = 2 * 4 * 2; // two namespaces, four rounds, two deletes a round
    assert!(
        view.0.lock().deletes <= deleted_on_server,
        "{} deletions heard, {deleted_on_server} made",
        view.0.lock().deletes
    );
    // Listers and indexes work across the namespaces.
    let lister = informer.lister();
    assert_eq!(lister.list_all().len(), want.len());
    assert!(lister.by_index(NAMESPACE_INDEX, "c").unwrap().is_empty());
    assert!(lister.get(Some("a"), "seed-0").is_some());
    assert!(lister.get(Some("b"), "seed-1").is_some());
    assert!(lister.get(Some("c"), "seed-0").is_none());
    let store = informer.store();
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "a").unwrap().len(),
        want.keys().filter(|k| k.starts_with("a/")).count()
    );
    assert!(store.index_keys(NAMESPACE_INDEX, "c").unwrap().is_empty());
    let health = informer.health();
    assert!(health.synced && health.running, "{health}");
    factory.shutdown();
}

#[test]
fn two_namespaces_of_three_one_watch_each_hold_exactly_theirs_through_churn_and_faults() {
    two_of_three_hold_exactly_theirs(NamespaceWatch::PerNamespace, "scopeaconfigmaps");
}

#[test]
fn two_namespaces_of_three_one_cluster_watch_hold_exactly_theirs_through_churn_and_faults() {
    two_of_three_hold_exactly_theirs(NamespaceWatch::ClusterWide, "scopebconfigmaps");
}

#[test]
fn one_watch_per_namespace_or_one_for_the_cluster_is_what_goes_on_the_wire() {
    for (watch, plural) in [
        (NamespaceWatch::PerNamespace, "scopecconfigmaps"),
        (NamespaceWatch::ClusterWide, "scopedconfigmaps"),
    ] {
        let ar = configmaps(plural);
        let server = ApiServer::builder().resource(&ar).start();
        let factory = SharedInformerFactory::new(Client::new(server.client_config()).unwrap());
        factory
            .set_scope(
                &ar,
                InformerScope::new()
                    .namespaces(["x", "y"])
                    .namespace_watch(watch),
            )
            .unwrap();
        let informer = factory.dynamic_informer(&ar);
        factory.start().unwrap();
        assert!(informer.wait_for_cache_sync(PATIENCE));
        let lists: Vec<String> = server
            .requests()
            .into_iter()
            .filter(|r| r.contains(plural) && !r.contains("watch="))
            .collect();
        let namespaced = |ns: &str| {
            let path = format!("/api/v1/namespaces/{ns}/{plural}?");
            lists.iter().any(|r| r.contains(&path))
        };
        let cluster = lists
            .iter()
            .any(|r| r.contains(&format!("GET /api/v1/{plural}?")));
        match watch {
            NamespaceWatch::PerNamespace => {
                assert!(namespaced("x") && namespaced("y") && !cluster, "{lists:?}")
            }
            _ => assert!(cluster && !namespaced("x") && !namespaced("y"), "{lists:?}"),
        }
        factory.shutdown();
    }
}

#[test]
fn each_resource_gets_its_own_scope_over_the_factory_defaults() {
    let (cms, secrets) = (
        configmaps("scopeeconfigmaps"),
        ApiResource::new("", "v1", "Secret", "scopeesecrets", true),
    );
    let server = ApiServer::builder()
        .resource(&cms)
        .resource(&secrets)
        .start();
    for ns in ["a", "b"] {
        for (name, app) in [("web", "web"), ("db", "db")] {
            let body = serde_json::json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": app}}, "data": {"k": "v"}});
            server.create(&cms, body.clone()).unwrap();
            server.create(&secrets, body).unwrap();
        }
    }
    // The factory's defaults: namespace a, app=web. Secrets: every namespace, no selector,
    // and a transform of their own.
    let options = fast_options().namespace("a").labels("app=web");
    let factory =
        SharedInformerFactory::with_options(Client::new(server.client_config()).unwrap(), options);
    // Drops every field but the metadata.
    let mark: kube_informer::cache::Transform<DynamicObject> =
        std::sync::Arc::new(|o: &mut DynamicObject| o.fields.clear());
    factory
        .set_scope(
            &secrets,
            InformerScope::new()
                .all_namespaces()
                .label_selector("")
                .transform(mark),
        )
        .unwrap();
    let cm_informer = factory.dynamic_informer(&cms);
    let secret_informer = factory.dynamic_informer(&secrets);
    // A scope set once its informer exists is refused (and says why).
    let late = factory.set_scope(&cms, InformerScope::new().namespace("b"));
    assert!(late.unwrap_err().to_string().contains("exists already"));
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    let mut cm_keys = cm_informer.store().list_keys();
    cm_keys.sort();
    assert_eq!(cm_keys, ["a/web"]);
    let mut secret_keys = secret_informer.store().list_keys();
    secret_keys.sort();
    assert_eq!(secret_keys, ["a/db", "a/web", "b/db", "b/web"]);
    assert!(secret_informer
        .store()
        .list()
        .iter()
        .all(|o| o.fields.is_empty()));
    assert!(cm_informer
        .store()
        .list()
        .iter()
        .all(|o| !o.fields.is_empty()));
    factory.shutdown();
}

#[test]
fn a_removed_informer_is_stopped_joined_forgotten_and_made_anew_on_request() {
    let ar = configmaps("gizmos");
    let server = ApiServer::builder().resource(&ar).start();
    server.create(&ar, cm("lab", "one", 0)).unwrap();
    let factory = SharedInformerFactory::with_options(
        Client::new(server.client_config()).unwrap(),
        fast_options(),
    );
    let first = factory.dynamic_informer(&ar);
    let view = View::default();
    first.add_event_handler(view.clone()).unwrap();
    factory.start().unwrap();
    assert!(factory.wait_for_cache_sync(PATIENCE).all_synced());
    wait_until("the handler heard of the object", || {
        view.snapshot().len() == 1
    });
    let ours = |names: &[String]| names.iter().filter(|n| n.starts_with("ki/gizmos/")).count();
    assert!(ours(&thread_names()) >= 3 || thread_names().is_empty());

    assert!(factory.remove_informer::<DynamicObject>(&ar));
    assert!(
        !factory.remove_informer::<DynamicObject>(&ar),
        "gone already"
    );
    assert_eq!(
        ours(&thread_names()),
        0,
        "every thread joined: {:?}",
        thread_names()
    );
    assert!(!first.health().running);
    assert!(factory.health().is_empty());
    assert!(factory
        .wait_for_cache_sync(Duration::from_secs(1))
        .informers
        .is_empty());
    // The stopped informer's handler hears nothing more.
    server.create(&ar, cm("lab", "two", 0)).unwrap();

    let second = factory.dynamic_informer(&ar);
    assert!(
        second.wait_for_cache_sync(PATIENCE),
        "started with the factory"
    );
    let mut keys = second.store().list_keys();
    keys.sort();
    assert_eq!(keys, ["lab/one", "lab/two"]);
    assert_eq!(factory.health().len(), 1);
    assert_eq!(
        view.snapshot().len(),
        1,
        "the removed informer's handler was stopped"
    );
    assert!(first.store().get("lab/two").is_none());
    assert_eq!(factory.remove_resource(&ar), 1);
    assert_eq!(ours(&thread_names()), 0);
    factory.shutdown();
}
