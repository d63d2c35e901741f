//! The memtable: the newest writes of one column family, sorted in memory.
//!
//! Every write lands here after it is in the log. The memtable is a skip list
//! ([`SkipList`]) keyed by the internal key, one entry per cell version, so
//! readers walk it while the writer inserts, without locks. When it passes its
//! limit it is frozen (no more inserts) and a background thread writes it out
//! as a table file; until that file is installed, reads still consult the
//! frozen memtable.
//!
//! The entries live in an *arena*: big chunks filled one node after another
//! (node, key and value in one piece), as LevelDB's and RocksDB's memtables
//! keep theirs. A write costs no allocation of its own, the memtable's size is
//! the chunks it allocated, and dropping a flushed memtable frees a few
//! hundred chunks instead of one buffer per entry. (Measured on a YCSB load:
//! the flush thread freeing buffers one by one held the allocator's lock the
//! writer needed, and the writer waited.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::key::{self, Kind};
use crate::skiplist::{RawPosition, SkipList};

/// The newest visible entry of a cell in one source: its key's
/// `(timestamp, sequence, kind)` and its value.
pub(crate) type Hit = ((u64, u64, Kind), Bytes);

/// A sorted in-memory table of entries `(internal key -> value)`.
pub(crate) struct Memtable {
    list: SkipList,
    /// Bytes of the arena's chunks: what the memtable holds in memory.
    bytes: AtomicUsize,
    entries: AtomicUsize,
    tombstones: AtomicUsize,
    max_ts: AtomicU64,
    max_seq: AtomicU64,
    /// The log segment that held this memtable's first write (0 while empty).
    first_log: AtomicU64,
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Memtable {
        Memtable {
            list: SkipList::new(),
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
    ///
    /// The counters are updated inside the list's writer lock, so plain loads
    /// and stores keep them exact: a read-modify-write atomic (`fetch_add`,
    /// and `fetch_max`'s compare-and-swap loop) costs a locked instruction,
    /// five of them per cell were ~3% of a YCSB load's writer.
    pub fn insert(&self, key: &[u8], value: &[u8], timestamp: u64, sequence: u64, tombstone: bool, log: u64) {
        self.list.insert(key, value, |bytes| {
            if self.first_log.load(Ordering::Relaxed) == 0 {
                self.first_log.store(log, Ordering::Relaxed);
            }
            self.bytes.store(bytes, Ordering::Relaxed);
            if timestamp > self.max_ts.load(Ordering::Relaxed) {
                self.max_ts.store(timestamp, Ordering::Relaxed);
            }
            if sequence > self.max_seq.load(Ordering::Relaxed) {
                self.max_seq.store(sequence, Ordering::Relaxed);
            }
            if tombstone {
                self.tombstones
                    .store(self.tombstones.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            }
            // Release: a reader that sees the count sees the entries counted.
            self.entries
                .store(self.entries.load(Ordering::Relaxed) + 1, Ordering::Release);
        });
    }

    /// Approximate memory used, in bytes.
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
        let (first, _) = self.list.first().entry()?;
        let last = self.list.last_key()?;
        Some((first.to_vec(), last.to_vec()))
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
        let mut at = self.list.lower_bound(prefix);
        while let Some((k, value)) = at.entry() {
            if !k.starts_with(prefix) {
                break;
            }
            examined += 1;
            if let Some(found) = key::suffix(k).filter(|&(_, seq, _)| seq <= snapshot) {
                return (Some((found, Bytes::copy_from_slice(value))), examined);
            }
            at = at.next();
        }
        (None, examined)
    }

    /// Every entry in key order, as `(key, value)` borrowed from the arena (used by flush).
    pub fn for_each(&self, mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut at = self.list.first();
        while let Some((k, v)) = at.entry() {
            visit(k, v)?;
            at = at.next();
        }
        Ok(())
    }
}

/// What a read held while it walked the memtables; now nothing.
///
/// The crossbeam skip list the memtable used before needed an epoch pin
/// around each read. The arena list needs none: its nodes live as long as
/// the memtable, which the read holds. The read path's calls still compile
/// and cost nothing (a zero-sized value); they can go.
pub(crate) struct ReadPin;

/// See [`ReadPin`].
pub(crate) fn pin_for_read() -> ReadPin {
    ReadPin
}

/// A position in a memtable, for a read that walks it in key order.
///
/// The cursor owns a handle on its memtable, so a read may keep it as long as
/// it likes (a scan is an iterator its caller holds), and stands on one
/// skip-list node: a step follows the node's next pointer, and nothing is
/// copied out of the memtable until the read returns a value.
pub(crate) struct MemtableCursor {
    memtable: Arc<Memtable>,
    /// A node of `memtable`'s list (or past its end).
    at: RawPosition,
}

impl MemtableCursor {
    /// A cursor on the first entry of `memtable` whose key is at or after `target`.
    pub fn seek(memtable: Arc<Memtable>, target: &[u8]) -> MemtableCursor {
        let at = memtable.list.lower_bound(target).into_raw();
        MemtableCursor { memtable, at }
    }

    /// Moves to the first entry at or after `target`.
    pub fn reseek(&mut self, target: &[u8]) {
        self.at = self.memtable.list.lower_bound(target).into_raw();
    }

    fn position(&self) -> crate::skiplist::Position<'_> {
        // SAFETY: `at` always comes from this memtable's list, which the
        // cursor keeps alive.
        unsafe { self.at.attach(&self.memtable.list) }
    }

    /// Moves to the next entry (past the last one, the cursor has no entry).
    pub fn next(&mut self) {
        self.at = self.position().next().into_raw();
    }

    /// The current entry's key, if the cursor is on one.
    pub fn key(&self) -> Option<&[u8]> {
        self.position().entry().map(|(k, _)| k)
    }

    /// The current entry's value, copied out of the arena (empty past the
    /// end): a reader that keeps it does not keep the memtable (and with it
    /// a whole flushed memtable's chunks) alive. LevelDB and RocksDB copy out
    /// of their memtables too.
    pub fn value(&self) -> Bytes {
        self.position()
            .entry()
            .map(|(_, v)| Bytes::copy_from_slice(v))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Kind;
    use crate::skiplist::LARGEST_CHUNK;

    fn put(m: &Memtable, row: &[u8], col: &[u8], ts: u64, seq: u64, value: &[u8]) {
        let k = key::encode(row, col, ts, seq, Kind::Put);
        m.insert(&k, value, ts, seq, false, 7);
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
    fn arena_chunks_grow_with_the_memtable_and_a_large_entry_gets_its_own() -> Result<()> {
        let m = Memtable::new();
        assert_eq!(m.bytes(), 0, "an empty memtable holds no chunk");
        let value = [7u8; 100];
        let mut chunks = Vec::new();
        let mut n = 0u64;
        while chunks.len() < 6 {
            let before = m.bytes();
            n += 1;
            put(&m, format!("row{n:04}").as_bytes(), b"c", 1, n, &value);
            let grew = m.bytes() - before;
            if grew > 0 {
                chunks.push(grew);
            }
        }
        // Each chunk as big as all before it: 4, 4, 8, 16, 32, then 64 KiB at most.
        assert_eq!(chunks, [4 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10]);
        let large = vec![9u8; LARGEST_CHUNK / 4];
        let before = m.bytes();
        put(&m, b"zlarge", b"c", 1, n + 1, &large);
        let large_entry = key::encode(b"zlarge", b"c", 1, 1, Kind::Put).len() + large.len();
        // Allocated alone: the entry, a 40-byte node and its tower (1 to 12
        // pointers), rounded up to 8 bytes.
        let grew = m.bytes() - before;
        assert!((large_entry + 48..large_entry + 40 + 96 + 8).contains(&grew), "{grew}");
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
