//! Aggregated discovery (`apidiscovery.k8s.io/v2`): every group, version and resource of
//! `/api` or `/apis` in one document, revalidated with its ETag.
//!
//! Why: one request (two with the core group) replaces one per group-version, and a `304`
//! to `If-None-Match` makes a refresh nearly free. The server answers the plain legacy
//! document instead when it does not serve v2; [`is_aggregated`] tells them apart by the
//! `Content-Type` the server chose.

use serde::Deserialize;

use super::types::{group_version, DiscoveryData, ServerGroup, ServerResource};

/// The `Accept` header asking for v2 with the legacy document as the fallback.
pub const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// Whether a response's `Content-Type` is the aggregated document.
pub(crate) fn is_aggregated(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        let ct = ct.to_ascii_lowercase();
        ct.contains("as=apigroupdiscoverylist") && ct.contains("g=apidiscovery.k8s.io")
    })
}

#[derive(Deserialize)]
pub(crate) struct GroupDiscoveryList {
    pub kind: Option<String>,
    #[serde(default)]
    pub items: Vec<GroupDiscovery>,
}

#[derive(Deserialize)]
pub(crate) struct GroupDiscovery {
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(default)]
    pub versions: Vec<VersionDiscovery>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Metadata {
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize)]
pub(crate) struct VersionDiscovery {
    pub version: String,
    #[serde(default)]
    pub resources: Vec<ResourceDiscovery>,
    /// `Stale` when an aggregated API server could not be reached; its resources may be
    /// out of date or missing.
    #[serde(default)]
    pub freshness: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceDiscovery {
    pub resource: String,
    #[serde(default)]
    pub response_kind: Option<Gvk>,
    pub scope: String,
    #[serde(default)]
    pub singular_resource: String,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub short_names: Vec<String>,
    #[serde(default)]
    pub categories: Vec<String>,
    #[serde(default)]
    pub subresources: Vec<SubresourceDiscovery>,
}

#[derive(Deserialize)]
pub(crate) struct Gvk {
    #[serde(default)]
    pub kind: String,
}

#[derive(Deserialize)]
pub(crate) struct SubresourceDiscovery {
    pub subresource: String,
}

impl GroupDiscoveryList {
    /// Adds its groups and resources to `data`, in the server's order (the first version
    /// of a group is its preferred one). An error names the group-version at fault.
    pub(crate) fn merge_into(self, data: &mut DiscoveryData) -> Result<(), String> {
        if self
            .kind
            .as_deref()
            .is_some_and(|k| k != "APIGroupDiscoveryList")
        {
            return Err(format!(
                "expected kind APIGroupDiscoveryList, found {:?}",
                self.kind.unwrap_or_default()
            ));
        }
        for g in self.items {
            let group = g.metadata.name;
            let mut versions = Vec::new();
            for v in g.versions {
                let gv = group_version(&group, &v.version);
                if v.version.is_empty() {
                    return Err(format!("group {group:?} lists a version without a name"));
                }
                let mut resources = Vec::new();
                for r in v.resources {
                    let namespaced = match r.scope.as_str() {
                        "Namespaced" => true,
                        "Cluster" => false,
                        other => {
                            return Err(format!(
                                "{gv}: resource {:?} has an unknown scope {other:?}",
                                r.resource
                            ))
                        }
                    };
                    let kind = r.response_kind.map(|k| k.kind).unwrap_or_default();
                    if r.resource.is_empty() || kind.is_empty() {
                        return Err(format!(
                            "{gv}: resource {:?} lacks a name or a kind",
                            r.resource
                        ));
                    }
                    resources.push(ServerResource {
                        group: group.clone(),
                        version: v.version.clone(),
                        singular: if r.singular_resource.is_empty() {
                            kind.to_ascii_lowercase()
                        } else {
                            r.singular_resource
                        },
                        kind,
                        plural: r.resource,
                        short_names: r.short_names,
                        namespaced,
                        verbs: r.verbs,
                        subresources: r.subresources.into_iter().map(|s| s.subresource).collect(),
                        categories: r.categories,
                    });
                }
                if v.freshness.as_deref() == Some("Stale") {
                    log::warn!(target: "kube_informer::discovery", "discovery of {gv} is stale on the server (an aggregated API server is unreachable)");
                }
                versions.push(v.version);
                data.resources.insert(gv, resources);
            }
            data.groups.push(ServerGroup {
                name: group,
                versions,
            });
        }
        Ok(())
    }
}
