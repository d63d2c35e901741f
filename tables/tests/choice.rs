//! The planner's choice: each path goes to the layout that serves it as a
//! slice or a bounded fan-out over time buckets; a path no layout serves is
//! refused with a layout that would serve it.

mod common;

use common::*;

use cellar_keys::planner::PlanKind;
use cellar_tables::{AccessPath, BackfillOptions, Error, LayoutSpec, Params, Planned, QueryOptions, Record, Table};

/// 40 orders: customer `id % 4`, placed an hour apart from T0, warehouse
/// `id % 3`, shipped a day after they were placed.
fn loaded(dir: &std::path::Path) -> Result<Table> {
    let table = orders_table(dir)?;
    for id in 0..40i64 {
        let placed = T0 + id as u64 * HOUR;
        table.insert(&order(id, id % 4, placed, id % 3, placed + DAY, "placed"))?;
    }
    Ok(table)
}

fn served(table: &Table, path: &AccessPath, params: &Params) -> Result<Box<cellar_tables::Choice>> {
    match table.plan(path, params)? {
        Planned::Served(choice) => Ok(choice),
        Planned::Unserved { reasons, .. } => Err(format!("unserved: {reasons:?}").into()),
    }
}

#[test]
fn each_path_goes_to_the_layout_whose_key_makes_it_a_slice() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;

    let latest = served(&table, &latest_of_customer(5), &Params::new().eq("customer", 1))?;
    assert_eq!(latest.layout, "orders_by_customer");
    assert_eq!(latest.plan.kind, PlanKind::RangeScan);
    assert!(latest.exact && latest.ordered);
    assert_eq!(latest.requests.len(), 1);
    assert_eq!(latest.requests[0].row, b"00000001");
    assert_eq!(
        latest.requests[0].columns.limit,
        Some(5),
        "the limit is pushed into the slice"
    );

    let one = served(&table, &by_id(), &Params::new().eq("order_id", 17))?;
    assert_eq!((one.layout.as_str(), one.plan.kind), ("orders", PlanKind::PointGet));

    let day = Params::new().eq("warehouse", 2).between(T0 + DAY, T0 + 2 * DAY);
    let shipped = served(&table, &shipped_from_warehouse(), &day)?;
    assert_eq!(shipped.layout, "orders_by_warehouse_day");
    assert_eq!(shipped.requests.len(), 1);
    assert_eq!(shipped.requests[0].row, b"00220240602");

    // The answers, checked against a filtering scan of the source of truth.
    for (path, params) in [
        (latest_of_customer(5), Params::new().eq("customer", 1)),
        (by_id(), Params::new().eq("order_id", 17)),
        (shipped_from_warehouse(), day),
    ] {
        let answer = table.query(&path, &params)?;
        let scan = table.filtering_scan(&path, &params)?;
        assert_eq!(answer.records, scan.records, "{path}");
        assert_eq!(scan.trace.entries_examined(), 40, "a filtering scan reads every record");
    }
    let answer = table.query(&latest_of_customer(5), &Params::new().eq("customer", 1))?;
    assert_eq!(ids(&answer.records), [37, 33, 29, 25, 21]);
    assert_eq!(
        answer.trace.entries_examined(),
        6,
        "the 5 returned and the one the merge looked ahead at"
    );
    Ok(())
}

#[test]
fn a_range_across_day_buckets_fans_out_over_exactly_those_days() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    // From noon on June 2 to noon on June 3: two day partitions.
    let params = Params::new()
        .eq("warehouse", 0)
        .between(T0 + DAY + 12 * HOUR, T0 + 2 * DAY + 12 * HOUR);
    let choice = served(&table, &shipped_from_warehouse(), &params)?;
    assert_eq!(choice.plan.kind, PlanKind::FanOut);
    let rows: Vec<&[u8]> = choice.requests.iter().map(|r| r.row.as_slice()).collect();
    assert_eq!(rows, [b"00020240602".as_slice(), b"00020240603"]);
    let answer = table.query(&shipped_from_warehouse(), &params)?;
    assert_eq!(answer.requests, 2);
    assert_eq!(ids(&answer.records), [12, 15, 18, 21, 24, 27, 30, 33]);
    assert_eq!(
        answer.records,
        table.filtering_scan(&shipped_from_warehouse(), &params)?.records
    );
    assert_eq!(
        answer.trace.entries_examined(),
        8,
        "the slices start and stop at the bounds inside each day"
    );
    Ok(())
}

#[test]
fn a_fan_out_wider_than_the_planner_allows_is_refused() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let year = Params::new().eq("warehouse", 0).between(T0, T0 + 365 * DAY);
    match table.plan(&shipped_from_warehouse(), &year)? {
        Planned::Unserved { reasons, .. } => assert!(
            reasons.iter().any(
                |r| r.starts_with("orders_by_warehouse_day: the partition key is not known (day(ts) is not fixed)")
            ),
            "{reasons:?}"
        ),
        Planned::Served(c) => return Err(format!("served by {}", c.layout).into()),
    }
    Ok(())
}

#[test]
fn an_undeclared_path_is_refused_with_the_layout_that_would_serve_it() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let path = latest_shipments(3);
    let params = Params::new().eq("warehouse", 1);
    let err = table.query(&path, &params).err();
    let Some(Error::Unserved {
        reasons, suggestion, ..
    }) = &err
    else {
        return Err(format!("expected a refusal, got {err:?}").into());
    };
    assert_eq!(
        reasons,
        &[
            "orders: the partition key is not known (pad(order_id,10) is not fixed): scatter-gather over every partition"
                .to_string(),
            "orders_by_customer: the partition key is not known (pad(customer,8) is not fixed): scatter-gather over every partition"
                .to_string(),
            "orders_by_warehouse_day: the partition key is not known (day(ts) is not fixed): scatter-gather over every partition"
                .to_string(),
        ]
    );
    let suggestion = suggestion.as_deref().ok_or("no suggestion")?;
    assert_eq!(
        suggestion.to_string(),
        r##"orders_by_warehouse: pad(warehouse,12) "#" revts(ms,19) "#" pad(order_id,19), ts = shipped_at"##
    );
    assert!(err
        .as_ref()
        .map(|e| e.to_string())
        .is_some_and(|m| m.ends_with("or ask for a filtering scan (QueryOptions::allow_filtering)")));

    // Asked for explicitly, a filtering scan answers it.
    let scan = table.query_with(&path, &params, QueryOptions::default().allow_filtering())?;
    assert!(scan.is_filtering_scan());
    assert_eq!(ids(&scan.records), [37, 34, 31]);

    // Added after launch, the suggested layout serves it, as a slice of 3.
    let report = table.add_layout(suggestion, BackfillOptions { batch_records: 16 }, &mut |_| {})?;
    assert_eq!((report.batches, report.copied, report.skipped), (3, 40, 0));
    let answer = table.query(&path, &params)?;
    assert_eq!(answer.layout, "orders_by_warehouse");
    assert_eq!(answer.records, scan.records);
    assert_eq!(answer.trace.entries_examined(), 4);
    assert!(table.verify()?.is_consistent());
    Ok(())
}

/// A path no layout of `loaded` serves, with its parameters: customer 2's
/// orders by ship time over three days (the layout by customer orders by
/// placement time).
fn ship_times_of_customer_2() -> (AccessPath, Params) {
    let path = AccessPath::new("a customer's orders by ship time")
        .equals("customer")
        .oldest_first("shipped_at");
    (path, Params::new().eq("customer", 2).between(T0, T0 + 3 * DAY))
}

#[test]
fn a_path_that_ranges_over_another_time_is_not_served_by_a_layout_ordered_by_the_first() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let (shipped_by_customer, params) = ship_times_of_customer_2();
    let Planned::Unserved { reasons, .. } = table.plan(&shipped_by_customer, &params)? else {
        return Err("served".into());
    };
    assert_eq!(
        reasons[1],
        "orders_by_customer: its key orders by placed_at, not by shipped_at"
    );
    // Without bounds, the customer's partition holds the answer: one slice,
    // read whole and put in ship-time order (no limit can be pushed down).
    let all = Params::new().eq("customer", 2);
    let choice = served(&table, &shipped_by_customer, &all)?;
    assert_eq!(choice.layout, "orders_by_customer");
    assert!(!choice.ordered);
    let answer = table.query(&shipped_by_customer, &all)?;
    assert_eq!(
        answer.records,
        table.filtering_scan(&shipped_by_customer, &all)?.records
    );
    Ok(())
}

#[test]
fn among_layouts_that_serve_a_path_the_fewest_slices_win_then_the_first_declared() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let month = LayoutSpec::new(
        "orders_by_warehouse_month",
        "pad(warehouse,3) month(ts) | ts(ms) pad(order_id,10)",
    )
    .time("shipped_at");
    table.add_layout(&month, BackfillOptions::default(), &mut |_| {})?;
    let week = Params::new().eq("warehouse", 1).between(T0, T0 + 7 * DAY);
    assert_eq!(
        served(&table, &shipped_from_warehouse(), &week)?.layout,
        "orders_by_warehouse_month",
        "1 slice beats 7"
    );
    let day = Params::new().eq("warehouse", 1).between(T0 + DAY, T0 + 2 * DAY);
    assert_eq!(
        served(&table, &shipped_from_warehouse(), &day)?.layout,
        "orders_by_warehouse_day",
        "1 slice each: the first declared"
    );
    Ok(())
}

#[test]
fn paths_and_parameters_that_do_not_fit_the_table_are_refused() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let message = |path: &AccessPath, params: &Params| table.plan(path, params).err().map(|e| e.to_string());
    assert_eq!(
        message(&latest_of_customer(3), &Params::new()).as_deref(),
        Some("table orders: path \"latest orders of a customer\": no value is given for customer")
    );
    assert_eq!(
        message(
            &latest_of_customer(3),
            &Params::new().eq("customer", 1).eq("warehouse", 2)
        )
        .as_deref(),
        Some("table orders: path \"latest orders of a customer\": warehouse is not one of the path's equality fields")
    );
    assert_eq!(
        message(&by_id(), &Params::new().eq("order_id", 1).between(1, 2)).as_deref(),
        Some("table orders: path \"an order by id\": the path has no range field to bound")
    );
    assert_eq!(
        message(
            &AccessPath::new("by status").equals("state"),
            &Params::new().eq("state", "x")
        )
        .as_deref(),
        Some("table orders: path \"by status\": state is not a field")
    );
    let _ = Record::new();
    Ok(())
}

/// 9999-12-31 00:00 UTC, the last day a `YYYYMMDD` bucket can name.
const LAST_DAY_OF_9999: u64 = 253_402_214_400_000;

/// A table `orders` in `dir` of order id, customer and placement time, with
/// one copy layout by customer keyed `key`.
fn by_customer_only(dir: &std::path::Path, key: &str) -> Result<Table> {
    let schema = cellar_tables::Schema::new("orders")
        .int("order_id")
        .int("customer")
        .time("placed_at")
        .primary_key(&["order_id"])
        .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
        .layout(LayoutSpec::new("orders_by_customer", key).time("placed_at"));
    Ok(Table::create(
        open_store(dir)?,
        &schema,
        cellar_tables::TableOptions::default(),
    )?)
}

fn placed(id: i64, at: u64) -> Record {
    Record::new()
        .with("order_id", id)
        .with("customer", 1)
        .with("placed_at", at as i64)
}

/// Times run to `i64::MAX` milliseconds, but a key's time forms do not: 13
/// digits of `ts(ms)` end in 2286, the buckets' four-digit years in 9999. A
/// record past its layout's form is refused by name (a ten-thousandth year
/// written as `100000101` would sort before `99991231`, and a range read
/// across it would find nothing), and a read bounded far in the future
/// (`to = u64::MAX`, "from then on") is a read up to the last time the form
/// can hold, not an error.
#[test]
fn times_past_what_a_layouts_time_form_can_hold_are_refused_and_far_bounds_are_clamped() -> Result {
    let oldest_first = AccessPath::new("orders of a customer, oldest first")
        .equals("customer")
        .oldest_first("placed_at");
    let since = |from: u64| Params::new().eq("customer", 1).between(from, u64::MAX);
    let ids = |table: &Table, params: &Params| -> Result<Vec<Option<i64>>> {
        let answer = table.query(&oldest_first, params)?;
        assert_eq!(answer.layout, "orders_by_customer");
        Ok(answer.records.iter().map(|r| r.int("order_id")).collect())
    };
    for (key, last) in [
        (
            "pad(customer,8) | day(ts) ts(ms,8) pad(order_id,10)",
            LAST_DAY_OF_9999 + DAY - 1,
        ),
        (
            "pad(customer,8) | month(ts) ts(ms,8) pad(order_id,10)",
            LAST_DAY_OF_9999 + DAY - 1,
        ),
        (
            "pad(customer,8) | hour(ts) ts(ms,8) pad(order_id,10)",
            LAST_DAY_OF_9999 + DAY - 1,
        ),
        ("pad(customer,8) | ts(ms) pad(order_id,10)", 9_999_999_999_999),
    ] {
        let dir = tempfile::tempdir()?;
        let table = by_customer_only(dir.path(), key)?;
        table.insert(&placed(1, T0))?;
        assert_eq!(ids(&table, &since(T0 - HOUR))?, [Some(1)], "{key}");
        // Past its last time the form refuses, by name; nothing is written.
        let refused = table.insert(&placed(2, last + 1)).err().map(|e| e.to_string());
        assert!(
            refused.as_deref().is_some_and(|m| m.contains("cannot encode")),
            "{key}: {refused:?}"
        );
        assert_eq!(table.get(&Record::new().with("order_id", 2))?, None, "{key}");
        // Its last time is a time like another.
        table.insert(&placed(3, last))?;
        assert_eq!(ids(&table, &since(T0))?, [Some(1), Some(3)], "{key}");
        assert_eq!(ids(&table, &since(last))?, [Some(3)], "{key}");
        assert_eq!(ids(&table, &since(last + 1))?, [], "{key}");
        assert!(table.verify()?.is_consistent(), "{key}");
    }
    Ok(())
}

/// A path may match its range field exactly as well as bound it: the
/// answer is the records at that time, inside the bounds. The plan must be
/// the point, not the range, or its limit (pushed into the slice, newest
/// first) stops at records of other times, which the filter then drops.
#[test]
fn a_path_that_matches_its_range_field_exactly_reads_that_time_not_the_whole_range() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let at_five = T0 + 5 * HOUR; // order 5, of customer 1
    let path = AccessPath::new("a customer's orders placed at a time")
        .equals("customer")
        .equals("placed_at")
        .newest_first("placed_at")
        .limit(1);
    for (between, want) in [
        ((T0, T0 + 40 * HOUR), vec![5]),
        ((at_five, at_five + 1), vec![5]),
        ((T0, at_five), vec![]),
    ] {
        let params = Params::new()
            .eq("customer", 1)
            .eq("placed_at", at_five as i64)
            .between(between.0, between.1);
        let answer = table.query(&path, &params)?;
        assert_eq!(ids(&answer.records), want, "{between:?}");
        assert_eq!(
            answer.records,
            table.filtering_scan(&path, &params)?.records,
            "{between:?}"
        );
    }
    Ok(())
}

/// A value the layout's key cannot hold (a negative customer, or one wider
/// than `pad(customer,8)`) is in no record of it: every record was written
/// there, so the answer is empty, read from nowhere. (The planner's refusal
/// to encode it failed the whole read, a filtering scan included.)
#[test]
fn a_value_the_serving_layouts_key_cannot_hold_matches_no_record() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    for customer in [-1, 100_000_000, i64::MAX, i64::MIN] {
        let params = Params::new().eq("customer", customer);
        for options in [QueryOptions::default(), QueryOptions::default().allow_filtering()] {
            let answer = table.query_with(&latest_of_customer(3), &params, options)?;
            assert_eq!(answer.records, [], "{customer}");
            assert_eq!(answer.layout, "orders_by_customer", "{customer}");
            assert_eq!(answer.requests, 0, "{customer}: nothing to read");
        }
        let between = params.between(T0, T0 + DAY);
        assert_eq!(table.query(&latest_of_customer(3), &between)?.records, [], "{customer}");
    }
    // A time past the last one ts(ms) writes, matched exactly.
    let path = AccessPath::new("orders shipped at")
        .equals("warehouse")
        .equals("shipped_at");
    let params = Params::new().eq("warehouse", 1).eq("shipped_at", 10_000_000_000_000i64);
    assert_eq!(
        table
            .query_with(&path, &params, QueryOptions::default().allow_filtering())?
            .records,
        []
    );
    Ok(())
}

/// The layout a refusal proposes is ready for `add_layout`: its name is not
/// one the table already has (a customer's orders by ship time would be
/// `orders_by_customer`, the name of the layout ordered by placement time).
#[test]
fn a_suggested_layout_is_named_so_that_add_layout_takes_it() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let (shipped_by_customer, params) = ship_times_of_customer_2();
    let Planned::Unserved { suggestion, .. } = table.plan(&shipped_by_customer, &params)? else {
        return Err("served".into());
    };
    let suggestion = suggestion.ok_or("no suggestion")?;
    assert_eq!(suggestion.name, "orders_by_customer_shipped_at");
    table.add_layout(&suggestion, BackfillOptions::default(), &mut |_| {})?;
    let answer = table.query(&shipped_by_customer, &params)?;
    assert_eq!(answer.layout, "orders_by_customer_shipped_at");
    assert_eq!(
        answer.records,
        table.filtering_scan(&shipped_by_customer, &params)?.records
    );
    Ok(())
}

/// Limits at the ends of `usize`: none is "no record", the largest is
/// every record, pushed into the slice as they are.
#[test]
fn a_limit_of_zero_reads_nothing_and_the_largest_reads_all() -> Result {
    let dir = tempfile::tempdir()?;
    let table = loaded(dir.path())?;
    let params = Params::new().eq("customer", 1);
    let none = table.query(&latest_of_customer(0), &params)?;
    assert_eq!(none.records, []);
    let all = table.query(&latest_of_customer(usize::MAX), &params)?;
    assert_eq!(ids(&all.records), (0..10).rev().map(|i| 4 * i + 1).collect::<Vec<_>>());
    assert_eq!(
        all.records,
        table.filtering_scan(&latest_of_customer(usize::MAX), &params)?.records
    );
    Ok(())
}
