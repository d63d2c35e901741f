//! The visibility rule: what hides what, written once for every path.
//!
//! A row's entries arrive in cell order (row, column, newest first; a row's
//! deletions before its columns). A reader at sequence number `upto` sees an
//! entry only if all of these hold:
//!
//! 1. it was written at or before `upto` (later writes do not exist for this
//!    reader, and hide nothing from it);
//! 2. no deletion hides it. A deletion hides the versions *older than itself*,
//!    where age is `(timestamp, sequence)`: a cell tombstone hides the older
//!    versions of its column, a row tombstone those of every column of its row.
//!    (Unlike HBase, a put written after a delete with the same timestamp is
//!    visible: the later write wins.);
//! 3. it is not a replaced version: two puts with the same timestamp are one
//!    version, and the later write (larger sequence) replaces the earlier;
//! 4. it is among the newest `versions` versions of its cell;
//! 5. it has not expired (`timestamp + ttl` is in the future). An expired
//!    deletion hides nothing that has not expired with it, so it counts as
//!    hidden too. The newest expired entry of a cell (of a row, for a row
//!    deletion) that nothing newer covers is told apart ([`Verdict::Expired`]):
//!    under a longer TTL it would be the cell's answer again, so a compaction
//!    that is not bottommost keeps it (see `crate::compaction::Compactor`).
//!
//! One exception, shared with HBase: a put written *after* a deletion but
//! carrying an *older* timestamp is hidden only while the deletion is stored.
//! A major compaction drops deletions (nothing older remains for them to
//! hide), and from then on such a late put is visible. Write with timestamps
//! from the store's clock (the default) and this never arises.
//!
//! [`Visibility`] walks the stream once and gives every entry a [`Verdict`].
//! Every path asks it: a range read returns the `Visible` entries; a point
//! read hands it the newest row deletion and the newest entry of its cell; a
//! flush and a compaction keep what some reader may still see (see
//! `crate::compaction::Compactor`); the statistics count `Visible` entries as
//! live. Because newer versions sort first, every verdict follows from the
//! entry and a few remembered facts about its row and cell: nothing is buffered.

use cellar_sstable::coding::common_prefix_len;

use crate::key::{self, Kind};

/// What the rule says about one entry, for a reader at sequence `upto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A version the reader sees.
    Visible,
    /// Written after `upto`: the reader does not see it, and it hides nothing.
    Unwritten,
    /// A deletion the reader sees: never returned itself, it hides the older
    /// versions of its cell (or, for a row tombstone, of its whole row).
    Deletion,
    /// Hidden from the reader: by a deletion, by a later write with the same
    /// timestamp, beyond the versions kept, or expired under a newer entry
    /// of its cell; or a deletion that a newer deletion of the same cell or
    /// row already covers.
    Hidden,
    /// Expired, and the newest entry of its cell that nothing newer covers
    /// (for a row deletion: the newest deletion of its row): the reader does
    /// not see it, but under a longer TTL it would decide the cell again,
    /// hiding the older versions below it.
    Expired,
}

/// The rule applied to one walk over entries in cell order.
pub(crate) struct Visibility {
    upto: u64,
    versions: u32,
    /// Entries with a timestamp below this have expired (0 = no TTL).
    expire_before: u64,
    /// The encoded row prefix of the row being walked (empty before the first entry).
    row: Vec<u8>,
    row_deletion: Option<(u64, u64)>,
    /// The row's newest deletion, when it has expired (judged `Expired`).
    row_deletion_expired: Option<(u64, u64)>,
    /// The key of the cell being walked, without its suffix.
    cell: Vec<u8>,
    cell_deletion: Option<(u64, u64)>,
    /// Versions of the cell judged `Visible` so far.
    kept: u32,
    last_ts: Option<u64>,
    /// Whether every later entry of the cell is hidden from this reader.
    cell_settled: bool,
    /// Rows started so far (see [`Visibility::rows_started`]).
    rows_started: u64,
    /// Whether every entry is of the row in `row` (see [`Visibility::enter_row`]).
    one_row: bool,
}

impl Visibility {
    /// The rule for a reader at sequence `upto` that keeps `versions` versions
    /// per cell, with entries older than `expire_before` expired (0 = no TTL).
    pub fn new(upto: u64, versions: u32, expire_before: u64) -> Visibility {
        Visibility {
            upto,
            versions,
            expire_before,
            row: Vec::new(),
            row_deletion: None,
            row_deletion_expired: None,
            cell: Vec::new(),
            cell_deletion: None,
            kept: 0,
            last_ts: None,
            cell_settled: false,
            rows_started: 0,
            one_row: false,
        }
    }

    /// Starts a new row: forgets its deletion and its cell.
    pub fn start_row(&mut self) {
        self.rows_started += 1;
        self.row.clear();
        self.row_deletion = None;
        self.row_deletion_expired = None;
        self.start_cell();
    }

    /// Starts a new cell of the same row.
    pub fn start_cell(&mut self) {
        self.cell.clear();
        self.forget_cell();
    }

    /// Forgets what is known of the cell, but not its key (the caller
    /// replaces it).
    fn forget_cell(&mut self) {
        self.cell_deletion = None;
        self.kept = 0;
        self.last_ts = None;
        self.cell_settled = false;
    }

    /// Starts the walk of a read of one row, whose key range lies inside the
    /// row `row_prefix` (encoded): every entry it judges is of that row, so
    /// no entry is checked for starting a new one, and an entry's cell is
    /// told from the last one by the bytes past the row alone. `deletion` is
    /// the row's newest deletion when it was found before the stream starts
    /// (a slice that begins in the middle of a row never meets its row
    /// tombstones); a stream from the row's first key meets them itself.
    pub fn enter_row(&mut self, row_prefix: &[u8], deletion: Option<(u64, u64)>) {
        self.start_row();
        self.row.extend_from_slice(row_prefix);
        self.row_deletion = deletion;
        self.one_row = true;
    }

    /// The verdict on the entry with this internal key, which must come after
    /// the previous one in cell order; `None` if the key does not decode.
    ///
    /// A key that does not decode is damage (a block that passed its checksum
    /// yet holds nonsense), never a verdict: hiding it would answer "no such
    /// cell" where the truth is unknown, and a compaction would drop it. The
    /// caller reports it as corruption where it knows the entry's file and
    /// block. The check is the decode the rule needs anyway: it costs nothing.
    pub fn judge(&mut self, entry_key: &[u8]) -> Option<Verdict> {
        self.judge_key(entry_key, true).flatten()
    }

    /// [`Visibility::judge`] for a walk that stops before the first entry of
    /// another row and leaves it unjudged: `Some(None)` for such an entry
    /// (nothing changes), else what `judge` answers. The row is told from
    /// the comparison `judge` makes anyway, so the walk compares no key twice.
    pub fn judge_in_row(&mut self, entry_key: &[u8]) -> Option<Option<Verdict>> {
        self.judge_key(entry_key, false)
    }

    /// [`Visibility::judge`], which starts a new row only if `may_start_row`
    /// (else answers `Some(None)` there).
    #[inline]
    fn judge_key(&mut self, entry_key: &[u8], may_start_row: bool) -> Option<Option<Verdict>> {
        let (ts, seq, kind) = key::suffix(entry_key)?;
        self.judge_suffixed(entry_key, (ts, seq, kind), may_start_row)
    }

    /// [`Visibility::judge`], which also hands back the timestamp, sequence
    /// number and kind it decoded from the key's suffix: a flush or a
    /// compaction writes them into the output's metadata, and decodes each
    /// key once.
    #[inline]
    pub fn judge_decoded(&mut self, entry_key: &[u8]) -> Option<(Verdict, (u64, u64, Kind))> {
        let suffix = key::suffix(entry_key)?;
        let verdict = self.judge_suffixed(entry_key, suffix, true).flatten()?;
        Some((verdict, suffix))
    }

    /// [`Visibility::judge_key`] once the suffix is decoded.
    #[inline]
    fn judge_suffixed(
        &mut self,
        entry_key: &[u8],
        (ts, seq, kind): (u64, u64, Kind),
        may_start_row: bool,
    ) -> Option<Option<Verdict>> {
        let body = key::prefix(entry_key);
        if self.one_row {
            // Every key starts with the row (the read's range lies inside
            // it): only the bytes past it can differ. A key too short to
            // hold more than the row is no entry of it.
            let past_row = body.get(self.row.len()..)?;
            if self.cell.get(self.row.len()..) != Some(past_row) {
                self.start_cell();
                self.cell.extend_from_slice(body);
            }
        } else {
            // One pass over the bytes the key shares with the current cell
            // tells a new cell, and a new row: the cell starts with the
            // row's prefix, so a key sharing that much with it does too.
            let shared = common_prefix_len(body, &self.cell);
            if shared != body.len() || shared != self.cell.len() {
                // A new cell; a new row too unless it starts with the row's
                // prefix (which ends with a terminator that no row or column
                // contains). The prefix is looked for whole only where the
                // cell cannot answer (it was cleared, as a read may).
                let same_row = !self.row.is_empty()
                    && (shared >= self.row.len() || (self.cell.len() < self.row.len() && body.starts_with(&self.row)));
                if same_row {
                    self.forget_cell();
                    // The bytes it shares with the last cell are there already.
                    self.cell.truncate(shared);
                    self.cell.extend_from_slice(body.get(shared..).unwrap_or_default());
                } else {
                    if !may_start_row {
                        return Some(None);
                    }
                    self.start_row();
                    self.row.extend_from_slice(key::row_part(entry_key)?);
                    self.cell.extend_from_slice(body);
                }
            }
        }
        Some(Some(self.judge_entry(ts, seq, kind)))
    }

    /// Whether `entry_key` is of the current cell (for a read skipping the
    /// rest of a settled cell): in a read of one row, by the bytes past the
    /// row alone.
    pub fn in_cell(&self, entry_key: &[u8]) -> bool {
        let body = key::prefix(entry_key);
        let skip = if self.one_row { self.row.len() } else { 0 };
        match (body.get(skip..), self.cell.get(skip..)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// The verdict on an entry of the current cell (or, for a row tombstone,
    /// of the current row), given its timestamp, sequence number and kind.
    pub fn judge_entry(&mut self, ts: u64, seq: u64, kind: Kind) -> Verdict {
        if seq > self.upto {
            return Verdict::Unwritten;
        }
        let age = (ts, seq);
        let verdict = if ts < self.expire_before {
            let verdict = self.judge_expired(age, kind);
            // Everything after it in the cell is older, so expired too.
            self.cell_settled = true;
            verdict
        } else {
            match kind {
                Kind::DeleteRow => Self::first_deletion(&mut self.row_deletion, age),
                Kind::DeleteCell => Self::first_deletion(&mut self.cell_deletion, age),
                Kind::Put => {
                    let deleted = |d: Option<(u64, u64)>| d.is_some_and(|d| age < d);
                    let replaced = self.last_ts == Some(ts);
                    if deleted(self.cell_deletion)
                        || deleted(self.row_deletion)
                        || replaced
                        || self.kept >= self.versions
                    {
                        Verdict::Hidden
                    } else {
                        self.kept += 1;
                        self.last_ts = Some(ts);
                        Verdict::Visible
                    }
                }
            }
        };
        // Once a deletion covers the cell (entries after it are older) or its
        // versions are all kept, no later entry of the cell is visible.
        self.cell_settled |= self.cell_deletion.is_some()
            || self.kept >= self.versions
            || (kind == Kind::DeleteRow && self.row_deletion.is_some())
            || (kind == Kind::Put && self.row_deletion.is_some_and(|d| age < d));
        verdict
    }

    /// An expired entry: `Expired` if nothing newer covers it (see
    /// [`Verdict::Expired`]), else `Hidden`. A row deletion is covered by a
    /// newer deletion of its row; a version or a cell deletion by anything
    /// that settled its cell before it, or by a newer row deletion.
    fn judge_expired(&mut self, age: (u64, u64), kind: Kind) -> Verdict {
        if kind == Kind::DeleteRow {
            if self.row_deletion.is_some() || self.row_deletion_expired.is_some() {
                return Verdict::Hidden;
            }
            self.row_deletion_expired = Some(age);
            return Verdict::Expired;
        }
        let under = |d: Option<(u64, u64)>| d.is_some_and(|d| age < d);
        if self.cell_settled || under(self.row_deletion) || under(self.row_deletion_expired) {
            Verdict::Hidden
        } else {
            Verdict::Expired
        }
    }

    /// The newest deletion of a cell or row is the one that counts; older ones
    /// hide nothing it does not.
    fn first_deletion(slot: &mut Option<(u64, u64)>, age: (u64, u64)) -> Verdict {
        if slot.is_some() {
            return Verdict::Hidden;
        }
        *slot = Some(age);
        Verdict::Deletion
    }

    /// Whether no later entry of the current cell can be visible to this
    /// reader, so a read may skip to the next cell. (A compaction may not: it
    /// keeps `Unwritten` entries.)
    pub fn cell_settled(&self) -> bool {
        self.cell_settled
    }

    /// How many rows the walk has started: it moves exactly when an entry
    /// (or [`Visibility::enter_row`]) starts a row, so a reader
    /// tells whether two entries are of one row without comparing keys.
    pub fn rows_started(&self) -> u64 {
        self.rows_started
    }

    /// The encoded row prefix of the current row (empty before the first entry).
    pub fn row(&self) -> &[u8] {
        &self.row
    }

    /// The key of the current cell, without its suffix (empty before the first entry).
    pub fn cell(&self) -> &[u8] {
        &self.cell
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Verdict::{Deletion, Expired, Hidden, Unwritten, Visible};

    fn k(row: &str, col: &str, ts: u64, seq: u64, kind: Kind) -> Vec<u8> {
        key::encode(row.as_bytes(), col.as_bytes(), ts, seq, kind)
    }

    /// The verdicts on a stream of entries, in order.
    fn verdicts(rule: &mut Visibility, stream: &[Vec<u8>]) -> Vec<Verdict> {
        stream.iter().filter_map(|entry| rule.judge(entry)).collect()
    }

    #[test]
    fn a_key_that_does_not_decode_gets_no_verdict() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let sound = k("r", "c", 9, 1, Kind::Put);
        let suffix = &sound[sound.len() - key::SUFFIX_LEN..];
        let mut no_kind = sound.clone();
        if let Some(tag_end) = no_kind.last_mut() {
            *tag_end = 0x80; // the stored tag is inverted: kind 0x7f
        }
        assert_eq!(rule.judge(b"short"), None);
        assert_eq!(rule.judge(&no_kind), None);
        assert_eq!(rule.judge(&[&b"no terminator"[..], suffix].concat()), None);
        assert_eq!(rule.judge(&sound), Some(Visible));
    }

    #[test]
    fn deleted_row_hides_older_columns_but_not_newer_ones() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let stream = [
            k("r", "", 10, 5, Kind::DeleteRow),
            k("r", "a", 9, 1, Kind::Put),
            k("r", "b", 11, 6, Kind::Put),
            k("s", "a", 1, 2, Kind::Put),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Deletion, Hidden, Visible, Visible]);
    }

    #[test]
    fn cell_tombstone_hides_older_versions_and_later_same_timestamp_put_wins() {
        let mut rule = Visibility::new(u64::MAX, 3, 0);
        // Newest first: put ts 7 (seq 9), delete ts 7 (seq 8), put ts 7 (seq 3), put ts 2.
        let stream = [
            k("r", "c", 7, 9, Kind::Put),
            k("r", "c", 7, 8, Kind::DeleteCell),
            k("r", "c", 7, 3, Kind::Put),
            k("r", "c", 2, 1, Kind::Put),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Visible, Deletion, Hidden, Hidden]);
    }

    #[test]
    fn snapshot_versions_replacement_and_ttl_limit_what_is_seen() {
        let mut rule = Visibility::new(10, 2, 5);
        let stream = [
            k("r", "c", 9, 11, Kind::Put), // written after the snapshot
            k("r", "c", 8, 4, Kind::Put),
            k("r", "c", 8, 2, Kind::Put), // same timestamp: replaced
            k("r", "c", 6, 1, Kind::Put),
            k("r", "c", 5, 0, Kind::Put), // a third version
            k("r", "d", 4, 0, Kind::Put), // expired, the newest of its cell
        ];
        assert_eq!(
            verdicts(&mut rule, &stream),
            [Unwritten, Visible, Hidden, Visible, Hidden, Expired]
        );
    }

    #[test]
    fn a_write_after_the_snapshot_hides_nothing_from_it() {
        // The newer version and deletions exist, but not for a reader at sequence 5.
        let mut rule = Visibility::new(5, 1, 0);
        let stream = [
            k("r", "", 20, 8, Kind::DeleteRow),
            k("r", "c", 30, 9, Kind::Put),
            k("r", "c", 25, 7, Kind::DeleteCell),
            k("r", "c", 10, 3, Kind::Put),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Unwritten, Unwritten, Unwritten, Visible]);
    }

    #[test]
    fn only_the_newest_deletion_of_a_row_or_cell_counts() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let stream = [
            k("r", "", 20, 4, Kind::DeleteRow),
            k("r", "", 10, 2, Kind::DeleteRow),
            k("r", "c", 30, 6, Kind::DeleteCell),
            k("r", "c", 25, 5, Kind::DeleteCell),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Deletion, Hidden, Deletion, Hidden]);
    }

    #[test]
    fn an_expired_deletion_hides_nothing_and_only_the_newest_expired_entry_is_told_apart() {
        let mut rule = Visibility::new(u64::MAX, 1, 100);
        let stream = [
            k("r", "", 50, 3, Kind::DeleteRow),
            k("r", "", 45, 4, Kind::DeleteRow),   // an older deletion of the row
            k("r", "c", 40, 2, Kind::DeleteCell), // under the row's expired deletion
            k("r", "d", 150, 1, Kind::Put),
            k("r", "d", 60, 5, Kind::Put), // expired, but a newer version is kept
            k("r", "e", 70, 6, Kind::Put),
            k("r", "e", 65, 7, Kind::DeleteCell), // under the expired version
        ];
        assert_eq!(
            verdicts(&mut rule, &stream),
            [Expired, Hidden, Hidden, Visible, Hidden, Expired, Hidden]
        );
    }

    #[test]
    fn a_put_written_after_a_deletion_with_an_older_timestamp_is_hidden() {
        // The deletion has timestamp 10 (seq 2); the put, written later (seq 3), has 5.
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let stream = [k("r", "c", 10, 2, Kind::DeleteCell), k("r", "c", 5, 3, Kind::Put)];
        assert_eq!(verdicts(&mut rule, &stream), [Deletion, Hidden]);
    }

    #[test]
    fn a_row_deletion_found_before_the_stream_hides_the_row_it_names() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        rule.enter_row(&key::row_prefix(b"r"), Some((10, 5)));
        let stream = [
            k("r", "m", 9, 1, Kind::Put),
            k("r", "m", 8, 0, Kind::Put),
            k("r", "n", 11, 6, Kind::Put),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Hidden, Hidden, Visible]);
        assert_eq!(rule.rows_started(), 1);
    }

    #[test]
    fn a_read_of_one_row_meets_the_row_deletions_in_its_stream() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        rule.enter_row(&key::row_prefix(b"r"), None);
        let stream = [
            k("r", "", 10, 5, Kind::DeleteRow),
            k("r", "", 4, 2, Kind::DeleteRow),
            k("r", "", 11, 7, Kind::Put),
            k("r", "m", 9, 1, Kind::Put),
        ];
        assert_eq!(verdicts(&mut rule, &stream), [Deletion, Hidden, Visible, Hidden]);
        assert_eq!(rule.rows_started(), 1);
    }

    #[test]
    fn a_key_too_short_to_hold_more_than_the_row_gets_no_verdict_in_a_read_of_one_row() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let row = key::row_prefix(b"row");
        rule.enter_row(&row, None);
        // The row's prefix, then a suffix: no room for a column.
        let sound = k("row", "c", 9, 1, Kind::Put);
        let short = [&row[..row.len() - 1], &sound[sound.len() - key::SUFFIX_LEN..]].concat();
        assert_eq!(rule.judge(&short), None);
        assert!(!rule.in_cell(&short));
        assert_eq!(rule.judge(&sound), Some(Visible));
    }

    #[test]
    fn a_row_that_is_a_prefix_of_the_next_is_a_different_row() {
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        let stream = [k("ab", "", 10, 5, Kind::DeleteRow), k("abc", "c", 9, 1, Kind::Put)];
        assert_eq!(verdicts(&mut rule, &stream), [Deletion, Visible]);
    }

    #[test]
    fn a_cell_is_settled_once_nothing_later_in_it_can_be_visible() {
        let settled_after = |rule: &mut Visibility, entry: Vec<u8>| {
            rule.judge(&entry);
            rule.cell_settled()
        };
        // Versions: settled once `versions` are kept.
        let mut rule = Visibility::new(u64::MAX, 2, 0);
        assert!(!settled_after(&mut rule, k("r", "c", 9, 3, Kind::Put)));
        assert!(settled_after(&mut rule, k("r", "c", 8, 2, Kind::Put)));
        // A new cell starts unsettled; a cell deletion settles it.
        assert!(!settled_after(&mut rule, k("r", "d", 9, 1, Kind::Put)));
        assert!(settled_after(&mut rule, k("r", "d", 7, 4, Kind::DeleteCell)));
        // The row's newest deletion settles the row's deletions; a put it
        // hides settles its cell (everything after it is older).
        let mut rule = Visibility::new(u64::MAX, 1, 0);
        assert!(settled_after(&mut rule, k("r", "", 10, 5, Kind::DeleteRow)));
        assert!(settled_after(&mut rule, k("r", "c", 12, 6, Kind::DeleteCell)));
        assert!(settled_after(&mut rule, k("r", "e", 9, 1, Kind::Put)));
        // Writes after the snapshot settle nothing.
        let mut rule = Visibility::new(1, 1, 0);
        assert!(!settled_after(&mut rule, k("r", "c", 9, 3, Kind::Put)));
        // An expired version: the older ones have expired too.
        let mut rule = Visibility::new(u64::MAX, 3, 100);
        assert!(settled_after(&mut rule, k("r", "c", 99, 3, Kind::Put)));
    }

    #[test]
    fn the_newest_deletion_and_cell_entry_alone_decide_a_point_read() {
        // As `get` uses the rule: the newest row deletion, then the newest entry of the cell.
        let decide = |row_deletion: Option<(u64, u64)>, cell: (u64, u64, Kind)| {
            let mut rule = Visibility::new(u64::MAX, 1, 100);
            rule.start_row();
            if let Some((ts, seq)) = row_deletion {
                rule.judge_entry(ts, seq, Kind::DeleteRow);
            }
            rule.start_cell();
            rule.judge_entry(cell.0, cell.1, cell.2)
        };
        assert_eq!(decide(None, (150, 1, Kind::Put)), Visible);
        assert_eq!(decide(Some((200, 2)), (150, 1, Kind::Put)), Hidden);
        assert_eq!(decide(Some((140, 2)), (150, 1, Kind::Put)), Visible);
        assert_eq!(decide(None, (150, 1, Kind::DeleteCell)), Deletion);
        assert_eq!(decide(None, (99, 1, Kind::Put)), Expired, "expired");
    }

    /// A row, a column or a row tombstone's place (`None`), ts and seq.
    type Entry = (Vec<u8>, Option<Vec<u8>>, u64, u64);

    fn part() -> impl Strategy<Value = Vec<u8>> {
        // Zero bytes (escaped), `01` (half a terminator), `FF`, and short
        // parts, so rows and columns are often prefixes of each other.
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xFFu8), Just(b'a')], 0..4)
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (part(), proptest::option::of(part()), 0..4u64, 0..6u64)
    }

    fn encoded(e: &Entry) -> Vec<u8> {
        match &e.1 {
            Some(column) => key::encode(
                &e.0,
                column,
                e.2,
                e.3,
                if e.3.is_multiple_of(3) {
                    Kind::DeleteCell
                } else {
                    Kind::Put
                },
            ),
            None => key::encode(&e.0, b"", e.2, e.3, Kind::DeleteRow),
        }
    }

    proptest! {
        /// The premise of a read of one row: the keys in `[row prefix, its
        /// successor)` are exactly the keys of that row, even where rows
        /// are prefixes of each other or hold zero and `FF` bytes.
        #[test]
        fn the_keys_between_a_row_prefix_and_its_successor_are_the_rows_keys(row in part(), e in entry()) {
            let prefix = key::row_prefix(&row);
            let end = key::prefix_successor(&prefix);
            let k = encoded(&e);
            let inside = k >= prefix && end.as_ref().is_none_or(|end| k < *end);
            prop_assert_eq!(inside, e.0 == row);
        }

        /// A read of one row tells cells apart by the bytes past the row
        /// alone: its verdicts, settled cells and cell membership are those
        /// of the rule that compares whole keys.
        #[test]
        fn a_read_of_one_row_judges_as_the_whole_key_rule_does(
            row in part(),
            entries in proptest::collection::vec(entry(), 0..24),
            upto in 0..6u64,
            versions in 1..3u32,
            deletion in proptest::option::of((0..4u64, 0..6u64)),
        ) {
            let mut stream: Vec<Vec<u8>> = entries.into_iter().map(|mut e| { e.0 = row.clone(); encoded(&e) }).collect();
            stream.sort();
            stream.dedup();
            let prefix = key::row_prefix(&row);
            let mut whole = Visibility::new(upto, versions, 1);
            let mut one_row = Visibility::new(upto, versions, 1);
            // A stream that may start in the middle of the row, after a
            // deletion found before it (the general rule's preset).
            whole.start_row();
            whole.row.extend_from_slice(&prefix);
            whole.row_deletion = deletion;
            one_row.enter_row(&prefix, deletion);
            for entry in &stream {
                prop_assert_eq!(one_row.in_cell(entry), whole.in_cell(entry));
                prop_assert_eq!(one_row.judge(entry), whole.judge(entry));
                prop_assert_eq!(one_row.cell_settled(), whole.cell_settled());
                prop_assert_eq!(one_row.cell(), whole.cell());
                prop_assert_eq!(one_row.rows_started(), whole.rows_started());
            }
        }
    }
}
