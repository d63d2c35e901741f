//! `peers`: cellar beside the engines a user would pick instead, in the same
//! run on the same machine, compared like with like.
//!
//! Three benchmarks share this harness:
//! * db_bench's workloads ([`workloads`], [`report`]): flat 16-byte keys and
//!   100-byte values, fills, point reads, a full scan and short seeks;
//! * YCSB's core workloads A to F ([`ycsb`]): records of ten 100-byte fields,
//!   skewed (zipfian) access, updates of one field, short scans;
//! * a scale run ([`scale`]): db_bench's fills and reads at 10M keys with no
//!   manual compaction, recording the shape of the tree after every phase.
//!
//! Like with like means three things. **The same durability**: every engine
//! in a ratio hands each write to the operating system before the write
//! returns, and none syncs (cellar `SyncPolicy::Never`; fjall's default,
//! which persists its journal with `PersistMode::Buffer` on every write;
//! RocksDB with its WAL on and `sync` off). cellar's `SyncPolicy::Buffered`
//! keeps writes in the process and is shown only as a labelled extra. **The
//! same answers**: every engine must find the same entries on every read
//! workload, or the run fails. **Caches said out loud**: cellar reads its
//! tables through a memory map from the OS page cache; fjall and RocksDB copy
//! blocks into a block cache of their own ([`read_path`]), and `--cache data`
//! gives that cache room for all the data.
//!
//! Each run of each engine happens in a child process of the calling binary,
//! so its memory is its own; engines take turns, run after run, and the
//! report gives the median of the runs.
//!
//! The shapes are the benchmarks' standard ones unless a [`Shape`] says
//! otherwise: db_bench's `--value_size`, YCSB's `fieldcount` and
//! `fieldlength` are options of `peers` too, applied to every engine alike,
//! because a store that leads on the standard shape may fall behind on a
//! shape next to it (values of 1000 bytes, rows of a hundred fields).

pub mod cellar;
pub mod db_bench;
pub mod fjall;
pub mod memory;
pub mod read_amp;
pub mod report;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod scale;
pub mod space;
pub mod workloads;
pub mod ycsb;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use cellar_engine::{Compaction, Compression, FamilyOptions, SyncPolicy};
use workloads::{Adapter, RunReport};

/// Bytes of one db_bench entry: 16-byte key + 100-byte value.
pub const ENTRY_BYTES: u64 = (workloads::KEY_BYTES + workloads::VALUE_BYTES) as u64;

/// The shape of what a benchmark writes, the same for every engine: the
/// options db_bench and YCSB themselves have for it. The default is each
/// benchmark's standard shape, the one the README's figures were measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Bytes of a db_bench value (db_bench's `--value_size`; 100).
    pub value_bytes: usize,
    /// Fields of a YCSB record (YCSB's `fieldcount`; 10).
    pub fields: usize,
    /// Bytes of a YCSB field (YCSB's `fieldlength`; 100).
    pub field_bytes: usize,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            value_bytes: workloads::VALUE_BYTES,
            fields: ycsb::record::FIELDS,
            field_bytes: ycsb::record::FIELD_BYTES,
        }
    }
}

impl Shape {
    /// Bytes of one db_bench entry: the 16-byte key and the value.
    pub fn entry_bytes(&self) -> u64 {
        (workloads::KEY_BYTES + self.value_bytes) as u64
    }
}

/// The engines run in process (by a child of this binary); `rocksdb` too when
/// the `rocksdb` feature built it.
pub const IN_PROCESS: &[&str] = &[
    "cellar",
    "cellar-buffered",
    "cellar-tiered",
    "cellar-wide",
    "fjall",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
];

/// The engines a ratio compares `cellar` with: same keys, same durability.
pub const PEERS: &[&str] = &["fjall", "rocksdb"];

/// cellar with size-tiered compaction (runs of similar size merged), where
/// `cellar` has the family default, leveled (RocksDB's default sizes: a 256 MiB
/// base, ×10 per level, dynamic level sizes), as fjall and RocksDB compact; of
/// the same durability as `cellar`, so in the scale run's ratios too.
pub const CELLAR_TIERED: &str = "cellar-tiered";

/// Engines that run the same keys as `cellar` and so must find the same
/// entries (`cellar-wide` counts cells of wider rows; db_bench draws its own keys).
pub const SAME_KEYS: &[&str] = &["cellar", "cellar-buffered", "cellar-tiered", "fjall", "rocksdb"];

/// Why an engine is shown but never in a ratio.
pub fn extra_note(engine: &str) -> Option<&'static str> {
    match engine {
        "cellar-buffered" => Some(
            "cellar with SyncPolicy::Buffered: writes wait in a 64 KiB buffer in the process, \
             less durable than every peer",
        ),
        "cellar-wide" => Some("N/10 rows of 10 columns: ops counted in cells; seekrandom reads 11 cells from a row"),
        "db_bench" => Some("RocksDB's own tool: draws its own keys, so its hits are not compared"),
        _ => None,
    }
}

/// Opens an in-process engine by name; `cache` is the block cache of the
/// engines that have one (`None`: their default). Nothing is compressed.
pub fn open(engine: &str, dir: &Path, cache: Option<u64>) -> Result<Box<dyn Adapter>> {
    open_with(engine, dir, cache, Compression::None)
}

/// [`open`], every engine compressing its data blocks with `compression`
/// (`None` or `Lz4`: the codec all three engines have).
pub fn open_with(engine: &str, dir: &Path, cache: Option<u64>, compression: Compression) -> Result<Box<dyn Adapter>> {
    let cellar = |wide, sync, compaction| cellar::Cellar::open(dir, wide, sync, compaction, compression);
    // What a user gets who names no compaction: leveled, RocksDB's default sizes.
    let default = FamilyOptions::default().compaction;
    match engine {
        "cellar" => Ok(Box::new(cellar(false, SyncPolicy::Never, default)?)),
        "cellar-buffered" => Ok(Box::new(cellar(false, SyncPolicy::Buffered, default)?)),
        CELLAR_TIERED => Ok(Box::new(cellar(false, SyncPolicy::Never, Compaction::SizeTiered)?)),
        "cellar-wide" => Ok(Box::new(cellar(true, SyncPolicy::Never, default)?)),
        "fjall" => Ok(Box::new(fjall::Fjall::open_with(dir, cache, compression)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb::RocksDb::open_with(dir, cache, compression)?)),
        other => Err(Error::Peer(format!("unknown engine `{other}`"))),
    }
}

/// Reads `--compression`: `none` or `lz4`, the codecs every engine of the
/// comparison has (fjall has no Zstandard).
pub fn parse_compression(text: &str) -> Option<Compression> {
    match text {
        "none" => Some(Compression::None),
        "lz4" => Some(Compression::Lz4),
        _ => None,
    }
}

/// How an engine (or a YCSB model on it) reads its table files and what it
/// caches, with `cache` the block cache given to the engines that have one.
pub fn read_path(engine: &str, cache: Option<u64>) -> String {
    let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
    let block_cache = |kind: &str, default: u64| match cache {
        Some(bytes) => format!(
            "pread into a {} {kind}block cache (--cache data), OS page cache beneath",
            mib(bytes)
        ),
        None => format!(
            "pread into a {} {kind}block cache (its default), OS page cache beneath",
            mib(default)
        ),
    };
    if engine.starts_with("cellar") {
        "tables mapped into memory (mmap): blocks come from the OS page cache; no block cache in the process".into()
    } else if engine.starts_with("fjall") {
        block_cache("", 32 << 20)
    } else if engine.starts_with("rocksdb") {
        block_cache("LRU ", 32 << 20)
    } else if engine == "db_bench" {
        block_cache("LRU ", 8 << 20)
    } else {
        String::new()
    }
}

/// [`read_path`] for a run whose engines compress their data blocks with
/// `compression`: cellar then also keeps a block cache, of decompressed blocks.
pub fn read_path_with(engine: &str, cache: Option<u64>, compression: Compression) -> String {
    if engine.starts_with("cellar") && compression != Compression::None {
        "tables mapped into memory (mmap): compressed blocks decompressed into a 32 MiB block cache (its \
         default), raw ones read from the OS page cache"
            .into()
    } else {
        read_path(engine, cache)
    }
}

/// What kind of benchmark a run is.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// db_bench's workloads at `num` keys.
    DbBench,
    /// YCSB's workloads on `records` records, `operations` per workload.
    Ycsb {
        /// Records loaded.
        records: u64,
        /// Operations per workload A to F.
        operations: u64,
    },
    /// db_bench's shape at scale, with the tree recorded after every phase.
    Scale,
}

/// How to run a comparison.
#[derive(Clone, Debug)]
pub struct Config {
    /// Which benchmark.
    pub mode: Mode,
    /// Keys (entries) per workload (db_bench and scale).
    pub num: u64,
    /// Runs of each engine.
    pub runs: usize,
    /// Engines, in turn order (in-process names, or `db_bench`).
    pub engines: Vec<String>,
    /// Block cache of the engines that have one (`None`: their default).
    pub cache: Option<u64>,
    /// How every engine compresses its data blocks (db_bench's workloads).
    pub compression: Compression,
    /// Value and record sizes.
    pub shape: Shape,
    /// Where the stores go (a folder of its own is made per run).
    pub dir: PathBuf,
    /// This binary, run with `--child ENGINE` for each in-process run.
    pub exe: PathBuf,
}

impl Config {
    /// The arguments a child needs to repeat run `run` of `engine` in `dir`.
    pub fn child_args(&self, engine: &str, run: usize, dir: &Path) -> Vec<String> {
        let mut args = vec![
            "--child".to_string(),
            engine.to_string(),
            "--seed".into(),
            (run as u64 + 1).to_string(),
            "--dir".into(),
            dir.display().to_string(),
        ];
        match &self.mode {
            Mode::DbBench => args.extend([
                "--num".into(),
                self.num.to_string(),
                "--value-size".into(),
                self.shape.value_bytes.to_string(),
            ]),
            Mode::Scale => args.extend(["--scale".into(), "--num".into(), self.num.to_string()]),
            Mode::Ycsb { records, operations } => args.extend([
                "--ycsb".into(),
                "--records".into(),
                records.to_string(),
                "--operations".into(),
                operations.to_string(),
                "--field-count".into(),
                self.shape.fields.to_string(),
                "--field-length".into(),
                self.shape.field_bytes.to_string(),
            ]),
        }
        if let Some(bytes) = self.cache {
            args.extend(["--cache-bytes".into(), bytes.to_string()]);
        }
        if self.compression != Compression::None {
            args.extend(["--compression".into(), self.compression.to_string()]);
        }
        args
    }
}

/// The engines present on this machine: cellar (log handed to the OS per write),
/// cellar-buffered (log buffered in the process), cellar-wide, fjall, rocksdb
/// (with the `rocksdb` feature) and db_bench if found. (`cellar-tiered` is
/// the scale run's; `--engines` asks for it elsewhere.)
pub fn default_engines() -> Vec<String> {
    let mut engines: Vec<String> = IN_PROCESS
        .iter()
        .filter(|e| **e != CELLAR_TIERED)
        .map(|s| s.to_string())
        .collect();
    if db_bench::find().is_some() {
        engines.push("db_bench".to_string());
    }
    engines
}

/// Runs `exe` with `args` to its end and returns what it printed on stdout
/// (its stderr goes to ours: progress bars, errors).
pub fn run_child(exe: &Path, args: &[String], what: &str) -> Result<String> {
    let output = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::io(exe, e))?;
    if !output.status.success() {
        return Err(Error::Peer(format!("{what} failed: {}", output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `one(engine, run, dir)` for every engine, `config.runs` times, the
/// engines taking turns (the first engine of a round rotates, so none always
/// runs first on a cold or hot page cache); `log` hears what starts. Each run
/// gets a fresh folder, removed after it.
pub fn alternate<T>(
    config: &Config,
    log: &mut dyn FnMut(&str),
    mut one: impl FnMut(&str, usize, &Path) -> Result<T>,
) -> Result<BTreeMap<String, Vec<T>>> {
    let mut runs: BTreeMap<String, Vec<T>> = BTreeMap::new();
    let n = config.engines.len().max(1);
    for run in 0..config.runs {
        for i in 0..config.engines.len() {
            let Some(engine) = config.engines.get((i + run) % n) else {
                continue;
            };
            log(&format!("run {}/{}: {engine}", run + 1, config.runs));
            let dir = config.dir.join(format!("{engine}-{run}"));
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let result = one(engine, run, &dir);
            let _ = std::fs::remove_dir_all(&dir);
            runs.entry(engine.clone()).or_default().push(result?);
        }
    }
    Ok(runs)
}

/// Every run of every engine, by engine (db_bench's workloads).
pub type Runs = BTreeMap<String, Vec<RunReport>>;

/// Runs db_bench's workloads on every engine in turn, `runs` times.
pub fn run(config: &Config, log: &mut dyn FnMut(&str)) -> Result<Runs> {
    alternate(config, log, |engine, run, dir| {
        if engine == "db_bench" {
            let bin = db_bench::find().ok_or_else(|| Error::Peer("db_bench is not installed".into()))?;
            let (num, seed) = (config.num, run as u64 + 1);
            db_bench::run_all(
                &bin,
                dir,
                num,
                seed,
                config.cache,
                config.compression,
                config.shape.value_bytes,
            )
        } else {
            let args = config.child_args(engine, run, dir);
            let text = run_child(&config.exe, &args, &format!("{engine} run {}", run + 1))?;
            report::parse(&text)
        }
    })
}

/// Operations per second (0 for no time).
pub fn per_second(ops: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        ops as f64 / seconds
    } else {
        0.0
    }
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

/// Median of what `f` finds in each report (`None` if it finds nothing).
pub fn median_of<R>(reports: &[R], f: impl Fn(&R) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = reports.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| median(v))
}

/// Writes the line under a throughput table that says how fast
/// `readwhilewriting`'s writer thread wrote: entries per second of the reads,
/// `pace`'s median for each engine that has one. An engine whose writer is
/// held back reads faster, so the two go together.
pub(crate) fn writer_pace_line(out: &mut String, engines: &[&String], pace: impl Fn(&str) -> Option<f64>) {
    let paces: Vec<String> = engines
        .iter()
        .filter_map(|e| pace(e).map(|p| format!("{e} {}", human(p))))
        .collect();
    if !paces.is_empty() {
        let _ = writeln!(
            out,
            "readwhilewriting's writer, entries written/s while the reads ran (medians): {}",
            paces.join(", ")
        );
    }
}

/// Operations per second for a table: `1.23M` or `456k`.
pub fn human(ops: f64) -> String {
    if ops >= 1e6 {
        format!("{:.2}M", ops / 1e6)
    } else if ops >= 1e4 {
        format!("{:.0}k", ops / 1e3)
    } else {
        format!("{:.1}k", ops / 1e3)
    }
}

/// A ratio for a table: `1.23x`, or `-` when the divisor is zero.
pub fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "-".into()
    }
}

/// KiB as MiB for a table.
pub fn mib(kib: f64) -> String {
    format!("{:.0} MiB", kib / 1024.0)
}

/// The one-paragraph note on how RSS counts a process's memory, printed
/// under every memory table.
pub const RSS_NOTE: &str = "RSS = anonymous memory (heap, memtables, block caches) + resident pages of \
mapped files (the program's own code, a few MiB, included). cellar maps its table files, so every table page it has read and the kernel still holds \
counts in its file RSS, although it is a clean page-cache page the kernel reclaims under pressure; \
fjall and RocksDB read with pread, so their table pages sit in the page cache outside any RSS and \
their block cache counts as anonymous memory. Peaks: VmHWM is the kernel's exact peak of the whole \
RSS; the anon and file peaks are sampled every 10 ms.";
