//! # cellar
//!
//! A miniature LSM wide-column storage engine, small enough to read in an
//! afternoon and real enough to trust with data. This crate is what a program
//! embeds: it re-exports the engine's public API (`cellar-engine`, which
//! stores its tables with `cellar-sstable`) and nothing else; the `cellar`
//! command, the lesson and the benchmarks are packages of their own. Start
//! with [`Store`].
//!
//! A store is a folder of column families; a cell is `(row, column,
//! timestamp) -> value`; every read can say what it cost:
//!
//! ```
//! use cellar::{ColumnRange, Store, StoreOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), StoreOptions::default().family("loans"))?;
//! store.put_at("loans", "book:3", "loan|2024-03-02|0", 1_709_337_600_000, "member:17")?;
//! store.put_at("loans", "book:3", "loan|2024-04-11|0", 1_712_793_600_000, "member:5")?;
//! store.flush()?;
//!
//! let march = store.slice("loans", "book:3", &ColumnRange::between("loan|2024-03", "loan|2024-04"))?;
//! assert_eq!(march.len(), 1);
//! assert_eq!(march[0].value, "member:17");
//!
//! let (cell, trace) = store.get_traced("loans", "book:3", "loan|2024-04-11|0")?;
//! assert_eq!(cell.map(|c| c.value), Some("member:5".into()));
//! assert_eq!(trace.data_blocks(), 1); // the memtable is empty; one block of one file
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub use cellar_engine::*;
