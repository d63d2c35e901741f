//! `peers`: cellar beside the engines a user would pick instead, on db_bench's
//! workloads, in the same run on the same machine.
//!
//! Each run of each engine happens in a child process of the calling binary
//! ([`child_main`]), so its peak RSS (VmHWM) is its own; engines take turns,
//! run after run, and the report gives the median of the runs.

pub mod cellar;
pub mod db_bench;
pub mod fjall;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod workloads;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::progress::Progress;
use cellar_engine::SyncPolicy;
use workloads::{Adapter, Measured, RunReport, WORKLOADS};

/// Bytes of one db_bench entry: 16-byte key + 100-byte value.
pub const ENTRY_BYTES: u64 = (workloads::KEY_BYTES + workloads::VALUE_BYTES) as u64;

/// The engines run in process (by a child of this binary); `rocksdb` too when
/// the `rocksdb` feature built it.
pub const IN_PROCESS: &[&str] = &[
    "cellar",
    "cellar-buffered",
    "cellar-wide",
    "fjall",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
];

/// Opens an in-process engine by name.
pub fn open(engine: &str, dir: &Path) -> Result<Box<dyn Adapter>> {
    match engine {
        "cellar" => Ok(Box::new(cellar::Cellar::open(dir, false, SyncPolicy::Never)?)),
        "cellar-buffered" => Ok(Box::new(cellar::Cellar::open(dir, false, SyncPolicy::Buffered)?)),
        "cellar-wide" => Ok(Box::new(cellar::Cellar::open(dir, true, SyncPolicy::Never)?)),
        "fjall" => Ok(Box::new(fjall::Fjall::open(dir)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb::RocksDb::open(dir)?)),
        other => Err(Error::Peer(format!("unknown engine `{other}`"))),
    }
}

/// Runs every workload on one in-process engine and prints the report on stdout
/// in the line format [`parse_report`] reads. This is what a child process does.
pub fn child_main(engine: &str, dir: &Path, num: u64, seed: u64, progress: &dyn Progress) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let report = workloads::run_all(&|d: &Path| open(engine, d), dir, num, seed, progress)?;
    Ok(format_report(&report))
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The line format a child prints.
pub fn format_report(r: &RunReport) -> String {
    let mut out = String::new();
    for m in &r.workloads {
        let _ = writeln!(out, "workload {} {} {} {}", m.workload, m.ops, m.seconds, m.found);
    }
    let _ = writeln!(out, "disk fillseq {} {}", r.fillseq_disk.0, r.fillseq_disk.1);
    let _ = writeln!(out, "disk fillrandom {} {}", r.fillrandom_disk.0, r.fillrandom_disk.1);
    let _ = writeln!(out, "live {} {}", r.live_entries.0, r.live_entries.1);
    let _ = writeln!(out, "rss {} {}", opt(r.fillrandom_rss_kib), opt(r.peak_rss_kib));
    let _ = writeln!(out, "wamp {}", opt(r.write_amplification));
    out
}

/// Reads what [`format_report`] wrote.
pub fn parse_report(text: &str) -> Result<RunReport> {
    fn num<T: std::str::FromStr>(w: Option<&str>) -> Result<T> {
        w.and_then(|w| w.parse().ok())
            .ok_or_else(|| Error::Peer(format!("bad report field {w:?}")))
    }
    fn maybe<T: std::str::FromStr>(w: Option<&str>) -> Option<T> {
        w.and_then(|w| w.parse().ok())
    }
    let mut r = RunReport::default();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("workload") => {
                let workload = w.next().unwrap_or_default().to_string();
                r.workloads.push(Measured {
                    workload,
                    ops: num(w.next())?,
                    seconds: num(w.next())?,
                    found: num(w.next())?,
                });
            }
            Some("disk") => {
                let which = w.next();
                let pair = (num(w.next())?, num(w.next())?);
                if which == Some("fillseq") {
                    r.fillseq_disk = pair;
                } else {
                    r.fillrandom_disk = pair;
                }
            }
            Some("live") => r.live_entries = (num(w.next())?, num(w.next())?),
            Some("rss") => {
                r.fillrandom_rss_kib = maybe(w.next());
                r.peak_rss_kib = maybe(w.next());
            }
            Some("wamp") => r.write_amplification = maybe(w.next()),
            _ => {}
        }
    }
    if r.workloads.len() != WORKLOADS.len() {
        return Err(Error::Peer(format!("a child reported {} workloads", r.workloads.len())));
    }
    Ok(r)
}

/// How to run the comparison.
#[derive(Clone, Debug)]
pub struct Config {
    /// Keys (entries) per workload.
    pub num: u64,
    /// Runs of each engine.
    pub runs: usize,
    /// Engines, in turn order (in-process names, or `db_bench`).
    pub engines: Vec<String>,
    /// Where the stores go (a folder of its own is made per run).
    pub dir: PathBuf,
    /// This binary, run with `--child ENGINE` for each in-process run.
    pub exe: PathBuf,
}

/// The engines present on this machine: cellar (log handed to the OS per write,
/// as RocksDB does), cellar-buffered (log buffered in the process, as fjall's
/// journal is), cellar-wide, fjall, rocksdb (with the `rocksdb` feature) and
/// db_bench if found.
pub fn default_engines() -> Vec<String> {
    let mut engines: Vec<String> = IN_PROCESS.iter().map(|s| s.to_string()).collect();
    if db_bench::find().is_some() {
        engines.push("db_bench".to_string());
    }
    engines
}

/// Every run of every engine, by engine.
pub type Runs = BTreeMap<String, Vec<RunReport>>;

/// Runs the engines in turn, `runs` times; `log` hears what starts.
pub fn run(config: &Config, log: &mut dyn FnMut(&str)) -> Result<Runs> {
    let mut runs: Runs = BTreeMap::new();
    for run in 0..config.runs {
        // Turns rotate so no engine always runs first (on a cold or hot page cache).
        let n = config.engines.len().max(1);
        for i in 0..config.engines.len() {
            let Some(engine) = config.engines.get((i + run) % n) else {
                continue;
            };
            log(&format!("run {}/{}: {engine}", run + 1, config.runs));
            let dir = config.dir.join(format!("{engine}-{run}"));
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let report = if engine == "db_bench" {
                let bin = db_bench::find().ok_or_else(|| Error::Peer("db_bench is not installed".into()))?;
                db_bench::run_all(&bin, &dir, config.num, run as u64 + 1)?
            } else {
                let output = Command::new(&config.exe)
                    .arg("--child")
                    .arg(engine)
                    .arg("--num")
                    .arg(config.num.to_string())
                    .arg("--seed")
                    .arg((run as u64 + 1).to_string())
                    .arg("--dir")
                    .arg(&dir)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .output()
                    .map_err(|e| Error::io(&config.exe, e))?;
                if !output.status.success() {
                    return Err(Error::Peer(format!(
                        "{engine} run {} failed: {}",
                        run + 1,
                        output.status
                    )));
                }
                parse_report(&String::from_utf8_lossy(&output.stdout))?
            };
            let _ = std::fs::remove_dir_all(&dir);
            runs.entry(engine.clone()).or_default().push(report);
        }
    }
    Ok(runs)
}

/// Median of some numbers (0 if none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v.get(n / 2).copied().unwrap_or(0.0),
        n => (v.get(n / 2 - 1).copied().unwrap_or(0.0) + v.get(n / 2).copied().unwrap_or(0.0)) / 2.0,
    }
}

fn median_of(reports: &[RunReport], f: impl Fn(&RunReport) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = reports.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| median(v))
}

/// Median ops/s of one workload of one engine.
pub fn median_ops(reports: &[RunReport], workload: &str) -> f64 {
    median_of(reports, |r| {
        r.workloads
            .iter()
            .find(|m| m.workload == workload)
            .map(Measured::ops_per_sec)
    })
    .unwrap_or(0.0)
}

/// Median disk bytes (after fill, after compaction) of a fill workload.
pub fn median_disk(reports: &[RunReport], workload: &str) -> Option<(u64, u64)> {
    let pick = |r: &RunReport| match workload {
        "fillseq" => Some(r.fillseq_disk),
        "fillrandom" => Some(r.fillrandom_disk),
        _ => None,
    };
    let fill = median_of(reports, |r| pick(r).map(|d| d.0 as f64))?;
    let compacted = median_of(reports, |r| pick(r).map(|d| d.1 as f64))?;
    Some((fill as u64, compacted as u64))
}

fn label(engine: &str) -> String {
    if engine == "db_bench" {
        db_bench::find().map_or_else(|| engine.to_string(), |p| db_bench::label(&p))
    } else {
        engine.to_string()
    }
}

fn human(ops: f64) -> String {
    if ops >= 1e6 {
        format!("{:.2}M", ops / 1e6)
    } else {
        format!("{:.0}k", ops / 1e3)
    }
}

fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

/// The report: ops/s per workload and engine with cellar/peer ratios, disk
/// bytes and space amplification, peak RSS and write amplification.
pub fn render(config: &Config, runs: &Runs) -> String {
    let engines: Vec<&String> = config.engines.iter().filter(|e| runs.contains_key(*e)).collect();
    let peers: Vec<&String> = engines.iter().copied().filter(|e| !e.starts_with("cellar")).collect();
    let reports = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "peers: {} keys (16 B keys, 100 B values), {} run(s) per engine, medians in ops/s",
        config.num, config.runs
    );
    let _ = writeln!(
        out,
        "cellar-wide: N/10 rows of 10 columns (ops counted in cells; seekrandom reads 11 cells from a row)\n"
    );
    let mut header = format!("{:<12}", "workload");
    for e in &engines {
        let _ = write!(header, " {:>14}", label(e).split(' ').next().unwrap_or_default());
    }
    // Each peer is compared with the cellar run of the same durability: RocksDB
    // hands every write to the OS (cellar's `Never`), fjall buffers its journal
    // in the process (cellar's `Buffered`).
    let counterpart = |peer: &str| -> &'static str {
        if peer == "fjall" && runs.contains_key("cellar-buffered") {
            "cellar-buffered"
        } else {
            "cellar"
        }
    };
    for p in &peers {
        let _ = write!(header, " {:>22}", format!("{}/{p}", counterpart(p)));
    }
    let _ = writeln!(out, "{header}");
    for w in WORKLOADS {
        let mut line = format!("{w:<12}");
        for e in &engines {
            let _ = write!(line, " {:>14}", human(median_ops(reports(e), w)));
        }
        for p in &peers {
            let cellar = median_ops(reports(counterpart(p)), w);
            let peer = median_ops(reports(p), w);
            let ratio = if peer > 0.0 {
                format!("{:.2}x", cellar / peer)
            } else {
                "-".into()
            };
            let _ = write!(line, " {ratio:>22}");
        }
        let _ = writeln!(out, "{line}");
    }
    for e in &engines {
        if label(e) != **e {
            let _ = writeln!(out, "{e}: {}", label(e));
        }
    }

    let _ = writeln!(
        out,
        "\nspace (medians; live = 116 B x distinct entries; fillrandom compacted before overwrite)"
    );
    let _ = writeln!(
        out,
        "{:<12} {:<11} {:>10} {:>10} {:>10} {:>8}",
        "engine", "workload", "live", "after fill", "compacted", "amp"
    );
    for e in &engines {
        for (w, live) in [("fillseq", 0usize), ("fillrandom", 1)] {
            let Some((fill, compacted)) = median_disk(reports(e), w) else {
                continue;
            };
            let live_bytes = median_of(reports(e), |r| {
                Some((if live == 0 { r.live_entries.0 } else { r.live_entries.1 } * ENTRY_BYTES) as f64)
            })
            .unwrap_or(0.0);
            let amp = if live_bytes > 0.0 {
                compacted as f64 / live_bytes
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "{:<12} {:<11} {:>10} {:>10} {:>10} {:>7.3}x",
                e,
                w,
                mb(live_bytes),
                mb(fill as f64),
                mb(compacted as f64),
                amp
            );
        }
    }

    let _ = writeln!(out, "\nmemory and writes (medians)");
    let _ = writeln!(
        out,
        "{:<12} {:>18} {:>14} {:>16}",
        "engine", "peak RSS fillrand", "peak RSS run", "write amp (eng.)"
    );
    for e in &engines {
        let fill = median_of(reports(e), |r| r.fillrandom_rss_kib.map(|k| k as f64));
        let peak = median_of(reports(e), |r| r.peak_rss_kib.map(|k| k as f64));
        let wamp = median_of(reports(e), |r| r.write_amplification);
        let _ = writeln!(
            out,
            "{:<12} {:>18} {:>14} {:>16}",
            e,
            fill.map_or("-".into(), |k| format!("{:.0} MiB", k / 1024.0)),
            peak.map_or("-".into(), |k| format!("{:.0} MiB", k / 1024.0)),
            wamp.map_or("-".into(), |w| format!("{w:.2}")),
        );
    }
    out
}

/// The CSV for scripts: `workload,engine,median_ops_per_sec,disk_bytes_after_fill,disk_bytes_after_compaction`.
pub fn csv(config: &Config, runs: &Runs) -> String {
    let mut out =
        String::from("workload,engine,median_ops_per_sec,disk_bytes_after_fill,disk_bytes_after_compaction\n");
    for w in WORKLOADS {
        for e in config.engines.iter().filter(|e| runs.contains_key(*e)) {
            let reports = runs.get(e).map(Vec::as_slice).unwrap_or_default();
            let (fill, compacted) =
                median_disk(reports, w).map_or((String::new(), String::new()), |(f, c)| (f.to_string(), c.to_string()));
            let _ = writeln!(out, "{w},{e},{:.0},{fill},{compacted}", median_ops(reports, w));
        }
    }
    out
}
