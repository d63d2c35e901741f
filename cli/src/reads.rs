//! The reads: `get`, `slice`, `scan`, `count` and `explain`.
//!
//! Each read runs on one [`Snapshot`], so a command that asks the store
//! several questions (every version of every column of a slice) sees one
//! moment of it. What the engine answers in one read the command passes on
//! as it comes; the rest the command builds on top, and says what it costs:
//!
//! * `--versions N` and `--time-range FROM TO` (HBase's `VERSIONS` and
//!   `TIMERANGE`): the engine's range reads return the newest version of each
//!   column, and [`Snapshot::versions`] the versions of one cell, so the
//!   command reads the columns first, then the versions of each (one more
//!   point read per column). A time range keeps, per column, the newest
//!   versions whose timestamp is in `[FROM, TO)`, among those the family keeps.
//! * `scan --columns`: the scan reads whole rows and the command keeps the
//!   named columns (the engine has no column filter on scans).
//! * `scan --reverse`: the engine scans forward only, so the command reads the
//!   whole range and keeps the last rows (`--limit` of them) in memory.
//!
//! `explain` shows one read of the engine with its [`Trace`], so it takes the
//! plain reads only.

use std::collections::{HashMap, VecDeque};
use std::io::Write;

use cellar::{Cell, ColumnRange, Compression, Row, RowRange, Settled, Snapshot, SourceKind, Trace};
use serde_json::{json, Value};

use crate::clock;
use crate::format::{self, escape, unescape};
use crate::opened::Opened;
use crate::picture;
use crate::store_cmds::{known_family, Context};
use crate::Error;

/// `--versions N` and `--time-range FROM TO`: which versions of each column.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct VersionArgs {
    /// Up to N versions of each column, newest first (at most what the family
    /// keeps: its max versions, see `families`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub versions: Option<u32>,
    /// Only versions with a timestamp in [FROM, TO): milliseconds or ISO 8601
    /// dates (2024-03-02, 2024-03-02T10:15:00Z).
    #[arg(long, num_args = 2, value_names = ["FROM", "TO"], value_parser = clock::timestamp_arg)]
    pub time_range: Option<Vec<u64>>,
}

impl VersionArgs {
    /// Whether the newest version of each column is all that is asked.
    fn newest_only(&self) -> bool {
        self.versions.is_none() && self.time_range.is_none()
    }

    fn in_range(&self, ts: u64) -> bool {
        match self.time_range.as_deref() {
            Some([from, to]) => (*from..*to).contains(&ts),
            _ => true,
        }
    }

    /// The versions to show of one cell, newest first.
    fn of_cell(&self, snap: &Snapshot, family: &str, row: &[u8], column: &[u8]) -> Result<Vec<Cell>, Error> {
        let n = self.versions.unwrap_or(1) as usize;
        Ok(snap
            .versions(family, row, column)?
            .into_iter()
            .filter(|c| self.in_range(c.timestamp))
            .take(n)
            .collect())
    }

    /// Replaces the newest version of each column with the versions asked for.
    fn expand(&self, snap: &Snapshot, family: &str, row: &[u8], newest: Vec<Cell>) -> Result<Vec<Cell>, Error> {
        if self.newest_only() {
            return Ok(newest);
        }
        let mut cells = Vec::new();
        for c in newest {
            cells.extend(self.of_cell(snap, family, row, &c.column)?);
        }
        Ok(cells)
    }

    fn check_range(&self) -> Result<(), Error> {
        match self.time_range.as_deref() {
            Some([from, to]) if from >= to => {
                Err(format!("--time-range {from} {to} is empty: FROM must be before TO").into())
            }
            _ => Ok(()),
        }
    }
}

/// `get FAMILY ROW [COLUMN]`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// Column family.
    pub family: String,
    /// Row key (`\xNN` escapes allowed, as in every byte argument).
    pub row: String,
    /// Column (default: the whole row).
    pub column: Option<String>,
    #[command(flatten)]
    pub versions: VersionArgs,
}

/// `slice FAMILY ROW [--from C] [--to C] [--limit N] [--reverse]`.
#[derive(Debug, clap::Args)]
pub struct SliceArgs {
    /// Column family.
    pub family: String,
    /// Row key.
    pub row: String,
    /// First column (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End column (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// At most this many columns.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Walk the range backwards: last column first.
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub versions: VersionArgs,
}

/// Which rows: `--from`, `--to`, `--prefix`.
#[derive(Debug, Default, clap::Args)]
pub struct RowArgs {
    /// First row (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End row (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only rows starting with this.
    #[arg(long)]
    pub prefix: Option<String>,
}

impl RowArgs {
    /// The rows as the engine takes them.
    pub fn range(&self) -> Result<RowRange, Error> {
        let mut range = match &self.prefix {
            Some(p) => RowRange::prefix(unescape(p)?),
            None => RowRange::all(),
        };
        if let Some(from) = &self.from {
            range.from = Some(unescape(from)?.into());
        }
        if let Some(to) = &self.to {
            range.to = Some(unescape(to)?.into());
        }
        check_bounds(range.from.as_deref(), range.to.as_deref())?;
        Ok(range)
    }
}

/// Refuses `--from A --to B` when no key can be in `[A, B)`.
///
/// The engine answers such a range with nothing, and so would a silent
/// command, but the user almost always meant something else: an HBase user
/// gives a reversed scan its larger row first (`REVERSED => true, STARTROW
/// => 'row9'`), and `--from r --to r` reads as "row r" rather than as the
/// empty range it is. Here `--from` is always the smaller key and `--to`
/// the exclusive end, with `--reverse` too, as `--time-range` does with its
/// FROM and TO.
pub fn check_bounds(from: Option<&[u8]>, to: Option<&[u8]>) -> Result<(), Error> {
    match (from, to) {
        (Some(from), Some(to)) if from >= to => Err(format!(
            "--from {} --to {} is empty: --from (inclusive) must sort before --to (exclusive), with --reverse too",
            escape(from),
            escape(to)
        )
        .into()),
        _ => Ok(()),
    }
}

/// `scan FAMILY [--from ROW] [--to ROW] [--prefix P] [--limit N] ...`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Column family.
    pub family: String,
    #[command(flatten)]
    pub rows: RowArgs,
    /// At most this many rows.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only these columns (`a,b` or the option repeated); rows without any
    /// of them are left out.
    #[arg(long, value_name = "COLUMNS", value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Last row first (the command reads the whole range: the engine scans
    /// forward only).
    #[arg(long)]
    pub reverse: bool,
    #[command(flatten)]
    pub versions: VersionArgs,
}

/// `count FAMILY [--from ROW] [--to ROW] [--prefix P]`.
#[derive(Debug, clap::Args)]
pub struct CountArgs {
    /// Column family.
    pub family: String,
    #[command(flatten)]
    pub rows: RowArgs,
}

/// `explain get|slice|scan ...`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The read to explain.
    #[command(subcommand)]
    pub read: ExplainRead,
    /// Also draw the family's sources and the read through them in this
    /// file, one self-contained HTML page.
    #[arg(long, value_name = "FILE", global = true)]
    pub report: Option<std::path::PathBuf>,
}

/// The reads `explain` can run.
#[derive(Debug, clap::Subcommand)]
pub enum ExplainRead {
    /// A cell or a whole row.
    Get(GetArgs),
    /// A range of a row's columns.
    Slice(SliceArgs),
    /// A range of rows.
    Scan(ScanArgs),
}

type Cells = (Vec<u8>, Vec<Cell>, Trace);

fn get(snap: &Snapshot, a: &GetArgs) -> Result<Cells, Error> {
    a.versions.check_range()?;
    let family = a.family.as_str();
    let row = unescape(&a.row)?;
    let (cells, trace) = match (&a.column, a.versions.newest_only()) {
        (Some(column), true) => {
            let (cell, trace) = snap.get_traced(family, &row, unescape(column)?)?;
            (cell.into_iter().collect(), trace)
        }
        (Some(column), false) => (
            a.versions.of_cell(snap, family, &row, &unescape(column)?)?,
            Trace::default(),
        ),
        (None, _) => {
            let (newest, trace) = snap.get_row_traced(family, &row)?;
            (a.versions.expand(snap, family, &row, newest)?, trace)
        }
    };
    Ok((row, cells, trace))
}

fn column_range(a: &SliceArgs) -> Result<ColumnRange, Error> {
    let mut range = ColumnRange::all();
    range.from = a.from.as_deref().map(unescape).transpose()?.map(Into::into);
    range.to = a.to.as_deref().map(unescape).transpose()?.map(Into::into);
    check_bounds(range.from.as_deref(), range.to.as_deref())?;
    if let Some(n) = a.limit {
        range = range.limit(n);
    }
    if a.reverse {
        range = range.reverse();
    }
    Ok(range)
}

fn slice(snap: &Snapshot, a: &SliceArgs) -> Result<Cells, Error> {
    a.versions.check_range()?;
    let row = unescape(&a.row)?;
    let mut range = column_range(a)?;
    if a.versions.newest_only() {
        let (cells, trace) = snap.slice_traced(&a.family, &row, &range)?;
        return Ok((row, cells, trace));
    }
    // A column may have no version in the time range: the limit counts the
    // columns that do, so it is applied after.
    range.limit = None;
    let (newest, trace) = snap.slice_traced(&a.family, &row, &range)?;
    let mut cells = Vec::new();
    let mut columns = 0;
    for c in newest {
        if a.limit.is_some_and(|n| columns >= n) {
            break;
        }
        let versions = a.versions.of_cell(snap, &a.family, &row, &c.column)?;
        columns += usize::from(!versions.is_empty());
        cells.extend(versions);
    }
    Ok((row, cells, trace))
}

/// Whether the scan needs more than the engine's scan gives.
fn plain_scan(a: &ScanArgs) -> bool {
    a.columns.is_empty() && !a.reverse && a.versions.newest_only()
}

fn scan(snap: &Snapshot, a: &ScanArgs) -> Result<(Vec<Row>, Trace), Error> {
    a.versions.check_range()?;
    let mut range = a.rows.range()?;
    if plain_scan(a) {
        if let Some(n) = a.limit {
            range = range.limit(n);
        }
        let mut scan = snap.scan(&a.family, &range)?;
        let rows = scan.by_ref().collect::<Result<Vec<Row>, _>>()?;
        return Ok((rows, scan.trace()));
    }
    let columns: Vec<Vec<u8>> = a.columns.iter().map(|c| unescape(c)).collect::<Result<_, _>>()?;
    let limit = a.limit.unwrap_or(usize::MAX);
    let mut rows = VecDeque::new();
    let mut scan = snap.scan(&a.family, &range)?;
    if limit > 0 {
        for row in scan.by_ref() {
            let mut row = row?;
            if !columns.is_empty() {
                row.cells
                    .retain(|c| columns.iter().any(|name| name[..] == c.column[..]));
            }
            row.cells = a.versions.expand(snap, &a.family, &row.key, row.cells)?;
            if row.cells.is_empty() {
                continue;
            }
            rows.push_back(row);
            if a.reverse && rows.len() > limit {
                rows.pop_front();
            }
            if !a.reverse && rows.len() == limit {
                break;
            }
        }
    }
    let mut rows: Vec<Row> = rows.into();
    if a.reverse {
        rows.reverse();
    }
    Ok((rows, scan.trace()))
}

/// `get`: the cells in the HBase shell's layout, or JSON.
pub fn get_cmd(ctx: &Context, store: &Opened, a: &GetArgs, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = &store.snapshot();
    let (row, cells, _) = get(snap, a)?;
    print_cells(ctx, &a.family, &row, &cells, out)
}

/// `slice`: the cells in the HBase shell's layout, or JSON.
pub fn slice_cmd(ctx: &Context, store: &Opened, a: &SliceArgs, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = &store.snapshot();
    let (row, cells, _) = slice(snap, a)?;
    print_cells(ctx, &a.family, &row, &cells, out)
}

/// `scan`: the rows in the HBase shell's layout, or JSON.
pub fn scan_cmd(ctx: &Context, store: &Opened, a: &ScanArgs, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = &store.snapshot();
    let (rows, _) = scan(snap, a)?;
    if ctx.json {
        let rows: Vec<Value> = rows
            .iter()
            .map(|r| {
                let cells: Vec<Value> = r.cells.iter().map(|c| format::cell_json(&r.key, c)).collect();
                json!({"row": escape(&r.key), "cells": cells})
            })
            .collect();
        writeln!(out, "{}", Value::Array(rows))?;
    } else {
        write!(out, "{}", format::render_rows(&a.family, &rows, ctx.human))?;
    }
    Ok(())
}

/// `count`: rows and cells in a range (HBase's `count`), read as a scan.
pub fn count_cmd(ctx: &Context, store: &Opened, a: &CountArgs, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = &store.snapshot();
    let (mut rows, mut cells) = (0u64, 0u64);
    for row in snap.scan(&a.family, &a.rows.range()?)? {
        rows += 1;
        cells += row?.cells.len() as u64;
    }
    if ctx.json {
        writeln!(out, "{}", json!({"rows": rows, "cells": cells}))?;
    } else {
        writeln!(out, "{rows} row(s), {cells} cell(s)")?;
    }
    Ok(())
}

fn print_cells(ctx: &Context, family: &str, row: &[u8], cells: &[Cell], out: &mut dyn Write) -> Result<(), Error> {
    if ctx.json {
        let cells: Vec<Value> = cells.iter().map(|c| format::cell_json(row, c)).collect();
        writeln!(out, "{}", Value::Array(cells))?;
    } else {
        write!(out, "{}", format::render_cells(family, row, cells, ctx.human))?;
    }
    Ok(())
}

/// `explain`: runs the read, prints its result, then its [`Trace`]: the
/// sources newest first, how each was settled and what it cost.
pub fn explain(ctx: &Context, store: &Opened, args: &ExplainArgs, out: &mut dyn Write) -> Result<(), Error> {
    if let Some(path) = &args.report {
        picture::check_report_path(path)?;
    }
    let read = &args.read;
    let snap = &store.snapshot();
    let plain = match read {
        ExplainRead::Get(a) => a.versions.newest_only(),
        ExplainRead::Slice(a) => a.versions.newest_only(),
        ExplainRead::Scan(a) => plain_scan(a),
    };
    if !plain {
        return Err(
            "explain traces one read of the engine: leave out --versions, --time-range, --columns and \
                    scan's --reverse, which the command answers with more reads or by filtering"
                .into(),
        );
    }
    let family = match read {
        ExplainRead::Get(a) => &a.family,
        ExplainRead::Slice(a) => &a.family,
        ExplainRead::Scan(a) => &a.family,
    };
    known_family(store, family)?;
    let cells = |(row, cells, trace): Cells| (format::render_cells(family, &row, &cells, ctx.human), trace);
    let (result, trace) = match read {
        ExplainRead::Get(a) => cells(get(snap, a)?),
        ExplainRead::Slice(a) => cells(slice(snap, a)?),
        ExplainRead::Scan(a) => {
            let (rows, trace) = scan(snap, a)?;
            (format::render_rows(family, &rows, ctx.human), trace)
        }
    };
    let sources: Vec<(String, &cellar::SourceTrace)> = trace
        .sources
        .iter()
        .map(|s| {
            let name = match s.source {
                SourceKind::ActiveMemtable => "memtable".to_string(),
                SourceKind::FrozenMemtable => "frozen memtable".to_string(),
                SourceKind::Table { file_id, .. } => format!("{family}/{file_id:06}.sst"),
            };
            (name, s)
        })
        .collect();
    if ctx.json {
        let list: Vec<Value> = sources
            .iter()
            .map(|(name, s)| {
                json!({
                    "source": name,
                    "settled": settled_name(s.settled),
                    "filter": filter_answer(s),
                    "entries_examined": s.entries_examined,
                    "data_blocks": s.data_blocks,
                    "data_bytes": s.data_bytes,
                    "pages_touched": s.pages_touched,
                    "decompressed_bytes": s.decompressed_bytes,
                    "cache_hits": s.cache_hits,
                    "cache_misses": s.cache_misses,
                    "index_lookups": s.index_lookups,
                })
            })
            .collect();
        let doc = json!({
            "sources": list,
            "sources_visited": trace.sources_visited(),
            "files_visited": trace.files_visited(),
            "entries_examined": trace.entries_examined(),
            "entries_returned": trace.entries_returned,
            "data_blocks": trace.data_blocks(),
            "data_bytes": trace.data_bytes(),
            "pages_touched": trace.pages_touched(),
            "decompressed_bytes": trace.decompressed_bytes(),
            "cache_hits": trace.cache_hits(),
            "cache_misses": trace.cache_misses(),
        });
        writeln!(out, "{doc}")?;
        // The JSON document stays the whole of stdout.
        return draw_report(store, family, args, &trace, &mut std::io::sink());
    }
    write!(out, "{result}")?;
    writeln!(out)?;
    // How each table of the family stores its blocks: a read of a compressed
    // one also says what the block cache held and what was decompressed.
    let compression: HashMap<u64, Compression> = store
        .tables()
        .iter()
        .filter(|t| t.family == *family)
        .map(|t| (t.file_id, t.compression))
        .collect();
    let stored = |s: &cellar::SourceTrace| match s.source {
        SourceKind::Table { file_id, .. } => compression.get(&file_id).map_or("?".to_string(), |c| c.to_string()),
        _ => "-".to_string(),
    };
    let any_compressed = sources.iter().any(|(_, s)| !matches!(stored(s).as_str(), "-" | "none"));
    let rows: Vec<Vec<String>> = sources
        .iter()
        .map(|(name, s)| {
            let mut row = vec![
                name.clone(),
                settled_name(s.settled).to_string(),
                filter_answer(s).to_string(),
                s.data_blocks.to_string(),
                s.pages_touched.to_string(),
                s.entries_examined.to_string(),
            ];
            if any_compressed {
                row.extend([
                    stored(s),
                    format!("{}/{}", s.cache_hits, s.cache_misses),
                    s.decompressed_bytes.to_string(),
                ]);
            }
            row
        })
        .collect();
    let mut headers = vec!["source", "settled by", "filter", "blocks", "pages", "examined"];
    if any_compressed {
        headers.extend(["compression", "cache hit/miss", "decompressed"]);
    }
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(
        out,
        "{} source(s) visited ({} file(s)), {} data block(s) ({} bytes, {} page(s)), {} entries examined, {} returned",
        trace.sources_visited(),
        trace.files_visited(),
        trace.data_blocks(),
        trace.data_bytes(),
        trace.pages_touched(),
        trace.entries_examined(),
        trace.entries_returned
    )?;
    if any_compressed {
        writeln!(
            out,
            "block cache: {} hit(s), {} miss(es); {} bytes decompressed (data bytes and pages count blocks \
             read from the file as stored)",
            trace.cache_hits(),
            trace.cache_misses(),
            trace.decompressed_bytes()
        )?;
    }
    draw_report(store, family, args, &trace, out)
}

/// With `--report FILE`: the family's stack and the read through it, drawn.
fn draw_report(
    store: &Opened,
    family: &str,
    args: &ExplainArgs,
    trace: &Trace,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let Some(path) = &args.report else {
        return Ok(());
    };
    let (label, asked) = match &args.read {
        ExplainRead::Get(a) => (
            format!(
                "get {family} {}{}",
                a.row,
                a.column.as_ref().map_or(String::new(), |c| format!(" {c}"))
            ),
            picture::asked_row(&unescape(&a.row)?),
        ),
        ExplainRead::Slice(a) => (
            format!("slice {family} {}", a.row),
            picture::asked_row(&unescape(&a.row)?),
        ),
        ExplainRead::Scan(a) => (format!("scan {family}"), picture::asked_rows(&a.rows.range()?)),
    };
    picture::explain(store, family, &label, asked, trace, path, out)
}

fn settled_name(s: Settled) -> &'static str {
    match s {
        Settled::KeyRange => "key range",
        Settled::Filter => "bloom filter",
        Settled::Searched => "search",
    }
}

/// What the bloom filter said: `absent` lets the read skip the file,
/// `maybe` sends it to the index; `-` when no filter was asked.
fn filter_answer(s: &cellar::SourceTrace) -> &'static str {
    if s.filter_negatives > 0 {
        "absent"
    } else if s.filter_checks > 0 {
        "maybe"
    } else {
        "-"
    }
}
