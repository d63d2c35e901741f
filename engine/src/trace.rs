//! What one read cost: the sources it consulted and how each was settled.
//!
//! An LSM read consults its sources newest to oldest: the active memtable, the
//! frozen memtables waiting for flush, then the table files. Most table files
//! are settled from metadata alone: their key range does not cover the row, or
//! their bloom filter says the row is absent; a read of one row asks each
//! memtable's row filter the same way ([`crate::row_filter`]). Only the rest
//! are searched, and only table files read data blocks (the pages a cold read
//! would bring from disk).
//! A [`Trace`] records all of it, per source, so a learner can see exactly why
//! a read was cheap or expensive.
//!
//! Definitions (the lesson tables are printed from them):
//! * **sources visited**: memtables and table files consulted until the answer
//!   was known, whatever settled them (as the lesson counts "files visited"):
//!   a memtable or a file ruled out by its filter was visited, not searched.
//! * **filter checks / negatives**: bloom filter probes, a table file's or a
//!   memtable's row filter, and those that answered "absent". A memtable with
//!   no entry has no filter yet: it is searched, and no check is counted.
//! * **data blocks / bytes / pages**: data blocks read through the table reader's
//!   one accounting point; pages are the distinct 4096-byte pages of the file
//!   those blocks cover. Index and filter blocks are read once when a table is
//!   opened and kept in memory (like LevelDB's table cache), so they cost a read
//!   no pages; their use is counted as index lookups and filter checks.
//! * **compressed blocks**: a family that compresses its tables reads their
//!   data blocks through the store's block cache. A block found there counts
//!   as a data block and a *cache hit*, and reads no byte and no page of the
//!   file; a *cache miss* reads the block as stored (its compressed bytes are
//!   the data bytes, their pages the pages touched) and counts the bytes it
//!   *decompressed* to. Raw blocks never go through the cache.
//! * **entries examined**: entries the sources produced inside the requested key
//!   range, including shadowed versions and tombstones (an entry decoded only to
//!   learn that a range has ended is not counted).
//! * **entries returned**: cells (or rows, for a scan) given to the caller.

use cellar_sstable::ReadCost;

/// Where a source lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// The memtable receiving writes.
    ActiveMemtable,
    /// A frozen memtable waiting to be flushed.
    FrozenMemtable,
    /// A table file.
    Table {
        /// The file's number (its name is `<file_id>.sst` in the family folder).
        file_id: u64,
        /// The sorted run it belongs to (files of one run have disjoint key ranges).
        run: u64,
    },
}

/// How a read settled one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The key range of the file does not cover what was asked: no I/O.
    KeyRange,
    /// The bloom filter (a table file's, or a memtable's row filter) said the
    /// row is absent: nothing searched, no data block read.
    Filter,
    /// The source was searched (a memtable lookup, or an index lookup and data blocks).
    Searched,
}

/// One source consulted by a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceTrace {
    /// Which source.
    pub source: SourceKind,
    /// How it was settled.
    pub settled: Settled,
    /// Entries it produced for the read.
    pub entries_examined: u64,
    /// Data blocks read, from the file or from the block cache.
    pub data_blocks: u64,
    /// Bytes of data blocks read from the file as stored (compressed, for a
    /// compressed block), trailers included.
    pub data_bytes: u64,
    /// Distinct 4096-byte pages of the file touched.
    pub pages_touched: u64,
    /// Bytes the compressed blocks read from the file decompressed to.
    pub decompressed_bytes: u64,
    /// Data blocks found decompressed in the block cache.
    pub cache_hits: u64,
    /// Data blocks looked for in the block cache and read from the file.
    pub cache_misses: u64,
    /// Searches of the file's in-memory index.
    pub index_lookups: u64,
    /// Bloom filter probes.
    pub filter_checks: u64,
    /// Bloom filter probes that answered "absent".
    pub filter_negatives: u64,
}

impl SourceTrace {
    pub(crate) fn new(source: SourceKind, settled: Settled) -> SourceTrace {
        SourceTrace {
            source,
            settled,
            entries_examined: 0,
            data_blocks: 0,
            data_bytes: 0,
            pages_touched: 0,
            decompressed_bytes: 0,
            cache_hits: 0,
            cache_misses: 0,
            index_lookups: 0,
            filter_checks: 0,
            filter_negatives: 0,
        }
    }

    /// Adds what a cursor read to what settling the source cost (its filter
    /// probes; the pages of one file are counted by the one reader that
    /// read them, so the counts add).
    pub(crate) fn add_read(&mut self, cost: &ReadCost) {
        self.data_blocks += cost.data_blocks;
        self.data_bytes += cost.data_bytes;
        self.pages_touched += cost.pages_touched();
        self.decompressed_bytes += cost.decompressed_bytes;
        self.cache_hits += cost.cache_hits;
        self.cache_misses += cost.cache_misses;
        self.index_lookups += cost.index_lookups;
        self.filter_checks += cost.filter_checks;
        self.filter_negatives += cost.filter_negatives;
    }

    pub(crate) fn add_cost(&mut self, cost: &ReadCost) {
        self.data_blocks = cost.data_blocks;
        self.data_bytes = cost.data_bytes;
        self.pages_touched = cost.pages_touched();
        self.decompressed_bytes = cost.decompressed_bytes;
        self.cache_hits = cost.cache_hits;
        self.cache_misses = cost.cache_misses;
        self.index_lookups = cost.index_lookups;
        self.filter_checks = cost.filter_checks;
        self.filter_negatives = cost.filter_negatives;
    }
}

/// The cost of one read, source by source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Sources consulted, newest first.
    pub sources: Vec<SourceTrace>,
    /// Cells or rows returned to the caller.
    pub entries_returned: u64,
}

impl Trace {
    fn sum(&self, f: impl Fn(&SourceTrace) -> u64) -> u64 {
        self.sources.iter().map(f).sum()
    }

    /// Memtables and table files consulted.
    pub fn sources_visited(&self) -> u64 {
        self.sources.len() as u64
    }
    /// Table files consulted.
    pub fn files_visited(&self) -> u64 {
        self.sources
            .iter()
            .filter(|s| matches!(s.source, SourceKind::Table { .. }))
            .count() as u64
    }
    /// Sources settled in the given way.
    pub fn settled_by(&self, how: Settled) -> u64 {
        self.sources.iter().filter(|s| s.settled == how).count() as u64
    }
    /// Entries produced by all sources.
    pub fn entries_examined(&self) -> u64 {
        self.sum(|s| s.entries_examined)
    }
    /// Data blocks read.
    pub fn data_blocks(&self) -> u64 {
        self.sum(|s| s.data_blocks)
    }
    /// Bytes of data blocks read.
    pub fn data_bytes(&self) -> u64 {
        self.sum(|s| s.data_bytes)
    }
    /// Distinct pages touched, summed over files.
    pub fn pages_touched(&self) -> u64 {
        self.sum(|s| s.pages_touched)
    }
    /// Bytes decompressed.
    pub fn decompressed_bytes(&self) -> u64 {
        self.sum(|s| s.decompressed_bytes)
    }
    /// Data blocks found in the block cache.
    pub fn cache_hits(&self) -> u64 {
        self.sum(|s| s.cache_hits)
    }
    /// Data blocks looked for in the block cache and not found.
    pub fn cache_misses(&self) -> u64 {
        self.sum(|s| s.cache_misses)
    }
    /// Index lookups.
    pub fn index_lookups(&self) -> u64 {
        self.sum(|s| s.index_lookups)
    }
    /// Bloom filter probes.
    pub fn filter_checks(&self) -> u64 {
        self.sum(|s| s.filter_checks)
    }
    /// Bloom filter probes that answered "absent".
    pub fn filter_negatives(&self) -> u64 {
        self.sum(|s| s.filter_negatives)
    }
}
