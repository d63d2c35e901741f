//! The one error type of query-first tables.
//!
//! Most failures are about input: a declaration that cannot work (a layout
//! that does not identify a record, a field that does not exist), a record
//! that does not fit its table, a read no layout serves. Those name what is
//! wrong and, where there is one, what to do instead. Failures of the store
//! underneath are wrapped as [`Error::Store`]; a stored record that does not
//! decode is [`Error::Corruption`], naming where it lies.

use crate::layout::LayoutSpec;

/// Everything that can go wrong with a query-first table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed (I/O, corruption, a refused write).
    #[error("store: {0}")]
    Store(#[from] cellar_engine::Error),
    /// A key design did not parse, or a value cannot be encoded in a key part.
    #[error("key: {0}")]
    Key(#[from] cellar_keys::Error),
    /// A table or layout declaration that cannot work.
    #[error("table {table}: {what}")]
    Schema {
        /// The table.
        table: String,
        /// What is wrong with it.
        what: String,
    },
    /// A record, a key or query parameters that do not fit the table.
    #[error("table {table}: {what}")]
    Record {
        /// The table.
        table: String,
        /// What is wrong with the input.
        what: String,
    },
    /// An insert of a primary key the table already holds.
    #[error("table {table} already holds {key}: use update to change it")]
    Exists {
        /// The table.
        table: String,
        /// The primary key, as `field=value` pairs.
        key: String,
    },
    /// An update of a primary key the table does not hold.
    #[error("table {table} holds no record {key}")]
    NotFound {
        /// The table.
        table: String,
        /// The primary key, as `field=value` pairs.
        key: String,
    },
    /// An update that changes a primary-key field. As in Cassandra, the
    /// primary key names the record: delete it and insert the new one.
    #[error("table {table}: {field} is part of the primary key and cannot be updated: delete and insert instead")]
    PrimaryKeyChange {
        /// The table.
        table: String,
        /// The field.
        field: String,
    },
    /// A read no readable layout serves as a slice or a bounded fan-out.
    #[error("{}", unserved_message(.path, .reasons, .suggestion.as_deref()))]
    Unserved {
        /// The access path's name.
        path: String,
        /// Why each readable layout does not serve it.
        reasons: Vec<String>,
        /// A layout that would serve it, ready for [`crate::Table::add_layout`].
        suggestion: Option<Box<LayoutSpec>>,
    },
    /// A table name no table in the store has.
    #[error("the store holds no table {0}")]
    UnknownTable(String),
    /// A layout name the table does not have.
    #[error("table {table} has no layout {layout}")]
    UnknownLayout {
        /// The table.
        table: String,
        /// The layout asked for.
        layout: String,
    },
    /// A backfill asked of a layout that is already readable.
    #[error("layout {0} is already readable: nothing to backfill")]
    NothingToBackfill(String),
    /// Two backfills of one layout at once.
    #[error("layout {0} is already being backfilled")]
    BackfillRunning(String),
    /// A second handle on a table this process already has open (two
    /// handles would each take their own write lock, and two writers could
    /// then move the same record twice).
    #[error("table {0} is already open in this process: share its handle")]
    AlreadyOpen(String),
    /// A stored record or table definition that does not decode.
    #[error("corrupt {what} in family {family}, row {row}")]
    Corruption {
        /// The family it lies in.
        family: String,
        /// Its row, printed like HBase's `toStringBinary`.
        row: String,
        /// What did not decode, and why.
        what: String,
    },
}

fn unserved_message(path: &str, reasons: &[String], suggestion: Option<&LayoutSpec>) -> String {
    let mut out = format!("no readable layout serves \"{path}\"");
    for r in reasons {
        out.push_str(&format!("; {r}"));
    }
    match suggestion {
        Some(s) => out.push_str(&format!(
            ". A layout that serves it: {s} (Table::add_layout); or ask for a filtering scan (QueryOptions::allow_filtering)"
        )),
        None => out.push_str(". Ask for a filtering scan (QueryOptions::allow_filtering)"),
    }
    out
}

/// The result type of query-first tables.
pub type Result<T> = std::result::Result<T, Error>;
