//! Store and family statistics: what was written, what is stored, what is live.
//!
//! Definitions (the lesson tables are printed from them):
//! * **user bytes** of a write: row + column + value lengths.
//! * **stored entries**: entries in memtables and table files, every version
//!   and tombstone included; **live entries**: the cells a reader can see
//!   (up to `max_versions` versions of each live column).
//! * **stored bytes**: internal key + value bytes of the stored entries; **live
//!   bytes**: the same for the live entries. Table files also hold block
//!   trailers, restart arrays, the index and the filter, counted in
//!   `table_bytes` (their size on disk) but in neither of these.
//! * **space amplification**: stored / live, by entries and by bytes.
//! * **write amplification**: bytes the store wrote to disk (log + flushes +
//!   compaction output) / user bytes; **1.0 when no user bytes were
//!   written** since the store opened, even if the open's flush wrote a
//!   table (the ratio is undefined; 1.0 reads as "nothing amplified", the
//!   same convention as space amplification of nothing live). RocksDB's
//!   compaction stats measure another ratio (the `Sum` line's W-Amp: bytes
//!   flushed and compacted / (bytes flushed + 1)), whose `+ 1` makes an idle
//!   RocksDB report 0.0. `cellar stats` prints neither: it shows `-` where
//!   nothing was written.
//! * Counters of writes start at 0 when the store opens, as RocksDB's do.
//!   The open's flush of the log it replays counts as a flush (RocksDB counts
//!   its recovery flush too), but the writes in that log were counted before
//!   the reopen: the first writes after one show a high write amplification,
//!   until they outweigh that flush.

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::key;
use crate::merge::MergeIterator;
use crate::source::{sources, whole_file_cursor, Source};
use crate::version::{FamilyVersion, Version};
use crate::visibility::{Verdict, Visibility};

/// One table file, as `files` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// Family name.
    pub family: String,
    /// File number.
    pub file_id: u64,
    /// Sorted run.
    pub run: u64,
    /// Level (0 in a family that was always size-tiered; see [`crate::Compaction`]).
    pub level: u32,
    /// Path of the file.
    pub path: std::path::PathBuf,
    /// Bytes on disk.
    pub size: u64,
    /// Entries stored.
    pub entries: u64,
    /// Tombstones stored.
    pub tombstones: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of all data blocks as stored (compressed, for compressed
    /// blocks), block trailers and restart arrays included.
    pub data_bytes: u64,
    /// How the table's data blocks were compressed (its own record, whatever
    /// the family's option says now).
    pub compression: crate::Compression,
    /// Data blocks stored compressed (the others saved less than 1/8).
    pub compressed_blocks: u64,
    /// `data_bytes` as it would be with every block stored raw.
    pub uncompressed_data_bytes: u64,
    /// Bytes of the index block.
    pub index_bytes: u64,
    /// Bytes of the bloom filter block (0 without a filter).
    pub filter_bytes: u64,
    /// Full length of every internal key, summed: what the keys would cost
    /// without prefix compression.
    pub raw_key_bytes: u64,
    /// Key bytes actually written, after prefix compression and with the
    /// timestamp and sequence stored as XORs against the previous key's.
    pub stored_key_bytes: u64,
    /// Length of every value, summed.
    pub raw_value_bytes: u64,
    /// Smallest internal key.
    pub first_key: Vec<u8>,
    /// Largest internal key.
    pub last_key: Vec<u8>,
}

/// Statistics of one column family.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FamilyStats {
    /// Family name.
    pub name: String,
    /// Entries in the active memtable.
    pub memtable_entries: u64,
    /// Approximate memory of the active memtable.
    pub memtable_bytes: u64,
    /// Tombstones in the active memtable.
    pub memtable_tombstones: u64,
    /// The active memtable's smallest and largest internal key (`None` when
    /// it is empty): where its entries sit in the key space, as a table
    /// file's [`TableInfo::first_key`] and [`TableInfo::last_key`] say of it.
    pub memtable_key_range: Option<(Vec<u8>, Vec<u8>)>,
    /// Frozen memtables waiting for flush.
    pub frozen_memtables: u64,
    /// Table files.
    pub table_files: u64,
    /// Sorted runs.
    pub runs: u64,
    /// Bytes of table files on disk.
    pub table_bytes: u64,
    /// Sizes of the table files, newest run first.
    pub file_sizes: Vec<u64>,
    /// Entries stored (memtables and tables).
    pub stored_entries: u64,
    /// Tombstones stored.
    pub tombstones: u64,
    /// Entries a reader can see.
    pub live_entries: u64,
    /// Key + value bytes of stored entries.
    pub stored_bytes: u64,
    /// Key + value bytes of live entries.
    pub live_bytes: u64,
    /// Writes applied to this family since the store was opened (not those
    /// an open replays from the log).
    pub user_entries_written: u64,
    /// Their user bytes (row + column + value).
    pub user_bytes_written: u64,
    /// Flushes done since the store was opened, the open's own flush of the
    /// log it replayed included.
    pub flushes: u64,
    /// Bytes written by flushes: after a reopen, also the table files the
    /// open wrote from the replayed log, whose user bytes were counted
    /// before it (see the module's definitions).
    pub flush_bytes_written: u64,
    /// Compactions done since the store was opened.
    pub compactions: u64,
    /// Bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Bytes compactions wrote.
    pub compaction_bytes_written: u64,
    /// Settles done since the store was opened: major compactions the
    /// compacting thread ran once the family's writes paused
    /// ([`crate::Settle`]). Each is counted among `compactions` too.
    pub settles: u64,
    /// Bytes the settles wrote (counted in `compaction_bytes_written` too).
    pub settle_bytes_written: u64,
}

impl FamilyStats {
    /// Stored entries / live entries (1.0 when nothing is live).
    pub fn space_amplification(&self) -> f64 {
        ratio(self.stored_entries, self.live_entries)
    }
    /// Stored bytes / live bytes (1.0 when nothing is live).
    pub fn space_amplification_bytes(&self) -> f64 {
        ratio(self.stored_bytes, self.live_bytes)
    }
    /// (flush + compaction bytes written) / user bytes: the family's share of
    /// write amplification, without the shared log. 1.0 when the family took
    /// no user bytes since the store opened, whatever it wrote (see the
    /// module's definitions).
    pub fn write_amplification(&self) -> f64 {
        ratio(
            self.flush_bytes_written + self.compaction_bytes_written,
            self.user_bytes_written,
        )
    }
}

/// Statistics of a store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Per family, in id order.
    pub families: Vec<FamilyStats>,
    /// Bytes appended to the write-ahead log since open (record headers included).
    pub log_bytes_written: u64,
}

impl Stats {
    /// The family with this name.
    pub fn family(&self, name: &str) -> Option<&FamilyStats> {
        self.families.iter().find(|f| f.name == name)
    }
    /// Writes applied, all families.
    pub fn user_entries_written(&self) -> u64 {
        self.families.iter().map(|f| f.user_entries_written).sum()
    }
    /// User bytes written, all families.
    pub fn user_bytes_written(&self) -> u64 {
        self.families.iter().map(|f| f.user_bytes_written).sum()
    }
    /// Bytes written to disk: log + flushes + compactions.
    pub fn disk_bytes_written(&self) -> u64 {
        self.log_bytes_written
            + self
                .families
                .iter()
                .map(|f| f.flush_bytes_written + f.compaction_bytes_written)
                .sum::<u64>()
    }
    /// Disk bytes written / user bytes written; 1.0 when no user bytes were
    /// written since the store opened, whatever the store wrote (see the
    /// module's definitions).
    pub fn write_amplification(&self) -> f64 {
        ratio(self.disk_bytes_written(), self.user_bytes_written())
    }
}

/// `a / b`, and 1.0 when `b` is 0 (the amplifications' convention).
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// One family's statistics, read at `sequence` and clock `now_ms`.
fn family_stats(fam: &FamilyVersion, sequence: u64, now_ms: u64) -> Result<FamilyStats> {
    let c = &fam.counters;
    let mut s = FamilyStats {
        name: fam.name.clone(),
        memtable_entries: fam.active.entries() as u64,
        memtable_bytes: fam.active.bytes() as u64,
        memtable_tombstones: fam.active.tombstones() as u64,
        memtable_key_range: fam.active.key_range(),
        frozen_memtables: fam.frozen.len() as u64,
        table_files: fam.tables.len() as u64,
        runs: fam.runs().len() as u64,
        table_bytes: fam.tables.iter().map(|t| t.meta.size).sum(),
        file_sizes: fam.tables.iter().map(|t| t.meta.size).collect(),
        user_entries_written: c.user_entries.load(Ordering::Relaxed),
        user_bytes_written: c.user_bytes.load(Ordering::Relaxed),
        flushes: c.flushes.load(Ordering::Relaxed),
        flush_bytes_written: c.flush_bytes.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        compaction_bytes_read: c.compaction_bytes_read.load(Ordering::Relaxed),
        compaction_bytes_written: c.compaction_bytes_written.load(Ordering::Relaxed),
        settles: c.settles.load(Ordering::Relaxed),
        settle_bytes_written: c.settle_bytes_written.load(Ordering::Relaxed),
        ..FamilyStats::default()
    };
    // Stored and live: one pass over every source, counting both.
    let expire_before = fam.options.expire_before(now_ms);
    let mut visibility = Visibility::new(sequence, fam.options.max_versions, expire_before);
    let mut cursors = Vec::new();
    for source in sources(fam) {
        match source {
            Source::Memtable { memtable, .. } if memtable.is_empty() => {}
            Source::Memtable { .. } => cursors.push(source.cursor(&[], None)?),
            Source::Table(table) => cursors.push(whole_file_cursor(table)?),
        }
    }
    let mut merge = MergeIterator::new(cursors);
    while merge.valid() {
        let k = merge.key();
        let bytes = (k.len() + merge.value().len()) as u64;
        if let Some((_, seq, kind)) = key::suffix(k) {
            if seq <= sequence {
                s.stored_entries += 1;
                s.stored_bytes += bytes;
                s.tombstones += u64::from(kind.is_tombstone());
            }
        }
        let Some(verdict) = visibility.judge(k) else {
            return Err(merge.undecodable_key());
        };
        if verdict == Verdict::Visible {
            s.live_entries += 1;
            s.live_bytes += bytes;
        }
        merge.next()?;
    }
    Ok(s)
}

/// The statistics of every family of `version`, as a reader at `sequence`
/// and clock `now_ms` sees them, with the store's log bytes.
pub(crate) fn collect(version: &Version, sequence: u64, now_ms: u64, log_bytes_written: u64) -> Result<Stats> {
    let mut families = Vec::new();
    for fam in version.families.values() {
        families.push(family_stats(fam, sequence, now_ms)?);
    }
    Ok(Stats {
        families,
        log_bytes_written,
    })
}

pub(crate) fn tables(v: &Version) -> Vec<TableInfo> {
    let mut out = Vec::new();
    for fam in v.families.values() {
        for t in &fam.tables {
            out.push(TableInfo {
                family: fam.name.clone(),
                file_id: t.meta.file_id,
                run: t.meta.run,
                level: t.meta.level,
                path: t.path.clone(),
                size: t.meta.size,
                entries: t.meta.entries,
                tombstones: t.meta.tombstones,
                data_blocks: t.table.properties().data_blocks,
                data_bytes: t.table.properties().data_bytes,
                compression: t.table.properties().compression,
                compressed_blocks: t.table.properties().compressed_blocks,
                uncompressed_data_bytes: t.table.properties().uncompressed_data_bytes,
                index_bytes: t.table.properties().index_bytes,
                filter_bytes: t.table.properties().filter_bytes,
                raw_key_bytes: t.table.properties().raw_key_bytes,
                stored_key_bytes: t.table.properties().stored_key_bytes,
                raw_value_bytes: t.table.properties().raw_value_bytes,
                first_key: t.meta.first_key.clone(),
                last_key: t.meta.last_key.clone(),
            });
        }
    }
    out
}
