//! `cellar load FAMILY FILE`: bulk load cells from a file.
//!
//! Two formats, told apart by the first non-blank character (`{` means JSON):
//!
//! * CSV, one cell per line: `row,column,value[,ts]`. Fields may be quoted
//!   (`"a,b"`, with `""` for a quote inside); a first line of exactly
//!   `row,column,value[,ts]` is a header and skipped.
//! * JSON lines, one object per line: either one cell,
//!   `{"row": "r", "column": "c", "value": "v", "ts": 17}`, or one row with a
//!   column per other field, `{"row": "r", "title": "Dune", "year": 1965}`
//!   (non-string values are written as their JSON text).
//!
//! Every text field accepts `\xNN` escapes. Cells go to the store in write
//! batches of [`BATCH`]: one log record each, instead of one per cell, which
//! is how bulk loaders amortise the write-ahead log.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::PathBuf;

use cellar::{Store, WriteBatch};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::format::unescape;
use crate::Error;

/// Cells per write batch: large enough to amortise a log record, small enough
/// that one batch never dominates a memtable.
const BATCH: usize = 1000;

/// Arguments of `load`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Column family to load into.
    pub family: String,
    /// CSV or JSON-lines file.
    pub file: PathBuf,
}

/// One cell read from the file.
struct Record {
    row: Vec<u8>,
    column: Vec<u8>,
    value: Vec<u8>,
    ts: Option<u64>,
}

/// Loads the file; reports how many cells were written.
pub fn run(store: &Store, args: &Args, out: &mut dyn Write) -> Result<(), Error> {
    if !store.families().contains(&args.family) {
        return Err(format!("unknown column family {:?}", args.family).into());
    }
    let file = std::fs::File::open(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    // Drawn on stderr, and only for a person watching: a script piping the
    // output gets no escape codes.
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(size)
    } else {
        ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::hidden())
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}") {
        bar.set_style(style);
    }
    let reader = BufReader::new(file);
    let mut batch = WriteBatch::new();
    let mut cells = 0u64;
    let mut json: Option<bool> = None;
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", args.file.display()))?;
        bar.inc(line.len() as u64 + 1);
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let is_json = *json.get_or_insert_with(|| text.starts_with('{'));
        let at = |e: Error| -> Error { format!("{} line {}: {e}", args.file.display(), n + 1).into() };
        let records = if is_json {
            json_records(text).map_err(at)?
        } else if n == 0 && is_header(text) {
            continue;
        } else {
            vec![csv_record(text).map_err(at)?]
        };
        for r in records {
            match r.ts {
                Some(ts) => batch.put_at(&args.family, r.row, r.column, ts, r.value),
                None => batch.put(&args.family, r.row, r.column, r.value),
            };
            cells += 1;
        }
        if batch.len() >= BATCH {
            store.write(&batch)?;
            batch = WriteBatch::new();
        }
    }
    if !batch.is_empty() {
        store.write(&batch)?;
    }
    bar.finish_and_clear();
    writeln!(
        out,
        "loaded {cells} cell(s) into {} from {}",
        args.family,
        args.file.display()
    )?;
    Ok(())
}

fn is_header(line: &str) -> bool {
    matches!(line, "row,column,value" | "row,column,value,ts")
}

/// Splits one CSV line into fields (RFC 4180 quoting, one line per record).
fn csv_fields(line: &str) -> Result<Vec<String>, Error> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

fn csv_record(line: &str) -> Result<Record, Error> {
    let fields = csv_fields(line)?;
    let (row, column, value, ts) = match fields.as_slice() {
        [r, c, v] => (r, c, v, None),
        [r, c, v, t] => (r, c, v, Some(t)),
        _ => return Err(format!("expected row,column,value[,ts], found {} field(s)", fields.len()).into()),
    };
    let ts = ts
        .map(|t| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("timestamp {t:?} is not a number"))
        })
        .transpose()?;
    Ok(Record {
        row: unescape(row)?,
        column: unescape(column)?,
        value: unescape(value)?,
        ts,
    })
}

fn json_text(v: &Value) -> Result<Vec<u8>, Error> {
    match v {
        Value::String(s) => unescape(s),
        other => Ok(other.to_string().into_bytes()),
    }
}

fn json_records(line: &str) -> Result<Vec<Record>, Error> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err("expected a JSON object".into());
    };
    let row = object.get("row").ok_or("missing \"row\" field")?;
    let row = json_text(row)?;
    let ts = match object.get("ts") {
        None => None,
        Some(t) => Some(t.as_u64().ok_or("\"ts\" must be a non-negative integer")?),
    };
    if let (Some(column), Some(value)) = (object.get("column"), object.get("value")) {
        return Ok(vec![Record {
            row,
            column: json_text(column)?,
            value: json_text(value)?,
            ts,
        }]);
    }
    let mut records = Vec::new();
    for (name, value) in &object {
        if name == "row" || name == "ts" {
            continue;
        }
        records.push(Record {
            row: row.clone(),
            column: unescape(name)?,
            value: json_text(value)?,
            ts,
        });
    }
    Ok(records)
}
