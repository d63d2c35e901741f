//! Opening a store: lock, manifest, table files, then the log.
//!
//! [`open`] runs these steps in order (LevelDB's `DB::Open`, `Recover` and
//! `RecoverLogFile`), each a function below:
//!
//! 1. [`check_declared_families`] and [`prepare_folder`]: refuse bad
//!    arguments, a folder that is not a store, and one that lost its
//!    `CURRENT`, before touching anything.
//! 2. [`lock_store`]: take the `LOCK` file's OS lock, so no second process
//!    (or second handle in this process) opens the same store.
//! 3. [`open_manifest`]: replay the manifest (or create one): families, their
//!    options, their table files, and the oldest log segment each needs.
//! 4. [`declare_families`]: add the families the caller names, record
//!    changed options.
//! 5. `tables::open_families`: open every table file the manifest lists, and
//!    sort every other file of a family folder into a provable leftover or
//!    evidence that the manifest lost a record (an error).
//! 6. `replay::replay_logs`: replay the log segments still needed into fresh
//!    memtables, with the damage rules of the log and sequence numbers that
//!    must follow each other.
//!
//! Up to here recovery writes nothing (a family folder declared for the
//! first time is made, nothing is removed): a store that fails to open is
//! left as it was, for a repair. Then, having decided the store opens:
//!
//! 7. [`start_log`]: a fresh log segment for the writes to come.
//! 8. [`flush_replayed`]: write what the log held to table files;
//!    [`split_shared_runs`]: give a run number that tables at two levels
//!    share (an older cellar handed a move's run number out again) to one
//!    level only.
//! 9. [`record`]: one manifest edit group records all of it; the new tables
//!    get their final names.
//! 10. [`remove_obsolete`]: delete what is provably obsolete: leftovers,
//!     log segments every family has flushed, manifests `CURRENT` no longer
//!     names.
//!
//! The store then starts with empty memtables. `repair` (in its own module)
//! is the tool for a store that does not open.

mod placement;
pub(crate) mod read_only;
mod repair;
mod replay;
mod tables;

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cellar_fs as fs;
use cellar_sstable::BlockCache;

pub(crate) use repair::repair;
pub use repair::{LostFile, RepairReport, RepairedFamily, SkippedLog};

use crate::compaction;
use crate::error::{Error, Result};
use crate::files::{self, log_path};
use crate::log::{self, LogWriter};
use crate::manifest::{Edit, Manifest, ManifestState, TableMeta};
use crate::memtable::Memtable;
use crate::options::{validate_family_name, StoreOptions};
use crate::output::{PendingTable, TableOutput};
use crate::version::{FamilyVersion, Version};

/// Number of the first manifest of a new store; files after it count up from here.
const FIRST_MANIFEST: u64 = 1;

/// What recovery hands to the store: everything it needs to start, and
/// nothing it would have to call back for.
pub(crate) struct Recovered {
    /// The held `LOCK` file (released when dropped).
    pub(crate) lock: File,
    /// The manifest, with the state recovery recorded.
    pub(crate) manifest: Manifest,
    /// The families and their table files; every memtable empty.
    pub(crate) version: Version,
    /// The last sequence number used: the next write takes the one after.
    pub(crate) last_seq: u64,
    /// The next unused file number.
    pub(crate) next_file: u64,
    /// The fresh log segment new writes go to.
    pub(crate) log: LogWriter,
    /// The cache of decompressed blocks every table was opened with.
    pub(crate) block_cache: BlockCache,
}

/// Opens the store in `dir` (see the module's steps).
pub(crate) fn open(dir: &Path, options: &StoreOptions) -> Result<Recovered> {
    check_declared_families(options)?;
    prepare_folder(dir, options)?;
    let lock = lock_store(dir)?;
    let mut manifest = open_manifest(dir, options)?;
    let mut state = manifest.state().clone();
    let mut edits = declare_families(&state, options);
    state.apply_all(&edits)?;
    let next_file = AtomicU64::new(state.first_unused_number().max(FIRST_MANIFEST + 1));
    let block_cache = BlockCache::new(options.block_cache_bytes);
    let found = tables::open_families(dir, &state, &manifest, &block_cache)?;
    let replayed = replay::replay_logs(dir, &state, options.salvage_log)?;
    // A rotation takes a log number before the manifest records it (the next
    // file number is recorded with the next install that writes the
    // manifest), so never hand one out again.
    if let Some(&newest) = replayed.segments.last() {
        next_file.fetch_max(newest + 1, Ordering::SeqCst);
    }

    // Every check passed: from here on, recovery writes.
    let log = start_log(dir, &next_file, options)?;
    let mut families = found.families;
    let mut pending = found.roll_forward;
    pending.extend(flush_replayed(&replayed.memtables, &families, &next_file, &mut edits)?);
    split_shared_runs(&mut families, &mut pending, &next_file, &mut edits);
    for id in families.keys() {
        edits.push(Edit::SetLogNumber {
            family: *id,
            log_number: log.number(),
        });
    }
    edits.push(Edit::LastSequence(replayed.last_seq));
    edits.push(Edit::NextFileNumber(next_file.load(Ordering::SeqCst)));
    record(&mut manifest, &edits, &next_file, pending, &mut families, &block_cache)?;
    remove_obsolete(dir, &manifest, &found.leftovers, &replayed, log.number())?;

    let version = Version {
        by_name: families.values().map(|f| (f.name.clone(), f.id)).collect(),
        families: families.into_iter().map(|(id, f)| (id, Arc::new(f))).collect(),
    };
    Ok(Recovered {
        lock,
        manifest,
        version,
        last_seq: replayed.last_seq,
        next_file: next_file.load(Ordering::SeqCst),
        log,
        block_cache,
    })
}

/// Every declared family has a valid name and options, and no name comes twice.
fn check_declared_families(options: &StoreOptions) -> Result<()> {
    for (i, (name, family_options)) in options.families.iter().enumerate() {
        validate_family_name(name)?;
        family_options.validate()?;
        if options.families.iter().take(i).any(|(n, _)| n == name) {
            return Err(Error::FamilyExists(name.clone()));
        }
    }
    Ok(())
}

/// Makes the store folder if it is missing and creation was asked for; a
/// folder that is not a store, when creation was not asked for, is refused
/// before anything in it is touched.
fn prepare_folder(dir: &Path, options: &StoreOptions) -> Result<()> {
    if !dir.exists() {
        if !options.create_if_missing {
            return Err(Error::NotAStore { dir: dir.to_path_buf() });
        }
        // Its parent is fsynced too: a store whose folder a power loss can
        // take back would lose every write acknowledged in it.
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    if !dir.is_dir() {
        return Err(Error::NotAStore { dir: dir.to_path_buf() });
    }
    let current = dir.join("CURRENT");
    if !current.exists() {
        // A store that lost its CURRENT is damaged, not new: creating a store
        // over its files would hide them (and start a manifest numbered like
        // its old one).
        if let Some(evidence) = store_files(dir)? {
            return Err(Error::corruption(
                current,
                0,
                format!("missing, but the folder holds a store's files ({evidence})"),
            ));
        }
        if !options.create_if_missing {
            return Err(Error::NotAStore { dir: dir.to_path_buf() });
        }
    }
    Ok(())
}

/// A file that only a store that was opened writes, if `dir` holds one: a
/// log segment (the first open creates one after `CURRENT`), a manifest
/// other than the first, the first one holding more than the snapshot a
/// creation starts it with, or a table file. (A creation cut short before
/// `CURRENT` leaves only the first manifest, which may be started again.)
///
/// The folder is listed once. No lock is held yet (a store being created
/// takes it before its first manifest), so a second listing could see a
/// later moment, not a truer one: one listing is one moment for the log
/// segments, the manifests and the family folders alike.
fn store_files(dir: &Path) -> Result<Option<String>> {
    let listing = files::StoreListing::read(dir)?;
    if let Some(number) = listing.logs.first() {
        return Ok(Some(format!("log segment {}", log_path(dir, *number).display())));
    }
    for &number in &listing.manifests {
        let path = dir.join(crate::manifest::manifest_file_name(number));
        let records = log::read_log(&path, log::ReadMode::Salvage).map_or(0, |c| c.records.len());
        if number != FIRST_MANIFEST || records > 1 {
            return Ok(Some(format!("manifest {}", path.display())));
        }
    }
    for family in &listing.families {
        if let Some((_, path)) = files::table_files(&dir.join(family))?.first() {
            return Ok(Some(format!("table file {}", path.display())));
        }
    }
    Ok(None)
}

/// How long [`lock_store`] waits for a `LOCK` held by someone else before it
/// reports [`Error::Locked`], and how long it sleeps between tries.
///
/// The lock is an `flock` (std's `File::try_lock`), which belongs to the open
/// file, and a process that starts a child shares its open files with the
/// child from `fork` until `exec` closes them (they are close-on-exec). So a
/// program that closes a store and opens it again while another of its
/// threads starts a child can find the lock still held, by the child, for
/// that moment. LevelDB and RocksDB use `fcntl` locks instead, which a child
/// does not inherit, at the price of a process-wide table of locked files
/// (closing *any* descriptor of the file drops an `fcntl` lock). A short wait
/// is the smaller cure; what it costs is that an open of a store another
/// handle really holds reports `Locked` after this wait, not at once.
const LOCK_WAIT: Duration = Duration::from_millis(200);
const LOCK_RETRY: Duration = Duration::from_millis(2);

/// Takes the OS lock of the store's `LOCK` file, waiting up to [`LOCK_WAIT`]
/// for a holder to let go.
pub(crate) fn lock_store(dir: &Path) -> Result<File> {
    let path = dir.join(files::LOCK);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(LOCK_RETRY),
            Err(TryLockError::WouldBlock) => return Err(Error::Locked { dir: dir.to_path_buf() }),
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
}

/// Replays the live manifest, or creates the first one of a new store.
fn open_manifest(dir: &Path, options: &StoreOptions) -> Result<Manifest> {
    match Manifest::open(dir) {
        Err(Error::NotAStore { .. }) if options.create_if_missing => {
            let state = ManifestState {
                next_file_number: FIRST_MANIFEST + 1,
                ..ManifestState::default()
            };
            // The store folder's name must be durable too. `create_dir_all`
            // synced it if this open made it; one made by an open that a crash
            // cut short may never have been.
            log::sync_dir(dir.parent().unwrap_or(Path::new("")))?;
            Manifest::create(dir, FIRST_MANIFEST, state)
        }
        other => other,
    }
}

/// The edits that add the declared families the store lacks and record the
/// options of those whose options changed.
fn declare_families(state: &ManifestState, options: &StoreOptions) -> Vec<Edit> {
    let mut edits = Vec::new();
    let mut next_id = state.next_family_id();
    for (name, family_options) in &options.families {
        let encoded = family_options.encode();
        match state.families.values().find(|f| &f.name == name) {
            Some(f) if f.options != encoded => edits.push(Edit::SetFamilyOptions {
                id: f.id,
                options: encoded,
            }),
            Some(_) => {}
            None => {
                edits.push(Edit::AddFamily {
                    id: next_id,
                    name: name.clone(),
                    options: encoded,
                });
                next_id += 1;
            }
        }
    }
    edits
}

/// Creates the log segment new writes go to.
fn start_log(dir: &Path, next_file: &AtomicU64, options: &StoreOptions) -> Result<LogWriter> {
    let number = next_file.fetch_add(1, Ordering::SeqCst);
    Ok(LogWriter::create(&log_path(dir, number), number)?.buffered(options.sync.log_buffer()))
}

/// Writes each family's replayed memtable to a table file (pending until
/// recorded) and adds the edits that list them.
fn flush_replayed(
    memtables: &BTreeMap<u32, Memtable>,
    families: &BTreeMap<u32, FamilyVersion>,
    next_file: &AtomicU64,
    edits: &mut Vec<Edit>,
) -> Result<Vec<(u32, PendingTable)>> {
    let mut out = Vec::new();
    for (id, memtable) in memtables {
        let Some(fam) = families.get(id) else { continue };
        let run = next_file.fetch_add(1, Ordering::SeqCst);
        let mut output = TableOutput::new(&fam.dir, next_file, &fam.options, run, 0, false);
        // Every replayed write is visible to every reader of the opened store.
        compaction::flush_memtable(memtable, &fam.options, u64::MAX, crate::clock::now_ms(), &mut output)?;
        // A flush like any other: counted, so that `flushes` and
        // `flush_bytes_written` agree.
        fam.counters.flushes.fetch_add(1, Ordering::Relaxed);
        for table in output.finish()? {
            fam.counters.flush_bytes.fetch_add(table.meta.size, Ordering::Relaxed);
            edits.push(Edit::AddTable {
                family: *id,
                table: table.meta.clone(),
            });
            out.push((*id, table));
        }
    }
    Ok(out)
}

/// Gives each level but the deepest of a run number that a family's tables
/// at several levels share a new run number, and adds the edits that record
/// it.
///
/// A run is the files of one level with disjoint keys, and a range read
/// takes a run's files as one stretch in key order. An older cellar did not
/// record the run number a move took (see `Inner::install`): the next open
/// could give it to a new table at level 0, which reads then looked for
/// among the moved files' keys and missed. The files keep their place and
/// their level; only the number of the shallower run changes (a move joins
/// the deeper one by its number).
fn split_shared_runs(
    families: &mut BTreeMap<u32, FamilyVersion>,
    pending: &mut [(u32, PendingTable)],
    next_file: &AtomicU64,
    edits: &mut Vec<Edit>,
) {
    for (id, fam) in families.iter_mut() {
        let listed = fam
            .tables
            .iter()
            .map(|t| &t.meta)
            .chain(pending.iter().filter(|(f, _)| f == id).map(|(_, t)| &t.meta));
        let renumbered = runs_to_split(listed, || next_file.fetch_add(1, Ordering::SeqCst));
        if renumbered.is_empty() {
            continue;
        }
        let mut record = |meta: &TableMeta| {
            edits.push(Edit::RemoveTable {
                family: *id,
                file_id: meta.file_id,
            });
            edits.push(Edit::AddTable {
                family: *id,
                table: meta.clone(),
            });
        };
        for table in fam.tables.iter_mut() {
            if let Some(&run) = renumbered.get(&(table.meta.run, table.meta.level)) {
                *table = Arc::new(table.moved(table.meta.level, run));
                record(&table.meta);
            }
        }
        for (_, table) in pending.iter_mut().filter(|(f, _)| f == id) {
            if let Some(&run) = renumbered.get(&(table.meta.run, table.meta.level)) {
                table.meta.run = run;
                record(&table.meta);
            }
        }
    }
}

/// The new run number of each level but the deepest of a run number that
/// tables of one family at several levels share, by `(run, level)`, each
/// taken from `take` (see [`split_shared_runs`]).
pub(super) fn runs_to_split<'m>(
    tables: impl Iterator<Item = &'m TableMeta> + Clone,
    mut take: impl FnMut() -> u64,
) -> BTreeMap<(u64, u32), u64> {
    let mut deepest: BTreeMap<u64, u32> = BTreeMap::new();
    for meta in tables.clone() {
        let level = deepest.entry(meta.run).or_insert(meta.level);
        *level = (*level).max(meta.level);
    }
    let mut renumbered = BTreeMap::new();
    for meta in tables {
        if deepest.get(&meta.run).is_some_and(|&level| level != meta.level) {
            renumbered.entry((meta.run, meta.level)).or_insert_with(&mut take);
        }
    }
    renumbered
}

/// Makes recovery's edit group durable, then gives the tables it lists their
/// final names and adds them to their families.
fn record(
    manifest: &mut Manifest,
    edits: &[Edit],
    next_file: &AtomicU64,
    pending: Vec<(u32, PendingTable)>,
    families: &mut BTreeMap<u32, FamilyVersion>,
    cache: &BlockCache,
) -> Result<()> {
    manifest.log_and_apply(edits, next_file)?;
    for (id, table) in pending {
        let file = table.publish(cache)?;
        if let Some(fam) = families.get_mut(&id) {
            fam.tables.push(Arc::new(file));
        }
    }
    for fam in families.values_mut() {
        FamilyVersion::order_tables(&mut fam.tables);
    }
    Ok(())
}

/// Deletes what the recorded state proves obsolete, and moves what salvage
/// dropped to `lost/`. A failure to delete only leaves garbage that the next
/// open tries again.
fn remove_obsolete(
    dir: &Path,
    manifest: &Manifest,
    leftovers: &[PathBuf],
    replayed: &replay::Replayed,
    new_log: u64,
) -> Result<()> {
    for path in leftovers {
        let _ = fs::remove(path);
    }
    for path in &replayed.dropped {
        files::move_to_lost(dir, path)?;
    }
    // One listing for both: the lock is held, so no other handle adds or
    // removes a segment or a manifest between the two loops. It is taken
    // after this open made its own files (the new segment, the manifest
    // `record` wrote to), which it spares by number and by path; every
    // other segment in it was in the listing replay read, so:
    let listing = files::StoreListing::read(dir)?;
    // every segment older than the new one is either flushed to tables by
    // this open, or was already flushed by every family, or was moved to
    // `lost/` above.
    for &number in &listing.logs {
        if number < new_log {
            let _ = fs::remove(&log_path(dir, number));
        }
    }
    // A manifest CURRENT does not name was replaced by a rewrite (an older
    // number) or written by a rewrite that never switched CURRENT (a newer
    // one): neither holds anything the live one lacks.
    let live = manifest.path().to_path_buf();
    for &number in &listing.manifests {
        let path = dir.join(crate::manifest::manifest_file_name(number));
        if path != live {
            let _ = fs::remove(&path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cell, Compaction, FamilyOptions, Store};

    type TestResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

    /// A store with one leveled family `f` that never compacts on its own.
    fn leveled_f() -> StoreOptions {
        let leveled = Compaction::Leveled {
            base_bytes: 1 << 20,
            multiplier: 10,
        };
        let family = FamilyOptions::default().compaction(leveled).compaction_trigger(0);
        StoreOptions::default().family_with("f", family)
    }

    /// The tables of the family `f` as the manifest lists them.
    fn listed(dir: &Path) -> Result<(u32, Vec<TableMeta>)> {
        let manifest = Manifest::open(dir)?;
        let family = manifest.state().families.values().find(|f| f.name == "f");
        Ok(family.map(|f| (f.id, f.tables.clone())).unwrap_or_default())
    }

    /// Rewrites the record of the table at `level` of the family `f` to
    /// put it in run `run`, as an older cellar may have left it; returns
    /// that run.
    fn rewrite_run(dir: &Path, level: u32, run: impl FnOnce(&ManifestState) -> u64) -> TestResult<u64> {
        let (family, tables) = listed(dir)?;
        let table = tables
            .iter()
            .find(|t| t.level == level)
            .ok_or_else(|| format!("no table at level {level}: {tables:?}"))?;
        let mut manifest = Manifest::open(dir)?;
        let run = run(manifest.state());
        let next_file = AtomicU64::new(manifest.state().next_file_number);
        let edits = [
            Edit::RemoveTable {
                family,
                file_id: table.file_id,
            },
            Edit::AddTable {
                family,
                table: TableMeta { run, ..table.clone() },
            },
        ];
        manifest.log_and_apply(&edits, &next_file)?;
        Ok(run)
    }

    /// Repair starts counting past every file and run number the old
    /// manifest lists. An older cellar did not record the run number a
    /// move took (here: the level-6 table is given the manifest's next
    /// number), and repair gave that number again to the table it wrote
    /// from the log, at level 0: two levels in one run.
    #[test]
    fn repair_never_gives_a_table_from_the_log_the_run_number_of_a_listed_one() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), leveled_f())?;
            store.put_at("f", "a", "c", 1, "a")?;
            store.compact("f")?;
            store.put_at("f", "b", "c", 2, "b")?;
        }
        let unrecorded = |state: &ManifestState| state.next_file_number;
        let moved_run = rewrite_run(dir.path(), compaction::LAST_LEVEL, unrecorded)?;
        repair(dir.path())?;
        let (_, tables) = listed(dir.path())?;
        let runs: Vec<(u32, u64)> = tables.iter().map(|t| (t.level, t.run)).collect();
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert_eq!(runs.iter().filter(|(_, run)| *run == moved_run).count(), 1, "{runs:?}");
        Ok(())
    }

    /// A store an older cellar left with the run number of a table moved to
    /// level 6 given again to a new table at level 0 (made here by
    /// rewriting the level-0 table's record): a read of row `b` took the
    /// two as one run in key order and missed the level-0 table. The open
    /// gives the level-0 table a run of its own, and records it.
    #[test]
    fn an_open_gives_a_run_number_shared_by_two_levels_to_one() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), leveled_f())?;
            store.put_at("f", "a", "c", 1, "a")?;
            store.compact("f")?;
            store.put_at("f", "b", "c", 2, "b")?;
            store.flush()?;
        }
        let (_, tables) = listed(dir.path())?;
        let shared = tables
            .iter()
            .find(|t| t.level == compaction::LAST_LEVEL)
            .map(|t| t.run)
            .ok_or("no table at level 6")?;
        rewrite_run(dir.path(), 0, |_| shared)?;
        let before = listed(dir.path())?;

        let want = vec![Cell {
            column: "c".into(),
            timestamp: 2,
            value: "b".into(),
        }];
        // A read-only open reads the runs apart without writing.
        let reader = crate::ReadOnlyStore::open(dir.path())?;
        assert_eq!(reader.snapshot().versions("f", "b", "c")?, want, "read-only");
        drop(reader);
        assert_eq!(listed(dir.path())?, before, "a read-only open writes nothing");
        for open in 0..2 {
            let store = Store::open(dir.path(), leveled_f())?;
            assert_eq!(store.versions("f", "b", "c")?, want, "open {open}");
            assert_eq!(store.get_row("f", "b")?, want, "open {open}");
            let runs: Vec<(u32, u64)> = store.tables().iter().map(|t| (t.level, t.run)).collect();
            assert_eq!(runs.len(), 2);
            assert!(
                runs.contains(&(compaction::LAST_LEVEL, shared)),
                "open {open}: {runs:?}"
            );
            assert!(!runs.contains(&(0, shared)), "open {open}: {runs:?}");
        }
        let (_, tables) = listed(dir.path())?;
        assert_eq!(tables.iter().filter(|t| t.run == shared).count(), 1, "recorded");
        Ok(())
    }

    /// The same old damage, then a repair that has to put every table of
    /// the family at level 0 (a table the manifest does not list fits no
    /// one place): the two levels' tables became one level-0 run, which no
    /// open splits again, and whose files overlap (rows `a` and `c` in one,
    /// `b` in the other). A read of row `c` searched the run as files in
    /// key order and missed it. Repair gives the shallower level a run
    /// number of its own before placing the tables.
    #[test]
    fn repair_gives_a_run_number_shared_by_two_levels_to_one_before_it_places_tables() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), leveled_f())?;
            store.put_at("f", "a", "c", 1, "a")?;
            store.put_at("f", "c", "c", 1, "c")?;
            store.compact("f")?;
            store.put_at("f", "b", "c", 2, "b")?;
            store.flush()?;
        }
        let (_, tables) = listed(dir.path())?;
        let run_at = |level: u32| {
            tables
                .iter()
                .find(|t| t.level == level)
                .map(|t| (t.run, t.file_id))
                .ok_or_else(|| format!("no table at level {level}: {tables:?}"))
        };
        let (shared, _) = run_at(compaction::LAST_LEVEL)?;
        let (_, level_0_file) = run_at(0)?;
        rewrite_run(dir.path(), 0, |_| shared)?;
        // A copy of the level-0 table under a number the manifest has not
        // reached (a compaction output whose record was lost, beside its
        // input): neither older nor newer than the level-0 run, it fits no
        // one place, so every table goes to level 0.
        let family_dir = dir.path().join("f");
        std::fs::copy(
            files::table_path(&family_dir, level_0_file),
            files::table_path(&family_dir, 900),
        )?;
        let report = repair(dir.path())?;
        let to_level_0: Vec<u64> = report.families.iter().map(|f| f.tables_to_level_0).collect();
        assert_eq!(to_level_0, [1], "the fallback placement");

        let cell = |row: &str| {
            vec![Cell {
                column: "c".into(),
                timestamp: if row == "b" { 2 } else { 1 },
                value: row.to_string().into(),
            }]
        };
        let reader = crate::ReadOnlyStore::open(dir.path())?;
        let snapshot = reader.snapshot();
        for row in ["a", "b", "c"] {
            assert_eq!(snapshot.versions("f", row, "c")?, cell(row), "read-only, row {row}");
        }
        drop(snapshot);
        drop(reader);
        let store = Store::open(dir.path(), leveled_f())?;
        for row in ["a", "b", "c"] {
            assert_eq!(store.versions("f", row, "c")?, cell(row), "row {row}");
            assert_eq!(store.get_row("f", row)?, cell(row), "row {row}");
        }
        let scanned: Vec<Vec<u8>> = store
            .scan("f", &crate::RowRange::all())?
            .map(|row| row.map(|r| r.key.to_vec()))
            .collect::<Result<_>>()?;
        assert_eq!(scanned, [b"a", b"b", b"c"]);
        let mut runs: Vec<u64> = store.tables().iter().map(|t| t.run).collect();
        runs.sort_unstable();
        runs.dedup();
        assert_eq!(runs.len(), 3, "one run per table: {:?}", store.tables());
        Ok(())
    }

    /// What `store_files` calls evidence that a folder without `CURRENT` held
    /// a store, one kind at a time, from its one listing.
    #[test]
    fn a_folder_without_current_is_a_store_by_each_kind_of_file_only_a_store_writes() -> TestResult {
        // A store that was opened: its first manifest holds more than the
        // creation's snapshot.
        let opened = tempfile::tempdir()?;
        drop(Store::open(opened.path(), StoreOptions::default().family("f"))?);
        std::fs::remove_file(opened.path().join("CURRENT"))?;
        for (name, _) in std::fs::read_dir(opened.path())?
            .filter_map(|e| e.ok())
            .map(|e| (e.file_name(), e.path()))
            .filter(|(_, p)| p.extension().is_some_and(|x| x == "log"))
        {
            std::fs::remove_file(opened.path().join(name))?;
        }
        let manifest = opened.path().join(crate::manifest::manifest_file_name(FIRST_MANIFEST));
        assert_eq!(
            store_files(opened.path())?,
            Some(format!("manifest {}", manifest.display()))
        );

        let dir = tempfile::tempdir()?;
        let d = dir.path();
        std::fs::write(d.join("notes.txt"), "")?;
        std::fs::create_dir(d.join("f"))?;
        assert_eq!(store_files(d)?, None, "a stray file and an empty family folder");
        std::fs::write(d.join("f").join("000007.sst"), "")?;
        assert_eq!(
            store_files(d)?,
            Some(format!("table file {}", d.join("f").join("000007.sst").display()))
        );
        std::fs::write(d.join("MANIFEST-000004"), "")?;
        assert_eq!(
            store_files(d)?,
            Some(format!("manifest {}", d.join("MANIFEST-000004").display()))
        );
        std::fs::write(d.join("000009.log"), "")?;
        std::fs::write(d.join("000005.log"), "")?;
        assert_eq!(
            store_files(d)?,
            Some(format!("log segment {}", log_path(d, 5).display())),
            "a log segment first, the oldest"
        );
        Ok(())
    }
}
