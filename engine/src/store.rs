//! The store: a folder of column families behind one write-ahead log.
//!
//! Writes go to the log, then to their family's memtable. Reads take a
//! [`Snapshot`]. Two background threads do the rest: one flushes frozen
//! memtables to table files, one runs minor compactions. Both sleep on a
//! condition variable until there is work; nothing polls.
//!
//! Lock order (never taken the other way round): `writer`, then `install`,
//! then `version`. Flushes and compactions never take `writer`, so a long
//! compaction never blocks a write.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::batch::{self, OpRef, WriteBatch};
use crate::compaction::{self, Compactor};
use crate::error::{Error, Result};
use crate::key::{self, Kind};
use crate::log::LogWriter;
use crate::manifest::{Edit, Manifest, ManifestState};
use crate::memtable::Memtable;
use crate::merge::MergeIterator;
use crate::options::{validate_family_name, FamilyOptions, StoreOptions, SyncPolicy};
use crate::output::TableOutput;
use crate::read::{Cell, ColumnRange, Row, RowRange, Scan, Snapshot};
use crate::source;
use crate::trace::Trace;
use crate::version::{FamilyCounters, FamilyVersion, TableFile, Version};

/// The manifest is rewritten as a fresh snapshot once it grows past this.
const MANIFEST_REWRITE_BYTES: u64 = 4 << 20;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Path of a log segment.
pub(crate) fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// The single writer's state: the log and the sequence counter.
pub(crate) struct Writer {
    pub log: LogWriter,
    pub last_seq: u64,
    /// The store's clock for default timestamps: never goes backwards.
    pub last_ts: u64,
    pub last_sync: Instant,
    buf: Vec<u8>,
    /// Per operation of the write in progress: family id and timestamp.
    resolved: Vec<(u32, u64)>,
    /// Families the write in progress touched (reused: no allocation per write).
    touched: Vec<u32>,
}

/// The manifest and its replayed state; holding this lock is the right to
/// install a new version.
pub(crate) struct Install {
    pub manifest: Manifest,
    pub state: ManifestState,
}

#[derive(Default)]
struct Background {
    flush_pending: bool,
    compaction_pending: bool,
    flushing: bool,
    compacting: bool,
    shutdown: bool,
}

/// State shared by the store handle and its background threads.
pub(crate) struct Inner {
    pub dir: PathBuf,
    pub options: StoreOptions,
    pub _lock: File,
    pub version: RwLock<Arc<Version>>,
    /// The last sequence number readers may see: all writes up to it are in memtables.
    pub visible_seq: AtomicU64,
    /// The next file number (logs, tables, runs and manifests share it).
    pub next_file: AtomicU64,
    pub writer: Mutex<Writer>,
    pub install: Mutex<Install>,
    /// Log segments not yet deleted, with their sizes (the current one included).
    pub live_logs: Mutex<BTreeMap<u64, u64>>,
    pub log_bytes: AtomicU64,
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
        let inner = Arc::new(crate::recovery::open(dir.as_ref(), options)?);
        let mut threads = Vec::new();
        for job in [Job::Flush, Job::Compaction] {
            let inner = inner.clone();
            let handle = std::thread::Builder::new()
                .name(format!("cellar-{job:?}").to_lowercase())
                .spawn(move || inner.background_loop(job))
                .map_err(|e| Error::io(dir.as_ref(), e))?;
            threads.push(handle);
        }
        let store = Store { inner, threads };
        store.inner.signal(Job::Compaction);
        Ok(store)
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
        let _writer = self.inner.writer.lock();
        let mut install = self.inner.install.lock();
        if self.inner.current().family(name).is_some() {
            return Err(Error::FamilyExists(name.to_string()));
        }
        let id = install.state.families.keys().max().map_or(1, |m| m + 1);
        let family_dir = self.inner.dir.join(name);
        cellar_sstable::fs::create_dir_all(&family_dir).map_err(|e| Error::io(&family_dir, e))?;
        crate::log::sync_dir(&self.inner.dir)?;
        let current_log = self.inner.writer_log_number_hint();
        let edits = vec![
            Edit::AddFamily {
                id,
                name: name.to_string(),
                options: options.encode(),
            },
            Edit::SetLogNumber {
                family: id,
                log_number: current_log,
            },
        ];
        self.inner.commit(&mut install, &edits)?;
        let family = FamilyVersion {
            id,
            name: name.to_string(),
            options: Arc::new(options),
            dir: family_dir,
            active: Arc::new(Memtable::new()),
            frozen: Vec::new(),
            tables: Vec::new(),
            counters: Arc::new(FamilyCounters::default()),
        };
        let next = self.inner.current().with_family(family);
        self.inner.set_current(next);
        Ok(())
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
    /// visible to readers all at once.
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
    /// files into one run split at the target file size, dropping shadowed and
    /// surplus versions, expired cells and every tombstone.
    pub fn compact(&self, family: &str) -> Result<CompactionReport> {
        let id = self.inner.family_id(family)?;
        self.inner.flush_and_wait(&[id])?;
        let lock = self.inner.compaction_lock(id);
        let _guard = lock.lock();
        let v = self.inner.current();
        let Some(fam) = v.families.get(&id) else {
            return Err(Error::UnknownFamily(family.to_string()));
        };
        if fam.tables.is_empty() {
            return Ok(CompactionReport::default());
        }
        self.inner.run_compaction(fam, fam.tables.clone(), true)
    }

    /// Waits until no memtable waits for flush and no minor compaction has work.
    pub fn wait_for_background_work(&self) -> Result<()> {
        self.inner.signal(Job::Compaction);
        let mut bg = self.inner.background.lock();
        loop {
            self.inner.check_stopped()?;
            let frozen = self.inner.current().families.values().any(|f| !f.frozen.is_empty());
            if !frozen && !bg.flush_pending && !bg.flushing && !bg.compaction_pending && !bg.compacting {
                return Ok(());
            }
            self.inner.wake.wait_for(&mut bg, Duration::from_millis(50));
        }
    }

    /// Statistics of the store and each family. Counting live entries reads
    /// every family in full, so this costs a scan.
    pub fn stats(&self) -> Result<crate::stats::Stats> {
        crate::stats::collect(&self.inner)
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
        }
        self.inner.wake.notify_all();
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
}

impl Inner {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        dir: PathBuf,
        options: StoreOptions,
        lock: File,
        version: Version,
        last_seq: u64,
        next_file: u64,
        log: LogWriter,
        install: Install,
    ) -> Inner {
        let log_number = log.number();
        Inner {
            dir,
            options,
            _lock: lock,
            version: RwLock::new(Arc::new(version)),
            visible_seq: AtomicU64::new(last_seq),
            next_file: AtomicU64::new(next_file),
            writer: Mutex::new(Writer {
                log,
                last_seq,
                last_ts: 0,
                last_sync: Instant::now(),
                buf: Vec::new(),
                resolved: Vec::new(),
                touched: Vec::new(),
            }),
            install: Mutex::new(install),
            live_logs: Mutex::new(BTreeMap::from([(log_number, 0)])),
            log_bytes: AtomicU64::new(0),
            durable: Mutex::new((log_number, 0)),
            appended: Mutex::new((log_number, 0)),
            background: Mutex::new(Background::default()),
            wake: Condvar::new(),
            shutting_down: AtomicBool::new(false),
            stopped: Mutex::new(None),
            compaction_locks: Mutex::new(HashMap::new()),
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
        // Sequence first, then version: every write up to the sequence is in
        // this version or an older one's memtables that it still lists.
        let sequence = self.visible_seq.load(Ordering::Acquire);
        Snapshot {
            version: self.current(),
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
        self.wake.notify_all();
    }

    fn signal(&self, job: Job) {
        let mut bg = self.background.lock();
        match job {
            Job::Flush => bg.flush_pending = true,
            Job::Compaction => bg.compaction_pending = true,
        }
        drop(bg);
        self.wake.notify_all();
    }

    fn writer_log_number_hint(&self) -> u64 {
        self.live_logs.lock().keys().next_back().copied().unwrap_or(0)
    }

    fn compaction_lock(&self, family: u32) -> Arc<Mutex<()>> {
        self.compaction_locks.lock().entry(family).or_default().clone()
    }

    /// Makes an edit group durable in the manifest and applies it to the state.
    pub(crate) fn commit(&self, install: &mut Install, edits: &[Edit]) -> Result<()> {
        install.state.apply_all(edits)?;
        install.manifest.append(edits)?;
        if install.manifest.size() > MANIFEST_REWRITE_BYTES {
            let number = self.next_file.fetch_add(1, Ordering::SeqCst);
            let mut state = install.state.clone();
            state.next_file_number = self.next_file.load(Ordering::SeqCst);
            install.manifest.rewrite(number, &state)?;
        }
        Ok(())
    }

    /// Waits while some family has too many memtables waiting for flush: the
    /// write stall that keeps memory bounded when writes outrun the disk.
    fn stall(&self) -> Result<()> {
        let max = self.options.max_immutable_memtables.max(1);
        loop {
            if self.current().families.values().all(|f| f.frozen.len() < max) {
                return Ok(());
            }
            self.check_stopped()?;
            let mut bg = self.background.lock();
            self.wake.wait_for(&mut bg, Duration::from_millis(20));
        }
    }

    fn write(&self, ops: &[OpRef<'_>]) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        batch::check_limits(ops)?;
        self.stall()?;
        let mut guard = self.writer.lock();
        self.check_stopped()?;
        let w = &mut *guard;
        let version = self.current();
        let now = now_ms().max(w.last_ts);
        w.resolved.clear();
        for op in ops {
            let id = version
                .by_name
                .get(op.family)
                .copied()
                .ok_or_else(|| Error::UnknownFamily(op.family.to_string()))?;
            w.resolved.push((id, op.timestamp.unwrap_or(now)));
        }
        w.last_ts = now;
        let first = w.last_seq + 1;
        w.buf.clear();
        batch::encode_header(first, ops.len(), &mut w.buf);
        for (op, &(id, ts)) in ops.iter().zip(&w.resolved) {
            batch::encode_op(id, op.kind, ts, op.row, op.column, op.value, &mut w.buf);
        }
        let written = match w.log.append(&w.buf) {
            Ok(n) => n,
            Err(e) => {
                self.stop(&e);
                return Err(e);
            }
        };
        // With `Always`, the fsync happens after the write lock is released
        // (group commit, below); `Interval` syncs here when it is due.
        let group_sync = self.options.sync == SyncPolicy::Always;
        if matches!(self.options.sync, SyncPolicy::Interval(every) if w.last_sync.elapsed() >= every) {
            if let Err(e) = w.log.sync() {
                // After a failed fsync the kernel may have dropped the dirty
                // pages: nothing written since the last good sync is safe, and
                // retrying cannot tell. Refuse writes until the store is reopened.
                self.stop(&e);
                return Err(e);
            }
            w.last_sync = Instant::now();
        }
        let position = (w.log.number(), w.log.len());
        *self.appended.lock() = position;
        let sync_handle = group_sync.then(|| w.log.sync_handle());
        self.log_bytes.fetch_add(written, Ordering::Relaxed);
        let log_number = w.log.number();
        w.touched.clear();
        for (i, (op, &(id, ts))) in ops.iter().zip(&w.resolved).enumerate() {
            let Some(fam) = version.families.get(&id) else {
                continue;
            };
            let seq = first + i as u64;
            // The entry is laid out as `key ++ value` in one buffer of its final size.
            let mut entry = Vec::with_capacity(key::encoded_len(op.row, op.column, op.kind) + op.value.len());
            key::encode_into(&mut entry, op.row, op.column, ts, seq, op.kind);
            let key_len = entry.len();
            entry.extend_from_slice(op.value);
            fam.active
                .insert_entry(entry, key_len, ts, seq, op.kind.is_tombstone(), log_number);
            fam.counters.user_entries.fetch_add(1, Ordering::Relaxed);
            fam.counters.user_bytes.fetch_add(
                (op.row.len() + op.column.len() + op.value.len()) as u64,
                Ordering::Relaxed,
            );
            if !w.touched.contains(&id) {
                w.touched.push(id);
            }
        }
        w.last_seq = first + ops.len() as u64 - 1;
        let last_seq = w.last_seq;
        if !group_sync {
            self.visible_seq.fetch_max(last_seq, Ordering::Release);
        }

        let full: Vec<u32> = w
            .touched
            .iter()
            .copied()
            .filter(|id| {
                version.families.get(id).is_some_and(|f| {
                    f.active.bytes() >= f.options.memtable_max_bytes
                        || f.options.memtable_max_entries.is_some_and(|n| f.active.entries() >= n)
                })
            })
            .collect();
        if !full.is_empty() {
            self.rotate(w, &full)?;
        }
        drop(guard);
        if let Some((file, path)) = sync_handle {
            self.make_durable(position, &file, &path)?;
            // Every write up to `last_seq` is in the memtables (they were
            // inserted under the write lock) and, now, on stable storage.
            self.visible_seq.fetch_max(last_seq, Ordering::Release);
        }
        Ok(())
    }

    /// Group commit: returns once the log is durable up to `position`. The
    /// first writer to get here fsyncs everything appended so far; writers
    /// that queued behind it while it synced usually find their records
    /// already covered and return without an fsync of their own.
    fn make_durable(&self, position: (u64, u64), file: &std::fs::File, path: &Path) -> Result<()> {
        let mut durable = self.durable.lock();
        if *durable >= position {
            return Ok(());
        }
        // Everything appended to this segment before the fsync starts is covered
        // by it. (If the segment changed meanwhile, rotation synced this one.)
        let appended = *self.appended.lock();
        let target = if appended.0 == position.0 { appended } else { position };
        if let Err(e) = crate::log::sync_file(file, path) {
            self.stop(&e);
            return Err(e);
        }
        *durable = (*durable).max(target);
        Ok(())
    }

    /// Starts a new log segment and freezes the given families' memtables (plus
    /// any family whose memtable pins a log segment the store wants to delete).
    fn rotate(&self, w: &mut Writer, families: &[u32]) -> Result<()> {
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        let new_log = match LogWriter::create(&log_path(&self.dir, number), number) {
            Ok(log) => log.buffered(self.options.sync.log_buffer()),
            Err(e) => {
                self.stop(&e);
                return Err(e);
            }
        };
        // The closing segment is synced whatever the policy: a family frozen
        // here may be flushed to a table file (durable) while another family
        // still needs this segment to replay its part of the same batches. An
        // unsynced segment would then let a power loss keep half of a batch.
        if let Err(e) = w.log.sync() {
            self.stop(&e);
            return Err(e);
        }
        {
            let mut durable = self.durable.lock();
            *durable = (*durable).max((w.log.number(), w.log.len()));
        }
        *self.appended.lock() = (number, 0);
        let old = std::mem::replace(&mut w.log, new_log);
        let mut freeze: Vec<u32> = families.to_vec();
        {
            let mut logs = self.live_logs.lock();
            logs.insert(old.number(), old.len());
            logs.insert(number, 0);
            // An idle family must not pin the log forever: once the live
            // segments pass the limit, families still holding the oldest one
            // are flushed too.
            let total: u64 = logs.values().sum();
            if total > self.options.max_log_bytes {
                if let Some(&oldest) = logs.keys().next() {
                    for (id, fam) in &self.current().families {
                        if fam.active.first_log().is_some_and(|l| l <= oldest) && !freeze.contains(id) {
                            freeze.push(*id);
                        }
                    }
                }
            }
        }
        let _install = self.install.lock();
        let mut next = (*self.current()).clone();
        for id in freeze {
            let Some(fam) = next.families.get(&id) else {
                continue;
            };
            if fam.active.is_empty() {
                continue;
            }
            let mut f = (**fam).clone();
            f.frozen.insert(0, f.active.clone());
            f.active = Arc::new(Memtable::new());
            next.families.insert(id, Arc::new(f));
        }
        self.set_current(next);
        drop(_install);
        self.signal(Job::Flush);
        Ok(())
    }

    fn flush_and_wait(&self, ids: &[u32]) -> Result<()> {
        {
            let mut w = self.writer.lock();
            self.check_stopped()?;
            let v = self.current();
            let nonempty: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|id| v.families.get(id).is_some_and(|f| !f.active.is_empty()))
                .collect();
            if !nonempty.is_empty() {
                self.rotate(&mut w, &nonempty)?;
            }
        }
        let mut bg = self.background.lock();
        loop {
            self.check_stopped()?;
            let v = self.current();
            if ids
                .iter()
                .all(|id| v.families.get(id).is_none_or(|f| f.frozen.is_empty()))
            {
                return Ok(());
            }
            self.wake.wait_for(&mut bg, Duration::from_millis(50));
        }
    }

    fn background_loop(&self, job: Job) {
        loop {
            {
                let mut bg = self.background.lock();
                loop {
                    if bg.shutdown {
                        return;
                    }
                    let pending = match job {
                        Job::Flush => &mut bg.flush_pending,
                        Job::Compaction => &mut bg.compaction_pending,
                    };
                    if *pending {
                        *pending = false;
                        break;
                    }
                    self.wake.wait(&mut bg);
                }
                match job {
                    Job::Flush => bg.flushing = true,
                    Job::Compaction => bg.compacting = true,
                }
            }
            let result = loop {
                if self.shutting_down.load(Ordering::SeqCst) || self.stopped.lock().is_some() {
                    break Ok(());
                }
                let step = match job {
                    Job::Flush => self.flush_one(),
                    Job::Compaction => self.compact_minor(),
                };
                match step {
                    Ok(true) => continue,
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            if let Err(e) = result {
                if !self.shutting_down.load(Ordering::SeqCst) {
                    self.stop(&e);
                }
            }
            let mut bg = self.background.lock();
            match job {
                Job::Flush => {
                    bg.flushing = false;
                    bg.compaction_pending = true;
                }
                Job::Compaction => bg.compacting = false,
            }
            drop(bg);
            self.wake.notify_all();
        }
    }

    /// Writes the oldest frozen memtable of some family to a table file and
    /// installs it. Returns whether there was one.
    fn flush_one(&self) -> Result<bool> {
        let v = self.current();
        let Some((fam, memtable)) = v
            .families
            .values()
            .find_map(|f| f.frozen.last().map(|m| (f.clone(), m.clone())))
        else {
            return Ok(false);
        };
        let run = self.next_file.fetch_add(1, Ordering::SeqCst);
        let mut out = TableOutput::new(&fam.dir, &self.next_file, &fam.options, run, false);
        for (k, value) in memtable.iter() {
            out.add(&k, &value)?;
        }
        let files = out.finish()?;
        let written: u64 = files.iter().map(|f| f.meta.size).sum();

        let mut install = self.install.lock();
        let current = self.current();
        let Some(now) = current.families.get(&fam.id) else {
            return Ok(true);
        };
        let frozen: Vec<Arc<Memtable>> = now
            .frozen
            .iter()
            .filter(|m| !Arc::ptr_eq(m, &memtable))
            .cloned()
            .collect();
        let log_number = frozen
            .iter()
            .chain(std::iter::once(&now.active))
            .filter_map(|m| m.first_log())
            .min()
            .unwrap_or_else(|| self.writer_log_number_hint());
        let mut edits: Vec<Edit> = files
            .iter()
            .map(|f| Edit::AddTable {
                family: fam.id,
                table: f.meta.clone(),
            })
            .collect();
        edits.push(Edit::SetLogNumber {
            family: fam.id,
            log_number,
        });
        // A family with nothing in memory holds no log: move its log number up
        // too, or an idle family pins every segment after its last flush. The
        // hint is read before the emptiness check, so a write that lands after
        // the check is in this segment or a newer one.
        let hint = self.writer_log_number_hint();
        for (id, other) in &current.families {
            let stale = install.state.families.get(id).is_some_and(|s| s.log_number < hint);
            if *id != fam.id && stale && other.frozen.is_empty() && other.active.is_empty() {
                edits.push(Edit::SetLogNumber {
                    family: *id,
                    log_number: hint,
                });
            }
        }
        edits.push(Edit::LastSequence(install.state.last_sequence.max(memtable.max_seq())));
        edits.push(Edit::NextFileNumber(self.next_file.load(Ordering::SeqCst)));
        self.commit(&mut install, &edits)?;
        let mut f = (**now).clone();
        f.frozen = frozen;
        f.tables.extend(files.into_iter().map(Arc::new));
        FamilyVersion::order_tables(&mut f.tables);
        self.set_current(current.with_family(f));
        fam.counters.flushes.fetch_add(1, Ordering::Relaxed);
        fam.counters.flush_bytes.fetch_add(written, Ordering::Relaxed);
        self.delete_obsolete_logs(&install.state);
        drop(install);
        self.wake.notify_all();
        Ok(true)
    }

    /// Removes log segments older than every family's oldest needed segment.
    pub(crate) fn delete_obsolete_logs(&self, state: &ManifestState) {
        let needed = state.families.values().map(|f| f.log_number).min().unwrap_or(0);
        let mut logs = self.live_logs.lock();
        let current = logs.keys().next_back().copied().unwrap_or(0);
        let obsolete: Vec<u64> = logs.keys().copied().filter(|&n| n < needed && n != current).collect();
        for n in obsolete {
            // A segment that cannot be removed is only wasted space; the next
            // open skips it (it is older than every family's log number).
            if cellar_sstable::fs::remove(&log_path(&self.dir, n)).is_ok() {
                logs.remove(&n);
            }
        }
    }

    /// One automatic (size-tiered) compaction, if some family needs one.
    fn compact_minor(&self) -> Result<bool> {
        let v = self.current();
        for fam in v.families.values() {
            if fam.options.compaction_trigger == 0 {
                continue;
            }
            let lock = self.compaction_lock(fam.id);
            let Some(_guard) = lock.try_lock() else {
                continue;
            };
            let v = self.current();
            let Some(fam) = v.families.get(&fam.id) else {
                continue;
            };
            let runs = fam.runs();
            let sizes: Vec<u64> = runs.iter().map(|r| r.iter().map(|t| t.meta.size).sum()).collect();
            if let Some(range) = compaction::choose(&sizes, fam.options.compaction_trigger) {
                let bottommost = range.end == runs.len();
                let inputs: Vec<Arc<TableFile>> =
                    runs.get(range).unwrap_or_default().iter().flatten().cloned().collect();
                self.run_compaction(fam, inputs, bottommost)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Merges `inputs` (whole runs, adjacent in age) into one new run and installs it.
    fn run_compaction(
        &self,
        fam: &FamilyVersion,
        inputs: Vec<Arc<TableFile>>,
        bottommost: bool,
    ) -> Result<CompactionReport> {
        let expire_before = fam.options.expire_before(now_ms());
        let mut cursors = Vec::with_capacity(inputs.len());
        for t in &inputs {
            cursors.push(source::whole_file_cursor(t)?);
        }
        let mut merge = MergeIterator::new(cursors);
        let mut compactor = Compactor::new(fam.options.max_versions, expire_before, bottommost);
        let run = self.next_file.fetch_add(1, Ordering::SeqCst);
        let mut out = TableOutput::new(&fam.dir, &self.next_file, &fam.options, run, true);
        let mut seen = 0u64;
        while merge.valid() {
            if compactor.keep(merge.key()) {
                out.add(merge.key(), &merge.value())?;
            }
            merge.next()?;
            seen += 1;
            if seen.is_multiple_of(4096) && self.shutting_down.load(Ordering::Relaxed) {
                return Err(Error::InvalidArgument("compaction interrupted by close".into()));
            }
        }
        let outputs = out.finish()?;
        let report = CompactionReport {
            input_files: inputs.len() as u64,
            input_bytes: inputs.iter().map(|t| t.meta.size).sum(),
            input_entries: inputs.iter().map(|t| t.meta.entries).sum(),
            output_files: outputs.len() as u64,
            output_bytes: outputs.iter().map(|t| t.meta.size).sum(),
            output_entries: outputs.iter().map(|t| t.meta.entries).sum(),
        };

        let mut install = self.install.lock();
        let current = self.current();
        let Some(now) = current.families.get(&fam.id) else {
            return Ok(report);
        };
        let mut edits: Vec<Edit> = inputs
            .iter()
            .map(|t| Edit::RemoveTable {
                family: fam.id,
                file_id: t.meta.file_id,
            })
            .collect();
        edits.extend(outputs.iter().map(|t| Edit::AddTable {
            family: fam.id,
            table: t.meta.clone(),
        }));
        edits.push(Edit::NextFileNumber(self.next_file.load(Ordering::SeqCst)));
        self.commit(&mut install, &edits)?;
        let input_ids: Vec<u64> = inputs.iter().map(|t| t.meta.file_id).collect();
        let mut f = (**now).clone();
        f.tables.retain(|t| !input_ids.contains(&t.meta.file_id));
        f.tables.extend(outputs.into_iter().map(Arc::new));
        FamilyVersion::order_tables(&mut f.tables);
        self.set_current(current.with_family(f));
        drop(install);
        // The inputs are deleted when the last version (or snapshot) listing them goes.
        for t in &inputs {
            t.mark_obsolete();
        }
        fam.counters.compactions.fetch_add(1, Ordering::Relaxed);
        fam.counters
            .compaction_bytes_read
            .fetch_add(report.input_bytes, Ordering::Relaxed);
        fam.counters
            .compaction_bytes_written
            .fetch_add(report.output_bytes, Ordering::Relaxed);
        Ok(report)
    }
}
