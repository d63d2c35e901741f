//! Where a settled store's bytes go: the scale run's space amplification
//! taken apart, file by file and block by block.
//!
//! The scale run ([`super::scale`]) prints one figure per phase: bytes on
//! disk (logs included) / (116 B x distinct keys). This module says what
//! those bytes are, from the files themselves (the tables' properties, the
//! log segments record by record, the manifest) and the store's own counters:
//!
//! * per level: the data blocks (split into stored key bytes, values, and the
//!   rest: entry headers, restart arrays, block trailers), the index, filter
//!   and properties blocks and the footers;
//! * the log segments: each one's size, records, where its last record ends,
//!   and whether a family still needs it;
//! * the manifest and the other small files, and any table file on disk that
//!   the current version does not list;
//! * the entries stored against the distinct keys: every copy beyond one per
//!   key is a superseded version waiting for compaction to meet it.
//!
//! [`fill_and_measure`] builds the scale run's store (the same keys, values
//! and options as `cellar`: fillrandom then overwrite, each settled,
//! which includes the settle at rest, `cellar_engine::Settle`) and prints
//! the breakdown after each phase, with how long the wait for background
//! work took and what the settles wrote; [`breakdown`] measures any open
//! store. The `space` example runs it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use cellar_engine::inspect;
use cellar_engine::{Compaction, FamilyOptions, Store, StoreOptions, SyncPolicy, TableInfo};

use super::workloads::{disk_bytes, key, Rng, Values, VALUE_BYTES};
use super::ENTRY_BYTES;
use crate::error::{Error, Result};

/// The family the scale run's `cellar` writes.
const FAMILY: &str = "bench";

/// The column each key's value is written under (as [`super::cellar`] does).
const COLUMN: &[u8] = b"v";

/// Bytes of a table's footer (`sstable/FORMAT.md`).
const FOOTER_BYTES: u64 = 72;

/// One level's table files, summed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelBytes {
    /// The level.
    pub level: u32,
    /// Table files.
    pub files: u64,
    /// Entries stored.
    pub entries: u64,
    /// Bytes of the files.
    pub bytes: u64,
    /// Data blocks, trailers included.
    pub data: u64,
    /// Key bytes as stored in the data blocks (after prefix compression and
    /// the trailer's XOR coding).
    pub stored_keys: u64,
    /// Full internal key bytes, before any compression.
    pub raw_keys: u64,
    /// Value bytes.
    pub values: u64,
    /// Index blocks, trailers included.
    pub index: u64,
    /// Filter blocks, trailers included.
    pub filter: u64,
    /// Properties blocks, trailers included.
    pub properties: u64,
    /// Footers.
    pub footers: u64,
}

impl LevelBytes {
    fn add(&mut self, t: &TableInfo) {
        self.files += 1;
        self.entries += t.entries;
        self.bytes += t.size;
        self.data += t.data_bytes;
        self.stored_keys += t.stored_key_bytes;
        self.raw_keys += t.raw_key_bytes;
        self.values += t.raw_value_bytes;
        self.index += t.index_bytes;
        self.filter += t.filter_bytes;
        self.footers += FOOTER_BYTES;
        // What is left of the file is the properties block.
        self.properties += t
            .size
            .saturating_sub(t.data_bytes + t.index_bytes + t.filter_bytes + FOOTER_BYTES);
    }

    /// Data block bytes that are neither key nor value: each entry's three
    /// length varints, the restart arrays and the block trailers.
    pub fn data_overhead(&self) -> u64 {
        self.data.saturating_sub(self.stored_keys + self.values)
    }
}

/// One log segment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSegment {
    /// Its number.
    pub number: u64,
    /// Its length.
    pub bytes: u64,
    /// Records that decode.
    pub records: u64,
    /// Writes in them.
    pub writes: u64,
    /// Where the last record's frame ends: bytes past it are not records.
    pub end_of_records: u64,
    /// Whether some family still needs it (its number is at or above the
    /// oldest segment a family needs).
    pub needed: bool,
}

/// Where a store's bytes go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    /// Distinct keys (live entries: what a reader sees).
    pub live: u64,
    /// Entries stored, memtables and tables (every version of every key).
    pub stored: u64,
    /// Entries in the active memtable (held on disk by the log only).
    pub memtable_entries: u64,
    /// Per level, the levels that hold files, top down.
    pub levels: Vec<LevelBytes>,
    /// The log segments, oldest first.
    pub logs: Vec<LogSegment>,
    /// The live manifest's length.
    pub manifest: u64,
    /// Every other file: name and length (`CURRENT`, `LOCK`, old manifests, ...).
    pub others: Vec<(String, u64)>,
    /// Table files in a family's folder that the current version does not list.
    pub unlisted: Vec<(String, u64)>,
    /// Bytes of every file under the store's folder (the scale run's figure).
    pub disk: u64,
    /// Bytes written to disk (log, flushes, compactions) / user bytes written,
    /// since the store was opened.
    pub write_amp: f64,
    /// Where the superseded copies sit: per source (the active memtable as
    /// `None`, then each level), the entries of a cell that a newer source
    /// also holds ([`count_shadowed`]; empty until it is called).
    pub shadowed: Vec<(Option<u32>, u64)>,
}

impl Breakdown {
    /// The user's bytes: 116 per distinct key.
    pub fn user_bytes(&self) -> u64 {
        self.live * ENTRY_BYTES
    }
    /// Bytes on disk / user bytes.
    pub fn space_amp(&self) -> f64 {
        share(self.disk, self.user_bytes())
    }
    /// Bytes of the tables at `level`.
    fn level_bytes(&self, level: u32) -> u64 {
        self.levels.iter().filter(|l| l.level == level).map(|l| l.bytes).sum()
    }
    /// The figure and its parts on one line, each a share of the user bytes:
    /// level 0, the levels between it and the last, the last level (the
    /// deepest that holds a file), the log segments and the other files.
    pub fn summary(&self) -> String {
        let user = self.user_bytes();
        let of = |bytes: u64| share(bytes, user);
        let last = self.levels.iter().map(|l| l.level).filter(|&l| l > 0).max();
        let middle: u64 = self
            .levels
            .iter()
            .filter(|l| l.level > 0 && Some(l.level) != last)
            .map(|l| l.bytes)
            .sum();
        let (first, last_bytes) = (self.level_bytes(0), last.map_or(0, |l| self.level_bytes(l)));
        let logs: u64 = self.logs.iter().map(|l| l.bytes).sum();
        let rest = self.disk.saturating_sub(first + middle + last_bytes + logs);
        format!(
            "space {:.4} = level 0 {:.4} + middle levels {:.4} + last level {:.4} + logs {:.4} + rest {:.4}; \
             superseded copies {:.4} of the keys; write amplification {:.2}",
            self.space_amp(),
            of(first),
            of(middle),
            of(last_bytes),
            of(logs),
            of(rest),
            share(self.stored.saturating_sub(self.live), self.live),
            self.write_amp,
        )
    }
}

fn share(bytes: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        bytes as f64 / of as f64
    }
}

/// Measures the store `store`, open in `dir`, once its background work has settled.
pub fn breakdown(store: &Store, dir: &Path) -> Result<Breakdown> {
    let stats = store.stats()?;
    let tables = store.tables();
    let mut out = Breakdown {
        live: stats.families.iter().map(|f| f.live_entries).sum(),
        stored: stats.families.iter().map(|f| f.stored_entries).sum(),
        memtable_entries: stats.families.iter().map(|f| f.memtable_entries).sum(),
        disk: disk_bytes(dir)?,
        write_amp: stats.write_amplification(),
        ..Breakdown::default()
    };
    for t in &tables {
        let at = match out.levels.iter().position(|l| l.level == t.level) {
            Some(at) => at,
            None => {
                out.levels.push(LevelBytes {
                    level: t.level,
                    ..LevelBytes::default()
                });
                out.levels.len() - 1
            }
        };
        if let Some(level) = out.levels.get_mut(at) {
            level.add(t);
        }
    }
    out.levels.sort_by_key(|l| l.level);
    let manifest_path = inspect::live_manifest(dir)?;
    let manifest = inspect::dump_manifest(&manifest_path)?;
    out.manifest = manifest.file_bytes;
    let oldest_needed = manifest.families.iter().map(|f| f.log_number).min().unwrap_or(0);
    let listed: BTreeSet<&Path> = tables.iter().map(|t| t.path.as_path()).collect();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let meta = entry.metadata().map_err(|e| Error::io(&path, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if meta.is_dir() {
            out.unlisted.extend(unlisted_tables(&path, &listed)?);
        } else if let Some(number) = name.strip_suffix(".log").and_then(|n| n.parse::<u64>().ok()) {
            out.logs.push(log_segment(&path, number, number >= oldest_needed)?);
        } else if path == manifest_path {
            // Counted above.
        } else {
            out.others.push((name, meta.len()));
        }
    }
    out.logs.sort_by_key(|l| l.number);
    out.others.sort();
    Ok(out)
}

/// The files of a family's folder that `listed` does not name, with their lengths.
fn unlisted_tables(folder: &Path, listed: &BTreeSet<&Path>) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(|e| Error::io(folder, e))? {
        let entry = entry.map_err(|e| Error::io(folder, e))?;
        let path = entry.path();
        if !listed.contains(path.as_path()) {
            let len = entry.metadata().map_err(|e| Error::io(&path, e))?.len();
            out.push((path.display().to_string(), len));
        }
    }
    Ok(out)
}

fn log_segment(path: &Path, number: u64, needed: bool) -> Result<LogSegment> {
    let dump = inspect::dump_log(path)?;
    let last = dump.records.last();
    Ok(LogSegment {
        number,
        bytes: dump.file_bytes,
        records: dump.records.len() as u64,
        writes: dump
            .records
            .iter()
            .map(|r| r.batch.as_ref().map_or(0, |(_, ops)| ops.len() as u64))
            .sum(),
        // A frame is its payload behind an 8-byte header (FORMAT-log-manifest.md).
        end_of_records: last.map_or(0, |r| r.offset + 8 + r.payload_bytes),
        needed,
    })
}

/// The breakdown as a table: bytes, and bytes per user byte.
pub fn render(b: &Breakdown) -> String {
    let user = b.user_bytes();
    let mut out = String::new();
    let mut row = |what: &str, bytes: u64, note: String| {
        let _ = writeln!(out, "  {what:<34} {bytes:>14} {:>8.4}  {note}", share(bytes, user));
    };
    row(
        "user bytes (116 B x distinct keys)",
        user,
        format!("{} distinct keys", b.live),
    );
    let mut tables = 0;
    for l in &b.levels {
        tables += l.bytes;
        let per = |bytes: u64| share(bytes, l.entries);
        row(
            &format!("level {} tables", l.level),
            l.bytes,
            format!("{} files, {} entries, {:.2} B/entry", l.files, l.entries, per(l.bytes)),
        );
        row(
            "  data: keys as stored",
            l.stored_keys,
            format!("{:.2} B/entry (raw {:.2})", per(l.stored_keys), per(l.raw_keys)),
        );
        row("  data: values", l.values, format!("{:.2} B/entry", per(l.values)));
        row(
            "  data: headers, restarts, trailers",
            l.data_overhead(),
            format!("{:.2} B/entry", per(l.data_overhead())),
        );
        row("  index blocks", l.index, format!("{:.2} B/entry", per(l.index)));
        row("  filter blocks", l.filter, format!("{:.2} B/entry", per(l.filter)));
        row("  properties blocks", l.properties, String::new());
        row("  footers", l.footers, String::new());
    }
    row("all tables", tables, String::new());
    for log in &b.logs {
        row(
            &format!("log {:06}.log", log.number),
            log.bytes,
            format!(
                "{} records, {} writes, {:.2} B/write, records end at {}, {}",
                log.records,
                log.writes,
                share(log.bytes, log.writes),
                log.end_of_records,
                if log.needed { "needed" } else { "NOT needed" }
            ),
        );
    }
    row("manifest", b.manifest, String::new());
    for (name, bytes) in &b.others {
        row(name, *bytes, String::new());
    }
    for (name, bytes) in &b.unlisted {
        row(&format!("UNLISTED {name}"), *bytes, String::new());
    }
    row(
        "on disk",
        b.disk,
        format!(
            "space amplification {:.4}, write amplification {:.2}",
            b.space_amp(),
            b.write_amp
        ),
    );
    let _ = writeln!(
        out,
        "  entries stored {} (active memtable {}), distinct keys {}: {} superseded copies ({:.4} of the keys)",
        b.stored,
        b.memtable_entries,
        b.live,
        b.stored.saturating_sub(b.live),
        share(b.stored.saturating_sub(b.live), b.live)
    );
    if !b.shadowed.is_empty() {
        let parts: Vec<String> = b
            .shadowed
            .iter()
            .map(|(level, n)| match level {
                None => format!("memtable {n}"),
                Some(l) => format!("level {l} {n}"),
            })
            .collect();
        let _ = writeln!(out, "  superseded copies by where they sit: {}", parts.join(", "));
    }
    out
}

/// Counts, per source, the entries whose cell a newer source also holds:
/// where the superseded copies sit. Sources are read newest first, as a
/// read consults them: the active memtable (its writes, from the log
/// segments a family still needs, newest last), then the table files in
/// read order ([`Store::tables`]: level 0's runs newest first, then each
/// deeper level). A cell is known by a 64-bit hash of its encoded row and
/// column (a collision among 10M cells is about a one in 10^5 chance, and
/// would move one count).
pub fn count_shadowed(store: &Store, b: &Breakdown, dir: &Path) -> Result<Vec<(Option<u32>, u64)>> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<(Option<u32>, u64)> = Vec::new();
    let mut count = |level: Option<u32>, cell: &[u8], out: &mut Vec<(Option<u32>, u64)>| {
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(cell, &mut h);
        let shadowed = !seen.insert(std::hash::Hasher::finish(&h));
        match out.iter_mut().find(|(l, _)| *l == level) {
            Some((_, n)) => *n += u64::from(shadowed),
            None => out.push((level, u64::from(shadowed))),
        }
    };
    let mut writes = Vec::new();
    for log in b.logs.iter().filter(|l| l.needed) {
        let dump = inspect::dump_log(&dir.join(format!("{:06}.log", log.number)))?;
        for record in dump.records {
            if let Ok((_, ops)) = record.batch {
                writes.extend(
                    ops.into_iter()
                        .map(|op| cellar_engine::key::cell_prefix(&op.row, &op.column)),
                );
            }
        }
    }
    for cell in writes.iter().rev() {
        count(None, cell, &mut out);
    }
    for t in store.tables() {
        let table = std::sync::Arc::new(cellar_sstable::Table::open(&t.path)?);
        let mut it = table.iter_unmapped()?;
        it.seek_to_first()?;
        while it.valid() {
            count(Some(t.level), cellar_engine::key::prefix(it.key()), &mut out);
            it.next()?;
        }
    }
    Ok(out)
}

/// Opens (or creates) the scale run's store in `dir`, its family of options
/// `family`, unsynced as the scale run writes.
fn open_store(dir: &Path, family: FamilyOptions) -> Result<Store> {
    let options = StoreOptions::default().sync(SyncPolicy::Never);
    Ok(Store::open(dir, options.family_with(FAMILY, family))?)
}

/// The options of the scale run's `cellar` family (the defaults,
/// leveled; [`super::cellar::Cellar::open`]).
pub fn scale_family() -> FamilyOptions {
    FamilyOptions::default().compaction(Compaction::LEVELED)
}

/// Builds the scale run's store in `dir` (fillrandom then overwrite of `num`
/// keys drawn from `seed`, each phase settled, nothing flushed or compacted
/// by hand), its family of options `family` ([`scale_family`]: those of
/// `cellar`), and returns each phase's breakdown. With
/// `every` > 0 it also settles after every `every` writes and adds a
/// [`Breakdown::summary`] line: the figure at that stopping point, to show how
/// it moves with where the writes stop. (Pausing to settle lets compaction
/// catch up earlier than an unpaused run would, so the later figures are
/// close to, not exactly, the unpaused run's.)
pub fn fill_and_measure(dir: &Path, family: FamilyOptions, num: u64, seed: u64, every: u64) -> Result<String> {
    // A store already there would be written to and measured with the new one.
    crate::lesson::check_folder(dir)?;
    let store = open_store(dir, family)?;
    // The scale run's generators, drawn in its order: the same keys and values.
    let mut rng = Rng::new(seed);
    let mut values = Values::new(&mut rng);
    let mut out = String::new();
    let mut previous = None;
    for phase in ["fillrandom", "overwrite"] {
        for i in 1..=num {
            let k = rng.below(num);
            store.put(FAMILY, key(k), COLUMN, values.next(VALUE_BYTES))?;
            if every > 0 && i % every == 0 && i < num {
                store.wait_for_background_work()?;
                let _ = writeln!(out, "{phase} {i}: {}", breakdown(&store, dir)?.summary());
            }
        }
        let waited = std::time::Instant::now();
        store.wait_for_background_work()?;
        let seconds = waited.elapsed().as_secs_f64();
        let stats = store.stats()?;
        let mut b = breakdown(&store, dir)?;
        b.shadowed = count_shadowed(&store, &b, dir)?;
        let _ = writeln!(out, "{phase}, settled:");
        out.push_str(&render(&b));
        let _ = writeln!(out, "  {}", b.summary());
        let _ = writeln!(out, "  {}", settle_line(previous.as_ref(), &stats, seconds));
        previous = Some(stats);
    }
    Ok(out)
}

/// What the wait for background work after a phase took, and what the
/// settles at rest did in the phase and its wait (`cellar_engine::Settle`):
/// how many, the bytes they wrote, and those per byte the user wrote in the
/// phase (`previous`: the statistics after the phase before, if any).
fn settle_line(previous: Option<&cellar_engine::Stats>, now: &cellar_engine::Stats, seconds: f64) -> String {
    let sum =
        |s: &cellar_engine::Stats, f: fn(&cellar_engine::FamilyStats) -> u64| -> u64 { s.families.iter().map(f).sum() };
    let delta =
        |f: fn(&cellar_engine::FamilyStats) -> u64| sum(now, f).saturating_sub(previous.map_or(0, |p| sum(p, f)));
    let user = delta(|f| f.user_bytes_written);
    let settled = delta(|f| f.settle_bytes_written);
    format!(
        "waited {seconds:.1} s for background work; settles at rest {} writing {settled} bytes, {:.2} per user byte \
         of the phase",
        delta(|f| f.settles),
        share(settled, user),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small leveled store: 6,500 puts over 2,000 keys, flushed every
    /// 1,000 entries, settled.
    fn small_store(dir: &Path) -> Result<(Store, u64)> {
        let store = open_store(dir, scale_family().memtable_max_entries(1000))?;
        let mut rng = Rng::new(7);
        let mut values = Values::new(&mut rng);
        let mut distinct = BTreeSet::new();
        for _ in 0..6500 {
            let k = rng.below(2000);
            distinct.insert(k);
            store.put(FAMILY, key(k), COLUMN, values.next(VALUE_BYTES))?;
        }
        store.wait_for_background_work()?;
        Ok((store, distinct.len() as u64))
    }

    #[test]
    fn a_folder_already_holding_a_store_is_refused_and_left_alone() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        drop(small_store(dir.path())?);
        let listing = || -> Result<BTreeSet<(String, u64)>> {
            let entries = std::fs::read_dir(dir.path()).map_err(|e| Error::io(dir.path(), e))?;
            entries
                .map(|entry| {
                    let entry = entry.map_err(|e| Error::io(dir.path(), e))?;
                    let len = entry.metadata().map_err(|e| Error::io(entry.path(), e))?.len();
                    Ok((entry.file_name().to_string_lossy().into_owned(), len))
                })
                .collect()
        };
        let before = listing()?;
        let refused = fill_and_measure(dir.path(), scale_family(), 10, 1, 0);
        assert!(matches!(refused, Err(Error::NotEmpty(_))), "{refused:?}");
        assert_eq!(listing()?, before, "no file made, removed or written to");
        Ok(())
    }

    #[test]
    fn breakdown_accounts_for_every_byte_and_every_entry() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let (store, distinct) = small_store(dir.path())?;
        let b = breakdown(&store, dir.path())?;
        assert_eq!(b.live, distinct);
        let tables: u64 = b.levels.iter().map(|l| l.bytes).sum();
        let logs: u64 = b.logs.iter().map(|l| l.bytes).sum();
        let others: u64 = b.others.iter().chain(&b.unlisted).map(|(_, bytes)| bytes).sum();
        assert_eq!(b.disk, tables + logs + b.manifest + others, "{b:#?}");
        // Every stored entry is in a table or the active memtable (settled: nothing frozen).
        let in_tables: u64 = b.levels.iter().map(|l| l.entries).sum();
        assert_eq!(b.stored, in_tables + b.memtable_entries);
        assert!(b.stored > b.live, "6,500 puts over 2,000 keys leave superseded copies");
        // A table's parts add up to it: the properties block is what is left, and small.
        for l in &b.levels {
            assert_eq!(l.bytes, l.data + l.index + l.filter + l.properties + l.footers);
            assert!(l.properties > 0 && l.properties < 200 * l.files, "{l:?}");
            assert_eq!(l.values, l.entries * VALUE_BYTES as u64);
        }
        // One log segment, the one the memtable needs, all records, no unused tail.
        assert_eq!(b.logs.len(), 1, "{:?}", b.logs);
        let log = b.logs.first().ok_or_else(|| Error::Peer("no log segment".into()))?;
        assert!(log.needed);
        assert_eq!(log.end_of_records, log.bytes);
        assert_eq!(log.writes, b.memtable_entries);
        assert!(b.unlisted.is_empty(), "{:?}", b.unlisted);
        // The copies counted where they sit are the stored entries beyond one per key.
        let shadowed = count_shadowed(&store, &b, dir.path())?;
        assert_eq!(
            shadowed.iter().map(|(_, n)| n).sum::<u64>(),
            b.stored - b.live,
            "{shadowed:?}"
        );
        assert_eq!(b.memtable_entries, 500, "the last 500 puts are not flushed");
        assert_eq!(
            shadowed.first().map(|(level, _)| *level),
            Some(None),
            "the memtable first"
        );
        Ok(())
    }

    #[test]
    fn summary_names_the_last_level_only_when_one_holds_files() {
        let only_level_0 = Breakdown {
            live: 10,
            disk: 1160,
            levels: vec![LevelBytes {
                level: 0,
                bytes: 1160,
                ..LevelBytes::default()
            }],
            ..Breakdown::default()
        };
        assert!(
            only_level_0
                .summary()
                .starts_with("space 1.0000 = level 0 1.0000 + middle levels 0.0000 + last level 0.0000 + logs 0.0000"),
            "{}",
            only_level_0.summary()
        );
    }
}
