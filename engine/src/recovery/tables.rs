//! Recovery's table step: open what the manifest lists, and account for
//! every other file in the family folders.
//!
//! A file the manifest does not list is deleted only when a rule proves it a
//! leftover (see [`crate::files`] for what each name promises):
//! - `<n>.sst.pending.tmp` (or an older cellar's `<n>.sst.tmp`): a table cut
//!   short while being written; no record ever listed it;
//! - `<n>.sst.pending`, unlisted: the output of a flush or compaction whose
//!   edit never became durable (or became durable and was then lost before
//!   anything acted on it): its data is still in the log or in the tables it
//!   was merged from, which the manifest lists;
//! - `<n>.sst`, unlisted, with `n` below the manifest's next file number: a
//!   durable record listed it (only then does a table get that name, and
//!   only a record after that could raise the next file number past it) and
//!   a later durable record removed it: a compaction input whose deletion
//!   did not reach the disk.
//!
//! An unlisted `<n>.sst` whose number is not below the next file number can
//! only have been listed by a record the manifest no longer has: the manifest
//! lost an acknowledged edit. That is corruption of the manifest, reported
//! with the offset where the record is missing; nothing is deleted, and
//! `repair` can rebuild the manifest from the files. So is a family folder
//! holding table files for a family the manifest does not know; the folder of
//! a family the manifest records as dropped holds only leftovers.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellar_sstable::{BlockCache, Table};

use crate::error::{Error, Result};
use crate::files::{self, pending_path, table_path, TableName};
use crate::manifest::{FamilyState, Manifest, ManifestState};
use crate::options::{validate_family_name, FamilyOptions};
use crate::output::PendingTable;
use crate::version::{FamilyVersion, TableFile};

/// What the table step found.
pub(super) struct Found {
    /// Every family with the table files the manifest lists, opened.
    pub(super) families: BTreeMap<u32, FamilyVersion>,
    /// Listed tables still under their pending name: the record that lists
    /// them is durable, the rename after it did not happen (or did not reach
    /// the disk). Recovery renames them once it has decided the store opens.
    pub(super) roll_forward: Vec<(u32, PendingTable)>,
    /// Files proved to be leftovers, deleted once the store opens.
    pub(super) leftovers: Vec<PathBuf>,
}

/// Opens every family's listed table files and sorts out the rest.
pub(super) fn open_families(
    dir: &Path,
    state: &ManifestState,
    manifest: &Manifest,
    cache: &BlockCache,
) -> Result<Found> {
    let mut found = Found {
        families: BTreeMap::new(),
        roll_forward: Vec::new(),
        leftovers: Vec::new(),
    };
    for family in state.families.values() {
        let version = open_family(dir, family, state.next_file_number, manifest, cache, &mut found)?;
        found.families.insert(family.id, version);
    }
    check_unknown_folders(dir, state, manifest, &mut found)?;
    Ok(found)
}

/// One family: its options, its folder, its listed tables opened.
fn open_family(
    dir: &Path,
    family: &FamilyState,
    next_file_number: u64,
    manifest: &Manifest,
    cache: &BlockCache,
    found: &mut Found,
) -> Result<FamilyVersion> {
    let options = FamilyOptions::decode(&family.options).ok_or_else(|| {
        Error::corruption(
            manifest.path(),
            0,
            format!("family {:?} has options that do not decode", family.name),
        )
    })?;
    validate_family_name(&family.name).map_err(|_| {
        Error::corruption(
            manifest.path(),
            0,
            format!("family name {:?} is not valid", family.name),
        )
    })?;
    let family_dir = dir.join(&family.name);
    // A family added at this open gets its folder here. (The new log segment
    // fsyncs the store folder again before the manifest lists the family,
    // which covers a folder left by a crashed open.)
    cellar_fs::create_dir_all(&family_dir).map_err(|e| Error::io(&family_dir, e))?;

    let listed: HashSet<u64> = family.tables.iter().map(|t| t.file_id).collect();
    for (name, path) in files::table_files(&family_dir)? {
        let number = name.number();
        match name {
            TableName::Listed(_) | TableName::Pending(_) if listed.contains(&number) => {}
            TableName::Unfinished(_) | TableName::Pending(_) => found.leftovers.push(path),
            TableName::Listed(_) if number < next_file_number => found.leftovers.push(path),
            TableName::Listed(_) => {
                return Err(Error::corruption(
                    manifest.path(),
                    manifest.end(),
                    format!(
                        "{} is a table file the manifest does not list, numbered {number}, not below the \
                         manifest's next file number {next_file_number}: the record that listed it is missing",
                        path.display()
                    ),
                ))
            }
        }
    }

    let mut tables = Vec::new();
    for meta in &family.tables {
        let path = table_path(&family_dir, meta.file_id);
        if path.exists() {
            let table = Table::open_with_cache(&path, cache)?;
            tables.push(Arc::new(TableFile::new(meta.clone(), table, path)));
            continue;
        }
        let pending = pending_path(&family_dir, meta.file_id);
        if !pending.exists() {
            return Err(Error::corruption(
                &path,
                0,
                "table file listed in the manifest is missing",
            ));
        }
        // Checked now, so that a damaged one stops the open before it writes.
        Table::open(&pending)?;
        found
            .roll_forward
            .push((family.id, PendingTable::found(meta.clone(), &family_dir)));
    }
    Ok(FamilyVersion::opened(
        family.id,
        family.name.clone(),
        options,
        family_dir,
        tables,
    ))
}

/// A folder that holds listed-name table files for a family the manifest
/// does not have, and never dropped: the record that added it is missing.
/// The folder of a dropped family holds only leftovers.
fn check_unknown_folders(dir: &Path, state: &ManifestState, manifest: &Manifest, found: &mut Found) -> Result<()> {
    for name in files::family_folders(dir)? {
        if state.families.values().any(|f| f.name == name) {
            continue;
        }
        let tables = files::table_files(&dir.join(&name))?;
        if state.dropped.values().any(|d| *d == name) {
            // The manifest recorded the drop: whatever the folder still holds
            // (a snapshot kept it, or a crash came first) is a leftover.
            found.leftovers.extend(tables.into_iter().map(|(_, path)| path));
            continue;
        }
        if let Some((_, path)) = tables.iter().find(|(kind, _)| matches!(kind, TableName::Listed(_))) {
            return Err(Error::corruption(
                manifest.path(),
                manifest.end(),
                format!(
                    "{} holds table files, but the manifest has no family {name:?}: the record that added it is missing",
                    path.parent().unwrap_or(dir).display()
                ),
            ));
        }
    }
    Ok(())
}
