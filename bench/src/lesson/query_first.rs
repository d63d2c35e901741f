//! Query-first tables (seed 001): a layout per read path, kept in step by
//! the engine, measured against a filtering scan.
//!
//! The seed's example on a real store: orders, their line items and their
//! shipments, with the layouts `orders_by_customer` (a customer's orders,
//! newest first), `items_by_order` (an order's line items by line number)
//! and `orders_by_warehouse_day` (a warehouse's shipments of one day, by
//! ship time), kept by `cellar_tables` beside the source of truth `orders`.
//! The workload is generated from a fixed seed and written at a fixed time,
//! so every figure, bytes included, is the same on every run.
//!
//! For each access path the report holds what its layout cost (from the
//! engine's [`cellar_engine::Trace`]) beside a filtering scan of the source
//! of truth answering the same question (the same records, checked); then
//! what the layouts cost: entries and bytes written per insert, bytes stored
//! per layout, rows moved when orders change warehouse, a read path added
//! after launch with its backfill (while writes go on), and the largest
//! partition with and without a time bucket.

use std::path::Path;
use std::sync::Arc;

use cellar_engine::{FamilyOptions, Store, StoreOptions};
use cellar_keys::encoding::to_string_binary;
use cellar_tables::{
    AccessPath, BackfillOptions, BackfillProgress, Batch, Error as TableError, LayoutShape, LayoutSpec, Params,
    Planned, QueryResult, Record, Role, Schema, Table, TableOptions,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use cellar_picture::chart::{self, Bar, BarGroup};
use cellar_picture::{colour, Section};

use super::render::{Differences, Grid};
use super::{prepare, ratio, thousands, FamilyFigures, ReadFigures, LOAD_TIME_MS};
use crate::error::{Error, Result};
use crate::progress::{Progress, Silent};

/// Orders placed.
const ORDERS: i64 = 20_000;
/// Customers placing them.
const CUSTOMERS: i64 = 1_000;
/// Warehouses shipping them.
const WAREHOUSES: i64 = 4;
/// 2024-01-01 00:00 UTC: the first order.
const START: u64 = 1_704_067_200_000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;
/// Orders are placed over 180 days, January to June 2024.
const DAYS: u64 = 180;
/// The seed of the workload's generator.
const SEED: u64 = 1;
/// Every fifth order is marked shipped (an update in place).
const STATUS_EVERY: i64 = 5;
/// One order in forty changes warehouse (an update that moves a row).
const REROUTE_EVERY: i64 = 40;
/// The warehouse the warehouse paths ask about, and its day: 2024-03-15.
const WAREHOUSE: i64 = 2;
const DAY_ASKED: u64 = START + 74 * DAY;
/// Source records a backfill batch reads.
const BACKFILL_BATCH: usize = 1_000;
/// Writes landing inside each backfill batch: new orders and re-routes.
const INSERTS_PER_BATCH: i64 = 10;
const REROUTES_PER_BATCH: i64 = 5;

/// What the seeds say, cited; these label the "lesson" column only.
mod printed {
    /// Seed 001: "Every order is written into three layouts."
    pub const LAYOUTS_PER_ORDER: f64 = 3.0;
    /// Seed 001: "Each read is one contiguous slice."
    pub const SLICES_PER_READ: u64 = 1;
    /// Seed 000: "the 20 latest orders for customer 42 ... the read stops after 20 rows of the slice."
    pub const LATEST: usize = 20;
    /// Seed 001: "every layout keyed by the changed field must delete the row at its old key and write it at
    /// the new one": one row moved per re-route (only `orders_by_warehouse_day` is keyed by the warehouse).
    pub const ROWS_MOVED_PER_REROUTE: f64 = 1.0;
}

/// One access path, on its layout and by a filtering scan.
#[derive(Clone, Debug, PartialEq)]
pub struct PathCost {
    /// The read, as a person says it.
    pub path: String,
    /// The parameters it was read with, as a person says them.
    pub asked: String,
    /// The layout that served it.
    pub layout: String,
    /// Slices read.
    pub requests: u64,
    /// What the layout's slices cost.
    pub layout_cost: ReadFigures,
    /// What a filtering scan of the source of truth cost for the same answer.
    pub scan_cost: ReadFigures,
    /// The source of truth the scan read.
    pub scanned: String,
    /// Records in the answer (the same both ways: checked).
    pub returned: u64,
}

impl PathCost {
    /// Entries the scan examined per entry the layout examined.
    pub fn ratio(&self) -> f64 {
        ratio(self.scan_cost.entries_examined, self.layout_cost.entries_examined)
    }
}

/// A layout's place on disk, after the final compaction.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutBytes {
    /// The layout (its family).
    pub layout: String,
    /// Its key design, in the key syntax, and its time field.
    pub spec: String,
    /// Whether it is its table's source of truth (the others are copies).
    pub source_of_truth: bool,
    /// The engine's figures for its family.
    pub family: FamilyFigures,
}

/// Every figure the query-first lesson measured.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryFirstReport {
    /// Orders inserted at launch.
    pub orders: u64,
    /// Line items inserted with them.
    pub items: u64,
    /// Entries the order inserts wrote, all layouts.
    pub order_entries: u64,
    /// Their bytes (row + column + value).
    pub order_bytes: u64,
    /// Entries the line item inserts wrote.
    pub item_entries: u64,
    /// Orders marked shipped (in place).
    pub status_updates: u64,
    /// Entries those updates wrote.
    pub status_entries: u64,
    /// Rows they moved (none expected).
    pub status_moved: u64,
    /// Orders moved to another warehouse.
    pub reroutes: u64,
    /// Entries those updates wrote.
    pub reroute_entries: u64,
    /// Rows they moved.
    pub reroute_moved: u64,
    /// The declared paths, on their layouts and by a filtering scan.
    pub paths: Vec<PathCost>,
    /// The path added after launch.
    pub after_launch_path: String,
    /// Why each layout did not serve it before its own layout existed.
    pub refusal: Vec<String>,
    /// The layout the refusal proposed, and that was added.
    pub added: String,
    /// The backfill of that layout.
    pub backfill: BackfillProgress,
    /// Orders inserted and re-routed while the backfill ran.
    pub writes_during_backfill: (u64, u64),
    /// The new path on its layout and by a filtering scan.
    pub after_launch: PathCost,
    /// Every layout's bytes on disk.
    pub layouts: Vec<LayoutBytes>,
    /// The warehouse layout with a day bucket.
    pub with_bucket: LayoutShape,
    /// The warehouse layout added after launch, without one.
    pub without_bucket: LayoutShape,
    /// Records per table and whether `verify` found every layout in step.
    pub verified: Vec<(String, u64, bool)>,
    /// The design as Cassandra CQL: a table per layout, then the logged
    /// batches an order's insert and its re-route become.
    pub cql: String,
    /// The same as HBase shell statements, split where the data divides.
    pub hbase: String,
}

impl QueryFirstReport {
    /// Entries written per order insert, across the order table's layouts.
    pub fn write_amplification(&self) -> f64 {
        ratio(self.order_entries, self.orders)
    }
}

/// The orders table of seed 001.
fn orders_schema() -> Schema {
    Schema::new("orders")
        .int("order_id")
        .int("customer")
        .time("placed_at")
        .int("warehouse")
        .time("shipped_at")
        .text("status")
        .int("total_cents")
        .primary_key(&["order_id"])
        .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
        .layout(
            LayoutSpec::new("orders_by_customer", "pad(customer,8) | revts(ms,19) pad(order_id,10)").time("placed_at"),
        )
        .layout(
            LayoutSpec::new(
                "orders_by_warehouse_day",
                "pad(warehouse,3) day(ts) | ts(ms) pad(order_id,10)",
            )
            .time("shipped_at"),
        )
}

/// Line items, keyed by their order: `items_by_order` is their source of truth.
fn items_schema() -> Schema {
    Schema::new("line_items")
        .int("order_id")
        .int("line")
        .int("sku")
        .int("quantity")
        .int("price_cents")
        .primary_key(&["order_id", "line"])
        .source_of_truth(LayoutSpec::new("items_by_order", "pad(order_id,10) | pad(line,3)"))
}

fn latest_orders() -> AccessPath {
    AccessPath::new("the 20 latest orders of a customer")
        .equals("customer")
        .newest_first("placed_at")
        .limit(printed::LATEST)
}

fn items_of_order() -> AccessPath {
    AccessPath::new("an order's line items").equals("order_id")
}

fn shipped_from() -> AccessPath {
    AccessPath::new("orders shipped from a warehouse")
        .equals("warehouse")
        .oldest_first("shipped_at")
}

fn order_by_id() -> AccessPath {
    AccessPath::new("an order by id").equals("order_id")
}

fn latest_shipments() -> AccessPath {
    AccessPath::new("the 20 latest shipments of a warehouse")
        .equals("warehouse")
        .newest_first("shipped_at")
        .limit(printed::LATEST)
}

/// An order and its line items, drawn from the generator.
fn generate(rng: &mut StdRng, id: i64, placed: u64) -> (Record, Vec<Record>) {
    let lines = rng.random_range(1..=4i64);
    let mut total = 0;
    let items: Vec<Record> = (1..=lines)
        .map(|line| {
            let quantity = rng.random_range(1..=3i64);
            let price = rng.random_range(100..=10_000i64);
            total += quantity * price;
            Record::new()
                .with("order_id", id)
                .with("line", line)
                .with("sku", rng.random_range(1..=500i64))
                .with("quantity", quantity)
                .with("price_cents", price)
        })
        .collect();
    let shipped = placed + rng.random_range(2..=48u64) * HOUR;
    let order = Record::new()
        .with("order_id", id)
        .with("customer", rng.random_range(1..=CUSTOMERS))
        .with("placed_at", placed as i64)
        .with("warehouse", rng.random_range(1..=WAREHOUSES))
        .with("shipped_at", shipped as i64)
        .with("status", "placed")
        .with("total_cents", total);
    (order, items)
}

fn key(id: i64) -> Record {
    Record::new().with("order_id", id)
}

/// The warehouse an order moves to: the next one.
fn next_warehouse(order: &Record) -> i64 {
    order.int("warehouse").unwrap_or(0) % WAREHOUSES + 1
}

/// Runs the query-first lesson in `dir` (created if missing, must be empty).
pub fn query_first(dir: &Path) -> Result<QueryFirstReport> {
    query_first_with(dir, &Silent)
}

/// [`query_first`], reporting the load's and the backfill's progress.
pub fn query_first_with(dir: &Path, progress: &dyn Progress) -> Result<QueryFirstReport> {
    prepare(dir)?;
    let store = Arc::new(Store::open(dir, StoreOptions::default())?);
    // No background compaction: the files read are the ones the explicit
    // compactions write, so the figures do not depend on thread timing.
    let options = TableOptions::default()
        .fixed_time(LOAD_TIME_MS)
        .family_options(FamilyOptions::default().compaction_trigger(0));
    let orders = Table::create(store.clone(), &orders_schema(), options.clone())?;
    let items = Table::create(store.clone(), &items_schema(), options)?;
    let mut rng = StdRng::seed_from_u64(SEED);

    load(&orders, &items, &mut rng, progress)?;
    let loaded = orders.write_counts();
    let items_loaded = items.write_counts();
    let changes = change(&orders)?;
    settle(&store)?;
    let paths = reads_at_launch(&orders, &items)?;

    // A read path after launch: refused, its layout added and backfilled
    // while orders keep coming and moving.
    let asked = Params::new().eq("warehouse", WAREHOUSE);
    let (refusal, suggestion) = match orders.plan(&latest_shipments(), &asked)? {
        Planned::Unserved { reasons, suggestion } => (reasons, suggestion),
        Planned::Served(c) => return Err(Error::Lesson(format!("{} already serves the new path", c.layout))),
    };
    let spec = suggestion.ok_or(Error::Lesson("the table proposed no layout for the new path".into()))?;
    let (backfill, writes_during_backfill) = backfill_while_writing(&orders, &items, &spec, &mut rng, progress)?;
    settle(&store)?;
    let after_launch = measure(&orders, &latest_shipments(), &asked, format!("warehouse {WAREHOUSE}"))?;

    let (cql, hbase) = exports(&orders, &items)?;
    let stats = store.stats()?;
    let mut layouts = Vec::new();
    let mut verified = Vec::new();
    for table in [&orders, &items] {
        for layout in &table.definition().layouts {
            layouts.push(LayoutBytes {
                layout: layout.name.clone(),
                spec: layout.spec().to_string(),
                source_of_truth: layout.role == Role::Source,
                family: FamilyFigures::of(&stats, &layout.name)?,
            });
        }
        let v = table.verify()?;
        verified.push((table.name(), v.records, v.is_consistent()));
    }
    Ok(QueryFirstReport {
        orders: loaded.inserts,
        items: items_loaded.inserts,
        order_entries: loaded.entries,
        order_bytes: loaded.bytes,
        item_entries: items_loaded.entries,
        status_updates: changes.status.0,
        status_entries: changes.status.1,
        status_moved: changes.status.2,
        reroutes: changes.reroute.0,
        reroute_entries: changes.reroute.1,
        reroute_moved: changes.reroute.2,
        paths,
        after_launch_path: latest_shipments().name,
        refusal,
        added: spec.to_string(),
        backfill,
        writes_during_backfill,
        after_launch,
        layouts,
        with_bucket: orders.layout_shape("orders_by_warehouse_day")?,
        without_bucket: orders.layout_shape(&spec.name)?,
        verified,
        cql,
        hbase,
    })
}

/// The design for a distributed store: both tables' schemas, and what the
/// insert of one more order and the re-route of order 10000 become.
fn exports(orders: &Table, items: &Table) -> Result<(String, String)> {
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let (order, _) = generate(&mut rng, 99_999, START + DAYS * DAY);
    let current = orders
        .get(&key(10_000))?
        .ok_or(Error::Lesson("order 10000 vanished".into()))?;
    let reroute = Record::new().with("warehouse", next_warehouse(&current));
    let cql = format!(
        "{}{}\n-- inserting order 99999:\n{}\n-- order 10000 moves to warehouse {}:\n{}",
        orders.cql_schema(),
        items.cql_schema(),
        orders.cql_insert(&order)?,
        next_warehouse(&current),
        orders.cql_update(&key(10_000), &reroute)?
    );
    let hbase = format!(
        "{}{}\n# inserting order 99999:\n{}\n# order 10000 moves to warehouse {}:\n{}",
        orders.hbase_schema(4)?,
        items.hbase_schema(4)?,
        orders.hbase_insert(&order)?,
        next_warehouse(&current),
        orders.hbase_update(&key(10_000), &reroute)?
    );
    Ok((cql, hbase))
}

/// Places an order: the order and its line items, every layout of both
/// tables, in one atomic batch (a crash never leaves an order without its
/// items, or items without their order).
fn place(orders: &Table, items: &Table, order: Record, lines: Vec<Record>) -> std::result::Result<(), TableError> {
    let mut batch = Batch::new();
    batch.insert(orders, order);
    for line in lines {
        batch.insert(items, line);
    }
    batch.write()?;
    Ok(())
}

/// Launch: every order with its line items.
fn load(orders: &Table, items: &Table, rng: &mut StdRng, progress: &dyn Progress) -> Result<()> {
    progress.start("query-first: orders", ORDERS as u64);
    let slot = DAYS * DAY / ORDERS as u64;
    for id in 1..=ORDERS {
        let placed = START + (id - 1) as u64 * slot + rng.random_range(0..slot);
        let (order, lines) = generate(rng, id, placed);
        place(orders, items, order, lines)?;
        if id % 1_000 == 0 {
            progress.advance(1_000);
        }
    }
    progress.finish();
    Ok(())
}

/// Updates after the load, each as (updates, entries written, rows moved).
struct Changes {
    status: (u64, u64, u64),
    reroute: (u64, u64, u64),
}

/// Every fifth order marked shipped (in place); one in forty sent from the
/// next warehouse (a move in the layout keyed by the warehouse).
fn change(orders: &Table) -> Result<Changes> {
    let mut c = Changes {
        status: (0, 0, 0),
        reroute: (0, 0, 0),
    };
    let add = |sum: &mut (u64, u64, u64), r: &cellar_tables::WriteReport| {
        *sum = (sum.0 + 1, sum.1 + r.entries, sum.2 + r.moved.len() as u64);
    };
    for id in 1..=ORDERS {
        if id % STATUS_EVERY == 0 {
            add(
                &mut c.status,
                &orders.update(&key(id), &Record::new().with("status", "shipped"))?,
            );
        }
        if id % REROUTE_EVERY == 3 {
            let order = orders
                .get(&key(id))?
                .ok_or(Error::Lesson(format!("order {id} vanished")))?;
            let moved = orders.update(&key(id), &Record::new().with("warehouse", next_warehouse(&order)))?;
            add(&mut c.reroute, &moved);
        }
    }
    Ok(c)
}

/// The declared paths, each on its layout and by a filtering scan.
fn reads_at_launch(orders: &Table, items: &Table) -> Result<Vec<PathCost>> {
    let busiest = busiest_customer(orders)?;
    let day = Params::new()
        .eq("warehouse", WAREHOUSE)
        .between(DAY_ASKED, DAY_ASKED + DAY);
    let week_start = DAY_ASKED - 4 * DAY;
    let week = Params::new()
        .eq("warehouse", WAREHOUSE)
        .between(week_start, week_start + 7 * DAY);
    let order = Params::new().eq("order_id", 10_000);
    Ok(vec![
        measure(
            orders,
            &latest_orders(),
            &Params::new().eq("customer", busiest),
            format!("customer {busiest} (the busiest)"),
        )?,
        measure(items, &items_of_order(), &order, "order 10000".into())?,
        measure(
            orders,
            &shipped_from(),
            &day,
            format!("warehouse {WAREHOUSE}, 2024-03-15"),
        )?,
        measure(
            orders,
            &shipped_from(),
            &week,
            format!("warehouse {WAREHOUSE}, 2024-03-11 to 03-17"),
        )?,
        measure(orders, &order_by_id(), &order, "order 10000".into())?,
    ])
}

/// Stages `spec` and backfills it in batches; inside each batch's window
/// (after its read, before its copies) new orders arrive and orders of
/// that very batch change warehouse. Returns the backfill's progress and
/// the orders (inserted, re-routed) meanwhile.
fn backfill_while_writing(
    orders: &Table,
    items: &Table,
    spec: &LayoutSpec,
    rng: &mut StdRng,
    progress: &dyn Progress,
) -> Result<(BackfillProgress, (u64, u64))> {
    orders.stage_layout(spec)?;
    let options = BackfillOptions {
        batch_records: BACKFILL_BATCH,
    };
    let mut backfill = orders.backfill(&spec.name, options)?;
    progress.start("query-first: backfill", ORDERS as u64);
    let mut next_id = ORDERS;
    let mut batch = 0i64;
    let mut during = (0u64, 0u64);
    loop {
        let done = backfill.step_while(&mut || -> std::result::Result<(), TableError> {
            for _ in 0..INSERTS_PER_BATCH {
                next_id += 1;
                let placed = START + DAYS * DAY + (next_id - ORDERS) as u64 * HOUR;
                let (order, lines) = generate(rng, next_id, placed);
                place(orders, items, order, lines)?;
                during.0 += 1;
            }
            // Orders of the batch the backfill has just read and not yet
            // copied: it must skip them, or it would undo the move.
            for j in 0..REROUTES_PER_BATCH {
                let id = batch * BACKFILL_BATCH as i64 + 100 + 200 * j;
                if let Some(order) = orders.get(&key(id))? {
                    orders.update(&key(id), &Record::new().with("warehouse", next_warehouse(&order)))?;
                    during.1 += 1;
                }
            }
            Ok(())
        })?;
        batch += 1;
        progress.advance(BACKFILL_BATCH as u64);
        if done {
            break;
        }
    }
    progress.finish();
    Ok((backfill.progress().clone(), during))
}

/// Flushes every family and compacts each into one sorted run, so that the
/// reads measured next find the same files on every run.
fn settle(store: &Store) -> Result<()> {
    store.flush()?;
    for family in store.families() {
        store.compact(&family)?;
    }
    store.wait_for_background_work()?;
    Ok(())
}

/// The customer with the most orders (the first of them in id order).
fn busiest_customer(orders: &Table) -> Result<i64> {
    let mut best = (0u64, 0i64);
    for customer in 1..=CUSTOMERS {
        let path = AccessPath::new("all orders of a customer").equals("customer");
        let n = orders
            .query(&path, &Params::new().eq("customer", customer))?
            .records
            .len() as u64;
        if n > best.0 {
            best = (n, customer);
        }
    }
    Ok(best.1)
}

/// A path on the layout the table chooses, and by a filtering scan; the two
/// answers must be the same records in the same order.
fn measure(table: &Table, path: &AccessPath, params: &Params, asked: String) -> Result<PathCost> {
    let served: QueryResult = table.query(path, params)?;
    let scanned = table.filtering_scan(path, params)?;
    if served.records != scanned.records {
        return Err(Error::Lesson(format!(
            "{}: the layout {} returned {} records, the filtering scan {}",
            path.name,
            served.layout,
            served.records.len(),
            scanned.records.len()
        )));
    }
    Ok(PathCost {
        path: path.name.clone(),
        asked,
        layout: served.layout,
        requests: served.requests,
        // The table merges the traces of its requests into one; it counts
        // the requests itself.
        layout_cost: ReadFigures {
            requests: served.requests,
            ..ReadFigures::from(&served.trace)
        },
        scan_cost: ReadFigures::from(&scanned.trace),
        scanned: scanned.layout,
        returned: served.records.len() as u64,
    })
}

/// `1.00`.
fn two(x: f64) -> String {
    format!("{x:.2}")
}

impl QueryFirstReport {
    /// The lesson's tables: each path on its layout beside a filtering scan;
    /// what the layouts cost; the path added after launch; partitions with
    /// and without a time bucket; then the differences from the seeds.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut diffs = Differences::new();
        out.push_str("== query-first: a layout per read path, kept in step, against a filtering scan ==\n");
        out.push_str(&format!(
            "{} orders of {} customers from {WAREHOUSES} warehouses, placed January to June 2024, with {} line items,\n\
             in two query-first tables: `orders` (source of truth `orders`) and `line_items` (source of truth\n\
             `items_by_order`). Each layout is a column family, its key in the syntax of `cellar keys`\n\
             (partition | clustering); every write is one batch across its table's layouts, and an order\n\
             is placed with its line items in one batch across both tables.\n\n",
            thousands(self.orders),
            thousands(CUSTOMERS as u64),
            thousands(self.items)
        ));
        let mut g = Grid::new();
        g.left_align(1);
        for l in &self.layouts {
            let (name, key) = l.spec.split_once(": ").unwrap_or((&l.spec, ""));
            g.row([name.to_string(), key.to_string()]);
        }
        g.render(&mut out);

        out.push_str(
            "\nThe reads at launch, each compacted family read on its layout and by a filtering scan of the\n\
             source of truth (same records, checked). Lesson: what the seeds say, one contiguous slice per\n\
             read (001) that stops after the rows it returns (000). Sources: the memtables and table files\n\
             the layout's slices consulted, from their traces.\n\n",
        );
        let mut g = Grid::new();
        g.left_align(1);
        g.row([
            "",
            "",
            "slices",
            "",
            "",
            "entries",
            "examined",
            "",
            "data",
            "pages",
            "filtering",
            "scan",
            "scan /",
        ]);
        g.row([
            "path", "layout", "lesson", "cellar", "sources", "lesson", "cellar", "returned", "blocks", "touched",
            "entries", "blocks", "layout",
        ]);
        for p in self.paths.iter().chain([&self.after_launch]) {
            let name = p.path.clone();
            g.row([
                name.clone(),
                p.layout.clone(),
                printed::SLICES_PER_READ.to_string(),
                p.requests.to_string(),
                thousands(p.layout_cost.sources_visited),
                thousands(p.returned),
                thousands(p.layout_cost.entries_examined),
                thousands(p.returned),
                thousands(p.layout_cost.data_blocks),
                thousands(p.layout_cost.pages_touched),
                thousands(p.scan_cost.entries_examined),
                thousands(p.scan_cost.data_blocks),
                format!("{:.0}x", p.ratio()),
            ]);
            g.text(format!("{}; the scan reads `{}` whole", p.asked, p.scanned));
            diffs.check(
                &format!("slices, {name}"),
                &printed::SLICES_PER_READ.to_string(),
                &p.requests.to_string(),
                "The day bucket that bounds a warehouse's partition makes a week 7 partitions: the read is one \
                 slice in each (a fan-out bounded by the planner at 256 buckets).",
            );
            diffs.check(
                &format!("entries examined, {name}"),
                &thousands(p.returned),
                &thousands(p.layout_cost.entries_examined),
                "The slice stops at the limit, and the engine counts the entry after the last one returned: the \
                 merge had read it when the limit was reached.",
            );
        }
        g.render(&mut out);

        out.push('\n');
        let mut g = Grid::new();
        g.left_align(3);
        g.row(["what the layouts cost", "lesson", "cellar", ""]);
        g.row([
            "entries written per order insert".to_string(),
            two(printed::LAYOUTS_PER_ORDER),
            two(self.write_amplification()),
            "orders, orders_by_customer, orders_by_warehouse_day".to_string(),
        ]);
        g.row([
            "bytes written per order insert".to_string(),
            "-".to_string(),
            thousands(self.order_bytes / self.orders.max(1)),
            "row + column + value, all three layouts".to_string(),
        ]);
        g.row([
            "entries written per line item insert".to_string(),
            "-".to_string(),
            two(ratio(self.item_entries, self.items)),
            "items_by_order, the line items' source of truth".to_string(),
        ]);
        g.row([
            format!(
                "rows moved per re-route ({} orders change warehouse)",
                thousands(self.reroutes)
            ),
            two(printed::ROWS_MOVED_PER_REROUTE),
            two(ratio(self.reroute_moved, self.reroutes)),
            format!(
                "{} entries each: a put per layout and a tombstone at the old cell",
                two(ratio(self.reroute_entries, self.reroutes))
            ),
        ]);
        g.row([
            format!(
                "rows moved per status change ({}, in place)",
                thousands(self.status_updates)
            ),
            "-".to_string(),
            two(ratio(self.status_moved, self.status_updates)),
            format!("{} entries each", two(ratio(self.status_entries, self.status_updates))),
        ]);
        g.render(&mut out);
        diffs.check(
            "entries written per order insert",
            &two(printed::LAYOUTS_PER_ORDER),
            &two(self.write_amplification()),
            super::render::EXPECTED_SAME,
        );
        diffs.check(
            "rows moved per re-route",
            &two(printed::ROWS_MOVED_PER_REROUTE),
            &two(ratio(self.reroute_moved, self.reroutes)),
            super::render::EXPECTED_SAME,
        );

        out.push('\n');
        let mut g = Grid::new();
        g.row(["bytes stored per layout", "records", "table bytes", "per record"]);
        for l in &self.layouts {
            g.row([
                l.layout.clone(),
                thousands(l.family.live_entries),
                thousands(l.family.table_bytes),
                thousands(l.family.table_bytes / l.family.live_entries.max(1)),
            ]);
        }
        g.render(&mut out);

        out.push('\n');
        let b = &self.backfill;
        out.push_str(&format!("a read path added after launch: {}\n", self.after_launch_path));
        out.push_str("  before its layout existed the table refused it, layout by layout:\n");
        for r in &self.refusal {
            out.push_str(&format!("    {r}\n"));
        }
        out.push_str(&format!("  and proposed the layout then added: {}\n", self.added));
        out.push_str(&format!(
            "  backfill: {} batches of at most {}, {} records read from a snapshot of `orders`, {} copied, {} \
             skipped\n  (changed by a writer inside their batch); meanwhile {} orders were inserted and {} \
             re-routed, each writing\n  the new layout itself. It wrote {} entries ({} bytes); its reads (the \
             snapshot's scan, and a point\n  read of each record under the write lock) examined {} entries in {} \
             data blocks. The path's read is the last row above.\n",
            thousands(b.batches),
            thousands(BACKFILL_BATCH as u64),
            thousands(b.examined),
            thousands(b.copied),
            thousands(b.skipped),
            thousands(self.writes_during_backfill.0),
            thousands(self.writes_during_backfill.1),
            thousands(b.entries_written),
            thousands(b.bytes_written),
            thousands(b.read_entries_examined),
            thousands(b.read_data_blocks),
        ));

        out.push('\n');
        let mut g = Grid::new();
        g.left_align(5);
        g.row(["largest partition", "partitions", "records", "bytes", "", "key"]);
        for (shape, what) in [(&self.without_bucket, "no bucket"), (&self.with_bucket, "day bucket")] {
            g.row([
                format!("{} ({what})", shape.layout),
                thousands(shape.partitions),
                thousands(shape.largest_records),
                thousands(shape.largest_bytes),
                String::new(),
                to_string_binary(&shape.largest),
            ]);
        }
        g.render(&mut out);
        diffs.note(format!(
            "without a bucket a warehouse's partition holds all its shipments ({} records in the largest) and \
             grows for as long as the warehouse ships; the day bucket caps it at one day ({}), {:.0} times \
             smaller.",
            thousands(self.without_bucket.largest_records),
            thousands(self.with_bucket.largest_records),
            ratio(self.without_bucket.largest_records, self.with_bucket.largest_records)
        ));
        diffs.note(
            "the seed's three layouts for an order are orders_by_customer, items_by_order and \
             orders_by_warehouse_day; here line items are a table of their own (items_by_order is their source \
             of truth), and the order's third layout is its source of truth `orders`, keyed by id, which updates \
             read and backfills copy. An order and its line items are written in one batch across both tables.",
        );
        if let Some(p) = self.paths.first() {
            diffs.note(format!(
                "the filtering scan of `{}` examines every record ({}) to return {}: {:.0} times the layout's \
                 slice, and it grows with the table while the slice does not.",
                p.scanned,
                thousands(p.scan_cost.entries_examined),
                thousands(p.returned),
                p.ratio()
            ));
        }
        out.push('\n');
        for (table, records, ok) in &self.verified {
            out.push_str(&format!(
                "verify `{table}`: {} records, {}\n",
                thousands(*records),
                if *ok {
                    "every layout agrees with the source of truth"
                } else {
                    "LAYOUTS OUT OF STEP"
                }
            ));
        }
        out.push('\n');
        diffs.render(&mut out);
        diffs.render_notes(&mut out);
        out
    }
}

impl QueryFirstReport {
    /// The lesson's section of the `--report` page: the terminal's table,
    /// then each path's entries examined beside the filtering scan's, the
    /// bytes each layout stores, and the largest partition with and without
    /// the bucket, on one scale each.
    pub fn section(&self) -> Section {
        let mut s = Section::new(
            "query-first",
            "query-first: a layout per read path, kept in step, against a filtering scan",
        );
        s.preformatted(&self.render());
        s.subheading("Entries examined per read: its layout against a filtering scan");
        let groups: Vec<BarGroup> = self
            .paths
            .iter()
            .chain([&self.after_launch])
            .map(|p| BarGroup {
                label: format!("{}: {}", p.path, p.asked),
                bars: vec![
                    Bar {
                        label: p.layout.clone(),
                        value: p.layout_cost.entries_examined as f64,
                        printed: thousands(p.layout_cost.entries_examined),
                        colour: colour::SERIES[1],
                    },
                    Bar {
                        label: format!("filtering scan of {}", p.scanned),
                        value: p.scan_cost.entries_examined as f64,
                        printed: thousands(p.scan_cost.entries_examined),
                        colour: colour::SERIES[0],
                    },
                ],
            })
            .collect();
        s.figure(
            &chart::bars("query-first-reads", "entries examined", &groups),
            "Every bar is on the same scale: a layout's slice is a sliver beside the scan of the whole source \
             of truth, which grows with the table while the slice does not.",
        );
        s.subheading("What the copies cost: bytes stored per layout");
        let groups = [BarGroup {
            label: "after the final compaction".to_string(),
            bars: self
                .layouts
                .iter()
                .map(|l| Bar {
                    label: if l.source_of_truth {
                        format!("{} (source of truth)", l.layout)
                    } else {
                        l.layout.clone()
                    },
                    value: l.family.table_bytes as f64,
                    printed: format!("{} bytes", thousands(l.family.table_bytes)),
                    colour: colour::SERIES[if l.source_of_truth { 0 } else { 1 }],
                })
                .collect(),
        }];
        s.figure(
            &chart::bars("query-first-bytes", "table bytes", &groups),
            "Each copy stores about as many bytes again as its table's source of truth (blue): the storage a \
             layout per read path costs, on top of the entries every insert writes into each layout.",
        );
        s.subheading("The largest partition, with and without a time bucket");
        let groups: Vec<BarGroup> = [(&self.without_bucket, "no bucket"), (&self.with_bucket, "day bucket")]
            .into_iter()
            .map(|(shape, what)| BarGroup {
                label: format!("{} ({what})", shape.layout),
                bars: vec![Bar {
                    label: "records in the largest partition".to_string(),
                    value: shape.largest_records as f64,
                    printed: thousands(shape.largest_records),
                    colour: colour::SERIES[0],
                }],
            })
            .collect();
        s.figure(
            &chart::bars("query-first-partitions", "records", &groups),
            "A warehouse's partition without a bucket holds every shipment it ever made; the day bucket starts \
             a new one every day.",
        );
        s
    }
}

impl std::fmt::Display for QueryFirstReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}
