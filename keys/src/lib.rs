//! # cellar-keys: the row-key designer
//!
//! In a wide-column store the row key decides two things at once: **where
//! each write goes**, and **which reads are cheap**. Get it wrong and one
//! server takes every write while the rest idle, or the read you run most
//! becomes a scan of the whole table. This crate lets a learner try a key on
//! a workload and see both: on a simulated cluster, and on a real cellar
//! store.
//!
//! Reading order:
//!
//! 1. [`encoding`]: how values become bytes, and why byte order matters.
//! 2. [`key`] and [`syntax`]: a key as a list of parts, built in Rust or
//!    parsed from text such as
//!    `salt(user,16) "#" pad(user,12) "#" revts(ms,19) "#" field(order_id)`;
//!    [`guides`] reads a design against the Bigtable and HBase guides.
//! 3. [`workload`]: seeded streams of writes to try a key on.
//! 4. [`placement`]: where the writes land on a range-partitioned or hashed
//!    cluster, splits and balancing included; [`verdict`] sums it up and
//!    [`report`] draws it like Bigtable's Key Visualizer.
//! 5. [`planner`]: each typical read turned into scans of the key space, then
//!    run on a real cellar store, counted, and checked.
//! 6. [`export`]: the design as a Cassandra `CREATE TABLE` or an HBase shell
//!    `create` with pre-split points.
//!
//! ```
//! use cellar_keys::{syntax, workload::{WorkloadKind, WorkloadSpec}, Experiment, placement::ClusterSpec};
//! # fn main() -> Result<(), cellar_keys::Error> {
//! let key = syntax::parse(r##"ts(ms) "#" field(order_id)"##)?;
//! let spec = WorkloadSpec::new(WorkloadKind::Orders).writes(2000);
//! let run = Experiment::new(key, spec, ClusterSpec::hbase()).run()?;
//! // A timestamp first: every write goes to the last region, on one server.
//! assert_eq!(run.placement.writes_to_last_region, 2000);
//! assert!(run.verdict.busiest_share > 0.99);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod encoding;
mod error;
pub mod experiment;
pub mod export;
pub mod guides;
pub mod key;
pub mod placement;
pub mod planner;
pub mod report;
pub mod syntax;
pub mod verdict;
pub mod workload;

pub use error::{Error, Result};
pub use experiment::{Experiment, Run};
pub use key::{KeyBuilder, KeyDesign, Part};
