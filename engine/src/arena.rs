//! An arena: memory handed out in pieces from big chunks, freed all at once.
//!
//! A memtable only grows, and everything in it dies together, when the
//! memtable is dropped after its flush. So its skip-list nodes (each with its
//! entry's key and value beside it) need no allocation of their own: they are
//! carved one after another from chunks, as LevelDB's and RocksDB's memtables
//! do. A write then costs no call to the allocator at all (most of the time),
//! and freeing a flushed memtable of half a million entries is a thousand
//! calls, not half a million. (cellar's memtable used crossbeam's skip list,
//! which allocates every node on its own: on a YCSB load a fifth of the
//! writer's time went to `malloc` and to freeing the last memtable's nodes.)
//!
//! The chunks grow with the memtable: each new chunk is as big as all the
//! chunks before it together, between [`FIRST_CHUNK`] and the arena's
//! largest chunk, so a memtable written rarely holds 4 KiB and a busy one
//! allocates a chunk per 2 MiB of entries. A chunk wastes the room left at
//! its end when the next piece does not fit; a piece over a quarter of the
//! next chunk gets a chunk of its own (LevelDB's rule), so at most a quarter
//! is ever wasted.
//!
//! The largest chunk is bounded by the memtable's byte limit
//! ([`largest_chunk_for`]): a memtable is full once its chunks reach the
//! limit, and the chunk that reaches it is nearly empty, so a chunk of a
//! sixteenth of the limit at most keeps a memtable at least fifteen
//! sixteenths full (RocksDB sizes its arena blocks at an eighth of the write
//! buffer for the same reason).
//!
//! The 2 MiB chunks are mapped on their own and the kernel is asked to back
//! each with one huge page (`MADV_HUGEPAGE`). A skip-list insert into a full
//! memtable is a walk of a dozen or more nodes scattered over tens of
//! megabytes: with 4 KiB pages nearly every step also misses the TLB, and a
//! page walk (under a hypervisor, a walk of two page tables) comes on top of
//! the cache miss. With 2 MiB pages a 64 MiB memtable is 32 TLB entries. On
//! the YCSB load (1M rows of ten cells, one writer) this took the load from
//! 105k to 115k rows a second (medians of three runs). Where the kernel gives
//! no huge page, or no mapping at all, the chunk is plain memory and nothing
//! else changes.
//!
//! A fresh huge page is not free, though: the first touch faults, the kernel
//! zeroes 2 MiB, and where huge pages are asked for with `madvise` it may
//! first compact the machine's memory to find 2 MiB in one piece, all on the
//! writer's path. A flushed memtable's 2 MiB chunks are therefore kept for
//! the next memtable (up to one 64 MiB memtable's worth, for the whole
//! process), as an allocator keeps freed memory. Without that, the
//! sequential fill of 1M keys ran slower than with the 64 KiB chunks from
//! `malloc` before (830k against 879k keys a second) and the YCSB load's
//! p99.9 insert latency rose from 295 to 387 µs; with it, 880k and 234 µs
//! (medians of three alternated runs each).

use std::ptr::NonNull;

/// Size of the first chunk of an arena, and of its largest for a memtable
/// of 32 MiB or more.
pub(crate) const FIRST_CHUNK: usize = 4 << 10;
pub(crate) const LARGEST_CHUNK: usize = HUGE_PAGE;

/// The largest chunk of a memtable of `limit` bytes, however small: a memtable
/// of up to 1 MiB grows by chunks of 64 KiB.
const SMALLEST_LARGEST_CHUNK: usize = 64 << 10;

/// A huge page on x86-64 and (with 4 KiB base pages) on AArch64: the size
/// of the chunks a busy memtable is made of.
const HUGE_PAGE: usize = 2 << 20;

/// Every piece is aligned to this (a skip-list node holds `u64`s and pointers).
pub(crate) const ALIGN: usize = 8;

/// Chunks of 8-byte aligned memory, and the free room of the last.
///
/// An arena hands out raw pointers: it does not know what is written in its
/// pieces, and it never moves or frees a piece before it is dropped itself.
/// Its owner (the skip list) keeps it behind its writer's lock.
pub(crate) struct Arena {
    /// Every chunk from the allocator: its start and its length in bytes.
    chunks: Vec<(NonNull<u8>, usize)>,
    /// Every chunk mapped on its own (of a huge page's size, in huge pages
    /// where the kernel has them), unmapped when dropped.
    mapped: Vec<memmap2::MmapMut>,
    /// The size the chunks stop growing at.
    largest_chunk: usize,
    /// The free room of the chunk being filled: its start, and its length.
    free: NonNull<u8>,
    free_len: usize,
    /// Bytes of the chunks allocated so far.
    allocated: usize,
}

// SAFETY: an arena is plain memory it owns (the raw pointers are its own
// chunks); moving it to another thread moves that ownership, and a shared
// arena only reads its own fields.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`: `&Arena` gives no access to the chunks' contents.
unsafe impl Sync for Arena {}

/// The largest chunk for a memtable of `limit` bytes: the largest power of
/// two no more than a sixteenth of it, between 64 KiB and [`LARGEST_CHUNK`]
/// (a 64 MiB memtable grows by 2 MiB chunks, a 4 MiB one by 256 KiB ones).
pub(crate) fn largest_chunk_for(limit: usize) -> usize {
    let sixteenth = (limit / 16).max(1);
    // The largest power of two at most `sixteenth`.
    let power = 1usize << (usize::BITS - 1 - sixteenth.leading_zeros());
    power.clamp(SMALLEST_LARGEST_CHUNK, LARGEST_CHUNK)
}

impl Arena {
    /// An empty arena whose chunks grow up to `largest_chunk` bytes (see
    /// [`largest_chunk_for`]).
    pub fn new(largest_chunk: usize) -> Arena {
        Arena {
            chunks: Vec::new(),
            mapped: Vec::new(),
            largest_chunk: largest_chunk.max(FIRST_CHUNK),
            free: NonNull::dangling(),
            free_len: 0,
            allocated: 0,
        }
    }

    /// Bytes of the chunks allocated so far.
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    /// A piece of `len` bytes (not zeroed), 8-byte aligned, that stays where it is
    /// until the arena is dropped; and the bytes newly taken from the
    /// allocator for it (a new chunk's size, or 0).
    pub fn alloc(&mut self, len: usize) -> (NonNull<u8>, usize) {
        // An empty piece takes 8 bytes too: a fresh arena's free room is a
        // dangling pointer, not 8-byte aligned. Rounded with a check: a
        // release build wraps a plain multiplication, and a piece asked of
        // nearly `usize::MAX` bytes would come back 0 bytes long (its caller
        // then writing over other pieces and past the chunk).
        let Some(len) = len.max(1).checked_next_multiple_of(ALIGN) else {
            panic!("an arena piece of {len} bytes is too large to allocate");
        };
        let next_chunk = self.allocated.clamp(FIRST_CHUNK, self.largest_chunk);
        if len > next_chunk / 4 {
            // Its own chunk; the free room of the current one stays for later pieces.
            return (self.new_chunk(len), len);
        }
        let mut taken = 0;
        if self.free_len < len {
            self.free = self.new_chunk(next_chunk);
            self.free_len = next_chunk;
            taken = next_chunk;
        }
        let piece = self.free;
        // SAFETY: `len <= free_len`, so `free + len` is inside (or one past
        // the end of) the chunk `free` points into.
        self.free = unsafe { NonNull::new_unchecked(piece.as_ptr().add(len)) };
        self.free_len -= len;
        (piece, taken)
    }

    /// A new chunk of `len` bytes (a multiple of [`ALIGN`]), not zeroed:
    /// whoever takes a piece writes it before anything reads it (in tests,
    /// every new chunk starts full of `POISON` to make sure).
    fn new_chunk(&mut self, len: usize) -> NonNull<u8> {
        self.allocated += len;
        let mapped = if len == HUGE_PAGE { self.map_chunk(len) } else { None };
        let start = mapped.unwrap_or_else(|| self.allocate_chunk(len));
        poison_in_tests(start, len);
        start
    }

    /// A chunk of `len` bytes from the allocator, freed when the arena is dropped.
    fn allocate_chunk(&mut self, len: usize) -> NonNull<u8> {
        let layout = chunk_layout(len);
        // SAFETY: the layout's size is not zero (every piece is at least 8
        // bytes, every chunk at least `FIRST_CHUNK`).
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(start) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout);
        };
        self.chunks.push((start, len));
        start
    }

    /// A chunk of `len` bytes mapped on its own, in huge pages if the kernel
    /// has them (`None` if the mapping fails: the allocator serves instead).
    ///
    /// The kernel places a mapping whose length is a multiple of the huge
    /// page size on a huge page boundary, so the whole chunk can be one page.
    /// The advice is only that: without it (or with huge pages off) the
    /// chunk is ordinary memory, as an allocated one would be.
    fn map_chunk(&mut self, len: usize) -> Option<NonNull<u8>> {
        let mut map = match SPARE_CHUNKS.lock().pop() {
            Some(spare) => spare,
            None => {
                let map = memmap2::MmapOptions::new().len(len).map_anon().ok()?;
                #[cfg(target_os = "linux")]
                {
                    // Advice the kernel may ignore: a failure changes nothing.
                    let _ = map.advise(memmap2::Advice::HugePage);
                }
                map
            }
        };
        let start = NonNull::new(map.as_mut_ptr())?;
        self.mapped.push(map);
        Some(start)
    }
}

/// In the crate's own tests every new chunk starts full of this byte, not
/// with what the allocator or the kernel gave (mostly zeros): a chunk taken
/// back from [`SPARE_CHUNKS`] holds whatever its last memtable wrote. A node
/// that relied on zeroed memory, or a reader still in a chunk after it went
/// back, then reads `0xA5`s and fails its test instead of passing on zeros.
#[cfg(test)]
const POISON: u8 = 0xA5;

/// Fills a new chunk with `POISON` in tests; nothing in a build of the library.
#[inline]
fn poison_in_tests(start: NonNull<u8>, len: usize) {
    // SAFETY: `start` is a chunk of `len` bytes the arena owns and has
    // handed no piece of yet.
    #[cfg(test)]
    unsafe {
        std::ptr::write_bytes(start.as_ptr(), POISON, len);
    }
    #[cfg(not(test))]
    let _ = (start, len);
}

/// How a chunk of `len` bytes is allocated (and freed).
fn chunk_layout(len: usize) -> std::alloc::Layout {
    // A chunk is at most a piece's size rounded up to 8, and a piece is an
    // entry the store already bounded: never near `isize::MAX`, where this
    // fails as `Vec` does ("capacity overflow").
    std::alloc::Layout::from_size_align(len.max(ALIGN), ALIGN)
        .unwrap_or_else(|_| panic!("an arena chunk of {len} bytes is too large to allocate"))
}

/// Huge-page chunks of dropped arenas, kept for the next memtable's: a
/// fresh mapping costs a page fault, the kernel zeroing 2 MiB, and (where
/// huge pages are asked for with `madvise`) at times a compaction of the
/// machine's memory to find 2 MiB in one piece, all on the writer's path. A
/// store that flushes a memtable starts the next one, so a memtable's worth
/// of chunks is kept at most ([`SPARE_LIMIT`]); the rest are unmapped.
static SPARE_CHUNKS: parking_lot::Mutex<Vec<memmap2::MmapMut>> = parking_lot::const_mutex(Vec::new());

/// Chunks [`SPARE_CHUNKS`] keeps at most: a 64 MiB memtable's.
const SPARE_LIMIT: usize = 32;

impl Drop for Arena {
    fn drop(&mut self) {
        if !self.mapped.is_empty() {
            let mut spare = SPARE_CHUNKS.lock();
            let room = SPARE_LIMIT.saturating_sub(spare.len());
            spare.extend(self.mapped.drain(..).take(room));
        }
        for &(start, len) in &self.chunks {
            // SAFETY: each pair is a chunk allocated by `new_chunk` with
            // this layout, freed exactly once, here.
            unsafe { std::alloc::dealloc(start.as_ptr(), chunk_layout(len)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn chunks_grow_to_the_largest_size_and_a_large_piece_gets_its_own() {
        let mut arena = Arena::new(LARGEST_CHUNK);
        let mut chunks = Vec::new();
        while chunks.len() < 12 {
            let (piece, taken) = arena.alloc(1000);
            // SAFETY: the piece is 1000 bytes the arena handed out and owns.
            unsafe { std::ptr::write_bytes(piece.as_ptr(), 0xAB, 1000) };
            if taken > 0 {
                chunks.push(taken);
            }
        }
        let kib = |n: usize| n << 10;
        assert_eq!(chunks, [4, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 2048].map(kib));
        // The largest chunks are mapped on their own (for their huge pages).
        assert_eq!((arena.chunks.len(), arena.mapped.len()), (10, 2));
        let before = arena.allocated();
        let (_, taken) = arena.alloc(LARGEST_CHUNK / 4 + 1);
        assert_eq!(
            (taken, arena.allocated() - before),
            (LARGEST_CHUNK / 4 + 8, LARGEST_CHUNK / 4 + 8)
        );
        // The chunk being filled was not given up for it.
        assert_eq!(arena.alloc(8).1, 0);
    }

    #[test]
    fn pieces_are_aligned_and_apart() {
        let mut arena = Arena::new(LARGEST_CHUNK);
        // Empty pieces too are aligned (each takes 8 bytes of a chunk).
        let pieces: Vec<(NonNull<u8>, usize)> = [0, 1, 7, 8, 0, 13, 100, 2000, 30_000]
            .into_iter()
            .map(|len| (arena.alloc(len).0, len))
            .collect();
        for &(piece, len) in &pieces {
            assert_eq!(piece.as_ptr() as usize % ALIGN, 0);
            // SAFETY: the piece is `len` bytes the arena handed out and still
            // owns; it is written before it is read.
            unsafe { std::ptr::write_bytes(piece.as_ptr(), 0xAB, len) };
        }
        // Writing every piece full disturbed no other.
        for &(piece, len) in &pieces {
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(piece.as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == 0xAB));
        }
    }

    #[test]
    #[should_panic(expected = "too large to allocate")]
    fn a_piece_too_large_to_round_up_panics_instead_of_coming_back_short() {
        // Rounded up to 8 without a check, `usize::MAX - 3` wraps to 0 in a
        // release build: a piece of no bytes for a caller about to write
        // nearly `usize::MAX`.
        let mut arena = Arena::new(LARGEST_CHUNK);
        let (piece, taken) = arena.alloc(usize::MAX - 3);
        panic!("a piece came back at {piece:?}, {taken} bytes taken");
    }

    /// Piece lengths at the arena's edges: empty and small pieces of every
    /// remainder modulo 8, pieces that fill a first chunk, a quarter of a
    /// huge page and just past it (a chunk of their own), a whole huge page
    /// (a mapped chunk of its own) and just past it (an allocated one).
    fn piece_len() -> impl Strategy<Value = usize> {
        prop_oneof![
            12 => 0usize..100,
            4 => 100usize..(FIRST_CHUNK + 9),
            3 => (FIRST_CHUNK + 9)..(LARGEST_CHUNK / 8),
            1 => prop_oneof![
                Just(LARGEST_CHUNK / 4),
                Just(LARGEST_CHUNK / 4 + 1),
                Just(LARGEST_CHUNK),
                Just(LARGEST_CHUNK + 1),
            ],
        ]
    }

    /// Every chunk of `arena`, mapped or allocated: its start and length.
    fn chunks_of(arena: &Arena) -> Vec<(usize, usize)> {
        let allocated = arena.chunks.iter().map(|&(start, len)| (start.as_ptr() as usize, len));
        allocated
            .chain(arena.mapped.iter().map(|m| (m.as_ptr() as usize, m.len())))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn live_pieces_are_aligned_inside_a_chunk_apart_and_keep_their_bytes(
            largest in prop_oneof![
                (10u32..30).prop_map(|shift| largest_chunk_for(1 << shift)),
                0usize..(3 << 20),
            ],
            lens in proptest::collection::vec(piece_len(), 1..80),
        ) {
            let mut arena = Arena::new(largest);
            let mut pieces: Vec<(NonNull<u8>, usize, u8)> = Vec::new();
            let mut taken = 0;
            for (i, &len) in lens.iter().enumerate() {
                let (piece, new_bytes) = arena.alloc(len);
                taken += new_bytes;
                let at = piece.as_ptr() as usize;
                prop_assert_eq!(at % ALIGN, 0, "piece {} of {} bytes", i, len);
                // Inside one chunk, and sharing no byte with an earlier piece
                // (an empty piece counts as one byte): checked before it is
                // written, so a wrong piece fails here, not in the allocator.
                let end = at + len.max(1);
                let inside = chunks_of(&arena).iter().any(|&(start, size)| start <= at && end <= start + size);
                prop_assert!(inside, "piece {} of {} bytes outside every chunk", i, len);
                for &(other, other_len, j) in &pieces {
                    let other = other.as_ptr() as usize;
                    let apart = end <= other || other + other_len.max(1) <= at;
                    prop_assert!(apart, "piece {} of {} bytes overlaps piece {}", i, len, j);
                }
                // SAFETY: the piece is `len` bytes the arena handed out and
                // still owns (a piece of its own, written nowhere else).
                unsafe { std::ptr::write_bytes(piece.as_ptr(), i as u8, len) };
                pieces.push((piece, len, i as u8));
            }
            prop_assert_eq!(arena.allocated(), taken);
            // Every piece still holds what was written into it.
            for &(piece, len, tag) in &pieces {
                // SAFETY: as above; the piece was written whole.
                let bytes = unsafe { std::slice::from_raw_parts(piece.as_ptr(), len) };
                prop_assert!(bytes.iter().all(|&b| b == tag), "piece {} of {} bytes overwritten", tag, len);
            }
        }
    }

    #[test]
    fn in_tests_every_new_chunk_starts_poisoned_not_zeroed() {
        let mut arena = Arena::new(LARGEST_CHUNK);
        for len in [8, 1000, LARGEST_CHUNK / 4 + 1, LARGEST_CHUNK] {
            let (piece, _) = arena.alloc(len);
            // SAFETY: `len` bytes the arena handed out, read as they came.
            let bytes = unsafe { std::slice::from_raw_parts(piece.as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == POISON), "a piece of {len} bytes");
        }
    }

    #[test]
    fn only_huge_page_chunks_are_kept_and_no_more_than_a_memtables_worth() {
        // More huge-page pieces than the list keeps (each a mapped chunk of
        // its own), and pieces one byte longer (allocated, never kept).
        let mut arena = Arena::new(LARGEST_CHUNK);
        for i in 0..=SPARE_LIMIT {
            arena.alloc(LARGEST_CHUNK);
            if i < 2 {
                arena.alloc(LARGEST_CHUNK + 1);
            }
        }
        assert_eq!((arena.mapped.len(), arena.chunks.len()), (SPARE_LIMIT + 1, 2));
        drop(arena);
        // Other tests take and give back chunks meanwhile; these hold throughout.
        let spare = SPARE_CHUNKS.lock();
        assert!(spare.len() <= SPARE_LIMIT, "{} spare chunks", spare.len());
        assert!(spare.iter().all(|chunk| chunk.len() == HUGE_PAGE));
    }

    #[test]
    fn the_largest_chunk_is_a_sixteenth_of_the_memtable_limit_within_bounds() {
        let mib = |n: usize| n << 20;
        assert_eq!(largest_chunk_for(mib(64)), mib(2));
        assert_eq!(largest_chunk_for(mib(32)), mib(2));
        assert_eq!(largest_chunk_for(mib(31)), mib(1));
        assert_eq!(largest_chunk_for(mib(4)), 256 << 10);
        assert_eq!(largest_chunk_for(mib(3)), 128 << 10);
        assert_eq!(largest_chunk_for(mib(1)), 64 << 10);
        assert_eq!(largest_chunk_for(1024), 64 << 10);
        assert_eq!(largest_chunk_for(usize::MAX), mib(2));
        // An arena for a 3 MiB memtable stops growing at 128 KiB chunks.
        let mut arena = Arena::new(largest_chunk_for(mib(3)));
        let mut chunks = Vec::new();
        while chunks.len() < 8 {
            let (_, taken) = arena.alloc(1000);
            if taken > 0 {
                chunks.push(taken >> 10);
            }
        }
        assert_eq!(chunks, [4, 4, 8, 16, 32, 64, 128, 128]);
    }
}
