//! `cellar dump-manifest [FILE]`: the store's manifest record by record, like
//! RocksDB's `ldb manifest_dump`.
//!
//! The manifest is how a store knows which files it is made of: each record
//! is an edit group (families added, table files added and removed by flushes
//! and compactions, the oldest log segment each family still needs), and
//! replaying them in order gives the state a store opens with, printed last.
//! Without FILE, the manifest the store's `CURRENT` names. Damage other than
//! a torn tail makes the command fail, and so does a manifest without a
//! record, which a store does not open with. A table file is refused with
//! the command that reads it. Nothing is locked or written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use cellar::inspect::{self, ManifestEdit, TableRecord};

use crate::dump_log::damaged;
use crate::families::options_text;
use crate::format::internal_key;
use crate::Error;

/// Arguments of `dump-manifest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A manifest file (default: the one the store's CURRENT names).
    pub file: Option<PathBuf>,
}

/// Prints the manifest and the state it builds.
pub fn run(args: &Args, dir: &std::path::Path, out: &mut dyn Write) -> Result<(), Error> {
    let path = match &args.file {
        Some(file) => {
            crate::dump::open_file(file, "a manifest (<store>/MANIFEST-<number>)")?;
            crate::dump::not_a_table(file, "a manifest")?;
            file.clone()
        }
        None => {
            crate::store_cmds::check_not_a_file(dir)?;
            inspect::live_manifest(dir)?
        }
    };
    let dump = inspect::dump_manifest(&path)?;
    // Names by id from every record, so a family dropped since keeps its name.
    let names: BTreeMap<u32, String> = dump
        .records
        .iter()
        .flat_map(|r| &r.edits)
        .filter_map(|e| match e {
            ManifestEdit::AddFamily { id, name, .. } => Some((*id, name.clone())),
            _ => None,
        })
        .collect();
    let name = |id: u32| names.get(&id).cloned().unwrap_or_else(|| format!("family {id}"));
    writeln!(
        out,
        "{}: {} bytes, {} record(s)",
        path.display(),
        dump.file_bytes,
        dump.records.len()
    )?;
    let mut damage = dump.damage.iter().peekable();
    for record in &dump.records {
        while let Some(d) = damage.next_if(|d| d.offset < record.offset) {
            writeln!(out, "{}", damaged(d))?;
        }
        writeln!(out, "record at {}: {} edit(s)", record.offset, record.edits.len())?;
        for edit in &record.edits {
            let text = match edit {
                ManifestEdit::AddFamily { id, name, options } => format!(
                    "add family {id} {name:?}: {}",
                    options
                        .as_ref()
                        .map_or_else(|| "options that do not decode".to_string(), options_text)
                ),
                ManifestEdit::SetFamilyOptions { id, options } => format!(
                    "set the options of {}: {}",
                    name(*id),
                    options
                        .as_ref()
                        .map_or_else(|| "options that do not decode".to_string(), options_text)
                ),
                ManifestEdit::AddTable { family, table } => format!("add to {}: {}", name(*family), table_text(table)),
                ManifestEdit::RemoveTable { family, file_id } => {
                    format!("remove from {}: table {file_id:06}.sst", name(*family))
                }
                ManifestEdit::SetLogNumber { family, log_number } => {
                    format!("{} needs the log from segment {log_number:06}.log", name(*family))
                }
                ManifestEdit::LastSequence(n) => format!("last sequence {n}"),
                ManifestEdit::NextFileNumber(n) => format!("next file number {n}"),
                ManifestEdit::RemoveFamily { id } => format!("drop family {id} {:?}", name(*id)),
                other => format!("{other:?}"),
            };
            writeln!(out, "  {text}")?;
        }
        if let Some(problem) = &record.problem {
            writeln!(out, "  DOES NOT FIT: {problem}")?;
        }
    }
    for d in damage {
        writeln!(out, "{}", damaged(d))?;
    }
    writeln!(
        out,
        "state: last sequence {}, next file number {}",
        dump.last_sequence, dump.next_file_number
    )?;
    for f in &dump.families {
        let bytes: u64 = f.tables.iter().map(|t| t.size).sum();
        let files: Vec<String> = f.tables.iter().map(|t| format!("{:06}.sst", t.file_id)).collect();
        writeln!(
            out,
            "  {} (id {}): {} table file(s), {bytes} bytes [{}]; log from {:06}.log",
            f.name,
            f.id,
            f.tables.len(),
            files.join(" "),
            f.log_number
        )?;
    }
    // Opening refuses such a manifest (a torn tail alone leaves none): its
    // first record is the snapshot `create` and `rewrite` fsync before
    // `CURRENT` names the file.
    if dump.records.is_empty() {
        return Err(format!(
            "{}: the manifest holds no records: it starts with a snapshot of the store, so a store does not \
             open without one",
            path.display()
        )
        .into());
    }
    let bad =
        dump.damage.iter().filter(|d| !d.torn).count() + dump.records.iter().filter(|r| r.problem.is_some()).count();
    if bad > 0 {
        return Err(format!("{}: {bad} damaged record(s) or range(s)", path.display()).into());
    }
    Ok(())
}

/// One table file as the manifest records it.
fn table_text(t: &TableRecord) -> String {
    // The level is named only where a leveled family has one below 0.
    let level = match t.level {
        0 => String::new(),
        n => format!(", level {n}"),
    };
    format!(
        "table {:06}.sst, run {}{level}, {} bytes, {} entries ({} tombstones), keys {} .. {}, sequences {}..{}",
        t.file_id,
        t.run,
        t.size,
        t.entries,
        t.tombstones,
        internal_key(&t.first_key),
        internal_key(&t.last_key),
        t.sequences.0,
        t.sequences.1
    )
}
