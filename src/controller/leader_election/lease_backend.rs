//! `LeaseBackend`: where the elector's Lease record lives, behind the four requests the
//! elector makes (read, create, replace, and the release's replace); `ApiBackend`, the
//! Lease on the API server.
//!
//! Why a trait: the interleaving checks (`controller/interleavings.rs`, `--cfg shuttle`)
//! run the real elector against a Lease kept in memory with the API server's 404 and 409
//! rules; everything else uses `ApiBackend`. The release has a request of its own because it
//! is cut by its own token (after `release_timeout`), not by the stop that cuts the others.

use crate::client::{Api, PostParams};
use crate::controller::lease::Lease;
use crate::error::Result;

/// Where the record lives: the API server (through [`Api`]), or, in the interleaving
/// checks, memory.
pub(crate) trait LeaseBackend: Send + 'static {
    /// Reads the Lease.
    fn get(&self) -> Result<Lease>;
    /// Creates it.
    fn create(&self, lease: &Lease) -> Result<Lease>;
    /// Replaces it (409 when its `resourceVersion` is stale).
    fn replace(&self, lease: &Lease) -> Result<Lease>;
    /// Replaces it to release it: cut by [`LeaderElector::stop`](super::LeaderElector::stop)
    /// after `release_timeout` instead of at once.
    fn release(&self, lease: &Lease) -> Result<Lease>;
}

/// The Lease on the API server.
pub(super) struct ApiBackend {
    pub(super) name: String,
    pub(super) api: Api<Lease>,
    pub(super) release_api: Api<Lease>,
}

impl LeaseBackend for ApiBackend {
    fn get(&self) -> Result<Lease> {
        self.api.get(&self.name)
    }
    fn create(&self, lease: &Lease) -> Result<Lease> {
        self.api.create(&PostParams::default(), lease)
    }
    fn replace(&self, lease: &Lease) -> Result<Lease> {
        self.api.replace(&self.name, &PostParams::default(), lease)
    }
    fn release(&self, lease: &Lease) -> Result<Lease> {
        self.release_api
            .replace(&self.name, &PostParams::default(), lease)
    }
}
