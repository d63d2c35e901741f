//! Latency of each operation, kept whole and summarised as percentiles.
//!
//! A throughput figure hides stalls: a store that answers most reads in 20 µs
//! and one in a thousand in 20 ms averages well. YCSB reports percentiles per
//! operation type; so does this harness. Every latency is kept (8 bytes per
//! operation: 8 MB for a million inserts), so a percentile is exact, not
//! read off histogram buckets.

use std::time::Duration;

/// The latencies of one kind of operation.
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    nanos: Vec<u64>,
}

/// A few percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl Latencies {
    /// Records one operation.
    pub fn record(&mut self, took: Duration) {
        self.nanos.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.nanos.len() as u64
    }

    /// The 50th, 99th and 99.9th percentiles by nearest rank (the smallest
    /// latency that at least that share of operations did not exceed).
    pub fn percentiles(&mut self) -> Percentiles {
        self.nanos.sort_unstable();
        let at = |q: f64| -> f64 {
            let n = self.nanos.len();
            if n == 0 {
                return 0.0;
            }
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            self.nanos.get(rank - 1).copied().unwrap_or(0) as f64 / 1000.0
        };
        Percentiles {
            p50: at(0.50),
            p99: at(0.99),
            p999: at(0.999),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_ranks() {
        let mut l = Latencies::default();
        // 1..=1000 µs, recorded out of order.
        for us in (1..=1000u64).rev() {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.count(), 1000);
        assert_eq!(
            l.percentiles(),
            Percentiles {
                p50: 500.0,
                p99: 990.0,
                p999: 999.0
            }
        );
        assert_eq!(Latencies::default().percentiles(), Percentiles::default());
    }
}
