//! The scale run: db_bench's shape at many keys, and the shape of the tree
//! after every phase.
//!
//! At 1M keys every engine's tree is small: a few files, one or two levels.
//! At 10M keys the compaction strategy shows: a size-tiered tree
//! (`cellar-tiered`) writes less but keeps more sorted runs, so a seek merges
//! more cursors; a leveled tree (`cellar`, whose family default it is, fjall,
//! RocksDB) rewrites more but keeps one run per level.
//! Once a phase's writes pause, cellar's settle at rest
//! (`cellar_engine::Settle`) merges either of its trees into one run, so the
//! settled figures of `cellar` and `cellar-tiered` show that run, not the
//! strategy's shape under writes.
//! This run does `fillrandom`, `overwrite`, `readrandom`, `seekrandom` and
//! `readwhilewriting` (db_bench's, as the db_bench mode runs it: point reads
//! of existing keys while a writer thread overwrites them) on one store, with
//! **no manual compaction**, and after each phase records:
//!
//! * throughput, and the entries the reads found (checked across engines;
//!   under the writer every read must find), and the writer's entries;
//! * **space amplification**: bytes on disk (logs included) / user bytes
//!   (116 B x distinct keys), at the end of the phase and again once the
//!   engine's background flushes and compactions have settled (the wait is
//!   not timed; nothing is flushed or compacted by hand);
//! * **table files**, at both moments;
//! * **read amplification** of a sample of gets and of seeks on the settled
//!   tree ([`ReadAmp`]; n/a where an engine does not count it);
//! * **memory**: the phase's peak RSS (VmHWM, reset at the start of each
//!   phase) and the sampled peaks of its anonymous and file parts
//!   ([`super::memory`]), and both parts once settled.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use super::memory::{self, Memory, Sampler};
use super::read_amp::ReadAmp;
use super::workloads::{self, disk_bytes, key, Adapter, Pace, Rng, Values, SEEK_ENTRIES, VALUE_BYTES};
use super::{human, median_of, mib, ratio, read_path, Config, CELLAR_TIERED, ENTRY_BYTES, PEERS, RSS_NOTE};
use crate::error::{Error, Result};
use crate::progress::Progress;

/// The phases, in order.
pub const PHASES: [&str; 5] = [
    "fillrandom",
    "overwrite",
    "readrandom",
    "seekrandom",
    "readwhilewriting",
];

/// Width of the phase column in the tables: the longest phase's name.
const PHASE_WIDTH: usize = 16;

/// Reads traced after each phase to measure read amplification (untimed).
pub const SAMPLE_READS: u64 = 1000;

/// What one phase did and left behind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Phase {
    /// Phase name.
    pub name: String,
    /// Operations done (puts, gets or seeks).
    pub ops: u64,
    /// Seconds they took.
    pub seconds: f64,
    /// Entries found (reads only).
    pub found: u64,
    /// Entries a writer thread wrote while the reads ran
    /// (`readwhilewriting` only; not in `ops`).
    pub writes: u64,
    /// Distinct keys in the store.
    pub live: u64,
    /// Bytes on disk and table files when the phase ended.
    pub at_end: (u64, u64),
    /// The same once background work settled.
    pub settled: (u64, u64),
    /// Seconds the settling took.
    pub settle_seconds: f64,
    /// Mean cost of a sampled get and of a sampled seek on the settled tree.
    pub get_amp: Option<ReadAmp>,
    /// See `get_amp`.
    pub seek_amp: Option<ReadAmp>,
    /// Peaks during the phase and its settling.
    pub peak: Memory,
    /// Memory once settled.
    pub after: Memory,
}

impl Phase {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        super::per_second(self.ops, self.seconds)
    }
    /// Bytes on disk / user bytes, at the end (`settled` = false) or settled.
    pub fn space_amp(&self, settled: bool) -> f64 {
        let disk = if settled { self.settled.0 } else { self.at_end.0 };
        let user = self.live * ENTRY_BYTES;
        if user > 0 {
            disk as f64 / user as f64
        } else {
            0.0
        }
    }
}

/// Steps between progress updates.
const STEP: u64 = 10_000;

/// Runs the phases on `db` (opened in `dir`) with `num` keys, keys drawn from `seed`.
pub fn run_all(db: &mut dyn Adapter, dir: &Path, num: u64, seed: u64, progress: &dyn Progress) -> Result<Vec<Phase>> {
    let mut rng = Rng::new(seed);
    let mut values = Values::new(&mut rng);
    let mut present = vec![false; num as usize];
    let mut sample_rng = Rng::new(seed ^ 0x5EED);
    let sampler = Sampler::start("self".into());
    let mut phases = Vec::new();
    for name in PHASES {
        memory::reset_peak();
        sampler.reset();
        let ops = match name {
            "readrandom" | "readwhilewriting" => (num / 5).max(1),
            "seekrandom" => (num / 10).max(1),
            _ => num,
        };
        progress.start(name, ops);
        let (mut found, mut writes) = (0, 0);
        let seconds = if name == "readwhilewriting" {
            // The writer overwrites keys that exist, so the distinct keys
            // (and the space amplification's denominator) stay as they are.
            // The list (8 bytes a key) counts in every engine's memory alike.
            let keys = workloads::existing_keys(&present);
            let pace = Pace {
                reads: ops,
                per_key: 1,
                row_bytes: VALUE_BYTES,
            };
            let measured = workloads::read_while_writing(db, &keys, &mut rng, &mut values, pace, progress)?;
            (found, writes) = (measured.found, measured.writes);
            measured.seconds
        } else {
            let start = Instant::now();
            for i in 0..ops {
                let k = rng.below(num);
                match name {
                    "readrandom" => found += u64::from(db.get(&key(k), 0)?),
                    "seekrandom" => found += db.seek(&key(k), SEEK_ENTRIES)?,
                    _ => {
                        db.put(&key(k), values.next(VALUE_BYTES))?;
                        if let Some(p) = present.get_mut(k as usize) {
                            *p = true;
                        }
                    }
                }
                if i % STEP == STEP - 1 {
                    progress.advance(STEP);
                }
            }
            start.elapsed().as_secs_f64()
        };
        progress.finish();
        let at_end = (disk_bytes(dir)?, db.table_files()?);
        let settling = Instant::now();
        db.settle()?;
        let settle_seconds = settling.elapsed().as_secs_f64();
        let settled = (disk_bytes(dir)?, db.table_files()?);
        let (mut gets, mut seeks) = (Vec::new(), Vec::new());
        for _ in 0..SAMPLE_READS {
            gets.extend(db.get_cost(&key(sample_rng.below(num)))?);
            seeks.extend(db.seek_cost(&key(sample_rng.below(num)), SEEK_ENTRIES)?);
        }
        phases.push(Phase {
            name: name.to_string(),
            ops,
            seconds,
            found,
            writes,
            live: present.iter().filter(|p| **p).count() as u64,
            at_end,
            settled,
            settle_seconds,
            get_amp: ReadAmp::mean(&gets),
            seek_amp: ReadAmp::mean(&seeks),
            peak: sampler.peaks(),
            after: Memory::of("self").unwrap_or_default(),
        });
    }
    Ok(phases)
}

/// Runs the scale phases on one in-process engine and returns the lines
/// [`parse`] reads. This is what a child process does.
pub fn child_main(
    engine: &str,
    dir: &Path,
    num: u64,
    seed: u64,
    cache: Option<u64>,
    progress: &dyn Progress,
) -> Result<String> {
    let store = dir.join("store");
    std::fs::create_dir_all(&store).map_err(|e| Error::io(&store, e))?;
    let mut db = super::open(engine, &store, cache)?;
    let phases = run_all(db.as_mut(), &store, num, seed, progress)?;
    Ok(format(&phases))
}

fn amp_line(out: &mut String, phase: &str, what: &str, amp: Option<ReadAmp>) {
    if let Some(a) = amp {
        let _ = writeln!(out, "amp {phase} {what} {} {} {}", a.sources, a.searched, a.data_blocks);
    }
}

/// The lines a child prints.
pub fn format(phases: &[Phase]) -> String {
    let mut out = String::new();
    for p in phases {
        let _ = writeln!(
            out,
            "phase {} {} {} {} {} {} {} {} {} {} {}",
            p.name,
            p.ops,
            p.seconds,
            p.found,
            p.writes,
            p.live,
            p.at_end.0,
            p.at_end.1,
            p.settled.0,
            p.settled.1,
            p.settle_seconds
        );
        amp_line(&mut out, &p.name, "get", p.get_amp);
        amp_line(&mut out, &p.name, "seek", p.seek_amp);
        let _ = writeln!(
            out,
            "memory {} {} {} {} {} {} {}",
            p.name,
            p.peak.anon_kib,
            p.peak.file_kib,
            p.peak.hwm_kib,
            p.after.anon_kib,
            p.after.file_kib,
            p.after.hwm_kib
        );
    }
    out
}

/// Reads what [`format()`] wrote.
pub fn parse(text: &str) -> Result<Vec<Phase>> {
    fn num<T: std::str::FromStr>(w: Option<&str>) -> Result<T> {
        w.and_then(|w| w.parse().ok())
            .ok_or_else(|| Error::Peer(format!("bad scale report field {w:?}")))
    }
    let mut phases: Vec<Phase> = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let tag = w.next();
        if tag == Some("phase") {
            phases.push(Phase {
                name: w.next().unwrap_or_default().to_string(),
                ops: num(w.next())?,
                seconds: num(w.next())?,
                found: num(w.next())?,
                writes: num(w.next())?,
                live: num(w.next())?,
                at_end: (num(w.next())?, num(w.next())?),
                settled: (num(w.next())?, num(w.next())?),
                settle_seconds: num(w.next())?,
                ..Phase::default()
            });
            continue;
        }
        let name = w.next();
        let Some(phase) = phases.iter_mut().find(|p| Some(p.name.as_str()) == name) else {
            continue;
        };
        match tag {
            Some("amp") => {
                let what = w.next();
                let amp = ReadAmp {
                    sources: num(w.next())?,
                    searched: num(w.next())?,
                    data_blocks: num(w.next())?,
                };
                if what == Some("get") {
                    phase.get_amp = Some(amp);
                } else {
                    phase.seek_amp = Some(amp);
                }
            }
            Some("memory") => {
                let mut m = || -> Result<Memory> {
                    Ok(Memory {
                        anon_kib: num(w.next())?,
                        file_kib: num(w.next())?,
                        hwm_kib: num(w.next())?,
                    })
                };
                phase.peak = m()?;
                phase.after = m()?;
            }
            _ => {}
        }
    }
    if phases.len() != PHASES.len() {
        return Err(Error::Peer(format!("a scale child reported {} phases", phases.len())));
    }
    Ok(phases)
}

/// Every scale run of every engine, by engine.
pub type ScaleRuns = std::collections::BTreeMap<String, Vec<Vec<Phase>>>;

/// Runs the scale phases on every engine in turn, each run in a child process.
pub fn run(config: &Config, log: &mut dyn FnMut(&str)) -> Result<ScaleRuns> {
    super::alternate(config, log, |engine, run, dir| {
        let args = config.child_args(engine, run, dir);
        let phases = parse(&super::run_child(
            &config.exe,
            &args,
            &format!("{engine} scale run {}", run + 1),
        )?)?;
        // A long run says what each child found as it ends (the tables come at the end).
        let summary: Vec<String> = phases
            .iter()
            .map(|p| {
                format!(
                    "{} {} ({:.2}x settled)",
                    p.name,
                    human(p.ops_per_sec()),
                    p.space_amp(true)
                )
            })
            .collect();
        eprintln!("peers: {engine} scale run {} done: {}", run + 1, summary.join(", "));
        Ok(phases)
    })
}

/// Checks that every engine found the same entries in each read phase of
/// each run, and says what they found.
pub fn check_hits(runs: &ScaleRuns) -> Result<String> {
    let mut first = Vec::new();
    let reference = runs.iter().next();
    if let Some((ref_engine, ref_runs)) = reference {
        for (engine, engine_runs) in runs {
            for (round, (phases, ref_phases)) in engine_runs.iter().zip(ref_runs).enumerate() {
                for (p, r) in phases.iter().zip(ref_phases) {
                    if (p.found, p.live) != (r.found, r.live) {
                        return Err(Error::Peer(format!(
                            "engines disagree on {} in run {}: {ref_engine} found {} of {} keys, {engine} {} of {}",
                            p.name,
                            round + 1,
                            r.found,
                            r.live,
                            p.found,
                            p.live
                        )));
                    }
                }
            }
        }
        if let Some(phases) = ref_runs.first() {
            for p in phases
                .iter()
                .filter(|p| p.name.starts_with("read") || p.name.starts_with("seek"))
            {
                first.push(format!("{} {}", p.name, p.found));
            }
        }
    }
    Ok(format!(
        "hits checked: {} found the same entries in every read phase of every run (run 1: {})",
        runs.keys().cloned().collect::<Vec<_>>().join(", "),
        first.join(", ")
    ))
}

fn phase_median(runs: &[Vec<Phase>], name: &str, f: impl Fn(&Phase) -> Option<f64>) -> Option<f64> {
    median_of(runs, |r| r.iter().find(|p| p.name == name).and_then(&f))
}

/// How an engine of the scale run compacts.
pub fn compaction(engine: &str) -> &'static str {
    match engine {
        "cellar" => {
            "leveled (its default): level 0 merged into a base level at 4 runs, 256 MiB base, x10 per level, \
             dynamic level sizes (RocksDB's defaults)"
        }
        CELLAR_TIERED => "size-tiered: 4 runs of similar size merged into one",
        "fjall" => "leveled (its default)",
        "rocksdb" => "leveled (db_bench's options: level 0 merged at 4 files, 256 MiB base, x10, dynamic level sizes)",
        _ => "",
    }
}

/// The tables of a scale run.
pub fn render(config: &Config, runs: &ScaleRuns, hits: &str) -> String {
    let engines: Vec<&String> = config.engines.iter().filter(|e| runs.contains_key(*e)).collect();
    // Both cellars hand each write to the OS, as the peers do: each is in a ratio.
    let cellars: Vec<&String> = engines
        .iter()
        .copied()
        .filter(|e| *e == "cellar" || *e == CELLAR_TIERED)
        .collect();
    let peers: Vec<&String> = engines
        .iter()
        .copied()
        .filter(|e| PEERS.contains(&e.as_str()))
        .collect();
    let ratios: Vec<(&String, &String, String)> = cellars
        .iter()
        .flat_map(|c| peers.iter().map(move |p| (*c, *p, format!("{c}/{p}"))))
        .collect();
    let of = |e: &str| runs.get(e).map(Vec::as_slice).unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scale: {} keys of db_bench's shape (16 B keys, 100 B values), {} run(s) per engine, medians; \
         no manual compaction",
        config.num, config.runs
    );
    let _ = writeln!(
        out,
        "durability: every write handed to the OS, no fsync (cellar SyncPolicy::Never, fjall default, \
         RocksDB WAL without sync)"
    );
    let _ = writeln!(out, "read path and cache:");
    for e in &engines {
        let _ = writeln!(out, "  {e:<16} {}", read_path(e, config.cache));
    }
    let _ = writeln!(out, "compaction:");
    for e in &engines {
        let _ = writeln!(out, "  {e:<16} {}", compaction(e));
    }
    let _ = writeln!(out, "{hits}\n");

    let mut header = format!("{:<PHASE_WIDTH$}", "ops/s");
    for e in &engines {
        let _ = write!(header, " {e:>14}");
    }
    for (_, _, label) in &ratios {
        let _ = write!(header, " {label:>w$}", w = label.len().max(15));
    }
    let _ = writeln!(out, "{header}");
    for name in PHASES {
        let ops = |e: &str| phase_median(of(e), name, |p| Some(p.ops_per_sec())).unwrap_or(0.0);
        let mut line = format!("{name:<PHASE_WIDTH$}");
        for e in &engines {
            let _ = write!(line, " {:>14}", human(ops(e)));
        }
        for (c, p, label) in &ratios {
            let _ = write!(line, " {:>w$}", ratio(ops(c), ops(p)), w = label.len().max(15));
        }
        let _ = writeln!(out, "{line}");
    }
    super::writer_pace_line(&mut out, &engines, |e| {
        phase_median(of(e), "readwhilewriting", |p| {
            (p.seconds > 0.0).then(|| p.writes as f64 / p.seconds)
        })
    });

    let _ = writeln!(
        out,
        "\nthe tree after each phase: space amplification = bytes on disk (logs included) / (116 B x distinct \
         keys); files = table files; at the phase's end, then once background work settled (wait not timed)"
    );
    let _ = writeln!(
        out,
        "{:<PHASE_WIDTH$} {:<14} {:>10} {:>8} {:>9} {:>12} {:>11} {:>13} {:>9}",
        "phase",
        "engine",
        "disk end",
        "amp end",
        "files end",
        "disk settled",
        "amp settled",
        "files settled",
        "settle s"
    );
    for name in PHASES {
        for e in &engines {
            let m = |f: fn(&Phase) -> f64| phase_median(of(e), name, |p| Some(f(p))).unwrap_or(0.0);
            let _ = writeln!(
                out,
                "{:<PHASE_WIDTH$} {:<14} {:>7.0} MB {:>7.2}x {:>9.0} {:>9.0} MB {:>10.2}x {:>13.0} {:>9.1}",
                name,
                e,
                m(|p| p.at_end.0 as f64) / 1e6,
                m(|p| p.space_amp(false)),
                m(|p| p.at_end.1 as f64),
                m(|p| p.settled.0 as f64) / 1e6,
                m(|p| p.space_amp(true)),
                m(|p| p.settled.1 as f64),
                m(|p| p.settle_seconds),
            );
        }
    }

    let _ = writeln!(
        out,
        "\nread amplification on the settled tree, mean of {SAMPLE_READS} gets and {SAMPLE_READS} seeks \
         (11 entries) after each phase: sources consulted past their key range / table files searched / \
         data blocks"
    );
    let _ = writeln!(
        out,
        "{:<PHASE_WIDTH$} {:<14} {:>22} {:>22}",
        "phase", "engine", "get (src/files/blocks)", "seek (src/files/blocks)"
    );
    for name in PHASES {
        for e in &engines {
            let amp = |seek: bool| {
                let field = |f: fn(&ReadAmp) -> f64| {
                    phase_median(of(e), name, |p| {
                        if seek { p.seek_amp } else { p.get_amp }.map(|a| f(&a))
                    })
                };
                match (field(|a| a.sources), field(|a| a.searched), field(|a| a.data_blocks)) {
                    (Some(s), Some(f), Some(b)) => format!("{s:.2} / {f:.2} / {b:.2}"),
                    _ => "n/a".into(),
                }
            };
            let _ = writeln!(
                out,
                "{:<PHASE_WIDTH$} {:<14} {:>22} {:>22}",
                name,
                e,
                amp(false),
                amp(true)
            );
        }
    }

    let _ = writeln!(
        out,
        "\nmemory per phase: peak RSS (VmHWM, reset at each phase), sampled peaks of its anonymous and file \
         parts, and both parts once settled"
    );
    let _ = writeln!(
        out,
        "{:<PHASE_WIDTH$} {:<14} {:>10} {:>10} {:>10} {:>11} {:>11}",
        "phase", "engine", "peak RSS", "peak anon", "peak file", "anon after", "file after"
    );
    for name in PHASES {
        for e in &engines {
            let m = |f: fn(&Phase) -> u64| phase_median(of(e), name, |p| Some(f(p) as f64)).map_or("-".into(), mib);
            let _ = writeln!(
                out,
                "{:<PHASE_WIDTH$} {:<14} {:>10} {:>10} {:>10} {:>11} {:>11}",
                name,
                e,
                m(|p| p.peak.hwm_kib),
                m(|p| p.peak.anon_kib),
                m(|p| p.peak.file_kib),
                m(|p| p.after.anon_kib),
                m(|p| p.after.file_kib),
            );
        }
    }
    let _ = writeln!(out, "{RSS_NOTE}");
    out
}
