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
//! in the sequence numbers). Every such race shows as a file that has gone or
//! a replay that does not fit, and the open starts again from the manifest,
//! a few times, before it reports the error. A torn record at the end of the
//! newest segment is a write in progress and is left out, as in any open.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cellar_sstable::{BlockCache, Table};

use super::replay;
use crate::error::{Error, Result};
use crate::files::{pending_path, table_path};
use crate::log::{self, ReadMode};
use crate::manifest::{self, FamilyState, ManifestState};
use crate::memtable::Memtable;
use crate::options::FamilyOptions;
use crate::version::{FamilyCounters, FamilyVersion, TableFile, Version};

/// How many times the open starts again when a writer moved the store on
/// while it read, and how long it waits before each.
const ATTEMPTS: u32 = 5;
const PAUSE: Duration = Duration::from_millis(20);

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
    loop {
        match read_once(dir, &cache) {
            Err(e) if attempt < ATTEMPTS && may_be_a_race(&e) => {
                attempt += 1;
                std::thread::sleep(PAUSE);
            }
            result => return result,
        }
    }
}

/// Whether a writer moving the store on could have caused the error: a file
/// gone, or a replay that does not fit the manifest read before it.
fn may_be_a_race(e: &Error) -> bool {
    matches!(e, Error::Corruption { .. })
        || matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

fn read_once(dir: &Path, cache: &BlockCache) -> Result<(Version, u64)> {
    let state = read_manifest(dir)?;
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
    Ok((version, replayed.last_seq))
}

/// Replays the manifest `CURRENT` names, without opening it for appending.
fn read_manifest(dir: &Path) -> Result<ManifestState> {
    let path = manifest::live_manifest(dir)?;
    let contents = log::read_log(&path, ReadMode::Strict { may_end_torn: true })?;
    if contents.records.is_empty() {
        return Err(Error::corruption(&path, 0, "the manifest holds no records"));
    }
    let mut state = ManifestState::default();
    for (offset, payload) in &contents.records {
        manifest::apply_record(&mut state, &path, *offset, payload)?;
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
    FamilyVersion::order_tables(&mut tables);
    Ok(FamilyVersion {
        id: family.id,
        name: family.name.clone(),
        options: Arc::new(options),
        dir: family_dir,
        active: Arc::new(Memtable::new()),
        frozen: Vec::new(),
        tables,
        counters: Arc::new(FamilyCounters::default()),
    })
}
