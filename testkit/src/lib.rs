//! # cellar-testkit: what the tests need and the library does not
//!
//! A dev-dependency only: nothing here is compiled into a program that
//! embeds cellar.
//!
//! - [`fault`]: a power loss, simulated. A [`cellar_fs::FileSystem`] that
//!   records, for every file under a watched folder, what the disk would keep
//!   if power failed now, as LevelDB's fault-injection test does.
//! - [`dirs`]: scratch folders and copies of a store for damage tests.
//! - [`rng`]: a seeded generator, so a test's random cases replay.
//! - [`readme`]: whether README.md still quotes what a test prints.

#![deny(missing_docs)]

pub mod dirs;
pub mod fault;
pub mod readme;
pub mod rng;
