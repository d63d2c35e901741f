//! Many stores in one process: the memtables' arenas of every store share
//! one list of spare 2 MiB chunks (`arena.rs`: a dropped arena hands its
//! mapped chunks to the next). A scan that outlives its store's flush and
//! its store must still read its memtable's bytes, never those of another
//! store's memtable that took a chunk back meanwhile.

use std::error::Error as StdError;
use std::sync::{Arc, Barrier};

use cellar_engine::{FamilyOptions, RowRange, Scan, Store, StoreOptions, WriteBatch};

type TestResult<T = ()> = Result<T, Box<dyn StdError + Send + Sync>>;

/// Threads, each with a store open at a time, and the stores each opens in turn.
const THREADS: u64 = 3;
const ROUNDS: u64 = 4;
/// Rows of one cell of about 1 KiB: 2.7 MiB in the memtable, past the
/// 2 MiB of chunks that grow (the rest are mapped, and kept when dropped).
const ROWS: u64 = 2_500;
/// The family every store has: default limits, memtables of 64 MiB.
const FAMILY: &str = "a";

fn row(i: u64) -> String {
    format!("row{i:06}")
}

/// The value of `row(i)` in the store `tag`: a reader can tell whose it is.
fn value(tag: u64, i: u64) -> Vec<u8> {
    let mut value = vec![tag as u8; 1_000];
    value.extend_from_slice(row(i).as_bytes());
    value
}

/// A scan of store `tag` and the rows it returned so far.
struct Reader {
    tag: u64,
    scan: Scan,
    read: u64,
}

impl Reader {
    /// Checks the next row is `row(read)` with its one cell and value.
    fn check(&mut self, key: &[u8], column: &[u8], v: &[u8]) -> TestResult {
        let (tag, read) = (self.tag, self.read);
        if (key, column) != (row(read).as_bytes(), &b"c"[..]) {
            return Err(format!("store {tag}: row {read} came back as {key:?}, column {column:?}").into());
        }
        if v != value(tag, read).as_slice() {
            let start = v.get(..8);
            return Err(format!("store {tag}: row {read}'s value came back as {start:?}...").into());
        }
        self.read += 1;
        Ok(())
    }

    /// Reads `rows` rows at most, alternately lent from the arena and copied.
    fn read(&mut self, rows: u64) -> TestResult {
        for n in 0..rows {
            if n % 2 == 0 {
                let Some(r) = self.scan.next() else { break };
                let r = r?;
                let cell = r.cells.first().ok_or("a cell missing")?;
                self.check(&r.key, &cell.column, &cell.value)?;
            } else {
                let mut lent = Vec::new();
                let more = self.scan.visit_row(|cell| {
                    lent.push((cell.row.to_vec(), cell.column.to_vec(), cell.value.to_vec()));
                })?;
                for (key, column, v) in lent {
                    self.check(&key, &column, &v)?;
                }
                if !more {
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Opens store `tag` and fills its memtable past 2 MiB of chunks. With
/// `keep_a_scan`, starts a scan and reads a few rows, then flushes the
/// memtable (the scan keeps it) and writes on; then drops the store (and
/// without a scan, its memtable and chunks).
fn fill_a_store(tag: u64, keep_a_scan: bool) -> TestResult<Option<(Reader, tempfile::TempDir)>> {
    let dir = tempfile::tempdir()?;
    let options = StoreOptions::default().family_with(FAMILY, FamilyOptions::default());
    let store = Store::open(dir.path(), options)?;
    let memtable_bytes = |store: &Store| -> TestResult<u64> {
        let stats = store.stats()?;
        Ok(stats.family(FAMILY).ok_or("no family")?.memtable_bytes)
    };
    // The first write takes the row filter and a first chunk of 4 KiB.
    store.put(FAMILY, row(0), "c", value(tag, 0))?;
    let filter = memtable_bytes(&store)? - 4096;
    for start in (1..ROWS).step_by(100) {
        let mut batch = WriteBatch::new();
        for i in start..(start + 100).min(ROWS) {
            batch.put(FAMILY, row(i), "c", value(tag, i));
        }
        store.write(&batch)?;
    }
    // Past the 2 MiB of chunks that grow: a mapped one at least.
    if memtable_bytes(&store)? - filter <= 2 << 20 {
        return Err(format!("store {tag}: no mapped chunk").into());
    }
    if !keep_a_scan {
        return Ok(None);
    }
    let mut reader = Reader {
        tag,
        scan: store.scan(FAMILY, &RowRange::all())?,
        read: 0,
    };
    reader.read(10)?;
    store.flush()?;
    store.put(FAMILY, row(ROWS), "c", value(tag, ROWS))?;
    Ok(Some((reader, dir)))
}

#[test]
fn scans_read_their_own_memtable_while_other_stores_fill_close_and_reuse_its_chunks() -> TestResult {
    // Every other store is dropped with its memtable as soon as it is full;
    // of the others a scan outlives the store, and is read to its end only
    // once every thread has filled and dropped all its stores.
    let all_filled = Arc::new(Barrier::new(THREADS as usize));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let all_filled = all_filled.clone();
            std::thread::spawn(move || -> TestResult {
                let mut readers = Vec::new();
                let filled: TestResult = (0..ROUNDS).try_for_each(|round| {
                    readers.extend(fill_a_store(t * ROUNDS + round, round % 2 == 1)?);
                    Ok(())
                });
                // Waited for even after a failure: no other thread waits forever.
                all_filled.wait();
                filled?;
                for (mut reader, _dir) in readers {
                    reader.read(ROWS)?;
                    assert_eq!(reader.read, ROWS, "store {}", reader.tag);
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "a thread panicked")??;
    }
    Ok(())
}
