//! `cellar export FAMILY`: a family's cells as a file `load` reads back
//! exactly, as HBase's `Export` tool writes a table for `Import`.
//!
//! The export reads one snapshot and writes, in row and column order, every
//! version the family keeps of every live column (newest first), with its
//! timestamp, in JSON lines or CSV ([`crate::exchange`]). Loading the file
//! into an empty family with the same max versions gives a family that reads
//! the same, byte for byte and timestamp for timestamp.
//!
//! Deletions: JSON lines carry them, CSV cannot. A JSON-lines export writes
//! the newest deletion of each row and each column that the store still holds
//! (a compaction drops a deletion once nothing older is left for it to hide;
//! see [`cellar::inspect::deletions`]), each before the cells it belongs
//! with, so that `load` writes it first and the newer cells after it stay
//! visible. Loaded into a family that already holds older cells, they hide
//! those too, as in the store exported. A CSV export leaves them out and says
//! how many on stderr. Left out in both: versions a deletion or a newer
//! version hides, and expired ones: no reader sees them.

use std::io::Write;
use std::iter::Peekable;

use cellar::inspect::{self, Deletion};
use cellar::key::Kind;
use cellar::RowRange;

use crate::exchange::{self, Entry, Format};
use crate::opened::Opened;
use crate::reads::RowArgs;
use crate::store_cmds::known_family;
use crate::Error;

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Column family.
    pub family: String,
    /// File format (deletions are in JSON lines only).
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Writes the family's cells (and, in JSON lines, its deletions) to `out`,
/// one line each.
pub fn run(store: &Opened, a: &Args, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = store.snapshot();
    let one_version = store.family_options(&a.family)?.max_versions == 1;
    let range = a.rows.range()?;
    let deletions: Vec<Deletion> = inspect::deletions(&snap, &a.family)?
        .into_iter()
        .filter(|d| in_range(&d.row, &range))
        .collect();
    let left_out = if a.format == Format::Csv { deletions.len() } else { 0 };
    let mut deletions = deletions.into_iter().filter(|_| a.format == Format::Jsonl).peekable();
    if a.format == Format::Csv {
        writeln!(out, "{}", exchange::CSV_HEADER)?;
    }
    let mut line = |entry: &Entry| -> Result<(), Error> {
        let text = match a.format {
            Format::Jsonl => exchange::json_line(entry),
            Format::Csv => exchange::csv_line(entry).unwrap_or_default(),
        };
        writeln!(out, "{text}")?;
        Ok(())
    };
    for row in snap.scan(&a.family, &range)? {
        let row = row?;
        // Rows before this one that hold deletions only, then this row's own.
        write_deletions(&mut deletions, |d| d.row < row.key, &mut line)?;
        write_deletions(&mut deletions, |d| d.row == row.key && d.column.is_none(), &mut line)?;
        for newest in row.cells {
            write_deletions(
                &mut deletions,
                |d| d.row == row.key && d.column.as_ref().is_some_and(|c| *c <= newest.column),
                &mut line,
            )?;
            // The scan gives the newest version; older ones the family keeps
            // take a read of the cell's versions.
            let versions = if one_version {
                vec![newest]
            } else {
                snap.versions(&a.family, &row.key, &newest.column)?
            };
            for cell in &versions {
                line(&Entry::put(&row.key, cell))?;
            }
        }
        write_deletions(&mut deletions, |d| d.row == row.key, &mut line)?;
    }
    write_deletions(&mut deletions, |_| true, &mut line)?;
    if left_out > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "cellar: {left_out} deletion(s) left out: CSV carries cells only (--format jsonl keeps them)"
        );
    }
    Ok(())
}

/// Writes the deletions at the front of `pending` while `before` holds.
fn write_deletions(
    pending: &mut Peekable<impl Iterator<Item = Deletion>>,
    before: impl Fn(&Deletion) -> bool,
    line: &mut impl FnMut(&Entry) -> Result<(), Error>,
) -> Result<(), Error> {
    while let Some(d) = pending.next_if(|d| before(d)) {
        line(&Entry {
            kind: if d.column.is_some() {
                Kind::DeleteCell
            } else {
                Kind::DeleteRow
            },
            row: d.row.to_vec(),
            column: d.column.map(|c| c.to_vec()).unwrap_or_default(),
            timestamp: Some(d.timestamp),
            value: Vec::new(),
        })?;
    }
    Ok(())
}

/// Whether a row is in the range `export` was given.
fn in_range(row: &[u8], range: &RowRange) -> bool {
    range.from.as_ref().is_none_or(|from| row >= &from[..])
        && range.to.as_ref().is_none_or(|to| row < &to[..])
        && range.prefix.as_ref().is_none_or(|p| row.starts_with(p))
}
