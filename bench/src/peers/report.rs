//! The db_bench workloads' report: the lines a child prints, the check that
//! every engine found the same entries, and the tables of medians.

use std::fmt::Write as _;
use std::path::Path;

use super::memory::Memory;
use super::workloads::{self, Measured, RunReport, WORKLOADS};
use super::{extra_note, human, median_of, mib, ratio, read_path_with, Config, Runs, CELLAR_TIERED, PEERS, SAME_KEYS};
use crate::error::{Error, Result};
use crate::progress::Progress;
use cellar_engine::Compression;

/// The read workloads, whose entries found every engine must agree on.
pub const READS: [&str; 4] = ["readrandom", "readseq", "seekrandom", "readwhilewriting"];

/// Runs every workload on one in-process engine, values of `value_bytes`,
/// and returns the report in the line format [`parse`] reads. This is what a
/// child process does.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per option of the child's command line"
)]
pub fn child_main(
    engine: &str,
    dir: &Path,
    num: u64,
    seed: u64,
    cache: Option<u64>,
    compression: Compression,
    value_bytes: usize,
    progress: &dyn Progress,
) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let open = |d: &Path| super::open_with(engine, d, cache, compression);
    // With compression, values compress as db_bench's do (its default
    // `--compression_ratio=0.5`); without, they are random bytes.
    let values = match compression {
        Compression::None => workloads::ValueKind::Random,
        _ => workloads::ValueKind::HalfCompressible,
    };
    let report = workloads::run_all(&open, dir, num, seed, values, value_bytes, progress)?;
    Ok(format(&report))
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn memory_line(which: &str, m: Option<Memory>) -> String {
    match m {
        Some(m) => format!("memory {which} {} {} {}", m.anon_kib, m.file_kib, m.hwm_kib),
        None => format!("memory {which} - - -"),
    }
}

/// The line format a child prints.
pub fn format(r: &RunReport) -> String {
    let mut out = String::new();
    for m in &r.workloads {
        let _ = writeln!(
            out,
            "workload {} {} {} {} {}",
            m.workload, m.ops, m.seconds, m.found, m.writes
        );
    }
    let _ = writeln!(out, "disk fillseq {} {}", r.fillseq_disk.0, r.fillseq_disk.1);
    let _ = writeln!(out, "disk fillrandom {} {}", r.fillrandom_disk.0, r.fillrandom_disk.1);
    let _ = writeln!(out, "live {} {}", r.live_entries.0, r.live_entries.1);
    let _ = writeln!(out, "{}", memory_line("fillrandom", r.fillrandom_memory));
    let _ = writeln!(out, "{}", memory_line("run", r.memory));
    let _ = writeln!(out, "wamp {}", opt(r.write_amplification));
    out
}

fn num<T: std::str::FromStr>(w: Option<&str>) -> Result<T> {
    w.and_then(|w| w.parse().ok())
        .ok_or_else(|| Error::Peer(format!("bad report field {w:?}")))
}

/// Reads what [`format()`] wrote.
pub fn parse(text: &str) -> Result<RunReport> {
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
                    writes: num(w.next())?,
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
            Some("memory") => {
                let which = w.next();
                let fields: Vec<Option<u64>> = w.map(|f| f.parse().ok()).collect();
                let memory = match fields.as_slice() {
                    [Some(anon_kib), Some(file_kib), Some(hwm_kib)] => Some(Memory {
                        anon_kib: *anon_kib,
                        file_kib: *file_kib,
                        hwm_kib: *hwm_kib,
                    }),
                    _ => None,
                };
                if which == Some("fillrandom") {
                    r.fillrandom_memory = memory;
                } else {
                    r.memory = memory;
                }
            }
            Some("wamp") => r.write_amplification = w.next().and_then(|w| w.parse().ok()),
            _ => {}
        }
    }
    if r.workloads.len() != WORKLOADS.len() {
        return Err(Error::Peer(format!("a child reported {} workloads", r.workloads.len())));
    }
    Ok(r)
}

fn found(report: &RunReport, workload: &str) -> Option<u64> {
    report.workload(workload).map(|m| m.found)
}

/// Checks that the engines that ran the same keys found the same entries on
/// every read workload, run by run (run `i` of every engine uses seed `i`),
/// and says what they found. A disagreement is an error: an engine that
/// answers "not found" quickly must not look fast.
pub fn check_hits(runs: &Runs) -> Result<String> {
    let engines: Vec<&str> = SAME_KEYS.iter().copied().filter(|e| runs.contains_key(*e)).collect();
    let rounds = engines
        .iter()
        .filter_map(|e| runs.get(*e).map(Vec::len))
        .min()
        .unwrap_or(0);
    let mut first_round = Vec::new();
    for round in 0..rounds {
        for w in READS {
            let counts: Vec<(&str, Option<u64>)> = engines
                .iter()
                .map(|e| (*e, runs.get(*e).and_then(|r| r.get(round)).and_then(|r| found(r, w))))
                .collect();
            let Some((_, reference)) = counts.first().copied() else {
                continue;
            };
            if counts.iter().any(|(_, c)| *c != reference) {
                let list: Vec<String> = counts.iter().map(|(e, c)| format!("{e} {}", opt(*c))).collect();
                return Err(Error::Peer(format!(
                    "engines disagree on {w} in run {}: {}",
                    round + 1,
                    list.join(", ")
                )));
            }
            if round == 0 {
                first_round.push(format!("{w} {}", opt(reference)));
            }
        }
    }
    Ok(format!(
        "hits checked: {} found the same entries on every read workload in each of {} run(s) (run 1: {})",
        engines.join(", "),
        rounds,
        first_round.join(", ")
    ))
}

/// Median ops/s of one workload of one engine.
pub fn median_ops(reports: &[RunReport], workload: &str) -> f64 {
    median_of(reports, |r| r.workload(workload).map(Measured::ops_per_sec)).unwrap_or(0.0)
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

fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

/// A table of median ops/s: one row per workload, one column per engine,
/// then `cellar/<peer>` for each peer given.
fn throughput_table(out: &mut String, engines: &[&String], peers: &[&String], runs: &Runs) {
    let reports = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    let mut header = format!("{:<16}", "workload");
    for e in engines {
        let _ = write!(header, " {e:>15}");
    }
    for p in peers {
        let _ = write!(header, " {:>15}", format!("cellar/{p}"));
    }
    let _ = writeln!(out, "{header}");
    for w in WORKLOADS {
        let mut line = format!("{w:<16}");
        for e in engines {
            let _ = write!(line, " {:>15}", human(median_ops(reports(e), w)));
        }
        for p in peers {
            let r = ratio(median_ops(reports("cellar"), w), median_ops(reports(p), w));
            let _ = write!(line, " {r:>15}");
        }
        let _ = writeln!(out, "{line}");
    }
}

/// The pace of `readwhilewriting`'s writer thread, for each engine whose
/// reads the table above shows ([`super::writer_pace_line`]).
fn writer_pace(out: &mut String, engines: &[&String], runs: &Runs) {
    let reports = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    super::writer_pace_line(out, engines, |e| {
        median_of(reports(e), |r| {
            let m = r.workload("readwhilewriting")?;
            (m.seconds > 0.0).then(|| m.writes as f64 / m.seconds)
        })
    });
}

/// The report: ops/s per workload and engine with cellar/peer ratios at the
/// same durability, the extras apart, disk bytes and space amplification,
/// memory and write amplification; `hits` is [`check_hits`]'s summary.
pub fn render(config: &Config, runs: &Runs, hits: &str) -> String {
    let engines: Vec<&String> = config.engines.iter().filter(|e| runs.contains_key(*e)).collect();
    let main: Vec<&String> = engines
        .iter()
        .copied()
        .filter(|e| *e == "cellar" || *e == CELLAR_TIERED || PEERS.contains(&e.as_str()))
        .collect();
    let peers: Vec<&String> = if runs.contains_key("cellar") {
        main.iter().copied().filter(|e| PEERS.contains(&e.as_str())).collect()
    } else {
        Vec::new()
    };
    let extras: Vec<&String> = engines.iter().copied().filter(|e| extra_note(e).is_some()).collect();
    let reports = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "peers: {} keys ({} B keys, {} B values), {} run(s) per engine, medians in ops/s",
        config.num,
        workloads::KEY_BYTES,
        config.shape.value_bytes,
        config.runs
    );
    let _ = writeln!(
        out,
        "durability: every engine in a ratio hands each write to the OS before it returns, no fsync \
         (cellar SyncPolicy::Never, fjall's default journal persist, RocksDB WAL on without sync)"
    );
    if config.compression != Compression::None {
        let _ = writeln!(
            out,
            "compression: {} on every engine's data blocks (index blocks raw), the same 4 KiB blocks and 10 bloom \
             bits; values half compressible, as db_bench's default --compression_ratio=0.5",
            config.compression
        );
    }
    let _ = writeln!(out, "read path and cache:");
    for e in &engines {
        let _ = writeln!(out, "  {e:<16} {}", read_path_with(e, config.cache, config.compression));
    }
    let _ = writeln!(out, "{hits}\n");
    throughput_table(&mut out, &main, &peers, runs);
    writer_pace(&mut out, &main, runs);

    if !extras.is_empty() {
        let _ = writeln!(out, "\nextras, in no ratio:");
        for e in &extras {
            let label = if *e == "db_bench" {
                super::db_bench::find().map_or_else(|| e.to_string(), |p| super::db_bench::label(&p))
            } else {
                e.to_string()
            };
            let _ = writeln!(out, "  {label}: {}", extra_note(e).unwrap_or_default());
        }
        throughput_table(&mut out, &extras, &[], runs);
    }

    let entry_bytes = config.shape.entry_bytes();
    let _ = writeln!(
        out,
        "\nspace (medians; live = {entry_bytes} B x distinct entries; fillrandom compacted before overwrite)"
    );
    let _ = writeln!(
        out,
        "{:<16} {:<11} {:>10} {:>10} {:>10} {:>8}",
        "engine", "workload", "live", "after fill", "compacted", "amp"
    );
    for e in &engines {
        for (w, live) in [("fillseq", 0usize), ("fillrandom", 1)] {
            let Some((fill, compacted)) = median_disk(reports(e), w) else {
                continue;
            };
            let live_bytes = median_of(reports(e), |r| {
                Some((if live == 0 { r.live_entries.0 } else { r.live_entries.1 } * entry_bytes) as f64)
            })
            .unwrap_or(0.0);
            let amp = if live_bytes > 0.0 {
                compacted as f64 / live_bytes
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "{:<16} {:<11} {:>10} {:>10} {:>10} {:>7.3}x",
                e,
                w,
                mb(live_bytes),
                mb(fill as f64),
                mb(compacted as f64),
                amp
            );
        }
    }

    let _ = writeln!(
        out,
        "\nmemory and writes (medians; peaks of RSS, of its anonymous and its file part)"
    );
    let _ = writeln!(
        out,
        "{:<16} {:>15} {:>12} {:>12} {:>12} {:>10}",
        "engine", "fillrandom RSS", "run RSS", "run anon", "run file", "write amp"
    );
    for e in &engines {
        let pick = |f: fn(&RunReport) -> Option<u64>| median_of(reports(e), |r| f(r).map(|k| k as f64));
        let cell = |v: Option<f64>| v.map_or("-".into(), mib);
        let wamp = median_of(reports(e), |r| r.write_amplification);
        let _ = writeln!(
            out,
            "{:<16} {:>15} {:>12} {:>12} {:>12} {:>10}",
            e,
            cell(pick(|r| r.fillrandom_memory.map(|m| m.hwm_kib))),
            cell(pick(|r| r.memory.map(|m| m.hwm_kib))),
            cell(pick(|r| r.memory.map(|m| m.anon_kib))),
            cell(pick(|r| r.memory.map(|m| m.file_kib))),
            wamp.map_or("-".into(), |w| format!("{w:.2}")),
        );
    }
    let _ = writeln!(out, "{}", super::RSS_NOTE);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(found: [u64; 4]) -> RunReport {
        let mut r = RunReport::default();
        for w in WORKLOADS {
            let f = READS.iter().position(|r| *r == w).and_then(|i| found.get(i)).copied();
            r.workloads.push(Measured {
                workload: w.to_string(),
                ops: 10,
                seconds: 1.0,
                found: f.unwrap_or(0),
                writes: 0,
            });
        }
        r
    }

    #[test]
    fn engines_that_found_the_same_entries_pass_the_hit_check() -> Result<()> {
        let mut runs = Runs::new();
        runs.insert("cellar".into(), vec![report([5, 9, 33, 5]), report([6, 9, 32, 6])]);
        runs.insert("fjall".into(), vec![report([5, 9, 33, 5]), report([6, 9, 32, 6])]);
        // cellar-wide counts cells of other rows: not compared.
        runs.insert("cellar-wide".into(), vec![report([1, 2, 3, 4]), report([1, 2, 3, 4])]);
        assert_eq!(
            check_hits(&runs)?,
            "hits checked: cellar, fjall found the same entries on every read workload in each of 2 run(s) \
             (run 1: readrandom 5, readseq 9, seekrandom 33, readwhilewriting 5)"
        );
        Ok(())
    }

    #[test]
    fn an_engine_that_finds_less_fails_the_run() {
        let mut runs = Runs::new();
        runs.insert("cellar".into(), vec![report([5, 9, 33, 5]), report([6, 9, 32, 6])]);
        runs.insert("rocksdb".into(), vec![report([5, 9, 33, 5]), report([6, 9, 31, 6])]);
        let err = check_hits(&runs).map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("engines disagree on seekrandom in run 2: cellar 32, rocksdb 31".to_string())
        );
    }

    #[test]
    fn a_report_round_trips_through_its_lines() -> Result<()> {
        let mut r = report([1, 2, 3, 4]);
        r.fillseq_disk = (10, 9);
        r.fillrandom_disk = (8, 7);
        r.live_entries = (5, 4);
        r.fillrandom_memory = Some(Memory {
            anon_kib: 1,
            file_kib: 2,
            hwm_kib: 3,
        });
        r.write_amplification = Some(2.5);
        assert_eq!(parse(&format(&r))?, r);
        Ok(())
    }
}
