//! `POST .../pods/{name}/eviction` honouring PodDisruptionBudgets, as kube-apiserver's
//! eviction handler decides it (captured from v1.36.2: `tests/fixtures/eviction/`).
//!
//! In the real handler's order:
//! 1. a body `metadata.name` other than the URL's: 400 `name in URL does not match name in
//!    Eviction object`; no such pod: 404;
//! 2. a pod that is `Pending`, `Succeeded`, `Failed` or already being deleted is evicted
//!    whatever the budgets say;
//! 3. two budgets over one pod: a bare 500 (no reason, no details) "This pod has more than
//!    one PodDisruptionBudget, which the eviction subresource does not support.";
//! 4. no budget: evicted;
//! 5. a budget whose `status.observedGeneration` is behind its `metadata.generation`: 429
//!    `TooManyRequests` "Cannot evict pod as it would violate the pod's disruption budget."
//!    with the cause `DisruptionBudget` "The disruption budget NAME is still being
//!    processed by the server.", `retryAfterSeconds: 10` and `Retry-After: 10`;
//! 6. a budget whose status was computed (`observedGeneration` at least `generation`) is
//!    used as stored: `disruptionsAllowed` 0 is a 429 without `Retry-After`, its cause
//!    "needs D healthy pods and has H currently" (`desiredHealthy`, `currentHealthy`), or
//!    "does not allow evicting pods currently" once a `DisruptionAllowed=False` condition is
//!    set; the check holds in a dry run too;
//! 7. otherwise, unless in a dry run, the server counts the budget down itself:
//!    `disruptionsAllowed - 1`, the pod in `disruptedPods` (at the time), and at zero the
//!    condition `DisruptionAllowed` `False` `InsufficientPods`.
//!
//! A budget with no `observedGeneration` at all (never computed: the real server's step 5)
//! is computed on the spot instead, as the disruption controller would have within a
//! moment (the test server has no controller): expected = the pods it selects, healthy =
//! those Ready and not being deleted, desired = `minAvailable` (a number or a percentage
//! of expected, rounded up) or expected - `maxUnavailable` (a percentage rounded up); an
//! eviction is allowed when healthy - desired > 0, or when the pod itself is not healthy
//! and the budget is met (`IfHealthyBudget`, the default policy); nothing is written back.
//!
//! Allowed: the pod is deleted with the eviction's `deleteOptions` (preconditions and dry
//! run as a delete checks them), and — the stand-in kubelet being quick — at once, with
//! grace period 0 (the real server deletes it with its grace period and adds its
//! `DisruptionTarget` condition); the answer is `201` with a bare `Success` Status.
//! `dryRun` (query or `deleteOptions`) changes nothing.

use serde_json::{json, Value};

use super::answers::{write_status, Outcome};
use super::http::{self, Request};
use super::peer::Peer;
use super::store::{not_found, TypeKey};
use super::webhooks::AdmissionHost;
use super::writes;
use crate::api::{Status, StatusCause, StatusDetails};

fn tk(group: &str, version: &str, plural: &str) -> TypeKey {
    TypeKey {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
    }
}

fn send_status<S: Peer>(peer: &mut S, st: &Status) -> Outcome {
    send_status_with(peer, st, &[])
}

fn send_status_with<S: Peer>(peer: &mut S, st: &Status, extra: &[(&str, String)]) -> Outcome {
    match write_status(peer, st, extra) {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// Whether a `LabelSelector` object selects `labels` (an empty selector selects all).
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let by_expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|es| {
            es.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let values: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e.get("operator").and_then(Value::as_str) {
                    Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                    Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                    Some("Exists") => label(key).is_some(),
                    Some("DoesNotExist") => label(key).is_none(),
                    _ => false,
                }
            })
        });
    by_labels && by_expressions
}

fn healthy(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Ready")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
}

/// `minAvailable`/`maxUnavailable`: an integer, or a percentage of `expected` rounded up.
fn scaled(v: &Value, expected: i64) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => {
            let p: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (p * expected + 99) / 100
        }
        _ => 0,
    }
}

/// The budget's refusal, or `None` when it allows evicting `pod`.
fn check(pdb: &Value, pod: &Value, pods: &[Value]) -> Option<String> {
    let selector = pdb.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    let selected: Vec<&Value> = pods
        .iter()
        .filter(|p| {
            selects(
                &selector,
                p.pointer("/metadata/labels").unwrap_or(&Value::Null),
            )
        })
        .collect();
    let expected = selected.len() as i64;
    let current = selected.iter().filter(|p| healthy(p)).count() as i64;
    let desired = if let Some(m) = pdb.pointer("/spec/minAvailable") {
        scaled(m, expected)
    } else if let Some(m) = pdb.pointer("/spec/maxUnavailable") {
        (expected - scaled(m, expected)).max(0)
    } else {
        expected
    };
    let allowed = (current - desired).max(0);
    if allowed > 0 || (!healthy(pod) && current >= desired) {
        return None;
    }
    let name = pdb
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Some(format!(
        "The disruption budget {name} needs {desired} healthy pods and has {current} currently"
    ))
}

/// Whether the eviction is a dry run (`?dryRun=All` or `deleteOptions.dryRun`).
fn dry_run_of(req: &Request, eviction: &Value) -> bool {
    eviction
        .pointer("/deleteOptions/dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| !d.is_empty())
        || req.param("dryRun").is_some()
}

/// Whether someone (a disruption controller, a test) computed the budget's status for its
/// present spec: `status.observedGeneration` at least `metadata.generation`.
fn status_computed(pdb: &Value) -> bool {
    let observed = pdb
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    let generation = pdb
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    observed.is_some_and(|o| o >= generation)
}

/// Whether the budget's status was computed for an older spec (`status.observedGeneration`
/// behind `metadata.generation`): the real handler's "still being processed".
fn status_behind(pdb: &Value) -> bool {
    let observed = pdb
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    let generation = pdb
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    observed.is_some_and(|o| o < generation)
}

/// The 429 of a budget whose status is behind its spec, with `retryAfterSeconds: 10` (and
/// the `Retry-After: 10` header its sender adds).
fn still_processing(pdb: &Value) -> Status {
    let name = pdb
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut st = Status::failure(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    st.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: format!(
                "The disruption budget {name} is still being processed by the server."
            ),
            field: String::new(),
        }],
        retry_after_seconds: Some(10),
        ..Default::default()
    });
    st
}

/// A computed budget, as kube-apiserver's eviction handler uses it: no disruption left is a
/// refusal (its cause's text from the `DisruptionAllowed` condition); otherwise, unless in
/// a dry run, the server itself counts one down, records the pod in `disruptedPods` and,
/// at zero, sets `DisruptionAllowed=False` (`InsufficientPods`).
fn count_down(
    shared: &impl AdmissionHost,
    ns: &str,
    pod: &str,
    pdb: &Value,
    dry_run: bool,
) -> Result<Option<String>, Status> {
    let name = pdb
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let pdb_tk = tk("policy", "v1", "poddisruptionbudgets");
    // Decided and written under one lock: the budget as it is now (the real handler
    // retries on a conflict to the same effect).
    let mut store = shared.store.lock();
    let pdb: Value = match store.get(&pdb_tk, Some(ns), name) {
        Ok(o) => serde_json::from_str(&o.json).unwrap_or_default(),
        Err(_) => pdb.clone(),
    };
    let pdb = &pdb;
    let status = &pdb["status"];
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
    if allowed <= 0 {
        let blocked = status["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "DisruptionAllowed" && c["status"] == "False")
        });
        return Ok(Some(if blocked {
            format!("The disruption budget {name} does not allow evicting pods currently")
        } else {
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0)
            )
        }));
    }
    if dry_run {
        return Ok(None);
    }
    let now = super::store::rfc3339_now();
    let mut updated = pdb.clone();
    let st = &mut updated["status"];
    st["disruptionsAllowed"] = json!(allowed - 1);
    if !st["disruptedPods"].is_object() {
        st["disruptedPods"] = json!({});
    }
    st["disruptedPods"][pod] = json!(now);
    if allowed - 1 == 0 {
        let generation = pdb
            .pointer("/metadata/generation")
            .cloned()
            .unwrap_or(json!(1));
        let condition = json!({"type": "DisruptionAllowed", "status": "False",
            "observedGeneration": generation, "lastTransitionTime": now,
            "reason": "InsufficientPods", "message": ""});
        let mut conditions: Vec<Value> = st["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c["type"] != "DisruptionAllowed")
            .collect();
        conditions.push(condition);
        st["conditions"] = json!(conditions);
    }
    let opts = super::store::WriteOptions::fixture();
    store.update_with(&pdb_tk, Some(ns), name, updated, &opts)?;
    Ok(None)
}

/// `POST /api/v1/namespaces/{ns}/pods/{name}/eviction`.
pub(crate) fn serve<S: Peer>(
    req: &Request,
    ns: &str,
    name: &str,
    peer: &mut S,
    shared: &impl AdmissionHost,
) -> Outcome {
    let eviction: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => {
            let st = Status::failure(
                400,
                "BadRequest",
                format!("the eviction body is not JSON: {e}"),
            );
            return send_status(peer, &st);
        }
    };
    if let Some(body_name) = eviction
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        if body_name != name {
            let st = Status::failure(
                400,
                "BadRequest",
                "name in URL does not match name in Eviction object",
            );
            return send_status(peer, &st);
        }
    }
    let pods_tk = tk("", "v1", "pods");
    let (pod, pods, pdbs) = {
        let mut store = shared.store.lock();
        let pod: Value = match store.get(&pods_tk, Some(ns), name) {
            Ok(s) => serde_json::from_str(&s.json).unwrap_or(Value::Null),
            Err(_) => return send_status(peer, &not_found(&pods_tk, name)),
        };
        let rv = store.rv;
        let all = |store: &mut super::store::Store, t: &TypeKey| -> Vec<Value> {
            store
                .collection(t)
                .snapshot(rv, None, Some(ns))
                .unwrap_or_default()
                .iter()
                .filter_map(|o| serde_json::from_str(&o.json).ok())
                .collect()
        };
        let pods = all(&mut store, &pods_tk);
        let pdbs = all(&mut store, &tk("policy", "v1", "poddisruptionbudgets"));
        (pod, pods, pdbs)
    };
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ignore_budgets = matches!(phase, "Pending" | "Succeeded" | "Failed")
        || pod.pointer("/metadata/deletionTimestamp").is_some();
    if !ignore_budgets {
        let labels = pod
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null);
        let over: Vec<&Value> = pdbs
            .iter()
            .filter(|_| !labels.is_null())
            .filter(|b| {
                selects(
                    &b.pointer("/spec/selector").cloned().unwrap_or(json!({})),
                    &labels,
                )
            })
            .collect();
        if over.len() > 1 {
            // The real handler's plain error: a 500 with neither reason nor details.
            let st = Status::failure(
                500,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            );
            return send_status(peer, &st);
        }
        let dry_run = dry_run_of(req, &eviction);
        if let Some(b) = over.first().filter(|b| status_behind(b)) {
            return send_status_with(peer, &still_processing(b), &[("Retry-After", "10".into())]);
        }
        let computed = over.first().filter(|b| status_computed(b));
        let refusal = match computed {
            Some(b) => match count_down(shared, ns, name, b, dry_run) {
                Ok(r) => r,
                Err(st) => return send_status(peer, &st),
            },
            None => over.first().and_then(|b| check(b, &pod, &pods)),
        };
        if let Some(refusal) = refusal {
            let mut st = Status::failure(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            );
            st.details = Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: "DisruptionBudget".into(),
                    message: refusal,
                    field: String::new(),
                }],
                ..Default::default()
            });
            return send_status(peer, &st);
        }
    }
    // Allowed: a delete with the eviction's options, finished at once (grace 0).
    let mut options = eviction.get("deleteOptions").cloned().unwrap_or(json!({}));
    if !options.is_object() {
        options = json!({});
    }
    let dry_run = dry_run_of(req, &eviction);
    options["gracePeriodSeconds"] = json!(0);
    let delete = Request {
        method: "DELETE".into(),
        path: format!("/api/v1/namespaces/{ns}/pods/{name}"),
        query: if dry_run {
            [("dryRun".to_owned(), "All".to_owned())]
                .into_iter()
                .collect()
        } else {
            Default::default()
        },
        query_pairs: if dry_run {
            vec![("dryRun".to_owned(), "All".to_owned())]
        } else {
            Vec::new()
        },
        headers: Default::default(),
        header_list: Vec::new(),
        body: serde_json::to_vec(&options).unwrap_or_default(),
    };
    let address = writes::Address {
        tk: &pods_tk,
        namespace: Some(ns),
        name: Some(name),
        subresource: None,
    };
    match writes::write(&delete, &address, shared) {
        Ok(_) => {
            shared.notify();
            let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#;
            match http::write_response(peer, 201, &[], body.as_bytes()) {
                Ok(()) => Outcome::KeepAlive,
                Err(_) => Outcome::Close,
            }
        }
        Err(st) => send_status(peer, &st),
    }
}
