//! `cellar dump FILE`: one table file decoded block by block, like RocksDB's
//! `sst_dump`.
//!
//! A table file is a run of checksummed blocks (data blocks, then the bloom
//! filter, the properties and the index) and a footer that points at the last
//! three. The dump lists each block with its offset, size, entry count, key
//! range and checksum verdict, then the entries of each data block with their
//! internal keys decoded (`row/column@timestamp`, sequence number, kind), then
//! the table's properties. A block whose checksum fails is reported and its
//! entries skipped; the command then fails, so a script can rely on the exit code.
//!
//! The file is read directly with `cellar-sstable`: the store is not opened,
//! so a file can be dumped while another process holds the store.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use cellar::key;
use cellar_sstable::{BlockKind, Table};

use crate::format::{escape, internal_key, timestamp};
use crate::Error;

/// Arguments of `dump`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The table file (`<dir>/<family>/<number>.sst`).
    pub file: PathBuf,
    /// List the blocks only, not their entries.
    #[arg(long)]
    pub blocks_only: bool,
}

/// Prints the dump; fails if any checksum does not match.
pub fn run(args: &Args, human: bool, out: &mut dyn Write) -> Result<(), Error> {
    let table = Arc::new(Table::open(&args.file)?);
    let blocks = table.blocks()?;
    writeln!(
        out,
        "{}: {} bytes, {} blocks",
        args.file.display(),
        table.file_size(),
        blocks.len()
    )?;
    let mut bad = 0;
    for (i, block) in blocks.iter().enumerate() {
        let verdict = if block.checksum_ok { "ok" } else { "MISMATCH" };
        if !block.checksum_ok {
            bad += 1;
        }
        let keys = if block.kind == BlockKind::Data && block.checksum_ok {
            format!(
                "  {} .. {}",
                internal_key(&block.first_key),
                internal_key(&block.last_key)
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "block {i} {}: offset {}, {} bytes, {} entries, checksum {verdict}{keys}",
            block.kind, block.handle.offset, block.handle.size, block.entries
        )?;
        if args.blocks_only || block.kind != BlockKind::Data || !block.checksum_ok {
            continue;
        }
        // The block's entries: seek to its first key and read up to its last.
        let mut iter = table.iter();
        iter.seek(&block.first_key)?;
        while iter.valid() {
            let k = iter.key().to_vec();
            writeln!(out, "  {}", entry(&k, &iter.value(), human))?;
            if k == block.last_key {
                break;
            }
            iter.next()?;
        }
    }
    let p = table.properties();
    writeln!(
        out,
        "properties: {} entries, {} tombstones, {} data blocks ({} bytes), index {} bytes, filter {} bytes",
        p.entries, p.tombstones, p.data_blocks, p.data_bytes, p.index_bytes, p.filter_bytes
    )?;
    writeln!(
        out,
        "keys: {} bytes raw, {} bytes stored (prefix compression, key trailers); values: {} bytes",
        p.raw_key_bytes, p.stored_key_bytes, p.raw_value_bytes
    )?;
    if bad > 0 {
        return Err(format!("{}: {bad} block(s) fail their checksum", args.file.display()).into());
    }
    let report = table.verify()?;
    writeln!(
        out,
        "verified: {} blocks, {} entries, {} bytes",
        report.blocks, report.entries, report.bytes
    )?;
    Ok(())
}

/// One entry: the decoded key, its sequence number and kind, and the value.
fn entry(k: &[u8], value: &[u8], human: bool) -> String {
    match key::parse(k) {
        Some(p) => {
            let kind = match p.kind {
                key::Kind::Put => "put",
                key::Kind::DeleteCell => "delete",
                key::Kind::DeleteRow => "delete-row",
            };
            let column = if p.kind == key::Kind::DeleteRow {
                "*".to_string()
            } else {
                escape(&p.column)
            };
            format!(
                "row={} column={} timestamp={} seq={} {kind} value={}",
                escape(&p.row),
                column,
                timestamp(p.timestamp, human),
                p.sequence,
                escape(value)
            )
        }
        None => format!("key={} value={}", escape(k), escape(value)),
    }
}
