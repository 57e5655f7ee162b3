//! The typed API's write verbs and the request builder against `testing::ApiServer` over
//! loopback HTTP: server-side apply and its conflicts, every patch kind, write options,
//! status and scale subresources, deletes with options, delete collection,
//! `retry_on_conflict`, warnings, and the builder's line stream.

mod common;

use std::sync::Arc;

use common::PATIENCE;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::client::{
    retry_on_conflict, FieldValidation, PatchOperation, RetryBackoff, Warning, WarningHandler,
};
use kube_informer::testing::ApiServer;
use kube_informer::{
    Api, Client, DeleteParams, Error, ListParams, Method, Patch, PatchParams, PostParams,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

fn api(server: &ApiServer, resource: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(
        Client::new(server.client_config()).unwrap(),
        "lab",
        resource,
    )
}

fn field(obj: &DynamicObject, name: &str) -> Value {
    obj.decode_field::<Value>(name)
        .unwrap()
        .unwrap_or(Value::Null)
}

fn managers(obj: &DynamicObject) -> Vec<String> {
    let v: Value =
        serde_json::from_str(obj.metadata.managed_fields.as_ref().unwrap().get()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn cm_apply(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-apply"}, "data": data})
}

#[test]
fn server_side_apply_with_conflicts_and_force() {
    let server = ApiServer::start();
    let api = api(&server, &configmaps());
    let alice = PatchParams::apply("alice");
    let created = api
        .patch(
            "cm-apply",
            &alice,
            &Patch::Apply(cm_apply(json!({"color": "red", "size": "1"}))),
        )
        .unwrap();
    assert_eq!(managers(&created), vec!["alice"]);

    let bob = PatchParams::apply("bob");
    let err = api
        .patch(
            "cm-apply",
            &bob,
            &Patch::Apply(cm_apply(json!({"color": "green"}))),
        )
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let st = err.status().unwrap();
    let conflicts = st.field_manager_conflicts();
    assert_eq!(conflicts.len(), 1, "{st:?}");
    assert_eq!(conflicts[0].field, ".data.color");
    assert_eq!(conflicts[0].manager(), Some("alice"));

    let forced = api
        .patch(
            "cm-apply",
            &bob.clone().force(),
            &Patch::Apply(cm_apply(json!({"color": "green"}))),
        )
        .unwrap();
    assert_eq!(field(&forced, "data")["color"], "green");
    assert_eq!(field(&forced, "data")["size"], "1", "alice keeps size");
    let m = managers(&forced);
    assert!(
        m.contains(&"alice".into()) && m.contains(&"bob".into()),
        "{m:?}"
    );

    // No field manager: refused before any request.
    let before = server.requests().len();
    let err = api
        .patch(
            "cm-apply",
            &PatchParams::default(),
            &Patch::Apply(cm_apply(json!({}))),
        )
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert_eq!(server.requests().len(), before);
}

#[test]
fn json_patch_operations_and_a_failing_test() {
    let server = ApiServer::start();
    let api = api(&server, &configmaps());
    api.create(
        &PostParams::default(),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-patch"},
                "data": {"size": "1", "color": "red", "a/b": "x"}}),
    )
    .unwrap();
    let ops = vec![
        PatchOperation::test("/data/size", "1"),
        PatchOperation::replace("/data/size", "2"),
        PatchOperation::add("/metadata/labels", json!({"patched": "json-patch"})),
        PatchOperation::copy_to("/data/size", "/data/copied"),
        PatchOperation::move_to(
            &kube_informer::client::pointer(&["data", "a/b"]),
            "/data/moved",
        ),
        PatchOperation::remove("/data/color"),
    ];
    let cm = api
        .patch("cm-patch", &PatchParams::default(), &Patch::json(ops))
        .unwrap();
    assert_eq!(
        field(&cm, "data"),
        json!({"size": "2", "copied": "2", "moved": "x"})
    );
    assert_eq!(cm.metadata.label("patched"), Some("json-patch"));

    let err = api
        .patch(
            "cm-patch",
            &PatchParams::default(),
            &Patch::json(vec![
                PatchOperation::test("/data/size", "1"),
                PatchOperation::remove("/data/size"),
            ]),
        )
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(
        field(&api.get("cm-patch").unwrap(), "data")["size"],
        "2",
        "nothing applied"
    );
}

#[test]
fn strategic_merge_for_built_ins_and_415_for_custom_resources() {
    let server = ApiServer::start();
    let deps = api(&server, &deployments());
    deps.create(
        &PostParams::default(),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "app", "image": "app:1"},
                                                              {"name": "sidecar", "image": "side:1"}]}}}}),
    )
    .unwrap();
    let d = deps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "sidecar", "image": "side:2"}]}}}})),
        )
        .unwrap();
    let containers = field(&d, "spec")["template"]["spec"]["containers"].clone();
    let names: Vec<&str> = containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "sidecar"], "merged by name");
    assert_eq!(containers[1]["image"], "side:2");

    let widgets = common::widgets();
    let w = api(&server, &widgets);
    w.create(
        &PostParams::default(),
        &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}}),
    )
    .unwrap();
    let err = w
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .unwrap_err();
    assert!(err.is_unsupported_media_type(), "{err}");
    let merged = w
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .unwrap();
    assert_eq!(field(&merged, "spec")["size"], 2);
}

#[test]
fn create_options_dry_run_generate_name_and_field_validation() {
    let server = ApiServer::start();
    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = warnings.clone();
    let mut config = server.client_config();
    config.warning_handler = WarningHandler::Custom(Arc::new(move |w: &Warning| {
        sink.lock().push(w.text.clone())
    }));
    let api: Api<DynamicObject> =
        Api::namespaced_with(Client::new(config).unwrap(), "lab", &configmaps());

    let dry = api
        .create(
            &PostParams::default().dry_run(),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-dry"}}),
        )
        .unwrap();
    assert_eq!(dry.metadata.name(), "cm-dry");
    assert!(
        api.get("cm-dry").unwrap_err().is_not_found(),
        "nothing stored"
    );

    let generated = api
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-gen-"}}),
        )
        .unwrap();
    assert!(generated.metadata.name().starts_with("cm-gen-"));
    api.get(generated.metadata.name()).unwrap();

    let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-strict", "bogusMeta": 1}, "data": {"k": "v"}, "spec": {"replicas": 1}});
    let err = api
        .create(
            &PostParams::default().validation(FieldValidation::Strict),
            &unknown,
        )
        .unwrap_err();
    assert!(err.is_bad_request(), "{err}");
    assert!(warnings.lock().is_empty());

    api.create(&PostParams::default(), &unknown).unwrap();
    let got = warnings.lock().clone();
    assert_eq!(
        got,
        vec![
            r#"unknown field "metadata.bogusMeta""#.to_owned(),
            r#"unknown field "spec""#.to_owned()
        ]
    );
}

#[test]
fn status_and_scale_subresources() {
    let server = ApiServer::start();
    let deps = api(&server, &deployments());
    deps.create(
        &PostParams::default(),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web-scale"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web-scale"}},
                         "template": {"metadata": {"labels": {"app": "web-scale"}},
                                      "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}}),
    )
    .unwrap();

    // Status through its subresource; a main-resource write leaves it alone.
    let d = deps
        .patch_status(
            "web-scale",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 1, "replicas": 1}})),
        )
        .unwrap();
    assert_eq!(field(&d, "status")["replicas"], 1);
    let d = deps
        .patch(
            "web-scale",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 9}})),
        )
        .unwrap();
    assert_eq!(
        field(&d, "status")["replicas"],
        1,
        "main resource ignores status"
    );
    let whole = deps.get_status("web-scale").unwrap();
    assert!(whole.field("spec").is_some(), "the whole object");
    let mut v = serde_json::to_value(&whole).unwrap();
    v["status"]["replicas"] = json!(2);
    v["spec"]["replicas"] = json!(7);
    let d = deps
        .replace_status("web-scale", &PostParams::default(), &v)
        .unwrap();
    assert_eq!(field(&d, "status")["replicas"], 2);
    assert_eq!(
        field(&d, "spec")["replicas"],
        1,
        "status write ignores spec"
    );

    // Scale.
    let scale = deps.get_scale("web-scale").unwrap();
    assert_eq!(scale.spec.replicas, 1);
    assert_eq!(
        scale.status.as_ref().unwrap().selector.as_deref(),
        Some("app=web-scale")
    );
    let mut wanted = scale.clone();
    wanted.spec.replicas = 3;
    assert_eq!(
        deps.replace_scale("web-scale", &PostParams::default(), &wanted)
            .unwrap()
            .spec
            .replicas,
        3
    );
    // The same Scale again carries a stale resourceVersion.
    let err = deps
        .replace_scale("web-scale", &PostParams::default(), &wanted)
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let patched = deps
        .patch_scale(
            "web-scale",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .unwrap();
    assert_eq!(patched.spec.replicas, 5);
    assert_eq!(
        field(&deps.get("web-scale").unwrap(), "spec")["replicas"],
        5
    );

    // Any subresource by name, bytes out.
    let res = deps
        .subresource(Method::GET, "web-scale", "scale")
        .unwrap()
        .send()
        .unwrap();
    let raw: Value = serde_json::from_slice(res.body()).unwrap();
    assert_eq!(raw["kind"], "Scale");
}

#[test]
fn deletes_with_options_and_delete_collection() {
    let server = ApiServer::start();
    let cms = api(&server, &configmaps());
    for (name, batch) in [("a", "old"), ("b", "old"), ("c", "new")] {
        cms.create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"batch": batch}}}),
        )
        .unwrap();
    }
    // A precondition that does not hold.
    let err = cms
        .delete(
            "a",
            &DeleteParams::default().precondition_uid("00000000-0000-0000-0000-000000000000"),
        )
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    // Dry run deletes nothing.
    cms.delete("a", &DeleteParams::default().dry_run()).unwrap();
    cms.get("a").unwrap();
    // Gone: a Status.
    let uid = cms.get("c").unwrap().metadata.uid.unwrap();
    let out = cms
        .delete("c", &DeleteParams::background().precondition_uid(&uid))
        .unwrap();
    assert_eq!(out.status().expect("a Status").status, "Success");
    // The collection, by label.
    let out = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("batch=old"),
        )
        .unwrap();
    let mut names: Vec<String> = out
        .object()
        .expect("the deleted list")
        .items
        .iter()
        .map(|o| o.metadata.name().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert!(cms.list(&ListParams::default()).unwrap().items.is_empty());

    // Foreground: the object comes back, held by its finalizer.
    let deps = api(&server, &deployments());
    deps.create(
        &PostParams::default(),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dep"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "dep"}},
                         "template": {"metadata": {"labels": {"app": "dep"}},
                                      "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}}),
    )
    .unwrap();
    let out = deps.delete("dep", &DeleteParams::foreground()).unwrap();
    let d = out.object().expect("the object");
    assert!(d.metadata.deletion_timestamp.is_some());
    assert_eq!(
        d.metadata.finalizers.as_deref(),
        Some(&["foregroundDeletion".to_owned()][..])
    );
}

#[test]
fn retry_on_conflict_rereads_and_writes_again() {
    let server = ApiServer::start();
    let cms = api(&server, &configmaps());
    cms.create(
        &PostParams::default(),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "counter"}, "data": {"n": "0"}}),
    )
    .unwrap();
    let mut attempts = 0;
    let out = retry_on_conflict(&RetryBackoff::default(), || {
        attempts += 1;
        let mut cm = serde_json::to_value(cms.get("counter")?).unwrap();
        if attempts == 1 {
            // Someone else writes between our read and our write.
            server
                .patch(
                    &configmaps(),
                    Some("lab"),
                    "counter",
                    &json!({"metadata": {"labels": {"other": "writer"}}}),
                )
                .unwrap();
        }
        let n: u32 = cm["data"]["n"].as_str().unwrap().parse().unwrap();
        cm["data"]["n"] = json!((n + 1).to_string());
        cms.replace("counter", &PostParams::default(), &cm)
    })
    .unwrap();
    assert_eq!(attempts, 2);
    assert_eq!(field(&out, "data")["n"], "1");
    assert_eq!(
        out.metadata.label("other"),
        Some("writer"),
        "the other write kept"
    );

    // A client whose Cancel fired gives up.
    let cancel = kube_informer::client::Cancel::new();
    let client = Client::new(server.client_config())
        .unwrap()
        .with_cancel(cancel.clone());
    cancel.cancel();
    let err = client
        .retry_on_conflict(&RetryBackoff::default(), || cms.get("counter"))
        .unwrap_err();
    assert!(err.is_cancelled(), "{err}");
}

#[test]
fn builder_streams_a_watch_and_is_cancelled() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let lines = client
        .request(Method::GET, "/api/v1/namespaces/lab/configmaps")
        .query("watch", "1")
        .query("resourceVersion", "0")
        .lines()
        .unwrap();
    let canceller = lines.canceller();
    let cms = api(&server, &configmaps());
    cms.create(
        &PostParams::default(),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen"}}),
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in lines {
            let v: Value = serde_json::from_slice(&line.unwrap()).unwrap();
            tx.send(v).unwrap();
        }
    });
    let event = rx.recv_timeout(PATIENCE).expect("an event");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "seen");
    canceller.cancel();
    reader.join().unwrap();
}

#[test]
fn the_clients_cancel_ends_a_line_stream() {
    let server = ApiServer::start();
    let cancel = kube_informer::client::Cancel::new();
    let client = Client::new(server.client_config())
        .unwrap()
        .with_cancel(cancel.clone());
    let lines = client
        .request(Method::GET, "/api/v1/namespaces/lab/configmaps")
        .query("watch", "1")
        .lines()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let items: Vec<_> = lines.collect();
        tx.send(items.len()).unwrap();
    });
    cancel.cancel();
    assert_eq!(rx.recv_timeout(PATIENCE).expect("the stream ends"), 0);
    reader.join().unwrap();
    // And a cancelled client starts no new stream.
    let err = client
        .request(Method::GET, "/api/v1/namespaces/lab/configmaps")
        .query("watch", "1")
        .lines()
        .unwrap_err();
    assert!(err.is_cancelled(), "{err}");
}
