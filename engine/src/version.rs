//! A version: the set of memtables and table files that make up each family at
//! one moment.
//!
//! Versions are immutable. A flush or a compaction builds a new version and
//! swaps it in; a reader clones an `Arc` of the current version and reads from it
//! for as long as it likes, so reads never block writers or compactions. A table
//! file replaced by a compaction is only marked obsolete: it is deleted when the
//! last version that lists it (the last reader or snapshot holding it) is
//! dropped, under any of its listings (a file moved down a level is listed
//! again).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cellar_sstable::Table;

use crate::manifest::TableMeta;
use crate::memtable::Memtable;
use crate::options::FamilyOptions;

/// An open table file and what the manifest knows of it: one *listing* of
/// the file. A file moved down a level without a rewrite is listed again
/// ([`TableFile::moved`]), and versions older than the move keep the first
/// listing: both listings share the file on disk ([`DiskFile`]).
pub(crate) struct TableFile {
    pub meta: TableMeta,
    pub table: Arc<Table>,
    pub path: PathBuf,
    disk: Arc<DiskFile>,
}

/// The file on disk behind every listing of it: deleted once it is marked
/// obsolete and the last listing (the last version, reader or snapshot
/// holding one) is dropped. Marked through the newest listing, it still
/// stays for a snapshot taken before a move, which holds the first.
struct DiskFile {
    path: PathBuf,
    obsolete: AtomicBool,
}

impl Drop for DiskFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            // The manifest no longer lists this file, so a failure here only leaves
            // garbage that the next open removes; nothing to report.
            let _ = cellar_fs::remove(&self.path);
        }
    }
}

impl TableFile {
    pub fn new(meta: TableMeta, table: Table, path: PathBuf) -> TableFile {
        TableFile {
            meta,
            table: Arc::new(table),
            disk: Arc::new(DiskFile {
                path: path.clone(),
                obsolete: AtomicBool::new(false),
            }),
            path,
        }
    }

    /// The same file at another level and run (a compaction that moves a
    /// file down a level without rewriting it): it shares the open table
    /// and the file on disk.
    pub fn moved(&self, level: u32, run: u64) -> TableFile {
        let mut meta = self.meta.clone();
        meta.level = level;
        meta.run = run;
        TableFile {
            meta,
            table: Arc::clone(&self.table),
            path: self.path.clone(),
            disk: Arc::clone(&self.disk),
        }
    }

    /// What compaction planning needs to know of the file.
    pub fn shape(&self) -> crate::compaction::FileShape<'_> {
        crate::compaction::FileShape {
            file_id: self.meta.file_id,
            run: self.meta.run,
            level: self.meta.level,
            size: self.meta.size,
            first_row: crate::key::row_part(&self.meta.first_key).unwrap_or(&self.meta.first_key),
            last_row: crate::key::row_part(&self.meta.last_key).unwrap_or(&self.meta.last_key),
        }
    }

    /// Marks the file for deletion once no version refers to it under any
    /// of its listings.
    pub fn mark_obsolete(&self) {
        self.disk.obsolete.store(true, Ordering::Release);
    }
}

/// One family's sources at one moment.
#[derive(Clone)]
pub(crate) struct FamilyVersion {
    pub id: u32,
    pub name: String,
    pub options: Arc<FamilyOptions>,
    pub dir: PathBuf,
    /// The memtable receiving writes.
    pub active: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    pub frozen: Vec<Arc<Memtable>>,
    /// Table files, newest run first (level 0 by age, then each deeper
    /// level); inside a run, in key order.
    pub tables: Vec<Arc<TableFile>>,
    /// Counters shared by every version of this family.
    pub counters: Arc<FamilyCounters>,
}

/// What a family has written, counted as it happens (shared across versions).
#[derive(Default, Debug)]
pub(crate) struct FamilyCounters {
    pub user_entries: AtomicU64,
    pub user_bytes: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub settles: AtomicU64,
    pub settle_bytes_written: AtomicU64,
}

impl FamilyVersion {
    /// A family as an open finds it: its table files (put in read order
    /// here) and an empty memtable, before the log is replayed into it.
    pub fn opened(
        id: u32,
        name: String,
        options: FamilyOptions,
        dir: PathBuf,
        mut tables: Vec<Arc<TableFile>>,
    ) -> Self {
        FamilyVersion::order_tables(&mut tables);
        FamilyVersion {
            id,
            name,
            active: Arc::new(Memtable::for_family(&options)),
            options: Arc::new(options),
            dir,
            frozen: Vec::new(),
            tables,
            counters: Arc::new(FamilyCounters::default()),
        }
    }

    /// Puts table files in read order: level 0's runs newest first (by the
    /// largest sequence number they hold), then each deeper level (a leveled
    /// family's, or one altered from leveled to size-tiered; every file of a
    /// family that was always size-tiered is at level 0); the files of one
    /// run by key. For any one row, this is newest first: a deeper level only
    /// ever receives a row's entries from the level above, and a size-tiered
    /// merge writes at the level of its newest input.
    pub fn order_tables(tables: &mut [Arc<TableFile>]) {
        let mut run_max: HashMap<u64, u64> = HashMap::new();
        for t in tables.iter() {
            let e = run_max.entry(t.meta.run).or_insert(0);
            *e = (*e).max(t.meta.max_seq);
        }
        tables.sort_by(|a, b| {
            let ra = run_max.get(&a.meta.run).copied().unwrap_or(0);
            let rb = run_max.get(&b.meta.run).copied().unwrap_or(0);
            a.meta
                .level
                .cmp(&b.meta.level)
                .then(rb.cmp(&ra))
                .then(b.meta.run.cmp(&a.meta.run))
                .then(a.meta.first_key.cmp(&b.meta.first_key))
        });
    }

    /// The runs, newest first, each as the files it holds.
    pub fn runs(&self) -> Vec<Vec<Arc<TableFile>>> {
        let mut runs: Vec<Vec<Arc<TableFile>>> = Vec::new();
        for t in &self.tables {
            match runs.last_mut() {
                Some(run) if run.first().map(|f| f.meta.run) == Some(t.meta.run) => run.push(t.clone()),
                _ => runs.push(vec![t.clone()]),
            }
        }
        runs
    }
}

/// Every family's sources at one moment.
#[derive(Clone, Default)]
pub(crate) struct Version {
    pub families: BTreeMap<u32, Arc<FamilyVersion>>,
    pub by_name: HashMap<String, u32>,
}

impl Version {
    pub fn family(&self, name: &str) -> Option<&Arc<FamilyVersion>> {
        self.by_name.get(name).and_then(|id| self.families.get(id))
    }

    /// A copy of this version with one family replaced.
    pub fn with_family(&self, family: FamilyVersion) -> Version {
        let mut next = self.clone();
        next.by_name.insert(family.name.clone(), family.id);
        next.families.insert(family.id, Arc::new(family));
        next
    }
}
