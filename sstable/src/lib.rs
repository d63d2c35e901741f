//! # cellar-sstable: immutable sorted table files
//!
//! An LSM tree keeps recent writes in memory and, when that fills, writes
//! them out as a *sorted string table*: a file of key/value entries in key
//! order that is never modified again. This crate writes and reads those
//! files. It stores sorted byte keys and knows nothing of rows, columns or
//! timestamps; keys are compared as plain bytes.
//!
//! A table file is a run of checksummed blocks and a footer (byte diagrams in
//! `FORMAT.md`):
//!
//! ```text
//! | data block | data block | ... | filter | properties | index | footer |
//! ```
//!
//! - [`TableBuilder`] streams sorted entries into ~4 KiB data blocks
//!   ([`block`](BlockBuilder) format: prefix-compressed keys with restart
//!   points, and optionally a *key trailer*: fixed numbers at the end of every
//!   key stored as XORs against the previous key's), then writes a Bloom
//!   filter, the [`TableProperties`], an index (a short separator after each
//!   block -> [`BlockHandle`]) and a [`Footer`].
//! - [`Table`] maps a file, keeps its index and filter in memory, and hands
//!   out a [`TableIter`] that seeks with one index search and one data block.
//! - A table may store its data blocks compressed, each on its own
//!   ([`Compression`]: LZ4 or Zstandard, kept only when it saves 1/8); a
//!   [`BlockCache`] shared by a store's tables keeps decompressed blocks.
//! - Every data block read goes through one function, which records it in a
//!   per-operation [`ReadCost`]: blocks, bytes and distinct pages touched,
//!   bytes decompressed, block cache hits and misses.
//! - Damage is reported as [`Error::Corruption`] with the file and offset;
//!   nothing panics on bad bytes.
//! - Every file-system call that matters for durability (create, fsync,
//!   rename, remove) goes through `cellar-fs`, the file layer the engine
//!   uses too.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cellar_sstable::{Table, TableBuilder, TableOptions};
//!
//! # fn main() -> cellar_sstable::Result<()> {
//! let path = std::path::Path::new("000001.sst");
//! let mut builder = TableBuilder::create(path, TableOptions::default())?;
//! builder.add(b"apple", b"red", b"apple", false)?;
//! builder.add(b"banana", b"yellow", b"banana", false)?;
//! builder.finish()?;
//!
//! let table = Arc::new(Table::open(path)?);
//! let mut iter = table.iter();
//! iter.seek(b"b")?;
//! assert_eq!(iter.key(), b"banana");
//! assert_eq!(iter.cost().data_blocks, 1);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
// Indexing panics on a bad offset; library code reads offsets from disk and
// must not. Tests may: there a panic is just a failed test.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod block;
mod bloom;
mod builder;
mod cache;
mod checksum;
pub mod coding;
mod compression;
mod cost;
mod error;
mod format;
mod prefetch;
mod properties;
mod table;

pub use block::{Block, BlockBuilder, BlockIter, KeyEncoding, MAX_TRAILER_WORDS};
pub use bloom::{expected_false_positive_rate, filter_hash, probes_for, BloomFilter, BloomFilterBuilder};
pub use builder::{TableBuilder, TableOptions, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use cache::BlockCache;
pub use compression::{decompress, Codec, Compression, Compressor, ZSTD_LEVELS};
pub use cost::{ReadCost, PAGE_SIZE};
pub use error::{Error, Result};
pub use format::{
    kind_byte, BlockHandle, BlockKind, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, TABLE_MAGIC,
    UNCOMPRESSED_FORMAT_VERSION,
};
pub use properties::TableProperties;
pub use table::{BlockInfo, Table, TableIter, VerifyReport};
