//! The visibility step: from every stored entry to the cells a reader sees.
//!
//! The merged stream of a read holds all versions and all deletions, in cell
//! order (row, column, newest first). This step walks it once and keeps an entry
//! only if all of these hold:
//!
//! 1. it was written at or before the read's snapshot (sequence number);
//! 2. no deletion hides it. A deletion hides the versions *older than itself*,
//!    where age is `(timestamp, sequence)`: a cell tombstone hides the older
//!    versions of its column, a row tombstone those of every column of its row.
//!    (Unlike HBase, a put written after a delete with the same timestamp is
//!    visible: the later write wins.);
//! 3. it is not a replaced version: two puts with the same timestamp are one
//!    version, and the later write (larger sequence) replaces the earlier;
//! 4. it is among the newest `versions` versions of its cell;
//! 5. it has not expired (`timestamp + ttl` is in the future).
//!
//! One exception, shared with HBase: a put written *after* a deletion but
//! carrying an *older* timestamp is hidden only while the deletion is stored.
//! A major compaction drops deletions (nothing older remains for them to
//! hide), and from then on such a late put is visible. Write with timestamps
//! from the store's clock (the default) and this never arises.
//!
//! Because newer versions sort first, every rule is decided by looking at the
//! entry and a few remembered facts about its row and cell; nothing is buffered.

use crate::key::{self, Kind};

/// Per-read state of the visibility step.
pub(crate) struct Visibility {
    snapshot: u64,
    versions: u32,
    /// Cells with a timestamp below this have expired (0 = no TTL).
    expire_before: u64,
    row: Vec<u8>,
    row_tombstone: Option<(u64, u64)>,
    cell: Vec<u8>,
    cell_tombstone: Option<(u64, u64)>,
    kept: u32,
    last_ts: Option<u64>,
}

impl Visibility {
    pub fn new(snapshot: u64, versions: u32, expire_before: u64) -> Visibility {
        Visibility {
            snapshot,
            versions,
            expire_before,
            row: Vec::new(),
            row_tombstone: None,
            cell: Vec::new(),
            cell_tombstone: None,
            kept: 0,
            last_ts: None,
        }
    }

    /// Tells the step about a row tombstone found before the stream starts (a
    /// slice that begins in the middle of a row never meets its row tombstones).
    pub fn preset_row_tombstone(&mut self, row_prefix: &[u8], tombstone: Option<(u64, u64)>) {
        self.row.clear();
        self.row.extend_from_slice(row_prefix);
        self.row_tombstone = tombstone;
    }

    /// Whether the entry with this key is a visible version to return.
    pub fn admit(&mut self, entry_key: &[u8]) -> bool {
        let Some((ts, seq, kind)) = key::suffix(entry_key) else {
            return false;
        };
        if seq > self.snapshot {
            return false;
        }
        let Some(row) = key::row_part(entry_key) else {
            return false;
        };
        if row != self.row.as_slice() {
            self.row.clear();
            self.row.extend_from_slice(row);
            self.row_tombstone = None;
            self.cell.clear();
        }
        if kind == Kind::DeleteRow {
            // The first visible row tombstone is the newest: it hides all the others.
            if self.row_tombstone.is_none() {
                self.row_tombstone = Some((ts, seq));
            }
            return false;
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
            if self.cell_tombstone.is_none() {
                self.cell_tombstone = Some((ts, seq));
            }
            return false;
        }
        let age = (ts, seq);
        let hidden = self.cell_tombstone.is_some_and(|t| age < t) || self.row_tombstone.is_some_and(|t| age < t);
        if hidden || self.last_ts == Some(ts) || self.kept >= self.versions || ts < self.expire_before {
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

    fn k(row: &str, col: &str, ts: u64, seq: u64, kind: Kind) -> Vec<u8> {
        key::encode(row.as_bytes(), col.as_bytes(), ts, seq, kind)
    }

    #[test]
    fn deleted_row_hides_older_columns_but_not_newer_ones() {
        let mut v = Visibility::new(u64::MAX, 1, 0);
        let stream = [
            (k("r", "", 10, 5, Kind::DeleteRow), false),
            (k("r", "a", 9, 1, Kind::Put), false),
            (k("r", "b", 11, 6, Kind::Put), true),
            (k("s", "a", 1, 2, Kind::Put), true),
        ];
        for (entry, visible) in stream {
            assert_eq!(v.admit(&entry), visible);
        }
    }

    #[test]
    fn cell_tombstone_hides_older_versions_and_later_same_timestamp_put_wins() {
        let mut v = Visibility::new(u64::MAX, 3, 0);
        // Sorted newest first: put ts 7 (seq 9), delete ts 7 (seq 8), put ts 7 (seq 3), put ts 2.
        assert!(v.admit(&k("r", "c", 7, 9, Kind::Put)));
        assert!(!v.admit(&k("r", "c", 7, 8, Kind::DeleteCell)));
        assert!(!v.admit(&k("r", "c", 7, 3, Kind::Put)));
        assert!(!v.admit(&k("r", "c", 2, 1, Kind::Put)));
    }

    #[test]
    fn versions_snapshot_and_ttl_limit_what_is_seen() {
        let mut v = Visibility::new(10, 2, 5);
        assert!(!v.admit(&k("r", "c", 9, 11, Kind::Put)), "written after the snapshot");
        assert!(v.admit(&k("r", "c", 8, 4, Kind::Put)));
        assert!(!v.admit(&k("r", "c", 8, 2, Kind::Put)), "same timestamp: replaced");
        assert!(v.admit(&k("r", "c", 6, 1, Kind::Put)));
        assert!(!v.admit(&k("r", "c", 5, 0, Kind::Put)), "third version");
        assert!(!v.admit(&k("r", "d", 4, 0, Kind::Put)), "expired");
    }
}
