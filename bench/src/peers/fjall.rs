//! fjall 3.x with its `lz4` feature, nothing compressed unless asked (then
//! LZ4 data blocks on every level, index blocks raw, as cellar): one keyspace,
//! leveled compaction, 4 KiB blocks, bloom 10 bits per key on every level,
//! 64 MiB memtable, journal uncompressed and written to the OS on every write without fsync
//! (fjall's default: `Keyspace::insert` persists with `PersistMode::Buffer`,
//! which empties the journal's buffer into the file, unless
//! `manual_journal_persist` is set). Tables are read with `pread` into fjall's
//! block cache (32 MiB by default), with the OS page cache beneath it.
//!
//! A read reads each entry it returns as db_bench does RocksDB's: it takes
//! the key and value (`into_inner`), sums their lengths and hands the sum to
//! `black_box`; a point read, the length of the value found.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions};

use cellar_engine::Compression;

use super::workloads::{Adapter, Writer, KEY_BYTES};
use super::ycsb::record::{copy_value, KeyValue};
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
    /// Opens a fresh database in `dir`, with a block cache of `cache` bytes
    /// (`None`: fjall's default, 32 MiB).
    pub fn open(dir: &Path, cache: Option<u64>) -> Result<Fjall> {
        Fjall::open_with(dir, cache, Compression::None)
    }

    /// [`Fjall::open`] with data blocks compressed by `compression` (`None`
    /// or `Lz4`; anything else is refused).
    pub fn open_with(dir: &Path, cache: Option<u64>, compression: Compression) -> Result<Fjall> {
        let data_blocks = match compression {
            Compression::None => CompressionType::None,
            Compression::Lz4 => CompressionType::Lz4,
            other => return Err(Error::Peer(format!("fjall has no {other} compression"))),
        };
        // The journal's own compression (of values over 4 KiB, with the lz4
        // feature) stays off, as cellar's log is never compressed.
        let mut builder = Database::builder(dir).journal_compression(CompressionType::None);
        if let Some(bytes) = cache {
            builder = builder.cache_size(bytes);
        }
        let db = builder.open().map_err(err)?;
        let keyspace = db
            .keyspace("bench", || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(64 << 20)
                    .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                        BloomConstructionPolicy::BitsPerKey(10.0),
                    )))
                    .data_block_compression_policy(CompressionPolicy::all(data_blocks))
                    .index_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            })
            .map_err(err)?;
        Ok(Fjall { db, keyspace })
    }

    /// Waits until no flush or compaction has run for 100 ms (a compaction
    /// that a flush makes due may start a moment after the flush ends).
    fn wait_for_background_work(&self) {
        let mut idle = 0;
        while idle < 5 {
            let busy = self.db.outstanding_flushes() > 0 || self.db.active_compactions() > 0;
            idle = if busy { 0 } else { idle + 1 };
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The keyspace shared with a writer thread (a `Keyspace` is a handle, cloned
/// cheaply, that any thread writes through).
struct FjallWriter(Keyspace);

impl Writer for FjallWriter {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.0.insert(&key[..], values).map_err(err)
    }
}

impl Adapter for Fjall {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        self.keyspace.insert(&key[..], values).map_err(err)
    }

    fn writer(&self) -> Result<Box<dyn Writer>> {
        Ok(Box::new(FjallWriter(self.keyspace.clone())))
    }

    fn get(&mut self, key: &[u8; KEY_BYTES], _column: usize) -> Result<bool> {
        let value = self.keyspace.get(key).map_err(err)?;
        if let Some(value) = &value {
            black_box(key.len() + value.len());
        }
        Ok(value.is_some())
    }

    fn scan_all(&mut self) -> Result<u64> {
        let (mut n, mut bytes) = (0, 0);
        for guard in self.keyspace.iter() {
            let (key, value) = guard.into_inner().map_err(err)?;
            n += 1;
            bytes += key.len() + value.len();
        }
        black_box(bytes);
        Ok(n)
    }

    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
        let (mut read, mut bytes) = (0, 0);
        for guard in self.keyspace.range(&key[..]..).take(n) {
            let (key, value) = guard.into_inner().map_err(err)?;
            read += 1;
            bytes += key.len() + value.len();
        }
        black_box(bytes);
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

    fn settle(&mut self) -> Result<()> {
        self.wait_for_background_work();
        Ok(())
    }

    fn table_files(&mut self) -> Result<u64> {
        Ok(self.keyspace.table_count() as u64)
    }
}

impl KeyValue for Fjall {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.keyspace.insert(key, value).map_err(err)
    }

    fn put_batch(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        // `Database::batch` persists like `insert` (PersistMode::Buffer) by default.
        let mut batch = self.db.batch();
        for (key, value) in pairs {
            batch.insert(&self.keyspace, *key, *value);
        }
        batch.commit().map_err(err)
    }

    fn get(&mut self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        Ok(copy_value(self.keyspace.get(key).map_err(err)?, value))
    }

    fn scan(&mut self, from: &[u8], to: Option<&[u8]>, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        let iter = match to {
            Some(to) => self.keyspace.range(from..to),
            None => self.keyspace.range(from..),
        };
        for guard in iter {
            let (key, value) = guard.into_inner().map_err(err)?;
            if !visit(&key, &value) {
                break;
            }
        }
        Ok(())
    }

    fn settle(&mut self) -> Result<()> {
        self.wait_for_background_work();
        Ok(())
    }
}
