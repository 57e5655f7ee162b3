//! A CustomResourceDefinition applied and waited for until its resource is *served*.
//!
//! Why two steps: the CRD's `Established` condition says the API server accepted the
//! definition, not that every part of it serves the new resource yet. Right after it, a
//! request for the resource can still answer 404 and discovery (which kubectl and the
//! [`RestMapper`](crate::discovery::RestMapper) read) may not list it: a program that
//! creates its first custom object as soon as the CRD is Established fails now and then.
//! [`wait_crd_served`] waits for `Established`, then for every served version to be listed
//! by discovery (`/apis/GROUP/VERSION`) *and* to answer a list (`?limit=1`) with something
//! other than 404, polling with back-off (jitter, capped at 1 s) until the timeout. Any
//! other answer to that list, a 403 included (an installer may manage CRDs without the
//! right to list their objects), comes from the resource's handler and means served; only
//! a transient one (429, 5xx, a dropped connection) is asked again.
//!
//! [`apply_crd`] installs or updates the definition first, with server-side apply (forced:
//! an installer owns its CRD's fields, and takes them back from a hand edit).
//!
//! To stop either from another thread, give the client a [`Cancel`](crate::client::Cancel)
//! ([`Client::with_cancel`]).

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::conditions::crd_established;
use super::waiter::{pause, Wait, WaitError};
use crate::api::{ApiResource, DynamicObject};
use crate::cache::Backoff;
use crate::client::{Api, Client, Method, Patch, PatchParams};
use crate::error::Error;

/// `apiextensions.k8s.io/v1` CustomResourceDefinitions.
fn crds() -> ApiResource {
    ApiResource::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    )
}

/// Applies `crd` (server-side apply by `field_manager`, forced: an installer owns its
/// CRD's fields, and takes them back from a hand edit) and waits, at most `timeout`, until
/// its resource is served ([`wait_crd_served`]). Returns the CRD as last read. To stop it
/// from another thread, give the client a [`Cancel`](crate::client::Cancel)
/// ([`Client::with_cancel`]).
///
/// In tests, `testing::ApiServer` (feature `testing`) plays
/// the real server's part: a CRD written through its API is checked, served, listed by
/// discovery and given its `NamesAccepted` and `Established` conditions before the write
/// is answered, so `apply_crd` returns as soon as it has read them back, as below.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::controller::wait::apply_crd;
/// use kube_informer::testing::ApiServer;
/// use kube_informer::Client;
///
/// let crd = serde_json::json!({
///     "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
///     "metadata": {"name": "gadgets.lab.example.com"},
///     "spec": {"group": "lab.example.com", "scope": "Namespaced",
///         "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
///         "versions": [{"name": "v1", "served": true, "storage": true,
///             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
/// let server = ApiServer::start();
/// let client = Client::new(server.client_config())?;
/// let crd = apply_crd(&client, &crd, "my-installer", Duration::from_secs(60))?;
/// assert_eq!(crd.metadata.name(), "gadgets.lab.example.com");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_crd<C: Serialize>(
    client: &Client,
    crd: &C,
    field_manager: &str,
    timeout: Duration,
) -> Result<DynamicObject, WaitError<DynamicObject>> {
    let mut body = serde_json::to_value(crd).map_err(|e| {
        WaitError::Api(Error::InvalidInput(format!(
            "apply CRD: the definition does not serialize: {e}"
        )))
    })?;
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            WaitError::Api(Error::InvalidInput(
                "apply CRD: the definition has no metadata.name".into(),
            ))
        })?;
    if let Value::Object(map) = &mut body {
        map.entry("apiVersion")
            .or_insert_with(|| "apiextensions.k8s.io/v1".into());
        map.entry("kind")
            .or_insert_with(|| "CustomResourceDefinition".into());
    }
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds());
    api.patch(
        &name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(&body),
    )
    .map_err(WaitError::Api)?;
    wait_crd_served(client, &name, timeout)
}

/// Waits, at most `timeout`, until the CRD `name` is Established and every version it
/// serves is listed by discovery and answers requests. Returns the CRD as last read; a
/// timeout's error names what was still missing.
///
/// Why both: `Established` says the API server accepted the definition, not that every
/// part of it serves the new resource yet. Right after it a request for the resource can
/// still answer 404, and discovery (which kubectl and the
/// [`RestMapper`](crate::discovery::RestMapper) read) may not list it: a program that
/// creates its first custom object as soon as the CRD is Established fails now and then.
/// So after `Established` ([`Wait`] with [`crd_established`](super::conditions::crd_established)),
/// every served version must be listed by `/apis/GROUP/VERSION` *and* answer a list
/// (`?limit=1`) with something other than 404 (a 403 means served too: the caller may lack
/// the right to list the objects; a transient answer is asked again), polled with back-off
/// (jitter, capped at 1 s) until the timeout. To stop it from another thread, give the client a
/// [`Cancel`](crate::client::Cancel) ([`Client::with_cancel`]).
pub fn wait_crd_served(
    client: &Client,
    name: &str,
    timeout: Duration,
) -> Result<DynamicObject, WaitError<DynamicObject>> {
    let started = Instant::now();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds());
    let object = format!("customresourcedefinitions.apiextensions.k8s.io {name}");
    let crd = Wait::new(&api, name, timeout)
        .until(crd_established())?
        .ok_or_else(|| WaitError::Api(Error::InvalidInput(format!("{object}: vanished"))))?;
    let deadline = started.checked_add(timeout);
    let mut backoff = Backoff::new(
        Duration::from_millis(50),
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    let cancel = client.cancel_token();
    let spec: Value = crd
        .decode_field("spec")
        .ok()
        .flatten()
        .unwrap_or(Value::Null);
    loop {
        let missing = match not_yet_served(client, &spec) {
            Ok(None) => return Ok(crd),
            Ok(Some(missing)) => missing,
            Err(e) if e.is_cancelled() => return Err(WaitError::Cancelled { object }),
            Err(e) if e.is_transient() => format!("the API server ({e})"),
            Err(e) => return Err(WaitError::Api(e)),
        };
        let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if remaining == Some(Duration::ZERO) {
            return Err(WaitError::TimedOut {
                object,
                waiting_for: missing,
                last: Some(Box::new(crd)),
            });
        }
        if pause(&mut backoff, cancel, remaining) {
            return Err(WaitError::Cancelled { object });
        }
    }
}

/// What is not served yet (`None`: everything is).
fn not_yet_served(client: &Client, spec: &Value) -> crate::Result<Option<String>> {
    let group = spec["group"].as_str().unwrap_or("");
    let plural = spec
        .pointer("/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    if group.is_empty() || plural.is_empty() {
        return Err(Error::InvalidInput(
            "the CustomResourceDefinition has no spec.group or spec.names.plural".into(),
        ));
    }
    let served = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .filter_map(|v| v["name"].as_str());
    for version in served {
        let doc: Value = match client
            .request(Method::GET, &format!("/apis/{group}/{version}"))
            .send_json()
        {
            Ok(d) => d,
            Err(e) if e.is_not_found() => {
                return Ok(Some(format!("discovery to serve {group}/{version}")))
            }
            Err(e) => return Err(e),
        };
        let listed = doc["resources"]
            .as_array()
            .is_some_and(|rs| rs.iter().any(|r| r["name"] == plural));
        if !listed {
            return Ok(Some(format!(
                "discovery to list {plural} in {group}/{version}"
            )));
        }
        let probe = client
            .request(Method::GET, &format!("/apis/{group}/{version}/{plural}"))
            .query("limit", "1")
            .send();
        match probe {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                return Ok(Some(format!(
                    "{plural}.{group}/{version} to answer (404 after Established)"
                )))
            }
            // A cancel, or an answer that says nothing yet (429, 5xx, a dropped connection).
            Err(e) if e.is_cancelled() || e.is_transient() => return Err(e),
            // Any other answer comes from the resource's own handler: served. A 403 is the
            // usual one: an installer allowed to manage CRDs, not to list their objects.
            Err(e) => {
                log::debug!("wait_crd_served: {plural}.{group}/{version} answers ({e}): served")
            }
        }
    }
    Ok(None)
}
