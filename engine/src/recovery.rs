//! Opening a store: lock, manifest, table files, then the log.
//!
//! 1. Take the `LOCK` file's OS lock, so no second process (or second handle
//!    in this process) opens the same store.
//! 2. Replay the manifest: which families exist, their options, their table
//!    files, and the oldest log segment each family still needs.
//! 3. Open every table file it lists (footer, index and filter are verified
//!    now); delete table files it does not list (left by a crash mid-flush or
//!    mid-compaction).
//! 4. Replay the log segments still needed into fresh memtables, skipping what
//!    a family already flushed. A torn last record is dropped (it was never
//!    acknowledged); damage before it is an error.
//! 5. Flush what was replayed, start a new log segment, record both in the
//!    manifest, and delete the old segments.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use cellar_fs as fs;
use cellar_sstable::Table;

use crate::batch;
use crate::compaction;
use crate::error::{Error, Result};
use crate::key;
use crate::log::{self, LogWriter, TailPolicy};
use crate::manifest::{Edit, Manifest, ManifestState};
use crate::memtable::Memtable;
use crate::options::{validate_family_name, FamilyOptions, StoreOptions};
use crate::output::{table_path, TableOutput};
use crate::store::{log_path, Inner, Install};
use crate::version::{FamilyCounters, FamilyVersion, TableFile, Version};

/// Number of the first manifest of a new store; files after it count up from here.
const FIRST_MANIFEST: u64 = 1;

fn lock_store(dir: &Path) -> Result<File> {
    let path = dir.join("LOCK");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Error::Locked { dir: dir.to_path_buf() }),
        Err(TryLockError::Error(e)) => Err(Error::io(&path, e)),
    }
}

/// Numbers of the files in `dir` named `<digits><suffix>`.
fn numbered_files(dir: &Path, suffix: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(digits) = name.strip_suffix(suffix) {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = digits.parse() {
                    out.push(n);
                }
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub(crate) fn open(dir: &Path, options: StoreOptions) -> Result<Inner> {
    for (i, (name, family_options)) in options.families.iter().enumerate() {
        validate_family_name(name)?;
        family_options.validate()?;
        if options.families.iter().take(i).any(|(n, _)| n == name) {
            return Err(Error::FamilyExists(name.clone()));
        }
    }
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
    if !options.create_if_missing && !dir.join("CURRENT").exists() {
        // Checked before taking the lock, so a folder that is not a store is left untouched.
        return Err(Error::NotAStore { dir: dir.to_path_buf() });
    }
    let lock = lock_store(dir)?;
    let (manifest, mut state) = match Manifest::open(dir) {
        Ok(opened) => opened,
        Err(Error::NotAStore { .. }) if options.create_if_missing => {
            let state = ManifestState {
                next_file_number: FIRST_MANIFEST + 1,
                ..ManifestState::default()
            };
            // The store folder's name must be durable too. `create_dir_all`
            // synced it if this open made it; one made by an open that a crash
            // cut short may never have been.
            log::sync_dir(dir.parent().unwrap_or(Path::new("")))?;
            (Manifest::create(dir, FIRST_MANIFEST, &state)?, state)
        }
        Err(e) => return Err(e),
    };
    let manifest_path = manifest.path().to_path_buf();
    let mut install = Install {
        manifest,
        state: state.clone(),
    };
    let next_file = AtomicU64::new(state.next_file_number.max(FIRST_MANIFEST + 1));

    // Declared families: add the new ones, record changed options.
    let mut edits = Vec::new();
    let mut next_id = state.families.keys().max().map_or(1, |m| m + 1);
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
    state.apply_all(&edits)?;

    // Table files.
    let mut families = BTreeMap::new();
    for f in state.families.values() {
        let family_options = FamilyOptions::decode(&f.options).ok_or_else(|| {
            Error::corruption(
                &manifest_path,
                0,
                format!("family {:?} has options that do not decode", f.name),
            )
        })?;
        validate_family_name(&f.name)
            .map_err(|_| Error::corruption(&manifest_path, 0, format!("family name {:?} is not valid", f.name)))?;
        let family_dir = dir.join(&f.name);
        // A family added at this open gets its folder here. (The new log
        // segment below fsyncs the store folder again before the manifest
        // lists the family, which covers a folder left by a crashed open.)
        fs::create_dir_all(&family_dir).map_err(|e| Error::io(&family_dir, e))?;
        let mut tables = Vec::new();
        for meta in &f.tables {
            let path = table_path(&family_dir, meta.file_id);
            if !path.exists() {
                return Err(Error::corruption(
                    &path,
                    0,
                    "table file listed in the manifest is missing",
                ));
            }
            let table = Table::open(&path)?;
            tables.push(Arc::new(TableFile::new(meta.clone(), table, path)));
        }
        // Leftovers of an interrupted flush or compaction: not in the manifest, so never acknowledged.
        for n in numbered_files(&family_dir, ".sst")? {
            if !f.tables.iter().any(|t| t.file_id == n) {
                let _ = fs::remove(&table_path(&family_dir, n));
            }
        }
        for n in numbered_files(&family_dir, ".sst.tmp")? {
            let _ = fs::remove(&family_dir.join(format!("{n:06}.sst.tmp")));
        }
        FamilyVersion::order_tables(&mut tables);
        families.insert(
            f.id,
            FamilyVersion {
                id: f.id,
                name: f.name.clone(),
                options: Arc::new(family_options),
                dir: family_dir,
                active: Arc::new(Memtable::new()),
                frozen: Vec::new(),
                tables,
                counters: Arc::new(FamilyCounters::default()),
            },
        );
    }

    // Log replay.
    let logs = numbered_files(dir, ".log")?;
    // A rotation takes a log number before the manifest records it (the next
    // file number is recorded with the next flush), so never hand one out again.
    if let Some(&newest) = logs.last() {
        next_file.fetch_max(newest + 1, std::sync::atomic::Ordering::SeqCst);
    }
    let needed = state.families.values().map(|f| f.log_number).min().unwrap_or(u64::MAX);
    let mut replayed: BTreeMap<u32, Memtable> = BTreeMap::new();
    let mut last_seq = state.last_sequence;
    for &number in &logs {
        if number < needed {
            continue;
        }
        let path = log_path(dir, number);
        let policy = if options.salvage_log {
            TailPolicy::Salvage
        } else {
            TailPolicy::TolerateTornTail
        };
        let contents = log::read_log(&path, policy)?;
        for (offset, payload) in contents.records {
            let Some((first, ops)) = batch::decode(&payload) else {
                return Err(Error::corruption(&path, offset, "log record is not a write batch"));
            };
            for (i, op) in ops.into_iter().enumerate() {
                let seq = first + i as u64;
                let Some(f) = state.families.get(&op.family) else {
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!("log names unknown family id {}", op.family),
                    ));
                };
                last_seq = last_seq.max(seq);
                if number < f.log_number {
                    continue; // already in a table file
                }
                let k = key::encode(&op.row, &op.column, op.timestamp, seq, op.kind);
                replayed.entry(op.family).or_insert_with(Memtable::new).insert(
                    &k,
                    &op.value,
                    op.timestamp,
                    seq,
                    op.kind.is_tombstone(),
                    number,
                );
            }
        }
    }

    // A fresh log segment; flush what was replayed; record it all at once.
    let log_number = next_file.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let log = LogWriter::create(&log_path(dir, log_number), log_number)?.buffered(options.sync.log_buffer());
    for (id, memtable) in &replayed {
        let Some(fam) = families.get_mut(id) else { continue };
        let run = next_file.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut out = TableOutput::new(&fam.dir, &next_file, &fam.options, run, false);
        // Every replayed write is visible to every reader of the opened store.
        compaction::flush_memtable(memtable, &fam.options, u64::MAX, crate::store::now_ms(), &mut out)?;
        for file in out.finish()? {
            fam.counters
                .flush_bytes
                .fetch_add(file.meta.size, std::sync::atomic::Ordering::Relaxed);
            edits.push(Edit::AddTable {
                family: *id,
                table: file.meta.clone(),
            });
            fam.tables.push(Arc::new(file));
        }
        FamilyVersion::order_tables(&mut fam.tables);
    }
    for id in families.keys() {
        edits.push(Edit::SetLogNumber {
            family: *id,
            log_number,
        });
    }
    edits.push(Edit::LastSequence(last_seq));
    edits.push(Edit::NextFileNumber(
        next_file.load(std::sync::atomic::Ordering::SeqCst),
    ));
    let mut durable = install.state.clone();
    durable.apply_all(&edits)?;
    install.manifest.append(&edits)?;
    install.state = durable;
    for number in logs {
        if number < log_number {
            let _ = fs::remove(&log_path(dir, number));
        }
    }

    let version = Version {
        by_name: families.values().map(|f| (f.name.clone(), f.id)).collect(),
        families: families.into_iter().map(|(id, f)| (id, Arc::new(f))).collect(),
    };
    let next = next_file.load(std::sync::atomic::Ordering::SeqCst);
    Ok(Inner::new(
        dir.to_path_buf(),
        options,
        lock,
        version,
        last_seq,
        next,
        log,
        install,
    ))
}
