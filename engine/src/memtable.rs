//! The memtable: the newest writes of one column family, sorted in memory.
//!
//! Every write lands here after it is in the log. The memtable is a skip list
//! ([`crate::skiplist`]) keyed by the internal key, so readers walk it while
//! the writer inserts, without locks. When it passes its limit it is frozen
//! (no more inserts) and a background thread writes it out as a table file;
//! until that file is installed, reads still consult the frozen memtable.
//!
//! A memtable only grows: no entry is ever removed or replaced, and the whole
//! skip list is freed at once when the last handle on the memtable goes. That
//! is what lets readers walk it for free (no epoch pins, no reference counts
//! on nodes), and what lets every node live in an arena ([`crate::arena`])
//! with its entry's key and value beside it, as LevelDB's and RocksDB's
//! memtables keep theirs: a write costs no allocation most of the time, and
//! dropping a flushed memtable frees a few hundred chunks instead of one
//! allocation per entry.
//!
//! A memtable's size is the memory it holds: the arena's chunks (nodes, keys
//! and values) and its row filter. That is what its byte limit measures.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::arena;
use crate::error::Result;
use crate::key::{self, Kind};
use crate::options::FamilyOptions;
use crate::row_filter::RowFilter;
use crate::skiplist::{self, NodeAddr, Probe, SkipList};

/// The newest visible entry of a cell in one source: its key's
/// `(timestamp, sequence, kind)` and its value.
pub(crate) type Hit = ((u64, u64, Kind), Bytes);

/// The fewest bytes an entry takes in a memtable: a node of one level whose
/// key is the shortest internal key (empty row and column: two terminators
/// and the suffix), with no value. The row filter is sized for as many
/// entries as a memtable's byte limit could hold at this size.
const MIN_ENTRY_BYTES: usize = skiplist::min_entry_bytes(2 + 2 + key::SUFFIX_LEN);

/// A sorted in-memory table of entries `(internal key -> value)`.
pub(crate) struct Memtable {
    /// The entries, in internal key order.
    list: SkipList,
    /// The encoded row of the last entry inserted, already in the row
    /// filter (only the writer touches it).
    last_row: Mutex<Vec<u8>>,
    bytes: AtomicUsize,
    entries: AtomicUsize,
    tombstones: AtomicUsize,
    max_ts: AtomicU64,
    max_seq: AtomicU64,
    /// The log segment that held this memtable's first write (0 while empty).
    first_log: AtomicU64,
    /// The rows inserted, so that a read of a row this memtable does not
    /// hold need not search it ([`crate::row_filter`]).
    rows: RowFilter,
}

impl Memtable {
    /// An empty memtable for a family with the default limits.
    pub fn new() -> Memtable {
        Memtable::for_family(&FamilyOptions::default())
    }

    /// An empty memtable for a family with these limits: its row filter is
    /// sized for as many entries as the memtable can hold before it is full
    /// (each entry takes at least [`MIN_ENTRY_BYTES`] of its byte limit).
    pub fn for_family(options: &FamilyOptions) -> Memtable {
        let by_bytes = options.memtable_max_bytes / MIN_ENTRY_BYTES + 1;
        let entries = options.memtable_max_entries.map_or(by_bytes, |n| n.min(by_bytes));
        Memtable {
            rows: RowFilter::for_entries(entries),
            list: SkipList::new(arena::largest_chunk_for(options.memtable_max_bytes)),
            last_row: Mutex::new(Vec::new()),
            bytes: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            tombstones: AtomicUsize::new(0),
            max_ts: AtomicU64::new(0),
            max_seq: AtomicU64::new(0),
            first_log: AtomicU64::new(0),
        }
    }

    /// Inserts one entry, copying its key and value into the arena. Keys are
    /// unique because every write has its own sequence number. Only the
    /// store's single writer calls this.
    pub fn insert(&self, key: &[u8], value: &[u8], timestamp: u64, sequence: u64, tombstone: bool, log: u64) {
        self.inserter(log).insert(key, value, timestamp, sequence, tombstone);
    }

    /// Starts inserting the entries of one write (from log segment `log`):
    /// see [`Inserter`]. Only the store's single writer calls this.
    pub fn inserter(&self, log: u64) -> Inserter<'_> {
        if self.first_log.load(Ordering::Relaxed) == 0 {
            self.first_log.store(log, Ordering::Relaxed);
        }
        Inserter {
            memtable: self,
            list: self.list.writer(),
            last_row: self.last_row.lock(),
            added: Added::default(),
        }
    }

    /// What the row filter says of the row whose encoded prefix has this
    /// filter hash: `Some(false)` only if no entry of the row was ever
    /// inserted, `Some(true)` if one may have been. `None` for an empty
    /// memtable, which has no filter yet (nothing to ask: a search of an
    /// empty skip list reads one pointer).
    pub fn may_hold_row(&self, row_hash: u64) -> Option<bool> {
        (!self.rows.is_empty()).then(|| self.rows.may_contain(row_hash))
    }

    /// Starts loading the row filter's line for the row whose encoded prefix
    /// has this filter hash, ahead of its insert (see [`RowFilter::prefetch`]).
    pub fn prefetch_row(&self, row_hash: u64) {
        self.rows.prefetch(row_hash);
    }

    /// Memory held, in bytes: the arena's chunks and the row filter.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Entries inserted.
    pub fn entries(&self) -> usize {
        self.entries.load(Ordering::Acquire)
    }

    /// Tombstones inserted.
    pub fn tombstones(&self) -> usize {
        self.tombstones.load(Ordering::Relaxed)
    }

    /// The smallest and the largest key inserted (`None` when empty): the
    /// memtable's key range, as a table file's first and last key are its.
    pub fn key_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let first = self.list.first()?;
        let last = self.list.last()?;
        Some((first.key().to_vec(), last.key().to_vec()))
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0
    }

    /// Largest timestamp inserted (0 when empty).
    pub fn max_ts(&self) -> u64 {
        self.max_ts.load(Ordering::Relaxed)
    }

    /// Largest sequence number inserted (0 when empty).
    pub fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }

    /// The log segment holding this memtable's oldest entry, if it has any.
    pub fn first_log(&self) -> Option<u64> {
        match self.first_log.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n),
        }
    }

    /// The first entry whose key starts with `prefix` and whose sequence number is
    /// at most `snapshot`, as its key's `(timestamp, sequence, kind)` and its
    /// value, with the number of entries looked at to find it.
    pub fn newest_with_prefix(&self, prefix: &[u8], snapshot: u64) -> (Option<Hit>, u64) {
        let mut examined = 0;
        let mut entry = self.list.seek(&Probe::new(prefix));
        while let Some(e) = entry {
            if !e.key().starts_with(prefix) {
                break;
            }
            examined += 1;
            if let Some(found) = key::suffix(e.key()).filter(|&(_, seq, _)| seq <= snapshot) {
                return (Some((found, copy_value(e.value()))), examined);
            }
            entry = e.next_entry();
        }
        (None, examined)
    }

    /// Every entry in key order, as `(key, value)` borrowed from the arena (used by flush).
    ///
    /// Consecutive keys lie anywhere in the arena (nodes are placed in the
    /// order they were inserted), so each step of the walk would wait for
    /// memory. The walk asks for the node after next while it visits this
    /// one: by the time it gets there, that node has had two visits' time to
    /// arrive, and its link to the one after is in cache.
    pub fn for_each(&self, mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut entry = self.list.first();
        let mut next = entry.as_ref().and_then(|e| e.next_entry());
        if let Some(n) = &next {
            n.prefetch();
        }
        while let Some(e) = entry {
            let after = next.as_ref().and_then(|n| n.next_entry());
            if let Some(a) = &after {
                a.prefetch();
            }
            visit(e.key(), e.value())?;
            entry = next;
            next = after;
        }
        Ok(())
    }
}

/// A value copied out of the arena: a reader that keeps it does not keep the
/// memtable alive. LevelDB and RocksDB copy out of their memtables too.
pub(crate) fn copy_value(value: &[u8]) -> Bytes {
    Bytes::copy_from_slice(value)
}

/// What an [`Inserter`] added, counted locally and published once.
#[derive(Default)]
struct Added {
    bytes: usize,
    entries: usize,
    tombstones: usize,
    max_ts: u64,
    max_seq: u64,
}

/// Inserts the entries of one write into a memtable: the cells of a row
/// written together, say.
///
/// What is done once per entry is only what must be: a copy into the arena
/// and a skip-list insert (which starts from where the one before ended).
/// The rest is done once for the whole write: the skip list's writer lock is
/// taken once, and the memtable's counters (bytes, entries, largest timestamp
/// and sequence) are shared atomics updated once, when the inserter is
/// dropped. Until then `bytes()` and `entries()` lag behind what is in the
/// skip list; the writer reads them only after its inserts, and readers see
/// the entries only once the store's visible sequence passes them, which
/// happens later still.
pub(crate) struct Inserter<'a> {
    memtable: &'a Memtable,
    list: skiplist::ListWriter<'a>,
    last_row: parking_lot::MutexGuard<'a, Vec<u8>>,
    added: Added,
}

impl Inserter<'_> {
    /// Inserts one entry, copying its key and value into the arena. Keys
    /// are unique because every write has its own sequence number (an entry
    /// under a key already in is left out, and the first stays).
    pub fn insert(&mut self, key: &[u8], value: &[u8], timestamp: u64, sequence: u64, tombstone: bool) {
        self.enter_row(key::row_part(key).unwrap_or(key));
        self.insert_in_row(key, value, timestamp, sequence, tombstone);
    }

    /// Sets the filter bits of `row` (an encoded row prefix, as
    /// [`key::row_part`] returns), for the entries of that row that
    /// [`Inserter::insert_in_row`] inserts next. The bits go in before the
    /// entries: a reader that can see an entry can see its bits (the module
    /// doc of `row_filter` says why). The cells of a row written together
    /// hash the row once: the bits of the row of the entry before are set
    /// already, and bits are never cleared.
    pub fn enter_row(&mut self, row: &[u8]) {
        if *self.last_row != row {
            self.added.bytes += self.memtable.rows.insert(cellar_sstable::filter_hash(row));
            self.last_row.clear();
            self.last_row.extend_from_slice(row);
        }
    }

    /// Inserts one entry of the row [`Inserter::enter_row`] entered last
    /// (its key must start with that row): what [`Inserter::insert`] does,
    /// without finding the row in the key and comparing it to the last one,
    /// for a writer that knows where its rows change.
    pub fn insert_in_row(&mut self, key: &[u8], value: &[u8], timestamp: u64, sequence: u64, tombstone: bool) {
        debug_assert!(key.starts_with(&self.last_row), "an entry outside the row entered");
        let (inserted, allocated) = self.list.insert(key, value);
        let added = &mut self.added;
        added.bytes += allocated;
        if !inserted {
            return;
        }
        added.entries += 1;
        added.tombstones += usize::from(tombstone);
        added.max_ts = added.max_ts.max(timestamp);
        added.max_seq = added.max_seq.max(sequence);
    }
}

impl Drop for Inserter<'_> {
    fn drop(&mut self) {
        let (m, added) = (self.memtable, &self.added);
        if added.entries == 0 && added.bytes == 0 {
            return;
        }
        m.bytes.fetch_add(added.bytes, Ordering::Relaxed);
        m.max_ts.fetch_max(added.max_ts, Ordering::Relaxed);
        m.max_seq.fetch_max(added.max_seq, Ordering::Relaxed);
        if added.tombstones > 0 {
            m.tombstones.fetch_add(added.tombstones, Ordering::Relaxed);
        }
        m.entries.fetch_add(added.entries, Ordering::Release);
    }
}

/// A position in a memtable, for a read that walks it in key order.
///
/// The cursor owns a handle on its memtable, so a read may keep it as long as
/// it likes (a scan is an iterator its caller holds), and stands on one
/// skip-list node: a step follows the node's next link, and nothing is
/// copied out of the memtable until the read returns a value. A step is a
/// load and a key comparison: no node is freed while the memtable lives, and
/// the cursor's handle keeps it alive.
pub(crate) struct MemtableCursor {
    memtable: Arc<Memtable>,
    /// The node the cursor stands on (`None` past the end), a node of
    /// `memtable`'s list.
    at: Option<NodeAddr>,
}

impl MemtableCursor {
    /// A cursor on the first entry of `memtable` whose key is at or after `target`.
    pub fn seek(memtable: Arc<Memtable>, target: &[u8]) -> MemtableCursor {
        let at = memtable.list.seek(&Probe::new(target)).map(|n| n.addr());
        MemtableCursor { memtable, at }
    }

    /// Moves to the first entry at or after `target`.
    pub fn reseek(&mut self, target: &[u8]) {
        self.at = self.memtable.list.seek(&Probe::new(target)).map(|n| n.addr());
    }

    /// The node the cursor stands on.
    fn node(&self) -> Option<skiplist::Node<'_>> {
        // SAFETY: `at` only ever holds nodes of this memtable's list (set by
        // `seek`, `reseek` and `next` from it), and the cursor's `Arc` keeps
        // the list alive as long as the borrow.
        self.at.map(|addr| unsafe { self.memtable.list.node(addr) })
    }

    /// Moves to the next entry (past the last one, the cursor has no entry).
    pub fn next(&mut self) {
        self.at = self.node().and_then(|n| n.next_entry()).map(|n| n.addr());
    }

    /// The current entry's key, if the cursor is on one.
    pub fn key(&self) -> Option<&[u8]> {
        self.node().map(|n| n.key())
    }

    /// The current entry's value, borrowed from the arena (empty past the
    /// end): for a reader that looks at it and keeps nothing, so nothing is
    /// copied.
    pub fn value_bytes(&self) -> &[u8] {
        self.node().map(|n| n.value()).unwrap_or_default()
    }

    /// The current entry's value, copied out of the arena (empty past the end).
    pub fn value(&self) -> Bytes {
        self.node().map(|n| copy_value(n.value())).unwrap_or_default()
    }

    /// Hands the current entry (key, value, both borrowed from the arena) to
    /// `visit`, and while `visit` answers true ("done with it") and the
    /// list holds another entry, steps to that entry and hands it over too,
    /// as [`BlockIter::walk`](cellar_sstable::BlockIter::walk) does within a
    /// block: a reader that takes many neighbouring entries (the cells of a
    /// row) follows the list's links in one loop.
    ///
    /// Returns true when `visit` declined an entry: the cursor stays on it.
    /// False when `visit` took the list's last entry (the cursor stays on
    /// it; [`MemtableCursor::next`] moves past it) or the cursor has no entry.
    pub fn walk(&mut self, mut visit: impl FnMut(&[u8], &[u8]) -> bool) -> bool {
        let Some(mut node) = self.node() else {
            return false;
        };
        loop {
            if !visit(node.key(), node.value()) {
                self.at = Some(node.addr());
                return true;
            }
            match node.next_entry() {
                Some(next) => node = next,
                None => {
                    self.at = Some(node.addr());
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{FIRST_CHUNK, LARGEST_CHUNK};
    use crate::key::Kind;

    fn put(m: &Memtable, row: &[u8], col: &[u8], ts: u64, seq: u64, value: &[u8]) {
        let k = key::encode(row, col, ts, seq, Kind::Put);
        m.insert(&k, value, ts, seq, false, 7);
    }

    proptest::proptest! {
        #[test]
        fn a_memtable_reads_as_a_sorted_map_of_its_entries(
            writes in proptest::collection::vec((0usize..5, 0usize..3, 0u64..3, 0usize..3), 0..80),
            snapshot in 0u64..90,
        ) {
            // Rows and columns with zero bytes (escaped in the key), rows of
            // 40 bytes (keys equal in their first 32 bytes), empty ones.
            let long = [b'w'; 40];
            let rows: [&[u8]; 5] = [b"", b"r", b"r\0", b"r\0zero", &long];
            let columns: [&[u8]; 3] = [b"", b"c", b"c\0"];
            let kinds = [Kind::Put, Kind::DeleteCell, Kind::DeleteRow];
            let m = Arc::new(Memtable::new());
            let mut model = std::collections::BTreeMap::new();
            let mut cells = std::collections::BTreeSet::new();
            // Three writes at a time through one inserter, as a batch goes in.
            for (batch, chunk) in writes.chunks(3).enumerate() {
                let mut inserter = m.inserter(batch as u64 + 1);
                for (i, &(r, c, ts, kind)) in chunk.iter().enumerate() {
                    let seq = (batch * 3 + i) as u64 + 1;
                    let (row, kind) = (rows[r], kinds[kind]);
                    let column = if kind == Kind::DeleteRow { &b""[..] } else { columns[c] };
                    let k = key::encode(row, column, ts, seq, kind);
                    let value = if kind.is_tombstone() { Vec::new() } else { k.iter().rev().copied().collect() };
                    inserter.insert(&k, &value, ts, seq, kind.is_tombstone());
                    cells.insert(key::prefix(&k).to_vec());
                    model.insert(k, value);
                }
            }
            let n = model.len();
            proptest::prop_assert_eq!((m.entries(), m.list.len(), m.is_empty()), (n, n, n == 0));
            let tombstones = model.keys().filter(|k| key::suffix(k).is_some_and(|(_, _, kind)| kind.is_tombstone())).count();
            proptest::prop_assert_eq!(m.tombstones(), tombstones);
            proptest::prop_assert_eq!(m.bytes(), m.list.allocated() + if n == 0 { 0 } else { m.rows.bytes() });
            proptest::prop_assert_eq!(
                m.key_range(),
                model.keys().next().cloned().zip(model.keys().next_back().cloned())
            );
            let mut all = Vec::new();
            m.for_each(|k, v| {
                all.push((k.to_vec(), v.to_vec()));
                Ok(())
            }).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(&all, &model.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
            // Every cell's newest entry within the snapshot, and how many were looked at.
            for cell in &cells {
                let with_prefix = model.range(cell.clone()..).take_while(|(k, _)| k.starts_with(cell));
                let mut examined = 0;
                let mut want = None;
                for (k, v) in with_prefix {
                    examined += 1;
                    if let Some(found) = key::suffix(k).filter(|&(_, seq, _)| seq <= snapshot) {
                        want = Some((found, Bytes::from(v.clone())));
                        break;
                    }
                }
                proptest::prop_assert_eq!(m.newest_with_prefix(cell, snapshot), (want, examined));
            }
            // A cursor from every cell, walked to the end; reseeks back and forth.
            let mut cursor = MemtableCursor::seek(m.clone(), b"");
            for cell in cells.iter().chain(cells.iter().rev()) {
                let mut from = MemtableCursor::seek(m.clone(), cell);
                for (k, v) in model.range(cell.clone()..) {
                    proptest::prop_assert_eq!((from.key(), from.value_bytes()), (Some(&k[..]), &v[..]));
                    proptest::prop_assert_eq!(from.value(), Bytes::from(v.clone()));
                    from.next();
                }
                proptest::prop_assert_eq!((from.key(), from.value_bytes(), from.value()), (None, &b""[..], Bytes::new()));
                from.next();
                proptest::prop_assert_eq!(from.key(), None);
                cursor.reseek(cell);
                proptest::prop_assert_eq!(cursor.key(), model.range(cell.clone()..).next().map(|(k, _)| &k[..]));
            }
        }
    }

    #[test]
    fn newest_visible_version_is_found_first() {
        let m = Memtable::new();
        put(&m, b"r", b"c", 10, 1, b"old");
        put(&m, b"r", b"c", 20, 2, b"new");
        put(&m, b"r", b"d", 30, 3, b"other");
        let prefix = key::cell_prefix(b"r", b"c");
        let (hit, examined) = m.newest_with_prefix(&prefix, u64::MAX);
        assert_eq!(hit.map(|(_, v)| v), Some(Bytes::from_static(b"new")));
        assert_eq!(examined, 1);
        // A snapshot taken before sequence 2 sees the old value.
        let (hit, examined) = m.newest_with_prefix(&prefix, 1);
        assert_eq!(hit.map(|(_, v)| v), Some(Bytes::from_static(b"old")));
        assert_eq!(examined, 2);
        assert_eq!(
            (m.entries(), m.max_ts(), m.max_seq(), m.first_log()),
            (3, 30, 3, Some(7))
        );
    }

    #[test]
    fn the_row_filter_is_sized_from_the_limits_and_counted_by_the_first_insert() {
        // 1 MiB holds at most 1 MiB / 80 + 1 = 13,108 entries: 131,080 bits, 513 blocks of 32 bytes.
        let by_bytes = Memtable::for_family(&FamilyOptions::default().memtable_max_bytes(1 << 20));
        // 100 entries: 1,000 bits, 4 blocks.
        let by_entries = Memtable::for_family(&FamilyOptions::default().memtable_max_entries(100));
        assert_eq!((by_bytes.rows.bytes(), by_entries.rows.bytes()), (513 * 32, 4 * 32));
        assert_eq!(by_entries.bytes(), 0, "nothing allocated while empty");
        put(&by_entries, b"r", b"c", 1, 1, b"v");
        assert_eq!(by_entries.bytes(), 4 * 32 + FIRST_CHUNK);
    }

    #[test]
    fn a_memtable_is_full_within_a_sixteenth_of_its_byte_limit() {
        // Chunks that grew to 2 MiB whatever the limit made a 3 MiB memtable
        // jump from 2 MiB of chunks to 4 MiB: full while a third empty.
        for limit in [3 << 20, 5 << 20, 1 << 20, 64 << 20] {
            let m = Memtable::for_family(&FamilyOptions::default().memtable_max_bytes(limit));
            let filter = m.rows.bytes();
            let mut seq = 0u64;
            while m.bytes() < limit {
                seq += 1;
                put(&m, &seq.to_be_bytes(), b"c", 1, seq, &[7; 1000]);
            }
            let chunks = m.bytes() - filter;
            assert!(
                chunks <= limit + limit / 16,
                "{limit}: {chunks} bytes of chunks when full"
            );
        }
    }

    #[test]
    fn a_memtable_with_no_reachable_byte_limit_takes_its_first_write_with_a_16_mib_filter() {
        // A byte limit of usize::MAX asked for a 137 GB filter at the first
        // write, and the allocation failure aborted the process.
        let m = Memtable::for_family(&FamilyOptions::default().memtable_max_bytes(usize::MAX));
        put(&m, b"r", b"c", 1, 1, b"v");
        assert_eq!(m.bytes(), (16 << 20) + FIRST_CHUNK);
        let hash = |row: &[u8]| cellar_sstable::filter_hash(&key::row_prefix(row));
        assert_eq!(m.may_hold_row(hash(b"r")), Some(true));
    }

    #[test]
    fn the_row_filter_answers_for_every_row_inserted_and_not_for_others() {
        let m = Memtable::new();
        let hash = |row: &[u8]| cellar_sstable::filter_hash(&key::row_prefix(row));
        assert_eq!(m.may_hold_row(hash(b"r1")), None, "an empty memtable has no filter");
        put(&m, b"r1", b"c", 1, 1, b"v");
        m.insert(&key::encode(b"r\0zero", b"", 2, 2, Kind::DeleteRow), b"", 2, 2, true, 7);
        put(&m, b"r\0zero", b"c", 1, 3, b"v");
        assert_eq!(
            [&b"r1"[..], b"r\0zero", b"r2", b"r"].map(|row| m.may_hold_row(hash(row))),
            [Some(true), Some(true), Some(false), Some(false)]
        );
    }

    #[test]
    fn the_cells_of_a_row_written_together_put_the_row_in_the_filter_once_and_every_row_is_found() {
        let m = Memtable::new();
        let hash = |row: &[u8]| cellar_sstable::filter_hash(&key::row_prefix(row));
        let cell = |row: &[u8], column: &[u8], seq| key::encode(row, column, 1, seq, Kind::Put);
        {
            // One write of three cells of r1 and one of r2.
            let mut write = m.inserter(7);
            for (seq, column) in [b"a", b"b", b"c"].into_iter().enumerate() {
                write.insert(&cell(b"r1", column, seq as u64 + 1), b"v", 1, seq as u64 + 1, false);
            }
            write.insert(&cell(b"r2", b"a", 4), b"v", 1, 4, false);
        }
        // A later write to r1 and to a row whose encoding r1's starts with.
        put(&m, b"r1", b"d", 1, 5, b"v");
        put(&m, b"r", b"a", 1, 6, b"v");
        assert_eq!(
            [&b"r1"[..], b"r2", b"r", b"r3"].map(|row| m.may_hold_row(hash(row))),
            [Some(true), Some(true), Some(true), Some(false)]
        );
        // The filter counted once, with the first entry.
        assert_eq!(m.bytes(), m.rows.bytes() + FIRST_CHUNK);
        assert_eq!(m.entries(), 6);
    }

    #[test]
    fn a_cursor_lends_its_value_from_the_arena_and_copies_it_only_when_asked() {
        let m = Arc::new(Memtable::new());
        put(&m, b"r", b"c", 1, 1, b"value");
        let target = key::cell_prefix(b"r", b"c");
        let (a, b) = (
            MemtableCursor::seek(m.clone(), &target),
            MemtableCursor::seek(m, &target),
        );
        // Two cursors on one entry lend the same bytes at the same address.
        assert_eq!((a.value_bytes(), b.value_bytes()), (&b"value"[..], &b"value"[..]));
        assert_eq!(a.value_bytes().as_ptr(), b.value_bytes().as_ptr());
        // A value taken out is a copy of its own.
        let copy = a.value();
        assert_eq!(&copy[..], b"value");
        assert_ne!(copy.as_ptr(), a.value_bytes().as_ptr());
    }

    #[test]
    fn a_memtables_bytes_are_its_arena_chunks_and_its_filter_and_a_large_entry_gets_a_chunk_of_its_own() -> Result<()> {
        let m = Memtable::new();
        let value = [7u8; 100];
        let mut grew = Vec::new();
        let mut n = 0u64;
        while grew.len() < 6 {
            let before = m.bytes();
            n += 1;
            put(&m, format!("row{n:04}").as_bytes(), b"c", 1, n, &value);
            // The first insert allocates the row filter too.
            let filter = if n == 1 { m.rows.bytes() } else { 0 };
            if m.bytes() - before > filter {
                grew.push(m.bytes() - before - filter);
            }
        }
        // Memory grows a chunk at a time, each as big as all before it.
        assert_eq!(grew, [4 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10]);
        assert_eq!(m.bytes(), m.rows.bytes() + m.list.allocated());
        let large = vec![9u8; LARGEST_CHUNK / 4];
        let before = m.bytes();
        put(&m, b"zlarge", b"c", 1, n + 1, &large);
        let key_len = key::encode(b"zlarge", b"c", 1, 1, Kind::Put).len();
        // A node of some height, its key and the value, rounded to 8 bytes.
        let alone = m.bytes() - before;
        assert!(
            (56 + key_len + large.len()..56 + 88 + key_len + large.len() + 8).contains(&alone),
            "{alone}"
        );
        assert_eq!(m.bytes(), m.rows.bytes() + m.list.allocated());
        let mut seen = 0;
        m.for_each(|k, v| {
            let row = key::parse(k).map(|k| k.row).unwrap_or_default();
            let expected: &[u8] = if row == b"zlarge" { &large } else { &value };
            assert_eq!(v, expected, "{row:?}");
            seen += 1;
            Ok(())
        })?;
        assert_eq!(seen, n + 1);
        Ok(())
    }

    #[test]
    fn readers_walk_a_memtable_in_key_order_while_the_writer_inserts() -> std::thread::Result<()> {
        use std::sync::atomic::AtomicBool;
        const ROWS: u64 = 20_000;
        // Rows in scrambled order, so inserts land all over the walks.
        let row = |i: u64| format!("r{:06}", i * 7_919 % ROWS).into_bytes();
        let m = Arc::new(Memtable::new());
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (m, stop) = (m.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut walks = 0u64;
                    while !stop.load(Ordering::Relaxed) || walks == 0 {
                        let mut cursor = MemtableCursor::seek(m.clone(), &[]);
                        let mut last: Option<Vec<u8>> = None;
                        while let Some(k) = cursor.key() {
                            assert!(last.as_deref().is_none_or(|l| l < k), "keys in order");
                            // Every entry's value is its row: the key and the
                            // value a reader reaches were written whole.
                            let parsed = key::parse(k).map(|k| k.row);
                            assert_eq!(parsed.as_deref(), Some(cursor.value_bytes()));
                            last = Some(k.to_vec());
                            cursor.next();
                        }
                        walks += 1;
                    }
                    walks
                })
            })
            .collect();
        for i in 0..ROWS {
            put(&m, &row(i), b"c", 1, i + 1, &row(i));
        }
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            assert!(reader.join()? > 0);
        }
        let mut cursor = MemtableCursor::seek(m, &[]);
        let mut seen = 0;
        while cursor.key().is_some() {
            seen += 1;
            cursor.next();
        }
        assert_eq!(seen, ROWS);
        Ok(())
    }

    #[test]
    fn a_cursor_keeps_its_memtable_alive_on_another_thread_after_every_other_handle_is_gone() -> std::thread::Result<()>
    {
        let m = Arc::new(Memtable::new());
        for i in 0..100u64 {
            put(
                &m,
                format!("r{i:03}").as_bytes(),
                b"c",
                1,
                i + 1,
                format!("v{i}").as_bytes(),
            );
        }
        // The only handle left moves into the cursor, and the cursor to a thread.
        let mut cursor = MemtableCursor::seek(m, &key::row_prefix(b"r050"));
        let values = std::thread::spawn(move || {
            let mut values = Vec::new();
            while cursor.key().is_some() {
                values.push(cursor.value());
                cursor.next();
            }
            values
        })
        .join()?;
        assert_eq!(values.len(), 50);
        assert_eq!((&values[0][..], &values[49][..]), (&b"v50"[..], &b"v99"[..]));
        Ok(())
    }

    #[test]
    fn cursors_read_their_memtable_whole_while_memtables_on_other_threads_take_back_dropped_chunks(
    ) -> std::thread::Result<()> {
        // Memtables of the default 64 MiB limit, each filled past 2 MiB (so
        // its later chunks are mapped huge pages, which go to the process's
        // spare list when it is dropped), written by three threads at once.
        // Every other one is dropped as soon as it is full; of the others a
        // cursor is the last handle, sent to a reader thread that walks half
        // of it at once and the rest once every writer is done, all the
        // later memtables made from the chunks dropped meanwhile. A chunk
        // handed out while a cursor stood in it would show the reader
        // another memtable's entries, or the poison every chunk starts with
        // in tests.
        const WRITERS: u8 = 3;
        const ROUNDS: u8 = 4;
        const ENTRIES: u64 = 2_500;
        let value_of = |tag: u8, i: u64| {
            let mut value = vec![tag; 1_000];
            value.extend_from_slice(&i.to_be_bytes());
            value
        };
        // Walks `cursor` (of memtable `tag`, at entry `*i`) for `steps`
        // entries at most, checking each.
        let walk = move |tag: u8, cursor: &mut MemtableCursor, i: &mut u64, steps: u64| {
            for _ in 0..steps {
                let Some(k) = cursor.key() else { break };
                let row = key::parse(k).map(|k| k.row).unwrap_or_default();
                assert_eq!(row, i.to_be_bytes(), "memtable {tag}: entry {i}'s key");
                assert!(
                    cursor.value_bytes() == value_of(tag, *i),
                    "memtable {tag}: entry {i}'s value"
                );
                *i += 1;
                cursor.next();
            }
        };
        let (send, receive) = std::sync::mpsc::channel::<(u8, MemtableCursor)>();
        let receive = Arc::new(parking_lot::Mutex::new(receive));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let receive = receive.clone();
                std::thread::spawn(move || {
                    let mut half_read = Vec::new();
                    loop {
                        let next = receive.lock().recv();
                        let Ok((tag, mut cursor)) = next else { break };
                        let mut i = 0;
                        walk(tag, &mut cursor, &mut i, ENTRIES / 2);
                        half_read.push((tag, cursor, i));
                    }
                    // Every writer is done: every chunk dropped was taken again.
                    for (tag, cursor, i) in &mut half_read {
                        walk(*tag, cursor, i, ENTRIES);
                        assert_eq!((*i, cursor.key()), (ENTRIES, None), "memtable {tag}");
                    }
                    half_read.len()
                })
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let send = send.clone();
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        let tag = w * ROUNDS + round;
                        let m = Arc::new(Memtable::new());
                        for i in 0..ENTRIES {
                            put(&m, &i.to_be_bytes(), b"c", 1, i + 1, &value_of(tag, i));
                        }
                        // Past the 2 MiB of growing chunks: a mapped one at least.
                        assert!(m.list.allocated() > LARGEST_CHUNK, "{} bytes", m.list.allocated());
                        if round % 2 == 1 {
                            let _ = send.send((tag, MemtableCursor::seek(m, &[])));
                        }
                    }
                })
            })
            .collect();
        drop(send);
        for writer in writers {
            writer.join()?;
        }
        let mut walked = 0;
        for reader in readers {
            walked += reader.join()?;
        }
        assert_eq!(walked, usize::from(WRITERS * ROUNDS / 2));
        Ok(())
    }

    #[test]
    fn an_entry_inserted_again_under_its_key_leaves_the_first_in_place_under_a_cursor() {
        // Never done by the store (every write has its own sequence number),
        // but a node a reader may stand on must never be replaced: the
        // second insert leaves the first entry where it is.
        let m = Arc::new(Memtable::new());
        put(&m, b"r", b"c", 1, 1, b"first");
        let prefix = key::cell_prefix(b"r", b"c");
        let cursor = MemtableCursor::seek(m.clone(), &prefix);
        put(&m, b"r", b"c", 1, 1, b"second");
        assert_eq!(cursor.value_bytes(), b"first");
        let (hit, examined) = m.newest_with_prefix(&prefix, u64::MAX);
        assert_eq!((hit.map(|(_, v)| v), examined), (Some(Bytes::from_static(b"first")), 1));
        assert_eq!((m.list.len(), m.entries()), (1, 1));
    }

    #[test]
    fn a_cursor_walks_keys_in_order_from_where_it_was_placed() {
        let m = Memtable::new();
        for i in 0..10u8 {
            put(&m, &[b'a' + i], b"c", 1, u64::from(i) + 1, &[i]);
        }
        let mut cursor = MemtableCursor::seek(Arc::new(m), &key::row_prefix(b"g"));
        let mut rows = Vec::new();
        while let Some(k) = cursor.key() {
            rows.push(key::parse(k).map(|k| k.row).unwrap_or_default());
            assert_eq!(cursor.value()[0] + b'a', rows.last().map_or(0, |r| r[0]));
            cursor.next();
        }
        assert_eq!(rows, vec![b"g".to_vec(), b"h".to_vec(), b"i".to_vec(), b"j".to_vec()]);
        assert_eq!(cursor.value(), Bytes::new());
        cursor.reseek(&key::row_prefix(b"b"));
        assert_eq!(cursor.key().and_then(key::parse).map(|k| k.row), Some(b"b".to_vec()));
    }
}
