//! README's query-first block, compiled: the lines between `// README begin`
//! and `// README end` are the README's block, which
//! [`cellar_testkit::readme::assert_rust_block`] checks line by line, so the
//! README cannot show a call the tables no longer have. The block leaves
//! out its setup (the store, the line items' table, a whole order), so it is
//! compiled here, not run; `tests/writes.rs` and the others run each call.

use std::error::Error;
use std::sync::Arc;

/// The README's block, as it stands there (hence no `rustfmt`), with what
/// it takes as given passed in.
#[rustfmt::skip]
#[expect(dead_code, reason = "compiled to check the README's names, not run: the block leaves out its setup")]
fn a_query_first_table(
    store: Arc<cellar_engine::Store>,
    line_items: cellar_tables::Table,
    order: cellar_tables::Record,
    item_1: cellar_tables::Record,
    item_2: cellar_tables::Record,
) -> Result<(), Box<dyn Error>> {
    // README begin
    use cellar_tables::{AccessPath, BackfillOptions, Batch, LayoutSpec, Params, Record, Schema, Table, TableOptions};

    let orders = Table::create(store.clone(), &Schema::new("orders")                 // store: Arc<Store>
        .int("order_id").int("customer").time("placed_at").int("warehouse").time("shipped_at")
        .primary_key(&["order_id"])
        .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
        .layout(LayoutSpec::new("orders_by_customer", "pad(customer,8) | revts(ms,19) pad(order_id,10)").time("placed_at"))
        .layout(LayoutSpec::new("orders_by_warehouse_day", "pad(warehouse,3) day(ts) | ts(ms) pad(order_id,10)").time("shipped_at")),
        TableOptions::default())?;
    orders.insert(&Record::new().with("order_id", 7).with("customer", 42) /* ...every field */)?;   // one batch, 3 layouts
    let moved = orders.update(&Record::new().with("order_id", 7), &Record::new().with("warehouse", 3))?.moved;
    let latest = AccessPath::new("latest orders").equals("customer").newest_first("placed_at").limit(20);
    let answer = orders.query(&latest, &Params::new().eq("customer", 42))?;          // .records, .layout, .trace
    orders.add_layout(&LayoutSpec::new("orders_by_warehouse", "pad(warehouse,4) | revts(ms,19) pad(order_id,10)")
        .time("shipped_at"), BackfillOptions::default(), &mut |p| eprintln!("{} copied", p.copied))?;
    assert!(orders.verify()?.is_consistent());                                       // every layout agrees with the source
    let mut batch = Batch::new();                                                    // an order and its items: one batch
    batch.insert(&orders, order).insert(&line_items, item_1).insert(&line_items, item_2);
    batch.write()?;
    orders.drop_layout("orders_by_warehouse")?;                                      // a copy layout no read needs now
    print!("{}{}", orders.cql_schema(), orders.hbase_schema(4)?);                    // the same design for Cassandra, HBase
    // README end
    let _ = (moved, answer);
    Ok(())
}

#[test]
fn the_readme_query_first_block_is_the_block_compiled_here() {
    cellar_testkit::readme::assert_rust_block(include_str!("readme_code.rs"));
}
