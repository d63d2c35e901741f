//! The block cache: decompressed data blocks kept in memory, so a hot
//! compressed block is decompressed once, not on every read.
//!
//! A raw block needs no cache of its own: it is a zero-copy slice of the
//! mapped file, and the operating system's page cache keeps its pages. A
//! compressed block is different: its pages in the page cache hold the
//! compressed bytes, and every read would pay a decompression. So, as in
//! RocksDB and fjall, the decompressed block goes into a cache bounded in
//! bytes and shared by every table of a store (and so by all its families):
//! blocks compete for the room by how recently and how often they are read,
//! whatever family they belong to.
//!
//! The cache is `quick_cache`'s concurrent cache (sharded, lock per shard,
//! an eviction policy that resists one-off scans), weighed in bytes. A block
//! is known by its table and its offset in the file; each table opened with
//! the cache gets a number of its own from it, so the blocks of a file that
//! was deleted are never found again and age out.
//!
//! What a read found is counted in its [`crate::ReadCost`]: a hit reads no
//! byte of the file and decompresses nothing; a miss reads the block as
//! stored, decompresses it and leaves it in the cache.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::block::Block;

/// A block's key: the table's number in the cache and the block's offset.
type BlockKey = (u64, u64);

/// Bytes a cached block is taken to cost beyond its contents: the key, the
/// block's fields and the cache's own bookkeeping, roughly.
const ENTRY_OVERHEAD: u64 = 128;

/// Weighs a block by its decompressed size.
#[derive(Clone, Copy, Debug)]
struct ByBytes;

impl quick_cache::Weighter<BlockKey, Block> for ByBytes {
    fn weight(&self, _key: &BlockKey, block: &Block) -> u64 {
        block.size() as u64 + ENTRY_OVERHEAD
    }
}

type Blocks = quick_cache::sync::Cache<BlockKey, Block, ByBytes>;

/// A cache of decompressed data blocks, bounded in bytes. Cheap to clone:
/// clones share one cache.
#[derive(Clone)]
pub struct BlockCache {
    /// `None` for a cache of no bytes: every lookup misses.
    blocks: Option<Arc<Blocks>>,
    capacity: u64,
    next_table: Arc<AtomicU64>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .finish()
    }
}

impl BlockCache {
    /// A cache that holds at most `capacity` bytes of blocks (0: a cache that
    /// keeps nothing, so every compressed block read is decompressed).
    pub fn new(capacity: u64) -> BlockCache {
        let blocks = (capacity > 0).then(|| {
            // quick_cache sizes its tables from the number of items expected.
            let items = (capacity / 4096).clamp(16, 1 << 24) as usize;
            Arc::new(Blocks::with_weighter(items, capacity, ByBytes))
        });
        BlockCache {
            blocks,
            capacity,
            next_table: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The bound, in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes held now (decompressed blocks and their overhead).
    pub fn usage(&self) -> u64 {
        self.blocks.as_ref().map_or(0, |b| b.weight())
    }

    /// Blocks held now.
    pub fn len(&self) -> usize {
        self.blocks.as_ref().map_or(0, |b| b.len())
    }

    /// True when the cache holds no block.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A number for a table being opened, never given out before.
    pub(crate) fn table_number(&self) -> u64 {
        self.next_table.fetch_add(1, Ordering::Relaxed)
    }

    /// The block at `offset` of table `table`, if cached.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Block> {
        self.blocks.as_ref()?.get(&(table, offset))
    }

    /// Keeps `block`, the block at `offset` of table `table` (a block larger
    /// than the whole cache is not kept).
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Block) {
        if let Some(blocks) = &self.blocks {
            blocks.insert((table, offset), block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::path::Path;

    /// A block of one entry whose value has `value_len` bytes.
    fn block(value_len: usize) -> crate::Result<Block> {
        let mut builder = crate::BlockBuilder::new(16);
        builder.add(b"k", &vec![7; value_len]);
        Block::new(Bytes::from(builder.finish()), Arc::from(Path::new("t.sst")), 0)
    }

    #[test]
    fn a_block_is_found_by_its_table_and_offset() -> crate::Result<()> {
        let cache = BlockCache::new(1 << 20);
        let (a, b) = (cache.table_number(), cache.table_number());
        assert_ne!(a, b);
        cache.insert(a, 4096, block(88)?); // 3 + 1 + 88 bytes of entry, 8 of restarts
        assert_eq!(cache.get(a, 4096).map(|b| b.size()), Some(100));
        assert!(cache.get(b, 4096).is_none());
        assert!(cache.get(a, 0).is_none());
        assert_eq!((cache.len(), cache.usage()), (1, 100 + ENTRY_OVERHEAD));
        Ok(())
    }

    #[test]
    fn the_cache_stays_within_its_bytes() -> crate::Result<()> {
        let cache = BlockCache::new(10 * (200 + ENTRY_OVERHEAD));
        let table = cache.table_number();
        for i in 0..100 {
            cache.insert(table, i * 1000, block(188)?);
        }
        assert!(cache.usage() <= cache.capacity(), "{cache:?}");
        assert!(cache.len() <= 10);
        Ok(())
    }

    #[test]
    fn a_cache_of_no_bytes_keeps_nothing() -> crate::Result<()> {
        let cache = BlockCache::new(0);
        cache.insert(1, 0, block(100)?);
        assert!(cache.get(1, 0).is_none());
        assert!(cache.is_empty());
        Ok(())
    }
}
