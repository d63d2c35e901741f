//! The load verdict: did one server take the writes?
//!
//! With `n` servers an even share is `1/n`. The verdict compares the busiest
//! server's share with it twice: over the whole run, and per time slice. The
//! second matters more: a timestamp-first key can look fine overall (the hot
//! region moves from server to server as it splits and is balanced) while in
//! every slice one server takes everything.

use crate::placement::Placement;

/// How the writes were spread.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Servers (nodes, partitions).
    pub servers: usize,
    /// Writes counted.
    pub total_writes: u64,
    /// The server that took the most writes overall.
    pub busiest_server: usize,
    /// Its share of all writes.
    pub busiest_share: f64,
    /// `1 / servers`.
    pub even_share: f64,
    /// Per time slice that had writes: the busiest server's share of it.
    pub slice_shares: Vec<f64>,
}

/// A one-word summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// The median slice's busiest server took at least twice an even share.
    HotSpot,
    /// At least 1.25 times an even share.
    Uneven,
    /// Close to even.
    Even,
}

impl Verdict {
    /// The verdict of a simulation.
    pub fn of(placement: &Placement) -> Verdict {
        let per_server = placement.writes_per_server();
        let total: u64 = per_server.iter().sum();
        let (busiest_server, busiest) = per_server
            .iter()
            .enumerate()
            .max_by_key(|(s, w)| (**w, std::cmp::Reverse(*s)))
            .map_or((0, 0), |(s, w)| (s, *w));
        let slice_shares = placement
            .writes
            .iter()
            .filter_map(|tick| {
                let sum: u64 = tick.iter().sum();
                let max = tick.iter().max().copied().unwrap_or(0);
                (sum > 0).then(|| max as f64 / sum as f64)
            })
            .collect();
        Verdict {
            servers: placement.servers,
            total_writes: total,
            busiest_server,
            busiest_share: if total == 0 { 0.0 } else { busiest as f64 / total as f64 },
            even_share: 1.0 / placement.servers.max(1) as f64,
            slice_shares,
        }
    }

    /// The busiest server's share in the median slice.
    pub fn median_slice_share(&self) -> f64 {
        let mut s = self.slice_shares.clone();
        s.sort_by(f64::total_cmp);
        s.get(s.len() / 2).copied().unwrap_or(0.0)
    }

    /// The busiest server's share in the worst slice.
    pub fn worst_slice_share(&self) -> f64 {
        self.slice_shares.iter().copied().fold(0.0, f64::max)
    }

    /// Hot spot, uneven or even, judged on the median slice.
    pub fn spread(&self) -> Spread {
        let ratio = self.median_slice_share() / self.even_share;
        if self.servers > 1 && ratio >= 2.0 {
            Spread::HotSpot
        } else if self.servers > 1 && ratio >= 1.25 {
            Spread::Uneven
        } else {
            Spread::Even
        }
    }

    /// The verdict as the lines the command prints.
    pub fn lines(&self) -> Vec<String> {
        let word = match self.spread() {
            Spread::HotSpot => "HOT SPOT",
            Spread::Uneven => "uneven",
            Spread::Even => "spread evenly",
        };
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let above = self
            .slice_shares
            .iter()
            .filter(|s| **s >= 2.0 * self.even_share && self.servers > 1)
            .count();
        vec![
            format!(
                "verdict: {word}: the busiest server (#{}) took {} of {} writes; an even share is {} ({:.2}x even)",
                self.busiest_server,
                pct(self.busiest_share),
                self.total_writes,
                pct(self.even_share),
                self.busiest_share / self.even_share,
            ),
            format!(
                "per time slice ({}): the busiest server took {} in the median slice, {} in the worst; {above} slices at 2x even or more",
                self.slice_shares.len(),
                pct(self.median_slice_share()),
                pct(self.worst_slice_share()),
            ),
        ]
    }
}
