//! client-go's leader election gauge, `leader_election_master_status{name}`: 1 while this
//! process leads the Lease `name`, 0 otherwise (read at scrape time).

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::encode::gauges;
use crate::controller::leader_election::ElectorStatus;

/// Every registered elector.
#[derive(Default)]
pub(super) struct Electors {
    sources: Mutex<Vec<(String, ElectorStatus)>>,
}

impl std::fmt::Debug for Electors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Electors").finish_non_exhaustive()
    }
}

impl Electors {
    pub(super) fn add(&self, status: ElectorStatus) {
        let name = status.name();
        let mut sources = self.sources.lock();
        sources.retain(|(n, s)| *n != name && s.standing().is_ok());
        sources.push((name, status));
    }
}

impl Collector for Electors {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows: Vec<_> = self
            .sources
            .lock()
            .iter()
            .map(|(n, s)| ([("name", n.clone())], if s.is_leader() { 1.0 } else { 0.0 }))
            .collect();
        gauges(
            &mut encoder,
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
            rows,
        )
    }
}
