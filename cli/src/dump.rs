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
//! `--from ROW --to ROW --limit N` narrow the dump to the blocks and entries
//! of a range of rows (sst_dump's `--from`, `--to`, `--read_num`); `--hex`
//! adds each entry's key and value as stored bytes (`--output_hex`), so a
//! learner can check the key layout of `engine/FORMAT-log-manifest.md` and
//! `cellar::key` byte by byte.
//!
//! The file is read directly with `cellar-sstable`: the store is not opened,
//! so a file can be dumped while another process holds the store.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use cellar::key;
use cellar_sstable::{BlockKind, Codec, Compression, Table};

use crate::format::{escape, internal_key, timestamp, unescape};
use crate::Error;

/// Arguments of `dump`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The table file (`<dir>/<family>/<number>.sst`).
    pub file: PathBuf,
    /// List the blocks only, not their entries.
    #[arg(long)]
    pub blocks_only: bool,
    /// Only entries of rows from this one (inclusive).
    #[arg(long, value_name = "ROW")]
    pub from: Option<String>,
    /// Only entries of rows before this one.
    #[arg(long, value_name = "ROW")]
    pub to: Option<String>,
    /// At most this many entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Also print each entry's stored key and value as hexadecimal bytes.
    #[arg(long)]
    pub hex: bool,
}

/// Whether a data block's keys `[first, last]` meet the range `[from, to)`.
fn overlaps(first: &[u8], last: &[u8], from: &[u8], to: Option<&[u8]>) -> bool {
    last >= from && to.is_none_or(|to| first < to)
}

/// Opens the file after checking it is one: a folder or a missing path gets
/// a sentence, not an operating system error number.
pub fn open_file(path: &std::path::Path, what: &str) -> Result<std::fs::Metadata, Error> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_dir() {
        return Err(format!("{} is a folder: give the path of {what}", path.display()).into());
    }
    Ok(meta)
}

/// Refuses a table file given to a command that decodes another kind of
/// file (`what`): read as log records, its bytes are damage, or, when its
/// first bytes frame a record longer than the file, a torn tail (the end of
/// an interrupted write) and a success that hides the mistake. A file that
/// opens as a table (its footer's magic number and handles check out) is one.
pub fn not_a_table(path: &std::path::Path, what: &str) -> Result<(), Error> {
    if Table::open(path).is_ok() {
        return Err(format!(
            "{} is a cellar table file, not {what}: `cellar dump {}` decodes it",
            path.display(),
            path.display()
        )
        .into());
    }
    Ok(())
}

/// Prints the dump; fails if any checksum does not match.
pub fn run(args: &Args, human: bool, out: &mut dyn Write) -> Result<(), Error> {
    open_file(&args.file, "a table file (<store>/<family>/<number>.sst)")?;
    let from_row = args.from.as_deref().map(unescape).transpose()?;
    let to_row = args.to.as_deref().map(unescape).transpose()?;
    crate::reads::check_bounds(from_row.as_deref(), to_row.as_deref())?;
    let from = from_row.map(|r| key::row_prefix(&r)).unwrap_or_default();
    let to = to_row.map(|r| key::row_prefix(&r));
    let ranged = args.from.is_some() || args.to.is_some() || args.limit.is_some();
    let mut left = args.limit.unwrap_or(usize::MAX);
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
        let in_range = block.kind == BlockKind::Data
            && block.checksum_ok
            && overlaps(&block.first_key, &block.last_key, &from, to.as_deref());
        if ranged && (left == 0 || (block.kind == BlockKind::Data && block.checksum_ok && !in_range)) {
            // Only the blocks that hold entries of the range, until the limit.
            if !block.checksum_ok {
                bad += 1;
            }
            continue;
        }
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
        // A compressed block: its size as stored, then what it decompresses to.
        let stored = match block.codec {
            Codec::None => String::new(),
            codec => format!(" ({codec}, {} decompressed)", block.uncompressed_size),
        };
        writeln!(
            out,
            "block {i} {}: offset {}, {} bytes{stored}, {} entries, checksum {verdict}{keys}",
            block.kind, block.handle.offset, block.handle.size, block.entries
        )?;
        if args.blocks_only || !in_range {
            continue;
        }
        // The block's entries: seek to its first key (or the range's start)
        // and read up to its last (or the range's end).
        let mut iter = table.iter();
        iter.seek(block.first_key.as_slice().max(from.as_slice()))?;
        while iter.valid() && left > 0 {
            let k = iter.key().to_vec();
            if to.as_deref().is_some_and(|to| k.as_slice() >= to) {
                break;
            }
            let value = iter.value();
            writeln!(out, "  {}", entry(&k, &value, human))?;
            if args.hex {
                writeln!(out, "    key {} value {}", hex(&k), hex(&value))?;
            }
            left -= 1;
            if k == block.last_key {
                break;
            }
            iter.next()?;
        }
        if left == 0 {
            writeln!(out, "  (--limit {} reached)", args.limit.unwrap_or(0))?;
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
    if p.compression != Compression::None {
        writeln!(
            out,
            "compression: {}, {} of {} data blocks stored compressed; data blocks {} bytes raw, {} as stored",
            p.compression, p.compressed_blocks, p.data_blocks, p.uncompressed_data_bytes, p.data_bytes
        )?;
    }
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

/// Bytes as hexadecimal digits, two per byte.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
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
