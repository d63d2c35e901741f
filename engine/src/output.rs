//! Writing sorted entries out as table files: the last step of flush and compaction.
//!
//! [`TableOutput`] takes entries in key order, hands them to the table builder
//! with the row as the bloom filter key, cuts a new file when the current one
//! reaches the family's target size, and gathers the manifest's [`TableMeta`]
//! of each file (key range, sequence and timestamp ranges) as it goes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cellar_sstable::{Table, TableBuilder, TableOptions};

use crate::error::{Error, Result};
use crate::key;
use crate::manifest::TableMeta;
use crate::options::FamilyOptions;
use crate::version::TableFile;

/// Path of a table file in its family folder.
pub(crate) fn table_path(family_dir: &Path, file_id: u64) -> PathBuf {
    family_dir.join(format!("{file_id:06}.sst"))
}

struct Current {
    builder: TableBuilder,
    meta: TableMeta,
    path: PathBuf,
}

/// Table files being written for one run.
pub(crate) struct TableOutput<'a> {
    dir: &'a Path,
    next_file: &'a AtomicU64,
    options: &'a FamilyOptions,
    /// Cut files at the target size (compaction) or never (flush: one memtable, one file).
    split: bool,
    run: u64,
    current: Option<Current>,
    finished: Vec<TableFile>,
}

impl<'a> TableOutput<'a> {
    pub fn new(
        dir: &'a Path,
        next_file: &'a AtomicU64,
        options: &'a FamilyOptions,
        run: u64,
        split: bool,
    ) -> TableOutput<'a> {
        TableOutput {
            dir,
            next_file,
            options,
            split,
            run,
            current: None,
            finished: Vec::new(),
        }
    }

    /// Adds one entry; keys must come in increasing order.
    pub fn add(&mut self, entry_key: &[u8], value: &[u8]) -> Result<()> {
        let Some((ts, seq, kind)) = key::suffix(entry_key) else {
            return Err(Error::corruption(
                self.dir,
                0,
                "an entry to write has no valid key suffix",
            ));
        };
        let row = key::row_part(entry_key).unwrap_or(entry_key);
        if self.current.is_none() {
            let file_id = self.next_file.fetch_add(1, Ordering::SeqCst);
            let path = table_path(self.dir, file_id);
            let table_options = TableOptions {
                block_size: self.options.block_size,
                bloom_bits_per_key: self.options.bloom_bits_per_key,
                // Timestamp and sequence/kind: stored as XOR with the previous key's.
                key_trailer_words: key::SUFFIX_LEN / 8,
                // Column names repeating from row to row, copied (if the family asks).
                tail_copies: self.options.tail_copies,
                ..TableOptions::default()
            };
            let builder = TableBuilder::create(&path, table_options)?;
            self.current = Some(Current {
                builder,
                path,
                meta: TableMeta {
                    file_id,
                    run: self.run,
                    size: 0,
                    entries: 0,
                    tombstones: 0,
                    first_key: entry_key.to_vec(),
                    last_key: Vec::new(),
                    min_seq: u64::MAX,
                    max_seq: 0,
                    min_ts: u64::MAX,
                    max_ts: 0,
                },
            });
        }
        let full = if let Some(c) = self.current.as_mut() {
            c.builder.add(entry_key, value, row, kind.is_tombstone())?;
            let m = &mut c.meta;
            m.entries += 1;
            m.tombstones += u64::from(kind.is_tombstone());
            m.min_seq = m.min_seq.min(seq);
            m.max_seq = m.max_seq.max(seq);
            m.min_ts = m.min_ts.min(ts);
            m.max_ts = m.max_ts.max(ts);
            m.last_key.clear();
            m.last_key.extend_from_slice(entry_key);
            self.split
                && (c.builder.estimated_file_size() >= self.options.target_file_bytes
                    || self.options.target_file_entries.is_some_and(|n| m.entries >= n))
        } else {
            false
        };
        if full {
            self.finish_current()?;
        }
        Ok(())
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some(c) = self.current.take() {
            let properties = c.builder.finish()?;
            let mut meta = c.meta;
            meta.size = properties.file_size;
            let table = Table::open(&c.path)?;
            self.finished.push(TableFile::new(meta, table, c.path));
        }
        Ok(())
    }

    /// Finishes the last file; returns every file written (none if no entry came).
    pub fn finish(mut self) -> Result<Vec<TableFile>> {
        self.finish_current()?;
        Ok(std::mem::take(&mut self.finished))
    }
}

impl Drop for TableOutput<'_> {
    fn drop(&mut self) {
        // Reached with files still listed only when writing failed part-way: the
        // manifest never named them, so they are removed (the builder removes its
        // temporary file itself).
        for f in &self.finished {
            f.mark_obsolete();
        }
    }
}
