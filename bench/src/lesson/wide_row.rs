//! The wide row (the lesson's `column/wide-row.mjs`).
//!
//! A book's loans are columns of the book's row, named `loan|YYYY-MM-DD|j`.
//! Columns are stored sorted, so a month of loans is one slice: the read seeks
//! to the first column of the range and stops at its end. The same loans
//! partitioned by member (`member:m`, column `loan|date|i|j`) answer the same
//! question only with a scan of every cell. Keeping both layouts means writing
//! every loan twice.

use std::path::Path;

use cellar_engine::{ColumnRange, FamilyOptions, RowRange, Store, StoreOptions, WriteBatch};

use super::render::{Differences, Grid, EXPECTED_SAME};
use super::{prepare, ratio, thousands, FamilyFigures, ReadFigures, LOAD_TIME_MS};
use crate::error::Result;
use crate::progress::{Progress, Silent};

/// Loans partitioned by book: row `book:i`.
pub const BY_BOOK: &str = "by_book";
/// The same loans partitioned by member: row `member:m`.
pub const BY_MEMBER: &str = "by_member";
const BOOKS: u64 = 5_000;
/// Loans of each of the first five books.
const POPULAR: u64 = 4_000;
/// The book the lesson asks about, and its month.
const TARGET: u64 = 3;
const LOW: &str = "loan|2024-03";
const HIGH: &str = "loan|2024-04";
/// Cells per write batch (both layouts of 500 loans).
const BATCH: usize = 1_000;

/// What the lesson printed ("Wide-Column Stores", output of
/// `column/wide-row.mjs`), cited as printed. These label the "lesson" column
/// only; no cellar figure is computed from them.
mod printed {
    pub const BOOKS: u64 = 5_000;
    pub const LOAN_ENTRIES: u64 = 263_867;
    pub const AVERAGE_ROW: &str = "52.8";
    pub const WIDEST_ROW: &str = "book:1";
    pub const WIDEST_COLUMNS: u64 = 4_000;
    /// path, round trips, columns read, result
    pub const PATHS: [(&str, u64, u64, u64); 3] = [
        ("book partition, range slice", 1, 333, 333),
        ("book partition, whole row", 1, 4_000, 4_000),
        ("member partition, same question", 1, 263_867, 333),
    ];
    pub const BOTH_ENTRIES: u64 = 527_734;
    pub const WRITE_AMPLIFICATION: &str = "2.0";
}

/// One way of answering "book 3's loans" (or all of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRead {
    /// The lesson's name for it.
    pub name: String,
    /// Read requests made to the store.
    pub requests: u64,
    /// Cells that answer the question.
    pub result: u64,
    /// What the read cost (`entries_examined` is the lesson's "columns read").
    pub cost: ReadFigures,
}

impl PathRead {
    /// A path that returned `result` cells at `cost` (whose traces count its
    /// requests).
    fn new(name: &str, result: u64, cost: ReadFigures) -> PathRead {
        PathRead {
            name: name.to_string(),
            requests: cost.requests,
            result,
            cost,
        }
    }
}

/// Every figure the wide-row lesson measured.
#[derive(Clone, Debug, PartialEq)]
pub struct WideRowReport {
    /// The book-partitioned family, after the flush.
    pub by_book: FamilyFigures,
    /// The member-partitioned family, after the flush.
    pub by_member: FamilyFigures,
    /// Rows of `by_book`, counted by a scan.
    pub book_rows: u64,
    /// The first widest row of `by_book` in key order.
    pub widest_row: String,
    /// Its columns.
    pub widest_columns: u64,
    /// The scan of `by_book` that counted rows.
    pub book_scan: ReadFigures,
    /// The slice, the whole row, the member scan, in the lesson's order.
    pub paths: Vec<PathRead>,
    /// Columns of the target row that sort before the slice: where the
    /// slice starts in the row (for the picture of the row's blocks).
    pub columns_before_slice: u64,
    /// User entries written, both families.
    pub entries_written: u64,
    /// User bytes written (row + column + value), both families.
    pub user_bytes_written: u64,
    /// Bytes appended to the write-ahead log.
    pub log_bytes_written: u64,
    /// Bytes written to table files by flushes, both families.
    pub flush_bytes_written: u64,
    /// Bytes written by compactions, both families.
    pub compaction_bytes_written: u64,
    /// Disk bytes written / user bytes (log + tables), from Stats.
    pub physical_write_amplification: f64,
}

impl WideRowReport {
    /// Loan columns per book row.
    pub fn average_row(&self) -> f64 {
        ratio(self.by_book.stored_entries, self.book_rows)
    }

    /// Entries written for both layouts / entries of the book layout.
    pub fn write_amplification(&self) -> f64 {
        ratio(self.entries_written, self.by_book.entries_written)
    }
}

/// Runs the wide-row lesson in `dir` (created if missing, must be empty).
pub fn wide_row(dir: &Path) -> Result<WideRowReport> {
    wide_row_with(dir, &Silent)
}

/// [`wide_row()`], reporting the load's progress.
pub fn wide_row_with(dir: &Path, progress: &dyn Progress) -> Result<WideRowReport> {
    prepare(dir)?;
    // One flush at the end puts each family in one table file; no background
    // compaction runs while the reads are measured.
    let family = FamilyOptions::default().compaction_trigger(0);
    let options = StoreOptions::default()
        .family_with(BY_BOOK, family.clone())
        .family_with(BY_MEMBER, family);
    let store = Store::open(dir, options)?;
    load(&store, progress)?;
    store.flush()?;
    store.wait_for_background_work()?;

    let stats = store.stats()?;
    let by_book = FamilyFigures::of(&stats, BY_BOOK)?;
    let by_member = FamilyFigures::of(&stats, BY_MEMBER)?;

    let (rows, trace) = store.scan_traced(BY_BOOK, &RowRange::all())?;
    let book_scan = ReadFigures::from(&trace);
    let mut widest_row = String::new();
    let mut widest_columns = 0u64;
    for row in &rows {
        if row.cells.len() as u64 > widest_columns {
            widest_columns = row.cells.len() as u64;
            widest_row = String::from_utf8_lossy(&row.key).into_owned();
        }
    }
    drop(rows);

    let target_row = format!("book:{TARGET}");
    let (before, _) = store.slice_traced(BY_BOOK, &target_row, &ColumnRange::between("loan|", LOW))?;
    let columns_before_slice = before.len() as u64;
    let mut paths = Vec::new();
    let (cells, trace) = store.slice_traced(BY_BOOK, &target_row, &ColumnRange::between(LOW, HIGH))?;
    paths.push(PathRead::new(
        printed::PATHS[0].0,
        cells.len() as u64,
        ReadFigures::from(&trace),
    ));
    let (cells, trace) = store.slice_traced(BY_BOOK, &target_row, &ColumnRange::prefix("loan|"))?;
    paths.push(PathRead::new(
        printed::PATHS[1].0,
        cells.len() as u64,
        ReadFigures::from(&trace),
    ));
    let (rows, trace) = store.scan_traced(BY_MEMBER, &RowRange::all())?;
    let wanted = TARGET.to_string();
    let result = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.column.starts_with(LOW.as_bytes()) && c.value == wanted.as_bytes())
        .count() as u64;
    paths.push(PathRead::new(printed::PATHS[2].0, result, ReadFigures::from(&trace)));

    Ok(WideRowReport {
        entries_written: stats.user_entries_written(),
        user_bytes_written: stats.user_bytes_written(),
        log_bytes_written: stats.log_bytes_written,
        flush_bytes_written: by_book.flush_bytes_written + by_member.flush_bytes_written,
        compaction_bytes_written: by_book.compaction_bytes_written + by_member.compaction_bytes_written,
        physical_write_amplification: stats.write_amplification(),
        by_book,
        by_member,
        book_rows: book_scan.entries_returned,
        widest_row,
        widest_columns,
        book_scan,
        paths,
        columns_before_slice,
    })
}

/// Writes every loan under both partition keys, in the same batch.
fn load(store: &Store, progress: &dyn Progress) -> Result<()> {
    let loans: u64 = (1..=BOOKS).map(loans_of).sum();
    progress.start("wide-row: loading", 2 * loans);
    let mut batch = WriteBatch::new();
    for i in 1..=BOOKS {
        for j in 0..loans_of(i) {
            let month = 1 + (i + j) % 12;
            let day = 1 + (i * 3 + j * 7) % 28;
            let member = 1 + (i * 13 + j) % 20_000;
            let date = format!("2024-{month:02}-{day:02}");
            batch.put_at(
                BY_BOOK,
                format!("book:{i}"),
                format!("loan|{date}|{j}"),
                LOAD_TIME_MS,
                member.to_string(),
            );
            batch.put_at(
                BY_MEMBER,
                format!("member:{member}"),
                format!("loan|{date}|{i}|{j}"),
                LOAD_TIME_MS,
                i.to_string(),
            );
            if batch.len() >= BATCH {
                store.write(&batch)?;
                progress.advance(batch.len() as u64);
                batch = WriteBatch::new();
            }
        }
    }
    if !batch.is_empty() {
        store.write(&batch)?;
    }
    progress.finish();
    Ok(())
}

fn loans_of(book: u64) -> u64 {
    if book <= 5 {
        POPULAR
    } else {
        1 + book % 97
    }
}

impl WideRowReport {
    /// The lesson's table, lesson and cellar side by side, then the differences.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut diffs = Differences::new();
        out.push_str("== wide-row: a book's loans as the columns of one row ==\n");
        out.push_str(&format!(
            "{} books; books 1-5 have {} loans, book i otherwise 1 + i % 97; families `{BY_BOOK}` (row book:i)\n\
             and `{BY_MEMBER}` (row member:m), both flushed to table files before reading.\n\n",
            thousands(BOOKS),
            thousands(POPULAR)
        ));
        let b = &self.by_book;
        let mut g = Grid::new();
        g.row(["", "lesson", "cellar"]);
        g.row([
            "books (rows)".to_string(),
            thousands(printed::BOOKS),
            thousands(self.book_rows),
        ]);
        g.row([
            "loan entries".to_string(),
            thousands(printed::LOAN_ENTRIES),
            thousands(b.stored_entries),
        ]);
        g.row([
            "average row, columns".to_string(),
            printed::AVERAGE_ROW.to_string(),
            format!("{:.1}", self.average_row()),
        ]);
        g.row([
            "widest row".to_string(),
            printed::WIDEST_ROW.to_string(),
            self.widest_row.clone(),
        ]);
        g.row([
            "widest row, columns".to_string(),
            thousands(printed::WIDEST_COLUMNS),
            thousands(self.widest_columns),
        ]);
        g.render(&mut out);
        diffs.check(
            "books (rows)",
            &thousands(printed::BOOKS),
            &thousands(self.book_rows),
            EXPECTED_SAME,
        );
        diffs.check(
            "loan entries",
            &thousands(printed::LOAN_ENTRIES),
            &thousands(b.stored_entries),
            EXPECTED_SAME,
        );
        diffs.check(
            "average row",
            printed::AVERAGE_ROW,
            &format!("{:.1}", self.average_row()),
            EXPECTED_SAME,
        );
        diffs.check("widest row", printed::WIDEST_ROW, &self.widest_row, EXPECTED_SAME);
        diffs.check(
            "widest row, columns",
            &thousands(printed::WIDEST_COLUMNS),
            &thousands(self.widest_columns),
            EXPECTED_SAME,
        );

        out.push('\n');
        let mut g = Grid::new();
        g.read_headers("path", ["round trips", "columns read", "result"]);
        for (p, (name, trips, columns, result)) in self.paths.iter().zip(printed::PATHS) {
            g.row([
                name.to_string(),
                trips.to_string(),
                p.requests.to_string(),
                thousands(columns),
                thousands(p.cost.entries_examined),
                thousands(result),
                thousands(p.result),
                thousands(p.cost.data_blocks),
                thousands(p.cost.pages_touched),
                p.cost.filter_negatives.to_string(),
            ]);
            g.text(format!("settled: {}", p.cost.how_settled()));
            diffs.check(
                &format!("columns read, {name}"),
                &thousands(columns),
                &thousands(p.cost.entries_examined),
                EXPECTED_SAME,
            );
            diffs.check(
                &format!("round trips, {name}"),
                &trips.to_string(),
                &p.requests.to_string(),
                EXPECTED_SAME,
            );
            diffs.check(
                &format!("result, {name}"),
                &thousands(result),
                &thousands(p.result),
                EXPECTED_SAME,
            );
        }
        g.render(&mut out);

        out.push('\n');
        let mut g = Grid::new();
        g.left_align(3);
        g.row(["both access patterns at once", "lesson", "cellar", ""]);
        g.row([
            "entries written".to_string(),
            thousands(printed::BOTH_ENTRIES),
            thousands(self.entries_written),
            format!(
                "{} + {}",
                thousands(b.entries_written),
                thousands(self.by_member.entries_written)
            ),
        ]);
        g.row([
            "write amplification, entries".to_string(),
            printed::WRITE_AMPLIFICATION.to_string(),
            format!("{:.1}", self.write_amplification()),
            String::new(),
        ]);
        g.row([
            "write amplification, bytes on disk".to_string(),
            "-".to_string(),
            format!("{:.2}", self.physical_write_amplification),
            format!(
                "(log {} + tables {}) / user bytes {}",
                thousands(self.log_bytes_written),
                thousands(self.flush_bytes_written + self.compaction_bytes_written),
                thousands(self.user_bytes_written)
            ),
        ]);
        g.render(&mut out);
        diffs.check(
            "entries written",
            &thousands(printed::BOTH_ENTRIES),
            &thousands(self.entries_written),
            EXPECTED_SAME,
        );
        diffs.check(
            "write amplification",
            printed::WRITE_AMPLIFICATION,
            &format!("{:.1}", self.write_amplification()),
            EXPECTED_SAME,
        );
        if let [slice, whole, member] = self.paths.as_slice() {
            diffs.note(format!(
                "the slice reads {} of the row's {} data blocks ({} pages): the index finds the block where \
                 `{LOW}` starts and the read stops at `{HIGH}`; the member layout reads all {} blocks of its file.",
                slice.cost.data_blocks,
                whole.cost.data_blocks,
                slice.cost.pages_touched,
                thousands(member.cost.data_blocks)
            ));
        }
        // Computed, not assumed: the log once wrote every cell whole, which
        // put the figure above 2.0; the compact log and compressed tables
        // can bring it below.
        let than = match self.physical_write_amplification {
            x if x > 2.0 => "more than",
            x if x < 2.0 => "less than",
            _ => "exactly",
        };
        diffs.note(format!(
            "on disk the write side costs {than} 2.0: every cell goes to the log ({} bytes) and again to a \
             table file ({} bytes), against {} user bytes: {:.2}.",
            thousands(self.log_bytes_written),
            thousands(self.flush_bytes_written + self.compaction_bytes_written),
            thousands(self.user_bytes_written),
            self.physical_write_amplification
        ));
        out.push('\n');
        diffs.render(&mut out);
        diffs.render_notes(&mut out);
        out
    }
}

impl std::fmt::Display for WideRowReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}
