//! RocksDB through the `rocksdb` crate (built from source in release mode,
//! behind the `rocksdb` feature), with db_bench's options for these
//! workloads: leveled compaction, 4 KiB blocks, bloom 10 bits per key, 64 MiB
//! write buffer, no compression, WAL on, no sync.

use std::path::Path;
use std::time::Duration;

use rocksdb::{BlockBasedOptions, DBCompressionType, Options, DB};

use super::workloads::{Adapter, KEY_BYTES};
use crate::error::{Error, Result};

fn err(e: rocksdb::Error) -> Error {
    Error::Peer(format!("rocksdb: {e}"))
}

/// A RocksDB database with its default column family.
pub struct RocksDb {
    db: DB,
}

impl RocksDb {
    /// Opens a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<RocksDb> {
        let mut table = BlockBasedOptions::default();
        table.set_block_size(4096);
        table.set_bloom_filter(10.0, false);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_write_buffer_size(64 << 20);
        options.set_compression_type(DBCompressionType::None);
        options.set_block_based_table_factory(&table);
        let db = DB::open(&options, dir).map_err(err)?;
        Ok(RocksDb { db })
    }

    fn wait_for_background_work(&self) -> Result<()> {
        loop {
            let busy = [
                "rocksdb.num-running-compactions",
                "rocksdb.compaction-pending",
                "rocksdb.num-running-flushes",
            ]
            .iter()
            .map(|&p| self.db.property_int_value(p).map(|v| v.unwrap_or(0)))
            .collect::<std::result::Result<Vec<u64>, _>>()
            .map_err(err)?;
            if busy.iter().all(|&n| n == 0) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Adapter for RocksDb {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.db.put(key, values).map_err(err)
    }

    fn get(&mut self, key: &[u8; KEY_BYTES], _column: usize) -> Result<bool> {
        Ok(self.db.get_pinned(key).map_err(err)?.is_some())
    }

    fn scan_all(&mut self) -> Result<u64> {
        let mut n = 0;
        let mut iter = self.db.raw_iterator();
        iter.seek_to_first();
        while iter.valid() {
            n += 1;
            iter.next();
        }
        iter.status().map_err(err)?;
        Ok(n)
    }

    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
        let mut read = 0;
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        while iter.valid() && read < n as u64 {
            read += 1;
            iter.next();
        }
        iter.status().map_err(err)?;
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
}
