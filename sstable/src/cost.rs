//! Read accounting: what one operation cost, counted at one choke point.
//!
//! A table read is cheap or dear depending on how many blocks it touches and
//! how many disk pages those blocks span. Every data block a reader fetches
//! passes through one function, `Table::read_block`, which records it here;
//! nothing else reads data blocks, so these numbers cannot drift from what
//! the code does. The caller owns the `ReadCost` for one operation (a get, a
//! scan), so costs are per operation, not process-wide totals.
//!
//! The index, filter and properties blocks are read once when a table is
//! opened and then kept in memory (as LevelDB's table cache does), so a read
//! costs only the data blocks it fetches: an index lookup is a binary search
//! in memory, counted in `index_lookups` but touching no page.
//!
//! *Pages touched* are the distinct 4096-byte pages of the file covered by the
//! byte ranges read, trailers included: the unit an operating system reads
//! from disk and caches. A 4 KiB block that starts mid-page spans two.
//!
//! A table with compressed blocks reads through the block cache
//! ([`crate::BlockCache`]): a block found there counts as a data block and a
//! cache hit, but reads no byte of the file and touches no page; a block not
//! found counts a miss, its bytes *as stored* (compressed) and their pages,
//! and the bytes it decompressed to. Raw blocks never go through the cache.

/// The unit of "pages touched": the usual size of an operating-system page.
pub const PAGE_SIZE: u64 = 4096;

/// What reading from one table file cost one operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadCost {
    /// Data blocks read, from the file or from the block cache (a block read
    /// twice counts twice).
    pub data_blocks: u64,
    /// Bytes of data blocks read from the file as stored (compressed, for a
    /// compressed block), trailers included; a cache hit reads none.
    pub data_bytes: u64,
    /// Bytes the compressed blocks read from the file decompressed to.
    pub decompressed_bytes: u64,
    /// Data blocks found in the block cache.
    pub cache_hits: u64,
    /// Data blocks looked for in the block cache and not found (then read
    /// from the file).
    pub cache_misses: u64,
    /// Binary searches of the in-memory index (one per seek).
    pub index_lookups: u64,
    /// Bloom filter consultations.
    pub filter_checks: u64,
    /// Consultations that answered "certainly absent".
    pub filter_negatives: u64,
    /// Distinct page numbers (`offset / PAGE_SIZE`) of every byte read.
    pages: PageSet,
}

/// A set of page numbers kept as sorted, disjoint, non-adjacent inclusive
/// ranges. A point read is one range and a forward scan keeps extending its
/// last one, so the set stays a few numbers however many blocks are read.
///
/// The highest range is kept apart from the others: a read of one block, or
/// of blocks in file order, touches only it, and a cursor opened for one row
/// allocates nothing to count its pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PageSet {
    /// The highest range (`None` for an empty set).
    last: Option<(u64, u64)>,
    /// The ranges below `last`, in order.
    below: Vec<(u64, u64)>,
}

impl PageSet {
    fn len(&self) -> u64 {
        self.ranges().map(|(a, b)| b - a + 1).sum()
    }

    /// Every range, in order.
    fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.below.iter().copied().chain(self.last)
    }

    fn insert(&mut self, first: u64, last: u64) {
        // Fast path: a forward walk extends (or repeats) the last range.
        match &mut self.last {
            None => {
                self.last = Some((first, last));
                return;
            }
            Some(end) if first >= end.0 && first <= end.1.saturating_add(1) => {
                end.1 = end.1.max(last);
                return;
            }
            Some(_) => {}
        }
        // General case: insert among all the ranges, merge every range the new
        // one touches, then set the highest apart again.
        let mut ranges = std::mem::take(&mut self.below);
        ranges.extend(self.last.take());
        let at = ranges.partition_point(|&(_, b)| b.saturating_add(1) < first);
        let mut lo = first;
        let mut hi = last;
        let mut end = at;
        while let Some(&(a, b)) = ranges.get(end) {
            if a > hi.saturating_add(1) {
                break;
            }
            lo = lo.min(a);
            hi = hi.max(b);
            end += 1;
        }
        ranges.splice(at..end, [(lo, hi)]);
        self.last = ranges.pop();
        self.below = ranges;
    }
}

impl ReadCost {
    /// A cost of nothing.
    pub fn new() -> ReadCost {
        ReadCost::default()
    }

    /// Number of distinct pages of the file read so far.
    pub fn pages_touched(&self) -> u64 {
        self.pages.len()
    }

    /// Adds `other` to this cost. Both must be costs of the same file: pages
    /// are a set of page numbers of one file, so a page read by both counts
    /// once. (For different files, sum their `pages_touched` instead.)
    pub fn add(&mut self, other: &ReadCost) {
        self.data_blocks += other.data_blocks;
        self.data_bytes += other.data_bytes;
        self.decompressed_bytes += other.decompressed_bytes;
        self.cache_hits += other.cache_hits;
        self.cache_misses += other.cache_misses;
        self.index_lookups += other.index_lookups;
        self.filter_checks += other.filter_checks;
        self.filter_negatives += other.filter_negatives;
        for (first, last) in other.pages.ranges() {
            self.pages.insert(first, last);
        }
    }

    /// Records a data block of `len` bytes (trailer included) read at `offset`.
    pub(crate) fn record_data_block(&mut self, offset: u64, len: u64) {
        self.data_blocks += 1;
        self.data_bytes += len;
        self.record_range(offset, len);
    }

    /// Records a data block found in the block cache: no byte of the file read.
    pub(crate) fn record_cache_hit(&mut self) {
        self.data_blocks += 1;
        self.cache_hits += 1;
    }

    /// Records the pages `offset / 4096 ..= (offset + len - 1) / 4096`.
    pub(crate) fn record_range(&mut self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = offset / PAGE_SIZE;
        let last = offset.saturating_add(len - 1) / PAGE_SIZE;
        self.pages.insert(first, last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_inside_one_page_touches_one_page() {
        let mut cost = ReadCost::new();
        cost.record_data_block(0, 4096);
        assert_eq!(cost.pages_touched(), 1);
        assert_eq!((cost.data_blocks, cost.data_bytes), (1, 4096));
    }

    #[test]
    fn a_block_straddling_a_page_boundary_touches_two_pages() {
        let mut cost = ReadCost::new();
        cost.record_data_block(4000, 200); // bytes 4000..=4199: pages 0 and 1
        assert_eq!(cost.pages_touched(), 2);
    }

    #[test]
    fn a_page_read_twice_counts_once() {
        let mut cost = ReadCost::new();
        cost.record_data_block(0, 100);
        cost.record_data_block(0, 100);
        cost.record_data_block(100, 100);
        assert_eq!(cost.data_blocks, 3);
        assert_eq!(cost.data_bytes, 300);
        assert_eq!(cost.pages_touched(), 1);
    }

    proptest::proptest! {
        #[test]
        fn page_set_counts_like_a_set_of_page_numbers(
            reads in proptest::collection::vec((0u64..64, 0u64..4), 0..40)
        ) {
            let mut cost = ReadCost::new();
            let mut model = std::collections::BTreeSet::new();
            for (first, extra) in reads {
                cost.pages.insert(first, first + extra);
                model.extend(first..=first + extra);
            }
            proptest::prop_assert_eq!(cost.pages_touched(), model.len() as u64);
            let ranges: Vec<_> = cost.pages.ranges().collect();
            for pair in ranges.windows(2) {
                proptest::prop_assert!(pair[0].1 + 1 < pair[1].0, "ranges sorted, disjoint, not adjacent");
            }
        }
    }

    #[test]
    fn pages_read_out_of_order_are_counted_once_each() {
        let mut cost = ReadCost::new();
        for page in [9u64, 2, 5, 3, 4, 9, 0, 20, 1] {
            cost.record_range(page * PAGE_SIZE + 10, 1);
        }
        // Distinct pages: 0, 1, 2, 3, 4, 5, 9, 20.
        assert_eq!(cost.pages_touched(), 8);
        assert_eq!(cost.pages.ranges().collect::<Vec<_>>(), [(0, 5), (9, 9), (20, 20)]);
    }

    #[test]
    fn a_large_block_touches_every_page_it_covers() {
        let mut cost = ReadCost::new();
        cost.record_range(4095, 4098); // bytes 4095..=8192: pages 0, 1, 2
        assert_eq!(cost.pages_touched(), 3);
        cost.record_range(9000, 0);
        assert_eq!(cost.pages_touched(), 3);
    }

    #[test]
    fn adding_costs_sums_counters_and_unions_pages() {
        let mut a = ReadCost::new();
        a.record_data_block(0, 4096);
        a.index_lookups = 1;
        let mut b = ReadCost::new();
        b.record_data_block(4000, 200);
        b.index_lookups = 1;
        b.filter_checks = 2;
        b.filter_negatives = 1;
        b.cache_misses = 1;
        b.decompressed_bytes = 4000;
        b.record_cache_hit();
        a.add(&b);
        assert_eq!((a.cache_hits, a.cache_misses, a.decompressed_bytes), (1, 1, 4000));
        a.data_blocks -= 1; // the hit
        assert_eq!(a.data_blocks, 2);
        assert_eq!(a.data_bytes, 4296);
        assert_eq!(a.index_lookups, 2);
        assert_eq!((a.filter_checks, a.filter_negatives), (2, 1));
        assert_eq!(a.pages_touched(), 2); // pages 0 and 1
    }
}
