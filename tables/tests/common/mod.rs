//! The orders table of seed 001, shared by the tests.

#![allow(dead_code, reason = "each test file uses a different part of the fixture")]

use std::sync::Arc;

use cellar_engine::{Store, StoreOptions};
use cellar_tables::{AccessPath, LayoutSpec, Record, Schema, Table, TableOptions};

/// 2024-06-01 00:00:00 UTC.
pub const T0: u64 = 1_717_200_000_000;
pub const HOUR: u64 = 3_600_000;
pub const DAY: u64 = 24 * HOUR;

pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Orders with three layouts: the source of truth by id, by customer newest
/// first, and by warehouse and ship day.
pub fn orders_schema() -> Schema {
    Schema::new("orders")
        .int("order_id")
        .int("customer")
        .time("placed_at")
        .int("warehouse")
        .time("shipped_at")
        .text("status")
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

pub fn order(id: i64, customer: i64, placed: u64, warehouse: i64, shipped: u64, status: &str) -> Record {
    Record::new()
        .with("order_id", id)
        .with("customer", customer)
        .with("placed_at", placed as i64)
        .with("warehouse", warehouse)
        .with("shipped_at", shipped as i64)
        .with("status", status)
}

pub fn key(id: i64) -> Record {
    Record::new().with("order_id", id)
}

pub fn open_store(dir: &std::path::Path) -> Result<Arc<Store>> {
    Ok(Arc::new(Store::open(dir, StoreOptions::default())?))
}

/// A store in `dir` with the orders table, created or reopened.
pub fn orders_table(dir: &std::path::Path) -> Result<Table> {
    Ok(Table::open_or_create(
        open_store(dir)?,
        &orders_schema(),
        TableOptions::default(),
    )?)
}

pub fn latest_of_customer(limit: usize) -> AccessPath {
    AccessPath::new("latest orders of a customer")
        .equals("customer")
        .newest_first("placed_at")
        .limit(limit)
}

pub fn shipped_from_warehouse() -> AccessPath {
    AccessPath::new("orders shipped from a warehouse")
        .equals("warehouse")
        .oldest_first("shipped_at")
}

pub fn latest_shipments(limit: usize) -> AccessPath {
    AccessPath::new("latest shipments of a warehouse")
        .equals("warehouse")
        .newest_first("shipped_at")
        .limit(limit)
}

pub fn by_id() -> AccessPath {
    AccessPath::new("an order by id").equals("order_id")
}

pub fn ids(records: &[Record]) -> Vec<i64> {
    records.iter().filter_map(|r| r.int("order_id")).collect()
}
