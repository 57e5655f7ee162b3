//! The structural rewrites, one serde/schemars shape at a time, and the builder's checks.
//! Every generated CRD is also run through the test server's structural checks (the ones
//! kube-apiserver makes), so a rewrite that leaves something non-structural fails here.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::builder::CrdBuilder;
use super::{CrdError, PrinterColumn};

/// The spec schema of `T`, checked structural inside a whole CRD.
fn spec_of<T: JsonSchema>() -> Value {
    let crd = CrdBuilder::new::<T>("lab.example.com", "v1", "Thing")
        .build()
        .unwrap();
    let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let problems = crate::testing::structural::check(root, "openAPIV3Schema");
    assert!(
        problems.is_empty(),
        "not structural: {problems:?}\n{root:#}"
    );
    root["properties"]["spec"].clone()
}

fn spec_error<T: JsonSchema>() -> CrdError {
    CrdBuilder::new::<T>("lab.example.com", "v1", "Thing")
        .build()
        .unwrap_err()
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Port {
    name: String,
    number: u16,
}

#[test]
fn options_are_nullable_and_not_required() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    enum Mode {
        Fast,
        Slow,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        a: Option<String>,
        b: Option<Port>,
        c: Option<Mode>,
        d: Option<Vec<u8>>,
        e: i64,
    }
    let s = spec_of::<Spec>();
    assert_eq!(s["required"], json!(["e"]));
    assert_eq!(
        s["properties"]["a"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(s["properties"]["b"]["type"], "object");
    assert_eq!(s["properties"]["b"]["nullable"], true);
    assert_eq!(s["properties"]["b"]["required"], json!(["name", "number"]));
    assert_eq!(
        s["properties"]["c"],
        json!({"type": "string", "enum": ["Fast", "Slow"], "nullable": true})
    );
    assert_eq!(s["properties"]["d"]["type"], "array");
    assert_eq!(s["properties"]["d"]["nullable"], true);
    assert_eq!(s["properties"]["e"]["format"], "int64");
}

#[test]
fn unit_enums_are_string_enums_with_or_without_docs() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Plain {
        Red,
        Blue,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    enum Documented {
        /// The first.
        First,
        /// The second.
        #[serde(rename = "2nd")]
        Second,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        plain: Plain,
        documented: Documented,
    }
    let s = spec_of::<Spec>();
    assert_eq!(
        s["properties"]["plain"],
        json!({"type": "string", "enum": ["red", "blue"]})
    );
    assert_eq!(s["properties"]["documented"]["type"], "string");
    assert_eq!(
        s["properties"]["documented"]["enum"],
        json!(["First", "2nd"])
    );
    assert!(s["properties"]["documented"].get("oneOf").is_none());
}

#[test]
fn enums_with_data_become_one_object_with_a_variant_check() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    enum Source {
        /// From git.
        Git {
            url: String,
        },
        Bucket(Port),
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    enum Tagged {
        A { x: u32 },
        B { x: u32, y: Option<String> },
        C,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        source: Source,
        tagged: Tagged,
    }
    let s = spec_of::<Spec>();
    let source = &s["properties"]["source"];
    assert_eq!(source["type"], "object");
    assert_eq!(source["properties"]["git"]["description"], "From git.");
    assert_eq!(
        source["properties"]["git"]["properties"]["url"]["type"],
        "string"
    );
    assert_eq!(source["properties"]["bucket"]["type"], "object");
    assert_eq!(
        source["oneOf"],
        json!([{"required": ["git"]}, {"required": ["bucket"]}])
    );
    let tagged = &s["properties"]["tagged"];
    assert_eq!(tagged["type"], "object");
    assert_eq!(
        tagged["properties"]["kind"],
        json!({"type": "string", "enum": ["A", "B", "C"]})
    );
    assert_eq!(tagged["properties"]["y"]["nullable"], true);
    // The tag tells the variants apart, so `oneOf` still holds for A and B, which share
    // their required fields.
    assert_eq!(
        tagged["oneOf"][0],
        json!({"required": ["kind", "x"], "properties": {"kind": {"enum": ["A"]}}})
    );
    assert_eq!(
        tagged["oneOf"][2],
        json!({"required": ["kind"], "properties": {"kind": {"enum": ["C"]}}})
    );
}

#[test]
fn flattened_and_optional_enums_with_data() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    enum Source {
        Git { url: String },
        Bucket { name: String },
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        name: String,
        #[serde(flatten)]
        source: Source,
        backup: Option<Source>,
    }
    let s = spec_of::<Spec>();
    assert_eq!(s["type"], "object");
    assert_eq!(s["properties"]["name"]["type"], "string");
    assert_eq!(s["properties"]["git"]["type"], "object");
    assert_eq!(s["properties"]["bucket"]["type"], "object");
    assert_eq!(
        s["oneOf"],
        json!([{"required": ["git"]}, {"required": ["bucket"]}])
    );
    let backup = &s["properties"]["backup"];
    assert_eq!(backup["type"], "object");
    assert_eq!(backup["nullable"], true);
    assert_eq!(
        backup["oneOf"],
        json!([{"required": ["git"]}, {"required": ["bucket"]}])
    );
}

#[test]
fn adjacently_tagged_enums_are_refused_by_field() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        A(String),
        B(u32),
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        x: Adjacent,
    }
    let e = spec_error::<Spec>();
    assert_eq!(e.path, ".spec.x.c");
    assert!(e.problem.contains("different schemas"), "{e}");
}

#[test]
fn untagged_int_or_string_and_the_helpers() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum IntOrString {
        Int(i32),
        Str(String),
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        target: IntOrString,
        maybe: Option<IntOrString>,
        #[schemars(schema_with = "super::int_or_string")]
        surge: Value,
        #[schemars(schema_with = "super::preserve_unknown_fields")]
        values: Value,
    }
    let s = spec_of::<Spec>();
    assert_eq!(
        s["properties"]["target"],
        json!({"x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        s["properties"]["maybe"],
        json!({"x-kubernetes-int-or-string": true, "nullable": true})
    );
    assert_eq!(
        s["properties"]["surge"],
        json!({"x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        s["properties"]["values"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
}

#[test]
fn maps_values_and_sets() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        labels: BTreeMap<String, String>,
        ports: HashMap<String, Port>,
        anything: Value,
        free: HashMap<String, Value>,
        object: serde_json::Map<String, Value>,
        tags: HashSet<String>,
    }
    let s = spec_of::<Spec>();
    let p = &s["properties"];
    assert_eq!(
        p["labels"],
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    assert_eq!(
        p["ports"]["additionalProperties"]["properties"]["number"]["type"],
        "integer"
    );
    assert_eq!(
        p["anything"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["free"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["object"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
}

#[test]
fn nested_structs_vecs_flatten_renames_and_skips() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Common {
        owner_name: String,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        /// The ports.
        ports: Vec<Port>,
        #[serde(flatten)]
        common: Common,
        #[serde(rename = "podIP")]
        pod_ip: String,
        #[serde(skip)]
        #[allow(dead_code)]
        cache: u32,
        #[serde(default)]
        replica_count: u32,
        #[serde(flatten)]
        extra: HashMap<String, Value>,
    }
    let s = spec_of::<Spec>();
    let p = &s["properties"];
    assert_eq!(p["ports"]["description"], "The ports.");
    assert_eq!(p["ports"]["items"]["type"], "object");
    assert_eq!(
        p["ports"]["items"]["properties"]["number"]["maximum"],
        65535
    );
    assert_eq!(p["ownerName"]["type"], "string");
    assert_eq!(p["podIP"]["type"], "string");
    assert!(p.get("cache").is_none());
    assert_eq!(p["replicaCount"]["default"], 0);
    assert_eq!(s["required"], json!(["ports", "ownerName", "podIP"]));
    // A flattened map beside declared fields: the server keeps the other fields.
    assert_eq!(s["x-kubernetes-preserve-unknown-fields"], true);
    assert!(s.get("additionalProperties").is_none());
}

#[test]
fn empty_structs_declare_no_fields() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Empty {}
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Strict {}
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec {
        empty: Empty,
        strict: Strict,
    }
    let s = spec_of::<Spec>();
    for f in ["empty", "strict"] {
        assert_eq!(s["properties"][f]["type"], "object", "{f}");
        assert!(
            s["properties"][f]
                .get("x-kubernetes-preserve-unknown-fields")
                .is_none(),
            "{f}: {}",
            s["properties"][f]
        );
    }
}

#[test]
fn what_has_no_structural_form_is_refused_by_field() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    enum Mixed {
        Off,
        Fixed(u32),
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec1 {
        mode: Mixed,
    }
    let e = spec_error::<Spec1>();
    assert_eq!(e.path, ".spec.mode");
    assert!(e.problem.contains("different JSON types"), "{e}");

    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Tree {
        children: Vec<Tree>,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec2 {
        tree: Tree,
    }
    let e = spec_error::<Spec2>();
    assert!(e.path.starts_with(".spec.tree"), "{e}");
    assert!(e.problem.contains("recursive"), "{e}");

    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Spec3 {
        pair: (String, u32),
    }
    let e = spec_error::<Spec3>();
    assert_eq!(e.path, ".spec.pair");
    assert!(e.problem.contains("tuple"), "{e}");

    let e = spec_error::<String>();
    assert_eq!(e.path, ".spec");
    assert!(e.problem.contains("must be an object"), "{e}");
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct WidgetSpec {
    replicas: i32,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct WidgetStatus {
    replicas: i32,
    selector: Option<String>,
}

#[test]
fn the_definition_has_names_versions_subresources_and_columns() {
    let crd = CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1beta1", "Policy")
        .cluster_scoped()
        .short_names(["pol"])
        .categories(["all"])
        .version::<WidgetSpec>("v1")
        .storage()
        .status::<WidgetStatus>()
        .scale_subresource(
            ".spec.replicas",
            ".status.replicas",
            Some(".status.selector"),
        )
        .printer_column(PrinterColumn::new("Replicas", "integer", ".spec.replicas").priority(1))
        .build()
        .unwrap();
    assert_eq!(crd["metadata"]["name"], "policies.lab.example.com");
    assert_eq!(
        crd["spec"]["names"],
        json!({"plural": "policies", "singular": "policy", "kind": "Policy",
               "listKind": "PolicyList", "shortNames": ["pol"], "categories": ["all"]})
    );
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let v = &crd["spec"]["versions"];
    assert_eq!(
        (&v[0]["name"], &v[0]["storage"], &v[0]["served"]),
        (&json!("v1beta1"), &json!(false), &json!(true))
    );
    assert_eq!(
        (&v[1]["name"], &v[1]["storage"]),
        (&json!("v1"), &json!(true))
    );
    assert!(v[0].get("subresources").is_none());
    assert_eq!(
        v[1]["subresources"],
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}})
    );
    assert_eq!(
        v[1]["additionalPrinterColumns"],
        json!([{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}])
    );
    let root = &v[1]["schema"]["openAPIV3Schema"];
    assert_eq!(root["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(root["required"], json!(["spec"]));
    // What the test server reads from it.
    let d = crate::testing::crd::parse(&crd).unwrap();
    assert_eq!(d.resource.version, "v1");
    assert!(!d.resource.namespaced);
    assert!(d.subresources.status);
    assert_eq!(
        d.subresources.scale.unwrap().spec_replicas,
        "/spec/replicas"
    );
}

#[test]
fn the_builder_refuses_what_the_server_would() {
    let err = |b: CrdBuilder| b.build().unwrap_err().path;
    let widget = || CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1", "Widget");
    assert_eq!(
        err(CrdBuilder::new::<WidgetSpec>("nodot", "v1", "Widget")),
        "spec.group"
    );
    assert_eq!(err(widget().plural("Widgets")), "spec.names.plural");
    assert_eq!(
        err(widget().version::<WidgetSpec>("v1")),
        "spec.versions[1].name"
    );
    assert_eq!(
        err(widget().version::<WidgetSpec>("v2").storage().served(false)),
        "spec.versions"
    );
    assert_eq!(
        err(widget().scale_subresource(".spec.replicas", ".status.replicas", None)),
        "spec.versions[0].subresources.scale.statusReplicasPath"
    );
    assert_eq!(
        err(widget().status::<WidgetStatus>().scale_subresource(
            ".spec.size",
            ".status.replicas",
            None
        )),
        "spec.versions[0].subresources.scale.specReplicasPath"
    );
    assert_eq!(
        err(widget().printer_column(PrinterColumn::new("X", "int", ".spec.replicas"))),
        "spec.versions[0].additionalPrinterColumns[0].type"
    );
    let yaml = widget().build_yaml().unwrap();
    assert!(
        yaml.starts_with("apiVersion: apiextensions.k8s.io/v1\n"),
        "{yaml}"
    );
}

#[test]
fn plurals() {
    let plural = |kind: &str| {
        CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1", kind)
            .name()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(plural("Widget"), "widgets");
    assert_eq!(plural("Policy"), "policies");
    assert_eq!(plural("Gateway"), "gateways");
    assert_eq!(plural("Ingress"), "ingresses");
    assert_eq!(plural("Box"), "boxes");
    assert_eq!(plural("Batch"), "batches");
}
