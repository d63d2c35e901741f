//! `stats` and `files`: what the store holds and what it has written.
//!
//! `stats` prints one column per family (memtable, files, entries live and
//! stored, space amplification) and the write counters, which count since
//! this process opened the store: in a one-shot `cellar put` they count one
//! write, in `cellar shell` the whole session. Write amplification is bytes
//! written to disk over bytes the user wrote; with no user bytes it is not a
//! number, and is printed as `-` (JSON `null`), never as a made-up 1.00. Per
//! family it counts the table files the family wrote (flushes, compactions);
//! the log is shared by every family, so it only enters the store's figure.
//!
//! `files` lists every table file with its key range, keys shown as
//! `row/column@timestamp` (see [`format::internal_key`]).

use std::io::Write;
use std::path::Path;

use cellar::FamilyStats;
use serde_json::{json, Value};

use crate::format;
use crate::opened::Opened;
use crate::store_cmds::Context;
use crate::Error;

/// Write amplification, or `None` when nothing was written.
fn amplification(written: u64, user: u64) -> Option<f64> {
    (user > 0).then(|| written as f64 / user as f64)
}

fn family_written(f: &FamilyStats) -> u64 {
    f.flush_bytes_written + f.compaction_bytes_written
}

fn or_dash(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), format::ratio)
}

/// `stats`: one column per family, one line per measure, then the store's
/// write amplification.
pub fn stats(ctx: &Context, store: &Opened, out: &mut dyn Write) -> Result<(), Error> {
    let stats = store.stats()?;
    let store_amp = amplification(stats.disk_bytes_written(), stats.user_bytes_written());
    if ctx.json {
        let families: Vec<Value> = stats
            .families
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "memtable_entries": f.memtable_entries,
                    "memtable_bytes": f.memtable_bytes,
                    "frozen_memtables": f.frozen_memtables,
                    "table_files": f.table_files,
                    "runs": f.runs,
                    "table_bytes": f.table_bytes,
                    "file_sizes": f.file_sizes,
                    "stored_entries": f.stored_entries,
                    "live_entries": f.live_entries,
                    "tombstones": f.tombstones,
                    "stored_bytes": f.stored_bytes,
                    "live_bytes": f.live_bytes,
                    "space_amplification": f.space_amplification(),
                    "space_amplification_bytes": f.space_amplification_bytes(),
                    "user_entries_written": f.user_entries_written,
                    "user_bytes_written": f.user_bytes_written,
                    "flushes": f.flushes,
                    "flush_bytes_written": f.flush_bytes_written,
                    "compactions": f.compactions,
                    "compaction_bytes_read": f.compaction_bytes_read,
                    "compaction_bytes_written": f.compaction_bytes_written,
                    "settles": f.settles,
                    "settle_bytes_written": f.settle_bytes_written,
                    "write_amplification": amplification(family_written(f), f.user_bytes_written),
                })
            })
            .collect();
        let doc = json!({
            "families": families,
            "log_bytes_written": stats.log_bytes_written,
            "user_bytes_written": stats.user_bytes_written(),
            "disk_bytes_written": stats.disk_bytes_written(),
            "write_amplification": store_amp,
        });
        writeln!(out, "{doc}")?;
        return Ok(());
    }
    type Measure = (&'static str, fn(&FamilyStats) -> String);
    let measures: [Measure; 13] = [
        ("memtable entries", |f| f.memtable_entries.to_string()),
        ("memtable bytes", |f| f.memtable_bytes.to_string()),
        ("table files", |f| f.table_files.to_string()),
        ("runs", |f| f.runs.to_string()),
        ("table bytes", |f| f.table_bytes.to_string()),
        ("entries stored", |f| f.stored_entries.to_string()),
        ("entries live", |f| f.live_entries.to_string()),
        ("tombstones", |f| f.tombstones.to_string()),
        ("space amplification", |f| format::ratio(f.space_amplification())),
        ("bytes written by user*", |f| f.user_bytes_written.to_string()),
        ("bytes flushed*", |f| f.flush_bytes_written.to_string()),
        ("bytes compacted*", |f| f.compaction_bytes_written.to_string()),
        ("write amplification*", |f| {
            or_dash(amplification(family_written(f), f.user_bytes_written))
        }),
    ];
    let mut headers = vec![""];
    headers.extend(stats.families.iter().map(|f| f.name.as_str()));
    let rows: Vec<Vec<String>> = measures
        .iter()
        .map(|(name, value)| {
            let mut row = vec![(*name).to_string()];
            row.extend(stats.families.iter().map(value));
            row
        })
        .collect();
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(
        out,
        "log bytes written*: {}; store write amplification* (log + flushed + compacted) / user: {}",
        stats.log_bytes_written,
        or_dash(store_amp)
    )?;
    writeln!(
        out,
        "* since this process opened the store; - where nothing was written"
    )?;
    Ok(())
}

/// `files`: every table file, oldest run first, keys shown as `row/column@ts`.
pub fn files(ctx: &Context, store: &Opened, out: &mut dyn Write) -> Result<(), Error> {
    let tables = store.tables();
    if ctx.json {
        let list: Vec<Value> = tables
            .iter()
            .map(|t| {
                json!({
                    "family": t.family,
                    "file_id": t.file_id,
                    "run": t.run,
                    "path": t.path.display().to_string(),
                    "size": t.size,
                    "entries": t.entries,
                    "tombstones": t.tombstones,
                    "data_blocks": t.data_blocks,
                    "data_bytes": t.data_bytes,
                    "compression": t.compression.to_string(),
                    "compressed_blocks": t.compressed_blocks,
                    "uncompressed_data_bytes": t.uncompressed_data_bytes,
                    "first_key": format::internal_key(&t.first_key),
                    "last_key": format::internal_key(&t.last_key),
                })
            })
            .collect();
        writeln!(out, "{}", Value::Array(list))?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tables
        .iter()
        .map(|t| {
            vec![
                t.family.clone(),
                file_name(&t.path),
                t.run.to_string(),
                t.size.to_string(),
                t.entries.to_string(),
                t.tombstones.to_string(),
                t.data_blocks.to_string(),
                t.compression.to_string(),
                format::internal_key(&t.first_key),
                format::internal_key(&t.last_key),
            ]
        })
        .collect();
    let headers = [
        "family",
        "file",
        "run",
        "bytes",
        "entries",
        "tombstones",
        "blocks",
        "compression",
        "first key",
        "last key",
    ];
    write!(out, "{}", format::table(&headers, &rows))?;
    writeln!(out, "{} file(s)", tables.len())?;
    Ok(())
}

/// The last part of a path.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
