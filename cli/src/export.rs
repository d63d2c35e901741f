//! `cellar export FAMILY`: a family's cells as a file `load` reads back
//! exactly, as HBase's `Export` tool writes a table for `Import`.
//!
//! The export reads one snapshot and writes, in row and column order, every
//! version the family keeps of every live column (newest first), with its
//! timestamp, in CSV or JSON lines ([`crate::exchange`]). Loading the file
//! into an empty family with the same max versions gives a family that reads
//! the same, byte for byte and timestamp for timestamp.
//!
//! What it leaves out: deletions and the versions they hide, shadowed and
//! expired versions. None of them is visible, so the loaded family reads the
//! same; but loaded into a family that already holds older cells, a deletion
//! would have hidden them and the export has no record of it. Only the
//! visible data is exported, because the engine's public reads return visible
//! cells only (it has no raw scan).

use std::io::Write;

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
    /// File format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    #[command(flatten)]
    pub rows: RowArgs,
}

/// Writes the family's cells to `out`, one line each.
pub fn run(store: &Opened, a: &Args, out: &mut dyn Write) -> Result<(), Error> {
    known_family(store, &a.family)?;
    let snap = store.snapshot();
    let one_version = store.family_options(&a.family)?.max_versions == 1;
    if a.format == Format::Csv {
        writeln!(out, "{}", exchange::CSV_HEADER)?;
    }
    for row in snap.scan(&a.family, &a.rows.range()?)? {
        let row = row?;
        for newest in row.cells {
            // The scan gives the newest version; older ones the family keeps
            // take a read of the cell's versions.
            let versions = if one_version {
                vec![newest]
            } else {
                snap.versions(&a.family, &row.key, &newest.column)?
            };
            for cell in &versions {
                let entry = Entry::put(&row.key, cell);
                let line = match a.format {
                    Format::Jsonl => exchange::json_line(&entry),
                    Format::Csv => exchange::csv_line(&entry).unwrap_or_default(),
                };
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}
