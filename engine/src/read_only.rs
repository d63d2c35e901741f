//! A store opened to read only: RocksDB's `OpenForReadOnly`.
//!
//! [`ReadOnlyStore::open`] reads the store's files as they are (manifest,
//! table files, and the log replayed into memory) and holds them as one
//! snapshot. It takes no lock and writes nothing: not the log replay's flush,
//! not a new log segment, not a manifest record, not a deletion. So it can
//! open a store another process has open for writing (it sees the writes
//! that process had made when the open read the files, and none after), and
//! a copy on a medium it may not write. It offers what reading needs: the
//! families and their options, a [`Snapshot`] for every read, the table
//! files, statistics and a checksum check.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::options::FamilyOptions;
use crate::read::Snapshot;
use crate::stats::{self, Stats, TableInfo};
use crate::version::Version;

/// A store opened to read only. See the module documentation.
///
/// ```
/// use cellar_engine::{ReadOnlyStore, Store, StoreOptions};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
/// store.put("books", "b1", "title", "Dune")?;
/// // The writer still holds the store; a read-only open reads beside it.
/// let reader = ReadOnlyStore::open(dir.path())?;
/// let title = reader.snapshot().get("books", "b1", "title")?;
/// assert_eq!(title.map(|c| c.value), Some("Dune".into()));
/// # Ok(()) }
/// ```
pub struct ReadOnlyStore {
    dir: PathBuf,
    version: Arc<Version>,
    sequence: u64,
}

impl ReadOnlyStore {
    /// Reads the store in `dir`. A folder without a store is
    /// [`Error::NotAStore`]; damage is [`Error::Corruption`], as for
    /// [`crate::Store::open`], except that a read-only open repairs nothing.
    pub fn open(dir: impl AsRef<Path>) -> Result<ReadOnlyStore> {
        let dir = dir.as_ref();
        let (version, sequence) = crate::recovery::read_only::open(dir)?;
        Ok(ReadOnlyStore {
            dir: dir.to_path_buf(),
            version: Arc::new(version),
            sequence,
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The names of the column families.
    pub fn families(&self) -> Vec<String> {
        self.version.families.values().map(|f| f.name.clone()).collect()
    }

    /// The options of a family.
    pub fn family_options(&self, family: &str) -> Result<FamilyOptions> {
        let fam = self
            .version
            .family(family)
            .ok_or_else(|| Error::UnknownFamily(family.to_string()))?;
        Ok((*fam.options).clone())
    }

    /// The store as the open read it, for reads.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: self.version.clone(),
            sequence: self.sequence,
            now_ms: now_ms(),
        }
    }

    /// Statistics of the store and each family (nothing was written since
    /// the open, so every write counter is zero).
    pub fn stats(&self) -> Result<Stats> {
        stats::collect(&self.version, self.sequence, now_ms(), 0)
    }

    /// Every table file: its family and what the manifest and the file say of it.
    pub fn tables(&self) -> Vec<TableInfo> {
        stats::tables(&self.version)
    }
}
