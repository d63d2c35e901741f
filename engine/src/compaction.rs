//! Compaction: merging table files to drop what no reader can see.
//!
//! Every flush adds a *run* (one sorted file). Reads get slower and space grows
//! with every run, because old versions and tombstones pile up. Compaction
//! merges several runs into one, dropping the entries no reader can see.
//!
//! * **Minor** compaction is automatic and *size-tiered*: when enough runs of
//!   similar size sit side by side (in age order), they are merged. Merging
//!   similar sizes keeps the cost per byte logarithmic; merging only neighbours
//!   keeps the runs ordered by age, which point reads rely on to stop early.
//! * **Major** compaction merges every run of a family into one run, split into
//!   files of the target size.
//!
//! Which runs to merge is decided by [`choose`], a pure function of run sizes,
//! so the policy is tested without any I/O. [`Compactor`] decides, entry by
//! entry, what survives.
//!
//! A *bottommost* compaction (one whose inputs include the oldest run) also
//! writes as 0 every sequence number up to its horizon: nothing older exists
//! to order against, every reader of the new version sees all of it, and the
//! compacted run's keys then differ from their neighbours only where the
//! cells do. A later sequence number (a write not yet visible when the work
//! began) keeps its value, so no snapshot sees that write early.

use std::ops::Range;

use crate::error::Result;
use crate::key;
use crate::memtable::Memtable;
use crate::options::FamilyOptions;
use crate::output::TableOutput;
use crate::visibility::{Verdict, Visibility};

/// The largest number of runs one minor compaction merges.
pub const MAX_RUNS_PER_COMPACTION: usize = 32;

/// The runs to merge, as a range of indexes into `run_sizes` (newest first),
/// or `None`. Runs are grouped with their neighbours while each new run is
/// within half to twice the average size of the group so far (Cassandra's
/// size-tiered buckets); the first group of at least `trigger` runs wins.
/// A trigger of 0 turns automatic compaction off.
pub fn choose(run_sizes: &[u64], trigger: usize) -> Option<Range<usize>> {
    if trigger == 0 {
        return None;
    }
    let trigger = trigger.max(2);
    for start in 0..run_sizes.len() {
        let mut end = start + 1;
        let mut total = run_sizes.get(start).copied().unwrap_or(0);
        while let Some(&size) = run_sizes.get(end) {
            let average = total / (end - start) as u64;
            if size.saturating_mul(2) < average
                || size > average.saturating_mul(2)
                || end - start >= MAX_RUNS_PER_COMPACTION
            {
                break;
            }
            total += size;
            end += 1;
        }
        if end - start >= trigger {
            return Some(start..end);
        }
    }
    None
}

/// What a flush or a compaction keeps, decided one entry at a time over its
/// merged inputs (cell order: row, column, newest first) by the one
/// visibility rule ([`Visibility`]).
///
/// Only entries that no reader of the *new* version can see are dropped.
/// Older snapshots keep reading the inputs (a flushed memtable, or input files
/// that stay on disk until the last snapshot listing them is dropped), so they
/// need nothing from the output. Every reader of the new version reads at a
/// sequence number at or above `horizon` (the sequence visible when the work
/// started), so the rule is applied as a reader at `horizon` would apply it.
pub(crate) struct Compactor {
    rule: Visibility,
    bottommost: bool,
}

impl Compactor {
    /// `bottommost`: the inputs include the family's oldest run, so no older
    /// entry exists anywhere else.
    pub fn new(horizon: u64, max_versions: u32, expire_before: u64, bottommost: bool) -> Compactor {
        Compactor {
            rule: Visibility::new(horizon, max_versions, expire_before),
            bottommost,
        }
    }

    /// Whether the entry with this key goes to the output.
    pub fn keep(&mut self, entry_key: &[u8]) -> bool {
        if key::suffix(entry_key).is_none() {
            // Not an internal key: keep it, so compaction never loses bytes it does not understand.
            return true;
        }
        match self.rule.judge(entry_key) {
            // Seen by readers at the horizon, or written after it (a reader
            // between the two must still find it, and what it would hide).
            Verdict::Visible | Verdict::Unwritten => true,
            // A deletion is dropped only when nothing older exists outside the
            // inputs (bottommost: whatever it hides in the inputs is dropped
            // here too). An expired one is already `Hidden`: everything it
            // could hide has expired with it.
            Verdict::Deletion => !self.bottommost,
            // Hidden by a deletion, replaced by a later write with the same
            // timestamp, beyond max_versions, or expired: no reader sees it.
            Verdict::Hidden => false,
        }
    }
}

/// Writes a frozen memtable to `out`, without the versions no reader of the
/// new version can see (a cell overwritten in the memtable is written once).
/// A flush is a compaction of one memtable, never bottommost: older files may
/// hold what its deletions hide. Snapshots taken before keep reading the
/// memtable itself.
pub(crate) fn flush_memtable(
    memtable: &Memtable,
    options: &FamilyOptions,
    horizon: u64,
    now_ms: u64,
    out: &mut TableOutput<'_>,
) -> Result<()> {
    let mut compactor = Compactor::new(horizon, options.max_versions, options.expire_before(now_ms), false);
    for (k, value) in memtable.iter() {
        if compactor.keep(&k) {
            out.add(&k, &value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_neighbours_are_merged_once_there_are_enough() {
        assert_eq!(choose(&[10, 10, 10], 4), None);
        assert_eq!(choose(&[10, 11, 9, 10], 4), Some(0..4));
        // A big old run is left out of a group of small new ones.
        assert_eq!(choose(&[10, 10, 10, 10, 1000], 4), Some(0..4));
        // A small new run does not join; the four similar ones behind it do.
        assert_eq!(choose(&[1, 100, 100, 100, 100], 4), Some(1..5));
        assert_eq!(choose(&[100, 100, 100, 100], 0), None);
    }

    #[test]
    fn compaction_drops_what_no_reader_sees() {
        use crate::key::Kind;
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        let mut c = Compactor::new(u64::MAX, 1, 0, false);
        assert!(
            c.keep(&k("", 50, 9, Kind::DeleteRow)),
            "not bottommost: the row tombstone stays"
        );
        assert!(c.keep(&k("a", 60, 10, Kind::Put)), "newer than the row deletion");
        assert!(!c.keep(&k("a", 40, 3, Kind::Put)), "hidden by the row deletion");
        assert!(c.keep(&k("b", 70, 11, Kind::Put)));
        assert!(!c.keep(&k("b", 65, 8, Kind::Put)), "beyond max_versions");
        let mut bottom = Compactor::new(u64::MAX, 2, 0, true);
        assert!(
            !bottom.keep(&k("c", 30, 5, Kind::DeleteCell)),
            "bottommost: tombstone dropped"
        );
        assert!(!bottom.keep(&k("c", 20, 4, Kind::Put)), "and what it hid");
        assert!(bottom.keep(&k("d", 20, 4, Kind::Put)));
        assert!(!bottom.keep(&k("d", 20, 2, Kind::Put)), "same timestamp, earlier write");
        assert!(bottom.keep(&k("d", 10, 1, Kind::Put)), "second version kept");
        let mut ttl = Compactor::new(u64::MAX, 1, 100, false);
        assert!(!ttl.keep(&k("e", 99, 1, Kind::Put)), "expired");
    }

    #[test]
    fn writes_after_the_horizon_are_kept_and_hide_nothing() {
        use crate::key::Kind;
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        // A reader may still be at sequence 5: it must find the version seq 9 replaces.
        let mut c = Compactor::new(5, 1, 0, true);
        assert!(
            c.keep(&k("", 40, 8, Kind::DeleteRow)),
            "not yet visible to every reader"
        );
        assert!(c.keep(&k("a", 30, 9, Kind::Put)), "not yet visible to every reader");
        assert!(c.keep(&k("a", 20, 4, Kind::Put)), "the newest version at the horizon");
        assert!(!c.keep(&k("a", 10, 3, Kind::Put)), "replaced before the horizon");
        assert!(c.keep(&k("b", 10, 2, Kind::Put)));
    }
}
