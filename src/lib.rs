//! # cellar
//!
//! A miniature LSM wide-column storage engine, small enough to read in an
//! afternoon and real enough to trust with data. This crate re-exports the
//! engine's public API; see [`Store`] to start.
#![deny(missing_docs)]

pub use cellar_engine::*;
