//! The simulated cluster: split sizes as the HBase reference guide gives
//! them, and the invariants every layout must keep.

use std::collections::BTreeSet;

use cellar_keys::placement::{check_range_layout, presplit_points, ClusterSpec, SplitPolicy, StoreModel};
use cellar_keys::syntax::parse;
use cellar_keys::verdict::Spread;
use cellar_keys::workload::{WorkloadKind, WorkloadSpec};
use cellar_keys::{Error, Experiment, Run};

const MB: u64 = 1;
const GB: u64 = 1024;

fn run(key: &str, kind: WorkloadKind, writes: usize, cluster: ClusterSpec) -> Result<Run, Error> {
    Experiment::new(parse(key)?, WorkloadSpec::new(kind).writes(writes), cluster).run()
}

#[test]
fn increasing_to_upper_bound_is_min_of_max_and_twice_flush_times_regions_cubed() {
    // Reference guide: flush 128 MB, max 10 GB: 256 MB, 2048 MB, 6912 MB, then 10 GB.
    let p = SplitPolicy::IncreasingToUpperBound {
        flush_rows: 128 * MB,
        max_rows: 10 * GB,
    };
    assert_eq!(p.split_size(1), 256 * MB);
    assert_eq!(p.split_size(2), 2048 * MB);
    assert_eq!(p.split_size(3), 6912 * MB);
    assert_eq!(p.split_size(4), 10 * GB);
    assert_eq!(p.split_size(200), 10 * GB, "over 100 regions HBase uses the maximum");
}

#[test]
fn stepping_is_twice_flush_for_one_region_then_the_maximum() {
    let p = SplitPolicy::Stepping {
        flush_rows: 128 * MB,
        max_rows: 10 * GB,
    };
    assert_eq!(p.split_size(1), 256 * MB);
    assert_eq!(p.split_size(2), 10 * GB);
    assert_eq!(p.split_size(9), 10 * GB);
    assert_eq!(SplitPolicy::Constant { max_rows: 10 * GB }.split_size(3), 10 * GB);
    // Twice a flush size past half of u64 is the maximum, not a wrapped 0
    // (or an overflow panic in a debug build): `--flush-rows` is any u64.
    let huge = SplitPolicy::Stepping {
        flush_rows: 1 << 63,
        max_rows: u64::MAX,
    };
    assert_eq!(huge.split_size(1), u64::MAX);
}

fn keys_of(run: &Run) -> BTreeSet<Vec<u8>> {
    run.keys.iter().cloned().collect()
}

#[test]
fn regions_stay_contiguous_non_overlapping_and_hold_every_key() -> Result<(), Error> {
    let policies = [
        StoreModel::HBase {
            policy: SplitPolicy::Stepping {
                flush_rows: 32,
                max_rows: 300,
            },
        },
        StoreModel::HBase {
            policy: SplitPolicy::IncreasingToUpperBound {
                flush_rows: 16,
                max_rows: 400,
            },
        },
        StoreModel::HBase {
            policy: SplitPolicy::Constant { max_rows: 250 },
        },
        StoreModel::Bigtable {
            split_rows: 500,
            load_share: 0.3,
        },
    ];
    let keys = [
        r##"ts(ms) "#" field(order_id)"##,
        r##"salt(customer,8) "#" pad(customer,6) "#" revts(ms,19) "#" field(order_id)"##,
        r##"hash(order_id,4) "#" u64(order_id)"##,
    ];
    for model in policies {
        for key in keys {
            for presplit in [0, 4] {
                let mut cluster = ClusterSpec::new(model);
                cluster.presplit = presplit;
                let r = run(key, WorkloadKind::Orders, 3000, cluster)?;
                check_range_layout(&r.placement.layout, &keys_of(&r))
                    .map_err(|e| Error::InvalidSetting(format!("{model:?} {key} presplit {presplit}: {e}")))?;
                assert_eq!(r.placement.total_writes(), 3000);
            }
        }
    }
    Ok(())
}

#[test]
fn a_monotonic_key_sends_every_write_to_the_last_region() -> Result<(), Error> {
    for model in [
        ClusterSpec::hbase().model,
        StoreModel::Bigtable {
            split_rows: 300,
            load_share: 0.25,
        },
    ] {
        let r = run(
            r##"ts(ms) "#" field(order_id)"##,
            WorkloadKind::Orders,
            5000,
            ClusterSpec::new(model),
        )?;
        assert!(r.placement.splits > 3, "it splits ({} splits)", r.placement.splits);
        assert_eq!(r.placement.writes_to_last_region, 5000);
        assert_eq!(r.verdict.median_slice_share(), 1.0, "one server takes each slice");
        assert_eq!(r.verdict.spread(), Spread::HotSpot);
    }
    Ok(())
}

#[test]
fn random_keys_spread_over_the_servers() -> Result<(), Error> {
    let mut cluster = ClusterSpec::hbase();
    cluster.presplit = 8;
    let r = run(
        r##"hash(order_id,4) "#" field(order_id)"##,
        WorkloadKind::Orders,
        8000,
        cluster,
    )?;
    assert!(r.verdict.busiest_share < 0.35, "busiest {}", r.verdict.busiest_share);
    assert_eq!(r.verdict.spread(), Spread::Even);
    assert!(r.placement.writes_to_last_region < 8000 / 4);

    let ring = ClusterSpec::new(StoreModel::Ring { num_tokens: 16 });
    let r = run(r#"field(order_id) | ts(ms)"#, WorkloadKind::Orders, 8000, ring)?;
    assert!(
        r.verdict.busiest_share < 0.4,
        "ring busiest {}",
        r.verdict.busiest_share
    );

    let dynamo = ClusterSpec::new(StoreModel::EqualPartitions);
    let r = run(r#"field(order_id) | ts(ms)"#, WorkloadKind::Orders, 8000, dynamo)?;
    assert!(
        r.verdict.busiest_share < 0.3,
        "partitions busiest {}",
        r.verdict.busiest_share
    );
    Ok(())
}

#[test]
fn a_hot_partition_key_stays_hot_in_a_hashed_store() -> Result<(), Error> {
    // Half the orders belong to tenant 1: hashing cannot split one partition.
    let ring = ClusterSpec::new(StoreModel::Ring { num_tokens: 16 });
    let r = run(
        r##"pad(tenant,4) | ts(ms) "#" field(order_id)"##,
        WorkloadKind::Tenants,
        4000,
        ring,
    )?;
    assert!(r.verdict.busiest_share >= 0.5, "busiest {}", r.verdict.busiest_share);
    Ok(())
}

#[test]
fn a_salted_timestamp_key_spreads_once_split() -> Result<(), Error> {
    let mut cluster = ClusterSpec::hbase();
    cluster.presplit = 4;
    let r = run(
        r##"salt(order_id,16) "#" ts(ms) "#" field(order_id)"##,
        WorkloadKind::Orders,
        8000,
        cluster,
    )?;
    assert!(r.verdict.median_slice_share() < 0.4, "{:?}", r.verdict.lines());
    Ok(())
}

#[test]
fn presplit_points_follow_the_salt_buckets() -> Result<(), Error> {
    let points = presplit_points(&parse(r##"const(o) salt(user,16) "#" field(user)"##)?, 4);
    assert_eq!(points, vec![b"o04".to_vec(), b"o08".to_vec(), b"o12".to_vec()]);
    let uniform = presplit_points(&parse("ts(ms)")?, 4);
    assert_eq!(uniform, vec![vec![64], vec![128], vec![192]]);
    Ok(())
}

/// The rows of the picture that slice `t` lit.
fn lit_rows(run: &Run, t: usize) -> Vec<usize> {
    let column = run.placement.heat.get(t).cloned().unwrap_or_default();
    column
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0)
        .map(|(b, _)| b)
        .collect()
}

#[test]
fn a_monotonic_key_draws_a_diagonal_over_one_key_space() -> Result<(), Error> {
    let mut cluster = ClusterSpec::hbase();
    cluster.ticks = 60;
    cluster.key_bins = 60;
    let r = run(r##"ts(ms) "#" field(order_id)"##, WorkloadKind::Orders, 6000, cluster)?;
    // Each slice writes the next hundredth of the keys: the rows it lights
    // follow the rows of the slice before, from the top to the bottom.
    assert_eq!(lit_rows(&r, 0).first(), Some(&0));
    assert!(lit_rows(&r, 0).iter().all(|&b| b <= 1), "{:?}", lit_rows(&r, 0));
    assert!(lit_rows(&r, 59).iter().all(|&b| b >= 58), "{:?}", lit_rows(&r, 59));
    for t in 1..60 {
        let (before, now) = (lit_rows(&r, t - 1), lit_rows(&r, t));
        assert!(now.first() >= before.last(), "slice {t}: {now:?} after {before:?}");
    }
    // Every lit cell was written by one server; the first row starts at the
    // smallest key.
    for (t, row) in r.placement.heat_servers.iter().enumerate() {
        for b in lit_rows(&r, t) {
            assert_eq!(row.get(b).map(Vec::len), Some(1), "slice {t}, row {b}");
        }
    }
    let smallest = keys_of(&r).into_iter().next();
    let first_bin = r.placement.bin_keys.first().cloned().flatten().map(|(lo, _)| lo);
    assert_eq!(first_bin, smallest);
    Ok(())
}

#[test]
fn a_region_boundary_keeps_its_height_once_drawn() -> Result<(), Error> {
    let r = run(
        r##"ts(ms) "#" field(order_id)"##,
        WorkloadKind::Orders,
        5000,
        ClusterSpec::hbase(),
    )?;
    let b = &r.placement.boundaries;
    assert!(b.last().is_some_and(|last| last.len() > 3), "it splits");
    for t in 1..b.len() {
        for y in &b[t - 1] {
            assert!(
                b[t].contains(y),
                "boundary at {y} moved or vanished after slice {}",
                t - 1
            );
        }
    }
    Ok(())
}

/// A cluster larger than the simulation draws is an error that says which
/// setting and its limit, before anything is allocated (four billion
/// billion servers was a "capacity overflow" panic; a hundred million, an
/// allocation that aborted the process).
#[test]
fn cluster_sizes_past_the_simulations_limits_are_refused_by_name() -> Result<(), Error> {
    use cellar_keys::placement::{MAX_PRESPLIT, MAX_SERVERS, MAX_TOKENS};
    let refused = |cluster: ClusterSpec| -> Result<String, Error> {
        match run("field(customer)", WorkloadKind::Orders, 10, cluster) {
            Err(Error::InvalidSetting(why)) => Ok(why),
            other => Err(Error::InvalidSetting(format!(
                "expected a refusal, got {:?}",
                other.map(|_| ())
            ))),
        }
    };
    let hbase = ClusterSpec::hbase();
    let why = refused(ClusterSpec {
        servers: usize::MAX,
        ..hbase.clone()
    })?;
    assert!(
        why.contains("servers") && why.contains(&MAX_SERVERS.to_string()),
        "{why}"
    );
    let why = refused(ClusterSpec {
        presplit: usize::MAX,
        ..hbase.clone()
    })?;
    assert!(
        why.contains("presplit") && why.contains(&MAX_PRESPLIT.to_string()),
        "{why}"
    );
    let why = refused(ClusterSpec::new(StoreModel::Ring { num_tokens: usize::MAX }))?;
    assert!(
        why.contains("num_tokens") && why.contains(&MAX_TOKENS.to_string()),
        "{why}"
    );
    let why = refused(ClusterSpec {
        ticks: usize::MAX,
        ..hbase.clone()
    })?;
    assert!(why.contains("ticks"), "{why}");
    // At the limits it runs.
    run(
        "field(customer)",
        WorkloadKind::Orders,
        10,
        ClusterSpec {
            servers: MAX_SERVERS,
            presplit: MAX_PRESPLIT,
            ..hbase
        },
    )?;
    // Split points stop at the limit too, whatever a caller asks for.
    assert_eq!(presplit_points(&parse("ts(ms)")?, usize::MAX).len(), 255);
    let salted = presplit_points(&parse(r##"salt(user,4294967295) "#" field(user)"##)?, usize::MAX);
    assert_eq!(salted.len(), MAX_PRESPLIT - 1);
    assert!(salted.windows(2).all(|w| w[0] < w[1]), "points in key order");
    Ok(())
}

/// Writes are spread evenly over the span however long it is: write `i` at
/// `EPOCH + i × span / writes`, computed without overflow (it wrapped past
/// 2^64 and sent later writes back in time). A span whose last write would
/// pass `i64::MAX` milliseconds, the largest time a record carries, is refused.
#[test]
fn a_long_span_spreads_writes_in_time_order_and_one_past_i64_is_refused() -> Result<(), Error> {
    use cellar_keys::workload::EPOCH_MS;
    let span = 8_640_000_000_000_000_000; // 10^11 days
    let records = WorkloadSpec::new(WorkloadKind::Orders)
        .writes(10)
        .span_ms(span)
        .generate();
    let times: Vec<u64> = records.iter().map(|r| r.ts_ms).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert_eq!(times.last().copied(), Some(EPOCH_MS + span / 10 * 9));
    let r = Experiment::new(
        parse("field(customer)")?,
        WorkloadSpec::new(WorkloadKind::Orders).writes(10).span_ms(span),
        ClusterSpec::hbase(),
    )
    .run()?;
    assert_eq!(
        r.placement.writes.iter().filter(|t| t.iter().sum::<u64>() > 0).count(),
        10
    );
    let too_long = Experiment::new(
        parse("field(customer)")?,
        WorkloadSpec::new(WorkloadKind::Orders)
            .writes(10)
            .span_ms(i64::MAX as u64),
        ClusterSpec::hbase(),
    )
    .run();
    assert!(
        matches!(too_long, Err(Error::InvalidSetting(_))),
        "{:?}",
        too_long.map(|_| ())
    );
    Ok(())
}

/// Seed 002: "The Bigtable model also splits a tablet that took a large share
/// of a minute's writes and places tablets on nodes by load". A hot *range*
/// (tenant 1's orders, half of all writes, each a new key) is split by load
/// although no tablet reaches the split size, and its pieces spread over the
/// nodes; a hot *point* (one key per tenant) cannot be split.
#[test]
fn bigtable_load_splits_a_hot_range_but_never_a_hot_point() -> Result<(), Error> {
    let bigtable = ClusterSpec::new(StoreModel::Bigtable {
        split_rows: 1_000_000,
        load_share: 0.3,
    });
    let range = run(
        r##"pad(tenant,4) "#" pad(order_id,8)"##,
        WorkloadKind::Tenants,
        6000,
        bigtable.clone(),
    )?;
    assert!(range.placement.splits > 0, "no load split");
    check_range_layout(&range.placement.layout, &keys_of(&range)).map_err(Error::InvalidSetting)?;
    // The same key with load splits off (only the size splits, which never come).
    let size_only = ClusterSpec::new(StoreModel::Bigtable {
        split_rows: 1_000_000,
        load_share: 1.0,
    });
    let unsplit = run(
        r##"pad(tenant,4) "#" pad(order_id,8)"##,
        WorkloadKind::Tenants,
        6000,
        size_only,
    )?;
    assert_eq!(unsplit.placement.splits, 0);
    assert!(
        range.verdict.busiest_share < unsplit.verdict.busiest_share,
        "load splits spread the hot range: {} against {}",
        range.verdict.busiest_share,
        unsplit.verdict.busiest_share
    );
    // One key per tenant: tenant 1's row takes half the writes and stays whole.
    let point = run("pad(tenant,4)", WorkloadKind::Tenants, 6000, bigtable)?;
    check_range_layout(&point.placement.layout, &keys_of(&point)).map_err(Error::InvalidSetting)?;
    assert!(point.verdict.busiest_share >= 0.5, "{}", point.verdict.busiest_share);
    Ok(())
}
