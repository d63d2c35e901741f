//! The store: a folder of column families behind one write-ahead log.
//!
//! Writes go to the log, then to their family's memtable. Reads take a
//! [`Snapshot`]. Background threads do the rest: one flushes frozen memtables
//! to table files, one runs minor compactions, and unless every write syncs
//! ([`SyncPolicy::Always`]) one syncs the log: when a write has waited its
//! [`SyncPolicy::Interval`], or to write a segment back ahead of its rotation.
//! They sleep on a condition variable until there is work; nothing polls
//! (the compacting thread also wakes when a family's writes will have
//! paused long enough for its settle at rest, and only while one qualifies).
//!
//! This file holds the public [`Store`] and the shared state; the work is in
//! `write` (the write path and group commit), `install` (the one way a new
//! version is installed), `flush`, `compact` (running a compaction),
//! `settle` (the settle at rest) and `background` (the threads).
//!
//! Lock order (never taken the other way round): `writer`, then `manifest`,
//! then `version`; `durable` before `appended`, and `writer` before `durable`
//! (only at a log rotation); `background` last (only to wait or signal).
//! Flushes and compactions never take `writer`, so a long compaction never
//! blocks a write.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use cellar_sstable::BlockCache;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::batch::{self, OpRef, WriteBatch};
use crate::clock::now_ms;
use crate::compaction::{self, Choice, Compactor, FileShape, Keep};
use crate::error::{Error, Result};
use crate::files::log_path;
use crate::key::{self, Kind};
use crate::log::LogWriter;
use crate::manifest::{Edit, Manifest};
use crate::memtable::Memtable;
use crate::merge::MergeIterator;
use crate::options::{validate_family_name, FamilyOptions, StoreOptions, SyncPolicy};
use crate::output::TableOutput;
use crate::read::{Cell, CellRef, ColumnRange, Row, RowRange, Scan, Snapshot};
use crate::recovery::{Recovered, RepairReport};
use crate::source;
use crate::trace::Trace;
use crate::version::{FamilyCounters, FamilyVersion, TableFile, Version};

mod admin;
mod background;
mod compact;
mod flush;
#[cfg(test)]
mod hooks;
mod install;
#[cfg(test)]
mod races;
mod retire;
mod settle;
mod write;

use install::Change;

/// The single writer's state: the log and the sequence counter.
pub(crate) struct Writer {
    pub log: LogWriter,
    pub last_seq: u64,
    /// The store's clock for default timestamps: never goes backwards.
    pub last_ts: u64,
    pub last_sync: Instant,
    /// Records appended since the last sync (`SyncPolicy::Interval` syncs them
    /// within its interval even if no later write comes).
    unsynced: bool,
    buf: Vec<u8>,
    /// Per operation of the write in progress: family id and timestamp.
    resolved: Vec<(u32, u64)>,
    /// Families the write in progress touched (reused: no allocation per write).
    touched: Vec<u32>,
    /// The internal key of the entry being inserted (reused likewise).
    key: Vec<u8>,
    /// Log bytes appended since the log thread was last asked to write the
    /// segment back (`SyncPolicy::Never` and `Buffered`; see `write`).
    since_writeback: u64,
}

/// What the background threads are asked to do, and are doing. Every change
/// is made holding the `background` lock and followed by a signal on `wake`,
/// and every wait checks its condition holding that same lock: so no wake-up
/// is ever lost, and no wait for work needs a timeout (the timeouts are for
/// moments: an interval sync, a settle, retired memtables to free).
#[derive(Default)]
struct Background {
    flush_pending: bool,
    compaction_pending: bool,
    flushing: bool,
    compacting: bool,
    /// When the compacting thread looks again for a family to settle, if
    /// one qualifies but its writes have not paused long enough (see `settle`).
    settle_at: Option<Instant>,
    /// When the interval sync is due (`SyncPolicy::Interval`), if a write waits for one.
    sync_at: Option<Instant>,
    /// A log segment to write back (`SyncPolicy::Never` and `Buffered`).
    writeback: Option<(Arc<File>, PathBuf)>,
    shutdown: bool,
}

/// State shared by the store handle and its background threads.
pub(crate) struct Inner {
    pub dir: PathBuf,
    pub options: StoreOptions,
    /// Decompressed blocks of every compressed table, all families together.
    pub block_cache: BlockCache,
    pub _lock: File,
    pub version: RwLock<Arc<Version>>,
    /// The last sequence number readers may see: all writes up to it are in memtables.
    pub visible_seq: AtomicU64,
    /// The next file number (logs, tables, runs and manifests share it).
    pub next_file: AtomicU64,
    pub writer: Mutex<Writer>,
    /// The manifest and the state it records; holding this lock is the right
    /// to install a new version (see `install`).
    manifest: Mutex<Manifest>,
    /// Log segments not yet deleted, with their sizes (the current one included).
    pub live_logs: Mutex<BTreeMap<u64, u64>>,
    pub log_bytes: AtomicU64,
    /// The largest memtable frozen because it was full, in bytes: with
    /// `max_log_bytes` 0, the live log may hold four times this (see `rotate`).
    pub largest_full_memtable: AtomicU64,
    /// Group commit: the log position (segment, offset) known to be on stable
    /// storage. A writer waiting for its fsync holds this lock; whoever gets it
    /// first syncs everything appended so far, and the writers queued behind
    /// find their records already durable.
    durable: Mutex<(u64, u64)>,
    /// The log position after the last append (a leaf lock: nothing is taken
    /// while holding it).
    appended: Mutex<(u64, u64)>,
    background: Mutex<Background>,
    wake: Condvar,
    shutting_down: AtomicBool,
    stopped: Mutex<Option<String>>,
    compaction_locks: Mutex<HashMap<u32, Arc<Mutex<()>>>>,
    /// Flushed memtables waiting for the writer to free them, each with the
    /// last visible sequence number when it was retired (see `retire`).
    retired: Mutex<Vec<(Arc<Memtable>, u64)>>,
    #[cfg(test)]
    hooks: hooks::Hooks,
}

/// What a compaction read, wrote and dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Files merged.
    pub input_files: u64,
    /// Their bytes.
    pub input_bytes: u64,
    /// Their entries.
    pub input_entries: u64,
    /// Files written.
    pub output_files: u64,
    /// Their bytes.
    pub output_bytes: u64,
    /// Their entries.
    pub output_entries: u64,
}

/// An open cellar store. Cheap to share across threads behind an `Arc`; all
/// methods take `&self`.
///
/// ```
/// use cellar_engine::{ColumnRange, Store, StoreOptions};
/// # fn main() -> Result<(), cellar_engine::Error> {
/// let dir = tempfile::tempdir().map_err(|e| cellar_engine::Error::InvalidArgument(e.to_string()))?;
/// let store = Store::open(dir.path(), StoreOptions::default().family("loans"))?;
/// store.put("loans", "book:3", "loan|2024-03-02|0", "member:17")?;
/// store.put("loans", "book:3", "loan|2024-04-11|1", "member:5")?;
/// let march = store.slice("loans", "book:3", &ColumnRange::between("loan|2024-03", "loan|2024-04"))?;
/// assert_eq!(march.len(), 1);
/// assert_eq!(&march[0].value[..], b"member:17");
/// # Ok(()) }
/// ```
pub struct Store {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
}

impl Store {
    /// Opens (or creates) the store in `dir`. See [`StoreOptions`].
    ///
    /// Opening replays the manifest, then every log segment still needed, and
    /// flushes what the log held, so the store starts with empty memtables.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref();
        let recovered = crate::recovery::open(dir, &options)?;
        let inner = Arc::new(Inner::new(dir.to_path_buf(), options, recovered));
        let mut jobs = vec![Job::Flush, Job::Compaction];
        if inner.options.sync != SyncPolicy::Always {
            jobs.push(Job::Sync);
        }
        let mut threads = Vec::new();
        for job in jobs {
            let inner = inner.clone();
            let handle = std::thread::Builder::new()
                .name(format!("cellar-{job:?}").to_lowercase())
                .spawn(move || inner.background_loop(job))
                .map_err(|e| Error::io(dir, e))?;
            threads.push(handle);
        }
        let store = Store { inner, threads };
        store.inner.signal(Job::Compaction);
        Ok(store)
    }

    /// Rebuilds a damaged store's manifest from what its files still hold
    /// (LevelDB's `RepairDB`): every table file that reads back whole, then
    /// every log record that still decodes. What cannot be read is moved to
    /// the store's `lost/` folder, never deleted. The store must not be open.
    /// The report says what was recovered and what was not.
    pub fn repair(dir: impl AsRef<Path>) -> Result<RepairReport> {
        crate::recovery::repair(dir.as_ref())
    }

    /// The cache of decompressed blocks the store's compressed tables share
    /// ([`StoreOptions::block_cache_bytes`]): its capacity and what it holds.
    pub fn block_cache(&self) -> &BlockCache {
        &self.inner.block_cache
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The names of the column families.
    pub fn families(&self) -> Vec<String> {
        self.inner.current().families.values().map(|f| f.name.clone()).collect()
    }

    /// The options of a family.
    pub fn family_options(&self, family: &str) -> Result<FamilyOptions> {
        let v = self.inner.current();
        let fam = v
            .family(family)
            .ok_or_else(|| Error::UnknownFamily(family.to_string()))?;
        Ok((*fam.options).clone())
    }

    /// Adds a column family to an open store.
    pub fn create_family(&self, name: &str, options: FamilyOptions) -> Result<()> {
        validate_family_name(name)?;
        options.validate()?;
        // The writer lock keeps the log where it is while the family's log
        // number is chosen: the family needs no segment older than the one
        // being written.
        let _writer = self.inner.writer.lock();
        self.inner.install(|base| {
            if base.current.family(name).is_some() {
                return Err(Error::FamilyExists(name.to_string()));
            }
            let id = base.state.next_family_id();
            let family_dir = self.inner.dir.join(name);
            cellar_fs::create_dir_all(&family_dir).map_err(|e| Error::io(&family_dir, e))?;
            crate::log::sync_dir(&self.inner.dir)?;
            let edits = vec![
                Edit::AddFamily {
                    id,
                    name: name.to_string(),
                    options: options.encode(),
                },
                Edit::SetLogNumber {
                    family: id,
                    log_number: base.log_hint,
                },
            ];
            let family = FamilyVersion {
                id,
                name: name.to_string(),
                active: Arc::new(Memtable::for_family(&options)),
                options: Arc::new(options),
                dir: family_dir,
                frozen: Vec::new(),
                tables: Vec::new(),
                counters: Arc::new(FamilyCounters::default()),
            };
            Ok((Change::new(edits, base.current.with_family(family)), ()))
        })
    }

    /// Puts `value` in a cell, timestamped now.
    pub fn put(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.write_one(family, Kind::Put, row.as_ref(), column.as_ref(), None, value.as_ref())
    }

    /// Puts `value` in a cell with the caller's timestamp.
    pub fn put_at(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        timestamp: u64,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.write_one(
            family,
            Kind::Put,
            row.as_ref(),
            column.as_ref(),
            Some(timestamp),
            value.as_ref(),
        )
    }

    /// Deletes every version of a column written up to now.
    pub fn delete(&self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> Result<()> {
        self.write_one(family, Kind::DeleteCell, row.as_ref(), column.as_ref(), None, b"")
    }

    /// Deletes every version of a column with a timestamp up to `timestamp`.
    pub fn delete_at(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        timestamp: u64,
    ) -> Result<()> {
        self.write_one(
            family,
            Kind::DeleteCell,
            row.as_ref(),
            column.as_ref(),
            Some(timestamp),
            b"",
        )
    }

    /// Deletes every column of a row written up to now (a row tombstone).
    pub fn delete_row(&self, family: &str, row: impl AsRef<[u8]>) -> Result<()> {
        self.write_one(family, Kind::DeleteRow, row.as_ref(), b"", None, b"")
    }

    /// Deletes every column of a row with a timestamp up to `timestamp`.
    pub fn delete_row_at(&self, family: &str, row: impl AsRef<[u8]>, timestamp: u64) -> Result<()> {
        self.write_one(family, Kind::DeleteRow, row.as_ref(), b"", Some(timestamp), b"")
    }

    fn write_one(
        &self,
        family: &str,
        kind: Kind,
        row: &[u8],
        column: &[u8],
        timestamp: Option<u64>,
        value: &[u8],
    ) -> Result<()> {
        self.inner.write(&[OpRef {
            family,
            kind,
            row,
            column,
            timestamp,
            value,
        }])
    }

    /// Applies a batch atomically: one log record, consecutive sequence numbers,
    /// visible to readers all at once. A batch whose record would pass 256 MiB
    /// is refused whole ([`Error::TooLarge`], `"write batch"`).
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.inner.write(&batch.op_refs())
    }

    /// A consistent view of the store as of now.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// The latest live version of one cell.
    pub fn get(&self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> Result<Option<Cell>> {
        self.snapshot().get(family, row, column)
    }

    /// [`Store::get`] with its [`Trace`].
    pub fn get_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
    ) -> Result<(Option<Cell>, Trace)> {
        self.snapshot().get_traced(family, row, column)
    }

    /// Up to `max_versions` live versions of a cell, newest first.
    pub fn versions(&self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> Result<Vec<Cell>> {
        self.snapshot().versions(family, row, column)
    }

    /// Every live column of a row, in column order.
    pub fn get_row(&self, family: &str, row: impl AsRef<[u8]>) -> Result<Vec<Cell>> {
        self.snapshot().get_row(family, row)
    }

    /// [`Store::get_row`] for a reader that does not keep the cells: each is
    /// lent to `visit` (see [`Snapshot::visit_row`]). Returns how many.
    pub fn visit_row(&self, family: &str, row: impl AsRef<[u8]>, visit: impl FnMut(CellRef<'_>)) -> Result<usize> {
        self.snapshot().visit_row(family, row, visit)
    }

    /// [`Store::visit_row`] with its [`Trace`] (see [`Snapshot::visit_row_traced`]).
    pub fn visit_row_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        visit: impl FnMut(CellRef<'_>),
    ) -> Result<(usize, Trace)> {
        self.snapshot().visit_row_traced(family, row, visit)
    }

    /// [`Store::get_row`] with its [`Trace`].
    pub fn get_row_traced(&self, family: &str, row: impl AsRef<[u8]>) -> Result<(Vec<Cell>, Trace)> {
        self.snapshot().get_row_traced(family, row)
    }

    /// A row's columns in a range. See [`ColumnRange`].
    pub fn slice(&self, family: &str, row: impl AsRef<[u8]>, columns: &ColumnRange) -> Result<Vec<Cell>> {
        self.snapshot().slice(family, row, columns)
    }

    /// [`Store::slice`] with its [`Trace`].
    pub fn slice_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        columns: &ColumnRange,
    ) -> Result<(Vec<Cell>, Trace)> {
        self.snapshot().slice_traced(family, row, columns)
    }

    /// Rows in a range, as an iterator. See [`RowRange`].
    pub fn scan(&self, family: &str, rows: &RowRange) -> Result<Scan> {
        self.snapshot().scan(family, rows)
    }

    /// Collects a whole scan, with its trace.
    pub fn scan_traced(&self, family: &str, rows: &RowRange) -> Result<(Vec<Row>, Trace)> {
        let mut scan = self.scan(family, rows)?;
        let rows = scan.by_ref().collect::<Result<Vec<Row>>>()?;
        Ok((rows, scan.trace()))
    }

    /// Freezes every non-empty memtable and waits until all are written to table files.
    pub fn flush(&self) -> Result<()> {
        let ids: Vec<u32> = self.inner.current().families.keys().copied().collect();
        self.inner.flush_and_wait(&ids)
    }

    /// Flushes one family.
    pub fn flush_family(&self, family: &str) -> Result<()> {
        let id = self.inner.family_id(family)?;
        self.inner.flush_and_wait(&[id])
    }

    /// Major compaction of a family: flushes its memtable, then merges all its
    /// files into one run split at the target file size (at the last level,
    /// for a leveled family), dropping shadowed and surplus versions, expired
    /// cells and every tombstone. A family of either strategy gets one by
    /// itself once its writes pause ([`crate::Settle`]).
    pub fn compact(&self, family: &str) -> Result<CompactionReport> {
        let id = self.inner.family_id(family)?;
        self.inner.flush_and_wait(&[id])?;
        self.inner.compact_major(id, family)
    }

    /// Waits until the store has settled: no memtable waits for flush, no
    /// minor compaction has work, and no family waits for its settle at rest
    /// ([`crate::Settle`]); then frees the memtables already flushed.
    ///
    /// A family that qualifies for a settle is work left: this waits until
    /// its writes have paused for its idle time (1 s by default) and the
    /// settle has run, so it returns at the earliest that long after the
    /// family's last write, and not while another thread keeps writing to it.
    pub fn wait_for_background_work(&self) -> Result<()> {
        self.inner.signal(Job::Compaction);
        let mut bg = self.inner.background.lock();
        loop {
            self.inner.check_stopped()?;
            let frozen = self.inner.current().families.values().any(|f| !f.frozen.is_empty());
            let idle = !bg.flush_pending && !bg.flushing && !bg.compaction_pending && !bg.compacting;
            if !frozen && idle && bg.settle_at.is_none() {
                drop(bg);
                // Settled includes memory: the flushed memtables the writer
                // would free on its next write go now (see `retire`).
                self.inner.free_retired();
                return Ok(());
            }
            self.inner.wake.wait(&mut bg);
        }
    }

    /// Statistics of the store and each family. Counting live entries reads
    /// every family in full, so this costs a scan.
    pub fn stats(&self) -> Result<crate::stats::Stats> {
        let snapshot = self.inner.snapshot();
        crate::stats::collect(
            &snapshot.version,
            snapshot.sequence,
            snapshot.now_ms,
            self.inner.log_bytes.load(Ordering::Relaxed),
        )
    }

    /// Every table file: its family and what the manifest and the file say of it.
    pub fn tables(&self) -> Vec<crate::stats::TableInfo> {
        crate::stats::tables(&self.inner.current())
    }

    /// Re-reads every table file and checks every checksum.
    pub fn verify(&self) -> Result<u64> {
        let v = self.inner.current();
        let mut blocks = 0;
        for fam in v.families.values() {
            for t in &fam.tables {
                blocks += t.table.verify()?.blocks;
            }
        }
        Ok(blocks)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        {
            let mut bg = self.inner.background.lock();
            bg.shutdown = true;
            self.inner.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Hand any buffered records to the OS and sync, so a clean close
        // survives power loss too, whatever the policy. An error here has no
        // caller to go to; the next open replays what reached the disk.
        let _ = self.inner.writer.lock().log.sync();
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Job {
    Flush,
    Compaction,
    /// The log's background syncs: the interval sync of `SyncPolicy::Interval`,
    /// the write-back of `Never` and `Buffered`.
    Sync,
}

impl Inner {
    pub(crate) fn new(dir: PathBuf, options: StoreOptions, recovered: Recovered) -> Inner {
        let Recovered {
            lock,
            manifest,
            version,
            last_seq,
            next_file,
            log,
            block_cache,
        } = recovered;
        let log_number = log.number();
        Inner {
            dir,
            options,
            block_cache,
            _lock: lock,
            version: RwLock::new(Arc::new(version)),
            visible_seq: AtomicU64::new(last_seq),
            next_file: AtomicU64::new(next_file),
            writer: Mutex::new(Writer {
                log,
                last_seq,
                last_ts: 0,
                last_sync: Instant::now(),
                unsynced: false,
                buf: Vec::new(),
                resolved: Vec::new(),
                touched: Vec::new(),
                key: Vec::new(),
                since_writeback: 0,
            }),
            manifest: Mutex::new(manifest),
            live_logs: Mutex::new(BTreeMap::from([(log_number, 0)])),
            log_bytes: AtomicU64::new(0),
            largest_full_memtable: AtomicU64::new(0),
            durable: Mutex::new((log_number, 0)),
            appended: Mutex::new((log_number, 0)),
            background: Mutex::new(Background::default()),
            wake: Condvar::new(),
            shutting_down: AtomicBool::new(false),
            stopped: Mutex::new(None),
            compaction_locks: Mutex::new(HashMap::new()),
            retired: Mutex::new(Vec::new()),
            #[cfg(test)]
            hooks: hooks::Hooks::default(),
        }
    }

    pub(crate) fn current(&self) -> Arc<Version> {
        self.version.read().clone()
    }

    fn set_current(&self, version: Version) {
        *self.version.write() = Arc::new(version);
    }

    fn family_id(&self, name: &str) -> Result<u32> {
        self.current()
            .by_name
            .get(name)
            .copied()
            .ok_or_else(|| Error::UnknownFamily(name.to_string()))
    }

    fn snapshot(&self) -> Snapshot {
        // Both read under the version lock, so no version is installed in
        // between: every write up to the sequence is in a memtable or file this
        // version lists, and a reader of a version installed by a flush or a
        // compaction reads at a sequence at least that work's horizon (the
        // sequence visible when it began), which the drop rule and the
        // sequence zeroing of a bottommost compaction rely on.
        let version = self.version.read();
        let sequence = self.visible_seq.load(Ordering::Acquire);
        Snapshot {
            version: version.clone(),
            sequence,
            now_ms: now_ms(),
        }
    }

    fn check_stopped(&self) -> Result<()> {
        match &*self.stopped.lock() {
            Some(why) => Err(Error::WritesStopped(why.clone())),
            None => Ok(()),
        }
    }

    fn stop(&self, error: &Error) {
        let mut stopped = self.stopped.lock();
        if stopped.is_none() {
            *stopped = Some(error.to_string());
        }
        drop(stopped);
        self.notify_waiters();
    }

    /// Wakes every thread waiting on `wake`. Signalled holding the lock the
    /// waiters check their condition under, so a waiter either saw the change
    /// or is already asleep when the signal comes: no wake-up is lost.
    fn notify_waiters(&self) {
        let _bg = self.background.lock();
        self.wake.notify_all();
    }

    fn signal(&self, job: Job) {
        let mut bg = self.background.lock();
        match job {
            Job::Flush => bg.flush_pending = true,
            Job::Compaction => bg.compaction_pending = true,
            Job::Sync => {}
        }
        self.wake.notify_all();
    }

    /// A point where a test may run code (see `hooks`); nothing outside tests.
    #[cfg(test)]
    fn hook(&self, name: &'static str) {
        self.hooks.run(name);
    }

    /// A point where a test may run code (see `hooks`); nothing outside tests.
    #[cfg(not(test))]
    #[inline(always)]
    fn hook(&self, _name: &'static str) {}

    /// The newest log segment: where the writer appends now, or (during a
    /// rotation) is about to.
    fn writer_log_number_hint(&self) -> u64 {
        self.live_logs.lock().keys().next_back().copied().unwrap_or(0)
    }

    fn compaction_lock(&self, family: u32) -> Arc<Mutex<()>> {
        self.compaction_locks.lock().entry(family).or_default().clone()
    }
}
