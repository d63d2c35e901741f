//! Writes to several tables, applied as one atomic batch.
//!
//! A table keeps its own layouts in step: each of its writes is one engine
//! batch. Some logical writes span tables. Placing an order writes the order
//! (into its layouts) and its line items (a table of their own, keyed by
//! order): written as two table writes, a crash between them leaves an order
//! without its items, the drift between tables that query-first design
//! exists to prevent. A [`Batch`] gathers inserts, updates and deletes for
//! any tables of one store and applies them as one
//! [`cellar_engine::WriteBatch`]: after a crash every layout of every table
//! has all of them, or none. It is what Cassandra's logged batch promises
//! across tables (eventually, after a replay), here at once, on one machine.
//!
//! Each write is checked and planned exactly as the table's own method does
//! ([`crate::Table::insert`] refuses a key it holds, an update reads the old
//! record and moves it where a key field changed, ...), and nothing is
//! written unless every write of the batch is accepted. While it plans and
//! writes, the batch holds the write lock of each of its tables, taken in
//! the order of the tables' names: two batches that share tables lock them in
//! the same order, so neither can wait for the other in a circle.
//!
//! A batch touches a record at most once. A second write of the same key
//! would be planned against the record the store holds, not the one the
//! first write leaves, and would put the copies in the wrong places (two
//! inserts of one key would leave both records' copies behind); it is
//! refused ([`Error::Record`]) before anything is written.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::record::Record;
use crate::table::{Changes, Table, Write, WriteReport};

/// Writes to one or more tables of a store, applied together by
/// [`Batch::write`].
///
/// ```
/// use std::sync::Arc;
/// use cellar_engine::{Store, StoreOptions};
/// use cellar_tables::{Batch, LayoutSpec, Record, Schema, Table, TableOptions};
/// # fn main() -> Result<(), cellar_tables::Error> {
/// # let dir = tempfile::tempdir().map_err(|e| cellar_engine::Error::InvalidArgument(e.to_string()))?;
/// let store = Arc::new(Store::open(dir.path(), StoreOptions::default())?);
/// let orders = Table::create(store.clone(), &Schema::new("orders").int("order_id").int("customer")
///     .primary_key(&["order_id"]).source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)")),
///     TableOptions::default())?;
/// let items = Table::create(store, &Schema::new("items").int("order_id").int("line").int("sku")
///     .primary_key(&["order_id", "line"]).source_of_truth(LayoutSpec::new("items", "pad(order_id,10) | pad(line,3)")),
///     TableOptions::default())?;
/// let mut batch = Batch::new();
/// batch.insert(&orders, Record::new().with("order_id", 7).with("customer", 42));
/// batch.insert(&items, Record::new().with("order_id", 7).with("line", 1).with("sku", 300));
/// batch.insert(&items, Record::new().with("order_id", 7).with("line", 2).with("sku", 301));
/// let reports = batch.write()?; // one engine batch: the order and both items, or nothing
/// assert_eq!(reports.len(), 3);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Batch<'t> {
    writes: Vec<(&'t Table, Pending)>,
}

/// A write waiting in a batch.
enum Pending {
    Insert(Record),
    Update { key: Record, changes: Record },
    Delete(Record),
}

impl Pending {
    fn as_write(&self) -> Write<'_> {
        match self {
            Pending::Insert(record) => Write::Insert(record),
            Pending::Update { key, changes } => Write::Update { key, changes },
            Pending::Delete(key) => Write::Delete(key),
        }
    }
}

impl<'t> Batch<'t> {
    /// An empty batch.
    pub fn new() -> Batch<'t> {
        Batch { writes: Vec::new() }
    }

    /// Inserts `record` into `table` (as [`Table::insert`]).
    pub fn insert(&mut self, table: &'t Table, record: Record) -> &mut Self {
        self.writes.push((table, Pending::Insert(record)));
        self
    }

    /// Changes fields of the record `key` of `table` (as [`Table::update`]).
    pub fn update(&mut self, table: &'t Table, key: Record, changes: Record) -> &mut Self {
        self.writes.push((table, Pending::Update { key, changes }));
        self
    }

    /// Deletes the record `key` of `table` (as [`Table::delete`]; nothing
    /// for a key the table does not hold).
    pub fn delete(&mut self, table: &'t Table, key: Record) -> &mut Self {
        self.writes.push((table, Pending::Delete(key)));
        self
    }

    /// The writes gathered.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether no write was gathered.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Plans every write and applies them all in one engine batch. Returns a
    /// report per write, in the order they were added (`None` for the
    /// delete of a record the table did not hold); on an error nothing is
    /// written.
    pub fn write(self) -> Result<Vec<Option<WriteReport>>> {
        let Some((first, _)) = self.writes.first() else {
            return Ok(Vec::new());
        };
        if let Some((other, _)) = self.writes.iter().find(|(t, _)| !Arc::ptr_eq(t.store(), first.store())) {
            return Err(Error::Record {
                table: other.name(),
                what: format!(
                    "a batch writes to one store, and {} lives in another than {}",
                    other.name(),
                    first.name()
                ),
            });
        }
        // Every table's write lock, in name order (see the module docs).
        let mut tables: Vec<&Table> = self.writes.iter().map(|(t, _)| *t).collect();
        tables.sort_by_key(|t| t.name());
        tables.dedup_by_key(|t| t.name());
        let _locks: Vec<_> = tables.iter().map(|t| t.lock_writes()).collect();

        let mut changes = Changes::new(None);
        let mut touched = BTreeSet::new();
        let mut planned = Vec::with_capacity(self.writes.len());
        for (table, pending) in &self.writes {
            let def = table.definition();
            let write = pending.as_write();
            let (at, writes) = table.plan_write(&def, &write, &mut changes)?;
            if !touched.insert((def.name().to_string(), at)) {
                let key = match pending {
                    Pending::Insert(record) => def.schema.key_text(record),
                    Pending::Update { key, .. } | Pending::Delete(key) => key.to_string(),
                };
                return Err(Error::Record {
                    table: def.name().to_string(),
                    what: format!("the batch writes {key} twice: a batch touches a record once"),
                });
            }
            planned.push(writes.then(|| changes.take_counts()));
        }
        first.store().write(&changes.batch)?;
        let mut reports = Vec::with_capacity(planned.len());
        for ((table, pending), counts) in self.writes.iter().zip(planned) {
            reports.push(counts.map(|(report, by_layout)| {
                table.count(&pending.as_write(), &report, by_layout);
                report
            }));
        }
        Ok(reports)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use cellar_engine::{Store, StoreOptions};

    use super::*;
    use crate::{LayoutSpec, Schema, TableOptions};

    fn table(store: &Arc<Store>, name: &str) -> Result<Table> {
        let schema = Schema::new(name)
            .int("id")
            .primary_key(&["id"])
            .source_of_truth(LayoutSpec::new(name, "pad(id,10)"));
        Table::create(store.clone(), &schema, TableOptions::default())
    }

    /// Two batches naming the same tables in opposite orders must not each
    /// hold one lock and wait for the other: a batch takes the locks in the
    /// order of the tables' names, whatever order it names them in. Here the
    /// test holds `b`'s lock; a batch naming `b` first must still take `a`'s
    /// lock first, and wait for `b` while holding it.
    #[test]
    fn a_batch_takes_its_tables_locks_in_name_order() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Arc::new(Store::open(dir.path(), StoreOptions::default())?);
        let a = Arc::new(table(&store, "a")?);
        let b = Arc::new(table(&store, "b")?);
        let held = b.lock_writes();
        let writer = {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut batch = Batch::new();
                batch.insert(&b, Record::new().with("id", 1));
                batch.insert(&a, Record::new().with("id", 1));
                batch.write().map(|_| ())
            })
        };
        // The writer takes `a`, then waits for `b`.
        let deadline = Instant::now() + Duration::from_secs(30);
        while a.write.try_lock().is_some() {
            assert!(Instant::now() < deadline, "the batch never took a's lock before b's");
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        writer.join().map_err(|_| "the writer panicked")??;
        assert!(a.get(&Record::new().with("id", 1))?.is_some());
        assert!(b.get(&Record::new().with("id", 1))?.is_some());
        Ok(())
    }
}
