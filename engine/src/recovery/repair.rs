//! Repair: rebuild a store's manifest from the files it still has.
//!
//! When a store does not open because its manifest (or a log segment) is
//! damaged, the data is usually still there: every table file carries its
//! own key range and entries, and every log record its own checksum. Repair
//! (LevelDB's `RepairDB`, RocksDB's `ldb repair`) builds a new manifest from
//! those pieces:
//!
//! 1. Read what the old manifest still says, up to its first damage: family
//!    names, ids and options, each table's run, the log segments already
//!    flushed, and the next file number.
//! 2. Families: those of the old manifest, then every other family folder
//!    (default options).
//! 3. Table files: each one is read back whole (every block's checksum) and
//!    scanned for its key, sequence and timestamp bounds. A file that does
//!    not read back is moved to `lost/`. So is one the old manifest proves
//!    obsolete (a compaction input whose deletion did not reach the disk),
//!    whose old entries could otherwise come back.
//! 4. Log segments: every record that still decodes is replayed, skipping
//!    damaged ranges (reading on at the next checksum-valid record), into
//!    memtables, which are then written as table files. A segment with damage
//!    is moved to `lost/` whole.
//! 5. Each table the old manifest did not list (nor, so, place) goes to
//!    level 0 if its sequence numbers say it is newer than what it would be
//!    read before; else every table of its family goes to level 0
//!    ([`super::placement`]). First, a run number the old manifest gives
//!    tables at two levels goes to the deepest only, as an open does.
//! 6. A new manifest holding all of it becomes live (`CURRENT` is switched
//!    atomically, last); the old manifest goes to `lost/`; the segments read
//!    whole are deleted, their records being in tables now.
//!
//! Nothing is ever deleted that was not read back: what repair cannot use,
//! it keeps aside. What it cannot know is said in the report: log records of
//! a family id no readable manifest names, and without a readable manifest,
//! whether a segment still on disk was already flushed (its records are then
//! replayed again; a write it holds that a later, compacted-away tombstone
//! had deleted would come back).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cellar_sstable::{BlockCache, Table};

use super::lock_store;
use super::placement::{self, Found};
use crate::batch;
use crate::error::{Error, Result};
use crate::files::{self, log_path, StoreListing, TableName};
use crate::key;
use crate::log::{self, ReadMode};
use crate::manifest::{self, FamilyState, ManifestState, TableMeta};
use crate::memtable::Memtable;
use crate::options::FamilyOptions;
use crate::output::{PendingTable, TableOutput};

/// A file repair could not use, and where it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostFile {
    /// Where it was.
    pub from: PathBuf,
    /// Where it is now, in the store's `lost/` folder.
    pub to: PathBuf,
    /// Why it was not used.
    pub why: String,
}

/// A range of a log segment that did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedLog {
    /// The segment.
    pub file: PathBuf,
    /// Offset of the first byte skipped.
    pub offset: u64,
    /// Bytes skipped.
    pub bytes: u64,
    /// Why.
    pub why: String,
}

/// One family as repair rebuilt it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairedFamily {
    /// Its name.
    pub name: String,
    /// Whether the old manifest knew it (else it came from its folder, with
    /// default options).
    pub from_manifest: bool,
    /// Table files kept.
    pub tables: u64,
    /// Entries in them.
    pub table_entries: u64,
    /// Entries replayed from the log into new table files.
    pub log_entries: u64,
    /// Tables the old manifest had below level 0 that repair put in level 0,
    /// because a table it did not list could not be placed among them by
    /// its sequence numbers (the family's next compaction merges them all).
    pub tables_to_level_0: u64,
}

/// What [`crate::Store::repair`] recovered, and what it did not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The old manifest, and how far it was read: `None` if there was none
    /// or `CURRENT` did not name one.
    pub old_manifest: Option<PathBuf>,
    /// Why the old manifest could not be read to its end, if it could not.
    pub manifest_damage: Option<String>,
    /// The families, by id.
    pub families: Vec<RepairedFamily>,
    /// Log records replayed, and the segments they came from.
    pub log_records: u64,
    /// Log segments read.
    pub log_segments: u64,
    /// Log records that name a family no readable manifest names.
    pub orphan_log_records: u64,
    /// Damaged ranges of log segments.
    pub skipped_log: Vec<SkippedLog>,
    /// Files moved to `lost/`.
    pub lost: Vec<LostFile>,
    /// The new manifest.
    pub new_manifest: PathBuf,
}

/// What the old manifest still says.
#[derive(Default)]
struct OldManifest {
    path: Option<PathBuf>,
    state: ManifestState,
    /// The state is the whole manifest's (no damage, nothing cut).
    whole: bool,
}

/// Rebuilds the manifest of the store in `dir` (see the module's steps).
pub(crate) fn repair(dir: &Path) -> Result<RepairReport> {
    // Checked before the lock, whose file would otherwise be left behind in
    // a folder that holds no store (a mistyped --dir): no manifest, log
    // segment or family folder. The survey lists the folder again under the
    // lock, as this listing may be stale by then: a store that holds the
    // lock while it is awaited goes on writing log segments and manifests.
    if !dir.is_dir() || StoreListing::read(dir)?.is_empty() {
        return Err(Error::NotAStore { dir: dir.to_path_buf() });
    }
    let _lock = lock_store(dir)?;
    let mut repair = Repair::survey(dir)?;
    repair.gather_families();
    repair.gather_tables()?;
    let log = repair.replay_logs()?;
    let mut new_tables = repair.write_log_tables(&log.memtables)?;
    repair.place_tables(&mut new_tables);
    repair.write_manifest(&new_tables)?;
    repair.publish(new_tables)?;
    repair.set_aside(log)?;
    Ok(repair.finish())
}

/// A repair in progress.
struct Repair {
    dir: PathBuf,
    report: RepairReport,
    /// What the old manifest still says.
    old: OldManifest,
    /// The log segments in the folder, oldest first.
    logs: Vec<u64>,
    /// The family folders in the store folder.
    folders: Vec<String>,
    /// The families, by id.
    families: BTreeMap<u32, Family>,
    /// Above every file number seen: where new files start.
    next_number: u64,
    /// The largest sequence number seen in a table, a log or the old manifest.
    last_seq: u64,
}

/// What replaying the log gave.
struct ReplayedLog {
    memtables: BTreeMap<u32, Memtable>,
    /// Segments read to their end: deleted once their records are in tables.
    read_whole: Vec<PathBuf>,
    /// Segments with damage: kept aside.
    damaged: Vec<PathBuf>,
}

impl Repair {
    /// Step 1: what the folder holds, and what the old manifest still says.
    fn survey(dir: &Path) -> Result<Repair> {
        let StoreListing {
            manifests,
            logs,
            families: folders,
        } = StoreListing::read(dir)?;
        let mut report = RepairReport::default();
        let old = read_old_manifest(dir, &mut report);
        // Past every number in use: an older cellar did not record the run
        // number a move took, which the old manifest lists all the same.
        let next_number = manifests
            .iter()
            .chain(&logs)
            .map(|n| n.saturating_add(1))
            .fold(old.state.first_unused_number().max(2), u64::max);
        let last_seq = old.state.last_sequence;
        Ok(Repair {
            dir: dir.to_path_buf(),
            report,
            old,
            logs,
            folders,
            families: BTreeMap::new(),
            next_number,
            last_seq,
        })
    }

    /// Step 2: the old manifest's families, then the other family folders.
    fn gather_families(&mut self) {
        for f in self.old.state.families.values() {
            let options = FamilyOptions::decode(&f.options).unwrap_or_default();
            self.families
                .insert(f.id, Family::new(f.id, &f.name, options, true, &self.dir));
        }
        for name in &self.folders {
            // A dropped family's folder holds files the next open deletes
            // (the new manifest keeps the record of the drop): not a family.
            // Unless it holds a table numbered from the old manifest's next
            // file number on: no record the old manifest still has made that
            // one, so it is not the dropped family's (whose files were all
            // listed before its drop) but a family created again under the
            // name by a record the damage took. It is a family; the dropped
            // one's files in its folder go to `lost/` (see `gather_tables`).
            let dropped = self.old.state.dropped.values().any(|d| d == name)
                && !self.holds_a_table_from(name, self.old.state.next_file_number);
            if !dropped && !self.families.values().any(|f| f.name == *name) {
                // Never an id a dropped family had: the log may hold writes under it.
                let id = self
                    .families
                    .keys()
                    .chain(self.old.state.dropped.keys())
                    .max()
                    .map_or(1, |m| m + 1);
                let family = Family::new(id, name, FamilyOptions::default(), false, &self.dir);
                self.families.insert(id, family);
            }
        }
    }

    /// Whether folder `name` holds a table file numbered `number` or above
    /// (or cannot be listed: then it is kept, to be looked at).
    fn holds_a_table_from(&self, name: &str, number: u64) -> bool {
        files::table_files(&self.dir.join(name))
            .map_or(true, |tables| tables.iter().any(|(table, _)| table.number() >= number))
    }

    /// Step 3: every table file read back whole and scanned; what does not
    /// read back (or the old manifest proves obsolete) set aside.
    fn gather_tables(&mut self) -> Result<()> {
        let old = &self.old;
        for family in self.families.values_mut() {
            cellar_fs::create_dir_all(&family.dir).map_err(|e| Error::io(&family.dir, e))?;
            let known = old.state.families.get(&family.id).filter(|f| f.name == family.name);
            for (name, path) in files::table_files(&family.dir)? {
                self.next_number = self.next_number.max(name.number() + 1);
                let listed = known.and_then(|f| f.tables.iter().find(|t| t.file_id == name.number()));
                let why_not = match name {
                    TableName::Unfinished(_) => Some("a table file cut short while being written".to_string()),
                    TableName::Listed(n)
                        if old.path.is_some() && listed.is_none() && n < old.state.next_file_number =>
                    {
                        Some("obsolete: the manifest had removed it (a compaction input not yet deleted)".to_string())
                    }
                    _ => None,
                };
                if let Some(why) = why_not {
                    lose(&self.dir, &path, why, &mut self.report)?;
                    continue;
                }
                match scan_table(&path, name.number(), listed) {
                    Ok(meta) => {
                        family.table_entries += meta.entries;
                        self.last_seq = self.last_seq.max(meta.max_seq);
                        family.tables.push(KeptTable {
                            meta,
                            pending: matches!(name, TableName::Pending(_)),
                            listed: listed.is_some(),
                        });
                    }
                    Err(e) => lose(&self.dir, &path, e.to_string(), &mut self.report)?,
                }
            }
        }
        Ok(())
    }

    /// Step 4: every record of the segments not proven flushed that still
    /// decodes, into memtables of the families the old manifest names.
    fn replay_logs(&mut self) -> Result<ReplayedLog> {
        let needed: BTreeMap<u32, u64> = self.old.state.families.values().map(|f| (f.id, f.log_number)).collect();
        let oldest_needed = match self.old.path {
            Some(_) => self.old.state.oldest_log_needed().unwrap_or(0),
            None => 0,
        };
        let mut log = ReplayedLog {
            memtables: BTreeMap::new(),
            read_whole: Vec::new(),
            damaged: Vec::new(),
        };
        for &number in &self.logs {
            let path = log_path(&self.dir, number);
            if number < oldest_needed {
                // Every family had flushed it: its records are in tables.
                log.read_whole.push(path);
                continue;
            }
            // Whether a damaged end is torn changes nothing here: every
            // damaged range is reported and the segment set aside.
            let contents = log::read_log(&path, ReadMode::Resync { may_end_torn: false })?;
            self.report.log_segments += 1;
            // A record that frames but is not a batch is damage as much as
            // a bad checksum: the segment is kept, not deleted.
            let mut not_batches = false;
            for (offset, payload) in &contents.records {
                let (first, ops) = match batch::decode(payload) {
                    Ok(batch) => batch,
                    Err(why) => {
                        not_batches = true;
                        self.report.skipped_log.push(SkippedLog {
                            file: path.clone(),
                            offset: *offset,
                            bytes: 8 + payload.len() as u64,
                            why: format!("log record is not a write batch: {why}"),
                        });
                        continue;
                    }
                };
                self.report.log_records += 1;
                for (i, op) in ops.into_iter().enumerate() {
                    let seq = first + i as u64;
                    self.last_seq = self.last_seq.max(seq);
                    let Some(family) = self.families.get_mut(&op.family).filter(|f| f.from_manifest) else {
                        self.report.orphan_log_records += 1;
                        continue;
                    };
                    if needed.get(&op.family).is_some_and(|&n| number < n) {
                        continue; // the family had flushed it
                    }
                    family.log_entries += 1;
                    super::replay::insert_logged(&mut log.memtables, &op, seq, number);
                }
            }
            self.report
                .skipped_log
                .extend(contents.damage.iter().map(|d| SkippedLog {
                    file: path.clone(),
                    offset: d.offset,
                    bytes: d.bytes,
                    why: d.why.clone(),
                }));
            if contents.damage.is_empty() && !not_batches {
                log.read_whole.push(path);
            } else {
                log.damaged.push(path);
            }
        }
        Ok(log)
    }

    /// Step 4, continued: the replayed writes as table files, pending until
    /// the new manifest lists them.
    fn write_log_tables(&mut self, memtables: &BTreeMap<u32, Memtable>) -> Result<Vec<(u32, PendingTable)>> {
        let next_file = AtomicU64::new(self.next_number);
        let mut tables = Vec::new();
        for (id, memtable) in memtables {
            let Some(family) = self.families.get(id) else { continue };
            let run = next_file.fetch_add(1, Ordering::SeqCst);
            let mut output = TableOutput::new(&family.dir, &next_file, &family.options, run, 0, false);
            crate::compaction::flush_memtable(
                memtable,
                &family.options,
                u64::MAX,
                crate::clock::now_ms(),
                &mut output,
            )?;
            tables.extend(output.finish()?.into_iter().map(|t| (*id, t)));
        }
        self.next_number = next_file.load(Ordering::SeqCst);
        Ok(tables)
    }

    /// Step 5: the tables the old manifest did not place, placed by their
    /// sequence numbers (see [`super::placement`]).
    ///
    /// First, a run number the old manifest gives tables at two levels (an
    /// older cellar handed a move's run number out again) goes to the
    /// deepest level only, the others taking new numbers, as an open does
    /// (`split_shared_runs`). Placement may put every table at level 0,
    /// each run keeping its files: the two levels would become one level-0
    /// run whose files overlap, which reads search as disjoint files in key
    /// order, and which no open could tell apart again.
    fn place_tables(&mut self, new_tables: &mut [(u32, PendingTable)]) {
        let next_number = &mut self.next_number;
        for family in self.families.values_mut() {
            let mut found: Vec<Found<'_>> = family
                .tables
                .iter_mut()
                .map(|t| Found {
                    meta: &mut t.meta,
                    listed: t.listed,
                })
                .collect();
            found.extend(
                new_tables
                    .iter_mut()
                    .filter(|(id, _)| *id == family.id)
                    .map(|(_, t)| Found {
                        meta: &mut t.meta,
                        listed: false,
                    }),
            );
            let split = super::runs_to_split(found.iter().map(|t| &*t.meta), || {
                let run = *next_number;
                *next_number = run.saturating_add(1);
                run
            });
            for table in found.iter_mut() {
                if let Some(&run) = split.get(&(table.meta.run, table.meta.level)) {
                    table.meta.run = run;
                }
            }
            family.tables_to_level_0 = placement::place(&mut found);
        }
    }

    /// Step 6: a new manifest, a snapshot of every family and table found,
    /// made live by switching `CURRENT` to it.
    fn write_manifest(&mut self, new_tables: &[(u32, PendingTable)]) -> Result<()> {
        let manifest_number = self.next_number;
        // No segment has this number: every family needs only what is to come.
        let log_number = manifest_number + 1;
        let mut state = ManifestState {
            families: BTreeMap::new(),
            last_sequence: self.last_seq,
            next_file_number: log_number + 1,
            dropped: self.old.state.dropped.clone(),
        };
        for family in self.families.values() {
            let mut tables: Vec<TableMeta> = family.tables.iter().map(|t| t.meta.clone()).collect();
            tables.extend(
                new_tables
                    .iter()
                    .filter(|(id, _)| *id == family.id)
                    .map(|(_, t)| t.meta.clone()),
            );
            let family_state = FamilyState {
                id: family.id,
                name: family.name.clone(),
                options: family.options.encode(),
                log_number,
                tables,
            };
            state.families.insert(family.id, family_state);
        }
        self.report.new_manifest = manifest::write_new(&self.dir, manifest_number, &state)?;
        Ok(())
    }

    /// The new manifest is live: every table it lists gets its final name
    /// (opened only to check it: no store reads it here, so no block cache).
    fn publish(&self, new_tables: Vec<(u32, PendingTable)>) -> Result<()> {
        let no_cache = BlockCache::new(0);
        for family in self.families.values() {
            for table in &family.tables {
                if table.pending {
                    PendingTable::found(table.meta.clone(), &family.dir).publish(&no_cache)?;
                }
            }
        }
        for (_, table) in new_tables {
            table.publish(&no_cache)?;
        }
        Ok(())
    }

    /// The old manifest and the damaged segments go to `lost/`; the segments
    /// read whole are deleted (their records are in tables now).
    fn set_aside(&mut self, log: ReplayedLog) -> Result<()> {
        if let Some(path) = &self.old.path {
            if *path != self.report.new_manifest {
                let why = if self.old.whole {
                    "replaced by the repaired manifest".to_string()
                } else {
                    self.report.manifest_damage.clone().unwrap_or_default()
                };
                lose(&self.dir, path, why, &mut self.report)?;
            }
        }
        for path in log.damaged {
            let why = "damaged log segment (its readable records were replayed)".to_string();
            lose(&self.dir, &path, why, &mut self.report)?;
        }
        for path in log.read_whole {
            let _ = cellar_fs::remove(&path);
        }
        Ok(())
    }

    /// The report, with what each family holds now.
    fn finish(mut self) -> RepairReport {
        self.report.families = self
            .families
            .into_values()
            .map(|f| RepairedFamily {
                name: f.name,
                from_manifest: f.from_manifest,
                tables: f.tables.len() as u64,
                table_entries: f.table_entries,
                log_entries: f.log_entries,
                tables_to_level_0: f.tables_to_level_0,
            })
            .collect();
        self.report
    }
}

/// A family being rebuilt.
struct Family {
    id: u32,
    name: String,
    options: FamilyOptions,
    from_manifest: bool,
    dir: PathBuf,
    /// Tables kept.
    tables: Vec<KeptTable>,
    table_entries: u64,
    log_entries: u64,
    tables_to_level_0: u64,
}

/// A table file repair keeps.
struct KeptTable {
    meta: TableMeta,
    /// Still under its pending name.
    pending: bool,
    /// The old manifest listed it (its level and run are the manifest's).
    listed: bool,
}

impl Family {
    fn new(id: u32, name: &str, options: FamilyOptions, from_manifest: bool, dir: &Path) -> Family {
        Family {
            id,
            name: name.to_string(),
            options,
            from_manifest,
            dir: dir.join(name),
            tables: Vec::new(),
            table_entries: 0,
            log_entries: 0,
            tables_to_level_0: 0,
        }
    }
}

/// Reads as much of the old manifest as decodes and fits, up to its first
/// damage, noting the damage in the report.
fn read_old_manifest(dir: &Path, report: &mut RepairReport) -> OldManifest {
    let path = match manifest::live_manifest(dir) {
        Ok(path) => path,
        Err(e) => {
            report.manifest_damage = Some(e.to_string());
            // CURRENT is damaged: the newest manifest file is the best guess
            // of what it named.
            let newest = files::manifest_numbers(dir).ok().and_then(|n| n.last().copied());
            match newest {
                Some(number) => dir.join(manifest::manifest_file_name(number)),
                None => return OldManifest::default(),
            }
        }
    };
    report.old_manifest = Some(path.clone());
    let contents = match log::read_log(&path, ReadMode::Salvage) {
        Ok(contents) => contents,
        Err(e) => {
            report.manifest_damage = Some(e.to_string());
            return OldManifest {
                path: Some(path),
                ..OldManifest::default()
            };
        }
    };
    let mut whole = contents.damage.is_empty() && report.manifest_damage.is_none();
    if contents.records.is_empty() {
        report.manifest_damage = Some(format!("{} holds no records", path.display()));
        whole = false;
    } else if let Some(d) = contents.damage.first() {
        report.manifest_damage = Some(format!(
            "{} at offset {}: {} ({} bytes not read)",
            path.display(),
            d.offset,
            d.why,
            d.bytes
        ));
    }
    // Apply whole records while they decode and fit.
    let mut state = ManifestState::default();
    for (offset, payload) in &contents.records {
        let mut next = state.clone();
        if let Err(e) = manifest::apply_record(&mut next, &path, *offset, payload) {
            report.manifest_damage = Some(e.to_string());
            whole = false;
            break;
        }
        state = next;
    }
    OldManifest {
        path: Some(path),
        state,
        whole,
    }
}

/// Reads a table file back whole and scans it for what the manifest records
/// of it. `listed`: what the old manifest recorded (its run and level are
/// kept; a file it does not list is a run of its own at level 0).
fn scan_table(path: &Path, number: u64, listed: Option<&TableMeta>) -> Result<TableMeta> {
    let table = Arc::new(Table::open(path)?);
    table.verify()?;
    let mut meta = TableMeta::empty(number, listed.map_or(number, |m| m.run), listed.map_or(0, |m| m.level));
    meta.size = table.file_size();
    let mut iter = table.iter();
    iter.seek_to_first()?;
    while iter.valid() {
        let entry_key = iter.key();
        let Some((ts, seq, kind)) = key::suffix(entry_key) else {
            return Err(Error::corruption(path, 0, "an entry's key is not a cell key"));
        };
        meta.count(entry_key, ts, seq, kind.is_tombstone());
        iter.next()?;
    }
    if meta.entries == 0 {
        return Err(Error::corruption(path, 0, "the table holds no entries"));
    }
    Ok(meta)
}

/// Moves `path` to `lost/` and says so in the report.
fn lose(dir: &Path, path: &Path, why: String, report: &mut RepairReport) -> Result<()> {
    let to = files::move_to_lost(dir, path)?;
    report.lost.push(LostFile {
        from: path.to_path_buf(),
        to,
        why,
    });
    Ok(())
}
