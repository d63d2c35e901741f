//! # cellar-bench
//!
//! Measurements of a real cellar store. The wide-column lesson ("Wide-Column
//! Stores", a text outside this repository) measures three ideas with a toy model
//! held in memory: what column families change in the pages a query touches,
//! what a wide row buys, and what the append-only write path costs. [`lesson`]
//! builds the same data with the same formulas into a store on disk, runs the
//! same reads, and reports every figure from the engine's own counters
//! ([`cellar_engine::Trace`] for a read, [`cellar_engine::Stats`] and
//! [`cellar_engine::Store::tables`] for the store), beside the figure the lesson
//! printed.
//!
//! ```no_run
//! # fn main() -> Result<(), cellar_bench::Error> {
//! let dir = std::path::Path::new("/tmp/append-only");
//! let report = cellar_bench::lesson::append_only(dir)?;
//! assert_eq!(report.loaded.stored_entries, 160_000);
//! println!("{}", report.render());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod codecs;
pub mod crash;
mod error;
pub mod lesson;
#[cfg(feature = "peers")]
pub mod peers;
pub mod progress;

pub use error::{Error, Result};
