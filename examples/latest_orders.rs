//! "The 20 latest orders for a customer", turned into a row key and read.
//!
//! The read is taken apart as the seed on key design does it: the customer
//! is an equality match, so it leads the key; "latest first" orders by time,
//! descending, so the time comes next, written as `MAX_TIME - order_time` so
//! that a newer order sorts first; the order id makes the key unique, so it
//! goes last; 20 is the limit, where the scan stops. Every part is padded to
//! a fixed width, so byte order is the order wanted:
//!
//! ```text
//! pad(customer_id, 12) # pad(MAX_TIME - order_time, 20) # order_id
//! ```
//!
//! The example writes 3,000 orders of 100 customers twice: keyed that way,
//! and keyed by order id alone (an entity-first layout), then asks both for
//! customer 42's 20 latest orders. The first is a prefix scan that stops
//! after 20 rows; the second has to read every order and keep the customer's.
//! Both answers are checked against the orders as written.
//!
//! Run with `cargo run --release --example latest_orders`.

use cellar::{RowRange, Store, StoreOptions, WriteBatch};

/// The largest time the key can hold: `MAX_TIME - t` falls as `t` rises.
const MAX_TIME: u64 = i64::MAX as u64;
const CUSTOMERS: u64 = 100;
const ORDERS: u64 = 3_000;
/// 2024-01-01 00:00 UTC, in milliseconds; an order every minute after it.
const START_MS: u64 = 1_704_067_200_000;

/// One order: its id, customer and time.
struct Order {
    id: u64,
    customer: u64,
    time_ms: u64,
}

fn order(id: u64) -> Order {
    Order {
        id,
        customer: 1 + (id * 37) % CUSTOMERS,
        time_ms: START_MS + id * 60_000,
    }
}

/// The seed's `orderRowKey`: equality, then time newest first, then the id.
fn order_row_key(o: &Order) -> String {
    format!("{:012}#{:020}#{}", o.customer, MAX_TIME - o.time_ms, o.id)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        dir.path(),
        StoreOptions::default()
            .family("orders_by_customer")
            .family("orders_by_id"),
    )?;
    let mut batch = WriteBatch::new();
    for id in 1..=ORDERS {
        let o = order(id);
        let value = format!("customer={};time={}", o.customer, o.time_ms);
        batch.put_at("orders_by_customer", order_row_key(&o), "order", o.time_ms, &value);
        batch.put_at("orders_by_id", format!("{id:010}"), "order", o.time_ms, &value);
    }
    store.write(&batch)?;
    store.flush()?;

    // What the answer must be: customer 42's orders, newest first, 20 of them.
    let mut expected: Vec<Order> = (1..=ORDERS).map(order).filter(|o| o.customer == 42).collect();
    expected.sort_by_key(|o| std::cmp::Reverse(o.time_ms));
    expected.truncate(20);
    let expected: Vec<String> = expected.iter().map(order_row_key).collect();

    // The key serves the read: scan the prefix, stop after 20 rows.
    let prefix = format!("{:012}#", 42);
    let (rows, trace) = store.scan_traced("orders_by_customer", &RowRange::prefix(&prefix).limit(20))?;
    let got: Vec<String> = rows
        .iter()
        .map(|r| String::from_utf8_lossy(&r.key).into_owned())
        .collect();
    if got != expected {
        return Err(format!("the prefix scan returned {got:?}, expected {expected:?}").into());
    }
    println!("scan(prefix = {prefix:?}, limit = 20):");
    for key in got.iter().take(3) {
        println!("    {key}");
    }
    println!("    ... {} rows, newest first", got.len());
    println!(
        "  {} entries examined for {} returned, {} data blocks",
        trace.entries_examined(),
        trace.entries_returned,
        trace.data_blocks()
    );

    // The entity-first layout cannot narrow the read: every order is read,
    // and the customer's are kept, sorted and cut to 20 afterwards.
    let (rows, trace) = store.scan_traced("orders_by_id", &RowRange::all())?;
    let mut kept: Vec<(u64, String)> = Vec::new();
    for row in &rows {
        let id: u64 = String::from_utf8_lossy(&row.key).parse()?;
        let o = order(id);
        if o.customer == 42 {
            kept.push((o.time_ms, order_row_key(&o)));
        }
    }
    kept.sort_by_key(|k| std::cmp::Reverse(k.0));
    let filtered: Vec<String> = kept.into_iter().take(20).map(|(_, k)| k).collect();
    if filtered != expected {
        return Err("the filtering scan disagrees with the orders written".into());
    }
    println!("a filtering scan of orders_by_id, for the same 20:");
    println!(
        "  {} entries examined for {} rows returned, {} data blocks",
        trace.entries_examined(),
        rows.len(),
        trace.data_blocks()
    );
    Ok(())
}
