//! The files `load` reads and `export` writes: CSV and JSON lines, one entry
//! per line, so that what one writes the other reads back exactly.
//!
//! Every byte string is written as the screen shows it ([`escape`]: printable
//! ASCII as itself, any other byte as `\xNN`), so a file is plain text
//! whatever the bytes, and reading it back ([`unescape`]) gives the same bytes.
//!
//! * **CSV**: `row,column,value,timestamp` (the timestamp may be left off:
//!   the store's clock stamps the cell). A field with a comma or a quote is
//!   quoted (`"a,b"`, `""` for a quote inside). A first line naming the fields
//!   (`row,column,value[,timestamp]`, `ts` for short) is a header. CSV has no
//!   place for deletions: it carries puts only.
//! * **JSON lines**, one object per line:
//!   - a cell: `{"row": "r", "column": "c", "value": "v", "timestamp": 17}`
//!     (the shape `get --json` prints; `ts` is accepted for `timestamp`);
//!   - a deletion: `{"kind": "delete", "row": "r", "column": "c", "timestamp": 17}`
//!     (every version of the column up to the timestamp) or
//!     `{"kind": "delete-row", "row": "r", "timestamp": 17}` (the whole row);
//!   - a whole row at once: `{"row": "r", "columns": {"title": "Dune"}, "timestamp": 17}`.
//!
//!   A line may also be a JSON array of cells or of rows, which is what
//!   `get`, `slice` and `scan` print with `--json`. A field the format does not
//!   know is an error, never guessed at.
//!
//! The first non-blank character of the file decides: `{` or `[` is JSON,
//! anything else CSV. A UTF-8 byte-order mark at the start is skipped.

use cellar::key::Kind;
use cellar::{Cell, MAX_COLUMN_BYTES, MAX_ROW_BYTES, MAX_VALUE_BYTES};
use serde_json::{json, Map, Value};

use crate::clock::parse_timestamp;
use crate::format::{escape, unescape};
use crate::Error;

/// The fields of a CSV line, in order.
pub const CSV_HEADER: &str = "row,column,value,timestamp";

/// One entry of a file: a put or a deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Put, cell deletion or row deletion.
    pub kind: Kind,
    /// Row key.
    pub row: Vec<u8>,
    /// Column (empty for a row deletion).
    pub column: Vec<u8>,
    /// `None`: stamped by the store's clock when written.
    pub timestamp: Option<u64>,
    /// Value (empty for a deletion).
    pub value: Vec<u8>,
}

impl Entry {
    /// A put of one cell.
    pub fn put(row: &[u8], cell: &Cell) -> Entry {
        Entry {
            kind: Kind::Put,
            row: row.to_vec(),
            column: cell.column.to_vec(),
            timestamp: Some(cell.timestamp),
            value: cell.value.to_vec(),
        }
    }

    /// Refuses what the store would refuse, before anything is written: an
    /// empty row key (HBase refuses one too; it would print as a blank row)
    /// and rows, columns and values over the store's limits.
    pub fn check(&self) -> Result<(), Error> {
        if self.row.is_empty() {
            return Err("the row key is empty".into());
        }
        for (what, len, limit) in [
            ("row key", self.row.len(), MAX_ROW_BYTES),
            ("column name", self.column.len(), MAX_COLUMN_BYTES),
            ("value", self.value.len(), MAX_VALUE_BYTES),
        ] {
            if len > limit {
                return Err(format!("the {what} is {len} bytes, over the limit of {limit}").into());
            }
        }
        Ok(())
    }
}

/// Which format a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `row,column,value,timestamp` lines; puts only.
    Csv,
    /// One JSON object per line; puts and deletions.
    Jsonl,
}

impl Format {
    /// The format of a file whose first non-blank line is `line`.
    pub fn sniff(line: &str) -> Format {
        if line.starts_with('{') || line.starts_with('[') {
            Format::Jsonl
        } else {
            Format::Csv
        }
    }
}

/// Strips a UTF-8 byte-order mark (spreadsheets write one at the start of a
/// CSV file; it is not part of the first row key).
pub fn strip_bom(line: &str) -> &str {
    line.strip_prefix('\u{feff}').unwrap_or(line)
}

/// Whether a first CSV line is a header rather than data.
pub fn is_csv_header(line: &str) -> bool {
    matches!(
        line,
        "row,column,value" | "row,column,value,ts" | "row,column,value,timestamp"
    )
}

/// The entries of one non-blank line.
pub fn parse_line(format: Format, line: &str) -> Result<Vec<Entry>, Error> {
    match format {
        Format::Csv => Ok(vec![csv_entry(line)?]),
        Format::Jsonl => json_entries(line),
    }
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

fn csv_entry(line: &str) -> Result<Entry, Error> {
    let fields = csv_fields(line)?;
    let (row, column, value, timestamp) = match fields.as_slice() {
        [r, c, v] => (r, c, v, None),
        [r, c, v, t] => (r, c, v, Some(parse_timestamp(t)?)),
        _ => return Err(format!("expected row,column,value[,timestamp], found {} field(s)", fields.len()).into()),
    };
    Ok(Entry {
        kind: Kind::Put,
        row: unescape(row)?,
        column: unescape(column)?,
        timestamp,
        value: unescape(value)?,
    })
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One entry as a CSV line (without the newline); `None` for a deletion,
/// which CSV cannot carry.
pub fn csv_line(e: &Entry) -> Option<String> {
    if e.kind != Kind::Put {
        return None;
    }
    let mut line = [&e.row, &e.column, &e.value].map(|b| csv_field(&escape(b))).join(",");
    if let Some(ts) = e.timestamp {
        line.push_str(&format!(",{ts}"));
    }
    Some(line)
}

/// One entry as a JSON line (without the newline).
pub fn json_line(e: &Entry) -> String {
    let mut object = Map::new();
    object.insert("row".into(), json!(escape(&e.row)));
    match e.kind {
        Kind::Put => {
            object.insert("column".into(), json!(escape(&e.column)));
            object.insert("value".into(), json!(escape(&e.value)));
        }
        Kind::DeleteCell => {
            object.insert("kind".into(), json!("delete"));
            object.insert("column".into(), json!(escape(&e.column)));
        }
        Kind::DeleteRow => {
            object.insert("kind".into(), json!("delete-row"));
        }
    }
    if let Some(ts) = e.timestamp {
        object.insert("timestamp".into(), json!(ts));
    }
    Value::Object(object).to_string()
}

fn json_entries(line: &str) -> Result<Vec<Entry>, Error> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // The line ended inside a value: most likely a document printed over
        // several lines, which is JSON but not JSON lines.
        if e.is_eof() {
            "a JSON value that does not end on its line: load reads JSON lines, one cell, row or array of \
             them per line (`jq -c` writes them)"
                .to_string()
        } else {
            format!("not JSON: {e}")
        }
    })?;
    let mut entries = Vec::new();
    match value {
        Value::Object(object) => object_entries(&object, &mut entries)?,
        Value::Array(items) => {
            for item in items {
                let Value::Object(object) = item else {
                    return Err("expected an array of JSON objects (cells or rows)".into());
                };
                object_entries(&object, &mut entries)?;
            }
        }
        _ => return Err("expected a JSON object or an array of them".into()),
    }
    Ok(entries)
}

fn text(object: &Map<String, Value>, field: &str) -> Result<Option<Vec<u8>>, Error> {
    match object.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(unescape(s)?)),
        Some(other) => Err(format!("\"{field}\" must be a string, found {other}").into()),
    }
}

fn required(object: &Map<String, Value>, field: &str) -> Result<Vec<u8>, Error> {
    text(object, field)?.ok_or_else(|| format!("missing \"{field}\" field").into())
}

fn timestamp(object: &Map<String, Value>) -> Result<Option<u64>, Error> {
    let found = match (object.get("timestamp"), object.get("ts")) {
        (Some(_), Some(_)) => return Err("both \"timestamp\" and \"ts\": give one".into()),
        (Some(t), None) | (None, Some(t)) => t,
        (None, None) => return Ok(None),
    };
    match found {
        Value::Number(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("timestamp {n} is not a whole number of milliseconds from 0 up").into()),
        Value::String(s) => Ok(Some(parse_timestamp(s)?)),
        other => Err(format!("timestamp must be a number, found {other}").into()),
    }
}

/// Refuses fields the shape does not have, so a typo (`"vaule"`) is an error
/// rather than a cell written wrong.
fn only(object: &Map<String, Value>, allowed: &[&str], shape: &str) -> Result<(), Error> {
    let unknown: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|k| !allowed.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unknown field(s) {} in a {shape}: it has {}",
            unknown.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", "),
            allowed.join(", ")
        )
        .into())
    }
}

fn object_entries(object: &Map<String, Value>, out: &mut Vec<Entry>) -> Result<(), Error> {
    let row = required(object, "row")?;
    let kind = match object.get("kind") {
        None => "put",
        Some(Value::String(k)) => k.as_str(),
        Some(other) => return Err(format!("\"kind\" must be a string, found {other}").into()),
    };
    let entry = |kind, column: Vec<u8>, value: Vec<u8>, ts| Entry {
        kind,
        row: row.clone(),
        column,
        timestamp: ts,
        value,
    };
    match kind {
        "put" if object.contains_key("cells") => {
            // A row as `scan --json` prints it: {"row": ..., "cells": [cell, ...]}.
            only(object, &["row", "cells"], "row with cells")?;
            let Some(Value::Array(cells)) = object.get("cells") else {
                return Err("\"cells\" must be an array of cells".into());
            };
            for cell in cells {
                let Value::Object(cell) = cell else {
                    return Err("\"cells\" must be an array of cells".into());
                };
                if text(cell, "row")?.is_some_and(|r| r != row) {
                    return Err("a cell names another row than its row".into());
                }
                only(cell, &["row", "column", "value", "timestamp", "ts"], "cell")?;
                out.push(entry(
                    Kind::Put,
                    required(cell, "column")?,
                    required(cell, "value")?,
                    timestamp(cell)?,
                ));
            }
        }
        "put" if object.contains_key("columns") => {
            only(object, &["row", "columns", "timestamp", "ts"], "row with columns")?;
            let ts = timestamp(object)?;
            let Some(Value::Object(columns)) = object.get("columns") else {
                return Err("\"columns\" must be an object of column names and values".into());
            };
            for (name, value) in columns {
                let Value::String(value) = value else {
                    return Err(format!("the value of column {name:?} must be a string, found {value}").into());
                };
                out.push(entry(Kind::Put, unescape(name)?, unescape(value)?, ts));
            }
        }
        "put" => {
            only(object, &["kind", "row", "column", "value", "timestamp", "ts"], "cell")?;
            out.push(entry(
                Kind::Put,
                required(object, "column")?,
                required(object, "value")?,
                timestamp(object)?,
            ));
        }
        "delete" => {
            only(object, &["kind", "row", "column", "timestamp", "ts"], "cell deletion")?;
            out.push(entry(
                Kind::DeleteCell,
                required(object, "column")?,
                Vec::new(),
                timestamp(object)?,
            ));
        }
        "delete-row" => {
            only(object, &["kind", "row", "timestamp", "ts"], "row deletion")?;
            out.push(entry(Kind::DeleteRow, Vec::new(), Vec::new(), timestamp(object)?));
        }
        other => return Err(format!("unknown kind {other:?}: put, delete or delete-row").into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(row: &str, column: &str, value: &str, ts: Option<u64>) -> Entry {
        Entry {
            kind: Kind::Put,
            row: row.into(),
            column: column.into(),
            timestamp: ts,
            value: value.into(),
        }
    }

    #[test]
    fn every_byte_round_trips_through_both_formats() -> Result<(), Error> {
        let all: Vec<u8> = (0..=255).collect();
        let e = Entry {
            kind: Kind::Put,
            row: all.clone(),
            column: b"a,\"b\" ".to_vec(),
            timestamp: Some(u64::MAX),
            value: all,
        };
        let csv = csv_line(&e).ok_or("no CSV line")?;
        assert_eq!(parse_line(Format::Csv, &csv)?, std::slice::from_ref(&e));
        assert_eq!(parse_line(Format::Jsonl, &json_line(&e))?, [e]);
        Ok(())
    }

    #[test]
    fn deletions_round_trip_through_json_lines_only() -> Result<(), Error> {
        for kind in [Kind::DeleteCell, Kind::DeleteRow] {
            let e = Entry {
                kind,
                row: b"r".to_vec(),
                column: if kind == Kind::DeleteCell {
                    b"c".to_vec()
                } else {
                    Vec::new()
                },
                timestamp: Some(9),
                value: Vec::new(),
            };
            assert_eq!(csv_line(&e), None);
            assert_eq!(parse_line(Format::Jsonl, &json_line(&e))?, [e]);
        }
        Ok(())
    }

    #[test]
    fn the_json_that_get_and_scan_print_reads_back() -> Result<(), Error> {
        let cells = r#"[{"column":"c","row":"r","timestamp":4,"value":"v"}]"#;
        assert_eq!(parse_line(Format::Jsonl, cells)?, [put("r", "c", "v", Some(4))]);
        let rows = r#"[{"row":"r","cells":[{"column":"c","row":"r","timestamp":4,"value":"v"}]}]"#;
        assert_eq!(parse_line(Format::Jsonl, rows)?, [put("r", "c", "v", Some(4))]);
        Ok(())
    }

    #[test]
    fn a_cell_without_a_value_is_an_error_not_a_column() {
        let err = parse_line(Format::Jsonl, r#"{"row":"j4","column":"c"}"#).map_err(|e| e.to_string());
        assert_eq!(err, Err("missing \"value\" field".to_string()));
        let err = parse_line(Format::Jsonl, r#"{"row":"j4","title":"Dune"}"#).map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("unknown field(s) \"title\" in a cell: it has kind, row, column, value, timestamp, ts".to_string())
        );
    }

    #[test]
    fn a_row_of_columns_is_written_explicitly() -> Result<(), Error> {
        let line = r#"{"row":"r3","columns":{"title":"Dune","year":"1965"},"timestamp":3}"#;
        assert_eq!(
            parse_line(Format::Jsonl, line)?,
            [put("r3", "title", "Dune", Some(3)), put("r3", "year", "1965", Some(3))]
        );
        Ok(())
    }

    #[test]
    fn timestamps_may_be_dates_and_ts_is_timestamp() -> Result<(), Error> {
        assert_eq!(
            parse_line(Format::Csv, "r,c,v,2024-06-01")?,
            [put("r", "c", "v", Some(1_717_200_000_000))]
        );
        assert_eq!(
            parse_line(Format::Jsonl, r#"{"row":"r","column":"c","value":"v","ts":5}"#)?,
            [put("r", "c", "v", Some(5))]
        );
        assert!(parse_line(
            Format::Jsonl,
            r#"{"row":"r","column":"c","value":"v","ts":5,"timestamp":5}"#
        )
        .is_err());
        Ok(())
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_row() {
        assert_eq!(strip_bom("\u{feff}row,column,value"), "row,column,value");
    }

    #[test]
    fn empty_and_oversized_rows_are_refused() {
        assert!(put("", "c", "v", None).check().is_err());
        let long = "x".repeat(MAX_ROW_BYTES + 1);
        assert_eq!(
            put(&long, "c", "v", None).check().map_err(|e| e.to_string()),
            Err(format!(
                "the row key is {} bytes, over the limit of {MAX_ROW_BYTES}",
                MAX_ROW_BYTES + 1
            ))
        );
    }
}
