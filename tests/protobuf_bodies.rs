//! Protobuf request bodies (feature `protobuf`): creates and updates of built-in types go as
//! `application/vnd.kubernetes.protobuf` and store exactly what the same JSON write stores;
//! anything protobuf could not carry exactly goes as JSON instead (a field the tables do not
//! know, a custom resource, a metadata-only type, `fieldValidation=Strict`, a patch); a 415
//! sends the write again in JSON once and keeps that type JSON on that client; hostile
//! answers to a protobuf write are errors, never a second write.
//!
//! Run with `cargo test --features protobuf,k8s-openapi,k8s-openapi/v1_35 --test protobuf_bodies`.
#![cfg(all(feature = "protobuf", feature = "k8s-openapi"))]

#[path = "common/raw_request.rs"]
mod raw_request;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, HTTPGetAction, Pod, PodCondition, PodSpec,
    PodStatus, PodTemplateSpec, Probe, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use kube_informer::api::{self, ApiResource, DynamicObject, Object, Resource};
use kube_informer::client::FieldValidation;
use kube_informer::client::{Warning, WarningHandler};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, ClientConfig, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const NS: &str = "lab";
const PB: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";

fn client_with(server: &ApiServer, protobuf_bodies: bool) -> Client {
    let mut c = server.client_config();
    c.qps = 0.0;
    c.protobuf_bodies = protobuf_bodies;
    Client::new(c).unwrap()
}

/// The `Content-Type` of each write (POST/PUT/PATCH) the server saw on a path containing
/// `path`, in order.
fn body_types(server: &ApiServer, path: &str) -> Vec<String> {
    server
        .request_headers()
        .iter()
        .filter(|r| {
            let (method, rest) = r.request.split_once(' ').unwrap_or(("", ""));
            matches!(method, "POST" | "PUT" | "PATCH") && rest.contains(path)
        })
        .map(|r| {
            r.values("content-type")
                .first()
                .copied()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// A stored object with what differs between two writes of the same content removed: the
/// name, and what the server assigns (uid, versions, times, managed fields' times).
fn content(server: &ApiServer, ar: &ApiResource, name: &str) -> Value {
    let mut v = server.get(ar, Some(NS), name).unwrap();
    let meta = v["metadata"].as_object_mut().unwrap();
    for k in [
        "name",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
    ] {
        meta.remove(k);
    }
    if let Some(fields) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
        for f in fields {
            f.as_object_mut().unwrap().remove("time");
        }
    }
    v
}

/// [`content`] as kube-apiserver holds it: through Go's struct, where a zero that Go's JSON
/// omits (`hostNetwork: false`, `value: ""`) and its absence are the same object. The test
/// server keeps a JSON body's text as sent, but a protobuf body as Go renders it, so objects
/// holding such zeros are compared this way; managedFields (computed by the test server from
/// the stored text) are left out of it.
fn as_go_holds_it(server: &ApiServer, ar: &ApiResource, name: &str) -> Value {
    let mut v = content(server, ar, name);
    v["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    let m = kube_informer::protobuf::message_for(&ar.api_version(), &ar.kind).unwrap();
    let bytes = kube_informer::protobuf::encode(m, &v).unwrap();
    kube_informer::protobuf::decode(m, &bytes).unwrap()
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        labels: Some(BTreeMap::from([("app".into(), "web".into())])),
        annotations: Some(BTreeMap::from([("note".into(), "ünïcode ✓".into())])),
        ..ObjectMeta::default()
    }
}

fn realistic_pod(name: &str) -> Pod {
    Pod {
        metadata: meta(name),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.27".into()),
                ports: Some(vec![ContainerPort {
                    name: Some("http".into()),
                    container_port: 8080,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                }]),
                env: Some(vec![
                    EnvVar {
                        name: "MODE".into(),
                        value: Some("fast".into()),
                        ..EnvVar::default()
                    },
                    EnvVar {
                        name: "EMPTY".into(),
                        value: Some(String::new()),
                        ..EnvVar::default()
                    },
                ]),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([
                        ("cpu".into(), Quantity("250m".into())),
                        ("memory".into(), Quantity("64Mi".into())),
                    ])),
                    ..ResourceRequirements::default()
                }),
                readiness_probe: Some(Probe {
                    http_get: Some(HTTPGetAction {
                        path: Some("/healthz".into()),
                        port: IntOrString::String("http".into()),
                        ..HTTPGetAction::default()
                    }),
                    period_seconds: Some(0),
                    ..Probe::default()
                }),
                ..Container::default()
            }],
            tolerations: Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Exists".into()),
                toleration_seconds: Some(-1),
                ..Toleration::default()
            }]),
            host_network: Some(false),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name),
        data: Some(BTreeMap::from([
            ("mode".into(), "fast".into()),
            ("empty".into(), String::new()),
        ])),
        binary_data: Some(BTreeMap::from([(
            "blob".into(),
            ByteString(vec![0, 1, 2, 0xff, b'k', b'8', b's', 0]),
        )])),
        immutable: Some(false),
    }
}

fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    Deployment {
        metadata: meta(name),
        spec: Some(DeploymentSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::String("25%".into())),
                    max_unavailable: Some(IntOrString::Int(0)),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: realistic_pod("x").spec,
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// Writes `object` under `pb-<n>` with protobuf bodies and `js-<n>` with JSON bodies: a
/// create, a replace of what came back (changed by `change`), and the stored objects equal.
fn same_as_json<K>(
    server: &ApiServer,
    name: &str,
    object: impl Fn(&str) -> K,
    change: impl Fn(&mut K),
    exact: bool,
) where
    K: Resource + Serialize + Clone + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    let ar = ApiResource::of::<K>();
    let pb: Api<K> = Api::namespaced(client_with(server, true), NS);
    let js: Api<K> = Api::namespaced(client_with(server, false), NS);
    let (p, j) = (format!("pb-{name}"), format!("js-{name}"));
    let before = body_types(server, &format!("/{}", ar.plural)).len();
    let created_pb = pb.create(&PostParams::default(), &object(&p)).unwrap();
    let created_js = js.create(&PostParams::default(), &object(&j)).unwrap();
    let compare = |what: &str| {
        if exact {
            assert_eq!(
                content(server, &ar, &p),
                content(server, &ar, &j),
                "{what} {name}"
            );
        }
        let (a, b) = (
            as_go_holds_it(server, &ar, &p),
            as_go_holds_it(server, &ar, &j),
        );
        assert_eq!(a, b, "{what} {name}");
    };
    compare("create");
    let mut up_pb = created_pb.clone();
    change(&mut up_pb);
    let mut up_js = created_js.clone();
    change(&mut up_js);
    pb.replace(&p, &PostParams::default(), &up_pb).unwrap();
    js.replace(&j, &PostParams::default(), &up_js).unwrap();
    compare("replace");
    let types = body_types(server, &format!("/{}", ar.plural));
    assert_eq!(types[before..], [PB, JSON, PB, JSON], "{name}");
}

#[test]
fn creates_and_replaces_of_pods_config_maps_and_deployments_go_in_protobuf_and_store_what_json_stores(
) {
    let server = ApiServer::start();
    same_as_json(
        &server,
        "pod",
        realistic_pod,
        |p: &mut Pod| {
            p.metadata
                .labels
                .as_mut()
                .unwrap()
                .insert("tier".into(), "front".into());
        },
        false,
    );
    same_as_json(
        &server,
        "cm",
        config_map,
        |c: &mut ConfigMap| {
            c.binary_data
                .as_mut()
                .unwrap()
                .insert("more".into(), ByteString(vec![]));
            c.data.as_mut().unwrap().remove("mode");
        },
        true,
    );
    same_as_json(
        &server,
        "deploy",
        deployment,
        |d: &mut Deployment| {
            d.spec.as_mut().unwrap().replicas = Some(3);
        },
        false,
    );
    // What the server gives back decodes to what was sent.
    let cms: Api<ConfigMap> = Api::namespaced(client_with(&server, true), NS);
    let got = cms.get("pb-cm").unwrap();
    assert_eq!(
        got.binary_data.unwrap()["blob"],
        ByteString(vec![0, 1, 2, 0xff, b'k', b'8', b's', 0])
    );
}

#[test]
fn a_status_update_goes_in_protobuf_and_stores_what_json_stores() {
    let server = ApiServer::start();
    let ar = ApiResource::of::<Pod>();
    let pb: Api<Pod> = Api::namespaced(client_with(&server, true), NS);
    let js: Api<Pod> = Api::namespaced(client_with(&server, false), NS);
    for (api, name) in [(&pb, "pb-s"), (&js, "js-s")] {
        let mut pod = api
            .create(&PostParams::default(), &realistic_pod(name))
            .unwrap();
        pod.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time("2026-11-28T11:31:33Z".parse().unwrap())),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        let back = api
            .replace_status(name, &PostParams::default(), &pod)
            .unwrap();
        assert_eq!(back.status.unwrap().phase.as_deref(), Some("Running"));
    }
    assert_eq!(
        as_go_holds_it(&server, &ar, "pb-s"),
        as_go_holds_it(&server, &ar, "js-s")
    );
    assert_eq!(body_types(&server, "/status"), [PB, JSON]);
}

#[test]
fn a_dry_run_goes_in_protobuf_stores_nothing_and_answers_as_json_does() {
    let server = ApiServer::start();
    let ar = ApiResource::of::<ConfigMap>();
    let pb: Api<ConfigMap> = Api::namespaced(client_with(&server, true), NS);
    let js: Api<ConfigMap> = Api::namespaced(client_with(&server, false), NS);
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let a = pb.create(&dry, &config_map("dry")).unwrap();
    let b = js.create(&dry, &config_map("dry")).unwrap();
    assert!(server.get(&ar, Some(NS), "dry").is_err());
    assert_eq!((a.data, a.binary_data), (b.data, b.binary_data));
    assert_eq!(body_types(&server, "dryRun=All"), [PB, JSON]);
}

/// A ConfigMap as a newer k8s-openapi (or a newer server) might have it: a member the 1.36
/// tables do not know.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct NewerConfigMap {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    metadata: api::ObjectMeta,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, String>,
    /// Sent as `null` when `None` (no `skip_serializing_if`): even a null member is unknown.
    #[serde(rename = "futureField")]
    future_field: Option<String>,
    #[serde(
        rename = "laterField",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    later_field: Option<String>,
}

impl Object for NewerConfigMap {
    type Meta = api::ObjectMeta;
    fn metadata(&self) -> &api::ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut api::ObjectMeta {
        &mut self.metadata
    }
    fn protobuf_message() -> Option<kube_informer::protobuf::Message> {
        kube_informer::protobuf::message_for("v1", "ConfigMap")
    }
}

impl Resource for NewerConfigMap {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "ConfigMap";
    const PLURAL: &'static str = "configmaps";
    const NAMESPACED: bool = true;
}

/// What the server received for each write: the raw JSON it stored for a JSON body.
fn newer(name: &str, future: Option<&str>, later: Option<&str>) -> NewerConfigMap {
    NewerConfigMap {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        metadata: serde_json::from_value(json!({"name": name, "namespace": NS})).unwrap(),
        data: BTreeMap::from([("mode".into(), "fast".into())]),
        future_field: future.map(str::to_owned),
        later_field: later.map(str::to_owned),
    }
}

#[test]
fn a_field_the_tables_do_not_know_sends_that_write_as_json_with_nothing_lost() {
    let server = ApiServer::start();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let mut config = server.client_config();
    let log = warnings.clone();
    config.warning_handler = WarningHandler::Custom(Arc::new(move |w: &Warning| {
        log.lock().unwrap().push(w.text.clone())
    }));
    let api: Api<NewerConfigMap> = Api::namespaced(Client::new(config).unwrap(), NS);
    // futureField: "x" — protobuf would drop it: JSON, and the server got it.
    api.create(&PostParams::default(), &newer("a", Some("x"), None))
        .unwrap();
    // futureField: null — still a member protobuf cannot carry: JSON.
    api.create(&PostParams::default(), &newer("b", None, None))
        .unwrap();
    // laterField: "y" on a replace — JSON too.
    let mut b = api.get("b").unwrap();
    b.future_field = None;
    b.later_field = Some("y".into());
    api.replace("b", &PostParams::default(), &b).unwrap();
    assert_eq!(body_types(&server, "/configmaps"), [JSON, JSON, JSON]);
    // Each field reached the server, which judged it as kube-apiserver does (dropped with a
    // warning; a 400 under `fieldValidation=Strict`): nothing was lost on the client's side.
    assert_eq!(
        *warnings.lock().unwrap(),
        [
            r#"unknown field "futureField""#,
            r#"unknown field "futureField""#,
            // The replace: futureField null, laterField "y".
            r#"unknown field "futureField""#,
            r#"unknown field "laterField""#
        ]
    );
    // Nothing is remembered: the same type, with only known members, goes in protobuf.
    let known: Api<ConfigMap> = Api::namespaced(client_with(&server, true), NS);
    known
        .create(&PostParams::default(), &config_map("c"))
        .unwrap();
    // A user value (a Value body) with a float where an int goes: JSON, and the server
    // judges it (kube-apiserver refuses `1.0` for an int32 in JSON).
    let deploys: Api<Deployment> = Api::namespaced(client_with(&server, true), NS);
    let mut d = serde_json::to_value(deployment("float")).unwrap();
    d["spec"]["replicas"] = json!(1.0);
    let _ = deploys.create(&PostParams::default(), &d);
    // A Value whose kind names another type: JSON (the server answers its own 400).
    let mut s = serde_json::to_value(config_map("secret")).unwrap();
    s["kind"] = json!("Secret");
    let _ = known.create(&PostParams::default(), &s);
    assert_eq!(body_types(&server, "/configmaps")[3..], [PB, JSON]);
    assert_eq!(body_types(&server, "/deployments"), [JSON]);
}

#[test]
fn custom_resources_metadata_types_strict_validation_patches_and_the_switch_stay_json() {
    let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    let server = ApiServer::builder().resource(&widgets).start();
    let client = client_with(&server, true);
    // A custom resource: never protobuf (kube-apiserver's handler crashes on it).
    let w: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &widgets);
    w.create(
        &PostParams::default(),
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .unwrap();
    // A typed built-in pointed at a custom resource's endpoint: JSON (its message is not
    // the resource's).
    let odd: Api<ConfigMap> = Api::namespaced_with(client.clone(), NS, &widgets);
    let _ = odd.create(&PostParams::default(), &config_map("w2"));
    assert_eq!(body_types(&server, "/widgets"), [JSON, JSON]);
    // A built-in through DynamicObject or the metadata-only type: JSON.
    let cms = ApiResource::of::<ConfigMap>();
    let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &cms);
    dynamic
        .create(&PostParams::default(), &config_map("d"))
        .unwrap();
    let typed: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    typed
        .metadata()
        .create(&PostParams::default(), &config_map("m"))
        .unwrap();
    // Strict field validation: only JSON can be checked for unknown fields.
    let strict = PostParams {
        field_validation: Some(FieldValidation::Strict),
        ..PostParams::default()
    };
    typed.create(&strict, &config_map("s")).unwrap();
    // A patch.
    typed
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .unwrap();
    // The switch off.
    let off: Api<ConfigMap> = Api::namespaced(client_with(&server, false), NS);
    off.create(&PostParams::default(), &config_map("off"))
        .unwrap();
    let types = body_types(&server, "/configmaps");
    assert_eq!(
        types,
        [JSON, JSON, JSON, "application/merge-patch+json", JSON]
    );
    // With the switch on, the same create goes in protobuf.
    typed
        .create(&PostParams::default(), &config_map("on"))
        .unwrap();
    assert_eq!(body_types(&server, "/configmaps").last().unwrap(), PB);
}

#[test]
fn a_415_sends_the_write_again_in_json_once_and_that_type_stays_json_on_that_client() {
    let server = ApiServer::start();
    let ar = ApiResource::of::<ConfigMap>();
    let client = client_with(&server, true);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    server.inject(Target::Write, Fault::status(415));
    let created = cms
        .create(&PostParams::default(), &config_map("a"))
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("a"));
    assert_eq!(server.pending_faults(), 0);
    assert_eq!(server.list(&ar, Some(NS)).len(), 1);
    // From now on JSON for ConfigMaps on this client (and its clones)...
    cms.create(&PostParams::default(), &config_map("b"))
        .unwrap();
    let again: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    again
        .replace("b", &PostParams::default(), &cms.get("b").unwrap())
        .unwrap();
    // ... not for another type, nor on another client.
    let pods: Api<Pod> = Api::namespaced(client, NS);
    pods.create(&PostParams::default(), &realistic_pod("p"))
        .unwrap();
    let other: Api<ConfigMap> = Api::namespaced(client_with(&server, true), NS);
    other
        .create(&PostParams::default(), &config_map("c"))
        .unwrap();
    assert_eq!(
        body_types(&server, "/configmaps"),
        [PB, JSON, JSON, JSON, PB]
    );
    assert_eq!(body_types(&server, "/pods"), [PB]);
    // A 415 to the JSON too: the error, after exactly two requests.
    let fresh: Api<ConfigMap> = Api::namespaced(client_with(&server, true), NS);
    server.inject(Target::Write, Fault::status(415));
    server.inject(Target::Write, Fault::status(415));
    let err = fresh
        .create(&PostParams::default(), &config_map("d"))
        .unwrap_err();
    assert_eq!(err.code(), Some(415), "{err}");
    assert_eq!(body_types(&server, "/configmaps")[5..], [PB, JSON]);
    assert!(server.get(&ar, Some(NS), "d").is_err());
}

// ---- hostile answers to a protobuf write, from a raw loopback server ----

/// Each request's line and `Content-Type`, as [`scripted`] saw them.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A loopback server answering each request with the next of `answers` (raw HTTP bytes;
/// an empty answer drops the connection unanswered), recording each request's line and
/// `Content-Type`.
fn scripted(answers: Vec<Vec<u8>>) -> (String, Seen) {
    raw_request::serve_in_turn("test/pb-bodies", answers, |request| {
        let ct = request.header("content-type").to_owned();
        (request.line, ct)
    })
}

fn http(status: &str, ct: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ct}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn scripted_client(url: &str) -> Api<ConfigMap> {
    let mut c = ClientConfig::new(url);
    c.qps = 0.0;
    c.max_retries = 0;
    Api::namespaced(Client::new(c).unwrap(), NS)
}

fn created_json() -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": NS, "uid": "u-1"}}))
    .unwrap()
}

#[test]
fn hostile_answers_to_a_protobuf_write_are_errors_never_a_second_write() {
    // A 415 whose body is not a Status (an aggregated server's text): still a 415, still
    // one JSON retry.
    let (url, seen) = scripted(vec![
        http(
            "415 Unsupported Media Type",
            "text/plain",
            b"no protobuf here",
        ),
        http("201 Created", JSON, &created_json()),
    ]);
    let cms = scripted_client(&url);
    let got = cms
        .create(&PostParams::default(), &config_map("a"))
        .unwrap();
    assert_eq!(got.metadata.uid.as_deref(), Some("u-1"));
    let seen: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, c)| c.clone())
        .collect();
    assert_eq!(seen, [PB, JSON]);

    // Connection dropped without an answer (as kube-apiserver does when a handler panics):
    // an error, and the write is not sent again in any encoding (it may have happened).
    // A 201 whose protobuf body is garbage: a decode error, not a panic, not a resend.
    // A 400 in protobuf (a kind mismatch): the server's error, not a JSON resend.
    let status400 = {
        let st = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "bad", "reason": "BadRequest", "code": 400});
        let m = kube_informer::protobuf::message_for("v1", "Status").unwrap();
        let raw = kube_informer::protobuf::encode(m, &st).unwrap();
        let mut out = Vec::new();
        kube_informer::protobuf::write_envelope("v1", "Status", &raw, &mut out);
        out
    };
    let (url, seen) = scripted(vec![
        Vec::new(),
        http("201 Created", PB, b"k8s\0\x0a\xff\xff\xff\xff\x0f"),
        http("201 Created", PB, b"not even the magic"),
        http("400 Bad Request", PB, &status400),
    ]);
    let cms = scripted_client(&url);
    assert!(cms
        .create(&PostParams::default(), &config_map("a"))
        .is_err());
    let err = cms
        .create(&PostParams::default(), &config_map("a"))
        .unwrap_err();
    assert!(err.status().is_none(), "{err}");
    assert!(cms
        .create(&PostParams::default(), &config_map("a"))
        .is_err());
    let err = cms
        .create(&PostParams::default(), &config_map("a"))
        .unwrap_err();
    assert_eq!(err.code(), Some(400), "{err}");
    let seen: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, c)| c.clone())
        .collect();
    assert_eq!(seen, [PB, PB, PB, PB]);
}

// ---- the captured protobuf request bodies, sent to the test server ----

fn captured(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/protobuf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn base64(text: &Value) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.as_str().unwrap())
        .unwrap()
}

/// The captured Status of a protobuf answer.
fn captured_status(c: &Value) -> api::Status {
    let body = base64(&c["response"]["bodyBase64"]);
    let env = kube_informer::protobuf::read_envelope(&body).unwrap();
    let m = kube_informer::protobuf::message_for("v1", "Status").unwrap();
    kube_informer::protobuf::decode(m, env.raw).unwrap()
}

#[test]
fn captured_protobuf_request_bodies_get_kube_apiservers_answers_from_the_test_server() {
    let server = ApiServer::start();
    let client = client_with(&server, true);
    // An invalid Pod in protobuf: 422 Invalid with the captured causes.
    let c = captured("status-422-create-pod-protobuf-body");
    let err = client
        .request(
            kube_informer::Method::POST,
            "/api/v1/namespaces/cap-pb-main/pods",
        )
        .content_type(PB)
        .accept(PB)
        .body(base64(&c["request"]["body"]["bodyBase64"]))
        .send()
        .unwrap_err();
    let want = captured_status(&c);
    let got = err.status().unwrap();
    assert_eq!((got.code, &got.reason), (422, &want.reason));
    let causes = |s: &api::Status| {
        let mut v: Vec<(String, String)> = s
            .details
            .as_ref()
            .unwrap()
            .causes
            .iter()
            .map(|c| (c.field.clone(), c.reason.clone()))
            .collect();
        v.sort();
        v
    };
    // The test server validates a Pod's name but not (yet) its containers' images or its
    // restartPolicy, as kube-apiserver does (in JSON as in protobuf): its causes are the
    // captured ones it knows.
    let want_causes = causes(&want);
    assert!(!causes(got).is_empty());
    for cause in causes(got) {
        assert!(want_causes.contains(&cause), "{cause:?}");
    }
    // A protobuf body with `Accept: application/json`: the answer is JSON.
    let c = captured("create-configmap-protobuf-body-accept-json");
    let res = client
        .request(
            kube_informer::Method::POST,
            "/api/v1/namespaces/cap-pb-main/configmaps",
        )
        .content_type(PB)
        .accept(JSON)
        .body(base64(&c["request"]["body"]["bodyBase64"]))
        .send()
        .unwrap();
    assert_eq!(
        (res.status(), res.header("content-type")),
        (201, Some(JSON))
    );
    let got: Value = res.json().unwrap();
    assert_eq!(got["data"], json!({"k": "v"}));
}
