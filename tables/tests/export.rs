//! The design as Cassandra CQL and HBase shell statements.

mod common;

use common::*;

use cellar_tables::{LayoutSpec, Record};

#[test]
fn each_layout_becomes_a_cassandra_table_with_its_clustering_order() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    assert_eq!(
        table.cql_schema(),
        "-- table orders: one Cassandra table per layout
-- the source of truth
CREATE TABLE orders (
    order_id bigint,
    customer bigint,
    placed_at timestamp,
    warehouse bigint,
    shipped_at timestamp,
    status text,
    PRIMARY KEY ((order_id))
);
CREATE TABLE orders_by_customer (
    customer bigint,
    placed_at timestamp,
    order_id bigint,
    warehouse bigint,
    shipped_at timestamp,
    status text,
    PRIMARY KEY ((customer), placed_at, order_id)
) WITH CLUSTERING ORDER BY (placed_at DESC, order_id ASC);
-- day: the day bucket (YYYYMMDD) of shipped_at, computed by the writer
CREATE TABLE orders_by_warehouse_day (
    warehouse bigint,
    day int,
    shipped_at timestamp,
    order_id bigint,
    customer bigint,
    placed_at timestamp,
    status text,
    PRIMARY KEY ((warehouse, day), shipped_at, order_id)
) WITH CLUSTERING ORDER BY (shipped_at ASC, order_id ASC);
"
    );
    Ok(())
}

#[test]
fn an_insert_and_a_key_changing_update_become_logged_batches() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    let placed = order(7, 42, T0, 3, T0 + DAY, "placed");
    assert_eq!(
        table.cql_insert(&placed)?,
        "BEGIN BATCH
  INSERT INTO orders (order_id, customer, placed_at, warehouse, shipped_at, status) VALUES (7, 42, 1717200000000, 3, 1717286400000, 'placed');
  INSERT INTO orders_by_customer (customer, placed_at, order_id, warehouse, shipped_at, status) VALUES (42, 1717200000000, 7, 3, 1717286400000, 'placed');
  INSERT INTO orders_by_warehouse_day (warehouse, day, shipped_at, order_id, customer, placed_at, status) VALUES (3, 20240602, 1717286400000, 7, 42, 1717200000000, 'placed');
APPLY BATCH;
"
    );
    table.insert(&placed)?;
    assert_eq!(
        table.cql_update(&key(7), &Record::new().with("warehouse", 5))?,
        "BEGIN BATCH
  UPDATE orders SET warehouse = 5 WHERE order_id = 7;
  UPDATE orders_by_customer SET warehouse = 5 WHERE customer = 42 AND placed_at = 1717200000000 AND order_id = 7;
  DELETE FROM orders_by_warehouse_day WHERE warehouse = 3 AND day = 20240602 AND shipped_at = 1717286400000 AND order_id = 7;
  INSERT INTO orders_by_warehouse_day (warehouse, day, shipped_at, order_id, customer, placed_at, status) VALUES (5, 20240602, 1717286400000, 7, 42, 1717200000000, 'placed');
APPLY BATCH;
"
    );
    Ok(())
}

#[test]
fn hbase_gets_a_table_per_layout_split_where_the_data_divides_evenly() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    for id in 0..40i64 {
        table.insert(&order(id, id % 4, T0 + id as u64 * HOUR, id % 2, T0 + DAY, "placed"))?;
    }
    let shell = table.hbase_schema(4)?;
    let lines: Vec<&str> = shell.lines().collect();
    assert_eq!(
        lines,
        [
            "# table orders: one HBase table per layout, family f",
            r#"create 'orders', {NAME => 'f', VERSIONS => 1}, SPLITS => ["0000000010", "0000000020", "0000000030"]"#,
            r#"create 'orders_by_customer', {NAME => 'f', VERSIONS => 1}, SPLITS => ["00000001", "00000002", "00000003"]"#,
            r#"create 'orders_by_warehouse_day', {NAME => 'f', VERSIONS => 1}, SPLITS => ["00120240602"]"#,
        ]
    );
    let update = table.hbase_update(&key(3), &Record::new().with("warehouse", 0))?;
    let lines: Vec<&str> = update.lines().collect();
    assert_eq!(lines.len(), 5, "{update}");
    assert!(lines[3].starts_with(r#"delete 'orders_by_warehouse_day', "00120240602", "f:1717286400000"#));
    assert!(lines[4].starts_with(r#"put 'orders_by_warehouse_day', "00020240602", "f:1717286400000"#));
    Ok(())
}

/// The HBase shell is JRuby, and a double-quoted Ruby string runs what
/// follows a `#` in `#{..}`, and reads `#@x` and `#$x` as variables: a
/// record's text, printed there as it is, would be code run by whoever
/// pastes the statements, and the bytes written would not be the record's.
/// Every `#` inside a string is written `\x23`.
#[test]
fn hbase_statements_write_a_hash_sign_as_an_escape_so_the_shell_runs_no_text() -> Result {
    let dir = tempfile::tempdir()?;
    let schema = cellar_tables::Schema::new("notes")
        .int("id")
        .text("body")
        .primary_key(&["id"])
        .source_of_truth(LayoutSpec::new("notes", r##"const("n#") pad(id,4)"##))
        .layout(LayoutSpec::new("notes_by_body", r#"field(body) "\x00" | pad(id,4)"#));
    let table = cellar_tables::Table::create(open_store(dir.path())?, &schema, cellar_tables::TableOptions::default())?;
    let hostile = "#{`touch pwned`} #@x #$y";
    let record = Record::new().with("id", 1).with("body", hostile);
    let mut shell = table.hbase_insert(&record)?;
    table.insert(&record)?;
    shell.push_str(&table.hbase_update(&key_of(1), &Record::new().with("body", "plain"))?);
    shell.push_str(&table.hbase_schema(4)?);
    let strings: Vec<&str> = shell.split('"').skip(1).step_by(2).collect();
    assert!(strings.len() >= 6, "{shell}");
    for s in &strings {
        assert!(!s.contains('#'), "a bare # inside {s:?}");
    }
    assert!(
        shell.contains(r#"put 'notes_by_body', "\x23{`touch pwned`} \x23@x \x23$y", "f:\x000001""#),
        "{shell}"
    );
    Ok(())
}

fn key_of(id: i64) -> Record {
    Record::new().with("id", id)
}

/// Asked for more regions than there are rows, the split points are one per
/// row boundary, at once (a huge count made the loop that places the cuts
/// count to it, and `total × next` overflow).
#[test]
fn hbase_schema_for_more_regions_than_rows_cuts_between_every_row() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    for id in 0..5i64 {
        table.insert(&order(id, id, T0 + id as u64 * HOUR, 1, T0 + DAY, "placed"))?;
    }
    for regions in [5, 6, 1_000_000, usize::MAX] {
        let shell = table.hbase_schema(regions)?;
        assert!(
            shell.contains(r#"create 'orders', {NAME => 'f', VERSIONS => 1}, SPLITS => ["0000000001", "0000000002", "0000000003", "0000000004"]"#),
            "{regions}: {shell}"
        );
    }
    Ok(())
}

/// A CQL `int` is 32 bits: an hour bucket (`YYYYMMDDHH`) passes it from the
/// year 2148, and a salt of more than 2^31 buckets from bucket 2^31. Those
/// columns are `bigint`; a day, a month and a small salt stay `int`.
#[test]
fn computed_key_columns_that_pass_32_bits_are_bigint_in_cql() -> Result {
    let dir = tempfile::tempdir()?;
    let schema = cellar_tables::Schema::new("events")
        .int("id")
        .time("at")
        .primary_key(&["id"])
        .source_of_truth(LayoutSpec::new("events", "salt(id,4294967295) pad(id,10)"))
        .layout(LayoutSpec::new("events_by_hour", "hour(ts) | ts(ms) pad(id,10)").time("at"))
        .layout(LayoutSpec::new("events_by_day", "salt(id,16) day(ts) | ts(ms) pad(id,10)").time("at"));
    let table = cellar_tables::Table::create(open_store(dir.path())?, &schema, cellar_tables::TableOptions::default())?;
    let cql = table.cql_schema();
    for column in ["salt bigint", "hour bigint", "day int"] {
        assert!(cql.contains(column), "{column}: {cql}");
    }
    assert_eq!(cql.matches("salt int").count(), 1, "{cql}");
    // 2200-01-01 00:00 UTC.
    let insert = table.cql_insert(&Record::new().with("id", 7).with("at", 7_258_118_400_000i64))?;
    assert!(
        insert.contains("hour, at, id) VALUES (2200010100, 7258118400000, 7)"),
        "{insert}"
    );
    Ok(())
}
