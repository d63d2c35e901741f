//! # cellar-tables: query-first tables
//!
//! A wide-column store cannot join, and it reads cheaply only along a key.
//! So a design starts from the reads (seed 001): list each access path,
//! give it a **layout** whose key makes it one contiguous slice, write every
//! record into every layout that needs it, and keep one layout, keyed by the
//! primary key, as the **source of truth**. Everyone who does this by hand
//! meets the same bug: the copies drift (an update that moves a row in one
//! layout and not in another, a crash between two writes). Cassandra's
//! materialized views automate it and are marked experimental for that
//! reason. On one machine cellar has what they lack: a [`cellar_engine::WriteBatch`]
//! is atomic across column families, so a table writes all its layouts in
//! one batch and no copy ever drifts.
//!
//! Reading order:
//!
//! 1. [`schema`], [`record`] and [`layout`]: a table's fields, its records,
//!    and its layouts (a key design of `cellar_keys` per read path, cut into
//!    a partition, the row, and a clustering key, the columns).
//! 2. [`table`]: insert, update (moving a record where a key field changed),
//!    delete, each one batch across every layout; [`batch`]: writes to
//!    several tables (an order and its line items) in one batch.
//! 3. [`path`], [`choose`] and [`query`]: reads declared as access paths,
//!    served by the layout the key designer's planner finds for them, or
//!    refused with the layout that would serve them.
//! 4. [`backfill`]: a layout added after launch, filled from the source of
//!    truth while writes go on, readable once complete.
//! 5. [`verify`], [`shape`] and [`export`]: the check that the copies agree,
//!    the largest partition, and the design as Cassandra and HBase statements.
//!
//! ```
//! use std::sync::Arc;
//! use cellar_engine::{Store, StoreOptions};
//! use cellar_tables::{AccessPath, LayoutSpec, Params, Record, Schema, Table, TableOptions};
//! # fn main() -> Result<(), cellar_tables::Error> {
//! # let dir = tempfile::tempdir().map_err(|e| cellar_engine::Error::InvalidArgument(e.to_string()))?;
//! let store = Arc::new(Store::open(dir.path(), StoreOptions::default())?);
//! let schema = Schema::new("orders")
//!     .int("order_id").int("customer").time("placed_at").int("warehouse")
//!     .primary_key(&["order_id"])
//!     .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
//!     .layout(LayoutSpec::new("orders_by_customer", "pad(customer,8) | revts(ms,19) pad(order_id,10)").time("placed_at"));
//! let orders = Table::create(store, &schema, TableOptions::default())?;
//! for id in 1..=3 {
//!     let order = Record::new().with("order_id", id).with("customer", 42).with("placed_at", 1_000 * id).with("warehouse", 1);
//!     orders.insert(&order)?; // one batch: `orders` and `orders_by_customer`
//! }
//! let latest = AccessPath::new("latest orders of a customer").equals("customer").newest_first("placed_at").limit(2);
//! let answer = orders.query(&latest, &Params::new().eq("customer", 42))?;
//! assert_eq!(answer.layout, "orders_by_customer");
//! assert_eq!(answer.records[0].int("order_id"), Some(3));
//! // The slice stops at the limit: the 2 records it returns, and the next,
//! // which the merge had already read when the limit was reached.
//! assert_eq!(answer.trace.entries_examined(), 3);
//! assert!(orders.verify()?.is_consistent());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod backfill;
pub mod batch;
pub mod catalog;
pub mod choose;
mod error;
pub mod export;
pub mod layout;
pub mod path;
pub mod query;
pub mod record;
pub mod schema;
pub mod shape;
pub mod table;
pub mod verify;

pub use backfill::{Backfill, BackfillOptions, BackfillProgress};
pub use batch::Batch;
pub use catalog::{tables, Definition, CATALOG_FAMILY};
pub use choose::{Choice, Planned, Request};
pub use error::{Error, Result};
pub use layout::{Address, Layout, LayoutSpec, LayoutState, Role};
pub use path::{AccessPath, Params};
pub use query::{QueryOptions, QueryResult};
pub use record::{IntoValue, Record, Value};
pub use schema::{Field, FieldType, Schema};
pub use shape::LayoutShape;
pub use table::{LayoutWrites, Table, TableOptions, WriteCounts, WriteReport};
pub use verify::{LayoutCheck, VerifyReport};
