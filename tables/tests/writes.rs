//! Writes: every layout changed in one batch; a record moves where a key
//! field changed; the catalog; verify's findings; refused input.

mod common;

use common::*;

use cellar_tables::{Error, LayoutSpec, Params, Record, Schema, Table, TableOptions};

#[test]
fn insert_writes_the_record_into_every_layout() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    let report = table.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    assert_eq!(report.entries, 3, "one cell per layout");
    assert!(report.moved.is_empty());
    assert_eq!(table.get(&key(7))?, Some(order(7, 42, T0, 3, T0 + DAY, "placed")));
    let counts = table.write_counts();
    assert_eq!((counts.inserts, counts.entries), (1, 3));
    assert_eq!(counts.by_layout["orders_by_warehouse_day"].puts, 1);
    let verify = table.verify()?;
    assert!(verify.is_consistent(), "{verify}");
    assert_eq!(verify.records, 1);
    assert_eq!(verify.layouts.iter().map(|l| l.cells).collect::<Vec<_>>(), [1, 1, 1]);
    Ok(())
}

#[test]
fn changing_a_key_field_moves_the_record_only_in_the_layouts_that_read_it() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    table.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;

    let rerouted = table.update(&key(7), &Record::new().with("warehouse", 5))?;
    assert_eq!(rerouted.moved, ["orders_by_warehouse_day"]);
    assert_eq!(rerouted.entries, 4, "3 puts and the tombstone at the old cell");

    let status = table.update(&key(7), &Record::new().with("status", "shipped"))?;
    assert!(status.moved.is_empty(), "status is in no key: rewritten in place");
    assert_eq!(status.entries, 3);

    let later = table.update(
        &key(7),
        &Record::new()
            .with("customer", 9)
            .with("shipped_at", (T0 + 2 * DAY) as i64),
    )?;
    assert_eq!(later.moved, ["orders_by_customer", "orders_by_warehouse_day"]);
    assert_eq!(table.write_counts().rows_moved, 3);

    let day = |d: u64| {
        Params::new()
            .eq("warehouse", 5)
            .between(T0 + d * DAY, T0 + (d + 1) * DAY)
    };
    assert_eq!(
        ids(&table.query(&shipped_from_warehouse(), &day(1))?.records),
        Vec::<i64>::new()
    );
    let found = table.query(&shipped_from_warehouse(), &day(2))?;
    assert_eq!(ids(&found.records), [7]);
    assert_eq!(
        found.records[0].get("status"),
        Some(&cellar_tables::Value::Text("shipped".into()))
    );
    assert!(table
        .query(&latest_of_customer(5), &Params::new().eq("customer", 42))?
        .records
        .is_empty());
    let verify = table.verify()?;
    assert!(verify.is_consistent(), "{verify}");
    assert_eq!(verify.layouts.iter().map(|l| l.cells).collect::<Vec<_>>(), [1, 1, 1]);
    Ok(())
}

#[test]
fn delete_removes_every_copy_and_a_missing_record_is_no_change() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    table.insert(&order(1, 42, T0, 3, T0 + DAY, "placed"))?;
    table.insert(&order(2, 42, T0 + HOUR, 3, T0 + DAY, "placed"))?;
    let report = table.delete(&key(1))?;
    assert_eq!(report.map(|r| r.entries), Some(3));
    assert_eq!(table.delete(&key(1))?, None);
    assert_eq!(table.get(&key(1))?, None);
    assert_eq!(
        ids(&table
            .query(&latest_of_customer(5), &Params::new().eq("customer", 42))?
            .records),
        [2]
    );
    // A deleted key can be inserted again, even within the same millisecond.
    table.insert(&order(1, 8, T0, 4, T0 + DAY, "placed"))?;
    assert_eq!(
        ids(&table
            .query(&latest_of_customer(5), &Params::new().eq("customer", 8))?
            .records),
        [1]
    );
    assert!(table.verify()?.is_consistent());
    Ok(())
}

#[test]
fn inserting_an_existing_key_updating_a_missing_one_and_changing_a_primary_key_are_refused() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    table.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    let err = table
        .insert(&order(7, 1, T0, 1, T0, "placed"))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("table orders already holds order_id=7: use update to change it")
    );
    assert!(matches!(
        table.update(&key(8), &Record::new().with("status", "x")),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        table.update(&key(7), &Record::new().with("order_id", 9)),
        Err(Error::PrimaryKeyChange { .. })
    ));
    let short = table
        .insert(&Record::new().with("order_id", 9))
        .err()
        .map(|e| e.to_string());
    assert_eq!(short.as_deref(), Some("table orders: the record has no customer"));
    let typed = table
        .insert(&order(9, 1, T0, 1, T0, "placed").with("warehouse", "three"))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        typed.as_deref(),
        Some("table orders: field warehouse is int, not \"three\"")
    );
    let negative = table
        .insert(&order(9, 1, T0, 1, T0, "placed").with("customer", -1))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        negative.as_deref(),
        Some("key: cannot encode -1 as Padded(8): negative numbers cannot be zero-padded")
    );
    // Nothing refused was written.
    let verify = table.verify()?;
    assert!(verify.is_consistent());
    assert_eq!(verify.records, 1);
    Ok(())
}

#[test]
fn a_table_reopens_from_its_catalog_and_cannot_be_opened_twice() -> Result {
    let dir = tempfile::tempdir()?;
    let store = open_store(dir.path())?;
    let table = Table::create(store.clone(), &orders_schema(), TableOptions::default())?;
    table.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    assert!(matches!(
        Table::open(store.clone(), "orders", TableOptions::default()),
        Err(Error::AlreadyOpen(_))
    ));
    let definition = table.definition();
    drop(table);
    drop(store);

    let store = open_store(dir.path())?;
    assert_eq!(cellar_tables::tables(&store)?, ["orders"]);
    let table = Table::open(store.clone(), "orders", TableOptions::default())?;
    assert_eq!(*table.definition(), *definition);
    assert_eq!(table.get(&key(7))?.and_then(|r| r.int("customer")), Some(42));
    assert!(matches!(
        Table::open(store.clone(), "invoices", TableOptions::default()),
        Err(Error::UnknownTable(_))
    ));
    let other = orders_schema().text("note");
    drop(table);
    let err = Table::open_or_create(store, &other, TableOptions::default())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("table orders: the stored table has other fields or another primary key")
    );
    Ok(())
}

/// A layout whose partition key is its whole key (`|` after the last part)
/// keeps every line of an order in one row with an empty column. The catalog
/// stores the key as text; read back, it must cut the key in the same place,
/// or the reopened table looks for its records in other cells.
#[test]
fn a_layout_whose_partition_is_its_whole_key_reopens_with_the_same_cut() -> Result {
    let dir = tempfile::tempdir()?;
    let schema = Schema::new("items")
        .int("order_id")
        .int("line")
        .int("sku")
        .primary_key(&["order_id", "line"])
        .source_of_truth(LayoutSpec::new("items", "pad(order_id,10) pad(line,3) |"));
    let item = Record::new().with("order_id", 7).with("line", 1).with("sku", 300);
    let item_key = Record::new().with("order_id", 7).with("line", 1);
    let definition = {
        let table = Table::create(open_store(dir.path())?, &schema, TableOptions::default())?;
        table.insert(&item)?;
        table.definition()
    };
    let table = Table::open(open_store(dir.path())?, "items", TableOptions::default())?;
    assert_eq!(*table.definition(), *definition);
    assert_eq!(table.get(&item_key)?, Some(item.clone()));
    assert!(matches!(table.insert(&item), Err(Error::Exists { .. })));
    Ok(())
}

#[test]
fn verify_finds_a_copy_left_behind_a_missing_copy_and_a_stale_one() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    for id in 1..=3 {
        table.insert(&order(id, 42, T0 + id as u64, 3, T0 + DAY, "placed"))?;
    }
    let store = table.store().clone();
    let definition = table.definition();
    let schema = &definition.schema;
    let by_customer = definition.layout("orders_by_customer")?;
    let by_day = definition.layout("orders_by_warehouse_day")?;
    // What a hand-kept copy gets wrong: the old cell of a move left behind,
    // a copy never written, a copy not updated.
    let moved_away = by_day.address(schema, &order(1, 42, T0 + 1, 9, T0 + DAY, "placed"))?;
    store.put("orders_by_warehouse_day", &moved_away.row, &moved_away.column, "stray")?;
    let at = by_customer.address(schema, &order(2, 42, T0 + 2, 3, T0 + DAY, "placed"))?;
    store.delete("orders_by_customer", &at.row, &at.column)?;
    let at = by_day.address(schema, &order(3, 42, T0 + 3, 3, T0 + DAY, "placed"))?;
    store.put("orders_by_warehouse_day", &at.row, &at.column, "old")?;

    let verify = table.verify()?;
    assert!(!verify.is_consistent());
    let found: Vec<(u64, u64, u64)> = verify
        .layouts
        .iter()
        .map(|l| (l.missing, l.unexpected, l.wrong))
        .collect();
    assert_eq!(found, [(0, 0, 0), (1, 0, 0), (0, 1, 1)]);
    assert_eq!(verify.layouts[1].examples.len(), 1);
    Ok(())
}

#[test]
fn a_stored_record_that_does_not_decode_is_corruption_naming_its_family() -> Result {
    let dir = tempfile::tempdir()?;
    let table = orders_table(dir.path())?;
    table.insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    table.store().put("orders", "0000000007", "", [1u8, 2, 3])?;
    let err = table.get(&key(7)).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("corrupt record: field order_id is cut short in family orders, row 0000000007")
    );
    let verify = table.verify()?;
    assert_eq!(verify.layouts[0].wrong, 1);
    Ok(())
}

#[test]
fn declarations_that_cannot_work_are_refused_with_the_reason() {
    let base = || {
        Schema::new("orders")
            .int("order_id")
            .int("customer")
            .time("placed_at")
            .text("status")
            .primary_key(&["order_id"])
            .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
    };
    let refused = |schema: Schema| -> String {
        let dir = tempfile::tempdir().expect("temporary folder");
        let store = open_store(dir.path()).expect("store");
        match Table::create(store, &schema, TableOptions::default()) {
            Ok(_) => "created".into(),
            Err(e) => e.to_string(),
        }
    };
    assert_eq!(
        refused(base().layout(LayoutSpec::new("by_customer", "pad(customer,8)"))),
        "table orders: layout by_customer: the key does not name order_id, so two records could share a cell: \
         every primary-key field must be a part of every layout's key"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("by_status", "field(status) pad(order_id,10)"))),
        "table orders: layout by_status: field(status) is text of any length: follow it with a separator such \
         as \"#\", or the end of one value could be read as the start of the next"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("spread", "rr(4) pad(order_id,10)"))),
        "table orders: layout spread: a round-robin salt cannot be computed from the record, so an update \
         could not find the row to move: salt by a field, salt(f,N)"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("by_time", "revts(ms,19) pad(order_id,10)"))),
        "table orders: layout by_time: revts(ms,19) needs the layout's time field: LayoutSpec::time(\"field\")"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("by_time", "revts(ms,19) pad(order_id,10)").time("customer"))),
        "table orders: layout by_time: the time field customer is not a time field"
    );
    assert_eq!(
        refused(base().source_of_truth(LayoutSpec::new("orders", "pad(customer,8) pad(order_id,10)"))),
        "table orders: layout orders: pad(customer,8): the source of truth is keyed by the primary key alone, \
         so that a key finds its record"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("orders", "pad(order_id,12)"))),
        "table orders: two layouts are named orders"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("by_status", "pad(status,4) pad(order_id,10)"))),
        "table orders: layout by_status: pad(status,4): status is text, and this encoding is for numbers"
    );
    assert_eq!(
        refused(base().primary_key(&["id"])),
        "table orders: primary key field id is not a field"
    );
    assert_eq!(
        refused(base().layout(LayoutSpec::new("table_catalog", "pad(order_id,12)"))),
        "table orders: layout table_catalog: table_catalog is the family of the table catalog"
    );
    // A field the table does not have, said in the table's terms (it was
    // "the orders workload has ... and ts"); `ts` is the key syntax's name
    // for the time field, not a field, and was accepted: every insert then
    // failed with "the record has no ts".
    for (key, part, field) in [
        ("pad(cust,8) | pad(order_id,10)", "pad(cust,8)", "cust"),
        ("salt(cust,4) pad(order_id,10)", "salt(cust,4)", "cust"),
        ("pad(ts,13) pad(order_id,10)", "pad(ts,13)", "ts"),
        ("hash(ts,2) pad(order_id,10)", "hash(ts,2)", "ts"),
    ] {
        assert_eq!(
            refused(base().layout(LayoutSpec::new("by_x", key))),
            format!(
                "table orders: layout by_x: {part} reads {field}, which is not a field of the table \
                 (order_id, customer, placed_at, status)"
            ),
            "{key}"
        );
    }
}

#[test]
fn a_text_value_holding_its_separator_is_refused() -> Result {
    let dir = tempfile::tempdir()?;
    let schema = Schema::new("notes")
        .int("id")
        .text("author")
        .primary_key(&["id"])
        .source_of_truth(LayoutSpec::new("notes", "pad(id,6)"))
        .layout(LayoutSpec::new("notes_by_author", r##"field(author) "#" | pad(id,6)"##));
    let table = Table::create(open_store(dir.path())?, &schema, TableOptions::default())?;
    table.insert(&Record::new().with("id", 1).with("author", "ada"))?;
    let err = table
        .insert(&Record::new().with("id", 2).with("author", "a#b"))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("table notes: author = \"a#b\" contains '#', the separator after it in layout notes_by_author: the key could not be read back")
    );
    assert!(table.verify()?.is_consistent());
    Ok(())
}

/// Each layout is a family of its own: a table may not put a layout in a
/// family another table keeps one of its layouts in, even while that family
/// is still empty (the two tables' records would mix: an insert into one
/// refused because the other holds the key, verify finding cells no record
/// explains).
#[test]
fn a_layout_cannot_take_a_family_that_another_tables_layout_lives_in() -> Result {
    let dir = tempfile::tempdir()?;
    let store = open_store(dir.path())?;
    let orders = Table::create(store.clone(), &orders_schema(), TableOptions::default())?;
    let invoices = |copy: &str| {
        Schema::new("invoices")
            .int("invoice_id")
            .int("customer")
            .primary_key(&["invoice_id"])
            .source_of_truth(LayoutSpec::new("invoices", "pad(invoice_id,10)"))
            .layout(LayoutSpec::new(copy, "pad(customer,8) | pad(invoice_id,10)"))
    };
    for taken in ["orders", "orders_by_customer"] {
        let refused = Table::create(store.clone(), &invoices(taken), TableOptions::default())
            .err()
            .map(|e| e.to_string());
        assert!(
            refused
                .as_deref()
                .is_some_and(|m| m.contains(taken) && m.contains("table orders")),
            "{taken}: {refused:?}"
        );
    }
    let invoices = Table::create(
        store.clone(),
        &invoices("invoices_by_customer"),
        TableOptions::default(),
    )?;
    let refused = invoices
        .stage_layout(&LayoutSpec::new(
            "orders_by_warehouse_day",
            "pad(customer,8) | pad(invoice_id,10)",
        ))
        .err()
        .map(|e| e.to_string());
    assert!(
        refused.as_deref().is_some_and(|m| m.contains("table orders")),
        "{refused:?}"
    );
    orders.insert(&order(1, 42, T0, 3, T0 + DAY, "placed"))?;
    invoices.insert(&Record::new().with("invoice_id", 1).with("customer", 42))?;
    assert!(orders.verify()?.is_consistent());
    assert!(invoices.verify()?.is_consistent());
    Ok(())
}

/// A table written at a fixed time that is older than the cells it holds
/// (written by the store's clock, or at a later fixed time) would write
/// tombstones and puts that the older-timestamped rule hides: a delete that
/// deletes nothing, a move that leaves the old copy behind. The write is
/// refused, and nothing is written; at the record's own time or later it is
/// accepted.
#[test]
fn a_write_at_a_fixed_time_older_than_the_record_is_refused_not_hidden() -> Result {
    let dir = tempfile::tempdir()?;
    Table::create(
        open_store(dir.path())?,
        &orders_schema(),
        TableOptions::default().fixed_time(T0),
    )?
    .insert(&order(7, 42, T0, 3, T0 + DAY, "placed"))?;
    let past = TableOptions::default().fixed_time(T0 - 1);
    let table = Table::open(open_store(dir.path())?, "orders", past)?;
    let moved = table.update(&key(7), &Record::new().with("customer", 43));
    assert!(matches!(moved, Err(Error::Record { .. })), "{moved:?}");
    let deleted = table.delete(&key(7));
    assert!(matches!(deleted, Err(Error::Record { .. })), "{deleted:?}");
    assert!(table.verify()?.is_consistent(), "{}", table.verify()?);
    assert_eq!(table.get(&key(7))?.and_then(|r| r.int("customer")), Some(42));
    drop(table);

    let table = Table::open(
        open_store(dir.path())?,
        "orders",
        TableOptions::default().fixed_time(T0),
    )?;
    table.update(&key(7), &Record::new().with("customer", 43))?;
    assert!(table.verify()?.is_consistent(), "{}", table.verify()?);
    assert!(table.delete(&key(7))?.is_some());
    assert_eq!(table.get(&key(7))?, None);
    assert!(table.verify()?.is_consistent(), "{}", table.verify()?);
    Ok(())
}

/// The same rule for the catalog: a table whose definition was stored by
/// the store's clock, opened with an older fixed time, must not change its
/// definition at that time (a staged layout the catalog would not show after
/// a reopen, a dropped layout coming back without its family). The change is
/// refused and the stored definition stays the one in memory.
#[test]
fn a_definition_change_at_a_fixed_time_older_than_the_catalog_is_refused() -> Result {
    let dir = tempfile::tempdir()?;
    Table::create(open_store(dir.path())?, &orders_schema(), TableOptions::default())?.insert(&order(
        7,
        42,
        T0,
        3,
        T0 + DAY,
        "placed",
    ))?;
    let by_status = LayoutSpec::new("orders_by_status", r##"field(status) "#" | pad(order_id,10)"##);
    let before = {
        let table = Table::open(
            open_store(dir.path())?,
            "orders",
            TableOptions::default().fixed_time(T0),
        )?;
        let staged = table.stage_layout(&by_status);
        assert!(matches!(staged, Err(Error::Schema { .. })), "{staged:?}");
        let dropped = table.drop_layout("orders_by_customer");
        assert!(matches!(dropped, Err(Error::Schema { .. })), "{dropped:?}");
        table.definition()
    };
    let table = Table::open(open_store(dir.path())?, "orders", TableOptions::default())?;
    assert_eq!(*table.definition(), *before);
    assert!(table.verify()?.is_consistent());
    // By the clock, the change is made and kept.
    table.add_layout(&by_status, cellar_tables::BackfillOptions::default(), &mut |_| {})?;
    let after = table.definition();
    drop(table);
    let table = Table::open(open_store(dir.path())?, "orders", TableOptions::default())?;
    assert_eq!(*table.definition(), *after);
    Ok(())
}
