//! RocksDB through its own `db_bench`, run as a subprocess when `$DB_BENCH` or
//! `/usr/bin/db_bench` exists (the `rocksdb` feature would link the library
//! instead, but it builds RocksDB from source). Debian's `rocksdb-tools` 7.8.3
//! is built with assertions on (it prints "WARNING: Assertions are enabled")
//! and is about 1.3x slower than a release build, so its column says so.
//!
//! Options as db_bench's defaults plus the benchmark's: leveled compaction,
//! 4 KiB blocks, bloom 10 bits per key, 64 MiB write buffer, no compression,
//! WAL on, no sync (and db_bench's default 8 MiB block cache). Each workload
//! is one invocation on the same database folder (`--use_existing_db=1` after
//! the fills), so db_bench's own timer excludes opening and closing; what an
//! invocation does after its timed benchmark (`flush`, `compact`,
//! `waitforcompaction`) is timed apart and not reported as the workload.
//!
//! The sequence mirrors the in-process harness
//! ([`super::workloads::run_all`]):
//!
//! | invocation | timed | then |
//! |---|---|---|
//! | `fillseq,flush` (fresh folder) | fillseq | disk bytes |
//! | `compact` | - | disk bytes; folder removed |
//! | `fillrandom,flush` (fresh folder) | fillrandom | disk bytes, peak RSS of this process |
//! | `compact,readseq` | - | disk bytes; readseq's count is the distinct keys |
//! | `overwrite,flush,waitforcompaction` | overwrite | (waitforcompaction sleeps 5 s) |
//! | `readrandom` (`--reads=N/5`) | readrandom | |
//! | `readseq` (`--reads=N`) | readseq | |
//! | `seekrandom` (`--reads=N/10 --seek_nexts=10`) | seekrandom | |
//! | `readwhilewriting` (`--reads=N/5`) | readwhilewriting | |
//!
//! db_bench's `readwhilewriting` with `--threads=1` runs one reader and one
//! writer thread; the writer overwrites random keys, unthrottled, until the
//! reader is done, and its writes are left out of the printed figure, as the
//! in-process harness leaves them out of `ops`. db_bench prints no count of
//! them, so its writer's pace is not reported. Its reads draw keys over all
//! N, of which 86% or more exist by then, so its hits are not comparable.
//!
//! Disk bytes count every file of the database folder except RocksDB's text
//! info logs (`LOG`, `LOG.old.*`), which grow with every invocation. Write
//! amplification is not reported: db_bench's compaction statistics cover one
//! process, and every workload here is a process of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::memory::{Memory, Sampler};
use super::workloads::{Measured, RunReport, SEEK_ENTRIES};
use crate::error::{Error, Result};

/// Where a db_bench binary is, if any: `$DB_BENCH`, else `/usr/bin/db_bench`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DB_BENCH") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let p = PathBuf::from("/usr/bin/db_bench");
    p.is_file().then_some(p)
}

/// The column label: says which build it is.
pub fn label(path: &Path) -> String {
    if path == Path::new("/usr/bin/db_bench") {
        "db_bench (Debian rocksdb-tools 7.8.3, assertions on: ~1.3x slower than a release build)".to_string()
    } else {
        format!("db_bench ({})", path.display())
    }
}

/// One benchmark's result line, as db_bench prints it:
/// `readrandom   :       1.769 micros/op 565210 ops/sec 0.354 seconds 200000 operations;   62.5 MB/s (126342 of 200000 found)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    /// The `ops/sec` figure.
    pub ops_per_sec: f64,
    /// The `operations` count, when printed.
    pub operations: Option<u64>,
    /// `X` of `(X of Y found)`, when printed (point reads and seeks).
    pub found: Option<u64>,
}

/// Finds the result line of `benchmark` in db_bench's standard output.
pub fn parse_line(stdout: &str, benchmark: &str) -> Option<Line> {
    let line = stdout.lines().find(|l| {
        let mut parts = l.splitn(2, ':');
        parts.next().map(str::trim) == Some(benchmark) && parts.next().is_some_and(|rest| rest.contains("ops/sec"))
    })?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |unit: &str| -> Option<&str> {
        let at = words.iter().position(|w| w.trim_end_matches(';') == unit)?;
        words.get(at.checked_sub(1)?).copied()
    };
    let ops_per_sec: f64 = before("ops/sec")?.parse().ok()?;
    let operations = before("operations").and_then(|w| w.parse().ok());
    let found = line.rfind('(').and_then(|at| {
        let inner = line.get(at + 1..)?;
        let mut w = inner.split_whitespace();
        let found: u64 = w.next()?.parse().ok()?;
        (w.next() == Some("of")).then_some(found)
    });
    Some(Line {
        ops_per_sec,
        operations,
        found,
    })
}

/// Bytes of the database's files under `dir`, without RocksDB's text info
/// logs (`LOG`, `LOG.old.*`): they are diagnostics, and every invocation adds one.
pub fn db_disk_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let meta = entry.metadata().map_err(|e| Error::io(entry.path(), e))?;
        if meta.is_dir() {
            total += db_disk_bytes(&entry.path())?;
        } else if !entry.file_name().to_string_lossy().starts_with("LOG") {
            total += meta.len();
        }
    }
    Ok(total)
}

/// What one db_bench process printed and used.
#[derive(Debug)]
struct Invocation {
    stdout: String,
    memory: Memory,
}

impl Invocation {
    fn line(&self, benchmark: &str) -> Result<Line> {
        parse_line(&self.stdout, benchmark).ok_or_else(|| {
            Error::Peer(format!(
                "db_bench printed no result line for {benchmark}; its output ended with:\n{}",
                tail(&self.stdout)
            ))
        })
    }
}

fn tail(text: &str) -> &str {
    let from = text.len().saturating_sub(1500);
    let from = (from..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text.get(from..).unwrap_or_default()
}

/// The command line of one invocation: the options, with data blocks
/// compressed by `compression` (`none` or `lz4`) and values of `value_bytes`
/// (`--value_size`), nothing else changed.
#[expect(clippy::too_many_arguments, reason = "one argument per db_bench option it sets")]
fn command(
    bin: &Path,
    db: &Path,
    num: u64,
    benchmarks: &str,
    fresh: bool,
    reads: u64,
    seed: u64,
    compression: &str,
    value_bytes: usize,
) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--benchmarks={benchmarks}"))
        .arg(format!("--db={}", db.display()))
        .arg(format!("--num={num}"))
        .arg(format!("--reads={reads}"))
        .arg(format!("--use_existing_db={}", u8::from(!fresh)))
        .arg(format!("--seed={seed}"))
        .arg("--key_size=16")
        .arg(format!("--value_size={value_bytes}"))
        .arg(format!("--compression_type={compression}"))
        .arg("--bloom_bits=10")
        .arg("--block_size=4096")
        .arg("--write_buffer_size=67108864")
        .arg("--sync=0")
        .arg("--disable_wal=0")
        .arg("--threads=1")
        .arg(format!("--seek_nexts={}", SEEK_ENTRIES - 1));
    cmd
}

/// Runs one db_bench process to its end, sampling its memory as it goes.
fn invoke(bin: &Path, mut cmd: Command, benchmarks: &str) -> Result<Invocation> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(bin, e))?;
    // VmHWM only grows, so the last sample before the process ends sees its
    // peak (a zombie has no memory fields, and the sampler skips it).
    let sampler = Sampler::start(child.id().to_string());
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let memory = sampler.stop();
    let output = waiter
        .join()
        .map_err(|_| Error::Peer("db_bench waiter panicked".into()))?
        .map_err(|e| Error::io(bin, e))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::Peer(format!(
            "db_bench --benchmarks={benchmarks} failed: {}\nstdout ends:\n{}\nstderr ends:\n{}",
            output.status,
            tail(&stdout),
            tail(&stderr)
        )));
    }
    Ok(Invocation { stdout, memory })
}

fn measured(workload: &str, expected_ops: u64, line: &Line) -> Measured {
    let ops = line.operations.unwrap_or(expected_ops);
    Measured {
        workload: workload.to_string(),
        ops,
        seconds: if line.ops_per_sec > 0.0 {
            ops as f64 / line.ops_per_sec
        } else {
            0.0
        },
        found: line.found.unwrap_or(0),
        writes: 0,
    }
}

/// One run of every workload through db_bench, in fresh folders under `dir`;
/// `seed` makes the run's keys repeatable (each invocation gets its own seed,
/// so reads do not replay the fill's key sequence); `cache` is the block
/// cache in bytes (`None`: db_bench's default, 8 MiB); values are
/// `value_bytes` long.
pub fn run_all(
    bin: &Path,
    dir: &Path,
    num: u64,
    seed: u64,
    cache: Option<u64>,
    compression: cellar_engine::Compression,
    value_bytes: usize,
) -> Result<RunReport> {
    let codec = compression.to_string();
    let mut report = RunReport::default();
    let mut peak = Memory::default();
    let mut track = |inv: &Invocation| peak = peak.max(inv.memory);
    let base = seed.wrapping_mul(1000);
    let invoke = |db: &Path, benchmarks: &str, fresh: bool, reads: u64, seed: u64| {
        let mut cmd = command(bin, db, num, benchmarks, fresh, reads, seed, &codec, value_bytes);
        if let Some(bytes) = cache {
            cmd.arg(format!("--cache_size={bytes}"));
        }
        invoke(bin, cmd, benchmarks)
    };

    // fillseq: fill and flush, measure; compact, measure; remove.
    let seq = dir.join("fillseq");
    let inv = invoke(&seq, "fillseq,flush", true, num, base + 1)?;
    track(&inv);
    report.workloads.push(measured("fillseq", num, &inv.line("fillseq")?));
    let fill = db_disk_bytes(&seq)?;
    track(&invoke(&seq, "compact", false, num, base + 2)?);
    report.fillseq_disk = (fill, db_disk_bytes(&seq)?);
    report.live_entries.0 = num;
    std::fs::remove_dir_all(&seq).map_err(|e| Error::io(&seq, e))?;

    // fillrandom: fill and flush, measure; compact, count the distinct keys, measure.
    let db = dir.join("fillrandom");
    let inv = invoke(&db, "fillrandom,flush", true, num, base + 3)?;
    report.fillrandom_memory = Some(inv.memory);
    track(&inv);
    report
        .workloads
        .push(measured("fillrandom", num, &inv.line("fillrandom")?));
    let fill = db_disk_bytes(&db)?;
    let inv = invoke(&db, "compact,readseq", false, num, base + 4)?;
    track(&inv);
    report.fillrandom_disk = (fill, db_disk_bytes(&db)?);
    report.live_entries.1 = inv.line("readseq")?.operations.unwrap_or(0);

    // overwrite, then flush and let compactions finish (untimed), as the
    // in-process harness flushes and waits before its reads.
    let inv = invoke(&db, "overwrite,flush,waitforcompaction", false, num, base + 5)?;
    track(&inv);
    report
        .workloads
        .push(measured("overwrite", num, &inv.line("overwrite")?));

    for (i, (workload, reads)) in [
        ("readrandom", (num / 5).max(1)),
        ("readseq", num),
        ("seekrandom", (num / 10).max(1)),
        ("readwhilewriting", (num / 5).max(1)),
    ]
    .into_iter()
    .enumerate()
    {
        let inv = invoke(&db, workload, false, reads, base + 6 + i as u64)?;
        track(&inv);
        report.workloads.push(measured(workload, reads, &inv.line(workload)?));
    }
    std::fs::remove_dir_all(&db).map_err(|e| Error::io(&db, e))?;
    report.memory = (peak.hwm_kib > 0).then_some(peak);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\
Keys:       16 bytes each (+ 0 bytes user-defined timestamp)
Read rate: 0 ops/second
WARNING: Assertions are enabled; benchmarks unnecessarily slow
------------------------------------------------
DB path: [/tmp/x]
fillrandom   :       4.442 micros/op 225135 ops/sec 0.888 seconds 200000 operations;   24.9 MB/s
flush memtable
readrandom   :       3.120 micros/op 320512 ops/sec 0.124 seconds 40000 operations;   24.0 MB/s (25291 of 40000 found)
compact      :   43363.000 micros/op 23 ops/sec 0.043 seconds 1 operations;
";

    #[test]
    fn parses_the_result_lines() {
        assert_eq!(
            parse_line(OUTPUT, "fillrandom"),
            Some(Line {
                ops_per_sec: 225135.0,
                operations: Some(200000),
                found: None
            })
        );
        assert_eq!(
            parse_line(OUTPUT, "readrandom"),
            Some(Line {
                ops_per_sec: 320512.0,
                operations: Some(40000),
                found: Some(25291)
            })
        );
        assert_eq!(parse_line(OUTPUT, "compact").map(|l| l.operations), Some(Some(1)));
        // "Read rate: 0 ops/second" is no result line, nor is a missing benchmark.
        assert_eq!(parse_line(OUTPUT, "Read rate"), None);
        assert_eq!(parse_line(OUTPUT, "seekrandom"), None);
    }

    #[test]
    fn measured_takes_db_bench_operation_count() {
        let line = Line {
            ops_per_sec: 1000.0,
            operations: Some(500),
            found: Some(7),
        };
        let m = measured("readseq", 900, &line);
        assert_eq!((m.ops, m.found), (500, 7));
        assert!((m.ops_per_sec() - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn the_command_carries_the_benchmark_options() {
        let cmd = command(
            Path::new("/bin/db_bench"),
            Path::new("/d"),
            100,
            "seekrandom",
            false,
            10,
            3,
            "none",
            100,
        );
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        for want in [
            "--benchmarks=seekrandom",
            "--db=/d",
            "--num=100",
            "--reads=10",
            "--use_existing_db=1",
            "--key_size=16",
            "--value_size=100",
            "--compression_type=none",
            "--bloom_bits=10",
            "--block_size=4096",
            "--write_buffer_size=67108864",
            "--sync=0",
            "--disable_wal=0",
            "--seek_nexts=10",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing from {args:?}");
        }
    }
}
