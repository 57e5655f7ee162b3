//! The REST mapper: from what a person types (`deploy`, `pods`, `Deployment`,
//! `deployments.apps`, `apps/v1/Deployment`) to the [`ApiResource`] the client needs.
//!
//! Why: custom resources and scripts know a kind or a short name, not a plural and a scope.
//! Names are matched like kubectl (client-go's `restmapper` over a priority mapper, with its
//! shortcut expander in front), case-insensitively:
//! - a plural or singular first, in any group; then a short name; then a kind;
//! - among matches of one kind, the server's order of groups (the core group first), and in
//!   each group its preferred version first, then its other versions: a resource that only
//!   an older version of its group serves is found, the preferred version wins when both
//!   serve it; a version in the query (`deployments.v1.apps`, `apps/v1/Deployment`) is
//!   searched alone;
//! - a short name resolves to its group and plural, then in that group's order.
//!
//! A miss is an error that names the closest resources the server has (one of their names at
//! edit distance at most 2, or a prefix), each once, as `plural` or `plural.group`.
//!
//! Limits: no category expansion (`all`), no resource with a group that is ambiguous between
//! two groups' suffixes (the first group in the server's order wins, kubectl warns).

use super::client::Discovery;
use super::types::{DiscoveryData, ServerGroup, ServerResource};
use crate::api::{ApiResource, DynamicObject};
use crate::{Api, Error, Result};

/// Resolves names and kinds through a [`Discovery`] (its caches and its one refresh on a
/// miss).
///
/// ```
/// use kube_informer::api::ApiResource;
/// use kube_informer::discovery::RestMapper;
/// use kube_informer::testing::ApiServer;
/// use kube_informer::Client;
///
/// let widgets = ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true);
/// let server = ApiServer::builder().resource(&widgets).start();
/// let mapper = RestMapper::new(Client::new(server.client_config()).unwrap().discovery());
///
/// assert_eq!(mapper.resolve("deploy").unwrap().plural, "deployments");
/// assert_eq!(mapper.resolve("Widget").unwrap(), widgets);
/// assert_eq!(mapper.resolve("widgets.lab.example.com").unwrap(), widgets);
/// assert_eq!(mapper.kind(Some("apps"), None, "Deployment").unwrap().version, "v1");
/// let err = mapper.resolve("deployment5").unwrap_err().to_string();
/// assert!(err.contains("deployments"), "{err}");
/// ```
#[derive(Debug)]
pub struct RestMapper {
    discovery: Discovery,
}

/// What a query asks for.
struct Query<'a> {
    name: String,
    group: Option<&'a str>,
    version: Option<&'a str>,
    /// Match kinds only (`group/version/Kind`, [`RestMapper::kind`]).
    kind_only: bool,
}

impl RestMapper {
    /// A mapper over `discovery`.
    pub fn new(discovery: Discovery) -> RestMapper {
        RestMapper { discovery }
    }

    /// The discovery client it reads.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Resolves what a user typed:
    /// - `NAME`: a plural (`deployments`), singular (`deployment`), short name (`deploy`)
    ///   or kind (`Deployment`), case-insensitively;
    /// - `NAME.GROUP` (`deployments.apps`) or `NAME.VERSION.GROUP` (`deployments.v1.apps`),
    ///   as kubectl reads them;
    /// - `GROUP/VERSION/KIND` or `VERSION/KIND` (`apps/v1/Deployment`, `v1/Pod`): a kind.
    pub fn resolve(&self, query: &str) -> Result<ApiResource> {
        Ok(self.resolve_resource(query)?.api_resource())
    }

    /// An [`Api`] of [`DynamicObject`]s for what the user typed (see
    /// [`resolve`](Self::resolve)): of one namespace, or of all namespaces (and for a
    /// cluster-scoped resource) with `None`.
    ///
    /// ```
    /// use kube_informer::discovery::RestMapper;
    /// use kube_informer::testing::ApiServer;
    /// use kube_informer::{Client, ListParams};
    ///
    /// let server = ApiServer::start();
    /// let mapper = RestMapper::new(Client::new(server.client_config()).unwrap().discovery());
    /// let config_maps = mapper.api("cm", Some("lab")).unwrap();
    /// assert!(config_maps.list(&ListParams::default()).unwrap().items.is_empty());
    /// ```
    pub fn api(&self, query: &str, namespace: Option<&str>) -> Result<Api<DynamicObject>> {
        let resource = self.resolve(query)?;
        let client = self.discovery.client().clone();
        Ok(match namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        })
    }

    /// [`resolve`](Self::resolve), with everything discovery knows about the resource.
    pub fn resolve_resource(&self, query: &str) -> Result<ServerResource> {
        let q = query.trim();
        if q.is_empty() {
            return Err(Error::InvalidInput("an empty resource name".into()));
        }
        let parts: Vec<&str> = q.split('/').collect();
        let qs: Vec<Query<'_>> = match parts.as_slice() {
            [name] => dotted(name),
            [version, kind] => vec![Query::kind(Some(""), Some(version), kind)],
            [group, version, kind] => vec![Query::kind(Some(group), Some(version), kind)],
            _ => {
                return Err(Error::InvalidInput(format!(
                    "{q:?} is not a resource name, NAME.GROUP or GROUP/VERSION/KIND"
                )))
            }
        };
        self.lookup(q, &qs)
    }

    /// Resolves a kind, with or without its group and version (the preferred version when
    /// none is given; the core group is `Some("")`).
    pub fn kind(
        &self,
        group: Option<&str>,
        version: Option<&str>,
        kind: &str,
    ) -> Result<ApiResource> {
        Ok(self
            .lookup(kind, &[Query::kind(group, version, kind)])?
            .api_resource())
    }

    fn lookup(&self, shown: &str, qs: &[Query<'_>]) -> Result<ServerResource> {
        let found = self
            .discovery
            .find(|data| qs.iter().find_map(|q| find(data, q)))?;
        match found {
            Some(r) => Ok(r),
            None => {
                let data = self.discovery.data()?;
                let needle = qs.first().map(|q| q.name.clone()).unwrap_or_default();
                Err(not_found(shown, &data, &needle))
            }
        }
    }
}

impl<'a> Query<'a> {
    fn kind(group: Option<&'a str>, version: Option<&'a str>, kind: &str) -> Self {
        Query {
            name: kind.to_ascii_lowercase(),
            group,
            version,
            kind_only: true,
        }
    }
}

/// `name`, `name.group`, `name.version.group`: every way kubectl may read it, the plain
/// name first.
fn dotted(q: &str) -> Vec<Query<'_>> {
    let mut out = vec![Query {
        name: q.to_ascii_lowercase(),
        group: None,
        version: None,
        kind_only: false,
    }];
    if let Some((name, rest)) = q.split_once('.') {
        out.push(Query {
            name: name.to_ascii_lowercase(),
            group: Some(rest),
            version: None,
            kind_only: false,
        });
        if let Some((version, group)) = rest.split_once('.') {
            out.push(Query {
                name: name.to_ascii_lowercase(),
                group: Some(group),
                version: Some(version),
                kind_only: false,
            });
        }
    }
    out
}

/// How a name matched, in kubectl's order of precedence.
#[derive(Clone, Copy)]
enum Tier {
    /// The plural or the singular (kubectl's REST mapper proper).
    Name,
    /// A short name (kubectl's shortcut expander, consulted only when no group-version has
    /// the name as a plural or singular).
    Short,
    /// The kind (kubectl's fallback from a resource argument to a kind).
    Kind,
}

/// The resource a query names, as kubectl finds it:
/// - the group-versions are searched in kubectl's priority order: the server's order of
///   groups, and in each group its preferred version first, then its other versions (so a
///   resource that only a non-preferred version serves is found, and the preferred version
///   wins when both serve it); a query with a version looks in that version only;
/// - a plural or singular in any group beats a short name in any group, which beats a kind;
///   within that, the first group-version wins (group order first), and in one
///   group-version a plural beats another resource's singular (kubectl calls that
///   ambiguous);
/// - a short name stands for its group and plural, which resolve in that group's order again
///   (the preferred version when it serves the resource, although only an older version
///   lists the short name).
fn find(data: &DiscoveryData, q: &Query<'_>) -> Option<ServerResource> {
    let group_versions: Vec<(&ServerGroup, &str)> = data
        .groups
        .iter()
        .filter(|g| q.group.is_none_or(|want| want == g.name))
        .flat_map(|g| {
            g.versions
                .iter()
                .filter(|v| q.version.is_none_or(|want| want == v.as_str()))
                .map(move |v| (g, v.as_str()))
        })
        .collect();
    let tiers: &[Tier] = if q.kind_only {
        &[Tier::Kind]
    } else {
        &[Tier::Name, Tier::Short, Tier::Kind]
    };
    let is = |name: &str| name.eq_ignore_ascii_case(&q.name);
    for tier in tiers {
        for (group, version) in &group_versions {
            let resources = data.resources_of(&group.name, version).unwrap_or_default();
            let hit = match tier {
                Tier::Name => resources
                    .iter()
                    .find(|r| is(&r.plural))
                    .or_else(|| resources.iter().find(|r| is(&r.singular))),
                Tier::Short => resources
                    .iter()
                    .find(|r| r.short_names.iter().any(|s| is(s))),
                Tier::Kind => resources.iter().find(|r| is(&r.kind)),
            };
            let Some(hit) = hit else { continue };
            if matches!(tier, Tier::Short) && q.version.is_none() {
                return Some(
                    first_serving(data, group, &hit.plural)
                        .unwrap_or(hit)
                        .clone(),
                );
            }
            return Some(hit.clone());
        }
    }
    None
}

/// The resource `plural` of `group` in the first of the group's versions (preferred first)
/// that serves it.
fn first_serving<'d>(
    data: &'d DiscoveryData,
    group: &ServerGroup,
    plural: &str,
) -> Option<&'d ServerResource> {
    group.versions.iter().find_map(|v| {
        data.resources_of(&group.name, v)?
            .iter()
            .find(|r| r.plural == plural)
    })
}

fn not_found(shown: &str, data: &DiscoveryData, needle: &str) -> Error {
    let needle = needle.split('.').next().unwrap_or(needle);
    // Each close resource once, by the name that reaches it (`pods`, `deployments.apps`),
    // however many of its names (plural, singular, kind, short names, versions) are close.
    let mut close: Vec<(usize, String)> = Vec::new();
    for r in data.resources.values().flatten() {
        let mut names = vec![r.plural.as_str(), r.singular.as_str(), r.kind.as_str()];
        names.extend(r.short_names.iter().map(String::as_str));
        let best = names
            .into_iter()
            .filter_map(|n| {
                let lower = n.to_ascii_lowercase();
                let d = edit_distance(needle, &lower);
                let prefix = needle.len() >= 3
                    && (lower.starts_with(needle)
                        || needle.starts_with(&lower) && lower.len() >= 3);
                (d <= 2 || prefix).then_some(d)
            })
            .min();
        let Some(d) = best else { continue };
        let shown = if r.group.is_empty() {
            r.plural.clone()
        } else {
            format!("{}.{}", r.plural, r.group)
        };
        match close.iter_mut().find(|(_, c)| *c == shown) {
            Some(seen) => seen.0 = seen.0.min(d),
            None => close.push((d, shown)),
        }
    }
    close.sort();
    close.truncate(5);
    let hint = if close.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = close.into_iter().map(|(_, n)| n).collect();
        format!("; did you mean {}?", names.join(", "))
    };
    Error::InvalidInput(format!("the server has no resource type {shown:?}{hint}"))
}

/// Levenshtein distance over bytes (names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("deployment", "deployments"), 1);
        assert_eq!(edit_distance("pdo", "pod"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
