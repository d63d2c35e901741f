//! YCSB, the Yahoo! Cloud Serving Benchmark, in the `peers` harness: the
//! native shape of a wide-column store (a record of ten fields) under skewed
//! reads, updates, inserts and short scans.
//!
//! db_bench's workloads measure flat keys; YCSB measures records. A record is
//! a row of ten 100-byte fields (YCSB's `fieldcount` and `fieldlength`, which
//! `peers --field-count` and `--field-length` change for every engine), so
//! each engine is run in the model its users would pick ([`record`]): cellar
//! as one row of one column per field, fjall and RocksDB both as one key per
//! record and as one key per field. cellar is
//! compared with each peer's faster model, workload by workload.
//!
//! Each engine runs [`workload::run_all`] in a child process of its own: the
//! load, then workloads A, B, C, F and D on the same records, then, as YCSB's
//! recommended sequence, the records deleted and loaded again (D inserted
//! some) and workload E, with the operations fixed by the run's seed. Each
//! workload opens its store again, as each YCSB run is a process of its own.
//! Engines take turns, run after run; the report gives medians of throughput and of latency percentiles, and checks
//! that every engine read exactly the same records (every read and
//! read-modify-write must find its record with all its fields; scans must
//! return the same number of records on every engine).
//!
//! RocksDB also has a wide-column API (`PutEntity` / `GetEntity`), which
//! would be the closest peer of cellar's row; neither the `rocksdb` crate
//! 0.25 nor RocksDB's C API exposes it, so it is not measured.

pub mod generator;
pub mod latency;
pub mod record;
pub mod workload;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::memory::{self, Memory, Sampler};
use super::workloads::disk_bytes;
use super::{human, median_of, mib, ratio, read_path, Config, Shape, RSS_NOTE};
use crate::error::{Error, Result};
use crate::progress::Progress;
use latency::Percentiles;
use record::{CellarRow, KeyPerField, RecordPerKey, RecordStore};
use workload::{Op, OpReport, Opening, PhaseReport, PHASES};

/// The engines and models, in turn order; `rocksdb-*` with the `rocksdb`
/// feature. `cellar-get-row` (cellar reading with `get_row`, keeping its
/// cells) runs only when `--engines` names it.
pub const ENGINES: &[&str] = &[
    "cellar",
    "fjall-record",
    "fjall-field",
    #[cfg(feature = "rocksdb")]
    "rocksdb-record",
    #[cfg(feature = "rocksdb")]
    "rocksdb-field",
];

/// The peers cellar is compared with: each one's faster model, workload by workload.
pub const PEERS: &[&str] = &["fjall", "rocksdb"];

/// What a model name means, for the report, with records of `fields` fields.
pub fn model(engine: &str, fields: usize) -> String {
    if engine == "cellar" {
        format!(
            "a record is a row of {fields} columns: a read is visit_row (get_row's cells lent), an update puts one \
             column, a scan is a row scan with a limit, its rows visited"
        )
    } else if engine == "cellar-get-row" {
        format!(
            "as cellar, its cells kept: a read is get_row (a vector of {fields} Cells), a scan iterates Rows; an \
             extra, in no ratio"
        )
    } else if engine.ends_with("-record") {
        format!(
            "one key per record, the {fields} fields serialized in its value as YCSB's RocksDB binding does: an update \
             reads the value, changes a field, writes it back"
        )
    } else {
        format!(
            "one key per field (record key, 0 byte, field name): a read is a prefix scan over {fields} keys, an \
             update writes one key"
        )
    }
}

/// Opens an engine in the model its name says; `cache` as for [`super::open`].
pub fn open(engine: &str, dir: &Path, cache: Option<u64>) -> Result<Box<dyn RecordStore>> {
    match engine {
        "cellar" => Ok(Box::new(CellarRow::open(dir)?)),
        "cellar-get-row" => Ok(Box::new(CellarRow::open_keeping_cells(dir)?)),
        "fjall-record" => Ok(Box::new(RecordPerKey::new(super::fjall::Fjall::open(dir, cache)?))),
        "fjall-field" => Ok(Box::new(KeyPerField::new(super::fjall::Fjall::open(dir, cache)?))),
        #[cfg(feature = "rocksdb")]
        "rocksdb-record" => Ok(Box::new(RecordPerKey::new(super::rocksdb::RocksDb::open(dir, cache)?))),
        #[cfg(feature = "rocksdb")]
        "rocksdb-field" => Ok(Box::new(KeyPerField::new(super::rocksdb::RocksDb::open(dir, cache)?))),
        other => Err(Error::Peer(format!("unknown YCSB engine `{other}`"))),
    }
}

/// One run of one engine: every phase, the run's peak memory and the bytes
/// on disk at the end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct YcsbRun {
    /// Load, then the workloads in the order they ran.
    pub phases: Vec<PhaseReport>,
    /// Peaks of the whole run.
    pub memory: Memory,
    /// Bytes on disk after the last workload.
    pub disk_bytes: u64,
}

impl YcsbRun {
    /// The phase of a name.
    pub fn phase(&self, name: &str) -> Option<&PhaseReport> {
        self.phases.iter().find(|p| p.name == name)
    }
}

/// Runs YCSB on one engine in `dir`, records of `shape`'s fields; this is
/// what a child process does.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per option of the child's command line"
)]
pub fn run_engine(
    engine: &str,
    dir: &Path,
    records: u64,
    operations: u64,
    seed: u64,
    cache: Option<u64>,
    shape: Shape,
    progress: &dyn Progress,
) -> Result<YcsbRun> {
    let sampler = Sampler::start("self".into());
    memory::reset_peak();
    sampler.reset();
    // Each new store in a directory of its own (`store-0`, then `store-1`
    // for E's reload); the one before, closed by then, is removed.
    let mut stores = 0;
    let mut store_dir = dir.join("store-0");
    let mut open_store = |how: Opening| -> Result<Box<dyn RecordStore>> {
        if how == Opening::New {
            if stores > 0 {
                std::fs::remove_dir_all(&store_dir).map_err(|e| Error::io(&store_dir, e))?;
            }
            store_dir = dir.join(format!("store-{stores}"));
            stores += 1;
            std::fs::create_dir_all(&store_dir).map_err(|e| Error::io(&store_dir, e))?;
        }
        open(engine, &store_dir, cache)
    };
    let (phases, store) = workload::run_all(&mut open_store, records, operations, seed, shape, progress)?;
    let disk = disk_bytes(&store_dir)?;
    drop(store);
    Ok(YcsbRun {
        phases,
        memory: sampler.stop(),
        disk_bytes: disk,
    })
}

/// The lines a child prints.
pub fn format(run: &YcsbRun) -> String {
    let mut out = String::new();
    for p in &run.phases {
        let _ = writeln!(out, "phase {} {} {}", p.name, p.ops, p.seconds);
        for (op, r) in &p.by_op {
            let l = r.latency;
            let _ = writeln!(
                out,
                "op {} {} {} {} {} {} {}",
                p.name,
                op.name(),
                r.count,
                r.found,
                l.p50,
                l.p99,
                l.p999
            );
        }
    }
    let m = run.memory;
    let _ = writeln!(out, "memory {} {} {}", m.anon_kib, m.file_kib, m.hwm_kib);
    let _ = writeln!(out, "disk {}", run.disk_bytes);
    out
}

/// Reads what [`format()`] wrote.
pub fn parse(text: &str) -> Result<YcsbRun> {
    fn num<T: std::str::FromStr>(w: Option<&str>) -> Result<T> {
        w.and_then(|w| w.parse().ok())
            .ok_or_else(|| Error::Peer(format!("bad YCSB report field {w:?}")))
    }
    let mut run = YcsbRun::default();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("phase") => run.phases.push(PhaseReport {
                name: w.next().unwrap_or_default().to_string(),
                ops: num(w.next())?,
                seconds: num(w.next())?,
                by_op: Vec::new(),
            }),
            Some("op") => {
                let name = w.next();
                let op = w
                    .next()
                    .and_then(Op::from_name)
                    .ok_or_else(|| Error::Peer(format!("bad YCSB op line {line:?}")))?;
                let report = OpReport {
                    count: num(w.next())?,
                    found: num(w.next())?,
                    latency: Percentiles {
                        p50: num(w.next())?,
                        p99: num(w.next())?,
                        p999: num(w.next())?,
                    },
                };
                if let Some(p) = run.phases.iter_mut().find(|p| Some(p.name.as_str()) == name) {
                    p.by_op.push((op, report));
                }
            }
            Some("memory") => {
                run.memory = Memory {
                    anon_kib: num(w.next())?,
                    file_kib: num(w.next())?,
                    hwm_kib: num(w.next())?,
                }
            }
            Some("disk") => run.disk_bytes = num(w.next())?,
            _ => {}
        }
    }
    if run.phases.len() != PHASES.len() {
        return Err(Error::Peer(format!(
            "a YCSB child reported {} phases",
            run.phases.len()
        )));
    }
    Ok(run)
}

/// Every run of every engine, by engine.
pub type YcsbRuns = BTreeMap<String, Vec<YcsbRun>>;

/// Runs YCSB on every engine in turn, each run in a child process.
pub fn run(config: &Config, log: &mut dyn FnMut(&str)) -> Result<YcsbRuns> {
    super::alternate(config, log, |engine, run, dir| {
        let args = config.child_args(engine, run, dir);
        parse(&super::run_child(
            &config.exe,
            &args,
            &format!("{engine} YCSB run {}", run + 1),
        )?)
    })
}

/// Checks that every engine did the same operations and read the same
/// records, run by run, and says what they read; a record has `fields` fields.
pub fn check_hits(runs: &YcsbRuns, fields: usize) -> Result<String> {
    let Some((ref_engine, ref_runs)) = runs.iter().next() else {
        return Ok("hits checked: no runs".into());
    };
    for (engine, engine_runs) in runs {
        for (round, (run, ref_run)) in engine_runs.iter().zip(ref_runs).enumerate() {
            for name in PHASES {
                for op in Op::ALL {
                    let counts = |r: &YcsbRun| r.phase(name).and_then(|p| p.op(op)).map(|o| (o.count, o.found));
                    if counts(run) != counts(ref_run) {
                        return Err(Error::Peer(format!(
                            "engines disagree on workload {name} ({}s) in run {}: {ref_engine} {:?}, {engine} {:?} \
                             (operations, records found)",
                            op.name(),
                            round + 1,
                            counts(ref_run),
                            counts(run)
                        )));
                    }
                }
            }
        }
    }
    let mut first = Vec::new();
    if let Some(run) = ref_runs.first() {
        for name in PHASES {
            for op in [Op::Read, Op::ReadModifyWrite, Op::Scan] {
                if let Some(o) = run.phase(name).and_then(|p| p.op(op)) {
                    first.push(format!("{name} {} {}/{}", op.name(), o.found, o.count));
                }
            }
        }
    }
    Ok(format!(
        "hits checked: {} did the same operations and found the same records in every workload of every run; \
         every read found its record with all {fields} fields (run 1, records found / operations: {})",
        runs.keys().cloned().collect::<Vec<_>>().join(", "),
        first.join(", ")
    ))
}

fn median_ops(runs: &[YcsbRun], phase: &str) -> f64 {
    median_of(runs, |r| r.phase(phase).map(PhaseReport::ops_per_sec)).unwrap_or(0.0)
}

fn median_latency(runs: &[YcsbRun], phase: &str, op: Op, pick: fn(&Percentiles) -> f64) -> Option<f64> {
    median_of(runs, |r| {
        r.phase(phase).and_then(|p| p.op(op)).map(|o| pick(&o.latency))
    })
}

/// Microseconds for a table: `18.2` below 100, whole numbers above.
fn micros(us: f64) -> String {
    if us < 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// The report: throughput per workload with cellar / each peer's faster
/// model, latency percentiles per operation type, memory and disk.
pub fn render(config: &Config, records: u64, operations: u64, runs: &YcsbRuns, hits: &str) -> String {
    let engines: Vec<&String> = config.engines.iter().filter(|e| runs.contains_key(*e)).collect();
    let of = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    let peers: Vec<&str> = PEERS
        .iter()
        .copied()
        .filter(|p| runs.contains_key("cellar") && engines.iter().any(|e| e.starts_with(&format!("{p}-"))))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ycsb: {records} records of {} fields x {} B (keys \"user\" + FNV hash of the record number), {operations} \
         operations per workload, one client thread, {} run(s) per engine, medians",
        config.shape.fields, config.shape.field_bytes, config.runs
    );
    let _ = writeln!(
        out,
        "requests: scrambled zipfian (0.99) for A, B, C, E, F; latest for D; scan lengths uniform 1-100; run \
         order load, A, B, C, F, D on one store, then the records loaded again into a new store (untimed) for E, \
         as YCSB's recommended sequence; each workload on its store closed and opened again, as each YCSB run is a \
         process of its own (background work settled before every close, untimed)"
    );
    let _ = writeln!(
        out,
        "durability: every write handed to the OS, no fsync (cellar SyncPolicy::Never, fjall default, RocksDB \
         WAL without sync)"
    );
    let _ = writeln!(out, "models and read paths:");
    for e in &engines {
        let _ = writeln!(out, "  {e:<15} {}", model(e, config.shape.fields));
        let _ = writeln!(out, "  {:<15} {}", "", read_path(e, config.cache));
    }
    let _ = writeln!(
        out,
        "  RocksDB's wide-column API (PutEntity/GetEntity) is not in the rocksdb crate 0.25 nor in RocksDB's C \
         API: not measured"
    );
    let _ = writeln!(out, "{hits}\n");

    let _ = writeln!(
        out,
        "throughput (ops/s): operations over the time of their loop (YCSB's RunTime also counts opening and \
         closing the store)"
    );
    let mut header = format!("{:<9}", "workload");
    for e in &engines {
        let _ = write!(header, " {e:>14}");
    }
    for p in &peers {
        let _ = write!(header, " {:>18}", format!("cellar/{p} best"));
    }
    let _ = writeln!(out, "{header}");
    for name in PHASES {
        let mut line = format!("{name:<9}");
        for e in &engines {
            let _ = write!(line, " {:>14}", human(median_ops(of(e), name)));
        }
        for p in &peers {
            let best = engines
                .iter()
                .filter(|e| e.starts_with(&format!("{p}-")))
                .map(|e| median_ops(of(e), name))
                .fold(0.0, f64::max);
            let _ = write!(line, " {:>18}", ratio(median_ops(of("cellar"), name), best));
        }
        let _ = writeln!(out, "{line}");
    }

    let _ = writeln!(
        out,
        "\nlatency (µs): p50 / p99 per operation type; inserts p50 / p99 / p99.9; nearest rank over every \
         operation's time, to the ns (YCSB's histogram takes the same rank of times cut to whole µs); F's reads \
         and updates include those of its read-modify-writes, as YCSB counts them"
    );
    let mut header = format!("{:<9} {:<7}", "workload", "op");
    for e in &engines {
        let _ = write!(header, " {e:>20}");
    }
    let _ = writeln!(out, "{header}");
    for name in PHASES {
        for op in Op::ALL {
            if !engines
                .iter()
                .any(|e| median_latency(of(e), name, op, |l| l.p50).is_some())
            {
                continue;
            }
            let mut line = format!("{name:<9} {:<7}", op.name());
            for e in &engines {
                let get = |pick: fn(&Percentiles) -> f64| median_latency(of(e), name, op, pick);
                let cell = match (get(|l| l.p50), get(|l| l.p99), get(|l| l.p999)) {
                    (Some(a), Some(b), Some(c)) if op == Op::Insert => {
                        format!("{} / {} / {}", micros(a), micros(b), micros(c))
                    }
                    (Some(a), Some(b), _) => format!("{} / {}", micros(a), micros(b)),
                    _ => "-".into(),
                };
                let _ = write!(line, " {cell:>20}");
            }
            let _ = writeln!(out, "{line}");
        }
    }

    let _ = writeln!(out, "\nmemory and disk (medians; peaks of the whole run)");
    let _ = writeln!(
        out,
        "{:<15} {:>10} {:>10} {:>10} {:>12}",
        "engine", "peak RSS", "peak anon", "peak file", "disk at end"
    );
    for e in &engines {
        let m = |f: fn(&YcsbRun) -> u64| median_of(of(e), |r| Some(f(r) as f64)).unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:<15} {:>10} {:>10} {:>10} {:>9.0} MB",
            e,
            mib(m(|r| r.memory.hwm_kib)),
            mib(m(|r| r.memory.anon_kib)),
            mib(m(|r| r.memory.file_kib)),
            m(|r| r.disk_bytes) / 1e6,
        );
    }
    let _ = writeln!(out, "{RSS_NOTE}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(reads_found: u64) -> YcsbRun {
        let phases = PHASES
            .iter()
            .map(|name| PhaseReport {
                name: name.to_string(),
                ops: 100,
                seconds: 1.0,
                by_op: vec![(
                    Op::Read,
                    OpReport {
                        count: 100,
                        found: if *name == "C" { reads_found } else { 100 },
                        latency: Percentiles::default(),
                    },
                )],
            })
            .collect();
        YcsbRun {
            phases,
            ..YcsbRun::default()
        }
    }

    #[test]
    fn engines_that_read_different_records_fail_the_run() {
        let mut runs = YcsbRuns::new();
        runs.insert("cellar".into(), vec![run(100)]);
        runs.insert("fjall-field".into(), vec![run(99)]);
        assert_eq!(
            check_hits(&runs, 10).map_err(|e| e.to_string()),
            Err(
                "engines disagree on workload C (reads) in run 1: cellar Some((100, 100)), fjall-field \
                 Some((100, 99)) (operations, records found)"
                    .to_string()
            )
        );
        runs.insert("fjall-field".into(), vec![run(100)]);
        assert!(check_hits(&runs, 10).is_ok());
    }
}
