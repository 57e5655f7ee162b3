//! Admission webhooks, called by the test server the way kube-apiserver calls them, so that
//! a test can run a webhook end to end. What is matched, how a webhook is called, how its
//! answers and failures are turned into the write's answer, and what is simplified: see
//! *Webhooks* in the [module docs](crate::testing).
//!
//! No store lock is held while a webhook is called: a webhook may call this server back
//! (the sharding webhook lists Leases).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{json, Value};
use ureq::tls::{RootCerts, TlsConfig, TlsProvider};

use super::db::Db;
use super::reviews::Identities;
use super::store::{DeleteOptions, TypeKey};
use crate::api::Status;

/// The largest webhook answer read.
const MAX_ANSWER: u64 = 16 << 20;

/// What is being admitted.
pub(crate) struct Attributes<'a> {
    pub tk: &'a TypeKey,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub subresource: Option<&'a str>,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    pub dry_run: bool,
    /// The request's options as kube-apiserver hands them to admission (see [`options`]).
    pub options: Value,
    /// Who asked (`userInfo`).
    pub user: Value,
}

/// The `options` of an admission request: `CreateOptions` for a create (an apply that
/// creates included), `UpdateOptions` for an update or any patch (an apply that updates
/// included), `DeleteOptions` for a delete; with the request's `dryRun`, and its
/// `fieldManager` and `fieldValidation` (create, update) or `gracePeriodSeconds`,
/// `preconditions`, `orphanDependents` and `propagationPolicy` (delete), as the real
/// server fills them in.
pub(crate) fn options(
    operation: &str,
    dry_run: bool,
    field_manager: Option<&str>,
    field_validation: Option<&str>,
    delete: Option<&DeleteOptions>,
) -> Value {
    let kind = match operation {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        _ => "DeleteOptions",
    };
    let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if operation == "DELETE" {
        if let Some(d) = delete {
            if let Some(g) = d.grace_period {
                o["gracePeriodSeconds"] = json!(g);
            }
            let mut pre = serde_json::Map::new();
            if let Some(uid) = &d.precondition_uid {
                pre.insert("uid".into(), json!(uid));
            }
            if let Some(rv) = &d.precondition_rv {
                pre.insert("resourceVersion".into(), json!(rv));
            }
            if !pre.is_empty() {
                o["preconditions"] = Value::Object(pre);
            }
            if let Some(orphan) = d.orphan_dependents {
                o["orphanDependents"] = json!(orphan);
            }
            if let Some(p) = &d.propagation {
                o["propagationPolicy"] = json!(p);
            }
        }
    }
    if dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if operation != "DELETE" {
        if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
            o["fieldManager"] = json!(m);
        }
        if let Some(v) = field_validation.filter(|v| !v.is_empty()) {
            o["fieldValidation"] = json!(v);
        }
    }
    o
}

/// What admission left: the object to write and the warnings to pass on.
pub(crate) struct Admitted {
    pub object: Option<Value>,
    pub warnings: Vec<String>,
}

/// What calling webhooks needs of the server beside the store: who the caller is, and
/// where a `clientConfig.service` lives. The server implements it; writes, patches,
/// evictions and conversion pass it on, so that none of them depends on the server.
pub(crate) trait AdmissionHost: std::ops::Deref<Target = Db> {
    /// Known tokens and the authorisation rule (`reviews.rs`).
    fn identities(&self) -> &Identities;
    /// Webhook services (`clientConfig.service`): (namespace, name) to a base URL.
    fn webhook_services(&self) -> &Mutex<HashMap<(String, String), String>>;
}

const CONFIG_GROUP: &str = "admissionregistration.k8s.io";

fn configurations(shared: &impl AdmissionHost, plural: &str) -> Vec<Value> {
    let tk = TypeKey {
        group: CONFIG_GROUP.into(),
        version: "v1".into(),
        plural: plural.into(),
    };
    // Looked up, never created: a server with no configuration lists no such resource.
    let store = shared.store.lock();
    let Some(c) = store.collections.get(&tk) else {
        return Vec::new();
    };
    // The map is keyed by name: configurations come in name order.
    c.objects
        .values()
        .filter_map(|o| serde_json::from_str(&o.json).ok())
        .collect()
}

/// The `userInfo` of the request's caller (see `reviews.rs`).
pub(crate) fn user_info(shared: &impl AdmissionHost, req: &super::http::Request) -> Value {
    serde_json::to_value(shared.identities().requester(req)).unwrap_or(Value::Null)
}

/// Whether any webhook configuration exists (writes skip admission otherwise).
pub(crate) fn configured(shared: &impl AdmissionHost) -> bool {
    let store = shared.store.lock();
    [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ]
    .into_iter()
    .any(|plural| {
        let tk = TypeKey {
            group: CONFIG_GROUP.into(),
            version: "v1".into(),
            plural: plural.into(),
        };
        store
            .collections
            .get(&tk)
            .is_some_and(|c| !c.objects.is_empty())
    })
}

/// Runs the mutating then the validating webhooks on a write (see the module docs).
/// `object` is the object to be written (`None` for a delete), `old` the stored one.
pub(crate) fn admit(
    shared: &impl AdmissionHost,
    a: &Attributes<'_>,
    object: Option<Value>,
    old: Option<&Value>,
) -> Result<Admitted, Status> {
    let mut out = Admitted {
        object,
        warnings: Vec::new(),
    };
    if a.tk.group == CONFIG_GROUP {
        return Ok(out);
    }
    let (kind, ns_labels) = {
        let mut store = shared.store.lock();
        let kind = store.collection(a.tk).kind.clone();
        let ns_labels = a.namespace.map(|ns| namespace_labels(&store, ns));
        (kind, ns_labels)
    };
    for (plural, mutating) in [
        ("mutatingwebhookconfigurations", true),
        ("validatingwebhookconfigurations", false),
    ] {
        if !mutating && a.operation == "UPDATE" {
            // Between the two phases the real server fills in what an update keeps from
            // the stored object: the validating hooks see its uid and creationTimestamp.
            if let (Some(obj), Some(old_meta)) = (
                out.object
                    .as_mut()
                    .and_then(|o| o.get_mut("metadata"))
                    .and_then(Value::as_object_mut),
                old.and_then(|o| o.get("metadata"))
                    .and_then(Value::as_object),
            ) {
                for key in ["uid", "creationTimestamp"] {
                    if let Some(v) = old_meta.get(key) {
                        obj.entry(key).or_insert_with(|| v.clone());
                    }
                }
            }
        }
        for config in configurations(shared, plural) {
            let Some(hooks) = config.get("webhooks").and_then(Value::as_array) else {
                continue;
            };
            for hook in hooks {
                let labels_of_namespace = if a.tk.group.is_empty() && a.tk.plural == "namespaces" {
                    // A Namespace is matched by its own labels.
                    out.object.as_ref().or(old).map(labels_of)
                } else {
                    ns_labels.clone()
                };
                if !matches(
                    hook,
                    a,
                    labels_of_namespace.as_ref(),
                    out.object.as_ref(),
                    old,
                ) {
                    continue;
                }
                let name = hook["name"].as_str().unwrap_or("");
                if a.dry_run
                    && !matches!(
                        hook["sideEffects"].as_str(),
                        Some("None") | Some("NoneOnDryRun")
                    )
                {
                    return Err(Status::failure(
                        400,
                        "BadRequest",
                        format!("admission webhook {name:?} does not support dry run"),
                    ));
                }
                let review = review(a, &kind, out.object.as_ref(), old);
                let response = match call(shared, hook, &review, mutating) {
                    Ok(r) => r,
                    Err(why) => {
                        if hook["failurePolicy"] == "Ignore" {
                            // The real server only logs it: no Warning reaches the client.
                            log::warn!(
                                "test server: failed calling webhook {name:?}, ignored (failurePolicy Ignore): {why}"
                            );
                            continue;
                        }
                        return Err(failed_calling(name, &why));
                    }
                };
                if let Some(w) = response.get("warnings").and_then(Value::as_array) {
                    out.warnings
                        .extend(w.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                if response["allowed"] != true {
                    return Err(denial(name, &response["status"]));
                }
                if mutating {
                    if let (Some(patch), Some(obj)) =
                        (response["patch"].as_str(), out.object.as_ref())
                    {
                        out.object = Some(apply_patch(name, &response, patch, obj)?);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// kube-apiserver's 500 for a webhook it could not call or whose answer it refused: the
/// message `Internal error occurred: failed calling webhook "<name>": <why>`, reason
/// `InternalError`, and the same text without the prefix as the one cause.
fn failed_calling(name: &str, why: &str) -> Status {
    let message = format!("failed calling webhook {}: {why}", go_quote(name));
    let mut st = internal(message.clone());
    st.details = Some(crate::api::StatusDetails {
        causes: vec![crate::api::StatusCause {
            message,
            ..Default::default()
        }],
        ..Default::default()
    });
    st
}

/// A string quoted as Go's `%q` quotes it (close enough for names and uids: JSON's escapes).
fn go_quote(s: &str) -> String {
    Value::from(s).to_string()
}

fn internal(message: String) -> Status {
    Status::failure(
        500,
        "InternalError",
        format!("Internal error occurred: {message}"),
    )
}

fn apply_patch(name: &str, response: &Value, patch: &str, obj: &Value) -> Result<Value, Status> {
    match response["patchType"].as_str() {
        Some("JSONPatch") => {}
        other => {
            return Err(internal(format!(
                "admission webhook {name:?} returned a patch of unsupported type {other:?}"
            )))
        }
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| {
            internal(format!(
                "admission webhook {name:?}: patch is not base64: {e}"
            ))
        })?;
    let ops: Value = serde_json::from_slice(&bytes).map_err(|e| {
        internal(format!(
            "admission webhook {name:?}: patch is not JSON: {e}"
        ))
    })?;
    super::json_patch::apply(obj, &ops).map_err(|e| {
        internal(format!(
            "admission webhook {name:?}: the patch does not apply: {e:?}"
        ))
    })
}

/// kube-apiserver's denial: the webhook's Status with its code raised to at least 400 and
/// the message prefixed with who denied.
fn denial(name: &str, status: &Value) -> Status {
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let reason = status["reason"].as_str().unwrap_or("");
    let message = status["message"].as_str().unwrap_or("");
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    Status::failure(code, reason, message)
}

fn labels_of(o: &Value) -> BTreeMap<String, String> {
    o.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn namespace_labels(store: &super::store::Store, ns: &str) -> BTreeMap<String, String> {
    let tk = TypeKey {
        group: String::new(),
        version: "v1".into(),
        plural: "namespaces".into(),
    };
    let mut labels = store
        .collections
        .get(&tk)
        .and_then(|c| c.objects.get(ns))
        .and_then(|o| serde_json::from_str::<Value>(&o.json).ok())
        .map(|o| labels_of(&o))
        .unwrap_or_default();
    labels.insert("kubernetes.io/metadata.name".into(), ns.to_owned());
    labels
}

/// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) against labels; an absent
/// selector matches everything, a malformed one nothing.
fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    if selector.is_null() {
        return true;
    }
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    let Some(exprs) = selector.get("matchExpressions") else {
        return true;
    };
    let Some(exprs) = exprs.as_array() else {
        return false;
    };
    exprs.iter().all(|e| {
        let key = e["key"].as_str().unwrap_or("");
        let values: Vec<&str> = e["values"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let have = labels.get(key).map(String::as_str);
        match e["operator"].as_str() {
            Some("In") => have.is_some_and(|h| values.contains(&h)),
            Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
            Some("Exists") => have.is_some(),
            Some("DoesNotExist") => have.is_none(),
            _ => false,
        }
    })
}

fn listed(v: &Value, want: &str) -> bool {
    v.as_array()
        .is_some_and(|a| a.iter().any(|x| x == "*" || x == want))
}

/// Whether one rule matches the request (kube-apiserver's rule matcher: `*` everywhere,
/// `resource/subresource` with `*` on either side, scope).
fn rule_matches(rule: &Value, a: &Attributes<'_>) -> bool {
    let resources = rule["resources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let sub = a.subresource.unwrap_or("");
    let resource_ok = resources.iter().filter_map(Value::as_str).any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == a.tk.plural) && (rsub == "*" || rsub == sub)
    });
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Namespaced" => a.namespace.is_some(),
        "Cluster" => a.namespace.is_none(),
        _ => true,
    };
    listed(&rule["operations"], a.operation)
        && listed(&rule["apiGroups"], &a.tk.group)
        && listed(&rule["apiVersions"], &a.tk.version)
        && resource_ok
        && scope_ok
}

fn matches(
    hook: &Value,
    a: &Attributes<'_>,
    ns_labels: Option<&BTreeMap<String, String>>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    let rules = hook["rules"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !rules.iter().any(|r| rule_matches(r, a)) {
        return false;
    }
    if let Some(labels) = ns_labels {
        if !selector_matches(&hook["namespaceSelector"], labels) {
            return false;
        }
    }
    let objsel = &hook["objectSelector"];
    [object, old]
        .into_iter()
        .flatten()
        .any(|o| selector_matches(objsel, &labels_of(o)))
        || (object.is_none() && old.is_none() && selector_matches(objsel, &BTreeMap::new()))
}

static REVIEWS: AtomicU64 = AtomicU64::new(0);

/// A fresh uid for a review (unique within the process).
pub(crate) fn review_uid() -> String {
    let n = REVIEWS.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        (t >> 32) as u32,
        (t >> 16) & 0xffff,
        t & 0xfff,
        (n >> 48) & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

fn review(a: &Attributes<'_>, kind: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
    let gvk = json!({"group": a.tk.group, "version": a.tk.version, "kind": kind});
    let gvr = json!({"group": a.tk.group, "version": a.tk.version, "resource": a.tk.plural});
    // Omissions as kube-apiserver's encoder makes them: `name`, `namespace` and
    // `subResource` are left out when empty (a collection's delete reviews one object at a
    // time and names none).
    let mut request = serde_json::Map::new();
    request.insert("uid".into(), json!(review_uid()));
    request.insert("kind".into(), gvk.clone());
    request.insert("resource".into(), gvr.clone());
    if let Some(sub) = a.subresource {
        request.insert("subResource".into(), json!(sub));
    }
    request.insert("requestKind".into(), gvk);
    request.insert("requestResource".into(), gvr);
    if let Some(sub) = a.subresource {
        request.insert("requestSubResource".into(), json!(sub));
    }
    if !a.name.is_empty() {
        request.insert("name".into(), json!(a.name));
    }
    if let Some(ns) = a.namespace {
        request.insert("namespace".into(), json!(ns));
    }
    request.insert("operation".into(), json!(a.operation));
    request.insert("userInfo".into(), a.user.clone());
    request.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    request.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
    request.insert("dryRun".into(), json!(a.dry_run));
    request.insert("options".into(), a.options.clone());
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}

/// POSTs `review` to the webhook and returns its `response`, checked as kube-apiserver
/// checks it (a response, the uid echoed, an `admission.k8s.io/v1` `AdmissionReview`, a
/// patch and its type together, no patch from a validating hook). An error says why, in
/// kube-apiserver's words.
fn call(
    shared: &impl AdmissionHost,
    hook: &Value,
    review: &Value,
    mutating: bool,
) -> Result<Value, String> {
    let timeout = hook["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30);
    let answer = post(shared, &hook["clientConfig"], review, timeout)?;
    verify(&answer, &review["request"]["uid"], mutating)
        .map_err(|why| format!("received invalid webhook response: {why}"))
}

/// The checks of an admission webhook's answer (see [`call`]); the `response` when good.
fn verify(answer: &Value, want_uid: &Value, mutating: bool) -> Result<Value, String> {
    let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let (want, got) = (text(want_uid), text(&response["uid"]));
    if want != got {
        return Err(format!(
            "expected response.uid={}, got {}",
            go_quote(&want),
            go_quote(&got)
        ));
    }
    let api_version = text(&answer["apiVersion"]);
    let kind = text(&answer["kind"]);
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        // Go's GroupVersionKind.String(): `group/version, Kind=kind`, the group empty for
        // a bare version.
        let (group, version) = api_version
            .split_once('/')
            .unwrap_or(("", api_version.as_str()));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{version}, Kind={kind}"
        ));
    }
    let patch = text(&response["patch"]);
    let patch_type = text(&response["patchType"]);
    if !patch.is_empty() && patch_type.is_empty() {
        return Err("webhook returned response.patch but not response.patchType".into());
    }
    if !patch_type.is_empty() && patch.is_empty() {
        return Err("webhook returned response.patchType but not response.patch".into());
    }
    if !mutating && !patch.is_empty() {
        return Err("validating webhook may not return response.patch".into());
    }
    if !mutating && !patch_type.is_empty() {
        return Err("validating webhook may not return response.patchType".into());
    }
    Ok(response.clone())
}

/// The URL of a webhook's `clientConfig` (its `?timeout=` not added).
fn url_of(shared: &impl AdmissionHost, client_config: &Value) -> Result<String, String> {
    if let Some(url) = client_config["url"].as_str() {
        return Ok(url.to_owned());
    }
    let svc = &client_config["service"];
    let (Some(ns), Some(name)) = (svc["namespace"].as_str(), svc["name"].as_str()) else {
        return Err("clientConfig has neither url nor service".into());
    };
    let port = svc["port"].as_u64().unwrap_or(443);
    let base = shared
        .webhook_services()
        .lock()
        .get(&(ns.to_owned(), name.to_owned()))
        .cloned()
        .ok_or_else(|| {
            format!(
                "service \"{name}.{ns}.svc:{port}\" is not registered with the test server (ApiServer::webhook_service)"
            )
        })?;
    let path = svc["path"].as_str().unwrap_or("");
    Ok(format!("{}{path}", base.trim_end_matches('/')))
}

/// POSTs `body` to a `clientConfig` over HTTPS trusting its `caBundle`; the JSON answer.
pub(crate) fn post(
    shared: &impl AdmissionHost,
    client_config: &Value,
    body: &Value,
    timeout_secs: u64,
) -> Result<Value, String> {
    let url = url_of(shared, client_config)?;
    let authority = url
        .strip_prefix("https://")
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""));
    let Some(authority) = authority else {
        return Err("webhook URL is not https".into());
    };
    if authority.contains('@') {
        // kube-apiserver refuses such a configuration; its password stays out of messages.
        return Err("webhook URL: user information is not permitted in the URL".into());
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}timeout={timeout_secs}s");
    let fail = |e: &ureq::Error| {
        format!(
            "failed to call webhook: Post {}: {}",
            go_quote(&url),
            call_error(e)
        )
    };
    let mut tls = TlsConfig::builder().provider(TlsProvider::Rustls);
    if let Some(ca) = client_config["caBundle"].as_str().filter(|c| !c.is_empty()) {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca)
            .map_err(|e| format!("caBundle is not base64: {e}"))?;
        let certs = crate::client::pem_certificates(&pem, "caBundle").map_err(|e| e.to_string())?;
        tls = tls.root_certs(RootCerts::new_with_certs(&certs));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls.build())
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(timeout_secs)))
        .max_redirects(0)
        .build()
        .into();
    let res = agent
        .post(&url)
        .header("user-agent", "kube-apiserver-admission")
        .header("accept", "application/json, */*")
        .header("content-type", "application/json")
        .send(body.to_string())
        .map_err(|e| fail(&e))?;
    let code = res.status().as_u16();
    let bytes = res
        .into_body()
        .into_with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .map_err(|e| fail(&e))?;
    if code != 200 {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned();
        return Err(format!(
            "failed to call webhook: the server responded with HTTP {code}: {text}"
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("received invalid webhook response: {e}"))
}

/// Why a call failed, as Go's HTTP client says it: the hook's timeout is the request
/// context's deadline.
fn call_error(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "context deadline exceeded".into(),
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            "context deadline exceeded".into()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(tk: &'a TypeKey, sub: Option<&'a str>, ns: Option<&'a str>) -> Attributes<'a> {
        Attributes {
            tk,
            namespace: ns,
            name: "x",
            subresource: sub,
            operation: "CREATE",
            dry_run: false,
            options: Value::Null,
            user: Value::Null,
        }
    }

    #[test]
    fn rules_match_like_kube_apiserver() {
        let pods = TypeKey {
            group: String::new(),
            version: "v1".into(),
            plural: "pods".into(),
        };
        let rule = |res: &str, scope: &str| {
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": [res], "scope": scope})
        };
        let main = attrs(&pods, None, Some("lab"));
        let status = attrs(&pods, Some("status"), Some("lab"));
        assert!(rule_matches(&rule("pods", "*"), &main));
        assert!(!rule_matches(&rule("pods", "*"), &status));
        assert!(rule_matches(&rule("pods/status", "*"), &status));
        assert!(rule_matches(&rule("pods/*", "*"), &status));
        assert!(rule_matches(&rule("*/*", "*"), &main));
        assert!(rule_matches(&rule("*", "Namespaced"), &main));
        assert!(!rule_matches(&rule("*", "Cluster"), &main));
        assert!(!rule_matches(&rule("*/scale", "*"), &status));
        let mut update = attrs(&pods, None, Some("lab"));
        update.operation = "UPDATE";
        assert!(!rule_matches(&rule("pods", "*"), &update));
    }

    #[test]
    fn selectors_match_labels() {
        let labels: BTreeMap<String, String> =
            [("a".to_owned(), "1".to_owned())].into_iter().collect();
        assert!(selector_matches(&Value::Null, &labels));
        assert!(selector_matches(&json!({}), &labels));
        assert!(selector_matches(
            &json!({"matchLabels": {"a": "1"}}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchLabels": {"a": "2"}}),
            &labels
        ));
        let expr = |op: &str, values: Value| json!({"matchExpressions": [{"key": "a", "operator": op, "values": values}]});
        assert!(selector_matches(&expr("In", json!(["1", "3"])), &labels));
        assert!(!selector_matches(&expr("NotIn", json!(["1"])), &labels));
        assert!(selector_matches(&expr("Exists", Value::Null), &labels));
        assert!(!selector_matches(
            &expr("DoesNotExist", Value::Null),
            &labels
        ));
        assert!(!selector_matches(&expr("Sideways", Value::Null), &labels));
    }

    #[test]
    fn a_url_with_credentials_is_refused_without_them() {
        let server = crate::testing::ApiServer::start();
        let why = post(
            server.shared(),
            &json!({"url": "https://user:hunter2@127.0.0.1:1/x"}),
            &json!({}),
            1,
        )
        .unwrap_err();
        assert!(!why.contains("hunter2"), "{why}");
        assert!(why.contains("user information is not permitted"), "{why}");
    }

    #[test]
    fn options_are_the_ones_kube_apiserver_hands_to_admission() {
        assert_eq!(
            options("UPDATE", true, Some("capture"), Some("Strict"), None),
            json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1",
                "dryRun": ["All"], "fieldManager": "capture", "fieldValidation": "Strict"})
        );
        let d = DeleteOptions {
            grace_period: Some(0),
            precondition_uid: Some("u".into()),
            propagation: Some("Orphan".into()),
            ..Default::default()
        };
        assert_eq!(
            options("DELETE", false, Some("ignored"), None, Some(&d)),
            json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                "gracePeriodSeconds": 0, "preconditions": {"uid": "u"},
                "propagationPolicy": "Orphan"})
        );
    }

    #[test]
    fn answers_are_verified_in_kube_apiservers_words() {
        let uid = json!("u-1");
        let good = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u-1", "allowed": true}});
        assert!(verify(&good, &uid, false).is_ok());
        let mut v1beta1 = good.clone();
        v1beta1["apiVersion"] = json!("admission.k8s.io/v1beta1");
        assert_eq!(
            verify(&v1beta1, &uid, false).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        let mut patched = good.clone();
        patched["response"]["patch"] = json!("W10=");
        assert_eq!(
            verify(&patched, &uid, true).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        patched["response"]["patchType"] = json!("JSONPatch");
        assert!(verify(&patched, &uid, true).is_ok());
        assert_eq!(
            verify(&patched, &uid, false).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify(&json!([1]), &uid, false).unwrap_err(),
            "webhook response was absent"
        );
    }

    #[test]
    fn denials_read_like_kube_apiserver() {
        let st = denial("v.example.com", &json!({"code": 403, "message": "no"}));
        assert_eq!(st.code, 403);
        assert_eq!(
            st.message,
            "admission webhook \"v.example.com\" denied the request: no"
        );
        let st = denial("v.example.com", &json!({"code": 200}));
        assert_eq!(st.code, 400);
        assert_eq!(
            st.message,
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
    }
}
