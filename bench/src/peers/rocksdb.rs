//! RocksDB through the `rocksdb` crate (built from source in release mode,
//! behind the `rocksdb` feature), with db_bench's options for these
//! workloads: leveled compaction, 4 KiB blocks, bloom 10 bits per key, 64 MiB
//! write buffer, no compression unless asked (then LZ4 on every level, through
//! the crate's `lz4` feature, which this crate's `rocksdb-lz4` feature turns
//! on: a RocksDB build of its own), WAL on, no sync (every write handed to the
//! OS). Tables are read with `pread` into an LRU block cache (RocksDB's own
//! 32 MiB when none is given), with the OS page cache beneath it; index and
//! filter blocks are held by each open table, outside the cache
//! (`cache_index_and_filter_blocks` off, the default).
//!
//! A read reads each entry it returns as db_bench's own loops do
//! (`bytes += iter->key().size() + iter->value().size()`): the lengths of
//! its key and value, summed and handed to `black_box`; a point read, the
//! length of the value found.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, ReadOptions, WriteBatch, DB};

use cellar_engine::Compression;

use super::read_amp::ReadAmp;
use super::workloads::{Adapter, Writer, KEY_BYTES};
use super::ycsb::record::{copy_value, KeyValue};
use crate::error::{Error, Result};

fn err(e: rocksdb::Error) -> Error {
    Error::Peer(format!("rocksdb: {e}"))
}

/// Whether this build of RocksDB has LZ4 (the `rocksdb-lz4` feature). Without
/// it RocksDB would accept the option and fail at open with its own words.
pub const LZ4: bool = cfg!(feature = "rocksdb-lz4");

/// Why RocksDB cannot compress with LZ4 in this build, and what to do.
pub const LZ4_MISSING: &str = "RocksDB was built without LZ4: build peers with `--features rocksdb-lz4` \
(a RocksDB build of its own, 15 to 40 minutes on 2 cores) to compare LZ4 on RocksDB, or leave it out \
with --engines cellar,fjall,db_bench";

/// Levels RocksDB keeps by default (`num_levels`).
const LEVELS: u32 = 7;

/// A RocksDB database with its default column family.
pub struct RocksDb {
    db: Arc<DB>,
}

impl RocksDb {
    /// Opens a fresh database in `dir`, with a block cache of `cache` bytes
    /// (`None`: RocksDB's default, 32 MiB).
    pub fn open(dir: &Path, cache: Option<u64>) -> Result<RocksDb> {
        RocksDb::open_with(dir, cache, Compression::None)
    }

    /// [`RocksDb::open`] with data blocks compressed by `compression`.
    pub fn open_with(dir: &Path, cache: Option<u64>, compression: Compression) -> Result<RocksDb> {
        let compression = match compression {
            Compression::None => DBCompressionType::None,
            Compression::Lz4 if !LZ4 => return Err(Error::Peer(LZ4_MISSING.into())),
            Compression::Lz4 => DBCompressionType::Lz4,
            Compression::Zstd { .. } => DBCompressionType::Zstd,
        };
        let mut table = BlockBasedOptions::default();
        table.set_block_size(4096);
        table.set_bloom_filter(10.0, false);
        if let Some(bytes) = cache {
            table.set_block_cache(&Cache::new_lru_cache(bytes as usize));
        }
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_write_buffer_size(64 << 20);
        options.set_compression_type(compression);
        options.set_block_based_table_factory(&table);
        let db = DB::open(&options, dir).map_err(err)?;
        Ok(RocksDb { db: Arc::new(db) })
    }

    fn property(&self, name: &str) -> Result<u64> {
        Ok(self.db.property_int_value(name).map_err(err)?.unwrap_or(0))
    }

    /// Waits until no flush or compaction runs or is pending.
    pub fn wait_for_background_work(&self) -> Result<()> {
        loop {
            let mut busy = 0;
            for p in [
                "rocksdb.num-running-compactions",
                "rocksdb.compaction-pending",
                "rocksdb.num-running-flushes",
                "rocksdb.mem-table-flush-pending",
            ] {
                busy += self.property(p)?;
            }
            if busy == 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `read` with RocksDB's per-thread perf counters on, and returns them.
    fn counted(&mut self, read: impl FnOnce(&DB) -> Result<()>) -> Result<PerfContext> {
        let mut context = PerfContext::default();
        set_perf_stats(PerfStatsLevel::EnableCount);
        context.reset();
        let result = read(&self.db);
        set_perf_stats(PerfStatsLevel::Disable);
        result?;
        Ok(context)
    }
}

fn blocks(c: &PerfContext) -> f64 {
    (c.metric(PerfMetric::BlockCacheHitCount) + c.metric(PerfMetric::BlockReadCount)) as f64
}

/// The database shared with a writer thread (a `DB` takes writes from any
/// thread; its writers queue for the WAL).
struct RocksDbWriter(Arc<DB>);

impl Writer for RocksDbWriter {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.0.put(key, values).map_err(err)
    }
}

impl Adapter for RocksDb {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.db.put(key, values).map_err(err)
    }

    fn writer(&self) -> Result<Box<dyn Writer>> {
        Ok(Box::new(RocksDbWriter(Arc::clone(&self.db))))
    }

    fn get(&mut self, key: &[u8; KEY_BYTES], _column: usize) -> Result<bool> {
        let value = self.db.get_pinned(key).map_err(err)?;
        if let Some(value) = &value {
            black_box(key.len() + value.len());
        }
        Ok(value.is_some())
    }

    fn scan_all(&mut self) -> Result<u64> {
        let (mut n, mut bytes) = (0, 0);
        let mut iter = self.db.raw_iterator();
        iter.seek_to_first();
        while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
            n += 1;
            bytes += key.len() + value.len();
            iter.next();
        }
        iter.status().map_err(err)?;
        black_box(bytes);
        Ok(n)
    }

    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
        let (mut read, mut bytes) = (0, 0);
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        while read < n as u64 {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            read += 1;
            bytes += key.len() + value.len();
            iter.next();
        }
        iter.status().map_err(err)?;
        black_box(bytes);
        Ok(read)
    }

    fn flush(&mut self) -> Result<()> {
        self.db.flush().map_err(err)?;
        self.wait_for_background_work()
    }

    fn compact(&mut self) -> Result<()> {
        // What db_bench's `compact` does: the whole key range, default options.
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        self.wait_for_background_work()
    }

    fn settle(&mut self) -> Result<()> {
        self.wait_for_background_work()
    }

    fn table_files(&mut self) -> Result<u64> {
        let mut files = 0;
        for level in 0..LEVELS {
            files += self.property(&format!("rocksdb.num-files-at-level{level}"))?;
        }
        Ok(files)
    }

    fn get_cost(&mut self, key: &[u8; KEY_BYTES]) -> Result<Option<ReadAmp>> {
        let c = self.counted(|db| db.get_pinned(key).map(drop).map_err(err))?;
        let (hits, misses) = (
            c.metric(PerfMetric::BloomSstHitCount),
            c.metric(PerfMetric::BloomSstMissCount),
        );
        Ok(Some(ReadAmp {
            sources: (c.metric(PerfMetric::GetFromMemtableCount) + hits + misses) as f64,
            searched: hits as f64,
            data_blocks: blocks(&c),
        }))
    }

    fn seek_cost(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<Option<ReadAmp>> {
        let c = self.counted(|db| {
            let mut iter = db.raw_iterator();
            iter.seek(key);
            let mut read = 0;
            while iter.valid() && read < n {
                read += 1;
                iter.next();
            }
            iter.status().map_err(err)
        })?;
        // One child iterator per memtable, per level-0 file and per deeper
        // level; a level's iterator opens only the file holding the key. With
        // one source only (a lone memtable) RocksDB builds no merging
        // iterator, so no child seek is counted: that seek still read one source.
        let sources = c.metric(PerfMetric::SeekChildSeekCount).max(1);
        let memtables = c.metric(PerfMetric::SeekOnMemtableCount);
        Ok(Some(ReadAmp {
            sources: sources as f64,
            searched: sources.saturating_sub(memtables) as f64,
            data_blocks: blocks(&c),
        }))
    }
}

impl KeyValue for RocksDb {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put(key, value).map_err(err)
    }

    fn put_batch(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for (key, value) in pairs {
            batch.put(key, value);
        }
        self.db.write(batch).map_err(err)
    }

    fn get(&mut self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        Ok(copy_value(self.db.get_pinned(key).map_err(err)?, value))
    }

    fn scan(&mut self, from: &[u8], to: Option<&[u8]>, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        // An upper bound lets RocksDB stop at the range's end instead of
        // reading on to the next key (what a RocksDB user sets for a prefix).
        let mut options = ReadOptions::default();
        if let Some(to) = to {
            options.set_iterate_upper_bound(to.to_vec());
        }
        let mut iter = self.db.raw_iterator_opt(options);
        iter.seek(from);
        while let (Some(key), Some(value)) = (iter.key(), iter.value()) {
            if !visit(key, value) {
                break;
            }
            iter.next();
        }
        iter.status().map_err(err)
    }

    fn settle(&mut self) -> Result<()> {
        self.wait_for_background_work()
    }
}
