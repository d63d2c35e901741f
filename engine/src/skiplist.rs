//! The memtable's skip list: one writer, readers that take no lock, nodes in
//! an arena, and inserts that start from where the last one ended.
//!
//! A skip list is a sorted linked list with express lanes. Every node is on
//! level 0; a quarter of them are also on level 1, a quarter of those on
//! level 2, and so on (each node's height is drawn at random when it is
//! inserted). A search starts on the highest level at the head, runs right
//! while the next node is smaller than its key, then drops a level: about
//! four comparisons per level at most, over `log4(n)` levels.
//!
//! Three facts about a memtable make this one simpler and faster than a
//! general concurrent skip list (crossbeam's, which cellar used before):
//!
//! * **One writer.** The store's write lock admits one writer at a time, so
//!   an insert needs no compare-and-swap: it links its node level by level,
//!   bottom first, each link a single release store. A reader that loads a
//!   link (acquire) sees the node whole: its key and value were written
//!   before the store that published it. A reader may see a node on level 0
//!   before it appears on level 3; it then walks a little further on a lower
//!   level, and still finds every key in order. (LevelDB's `SkipList`.)
//! * **Nothing is ever removed.** A node, once linked, stays where it is
//!   until the whole list is dropped, so a reader can stand on any node for
//!   as long as it holds the list: no epoch, no reference counts, no hazard.
//!   Nodes and their entries live in the list's [`Arena`] and are freed
//!   with it, a chunk at a time.
//! * **Writes arrive in runs.** The cells of a row written together are
//!   neighbours in key order (`row, c0`, `row, c1`, ...). The writer keeps
//!   the *splice* of its last insert: on each level, the node after which
//!   the last key went. The next insert checks, from level 0 up, whether its
//!   key still falls between that node and its successor; from the lowest
//!   level where it does, only the levels below are searched, starting from
//!   there. For the second to tenth cells of a row this is a few comparisons
//!   with nodes just touched, instead of a search from the head through
//!   cold memory. (RocksDB's `InlineSkipList` keeps a splice the same way.)
//!
//! The search of an insert is a chain of cache misses (a full memtable is
//! tens of megabytes of nodes): while it compares the next node on a level,
//! it already requests the node after the current one a level down, where
//! it goes if that comparison says "not smaller", so the two misses overlap
//! (RocksDB's `InlineSkipList` prefetches on its search too).
//!
//! A node is laid out in one piece of the arena: a 48-byte header (the first
//! 32 bytes of the key as four big-endian words, the key and value lengths,
//! the height), its tower of `height` next pointers, the key, the value.
//! Comparisons of two keys of one row are mostly decided by the inline words,
//! inside the node the search already loaded.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::{Mutex, MutexGuard};

use crate::arena::Arena;
use crate::prefetch::prefetch_line;

/// Most levels a node can have. With a quarter of the nodes going up each
/// level, 12 levels serve 4^12 = 16M entries at full speed (a memtable holds
/// under a million).
pub(crate) const MAX_HEIGHT: usize = 12;

/// Bytes of a key kept inline in its node, and the words holding them.
const HEAD_BYTES: usize = 32;
const HEAD_WORDS: usize = HEAD_BYTES / 8;

/// The fixed part of a node; its tower, key and value follow it in the arena.
#[repr(C)]
struct Header {
    /// The key's first 32 bytes, zero-padded, as big-endian words: comparing
    /// the words in order compares the bytes in order.
    head: [u64; HEAD_WORDS],
    key_len: u32,
    value_len: u32,
    height: u32,
    _pad: u32,
}

/// Bytes in a cache line (64 on the processors this is tuned for).
const CACHE_LINE: usize = 64;

/// Cache lines [`Node::prefetch`] asks for: a YCSB cell's node (48-byte
/// header, a tower of one or two links, a 50-byte key and a 100-byte value)
/// spans four; a larger value's end is left to the processor's own
/// sequential prefetcher.
const PREFETCH_LINES: usize = 4;

/// Where a node's tower starts: right after its header.
const TOWER_OFFSET: usize = std::mem::size_of::<Header>();

/// Bytes of the arena a node takes for an entry of these lengths and this height.
const fn node_len(height: usize, key_len: usize, value_len: usize) -> usize {
    TOWER_OFFSET + height * std::mem::size_of::<AtomicPtr<Header>>() + key_len + value_len
}

/// The fewest bytes an entry with a key of `key_len` bytes can take in the
/// arena: a node of height 1, rounded up as the arena rounds.
pub(crate) const fn min_entry_bytes(key_len: usize) -> usize {
    node_len(1, key_len, 0).div_ceil(crate::arena::ALIGN) * crate::arena::ALIGN
}

/// A key's inline head: its first 32 bytes, zero-padded, as big-endian words.
fn head_of(key: &[u8]) -> [u64; HEAD_WORDS] {
    // A key of 32 bytes or more is read in place, four word loads; only a
    // shorter one is copied out to be padded (a copy of unknown length is a
    // call to `memcpy`, once per insert and per search).
    let mut padded = [0u8; HEAD_BYTES];
    let bytes = match key.first_chunk::<HEAD_BYTES>() {
        Some(first) => first,
        None => {
            if let Some(dst) = padded.get_mut(..key.len()) {
                dst.copy_from_slice(key);
            }
            &padded
        }
    };
    let mut head = [0u64; HEAD_WORDS];
    for (word, chunk) in head.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *word = u64::from_be_bytes(b);
    }
    head
}

/// A key to search for, with its head computed once for the whole search.
pub(crate) struct Probe<'k> {
    head: [u64; HEAD_WORDS],
    key: &'k [u8],
}

impl<'k> Probe<'k> {
    pub fn new(key: &'k [u8]) -> Probe<'k> {
        Probe {
            head: head_of(key),
            key,
        }
    }
}

/// A node of a list, for as long as the list is borrowed.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    ptr: NonNull<Header>,
    _list: PhantomData<&'a SkipList>,
}

/// A node's address, kept without a borrow of its list (by a cursor that
/// owns its memtable). Turned back into a [`Node`] with [`SkipList::node`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeAddr(NonNull<Header>);

// SAFETY: an address is only a number until `SkipList::node` turns it back
// into a node, under that function's contract; a node's memory is shared
// read-only (its links are atomics), so any thread may hold it.
unsafe impl Send for NodeAddr {}
// SAFETY: as for `Send`.
unsafe impl Sync for NodeAddr {}

impl<'a> Node<'a> {
    fn header(&self) -> &'a Header {
        // SAFETY: the node was written whole before it was published, its
        // header is never written again, and it lives as long as the list
        // (`'a`).
        unsafe { self.ptr.as_ref() }
    }

    /// The link of this node on `level` (below its height).
    fn link(&self, level: usize) -> &'a AtomicPtr<Header> {
        debug_assert!(level < self.header().height as usize);
        // SAFETY: the tower of `height` links follows the header inside the
        // node's piece of the arena; the pointer is derived from the node's
        // own, which covers the whole piece; `level < height`.
        unsafe {
            &*self
                .ptr
                .as_ptr()
                .cast::<u8>()
                .add(TOWER_OFFSET)
                .cast::<AtomicPtr<Header>>()
                .add(level)
        }
    }

    /// The next node on `level`, as published (acquire: its contents too).
    fn next(&self, level: usize) -> Option<Node<'a>> {
        NonNull::new(self.link(level).load(AtomicOrdering::Acquire)).map(|ptr| Node {
            ptr,
            _list: PhantomData,
        })
    }

    /// The next node on level 0: the following key.
    pub fn next_entry(&self) -> Option<Node<'a>> {
        self.next(0)
    }

    fn entry(&self) -> &'a [u8] {
        let h = self.header();
        let start = TOWER_OFFSET + h.height as usize * std::mem::size_of::<AtomicPtr<Header>>();
        // SAFETY: key and value follow the tower in the node's piece, written
        // before the node was published and never again.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().cast::<u8>().add(start),
                h.key_len as usize + h.value_len as usize,
            )
        }
    }

    pub fn key(&self) -> &'a [u8] {
        self.entry().get(..self.header().key_len as usize).unwrap_or_default()
    }

    pub fn value(&self) -> &'a [u8] {
        self.entry().get(self.header().key_len as usize..).unwrap_or_default()
    }

    pub fn addr(&self) -> NodeAddr {
        NodeAddr(self.ptr)
    }

    /// Starts loading this node's first [`PREFETCH_LINES`] cache lines
    /// (header, tower, key and, for a small entry, its value) without
    /// waiting for them. Nodes lie in the arena in insertion order, not key
    /// order, so a walk along level 0 misses the cache at every step; a walk
    /// that asks for the node after next while it handles this one (see
    /// `Memtable::for_each`) waits for none of them. A hint only: it reads
    /// nothing into the program and never faults.
    pub fn prefetch(&self) {
        let start = self.ptr.as_ptr().cast::<u8>();
        for line in 0..PREFETCH_LINES {
            // `wrapping_add`: the lines past a small node's end are only
            // addresses, never dereferenced.
            prefetch_line(start.wrapping_add(line * CACHE_LINE));
        }
    }

    /// This node's key against the probe's, in byte order: inline heads
    /// first; equal heads (the keys agree on 32 bytes, counting the zeros
    /// that pad a short key) fall back to the bytes past them, then to the
    /// lengths (a key that fits its head is a prefix of a longer one with
    /// the same head, or both fit and the shorter is the other's prefix
    /// followed by zeros).
    fn cmp(&self, probe: &Probe<'_>) -> Ordering {
        let h = self.header();
        h.head.cmp(&probe.head).then_with(|| {
            let key = self.key();
            let tail = key.get(HEAD_BYTES..).unwrap_or_default();
            tail.cmp(probe.key.get(HEAD_BYTES..).unwrap_or_default())
                .then_with(|| key.len().cmp(&probe.key.len()))
        })
    }

    /// Asks the processor to start loading the node after this one on the
    /// level below `level`, while the search compares the next one on
    /// `level`: if that one is not smaller than the key, the search drops a
    /// level and goes on there, and the two cache misses overlap instead of
    /// following one another. (Nothing on level 0: no level below.)
    #[inline]
    fn prefetch_below(&self, level: usize) {
        if let Some((below, l)) = level.checked_sub(1).and_then(|l| Some((self.next(l)?, l))) {
            // Two lines: the one holding its inline head (compared first),
            // and the one holding its link on the level below, followed if
            // it is smaller (the header is 48 bytes: often the next line).
            let at = below.ptr.as_ptr().cast::<u8>();
            let link = TOWER_OFFSET + l * std::mem::size_of::<AtomicPtr<Header>>();
            prefetch_line(at);
            prefetch_line(at.wrapping_add(link));
        }
    }

    fn same(&self, other: Node<'_>) -> bool {
        self.ptr == other.ptr
    }
}

/// What only the writer touches: the arena, the splice, the height dice.
struct Writer {
    arena: Arena,
    /// On each level, the node after which the last key went in (the head
    /// before any insert, and on levels no node has reached yet).
    splice: [NonNull<Header>; MAX_HEIGHT],
    /// xorshift64* state for node heights: a fixed seed, so a memtable's
    /// memory for a given sequence of writes is the same on every run.
    dice: u64,
}

/// A sorted set of entries (key, value) with one writer at a time and any
/// number of readers. Keys are unique: inserting a key that is already in
/// leaves the first entry where it is.
pub(crate) struct SkipList {
    /// The head node: no key, a tower of [`MAX_HEIGHT`] links. A `Box`
    /// turned into a raw pointer once, freed by `drop`.
    head: NonNull<Header>,
    /// Levels in use (at least 1). Read relaxed: a reader that sees a new
    /// height before the head's link on it finds that link null and drops a
    /// level, which costs it nothing.
    height: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: readers share nodes that are immutable once published except for
// their links, which are atomics; everything the writer mutates sits behind
// its mutex. The raw pointers point into memory the list owns.
unsafe impl Send for SkipList {}
// SAFETY: as for `Send`.
unsafe impl Sync for SkipList {}

/// The head: a header and a full tower, one allocation.
#[repr(C)]
struct HeadNode {
    header: Header,
    tower: [AtomicPtr<Header>; MAX_HEIGHT],
}

impl SkipList {
    /// An empty list whose arena's chunks grow up to `largest_chunk` bytes
    /// ([`crate::arena::largest_chunk_for`] the memtable's limit).
    pub fn new(largest_chunk: usize) -> SkipList {
        let head = Box::new(HeadNode {
            header: Header {
                head: [0; HEAD_WORDS],
                key_len: 0,
                value_len: 0,
                height: MAX_HEIGHT as u32,
                _pad: 0,
            },
            tower: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        });
        // SAFETY: `Box::into_raw` never returns null.
        let head = unsafe { NonNull::new_unchecked(Box::into_raw(head)) }.cast::<Header>();
        SkipList {
            head,
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                arena: Arena::new(largest_chunk),
                splice: [head; MAX_HEIGHT],
                dice: 0x9E37_79B9_7F4A_7C15,
            }),
        }
    }

    fn head(&self) -> Node<'_> {
        Node {
            ptr: self.head,
            _list: PhantomData,
        }
    }

    /// Turns an address back into a node of this list.
    ///
    /// # Safety
    ///
    /// `addr` must come from a node of this very list ([`Node::addr`]).
    pub unsafe fn node(&self, addr: NodeAddr) -> Node<'_> {
        Node {
            ptr: addr.0,
            _list: PhantomData,
        }
    }

    /// The first entry.
    pub fn first(&self) -> Option<Node<'_>> {
        self.head().next(0)
    }

    /// The last entry: right on each level as far as it goes.
    pub fn last(&self) -> Option<Node<'_>> {
        let mut x = self.head();
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            while let Some(next) = x.next(level) {
                x = next;
            }
        }
        (!x.same(self.head())).then_some(x)
    }

    /// The first entry whose key is at or after `probe`'s.
    pub fn seek(&self, probe: &Probe<'_>) -> Option<Node<'_>> {
        let mut x = self.head();
        // The node last found not smaller than the probe: when a lower
        // level's next is that same node, it needs no second comparison.
        let mut not_smaller: Option<Node<'_>> = None;
        let mut level = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        loop {
            let next = x.next(level);
            match next {
                Some(n) if !not_smaller.is_some_and(|b| b.same(n)) && n.cmp(probe) == Ordering::Less => x = n,
                _ => {
                    if level == 0 {
                        return next;
                    }
                    not_smaller = next;
                    level -= 1;
                }
            }
        }
    }

    /// Starts inserting: takes the writer's lock (the store has one writer;
    /// the lock makes that a fact the compiler can rely on).
    pub fn writer(&self) -> ListWriter<'_> {
        ListWriter {
            list: self,
            w: self.writer.lock(),
        }
    }

    /// Entries linked on level 0 (counted by walking them: only tests ask).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        std::iter::successors(self.first(), |n| n.next_entry()).count()
    }

    /// Bytes of the arena's chunks.
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.writer.lock().arena.allocated()
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        // SAFETY: the head is the `Box<HeadNode>` made by `new`, freed once,
        // here; the arena (dropped after this) frees every other node.
        drop(unsafe { Box::from_raw(self.head.as_ptr().cast::<HeadNode>()) });
    }
}

/// The writer of a list, holding its lock.
pub(crate) struct ListWriter<'a> {
    list: &'a SkipList,
    w: MutexGuard<'a, Writer>,
}

impl ListWriter<'_> {
    /// Inserts `key` with `value` (copied into the arena), unless an entry
    /// with this key is in already. Returns whether it went in, and the bytes
    /// taken from the allocator for it (a new arena chunk, or 0).
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> (bool, usize) {
        let list = self.list;
        let head = list.head();
        let probe = Probe::new(key);
        // The lowest level whose splice still brackets the key: its node is
        // before the key (or the head) and its successor after it (or none).
        // From there up every level brackets it too: a higher level's node
        // is at or before a lower level's, and its successor at or after.
        let node = |ptr: NonNull<Header>| Node {
            ptr,
            _list: PhantomData,
        };
        let top = self
            .w
            .splice
            .iter()
            .enumerate()
            .position(|(level, &p)| {
                let prev = node(p);
                let before = prev.same(head) || prev.cmp(&probe) == Ordering::Less;
                before && prev.next(level).is_none_or(|n| n.cmp(&probe) != Ordering::Less)
            })
            .unwrap_or(MAX_HEIGHT);
        // Below it, search down from there (from the head if none brackets).
        let mut x = match self.w.splice.get(top) {
            Some(&p) => node(p),
            None => head,
        };
        for level in (0..top).rev() {
            x.prefetch_below(level);
            while let Some(n) = x.next(level) {
                if n.cmp(&probe) != Ordering::Less {
                    break;
                }
                x = n;
                x.prefetch_below(level);
            }
            if let Some(slot) = self.w.splice.get_mut(level) {
                *slot = x.ptr;
            }
        }
        if node(self.w.splice[0])
            .next(0)
            .is_some_and(|n| n.cmp(&probe) == Ordering::Equal)
        {
            return (false, 0);
        }
        let height = self.random_height();
        let (len, value_len) = (u32::try_from(key.len()), u32::try_from(value.len()));
        let (Ok(key_len32), Ok(value_len32)) = (len, value_len) else {
            // The store refuses keys and values this long long before here.
            return (false, 0);
        };
        let (piece, taken) = self.w.arena.alloc(node_len(height, key.len(), value.len()));
        let ptr = piece.cast::<Header>();
        // SAFETY: the piece is fresh, 8-byte aligned and `node_len` bytes
        // long: a header, `height` links (8-aligned after the 48-byte
        // header), the key and the value, all written here through the
        // piece's own pointer, before anything is read from it. No reader
        // can reach it before the first link below publishes it.
        unsafe {
            ptr.as_ptr().write(Header {
                head: probe.head,
                key_len: key_len32,
                value_len: value_len32,
                height: height as u32,
                _pad: 0,
            });
            // The whole tower, each link the splice's successor on its level
            // (the new node goes between them), before any level publishes
            // it: the chunk is not zeroed, so a link is written before a
            // reference to it is made, and a node is whole when published.
            let tower = piece.as_ptr().add(TOWER_OFFSET).cast::<AtomicPtr<Header>>();
            for (level, &prev) in self.w.splice.iter().enumerate().take(height) {
                let next = node(prev).link(level).load(AtomicOrdering::Relaxed);
                tower.add(level).write(AtomicPtr::new(next));
            }
            let bytes = piece
                .as_ptr()
                .add(TOWER_OFFSET + height * std::mem::size_of::<AtomicPtr<Header>>());
            std::ptr::copy_nonoverlapping(key.as_ptr(), bytes, key.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), bytes.add(key.len()), value.len());
        }
        if height > list.height.load(AtomicOrdering::Relaxed) {
            // Levels no node had reached: their splice is the head already.
            list.height.store(height, AtomicOrdering::Relaxed);
        }
        // Bottom first: a reader that reaches the node on a level only ever
        // follows its links on that level and below, published already.
        for (level, slot) in self.w.splice.iter_mut().enumerate().take(height) {
            // Publishes the node on this level, with everything written above.
            node(*slot).link(level).store(ptr.as_ptr(), AtomicOrdering::Release);
            *slot = ptr;
        }
        (true, taken)
    }

    /// A height for a new node: 1, then one more with probability 1/4 each time.
    fn random_height(&mut self) -> usize {
        let mut x = self.w.dice;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.w.dice = x;
        let bits = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // Two random bits per level: both zero is the 1-in-4 chance to go up.
        let mut height = 1;
        while height < MAX_HEIGHT && (bits >> (2 * height)) & 3 == 0 {
            height += 1;
        }
        height
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::LARGEST_CHUNK;
    use proptest::prelude::*;

    fn keys(list: &SkipList) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut x = list.first();
        while let Some(n) = x {
            out.push(n.key().to_vec());
            x = n.next_entry();
        }
        out
    }

    /// Every level of the list walked on its own: each in strictly
    /// ascending key order, each node on it tall enough to be there, every
    /// node of a level also on the level below, nothing linked above the
    /// list's height, and that height the tallest node's (1 when empty).
    fn check_levels(list: &SkipList) -> Result<(), String> {
        let height = list.height.load(AtomicOrdering::Relaxed);
        let mut below: Vec<NonNull<Header>> = Vec::new();
        let mut tallest = 1;
        for level in 0..MAX_HEIGHT {
            let mut on_level = Vec::new();
            let mut x = list.head().next(level);
            let mut previous: Option<&[u8]> = None;
            while let Some(n) = x {
                let node_height = n.header().height as usize;
                if node_height <= level {
                    return Err(format!("a node of height {node_height} on level {level}"));
                }
                tallest = tallest.max(node_height);
                if previous.is_some_and(|p| p >= n.key()) {
                    return Err(format!("level {level}: {previous:?} then {:?}", n.key()));
                }
                previous = Some(n.key());
                on_level.push(n.ptr);
                x = n.next(level);
            }
            if level >= height && !on_level.is_empty() {
                return Err(format!("level {level} linked above the height {height}"));
            }
            if level > 0 {
                // A subsequence of the level below (both are in key order).
                let mut rest = below.iter();
                if !on_level.iter().all(|p| rest.any(|b| b == p)) {
                    return Err(format!("level {level} holds a node level {} does not", level - 1));
                }
            }
            below = on_level;
        }
        if tallest != height {
            return Err(format!("height {height}, tallest node {tallest}"));
        }
        Ok(())
    }

    /// The invariant `insert` relies on to start from its splice: on every
    /// level the splice's node is on that level, a higher level's node is at
    /// or before a lower level's, and its successor at or after. (Then a
    /// level that brackets a key proves every level above brackets it too.)
    fn check_splice(w: &ListWriter<'_>) -> Result<(), String> {
        let node = |ptr: NonNull<Header>| Node {
            ptr,
            _list: PhantomData,
        };
        let head = w.list.head();
        // A node's place in key order, the head before every key.
        let place = |n: Node<'_>| (!n.same(head)).then(|| n.key().to_vec());
        // A successor's place, no successor after every key.
        let after = |n: Option<Node<'_>>| n.map(|n| n.key().to_vec());
        let after_cmp = |a: &Option<Vec<u8>>, b: &Option<Vec<u8>>| match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => a.cmp(b),
        };
        for (level, pair) in w.w.splice.windows(2).enumerate() {
            let (lower, higher) = (node(pair[0]), node(pair[1]));
            if lower.header().height as usize <= level || higher.header().height as usize <= level + 1 {
                return Err(format!("a splice node below its level at {level}"));
            }
            if place(higher) > place(lower) {
                return Err(format!("level {}'s splice node is after level {level}'s", level + 1));
            }
            let (lower_next, higher_next) = (after(lower.next(level)), after(higher.next(level + 1)));
            if after_cmp(&higher_next, &lower_next) == Ordering::Less {
                return Err(format!(
                    "level {}'s splice successor is before level {level}'s",
                    level + 1
                ));
            }
        }
        Ok(())
    }

    /// Key sequences shaped like a memtable's writes, to insert in order.
    #[derive(Debug, Clone)]
    enum Run {
        /// Neighbours `base + [i]` for `i` below `len` (the base itself
        /// first when `with_base`: a key that prefixes the others),
        /// ascending or descending.
        Neighbours {
            base: Vec<u8>,
            len: u8,
            descending: bool,
            with_base: bool,
        },
        /// Two runs of neighbours far apart, taken in turn.
        Alternating { a: Vec<u8>, b: Vec<u8>, len: u8 },
        /// One key.
        Key(Vec<u8>),
        /// The `n`th key inserted so far (modulo their count), once more.
        Again(usize),
    }

    /// Bases that meet the inline head's edges: empty, a few bytes, and
    /// 31, 32 and 33 bytes shared by many keys, with zero bytes (which meet
    /// the head's zero padding) and 0xff among the few byte values.
    fn base() -> impl Strategy<Value = Vec<u8>> {
        (
            prop_oneof![Just(0usize), Just(31), Just(32), Just(33), Just(40)],
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff)], 0..4),
        )
            .prop_map(|(shared, tail)| {
                let mut key = vec![b'k'; shared];
                key.extend(tail);
                key
            })
    }

    fn run() -> impl Strategy<Value = Run> {
        prop_oneof![
            3 => (base(), 0u8..12, any::<bool>(), any::<bool>()).prop_map(|(base, len, descending, with_base)| {
                Run::Neighbours { base, len, descending, with_base }
            }),
            1 => (base(), base(), 0u8..8).prop_map(|(a, b, len)| Run::Alternating { a, b, len }),
            1 => base().prop_map(Run::Key),
            1 => any::<usize>().prop_map(Run::Again),
        ]
    }

    fn keys_of(runs: &[Run]) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let with = |base: &[u8], i: u8| [base, &[i]].concat();
        for r in runs {
            match r {
                Run::Neighbours {
                    base,
                    len,
                    descending,
                    with_base,
                } => {
                    let mut run: Vec<Vec<u8>> = (0..*len).map(|i| with(base, i)).collect();
                    if *with_base {
                        run.insert(0, base.clone());
                    }
                    if *descending {
                        run.reverse();
                    }
                    keys.extend(run);
                }
                Run::Alternating { a, b, len } => {
                    for i in 0..*len {
                        keys.push(with(a, i));
                        keys.push(with(b, i));
                    }
                }
                Run::Key(k) => keys.push(k.clone()),
                Run::Again(n) => {
                    if !keys.is_empty() {
                        keys.push(keys[n % keys.len()].clone());
                    }
                }
            }
        }
        keys
    }

    proptest! {
        #[test]
        fn runs_of_neighbours_far_and_near_go_in_from_the_splice_as_into_a_sorted_map(
            runs in proptest::collection::vec(run(), 0..40),
        ) {
            let list = SkipList::new(LARGEST_CHUNK);
            let mut model = std::collections::BTreeMap::new();
            let keys = keys_of(&runs);
            let mut allocated = 0;
            {
                let mut w = list.writer();
                for (i, k) in keys.iter().enumerate() {
                    let value = (i as u64).to_be_bytes();
                    // A key already in stays with its first value, and costs nothing.
                    let (went_in, taken) = w.insert(k, &value);
                    prop_assert_eq!(went_in, !model.contains_key(k), "insert {} of {:?}", i, k);
                    prop_assert!(went_in || taken == 0);
                    allocated += taken;
                    model.entry(k.clone()).or_insert(value);
                    check_splice(&w).map_err(|e| TestCaseError::fail(format!("after {k:?}: {e}")))?;
                }
            }
            check_levels(&list).map_err(TestCaseError::fail)?;
            prop_assert_eq!((list.len(), list.allocated()), (model.len(), allocated));
            let entries = {
                let mut out = Vec::new();
                let mut x = list.first();
                while let Some(n) = x {
                    out.push((n.key().to_vec(), n.value().to_vec()));
                    x = n.next_entry();
                }
                out
            };
            let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.to_vec())).collect();
            prop_assert_eq!(entries, want);
            // Every key, and probes just before and just after each; then
            // again as a reader sees the list that read a new height before
            // the head's links on it (null: it drops a level).
            for reader_height in [None, Some(MAX_HEIGHT)] {
                if let Some(h) = reader_height {
                    list.height.store(h, AtomicOrdering::Relaxed);
                }
                prop_assert_eq!(list.last().map(|n| n.key().to_vec()), model.keys().next_back().cloned());
                for k in model.keys() {
                    let probes = [k.clone(), [k.as_slice(), &[0]].concat(), k.get(..k.len().saturating_sub(1)).unwrap_or_default().to_vec()];
                    for p in probes {
                        let found = list.seek(&Probe::new(&p)).map(|n| n.key().to_vec());
                        prop_assert_eq!(found, model.range(p.clone()..).next().map(|(k, _)| k.clone()), "seek {:?}", p);
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_list_reaches_high_levels_and_keeps_every_level_in_order() {
        // 100,000 keys: nodes up to about level 8 (4^8 = 65,536), in runs
        // of neighbours whose rows come in scrambled order.
        let list = SkipList::new(LARGEST_CHUNK);
        let mut w = list.writer();
        for r in 0..10_000u32 {
            let row = r * 7_919 % 10_000;
            for c in 0..10u32 {
                let c = if row.is_multiple_of(3) { 9 - c } else { c };
                assert!(w.insert(format!("row{row:05}/c{c}").as_bytes(), b"").0);
            }
            if r.is_multiple_of(100) {
                check_splice(&w).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        drop(w);
        check_levels(&list).unwrap_or_else(|e| panic!("{e}"));
        assert!(list.height.load(AtomicOrdering::Relaxed) >= 7);
        assert_eq!(list.len(), 100_000);
    }

    proptest! {
        #[test]
        fn a_list_holds_each_key_once_in_byte_order_and_seeks_find_the_first_not_smaller(
            inserts in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..40), 0..200),
            seeks in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..40), 0..20),
        ) {
            // Keys of few byte values and mixed lengths: long shared heads,
            // zero bytes that meet the padding, keys that prefix others.
            let list = SkipList::new(LARGEST_CHUNK);
            let mut model = std::collections::BTreeMap::new();
            {
                let mut w = list.writer();
                for (i, k) in inserts.iter().enumerate() {
                    let value = i.to_be_bytes();
                    let (went_in, _) = w.insert(k, &value);
                    prop_assert_eq!(went_in, !model.contains_key(k));
                    model.entry(k.clone()).or_insert(value);
                }
            }
            prop_assert_eq!(keys(&list), model.keys().cloned().collect::<Vec<_>>());
            prop_assert_eq!(list.len(), model.len());
            prop_assert_eq!(list.last().map(|n| n.key().to_vec()), model.keys().next_back().cloned());
            for s in inserts.iter().chain(&seeks) {
                let found = list.seek(&Probe::new(s)).map(|n| (n.key().to_vec(), n.value().to_vec()));
                let want = model.range(s.clone()..).next().map(|(k, v)| (k.clone(), v.to_vec()));
                prop_assert_eq!(found, want);
            }
        }
    }

    #[test]
    fn runs_of_neighbouring_keys_are_inserted_from_the_splice_in_any_order() {
        // Rows of ten cells each, rows in scrambled order, cells ascending
        // within a row (the splice's case), then a second pass descending.
        let list = SkipList::new(LARGEST_CHUNK);
        let mut model = std::collections::BTreeSet::new();
        let mut w = list.writer();
        for pass in 0..2 {
            for r in 0..500u32 {
                let row = r * 7_919 % 500;
                for c in 0..10u32 {
                    let c = if pass == 0 { c } else { 9 - c };
                    let k = format!("row{row:05}/c{c}/{pass}").into_bytes();
                    assert!(w.insert(&k, b"v").0);
                    model.insert(k);
                }
            }
        }
        drop(w);
        assert_eq!(keys(&list), model.into_iter().collect::<Vec<_>>());
    }

    /// The value stored under a key in the concurrent test: derived from the
    /// key, so a reader can tell an entry was written whole.
    fn value_for(key: &[u8]) -> Vec<u8> {
        let mut value: Vec<u8> = key.iter().rev().map(|b| b ^ 0x5a).collect();
        value.push(key.len() as u8);
        value
    }

    #[test]
    fn readers_find_every_key_inserted_before_they_looked_while_the_writer_inserts_runs() -> std::thread::Result<()> {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        const ROWS: u32 = 5_000;
        // Rows of ten cells, rows in scrambled order; every fifth row's
        // cells descending; a third of the rows share their first 36 bytes
        // (equal inline heads); every seventh row inserts its first cell
        // and an earlier row's cell again (refused, with another value).
        let key = |row: u32, cell: u32| {
            let shared = if row.is_multiple_of(3) {
                "k".repeat(36)
            } else {
                String::new()
            };
            format!("{shared}{row:05}/{cell}").into_bytes()
        };
        let mut inserts: Vec<(Vec<u8>, bool)> = Vec::new();
        for r in 0..ROWS {
            let row = r * 7_919 % ROWS;
            for c in 0..10 {
                let c = if row.is_multiple_of(5) { 9 - c } else { c };
                inserts.push((key(row, c), true));
            }
            if r.is_multiple_of(7) {
                inserts.push((key(row, 0), false));
                inserts.push((key(r / 2 * 7_919 % ROWS, 5), false));
            }
        }
        // The keys in the order they go in, and sorted with that order.
        let order: Vec<Vec<u8>> = inserts
            .iter()
            .filter(|(_, first)| *first)
            .map(|(k, _)| k.clone())
            .collect();
        let mut sorted: Vec<(Vec<u8>, usize)> = order.iter().cloned().zip(0..).collect();
        sorted.sort();
        let mut largest_before = Vec::with_capacity(order.len());
        for k in &order {
            let largest = largest_before.last().filter(|l: &&Vec<u8>| *l > k).unwrap_or(k).clone();
            largest_before.push(largest);
        }
        let shared = Arc::new((SkipList::new(LARGEST_CHUNK), order, sorted, largest_before));
        // Keys inserted so far (the first `n` of `order`), published after each insert.
        let inserted = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3u64)
            .map(|seed| {
                let (shared, inserted, done) = (shared.clone(), inserted.clone(), done.clone());
                std::thread::spawn(move || {
                    let (list, order, sorted, largest_before) = &*shared;
                    let mut dice = 0x2545_F491_4F6C_DD1D ^ (seed + 1);
                    let mut looks = 0u64;
                    while !done.load(AtomicOrdering::Relaxed) || looks < 100 {
                        dice ^= dice << 13;
                        dice ^= dice >> 7;
                        dice ^= dice << 17;
                        let n = inserted.load(AtomicOrdering::Acquire);
                        if n == 0 {
                            continue;
                        }
                        looks += 1;
                        let target = &order[dice as usize % n];
                        // A key inserted before the look is found by a seek to it.
                        let found = list.seek(&Probe::new(target));
                        assert_eq!(found.map(|f| f.key()), Some(&target[..]));
                        // A walk from it: in order, each entry whole, and
                        // every key inserted before the look is on it.
                        let mut walked: Vec<&[u8]> = Vec::new();
                        let mut x = found;
                        while let Some(node) = x.filter(|_| walked.len() < 40) {
                            assert!(walked.last().is_none_or(|&l| l < node.key()), "keys in order");
                            assert_eq!(node.value(), value_for(node.key()));
                            walked.push(node.key());
                            x = node.next_entry();
                        }
                        let from = sorted.partition_point(|(k, _)| k < target);
                        for (k, when) in sorted.iter().skip(from) {
                            if walked.last().is_some_and(|&l| k.as_slice() > l) {
                                break;
                            }
                            assert!(
                                *when >= n || walked.binary_search(&k.as_slice()).is_ok(),
                                "{k:?} missed"
                            );
                        }
                        // The last entry is at least the largest key inserted before the look.
                        let last = list.last().map(|l| (l.key(), l.value()));
                        let (last_key, last_value) = last.unwrap_or_default();
                        assert!(last_key >= largest_before[n - 1].as_slice());
                        assert_eq!(last_value, value_for(last_key));
                    }
                    looks
                })
            })
            .collect();
        {
            let (list, ..) = &*shared;
            let mut w = list.writer();
            for (i, (k, first)) in inserts.iter().enumerate() {
                let value = if *first { value_for(k) } else { b"again".to_vec() };
                assert_eq!(w.insert(k, &value).0, *first);
                if *first {
                    inserted.fetch_add(1, AtomicOrdering::Release);
                }
                if i.is_multiple_of(10) {
                    // Two cores, four threads: let the readers look mid-write.
                    std::thread::yield_now();
                }
            }
        }
        done.store(true, AtomicOrdering::Relaxed);
        for reader in readers {
            assert!(reader.join()? >= 100);
        }
        check_levels(&shared.0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(shared.0.len(), ROWS as usize * 10);
        Ok(())
    }

    #[test]
    fn heights_fall_by_a_quarter_a_level() {
        let list = SkipList::new(LARGEST_CHUNK);
        let mut w = list.writer();
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..100_000 {
            counts[w.random_height()] += 1;
        }
        // 75% height 1, 18.75% height 2, 4.7% height 3: within 1% of it.
        assert!((74_000..76_000).contains(&counts[1]), "{counts:?}");
        assert!((18_000..19_500).contains(&counts[2]), "{counts:?}");
        assert!((4_300..5_100).contains(&counts[3]), "{counts:?}");
        assert_eq!(counts[0], 0);
    }

    #[test]
    fn a_node_header_is_48_bytes() {
        assert_eq!((TOWER_OFFSET, std::mem::align_of::<Header>()), (48, 8));
        assert_eq!(min_entry_bytes(20), 80);
    }
}
