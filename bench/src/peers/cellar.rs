//! cellar, in two shapes: each key a row of one column (`cellar`, and
//! `cellar-buffered` with the log buffered in the process, and
//! `cellar-tiered` with size-tiered compaction), and each key a wide row of
//! ten columns of one value each (`cellar-wide`, N/10 rows).
//!
//! What a read does with each entry, as db_bench does with RocksDB's (and
//! as the fjall and RocksDB adapters do): it reads the lengths of the key
//! (row and column) and of the value, sums them and hands the sum to
//! `black_box`. Scans and seeks take the cells lent by
//! [`Scan::visit_row`](cellar_engine::Scan::visit_row), borrowed from the
//! block they lie in, as a RocksDB iterator lends slices: a user who wants
//! speed reads that way, not through owned `Row`s.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use cellar_engine::{
    CellRef, Compaction, Compression, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch,
};

use super::read_amp::ReadAmp;
use super::workloads::{Adapter, Writer, KEY_BYTES};
use crate::error::Result;

const FAMILY: &str = "bench";
/// Columns of a wide row.
pub const WIDE_COLUMNS: usize = 10;
const NARROW_COLUMN: &[u8] = b"v";
const WIDE_COLUMN_NAMES: [&[u8]; WIDE_COLUMNS] = [b"c0", b"c1", b"c2", b"c3", b"c4", b"c5", b"c6", b"c7", b"c8", b"c9"];

/// A cellar store with one family of default options (4 KiB blocks, bloom 10
/// bits per key, 64 MiB memtable, no compression unless asked) but the
/// compaction given: `cellar`, `cellar-buffered` and `cellar-wide` have the
/// default's (leveled), what a user who names none gets, and `cellar-tiered`
/// is size-tiered; log on without fsync. Table files are read through a memory map: raw blocks come
/// from the OS page cache; compressed blocks are decompressed into a block
/// cache of 32 MiB (each open table's index and filter are held in memory).
pub struct Cellar {
    store: Arc<Store>,
    wide: bool,
}

impl Cellar {
    /// Opens a fresh store in `dir`; `wide` stores each key as a row of ten
    /// columns; `sync` is the log's policy (`Never`: every write handed to the
    /// OS, as RocksDB and fjall do; `Buffered`: kept in the process and
    /// written in 64 KiB pieces); `compaction` and `compression` are the family's.
    pub fn open(
        dir: &Path,
        wide: bool,
        sync: SyncPolicy,
        compaction: Compaction,
        compression: Compression,
    ) -> Result<Cellar> {
        let family = FamilyOptions::default().compaction(compaction).compression(compression);
        let store = Store::open(dir, StoreOptions::default().sync(sync).family_with(FAMILY, family))?;
        Ok(Cellar {
            store: Arc::new(store),
            wide,
        })
    }

    fn column(&self, i: usize) -> &'static [u8] {
        if self.wide {
            WIDE_COLUMN_NAMES.get(i).copied().unwrap_or(b"c0")
        } else {
            NARROW_COLUMN
        }
    }
}

/// The bytes of a lent cell a reader looks at: its key (row and column) and
/// value. (The YCSB row model reads its cells the same way.)
pub(crate) fn cell_bytes(cell: &CellRef<'_>) -> usize {
    cell.row.len() + cell.column.len() + cell.value.len()
}

/// Writes `key`: one cell, or (`wide`) a row of ten cells in one batch.
fn put(store: &Store, wide: bool, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
    if !wide {
        return Ok(store.put(FAMILY, key, NARROW_COLUMN, values)?);
    }
    // The row's bytes are its ten values end to end, all of one length.
    let value_bytes = (values.len() / WIDE_COLUMNS).max(1);
    let mut batch = WriteBatch::new();
    for (column, value) in WIDE_COLUMN_NAMES.iter().zip(values.chunks(value_bytes)) {
        batch.put(FAMILY, key, column, value);
    }
    Ok(store.write(&batch)?)
}

/// The store shared with a writer thread: a `Store` takes writes from any
/// number of threads (they queue for the log, as RocksDB's writers do).
struct CellarWriter {
    store: Arc<Store>,
    wide: bool,
}

impl Writer for CellarWriter {
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        put(&self.store, self.wide, key, values)
    }
}

fn range_from(key: &[u8; KEY_BYTES], rows: usize) -> RowRange {
    RowRange {
        from: Some(key.to_vec().into()),
        ..RowRange::default()
    }
    .limit(rows)
}

impl Adapter for Cellar {
    fn entries_per_key(&self) -> usize {
        if self.wide {
            WIDE_COLUMNS
        } else {
            1
        }
    }

    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
        put(&self.store, self.wide, key, values)
    }

    fn writer(&self) -> Result<Box<dyn Writer>> {
        Ok(Box::new(CellarWriter {
            store: Arc::clone(&self.store),
            wide: self.wide,
        }))
    }

    fn get(&mut self, key: &[u8; KEY_BYTES], column: usize) -> Result<bool> {
        let cell = self.store.get(FAMILY, key, self.column(column))?;
        if let Some(cell) = &cell {
            black_box(key.len() + cell.column.len() + cell.value.len());
        }
        Ok(cell.is_some())
    }

    fn scan_all(&mut self) -> Result<u64> {
        let (mut cells, mut bytes) = (0, 0);
        let mut scan = self.store.scan(FAMILY, &RowRange::all())?;
        while scan.visit_row(|cell| {
            cells += 1;
            bytes += cell_bytes(&cell);
        })? {}
        black_box(bytes);
        Ok(cells)
    }

    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
        // Rows needed to hold n entries (n rows of one column; 2 wide rows for 11).
        let rows = n.div_ceil(self.entries_per_key());
        let (mut read, mut bytes) = (0, 0);
        let mut scan = self.store.scan(FAMILY, &range_from(key, rows))?;
        // The last row may hold more cells than n: those are not read.
        while read < n
            && scan.visit_row(|cell| {
                if read < n {
                    read += 1;
                    bytes += cell_bytes(&cell);
                }
            })?
        {}
        black_box(bytes);
        Ok(read as u64)
    }

    fn flush(&mut self) -> Result<()> {
        self.store.flush()?;
        Ok(self.store.wait_for_background_work()?)
    }

    fn compact(&mut self) -> Result<()> {
        self.store.compact(FAMILY)?;
        Ok(self.store.wait_for_background_work()?)
    }

    fn settle(&mut self) -> Result<()> {
        Ok(self.store.wait_for_background_work()?)
    }

    fn table_files(&mut self) -> Result<u64> {
        Ok(self.store.tables().len() as u64)
    }

    fn get_cost(&mut self, key: &[u8; KEY_BYTES]) -> Result<Option<ReadAmp>> {
        let (_, trace) = self.store.get_traced(FAMILY, key, self.column(0))?;
        Ok(Some(ReadAmp::of_trace(&trace)))
    }

    fn seek_cost(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<Option<ReadAmp>> {
        let rows = n.div_ceil(self.entries_per_key());
        let (_, trace) = self.store.scan_traced(FAMILY, &range_from(key, rows))?;
        Ok(Some(ReadAmp::of_trace(&trace)))
    }

    fn write_amplification(&mut self) -> Result<Option<f64>> {
        let stats = self.store.stats()?;
        Ok(stats
            .families
            .iter()
            .find(|f| f.name == FAMILY)
            .map(|f| f.write_amplification()))
    }
}
