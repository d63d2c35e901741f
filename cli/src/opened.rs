//! The store a command works on: opened for writing (the default), or with
//! `--read-only` for reading only.
//!
//! Opening for writing takes the store's lock, replays the log and flushes
//! it; `--read-only` (RocksDB's read-only open, [`ReadOnlyStore`]) takes no
//! lock and writes nothing, so reads, `stats`, `files`, `check` and `export`
//! work beside a running `cellar shell` or on a copy that cannot be written.
//! A command that writes refuses a store opened read-only.

use std::path::Path;

use cellar::{FamilyOptions, ReadOnlyStore, Snapshot, Stats, Store, TableInfo};

use crate::Error;

/// An open store, for writing or for reading only.
pub enum Opened {
    /// Opened with the lock: every command.
    Writable(Store),
    /// Opened without the lock, writing nothing: the reading commands.
    ReadOnly(ReadOnlyStore),
}

impl Opened {
    /// The store, if it may be written; the error says why not.
    pub fn writable(&self, command: &str) -> Result<&Store, Error> {
        match self {
            Opened::Writable(store) => Ok(store),
            Opened::ReadOnly(_) => Err(format!("`{command}` writes, and the store is open read-only").into()),
        }
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        match self {
            Opened::Writable(s) => s.dir(),
            Opened::ReadOnly(s) => s.dir(),
        }
    }

    /// The names of the column families.
    pub fn families(&self) -> Vec<String> {
        match self {
            Opened::Writable(s) => s.families(),
            Opened::ReadOnly(s) => s.families(),
        }
    }

    /// The options of a family.
    pub fn family_options(&self, family: &str) -> cellar::Result<FamilyOptions> {
        match self {
            Opened::Writable(s) => s.family_options(family),
            Opened::ReadOnly(s) => s.family_options(family),
        }
    }

    /// A consistent view for reads.
    pub fn snapshot(&self) -> Snapshot {
        match self {
            Opened::Writable(s) => s.snapshot(),
            Opened::ReadOnly(s) => s.snapshot(),
        }
    }

    /// Statistics of the store and each family.
    pub fn stats(&self) -> cellar::Result<Stats> {
        match self {
            Opened::Writable(s) => s.stats(),
            Opened::ReadOnly(s) => s.stats(),
        }
    }

    /// Every table file.
    pub fn tables(&self) -> Vec<TableInfo> {
        match self {
            Opened::Writable(s) => s.tables(),
            Opened::ReadOnly(s) => s.tables(),
        }
    }
}
