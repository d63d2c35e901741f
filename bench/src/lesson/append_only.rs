//! The append-only write path (the lesson's `column/append-only.mjs`).
//!
//! Every write is a fresh entry and a delete is a tombstone; a full memtable
//! becomes an immutable file; a read consults the sources newest to oldest; a
//! major compaction drops what no reader can see. The lesson counts "files
//! visited" by opening each one. A real engine settles most files from
//! metadata: their key range, or their bloom filter. This report prints the
//! lesson's count and, beside it, how each source was settled and what it
//! cost in data blocks and pages.

use std::path::Path;

use cellar_engine::{CompactionReport, FamilyOptions, RowRange, Store, StoreOptions, WriteBatch};

use super::render::{Differences, Grid, EXPECTED_SAME};
use super::{plural, prepare, row_text, thousands, FamilyFigures, ReadFigures, LOAD_TIME_MS};
use crate::error::Result;
use crate::progress::{Progress, Silent};

/// The family the lesson's records go to.
pub const FAMILY: &str = "loans";
/// Records written, then partly updated and deleted.
const RECORDS: u64 = 100_000;
/// The lesson's `FILE_SIZE`: the memtable is flushed at this many entries,
/// and major compaction cuts its output files at this many.
const FILE_ENTRIES: u64 = 25_000;
/// Cells per write batch: a divisor of every phase's size, so memtables fill
/// at exactly the same writes as with one write per call.
const BATCH: u64 = 1_000;
/// The one column of each record (the lesson's records are one value each).
const COLUMN: &str = "loan";

/// What the lesson printed ("Wide-Column Stores", output of
/// `column/append-only.mjs`), cited as printed. These label the "lesson"
/// column only; no cellar figure is computed from them.
mod printed {
    pub const RECORDS: u64 = 100_000;
    pub const ENTRIES_WRITTEN: u64 = 160_000;
    pub const LIVE: u64 = 80_000;
    pub const FILES: u64 = 7;
    pub const SPACE_AMPLIFICATION: &str = "2.00";
    /// name, key, files visited, entries read, result
    pub const READS: [(&str, &str, u64, u64, &str); 4] = [
        ("recently updated key", "loan:99996", 2, 1, "found"),
        ("key never touched", "loan:2", 7, 1, "found"),
        ("deleted key", "loan:99994", 1, 1, "missing"),
        ("key never written", "loan:999999", 7, 0, "missing"),
    ];
    pub const SCAN_FILES: u64 = 7;
    pub const SCAN_ENTRIES: u64 = 160_000;
    pub const SCAN_RESULT: u64 = 80_000;
    pub const AFTER_ENTRIES: u64 = 80_000;
    pub const AFTER_FILES: u64 = 4;
    pub const AFTER_SPACE_AMPLIFICATION: &str = "1.00";
    pub const AFTER_SCAN_ENTRIES: u64 = 80_000;
    pub const AFTER_SCAN_RESULT: u64 = 80_000;
}

/// One table file and the rows it spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRange {
    /// File number.
    pub file_id: u64,
    /// The sorted run it belongs to.
    pub run: u64,
    /// Entries it holds.
    pub entries: u64,
    /// Tombstones among them.
    pub tombstones: u64,
    /// Its smallest row key.
    pub first_row: String,
    /// Its largest row key.
    pub last_row: String,
    /// Its data blocks.
    pub data_blocks: u64,
}

impl FileRange {
    /// Whether `row` falls inside the file's key range (so the range alone
    /// cannot rule the file out).
    pub fn covers(&self, row: &str) -> bool {
        self.first_row.as_str() <= row && row <= self.last_row.as_str()
    }
}

/// One point read of the lesson.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointRead {
    /// The lesson's name for it.
    pub name: String,
    /// The row read.
    pub key: String,
    /// Whether a live value came back.
    pub found: bool,
    /// What it cost.
    pub cost: ReadFigures,
}

/// Every figure the append-only lesson measured.
#[derive(Clone, Debug, PartialEq)]
pub struct AppendOnlyReport {
    /// The family after the load (before compaction).
    pub loaded: FamilyFigures,
    /// Its table files, in the order reads consult them (newest first).
    pub files: Vec<FileRange>,
    /// The four point reads, in the lesson's order.
    pub reads: Vec<PointRead>,
    /// The full scan before compaction (`entries_returned` = rows).
    pub scan: ReadFigures,
    /// What the major compaction read and wrote.
    pub compaction: CompactionReport,
    /// The family after compaction.
    pub compacted: FamilyFigures,
    /// Its table files, in the order reads consult them.
    pub compacted_files: Vec<FileRange>,
    /// The same scan after compaction.
    pub scan_after: ReadFigures,
    /// Space amplification measured every 10,000 writes of the load (from
    /// the family's `Stats`), to watch it rise with updates and deletes.
    pub amplification: Vec<AmplificationPoint>,
}

/// Space amplification after some of the load's writes.
#[derive(Clone, Debug, PartialEq)]
pub struct AmplificationPoint {
    /// Writes applied so far (puts, updates and deletes).
    pub writes: u64,
    /// Entries stored then, versions and tombstones included.
    pub stored_entries: u64,
    /// Entries a reader could see.
    pub live_entries: u64,
    /// Stored / live entries.
    pub space_amplification: f64,
}

/// Writes between two measurements of space amplification during the load:
/// a multiple of `BATCH`, and a divisor of each phase, so a measurement
/// falls on every phase's end.
const SAMPLE_EVERY: u64 = 10_000;

/// Runs the append-only lesson in `dir` (created if missing, must be empty).
pub fn append_only(dir: &Path) -> Result<AppendOnlyReport> {
    append_only_with(dir, &Silent)
}

/// [`append_only()`], reporting the load's progress.
pub fn append_only_with(dir: &Path, progress: &dyn Progress) -> Result<AppendOnlyReport> {
    prepare(dir)?;
    let options = FamilyOptions::default()
        .memtable_max_entries(FILE_ENTRIES as usize)
        .target_file_entries(FILE_ENTRIES)
        .compaction_trigger(0);
    let store = Store::open(dir, StoreOptions::default().family_with(FAMILY, options))?;
    let amplification = load(&store, progress)?;
    // The memtables frozen at 25,000 entries are flushed in the background.
    store.wait_for_background_work()?;

    let loaded = FamilyFigures::of(&store.stats()?, FAMILY)?;
    let files = file_ranges(&store);
    let mut reads = Vec::new();
    for (name, row, ..) in printed::READS {
        let (cell, trace) = store.get_traced(FAMILY, row, COLUMN)?;
        reads.push(PointRead {
            name: name.to_string(),
            key: row.to_string(),
            found: cell.is_some(),
            cost: ReadFigures::from(&trace),
        });
    }
    let (_, trace) = store.scan_traced(FAMILY, &RowRange::all())?;
    let scan = ReadFigures::from(&trace);

    let compaction = store.compact(FAMILY)?;
    let compacted = FamilyFigures::of(&store.stats()?, FAMILY)?;
    let compacted_files = file_ranges(&store);
    let (_, trace) = store.scan_traced(FAMILY, &RowRange::all())?;
    let scan_after = ReadFigures::from(&trace);
    Ok(AppendOnlyReport {
        loaded,
        files,
        reads,
        scan,
        compaction,
        compacted,
        compacted_files,
        scan_after,
        amplification,
    })
}

/// The family's table files with the rows they span, as the engine lists them.
fn file_ranges(store: &Store) -> Vec<FileRange> {
    store
        .tables()
        .into_iter()
        .filter(|t| t.family == FAMILY)
        .map(|t| FileRange {
            file_id: t.file_id,
            run: t.run,
            entries: t.entries,
            tombstones: t.tombstones,
            first_row: row_text(&t.first_key),
            last_row: row_text(&t.last_key),
            data_blocks: t.data_blocks,
        })
        .collect()
}

/// The lesson's three phases: every record put, two in five updated, one in
/// five deleted. Returns space amplification measured along the way.
fn load(store: &Store, progress: &dyn Progress) -> Result<Vec<AmplificationPoint>> {
    let updates = (1..=RECORDS).filter(|i| i % 5 < 2).count() as u64;
    let deletes = (1..=RECORDS).filter(|i| i % 5 == 4).count() as u64;
    progress.start("append-only: loading", RECORDS + updates + deletes);
    let mut batch = WriteBatch::new();
    let mut written = 0u64;
    let mut amplification = Vec::new();
    let mut flush_batch = |batch: &mut WriteBatch| -> Result<()> {
        if batch.len() as u64 >= BATCH {
            store.write(batch)?;
            progress.advance(batch.len() as u64);
            written += batch.len() as u64;
            *batch = WriteBatch::new();
            if written.is_multiple_of(SAMPLE_EVERY) {
                let f = FamilyFigures::of(&store.stats()?, FAMILY)?;
                amplification.push(AmplificationPoint {
                    writes: written,
                    stored_entries: f.stored_entries,
                    live_entries: f.live_entries,
                    space_amplification: f.space_amplification,
                });
            }
        }
        Ok(())
    };
    // Each phase writes a millisecond after the one before: an update is
    // newer than the put it replaces, a delete newer than what it hides.
    for i in 1..=RECORDS {
        batch.put_at(
            FAMILY,
            format!("loan:{i}"),
            COLUMN,
            LOAD_TIME_MS,
            format!(r#"{{"book":{},"return":null}}"#, i % 5000),
        );
        flush_batch(&mut batch)?;
    }
    for i in (1..=RECORDS).filter(|i| i % 5 < 2) {
        batch.put_at(
            FAMILY,
            format!("loan:{i}"),
            COLUMN,
            LOAD_TIME_MS + 1,
            format!(r#"{{"book":{},"return":"2024-06-01"}}"#, i % 5000),
        );
        flush_batch(&mut batch)?;
    }
    for i in (1..=RECORDS).filter(|i| i % 5 == 4) {
        batch.delete_at(FAMILY, format!("loan:{i}"), COLUMN, LOAD_TIME_MS + 2);
        flush_batch(&mut batch)?;
    }
    if !batch.is_empty() {
        store.write(&batch)?;
    }
    progress.finish();
    Ok(amplification)
}

fn found(yes: bool) -> &'static str {
    if yes {
        "found"
    } else {
        "missing"
    }
}

impl AppendOnlyReport {
    /// Records the puts made: the entries live once all 100,000 puts were
    /// in, as the family's statistics said then (0 if the load was not
    /// sampled there).
    pub fn records(&self) -> u64 {
        self.amplification
            .iter()
            .find(|p| p.writes == RECORDS)
            .map_or(0, |p| p.live_entries)
    }

    /// The lesson's tables, lesson and cellar side by side, then the differences.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut diffs = Differences::new();
        out.push_str("== append-only: every write is a new entry, a delete is a tombstone ==\n");
        out.push_str(&format!(
            "100,000 puts, 40,000 updates (i % 5 < 2), 20,000 deletes (i % 5 == 4) into family `{FAMILY}`;\n\
             memtable flushed at {} entries, automatic compaction off.\n\n",
            thousands(FILE_ENTRIES)
        ));
        self.render_loaded(&mut out, &mut diffs);
        out.push_str("\nthe table files, newest first (as reads consult them):\n");
        let mut g = Grid::new();
        g.left_align(3).left_align(4);
        g.row(["file", "entries", "tombstones", "first row", "last row"]);
        for f in &self.files {
            g.row([
                format!("{}.sst", f.file_id),
                thousands(f.entries),
                thousands(f.tombstones),
                f.first_row.clone(),
                f.last_row.clone(),
            ]);
        }
        g.render(&mut out);
        out.push_str(&self.key_range_note());
        out.push('\n');
        self.render_reads(&mut out, &mut diffs);
        self.render_compaction(&mut out, &mut diffs);
        out.push('\n');
        diffs.render(&mut out);
        diffs.render_notes(&mut out);
        out
    }

    fn render_loaded(&self, out: &mut String, diffs: &mut Differences) {
        let l = &self.loaded;
        let mut g = Grid::new();
        g.left_align(3);
        g.row(["", "lesson", "cellar", ""]);
        g.row([
            "records".to_string(),
            thousands(printed::RECORDS),
            thousands(self.records()),
            format!("live after the {} puts", thousands(RECORDS)),
        ]);
        g.row([
            "entries written".to_string(),
            thousands(printed::ENTRIES_WRITTEN),
            thousands(l.entries_written),
            format!("{} stored", thousands(l.stored_entries)),
        ]);
        g.row([
            "live records".to_string(),
            thousands(printed::LIVE),
            thousands(l.live_entries),
            format!("{} tombstones stored", thousands(l.tombstones)),
        ]);
        g.row([
            "files (memtable counted as one)".to_string(),
            printed::FILES.to_string(),
            l.places().to_string(),
            format!(
                "{} table files + memtable ({} entries)",
                l.table_files,
                thousands(l.memtable_entries)
            ),
        ]);
        g.row([
            "space amplification, entries".to_string(),
            printed::SPACE_AMPLIFICATION.to_string(),
            format!("{:.2}", l.space_amplification),
            format!("{} / {}", thousands(l.stored_entries), thousands(l.live_entries)),
        ]);
        g.row([
            "space amplification, bytes".to_string(),
            "-".to_string(),
            format!("{:.2}", l.space_amplification_bytes),
            format!(
                "{} / {} key+value bytes; table files {} bytes",
                thousands(l.stored_bytes),
                thousands(l.live_bytes),
                thousands(l.table_bytes)
            ),
        ]);
        g.render(out);
        let same = |diffs: &mut Differences, what: &str, lesson: String, cellar: String| {
            diffs.check(what, &lesson, &cellar, EXPECTED_SAME);
        };
        same(diffs, "records", thousands(printed::RECORDS), thousands(self.records()));
        same(
            diffs,
            "entries written",
            thousands(printed::ENTRIES_WRITTEN),
            thousands(l.entries_written),
        );
        same(
            diffs,
            "live records",
            thousands(printed::LIVE),
            thousands(l.live_entries),
        );
        same(diffs, "files", printed::FILES.to_string(), l.places().to_string());
        same(
            diffs,
            "space amplification",
            printed::SPACE_AMPLIFICATION.to_string(),
            format!("{:.2}", l.space_amplification),
        );
        diffs.note(format!(
            "space amplification by bytes is {:.2}, not 2.00: a tombstone is a key with an empty value, \
             smaller than the record it hides.",
            l.space_amplification_bytes
        ));
    }

    fn render_reads(&self, out: &mut String, diffs: &mut Differences) {
        let mut g = Grid::new();
        g.read_headers("read", ["sources visited", "entries read", "result"]);
        for (read, (name, key, visits, entries, result)) in self.reads.iter().zip(printed::READS) {
            g.row([
                format!("{name} ({key})"),
                visits.to_string(),
                read.cost.sources_visited.to_string(),
                entries.to_string(),
                read.cost.entries_examined.to_string(),
                result.to_string(),
                found(read.found).to_string(),
                read.cost.data_blocks.to_string(),
                read.cost.pages_touched.to_string(),
                read.cost.filter_negatives.to_string(),
            ]);
            g.text(format!("settled: {}", read.cost.how_settled()));
            diffs.check(
                &format!("sources visited, {name}"),
                &visits.to_string(),
                &read.cost.sources_visited.to_string(),
                EXPECTED_SAME,
            );
            diffs.check(
                &format!("entries read, {name}"),
                &entries.to_string(),
                &read.cost.entries_examined.to_string(),
                "cellar counts every entry of the cell it examined, older versions and tombstones included.",
            );
            diffs.check(&format!("result, {name}"), result, found(read.found), EXPECTED_SAME);
        }
        let s = &self.scan;
        g.row([
            "scanning all records".to_string(),
            printed::SCAN_FILES.to_string(),
            s.sources_visited.to_string(),
            thousands(printed::SCAN_ENTRIES),
            thousands(s.entries_examined),
            thousands(printed::SCAN_RESULT),
            thousands(s.entries_returned),
            thousands(s.data_blocks),
            thousands(s.pages_touched),
            s.filter_negatives.to_string(),
        ]);
        g.text(format!("settled: {}", s.how_settled()));
        g.render(out);
        for (what, lesson, cellar) in [
            ("sources visited, scan", printed::SCAN_FILES, s.sources_visited),
            ("entries read, scan", printed::SCAN_ENTRIES, s.entries_examined),
            ("result, scan", printed::SCAN_RESULT, s.entries_returned),
        ] {
            diffs.check(what, &thousands(lesson), &thousands(cellar), EXPECTED_SAME);
        }
        if let Some(never) = self.reads.get(3) {
            let how = if never.cost.settled_by_filter == 0 {
                format!(
                    "`{}` sorts after every file's last key, so key ranges settle all {} files before \
                     the filter is asked",
                    never.key, never.cost.files_visited
                )
            } else {
                format!("the bloom filter ruled out {} files", never.cost.settled_by_filter)
            };
            diffs.note(format!(
                "the never-written key costs {} although the lesson opens all 7 sources: {how}.",
                plural(never.cost.data_blocks, "data block")
            ));
        }
        if let Some(untouched) = self.reads.get(1) {
            let c = &untouched.cost;
            let searched_files = plural(c.files_visited - c.settled_by_key_range - c.settled_by_filter, "file");
            let (memtable_filter, searched) = match c.memtables_filtered {
                0 => (String::new(), format!("the memtable and {searched_files} are searched")),
                _ => (
                    " and the memtable by its row filter".to_string(),
                    format!("{searched_files} searched"),
                ),
            };
            diffs.note(format!(
                "`{}` visits {} sources as in the lesson, but reads {}: {} files are ruled out by \
                 their key range, {} by their bloom filter{memtable_filter} ({} filter negatives); {searched}.",
                untouched.key,
                c.sources_visited,
                plural(c.data_blocks, "data block"),
                c.settled_by_key_range,
                c.settled_by_filter,
                c.filter_negatives,
            ));
        }
    }

    fn render_compaction(&self, out: &mut String, diffs: &mut Differences) {
        let c = &self.compacted;
        out.push_str(&format!(
            "\nafter a major compaction (output files cut at {} entries):\n",
            thousands(FILE_ENTRIES)
        ));
        let mut g = Grid::new();
        g.left_align(3);
        g.row(["", "lesson", "cellar", ""]);
        g.row([
            "entries".to_string(),
            thousands(printed::AFTER_ENTRIES),
            thousands(c.stored_entries),
            format!("{} tombstones", thousands(c.tombstones)),
        ]);
        g.row([
            "files".to_string(),
            printed::AFTER_FILES.to_string(),
            c.places().to_string(),
            if c.memtables == 0 {
                format!("{} table files, memtable empty", c.table_files)
            } else {
                format!(
                    "{} table files + {} memtables holding entries",
                    c.table_files, c.memtables
                )
            },
        ]);
        g.row([
            "space amplification, entries".to_string(),
            printed::AFTER_SPACE_AMPLIFICATION.to_string(),
            format!("{:.2}", c.space_amplification),
            String::new(),
        ]);
        g.row([
            "space amplification, bytes".to_string(),
            "-".to_string(),
            format!("{:.2}", c.space_amplification_bytes),
            format!(
                "{} / {} key+value bytes",
                thousands(c.stored_bytes),
                thousands(c.live_bytes)
            ),
        ]);
        g.row([
            "compaction read, bytes".to_string(),
            "-".to_string(),
            thousands(self.compaction.input_bytes),
            format!(
                "{} files, {} entries",
                self.compaction.input_files,
                thousands(self.compaction.input_entries)
            ),
        ]);
        g.row([
            "compaction wrote, bytes".to_string(),
            "-".to_string(),
            thousands(self.compaction.output_bytes),
            format!(
                "{} files, {} entries",
                self.compaction.output_files,
                thousands(self.compaction.output_entries)
            ),
        ]);
        let a = &self.scan_after;
        g.row([
            "the same scan: entries read".to_string(),
            thousands(printed::AFTER_SCAN_ENTRIES),
            thousands(a.entries_examined),
            format!(
                "{} data blocks, {} pages touched",
                thousands(a.data_blocks),
                thousands(a.pages_touched)
            ),
        ]);
        g.row([
            "the same scan: result".to_string(),
            thousands(printed::AFTER_SCAN_RESULT),
            thousands(a.entries_returned),
            String::new(),
        ]);
        g.render(out);
        for (what, lesson, cellar) in [
            (
                "entries after compaction",
                thousands(printed::AFTER_ENTRIES),
                thousands(c.stored_entries),
            ),
            (
                "files after compaction",
                printed::AFTER_FILES.to_string(),
                c.places().to_string(),
            ),
            (
                "space amplification after compaction",
                printed::AFTER_SPACE_AMPLIFICATION.to_string(),
                format!("{:.2}", c.space_amplification),
            ),
            (
                "entries read by the scan after compaction",
                thousands(printed::AFTER_SCAN_ENTRIES),
                thousands(a.entries_examined),
            ),
            (
                "result of the scan after compaction",
                thousands(printed::AFTER_SCAN_RESULT),
                thousands(a.entries_returned),
            ),
        ] {
            diffs.check(what, &lesson, &cellar, EXPECTED_SAME);
        }
        let sizes: Vec<String> = self.compacted_files.iter().map(|f| thousands(f.entries)).collect();
        diffs.note(format!(
            "the same count of files after compaction is made differently: the lesson rewrites the merged data \
             through its write path (3 files + a memtable of 5,000 entries); cellar's major compaction writes \
             {} table files ({} entries) and leaves the memtable empty.",
            c.table_files,
            sizes.join(" + ")
        ));
        diffs.note(format!(
            "compaction is not free: it read {} bytes and wrote {} bytes to drop what no reader can see.",
            thousands(self.compaction.input_bytes),
            thousands(self.compaction.output_bytes)
        ));
    }

    /// Which files' key ranges cover `loan:2`: text order makes ranges overlap.
    fn key_range_note(&self) -> String {
        let Some(untouched) = self.reads.get(1) else {
            return String::new();
        };
        let covering: Vec<&FileRange> = self.files.iter().filter(|f| f.covers(&untouched.key)).collect();
        let mut out = format!(
            "keys sort as text, not as numbers: `loan:199999` < `loan:2` < `loan:25001` < `loan:3`, and\n\
             `loan:100000` < `loan:75001`. So a file of loans 75,001-100,000 spans `loan:100000` ..= `loan:99999`,\n\
             and {} of the {} files have a key range covering `{}`: ",
            covering.len(),
            self.files.len(),
            untouched.key
        );
        let names: Vec<String> = covering.iter().map(|f| format!("{}.sst", f.file_id)).collect();
        out.push_str(&names.join(", "));
        out.push_str(
            ".\nFor those the key range cannot rule the file out; the bloom filter decides, or the file is searched.\n",
        );
        out
    }
}

impl std::fmt::Display for AppendOnlyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}
