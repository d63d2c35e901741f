//! # cellar-engine
//!
//! A miniature LSM wide-column storage engine. A *store* is a folder of column
//! families; a *cell* is `(row, column, timestamp) -> value`. Writes go to one
//! shared write-ahead log and to their family's memtable; full memtables are
//! flushed to immutable, sorted table files; compaction merges table files and
//! drops what no reader can see. Every read can report exactly what it cost
//! ([`Trace`]), and the store reports what it wrote and what it keeps ([`Stats`]).
//!
//! Reading order for a newcomer: [`key`] (how a cell becomes a byte-ordered
//! key), [`memtable`] (on a [`skiplist`] whose nodes live in an [`arena`]),
//! [`log`], [`store`] (the API, then its modules `write`,
//! `install`, `flush`, `compact` and `background`), [`read`] (the read path:
//! [`source`], [`merge`], [`visibility`]), [`compaction`] (what to merge and
//! what to drop), [`manifest`], [`files`], [`recovery`], [`inspect`] (the log
//! and manifest decoded for the dumps). Most of these modules
//! are private: `cargo doc` renders them all the same, because the
//! repository's `.cargo/config.toml` documents private items (the code is the
//! textbook).
//!
//! ```
//! use cellar_engine::{Store, StoreOptions};
//! # fn main() -> Result<(), cellar_engine::Error> {
//! # let dir = tempfile::tempdir().map_err(|e| cellar_engine::Error::InvalidArgument(e.to_string()))?;
//! let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
//! store.put("books", "book:1", "title", "Dune")?;
//! store.flush()?;
//! let (cell, trace) = store.get_traced("books", "book:1", "title")?;
//! assert_eq!(cell.map(|c| c.value), Some("Dune".into()));
//! assert_eq!(trace.data_blocks(), 1);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
// Indexing panics on a bad offset; the engine decodes keys, log records and
// manifest edits from disk and must not. Tests may: there a panic is just a
// failed test.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]
// The reading order above links private modules on purpose: the docs are
// built with private items (see `.cargo/config.toml`).
#![cfg_attr(
    doc,
    expect(
        rustdoc::private_intra_doc_links,
        reason = "the reading order links the private modules that `cargo doc` renders here"
    )
)]

mod arena;
mod batch;
mod clock;
mod compaction;
mod error;
mod files;
pub mod inspect;
pub mod key;
mod log;
mod manifest;
mod memtable;
mod merge;
mod options;
mod output;
mod prefetch;
mod read;
mod read_only;
mod recovery;
mod row_filter;
mod skiplist;
mod source;
mod stats;
mod store;
mod trace;
mod version;
mod visibility;

pub use batch::WriteBatch;
pub use cellar_sstable::BlockCache;
pub use error::{Error, Result};
pub use options::{
    validate_family_name, Compaction, Compression, FamilyOptions, Settle, StoreOptions, SyncPolicy, LOG_BUFFER_BYTES,
    MAX_COLUMN_BYTES, MAX_ROW_BYTES, MAX_VALUE_BYTES,
};
pub use read::{Cell, CellRef, ColumnRange, Row, RowRange, Scan, Snapshot};
pub use read_only::ReadOnlyStore;
pub use recovery::{LostFile, RepairReport, RepairedFamily, SkippedLog};
pub use stats::{FamilyStats, Stats, TableInfo};
pub use store::{CompactionReport, Store};
pub use trace::{Settled, SourceKind, SourceTrace, Trace};
