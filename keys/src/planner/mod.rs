//! The query planner: what a read costs under a key design.
//!
//! A wide-column store finds rows only through the key. A read can be served
//! by one contiguous slice of the key space only if it fixes every part of
//! the key before the one it ranges over (equality first, range last). So
//! the planner walks the key's parts from the left:
//!
//! * a constant or separator is fixed by definition;
//! * a part whose field the read names exactly is fixed (its bytes join the
//!   prefix);
//! * a salt or hash prefix of a field the read does not name cannot be
//!   computed, so the read must try every bucket: a **fan-out** of one scan
//!   per bucket (a round-robin salt always fans out: nobody can compute it);
//! * a timestamp the read ranges over ends the prefix with a **range**;
//! * anything else ends the walk: what follows is unconstrained, and rows in
//!   the slice that do not match are read and thrown away.
//!
//! If nothing that depends on the read narrowed the key space, the read is a
//! **full scan**, and the planner proposes the layout that would serve it (a
//! layout per read path). For hashed stores the partition key must be fully
//! known (or enumerable, as a salt is); otherwise the read is a scatter-gather
//! over every partition on every node.
//!
//! Then [`RealStore`] runs each plan on a real cellar store holding the
//! generated rows, counts rows read (from the engine's [`cellar_engine::Trace`])
//! and returned, and checks both against a brute-force filter of the data.
//!
//! The planner reads in four steps, one module each: [`Query`] and
//! [`typical_queries`] (`query.rs`, what a read names), [`plan()`] (`plan.rs`,
//! the walk over the key's parts), [`RealStore`] and [`plan_and_run`]
//! (`execute.rs`, the plans run on a real store) and [`describe`]
//! (`render.rs`, the lines the command prints).

mod execute;
mod plan;
mod query;
mod render;

pub use execute::{plan_and_run, Execution, RealStore, FAMILY};
pub use plan::{plan, serving_layout, Plan, PlanKind, ScanRange, MAX_FAN_OUT};
pub use query::{clock, typical_queries, Query, TimePredicate};
pub use render::describe;
