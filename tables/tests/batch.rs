//! Writes across tables in one batch (an order and its line items), and
//! layouts dropped after launch.

mod common;

use std::path::{Path, PathBuf};

use common::*;

use cellar_engine::inspect;
use cellar_tables::{AccessPath, Batch, Error, LayoutSpec, Params, Record, Schema, Table, TableOptions};

/// Line items, keyed by their order.
fn items_schema() -> Schema {
    Schema::new("line_items")
        .int("order_id")
        .int("line")
        .int("sku")
        .primary_key(&["order_id", "line"])
        .source_of_truth(LayoutSpec::new("items_by_order", "pad(order_id,10) | pad(line,3)"))
}

fn item(order: i64, line: i64, sku: i64) -> Record {
    Record::new()
        .with("order_id", order)
        .with("line", line)
        .with("sku", sku)
}

fn items_of(order: i64) -> Params {
    Params::new().eq("order_id", order)
}

fn an_orders_items() -> AccessPath {
    AccessPath::new("an order's line items").equals("order_id")
}

/// Both tables in one store.
fn tables(dir: &Path) -> Result<(Table, Table)> {
    let store = open_store(dir)?;
    let orders = Table::create(store.clone(), &orders_schema(), TableOptions::default())?;
    let items = Table::create(store, &items_schema(), TableOptions::default())?;
    Ok((orders, items))
}

/// The log segment the store writes to now (the newest).
fn newest_log(dir: &Path) -> Result<PathBuf> {
    let mut logs: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let n = p.file_name()?.to_str()?.strip_suffix(".log")?.parse().ok()?;
            Some((n, p))
        })
        .collect();
    logs.sort();
    Ok(logs.pop().ok_or("no log segment")?.1)
}

#[test]
fn an_order_and_its_items_are_one_log_record_across_both_tables() -> Result {
    let dir = tempfile::tempdir()?;
    let (orders, items) = tables(dir.path())?;
    let before = inspect::dump_log(&newest_log(dir.path())?)?.records.len();
    let mut batch = Batch::new();
    batch.insert(&orders, order(7, 42, T0, 3, T0 + DAY, "placed"));
    batch.insert(&items, item(7, 1, 300));
    batch.insert(&items, item(7, 2, 301));
    let reports = batch.write()?;
    let entries: Vec<u64> = reports.iter().map(|r| r.as_ref().map_or(0, |r| r.entries)).collect();
    assert_eq!(entries, [3, 1, 1], "three layouts of the order, one of each item");

    let log = inspect::dump_log(&newest_log(dir.path())?)?;
    assert_eq!(log.records.len(), before + 1, "one log record for the whole batch");
    let (_, writes) = log
        .records
        .last()
        .and_then(|r| r.batch.clone().ok())
        .ok_or("the last record is a batch")?;
    assert_eq!(writes.len(), 5);

    assert_eq!(orders.get(&key(7))?, Some(order(7, 42, T0, 3, T0 + DAY, "placed")));
    let found = items.query(&an_orders_items(), &items_of(7))?;
    assert_eq!(found.records, [item(7, 1, 300), item(7, 2, 301)]);
    assert_eq!((orders.write_counts().inserts, orders.write_counts().entries), (1, 3));
    assert_eq!((items.write_counts().inserts, items.write_counts().entries), (2, 2));
    assert!(orders.verify()?.is_consistent() && items.verify()?.is_consistent());
    Ok(())
}

#[test]
fn a_refused_write_leaves_every_table_of_the_batch_unchanged() -> Result {
    let dir = tempfile::tempdir()?;
    let (orders, items) = tables(dir.path())?;
    items.insert(&item(7, 1, 300))?;
    let mut batch = Batch::new();
    batch.insert(&orders, order(8, 42, T0, 3, T0 + DAY, "placed"));
    batch.insert(&items, item(8, 1, 500));
    batch.insert(&items, item(7, 1, 999)); // already held
    assert!(matches!(batch.write(), Err(Error::Exists { .. })));
    assert_eq!(
        orders.get(&key(8))?,
        None,
        "the order was not written without its items"
    );
    assert!(items.query(&an_orders_items(), &items_of(8))?.records.is_empty());
    assert_eq!(
        items.query(&an_orders_items(), &items_of(7))?.records,
        [item(7, 1, 300)]
    );
    assert_eq!(orders.write_counts().inserts, 0);
    assert_eq!(items.write_counts().inserts, 1);
    Ok(())
}

#[test]
fn a_batch_touches_a_record_once() -> Result {
    let dir = tempfile::tempdir()?;
    let (orders, _items) = tables(dir.path())?;
    orders.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;

    // Two updates of one record: the second would be planned against the
    // stored record and leave the first one's copy behind.
    let mut batch = Batch::new();
    batch.update(&orders, key(7), Record::new().with("warehouse", 4));
    batch.update(&orders, key(7), Record::new().with("warehouse", 5));
    let refused = batch.write();
    assert!(
        matches!(&refused, Err(Error::Record { what, .. }) if what.contains("twice")),
        "{refused:?}"
    );
    // An insert, then a delete of the same new key.
    let mut batch = Batch::new();
    batch.insert(&orders, order(9, 1, T0, 1, T0 + DAY, "placed"));
    batch.delete(&orders, key(9));
    assert!(matches!(batch.write(), Err(Error::Record { .. })));

    assert_eq!(orders.get(&key(7))?, Some(order(7, 42, T0, 3, T0 + DAY, "placed")));
    assert_eq!(orders.get(&key(9))?, None);
    assert!(orders.verify()?.is_consistent());
    Ok(())
}

#[test]
fn updates_and_deletes_in_a_batch_move_and_remove_as_the_tables_do() -> Result {
    let dir = tempfile::tempdir()?;
    let (orders, items) = tables(dir.path())?;
    orders.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    items.insert(&item(7, 1, 300))?;
    let mut batch = Batch::new();
    batch.update(&orders, key(7), Record::new().with("warehouse", 5));
    batch.delete(&items, Record::new().with("order_id", 7).with("line", 1));
    batch.delete(&items, Record::new().with("order_id", 7).with("line", 2)); // not held
    let reports = batch.write()?;
    let moved = reports.first().cloned().flatten().ok_or("a report")?.moved;
    assert_eq!(moved, ["orders_by_warehouse_day"]);
    assert_eq!(reports.get(1).cloned().flatten().map(|r| r.entries), Some(1));
    assert_eq!(reports.get(2), Some(&None));
    assert!(items.query(&an_orders_items(), &items_of(7))?.records.is_empty());
    let day = Params::new().eq("warehouse", 5).between(T0 + DAY, T0 + 2 * DAY);
    assert_eq!(ids(&orders.query(&shipped_from_warehouse(), &day)?.records), [7]);
    assert_eq!(orders.write_counts().rows_moved, 1);
    assert_eq!(items.write_counts().deletes, 1);
    assert!(orders.verify()?.is_consistent() && items.verify()?.is_consistent());
    Ok(())
}

#[test]
fn a_batch_writes_to_one_store() -> Result {
    let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let orders = orders_table(a.path())?;
    let items = Table::create(open_store(b.path())?, &items_schema(), TableOptions::default())?;
    let mut batch = Batch::new();
    batch.insert(&orders, order(7, 42, T0, 3, T0 + DAY, "placed"));
    batch.insert(&items, item(7, 1, 300));
    assert!(matches!(batch.write(), Err(Error::Record { .. })));
    assert_eq!(orders.get(&key(7))?, None);
    assert!(Batch::new().write()?.is_empty());
    Ok(())
}

// ---- dropping a layout ----

/// A layout keyed by the status text, closed by `#`: a status holding a `#`
/// cannot be written into it.
fn by_status() -> LayoutSpec {
    LayoutSpec::new("orders_by_status", "field(status) \"#\" | pad(order_id,10)")
}

#[test]
fn a_staged_layout_that_refuses_a_value_can_be_dropped_and_writes_go_on() -> Result {
    let dir = tempfile::tempdir()?;
    let orders = orders_table(dir.path())?;
    orders.insert(&order(1, 42, T0, 3, T0 + DAY, "placed"))?;
    orders.stage_layout(&by_status())?;
    // Every write of such a status now fails: the staged layout refuses it.
    let odd = order(2, 42, T0, 3, T0 + DAY, "held#2");
    assert!(orders.insert(&odd).is_err());

    orders.drop_layout("orders_by_status")?;
    orders.insert(&odd)?;
    assert!(!orders.store().families().iter().any(|f| f == "orders_by_status"));
    let names: Vec<String> = orders.definition().layouts.iter().map(|l| l.name.clone()).collect();
    assert_eq!(names, ["orders", "orders_by_customer", "orders_by_warehouse_day"]);
    assert!(orders.verify()?.is_consistent());

    // The catalog forgot it too: a reopened table has three layouts.
    drop(orders);
    let orders = orders_table(dir.path())?;
    assert_eq!(orders.definition().layouts.len(), 3);
    assert_eq!(orders.get(&key(2))?, Some(odd));
    Ok(())
}

#[test]
fn a_dropped_read_path_is_refused_again() -> Result {
    let dir = tempfile::tempdir()?;
    let orders = orders_table(dir.path())?;
    orders.insert(&order(1, 42, T0, 3, T0 + DAY, "placed"))?;
    let path = latest_of_customer(5);
    let params = Params::new().eq("customer", 42);
    assert_eq!(orders.query(&path, &params)?.layout, "orders_by_customer");
    orders.drop_layout("orders_by_customer")?;
    assert!(matches!(orders.query(&path, &params), Err(Error::Unserved { .. })));
    assert!(orders.verify()?.is_consistent());
    Ok(())
}

#[test]
fn the_source_of_truth_and_a_layout_being_backfilled_stay() -> Result {
    let dir = tempfile::tempdir()?;
    let orders = orders_table(dir.path())?;
    orders.insert(&order(1, 42, T0, 3, T0 + DAY, "placed"))?;
    assert!(matches!(orders.drop_layout("orders"), Err(Error::Schema { .. })));
    assert!(matches!(
        orders.drop_layout("no_such_layout"),
        Err(Error::UnknownLayout { .. })
    ));
    orders.stage_layout(&by_status())?;
    let backfill = orders.backfill("orders_by_status", Default::default())?;
    assert!(matches!(
        orders.drop_layout("orders_by_status"),
        Err(Error::BackfillRunning(_))
    ));
    backfill.run(&mut |_| {})?;
    orders.drop_layout("orders_by_status")?;
    assert_eq!(orders.definition().layouts.len(), 3);
    Ok(())
}
