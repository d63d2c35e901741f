//! Opening a store to read it only: recovery's reading steps, none of its
//! writing ones.
//!
//! A store opened for writing takes the `LOCK`, and opening it replays the
//! log, flushes what the log held, starts a new segment, records all that in
//! the manifest and deletes what it proved obsolete. A read-only open
//! (RocksDB's `OpenForReadOnly`) does the reading half: it replays the
//! manifest, opens the table files it lists and replays the log segments
//! still needed into memtables kept in memory. It takes no lock and creates,
//! renames, deletes or writes nothing, so it works beside a process that has
//! the store open for writing, and on a copy without write permission.
//!
//! What it sees is the store at one moment: the one the manifest it reads
//! describes. Beside a running writer the files of that moment can go while
//! it reads: a compaction deletes the tables it merged, a flush deletes the
//! log segment it wrote to a table, each as soon as the manifest records
//! that they are not needed. So an attempt first opens every log segment
//! and every finished table file in the folder ([`Held`]), and only then
//! reads the manifest. A writer deletes a file only after the manifest
//! says it is not needed, so whatever the manifest read needs either was
//! there when the attempt opened it, and stays readable (on Unix an open
//! file, and a mapped one, outlives its unlink), or was made after: a
//! segment the writer started since (opened as soon as the manifest's bytes
//! are read), or a table it wrote since (opened by name). Only one of those
//! can be gone again by then, when the writer made and deleted it within
//! that moment.
//!
//! So an attempt also checks, at its end, that the oldest segment the
//! manifest it read needs was among the segments it holds, or else that the
//! manifest is the one it read at its start (the same file, the same
//! length). A writer deletes segments oldest first, each only after the
//! manifest records that it is not needed: a needed segment that is held
//! proves that none after it had gone, and an unchanged manifest proves
//! that nothing the attempt needed was deleted before it looked. (An older
//! store's family may need segment 0, which never exists: then only the
//! second proof is possible.) Any sign of a race (that check, a file gone,
//! a replay that does not fit the manifest) starts the open again, with a
//! growing pause, up to [`ATTEMPTS`] times. An error while the manifest
//! stays unchanged is no race (a writer changes the manifest before it
//! deletes anything): it is damage, and is reported at once. A torn record
//! at the end of the newest segment is a write in progress and is left out,
//! as in any open.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cellar_sstable::{BlockCache, Table};

use super::replay;
use crate::error::{Error, Result};
use crate::files::{self, log_path, pending_path, table_path, TableName};
use crate::log::{self, ReadMode};
use crate::manifest::{self, FamilyState, ManifestState};
use crate::options::FamilyOptions;
use crate::version::{FamilyVersion, TableFile, Version};

/// How many times the open starts again when a writer moved the store on
/// while it read, and how long it waits before the first retry (doubling up
/// to [`MAX_PAUSE`]). With the files held open, a retry takes a writer that
/// makes and deletes a file within one attempt; the pauses (about 2.5 s in
/// all before the open gives up) let a burst of those pass.
const ATTEMPTS: u32 = 40;
const PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(64);
/// Attempts when the manifest `CURRENT` names cannot be read at all.
const FIRST_READ_ATTEMPTS: u32 = 5;

/// The store in `dir` as its files describe it: every family with its table
/// files and, in memtables, the writes only the log holds; and the last
/// sequence number used.
pub(crate) fn open(dir: &Path) -> Result<(Version, u64)> {
    if !dir.is_dir() {
        return Err(Error::NotAStore { dir: dir.to_path_buf() });
    }
    // Compressed blocks are decompressed once into a cache of the default
    // size, as in a writable open; raw blocks are read from the map.
    let cache = BlockCache::new(crate::options::StoreOptions::default().block_cache_bytes);
    let mut attempt = 1;
    let mut pause = PAUSE;
    loop {
        let outcome = read_once(dir, &cache);
        let race = match &outcome {
            Ok(Attempt::Moved(_)) => true,
            // Damage leaves the manifest as it is: reported at once.
            Ok(Attempt::Failed(e, moved)) => *moved && may_be_a_race(e),
            // `CURRENT` named a manifest a rewrite has just removed.
            Err(e) => attempt < FIRST_READ_ATTEMPTS && may_be_a_race(e),
            Ok(Attempt::Read(..)) => false,
        };
        if !race || attempt == ATTEMPTS {
            return match outcome? {
                Attempt::Read(version, sequence) => Ok((version, sequence)),
                Attempt::Failed(e, _) => Err(e),
                Attempt::Moved(manifest) => Err(Error::io(
                    &manifest,
                    std::io::Error::new(
                        std::io::ErrorKind::ResourceBusy,
                        format!("the store changed during each of {ATTEMPTS} attempts to read it"),
                    ),
                )),
            };
        }
        attempt += 1;
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// What one attempt read.
enum Attempt {
    /// The store as the manifest read at the start describes it.
    Read(Version, u64),
    /// The manifest (this one) changed while the attempt read: what it read
    /// may mix two moments of the store.
    Moved(PathBuf),
    /// The attempt failed with this error; whether the manifest changed
    /// while it read (if not, no writer caused the error).
    Failed(Error, bool),
}

/// Which manifest `CURRENT` names and how long it is: a writer changes one
/// or the other with every version it records.
fn manifest_mark(dir: &Path) -> Result<(PathBuf, u64)> {
    let path = manifest::live_manifest(dir)?;
    let len = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
    Ok((path, len))
}

/// Whether a writer moving the store on could have caused the error: a file
/// gone, or a replay that does not fit the manifest read before it.
fn may_be_a_race(e: &Error) -> bool {
    matches!(e, Error::Corruption { .. })
        || matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// One attempt: the manifest `CURRENT` names, the log, the tables. An
/// error before the manifest was found is returned as it is; a later one
/// says whether the manifest changed meanwhile.
fn read_once(dir: &Path, cache: &BlockCache) -> Result<Attempt> {
    let start = manifest_mark(dir)?;
    match read_at(dir, cache, &start) {
        Err(e) => {
            let moved = manifest_mark(dir).map_or(true, |end| end != start);
            Ok(Attempt::Failed(e, moved))
        }
        attempt => attempt,
    }
}

fn read_at(dir: &Path, cache: &BlockCache, start: &(PathBuf, u64)) -> Result<Attempt> {
    // The files first, then the manifest (see the module documentation).
    let mut held = Held::open(dir, cache)?;
    let manifest = std::fs::read(&start.0).map_err(|e| Error::io(&start.0, e))?;
    // The segments a writer started since the first look, at once: one the
    // manifest just read needs can go as soon as the writer flushes again.
    held.open_new_segments()?;
    let state = decode_manifest(&start.0, manifest)?;
    #[cfg(test)]
    hook::run(dir);
    let mut replayed = replay::replay_segments(dir, &state, false, &held)?;
    let mut families = std::collections::BTreeMap::new();
    // Run numbers no listed table has, for a run shared by two levels.
    let mut spare_run = state.first_unused_number();
    for family in state.families.values() {
        let mut version = open_family(dir, family, cache, &mut held, &mut spare_run)?;
        if let Some(memtable) = replayed.memtables.remove(&family.id) {
            version.active = Arc::new(memtable);
        }
        families.insert(family.id, Arc::new(version));
    }
    let version = Version {
        by_name: families.values().map(|f| (f.name.clone(), f.id)).collect(),
        families,
    };
    // A changed manifest matters only if the writer may have deleted a
    // segment this attempt needed before it listed the segments. Segments go
    // oldest first, so that happened if and only if the oldest one it needed
    // was not there (see the module documentation).
    let needed = state.oldest_log_needed();
    let listed_needed = needed.is_none_or(|n| replayed.segments.contains(&n));
    if !listed_needed && manifest_mark(dir)? != *start {
        return Ok(Attempt::Moved(start.0.clone()));
    }
    Ok(Attempt::Read(version, replayed.last_seq))
}

/// Replays the manifest read from `path`.
fn decode_manifest(path: &Path, data: Vec<u8>) -> Result<ManifestState> {
    let contents = log::decode_log(path, Bytes::from(data), ReadMode::Strict { may_end_torn: true })?;
    if contents.records.is_empty() {
        return Err(Error::corruption(path, 0, "the manifest holds no records"));
    }
    let mut state = ManifestState::default();
    for (offset, payload) in &contents.records {
        manifest::apply_record(&mut state, path, *offset, payload)?;
    }
    Ok(state)
}

/// One family with the table files the manifest lists: those held open, and
/// the others (made since) under their name or, if the writer has not renamed
/// them yet, their pending name. A run number its tables at two levels
/// share (left by an older cellar) is given to the deepest level only, in
/// memory, with numbers from `spare_run` on, as a writable open does on
/// disk (`split_shared_runs`).
fn open_family(
    dir: &Path,
    family: &FamilyState,
    cache: &BlockCache,
    held: &mut Held,
    spare_run: &mut u64,
) -> Result<FamilyVersion> {
    let family_dir = dir.join(&family.name);
    let options = FamilyOptions::decode(&family.options).ok_or_else(|| {
        Error::corruption(
            &family_dir,
            0,
            format!("family {:?} has options that do not decode", family.name),
        )
    })?;
    let split = super::runs_to_split(family.tables.iter(), || {
        let run = *spare_run;
        *spare_run = run.saturating_add(1);
        run
    });
    let mut tables = Vec::new();
    for meta in &family.tables {
        let mut meta = meta.clone();
        if let Some(&run) = split.get(&(meta.run, meta.level)) {
            meta.run = run;
        }
        if let Some((table, path)) = held.tables.remove(&(family.name.clone(), meta.file_id)) {
            tables.push(Arc::new(TableFile::new(meta, table, path)));
            continue;
        }
        let path = listed_table_path(&family_dir, meta.file_id)?;
        let table = Table::open_with_cache(&path, cache)?;
        tables.push(Arc::new(TableFile::new(meta, table, path)));
    }
    Ok(FamilyVersion::opened(
        family.id,
        family.name.clone(),
        options,
        family_dir,
        tables,
    ))
}

/// Where a table file the manifest lists is: under its name or, if the
/// writer has not renamed it yet, its pending name. The name is looked at
/// again last, since a rename between the first two looks moves the file
/// there. Under neither name, it is missing, as a writable open says (a
/// writer deletes a table only after the manifest stops listing it).
fn listed_table_path(family_dir: &Path, number: u64) -> Result<PathBuf> {
    let listed = table_path(family_dir, number);
    let pending = pending_path(family_dir, number);
    if let Some(path) = [&listed, &pending, &listed].into_iter().find(|path| path.exists()) {
        return Ok(path.clone());
    }
    Err(Error::corruption(
        &listed,
        0,
        "table file listed in the manifest is missing",
    ))
}

/// The files an attempt opened before it read the manifest: every log
/// segment and every finished table file then in the store's folders (see
/// the module documentation). The tables the manifest does not list are
/// dropped with it, unread.
struct Held {
    dir: PathBuf,
    segments: BTreeMap<u64, File>,
    /// Table files by family folder and number, with their paths.
    tables: HashMap<(String, u64), (Table, PathBuf)>,
}

impl Held {
    /// Opens the files in `dir`'s folders. A file that goes before it is
    /// opened is one the manifest, read next, no longer needs; a table that
    /// does not open is left to be opened again by name if the manifest
    /// lists it, and report its error then.
    fn open(dir: &Path, cache: &BlockCache) -> Result<Held> {
        let mut held = Held {
            dir: dir.to_path_buf(),
            segments: BTreeMap::new(),
            tables: HashMap::new(),
        };
        for folder in files::family_folders(dir)? {
            for (name, path) in files::table_files(&dir.join(&folder))? {
                if matches!(name, TableName::Unfinished(_)) {
                    continue;
                }
                if let Ok(table) = Table::open_with_cache(&path, cache) {
                    held.tables.insert((folder.clone(), name.number()), (table, path));
                }
            }
        }
        // The segments last, as close to the manifest read as can be.
        held.open_new_segments()?;
        Ok(held)
    }

    /// Opens the segments newer than every one held: those a writer started
    /// since the last look.
    fn open_new_segments(&mut self) -> Result<()> {
        let newest = self.segments.keys().next_back().copied();
        for number in files::log_numbers(&self.dir)? {
            if newest.is_some_and(|n| number <= n) {
                continue;
            }
            let path = log_path(&self.dir, number);
            match File::open(&path) {
                Ok(file) => {
                    self.segments.insert(number, file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        Ok(())
    }

    fn segment(&self, number: u64) -> Result<&File> {
        self.segments.get(&number).ok_or_else(|| {
            let path = log_path(&self.dir, number);
            Error::io(&path, std::io::Error::from(std::io::ErrorKind::NotFound))
        })
    }
}

impl replay::Segments for Held {
    fn numbers(&self) -> Vec<u64> {
        self.segments.keys().copied().collect()
    }

    fn len(&self, number: u64) -> Result<u64> {
        let file = self.segment(number)?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(log_path(&self.dir, number), e))?
            .len();
        Ok(len)
    }

    fn read(&self, number: u64) -> Result<Bytes> {
        let mut file = self.segment(number)?;
        let mut data = Vec::new();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut data))
            .map_err(|e| Error::io(log_path(&self.dir, number), e))?;
        Ok(Bytes::from(data))
    }
}

/// A point where a unit test runs code in a read-only open of a given
/// folder, after the open read the manifest and before it reads the log (see
/// `store::hooks` for why tests need such points).
#[cfg(test)]
pub(crate) mod hook {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use parking_lot::Mutex;

    type Callback = Arc<dyn Fn() + Send + Sync>;

    static CALLBACKS: Mutex<Vec<(PathBuf, Callback)>> = Mutex::new(Vec::new());

    /// Runs `callback` each time a read-only open of `dir` has read the manifest.
    pub(crate) fn set(dir: &Path, callback: impl Fn() + Send + Sync + 'static) {
        CALLBACKS.lock().push((dir.to_path_buf(), Arc::new(callback)));
    }

    /// Forgets the callbacks of `dir`.
    pub(crate) fn clear(dir: &Path) {
        CALLBACKS.lock().retain(|(d, _)| d != dir);
    }

    pub(super) fn run(dir: &Path) {
        let callbacks: Vec<Callback> = CALLBACKS
            .lock()
            .iter()
            .filter(|(d, _)| d == dir)
            .map(|(_, c)| c.clone())
            .collect();
        for callback in callbacks {
            callback();
        }
    }
}
