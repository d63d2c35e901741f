//! Query plans, each checked against a brute-force filter of the data: the
//! scan ranges hold every matching row, and the rows returned agree.

use cellar_keys::placement::{ClusterSpec, StoreModel};
use cellar_keys::planner::{plan, plan_and_run, typical_queries, PlanKind, RealStore};
use cellar_keys::syntax::parse;
use cellar_keys::workload::{WorkloadKind, WorkloadSpec};
use cellar_keys::{Error, Experiment, Run};

const SEED_000_KEY: &str = r##"pad(customer,12) "#" revts(ms,19) "#" field(order_id)"##;

fn run(key: &str, kind: WorkloadKind, writes: usize, cluster: ClusterSpec) -> Result<Run, Error> {
    Experiment::new(parse(key)?, WorkloadSpec::new(kind).writes(writes), cluster).run()
}

fn checked(run: &Run) -> Result<Vec<(cellar_keys::planner::Plan, cellar_keys::planner::Execution)>, Error> {
    let results = plan_and_run(run)?;
    for (p, e) in &results {
        assert_eq!(
            e.outside_ranges, 0,
            "{}: {} matching rows outside the ranges",
            run.experiment.key, e.outside_ranges
        );
        assert_eq!(
            e.returned,
            e.expected,
            "{} / {}: plan {:?} returned {} rows, brute force {}",
            run.experiment.key,
            p.query.name,
            p.kind,
            e.rows_returned,
            e.expected.len()
        );
        assert!(
            e.rows_read >= e.rows_returned as u64,
            "{}: read fewer than returned",
            p.query.name
        );
    }
    Ok(results)
}

#[test]
fn the_20_latest_orders_for_customer_42_are_one_range_scan_with_limit_20() -> Result<(), Error> {
    let r = run(SEED_000_KEY, WorkloadKind::Orders, 4000, ClusterSpec::hbase())?;
    let results = checked(&r)?;
    let (p, e) = results
        .iter()
        .find(|(p, _)| p.query.name == "the 20 latest orders for customer 42")
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(p.kind, PlanKind::RangeScan);
    assert_eq!(p.ranges.len(), 1);
    assert_eq!(p.ranges[0].limit, Some(20));
    assert_eq!(p.ranges[0].from, b"000000000042#".to_vec());
    assert_eq!(p.ranges[0].to, Some(b"000000000042$".to_vec()));
    assert_eq!(e.rows_returned, 20);
    // The scan stops at the limit: the merge looks at most one entry ahead in
    // each table file, far from the ~40 orders customer 42 has.
    assert!((20..=24).contains(&e.rows_read), "read {}", e.rows_read);
    Ok(())
}

#[test]
fn orders_of_a_day_across_customers_is_a_full_scan_with_the_layout_that_would_serve_it() -> Result<(), Error> {
    let r = run(SEED_000_KEY, WorkloadKind::Orders, 3000, ClusterSpec::hbase())?;
    let results = checked(&r)?;
    let (p, e) = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("all orders on a given day"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(p.kind, PlanKind::FullScan);
    assert_eq!(e.rows_read, r.distinct_rows() as u64, "every row is read");
    let layout = p
        .serving_layout
        .clone()
        .ok_or(Error::InvalidSetting("no layout".into()))?;
    // Seed 000: "That read needs its own layout, whose leading part is the day".
    assert_eq!(layout.to_string(), r##"day(ts) "#" ts(ms) "#" field(order_id)"##);
    // The minute read's layout leads with the hour it falls in.
    let minute = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("everything in one minute"))
        .and_then(|(p, _)| p.serving_layout.clone())
        .ok_or(Error::InvalidSetting("no layout for the minute read".into()))?;
    assert_eq!(minute.to_string(), r##"hour(ts) "#" ts(ms) "#" field(order_id)"##);
    // And that layout does serve it: one range scan.
    let served = plan(&layout, &p.query, false, "order_id")?;
    assert_eq!(served.kind, PlanKind::RangeScan);
    let r2 = Experiment::new(layout, r.experiment.workload, ClusterSpec::hbase()).run()?;
    let store = RealStore::load(&r2)?;
    let e2 = store.execute(&served)?;
    assert!(e2.agrees());
    assert_eq!(e2.rows_returned, e.rows_returned);
    Ok(())
}

#[test]
fn a_salt_turns_the_time_range_read_into_a_fan_out_over_its_buckets() -> Result<(), Error> {
    let r = run(
        r##"salt(order_id,16) "#" ts(ms) "#" field(order_id)"##,
        WorkloadKind::Orders,
        3000,
        ClusterSpec::hbase(),
    )?;
    let results = checked(&r)?;
    let (p, _) = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("everything in one minute"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(p.kind, PlanKind::FanOut);
    assert_eq!(p.ranges.len(), 16);
    assert_eq!(p.fan_out.as_ref().map(|f| f.1), Some(16));
    Ok(())
}

#[test]
fn a_timestamp_first_key_serves_the_minute_read_as_one_range() -> Result<(), Error> {
    let r = run(
        r##"ts(ms) "#" field(order_id)"##,
        WorkloadKind::Orders,
        3000,
        ClusterSpec::hbase(),
    )?;
    let results = checked(&r)?;
    let (p, e) = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("everything in one minute"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(p.kind, PlanKind::RangeScan);
    assert_eq!(e.rows_read, e.rows_returned as u64, "no row is read in vain");
    Ok(())
}

#[test]
fn every_plan_agrees_with_brute_force_on_range_stores() -> Result<(), Error> {
    let designs: &[(WorkloadKind, &str)] = &[
        (WorkloadKind::Orders, r##"ts(ms) "#" field(order_id)"##),
        (WorkloadKind::Orders, SEED_000_KEY),
        (
            WorkloadKind::Orders,
            r##"salt(customer,8) "#" pad(customer,12) "#" revts(ms,19) "#" field(order_id)"##,
        ),
        (
            WorkloadKind::Orders,
            r##"pad(customer,12) "#" ts(ms) "#" field(order_id)"##,
        ),
        (WorkloadKind::Orders, r##"rr(4) "#" ts(ms) "#" field(order_id)"##),
        (
            WorkloadKind::Orders,
            r##"hash(customer,1) "#" field(customer) "#" revts(ms,8) u64(order_id)"##,
        ),
        (
            WorkloadKind::Orders,
            r##"hour(ts) "#" field(customer) "#" ts(ms,8) flip(order_id)"##,
        ),
        (WorkloadKind::Orders, "field(customer) revts(ms,19) field(order_id)"),
        (WorkloadKind::Orders, r##"long(customer) revts(ms,8) long(order_id)"##),
        (
            WorkloadKind::TimeSeries,
            r##"field(metric) "#" pad(device,4) "#" revts(ms,19)"##,
        ),
        (
            WorkloadKind::TimeSeries,
            r##"salt(device,4) "#" pad(device,4) "#" field(metric) "#" ts(ms)"##,
        ),
        (
            WorkloadKind::ZipfUsers,
            r##"hash(user,2) "#" pad(user,6) "#" revts(ms,19) "#" pad(event_id,8)"##,
        ),
        (
            WorkloadKind::Tenants,
            r##"pad(tenant,4) "#" hour(ts) "#" ts(ms) "#" pad(order_id,8)"##,
        ),
    ];
    for (kind, key) in designs {
        let r = run(key, *kind, 1500, ClusterSpec::hbase())?;
        let results = checked(&r)?;
        assert_eq!(results.len(), typical_queries(*kind, &r.records).len());
    }
    Ok(())
}

#[test]
fn every_plan_agrees_with_brute_force_on_hashed_stores() -> Result<(), Error> {
    let designs: &[(WorkloadKind, &str)] = &[
        (
            WorkloadKind::Orders,
            r##"pad(customer,12) | revts(ms,19) "#" field(order_id)"##,
        ),
        (
            WorkloadKind::Orders,
            r##"hour(ts) | pad(customer,12) "#" ts(ms) "#" field(order_id)"##,
        ),
        (
            WorkloadKind::ZipfUsers,
            r##"salt(user,8) "#" pad(user,6) | revts(ms,19) "#" pad(event_id,8)"##,
        ),
        (
            WorkloadKind::TimeSeries,
            r##"pad(device,4) "#" field(metric) | ts(ms)"##,
        ),
    ];
    for model in [StoreModel::Ring { num_tokens: 8 }, StoreModel::EqualPartitions] {
        for (kind, key) in designs {
            let r = run(key, *kind, 1500, ClusterSpec::new(model))?;
            checked(&r)?;
        }
    }
    Ok(())
}

#[test]
fn a_known_partition_key_touches_one_partition_and_an_unknown_one_all() -> Result<(), Error> {
    let r = run(
        r##"pad(customer,12) | revts(ms,19) "#" field(order_id)"##,
        WorkloadKind::Orders,
        2000,
        ClusterSpec::new(StoreModel::Ring { num_tokens: 8 }),
    )?;
    let results = checked(&r)?;
    let latest = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("the 20 latest"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(latest.0.partitions.as_ref().map(Vec::len), Some(1));
    assert_eq!((latest.1.regions, latest.1.servers), (1, 1));
    assert_eq!(latest.0.ranges[0].limit, Some(20));
    let minute = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("everything in one minute"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(minute.0.kind, PlanKind::FullScan);
    assert_eq!(minute.0.partitions, None);
    assert_eq!(minute.1.regions, 100, "every customer's partition");
    assert_eq!(minute.1.servers, 4);
    Ok(())
}

#[test]
fn a_one_minute_read_on_an_hour_partition_visits_one_partition() -> Result<(), Error> {
    let r = run(
        r##"hour(ts) | ts(ms) "#" field(order_id)"##,
        WorkloadKind::Orders,
        2000,
        ClusterSpec::new(StoreModel::EqualPartitions),
    )?;
    let results = checked(&r)?;
    let minute = results
        .iter()
        .find(|(p, _)| p.query.name.starts_with("everything in one minute"))
        .ok_or(Error::InvalidSetting("query missing".into()))?;
    assert_eq!(minute.0.partitions.as_ref().map(Vec::len), Some(1));
    assert_eq!(minute.0.kind, PlanKind::RangeScan);
    Ok(())
}

#[test]
fn a_day_partition_fans_out_over_exactly_the_days_a_range_needs() -> Result<(), Error> {
    use cellar_keys::planner::{Query, TimePredicate};
    use cellar_keys::workload::Value;
    let design = parse(r##"pad(customer,6) day(ts) | ts(ms) "#" field(order_id)"##)?;
    let jan_30_noon = 1_706_616_000_000;
    let query = Query {
        name: "customer 42 from Jan 30 noon to Feb 2 noon".into(),
        equals: vec![("customer".into(), Value::Int(42))],
        time: TimePredicate::Between(jan_30_noon, jan_30_noon + 3 * 86_400_000),
        newest_first: false,
        limit: None,
    };
    let p = plan(&design, &query, true, "order_id")?;
    assert_eq!(p.kind, PlanKind::FanOut);
    assert!(p.exact, "the ts(ms) range inside each day makes the plan exact");
    let partitions: Vec<String> = p
        .partitions
        .iter()
        .flatten()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert_eq!(
        partitions,
        ["00004220240130", "00004220240131", "00004220240201", "00004220240202"]
    );
    // A year of days is wider than the planner fans out: a full scan.
    let year = Query {
        time: TimePredicate::Between(jan_30_noon, jan_30_noon + 365 * 86_400_000),
        ..query
    };
    assert_eq!(plan(&design, &year, true, "order_id")?.kind, PlanKind::FullScan);
    Ok(())
}

/// A salt of four billion buckets is a full scan: the planner counts the
/// scans a fan-out would make before it lists them, so a read that does not
/// name the salted field costs no memory for buckets it will never visit.
#[test]
fn a_salt_with_more_buckets_than_a_fan_out_allows_is_refused_before_its_buckets_are_listed() -> Result<(), Error> {
    use cellar_keys::planner::{Query, TimePredicate};
    let minute = Query {
        name: "everything in one minute".into(),
        equals: Vec::new(),
        time: TimePredicate::Between(1_706_616_000_000, 1_706_616_060_000),
        newest_first: false,
        limit: None,
    };
    for key in [
        r##"salt(customer,4294967295) "#" ts(ms) "#" field(order_id)"##,
        r##"rr(4294967295) "#" ts(ms) "#" field(order_id)"##,
        r##"salt(customer,257) "#" ts(ms) "#" field(order_id)"##,
    ] {
        for hashed in [false, true] {
            let p = plan(&parse(key)?, &minute, hashed, "order_id")?;
            assert_eq!(p.kind, PlanKind::FullScan, "{key}");
        }
    }
    // At the limit it still fans out, one scan per bucket.
    let p = plan(
        &parse(r##"salt(customer,256) "#" ts(ms) "#" field(order_id)"##)?,
        &minute,
        false,
        "order_id",
    )?;
    assert_eq!((p.kind, p.ranges.len()), (PlanKind::FanOut, 256));
    Ok(())
}

/// A value no key of the design can hold matches no row: the plan reads
/// nothing, and says which part refuses the value.
#[test]
fn a_value_no_key_can_hold_is_a_plan_that_reads_nothing() -> Result<(), Error> {
    use cellar_keys::planner::{describe, Query, TimePredicate};
    use cellar_keys::workload::Value;
    let design = parse(r##"pad(customer,4) | ts(ms) "#" field(order_id)"##)?;
    let query = |customer: i64, time: TimePredicate| Query {
        name: format!("customer {customer}"),
        equals: vec![("customer".into(), Value::Int(customer))],
        time,
        newest_first: false,
        limit: Some(5),
    };
    for (q, says) in [
        (
            query(-1, TimePredicate::Any),
            "pad(customer,4) cannot hold -1: negative numbers cannot be zero-padded",
        ),
        (
            query(10_000, TimePredicate::Any),
            "pad(customer,4) cannot hold 10000: needs more than 4 digits",
        ),
        (
            query(42, TimePredicate::At(10_000_000_000_000)),
            "ts(ms) cannot hold 10000000000000: needs more than 13 digits",
        ),
        (
            query(42, TimePredicate::Between(10_000_000_000_000, u64::MAX)),
            "ts(ms) cannot hold [10000000000000, 18446744073709551615): needs more than 13 digits",
        ),
    ] {
        for hashed in [false, true] {
            let p = plan(&design, &q, hashed, "order_id")?;
            assert_eq!(
                (p.kind, p.ranges.len(), p.exact),
                (PlanKind::Empty, 0, true),
                "{}",
                q.name
            );
            assert_eq!(p.partitions, hashed.then(Vec::new));
            assert!(p.note.contains(says), "{}", p.note);
            assert!(describe(&p, None, hashed)[1].starts_with("  plan: nothing to read: "));
        }
    }
    Ok(())
}

/// A read "from then on" (`to = u64::MAX`) matches every later row: the
/// bounds are compared as the unsigned milliseconds they are (cast to i64,
/// the end became -1 and the range matched nothing).
#[test]
fn a_time_range_ending_at_u64_max_matches_every_later_row() {
    use cellar_keys::planner::{Query, TimePredicate};
    use cellar_keys::workload::Value;
    let since = |from: u64| Query {
        name: "from then on".into(),
        equals: Vec::new(),
        time: TimePredicate::Between(from, u64::MAX),
        newest_first: false,
        limit: None,
    };
    let at = |ts: i64| move |f: &str| (f == "ts").then_some(Value::Int(ts));
    assert!(since(0).matches(at(5)));
    assert!(since(5).matches(at(i64::MAX)));
    assert!(!since(6).matches(at(5)));
    assert!(!since(0).matches(at(-1)), "no time is negative");
    let point = Query {
        time: TimePredicate::At(u64::MAX),
        ..since(0)
    };
    assert!(!point.matches(at(-1)), "u64::MAX is not -1");
}

/// An empty literal after a text part does not close it: `"cp"` then `""`
/// is also the start of `"cpu"`, so a read that fixes the text is not exact
/// (rows of longer values lie in its slice and are dropped by the filter).
#[test]
fn an_empty_literal_does_not_close_a_text_part() -> Result<(), Error> {
    use cellar_keys::planner::{Query, TimePredicate};
    use cellar_keys::workload::Value;
    let query = Query {
        name: "metric cp".into(),
        equals: vec![("metric".into(), Value::Text("cp".into()))],
        time: TimePredicate::Any,
        newest_first: false,
        limit: Some(3),
    };
    for (key, exact) in [
        (r##"field(metric) "" pad(device,4)"##, false),
        (r##"field(metric) const("") pad(device,4)"##, false),
        (r##"field(metric) "#" pad(device,4)"##, true),
    ] {
        let p = plan(&parse(key)?, &query, false, "device")?;
        assert_eq!(p.exact, exact, "{key}: {}", p.note);
        assert_eq!(
            p.ranges[0].limit.is_some(),
            exact,
            "{key}: a limit only on an exact slice"
        );
    }
    Ok(())
}
