//! CRDs generated from Rust types (feature `crd`), created through the test server's API:
//! accepted, then validating and pruning custom objects the way kube-apiserver does; and
//! the schemas kube-apiserver refuses as not structural, refused the same way.
//!
//! ```text
//! cargo test --features crd --test crd_schema
//! ```
#![cfg(feature = "crd")]

mod common;

use kube_informer::api::crd::{CrdBuilder, PrinterColumn};
use kube_informer::api::{DynamicObject, Status};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, Patch, PatchParams, PostParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The captured CRD (`crd-widgets.yaml`), as Rust types.
#[derive(Serialize, Deserialize, JsonSchema)]
struct WidgetSpec {
    #[schemars(range(min = 0))]
    size: i32,
    color: Option<Color>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Blue,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct WidgetStatus {
    ready: bool,
}

fn generated() -> CrdBuilder {
    CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1", "Widget")
        .short_names(["wdg"])
        .status::<WidgetStatus>()
        .printer_column(PrinterColumn::new("Size", "integer", ".spec.size"))
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "lab"}, "spec": spec})
}

fn setup() -> (ApiServer, Api<DynamicObject>, Api<DynamicObject>) {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let crd_api = Api::all_with(client.clone(), &common::crds());
    let widgets = Api::namespaced_with(client, "lab", &common::widgets());
    (server, crd_api, widgets)
}

#[test]
fn the_generated_crd_matches_the_captured_one_where_it_is_not_a_schema() {
    let captured: Value =
        serde_yaml::from_slice(&common::fixture("crd-widgets.yaml")).expect("crd-widgets.yaml");
    let crd = generated().build().unwrap();
    assert_eq!(crd["metadata"], captured["metadata"]);
    for part in ["group", "scope", "names"] {
        assert_eq!(crd["spec"][part], captured["spec"][part], "spec.{part}");
    }
    let (ours, theirs) = (
        &crd["spec"]["versions"][0],
        &captured["spec"]["versions"][0],
    );
    for part in [
        "name",
        "served",
        "storage",
        "subresources",
        "additionalPrinterColumns",
    ] {
        assert_eq!(ours[part], theirs[part], "spec.versions[0].{part}");
    }
}

#[test]
fn a_generated_crd_created_through_the_api_validates_custom_objects() {
    let (_server, crd_api, widgets) = setup();
    crd_api
        .create(&PostParams::default(), &generated().build().unwrap())
        .unwrap();

    let ok = widgets
        .create(
            &PostParams::default(),
            &widget("good", json!({"size": 3, "color": "red", "bogus": 1})),
        )
        .unwrap();
    // Pruned, as the schema does not declare it.
    let spec: Value = ok.decode_field("spec").unwrap().unwrap();
    assert_eq!(spec, json!({"size": 3, "color": "red"}));
    // `Option` is nullable, but kube-apiserver checks a `null` against the field's `enum`
    // too (kube-openapi runs the enum check on null values), so an enum's `null` is refused:
    // leave `None` out (`skip_serializing_if`) rather than sending `null`.
    let err = widgets
        .create(
            &PostParams::default(),
            &widget("null-color", json!({"size": 0, "color": null})),
        )
        .unwrap_err();
    assert_eq!(
        err.status().unwrap().details.as_ref().unwrap().causes[0].message,
        "Unsupported value: null: supported values: \"red\", \"blue\""
    );

    // Refused by the schema exactly as the captured 422 shows it.
    let err = widgets
        .create(&PostParams::default(), &widget("bad", json!({"size": -1})))
        .unwrap_err();
    let captured: Status =
        serde_json::from_slice(&common::fixture("status-422-crd-schema.json")).unwrap();
    assert_eq!(err.status(), Some(&captured));

    let err = widgets
        .create(
            &PostParams::default(),
            &widget("green", json!({"size": 1, "color": "green"})),
        )
        .unwrap_err();
    assert_eq!(err.code(), Some(422));
    let causes = &err.status().unwrap().details.as_ref().unwrap().causes;
    assert_eq!(causes[0].field, "spec.color");
    assert_eq!(causes[0].reason, "FieldValueNotSupported");

    // `spec` is required.
    let err = widgets
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                    "metadata": {"name": "nospec", "namespace": "lab"}}),
        )
        .unwrap_err();
    assert_eq!(err.code(), Some(422), "{err}");
}

#[test]
fn a_crd_that_is_not_structural_is_refused_with_each_problem() {
    let (_server, crd_api, _) = setup();
    let mut crd = generated().build().unwrap();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["color"] = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
    spec["properties"]["tree"] = json!({"$ref": "#/definitions/Tree"});
    let err = crd_api.create(&PostParams::default(), &crd).unwrap_err();
    assert_eq!(err.code(), Some(422), "{err}");
    let st = err.status().unwrap();
    assert_eq!(st.reason, "Invalid");
    let at = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties";
    let fields: Vec<(&str, &str)> = st
        .details
        .as_ref()
        .unwrap()
        .causes
        .iter()
        .map(|c| (c.field.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            (
                &*format!("{at}[color].anyOf[0].type"),
                "Forbidden: must be empty to be structural"
            ),
            (
                &*format!("{at}[color].anyOf[1].type"),
                "Forbidden: must be empty to be structural"
            ),
            (
                &*format!("{at}[color].type"),
                "Required value: must not be empty for specified object fields"
            ),
            (
                &*format!("{at}[tree].$ref"),
                "Forbidden: $ref is not supported"
            ),
            (
                &*format!("{at}[tree].type"),
                "Required value: must not be empty for specified object fields"
            ),
        ]
    );
    assert!(st.message.starts_with(
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.lab.example.com\" is invalid: ["
    ));
    // Nothing was stored.
    assert_eq!(
        crd_api.get("widgets.lab.example.com").unwrap_err().code(),
        Some(404)
    );

    // A name that is not PLURAL.GROUP.
    let mut crd = generated().build().unwrap();
    crd["metadata"]["name"] = "widgets".into();
    let err = crd_api.create(&PostParams::default(), &crd).unwrap_err();
    assert_eq!(err.code(), Some(422));
    assert_eq!(
        err.status().unwrap().details.as_ref().unwrap().causes[0].field,
        "metadata.name"
    );
}

#[test]
fn a_crd_applied_server_side_is_served_and_a_patch_is_checked() {
    let (_server, crd_api, widgets) = setup();
    let name = generated().name();
    crd_api
        .patch(
            &name,
            &PatchParams::apply("crd-installer"),
            &Patch::Apply(generated().build().unwrap()),
        )
        .unwrap();
    let err = widgets
        .create(&PostParams::default(), &widget("bad", json!({"size": -1})))
        .unwrap_err();
    assert_eq!(err.code(), Some(422), "{err}");

    // A merge patch that would make the schema non-structural is refused, and changes
    // nothing.
    let err = crd_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versions": [{"name": "v1", "served": true,
                "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": {"properties": {"size": {"type": "integer"}}}}}}}]}})),
        )
        .unwrap_err();
    assert_eq!(err.code(), Some(422), "{err}");
    assert_eq!(
        err.status().unwrap().details.as_ref().unwrap().causes[0].field,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"
    );
    let err = widgets
        .create(&PostParams::default(), &widget("bad", json!({"size": -1})))
        .unwrap_err();
    assert_eq!(err.code(), Some(422), "{err}");

    // A merge patch that loosens the schema is served at once.
    crd_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versions": [{"name": "v1", "served": true,
                "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}}}]}})),
        )
        .unwrap();
    widgets
        .create(&PostParams::default(), &widget("free", json!({"size": -1})))
        .unwrap();
}
