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
//! writes every sequence number as 0: nothing older exists to order against,
//! every reader of the new version sees all of it, and the compacted run's
//! keys then differ from their neighbours only where the cells do.

use std::ops::Range;

use crate::key::{self, Kind};

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

/// What a compaction keeps, decided one entry at a time over the merged inputs
/// (cell order: row, column, newest first).
///
/// Only entries that no reader of the *new* version can see are dropped. Older
/// snapshots keep reading the input files, which stay on disk until the last
/// snapshot that lists them is dropped, so they need nothing from the output.
pub(crate) struct Compactor {
    max_versions: u32,
    expire_before: u64,
    bottommost: bool,
    row: Vec<u8>,
    row_tombstone: Option<(u64, u64)>,
    cell: Vec<u8>,
    cell_tombstone: Option<(u64, u64)>,
    kept: u32,
    last_ts: Option<u64>,
}

impl Compactor {
    /// `bottommost`: the inputs include the family's oldest run, so no older
    /// entry exists anywhere else.
    pub fn new(max_versions: u32, expire_before: u64, bottommost: bool) -> Compactor {
        Compactor {
            max_versions,
            expire_before,
            bottommost,
            row: Vec::new(),
            row_tombstone: None,
            cell: Vec::new(),
            cell_tombstone: None,
            kept: 0,
            last_ts: None,
        }
    }

    /// Whether the entry with this key goes to the output.
    pub fn keep(&mut self, entry_key: &[u8]) -> bool {
        let (Some((ts, seq, kind)), Some(row)) = (key::suffix(entry_key), key::row_part(entry_key)) else {
            // Not an internal key: keep it, so compaction never loses bytes it does not understand.
            return true;
        };
        if row != self.row.as_slice() {
            self.row.clear();
            self.row.extend_from_slice(row);
            self.row_tombstone = None;
            self.cell.clear();
        }
        let age = (ts, seq);
        let expired = ts < self.expire_before;
        if kind == Kind::DeleteRow {
            if self.row_tombstone.is_some() {
                return false; // an older row tombstone: the newer one hides all it hides
            }
            self.row_tombstone = Some(age);
            // A tombstone is dropped only when nothing older exists outside the
            // inputs (bottommost: whatever it hides in the inputs is dropped
            // here too), or when it has expired (everything it could hide has
            // expired with it).
            return !(self.bottommost || expired);
        }
        if self.row_tombstone.is_some_and(|t| age < t) {
            return false; // hidden by the row's deletion
        }
        let cell = key::prefix(entry_key);
        if cell != self.cell.as_slice() {
            self.cell.clear();
            self.cell.extend_from_slice(cell);
            self.cell_tombstone = None;
            self.kept = 0;
            self.last_ts = None;
        }
        if kind == Kind::DeleteCell {
            if self.cell_tombstone.is_some() {
                return false;
            }
            self.cell_tombstone = Some(age);
            return !(self.bottommost || expired);
        }
        if self.cell_tombstone.is_some_and(|t| age < t)
            || self.last_ts == Some(ts)
            || self.kept >= self.max_versions
            || expired
        {
            // Hidden by a deletion, replaced by a later write with the same
            // timestamp, beyond max_versions, or expired: no reader sees it.
            return false;
        }
        self.kept += 1;
        self.last_ts = Some(ts);
        true
    }
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
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        let mut c = Compactor::new(1, 0, false);
        assert!(
            c.keep(&k("", 50, 9, Kind::DeleteRow)),
            "not bottommost: the row tombstone stays"
        );
        assert!(c.keep(&k("a", 60, 10, Kind::Put)), "newer than the row deletion");
        assert!(!c.keep(&k("a", 40, 3, Kind::Put)), "hidden by the row deletion");
        assert!(c.keep(&k("b", 70, 11, Kind::Put)));
        assert!(!c.keep(&k("b", 65, 8, Kind::Put)), "beyond max_versions");
        let mut bottom = Compactor::new(2, 0, true);
        assert!(
            !bottom.keep(&k("c", 30, 5, Kind::DeleteCell)),
            "bottommost: tombstone dropped"
        );
        assert!(!bottom.keep(&k("c", 20, 4, Kind::Put)), "and what it hid");
        assert!(bottom.keep(&k("d", 20, 4, Kind::Put)));
        assert!(!bottom.keep(&k("d", 20, 2, Kind::Put)), "same timestamp, earlier write");
        assert!(bottom.keep(&k("d", 10, 1, Kind::Put)), "second version kept");
        let mut ttl = Compactor::new(1, 100, false);
        assert!(!ttl.keep(&k("e", 99, 1, Kind::Put)), "expired");
    }
}
