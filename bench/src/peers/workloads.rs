//! The db_bench workloads, run against any [`Adapter`].
//!
//! Keys are db_bench's: 16 bytes, the key number big-endian in the first 8
//! bytes and `'0'` padding after; values are 100 bytes (db_bench's default
//! `--value_size`; `peers --value-size` picks another, for every engine). `fillrandom` and
//! `overwrite` pick keys `rand() % N` (so about 63% of the N keys exist after
//! `fillrandom`), `readrandom` does N/5 point reads, `readseq` scans everything
//! forward, `seekrandom` seeks N/10 times and reads the entry found plus 10 more.
//! `readwhilewriting` does N/5 point reads of keys that exist while a second
//! thread overwrites existing keys as fast as it can (`read_while_writing`):
//! the reads must find what they look for through the flushes and compactions
//! the writer causes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use super::memory::{self, Memory, Sampler};
use super::read_amp::ReadAmp;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// Bytes of a key.
pub const KEY_BYTES: usize = 16;
/// Bytes of a value, db_bench's default `--value_size`.
pub const VALUE_BYTES: usize = 100;
/// Entries read per seek in `seekrandom`: the one found and 10 nexts.
pub const SEEK_ENTRIES: usize = 11;

/// The workloads, in the order a run performs them.
pub const WORKLOADS: [&str; 7] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readseq",
    "seekrandom",
    "readwhilewriting",
];

/// The seed of `readwhilewriting`'s writer thread, so its keys and values
/// are the same for every engine and apart from the reader's.
pub const WRITER_SEED: u64 = 0x5752_4954_4552;

/// A second handle on an open engine that another thread writes through
/// while the first reads ([`Adapter::writer`]).
pub trait Writer: Send {
    /// Writes `key` with `values`, as [`Adapter::put`] does.
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()>;
}

/// One engine seen through the operations the workloads need. An *entry* is
/// what a db_bench key/value pair is; an adapter may store one key as several
/// entries (cellar's wide variant stores a row of [`Adapter::entries_per_key`]
/// columns), and then every count below is in entries.
pub trait Adapter {
    /// Entries one key holds (1, or the columns of a wide row).
    fn entries_per_key(&self) -> usize {
        1
    }
    /// Writes `key` with `values` (one value per entry, all of one length:
    /// [`VALUE_BYTES`] unless the run says otherwise).
    fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()>;
    /// A handle on the same store for a writer thread, whose writes go
    /// through the engine's own concurrency control, as a second thread of
    /// an application's would.
    fn writer(&self) -> Result<Box<dyn Writer>>;
    /// Reads one entry of `key` (`column` < entries per key); true if found.
    fn get(&mut self, key: &[u8; KEY_BYTES], column: usize) -> Result<bool>;
    /// Reads every entry in key order; returns how many.
    fn scan_all(&mut self) -> Result<u64>;
    /// Reads up to `n` entries from the first key at or after `key`; returns how many.
    fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64>;
    /// Writes what memory holds to files and waits for background work.
    fn flush(&mut self) -> Result<()>;
    /// Compacts everything into the fewest files, then waits.
    fn compact(&mut self) -> Result<()>;
    /// Write amplification as the engine reports it, if it does.
    fn write_amplification(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }
    /// Waits for the flushes and compactions the engine has started, without
    /// starting any (no flush, no manual compaction).
    fn settle(&mut self) -> Result<()>;
    /// Table files the engine holds now.
    fn table_files(&mut self) -> Result<u64>;
    /// What a point read of `key` consulted, if the engine can say.
    fn get_cost(&mut self, _key: &[u8; KEY_BYTES]) -> Result<Option<ReadAmp>> {
        Ok(None)
    }
    /// What a seek to `key` reading `n` entries consulted, if the engine can say.
    fn seek_cost(&mut self, _key: &[u8; KEY_BYTES], _n: usize) -> Result<Option<ReadAmp>> {
        Ok(None)
    }
}

/// Opens a fresh adapter in a folder.
pub type Open<'a> = dyn Fn(&Path) -> Result<Box<dyn Adapter>> + 'a;

/// One workload's measurement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// Workload name.
    pub workload: String,
    /// Entries operated on (read, written or scanned).
    pub ops: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Entries found (reads only).
    pub found: u64,
    /// Entries a writer thread wrote while the workload ran
    /// (`readwhilewriting` only; not in `ops`).
    pub writes: u64,
}

impl Measured {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        super::per_second(self.ops, self.seconds)
    }
}

/// Everything one run of one engine measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// Each workload, in [`WORKLOADS`] order.
    pub workloads: Vec<Measured>,
    /// Bytes on disk after `fillseq` (flushed), and after a full compaction of it.
    pub fillseq_disk: (u64, u64),
    /// Bytes on disk after `fillrandom` (flushed), and after a full compaction of it.
    pub fillrandom_disk: (u64, u64),
    /// Distinct entries after `fillseq` and after `fillrandom`.
    pub live_entries: (u64, u64),
    /// Peak memory during `fillrandom` (and its flush), when the kernel lets
    /// the peak be reset.
    pub fillrandom_memory: Option<Memory>,
    /// Peak memory of the whole run.
    pub memory: Option<Memory>,
    /// Write amplification after `overwrite`, if the engine reports it.
    pub write_amplification: Option<f64>,
}

impl RunReport {
    /// The measurement of `workload`, if the run has one.
    pub fn workload(&self, workload: &str) -> Option<&Measured> {
        self.workloads.iter().find(|m| m.workload == workload)
    }
}

/// A small, fast, seeded generator (xorshift64*), so every engine sees the same keys.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// db_bench's key for number `i`.
pub fn key(i: u64) -> [u8; KEY_BYTES] {
    let mut k = [b'0'; KEY_BYTES];
    k[..8].copy_from_slice(&i.to_be_bytes());
    k
}

/// What values are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// Random bytes: nothing to compress.
    Random,
    /// db_bench's values at its default `--compression_ratio=0.5`: each 100
    /// bytes of the pool are 50 random printable characters written twice,
    /// so a compressor halves them.
    HalfCompressible,
}

/// Value bytes from a 1 MiB pool, reused at shifting offsets.
pub(crate) struct Values {
    pool: Vec<u8>,
    at: usize,
    /// How far the next value starts after this one: 97 bytes for random
    /// bytes; the value's own length for compressible ones, as db_bench's
    /// `RandomGenerator` steps, so every value is whole 100-byte pieces (a
    /// value cut across two pieces would hold only part of its repeat, and
    /// compress less the less its neighbours in a block are its neighbours
    /// in the pool).
    aligned: bool,
}

impl Values {
    /// Random bytes (nothing is compressed in the default comparison).
    pub(crate) fn new(rng: &mut Rng) -> Values {
        Values::of(ValueKind::Random, rng)
    }

    pub(crate) fn of(kind: ValueKind, rng: &mut Rng) -> Values {
        let pool = match kind {
            ValueKind::Random => (0..(1 << 20)).map(|_| rng.next_u64() as u8).collect(),
            ValueKind::HalfCompressible => {
                let mut pool = Vec::with_capacity(1 << 20);
                while pool.len() < 1 << 20 {
                    // db_bench's CompressibleString: random ' '..='~', repeated.
                    let piece: Vec<u8> = (0..50).map(|_| b' ' + (rng.next_u64() % 95) as u8).collect();
                    pool.extend_from_slice(&piece);
                    pool.extend_from_slice(&piece);
                }
                pool
            }
        };
        Values {
            pool,
            at: 0,
            aligned: kind == ValueKind::HalfCompressible,
        }
    }
    pub(crate) fn next(&mut self, len: usize) -> &[u8] {
        if self.at + len > self.pool.len() {
            self.at = 0;
        }
        let start = self.at;
        self.at += if self.aligned { len } else { 97 };
        &self.pool[start..start + len]
    }
}

/// Bytes of every file under `dir`.
///
/// An engine may still be removing files (fjall drops old journals in the
/// background): a file or folder that vanishes between listing and reading
/// counts as gone, not as an error.
pub fn disk_bytes(dir: &Path) -> Result<u64> {
    dir_bytes(dir, false)
}

fn dir_bytes(dir: &Path, nested: bool) -> Result<u64> {
    let mut total = 0;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if nested && e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(entry.path(), e)),
        };
        if meta.is_dir() {
            total += dir_bytes(&entry.path(), true)?;
        } else {
            total += meta.len();
        }
    }
    Ok(total)
}

fn timed(workload: &str, ops: u64, found: u64, start: Instant) -> Measured {
    Measured {
        workload: workload.to_string(),
        ops,
        seconds: start.elapsed().as_secs_f64(),
        found,
        writes: 0,
    }
}

/// Steps between progress updates.
const STEP: u64 = 10_000;

/// The sizes of a `readwhilewriting` run: its reads, entries per key and
/// bytes per written key.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Point reads the reader does.
    pub reads: u64,
    /// Entries one key holds (the reader reads one of them).
    pub per_key: u64,
    /// Bytes of the values of one key, as the writer writes them.
    pub row_bytes: usize,
}

/// The keys marked present (`present[k]`: key `k` has been written), in
/// order: what `readwhilewriting`'s reader and writer draw from.
pub(crate) fn existing_keys(present: &[bool]) -> Vec<u64> {
    (0u64..).zip(present).filter(|(_, p)| **p).map(|(k, _)| k).collect()
}

/// db_bench's `readwhilewriting` with one reader: `pace.reads` point reads of
/// keys drawn from `present` (keys known to exist, so every read must find
/// its entry) on this thread, while a writer thread, through
/// [`Adapter::writer`], overwrites keys drawn from `present` with values from
/// `values` until the reads are done. Only the reads are timed and counted
/// as operations, as db_bench counts them; the writer's entries are
/// `writes`. The writer's first write lands before the first read, so the
/// reads always overlap writes. A read that finds nothing is an error: under
/// a writer, flushes and compactions swap the files a read consults, and a
/// store that loses a key in the swap must not look fast.
pub(crate) fn read_while_writing(
    db: &mut dyn Adapter,
    present: &[u64],
    rng: &mut Rng,
    values: &mut Values,
    pace: Pace,
    progress: &dyn Progress,
) -> Result<Measured> {
    if present.is_empty() {
        return Err(Error::Peer("readwhilewriting: no key exists to read".into()));
    }
    let pick = |rng: &mut Rng| {
        present
            .get(rng.below(present.len() as u64) as usize)
            .copied()
            .unwrap_or(0)
    };
    let mut writer = db.writer()?;
    let stop = AtomicBool::new(false);
    let (started, first_write) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let writer_thread = scope.spawn(|| -> Result<u64> {
            let mut rng = Rng::new(WRITER_SEED);
            let mut written = 0u64;
            let mut started = Some(started);
            while !stop.load(Ordering::Relaxed) {
                writer.put(&key(pick(&mut rng)), values.next(pace.row_bytes))?;
                written += pace.per_key;
                // Dropping the sender tells the reader to begin.
                started.take();
            }
            Ok(written)
        });
        // Err only once the writer is gone: after its first write, or on its error.
        let _ = first_write.recv();
        let reading = (|| -> Result<Measured> {
            let start = Instant::now();
            let mut found = 0;
            for i in 0..pace.reads {
                let column = rng.below(pace.per_key) as usize;
                found += u64::from(db.get(&key(pick(rng)), column)?);
                if i % STEP == STEP - 1 {
                    progress.advance(STEP);
                }
            }
            Ok(timed("readwhilewriting", pace.reads, found, start))
        })();
        stop.store(true, Ordering::Relaxed);
        let written = writer_thread
            .join()
            .map_err(|_| Error::Peer("readwhilewriting: the writer thread panicked".into()))??;
        let mut measured = reading?;
        if measured.found != measured.ops {
            return Err(Error::Peer(format!(
                "readwhilewriting: {} of {} reads of existing keys found nothing",
                measured.ops - measured.found,
                measured.ops
            )));
        }
        measured.writes = written;
        Ok(measured)
    })
}

/// Runs every workload on fresh stores under `dir`, `num` entries of
/// `value_bytes`-byte values, keys drawn from `seed`.
///
/// `fillrandom` runs first, in a store which is flushed and measured, compacted
/// and measured (space amplification against the distinct keys it holds), and
/// then carries `overwrite` and the reads, as db_bench chains them. `fillseq`
/// runs last, in a store of its own (then compacted, measured and removed).
pub fn run_all(
    open: &Open<'_>,
    dir: &Path,
    num: u64,
    seed: u64,
    values: ValueKind,
    value_bytes: usize,
    progress: &dyn Progress,
) -> Result<RunReport> {
    let mut report = RunReport::default();
    let mut rng = Rng::new(seed);
    let values_kind = values;
    let mut values = Values::of(values, &mut rng);

    // Each engine runs in a fresh process, and fillrandom comes first, so its
    // peak memory is measured from a clean heap (db_bench runs every workload
    // in a process of its own); fillseq runs last, on a store of its own.
    let rand_dir: PathBuf = dir.join("fillrandom");
    let mut db = open(&rand_dir)?;
    let per_key = db.entries_per_key().max(1) as u64;
    let keys = (num / per_key).max(1);
    let row_bytes = value_bytes * per_key as usize;

    // fillrandom
    let mut present = vec![false; keys as usize];
    let sampler = Sampler::start("self".into());
    let peak_reset = memory::reset_peak();
    sampler.reset();
    progress.start("fillrandom", keys);
    let start = Instant::now();
    for i in 0..keys {
        let k = rng.below(keys);
        db.put(&key(k), values.next(row_bytes))?;
        if let Some(p) = present.get_mut(k as usize) {
            *p = true;
        }
        if i % STEP == STEP - 1 {
            progress.advance(STEP);
        }
    }
    report.workloads.push(timed("fillrandom", keys * per_key, 0, start));
    progress.finish();
    db.flush()?;
    if peak_reset {
        report.fillrandom_memory = Some(sampler.peaks());
    }
    let fill = disk_bytes(&rand_dir)?;
    db.compact()?;
    report.fillrandom_disk = (fill, disk_bytes(&rand_dir)?);
    report.live_entries.1 = present.iter().filter(|p| **p).count() as u64 * per_key;

    // overwrite
    progress.start("overwrite", keys);
    let start = Instant::now();
    for i in 0..keys {
        let k = rng.below(keys);
        db.put(&key(k), values.next(row_bytes))?;
        if let Some(p) = present.get_mut(k as usize) {
            *p = true;
        }
        if i % STEP == STEP - 1 {
            progress.advance(STEP);
        }
    }
    report.workloads.push(timed("overwrite", keys * per_key, 0, start));
    progress.finish();
    db.flush()?;
    report.write_amplification = db.write_amplification()?;

    // readrandom
    let reads = (num / 5).max(1);
    progress.start("readrandom", reads);
    let start = Instant::now();
    let mut found = 0;
    for i in 0..reads {
        let k = rng.below(keys);
        let column = rng.below(per_key) as usize;
        found += u64::from(db.get(&key(k), column)?);
        if i % STEP == STEP - 1 {
            progress.advance(STEP);
        }
    }
    report.workloads.push(timed("readrandom", reads, found, start));
    progress.finish();

    // readseq
    progress.start("readseq", 1);
    let start = Instant::now();
    let scanned = db.scan_all()?;
    report.workloads.push(timed("readseq", scanned, scanned, start));
    progress.finish();

    // seekrandom
    let seeks = (num / 10).max(1);
    progress.start("seekrandom", seeks);
    let start = Instant::now();
    let mut read = 0;
    for i in 0..seeks {
        read += db.seek(&key(rng.below(keys)), SEEK_ENTRIES)?;
        if i % STEP == STEP - 1 {
            progress.advance(STEP);
        }
    }
    report.workloads.push(timed("seekrandom", seeks, read, start));
    progress.finish();

    // readwhilewriting
    let present = existing_keys(&present);
    let reads = (num / 5).max(1);
    let mut writer_values = Values::of(values_kind, &mut Rng::new(WRITER_SEED));
    let pace = Pace {
        reads,
        per_key,
        row_bytes,
    };
    progress.start("readwhilewriting", reads);
    let measured = read_while_writing(db.as_mut(), &present, &mut rng, &mut writer_values, pace, progress)?;
    report.workloads.push(measured);
    progress.finish();

    drop(db);
    std::fs::remove_dir_all(&rand_dir).map_err(|e| Error::io(&rand_dir, e))?;

    // fillseq
    let seq_dir = dir.join("fillseq");
    let mut db = open(&seq_dir)?;
    progress.start("fillseq", keys);
    let start = Instant::now();
    for i in 0..keys {
        db.put(&key(i), values.next(row_bytes))?;
        if i % STEP == STEP - 1 {
            progress.advance(STEP);
        }
    }
    report.workloads.push(timed("fillseq", keys * per_key, 0, start));
    progress.finish();
    db.flush()?;
    let fill = disk_bytes(&seq_dir)?;
    db.compact()?;
    report.fillseq_disk = (fill, disk_bytes(&seq_dir)?);
    report.live_entries.0 = keys * per_key;
    drop(db);
    std::fs::remove_dir_all(&seq_dir).map_err(|e| Error::io(&seq_dir, e))?;

    // VmHWM was reset before fillrandom, when the process held little more
    // than the value pool: the sampler's peaks since then are the run's.
    report.memory = Some(sampler.stop());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex, MutexGuard};

    use super::*;
    use crate::progress::Silent;

    type Map = Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>>;

    /// The simplest engine: a map behind a lock. `lossy` makes its writer
    /// clear the map instead of writing, as a store that loses its data
    /// while it writes would look to a reader.
    struct Model {
        map: Map,
        lossy: bool,
    }

    fn lock(map: &Map) -> MutexGuard<'_, BTreeMap<Vec<u8>, Vec<u8>>> {
        map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    struct ModelWriter {
        map: Map,
        lossy: bool,
    }

    impl Writer for ModelWriter {
        fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
            let mut map = lock(&self.map);
            if self.lossy {
                map.clear();
            } else {
                map.insert(key.to_vec(), values.to_vec());
            }
            Ok(())
        }
    }

    impl Adapter for Model {
        fn put(&mut self, key: &[u8; KEY_BYTES], values: &[u8]) -> Result<()> {
            lock(&self.map).insert(key.to_vec(), values.to_vec());
            Ok(())
        }
        fn writer(&self) -> Result<Box<dyn Writer>> {
            Ok(Box::new(ModelWriter {
                map: Arc::clone(&self.map),
                lossy: self.lossy,
            }))
        }
        fn get(&mut self, key: &[u8; KEY_BYTES], _column: usize) -> Result<bool> {
            Ok(lock(&self.map).contains_key(&key[..]))
        }
        fn scan_all(&mut self) -> Result<u64> {
            Ok(lock(&self.map).len() as u64)
        }
        fn seek(&mut self, key: &[u8; KEY_BYTES], n: usize) -> Result<u64> {
            Ok(lock(&self.map).range(key.to_vec()..).take(n).count() as u64)
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn compact(&mut self) -> Result<()> {
            Ok(())
        }
        fn settle(&mut self) -> Result<()> {
            Ok(())
        }
        fn table_files(&mut self) -> Result<u64> {
            Ok(0)
        }
    }

    fn model(lossy: bool, keys: u64) -> Result<Model> {
        let mut model = Model {
            map: Map::default(),
            lossy,
        };
        for k in 0..keys {
            model.put(&key(k), &[7; VALUE_BYTES])?;
        }
        Ok(model)
    }

    fn run(db: &mut Model, present: &[u64]) -> Result<Measured> {
        let mut rng = Rng::new(1);
        let mut values = Values::new(&mut Rng::new(2));
        let pace = Pace {
            reads: 5000,
            per_key: 1,
            row_bytes: VALUE_BYTES,
        };
        read_while_writing(db, present, &mut rng, &mut values, pace, &Silent)
    }

    #[test]
    fn reads_while_writing_find_every_key_and_count_the_writers_pace() -> Result<()> {
        let mut db = model(false, 100)?;
        let present: Vec<u64> = (0..100).collect();
        let measured = run(&mut db, &present)?;
        assert_eq!(
            (measured.workload.as_str(), measured.ops, measured.found),
            ("readwhilewriting", 5000, 5000)
        );
        assert!(
            measured.writes >= 1,
            "the writer wrote before the reads began: {measured:?}"
        );
        assert_eq!(lock(&db.map).len(), 100, "the writer overwrote existing keys only");
        Ok(())
    }

    #[test]
    fn an_engine_that_loses_keys_under_a_writer_fails_the_run() -> Result<()> {
        let mut db = model(true, 100)?;
        let present: Vec<u64> = (0..100).collect();
        let err = run(&mut db, &present).map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("readwhilewriting: 5000 of 5000 reads of existing keys found nothing".to_string())
        );
        Ok(())
    }

    #[test]
    fn the_existing_keys_are_the_ones_marked_present_in_order() {
        assert_eq!(existing_keys(&[false, true, true, false, true]), [1, 2, 4]);
        assert!(existing_keys(&[false, false]).is_empty());
    }

    #[test]
    fn reads_while_writing_need_a_key_that_exists() -> Result<()> {
        let mut db = model(false, 0)?;
        let err = run(&mut db, &[]).map_err(|e| e.to_string());
        assert_eq!(err, Err("readwhilewriting: no key exists to read".to_string()));
        Ok(())
    }
}
