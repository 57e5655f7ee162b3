//! The REST mapper: from what a person types (`deploy`, `pods`, `Deployment`,
//! `deployments.apps`, `apps/v1/Deployment`) to the [`ApiResource`] the client needs.
//!
//! Why: custom resources and scripts know a kind or a short name, not a plural and a scope.
//! Names are matched like kubectl: case-insensitively, against the plural, the singular, the
//! short names and the kind, in the preferred version of each group unless a version is
//! given, the core group first (then the server's order of groups). A miss is an error that
//! names the closest resources the server has (one of their names at edit distance at most
//! 2, or a prefix), each once, as `plural` or `plural.group`.
//!
//! Limits: no category expansion (`all`), no resource with a group that is ambiguous between
//! two groups' suffixes (the first group in the server's order wins, kubectl warns).

use super::client::Discovery;
use super::types::{DiscoveryData, ServerResource};
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

/// The first match in the server's order of groups, preferred version first (or the given
/// version), best kind of match first: plural, singular, short name, kind.
fn find(data: &DiscoveryData, q: &Query<'_>) -> Option<ServerResource> {
    let score = |r: &ServerResource| -> Option<u8> {
        if q.kind_only {
            return r.kind.eq_ignore_ascii_case(&q.name).then_some(3);
        }
        if r.plural.eq_ignore_ascii_case(&q.name) {
            Some(0)
        } else if r.singular.eq_ignore_ascii_case(&q.name) {
            Some(1)
        } else if r
            .short_names
            .iter()
            .any(|s| s.eq_ignore_ascii_case(&q.name))
        {
            Some(2)
        } else if r.kind.eq_ignore_ascii_case(&q.name) {
            Some(3)
        } else {
            None
        }
    };
    let mut best: Option<(u8, &ServerResource)> = None;
    for g in &data.groups {
        if q.group.is_some_and(|want| want != g.name) {
            continue;
        }
        let versions: Vec<&String> = match q.version {
            Some(v) => g.versions.iter().filter(|x| *x == v).collect(),
            None => g.versions.iter().take(1).collect(),
        };
        for v in versions {
            for r in data.resources_of(&g.name, v).unwrap_or_default() {
                if let Some(s) = score(r) {
                    if best.is_none_or(|(b, _)| s < b) {
                        best = Some((s, r));
                    }
                }
            }
        }
    }
    best.map(|(_, r)| r.clone())
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
