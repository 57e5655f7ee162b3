//! The legacy discovery documents: `/api` (`APIVersions`), `/apis` (`APIGroupList`), then one
//! `APIResourceList` per group-version (`/api/v1`, `/apis/G/V`).
//!
//! Why: servers older than Kubernetes 1.26 (and some proxies and aggregated servers) do not
//! serve aggregated discovery and answer the `Accept` fallback with these. A group-version
//! that fails with 404 or 503 (an aggregated API server that is down) is skipped with a
//! warning, as kubectl does; a document that does not decode is an error naming its
//! group-version.

use super::types::{
    group_version, ApiGroupList, ApiResourceList, ApiVersions, DiscoveryData, ServerGroup,
};
use crate::client::{decode_json, Client, Method};
use crate::{Error, Result};

/// Adds the core group from `/api`'s `APIVersions` body and fetches its versions' resources.
pub(crate) fn core_group(client: &Client, body: &[u8], data: &mut DiscoveryData) -> Result<()> {
    let versions: ApiVersions = decode_json("GET /api", body, "APIVersions document")?;
    if versions.kind.as_deref().is_some_and(|k| k != "APIVersions") {
        return Err(malformed("GET /api", "v1", "not an APIVersions document"));
    }
    let group = ServerGroup {
        name: String::new(),
        versions: versions.versions,
    };
    fetch_resources(client, &group, data)?;
    data.groups.insert(0, group);
    Ok(())
}

/// Adds the groups of `/apis`'s `APIGroupList` body and fetches every group-version's
/// resources.
pub(crate) fn groups(client: &Client, body: &[u8], data: &mut DiscoveryData) -> Result<()> {
    let list: ApiGroupList = decode_json("GET /apis", body, "APIGroupList document")?;
    if list.kind.as_deref().is_some_and(|k| k != "APIGroupList") {
        return Err(malformed(
            "GET /apis",
            "(all groups)",
            "not an APIGroupList document",
        ));
    }
    for group in list.to_groups() {
        fetch_resources(client, &group, data)?;
        data.groups.push(group);
    }
    Ok(())
}

fn fetch_resources(client: &Client, group: &ServerGroup, data: &mut DiscoveryData) -> Result<()> {
    for version in &group.versions {
        fetch_group_version(client, &group.name, version, data)?;
    }
    Ok(())
}

/// Fetches one group-version's `APIResourceList` into `data`. `Ok(false)` when the server
/// answered 404 or 503 (skipped with a warning, as kubectl does; nothing is added).
pub(crate) fn fetch_group_version(
    client: &Client,
    group: &str,
    version: &str,
    data: &mut DiscoveryData,
) -> Result<bool> {
    let gv = group_version(group, version);
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{gv}")
    };
    let request = format!("GET {path}");
    let response = match client.request(Method::GET, &path).send() {
        Ok(r) => r,
        Err(e) if matches!(e.code(), Some(404 | 503)) => {
            log::warn!(target: "kube_informer::discovery", "skipping {gv}: {e}");
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let list: ApiResourceList = decode_json(
        &request,
        response.body(),
        &format!("APIResourceList of {gv}"),
    )?;
    if list.group_version != gv {
        return Err(malformed(
            &request,
            &gv,
            &format!("the document is for {:?}", list.group_version),
        ));
    }
    data.resources.insert(gv, list.to_resources());
    Ok(true)
}

/// A clear error for a discovery document that does not describe what it should.
pub(crate) fn malformed(request: &str, gv: &str, what: &str) -> Error {
    Error::Decode {
        request: request.to_owned(),
        message: format!("malformed discovery document for {gv}: {what}"),
    }
}
