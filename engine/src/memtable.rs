//! The memtable: the newest writes of one column family, sorted in memory.
//!
//! Every write lands here after it is in the log. The memtable is a concurrent
//! skip list (crossbeam-skiplist) keyed by the internal key, so readers walk it
//! while the writer inserts, without locks. When it passes its limit it is
//! frozen (no more inserts) and a background thread writes it out as a table
//! file; until that file is installed, reads still consult the frozen memtable.
//!
//! A memtable only grows: no entry is ever removed or replaced, and the whole
//! skip list is freed at once when the last handle on the memtable goes. That
//! is what lets readers walk it for free. A general concurrent skip list must
//! guard every node a reader stands on against a writer that unlinks and frees
//! it: crossbeam's `SkipMap` pins an epoch for each operation and counts each
//! cursor as a reference to its node (two atomic read-modify-writes per step).
//! Here no node is ever unlinked, so there is nothing to guard against: the
//! list is crossbeam's lower-level `base::SkipList`, walked with no epoch pin
//! and no reference count (see [`unguarded`] for the argument), as LevelDB's
//! and RocksDB's memtables are (their skip lists never delete either).
//!
//! The entries' bytes live in an *arena* ([`Arena`]): big chunks filled one
//! entry after another, as LevelDB's and RocksDB's memtables keep theirs. A
//! write then costs one allocation (the skip-list node), not two, and dropping
//! a flushed memtable frees a few hundred chunks instead of one buffer per
//! entry. (Measured on a YCSB load: the flush thread freeing buffers one by
//! one held the allocator's lock the writer needed, and the writer waited.)

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use crossbeam_epoch::Guard;
use crossbeam_skiplist::base::{self, SkipList};
use parking_lot::Mutex;

use crate::error::Result;
use crate::key::{self, Kind};
use crate::options::FamilyOptions;
use crate::row_filter::RowFilter;

/// A memtable entry: its internal key and value side by side in the arena,
/// with the key's first 32 bytes also kept inline in the skip-list node as
/// four big-endian integers (zero-padded). The entry is the skip list's key;
/// the list's value is empty.
///
/// * Key and value in one slice of an arena chunk: a put costs one allocation
///   (the node), not three (key, value, and the shared headers their handles need).
/// * The inline head: a skip-list insert or seek compares its key with a node at
///   every level. With the key bytes behind a pointer, each comparison costs a
///   second cache miss and a `memcmp` call; with the head inline, most are
///   decided by integer compares inside the node. The order is still plain
///   byte order: zero is the smallest byte, so padding a short key with zeros
///   never moves it past a key it is a prefix of, and equal heads fall back to
///   comparing the rest of the keys.
/// * Why 32 bytes: the cells of one row share their first bytes (the row), and
///   a read of a row seeks from column to column among them, past the piled
///   versions of a hot cell. With 16 bytes inline, a row key of 16 bytes or
///   more (YCSB's are 23) made every comparison between nodes of one row a
///   trip to the arena; 32 bytes hold such a row and the start of its column,
///   so a seek to the next column is decided inside the nodes until it reaches
///   the column's own versions. It costs no memory: the node does not grow
///   (a `u128` head aligned the node to 16 bytes, with padding; four `u64`s
///   need none, and some tower heights come out 8 bytes smaller).
#[derive(Debug)]
pub(crate) struct MemEntry {
    head: [u64; HEAD_WORDS],
    bytes: Bytes,
    key_len: usize,
}

impl MemEntry {
    fn new(bytes: Bytes, key_len: usize) -> MemEntry {
        let key_len = key_len.min(bytes.len());
        let mut padded = [0u8; HEAD_BYTES];
        let n = key_len.min(HEAD_BYTES);
        if let (Some(dst), Some(src)) = (padded.get_mut(..n), bytes.get(..n)) {
            dst.copy_from_slice(src);
        }
        let mut head = [0u64; HEAD_WORDS];
        for (word, chunk) in head.iter_mut().zip(padded.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *word = u64::from_be_bytes(b);
        }
        MemEntry { head, bytes, key_len }
    }

    /// The internal key.
    pub fn key(&self) -> &[u8] {
        self.bytes.get(..self.key_len).unwrap_or_default()
    }

    /// The key past its inline head (empty for a key that fits in it).
    fn tail(&self) -> &[u8] {
        self.bytes.get(HEAD_BYTES..self.key_len).unwrap_or_default()
    }

    /// The value's bytes, borrowed from the arena.
    pub fn value_bytes(&self) -> &[u8] {
        self.bytes.get(self.key_len..).unwrap_or_default()
    }

    /// A probe for a seek to `target`: an entry with no value, compared by
    /// the skip list exactly as stored entries are, inline head first. (A
    /// seek by a plain byte slice would compare whole keys at every step,
    /// each behind a pointer to the node's buffer: a cache miss more per
    /// level.) The probe borrows `target`, so a seek allocates nothing.
    fn probe(target: &[u8]) -> Probe<'_> {
        // SAFETY: the `Bytes` claims `target` lives for ever, but it never
        // leaves the returned `Probe`, which borrows `target` for as long as
        // it lives: `Probe` hands out only `&MemEntry`, and a `MemEntry`
        // cannot be cloned or moved out of a shared reference, so the bytes
        // are never read after `target` goes. (A static `Bytes` frees
        // nothing when dropped.)
        let target_for_ever: &'static [u8] = unsafe { std::mem::transmute::<&[u8], &'static [u8]>(target) };
        Probe {
            entry: MemEntry::new(Bytes::from_static(target_for_ever), target.len()),
            _target: std::marker::PhantomData,
        }
    }

    /// The value, copied out of the arena: a reader that keeps it does not
    /// keep the memtable's chunk (and with it a whole flushed memtable's
    /// neighbours) alive. LevelDB and RocksDB copy out of their memtables too.
    pub fn value(&self) -> Bytes {
        Bytes::copy_from_slice(self.value_bytes())
    }
}

impl PartialEq for MemEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for MemEntry {}

impl Ord for MemEntry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Equal heads: the keys agree on their first 32 bytes, counting the
        // zeros that pad a short key. Two keys longer than that are ordered by
        // the rest; a key that fits in its head (no tail) is a prefix of the
        // other, so it comes first unless both fit, and then the shorter
        // (a prefix of the other, the rest being zeros) does.
        self.head
            .cmp(&other.head)
            .then_with(|| self.tail().cmp(other.tail()))
            .then_with(|| self.key_len.cmp(&other.key_len))
    }
}

impl PartialOrd for MemEntry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Bytes of a key kept inline in its skip-list node, and the words holding them.
const HEAD_BYTES: usize = 32;
const HEAD_WORDS: usize = HEAD_BYTES / 8;

/// A [`MemEntry`] for a seek, borrowing its key from the caller
/// (see [`MemEntry::probe`]).
struct Probe<'t> {
    entry: MemEntry,
    _target: std::marker::PhantomData<&'t [u8]>,
}

/// A probe has a `Drop` (which does nothing) only so that its entry, whose
/// key borrows the target for `'static`, cannot be moved out of it and kept.
impl Drop for Probe<'_> {
    fn drop(&mut self) {}
}

impl std::ops::Deref for Probe<'_> {
    type Target = MemEntry;

    fn deref(&self) -> &MemEntry {
        &self.entry
    }
}

/// The newest visible entry of a cell in one source: its key's
/// `(timestamp, sequence, kind)` and its value.
pub(crate) type Hit = ((u64, u64, Kind), Bytes);

/// Bytes an entry costs in memory beyond its key and value, so that the byte
/// limit measures memory, not payload: the skip-list node (the inline key head,
/// the handle on its arena slice, the key length, a refcount and on average
/// 1.33 tower pointers) and the allocator's rounding and bookkeeping on it.
/// (The arena's chunks are counted as they are allocated.) Measured: 1M
/// entries of 45-byte keys and 100-byte values grew the process by 262 bytes
/// each, 145 of them in the arena.
const NODE_OVERHEAD: usize = 117;

/// Size of the first arena chunk of a memtable, and of its largest.
///
/// A chunk is one allocation holding many entries. Each new chunk is as big
/// as all the chunks before it together (between these two sizes), so a
/// memtable written rarely holds 4 KiB, and a busy one allocates a chunk per
/// 64 KiB of entries. A chunk wastes the room left at its end when the next
/// entry does not fit; an entry over a quarter of a chunk gets an allocation
/// of its own (LevelDB's rule), so at most a quarter is ever wasted.
const FIRST_CHUNK: usize = 4 << 10;
const LARGEST_CHUNK: usize = 64 << 10;

/// Where a memtable's entries keep their bytes: one chunk filled from the
/// front, entry after entry. Each entry is a `Bytes` handle on its own slice
/// of a chunk (the chunk counts its handles), so a chunk is freed when the
/// last entry in it goes, which is when the memtable is dropped after its flush.
struct Arena {
    /// A lock only because a memtable is shared; the store's single writer
    /// is the only one to take it.
    state: Mutex<ArenaState>,
}

struct ArenaState {
    /// The chunk being filled: empty, with the free room as its capacity.
    chunk: BytesMut,
    /// Bytes of the chunks allocated so far.
    allocated: usize,
    /// The encoded row of the last entry inserted, already in the row
    /// filter (kept here, under the writer's lock, to be reused).
    last_row: Vec<u8>,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            state: Mutex::new(ArenaState {
                chunk: BytesMut::new(),
                allocated: 0,
                last_row: Vec::new(),
            }),
        }
    }
}

impl ArenaState {
    /// Copies `key ++ value` into the arena; returns its slice and the bytes
    /// newly allocated for it (a new chunk's size, or 0).
    fn store(&mut self, key: &[u8], value: &[u8]) -> (Bytes, usize) {
        let len = key.len() + value.len();
        let next_chunk = self.allocated.clamp(FIRST_CHUNK, LARGEST_CHUNK);
        if len > next_chunk / 4 {
            let mut own = BytesMut::with_capacity(len);
            own.extend_from_slice(key);
            own.extend_from_slice(value);
            return (own.freeze(), len);
        }
        let mut allocated = 0;
        if self.chunk.capacity() < len {
            self.chunk = BytesMut::with_capacity(next_chunk);
            self.allocated += next_chunk;
            allocated = next_chunk;
        }
        self.chunk.extend_from_slice(key);
        self.chunk.extend_from_slice(value);
        // `split` hands out the filled front and keeps the free room: no copy.
        (self.chunk.split().freeze(), allocated)
    }
}

/// The guard every operation on a memtable's skip list runs under: none.
///
/// crossbeam's skip list takes a [`Guard`] with every call because, in
/// general, a node may be unlinked by one thread while another stands on it:
/// the unlinking thread hands the node's memory to epoch reclamation, which
/// frees it only once every thread pinned at the time has unpinned. Readers
/// pin; the writer defers. A memtable needs none of it, and runs everything
/// under crossbeam's `unprotected` guard (whose deferred work would run at
/// once, and which pins nothing), because:
///
/// 1. *No node is ever unlinked.* This module never calls the list's
///    `remove`, `pop_front`, `pop_back` or `clear`, nor `insert`, which
///    unlinks an entry with an equal key to replace it: entries go in with
///    `get_or_insert`, which leaves an equal entry where it is (there is
///    none in practice: every write has its own sequence number). crossbeam
///    defers work to the epoch only to free an unlinked node, so nothing is
///    ever deferred, and nothing can be freed under a reader.
/// 2. *Nodes are freed only with the whole list*, by its `Drop`, when the
///    [`Memtable`] is dropped: which needs every `Arc` on it gone (a
///    [`MemtableCursor`] holds one) and every borrow of it ended (the borrow
///    checker sees to [`Memtable::newest_with_prefix`] and the others).
/// 3. *Ordering does not come from the guard.* A node is published by a
///    compare-and-swap (sequentially consistent) after its key is written,
///    and readers load the links with consume ordering whatever the guard
///    (an acquire load on x86_64; dependency-ordered on ARM, which suffices
///    here because the key is read through the loaded pointer), so a reader
///    that reaches a node sees its key.
///
/// What it saves: a pin per read (a fenced write to the thread's epoch
/// slot), and on every cursor step the reference count crossbeam's `SkipMap`
/// keeps on the node a cursor stands on (an atomic increment on the new
/// node, a decrement on the old one). A scan that holds a cursor for long
/// holds back no one's memory reclamation either. The tests at the end of
/// this module walk a memtable while a writer inserts and keep a cursor
/// past every other handle; `engine/tests/concurrency.rs` keeps a scan past
/// its memtable's flush and the store's close. The argument rests on
/// crossbeam-skiplist's internals, so the workspace pins its version.
fn unguarded() -> &'static Guard {
    // SAFETY: the three points above: nothing this module does with a
    // memtable's skip list defers or frees a node while a reader can reach it.
    unsafe { crossbeam_epoch::unprotected() }
}

/// A sorted in-memory table of entries `(internal key -> value)`.
pub(crate) struct Memtable {
    /// The entries, keyed by [`MemEntry`]; every operation on it runs
    /// under [`unguarded`], whose argument rests on what this module does
    /// (and does not do) with it.
    map: SkipList<MemEntry, ()>,
    arena: Arena,
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
    /// (each entry costs at least [`NODE_OVERHEAD`] of its byte limit).
    pub fn for_family(options: &FamilyOptions) -> Memtable {
        let by_bytes = options.memtable_max_bytes / NODE_OVERHEAD + 1;
        let entries = options.memtable_max_entries.map_or(by_bytes, |n| n.min(by_bytes));
        Memtable {
            rows: RowFilter::for_entries(entries),
            map: SkipList::new(crossbeam_epoch::default_collector().clone()),
            arena: Arena::new(),
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
            arena: self.arena.state.lock(),
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

    /// Approximate memory used, in bytes (its row filter included).
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
        let first = self.map.front(unguarded())?;
        let last = self.map.back(unguarded())?;
        Some((first.key().key().to_vec(), last.key().key().to_vec()))
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
        let probe = MemEntry::probe(prefix);
        let mut entry = self.map.lower_bound(Bound::Included(&*probe), unguarded());
        while let Some(e) = entry {
            if !e.key().key().starts_with(prefix) {
                break;
            }
            examined += 1;
            if let Some(found) = key::suffix(e.key().key()).filter(|&(_, seq, _)| seq <= snapshot) {
                return (Some((found, e.key().value())), examined);
            }
            entry = e.next();
        }
        (None, examined)
    }

    /// Every entry in key order, as `(key, value)` borrowed from the arena (used by flush).
    pub fn for_each(&self, mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut entry = self.map.front(unguarded());
        while let Some(e) = entry {
            visit(e.key().key(), e.key().value_bytes())?;
            entry = e.next();
        }
        Ok(())
    }
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
/// and a skip-list insert. The rest is done once for the whole write: the
/// arena's lock is taken once, and the memtable's counters (bytes,
/// entries, largest timestamp and sequence) are shared atomics updated
/// once, when the inserter is dropped. Until then `bytes()` and
/// `entries()` lag behind what is in the skip list; the writer reads them
/// only after its inserts, and readers see the entries only once the
/// store's visible sequence passes them, which happens later still.
pub(crate) struct Inserter<'a> {
    memtable: &'a Memtable,
    arena: parking_lot::MutexGuard<'a, ArenaState>,
    added: Added,
}

impl Inserter<'_> {
    /// Inserts one entry, copying its key and value into the arena. Keys
    /// are unique because every write has its own sequence number.
    pub fn insert(&mut self, key: &[u8], value: &[u8], timestamp: u64, sequence: u64, tombstone: bool) {
        // The row's filter bits before the entry: a reader that can see the
        // entry can see its bits (the module doc of `row_filter` says why).
        // The cells of a row written together hash the row once: the bits of
        // the row of the entry before are set already, and bits are never
        // cleared.
        let row = key::row_part(key).unwrap_or(key);
        let mut filter_bytes = 0;
        if self.arena.last_row != row {
            filter_bytes = self.memtable.rows.insert(cellar_sstable::filter_hash(row));
            self.arena.last_row.clear();
            self.arena.last_row.extend_from_slice(row);
        }
        let (bytes, allocated) = self.arena.store(key, value);
        let added = &mut self.added;
        added.bytes += filter_bytes + allocated + NODE_OVERHEAD;
        added.entries += 1;
        added.tombstones += usize::from(tombstone);
        added.max_ts = added.max_ts.max(timestamp);
        added.max_seq = added.max_seq.max(sequence);
        // `get_or_insert`, never `insert`: an insert would unlink an equal
        // entry to replace it, and nothing may be unlinked (see `unguarded`).
        // The handle it returns counts as a reference to the node; it is
        // never released, which is harmless: the count only decides when an
        // unlinked node may be freed, and the list's drop frees every node.
        let _node = self
            .memtable
            .map
            .get_or_insert(MemEntry::new(bytes, key.len()), (), unguarded());
    }
}

impl Drop for Inserter<'_> {
    fn drop(&mut self) {
        let (m, added) = (self.memtable, &self.added);
        if added.entries == 0 {
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

/// The entry a cursor stands on (`None` past the end).
struct Position<'a>(Option<base::Entry<'a, 'a, MemEntry, ()>>);

// SAFETY: an entry is a reference to its skip list, one to its node, and one
// to the guard it was found under. The list and its nodes hold only atomics
// and `MemEntry`s, which are `Send` and `Sync`. The guard is crossbeam's
// `unprotected` one (see `unguarded`): a static with no thread's epoch
// behind it, which crossbeam itself shares between threads, and which
// nothing here uses to pin or to defer. So a cursor may move to another
// thread (a scan handed to a worker) as its `SkipMap` entry could.
unsafe impl Send for Position<'_> {}
// SAFETY: as for `Send`; a shared cursor only reads.
unsafe impl Sync for Position<'_> {}

self_cell::self_cell!(
    /// A memtable handle and a skip-list entry borrowed from it.
    struct PositionCell {
        owner: Arc<Memtable>,
        #[covariant]
        dependent: Position,
    }
);

/// A position in a memtable, for a read that walks it in key order.
///
/// The cursor owns a handle on its memtable, so a read may keep it as long as
/// it likes (a scan is an iterator its caller holds), and stands on one
/// skip-list node: a step follows the node's next pointer, and nothing is
/// copied out of the memtable until the read returns a value. A step is a
/// load and a key comparison: the node needs no reference count and the
/// thread no epoch pin, because no node is freed while the memtable lives
/// (see [`unguarded`]), and the cursor's handle keeps it alive.
pub(crate) struct MemtableCursor(PositionCell);

impl MemtableCursor {
    /// A cursor on the first entry of `memtable` whose key is at or after `target`.
    pub fn seek(memtable: Arc<Memtable>, target: &[u8]) -> MemtableCursor {
        let probe = MemEntry::probe(target);
        MemtableCursor(PositionCell::new(memtable, |m| {
            Position(m.map.lower_bound(Bound::Included(&*probe), unguarded()))
        }))
    }

    /// Moves to the first entry at or after `target`.
    pub fn reseek(&mut self, target: &[u8]) {
        let probe = MemEntry::probe(target);
        self.0.with_dependent_mut(|m, position| {
            position.0 = m.map.lower_bound(Bound::Included(&*probe), unguarded());
        });
    }

    /// Moves to the next entry (past the last one, the cursor has no entry).
    pub fn next(&mut self) {
        self.0.with_dependent_mut(|_, position| {
            if position.0.as_mut().is_some_and(|e| !e.move_next()) {
                position.0 = None;
            }
        });
    }

    /// The current entry's key, if the cursor is on one.
    pub fn key(&self) -> Option<&[u8]> {
        self.0.borrow_dependent().0.as_ref().map(|e| e.key().key())
    }

    /// The current entry's value, borrowed from the arena (empty past the
    /// end): for a reader that looks at it and keeps nothing, so nothing is
    /// copied.
    pub fn value_bytes(&self) -> &[u8] {
        self.0
            .borrow_dependent()
            .0
            .as_ref()
            .map(|e| e.key().value_bytes())
            .unwrap_or_default()
    }

    /// The current entry's value, a handle on the entry's buffer (empty past the end).
    pub fn value(&self) -> Bytes {
        self.0
            .borrow_dependent()
            .0
            .as_ref()
            .map(|e| e.key().value())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Kind;

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
    fn the_row_filter_is_sized_from_the_limits_and_counted_by_the_first_insert() {
        // 1 MiB holds at most 1 MiB / 117 + 1 = 8,963 entries: 89,630 bits, 351 blocks of 32 bytes.
        let by_bytes = Memtable::for_family(&FamilyOptions::default().memtable_max_bytes(1 << 20));
        // 100 entries: 1,000 bits, 4 blocks.
        let by_entries = Memtable::for_family(&FamilyOptions::default().memtable_max_entries(100));
        assert_eq!((by_bytes.rows.bytes(), by_entries.rows.bytes()), (351 * 32, 4 * 32));
        assert_eq!(by_entries.bytes(), 0, "nothing allocated while empty");
        put(&by_entries, b"r", b"c", 1, 1, b"v");
        let arena = FIRST_CHUNK;
        assert_eq!(by_entries.bytes(), 4 * 32 + arena + NODE_OVERHEAD);
    }

    #[test]
    fn a_memtable_with_no_reachable_byte_limit_takes_its_first_write_with_a_16_mib_filter() {
        // A byte limit of usize::MAX asked for a 137 GB filter at the first
        // write, and the allocation failure aborted the process.
        let m = Memtable::for_family(&FamilyOptions::default().memtable_max_bytes(usize::MAX));
        put(&m, b"r", b"c", 1, 1, b"v");
        assert_eq!(m.bytes(), (16 << 20) + FIRST_CHUNK + NODE_OVERHEAD);
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
        assert_eq!(m.bytes(), m.rows.bytes() + FIRST_CHUNK + 6 * NODE_OVERHEAD);
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
    fn arena_chunks_grow_with_the_memtable_and_a_large_entry_gets_its_own() -> Result<()> {
        let m = Memtable::new();
        let value = [7u8; 100];
        let entry = key::encode(b"row0000", b"c", 1, 1, Kind::Put).len() + value.len();
        let mut chunks = Vec::new();
        let mut n = 0u64;
        while chunks.len() < 6 {
            let before = m.bytes();
            n += 1;
            put(&m, format!("row{n:04}").as_bytes(), b"c", 1, n, &value);
            // The first insert allocates the row filter too.
            let filter = if n == 1 { m.rows.bytes() } else { 0 };
            let grew = m.bytes() - before - NODE_OVERHEAD - filter;
            if grew > 0 {
                chunks.push(grew);
            }
        }
        // Each chunk as big as all before it: 4, 4, 8, 16, 32, then 64 KiB at most.
        assert_eq!(chunks, [4 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10]);
        // The chunk before the last held as many entries as fit in it.
        assert_eq!(
            n as usize - 1,
            [4, 4, 8, 16, 32].iter().map(|k| (k << 10) / entry).sum::<usize>()
        );
        let large = vec![9u8; LARGEST_CHUNK / 4];
        let before = m.bytes();
        put(&m, b"zlarge", b"c", 1, n + 1, &large);
        let large_entry = key::encode(b"zlarge", b"c", 1, 1, Kind::Put).len() + large.len();
        assert_eq!(m.bytes() - before, large_entry + NODE_OVERHEAD, "allocated alone");
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
    fn an_entry_inserted_again_under_its_key_leaves_the_first_in_place_under_a_cursor() {
        // Never done by the store (every write has its own sequence number),
        // but it is what keeps the skip list from ever unlinking a node a
        // reader may stand on: a replacing insert would free the first entry
        // under the cursor.
        let m = Arc::new(Memtable::new());
        put(&m, b"r", b"c", 1, 1, b"first");
        let prefix = key::cell_prefix(b"r", b"c");
        let cursor = MemtableCursor::seek(m.clone(), &prefix);
        put(&m, b"r", b"c", 1, 1, b"second");
        assert_eq!(cursor.value_bytes(), b"first");
        let (hit, examined) = m.newest_with_prefix(&prefix, u64::MAX);
        assert_eq!((hit.map(|(_, v)| v), examined), (Some(Bytes::from_static(b"first")), 1));
        assert_eq!(m.map.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn entry_order_is_key_byte_order(
            a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48),
            b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48),
        ) {
            let (ka, kb) = (MemEntry::new(Bytes::from(a.clone()), a.len()), MemEntry::new(Bytes::from(b.clone()), b.len()));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            proptest::prop_assert_eq!(ka == kb, a == b);
        }

        #[test]
        fn entry_order_is_key_byte_order_when_the_heads_agree(
            shared in proptest::collection::vec(0u8..2, 0..40),
            a in proptest::collection::vec(0u8..2, 0..12),
            b in proptest::collection::vec(0u8..2, 0..12),
        ) {
            // Keys of zeros and ones with a long common start: their inline
            // heads are mostly equal, and zero bytes meet the zero padding.
            let (a, b) = ([&shared[..], &a[..]].concat(), [&shared[..], &b[..]].concat());
            let (ka, kb) = (MemEntry::new(Bytes::from(a.clone()), a.len()), MemEntry::new(Bytes::from(b.clone()), b.len()));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            proptest::prop_assert_eq!(ka == kb, a == b);
        }
    }

    #[test]
    fn an_entry_with_its_32_byte_head_is_72_bytes_so_a_node_stays_80_plus_its_tower() {
        // crossbeam's node: the entry, a reference count and height (8 bytes),
        // then the tower. With a 16-byte-aligned `u128` head the entry was 64
        // bytes and the node padded to 80 all the same.
        assert_eq!(
            (std::mem::size_of::<MemEntry>(), std::mem::align_of::<MemEntry>()),
            (72, 8)
        );
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
