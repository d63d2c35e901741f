//! `cellar dump-log FILE`: one log segment record by record, like RocksDB's
//! `ldb dump_wal`.
//!
//! Every write goes to the log before its memtable: a record is one write
//! batch, its operations numbered from the batch's first sequence number.
//! The dump shows each record's offset and size and each operation decoded
//! (family, kind, row, column, timestamp, value), so a learner can watch what
//! a `put` or a `load` appends, and what opening the store replays. Family
//! names come from the manifest of the store the segment sits in (ids when
//! it cannot be read). Bytes that do not decode, and records that frame but
//! are not a write batch, are listed with the reason; damage other than a
//! torn tail (the end of an interrupted write, which opening drops) makes the
//! command fail. A table file is refused with the command that reads it.
//! Nothing is locked or written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use cellar::inspect::{self, DamagedRange};
use cellar::key::Kind;

use crate::format::{escape, timestamp};
use crate::Error;

/// Arguments of `dump-log`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The log segment (`<store>/<number>.log`).
    pub file: PathBuf,
}

/// Prints the segment; fails if part of it is damaged (a torn tail aside).
pub fn run(args: &Args, human: bool, out: &mut dyn Write) -> Result<(), Error> {
    crate::dump::open_file(&args.file, "a log segment (<store>/<number>.log)")?;
    crate::dump::not_a_table(&args.file, "a log segment")?;
    let dump = inspect::dump_log(&args.file)?;
    let names = family_names(&args.file);
    writeln!(
        out,
        "{}: {} bytes, {} record(s)",
        args.file.display(),
        dump.file_bytes,
        dump.records.len()
    )?;
    let mut damage = dump.damage.iter().peekable();
    for record in &dump.records {
        while let Some(d) = damage.next_if(|d| d.offset < record.offset) {
            writeln!(out, "{}", damaged(d))?;
        }
        let (first, writes) = match &record.batch {
            Ok(batch) => batch,
            Err(why) => {
                writeln!(
                    out,
                    "DAMAGED record at {} ({} bytes): not a write batch: {why}",
                    record.offset, record.payload_bytes
                )?;
                continue;
            }
        };
        writeln!(
            out,
            "record at {} ({} bytes): {} write(s) from sequence {first}",
            record.offset,
            record.payload_bytes,
            writes.len()
        )?;
        for (seq, w) in (*first..).zip(writes) {
            let family = names
                .get(&w.family_id)
                .cloned()
                .unwrap_or_else(|| format!("family {}", w.family_id));
            let (kind, column, value) = match w.kind {
                Kind::Put => ("put", escape(&w.column), format!(" value={}", escape(&w.value))),
                Kind::DeleteCell => ("delete", escape(&w.column), String::new()),
                Kind::DeleteRow => ("delete-row", "*".to_string(), String::new()),
            };
            writeln!(
                out,
                "  {family}: row={} column={column} timestamp={} seq={seq} {kind}{value}",
                escape(&w.row),
                timestamp(w.timestamp, human)
            )?;
        }
    }
    for d in damage {
        writeln!(out, "{}", damaged(d))?;
    }
    // A record that frames but is not a batch is damage too: opening the
    // store refuses it as corruption.
    let bad = dump.damage.iter().filter(|d| !d.torn).count() + dump.records.iter().filter(|r| r.batch.is_err()).count();
    if bad > 0 {
        return Err(format!("{}: {bad} damaged range(s)", args.file.display()).into());
    }
    Ok(())
}

/// A range that does not decode, and what it probably is.
pub fn damaged(d: &DamagedRange) -> String {
    if d.torn {
        format!(
            "torn tail at {} ({} bytes): {}: the end of an interrupted write, which opening drops",
            d.offset, d.bytes, d.why
        )
    } else {
        format!("DAMAGED at {} ({} bytes): {}", d.offset, d.bytes, d.why)
    }
}

/// Family names by id from the manifest of the store holding `file`.
fn family_names(file: &std::path::Path) -> BTreeMap<u32, String> {
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    inspect::live_manifest(&dir)
        .and_then(|path| inspect::dump_manifest(&path))
        .map(|dump| dump.families.into_iter().map(|f| (f.id, f.name)).collect())
        .unwrap_or_default()
}
