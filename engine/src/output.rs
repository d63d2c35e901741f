//! Writing sorted entries out as table files: the last step of flush and compaction.
//!
//! [`TableOutput`] takes entries in key order, hands them to the table builder
//! with the row as the bloom filter key, cuts a new file when the current one
//! reaches the family's target size, and gathers the manifest's [`TableMeta`]
//! of each file (key range, sequence and timestamp ranges) as it goes.
//!
//! A leveled family's files are cut between rows only, so no row is split
//! across two files of a level: a compaction that takes a file down a level
//! then takes every entry of its rows, and a row's entries in a deeper level
//! are always older than those above (a row tombstone and the cells it hides
//! never change places). A row larger than the target size makes a larger file.
//!
//! The files are written under their *pending* name (see [`crate::files`]):
//! a [`PendingTable`] is complete and synced, but no durable manifest record
//! lists it yet. Once one does, [`PendingTable::publish`] gives it its final
//! name and opens it for reading.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cellar_sstable::{BlockCache, Table, TableBuilder, TableOptions};

use crate::error::{Error, Result};
use crate::files::{pending_path, table_path};
use crate::key;
use crate::manifest::TableMeta;
use crate::options::{Compaction, FamilyOptions};
use crate::version::TableFile;

/// A finished table file that no durable manifest record lists yet.
#[derive(Debug)]
pub(crate) struct PendingTable {
    /// What the manifest will record of it.
    pub(crate) meta: TableMeta,
    /// Its family folder.
    dir: PathBuf,
}

impl PendingTable {
    /// A pending table found on disk (recovery rolls it forward).
    pub(crate) fn found(meta: TableMeta, dir: &Path) -> PendingTable {
        PendingTable {
            meta,
            dir: dir.to_path_buf(),
        }
    }

    /// Where it is now.
    pub(crate) fn path(&self) -> PathBuf {
        pending_path(&self.dir, self.meta.file_id)
    }

    /// Gives the file its final name and opens it, its decompressed blocks
    /// kept in `cache`. Call only once the
    /// manifest record that lists it is durable: the final name promises
    /// that. The rename is not fsynced: if a power cut undoes it, the next
    /// open finds the pending file listed and renames it again.
    pub(crate) fn publish(self, cache: &BlockCache) -> Result<TableFile> {
        let pending = self.path();
        let path = table_path(&self.dir, self.meta.file_id);
        cellar_fs::rename(&pending, &path).map_err(|e| Error::io(&pending, e))?;
        let table = Table::open_with_cache(&path, cache)?;
        Ok(TableFile::new(self.meta, table, path))
    }

    /// Removes the file (its edit never became durable).
    pub(crate) fn discard(self) {
        // A pending file that stays behind is removed by the next open.
        let _ = cellar_fs::remove(&self.path());
    }
}

struct Current {
    builder: TableBuilder,
    meta: TableMeta,
}

/// Table files being written for one run.
pub(crate) struct TableOutput<'a> {
    dir: &'a Path,
    next_file: &'a AtomicU64,
    options: &'a FamilyOptions,
    /// Cut files at the target size (compaction) or never (flush: one memtable, one file).
    split: bool,
    /// Cut only where a row ends (leveled families, and every level below 0).
    whole_rows: bool,
    /// The current file is full: cut it where the next row starts.
    full: bool,
    run: u64,
    level: u32,
    current: Option<Current>,
    finished: Vec<PendingTable>,
}

impl<'a> TableOutput<'a> {
    pub fn new(
        dir: &'a Path,
        next_file: &'a AtomicU64,
        options: &'a FamilyOptions,
        run: u64,
        level: u32,
        split: bool,
    ) -> TableOutput<'a> {
        TableOutput {
            dir,
            next_file,
            options,
            split,
            // A level below 0 is one run of files with disjoint rows, in a
            // size-tiered family altered from leveled too.
            whole_rows: level > 0 || matches!(options.compaction, Compaction::Leveled { .. }),
            full: false,
            run,
            level,
            current: None,
            finished: Vec::new(),
        }
    }

    /// Adds one entry; keys must come in increasing order. The caller has
    /// taken the key apart already (a flush or a compaction, whose drop rule
    /// decodes every key): `row` is its encoded row prefix
    /// (`key::row_part`, the filter key) and `(ts, seq, kind)` its suffix,
    /// both the key's own.
    pub fn add(
        &mut self,
        entry_key: &[u8],
        value: &[u8],
        row: &[u8],
        (ts, seq, kind): (u64, u64, key::Kind),
    ) -> Result<()> {
        debug_assert_eq!(
            key::suffix(entry_key),
            Some((ts, seq, kind)),
            "a suffix not the key's own"
        );
        debug_assert_eq!(key::row_part(entry_key), Some(row), "a row not the key's own");
        if self.full {
            // Full at the last entry: cut here unless this entry continues its row.
            let same_row = self
                .current
                .as_ref()
                .is_some_and(|c| key::row_part(c.builder.last_key()) == Some(row));
            if !same_row {
                self.finish_current()?;
            }
        }
        if self.current.is_none() {
            let file_id = self.next_file.fetch_add(1, Ordering::SeqCst);
            let path = pending_path(self.dir, file_id);
            let table_options = TableOptions {
                block_size: self.options.block_size,
                bloom_bits_per_key: self.options.bloom_bits_per_key,
                // Timestamp and sequence/kind: stored as XOR with the previous key's.
                key_trailer_words: key::SUFFIX_LEN / 8,
                // Column names repeating from row to row, copied (if the family asks).
                tail_copies: self.options.tail_copies,
                // Each data block compressed on its own, if the family asks.
                compression: self.options.compression,
                ..TableOptions::default()
            };
            let builder = TableBuilder::create(&path, table_options)?;
            self.current = Some(Current {
                builder,
                meta: TableMeta::empty(file_id, self.run, self.level),
            });
        }
        let full = if let Some(c) = self.current.as_mut() {
            // The row as the key's own first bytes: the builder then tells
            // a new row from the bytes the key shares with the last one.
            let filter_key = entry_key.get(..row.len()).unwrap_or(row);
            c.builder.add(entry_key, value, filter_key, kind.is_tombstone())?;
            let m = &mut c.meta;
            // The first and last key come from the builder at the end.
            m.count_entry(ts, seq, kind.is_tombstone());
            self.split
                && (c.builder.estimated_file_size() >= self.options.target_file_bytes
                    || self.options.target_file_entries.is_some_and(|n| m.entries >= n))
        } else {
            false
        };
        if full && !self.whole_rows {
            self.finish_current()?;
        } else {
            self.full = full;
        }
        Ok(())
    }

    fn finish_current(&mut self) -> Result<()> {
        self.full = false;
        if let Some(c) = self.current.take() {
            let properties = c.builder.finish()?;
            let mut meta = c.meta;
            meta.size = properties.file_size;
            meta.first_key = properties.first_key;
            meta.last_key = properties.last_key;
            self.finished.push(PendingTable::found(meta, self.dir));
        }
        Ok(())
    }

    /// Finishes the last file; returns every file written (none if no entry
    /// came), each under its pending name.
    pub fn finish(mut self) -> Result<Vec<PendingTable>> {
        self.finish_current()?;
        Ok(std::mem::take(&mut self.finished))
    }
}

impl Drop for TableOutput<'_> {
    fn drop(&mut self) {
        // Reached with files still here only when writing failed part-way: no
        // manifest record names them, so they are removed (the builder
        // removes its temporary file itself).
        for table in self.finished.drain(..) {
            table.discard();
        }
    }
}
