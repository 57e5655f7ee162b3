//! Event filters: which updates of an object are worth a reconcile.
//!
//! Why: a controller that writes its object's status is otherwise called again for its own
//! write, and every kubelet heartbeat on an owned Pod reconciles the owner. controller-runtime's
//! predicates (`GenerationChangedPredicate`, ...) and kube-rs's `predicates::generation` exist
//! because this is the first thing every operator author hits. An [`EventFilter`] is given to
//! [`ControllerBuilder::filter`](super::ControllerBuilder::filter) (the primary informer),
//! [`owns_filtered`](super::ControllerBuilder::owns_filtered) and
//! [`watches_filtered`](super::ControllerBuilder::watches_filtered).
//!
//! The rules (what a filter sees, what always passes, the stock filters) are on
//! [`EventFilter`], where users read them.

use std::sync::Arc;

use crate::api::{Meta, Object};

type Judge<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// Decides which updates `(old, new)` of an object pass on to the controller's queue.
///
/// # What a filter sees, and what always passes
///
/// A filter judges **updates only**, as `(old, new)`. These always pass, whatever the filter:
/// - **adds**, the initial list included;
/// - **deletes**, tombstones included (a deletion missed while disconnected): a filter can
///   never lose a delete;
/// - **resyncs**: the informer handing its cached object again (the same object as `old` and
///   `new`), so a resync period set on the informer still reconciles everything.
///
/// A relist (after a watch expired) delivers every listed object as an update from the
/// cached state: one that did not change has the same `resourceVersion` and generation, and
/// is judged like any update ([`resource_version_changed`](EventFilter::resource_version_changed)
/// and [`generation_changed`](EventFilter::generation_changed) drop it). A handler that falls
/// behind past its channel's bound merges an object's pending updates into one (see
/// [`cache`](crate::cache)): the filter then judges the merged update, from the oldest
/// `old` to the newest `new`, so no change is judged away by being merged (a resync merged
/// into a pending update is judged with that update).
///
/// Dropped updates are counted: [`ControllerStats::filtered`](super::ControllerStats::filtered),
/// and `kube_informer_controller_filtered_updates_total` with the `metrics` feature.
///
/// # The stock filters
///
/// | filter | passes an update when | typical use |
/// |---|---|---|
/// | [`generation_changed`](EventFilter::generation_changed) | `metadata.generation` changed (objects without one, such as ConfigMaps, always pass) | skip status-only writes |
/// | [`labels_changed`](EventFilter::labels_changed) | the labels changed | |
/// | [`annotations_changed`](EventFilter::annotations_changed) | the annotations changed | |
/// | [`finalizers_changed`](EventFilter::finalizers_changed) | the finalizers changed | finalizer-driven cleanup |
/// | [`deletion_started`](EventFilter::deletion_started) | `deletionTimestamp` was set by this update | |
/// | [`resource_version_changed`](EventFilter::resource_version_changed) | `resourceVersion` changed | skip relists of unchanged objects |
///
/// Combine them with [`any`](EventFilter::any) / [`or`](EventFilter::or) and
/// [`all`](EventFilter::all) / [`and`](EventFilter::and); calling `filter` twice on a builder
/// requires both. A typical operator filters its primary with
/// `generation_changed().or(labels_changed()).or(deletion_started())`.
///
/// # Example
///
/// ```
/// use kube_informer::api::{DynamicObject, Meta};
/// use kube_informer::controller::EventFilter;
///
/// // Spec changes, label changes, and a replica count set by hand in an annotation.
/// let filter = EventFilter::<DynamicObject>::generation_changed()
///     .or(EventFilter::labels_changed())
///     .or(EventFilter::new(|old: &DynamicObject, new: &DynamicObject| {
///         old.metadata.annotation("example.com/replicas") != new.metadata.annotation("example.com/replicas")
///     }));
/// let obj = |generation: i64, status: &str| -> DynamicObject {
///     serde_json::from_value(serde_json::json!({"metadata": {"name": "web", "generation": generation},
///                                               "status": {"phase": status}})).unwrap()
/// };
/// assert!(!filter.passes(&obj(1, "Pending"), &obj(1, "Running"))); // status only
/// assert!(filter.passes(&obj(1, "Running"), &obj(2, "Running"))); // a spec change
/// ```
pub struct EventFilter<K> {
    judge: Judge<K>,
}

impl<K> Clone for EventFilter<K> {
    fn clone(&self) -> Self {
        EventFilter {
            judge: Arc::clone(&self.judge),
        }
    }
}

impl<K> std::fmt::Debug for EventFilter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventFilter").finish_non_exhaustive()
    }
}

impl<K: Object> EventFilter<K> {
    /// Your own filter: `f(old, new)` returns true when the update should reconcile. It runs
    /// on the informer's handler thread for every update: keep it quick.
    pub fn new(f: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        EventFilter { judge: Arc::new(f) }
    }

    /// True when the update `(old, new)` passes this filter (the filter alone: the
    /// controller lets resyncs pass before asking it).
    pub fn passes(&self, old: &K, new: &K) -> bool {
        (self.judge)(old, new)
    }

    /// `metadata.generation` changed: the spec (or anything else the server versions by
    /// generation) changed, not only the status or metadata. An object without a generation
    /// (ConfigMaps, Secrets, metadata-only views of some resources) always passes: a filter
    /// that cannot tell must not starve the controller.
    pub fn generation_changed() -> Self {
        Self::new(|old: &K, new: &K| {
            let (o, n) = (old.metadata().generation(), new.metadata().generation());
            o.is_none() || n.is_none() || o != n
        })
    }

    /// The labels changed (added, removed or set to another value).
    pub fn labels_changed() -> Self {
        Self::new(|old: &K, new: &K| {
            sorted(old.metadata().labels()) != sorted(new.metadata().labels())
        })
    }

    /// The annotations changed.
    pub fn annotations_changed() -> Self {
        Self::new(|old: &K, new: &K| {
            sorted(old.metadata().annotations()) != sorted(new.metadata().annotations())
        })
    }

    /// The finalizers changed (as a list: order counts; absent and empty are the same).
    pub fn finalizers_changed() -> Self {
        Self::new(|old: &K, new: &K| {
            let f = |o: &K| o.metadata().finalizers().unwrap_or_default().to_vec();
            f(old) != f(new)
        })
    }

    /// The deletion started with this update: `metadata.deletionTimestamp` is set on `new`
    /// and was not on `old` (an object with finalizers being deleted). The final deletion
    /// is a delete event, which always passes.
    pub fn deletion_started() -> Self {
        Self::new(|old: &K, new: &K| {
            !old.metadata().is_being_deleted() && new.metadata().is_being_deleted()
        })
    }

    /// `metadata.resourceVersion` changed: every real change passes; a relist's re-delivery
    /// of an unchanged object does not.
    pub fn resource_version_changed() -> Self {
        Self::new(|old: &K, new: &K| {
            old.metadata().resource_version() != new.metadata().resource_version()
        })
    }

    /// Passes when any of `filters` passes (none: nothing passes).
    pub fn any(filters: impl IntoIterator<Item = EventFilter<K>>) -> Self {
        let all: Vec<EventFilter<K>> = filters.into_iter().collect();
        Self::new(move |old: &K, new: &K| all.iter().any(|f| f.passes(old, new)))
    }

    /// Passes when all of `filters` pass (none: everything passes).
    pub fn all(filters: impl IntoIterator<Item = EventFilter<K>>) -> Self {
        let all: Vec<EventFilter<K>> = filters.into_iter().collect();
        Self::new(move |old: &K, new: &K| all.iter().all(|f| f.passes(old, new)))
    }

    /// Passes when this or `other` passes.
    pub fn or(self, other: EventFilter<K>) -> Self {
        Self::any([self, other])
    }

    /// Passes when this and `other` pass.
    pub fn and(self, other: EventFilter<K>) -> Self {
        Self::all([self, other])
    }
}

fn sorted<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
    let mut v: Vec<_> = pairs.collect();
    v.sort_unstable();
    v
}

/// What a handler does with one update: an update of the same object (a resync) always
/// passes; otherwise the filter, if any, judges it.
pub(super) fn update_passes<K: Object>(
    filter: Option<&EventFilter<K>>,
    old: &Arc<K>,
    new: &Arc<K>,
) -> bool {
    Arc::ptr_eq(old, new) || filter.is_none_or(|f| f.passes(old, new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DynamicObject;
    use serde_json::json;

    fn obj(v: serde_json::Value) -> Arc<DynamicObject> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn stock_filters() {
        let base = json!({"metadata": {"name": "a", "generation": 1, "resourceVersion": "1",
            "labels": {"x": "1", "y": "2"}, "annotations": {"n": "1"}, "finalizers": ["f"]}});
        let with = |path: &str, v: serde_json::Value| {
            let mut o = base.clone();
            *o.pointer_mut(path).unwrap() = v;
            obj(o)
        };
        let old = obj(base.clone());
        type F = EventFilter<DynamicObject>;
        let cases: Vec<(&str, F, Arc<DynamicObject>)> = vec![
            (
                "generation",
                F::generation_changed(),
                with("/metadata/generation", 2.into()),
            ),
            (
                "labels",
                F::labels_changed(),
                with("/metadata/labels", json!({"y": "2", "x": "3"})),
            ),
            (
                "annotations",
                F::annotations_changed(),
                with("/metadata/annotations", json!({})),
            ),
            (
                "finalizers",
                F::finalizers_changed(),
                with("/metadata/finalizers", json!([])),
            ),
            (
                "rv",
                F::resource_version_changed(),
                with("/metadata/resourceVersion", "2".into()),
            ),
        ];
        let same_rv_new_status = {
            let mut o = base.clone();
            o["status"] = json!({"ready": true});
            obj(o)
        };
        for (name, f, changed) in &cases {
            assert!(f.passes(&old, changed), "{name} passes its change");
            assert!(
                !f.passes(&old, &same_rv_new_status),
                "{name} drops a status change"
            );
        }
        // Label order does not count.
        let reordered = with("/metadata/labels", json!({"y": "2", "x": "1"}));
        assert!(!F::labels_changed().passes(&old, &reordered));
        // Deletion started: only the update that sets it.
        let mut deleting = base.clone();
        deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        let deleting = obj(deleting);
        assert!(F::deletion_started().passes(&old, &deleting));
        assert!(!F::deletion_started().passes(&deleting, &deleting));
        // No generation: always passes.
        let cm = obj(json!({"metadata": {"name": "c"}, "data": {"a": "1"}}));
        let cm2 = obj(json!({"metadata": {"name": "c"}, "data": {"a": "2"}}));
        assert!(F::generation_changed().passes(&cm, &cm2));
    }

    #[test]
    fn combinators_and_resyncs() {
        let a = obj(json!({"metadata": {"name": "a", "generation": 1, "labels": {"x": "1"}}}));
        let b = obj(json!({"metadata": {"name": "a", "generation": 1, "labels": {"x": "2"}}}));
        type F = EventFilter<DynamicObject>;
        assert!(F::generation_changed()
            .or(F::labels_changed())
            .passes(&a, &b));
        assert!(!F::generation_changed()
            .and(F::labels_changed())
            .passes(&a, &b));
        assert!(!F::any([]).passes(&a, &b));
        assert!(F::all([]).passes(&a, &b));
        // The same object as old and new is a resync: it passes even a filter that drops all.
        let never = F::new(|_, _| false);
        assert!(update_passes(Some(&never), &a, &a));
        assert!(!update_passes(Some(&never), &a, &b));
        assert!(update_passes::<DynamicObject>(None, &a, &b));
    }
}
