//! The names of a store's files, and what each name promises.
//!
//! A store is a folder. Every file in it is named by a *file number* (one
//! counter for logs, tables and manifests, so a number names one file for the
//! life of the store) or is one of a few fixed names:
//!
//! ```text
//! store/LOCK                      held with an OS lock while the store is open
//! store/CURRENT                   names the live manifest: "MANIFEST-000012\n"
//! store/MANIFEST-000012           the manifest: edit groups (manifest module)
//! store/000013.log                a log segment (log module)
//! store/<family>/000014.sst       a table file the manifest lists
//! store/<family>/000015.sst.pending   a finished table file not yet listed
//! store/<family>/000015.sst.pending.tmp   a table file being written
//! store/lost/                     files recovery or repair could not use, kept aside
//! ```
//!
//! The `.pending` step is what lets recovery decide from evidence. A table
//! file is written and synced under its pending name, the manifest edit that
//! lists it is made durable, and only then is it renamed to its final name.
//! So a final name is a promise that a durable manifest record listed the
//! file: finding one the manifest does not list means either a later durable
//! record removed it (its number is below the manifest's next file number) or
//! the manifest lost a record it had acknowledged (its number is not), which
//! is damage to report, never a leftover to delete. A pending file the
//! manifest does not list is the output of a flush or compaction whose edit
//! never became durable: its data is still in the log or in the tables it
//! was merged from.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lock file.
pub(crate) const LOCK: &str = "LOCK";

/// The folder where recovery and repair keep the files they could not use.
/// (It is also why no family may be named `lost`.)
pub(crate) const LOST: &str = "lost";

/// Suffix of a table file the manifest lists.
const TABLE: &str = ".sst";

/// Suffix of a finished table file that no durable manifest record lists yet.
const PENDING: &str = ".sst.pending";

/// Suffix of a table file being written (the table builder's temporary name
/// for a pending file).
const PENDING_TEMP: &str = ".sst.pending.tmp";

/// Suffix of a temporary table file of an older cellar, which wrote final
/// names directly.
const TABLE_TEMP: &str = ".sst.tmp";

/// Suffix of a log segment.
const LOG: &str = ".log";

/// Path of log segment `number`.
pub(crate) fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}{LOG}"))
}

/// Path of table file `number` in a family folder.
pub(crate) fn table_path(family_dir: &Path, number: u64) -> PathBuf {
    family_dir.join(format!("{number:06}{TABLE}"))
}

/// Path of the pending table file `number` in a family folder.
pub(crate) fn pending_path(family_dir: &Path, number: u64) -> PathBuf {
    family_dir.join(format!("{number:06}{PENDING}"))
}

/// What a file in a family folder is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableName {
    /// `<n>.sst`: listed by a durable manifest record when it got this name.
    Listed(u64),
    /// `<n>.sst.pending`: finished, not known to be listed.
    Pending(u64),
    /// `<n>.sst.pending.tmp` or `<n>.sst.tmp`: a table file cut short while
    /// being written; never listed by anything.
    Unfinished(u64),
}

impl TableName {
    /// The file number.
    pub(crate) fn number(self) -> u64 {
        match self {
            TableName::Listed(n) | TableName::Pending(n) | TableName::Unfinished(n) => n,
        }
    }
}

/// Reads `name` as `<digits><suffix>`.
fn numbered(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The table files in a family folder, by number; other files are ignored.
pub(crate) fn table_files(family_dir: &Path) -> Result<Vec<(TableName, PathBuf)>> {
    let mut out = Vec::new();
    for (name, path) in entries(family_dir)? {
        let kind = if let Some(n) = numbered(&name, TABLE) {
            TableName::Listed(n)
        } else if let Some(n) = numbered(&name, PENDING) {
            TableName::Pending(n)
        } else if let Some(n) = numbered(&name, PENDING_TEMP).or_else(|| numbered(&name, TABLE_TEMP)) {
            TableName::Unfinished(n)
        } else {
            continue;
        };
        out.push((kind, path));
    }
    out.sort_by_key(|(kind, _)| kind.number());
    Ok(out)
}

/// The number of the log segment named `name` (`<n>.log`), if it is one.
pub(crate) fn log_number(name: &str) -> Option<u64> {
    numbered(name, LOG)
}

/// What the store folder holds, from one listing of it.
#[derive(Debug, Default)]
pub(crate) struct StoreListing {
    /// The numbers of the files named `MANIFEST-<number>`, oldest first.
    pub(crate) manifests: Vec<u64>,
    /// The numbers of the log segments, oldest first.
    pub(crate) logs: Vec<u64>,
    /// The subfolders whose names could be families (the `lost` folder
    /// excluded), by name.
    pub(crate) families: Vec<String>,
}

impl StoreListing {
    /// Lists `dir` once; files that are none of the above are ignored.
    pub(crate) fn read(dir: &Path) -> Result<StoreListing> {
        let mut listing = StoreListing::default();
        for (name, path) in entries(dir)? {
            if let Some(n) = log_number(&name) {
                listing.logs.push(n);
            } else if let Some(n) = name.strip_prefix("MANIFEST-").and_then(|rest| numbered(rest, "")) {
                listing.manifests.push(n);
            } else if name != LOST && path.is_dir() && crate::options::validate_family_name(&name).is_ok() {
                listing.families.push(name);
            }
        }
        listing.manifests.sort_unstable();
        listing.logs.sort_unstable();
        listing.families.sort();
        Ok(listing)
    }

    /// True if the folder holds no manifest, log segment or family folder:
    /// nothing left of a store.
    pub(crate) fn is_empty(&self) -> bool {
        self.manifests.is_empty() && self.logs.is_empty() && self.families.is_empty()
    }
}

/// The numbers of the log segments in the store folder, oldest first.
pub(crate) fn log_numbers(dir: &Path) -> Result<Vec<u64>> {
    Ok(StoreListing::read(dir)?.logs)
}

/// The numbers of the files named `MANIFEST-<number>` in the store folder.
pub(crate) fn manifest_numbers(dir: &Path) -> Result<Vec<u64>> {
    Ok(StoreListing::read(dir)?.manifests)
}

/// The subfolders of the store folder whose names could be families
/// (the `lost` folder excluded).
pub(crate) fn family_folders(dir: &Path) -> Result<Vec<String>> {
    Ok(StoreListing::read(dir)?.families)
}

/// Every entry of a folder whose name is UTF-8, with its path.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Ok(name) = entry.file_name().into_string() {
            out.push((name, entry.path()));
        }
    }
    Ok(out)
}

/// Moves `path` into the store's `lost/` folder (made if needed), keeping its
/// name, prefixed by its family folder's when it has one, and never
/// overwriting: returns where it went.
pub(crate) fn move_to_lost(dir: &Path, path: &Path) -> Result<PathBuf> {
    let lost = dir.join(LOST);
    cellar_fs::create_dir_all(&lost).map_err(|e| Error::io(&lost, e))?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let family = path
        .parent()
        .filter(|parent| *parent != dir)
        .and_then(|parent| parent.file_name())
        .map(|f| format!("{}-", f.to_string_lossy()))
        .unwrap_or_default();
    let mut target = lost.join(format!("{family}{name}"));
    let mut copy = 1;
    while target.exists() {
        target = lost.join(format!("{family}{name}.{copy}"));
        copy += 1;
    }
    cellar_fs::rename(path, &target).map_err(|e| Error::io(path, e))?;
    crate::log::sync_dir(&lost)?;
    if let Some(parent) = path.parent() {
        crate::log::sync_dir(parent)?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_say_how_far_a_file_got() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        for name in [
            "000007.sst",
            "000009.sst.pending",
            "000011.sst.pending.tmp",
            "000012.sst.tmp",
            "notes.txt",
            "x.sst",
        ] {
            std::fs::write(dir.path().join(name), b"").map_err(|e| Error::io(name, e))?;
        }
        let kinds: Vec<TableName> = table_files(dir.path())?.into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                TableName::Listed(7),
                TableName::Pending(9),
                TableName::Unfinished(11),
                TableName::Unfinished(12)
            ]
        );
        assert_eq!(log_path(Path::new("s"), 3), Path::new("s/000003.log"));
        assert_eq!(pending_path(Path::new("f"), 42), Path::new("f/000042.sst.pending"));
        Ok(())
    }

    #[test]
    fn moving_to_lost_keeps_the_family_in_the_name_and_never_overwrites() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let family = dir.path().join("books");
        std::fs::create_dir(&family).map_err(|e| Error::io(&family, e))?;
        for _ in 0..2 {
            let path = family.join("000005.sst");
            std::fs::write(&path, b"x").map_err(|e| Error::io(&path, e))?;
            move_to_lost(dir.path(), &path)?;
        }
        let lost = dir.path().join(LOST);
        assert!(lost.join("books-000005.sst").exists());
        assert!(lost.join("books-000005.sst.1").exists());
        assert_eq!(family_folders(dir.path())?, ["books"]);
        Ok(())
    }
}
