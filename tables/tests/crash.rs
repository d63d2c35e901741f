//! SIGKILL: a child process inserts, moves records between keys, deletes,
//! and backfills a layout added after launch; it is killed at random moments
//! and the table reopened. Every write is one batch across the layouts, so
//! after every kill `verify` must hold: no copy ever drifts, and the
//! backfill resumes from a cursor that never claims a lost copy. Each order
//! is inserted and deleted with its two line items (a second table) in one
//! [`Batch`], so after every kill each order has both its items and no item
//! is left without its order.
//!
//! The child is this test binary itself, run with `--ignored --exact
//! child_writer` and the store's folder in `CELLAR_TABLES_CRASH_DIR`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use cellar_engine::{FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy};
use cellar_tables::{BackfillOptions, Batch, Error, LayoutSpec, LayoutState, Record, Schema, Table, TableOptions};
use common::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const DIR_VAR: &str = "CELLAR_TABLES_CRASH_DIR";
const SEED_VAR: &str = "CELLAR_TABLES_CRASH_SEED";
const KILLS: u64 = 10;

fn by_warehouse() -> LayoutSpec {
    LayoutSpec::new(
        "orders_by_warehouse",
        r##"pad(warehouse,4) | revts(ms,19) "#" pad(order_id,10)"##,
    )
    .time("shipped_at")
}

/// Line items, keyed by their order: two per order.
fn items_schema() -> Schema {
    Schema::new("line_items")
        .int("order_id")
        .int("line")
        .primary_key(&["order_id", "line"])
        .source_of_truth(LayoutSpec::new("items_by_order", "pad(order_id,10) | pad(line,3)"))
}

fn item(order: i64, line: i64) -> Record {
    Record::new().with("order_id", order).with("line", line)
}

/// The orders table and the line items table of one store.
fn open(dir: &std::path::Path) -> Result<(Table, Table)> {
    let store = Arc::new(Store::open(dir, StoreOptions::default().sync(SyncPolicy::Never))?);
    // Small memtables: kills land in flushes and compactions too.
    let options = TableOptions::default().family_options(FamilyOptions::default().memtable_max_entries(300));
    let orders = Table::open_or_create(store.clone(), &orders_schema(), options.clone())?;
    let items = Table::open_or_create(store, &items_schema(), options)?;
    Ok((orders, items))
}

/// The rows of the orders' source of truth, and the line items of each row
/// of theirs (both keyed by the padded order id).
struct Rows {
    orders: Vec<Vec<u8>>,
    items: BTreeMap<Vec<u8>, usize>,
}

fn orders_and_items(table: &Table) -> Result<Rows> {
    let store = table.store();
    let mut orders = Vec::new();
    for row in store.scan("orders", &RowRange::all())? {
        orders.push(row?.key.to_vec());
    }
    let mut items = BTreeMap::new();
    for row in store.scan("items_by_order", &RowRange::all())? {
        let row = row?;
        items.insert(row.key.to_vec(), row.cells.len());
    }
    Ok(Rows { orders, items })
}

/// The child: writes until it is killed.
#[test]
#[ignore = "the crash test's child process, run by sigkill_never_leaves_a_layout_out_of_step"]
fn child_writer() -> Result {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return Ok(());
    };
    let seed = std::env::var(SEED_VAR)?.parse::<u64>()?;
    let (table, items) = open(std::path::Path::new(&dir))?;
    let mut rng = StdRng::seed_from_u64(seed);
    // New ids continue above everything this seed's predecessors wrote.
    let mut next_id = seed as i64 * 1_000_000;
    println!("started");
    for n in 0u64.. {
        let id = rng.random_range(0..next_id.max(1));
        let id = if rng.random_range(0..3) == 0 {
            id
        } else {
            id % 1_000_000 + (seed as i64 * 1_000_000)
        };
        let outcome = match rng.random_range(0..6) {
            0..=2 => {
                next_id += 1;
                let t = T0 + rng.random_range(0..500u64) * HOUR;
                let placed = order(
                    next_id,
                    rng.random_range(0..50),
                    t,
                    rng.random_range(0..4),
                    t + DAY,
                    "new",
                );
                let mut batch = Batch::new();
                batch
                    .insert(&table, placed)
                    .insert(&items, item(next_id, 1))
                    .insert(&items, item(next_id, 2));
                batch.write().map(|_| ())
            }
            3 => table
                .update(&key(id), &Record::new().with("warehouse", rng.random_range(0..4i64)))
                .map(|_| ()),
            4 => table
                .update(&key(id), &Record::new().with("customer", rng.random_range(0..50i64)))
                .map(|_| ()),
            _ => {
                let mut batch = Batch::new();
                batch
                    .delete(&table, key(id))
                    .delete(&items, item(id, 1))
                    .delete(&items, item(id, 2));
                batch.write().map(|_| ())
            }
        };
        match outcome {
            Ok(()) | Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        if n == 40 && table.definition().layout("orders_by_warehouse").is_err() {
            table.stage_layout(&by_warehouse())?;
        }
        if n % 25 == 24 {
            if let Ok(mut b) = table.backfill("orders_by_warehouse", BackfillOptions { batch_records: 10 }) {
                b.step()?;
            }
        }
    }
    Ok(())
}

#[test]
fn sigkill_never_leaves_a_layout_out_of_step() -> Result {
    let dir = tempfile::tempdir()?;
    let mut rng = StdRng::seed_from_u64(15);
    let mut killed_while_building = 0;
    for kill in 1..=KILLS {
        let mut child = Command::new(std::env::current_exe()?)
            .args([
                "--ignored",
                "--exact",
                "child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIR_VAR, dir.path())
            .env(SEED_VAR, kill.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        if !lines.any(|l| l.is_ok_and(|l| l.trim_end().ends_with("started"))) {
            let status = child.wait()?;
            return Err(format!("the child stopped before writing: {status}").into());
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(30..300)));
        child.kill()?; // SIGKILL
        child.wait()?;

        let (table, items) = open(dir.path())?;
        let report = table.verify()?;
        assert!(report.is_consistent(), "after kill {kill}:\n{report}");
        assert!(items.verify()?.is_consistent(), "after kill {kill}");
        let Rows {
            orders: order_rows,
            items: item_rows,
        } = orders_and_items(&table)?;
        let text = |row: &Vec<u8>| String::from_utf8_lossy(row).into_owned();
        let without_items: Vec<String> = order_rows
            .iter()
            .filter(|r| !item_rows.contains_key(*r))
            .map(text)
            .collect();
        let without_order: Vec<String> = item_rows.keys().filter(|r| !order_rows.contains(r)).map(text).collect();
        let partial: Vec<String> = item_rows
            .iter()
            .filter(|(_, n)| **n != 2)
            .map(|(r, _)| text(r))
            .collect();
        assert_eq!(
            (without_items, without_order, partial),
            (vec![], vec![], vec![]),
            "after kill {kill}: orders without their items, items without their order, orders with one item"
        );
        if let Ok(layout) = table.definition().layout("orders_by_warehouse") {
            if let LayoutState::Building { .. } = layout.state {
                killed_while_building += 1;
            }
        }
    }
    assert!(killed_while_building >= 1, "no kill landed during the backfill");
    // The interrupted backfill resumes and completes.
    let (table, _items) = open(dir.path())?;
    if !table.definition().layout("orders_by_warehouse")?.is_readable() {
        table
            .backfill("orders_by_warehouse", BackfillOptions::default())?
            .run(&mut |_| {})?;
    }
    let report = table.verify()?;
    assert!(report.is_consistent(), "after the last backfill:\n{report}");
    assert!(report.records > 0);
    assert_eq!(report.layouts[3].cells, report.records);
    Ok(())
}
