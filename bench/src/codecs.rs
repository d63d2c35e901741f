//! What block compression costs: the time to compress and to decompress one
//! data block, with each codec, on the blocks cellar really writes.
//!
//! The blocks are rebuilt from real tables, exactly as the table builder cuts
//! them (about 4 KiB, the same key encoding): the layout lesson's row layout
//! (ten fields of a record side by side) and its circulation family (three
//! small fields per row), and db_bench's entries (16-byte keys, 100-byte
//! values half compressible, as db_bench makes them by default). Each block
//! is compressed and decompressed through the table format's own
//! [`Compressor`] and [`decompress`], so the times are what a flush pays per
//! block and what a read that misses the block cache pays.
//!
//! ```text
//! cargo run --release -p cellar-bench --bin codecs
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cellar_sstable::{decompress, BlockBuilder, Codec, Compression, Compressor, KeyEncoding, Table};

use crate::error::{Error, Result};
use crate::lesson::{self, FAMILY_LAYOUT_STORE, ROW_LAYOUT, ROW_LAYOUT_STORE};

/// Blocks are cut at this size, the default block size.
const BLOCK_SIZE: usize = 4096;

/// Rounds of timing; the median is reported.
const ROUNDS: usize = 5;

/// The codecs compared.
pub const CODECS: [Compression; 2] = [Compression::Lz4, Compression::Zstd { level: 3 }];

/// One kind of block under one codec.
#[derive(Clone, Debug, PartialEq)]
pub struct CodecFigures {
    /// Where the blocks come from.
    pub blocks_of: String,
    /// The codec.
    pub compression: Compression,
    /// Blocks timed.
    pub blocks: usize,
    /// Blocks the 1/8 rule kept compressed.
    pub compressed: usize,
    /// Mean bytes of a block as built.
    pub raw_bytes: f64,
    /// Mean bytes of a block as stored (compressed, or raw if it did not pay).
    pub stored_bytes: f64,
    /// Median over the rounds of the mean time to compress one block, in microseconds.
    pub compress_us: f64,
    /// The same for decompressing one compressed block.
    pub decompress_us: f64,
}

impl CodecFigures {
    /// Raw bytes decompressed per second, in MB/s (10^6 bytes).
    pub fn decompress_mb_per_s(&self) -> f64 {
        if self.decompress_us > 0.0 {
            self.raw_bytes / self.decompress_us
        } else {
            0.0
        }
    }
}

/// Cuts sorted entries into blocks as the table builder does.
fn cut(entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>, encoding: KeyEncoding) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    let mut builder = BlockBuilder::with_encoding(16, encoding);
    for (key, value) in entries {
        builder.add(&key, &value);
        if builder.estimated_size() >= BLOCK_SIZE {
            blocks.push(builder.finish());
        }
    }
    if !builder.is_empty() {
        blocks.push(builder.finish());
    }
    blocks
}

/// The data blocks of the tables in `folder`, rebuilt raw.
fn blocks_of_tables(folder: &Path) -> Result<Vec<Vec<u8>>> {
    let mut blocks = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(folder)
        .map_err(|e| Error::io(folder, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    paths.sort();
    for path in paths {
        let table = Arc::new(Table::open(&path)?);
        let encoding = KeyEncoding {
            trailer_words: table.properties().key_trailer_words as usize,
            tail_copies: table.properties().tail_copies != 0,
        };
        let mut entries = Vec::new();
        let mut iter = table.iter();
        iter.seek_to_first()?;
        while iter.valid() {
            entries.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next()?;
        }
        blocks.extend(cut(entries, encoding));
    }
    Ok(blocks)
}

/// db_bench's entries: keys `i` big-endian padded with `'0'` to 16 bytes,
/// values of 50 random printable characters written twice.
pub fn db_bench_blocks(entries: u64) -> Vec<Vec<u8>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        // xorshift64*: a fixed sequence, enough for value bytes.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let pairs = (0..entries).map(|i| {
        let mut key = vec![b'0'; 16];
        key[..8].copy_from_slice(&i.to_be_bytes());
        let half: Vec<u8> = (0..50).map(|_| b' ' + (next() % 95) as u8).collect();
        (key, half.repeat(2))
    });
    cut(pairs, KeyEncoding::default())
}

/// The median of some numbers.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Times `compression` on `blocks`.
pub fn measure_blocks(blocks_of: &str, blocks: &[Vec<u8>], compression: Compression) -> Result<CodecFigures> {
    let n = blocks.len().max(1);
    let mut compressor = Compressor::new(compression).map_err(|e| Error::Codec(format!("{compression}: {e}")))?;
    let mut stored = Vec::with_capacity(blocks.len());
    let mut compress_times = Vec::new();
    for round in 0..ROUNDS {
        let inputs = blocks.to_vec();
        let start = Instant::now();
        let outputs: Vec<(Vec<u8>, Codec)> = inputs.into_iter().map(|raw| compressor.compress(raw)).collect();
        compress_times.push(start.elapsed().as_secs_f64() * 1e6 / n as f64);
        if round == 0 {
            stored = outputs;
        }
    }
    let compressed: Vec<&(Vec<u8>, Codec)> = stored.iter().filter(|(_, codec)| *codec != Codec::None).collect();
    let mut decompress_times = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for (bytes, codec) in &compressed {
            let raw = decompress(*codec, bytes).map_err(Error::Codec)?;
            std::hint::black_box(raw);
        }
        decompress_times.push(start.elapsed().as_secs_f64() * 1e6 / compressed.len().max(1) as f64);
    }
    // Every block must come back as it went in.
    for (raw, (bytes, codec)) in blocks.iter().zip(&stored) {
        let back = match codec {
            Codec::None => bytes.clone(),
            codec => decompress(*codec, bytes).map_err(Error::Codec)?,
        };
        if &back != raw {
            return Err(Error::Codec(format!(
                "{compression}: a {blocks_of} block did not round-trip"
            )));
        }
    }
    let total = |v: &mut dyn Iterator<Item = usize>| v.sum::<usize>() as f64 / n as f64;
    Ok(CodecFigures {
        blocks_of: blocks_of.to_string(),
        compression,
        blocks: blocks.len(),
        compressed: compressed.len(),
        raw_bytes: total(&mut blocks.iter().map(Vec::len)),
        stored_bytes: total(&mut stored.iter().map(|(b, _)| b.len())),
        compress_us: median(compress_times),
        decompress_us: median(decompress_times),
    })
}

/// Builds the layout lesson's stores in `dir` (which must be empty) and
/// times every codec on their blocks and on db_bench's.
pub fn measure(dir: &Path) -> Result<Vec<CodecFigures>> {
    lesson::layout(dir)?;
    let sources = [
        (
            "row layout (layout lesson)",
            blocks_of_tables(&dir.join(ROW_LAYOUT_STORE).join(ROW_LAYOUT))?,
        ),
        (
            "circulation (layout lesson)",
            blocks_of_tables(&dir.join(FAMILY_LAYOUT_STORE).join("circulation"))?,
        ),
        ("db_bench entries", db_bench_blocks(100_000)),
    ];
    let mut out = Vec::new();
    for (name, blocks) in &sources {
        for compression in CODECS {
            out.push(measure_blocks(name, blocks, compression)?);
        }
    }
    Ok(out)
}

/// The table of figures.
pub fn render(figures: &[CodecFigures]) -> String {
    let mut rows = vec![[
        "blocks of".to_string(),
        "codec".into(),
        "blocks".into(),
        "raw B".into(),
        "stored B".into(),
        "smaller".into(),
        "compress us".into(),
        "decompress us".into(),
        "decompress MB/s".into(),
    ]];
    for f in figures {
        rows.push([
            f.blocks_of.clone(),
            f.compression.to_string(),
            format!("{} ({} kept)", f.blocks, f.compressed),
            format!("{:.0}", f.raw_bytes),
            format!("{:.0}", f.stored_bytes),
            format!("{:.1}x", f.raw_bytes / f.stored_bytes.max(1.0)),
            format!("{:.1}", f.compress_us),
            format!("{:.1}", f.decompress_us),
            format!("{:.0}", f.decompress_mb_per_s()),
        ]);
    }
    let widths: Vec<usize> = (0..9)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "block compression: one ~4 KiB data block at a time, mean per block, median of {ROUNDS} rounds\n\
         (kept: blocks the 1/8 rule stores compressed; decompress times are per kept block)\n"
    );
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(&widths).enumerate() {
            if i < 2 {
                line.push_str(&format!("{cell:<w$}  "));
            } else {
                line.push_str(&format!("{cell:>w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_bench_blocks_halve_and_come_back_whole() -> Result<()> {
        let blocks = db_bench_blocks(2_000);
        assert!(blocks.len() > 50, "{} blocks", blocks.len());
        for compression in CODECS {
            let f = measure_blocks("db_bench entries", &blocks, compression)?;
            assert_eq!((f.blocks, f.compressed), (blocks.len(), blocks.len()));
            let ratio = f.raw_bytes / f.stored_bytes;
            assert!(ratio > 1.5 && ratio < 3.0, "{compression}: {ratio}");
            assert!(f.compress_us > 0.0 && f.decompress_us > 0.0);
        }
        Ok(())
    }
}
