//! Draining a node with kubectl's rules (`k8s.io/kubectl/pkg/drain`), blocking.
//!
//! See [`drain_node`] for the rules, in kubectl's order.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ureq::http::Method;

use crate::api::url_encoding::percent_encode;
use crate::client::{Api, Client, DeleteParams};
use crate::error::{Error, Result};

const DAEMONSET_FATAL: &str = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
const DAEMONSET_WARNING: &str = "ignoring DaemonSet-managed Pods";
const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
const LOCAL_STORAGE_WARNING: &str = "deleting Pods with local storage";
const UNMANAGED_FATAL: &str = "Pods that declare no controller (use --force to override)";
const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// How to drain (kubectl drain's flags): a builder whose defaults (`new()`, `Default`) are
/// kubectl's.
///
/// ```
/// use kube_informer::pod::DrainOptions;
/// use std::time::Duration;
/// let o = DrainOptions::new()
///     .ignore_daemonsets(true)
///     .delete_emptydir_data(true)
///     .timeout(Duration::from_secs(300));
/// # let _ = o;
/// ```
#[derive(Clone, Debug)]
pub struct DrainOptions {
    /// Skip DaemonSet-managed pods instead of refusing to drain (`--ignore-daemonsets`).
    ignore_daemonsets: bool,
    /// Delete pods with `emptyDir` volumes, losing their data (`--delete-emptydir-data`).
    delete_emptydir_data: bool,
    /// Delete pods that declare no controller (`--force`): nothing recreates them.
    force: bool,
    /// The pods' grace period (`--grace-period`; `None`: each pod's own).
    grace_period_seconds: Option<u32>,
    /// How long to evict and wait in all (`--timeout`; `None`: no bound but the client's
    /// cancellation token).
    timeout: Option<Duration>,
    /// Delete instead of evicting, ignoring PodDisruptionBudgets (`--disable-eviction`).
    disable_eviction: bool,
    /// Only the pods this label selector matches (`--pod-selector`).
    pod_selector: Option<String>,
    /// `--dry-run=client`: write nothing; report what would be evicted.
    dry_run: bool,
    /// `--dry-run=server`: cordon and evict with `dryRun=All` (validated, not done).
    server_dry_run: bool,
    /// The wait after a PodDisruptionBudget's 429 before trying that pod again (kubectl: 5 s).
    eviction_retry_delay: Duration,
    /// How often to look whether evicted pods are gone (kubectl: 1 s).
    poll_interval: Duration,
}

impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            ignore_daemonsets: false,
            delete_emptydir_data: false,
            force: false,
            grace_period_seconds: None,
            timeout: None,
            disable_eviction: false,
            pod_selector: None,
            dry_run: false,
            server_dry_run: false,
            eviction_retry_delay: Duration::from_secs(5),
            poll_interval: Duration::from_secs(1),
        }
    }
}

impl DrainOptions {
    /// kubectl's defaults (the same as `DrainOptions::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Skip DaemonSet-managed pods instead of refusing to drain (`--ignore-daemonsets`).
    pub fn ignore_daemonsets(mut self, on: bool) -> Self {
        self.ignore_daemonsets = on;
        self
    }

    /// Delete pods with `emptyDir` volumes, losing their data (`--delete-emptydir-data`).
    pub fn delete_emptydir_data(mut self, on: bool) -> Self {
        self.delete_emptydir_data = on;
        self
    }

    /// Delete pods that declare no controller (`--force`): nothing recreates them.
    pub fn force(mut self, on: bool) -> Self {
        self.force = on;
        self
    }

    /// The pods' grace period (`--grace-period`; by default each pod's own).
    pub fn grace_period(mut self, seconds: u32) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// How long to evict and wait in all (`--timeout`; by default no bound but the client's
    /// cancellation token).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Delete instead of evicting, ignoring PodDisruptionBudgets (`--disable-eviction`).
    pub fn disable_eviction(mut self, on: bool) -> Self {
        self.disable_eviction = on;
        self
    }

    /// Only the pods this label selector matches (`--pod-selector`).
    pub fn pod_selector(mut self, selector: &str) -> Self {
        self.pod_selector = Some(selector.to_string());
        self
    }

    /// `--dry-run=client`: write nothing; report what would be evicted.
    pub fn dry_run(mut self, on: bool) -> Self {
        self.dry_run = on;
        self
    }

    /// `--dry-run=server`: cordon and evict with `dryRun=All` (validated, not done).
    pub fn server_dry_run(mut self, on: bool) -> Self {
        self.server_dry_run = on;
        self
    }

    /// The wait after a PodDisruptionBudget's 429 before trying that pod again (kubectl: 5 s).
    pub fn eviction_retry_delay(mut self, delay: Duration) -> Self {
        self.eviction_retry_delay = delay;
        self
    }

    /// How often to look whether evicted pods are gone (kubectl: 1 s).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }
}

/// A pod the drain left on the node, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedPod {
    /// `namespace/name`.
    pub pod: String,
    /// kubectl's words: "ignoring DaemonSet-managed Pods", "mirror pod".
    pub reason: String,
}

/// What a drain did (see [`drain_node`]).
#[derive(Clone, Debug, Default)]
pub struct DrainReport {
    /// The node.
    pub node: String,
    /// True when the node was already unschedulable.
    pub already_cordoned: bool,
    /// kubectl's warning line without its `Warning: ` prefix, e.g.
    /// "ignoring DaemonSet-managed Pods: kube-system/proxy-x" (empty when none).
    pub warnings: String,
    /// Pods left on the node on purpose.
    pub skipped: Vec<SkippedPod>,
    /// Why the drain refused to start evicting, in kubectl's words ("cannot delete Pods that
    /// declare no controller (use --force to override): lab/x"); empty when it went ahead.
    pub refused: Vec<String>,
    /// Pods (`namespace/name`) chosen for eviction: with a dry run, what would be evicted.
    pub selected: Vec<String>,
    /// Pods (`namespace/name`) evicted (or deleted) and seen gone, in that order.
    pub evicted: Vec<String>,
    /// True when pods were evicted, false when deleted (`disable_eviction`).
    pub used_eviction: bool,
    /// One line per PodDisruptionBudget refusal that was retried, kubectl's words.
    pub retried: Vec<String>,
    /// Pods whose eviction failed for good, with the error.
    pub failed: Vec<String>,
    /// Pods (`namespace/name`) still there when the timeout ran out.
    pub pending: Vec<String>,
}

impl DrainReport {
    /// True when every selected pod is gone and nothing was refused or failed.
    pub fn is_drained(&self) -> bool {
        self.refused.is_empty() && self.failed.is_empty() && self.pending.is_empty()
    }
}

fn pods_api(client: &Client, ns: &str) -> Api<crate::api::DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        ns,
        &crate::api::ApiResource::new("", "v1", "Pod", "pods", true),
    )
}

fn node_path(node: &str) -> Result<String> {
    if node.is_empty() || node.contains('/') || node.contains('?') {
        return Err(Error::InvalidInput(format!("{node:?} is not a node name")));
    }
    Ok(format!("/api/v1/nodes/{node}"))
}

fn set_unschedulable(client: &Client, node: &str, on: bool, dry_run: bool) -> Result<bool> {
    let path = node_path(node)?;
    let current: Value = client.request(Method::GET, &path).send_json()?;
    let was = current
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if was == on {
        return Ok(true);
    }
    let patch = if on {
        json!({"spec": {"unschedulable": true}})
    } else {
        json!({"spec": {"unschedulable": null}})
    };
    let mut req = client
        .request(Method::PATCH, &path)
        .content_type("application/strategic-merge-patch+json")
        .json(&patch);
    if dry_run {
        req = req.query("dryRun", "All");
    }
    req.send()?;
    Ok(false)
}

/// Marks a node unschedulable (`kubectl cordon`); `Ok(true)` when it already was.
pub fn cordon(client: &Client, node: &str) -> Result<bool> {
    set_unschedulable(client, node, true, false)
}

/// Makes a node schedulable again (`kubectl uncordon`); `Ok(true)` when it already was.
pub fn uncordon(client: &Client, node: &str) -> Result<bool> {
    set_unschedulable(client, node, false, false)
}

/// A filter's verdict on one pod (kubectl's `PodDeleteStatus`).
enum Verdict {
    Okay,
    Skip(&'static str),
    Warning { delete: bool, message: String },
    Error(String),
}

impl Verdict {
    fn deletes(&self) -> bool {
        matches!(self, Verdict::Okay | Verdict::Warning { delete: true, .. })
    }
}

fn controller_of(pod: &Value) -> Option<&Value> {
    pod.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

fn finished(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn filter(client: &Client, pod: &Value, o: &DrainOptions) -> Verdict {
    let filters: [&dyn Fn() -> Verdict; 4] = [
        // DaemonSet-managed.
        &|| {
            let Some(c) = controller_of(pod) else {
                return Verdict::Okay;
            };
            if str_at(c, "/kind") != "DaemonSet" || str_at(c, "/apiVersion") != "apps/v1" {
                return Verdict::Okay;
            }
            if finished(pod) {
                return Verdict::Okay;
            }
            let ns = str_at(pod, "/metadata/namespace");
            let path = format!(
                "/apis/apps/v1/namespaces/{ns}/daemonsets/{}",
                str_at(c, "/name")
            );
            if let Err(e) = client.request(Method::GET, &path).send() {
                if e.is_not_found() && o.force {
                    return Verdict::Warning {
                        delete: true,
                        message: e.to_string(),
                    };
                }
                return Verdict::Error(e.to_string());
            }
            if !o.ignore_daemonsets {
                return Verdict::Error(DAEMONSET_FATAL.into());
            }
            Verdict::Warning {
                delete: false,
                message: DAEMONSET_WARNING.into(),
            }
        },
        // Mirror pods.
        &|| {
            if pod
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(MIRROR_ANNOTATION))
                .is_some()
            {
                Verdict::Skip("mirror pod")
            } else {
                Verdict::Okay
            }
        },
        // Local storage.
        &|| {
            let empty_dir = pod
                .pointer("/spec/volumes")
                .and_then(Value::as_array)
                .is_some_and(|vs| vs.iter().any(|v| v.get("emptyDir").is_some()));
            if !empty_dir || finished(pod) {
                Verdict::Okay
            } else if !o.delete_emptydir_data {
                Verdict::Error(LOCAL_STORAGE_FATAL.into())
            } else {
                Verdict::Warning {
                    delete: true,
                    message: LOCAL_STORAGE_WARNING.into(),
                }
            }
        },
        // Unmanaged.
        &|| {
            if finished(pod) || controller_of(pod).is_some() {
                Verdict::Okay
            } else if o.force {
                Verdict::Warning {
                    delete: true,
                    message: UNMANAGED_WARNING.into(),
                }
            } else {
                Verdict::Error(UNMANAGED_FATAL.into())
            }
        },
    ];
    let mut verdict = Verdict::Okay;
    for f in filters {
        verdict = f();
        if !verdict.deletes() {
            break;
        }
    }
    verdict
}

/// Groups `(message, pod)` pairs by message, in first-seen order: kubectl's
/// "message: ns/a, ns/b".
fn grouped(pairs: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (m, p) in pairs {
        match out.iter_mut().find(|(k, _)| k == m) {
            Some((_, ps)) => ps.push(p.clone()),
            None => out.push((m.clone(), vec![p.clone()])),
        }
    }
    out
}

fn list_node_pods(client: &Client, node: &str, o: &DrainOptions) -> Result<Vec<Value>> {
    let mut items = Vec::new();
    let mut cont = String::new();
    loop {
        let mut q = String::from("/api/v1/pods?fieldSelector=");
        percent_encode(&format!("spec.nodeName={node}"), &mut q);
        if let Some(sel) = &o.pod_selector {
            q.push_str("&labelSelector=");
            percent_encode(sel, &mut q);
        }
        q.push_str("&limit=500");
        if !cont.is_empty() {
            q.push_str("&continue=");
            percent_encode(&cont, &mut q);
        }
        let page: Value = client.request(Method::GET, &q).send_json()?;
        if let Some(a) = page.get("items").and_then(Value::as_array) {
            items.extend(a.iter().cloned());
        }
        cont = str_at(&page, "/metadata/continue").to_owned();
        if cont.is_empty() {
            return Ok(items);
        }
    }
}

/// Drains `node`: what `kubectl drain` does, in its order:
///
/// 1. **cordon**: `spec.unschedulable: true` (a strategic merge patch, as kubectl sends);
/// 2. **list** the node's pods (`fieldSelector=spec.nodeName=NODE`, all namespaces, paged);
/// 3. **filter** each pod through kubectl's filters, in kubectl's order, the last verdict
///    winning: a pod being deleted is kept (waited for); a pod whose controller is a
///    DaemonSet is refused unless `ignore_daemonsets` (then skipped with a warning; a
///    finished one is deleted; one whose DaemonSet is gone is deleted with `force`); a
///    mirror pod (annotation `kubernetes.io/config.mirror`) is skipped; a running pod with
///    an `emptyDir` volume is refused unless `delete_emptydir_data`; a running pod without a
///    controller is refused unless `force`. Completed pods (`Succeeded`/`Failed`) pass the
///    emptyDir and controller rules, as in kubectl. Any refusal stops the drain before
///    anything is evicted (the node stays cordoned), and is reported with kubectl's words
///    ("cannot delete Pods that declare no controller (use --force to override): ns/a");
/// 4. **evict** each pod (`policy/v1` Eviction; a plain delete with `disable_eviction`),
///    all in turn rather than one after another: a pod a PodDisruptionBudget protects (429)
///    is tried again every `eviction_retry_delay` (kubectl: 5 s) until `timeout`, while the
///    others go ahead;
/// 5. **wait** for each evicted pod to be gone **by UID** (a pod of the same name created
///    since by its controller does not count), polling every `poll_interval`.
///
/// Every wait is bounded by `timeout` (none: until done, as kubectl's default 0) and ends at
/// once when the client's [`Cancel`](crate::client::Cancel) token fires. The outcome is a
/// [`DrainReport`], with what was cordoned, evicted, skipped, refused, retried and left.
///
/// Errors are the requests that failed outright (the node missing, the list refused, a
/// cancelled client); what the rules refused and how each pod fared is in the
/// [`DrainReport`].
///
/// ```
/// use kube_informer::pod::{drain_node, DrainOptions};
/// use kube_informer::testing::ApiServer;
/// use kube_informer::Client;
///
/// let server = ApiServer::start();
/// server.add_node("node-1").unwrap();
/// server.add_pod_on("lab", "web-1", "node-1", serde_json::json!({"metadata": {"ownerReferences": [
///     {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": true}]}})).unwrap();
/// let client = Client::new(server.client_config())?;
/// let report = drain_node(&client, "node-1", &DrainOptions::default())?;
/// assert!(report.is_drained());
/// assert_eq!(report.evicted, ["lab/web-1"]);
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub fn drain_node(client: &Client, node: &str, o: &DrainOptions) -> Result<DrainReport> {
    let mut report = DrainReport {
        node: node.to_owned(),
        used_eviction: !o.disable_eviction,
        ..Default::default()
    };
    report.already_cordoned = if o.dry_run {
        let n: Value = client.request(Method::GET, &node_path(node)?).send_json()?;
        n.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true)
    } else {
        set_unschedulable(client, node, true, o.server_dry_run)?
    };

    let mut chosen = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for pod in list_node_pods(client, node, o)? {
        let key = format!(
            "{}/{}",
            str_at(&pod, "/metadata/namespace"),
            str_at(&pod, "/metadata/name")
        );
        match filter(client, &pod, o) {
            Verdict::Okay => chosen.push(pod),
            Verdict::Skip(why) => report.skipped.push(SkippedPod {
                pod: key,
                reason: why.into(),
            }),
            Verdict::Warning { delete, message } => {
                warnings.push((message.clone(), key.clone()));
                if delete {
                    chosen.push(pod);
                } else {
                    report.skipped.push(SkippedPod {
                        pod: key,
                        reason: message,
                    });
                }
            }
            Verdict::Error(m) => errors.push((m, key)),
        }
    }
    report.warnings = grouped(&warnings)
        .into_iter()
        .map(|(m, ps)| format!("{m}: {}", ps.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    report.refused = grouped(&errors)
        .into_iter()
        .map(|(m, ps)| format!("cannot delete {m}: {}", ps.join(", ")))
        .collect();
    if !report.refused.is_empty() {
        return Ok(report);
    }
    report.selected = chosen
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                str_at(p, "/metadata/namespace"),
                str_at(p, "/metadata/name")
            )
        })
        .collect();
    if o.dry_run {
        return Ok(report);
    }
    evict_and_wait(client, chosen, o, &mut report)?;
    Ok(report)
}

struct Target {
    ns: String,
    name: String,
    uid: String,
    /// Evicted (or deleted): now waiting for it to be gone.
    evicted: bool,
    /// When to try evicting again after a 429.
    next_try: Instant,
}

fn evict_and_wait(
    client: &Client,
    pods: Vec<Value>,
    o: &DrainOptions,
    report: &mut DrainReport,
) -> Result<()> {
    let start = Instant::now();
    let deadline = o.timeout.and_then(|t| start.checked_add(t));
    let mut params = DeleteParams {
        grace_period_seconds: o.grace_period_seconds,
        dry_run: o.server_dry_run,
        ..Default::default()
    };
    if o.server_dry_run {
        params.dry_run = true;
    }
    let mut targets: Vec<Target> = pods
        .iter()
        .map(|p| Target {
            ns: str_at(p, "/metadata/namespace").to_owned(),
            name: str_at(p, "/metadata/name").to_owned(),
            uid: str_at(p, "/metadata/uid").to_owned(),
            evicted: false,
            next_try: start,
        })
        .collect();
    let retry = humantime(o.eviction_retry_delay);
    while !targets.is_empty() {
        let now = Instant::now();
        let mut i = 0;
        while i < targets.len() {
            let t = &mut targets[i];
            let key = format!("{}/{}", t.ns, t.name);
            let api = pods_api(client, &t.ns);
            if !t.evicted {
                if t.next_try > now {
                    i += 1;
                    continue;
                }
                let r = if o.disable_eviction {
                    api.delete(&t.name, &params).map(|_| ())
                } else {
                    api.evict(&t.name, &params)
                };
                match r {
                    Ok(()) if o.server_dry_run => {
                        report.evicted.push(key);
                        targets.remove(i);
                        continue;
                    }
                    Ok(()) => t.evicted = true,
                    Err(e) if e.is_not_found() => {
                        report.evicted.push(key);
                        targets.remove(i);
                        continue;
                    }
                    Err(e) if e.is_cancelled() => return Err(e),
                    Err(e) if e.code() == Some(429) => {
                        report.retried.push(format!(
                            "error when evicting pods/{:?} -n {:?} (will retry after {retry}): {}",
                            t.name,
                            t.ns,
                            e.status().map(|s| s.message.as_str()).unwrap_or_default()
                        ));
                        t.next_try = now + o.eviction_retry_delay;
                        i += 1;
                        continue;
                    }
                    Err(e) => {
                        // kubectl prints an API error as its Status message alone.
                        let why = e
                            .status()
                            .map(|s| s.message.clone())
                            .filter(|m| !m.is_empty())
                            .unwrap_or_else(|| e.to_string());
                        report.failed.push(format!(
                            "error when evicting pods/{:?} -n {:?}: {why}",
                            t.name, t.ns
                        ));
                        targets.remove(i);
                        continue;
                    }
                }
            }
            // Evicted: gone once the name is missing or names another instance.
            match client
                .request(
                    Method::GET,
                    &format!("/api/v1/namespaces/{}/pods/{}", t.ns, t.name),
                )
                .send_json::<Value>()
            {
                Err(e) if e.is_not_found() => {
                    report.evicted.push(key);
                    targets.remove(i);
                    continue;
                }
                Ok(p) if str_at(&p, "/metadata/uid") != t.uid => {
                    report.evicted.push(key);
                    targets.remove(i);
                    continue;
                }
                Err(e) if e.is_cancelled() => return Err(e),
                _ => {}
            }
            i += 1;
        }
        if targets.is_empty() {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            report.pending = targets
                .iter()
                .map(|t| format!("{}/{}", t.ns, t.name))
                .collect();
            break;
        }
        let mut wait = o.poll_interval;
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        if let Some(c) = client.cancel_token() {
            if c.sleep(wait) {
                return Err(Error::Cancelled {
                    request: format!("drain node {}", report.node),
                });
            }
        } else {
            std::thread::sleep(wait);
        }
    }
    Ok(())
}

/// Go's duration format for the retry message (`5s`, `500ms`).
fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
