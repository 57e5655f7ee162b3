//! Sharded controllers: one controller's objects spread over its live replicas, each replica
//! caching and reconciling only its part, coordinated through Leases and labels.
//!
//! Why: with leader election one replica works and the others wait; when a controller's
//! objects outgrow one process (the memory of its caches, its reconcile throughput) there is
//! nowhere to go. Sharding splits the objects: each replica (a *shard*) watches only the
//! objects labelled with its name, so its caches and its work shrink as replicas are added.
//! The design follows timebertt/kubernetes-controller-sharding (a Lease per shard, a
//! sharder that writes each object's shard into a label, a drain label as the hand-over
//! handshake), built on what Kubernetes already gives: Leases, labels, and the
//! compare-and-swap of every write. There is no consensus of our own and no channel between
//! replicas.
//!
//! # The pieces (one file each)
//!
//! - [`Ring`] (`ring.rs`): the ring's name and the label keys derived from it.
//! - membership (`membership.rs`): each shard holds its own Lease (`<ring>-<shard>`),
//!   labelled with the ring; the sharder judges which shards are live ([`ShardState`]).
//! - assignment (`assignment.rs`): rendezvous hashing of a stable key ([`HashKey`]) over the
//!   live shards ([`shard_for`], [`score`]); a join or a leave moves about 1/N of the objects.
//! - [`Sharder`] (`sharder.rs`): one replica at a time (leader election) watches the
//!   metadata of the sharded resource, of the objects it owns, and the shard Leases, and
//!   writes each object's shard label.
//! - the hand-over (`handover.rs`): drain, acknowledge, assign; fence a dead shard's Lease
//!   (and wait when the Lease proves nothing) before moving its objects; recreated names go
//!   back to their old shard first. Its rules and why they are safe are in its docs.
//! - the sharding webhook (`webhook.rs`, feature `webhook`): `shard_assigner`, a mutating
//!   admission hook that labels new objects with their shard on create, so they need not
//!   wait for the sharder, which still repairs whatever the hook missed.
//! - [`ShardConfig`] (`shard.rs`): what [`ControllerBuilder::sharded`] takes; it holds the
//!   shard's Lease, runs the workers only during its terms, and gates every key.
//!
//! # Labels
//!
//! | label | on | value |
//! |---|---|---|
//! | `sharding.kube-informer.io/ring` | shard Leases | the ring's name |
//! | `shard.sharding.kube-informer.io/<ring>` | sharded and owned objects | the shard's id |
//! | `drain.sharding.kube-informer.io/<ring>` | an object being handed over | `"true"`; `"acknowledged"` once its shard let go (no shard label then) |
//!
//! # How an object moves
//!
//! - **Membership.** Each replica holds a shard Lease of its own (`coordination.k8s.io/v1`,
//!   named `<ring>-<shard>`, labelled `sharding.kube-informer.io/ring=<ring>`). It renews
//!   the Lease like a leader does and releases it on stop.
//! - **Assignment.** The [`Sharder`] runs on one replica at a time (leader election). It
//!   hashes each object's `namespace/name` (or its namespace) over the live shards with
//!   rendezvous hashing: a fixed, documented FNV-1a + splitmix64 score, the same in every
//!   process and Rust version. It writes the result into the label
//!   `shard.sharding.kube-informer.io/<ring>`. Objects that a sharded object controls follow
//!   their owner.
//! - **Hand-over from a live shard.** An object leaves a live shard only after that shard
//!   let go of it. The sharder adds `drain.sharding.kube-informer.io/<ring>`. The shard's
//!   worker takes the key (so it is not reconciling it), removes the shard label and marks the
//!   drain label `acknowledged`. Only then is the object assigned to its new shard. A shard
//!   label removed by hand, which no shard acknowledged, sends the object back to its shard
//!   to be drained from there.
//! - **Hand-over from a dead or departed shard.** Its Lease is first *fenced*: a
//!   compare-and-swap write that proves the shard did not renew, and keeps it out. Then its
//!   objects move: at once when the Lease had expired or was released; one lease duration
//!   later when the Lease proved nothing (deleted, garbled, taken by someone else: the shard
//!   may still be working). A name deleted and created again goes back to its old shard
//!   first (which may still cache the old object) and is drained from there.
//! - **Reconciling.** A shard reconciles only objects labelled with it, and only after it
//!   confirmed them (by UID) for its current term with a fresh list or a GET. So a replica
//!   that comes back with a stale cache acts on nothing it no longer owns. A reconcile must
//!   return within `lease_duration - renew_deadline` of its term's end: it is not
//!   interrupted, and one that outlives its term is logged.
//!
//! A join moves about 1/N of the objects, all from the other shards, and a leave moves only
//! the leaver's: over 20,000 keys a fourth shard takes 25% of them (`assignment.rs` tests;
//! `cargo bench --bench sharding` measures it over real moves, see `benches/README.md`).
//!
//! # Sharding a controller
//!
//! An existing controller changes in a few lines: a [`Ring`], a [`Sharder`] on every
//! replica, a [`ShardConfig`] whose factory options make the informers see only this shard's
//! objects, and [`ControllerBuilder::sharded`]. The rest of the controller stays as it was.
//!
//! ```
//! use std::time::Duration;
//! use kube_informer::api::ApiResource;
//! use kube_informer::cache::SharedInformerFactory;
//! use kube_informer::controller::sharding::{Ring, ShardConfig, Sharder, SharderConfig};
//! use kube_informer::controller::{Action, Controller, LeaderElectionConfig};
//! use kube_informer::Client;
//! # let server = kube_informer::testing::ApiServer::start();
//! let client = Client::new(server.client_config())?;
//! let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
//! # server.create(&widgets, serde_json::json!({"metadata": {"name": "w1", "namespace": "lab"}})).unwrap();
//! let ring = Ring::new("widgets", "default")?;
//!
//! // Every replica runs the sharder; one at a time (the leader) acts.
//! let sharder = Sharder::start(client.clone(), SharderConfig::new(ring.clone(), &widgets, "replica-a"))?;
//!
//! // The controller, sharded: its informers see only this shard's objects.
//! let shard = ShardConfig::new(ring, "replica-a")?;
//! let factory = SharedInformerFactory::with_options(client.clone(), shard.factory_options());
//! let (tx, rx) = crossbeam_channel::unbounded();
//! let controller = Controller::builder("widgets", factory.dynamic_informer(&widgets))
//!     .sharded(client, shard)
//!     .run(move |key: &str| -> Result<Action, kube_informer::Error> {
//!         tx.send(key.to_owned()).ok();
//!         Ok(Action::Done)
//!     })?;
//! assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "lab/w1");
//! controller.stop(); // releases the shard Lease
//! sharder.stop();
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! # The example
//!
//! `examples/sharded_controller.rs` runs one replica per process against a cluster
//! (`--shard-id`, `--namespace`). Its demo mode runs three replicas in one process against
//! the test API server. It creates 30 objects, stops one replica, adds another, and proves
//! with enter/exit instrumentation that no object was ever reconciled by two shards at once:
//!
//! ```text
//! $ cargo run -q --example sharded_controller -- --demo
//! sharded_controller: no cluster configured (or --demo); running three replicas against the embedded test API server (demo)
//! JOIN replica-a
//! JOIN replica-b
//! RING live=replica-a
//! JOIN replica-c
//! ASSIGN lab/item-00 -> replica-a
//! RING live=replica-a,replica-b,replica-c
//! ASSIGN lab/item-12 -> replica-c
//! ASSIGN lab/item-06 -> replica-b
//! ASSIGN lab/item-04 -> replica-a
//! ASSIGN lab/item-19 -> replica-c
//! ASSIGN lab/item-23 -> replica-c
//! ...                                    (30 ASSIGN lines in all)
//! ASSIGN lab/item-20 -> replica-b
//! DRAIN lab/item-00 replica-a -> replica-b
//! ASSIGN lab/item-00 -> replica-b
//! COUNT replica-a=8 replica-b=11 replica-c=11 (converged)
//! STOP replica-b (clean: it releases its Lease)
//! RING live=replica-a,replica-c
//! ...                                    (11 MOVE lines in all)
//! MOVE lab/item-13 replica-b -> replica-a (fenced)
//! MOVE lab/item-20 replica-b -> replica-a (fenced)
//! UNFENCE replica-b
//! COUNT replica-a=16 replica-c=14 (converged)
//! JOIN replica-d
//! RING live=replica-a,replica-c,replica-d
//! DRAIN lab/item-28 replica-a -> replica-d
//! ...                                    (12 DRAIN lines, then 12 ASSIGN lines to replica-d)
//! COUNT replica-a=5 replica-c=13 replica-d=12 (converged)
//! MOVED 12 of 30 objects to replica-d (40%, 1/3 expected)
//! EXCLUSIVE 108 reconciles, at most 1 shard inside any object's reconcile at once
//! ```
//!
//! The first `DRAIN` comes from the replicas joining one after the other: `item-00` was
//! assigned while only `replica-a` was live.
//!
//! # RBAC
//!
//! - The sharder: `list`, `watch` and `patch` on the sharded resource and on every owned
//!   resource it labels; `get`, `list`, `watch`, `create` and `update` on `leases`
//!   (`coordination.k8s.io`) in the ring's namespace (the shard Leases it fences, and its
//!   own leader Lease).
//! - A shard: `list`, `watch` (with its label selector) and `get` (confirmations) on the
//!   sharded resource, `patch` on it (acknowledgements), `list`/`watch` on owned resources,
//!   and `get`, `create`, `update`, `patch` on its own Lease (`leases`, `coordination.k8s.io`)
//!   in the ring's namespace — plus whatever its reconcile does.
//!
//! # Failure modes
//!
//! - **The sharder's leader goes away**: another replica's sharder takes over after the
//!   leader election's lease duration; meanwhile nothing moves, new objects stay unassigned
//!   (no shard reconciles them), and every shard keeps reconciling what it has. The new
//!   leader lists everything afresh and waits one shard lease duration before calling any
//!   shard dead (it judges expiry by its own clock, from when it first saw each record).
//! - **A shard crashes or hangs** (no release): its workers stop at its renew deadline; one
//!   lease duration after its last renewal the sharder fences its Lease and moves its
//!   objects straight to the others. The objects are not reconciled in between: about one
//!   lease duration plus the sharder's reaction.
//! - **A shard stops cleanly**: its workers finish the keys in hand, then it releases its
//!   Lease; the sharder fences it and moves its objects at once.
//! - **A shard's Lease is deleted, garbled or taken over** (a cleanup script, `kubectl`):
//!   the shard stops at its next renewal (it finds another holder) or its renew deadline;
//!   the sharder fences the Lease at once but moves the shard's objects only one lease
//!   duration later (nothing in such a record proves the shard stopped). The shard takes its
//!   Lease back once the fence is released and gets its share again through drains.
//! - **An object is deleted and created again under its name** while its shard's watch
//!   lags: the new object goes to the old shard first and is handed over by a drain (the
//!   sharder's tombstones; see [`Sharder`]).
//! - **Someone removes an object's shard label by hand** (with or without the drain label,
//!   mid-drain or not): the sharder treats it as a move from the shard it was on, not as a
//!   new object: back to that shard and drained from there if it is live, fenced and proven
//!   stopped first otherwise (see [`handover`](self#the-pieces-one-file-each)).
//! - **Two processes run with the same shard id** (a StatefulSet pod force-deleted while
//!   its old process runs): not supported; they share one Lease and both reconcile.
//! - **A shard joins**: the sharder drains the objects it should now have from their
//!   shards; each is reconciled by its old shard until that shard acknowledges, then by the
//!   new one, never by both.
//! - **The API server goes away**: shards cannot renew, so they stop reconciling at their
//!   renew deadline (like a leader), and the sharder cannot write. When it comes back the
//!   shards renew (or re-acquire) their Leases and go on: their objects did not move unless
//!   the sharder saw their Leases expire, fenced them and moved the objects first.
//! - **A shard's cache is stale when it comes back** (same id, new process, or cut off from
//!   the server): it reconciles nothing it has not confirmed in its new term (a fresh list
//!   at the term's start, or a GET), see [`handover`](self#the-pieces-one-file-each).
//!
//! The safety argument rests on the leader election's assumptions (see
//! [`membership`](self#the-pieces-one-file-each) and the [`leader_election`]
//! docs): clocks that run at the same rate within `lease_duration - renew_deadline` over a
//! lease duration (their wall-clock skew does not matter: no timestamps are compared), a
//! **reconcile that returns within that margin once its shard's term ends** (the workers
//! are not interrupted; see [`ShardConfig::renew_deadline`]), requests and watch events
//! that land within it (a new sharder leader holds assignments for a fence duration to
//! cover deletions it never saw), and processes — shards and the sharder alike — that are
//! not paused longer than their margin. Only the sharder writes the shard and drain labels.
//! A reconcile may find objects it creates already there during a hand-over (the previous
//! shard made them): treat `AlreadyExists` as success.
//!
//! [`ControllerBuilder::sharded`]: crate::controller::ControllerBuilder::sharded
//! [`leader_election`]: crate::controller::leader_election

mod assignment;
mod handover;
mod membership;
mod ring;
mod shard;
mod sharder;
#[cfg(feature = "webhook")]
mod webhook;

pub use assignment::{score, shard_for, HashKey};
pub use membership::ShardState;
pub use ring::{Ring, DRAIN_LABEL_PREFIX, RING_LABEL, SHARD_LABEL_PREFIX};
pub use shard::ShardConfig;
pub use sharder::{Sharder, SharderConfig, ShardingEvent};
#[cfg(feature = "webhook")]
pub use webhook::shard_assigner;

pub(crate) use shard::bind;
