//! The cache machinery: indexed store, DeltaFIFO, reflector.
//!
//! The flow is client-go's: a [`Reflector`] lists and watches a resource on its own thread and
//! feeds a [`DeltaFifo`]; a consumer pops each key's deltas and applies them to the
//! [`Store`] (the cache readers query), then notifies handlers.

mod backoff;
mod delta;
mod delta_fifo;
mod reflector;
mod stop;
mod store;

pub use backoff::Backoff;
pub use delta::{key_of, DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType};
pub use delta_fifo::{Closed, DeltaFifo, KnownObjects, DEFAULT_HIGH_WATER};
pub use reflector::{Reflector, ReflectorConfig, WatchErrorHandler};
pub use stop::StopSignal;
pub use store::{namespace_index, IndexFn, Store, NAMESPACE_INDEX};
