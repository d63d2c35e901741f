//! fjall 3.x, default features off (so nothing is compressed): one keyspace,
//! leveled compaction, 4 KiB blocks, bloom 10 bits per key on every level,
//! 64 MiB memtable, journal written to the OS on every write without fsync.

use std::path::Path;
use std::time::Duration;

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions};

use super::workloads::{Adapter, KEY_BYTES};
use crate::error::{Error, Result};

fn err(e: fjall::Error) -> Error {
    Error::Peer(format!("fjall: {e}"))
}

/// A fjall database with one keyspace.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
}

impl Fjall {
    /// Opens a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<Fjall> {
        let db = Database::builder(dir).open().map_err(err)?;
        let keyspace = db
            .keyspace("bench", || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(64 << 20)
                    .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                        BloomConstructionPolicy::BitsPerKey(10.0),
                    )))
                    .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
                    .index_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            })
            .map_err(err)?;
        Ok(Fjall { db, keyspace })
    }

    fn wait_for_background_work(&self) {
        while self.db.outstanding_flushes() > 0 || self.db.active_compactions() > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Adapter for Fjall {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.keyspace.insert(&key[..], values).map_err(err)
    }

    fn get(&mut self, key: &[u8; KEY_BYTES], _column: usize) -> Result<bool> {
        Ok(self.keyspace.get(key).map_err(err)?.is_some())
    }

    fn scan_all(&mut self) -> Result<u64> {
        let mut n = 0;
        for guard in self.keyspace.iter() {
            let (_key, _value) = guard.into_inner().map_err(err)?;
            n += 1;
        }
        Ok(n)
    }

    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
        let mut read = 0;
        for guard in self.keyspace.range(&key[..]..).take(n) {
            let (_key, _value) = guard.into_inner().map_err(err)?;
            read += 1;
        }
        Ok(read)
    }

    fn flush(&mut self) -> Result<()> {
        self.keyspace.rotate_memtable_and_wait().map_err(err)?;
        self.wait_for_background_work();
        Ok(())
    }

    fn compact(&mut self) -> Result<()> {
        self.keyspace.major_compact().map_err(err)?;
        self.wait_for_background_work();
        Ok(())
    }
}
