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
//! What it sees is the store at one moment. Beside a running writer that
//! moment can slip while it reads: a compaction deletes a table the manifest
//! it read still lists, a flush moves the log on (the replay then finds a gap
//! in the sequence numbers). Most such races show as a file that has gone or
//! a replay that does not fit, but not all: a flush that deletes the segment
//! the manifest read still needs, when the segment after it is still empty,
//! leaves a log that replays cleanly and lacks the flushed writes, in no
//! table the manifest read lists. So an attempt also checks, at its end,
//! that the oldest segment the manifest it read needs was among the
//! segments it found, or else that the manifest is the one it read at its
//! start (the same file, the same length). A writer deletes segments oldest
//! first, each only after the manifest records that it is not needed: a
//! needed segment that is there proves that none after it had gone, and an
//! unchanged manifest proves that nothing the attempt needed was deleted
//! before it looked. (An older store's family may need segment 0, which
//! never exists: then only the second proof is possible.) Any sign of a race starts the
//! open again from the manifest, with a growing pause, up to [`ATTEMPTS`]
//! times. An error while the manifest stays unchanged is no race (a writer
//! changes the manifest before it deletes anything): it is damage, and is
//! reported at once. A torn record at
//! the end of the newest segment is a write in progress and is left out, as
//! in any open.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cellar_sstable::{BlockCache, Table};

use super::replay;
use crate::error::{Error, Result};
use crate::files::{pending_path, table_path};
use crate::log::{self, ReadMode};
use crate::manifest::{self, FamilyState, ManifestState};
use crate::options::FamilyOptions;
use crate::version::{FamilyVersion, TableFile, Version};

/// How many times the open starts again when a writer moved the store on
/// while it read, and how long it waits before the first retry (doubling up
/// to [`MAX_PAUSE`]). An attempt costs a replay of the log and an open of
/// every table; beside a writer that flushes every few milliseconds a few
/// attempts in a row can overlap a flush, so there are many (about 2.5 s of
/// pauses in all before the open gives up).
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
    let state = read_manifest(&start.0)?;
    #[cfg(test)]
    hook::run(dir);
    let mut replayed = replay::replay_logs(dir, &state, false)?;
    let mut families = std::collections::BTreeMap::new();
    for family in state.families.values() {
        let mut version = open_family(dir, family, cache)?;
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

/// Replays the manifest at `path`, without opening it for appending.
fn read_manifest(path: &Path) -> Result<ManifestState> {
    let contents = log::read_log(path, ReadMode::Strict { may_end_torn: true })?;
    if contents.records.is_empty() {
        return Err(Error::corruption(path, 0, "the manifest holds no records"));
    }
    let mut state = ManifestState::default();
    for (offset, payload) in &contents.records {
        manifest::apply_record(&mut state, path, *offset, payload)?;
    }
    Ok(state)
}

/// One family with the table files the manifest lists, under their name or,
/// if the writer has not renamed them yet, their pending name.
fn open_family(dir: &Path, family: &FamilyState, cache: &BlockCache) -> Result<FamilyVersion> {
    let family_dir = dir.join(&family.name);
    let options = FamilyOptions::decode(&family.options).ok_or_else(|| {
        Error::corruption(
            &family_dir,
            0,
            format!("family {:?} has options that do not decode", family.name),
        )
    })?;
    let mut tables = Vec::new();
    for meta in &family.tables {
        let listed = table_path(&family_dir, meta.file_id);
        let path = if listed.exists() {
            listed
        } else {
            pending_path(&family_dir, meta.file_id)
        };
        let table = Table::open_with_cache(&path, cache)?;
        tables.push(Arc::new(TableFile::new(meta.clone(), table, path)));
    }
    Ok(FamilyVersion::opened(
        family.id,
        family.name.clone(),
        options,
        family_dir,
        tables,
    ))
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
