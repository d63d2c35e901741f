//! The commands that work on an open store: write cells, read them back, and
//! watch what the store does with them (`flush`, `compact`, `stats`, `files`,
//! `explain`, `check`).
//!
//! Each command is one variant of [`StoreCommand`] and one function here. The
//! same enum is parsed from the process arguments (`cellar put ...`) and from
//! each line of `cellar shell`, so the two can never drift apart. Commands
//! write their output to a `&mut dyn Write` rather than printing, for the same
//! reason.
//!
//! A note for learners: every `cellar` process opens the store, and opening
//! replays the write-ahead log and flushes what it held. So when each write is
//! its own process, each one ends up in a table file of its own the next time
//! the store is opened; inside `cellar shell` the writes share one memtable
//! until `flush`, as they would in a long-running server.

use std::io::Write;
use std::path::{Path, PathBuf};

use cellar::{
    ColumnRange, Error as StoreError, FamilyOptions, RowRange, Settled, SourceKind, Store, StoreOptions, Trace,
};
use serde_json::{json, Value};

use crate::format::{self, escape, unescape};
use crate::{dump, load, Error};

/// Options that say which store to open and how to print.
#[derive(Clone, Debug)]
pub struct Context {
    /// The store folder.
    pub dir: PathBuf,
    /// Families to create if they are missing (`--family`).
    pub families: Vec<String>,
    /// Print JSON instead of text, where a command supports it.
    pub json: bool,
    /// Print timestamps as dates.
    pub human: bool,
}

/// The commands that `cellar` and `cellar shell` share.
#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Create the store (if needed) and the families named by --family.
    Create,
    /// Write one cell (timestamped now, or at --ts milliseconds).
    Put(PutArgs),
    /// Read one cell, or every column of a row.
    Get(GetArgs),
    /// Read a range of a row's columns, in column order.
    Slice(SliceArgs),
    /// Read rows in row order.
    Scan(ScanArgs),
    /// Delete every version of one column (writes a cell tombstone).
    Delete(DeleteArgs),
    /// Delete every column of a row (writes a row tombstone).
    DeleteRow(DeleteRowArgs),
    /// Write every memtable to table files.
    Flush,
    /// Merge a family's table files into one run (every family without FAMILY),
    /// dropping shadowed versions and tombstones.
    Compact(CompactArgs),
    /// Per family: memtable, files, entries live and stored, amplification.
    Stats,
    /// Every table file: family, size, entries, tombstones, key range, blocks.
    Files,
    /// Decode one table file block by block, checking every checksum.
    Dump(dump::Args),
    /// Run a read and print what it cost, source by source.
    Explain(ExplainArgs),
    /// Bulk load cells from CSV (row,column,value[,ts]) or JSON lines.
    Load(load::Args),
    /// Re-read every table file and check every checksum.
    Check,
}

/// `put FAMILY ROW COLUMN VALUE [--ts T]`.
#[derive(Debug, clap::Args)]
pub struct PutArgs {
    /// Column family.
    pub family: String,
    /// Row key (`\xNN` escapes allowed, as in every byte argument).
    pub row: String,
    /// Column name.
    pub column: String,
    /// Value.
    pub value: String,
    /// Timestamp in milliseconds since the epoch (default: now).
    #[arg(long)]
    pub ts: Option<u64>,
}

/// `get FAMILY ROW [COLUMN]`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// Column family.
    pub family: String,
    /// Row key.
    pub row: String,
    /// Column (default: the whole row).
    pub column: Option<String>,
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
    /// At most this many cells.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Walk the range backwards: last column first.
    #[arg(long)]
    pub reverse: bool,
}

/// `scan FAMILY [--from ROW] [--to ROW] [--prefix P] [--limit N]`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Column family.
    pub family: String,
    /// First row (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End row (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only rows starting with this.
    #[arg(long)]
    pub prefix: Option<String>,
    /// At most this many rows.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// `delete FAMILY ROW COLUMN`.
#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Column family.
    pub family: String,
    /// Row key.
    pub row: String,
    /// Column.
    pub column: String,
    /// Delete versions up to this timestamp only (default: now).
    #[arg(long)]
    pub ts: Option<u64>,
}

/// `delete-row FAMILY ROW`.
#[derive(Debug, clap::Args)]
pub struct DeleteRowArgs {
    /// Column family.
    pub family: String,
    /// Row key.
    pub row: String,
    /// Delete versions up to this timestamp only (default: now).
    #[arg(long)]
    pub ts: Option<u64>,
}

/// `compact [FAMILY]`.
#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// Column family (default: every family).
    pub family: Option<String>,
}

/// `explain get|slice|scan ...`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The read to explain.
    #[command(subcommand)]
    pub read: ExplainRead,
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

impl StoreCommand {
    /// Whether the command needs an open store (`dump` reads one file).
    pub fn needs_store(&self) -> bool {
        !matches!(self, StoreCommand::Dump(_))
    }
}

/// Opens the store in `ctx.dir`, creating it and any `--family` that is
/// missing. A folder without a store is only created when families are named,
/// so a mistyped `--dir` does not silently make an empty store.
pub fn open(ctx: &Context) -> Result<Store, Error> {
    let create = !ctx.families.is_empty();
    let options = StoreOptions::default().create_if_missing(create);
    let store = Store::open(&ctx.dir, options).map_err(|e| match e {
        StoreError::NotAStore { dir } => Error::from(format!(
            "{} is not a cellar store: create one with `cellar --dir {} create --family NAME`",
            dir.display(),
            dir.display()
        )),
        // The open changed nothing: say how to get the data back.
        e @ StoreError::Corruption { .. } => Error::from(format!(
            "{e}; the store does not open: `cellar --dir {} repair` rebuilds it from its table files and log, \
             keeping what it cannot read in its lost/ folder",
            ctx.dir.display()
        )),
        other => other.into(),
    })?;
    let existing = store.families();
    for family in &ctx.families {
        if !existing.contains(family) {
            // Declared here rather than in StoreOptions: declaring an existing
            // family with default options would overwrite the options it was
            // created with.
            store.create_family(family, FamilyOptions::default())?;
        }
    }
    // Opening may start a compaction (the log just flushed may complete a
    // tier); wait, so that what this command prints does not depend on timing.
    store.wait_for_background_work()?;
    Ok(store)
}

/// Runs one command on an open store (or none, for `dump`).
pub fn run(ctx: &Context, store: Option<&Store>, command: &StoreCommand, out: &mut dyn Write) -> Result<(), Error> {
    let store = match (command, store) {
        (StoreCommand::Dump(args), _) => return dump::run(args, ctx.human, out),
        (_, Some(store)) => store,
        (_, None) => return Err("no store is open".into()),
    };
    match command {
        StoreCommand::Create => {
            let families = store.families();
            writeln!(out, "store {} has families: {}", ctx.dir.display(), families.join(", "))?;
        }
        StoreCommand::Put(a) => {
            let family = known_family(store, &a.family)?;
            let (row, column, value) = (unescape(&a.row)?, unescape(&a.column)?, unescape(&a.value)?);
            match a.ts {
                Some(ts) => store.put_at(family, row, column, ts, value)?,
                None => store.put(family, row, column, value)?,
            }
        }
        StoreCommand::Get(a) => {
            let (row, cells, _) = get(store, a)?;
            print_cells(ctx, &a.family, &row, &cells, out)?;
        }
        StoreCommand::Slice(a) => {
            let (row, cells, _) = slice(store, a)?;
            print_cells(ctx, &a.family, &row, &cells, out)?;
        }
        StoreCommand::Scan(a) => {
            let (rows, _) = scan(store, a)?;
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
        }
        StoreCommand::Delete(a) => {
            let family = known_family(store, &a.family)?;
            let (row, column) = (unescape(&a.row)?, unescape(&a.column)?);
            match a.ts {
                Some(ts) => store.delete_at(family, row, column, ts)?,
                None => store.delete(family, row, column)?,
            }
        }
        StoreCommand::DeleteRow(a) => {
            let family = known_family(store, &a.family)?;
            let row = unescape(&a.row)?;
            match a.ts {
                Some(ts) => store.delete_row_at(family, row, ts)?,
                None => store.delete_row(family, row)?,
            }
        }
        StoreCommand::Flush => flush(store, out)?,
        StoreCommand::Compact(a) => compact(store, a.family.as_deref(), out)?,
        StoreCommand::Stats => stats(ctx, store, out)?,
        StoreCommand::Files => files(ctx, store, out)?,
        StoreCommand::Explain(a) => explain(ctx, store, &a.read, out)?,
        StoreCommand::Load(a) => load::run(store, a, out)?,
        StoreCommand::Check => check(store, out)?,
        StoreCommand::Dump(_) => {}
    }
    Ok(())
}

/// The family name if the store has it; otherwise an error that lists the
/// families it does have.
fn known_family<'a>(store: &Store, family: &'a str) -> Result<&'a str, Error> {
    let families = store.families();
    if families.iter().any(|f| f == family) {
        Ok(family)
    } else if families.is_empty() {
        Err(format!("unknown column family {family:?}: the store has none yet (use --family {family})").into())
    } else {
        Err(format!("unknown column family {family:?} (families: {})", families.join(", ")).into())
    }
}

type Cells = (Vec<u8>, Vec<cellar::Cell>, Trace);

fn get(store: &Store, a: &GetArgs) -> Result<Cells, Error> {
    let family = known_family(store, &a.family)?;
    let row = unescape(&a.row)?;
    let (cells, trace) = match &a.column {
        Some(column) => {
            let (cell, trace) = store.get_traced(family, &row, unescape(column)?)?;
            (cell.into_iter().collect(), trace)
        }
        None => store.get_row_traced(family, &row)?,
    };
    Ok((row, cells, trace))
}

fn column_range(a: &SliceArgs) -> Result<ColumnRange, Error> {
    let mut range = ColumnRange::all();
    range.from = a.from.as_deref().map(unescape).transpose()?.map(Into::into);
    range.to = a.to.as_deref().map(unescape).transpose()?.map(Into::into);
    if let Some(n) = a.limit {
        range = range.limit(n);
    }
    if a.reverse {
        range = range.reverse();
    }
    Ok(range)
}

fn slice(store: &Store, a: &SliceArgs) -> Result<Cells, Error> {
    let family = known_family(store, &a.family)?;
    let row = unescape(&a.row)?;
    let (cells, trace) = store.slice_traced(family, &row, &column_range(a)?)?;
    Ok((row, cells, trace))
}

fn scan(store: &Store, a: &ScanArgs) -> Result<(Vec<cellar::Row>, Trace), Error> {
    let family = known_family(store, &a.family)?;
    let mut range = match &a.prefix {
        Some(p) => RowRange::prefix(unescape(p)?),
        None => RowRange::all(),
    };
    if let Some(from) = &a.from {
        range.from = Some(unescape(from)?.into());
    }
    if let Some(to) = &a.to {
        range.to = Some(unescape(to)?.into());
    }
    if let Some(n) = a.limit {
        range = range.limit(n);
    }
    Ok(store.scan_traced(family, &range)?)
}

fn print_cells(
    ctx: &Context,
    family: &str,
    row: &[u8],
    cells: &[cellar::Cell],
    out: &mut dyn Write,
) -> Result<(), Error> {
    if ctx.json {
        let cells: Vec<Value> = cells.iter().map(|c| format::cell_json(row, c)).collect();
        writeln!(out, "{}", Value::Array(cells))?;
    } else {
        write!(out, "{}", format::render_cells(family, row, cells, ctx.human))?;
    }
    Ok(())
}

/// `flush`: memtables to table files, then how many files each family has.
fn flush(store: &Store, out: &mut dyn Write) -> Result<(), Error> {
    let before: Vec<u64> = store.tables().iter().map(|t| t.file_id).collect();
    store.flush()?;
    store.wait_for_background_work()?;
    let tables = store.tables();
    // Counted by file number, since a flush may also set off a compaction
    // that merges old files away.
    let new = tables.iter().filter(|t| !before.contains(&t.file_id)).count();
    if new == 0 {
        writeln!(
            out,
            "nothing to flush: the memtables are empty ({} table file(s) in all)",
            tables.len()
        )?;
    } else {
        writeln!(out, "flushed: {new} new table file(s), {} in all", tables.len())?;
    }
    Ok(())
}

/// `compact [FAMILY]`: what each compaction read, wrote and reclaimed, and the
/// space amplification (stored entries / live entries) before and after.
fn compact(store: &Store, family: Option<&str>, out: &mut dyn Write) -> Result<(), Error> {
    let families = match family {
        Some(f) => vec![known_family(store, f)?.to_string()],
        None => store.families(),
    };
    for family in families {
        let before = store.stats()?;
        let report = store.compact(&family)?;
        let after = store.stats()?;
        let amp = |s: &cellar::Stats| s.family(&family).map_or(1.0, |f| f.space_amplification());
        writeln!(out, "compacted {family}:")?;
        writeln!(
            out,
            "  read     {} file(s), {} bytes, {} entries",
            report.input_files, report.input_bytes, report.input_entries
        )?;
        writeln!(
            out,
            "  wrote    {} file(s), {} bytes, {} entries",
            report.output_files, report.output_bytes, report.output_entries
        )?;
        writeln!(
            out,
            "  reclaimed {} bytes, {} entries",
            report.input_bytes.saturating_sub(report.output_bytes),
            report.input_entries.saturating_sub(report.output_entries)
        )?;
        writeln!(
            out,
            "  space amplification {} -> {}",
            format::ratio(amp(&before)),
            format::ratio(amp(&after))
        )?;
    }
    Ok(())
}

/// `stats`: one column per family, one line per measure.
fn stats(ctx: &Context, store: &Store, out: &mut dyn Write) -> Result<(), Error> {
    let stats = store.stats()?;
    if ctx.json {
        let families: Vec<Value> = stats
            .families
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "memtable_entries": f.memtable_entries,
                    "memtable_bytes": f.memtable_bytes,
                    "frozen_memtables": f.frozen_memtables,
                    "table_files": f.table_files,
                    "runs": f.runs,
                    "table_bytes": f.table_bytes,
                    "file_sizes": f.file_sizes,
                    "stored_entries": f.stored_entries,
                    "live_entries": f.live_entries,
                    "tombstones": f.tombstones,
                    "stored_bytes": f.stored_bytes,
                    "live_bytes": f.live_bytes,
                    "space_amplification": f.space_amplification(),
                    "space_amplification_bytes": f.space_amplification_bytes(),
                    "user_entries_written": f.user_entries_written,
                    "user_bytes_written": f.user_bytes_written,
                    "flushes": f.flushes,
                    "flush_bytes_written": f.flush_bytes_written,
                    "compactions": f.compactions,
                    "compaction_bytes_read": f.compaction_bytes_read,
                    "compaction_bytes_written": f.compaction_bytes_written,
                    "write_amplification": f.write_amplification(),
                })
            })
            .collect();
        let doc = json!({
            "families": families,
            "log_bytes_written": stats.log_bytes_written,
            "write_amplification": stats.write_amplification(),
        });
        writeln!(out, "{doc}")?;
        return Ok(());
    }
    type Measure = (&'static str, fn(&cellar::FamilyStats) -> String);
    let measures: [Measure; 11] = [
        ("memtable entries", |f| f.memtable_entries.to_string()),
        ("memtable bytes", |f| f.memtable_bytes.to_string()),
        ("table files", |f| f.table_files.to_string()),
        ("runs", |f| f.runs.to_string()),
        ("table bytes", |f| f.table_bytes.to_string()),
        ("entries stored", |f| f.stored_entries.to_string()),
        ("entries live", |f| f.live_entries.to_string()),
        ("tombstones", |f| f.tombstones.to_string()),
        ("space amplification", |f| format::ratio(f.space_amplification())),
        ("bytes written by user*", |f| f.user_bytes_written.to_string()),
        ("write amplification*", |f| format::ratio(f.write_amplification())),
    ];
    let mut headers = vec![""];
    headers.extend(stats.families.iter().map(|f| f.name.as_str()));
    let rows: Vec<Vec<String>> = measures
        .iter()
        .map(|(name, value)| {
            let mut row = vec![(*name).to_string()];
            row.extend(stats.families.iter().map(value));
            row
        })
        .collect();
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(out, "* since this process opened the store")?;
    Ok(())
}

/// `files`: every table file, oldest run first, keys shown as `row/column@ts`.
fn files(ctx: &Context, store: &Store, out: &mut dyn Write) -> Result<(), Error> {
    let tables = store.tables();
    if ctx.json {
        let list: Vec<Value> = tables
            .iter()
            .map(|t| {
                json!({
                    "family": t.family,
                    "file_id": t.file_id,
                    "run": t.run,
                    "path": t.path.display().to_string(),
                    "size": t.size,
                    "entries": t.entries,
                    "tombstones": t.tombstones,
                    "data_blocks": t.data_blocks,
                    "first_key": format::internal_key(&t.first_key),
                    "last_key": format::internal_key(&t.last_key),
                })
            })
            .collect();
        writeln!(out, "{}", Value::Array(list))?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tables
        .iter()
        .map(|t| {
            vec![
                t.family.clone(),
                file_name(&t.path),
                t.run.to_string(),
                t.size.to_string(),
                t.entries.to_string(),
                t.tombstones.to_string(),
                t.data_blocks.to_string(),
                format::internal_key(&t.first_key),
                format::internal_key(&t.last_key),
            ]
        })
        .collect();
    let headers = [
        "family",
        "file",
        "run",
        "bytes",
        "entries",
        "tombstones",
        "blocks",
        "first key",
        "last key",
    ];
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(out, "{} file(s)", tables.len())?;
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `explain`: runs the read, prints its result, then its [`Trace`]: the
/// sources newest first, how each was settled and what it cost.
fn explain(ctx: &Context, store: &Store, read: &ExplainRead, out: &mut dyn Write) -> Result<(), Error> {
    let (family, result, trace) = match read {
        ExplainRead::Get(a) => {
            let (row, cells, trace) = get(store, a)?;
            (
                &a.family,
                format::render_cells(&a.family, &row, &cells, ctx.human),
                trace,
            )
        }
        ExplainRead::Slice(a) => {
            let (row, cells, trace) = slice(store, a)?;
            (
                &a.family,
                format::render_cells(&a.family, &row, &cells, ctx.human),
                trace,
            )
        }
        ExplainRead::Scan(a) => {
            let (rows, trace) = scan(store, a)?;
            (&a.family, format::render_rows(&a.family, &rows, ctx.human), trace)
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
        });
        writeln!(out, "{doc}")?;
        return Ok(());
    }
    write!(out, "{result}")?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = sources
        .iter()
        .map(|(name, s)| {
            vec![
                name.clone(),
                settled_name(s.settled).to_string(),
                filter_answer(s).to_string(),
                s.data_blocks.to_string(),
                s.pages_touched.to_string(),
                s.entries_examined.to_string(),
            ]
        })
        .collect();
    let headers = ["source", "settled by", "filter", "blocks", "pages", "examined"];
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
    Ok(())
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

/// `check`: verifies each table file on its own, so that one damaged file
/// does not hide the state of the others; fails if any is damaged.
fn check(store: &Store, out: &mut dyn Write) -> Result<(), Error> {
    let tables = store.tables();
    let mut damaged = 0;
    for t in &tables {
        let result = cellar_sstable::Table::open(&t.path).and_then(|table| table.verify());
        match result {
            Ok(report) => writeln!(
                out,
                "ok       {}/{}  {} blocks, {} entries",
                t.family,
                file_name(&t.path),
                report.blocks,
                report.entries
            )?,
            Err(e) => {
                damaged += 1;
                writeln!(out, "DAMAGED  {}/{}  {e}", t.family, file_name(&t.path))?;
            }
        }
    }
    if damaged > 0 {
        return Err(format!(
            "{damaged} of {} table file(s) damaged; `cellar --dir {} repair` keeps the sound ones and moves \
             the damaged ones to its lost/ folder",
            tables.len(),
            store.dir().display()
        )
        .into());
    }
    writeln!(out, "{} table file(s) checked, no damage", tables.len())?;
    Ok(())
}
