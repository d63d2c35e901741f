//! `cellar keys`: try a row key on a workload.
//!
//! Renders every write's key, simulates where the writes land on a
//! range-partitioned or hashed cluster, prints the load verdict, and on
//! request plans the workload's typical reads and runs them on a real
//! (temporary) cellar store, writes the key-visualizer picture as an HTML
//! file, or prints the design as a Cassandra or HBase statement. The library
//! behind it is `cellar-keys`.

use std::io::Write;
use std::path::PathBuf;

use cellar_keys::export;
use cellar_keys::guides;
use cellar_keys::placement::{ClusterSpec, SplitPolicy, StoreModel};
use cellar_keys::planner::{describe, plan_and_run};
use cellar_keys::report;
use cellar_keys::syntax::parse;
use cellar_keys::workload::{WorkloadKind, WorkloadSpec};
use cellar_keys::Experiment;

use crate::{clock, Error};

/// Range-partitioned or hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// Rows sorted by key, cut into regions (HBase, Bigtable).
    Range,
    /// Partition key hashed to a node (Cassandra, DynamoDB).
    Hashed,
}

/// How the store splits or places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    /// HBase SteppingSplitPolicy (range; the default).
    Stepping,
    /// HBase IncreasingToUpperBoundRegionSplitPolicy (range).
    Increasing,
    /// HBase ConstantSizeRegionSplitPolicy (range).
    Constant,
    /// Bigtable-like size and load splits, placement by load (range).
    Bigtable,
    /// Cassandra-like token ring with --num-tokens per node (hashed; the default).
    Ring,
    /// DynamoDB-like equal hash partitions, one per server (hashed).
    Dynamo,
}

/// Which statement to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Export {
    /// A CREATE TABLE with partition key, clustering columns and order.
    Cassandra,
    /// An HBase shell `create` with pre-split points.
    Hbase,
}

/// Arguments of `keys`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The row key, e.g. 'salt(user,16) "#" pad(user,12) "#" revts(ms,19) "#" field(order_id)'.
    /// Parts: field(f) pad(f,W) u64(f) long(f) flip(f) ts(ms) ts(ms,8) revts(ms,19) revts(ms,8)
    /// hour(ts) day(ts) month(ts) salt(f,N) rr(N) hash(f,D) const(x) "sep"; `|` ends the partition key.
    #[arg(long, value_name = "SYNTAX")]
    pub key: String,
    /// orders, timeseries, users (Zipf) or tenants (one big customer).
    #[arg(long, default_value = "orders")]
    pub workload: String,
    /// Number of writes.
    #[arg(long, default_value_t = 10_000)]
    pub writes: usize,
    /// Time from first to last write: a number and a unit (90s, 30m, 1h, 2d).
    #[arg(long, default_value = "1h")]
    pub span: String,
    /// Seed of the workload.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Store family.
    #[arg(long, value_enum, default_value_t = StoreKind::Range)]
    pub store: StoreKind,
    /// Split or placement policy [default: stepping for range, ring for hashed].
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Region servers or nodes (partitions for dynamo).
    #[arg(long, default_value_t = 4)]
    pub servers: usize,
    /// Memstore flush size in rows (stands in for 128 MB).
    #[arg(long, default_value_t = 64)]
    pub flush_rows: u64,
    /// Maximum region size in rows (stands in for 10 GB); the split size of
    /// the constant and Bigtable policies.
    #[arg(long, default_value_t = 1000)]
    pub max_rows: u64,
    /// Pre-split the table into this many regions (range stores).
    #[arg(long, default_value_t = 0)]
    pub presplit: usize,
    /// Tokens per node on the ring.
    #[arg(long, default_value_t = 16)]
    pub num_tokens: usize,
    /// Leading value parts that form the partition key (hashed stores), if
    /// the key has no `|`.
    #[arg(long)]
    pub partition_parts: Option<usize>,
    /// Time slices (picture columns, balancer rounds).
    #[arg(long, default_value_t = 60)]
    pub slices: usize,
    /// Plan the workload's typical reads and run them on a real cellar store.
    #[arg(long)]
    pub plan: bool,
    /// Print the design as a Cassandra or HBase statement.
    #[arg(long, value_enum)]
    pub export: Option<Export>,
    /// Write the key-visualizer picture (self-contained HTML) to this file.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// `--span`, in milliseconds: a duration as every duration argument is
/// written ([`clock::parse_duration`]: a number and a unit, at least 1 ms
/// and at most 64 bits of milliseconds), its error prefixed with the switch.
fn parse_span(text: &str) -> Result<u64, Error> {
    let span = clock::parse_duration(text).map_err(|e| format!("invalid --span: {e}"))?;
    // parse_duration builds it from a u64 of milliseconds.
    Ok(u64::try_from(span.as_millis()).unwrap_or(u64::MAX))
}

fn model(args: &Args) -> Result<StoreModel, Error> {
    // A size of 0 is refused by the simulation, with the reason.
    let (flush_rows, max_rows) = (args.flush_rows, args.max_rows);
    let policy = args.policy.unwrap_or(match args.store {
        StoreKind::Range => Policy::Stepping,
        StoreKind::Hashed => Policy::Ring,
    });
    let m = match (args.store, policy) {
        (StoreKind::Range, Policy::Stepping) => StoreModel::HBase {
            policy: SplitPolicy::Stepping { flush_rows, max_rows },
        },
        (StoreKind::Range, Policy::Increasing) => StoreModel::HBase {
            policy: SplitPolicy::IncreasingToUpperBound { flush_rows, max_rows },
        },
        (StoreKind::Range, Policy::Constant) => StoreModel::HBase {
            policy: SplitPolicy::Constant { max_rows },
        },
        (StoreKind::Range, Policy::Bigtable) => StoreModel::Bigtable {
            split_rows: max_rows,
            load_share: 0.25,
        },
        (StoreKind::Hashed, Policy::Ring) => StoreModel::Ring {
            num_tokens: args.num_tokens,
        },
        (StoreKind::Hashed, Policy::Dynamo) => StoreModel::EqualPartitions,
        (store, policy) => {
            return Err(format!(
            "--policy {policy:?} does not apply to --store {store:?}: range takes stepping, increasing, constant or \
                 bigtable; hashed takes ring or dynamo"
        )
            .to_lowercase()
            .into())
        }
    };
    Ok(m)
}

/// Runs the experiment and prints what was asked.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), Error> {
    if let Some(path) = &args.report {
        crate::picture::check_report_path(path)?;
    }
    let mut key = parse(&args.key)?;
    if let Some(n) = args.partition_parts {
        if n == 0 {
            return Err("--partition-parts must be at least 1".into());
        }
        if key.partition_parts.is_some() {
            return Err("--partition-parts is for a key with no '|': this key already ends its partition key".into());
        }
        key.partition_parts = Some(n);
    }
    let kind = WorkloadKind::from_name(&args.workload)?;
    if args.writes == 0 || args.writes > 2_000_000 {
        return Err("--writes must be between 1 and 2000000".into());
    }
    if args.slices == 0 || args.slices > 1000 {
        return Err("--slices must be between 1 and 1000".into());
    }
    let workload = WorkloadSpec::new(kind)
        .writes(args.writes)
        .span_ms(parse_span(&args.span)?)
        .seed(args.seed);
    let mut cluster = ClusterSpec::new(model(args)?);
    cluster.servers = args.servers;
    cluster.presplit = args.presplit;
    cluster.ticks = args.slices;
    let hashed = !cluster.model.is_range();
    let run = Experiment::new(key, workload, cluster).run()?;
    let ex = &run.experiment;

    writeln!(out, "key: {}", ex.key)?;
    writeln!(
        out,
        "workload: {}, {} writes over {} (seed {}); fields {} and ts",
        kind.name(),
        args.writes,
        args.span,
        args.seed,
        kind.fields().join(", ")
    )?;
    writeln!(out, "store: {}, {} servers", ex.cluster.model, ex.cluster.servers)?;
    writeln!(out, "sample keys: {}", run.sample_keys(3).join("  "))?;
    writeln!(
        out,
        "key size: {}..{} bytes (mean {:.1}), {} bytes over {} writes, {} distinct rows",
        run.sizes.min,
        run.sizes.max,
        run.sizes.mean,
        run.sizes.total,
        args.writes,
        run.distinct_rows()
    )?;
    for line in guides::lines(&guides::of_run(&run)) {
        writeln!(out, "{line}")?;
    }
    if let Some((earlier, later)) = run.first_collision {
        let fields = |i: usize| -> String {
            run.records.get(i).map_or_else(String::new, |r| {
                r.fields
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        };
        let key = run.keys.get(later).map(|k| cellar_keys::encoding::to_string_binary(k));
        writeln!(
            out,
            "warning: {} of {} writes render a key an earlier write already has, and overwrite it: \
             write {} ({}) and write {} ({}) are both {}; put a separator between variable parts, \
             or end the key with a unique field",
            run.verdict.collisions,
            args.writes,
            earlier + 1,
            fields(earlier),
            later + 1,
            fields(later),
            key.unwrap_or_default()
        )?;
    }
    for line in run.verdict.lines() {
        writeln!(out, "{line}")?;
    }
    if let cellar_keys::placement::Layout::Range(regions) = &run.placement.layout {
        writeln!(
            out,
            "regions: {} at the end ({} splits); {} of {} writes went to the last region",
            regions.len(),
            run.placement.splits,
            run.placement.writes_to_last_region,
            args.writes
        )?;
    }
    let total = run.verdict.total_writes.max(1) as f64;
    let shares: Vec<String> = run
        .placement
        .writes_per_server()
        .iter()
        .enumerate()
        .map(|(s, w)| format!("#{s} {:.1}%", 100.0 * *w as f64 / total))
        .collect();
    writeln!(out, "writes per server: {}", shares.join(", "))?;

    let plans = if args.plan || args.report.is_some() {
        plan_and_run(&run)?
    } else {
        Vec::new()
    };
    if args.plan {
        writeln!(out)?;
        for (plan, exec) in &plans {
            for line in describe(plan, Some(exec), hashed) {
                writeln!(out, "{line}")?;
            }
        }
    }
    if let Some(e) = args.export {
        writeln!(out)?;
        let table = kind.name();
        match e {
            Export::Cassandra => write!(out, "{}", export::cassandra(&ex.key, kind, table))?,
            Export::Hbase => write!(
                out,
                "{}",
                export::hbase(&ex.key, table, args.presplit.max(args.servers))
            )?,
        }
    }
    if let Some(path) = &args.report {
        std::fs::write(path, report::html(&run, &plans)).map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(out, "\nreport written to {}", path.display())?;
    }
    Ok(())
}
