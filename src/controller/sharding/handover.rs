//! The hand-over: how an object changes shards without two shards ever working on it at
//! once.
//!
//! Every object of a ring carries at most two labels: the shard label
//! (`shard.sharding.kube-informer.io/<ring>: <shard>`) and, while it is being handed over,
//! the drain label (`drain.sharding.kube-informer.io/<ring>: "true"`). The sharder decides;
//! shards only ever remove labels (their acknowledgement). Every write is a JSON patch whose
//! `test` operations make it a compare-and-swap: it applies only to the state it was decided
//! on, and fails (422) otherwise, to be decided again from fresher data.
//!
//! # The sharder's rule for one object ([`plan`])
//!
//! - **unassigned**, some shard live: *assign* it to its target (patch: `test` the object's
//!   `resourceVersion`, set the shard label, drop a stray drain label).
//! - **on a live shard A** that is its target: nothing.
//! - **on a live shard A** that is not its target: *drain* it (patch: `test` the shard label
//!   is still A, add the drain label), then wait. A's worker, holding the object's key (so no
//!   reconcile of it runs on A), *acknowledges*: it removes both labels (patch: `test` both
//!   are still A and `"true"`). The object is then unassigned, and the sharder assigns it to
//!   its target B. A never reconciles it again: A's cache holds the drained version or
//!   nothing (the object left A's label selector), and a drained object is acknowledged,
//!   never reconciled.
//! - **on a shard A that is not live** (expired, released, nonsense): *fence* A's Lease
//!   first — a compare-and-swap write of the Lease record the sharder judged, making the
//!   sharder its holder for a while — then *move* the object straight to its target (patch:
//!   `test` the shard label is still A, replace it, drop the drain label). The fence's
//!   success proves that A did not renew since the judged record (an expired A has stopped
//!   working by then, see [`membership`](super::membership); a released A stopped before it
//!   released), and A cannot take its Lease back while the fence holds. The sharder moves
//!   objects only during the first half of the fence's duration (renewing it if it needs
//!   longer) and releases it when A has no objects left.
//!
//! # The shard's rule for one key ([`gate`])
//!
//! A shard's worker, before calling the user's reconcile with a key, looks the object up in
//! its own cache:
//! - not there, or not labelled with this shard: **skip** (it is not this shard's, or it is
//!   gone: sharded controllers clean up deleted objects with a finalizer, which keeps them,
//!   and so their shard, until the clean-up is done);
//! - drained: **acknowledge** (above), never reconcile;
//! - labelled with this shard: **reconcile**, once the object is *confirmed* for the current
//!   term. A term of the shard's Lease starts with a fresh (quorum) list of the objects
//!   labelled with the shard; those are confirmed. Any other object is confirmed by a quorum
//!   GET before its first reconcile in the term. Why: a shard coming back (a new process with
//!   the same id, or one whose Lease was fenced while it was cut off) may hold a cache from
//!   before the sharder moved its objects away; within a term, objects leave a shard only
//!   through its own acknowledgement, so a confirmation holds for the rest of the term.
//!
//! These rules are checked by a model-based test over random schedules of joins, crashes,
//! hangs, clean stops, stale caches on both sides, sharder fail-overs and fences
//! (`model` below), and over real HTTP by `tests/sharding.rs`.

use super::ring::Ring;
use crate::client::{pointer, PatchOperation};

/// What the sharder does next with one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// Nothing: it is where it belongs, or there is nowhere to put it.
    Keep,
    /// Unassigned: assign it to this shard.
    Assign(&'a str),
    /// On a live shard that is not its target: ask that shard to let go.
    Drain(&'a str),
    /// Drained; its live shard has not acknowledged yet.
    Wait,
    /// On a shard that is not live: fence that shard's Lease, then move it to the target
    /// (`None`: no shard is live; it is unassigned).
    Move { from: &'a str, to: Option<&'a str> },
}

/// The sharder's rule (see the module docs): the object is on `shard` (its label, `None` when
/// unlabelled or empty), `draining` when it has the drain label, and belongs on `target`.
pub(crate) fn plan<'a>(
    shard: Option<&'a str>,
    draining: bool,
    target: Option<&'a str>,
    live: impl Fn(&str) -> bool,
) -> Step<'a> {
    match shard {
        None => match target {
            Some(b) => Step::Assign(b),
            None => Step::Keep,
        },
        Some(a) if live(a) => {
            if target == Some(a) {
                Step::Keep
            } else if draining {
                Step::Wait
            } else {
                Step::Drain(a)
            }
        }
        Some(a) => Step::Move {
            from: a,
            to: target,
        },
    }
}

/// What a shard's worker does with a key (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Not this shard's (or gone): nothing.
    Skip,
    /// Drained: remove both labels.
    Acknowledge,
    /// This shard's: reconcile (once confirmed for the term).
    Reconcile,
}

/// The shard's rule for its cached view of an object: its shard label and drain label.
pub(crate) fn gate(shard: Option<&str>, draining: bool, me: &str) -> Gate {
    match shard {
        Some(s) if s == me && draining => Gate::Acknowledge,
        Some(s) if s == me => Gate::Reconcile,
        _ => Gate::Skip,
    }
}

fn label_path(key: &str) -> String {
    pointer(&["metadata", "labels", key])
}

/// Assigns an unassigned object: only if it is still at `resource_version`.
pub(crate) fn assign_ops(
    ring: &Ring,
    resource_version: &str,
    has_labels: bool,
    draining: bool,
    to: &str,
) -> Vec<PatchOperation> {
    let mut ops = vec![PatchOperation::test(
        "/metadata/resourceVersion",
        resource_version,
    )];
    if has_labels {
        ops.push(PatchOperation::add(&label_path(&ring.shard_label()), to));
        if draining {
            ops.push(PatchOperation::remove(&label_path(&ring.drain_label())));
        }
    } else {
        let mut labels = serde_json::Map::new();
        labels.insert(ring.shard_label(), to.into());
        ops.push(PatchOperation::add("/metadata/labels", labels));
    }
    ops
}

/// Asks `from` to let go of the object: only if it is still on `from`.
pub(crate) fn drain_ops(ring: &Ring, from: &str) -> Vec<PatchOperation> {
    vec![
        PatchOperation::test(&label_path(&ring.shard_label()), from),
        PatchOperation::add(&label_path(&ring.drain_label()), "true"),
    ]
}

/// Moves the object off the fenced shard `from` (to `to`, or unassigned): only if it is
/// still on `from`.
pub(crate) fn move_ops(
    ring: &Ring,
    from: &str,
    to: Option<&str>,
    draining: bool,
) -> Vec<PatchOperation> {
    let shard = label_path(&ring.shard_label());
    let mut ops = vec![PatchOperation::test(&shard, from)];
    match to {
        Some(to) => ops.push(PatchOperation::replace(&shard, to)),
        None => ops.push(PatchOperation::remove(&shard)),
    }
    if draining {
        ops.push(PatchOperation::remove(&label_path(&ring.drain_label())));
    }
    ops
}

/// The shard's acknowledgement: removes both labels, only if they still say `me` and
/// `drain` (the drain label's value as seen; the sharder writes `"true"`).
pub(crate) fn acknowledge_ops(ring: &Ring, me: &str, drain: &str) -> Vec<PatchOperation> {
    let (shard, drain_path) = (
        label_path(&ring.shard_label()),
        label_path(&ring.drain_label()),
    );
    vec![
        PatchOperation::test(&shard, me),
        PatchOperation::test(&drain_path, drain),
        PatchOperation::remove(&drain_path),
        PatchOperation::remove(&shard),
    ]
}

/// Relabels an object the controller owns (no hand-over: shards do not reconcile owned
/// objects, they only cache them): from the shard label `from` to `to`.
pub(crate) fn relabel_ops(
    ring: &Ring,
    resource_version: &str,
    has_labels: bool,
    from: Option<&str>,
    to: Option<&str>,
) -> Vec<PatchOperation> {
    let shard = label_path(&ring.shard_label());
    match (from, to) {
        (None, Some(to)) => assign_ops(ring, resource_version, has_labels, false, to),
        (Some(from), Some(to)) => vec![
            PatchOperation::test(&shard, from),
            PatchOperation::replace(&shard, to),
        ],
        (Some(from), None) => vec![
            PatchOperation::test(&shard, from),
            PatchOperation::remove(&shard),
        ],
        (None, None) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sharders_rule() {
        let live = |s: &str| s != "dead";
        assert_eq!(plan(None, false, Some("b"), live), Step::Assign("b"));
        assert_eq!(plan(None, true, Some("b"), live), Step::Assign("b"));
        assert_eq!(plan(None, false, None, live), Step::Keep);
        assert_eq!(plan(Some("a"), false, Some("a"), live), Step::Keep);
        assert_eq!(plan(Some("a"), true, Some("a"), live), Step::Keep);
        assert_eq!(plan(Some("a"), false, Some("b"), live), Step::Drain("a"));
        assert_eq!(plan(Some("a"), true, Some("b"), live), Step::Wait);
        assert_eq!(
            plan(Some("dead"), true, Some("b"), live),
            Step::Move {
                from: "dead",
                to: Some("b")
            }
        );
        assert_eq!(
            plan(Some("dead"), false, None, live),
            Step::Move {
                from: "dead",
                to: None
            }
        );
    }

    #[test]
    fn the_shards_rule() {
        assert_eq!(gate(Some("a"), false, "a"), Gate::Reconcile);
        assert_eq!(gate(Some("a"), true, "a"), Gate::Acknowledge);
        assert_eq!(gate(Some("b"), false, "a"), Gate::Skip);
        assert_eq!(gate(Some("b"), true, "a"), Gate::Skip);
        assert_eq!(gate(None, true, "a"), Gate::Skip);
    }

    #[test]
    fn patches_test_what_they_were_decided_on() {
        let ring = Ring::new("w", "ns").unwrap();
        let json = |ops: Vec<PatchOperation>| serde_json::to_string(&ops).unwrap();
        assert_eq!(
            json(assign_ops(&ring, "7", false, false, "b")),
            r#"[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/labels","value":{"shard.sharding.kube-informer.io/w":"b"}}]"#
        );
        assert_eq!(
            json(acknowledge_ops(&ring, "a", "true")),
            r#"[{"op":"test","path":"/metadata/labels/shard.sharding.kube-informer.io~1w","value":"a"},{"op":"test","path":"/metadata/labels/drain.sharding.kube-informer.io~1w","value":"true"},{"op":"remove","path":"/metadata/labels/drain.sharding.kube-informer.io~1w"},{"op":"remove","path":"/metadata/labels/shard.sharding.kube-informer.io~1w"}]"#
        );
        assert!(relabel_ops(&ring, "1", true, None, None).is_empty());
    }
}

/// The hand-over as a model: random schedules of everything that can happen, checked for
/// "at no moment do two shards reconcile one object", then settled and checked for
/// convergence to the assignment.
#[cfg(test)]
mod model {
    use super::*;
    use crate::controller::sharding::assignment::shard_for;
    use std::collections::HashSet;

    const SHARDS: [&str; 4] = ["s0", "s1", "s2", "s3"];
    const OBJECTS: usize = 6;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Obj {
        shard: Option<usize>,
        drain: bool,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Holder {
        Nobody,
        Itself,
        /// Fenced by the sharder's incarnation n.
        Fence(u64),
    }

    #[derive(Clone, Copy, Debug)]
    struct LeaseRec {
        holder: Holder,
        /// Its holder stopped renewing and a lease duration passed (time, not a write: the
        /// version stays).
        expired: bool,
    }

    struct ShardProc {
        up: bool,
        term: bool,
        /// Per object: how far into the object's history the shard's watch has got.
        cache: Vec<usize>,
        confirmed: HashSet<usize>,
        reconciling: HashSet<usize>,
    }

    struct World {
        rng: u64,
        /// Every version of every object (the last is the server's).
        objects: Vec<Vec<Obj>>,
        /// Every version of every shard Lease.
        leases: Vec<Vec<LeaseRec>>,
        shards: Vec<ShardProc>,
        incarnation: u64,
        /// The sharder's views: indexes into the histories.
        obj_view: Vec<usize>,
        lease_view: Vec<usize>,
        /// Fences this incarnation holds and may still move under: shard -> lease version.
        fences: Vec<Option<usize>>,
        reconciles: u64,
        log: Vec<String>,
    }

    impl World {
        fn new(seed: u64) -> World {
            World {
                rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
                objects: vec![
                    vec![Obj {
                        shard: None,
                        drain: false
                    }];
                    OBJECTS
                ],
                leases: vec![
                    vec![LeaseRec {
                        holder: Holder::Nobody,
                        expired: false
                    }];
                    SHARDS.len()
                ],
                shards: (0..SHARDS.len())
                    .map(|_| ShardProc {
                        up: false,
                        term: false,
                        cache: vec![0; OBJECTS],
                        confirmed: HashSet::new(),
                        reconciling: HashSet::new(),
                    })
                    .collect(),
                incarnation: 0,
                obj_view: vec![0; OBJECTS],
                lease_view: vec![0; SHARDS.len()],
                fences: vec![None; SHARDS.len()],
                reconciles: 0,
                log: Vec::new(),
            }
        }

        fn rand(&mut self, n: usize) -> usize {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            (self.rng % n as u64) as usize
        }

        fn obj(&self, x: usize) -> Obj {
            *self.objects[x].last().unwrap()
        }

        fn lease(&self, s: usize) -> LeaseRec {
            *self.leases[s].last().unwrap()
        }

        fn write_obj(&mut self, x: usize, o: Obj) {
            self.objects[x].push(o);
        }

        fn write_lease(&mut self, s: usize, l: LeaseRec) {
            self.leases[s].push(l);
        }

        fn key(x: usize) -> String {
            format!("ns/obj-{x}")
        }

        /// The sharder's judgement of shard `s` from its view: live when held by itself and
        /// not known to be expired. A stale view may be judged expired (time passed; the
        /// compare-and-swap of the fence decides).
        fn sharder_live(&self, s: usize) -> bool {
            let v = self.lease_view[s];
            let rec = self.leases[s][v];
            let stale = v + 1 < self.leases[s].len();
            rec.holder == Holder::Itself && !rec.expired && !(stale && self.coin_for(s))
        }

        /// A fixed per-(shard, view) choice, so one pass judges consistently.
        fn coin_for(&self, s: usize) -> bool {
            (self.rng >> (s + 3)) & 1 == 1
        }

        fn live_view(&self) -> Vec<&'static str> {
            (0..SHARDS.len())
                .filter(|&s| self.sharder_live(s))
                .map(|s| SHARDS[s])
                .collect()
        }

        // --- the sharder -------------------------------------------------------------

        fn sharder_object(&mut self, x: usize) {
            let view = self.objects[x][self.obj_view[x]];
            let stale = self.obj_view[x] + 1 < self.objects[x].len();
            let live = self.live_view();
            let key = Self::key(x);
            let target = shard_for(&key, &live);
            let current = view.shard.map(|s| SHARDS[s]);
            let idx = |name: &str| SHARDS.iter().position(|s| *s == name).unwrap();
            match plan(current, view.drain, target, |s| live.contains(&s)) {
                Step::Keep | Step::Wait => {}
                Step::Assign(b) => {
                    // Compare-and-swap on the object's version.
                    if !stale {
                        self.write_obj(
                            x,
                            Obj {
                                shard: Some(idx(b)),
                                drain: false,
                            },
                        );
                        self.log.push(format!("assign {x} -> {b}"));
                    }
                }
                Step::Drain(a) => {
                    let now = self.obj(x);
                    if now.shard == Some(idx(a)) {
                        self.write_obj(
                            x,
                            Obj {
                                shard: now.shard,
                                drain: true,
                            },
                        );
                        self.log.push(format!("drain {x} from {a}"));
                    }
                }
                Step::Move { from, to } => {
                    let a = idx(from);
                    if self.fences[a].is_none() {
                        // Fence: compare-and-swap on the Lease version judged.
                        let v = self.lease_view[a];
                        if v + 1 == self.leases[a].len() {
                            self.write_lease(
                                a,
                                LeaseRec {
                                    holder: Holder::Fence(self.incarnation),
                                    expired: false,
                                },
                            );
                            self.fences[a] = Some(self.leases[a].len() - 1);
                            self.lease_view[a] = self.leases[a].len() - 1;
                            self.log.push(format!("fence {from}"));
                        }
                        return;
                    }
                    let now = self.obj(x);
                    if now.shard == Some(a) {
                        self.write_obj(
                            x,
                            Obj {
                                shard: to.map(idx),
                                drain: false,
                            },
                        );
                        self.log.push(format!("move {x} {from} -> {to:?}"));
                    }
                }
            }
        }

        fn sharder_release_fence(&mut self, s: usize) {
            if let Some(v) = self.fences[s] {
                if v + 1 == self.leases[s].len() {
                    self.write_lease(
                        s,
                        LeaseRec {
                            holder: Holder::Nobody,
                            expired: false,
                        },
                    );
                    self.log.push(format!("release fence {}", SHARDS[s]));
                }
                self.fences[s] = None;
            }
        }

        /// Time passes on a fence: the sharder stops moving under it first (it moves only
        /// in the first half), then the shard may call it expired.
        fn fence_times_out(&mut self, s: usize) {
            let rec = self.lease(s);
            if let Holder::Fence(_) = rec.holder {
                if let Some(v) = self.fences[s] {
                    if v + 1 == self.leases[s].len() {
                        self.fences[s] = None;
                    }
                }
                let last = self.leases[s].last_mut().unwrap();
                last.expired = true;
            }
        }

        fn sharder_fails_over(&mut self) {
            self.incarnation += 1;
            self.fences = vec![None; SHARDS.len()];
            self.log.push("sharder fail-over".into());
        }

        // --- the shards --------------------------------------------------------------

        fn shard_acquires(&mut self, s: usize) {
            let p = &self.shards[s];
            if !p.up || p.term {
                return;
            }
            let rec = self.lease(s);
            let can = match rec.holder {
                Holder::Nobody | Holder::Itself => true,
                Holder::Fence(_) => rec.expired,
            };
            if !can {
                return;
            }
            self.write_lease(
                s,
                LeaseRec {
                    holder: Holder::Itself,
                    expired: false,
                },
            );
            // The term's first act: a quorum list of the shard's objects.
            let confirmed = (0..OBJECTS)
                .filter(|&x| {
                    let o = self.obj(x);
                    o.shard == Some(s) && !o.drain
                })
                .collect();
            let p = &mut self.shards[s];
            p.term = true;
            p.confirmed = confirmed;
            self.log.push(format!("{} acquires", SHARDS[s]));
        }

        fn shard_renews(&mut self, s: usize) {
            if self.shards[s].term && self.lease(s).holder == Holder::Itself {
                self.write_lease(
                    s,
                    LeaseRec {
                        holder: Holder::Itself,
                        expired: false,
                    },
                );
            }
        }

        /// The term ends (renewals failing, or stop); workers return before anyone can call
        /// the Lease expired (the timing assumption of the membership docs).
        fn end_term(&mut self, s: usize) {
            let p = &mut self.shards[s];
            p.term = false;
            p.reconciling.clear();
        }

        fn shard_hangs(&mut self, s: usize) {
            self.end_term(s);
            if self.lease(s).holder == Holder::Itself {
                self.leases[s].last_mut().unwrap().expired = true;
            }
            self.log.push(format!("{} hangs", SHARDS[s]));
        }

        fn shard_crashes(&mut self, s: usize) {
            self.shard_hangs(s);
            self.shards[s].up = false;
            self.log.push(format!("{} crashes", SHARDS[s]));
        }

        fn shard_stops(&mut self, s: usize) {
            self.end_term(s);
            self.shards[s].up = false;
            if self.lease(s).holder == Holder::Itself {
                self.write_lease(
                    s,
                    LeaseRec {
                        holder: Holder::Nobody,
                        expired: false,
                    },
                );
            }
            self.log.push(format!("{} stops", SHARDS[s]));
        }

        fn cached(&self, s: usize, x: usize) -> Obj {
            self.objects[x][self.shards[s].cache[x]]
        }

        fn shard_works(&mut self, s: usize, x: usize) {
            if !self.shards[s].term || self.shards[s].reconciling.contains(&x) {
                return;
            }
            let c = self.cached(s, x);
            let me = SHARDS[s];
            match gate(c.shard.map(|i| SHARDS[i]), c.drain, me) {
                Gate::Skip => {}
                Gate::Acknowledge => {
                    let now = self.obj(x);
                    if now.shard == Some(s) && now.drain {
                        self.write_obj(
                            x,
                            Obj {
                                shard: None,
                                drain: false,
                            },
                        );
                        self.log.push(format!("{me} acknowledges {x}"));
                    }
                }
                Gate::Reconcile => {
                    if !self.shards[s].confirmed.contains(&x) {
                        let now = self.obj(x);
                        if now.shard == Some(s) && !now.drain {
                            self.shards[s].confirmed.insert(x);
                        } else {
                            return;
                        }
                    }
                    for (o, other) in self.shards.iter().enumerate() {
                        assert!(
                            o == s || !other.reconciling.contains(&x),
                            "{} and {} reconcile object {x} at once; log:\n{}",
                            SHARDS[o],
                            me,
                            self.log.join("\n")
                        );
                    }
                    self.shards[s].reconciling.insert(x);
                    self.reconciles += 1;
                    self.log.push(format!("{me} reconciles {x}"));
                }
            }
        }

        fn step(&mut self) {
            let s = self.rand(SHARDS.len());
            let x = self.rand(OBJECTS);
            match self.rand(22) {
                0..=3 => self.sharder_object(x),
                4 => self.sharder_release_fence(s),
                5 => self.fence_times_out(s),
                6 if self.rand(8) == 0 => self.sharder_fails_over(),
                7 => self.obj_view[x] = (self.obj_view[x] + 1).min(self.objects[x].len() - 1),
                8 => self.obj_view[x] = self.objects[x].len() - 1,
                9 => self.lease_view[s] = self.leases[s].len() - 1,
                10 => {
                    if !self.shards[s].up {
                        self.shards[s].up = true;
                        self.log.push(format!("{} starts", SHARDS[s]));
                    }
                }
                11 => self.shard_acquires(s),
                12 => self.shard_renews(s),
                13 if self.rand(4) == 0 => self.shard_hangs(s),
                14 if self.rand(4) == 0 => self.shard_crashes(s),
                15 if self.rand(4) == 0 => self.shard_stops(s),
                16 | 17 => {
                    let c = &mut self.shards[s].cache[x];
                    *c = (*c + 1).min(self.objects[x].len() - 1);
                }
                18 => self.shards[s].cache[x] = self.objects[x].len() - 1,
                19 | 20 => self.shard_works(s, x),
                _ => {
                    self.shards[s].reconciling.remove(&x);
                }
            }
        }

        /// No more faults: time passes, views and caches catch up, everyone does their part
        /// until nothing changes; then every object is on its target among the live shards.
        fn settle(&mut self) {
            for s in 0..SHARDS.len() {
                if !self.shards[s].up {
                    self.shard_crashes(s); // down shards' Leases run out
                }
                self.shards[s].reconciling.clear();
            }
            for _round in 0..50 {
                let before = (
                    self.objects.iter().map(Vec::len).sum::<usize>(),
                    self.leases.iter().map(Vec::len).sum::<usize>(),
                );
                for s in 0..SHARDS.len() {
                    self.lease_view[s] = self.leases[s].len() - 1;
                    if self.fences[s].is_some()
                        && (0..OBJECTS).all(|x| self.obj(x).shard != Some(s))
                    {
                        self.sharder_release_fence(s);
                    }
                    if let Holder::Fence(_) = self.lease(s).holder {
                        if self.fences[s].is_none() {
                            self.fence_times_out(s);
                        }
                    }
                    self.shard_acquires(s);
                    self.lease_view[s] = self.leases[s].len() - 1;
                }
                for x in 0..OBJECTS {
                    self.obj_view[x] = self.objects[x].len() - 1;
                    self.sharder_object(x);
                    for s in 0..SHARDS.len() {
                        self.shards[s].cache[x] = self.objects[x].len() - 1;
                        self.shard_works(s, x);
                        self.shards[s].reconciling.remove(&x);
                    }
                }
                let after = (
                    self.objects.iter().map(Vec::len).sum::<usize>(),
                    self.leases.iter().map(Vec::len).sum::<usize>(),
                );
                if after == before {
                    break;
                }
            }
            let live: Vec<&str> = (0..SHARDS.len())
                .filter(|&s| self.shards[s].term)
                .map(|s| SHARDS[s])
                .collect();
            for x in 0..OBJECTS {
                let o = self.obj(x);
                let want = shard_for(&Self::key(x), &live);
                assert_eq!(
                    (o.shard.map(|s| SHARDS[s]), o.drain),
                    (want, false),
                    "object {x} did not converge (live {live:?}); log:\n{}",
                    self.log.join("\n")
                );
            }
        }
    }

    #[test]
    fn random_schedules_never_reconcile_one_object_twice_at_once() {
        let seeds: u64 = std::env::var("SHARDING_MODEL_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3_000);
        let mut reconciles = 0;
        for seed in 0..seeds {
            let mut w = World::new(seed);
            for _ in 0..400 {
                w.step();
            }
            w.settle();
            reconciles += w.reconciles;
        }
        assert!(
            reconciles > seeds,
            "the schedules reconciled too little to mean anything"
        );
    }
}
