//! How the command line shows bytes, cells, timestamps and tables.
//!
//! Rows, columns and values are arbitrary bytes, but a terminal shows text.
//! Like the HBase shell (`Bytes.toStringBinary`), a byte that is a printable
//! ASCII character other than the backslash is shown as itself and every other
//! byte as `\xNN`. Arguments accept the same escapes, so what the shell prints
//! can be pasted back: `put t 'a\x00b' c v` writes a row with a zero byte in it.
//!
//! Also here: the HBase-style cell listing (`ROW  column=..., timestamp=...,
//! value=...`), aligned tables for `stats` and `files`, dates for `--human`,
//! and the JSON shape of a cell for `--json`.

use std::fmt::Write as _;

use cellar::key::{self, Kind};
use cellar::{Cell, Row};
use serde_json::{json, Value};

use crate::Error;

/// What the shell, the command line and `load` say of text that is not
/// UTF-8, after naming it ("line 3 ", "an argument "): bytes are written as
/// escapes everywhere.
pub const NOT_UTF8: &str = "is not UTF-8 text: write such bytes as \\xNN escapes";

/// Shows `bytes` as text, escaping every byte that is not printable ASCII
/// (and the backslash itself, so that the result parses back unchanged).
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (b' '..=b'~').contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}

/// Turns an argument into bytes, decoding `\xNN` escapes (two hex digits, any
/// case). A backslash followed by anything else is an error rather than a
/// guess, so a typo never writes bytes the user did not mean.
pub fn unescape(text: &str) -> Result<Vec<u8>, Error> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let digits = bytes.get(i + 1..i + 4);
        let decoded = match digits {
            Some([b'x', hi, lo]) => hex_digit(*hi).zip(hex_digit(*lo)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match decoded {
            Some(byte) => out.push(byte),
            None => {
                let shown: String = text.get(i..).unwrap_or_default().chars().take(4).collect();
                return Err(format!("bad escape '{shown}' in '{text}': write a byte as \\xNN (two hex digits)").into());
            }
        }
        i += 4;
    }
    Ok(out)
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// A timestamp (milliseconds since the Unix epoch) as a number, or with
/// `human` as a UTC date such as `2024-03-02T10:15:00.000Z`.
pub fn timestamp(ms: u64, human: bool) -> String {
    if human {
        crate::clock::utc_date(ms)
    } else {
        ms.to_string()
    }
}

/// One cell as the HBase shell prints it after the row or column:
/// `column=family:column, timestamp=T, value=V`.
pub fn cell_text(family: &str, cell: &Cell, human: bool) -> String {
    format!(
        "column={family}:{}, timestamp={}, value={}",
        escape(&cell.column),
        timestamp(cell.timestamp, human),
        escape(&cell.value)
    )
}

/// The cells of one row, HBase-shell style, ending with a count line.
pub fn render_cells(family: &str, row: &[u8], cells: &[Cell], human: bool) -> String {
    let lines: Vec<(String, String)> = cells
        .iter()
        .map(|c| (escape(row), cell_text(family, c, human)))
        .collect();
    let mut out = two_columns("ROW", "COLUMN+CELL", &lines);
    let _ = writeln!(out, "{} cell(s)", cells.len());
    out
}

/// Rows of a scan, HBase-shell style, ending with a count line.
pub fn render_rows(family: &str, rows: &[Row], human: bool) -> String {
    let lines: Vec<(String, String)> = rows
        .iter()
        .flat_map(|r| r.cells.iter().map(|c| (escape(&r.key), cell_text(family, c, human))))
        .collect();
    let mut out = two_columns("ROW", "COLUMN+CELL", &lines);
    let _ = writeln!(out, "{} row(s)", rows.len());
    out
}

/// The HBase shell layout: a header, then each line indented by one space,
/// the first column padded to the widest entry.
fn two_columns(left: &str, right: &str, lines: &[(String, String)]) -> String {
    let width = lines
        .iter()
        .map(|(l, _)| l.chars().count() + 1)
        .chain([left.len()])
        .max()
        .unwrap_or(0);
    let mut out = format!("{left:<width$}  {right}\n");
    for (l, r) in lines {
        let _ = writeln!(out, " {l:<w$}  {r}", w = width.saturating_sub(1));
    }
    out
}

/// A cell for `--json`: every byte string escaped as on the screen, so the
/// JSON stays valid text whatever the bytes are.
pub fn cell_json(row: &[u8], cell: &Cell) -> Value {
    json!({
        "row": escape(row),
        "column": escape(&cell.column),
        "timestamp": cell.timestamp,
        "value": escape(&cell.value),
    })
}

/// An internal key (see `cellar::key`) as `row/column@timestamp`, with the
/// kind of a tombstone spelled out. Keys that do not parse are shown escaped.
///
/// A `/` inside the row is written `\x2F`, so the first `/` always ends the
/// row: row `a/b` with column `c` is `a\x2Fb/c@1`, row `a` with column `b/c`
/// is `a/b/c@1`. (The timestamp follows the last `@`.)
pub fn internal_key(k: &[u8]) -> String {
    match key::parse(k) {
        Some(p) => {
            let what = match p.kind {
                Kind::Put => "",
                Kind::DeleteCell => " (delete)",
                Kind::DeleteRow => " (delete row)",
            };
            let column = if p.kind == Kind::DeleteRow {
                "*".to_string()
            } else {
                escape(&p.column)
            };
            let row = escape(&p.row).replace('/', "\\x2F");
            format!("{row}/{column}@{}{what}", p.timestamp)
        }
        None => escape(k),
    }
}

/// An aligned text table: text columns left-aligned, numeric ones right-aligned.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    let mut numeric = vec![true; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
            if let Some(n) = numeric.get_mut(i) {
                *n &= looks_numeric(cell);
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i > 0 {
                text.push_str("  ");
            }
            if numeric.get(i).copied().unwrap_or(false) {
                let _ = write!(text, "{cell:>w$}");
            } else {
                let _ = write!(text, "{cell:<w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

fn looks_numeric(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-')
}

/// A ratio with two decimals, as the lesson prints amplification.
pub fn ratio(x: f64) -> String {
    format!("{x:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_every_byte() -> Result<(), Error> {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape(&escape(&all))?, all);
        assert_eq!(escape(b"a\\b\x00"), "a\\x5Cb\\x00");
        Ok(())
    }

    #[test]
    fn a_lone_backslash_is_a_bad_escape() {
        assert!(unescape("a\\qb").is_err());
        assert!(unescape("a\\x4").is_err());
    }
}
