//! The sharding webhook: new objects of a sharded resource labelled with their shard as
//! they are created (timebertt's kubernetes-controller-sharding assigns the same way).
//! Everything a user needs to know is on [`shard_assigner`] (this module is private).

use std::time::Instant;

use serde_json::Value;

use super::assignment::{shard_for, HashKey};
use super::membership::{shard_of, Observations};
use super::ring::Ring;
use crate::client::{Api, Client, ListParams};
use crate::controller::Lease;
use crate::sync::Mutex;
use crate::webhook::{AdmissionHook, Operation, Verdict};

/// A mutating admission hook that labels each new object of a sharded resource with the
/// shard the sharder would give it, so that it need not wait for the sharder.
///
/// On a CREATE of an object that has a name and no shard label, the hook lists the ring's
/// shard Leases, judges which shards are live by the sharder's rules (see [`ShardState`];
/// the hook keeps its own observations between calls, so a Lease counts from when the hook
/// first saw it) and sets the shard label to [`shard_for`] of the object's [`HashKey`] over
/// them: the sharder's own choice, so it has nothing to move.
///
/// The sharder stays in charge and repairs what the hook missed or could not know:
/// - an object created with `generateName` (no name yet at admission), a create while no
///   shard is live, a Lease list that failed (the hook then admits the object unlabelled
///   and logs why: it never blocks a create);
/// - UPDATEs are never labelled: a shard label removed by hand is the sharder's to handle
///   (a move from the shard it was on, see the hand-over in the [module docs](super));
/// - objects the sharded controller owns: the sharder labels them with their owner's shard.
///
/// One case the hook cannot see: a name deleted and created again while the old object's
/// shard has not yet seen the delete. The sharder sends such a name back to its old shard
/// first (its tombstones); the hook assigns it by the hash, which may be another live
/// shard. A controller that must never reconcile two incarnations of one name on two
/// shards at once should leave new objects to the sharder.
///
/// Register the hook for `CREATE` of the sharded resource, with `sideEffects: None` and
/// `failurePolicy: Ignore` (the sharder assigns anything the hook did not). It needs `list`
/// on `leases` in the ring's namespace.
///
/// [`ShardState`]: super::ShardState
///
/// ```
/// use kube_informer::controller::sharding::{shard_assigner, HashKey, Ring, RING_LABEL};
/// use kube_informer::api::ApiResource;
/// use kube_informer::Client;
/// use serde_json::{json, Value};
/// use base64::Engine as _;
/// # let server = kube_informer::testing::ApiServer::start();
/// let client = Client::new(server.client_config())?;
/// let ring = Ring::new("widgets", "default")?;
/// // A live shard (its Lease, as the shard's elector writes it).
/// let leases = ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true);
/// server.create(&leases, json!({"metadata": {"name": ring.shard_lease("replica-a"),
///     "namespace": "default", "labels": {RING_LABEL: "widgets"}},
///     "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 15}})).unwrap();
///
/// let hook = shard_assigner(client, ring.clone(), HashKey::Object);
/// let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
///     "request": {"uid": "u", "operation": "CREATE", "namespace": "lab", "name": "w1",
///         "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
///         "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
///         "object": {"metadata": {"name": "w1", "namespace": "lab"}}}});
/// let (_, body) = hook.review(review.to_string().as_bytes());
/// let answer: Value = serde_json::from_slice(&body).unwrap();
/// let patch = base64::engine::general_purpose::STANDARD
///     .decode(answer["response"]["patch"].as_str().unwrap()).unwrap();
/// let patch: Value = serde_json::from_slice(&patch).unwrap();
/// assert_eq!(patch[0]["value"][ring.shard_label()], "replica-a");
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub fn shard_assigner(client: Client, ring: Ring, hash_key: HashKey) -> AdmissionHook {
    let api: Api<Lease> = Api::namespaced(client, ring.namespace());
    // The observations, and the Lease names they hold (to forget those that went).
    let observations = Mutex::new((Observations::default(), Vec::<String>::new()));
    let shard_label = ring.shard_label();
    AdmissionHook::mutating(move |req, object: &mut Value| {
        if req.operation != Operation::Create {
            return Verdict::allow();
        }
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let has_label = object
            .pointer("/metadata/labels")
            .and_then(|l| l.get(&shard_label))
            .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()));
        if name.is_empty() || has_label {
            return Verdict::allow();
        }
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(req.namespace.as_str())
            .to_owned();
        let leases = match api.list(&ListParams::default().labels(&ring.lease_selector())) {
            Ok(l) => l.items,
            Err(e) => {
                log::warn!(
                    "sharding webhook ({}): listing the shard Leases failed, {namespace}/{name} left to the sharder: {e}",
                    ring.name()
                );
                return Verdict::allow();
            }
        };
        let now = Instant::now();
        let mut live: Vec<String> = Vec::new();
        {
            let mut guard = observations.lock();
            let (obs, known) = &mut *guard;
            for name in known.iter() {
                if !leases.iter().any(|l| l.metadata.name() == name) {
                    obs.forget(name);
                }
            }
            *known = leases
                .iter()
                .map(|l| l.metadata.name().to_owned())
                .collect();
            for lease in &leases {
                obs.observe(lease, now);
                if let Some(shard) = shard_of(lease, &ring) {
                    if obs.judge(lease, shard, now).is_live() {
                        live.push(shard.to_owned());
                    }
                }
            }
        }
        let key = hash_key.key(&namespace, &name);
        let Some(shard) = shard_for(&key, &live) else {
            return Verdict::allow();
        };
        let Some(meta) = object.as_object_mut().and_then(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()))
                .as_object_mut()
        }) else {
            return Verdict::allow();
        };
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(shard_label.clone(), Value::from(shard));
        } else {
            *labels = serde_json::json!({ shard_label.clone(): shard });
        }
        Verdict::allow()
    })
}
