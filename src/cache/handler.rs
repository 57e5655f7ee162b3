//! Event handlers: what a program registers on an informer to hear about changes.
//!
//! A handler is `FnMut`-like (`&mut self`) and `Send`, never required to be `Sync`: each one
//! runs on its own listener thread. Deletions come as [`DeletedObject`], so a handler cannot
//! forget the tombstone case (a deletion missed while disconnected).

use std::sync::Arc;

use super::delta::DeletedObject;

/// Receives an informer's notifications, one at a time, on the handler's own thread.
///
/// The objects are shared (`Arc`): the cache holds the current ones, and the informer keeps
/// its own reference to an update's old state and to a deleted object until the handler
/// returns, so that their memory is freed on the thread that allocated it. So
/// `Arc::try_unwrap` on them does not succeed; clone what you need to keep or change.
pub trait EventHandler<K>: Send + 'static {
    /// An object appeared. `is_initial_list` is true for objects delivered as part of the
    /// initial list (or the cache contents handed to a handler added later).
    fn on_add(&mut self, obj: Arc<K>, is_initial_list: bool) {
        let _ = (obj, is_initial_list);
    }

    /// An object changed (or, on a resync or relist, was delivered again: `old` may equal
    /// `new`).
    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted.
    fn on_delete(&mut self, obj: DeletedObject<K>) {
        let _ = obj;
    }
}

type AddFn<K> = Box<dyn FnMut(Arc<K>, bool) + Send>;
type UpdateFn<K> = Box<dyn FnMut(Arc<K>, Arc<K>) + Send>;
type DeleteFn<K> = Box<dyn FnMut(DeletedObject<K>) + Send>;

/// A handler built from closures; unset callbacks ignore their events.
///
/// For an informer, start from [`SharedIndexInformer::handler_fns`](super::SharedIndexInformer::handler_fns):
/// it knows the object type, so the closures need no annotations
/// (`informer.add_event_handler(informer.handler_fns().on_add(|pod, _| ...))`). On its own,
/// `HandlerFns` needs the type named once, as below.
///
/// ```
/// use kube_informer::api::DynamicObject;
/// use kube_informer::cache::HandlerFns;
///
/// let handler = HandlerFns::<DynamicObject>::new()
///     .on_add(|pod, _initial| println!("ADD {}", pod.metadata.key()))
///     .on_delete(|gone| println!("DELETE {}", gone.object().metadata.key()));
/// # let _ = handler;
/// ```
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        HandlerFns {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> HandlerFns<K> {
    /// A handler that ignores everything until callbacks are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the add callback.
    pub fn on_add(mut self, f: impl FnMut(Arc<K>, bool) + Send + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the update callback.
    pub fn on_update(mut self, f: impl FnMut(Arc<K>, Arc<K>) + Send + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete callback.
    pub fn on_delete(mut self, f: impl FnMut(DeletedObject<K>) + Send + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for HandlerFns<K> {
    fn on_add(&mut self, obj: Arc<K>, initial: bool) {
        if let Some(f) = &mut self.add {
            f(obj, initial);
        }
    }
    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) {
        if let Some(f) = &mut self.update {
            f(old, new);
        }
    }
    fn on_delete(&mut self, obj: DeletedObject<K>) {
        if let Some(f) = &mut self.delete {
            f(obj);
        }
    }
}

/// Passes on only the objects a predicate accepts, turning moves across the predicate into
/// adds and deletes (client-go's `FilteringResourceEventHandler`): an update whose old state
/// was outside and new state inside is an add; inside to outside is a delete of the old state.
pub struct FilteringHandler<K, F, H> {
    filter: F,
    inner: H,
    _kind: std::marker::PhantomData<fn(K)>,
}

impl<K, F, H> FilteringHandler<K, F, H>
where
    F: Fn(&K) -> bool + Send + 'static,
    H: EventHandler<K>,
{
    /// Wraps `inner` behind `filter`.
    pub fn new(filter: F, inner: H) -> Self {
        FilteringHandler {
            filter,
            inner,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K, F, H> EventHandler<K> for FilteringHandler<K, F, H>
where
    K: Send + Sync + 'static,
    F: Fn(&K) -> bool + Send + 'static,
    H: EventHandler<K>,
{
    fn on_add(&mut self, obj: Arc<K>, initial: bool) {
        if (self.filter)(&obj) {
            self.inner.on_add(obj, initial);
        }
    }
    fn on_update(&mut self, old: Arc<K>, new: Arc<K>) {
        match ((self.filter)(&old), (self.filter)(&new)) {
            (true, true) => self.inner.on_update(old, new),
            (false, true) => self.inner.on_add(new, false),
            (true, false) => self.inner.on_delete(DeletedObject::Object(old)),
            (false, false) => {}
        }
    }
    fn on_delete(&mut self, obj: DeletedObject<K>) {
        if (self.filter)(obj.object()) {
            self.inner.on_delete(obj);
        }
    }
}
