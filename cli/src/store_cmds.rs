//! The commands that work on a store: write cells, read them back, and watch
//! what the store does with them (`flush`, `compact`, `stats`, `files`,
//! `explain`, `check`), manage its families, move cells in and out (`load`,
//! `export`) and decode its files (`dump`).
//!
//! Each command is one variant of [`StoreCommand`]. The same enum is parsed
//! from the process arguments (`cellar put ...`) and from each line of
//! `cellar shell`, so the two can never drift apart. Commands write their
//! output to a `&mut dyn Write` rather than printing, for the same reason.
//! This module holds the enum, opening the store, and the small commands;
//! the reads are in `reads`, families in `families`, `stats` and `files` in
//! `stats`.
//!
//! A note for learners: every `cellar` process opens the store, and opening
//! replays the write-ahead log and flushes what it held. So when each write is
//! its own process, each one ends up in a table file of its own the next time
//! the store is opened; inside `cellar shell` the writes share one memtable
//! until `flush`, as they would in a long-running server.

use std::io::Write;
use std::path::{Path, PathBuf};

use cellar::{Error as StoreError, FamilyOptions, ReadOnlyStore, Store, StoreOptions};

use crate::clock;
use crate::families::{self, AlterArgs, ConfirmArgs, CreateArgs, Removal};
use crate::format::unescape;
use crate::opened::Opened;
use crate::reads::{self, CountArgs, ExplainArgs, GetArgs, ScanArgs, SliceArgs};
use crate::stats::{self, file_name};
use crate::{dump, dump_log, dump_manifest, export, load, Error};

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
    /// Open the store to read only (`--read-only`).
    pub read_only: bool,
}

/// The commands that `cellar` and `cellar shell` share.
#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Create the store (if needed) and the families named by --family, with
    /// the options given here.
    Create(CreateArgs),
    /// Each column family with its options.
    Families,
    /// Change a family's options; those not given stay as they are.
    #[command(mut_args(families::without_default))]
    Alter(AlterArgs),
    /// Drop a family: its cells, its files and its name (needs --yes).
    DropFamily(ConfirmArgs),
    /// Delete every cell of a family; the family and its options stay (needs --yes).
    Truncate(ConfirmArgs),
    /// Write one cell (timestamped now, or at --ts).
    Put(PutArgs),
    /// Read one cell, or every column of a row.
    Get(GetArgs),
    /// Read a range of a row's columns, in column order.
    Slice(SliceArgs),
    /// Read rows in row order.
    Scan(ScanArgs),
    /// Count the rows (and cells) of a family or a range of it.
    Count(CountArgs),
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
    Files(FilesArgs),
    /// Decode one table file block by block, checking every checksum.
    Dump(dump::Args),
    /// Decode one log segment record by record: every write batch.
    DumpLog(dump_log::Args),
    /// Decode the manifest edit by edit, and the state it builds.
    DumpManifest(dump_manifest::Args),
    /// Run a read and print what it cost, source by source.
    Explain(ExplainArgs),
    /// Bulk load cells from CSV (row,column,value[,timestamp]) or JSON lines.
    Load(load::Args),
    /// Write a family's cells as JSON lines or CSV that `load` reads back.
    Export(export::Args),
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
    /// Timestamp: milliseconds since 1970 or an ISO 8601 date (default: now).
    #[arg(long, value_parser = clock::timestamp_arg)]
    pub ts: Option<u64>,
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
    #[arg(long, value_parser = clock::timestamp_arg)]
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
    #[arg(long, value_parser = clock::timestamp_arg)]
    pub ts: Option<u64>,
}

/// `files [--report FILE]`.
#[derive(Debug, clap::Args)]
pub struct FilesArgs {
    /// Also draw each family's sources over its key space in this file, one
    /// self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// `compact [FAMILY]`.
#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// Column family (default: every family).
    pub family: Option<String>,
}

/// The switches of the command line that a command may ignore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// `--json`.
    Json,
    /// `--human`.
    Human,
    /// `--dir`.
    Dir,
    /// `--family`.
    Family,
    /// `--read-only`.
    ReadOnly,
}

impl StoreCommand {
    /// The command's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            StoreCommand::Create(_) => "create",
            StoreCommand::Families => "families",
            StoreCommand::Alter(_) => "alter",
            StoreCommand::DropFamily(_) => "drop-family",
            StoreCommand::Truncate(_) => "truncate",
            StoreCommand::Put(_) => "put",
            StoreCommand::Get(_) => "get",
            StoreCommand::Slice(_) => "slice",
            StoreCommand::Scan(_) => "scan",
            StoreCommand::Count(_) => "count",
            StoreCommand::Delete(_) => "delete",
            StoreCommand::DeleteRow(_) => "delete-row",
            StoreCommand::Flush => "flush",
            StoreCommand::Compact(_) => "compact",
            StoreCommand::Stats => "stats",
            StoreCommand::Files(_) => "files",
            StoreCommand::Dump(_) => "dump",
            StoreCommand::DumpLog(_) => "dump-log",
            StoreCommand::DumpManifest(_) => "dump-manifest",
            StoreCommand::Explain(_) => "explain",
            StoreCommand::Load(_) => "load",
            StoreCommand::Export(_) => "export",
            StoreCommand::Check => "check",
        }
    }

    /// Whether the command changes the store (and so needs it opened for
    /// writing, not `--read-only`).
    pub fn writes(&self) -> bool {
        use StoreCommand as C;
        matches!(
            self,
            C::Create(_)
                | C::Alter(_)
                | C::DropFamily(_)
                | C::Truncate(_)
                | C::Put(_)
                | C::Delete(_)
                | C::DeleteRow(_)
                | C::Flush
                | C::Compact(_)
                | C::Load(_)
        )
    }

    /// Whether the command needs an open store (the dumps read files).
    pub fn needs_store(&self) -> bool {
        needs_store(self.name())
    }

    /// Whether the command does something with a switch, given its
    /// arguments. A switch given to a command that would ignore it is an
    /// error, so that `--json` never silently prints text and `--dir` never
    /// names a folder nobody reads.
    pub fn uses(&self, switch: Switch) -> bool {
        // dump-manifest reads the manifest of --dir only without a FILE.
        let reads_a_file = matches!(self, StoreCommand::DumpManifest(a) if a.file.is_some());
        accepts(self.name(), switch) && !(switch == Switch::Dir && reads_a_file)
    }
}

/// Whether the store command `name` needs an open store (the dumps read files).
fn needs_store(name: &str) -> bool {
    !matches!(name, "dump" | "dump-log" | "dump-manifest")
}

/// Whether the store command `name` does something with a switch, with some
/// arguments: what its help lists ([`crate::switches`]).
pub fn accepts(name: &str, switch: Switch) -> bool {
    let needs_store = needs_store(name);
    match switch {
        Switch::Json => matches!(
            name,
            "families" | "get" | "slice" | "scan" | "count" | "stats" | "files" | "explain"
        ),
        Switch::Human => matches!(name, "get" | "slice" | "scan" | "explain" | "dump" | "dump-log"),
        // Without a FILE, dump-manifest reads the manifest of --dir.
        Switch::Dir => needs_store || name == "dump-manifest",
        Switch::Family => needs_store,
        // A command that writes says so itself, more plainly.
        Switch::ReadOnly => needs_store,
    }
}

/// Refuses `--json` with `--human`: JSON timestamps stay milliseconds, for a
/// script to read, so `--human` would be ignored, and an ignored switch is an
/// error (see [`StoreCommand::uses`]).
pub fn check_json_human(json: bool, human: bool) -> Result<(), Error> {
    if json && human {
        return Err("--human does not apply with --json: JSON timestamps are milliseconds, for scripts".into());
    }
    Ok(())
}

/// Refuses a `--dir` that names a file, in the same words for every command
/// that takes one (the engine would report a missing store, or the
/// operating system's "Not a directory" on a path inside it).
pub fn check_not_a_file(dir: &Path) -> Result<(), Error> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "{} is a file, not a folder: --dir names the folder of a store",
            dir.display()
        )
        .into());
    }
    Ok(())
}

/// Refuses a folder that would be a surprise to turn into a store: a file, or
/// a folder that holds other things than a store. Checked before the engine
/// touches it, so such a folder is left exactly as it was. `creating`: the
/// command names families to create (else the error says only what the
/// folder is not, rather than where a store could be made).
fn check_folder(dir: &Path, creating: bool) -> Result<(), Error> {
    check_not_a_file(dir)?;
    if !dir.is_dir() || dir.join("CURRENT").exists() {
        return Ok(());
    }
    // What a store being created leaves before it writes CURRENT.
    let store_file = |name: &str| {
        name == "LOCK"
            || name == "CURRENT.tmp"
            || name.starts_with("MANIFEST-")
            || name
                .strip_suffix(".log")
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    };
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        if !store_file(&entry.file_name().to_string_lossy()) {
            if !creating {
                return Err(format!("{} is not a cellar store (no CURRENT file)", dir.display()).into());
            }
            return Err(format!(
                "{} is not empty and holds no cellar store (no CURRENT file): \
                 give --dir a new or empty folder",
                dir.display()
            )
            .into());
        }
    }
    Ok(())
}

/// Opens the store in `ctx.dir`, creating it and any `--family` that is
/// missing, with `options`. A folder without a store is only created when
/// families are named, so a mistyped `--dir` does not silently make an empty
/// store, and only when it is new or empty. With `--read-only` nothing is
/// created (or written).
pub fn open(ctx: &Context, options: &FamilyOptions) -> Result<Opened, Error> {
    check_folder(&ctx.dir, !ctx.families.is_empty())?;
    if ctx.read_only {
        if !ctx.families.is_empty() {
            return Err("--family creates families, and --read-only writes nothing: give one of them".into());
        }
        return Ok(Opened::ReadOnly(
            ReadOnlyStore::open(&ctx.dir).map_err(|e| explain_open_error(ctx, e))?,
        ));
    }
    let create = !ctx.families.is_empty();
    let store_options = StoreOptions::default().create_if_missing(create);
    let store = Store::open(&ctx.dir, store_options).map_err(|e| explain_open_error(ctx, e))?;
    // Declared here rather than in StoreOptions: declaring an existing family
    // there would overwrite the options it was created with.
    families::ensure(&store, &ctx.families, options)?;
    // Opening may start a compaction (the log just flushed may complete a
    // tier); wait, so that what this command prints does not depend on timing.
    store.wait_for_background_work()?;
    Ok(Opened::Writable(store))
}

/// An open error, with what to do about it.
fn explain_open_error(ctx: &Context, e: StoreError) -> Error {
    match e {
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
    }
}

/// The options a command creates missing `--family` families with.
pub fn new_family_options(command: &StoreCommand) -> FamilyOptions {
    match command {
        StoreCommand::Create(a) => a.apply(FamilyOptions::default()),
        _ => FamilyOptions::default(),
    }
}

/// Runs one command on an open store (or none, for the dumps).
pub fn run(ctx: &Context, store: Option<&Opened>, command: &StoreCommand, out: &mut dyn Write) -> Result<(), Error> {
    let opened = match (command, store) {
        (StoreCommand::Dump(args), _) => return dump::run(args, ctx.human, out),
        (StoreCommand::DumpLog(args), _) => return dump_log::run(args, ctx.human, out),
        (StoreCommand::DumpManifest(args), _) => return dump_manifest::run(args, &ctx.dir, out),
        (_, Some(opened)) => opened,
        (_, None) => return Err("no store is open".into()),
    };
    if command.writes() {
        let store = opened.writable(command.name())?;
        return write(ctx, store, command, out);
    }
    match command {
        StoreCommand::Families => families::list(ctx, opened, out)?,
        StoreCommand::Get(a) => reads::get_cmd(ctx, opened, a, out)?,
        StoreCommand::Slice(a) => reads::slice_cmd(ctx, opened, a, out)?,
        StoreCommand::Scan(a) => reads::scan_cmd(ctx, opened, a, out)?,
        StoreCommand::Count(a) => reads::count_cmd(ctx, opened, a, out)?,
        StoreCommand::Stats => stats::stats(ctx, opened, out)?,
        StoreCommand::Files(a) => {
            if let Some(path) = &a.report {
                crate::picture::check_report_path(path)?;
            }
            stats::files(ctx, opened, out)?;
            if let Some(path) = &a.report {
                // With --json the document stays the whole of stdout.
                let quiet = &mut std::io::sink();
                crate::picture::files(opened, path, if ctx.json { quiet } else { out })?;
            }
        }
        StoreCommand::Explain(a) => reads::explain(ctx, opened, a, out)?,
        StoreCommand::Export(a) => export::run(opened, a, out)?,
        StoreCommand::Check => check(opened, out)?,
        _ => return Err(format!("`{}` is not a reading command", command.name()).into()),
    }
    Ok(())
}

/// Runs a command that writes.
fn write(ctx: &Context, store: &Store, command: &StoreCommand, out: &mut dyn Write) -> Result<(), Error> {
    let known = |family: &str| known_family_in(&store.families(), family).map(|_| ());
    match command {
        StoreCommand::Create(a) => families::create(ctx, store, a, out)?,
        StoreCommand::Alter(a) => families::alter(store, a, out)?,
        StoreCommand::DropFamily(a) => families::remove(store, a, Removal::Drop, out)?,
        StoreCommand::Truncate(a) => families::remove(store, a, Removal::Truncate, out)?,
        StoreCommand::Put(a) => {
            known(&a.family)?;
            let (row, column, value) = (row_key(&a.row)?, unescape(&a.column)?, unescape(&a.value)?);
            match a.ts {
                Some(ts) => store.put_at(&a.family, row, column, ts, value)?,
                None => store.put(&a.family, row, column, value)?,
            }
        }
        StoreCommand::Delete(a) => {
            known(&a.family)?;
            let (row, column) = (row_key(&a.row)?, unescape(&a.column)?);
            match a.ts {
                Some(ts) => store.delete_at(&a.family, row, column, ts)?,
                None => store.delete(&a.family, row, column)?,
            }
        }
        StoreCommand::DeleteRow(a) => {
            known(&a.family)?;
            let row = row_key(&a.row)?;
            match a.ts {
                Some(ts) => store.delete_row_at(&a.family, row, ts)?,
                None => store.delete_row(&a.family, row)?,
            }
        }
        StoreCommand::Flush => flush(store, out)?,
        StoreCommand::Compact(a) => compact(store, a.family.as_deref(), out)?,
        StoreCommand::Load(a) => load::run(store, a, out)?,
        _ => return Err(format!("`{}` does not write", command.name()).into()),
    }
    Ok(())
}

/// The family name if the store has it; otherwise an error that lists the
/// families it does have.
pub fn known_family<'a>(store: &Opened, family: &'a str) -> Result<&'a str, Error> {
    known_family_in(&store.families(), family)
}

/// [`known_family`] among `families`.
pub fn known_family_in<'a>(families: &[String], family: &'a str) -> Result<&'a str, Error> {
    if families.iter().any(|f| f == family) {
        Ok(family)
    } else if families.is_empty() {
        Err(format!("unknown column family {family:?}: the store has none yet (use --family {family})").into())
    } else {
        Err(format!("unknown column family {family:?} (families: {})", families.join(", ")).into())
    }
}

/// A row key to write: unescaped, and not empty. The engine could store an
/// empty row, but HBase refuses one and it would print as a blank row.
fn row_key(text: &str) -> Result<Vec<u8>, Error> {
    let row = unescape(text)?;
    if row.is_empty() {
        return Err("the row key is empty".into());
    }
    Ok(row)
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
        Some(f) => vec![known_family_in(&store.families(), f)?.to_string()],
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
            crate::format::ratio(amp(&before)),
            crate::format::ratio(amp(&after))
        )?;
    }
    Ok(())
}

/// `check`: verifies each table file on its own, so that one damaged file
/// does not hide the state of the others; fails if any is damaged.
fn check(store: &Opened, out: &mut dyn Write) -> Result<(), Error> {
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
