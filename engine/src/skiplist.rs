//! The memtable's skip list: sorted entries in an arena, one writer, readers
//! without locks.
//!
//! A skip list is a sorted linked list with express lanes: every node is on
//! level 0, about one in four also on level 1, one in sixteen on level 2, and
//! so on, so a search runs along the top lane and drops a level each time it
//! would overshoot, O(log n) steps in all. This is LevelDB's memtable list
//! (`db/skiplist.h`), and RocksDB's `InlineSkipList`, with their two
//! properties that make it cheap:
//!
//! * **Nodes live in an arena and are never removed.** A node, its tower of
//!   next pointers, its key and its value are one bump allocation in a big
//!   chunk; the chunks are freed together when the memtable is dropped, after
//!   its flush. So an insert costs no `malloc` (the allocator call was ~10% of
//!   a YCSB load's writer, with its lock shared with the flush thread), and a
//!   reader needs no reference counts or epochs to keep a node alive: holding
//!   the memtable (an `Arc`) is enough.
//! * **One writer, readers at any time.** The store's writer inserts under its
//!   write lock (and this list's own lock, so it is safe whoever calls). A node
//!   is filled in completely, then linked in from level 0 up, each link a
//!   *release* store that a reader's *acquire* load pairs with: a reader that
//!   reaches a node sees all of it, and a reader that does not yet see it at
//!   some level simply finds the old next node there.
//!
//! One more from RocksDB (`InsertWithHint`, the "splice"): the writer keeps the
//! neighbours it found at every level for its last insert. The cells of one
//! row usually arrive in key order and land next to each other, so the next
//! insert checks those neighbours first and searches only the levels where the
//! key no longer fits between them: a ten-cell row costs one search from the
//! top, not ten.

use std::alloc::{self, Layout};
use std::cmp::Ordering as KeyOrdering;
use std::mem;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Levels a node can be on: with one node in four promoted, 12 levels keep
/// searches logarithmic up to 4^12 = 16M entries (LevelDB's figure).
const MAX_HEIGHT: usize = 12;

/// One node in four goes up a level: 1.33 next pointers per node on average.
const BRANCHING: u32 = 4;

/// Alignment of every node in the arena (its fields are 8-byte words).
const NODE_ALIGN: usize = 8;

/// Size of the first arena chunk of a list, and of its largest.
///
/// A chunk is one allocation holding many nodes. Each new chunk is as big as
/// all the chunks before it together (between these two sizes), so a memtable
/// written rarely holds 4 KiB, and a busy one allocates a chunk per 64 KiB of
/// entries. A chunk wastes the room left at its end when the next node does
/// not fit; a node over a quarter of a chunk gets an allocation of its own
/// (LevelDB's rule), so at most a quarter is ever wasted.
pub(crate) const FIRST_CHUNK: usize = 4 << 10;
pub(crate) const LARGEST_CHUNK: usize = 64 << 10;

/// A node's fixed part. In memory it is followed by its tower (`height` next
/// pointers, level 0 first), its key and its value:
///
/// ```text
/// head 2×u64 | key_len | value_len | height | next[0..height] | key | value | pad to 8
/// ```
///
/// `head` is the key's first 16 bytes as two big-endian integers (zero-padded):
/// a search compares its target with a node at every level, and most of those
/// comparisons are decided by one integer compare inside the node, without a
/// `memcmp` of the key. Zero is the smallest byte, so padding never moves a
/// short key past a key it is a prefix of; equal heads compare whole keys.
#[repr(C)]
struct Node {
    head: [u64; 2],
    key_len: usize,
    value_len: usize,
    height: usize,
}

/// Where a node's tower starts, after its fixed part.
const TOWER_OFFSET: usize = mem::size_of::<Node>();

/// The 16-byte head of `key`, as stored in its node.
fn head_of(key: &[u8]) -> [u64; 2] {
    let mut head = [0u8; 16];
    let n = key.len().min(16);
    if let (Some(dst), Some(src)) = (head.get_mut(..n), key.get(..n)) {
        dst.copy_from_slice(src);
    }
    let (hi, lo) = head.split_at(8);
    let word = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
    [word(hi), word(lo)]
}

/// A search target: a key with its head computed once.
struct Target<'a> {
    head: [u64; 2],
    key: &'a [u8],
}

impl Target<'_> {
    fn new(key: &[u8]) -> Target<'_> {
        Target {
            head: head_of(key),
            key,
        }
    }
}

/// Raw accessors of a node. Every function here takes a pointer to a node
/// built by [`SkipList::insert`] (or the head), which stays valid as long as
/// its list does: nodes are never freed before the list.
mod node {
    use super::*;

    /// Where the next pointer of `node` at `level` is (below its height).
    ///
    /// SAFETY (for callers): `node` points to room for a node of more than
    /// `level` levels.
    pub(super) unsafe fn slot(node: *const Node, level: usize) -> *mut AtomicPtr<Node> {
        // SAFETY: the tower follows the fixed part, inside the node's
        // allocation, aligned for pointers (the fixed part is 8-byte words).
        unsafe {
            node.cast::<u8>()
                .add(TOWER_OFFSET)
                .cast::<AtomicPtr<Node>>()
                .add(level)
                .cast_mut()
        }
    }

    /// Where the key of a node of `height` levels starts (its value follows).
    ///
    /// SAFETY (for callers): `node` points to room for a node of `height` levels.
    pub(super) unsafe fn key_start(node: *const Node, height: usize) -> *mut u8 {
        // SAFETY: key and value follow the tower, inside the allocation.
        unsafe {
            node.cast::<u8>()
                .add(TOWER_OFFSET + height * mem::size_of::<AtomicPtr<Node>>())
                .cast_mut()
        }
    }

    /// The next pointer of `node` at `level`, once the node is built.
    ///
    /// SAFETY (for callers): `node` is a live node of some list and `level`
    /// is below its height.
    pub(super) unsafe fn next_slot<'a>(node: *const Node, level: usize) -> &'a AtomicPtr<Node> {
        // SAFETY: forwarded; the slot was initialised when the node was built.
        unsafe { &*slot(node, level) }
    }

    /// The node after `node` at `level`, null at the end of the level.
    ///
    /// SAFETY (for callers): as [`next_slot`].
    pub(super) unsafe fn next(node: *const Node, level: usize) -> *const Node {
        // SAFETY: forwarded. Acquire pairs with the release store that linked
        // the next node in, so its contents are visible here.
        unsafe { next_slot(node, level) }.load(Ordering::Acquire)
    }

    /// The key and the value of `node`.
    ///
    /// SAFETY (for callers): `node` is a live node other than a list's head,
    /// and the returned slices do not outlive its list.
    pub(super) unsafe fn entry<'a>(node: *const Node) -> (&'a [u8], &'a [u8]) {
        // SAFETY: the fixed part is written before the node is linked and
        // never changed after; key and value follow the tower.
        unsafe {
            let n = &*node;
            let key = key_start(node, n.height);
            (
                std::slice::from_raw_parts(key, n.key_len),
                std::slice::from_raw_parts(key.add(n.key_len), n.value_len),
            )
        }
    }

    /// How `node`'s key compares with the target's.
    ///
    /// SAFETY (for callers): as [`entry`].
    pub(super) unsafe fn cmp(node: *const Node, target: &Target) -> KeyOrdering {
        // SAFETY: forwarded.
        unsafe {
            (*node)
                .head
                .cmp(&target.head)
                .then_with(|| entry(node).0.cmp(target.key))
        }
    }

    /// The layout of a node of `height` levels holding `len` bytes of key
    /// and value.
    pub(super) fn layout(height: usize, len: usize) -> Option<Layout> {
        let size = TOWER_OFFSET
            .checked_add(height.checked_mul(mem::size_of::<AtomicPtr<Node>>())?)?
            .checked_add(len)?;
        Some(Layout::from_size_align(size, NODE_ALIGN).ok()?.pad_to_align())
    }
}

/// Chunks of memory handed out front to back. Only the writer touches it.
struct Arena {
    /// Every chunk allocated, freed when the arena is dropped.
    chunks: Vec<(NonNull<u8>, Layout)>,
    /// Next free byte of the chunk being filled, and the bytes left in it.
    free: *mut u8,
    left: usize,
    /// Bytes of all chunks allocated so far.
    allocated: usize,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            chunks: Vec::new(),
            free: ptr::null_mut(),
            left: 0,
            allocated: 0,
        }
    }

    /// Room for `layout` (its size a multiple of [`NODE_ALIGN`]), or `None`
    /// when the allocator has none.
    fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let next_chunk = self.allocated.clamp(FIRST_CHUNK, LARGEST_CHUNK);
        if layout.size() > next_chunk / 4 {
            return self.new_chunk(layout);
        }
        if self.left < layout.size() {
            let chunk = self.new_chunk(Layout::from_size_align(next_chunk, NODE_ALIGN).ok()?)?;
            self.free = chunk.as_ptr();
            self.left = next_chunk;
        }
        let at = NonNull::new(self.free)?;
        // SAFETY: `layout.size() <= left`, so this stays inside the chunk (or
        // one past its end); every size handed out is a multiple of the
        // chunk's alignment, so `free` stays aligned.
        self.free = unsafe { self.free.add(layout.size()) };
        self.left -= layout.size();
        Some(at)
    }

    fn new_chunk(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: every layout asked for here has a non-zero size.
        let chunk = NonNull::new(unsafe { alloc::alloc(layout) })?;
        self.chunks.push((chunk, layout));
        self.allocated += layout.size();
        Some(chunk)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (chunk, layout) in self.chunks.drain(..) {
            // SAFETY: allocated by `new_chunk` with this layout, freed once.
            unsafe { alloc::dealloc(chunk.as_ptr(), layout) };
        }
    }
}

/// What the writer keeps between inserts: the arena, the neighbours of its
/// last insert at every level, and its random state.
struct Writer {
    arena: Arena,
    /// `prev[i]` and `next[i]` bracket the last key inserted at level `i`
    /// (the new node itself is `prev[i]` on the levels it reached). A splice
    /// stays true while only this writer inserts: each insert updates it.
    prev: [*const Node; MAX_HEIGHT],
    next: [*const Node; MAX_HEIGHT],
    /// xorshift32 state: heights are random but the same for every list, so
    /// a memtable's bytes (and when it is flushed) repeat from run to run.
    random: u32,
    /// Inserts that had to search below the top level they fitted at.
    #[cfg(test)]
    searches: usize,
}

/// The writer's first random state (LevelDB's).
const RANDOM_SEED: u32 = 0xdead_beef;

/// A sorted set of `(key, value)` entries, one writer and lock-free readers.
pub(crate) struct SkipList {
    /// The head node: no key, a full tower. Allocated on its own (not in the
    /// arena, so an empty list has allocated no arena bytes).
    head: NonNull<Node>,
    /// Levels in use (at least 1). Read without ordering: a reader that sees a
    /// new height before the head's pointers at it finds them null and
    /// starts lower.
    height: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: the raw pointers point into memory the list owns (its head and its
// arena's chunks), which lives as long as the list and is freed only by its
// drop. Nodes are immutable once linked except for their next pointers, which
// are atomics. The writer's state is behind a mutex.
unsafe impl Send for SkipList {}
// SAFETY: as above; readers only load atomics and read immutable bytes.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub fn new() -> SkipList {
        let layout = node::layout(MAX_HEIGHT, 0).unwrap_or_else(Layout::new::<Node>);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        let Some(head) = NonNull::new(raw.cast::<Node>()) else {
            alloc::handle_alloc_error(layout);
        };
        // SAFETY: freshly allocated with room for the fixed part and a full
        // tower; every pointer starts null (the end of each level).
        unsafe {
            head.as_ptr().write(Node {
                head: [0; 2],
                key_len: 0,
                value_len: 0,
                height: MAX_HEIGHT,
            });
            for level in 0..MAX_HEIGHT {
                node::slot(head.as_ptr(), level).write(AtomicPtr::new(ptr::null_mut()));
            }
        }
        SkipList {
            head,
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                arena: Arena::new(),
                prev: [head.as_ptr().cast_const(); MAX_HEIGHT],
                next: [ptr::null(); MAX_HEIGHT],
                random: RANDOM_SEED,
                #[cfg(test)]
                searches: 0,
            }),
        }
    }

    /// Bytes of the arena's chunks (the nodes, keys and values).
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.writer.lock().arena.allocated
    }

    /// Inserts `key` with `value`, then calls `inserted` with the bytes the
    /// arena holds now, still inside the writer's lock (where a caller keeps
    /// its own counters exact without atomic read-modify-writes). Keys are
    /// expected to be unique; an equal key goes before the ones already
    /// there, so a seek finds it first.
    pub fn insert(&self, key: &[u8], value: &[u8], inserted: impl FnOnce(usize)) {
        let target = Target::new(key);
        let mut guard = self.writer.lock();
        let w = &mut *guard;
        let height = w.random_height();
        // A node too large to describe is as impossible to allocate as a
        // `Vec` that large: the allocator's out-of-memory path either way.
        let layout = node::layout(height, key.len().saturating_add(value.len()))
            .unwrap_or_else(|| alloc::handle_alloc_error(Layout::new::<Node>()));
        let Some(at) = w.arena.allocate(layout) else {
            alloc::handle_alloc_error(layout);
        };
        let new = at.as_ptr().cast::<Node>();
        // SAFETY: `at` is fresh arena memory of `layout`: room for the fixed
        // part, `height` next pointers, the key and the value. Nothing else
        // can see the node until it is linked below.
        unsafe {
            new.write(Node {
                head: target.head,
                key_len: key.len(),
                value_len: value.len(),
                height,
            });
            for level in 0..height {
                node::slot(new, level).write(AtomicPtr::new(ptr::null_mut()));
            }
            let bytes = node::key_start(new, height);
            ptr::copy_nonoverlapping(key.as_ptr(), bytes, key.len());
            ptr::copy_nonoverlapping(value.as_ptr(), bytes.add(key.len()), value.len());
        }

        // The lowest level where the last insert's neighbours still bracket
        // the key; every level above it brackets it too (a higher level's
        // neighbours are at or beyond a lower one's).
        let head = self.head.as_ptr().cast_const();
        let fits = |prev: *const Node, next: *const Node| {
            // SAFETY: splice nodes are live nodes of this list.
            (prev == head || unsafe { node::cmp(prev, &target) } == KeyOrdering::Less)
                && (next.is_null() || unsafe { node::cmp(next, &target) } != KeyOrdering::Less)
        };
        let from = (0..MAX_HEIGHT)
            .find(|&level| {
                w.prev
                    .get(level)
                    .zip(w.next.get(level))
                    .is_some_and(|(&p, &n)| fits(p, n))
            })
            .unwrap_or(MAX_HEIGHT);
        // Search down from there (from the head on every level if none
        // fits): at each level, walk right while the next node is before
        // the key.
        let mut x = w.prev.get(from).copied().unwrap_or(head);
        #[cfg(test)]
        if from > 0 {
            w.searches += 1;
        }
        for level in (0..from).rev() {
            // SAFETY: `x` is a live node on `level` (it is on every level
            // below the one it was found on), and so is every node reached.
            let mut next = unsafe { node::next(x, level) };
            while !next.is_null() && unsafe { node::cmp(next, &target) } == KeyOrdering::Less {
                x = next;
                next = unsafe { node::next(x, level) };
            }
            if let (Some(p), Some(n)) = (w.prev.get_mut(level), w.next.get_mut(level)) {
                (*p, *n) = (x, next);
            }
        }

        if height > self.height.load(Ordering::Relaxed) {
            self.height.store(height, Ordering::Relaxed);
        }
        // Link from level 0 up: a reader may see the node on low levels
        // before high ones, which only makes its search a little longer.
        for level in 0..height {
            let (Some(&prev), Some(&next)) = (w.prev.get(level), w.next.get(level)) else {
                break;
            };
            // SAFETY: `new` has `height` levels; `prev` is a live node on
            // `level`. The node's own pointer is stored before it is
            // published; the release store publishes the whole node.
            unsafe {
                node::next_slot(new, level).store(next.cast_mut(), Ordering::Relaxed);
                node::next_slot(prev, level).store(new, Ordering::Release);
            }
            if let Some(p) = w.prev.get_mut(level) {
                *p = new;
            }
        }
        inserted(w.arena.allocated);
    }

    /// The first node whose key is at or after `key`, or null.
    fn seek(&self, key: &[u8]) -> *const Node {
        let target = Target::new(key);
        let mut x = self.head.as_ptr().cast_const();
        let mut level = self.height.load(Ordering::Relaxed).clamp(1, MAX_HEIGHT) - 1;
        loop {
            // SAFETY: `x` is the head or a node reached on `level` from it,
            // so it is on `level`.
            let next = unsafe { node::next(x, level) };
            if !next.is_null() && unsafe { node::cmp(next, &target) } == KeyOrdering::Less {
                x = next;
            } else if level == 0 {
                return next;
            } else {
                level -= 1;
            }
        }
    }

    /// A position on the first entry at or after `key`.
    pub fn lower_bound(&self, key: &[u8]) -> Position<'_> {
        Position {
            node: self.seek(key),
            _list: std::marker::PhantomData,
        }
    }

    /// A position on the first entry.
    pub fn first(&self) -> Position<'_> {
        Position {
            // SAFETY: the head has every level.
            node: unsafe { node::next(self.head.as_ptr(), 0) },
            _list: std::marker::PhantomData,
        }
    }

    /// The last entry's key, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        let mut x = self.head.as_ptr().cast_const();
        for level in (0..self.height.load(Ordering::Relaxed).clamp(1, MAX_HEIGHT)).rev() {
            loop {
                // SAFETY: as in `seek`.
                let next = unsafe { node::next(x, level) };
                if next.is_null() {
                    break;
                }
                x = next;
            }
        }
        // SAFETY: a node other than the head, of this list.
        (x != self.head.as_ptr().cast_const()).then(|| unsafe { node::entry(x) }.0)
    }
}

impl Writer {
    /// A node's height: 1, then one more level with probability 1/4 each.
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            // xorshift32 (Marsaglia): good enough to shape a skip list.
            self.random ^= self.random << 13;
            self.random ^= self.random >> 17;
            self.random ^= self.random << 5;
            if !self.random.is_multiple_of(BRANCHING) {
                break;
            }
            height += 1;
        }
        height
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        // The nodes go with the arena (nothing in them needs dropping).
        if let Some(layout) = node::layout(MAX_HEIGHT, 0) {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { alloc::dealloc(self.head.as_ptr().cast::<u8>(), layout) };
        }
    }
}

/// A position in a list: on an entry, or past the end. It borrows the list;
/// a holder that owns the list (an `Arc`) may keep it as a [`RawPosition`].
#[derive(Clone, Copy)]
pub(crate) struct Position<'a> {
    node: *const Node,
    _list: std::marker::PhantomData<&'a SkipList>,
}

impl<'a> Position<'a> {
    /// The entry's key and value, or `None` past the end.
    pub fn entry(&self) -> Option<(&'a [u8], &'a [u8])> {
        // SAFETY: a non-null position is a node of the borrowed list.
        (!self.node.is_null()).then(|| unsafe { node::entry(self.node) })
    }

    /// The next position (past the end stays past the end).
    pub fn next(&self) -> Position<'a> {
        Position {
            node: if self.node.is_null() {
                ptr::null()
            } else {
                // SAFETY: a node of the borrowed list; level 0 exists.
                unsafe { node::next(self.node, 0) }
            },
            _list: std::marker::PhantomData,
        }
    }

    /// The position without its borrow, for a holder that keeps the list alive.
    pub fn into_raw(self) -> RawPosition {
        RawPosition(self.node)
    }
}

/// A [`Position`] without the borrow of its list, kept by a cursor that owns
/// the list.
#[derive(Clone, Copy)]
pub(crate) struct RawPosition(*const Node);

// SAFETY: a node is immutable once linked but for its atomics; the pointer
// is dereferenced only through `attach`, whose caller proves the list alive.
unsafe impl Send for RawPosition {}
// SAFETY: as above.
unsafe impl Sync for RawPosition {}

impl RawPosition {
    /// The position again, borrowing `list`.
    ///
    /// SAFETY (for callers): the position came from `list` (or is past the end).
    pub unsafe fn attach(self, _list: &SkipList) -> Position<'_> {
        Position {
            node: self.0,
            _list: std::marker::PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;

    fn keys(list: &SkipList) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut p = list.first();
        while let Some((k, v)) = p.entry() {
            out.push((k.to_vec(), v.to_vec()));
            p = p.next();
        }
        out
    }

    #[test]
    fn an_empty_list_has_no_entries_and_no_arena_bytes() {
        let list = SkipList::new();
        assert!(list.first().entry().is_none());
        assert!(list.lower_bound(b"a").entry().is_none());
        assert_eq!(list.last_key(), None);
        assert_eq!(list.allocated(), 0);
    }

    #[test]
    fn heights_are_one_in_four_per_level_and_the_same_for_every_list() {
        let writer = || Writer {
            arena: Arena::new(),
            prev: [ptr::null(); MAX_HEIGHT],
            next: [ptr::null(); MAX_HEIGHT],
            random: RANDOM_SEED,
            searches: 0,
        };
        let mut w = writer();
        let heights: Vec<usize> = (0..100_000).map(|_| w.random_height()).collect();
        let mut again = writer();
        assert!(heights.iter().all(|&h| h == again.random_height()));
        let above = |h: usize| heights.iter().filter(|&&x| x > h).count();
        // 1/4, 1/16, 1/64 of 100k, within a few percent.
        assert!((24_000..26_000).contains(&above(1)), "{}", above(1));
        assert!((5_900..6_600).contains(&above(2)), "{}", above(2));
        assert!((1_400..1_750).contains(&above(3)), "{}", above(3));
    }

    #[test]
    fn a_seek_finds_the_first_key_at_or_after_its_target() {
        let list = SkipList::new();
        for k in ["b", "d", "f", "bb", "a\0", "a"] {
            list.insert(k.as_bytes(), k.to_uppercase().as_bytes(), |_| {});
        }
        let at = |t: &str| list.lower_bound(t.as_bytes()).entry().map(|(k, _)| k.to_vec());
        assert_eq!(at(""), Some(b"a".to_vec()));
        assert_eq!(at("a"), Some(b"a".to_vec()));
        assert_eq!(at("a\0\0"), Some(b"b".to_vec()));
        assert_eq!(at("c"), Some(b"d".to_vec()));
        assert_eq!(at("g"), None);
        assert_eq!(list.last_key(), Some(&b"f"[..]));
        assert_eq!(
            keys(&list).into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
            ["a", "a\0", "b", "bb", "d", "f"].map(|k| k.as_bytes().to_vec())
        );
    }

    #[test]
    fn the_cells_of_a_row_inserted_in_order_cost_one_search_for_the_row() {
        let list = SkipList::new();
        // Rows arrive newest-first (each before every row already there), so
        // the first cell of each must be searched for; the nine after it
        // land right after the cell before, where the last insert left off.
        for row in (0..1_000u32).rev() {
            for column in 0..10u8 {
                let mut key = row.to_be_bytes().to_vec();
                key.push(column);
                list.insert(&key, b"value", |_| {});
            }
        }
        assert_eq!(list.writer.lock().searches, 1_000 - 1);
        assert_eq!(keys(&list).len(), 10_000);
        assert_eq!(list.first().entry().map(|(k, _)| k.to_vec()), Some(vec![0, 0, 0, 0, 0]));
    }

    proptest::proptest! {
        /// The list against a `BTreeMap`: the same entries in the same order,
        /// and every seek lands where the map's range starts, whether keys
        /// arrive in order (the splice hit) or not (searched), long or short
        /// (heads that tie).
        #[test]
        fn the_list_holds_what_a_sorted_map_holds(
            entries in proptest::collection::vec(
                (proptest::collection::vec(0u8..4, 0..20), proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8)),
                0..300,
            ),
            sorted in proptest::prelude::any::<bool>(),
            seeks in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..20), 0..40),
        ) {
            let mut model = BTreeMap::new();
            for (k, v) in &entries {
                model.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let mut order: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
            if !sorted {
                order.reverse();
                let third = order.len() / 3;
                order.rotate_left(third);
            }
            let list = SkipList::new();
            for (k, v) in &order {
                list.insert(k, v, |_| {});
            }
            proptest::prop_assert_eq!(keys(&list), model.clone().into_iter().collect::<Vec<_>>());
            for s in &seeks {
                let expected = model.range(s.clone()..).next().map(|(k, _)| k.clone());
                proptest::prop_assert_eq!(list.lower_bound(s).entry().map(|(k, _)| k.to_vec()), expected);
            }
            proptest::prop_assert_eq!(list.last_key().map(<[u8]>::to_vec), model.keys().next_back().cloned());
        }
    }

    #[test]
    fn readers_walking_while_the_writer_inserts_see_sorted_whole_entries() {
        let list = Arc::new(SkipList::new());
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let list = Arc::clone(&list);
                std::thread::spawn(move || {
                    let mut walks = 0;
                    while walks < 200 {
                        let mut p = list.first();
                        let mut last: Option<Vec<u8>> = None;
                        let mut n = 0;
                        while let Some((k, v)) = p.entry() {
                            // Each value repeats its key: a reader sees whole entries.
                            assert_eq!(k, v);
                            assert!(last.as_deref().is_none_or(|l| l < k));
                            last = Some(k.to_vec());
                            n += 1;
                            p = p.next();
                        }
                        walks += 1;
                        if n == 20_000 {
                            break;
                        }
                    }
                })
            })
            .collect();
        for i in 0..20_000u32 {
            // Scattered, so inserts land all over the list.
            let k = (i.wrapping_mul(2_654_435_761)).to_be_bytes();
            list.insert(&k, &k, |_| {});
        }
        for r in readers {
            assert!(r.join().is_ok());
        }
        assert_eq!(keys(&list).len(), 20_000);
    }
}
