//! CustomResourceDefinitions: what the test server learns from one, the way a real server
//! does when the CRD is created.
//!
//! A real kube-apiserver serves a custom resource from its CRD: the names, the scope, the
//! subresources (`status`, `scale` with its three paths) and the structural schema that
//! validates objects and prunes the fields it does not declare. The test server reads the
//! same document ([`ApiServerBuilder::custom_resource_definition`]) so that a test can
//! declare a custom resource exactly as its cluster would, instead of piecing it together.
//! The storage version is served; the other served versions only when the CRD converts
//! through a webhook (`spec.conversion.strategy: Webhook`; see `conversion.rs`).
//!
//! A CRD written through the API (create, update, patch or server-side apply of
//! `customresourcedefinitions`) is checked first as kube-apiserver checks it: its name is
//! `PLURAL.GROUP` and every version has a *structural* schema (see `structural.rs`),
//! otherwise a 422 lists the problems; then its resource is served at once, listed by
//! discovery, and the CRD `Established` (a real server takes a moment). Deleting it deletes
//! its objects and stops serving the resource: see `crd_lifecycle.rs`.
//!
//! [`ApiServerBuilder::custom_resource_definition`]: crate::testing::ApiServerBuilder::custom_resource_definition

use serde_json::Value;

use super::resources::{ScaleSubresource, Subresources};
use super::store::{Store, TypeKey};
use super::validation::{self, FieldError};
use crate::api::{ApiResource, Status};

/// What the server takes from a CRD.
#[derive(Clone, Debug)]
pub(crate) struct Definition {
    pub resource: ApiResource,
    pub subresources: Subresources,
    /// The served version's `openAPIV3Schema`, if it has one.
    pub schema: Option<Value>,
    pub short_names: Vec<String>,
    /// The conversion webhook, when `spec.conversion.strategy` is `Webhook`.
    pub conversion: Option<Conversion>,
}

/// A CRD converted by a webhook: its other served versions, read and written through it.
#[derive(Clone, Debug)]
pub(crate) struct Conversion {
    /// The storage version's resource.
    pub storage: ApiResource,
    /// The served versions other than the storage one.
    pub others: Vec<String>,
    /// `spec.conversion.webhook.clientConfig`.
    pub client_config: Value,
}

fn text<'a>(v: &'a Value, pointer: &str) -> Result<&'a str, String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("the CustomResourceDefinition has no {pointer}"))
}

/// `.spec.replicas` (a CRD's JSON path) as the JSON pointer `/spec/replicas`.
fn pointer_of(path: &str) -> Result<String, String> {
    let rest = path
        .strip_prefix('.')
        .filter(|r| !r.is_empty() && !r.contains(['[', ']']))
        .ok_or_else(|| format!("unsupported scale path {path:?}"))?;
    Ok(format!("/{}", rest.replace('.', "/")))
}

/// Reads an `apiextensions.k8s.io/v1` CustomResourceDefinition.
pub(crate) fn parse(crd: &Value) -> Result<Definition, String> {
    let group = text(crd, "/spec/group")?;
    let plural = text(crd, "/spec/names/plural")?;
    let kind = text(crd, "/spec/names/kind")?;
    let namespaced = match crd.pointer("/spec/scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => return Err(format!("unsupported scope {other:?}")),
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .ok_or("the CustomResourceDefinition has no /spec/versions")?;
    let version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .or_else(|| versions.iter().find(|v| v["served"] == true))
        .ok_or("the CustomResourceDefinition serves no version")?;
    let name = text(version, "/name")?;
    let mut subresources = Subresources::none();
    if version.pointer("/subresources/status").is_some() {
        subresources = subresources.with_status();
    }
    if let Some(s) = version.pointer("/subresources/scale") {
        subresources = subresources.with_scale(ScaleSubresource {
            spec_replicas: pointer_of(text(s, "/specReplicasPath")?)?,
            status_replicas: pointer_of(text(s, "/statusReplicasPath")?)?,
            label_selector: match s.get("labelSelectorPath").and_then(Value::as_str) {
                Some(p) => Some(pointer_of(p)?),
                None => None,
            },
        });
    }
    let short_names = crd
        .pointer("/spec/names/shortNames")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let resource = ApiResource::new(group, name, kind, plural, namespaced);
    let conversion = match crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) {
        None | Some("None") => None,
        Some("Webhook") => Some(Conversion {
            storage: resource.clone(),
            others: versions
                .iter()
                .filter(|v| v["served"] == true)
                .filter_map(|v| v["name"].as_str())
                .filter(|v| *v != name)
                .map(str::to_owned)
                .collect(),
            client_config: crd
                .pointer("/spec/conversion/webhook/clientConfig")
                .cloned()
                .ok_or("the CustomResourceDefinition converts by webhook but has no /spec/conversion/webhook/clientConfig")?,
        }),
        Some(other) => return Err(format!("unsupported conversion strategy {other:?}")),
    };
    Ok(Definition {
        resource,
        subresources,
        schema: version.pointer("/schema/openAPIV3Schema").cloned(),
        short_names,
        conversion,
    })
}

/// Whether writes to `tk` are writes of CustomResourceDefinitions.
pub(crate) fn is_crd(tk: &TypeKey) -> bool {
    tk.group == "apiextensions.k8s.io" && tk.plural == "customresourcedefinitions"
}

/// Checks a CRD written through the API as kube-apiserver does (its name, a structural
/// schema in every version), and says what it declares; a 422 otherwise.
pub(crate) fn admit(crd: &Value) -> Result<Definition, Status> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let refuse = |errors: &[FieldError]| {
        validation::invalid(
            "CustomResourceDefinition.apiextensions.k8s.io",
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            errors,
        )
    };
    let d = parse(crd).map_err(|e| refuse(&[FieldError::invalid("spec", &Value::Null, &e)]))?;
    let mut errors = Vec::new();
    let want = format!("{}.{}", d.resource.plural, d.resource.group);
    if name != want {
        errors.push(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if !d.resource.group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            &Value::from(d.resource.group.as_str()),
            "should be a domain with at least one dot",
        ));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            Some(schema) => errors.extend(super::structural::check(schema, &path)),
            None => errors.push(FieldError::required(&path, "schemas are required")),
        }
    }
    if errors.is_empty() {
        Ok(d)
    } else {
        Err(refuse(&errors))
    }
}

/// Serves what a CRD declares from now on, and lists it in discovery. A resource a CRD's
/// deletion took away is served again, empty, its first list refused while its new cache
/// initialises (see `crd_lifecycle.rs`).
pub(crate) fn serve(store: &mut Store, d: &Definition) {
    store.register(&d.resource);
    let tk = TypeKey::of(&d.resource);
    store.configure(&tk, Some(&d.subresources), None);
    store.collection(&tk).info.schema = d.schema.clone();
    super::crd_lifecycle::restore(store, &tk, 1);
    for v in d.conversion.iter().flat_map(|c| &c.others) {
        let other = TypeKey {
            version: v.clone(),
            ..tk.clone()
        };
        super::crd_lifecycle::restore(store, &other, 0);
    }
    store.serving.define(d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_names_subresources_and_schema() {
        let crd = json!({"spec": {"group": "g.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"]},
            "versions": [{"name": "v1beta1", "served": true, "storage": false},
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                 "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let d = parse(&crd).unwrap();
        assert_eq!(d.resource.version, "v1");
        assert_eq!(d.resource.plural, "gadgets");
        assert!(d.subresources.status);
        let scale = d.subresources.scale.unwrap();
        assert_eq!(scale.spec_replicas, "/spec/replicas");
        assert_eq!(scale.label_selector.as_deref(), Some("/status/selector"));
        assert_eq!(d.schema, Some(json!({"type": "object"})));
        assert_eq!(d.short_names, ["gd"]);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(parse(&json!({})).is_err());
        assert!(parse(
            &json!({"spec": {"group": "g", "names": {"plural": "p", "kind": "K"},
            "scope": "Somewhere", "versions": []}})
        )
        .is_err());
    }
}
