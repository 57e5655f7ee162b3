//! What discovery finds, in the library's own shape, and the legacy documents it is read from
//! and written to disk as.
//!
//! The server describes itself in two encodings (aggregated v2 in one document, or the legacy
//! per-group-version documents); both are decoded into [`ServerGroup`] and [`ServerResource`]
//! here, so the cache, the mapper and the user see one model. The disk cache stores the legacy
//! shape whichever way the data came, like kubectl's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api::ApiResource;

/// The server's `/version` answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerVersion {
    /// Major version, e.g. `1`.
    #[serde(default)]
    pub major: String,
    /// Minor version, e.g. `35` (may carry a `+` on some distributions).
    #[serde(default)]
    pub minor: String,
    /// Full version, e.g. `v1.35.0`.
    #[serde(default)]
    pub git_version: String,
    /// The commit the server was built from.
    #[serde(default)]
    pub git_commit: String,
    /// Build time, RFC 3339.
    #[serde(default)]
    pub build_date: String,
    /// The Go toolchain.
    #[serde(default)]
    pub go_version: String,
    /// `os/arch`.
    #[serde(default)]
    pub platform: String,
}

/// An API group and its versions, the preferred one first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerGroup {
    /// Group name; `""` for the core group (`/api`).
    pub name: String,
    /// Versions served, the preferred one first, then in the server's order.
    pub versions: Vec<String>,
}

impl ServerGroup {
    /// The version the server prefers (the first).
    pub fn preferred_version(&self) -> Option<&str> {
        self.versions.first().map(String::as_str)
    }
}

/// A resource of one group-version as discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerResource {
    /// Group (`""` for the core group).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind of its objects, e.g. `Deployment`.
    pub kind: String,
    /// Plural name used in URLs, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment` (the lower-cased kind when the server gave none).
    pub singular: String,
    /// Short names, e.g. `deploy`.
    pub short_names: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Verbs, e.g. `get`, `list`, `watch`.
    pub verbs: Vec<String>,
    /// Subresources, e.g. `status`, `scale`.
    pub subresources: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
}

impl ServerResource {
    /// Where it lives, for [`Api`](crate::Api) and informers.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::new(
            &self.group,
            &self.version,
            &self.kind,
            &self.plural,
            self.namespaced,
        )
    }

    /// Whether the server accepts `verb` on it (`list`, `watch`, ...).
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// Everything discovery found: the groups in the server's order (core first) and the
/// resources of each group-version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscoveryData {
    /// The groups, the core group first when served.
    pub groups: Vec<ServerGroup>,
    /// Resources by group-version (`v1`, `apps/v1`).
    pub resources: BTreeMap<String, Vec<ServerResource>>,
}

impl DiscoveryData {
    /// The resources of one group-version.
    pub fn resources_of(&self, group: &str, version: &str) -> Option<&[ServerResource]> {
        self.resources
            .get(&group_version(group, version))
            .map(Vec::as_slice)
    }
}

/// `v1` for the core group, `group/version` otherwise.
pub(crate) fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// `apps/v1` -> (`apps`, `v1`); `v1` -> (``, `v1`).
pub(crate) fn split_group_version(gv: &str) -> (&str, &str) {
    gv.rsplit_once('/').unwrap_or(("", gv))
}

// ---- The legacy documents (also the disk cache's files). ----

/// `/api`: `APIVersions`.
#[derive(Deserialize)]
pub(crate) struct ApiVersions {
    pub kind: Option<String>,
    pub versions: Vec<String>,
}

/// `/apis`: `APIGroupList`; also `servergroups.json`.
#[derive(Deserialize, Serialize)]
pub(crate) struct ApiGroupList {
    pub kind: Option<String>,
    #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub groups: Vec<ApiGroup>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApiGroup {
    pub name: String,
    pub versions: Vec<GroupVersionForDiscovery>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_version: Option<GroupVersionForDiscovery>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GroupVersionForDiscovery {
    pub group_version: String,
    pub version: String,
}

/// `/api/v1`, `/apis/G/V`: `APIResourceList`; also `serverresources.json`.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApiResourceList {
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub group_version: String,
    pub resources: Vec<LegacyResource>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LegacyResource {
    pub name: String,
    #[serde(default)]
    pub singular_name: String,
    pub namespaced: bool,
    pub kind: String,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

impl ApiGroupList {
    /// The groups as the library models them (preferred version first).
    pub(crate) fn to_groups(&self) -> Vec<ServerGroup> {
        self.groups
            .iter()
            .map(|g| {
                let mut versions: Vec<String> =
                    g.versions.iter().map(|v| v.version.clone()).collect();
                if let Some(p) = &g.preferred_version {
                    if let Some(i) = versions.iter().position(|v| *v == p.version) {
                        let v = versions.remove(i);
                        versions.insert(0, v);
                    }
                }
                ServerGroup {
                    name: g.name.clone(),
                    versions,
                }
            })
            .collect()
    }

    /// The legacy document for `groups`, as the disk cache stores it (the core group, if any,
    /// named `""`).
    pub(crate) fn from_groups(groups: &[ServerGroup]) -> Self {
        ApiGroupList {
            kind: Some("APIGroupList".into()),
            api_version: Some("v1".into()),
            groups: groups
                .iter()
                .map(|g| {
                    let gv = |v: &String| GroupVersionForDiscovery {
                        group_version: group_version(&g.name, v),
                        version: v.clone(),
                    };
                    ApiGroup {
                        name: g.name.clone(),
                        versions: g.versions.iter().map(gv).collect(),
                        preferred_version: g.versions.first().map(gv),
                    }
                })
                .collect(),
        }
    }
}

impl ApiResourceList {
    /// The resources, each `plural/sub` entry folded into its parent as a subresource.
    pub(crate) fn to_resources(&self) -> Vec<ServerResource> {
        let (group, version) = split_group_version(&self.group_version);
        let mut out: Vec<ServerResource> = Vec::new();
        for r in self.resources.iter().filter(|r| !r.name.contains('/')) {
            out.push(ServerResource {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: r.kind.clone(),
                plural: r.name.clone(),
                singular: if r.singular_name.is_empty() {
                    r.kind.to_ascii_lowercase()
                } else {
                    r.singular_name.clone()
                },
                short_names: r.short_names.clone(),
                namespaced: r.namespaced,
                verbs: r.verbs.clone(),
                subresources: Vec::new(),
                categories: r.categories.clone(),
            });
        }
        for r in &self.resources {
            if let Some((parent, sub)) = r.name.split_once('/') {
                if let Some(p) = out.iter_mut().find(|p| p.plural == parent) {
                    p.subresources.push(sub.to_owned());
                }
            }
        }
        out
    }

    /// The legacy document for one group-version's resources (subresources as `plural/sub`
    /// entries with the parent's kind: enough for the cache, which keeps only their names).
    pub(crate) fn from_resources(gv: &str, resources: &[ServerResource]) -> Self {
        let mut list = Vec::new();
        for r in resources {
            list.push(LegacyResource {
                name: r.plural.clone(),
                singular_name: r.singular.clone(),
                namespaced: r.namespaced,
                kind: r.kind.clone(),
                verbs: r.verbs.clone(),
                short_names: r.short_names.clone(),
                categories: r.categories.clone(),
            });
            for s in &r.subresources {
                list.push(LegacyResource {
                    name: format!("{}/{s}", r.plural),
                    singular_name: String::new(),
                    namespaced: r.namespaced,
                    kind: r.kind.clone(),
                    verbs: Vec::new(),
                    short_names: Vec::new(),
                    categories: Vec::new(),
                });
            }
        }
        ApiResourceList {
            kind: Some("APIResourceList".into()),
            api_version: Some("v1".into()),
            group_version: gv.to_owned(),
            resources: list,
        }
    }
}
