//! The three programs of the wide-column lesson, run on a real store.
//!
//! The lesson ("Wide-Column Stores", a text outside this repository whose
//! printed figures are quoted here as constants) measures a toy model held in
//! memory. Each function here builds the same data with the lesson's formulas
//! into a cellar store in `dir`, runs the same reads, and returns a report of
//! every figure measured. A report's `render` prints the lesson's table with two
//! columns per figure: **lesson**, the figure the lesson printed (a constant
//! cited from the lesson, never used in a computation), and **cellar**, measured
//! now from the engine's [`Trace`]s, [`cellar_engine::Stats`] and table list;
//! then one line per figure that differs, saying why.
//!
//! * [`append_only()`]: tombstones, sources visited newest to oldest, compaction.
//! * [`wide_row()`]: a 4,000-column row sliced by column range, and the same
//!   question asked of a table partitioned by another key.
//! * [`layout()`]: column families against one family holding every field,
//!   counted in pages touched.
//!
//! And one lesson from another seed (query-first design, `seeds/001`), on
//! `cellar_tables`:
//!
//! * [`query_first()`]: a layout per read path, kept in step by atomic
//!   batches, against a filtering scan; what the layouts cost in writes,
//!   bytes and moved rows; a read path added after launch and its backfill;
//!   the largest partition with and without a time bucket.

mod append_only;
mod layout;
mod picture;
mod query_first;
mod render;
mod wide_row;

use std::path::Path;

use cellar_engine::{FamilyStats, Settled, SourceKind, SourceTrace, Stats, Trace};

use crate::error::{Error, Result};

/// The time every lesson writes at: 2024-06-01 00:00:00 UTC, in milliseconds.
///
/// A fixed clock instead of the wall clock makes every figure, bytes on disk
/// included, the same on every run, so the README's tables are what a fresh
/// run prints. (Timestamps are part of every cell's key, and neighbouring
/// keys store them as XORs: the wall clock would change a few bytes per run.)
pub(crate) const LOAD_TIME_MS: u64 = 1_717_200_000_000;

pub use append_only::{
    append_only, append_only_with, AmplificationPoint, AppendOnlyReport, FileRange, PointRead,
    FAMILY as APPEND_ONLY_FAMILY,
};
pub use layout::{
    layout, layout_with, FamilyBytes, LayoutQuery, LayoutReport, Measured, FAMILIES, FAMILY_LAYOUT_STORE, LZ4_STORES,
    ROW_LAYOUT, ROW_LAYOUT_STORE,
};
pub use picture::page;
pub use query_first::{query_first, query_first_with, LayoutBytes, PathCost, QueryFirstReport};
pub use wide_row::{wide_row, wide_row_with, PathRead, WideRowReport, BY_BOOK, BY_MEMBER};

/// What one read cost, copied from its [`Trace`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadFigures {
    /// Read requests made to the store: the traces these figures sum (the
    /// lesson's "round trips").
    pub requests: u64,
    /// Memtables and table files consulted until the answer was known (the
    /// lesson's "files visited").
    pub sources_visited: u64,
    /// Table files among them.
    pub files_visited: u64,
    /// Table files settled by their key range alone (no I/O).
    pub settled_by_key_range: u64,
    /// Table files ruled out by their bloom filter (no data block read).
    pub settled_by_filter: u64,
    /// Memtables ruled out by their row filter (not searched).
    pub memtables_filtered: u64,
    /// Sources searched (memtables included).
    pub searched: u64,
    /// Entries the sources produced inside the requested range, shadowed
    /// versions and tombstones included (the lesson's "entries read").
    pub entries_examined: u64,
    /// Cells (or rows, for a scan) returned.
    pub entries_returned: u64,
    /// Data blocks read.
    pub data_blocks: u64,
    /// Bytes of those blocks read from the file, as stored.
    pub data_bytes: u64,
    /// Bytes the compressed blocks among them decompressed to.
    pub decompressed_bytes: u64,
    /// Distinct 4096-byte pages touched, summed over files.
    pub pages_touched: u64,
    /// Bloom filter probes (memtables' row filters included).
    pub filter_checks: u64,
    /// Bloom filter probes that answered "absent".
    pub filter_negatives: u64,
    /// The trace source by source, newest first.
    pub sources: Vec<SourceTrace>,
}

impl From<&Trace> for ReadFigures {
    fn from(t: &Trace) -> ReadFigures {
        ReadFigures {
            requests: 1,
            sources_visited: t.sources_visited(),
            files_visited: t.files_visited(),
            settled_by_key_range: tables_settled_by(t, Settled::KeyRange),
            settled_by_filter: tables_settled_by(t, Settled::Filter),
            memtables_filtered: t.settled_by(Settled::Filter) - tables_settled_by(t, Settled::Filter),
            searched: t.settled_by(Settled::Searched),
            entries_examined: t.entries_examined(),
            entries_returned: t.entries_returned,
            data_blocks: t.data_blocks(),
            data_bytes: t.data_bytes(),
            decompressed_bytes: t.decompressed_bytes(),
            pages_touched: t.pages_touched(),
            filter_checks: t.filter_checks(),
            filter_negatives: t.filter_negatives(),
            sources: t.sources.clone(),
        }
    }
}

/// Table files of a trace settled in the given way.
fn tables_settled_by(t: &Trace, how: Settled) -> u64 {
    t.sources
        .iter()
        .filter(|s| matches!(s.source, SourceKind::Table { .. }) && s.settled == how)
        .count() as u64
}

impl ReadFigures {
    /// The cost of no read at all: what [`ReadFigures::add`] starts from.
    pub fn none() -> ReadFigures {
        ReadFigures {
            requests: 0,
            ..ReadFigures::from(&Trace::default())
        }
    }

    /// Adds the cost of another read (several requests answering one question).
    pub fn add(&mut self, other: &ReadFigures) {
        self.requests += other.requests;
        self.sources_visited += other.sources_visited;
        self.files_visited += other.files_visited;
        self.settled_by_key_range += other.settled_by_key_range;
        self.settled_by_filter += other.settled_by_filter;
        self.memtables_filtered += other.memtables_filtered;
        self.searched += other.searched;
        self.entries_examined += other.entries_examined;
        self.entries_returned += other.entries_returned;
        self.data_blocks += other.data_blocks;
        self.data_bytes += other.data_bytes;
        self.decompressed_bytes += other.decompressed_bytes;
        self.pages_touched += other.pages_touched;
        self.filter_checks += other.filter_checks;
        self.filter_negatives += other.filter_negatives;
        self.sources.extend(other.sources.iter().cloned());
    }

    /// How the sources were settled, newest first, e.g.
    /// `memtable searched, 4 key range, 1 filter, 1 searched (1 block)`, or
    /// `memtable ruled out by its row filter, ...` when the memtable's row
    /// filter said the row is not there.
    pub fn how_settled(&self) -> String {
        let memtables: Vec<&SourceTrace> = self
            .sources
            .iter()
            .filter(|s| !matches!(s.source, SourceKind::Table { .. }))
            .collect();
        let tables: Vec<&SourceTrace> = self
            .sources
            .iter()
            .filter(|s| matches!(s.source, SourceKind::Table { .. }))
            .collect();
        let mut parts = Vec::new();
        let filtered = memtables.iter().filter(|s| s.settled == Settled::Filter).count();
        match memtables.len() - filtered {
            0 => {}
            1 => parts.push("memtable searched".to_string()),
            n => parts.push(format!("{n} memtables searched")),
        }
        match filtered {
            0 => {}
            1 => parts.push("memtable ruled out by its row filter".to_string()),
            n => parts.push(format!("{n} memtables ruled out by their row filters")),
        }
        let count = |how: Settled| tables.iter().filter(|s| s.settled == how).count();
        if count(Settled::KeyRange) > 0 {
            parts.push(format!("{} key range", count(Settled::KeyRange)));
        }
        if count(Settled::Filter) > 0 {
            parts.push(format!("{} filter", count(Settled::Filter)));
        }
        let searched = count(Settled::Searched);
        if searched > 0 {
            let blocks: u64 = tables
                .iter()
                .filter(|s| s.settled == Settled::Searched)
                .map(|s| s.data_blocks)
                .sum();
            parts.push(format!("{searched} searched ({})", plural(blocks, "block")));
        }
        parts.join(", ")
    }
}

/// A family's counters, copied from [`FamilyStats`].
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyFigures {
    /// Family name.
    pub name: String,
    /// Writes applied (puts and deletes).
    pub entries_written: u64,
    /// Their user bytes (row + column + value).
    pub user_bytes_written: u64,
    /// Entries stored in memtables and table files, versions and tombstones included.
    pub stored_entries: u64,
    /// Entries a reader can see.
    pub live_entries: u64,
    /// Tombstones stored.
    pub tombstones: u64,
    /// Key + value bytes stored.
    pub stored_bytes: u64,
    /// Key + value bytes live.
    pub live_bytes: u64,
    /// Table files.
    pub table_files: u64,
    /// Their bytes on disk.
    pub table_bytes: u64,
    /// Memtables holding entries (the active one if not empty, plus frozen ones).
    pub memtables: u64,
    /// Entries in the active memtable.
    pub memtable_entries: u64,
    /// Tombstones among them.
    pub memtable_tombstones: u64,
    /// The first and last row in the active memtable (`None` when empty).
    pub memtable_rows: Option<(String, String)>,
    /// Stored / live entries.
    pub space_amplification: f64,
    /// Stored / live bytes.
    pub space_amplification_bytes: f64,
    /// Bytes written by flushes.
    pub flush_bytes_written: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
}

impl FamilyFigures {
    /// The figures of `family` in `stats`.
    pub fn of(stats: &Stats, family: &str) -> Result<FamilyFigures> {
        let f = stats
            .family(family)
            .ok_or_else(|| Error::MissingFamily(family.to_string()))?;
        Ok(FamilyFigures::from(f))
    }

    /// Places data sits in: table files plus memtables holding entries (what
    /// the lesson, which calls its memtable a file, counts as files).
    pub fn places(&self) -> u64 {
        self.table_files + self.memtables
    }
}

impl From<&FamilyStats> for FamilyFigures {
    fn from(f: &FamilyStats) -> FamilyFigures {
        FamilyFigures {
            name: f.name.clone(),
            entries_written: f.user_entries_written,
            user_bytes_written: f.user_bytes_written,
            stored_entries: f.stored_entries,
            live_entries: f.live_entries,
            tombstones: f.tombstones,
            stored_bytes: f.stored_bytes,
            live_bytes: f.live_bytes,
            table_files: f.table_files,
            table_bytes: f.table_bytes,
            memtables: u64::from(f.memtable_entries > 0) + f.frozen_memtables,
            memtable_entries: f.memtable_entries,
            memtable_tombstones: f.memtable_tombstones,
            memtable_rows: f
                .memtable_key_range
                .as_ref()
                .map(|(first, last)| (row_text(first), row_text(last))),
            space_amplification: f.space_amplification(),
            space_amplification_bytes: f.space_amplification_bytes(),
            flush_bytes_written: f.flush_bytes_written,
            compaction_bytes_read: f.compaction_bytes_read,
            compaction_bytes_written: f.compaction_bytes_written,
        }
    }
}

/// Makes sure `dir` exists and is empty: a lesson measures the store it
/// builds, and nothing else.
fn prepare(dir: &Path) -> Result<()> {
    check_folder(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Checks, without making anything, that a lesson can build its store in
/// `dir`: absent, or an empty folder. A caller running several lessons
/// checks every folder first, so that none runs when a later one would be
/// refused.
pub fn check_folder(dir: &Path) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            Some(_) => Err(Error::NotEmpty(dir.to_path_buf())),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        // Not "not empty": there is nothing inside a file to look for.
        Err(_) if dir.exists() && !dir.is_dir() => Err(Error::NotAFolder(dir.to_path_buf())),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// `n` with thousands separators: `263,867` (one function for the tables
/// and the pictures, so they print the same figures the same way).
pub(crate) use cellar_picture::thousands;

/// The row of an internal key, as text.
pub(crate) fn row_text(internal_key: &[u8]) -> String {
    cellar_engine::key::parse(internal_key)
        .map(|k| String::from_utf8_lossy(&k.row).into_owned())
        .unwrap_or_else(|| "?".to_string())
}

/// `1 block`, `2 blocks`.
pub(crate) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{} {word}s", thousands(n))
    }
}

/// `a / b` (1.0 when `b` is 0, as the engine's ratios).
pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}
