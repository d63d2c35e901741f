//! The load verdict: did one server take the writes?
//!
//! With `n` servers an even share is `1/n`. The verdict compares the busiest
//! server's share with it twice: over the whole run, and per time slice (the
//! median slice). The second matters as much: a timestamp-first key can look
//! fine overall (the hot region moves from server to server as it splits and
//! is balanced) while in every slice one server takes everything.
//!
//! One figure decides, and the verdict prints it: the **load ratio**, the
//! larger of the two shares divided by the even share. Below 1.25 the writes
//! are spread evenly; from 1.25 they are uneven; from 2.0 (one server takes
//! twice its share) it is a hot spot. So the word and the number printed
//! beside it always agree.
//!
//! The verdict also counts writes lost to key collisions: a write whose key
//! an earlier write already rendered overwrites it (two parts with no
//! separator between them, `4`+`12` and `41`+`2`, or a key without a unique
//! part).

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
    /// Writes whose key an earlier write already had: they overwrote it.
    pub collisions: u64,
}

/// From this load ratio on, the writes are uneven.
pub const UNEVEN_RATIO: f64 = 1.25;

/// From this load ratio on, the busiest server is a hot spot.
pub const HOT_SPOT_RATIO: f64 = 2.0;

/// A one-word summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// A load ratio of [`HOT_SPOT_RATIO`] or more.
    HotSpot,
    /// A load ratio of [`UNEVEN_RATIO`] or more.
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
            collisions: 0,
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

    /// The figure the verdict judges: the busiest server's share over the
    /// whole run or in the median slice, whichever is larger, divided by an
    /// even share; and which of the two it is.
    pub fn load_ratio(&self) -> (f64, &'static str) {
        let whole = self.busiest_share / self.even_share;
        let slice = self.median_slice_share() / self.even_share;
        if slice > whole {
            (slice, "median time slice")
        } else {
            (whole, "whole run")
        }
    }

    /// Hot spot, uneven or even, judged on the load ratio as [`Verdict::lines`]
    /// prints it (two decimals): 1.2498 prints as 1.25x, and is uneven, so
    /// the word never disagrees with the figure beside it.
    pub fn spread(&self) -> Spread {
        let (ratio, _) = self.load_ratio();
        let ratio = format!("{ratio:.2}").parse::<f64>().unwrap_or(ratio);
        if self.servers > 1 && ratio >= HOT_SPOT_RATIO {
            Spread::HotSpot
        } else if self.servers > 1 && ratio >= UNEVEN_RATIO {
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
        let (ratio, from) = self.load_ratio();
        let mut lines = vec![
            format!(
                "verdict: {word} ({ratio:.2}x even, {from}): the busiest server (#{}) took {} of {} writes; an even share is {}",
                self.busiest_server,
                pct(self.busiest_share),
                self.total_writes,
                pct(self.even_share),
            ),
            format!(
                "per time slice ({}): the busiest server took {} in the median slice, {} in the worst; {above} slices at 2x even or more",
                self.slice_shares.len(),
                pct(self.median_slice_share()),
                pct(self.worst_slice_share()),
            ),
        ];
        if self.collisions > 0 {
            lines.push(format!(
                "collisions: {} of {} writes LOST: each rendered a key an earlier write had, and overwrote it",
                self.collisions, self.total_writes
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(busiest_share: f64, slice_shares: Vec<f64>) -> Verdict {
        Verdict {
            servers: 4,
            total_writes: 1000,
            busiest_server: 0,
            busiest_share,
            even_share: 0.25,
            slice_shares,
            collisions: 0,
        }
    }

    #[test]
    fn one_ratio_decides_and_is_the_larger_of_run_and_median_slice() {
        let whole = verdict(0.3125, vec![0.30, 0.31, 0.29]);
        assert_eq!(whole.load_ratio(), (1.25, "whole run"));
        assert_eq!(whole.spread(), Spread::Uneven);
        let slice = verdict(0.26, vec![0.30, 0.2875, 0.29]);
        assert_eq!(slice.load_ratio().1, "median time slice");
        assert_eq!(slice.spread(), Spread::Even, "1.16x");
        let hot = verdict(0.26, vec![0.5, 0.6, 1.0]);
        assert_eq!(hot.spread(), Spread::HotSpot);
    }

    /// The word is the one for the ratio printed beside it, also where a
    /// ratio just under a threshold prints as the threshold (1.2498 as 1.25x).
    #[test]
    fn a_ratio_that_prints_as_a_threshold_gets_that_thresholds_word() {
        for (share, word) in [
            (0.312_45, "uneven (1.25x"),
            (0.499_9, "HOT SPOT (2.00x"),
            (0.311_2, "spread evenly (1.24x"),
            (0.26, "spread evenly (1.04x"),
            (0.32, "uneven (1.28x"),
            (0.5, "HOT SPOT (2.00x"),
        ] {
            let lines = verdict(share, vec![share]).lines();
            assert!(
                lines[0].starts_with(&format!("verdict: {word} even, whole run)")),
                "{lines:?}"
            );
        }
    }
}
