//! `cellar repair`: rebuild a damaged store from the files it still has.
//!
//! A store whose manifest or log is damaged does not open: the open names the
//! damaged file and offset and changes nothing. `repair` (LevelDB's
//! `RepairDB`) reads every table file back whole, replays every log record
//! that still decodes, and writes a new manifest; what it cannot use goes to
//! the store's `lost/` folder, never deleted. It prints what came back and
//! what did not.

use std::io::Write;
use std::path::Path;

use cellar::{RepairReport, Store};

use super::Error;

/// Repairs the store in `dir` and prints the report to `out`.
pub fn run(dir: &Path, out: &mut dyn Write) -> Result<(), Error> {
    crate::store_cmds::check_not_a_file(dir)?;
    let report = Store::repair(dir)?;
    write!(out, "{}", render(dir, &report))?;
    Ok(())
}

/// The report as the command prints it, file names relative to the store.
pub fn render(dir: &Path, report: &RepairReport) -> String {
    let name = |path: &Path| path.strip_prefix(dir).unwrap_or(path).display().to_string();
    let mut text = format!("repaired {}\n", dir.display());
    match (&report.old_manifest, &report.manifest_damage) {
        (Some(path), None) => text += &format!("manifest: {} read to its end\n", name(path)),
        (Some(path), Some(damage)) => text += &format!("manifest: {} read up to its damage: {damage}\n", name(path)),
        (None, Some(damage)) => text += &format!("manifest: none read ({damage})\n"),
        (None, None) => text += "manifest: none\n",
    }
    text += "recovered:\n";
    for f in &report.families {
        let origin = if f.from_manifest {
            ""
        } else {
            " (found by its folder; default options)"
        };
        text += &format!(
            "  family {}{origin}: {} table file(s), {} entries; {} entries from the log\n",
            f.name, f.tables, f.table_entries, f.log_entries
        );
        if f.tables_to_level_0 > 0 {
            // A table it did not list fit no one level by its sequence numbers.
            text += &format!(
                "    {} table file(s) moved to level 0, to be merged with the tables found\n",
                f.tables_to_level_0
            );
        }
    }
    text += &format!(
        "  log: {} record(s) replayed from {} segment(s)\n",
        report.log_records, report.log_segments
    );
    // The old manifest is set aside whether it was damaged or not; it is
    // only "not recovered" when the report says it was damaged.
    let old_manifest_kept =
        |from: &Path| report.old_manifest.as_deref() == Some(from) && report.manifest_damage.is_none();
    let unusable: Vec<_> = report.lost.iter().filter(|l| !old_manifest_kept(&l.from)).collect();
    if !report.skipped_log.is_empty() || report.orphan_log_records > 0 || !unusable.is_empty() {
        text += "not recovered:\n";
    }
    for s in &report.skipped_log {
        text += &format!(
            "  {}: {} byte(s) at offset {} skipped: {}\n",
            name(&s.file),
            s.bytes,
            s.offset,
            s.why
        );
    }
    if report.orphan_log_records > 0 {
        text += &format!(
            "  {} log record write(s) name a family id no readable manifest names\n",
            report.orphan_log_records
        );
    }
    for l in unusable {
        text += &format!("  {} kept aside as {}: {}\n", name(&l.from), name(&l.to), l.why);
    }
    text += &format!("new manifest: {}\n", name(&report.new_manifest));
    for l in report.lost.iter().filter(|l| old_manifest_kept(&l.from)) {
        text += &format!("old manifest kept as {}\n", name(&l.to));
    }
    text
}
