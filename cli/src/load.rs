//! `cellar load FAMILY FILE`: bulk load cells (and deletions) from a file in
//! one of the formats of [`crate::exchange`] (CSV or JSON lines), such as one
//! written by `cellar export`.
//!
//! The load is in two passes. The first reads the whole file and checks every
//! line (syntax, escapes, timestamps, empty rows, the store's size limits),
//! writing nothing; a bad line stops the load with its file and line number
//! and the store unchanged. The second writes, in batches of at most [`BATCH`]
//! entries and [`BATCH_BYTES`] bytes: one log record each instead of one per
//! cell, which is how bulk loaders amortise the write-ahead log. A batch is atomic, the whole load is not: if
//! the store fails in the middle of the second pass (a full disk), the batches
//! before stay written, and the error says how many entries and lines they were.
//! Input that cannot be read twice (`/dev/stdin`, a pipe) is read into memory
//! once, for both passes.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};

use cellar::key::Kind;
use cellar::{Store, WriteBatch};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exchange::{self, Entry, Format};
use crate::Error;

/// Entries per write batch: large enough to amortise a log record, small
/// enough that one batch never dominates a memtable.
const BATCH: usize = 1000;

/// Bytes of rows, columns and values per write batch, for the same reasons.
/// Without it, a thousand valid cells of a few megabytes each would make a
/// batch over the log's record limit (256 MiB) that the store refuses, after
/// the checking pass said every line was fine. A cell larger than this (up to
/// the 16 MiB value limit) goes in a batch of its own.
const BATCH_BYTES: usize = 4 << 20;

/// Arguments of `load`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Column family to load into.
    pub family: String,
    /// CSV (`row,column,value[,timestamp]`) or JSON-lines file
    /// (`/dev/stdin` for standard input).
    pub file: PathBuf,
}

/// Loads the file; reports how many entries were written.
pub fn run(store: &Store, args: &Args, out: &mut dyn Write) -> Result<(), Error> {
    crate::store_cmds::known_family_in(&store.families(), &args.family)?;
    let path = &args.file;
    let input = Input::open(path)?;
    let size = input.size();
    // Drawn on stderr, and only for a person watching: a script piping the
    // output gets no escape codes.
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(2 * size)
    } else {
        ProgressBar::with_draw_target(Some(2 * size), ProgressDrawTarget::hidden())
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}") {
        bar.set_style(style);
    }

    bar.set_message("checking");
    let (puts, deletions) = each_entry(path, &input, &bar, |_, entry| entry.check())?;

    bar.set_message("loading");
    let mut batch = WriteBatch::new();
    let mut first_line = 0; // first line of the batch being filled
    let mut written = 0u64;
    let mut write = |batch: &mut WriteBatch, first_line: usize, last_line: usize| -> Result<(), Error> {
        store.write(batch).map_err(|e| {
            format!(
                "{}: writing lines {first_line}-{last_line} failed: {e}; the {written} entries of the lines \
                 before are written, the rest is not",
                path.display()
            )
        })?;
        written += batch.len() as u64;
        *batch = WriteBatch::new();
        Ok(())
    };
    let mut last_line = 0;
    let mut batch_bytes = 0;
    each_entry(path, &input, &bar, |line, e| {
        let bytes = e.row.len() + e.column.len() + e.value.len();
        if !batch.is_empty() && batch_bytes + bytes > BATCH_BYTES {
            write(&mut batch, first_line, last_line)?;
        }
        if batch.is_empty() {
            first_line = line;
            batch_bytes = 0;
        }
        add(&mut batch, &args.family, e);
        batch_bytes += bytes;
        last_line = line;
        if batch.len() >= BATCH {
            write(&mut batch, first_line, line)?;
        }
        Ok(())
    })?;
    if !batch.is_empty() {
        write(&mut batch, first_line, last_line)?;
    }
    bar.finish_and_clear();
    let deleted = match deletions {
        0 => String::new(),
        n => format!(" and {n} deletion(s)"),
    };
    writeln!(
        out,
        "loaded {puts} cell(s){deleted} into {} from {}",
        args.family,
        path.display()
    )?;
    Ok(())
}

fn add(batch: &mut WriteBatch, family: &str, e: Entry) {
    match (e.kind, e.timestamp) {
        (Kind::Put, Some(ts)) => batch.put_at(family, e.row, e.column, ts, e.value),
        (Kind::Put, None) => batch.put(family, e.row, e.column, e.value),
        (Kind::DeleteCell, Some(ts)) => batch.delete_at(family, e.row, e.column, ts),
        (Kind::DeleteCell, None) => batch.delete(family, e.row, e.column),
        (Kind::DeleteRow, Some(ts)) => batch.delete_row_at(family, e.row, ts),
        (Kind::DeleteRow, None) => batch.delete_row(family, e.row),
    };
}

/// What `load` reads, once per pass.
enum Input {
    /// A regular file of `size` bytes: read from the disk again by the
    /// second pass.
    File { path: PathBuf, size: u64 },
    /// Anything else (`/dev/stdin`, a pipe, `<(command)`), read into memory
    /// by the first look: a second read of a pipe finds it empty, and a load
    /// that checked every line and then wrote none would still say "loaded".
    Read(Vec<u8>),
}

impl Input {
    fn open(path: &Path) -> Result<Input, Error> {
        let meta = crate::dump::open_file(path, "the file to load").map_err(|e| -> Error {
            // Many tools read standard input from `-`; `load` reads paths.
            if path.as_os_str() == "-" {
                format!("{e} (for stdin, give /dev/stdin)").into()
            } else {
                e
            }
        })?;
        if meta.is_file() {
            return Ok(Input::File {
                path: path.to_path_buf(),
                size: meta.len(),
            });
        }
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Input::Read(bytes))
    }

    /// Bytes to read in one pass, for the progress bar.
    fn size(&self) -> u64 {
        match self {
            Input::File { size, .. } => *size,
            Input::Read(bytes) => bytes.len() as u64,
        }
    }

    fn reader(&self) -> Result<Box<dyn BufRead + '_>, Error> {
        Ok(match self {
            Input::File { path, .. } => Box::new(BufReader::new(
                std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
            )),
            Input::Read(bytes) => Box::new(bytes.as_slice()),
        })
    }
}

/// Reads the input and hands every entry to `f` with its line number (from
/// 1); an error names the file (`path`) and the line. Returns the number of
/// puts and of deletions.
fn each_entry(
    path: &Path,
    input: &Input,
    bar: &ProgressBar,
    mut f: impl FnMut(usize, Entry) -> Result<(), Error>,
) -> Result<(u64, u64), Error> {
    let mut format: Option<Format> = None;
    let (mut puts, mut deletions) = (0u64, 0u64);
    for (i, line) in input.reader()?.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| match e.kind() {
            // A binary file (a table, a compressed export) fails here.
            std::io::ErrorKind::InvalidData => format!(
                "{} line {n} {} (load reads CSV or JSON lines)",
                path.display(),
                crate::format::NOT_UTF8
            ),
            _ => format!("{} line {n}: {e}", path.display()),
        })?;
        bar.inc(line.len() as u64 + 1);
        let text = if n == 1 { exchange::strip_bom(&line) } else { &line };
        // A CRLF file's lines end with \r; spaces around a field are data.
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            continue;
        }
        let at = |e: Error| -> Error { format!("{} line {n}: {e}", path.display()).into() };
        let first = format.is_none();
        let format = *format.get_or_insert_with(|| Format::sniff(text.trim_start()));
        if first && format == Format::Csv && exchange::is_csv_header(text.trim()) {
            continue;
        }
        for entry in exchange::parse_line(format, text).map_err(at)? {
            match entry.kind {
                Kind::Put => puts += 1,
                _ => deletions += 1,
            }
            f(n, entry).map_err(at)?;
        }
    }
    Ok((puts, deletions))
}
