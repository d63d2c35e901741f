//! A memtable's row filter: which rows a memtable may hold, answered without
//! searching it.
//!
//! A table file answers "may this row be here?" from its bloom filter, so a
//! point read of one row skips almost every file that does not hold it. A
//! memtable had no such answer: every row read searched the active memtable
//! and every frozen one (a skip-list search from the top, a cache miss or
//! two per level), although after a flush or two most rows live in none of
//! them. The row filter is the memtable's bloom filter, kept as the writer
//! inserts, as RocksDB's memtable prefix bloom (`memtable_prefix_bloom_size_ratio`)
//! keeps one.
//!
//! * **Split-block bloom filter.** The bits are cut into blocks of 256 bits
//!   (eight 32-bit words, one cache line half). A row's hash picks one block,
//!   and sets one bit in each of its eight words: a probe reads one block,
//!   one cache miss at most, where a classic bloom filter's probes land on
//!   as many lines as it has probes (Parquet's and Impala's design).
//! * **The row's hash is its table filter hash.** The key hashed is the
//!   encoded row prefix, exactly what a table file's bloom filter holds
//!   ([`cellar_sstable::filter_hash`]), so a read hashes its row once for
//!   every memtable and every table it asks.
//! * **Sized from the memtable's limits.** A memtable cannot hold more
//!   entries than its entry limit, nor more than its byte limit divided by
//!   what an entry costs at least, so the filter gets 10 bits for each entry
//!   it could hold (about 1 % false positives if every entry were a row of
//!   its own; a row of ten cells gets a hundred bits). For the default 64 MiB
//!   memtable that is 700 KiB, about 1 % of the memtable, counted in its
//!   bytes. A memtable that overflows its limits (a large batch lands whole)
//!   only sees more false positives: a bloom filter never forgets a row.
//! * **Never more than 16 MiB.** A byte limit set out of reach (`usize::MAX`,
//!   to flush only by entries or by hand) would otherwise ask for 1 % of it
//!   at the first write: 137 GB, and the process aborts. At 16 MiB the
//!   filter keeps its 10 bits per entry up to a memtable of about 1.5 GiB of the
//!   smallest entries; a larger one sees more false positives, never a
//!   missed row.
//! * **Allocated by the first write.** An empty memtable (every family has
//!   one, and a store may have many families) costs nothing.
//!
//! **Readers while the writer inserts.** The filter is filled by the store's
//! single writer and read by any number of readers at once, with no lock: each
//! word is an atomic, bits are only ever set, never cleared. The writer sets a
//! row's bits *before* it inserts the entry into the skip list, and publishes
//! the entry's sequence number to readers (a release store of the store's
//! visible sequence) only after both. A reader takes its snapshot's sequence
//! with an acquire load of that number, so every write its snapshot can see
//! happened before the reader's probe, bits included: a probe never answers
//! "absent" for a row whose write is visible to it. A write the reader cannot
//! see yet may or may not have its bits set; either answer is right for it.
//! (Bits before the entry, not after, also means that on x86_64, whose loads
//! are ordered, a reader that meets the entry in the skip list finds its bits
//! set. Weaker machines promise that only through the sequence, and no read
//! relies on more: every read goes by its snapshot's sequence.)

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// Filter bits per entry the memtable may hold.
const BITS_PER_ENTRY: usize = 10;

/// Bits per block: eight 32-bit words.
const BLOCK_BITS: usize = 256;

/// The most bytes a filter takes, whatever its memtable's limits (see the
/// module doc): 2^19 blocks of 32 bytes.
const MAX_BYTES: usize = 16 << 20;

/// One block: a row sets one bit in each of its words. Aligned so that a
/// block never straddles two cache lines.
#[repr(align(32))]
struct Block([AtomicU32; 8]);

impl Block {
    fn new() -> Block {
        Block(std::array::from_fn(|_| AtomicU32::new(0)))
    }
}

/// The eight odd multipliers that spread a row's 32-bit hash over the eight
/// words of its block, one bit each (the constants of Parquet's split-block
/// bloom filter).
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// The bit a row's hash sets in each word of its block.
fn masks(hash: u64) -> [u32; 8] {
    let low = hash as u32;
    SALT.map(|salt| 1 << (low.wrapping_mul(salt) >> 27))
}

/// The rows a memtable may hold, as a bloom filter of their hashes.
pub(crate) struct RowFilter {
    /// Blocks the filter will have once allocated.
    block_count: usize,
    /// The blocks, allocated by the first insert.
    blocks: OnceLock<Box<[Block]>>,
}

impl RowFilter {
    /// A filter for a memtable that may hold up to `entries` entries
    /// (nothing is allocated until the first insert).
    pub fn for_entries(entries: usize) -> RowFilter {
        let bits = entries.saturating_mul(BITS_PER_ENTRY);
        RowFilter {
            block_count: bits
                .div_ceil(BLOCK_BITS)
                .clamp(1, MAX_BYTES / std::mem::size_of::<Block>()),
            blocks: OnceLock::new(),
        }
    }

    /// Bytes the filter takes once allocated.
    pub fn bytes(&self) -> usize {
        self.block_count * std::mem::size_of::<Block>()
    }

    /// The block a row's hash falls in: the hash's high half scaled to the
    /// block count (a multiply and a shift, no division).
    fn block(blocks: &[Block], hash: u64) -> Option<&Block> {
        let at = ((hash >> 32) * blocks.len() as u64) >> 32;
        blocks.get(at as usize)
    }

    /// Adds a row by its filter hash. Returns the bytes it allocated (the
    /// whole filter, on the memtable's first insert; else 0).
    ///
    /// One caller at a time: the memtable's inserter calls this holding the
    /// memtable's arena lock, before it inserts the row's entry. That is what
    /// lets a bit be set by a plain load and store instead of a locked
    /// read-modify-write (`fetch_or`, about 20 cycles a word and eight words
    /// a row, measured as several percent of a fill of small rows): with a
    /// second writer, a store could undo the other's bit, and a row would go
    /// missing. Readers only load.
    pub fn insert(&self, hash: u64) -> usize {
        let mut allocated = 0;
        let blocks = self.blocks.get_or_init(|| {
            allocated = self.bytes();
            (0..self.block_count).map(|_| Block::new()).collect()
        });
        if let Some(block) = Self::block(blocks, hash) {
            for (word, mask) in block.0.iter().zip(masks(hash)) {
                // A row written again finds its bits set: a load, and no
                // write to a line readers share.
                let bits = word.load(Ordering::Relaxed);
                if bits & mask == 0 {
                    word.store(bits | mask, Ordering::Relaxed);
                }
            }
        }
        allocated
    }

    /// Starts loading the block a row's hash falls in, so that a later
    /// [`insert`](Self::insert) of the row does not wait for it. A new row's
    /// block is almost never in cache (the hash scatters rows over the whole
    /// filter, 700 KiB for a default memtable): the writer asks for it before
    /// it writes the log record, and the line arrives meanwhile. A hint only:
    /// it changes nothing and never faults.
    pub fn prefetch(&self, hash: u64) {
        let Some(block) = self.blocks.get().and_then(|blocks| Self::block(blocks, hash)) else {
            return;
        };
        crate::prefetch::prefetch_line(std::ptr::from_ref(block).cast());
    }

    /// Whether the filter was allocated, that is, whether anything was inserted.
    pub fn is_empty(&self) -> bool {
        self.blocks.get().is_none()
    }

    /// Whether a row with this filter hash may have been inserted: false
    /// only if it never was (see the module doc for why a reader sees every
    /// insert its snapshot can see).
    pub fn may_contain(&self, hash: u64) -> bool {
        let Some(block) = self.blocks.get().and_then(|blocks| Self::block(blocks, hash)) else {
            return false;
        };
        block
            .0
            .iter()
            .zip(masks(hash))
            .all(|(word, mask)| word.load(Ordering::Relaxed) & mask != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u64) -> u64 {
        cellar_sstable::filter_hash(format!("row{n}").as_bytes())
    }

    #[test]
    fn every_inserted_row_may_be_there_and_few_others_are() {
        let filter = RowFilter::for_entries(10_000);
        assert!(filter.is_empty());
        assert!(!filter.may_contain(hash(1)), "an empty filter holds nothing");
        for n in 0..10_000 {
            filter.insert(hash(n));
        }
        assert!((0..10_000).all(|n| filter.may_contain(hash(n))));
        let false_positives = (10_000..110_000).filter(|&n| filter.may_contain(hash(n))).count();
        // 10 bits per row, one block per row: about 1 % expected.
        assert!(false_positives < 2_000, "{false_positives} of 100,000");
    }

    #[test]
    fn the_filter_is_allocated_by_its_first_insert_and_sized_from_the_entries() {
        let filter = RowFilter::for_entries(1_000);
        // 10,000 bits in 40 blocks of 32 bytes.
        assert_eq!(filter.bytes(), 40 * 32);
        assert_eq!(filter.insert(hash(1)), 1_280);
        assert_eq!(filter.insert(hash(2)), 0);
        assert!(!filter.is_empty());
        assert_eq!(RowFilter::for_entries(1).bytes(), 32, "one block at least");
    }

    #[test]
    fn a_filter_for_a_memtable_with_no_reachable_limit_takes_16_mib() {
        // 13,421,772 entries (a GiB of the smallest, 80 bytes each): 134,217,720 bits, 2^19 blocks.
        assert_eq!(RowFilter::for_entries(13_421_772).bytes(), 16 << 20);
        // usize::MAX bytes of memtable: not 137 GB of filter.
        assert_eq!(RowFilter::for_entries(usize::MAX / 80 + 1).bytes(), 16 << 20);
    }

    #[test]
    fn an_overfull_filter_still_holds_every_row() {
        let filter = RowFilter::for_entries(10);
        for n in 0..5_000 {
            filter.insert(hash(n));
        }
        assert!((0..5_000).all(|n| filter.may_contain(hash(n))));
    }
}
