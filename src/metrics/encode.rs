//! Writing a family of constant samples at scrape time: one descriptor (`# HELP`, `# TYPE`),
//! then one sample per label set. The collectors of this room read the library's own
//! counters (`QueueMetrics`, `InformerHealth`, `ControllerStats`, ...) when scraped, so the
//! hot paths pay nothing for the figures those already keep.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// A counter family (`name` without `_total`: the encoder adds it).
pub(super) fn counters<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in rows {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// A gauge family.
pub(super) fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Seconds as a gauge value.
pub(super) fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}
