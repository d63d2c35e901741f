//! RocksDB through its own `db_bench`, run as a subprocess when `$DB_BENCH` or
//! `/usr/bin/db_bench` exists (the `rocksdb` feature would link the library
//! instead, but it builds RocksDB from source). Debian's `rocksdb-tools` 7.8.3
//! is built with assertions on and is about 1.3x slower than a release build,
//! so its column says so.
//!
//! Options as db_bench's defaults plus the benchmark's: leveled compaction,
//! 4 KiB blocks, bloom 10 bits per key, 64 MiB write buffer, no compression,
//! WAL on, no sync. Each workload is one invocation on the same database
//! folder (`--use_existing_db=1` after the fills), so its own timer excludes
//! opening and closing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::workloads::{disk_bytes, rss_field, Measured, RunReport, SEEK_ENTRIES};
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
        "db_bench (Debian 7.8.3, asserts on)".to_string()
    } else {
        format!("db_bench ({})", path.display())
    }
}

struct Invocation {
    ops_per_sec: Option<f64>,
    peak_rss_kib: Option<u64>,
}

fn invoke(bin: &Path, db: &Path, num: u64, benchmark: &str, fresh: bool, reads: u64) -> Result<Invocation> {
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--benchmarks={benchmark}"))
        .arg(format!("--db={}", db.display()))
        .arg(format!("--num={num}"))
        .arg(format!("--reads={reads}"))
        .arg(format!("--use_existing_db={}", u8::from(!fresh)))
        .arg("--key_size=16")
        .arg("--value_size=100")
        .arg("--compression_type=none")
        .arg("--bloom_bits=10")
        .arg("--block_size=4096")
        .arg("--write_buffer_size=67108864")
        .arg("--sync=0")
        .arg("--disable_wal=0")
        .arg("--threads=1")
        .arg(format!("--seek_nexts={}", SEEK_ENTRIES - 1))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| Error::io(bin, e))?;
    let status_path = format!("/proc/{}/status", child.id());
    let waiter = std::thread::spawn(move || child.wait_with_output());
    let mut peak = None;
    while !waiter.is_finished() {
        if let Some(kib) = rss_field(&status_path, "VmHWM:") {
            peak = Some(peak.map_or(kib, |p: u64| p.max(kib)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = waiter
        .join()
        .map_err(|_| Error::Peer("db_bench waiter panicked".into()))?
        .map_err(|e| Error::io(bin, e))?;
    if !output.status.success() {
        return Err(Error::Peer(format!("db_bench {benchmark} failed: {}", output.status)));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let ops_per_sec = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(benchmark) && l.contains("ops/sec"))
        .and_then(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| w.starts_with("ops/sec"))?;
            words.get(at.checked_sub(1)?)?.parse().ok()
        });
    Ok(Invocation {
        ops_per_sec,
        peak_rss_kib: peak,
    })
}

fn measured(workload: &str, ops: u64, inv: &Invocation) -> Measured {
    let rate = inv.ops_per_sec.unwrap_or(0.0);
    Measured {
        workload: workload.to_string(),
        ops,
        seconds: if rate > 0.0 { ops as f64 / rate } else { 0.0 },
        found: 0,
    }
}

/// One run of every workload through db_bench, in folders under `dir`.
pub fn run_all(bin: &Path, dir: &Path, num: u64) -> Result<RunReport> {
    let mut report = RunReport::default();
    let mut peak = 0u64;
    let mut track = |inv: &Invocation| peak = peak.max(inv.peak_rss_kib.unwrap_or(0));

    let seq = dir.join("fillseq");
    let inv = invoke(bin, &seq, num, "fillseq", true, num)?;
    track(&inv);
    report.workloads.push(measured("fillseq", num, &inv));
    let fill = disk_bytes(&seq)?;
    track(&invoke(bin, &seq, num, "compact", false, num)?);
    report.fillseq_disk = (fill, disk_bytes(&seq)?);
    report.live_entries.0 = num;
    std::fs::remove_dir_all(&seq).map_err(|e| Error::io(&seq, e))?;

    let db = dir.join("fillrandom");
    let inv = invoke(bin, &db, num, "fillrandom", true, num)?;
    report.fillrandom_rss_kib = inv.peak_rss_kib;
    track(&inv);
    report.workloads.push(measured("fillrandom", num, &inv));
    let fill = disk_bytes(&db)?;
    track(&invoke(bin, &db, num, "compact", false, num)?);
    report.fillrandom_disk = (fill, disk_bytes(&db)?);
    // db_bench does not say how many distinct keys it wrote; rand() % N leaves ~1 - 1/e.
    report.live_entries.1 = (num as f64 * (1.0 - (-1.0f64).exp())) as u64;

    for (workload, ops) in [
        ("overwrite", num),
        ("readrandom", (num / 5).max(1)),
        ("readseq", num),
        ("seekrandom", (num / 10).max(1)),
    ] {
        let inv = invoke(bin, &db, num, workload, false, ops)?;
        track(&inv);
        report.workloads.push(measured(workload, ops, &inv));
    }
    std::fs::remove_dir_all(&db).map_err(|e| Error::io(&db, e))?;
    report.peak_rss_kib = Some(peak);
    Ok(report)
}
