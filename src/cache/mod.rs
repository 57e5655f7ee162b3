//! The cache machinery: indexed store, DeltaFIFO, reflector, shared informers, listers.
//!
//! The flow is client-go's: a [`Reflector`] lists and watches a resource on its own thread and
//! feeds a [`DeltaFifo`]; a consumer pops each key's deltas and applies them to the
//! [`Store`] (the cache readers query), then notifies handlers.

mod backoff;
mod catch;
mod delta;
mod delta_fifo;
mod factory;
mod graveyard;
mod handler;
mod health;
mod informer;
#[cfg(all(test, shuttle))]
pub(crate) mod interleavings;
mod listener;
mod lister;
mod reflector;
mod stop;
mod store;

pub use backoff::Backoff;
pub use catch::{PanicHandler, Transform};
pub use delta::{key_of, DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType};
pub use delta_fifo::{Closed, DeltaFifo, KnownObjects, WatchChange, DEFAULT_HIGH_WATER};
pub use factory::{FactoryOptions, InformerScope, Namespaces, SharedInformerFactory, SyncReport};
pub use handler::{EventHandler, FilteringHandler, HandlerFns};
pub use health::{HandlerStats, InformerHealth, LastError, ReflectorStats, RelistCause};
pub use informer::{HandlerRegistration, InformerConfig, NamespaceWatch, SharedIndexInformer};
pub use listener::DEFAULT_MAX_BACKLOG;
pub use lister::Lister;
pub use reflector::{strip_managed_fields, Reflector, ReflectorConfig, WatchErrorHandler};
pub use stop::StopSignal;
pub use store::{namespace_index, IndexFn, Store, NAMESPACE_INDEX};
