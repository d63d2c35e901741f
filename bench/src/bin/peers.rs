//! `peers`: cellar against fjall and RocksDB, like with like.
//!
//! ```text
//! cargo run --release -p cellar-bench [--features rocksdb|rocksdb-lz4] --bin peers -- [OPTIONS]
//!
//!   (default)          db_bench's workloads: fillseq, fillrandom, overwrite,
//!                      readrandom, readseq, seekrandom, readwhilewriting on --num keys
//!   --ycsb             YCSB workloads A-F on --records records, --operations each
//!   --scale            fillrandom, overwrite, readrandom, seekrandom, readwhilewriting
//!                      on --num keys, no manual compaction, the tree recorded after each phase;
//!                      cellar both leveled (its default) and size-tiered (`cellar-tiered`)
//!
//!   --num N            keys (default 1000000)
//!   --value-size N     db_bench workloads: bytes of a value, db_bench's --value_size
//!                      (default 100)
//!   --records N        YCSB records (default 1000000)
//!   --operations N     YCSB operations per workload (default 100000)
//!   --field-count N    YCSB fields per record, YCSB's fieldcount (default 10)
//!   --field-length N   YCSB bytes per field, YCSB's fieldlength (default 100)
//!   --runs R           runs of each engine, alternated (default 3)
//!   --engines a,b,..   engines in turn order (default: all present)
//!   --cache data       give fjall's and RocksDB's block cache room for all the data
//!                      (default: their own default caches)
//!   --compression lz4  db_bench workloads: every engine compresses its data blocks
//!                      with LZ4, values half compressible (default: none); RocksDB
//!                      needs the `rocksdb-lz4` feature for it
//!   --csv FILE         db_bench workloads: medians as CSV too
//!   --dir DIR          where the stores go (default: a temporary folder)
//! ```
//!
//! Each run of each engine is a child process of this binary (`--child ENGINE`),
//! so memory is per engine.
//!
//! The sizes apply to every engine alike, so the standard shapes' neighbours
//! (values of 1000 bytes, rows of a hundred small fields) are compared like
//! with like; the defaults are the standard shapes, which the README's
//! figures were measured on.

use std::path::PathBuf;
use std::process::ExitCode;

use cellar_bench::peers::{self, report, scale, ycsb, Config, Mode, Shape};
use cellar_bench::progress::TerminalBar;
use cellar_engine::Compression;

struct Args {
    mode: Mode,
    num: u64,
    runs: usize,
    csv: Option<PathBuf>,
    engines: Option<Vec<String>>,
    dir: Option<PathBuf>,
    cache_data: bool,
    cache_bytes: Option<u64>,
    compression: Compression,
    shape: Shape,
    child: Option<String>,
    seed: u64,
}

/// The largest value (`--value-size`) and field (`--field-length`): a
/// `cellar-wide` row of ten values must fit the 1 MiB pool values are cut from.
const MAX_VALUE_SIZE: usize = 100_000;

/// The most fields a record may have (`--field-count`).
const MAX_FIELD_COUNT: usize = 10_000;

fn usage() -> String {
    "usage: peers [--ycsb | --scale] [--num N] [--value-size N] [--records N] [--operations N] \
     [--field-count N] [--field-length N] [--runs R] [--engines a,b,..] [--cache default|data] \
     [--compression none|lz4] [--csv FILE] [--dir DIR]"
        .to_string()
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        mode: Mode::DbBench,
        num: 1_000_000,
        runs: 3,
        csv: None,
        engines: None,
        dir: None,
        cache_data: false,
        cache_bytes: None,
        compression: Compression::None,
        shape: Shape::default(),
        child: None,
        seed: 1,
    };
    let (mut value_size, mut field_count, mut field_length) = (None, None, None);
    let (mut ycsb, mut scale) = (false, false);
    let (mut records, mut operations) = (1_000_000u64, 100_000u64);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--help" | "-h" => return Err(usage()),
            "--ycsb" => {
                ycsb = true;
                continue;
            }
            "--scale" => {
                scale = true;
                continue;
            }
            _ => {}
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{}", usage()))?;
        let bad = |_| format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--num" => args.num = value.parse().map_err(bad)?,
            "--records" => records = value.parse().map_err(bad)?,
            "--operations" => operations = value.parse().map_err(bad)?,
            "--value-size" => value_size = Some(value.parse().map_err(bad)?),
            "--field-count" => field_count = Some(value.parse().map_err(bad)?),
            "--field-length" => field_length = Some(value.parse().map_err(bad)?),
            "--runs" => args.runs = value.parse().map_err(bad)?,
            "--seed" => args.seed = value.parse().map_err(bad)?,
            "--csv" => args.csv = Some(PathBuf::from(&value)),
            "--dir" => args.dir = Some(PathBuf::from(&value)),
            "--child" => args.child = Some(value.clone()),
            "--cache-bytes" => args.cache_bytes = Some(value.parse().map_err(bad)?),
            "--cache" => match value.as_str() {
                "data" => args.cache_data = true,
                "default" => args.cache_data = false,
                _ => return Err(format!("--cache is `default` or `data`, not {value}")),
            },
            "--compression" => {
                args.compression = peers::parse_compression(&value).ok_or_else(|| {
                    format!("--compression is `none` or `lz4` (the codec every engine has), not {value}")
                })?
            }
            "--engines" => args.engines = Some(value.split(',').map(str::to_string).collect()),
            _ => return Err(format!("unknown option {flag}\n{}", usage())),
        }
    }
    args.mode = match (ycsb, scale) {
        (true, true) => return Err("--ycsb and --scale are separate runs".into()),
        (true, false) => Mode::Ycsb { records, operations },
        (false, true) => Mode::Scale,
        (false, false) => Mode::DbBench,
    };
    if args.compression != Compression::None && args.mode != Mode::DbBench {
        return Err("--compression applies to db_bench's workloads only".into());
    }
    if args.num == 0 || args.runs == 0 || records == 0 || operations == 0 {
        return Err("--num, --records, --operations and --runs must be positive".into());
    }
    args.shape = shape(&args.mode, value_size, field_count, field_length)?;
    Ok(args)
}

/// The sizes asked for, checked against the benchmark they apply to: a size
/// another benchmark has is refused rather than ignored.
fn shape(
    mode: &Mode,
    value_size: Option<usize>,
    field_count: Option<usize>,
    field_length: Option<usize>,
) -> Result<Shape, String> {
    let ycsb = matches!(mode, Mode::Ycsb { .. });
    if value_size.is_some() && *mode != Mode::DbBench {
        return Err("--value-size applies to db_bench's workloads only (YCSB has --field-length)".into());
    }
    if (field_count.is_some() || field_length.is_some()) && !ycsb {
        return Err("--field-count and --field-length apply to --ycsb only".into());
    }
    let standard = Shape::default();
    let shape = Shape {
        value_bytes: value_size.unwrap_or(standard.value_bytes),
        fields: field_count.unwrap_or(standard.fields),
        field_bytes: field_length.unwrap_or(standard.field_bytes),
    };
    if !(1..=MAX_VALUE_SIZE).contains(&shape.value_bytes) || !(1..=MAX_VALUE_SIZE).contains(&shape.field_bytes) {
        return Err(format!(
            "--value-size and --field-length are 1 to {MAX_VALUE_SIZE} bytes"
        ));
    }
    if !(1..=MAX_FIELD_COUNT).contains(&shape.fields) {
        return Err(format!("--field-count is 1 to {MAX_FIELD_COUNT}"));
    }
    Ok(shape)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peers: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A block cache with room for all the data: twice its user bytes, so blocks'
/// own overhead and the versions not yet compacted away fit too (a YCSB
/// field counts 30 bytes beside its value: its key or name and lengths).
fn cache_for_all_data(mode: &Mode, num: u64, shape: Shape) -> u64 {
    match mode {
        Mode::Ycsb { records, operations } => {
            2 * (records + operations) * (shape.fields * (shape.field_bytes + 30)) as u64
        }
        Mode::DbBench | Mode::Scale => 2 * num * shape.entry_bytes(),
    }
}

fn run_child(engine: &str, args: &Args) -> Result<String, String> {
    let dir = args.dir.as_ref().ok_or("--child needs --dir")?;
    let bar = TerminalBar::new();
    let (num, seed, cache, shape) = (args.num, args.seed, args.cache_bytes, args.shape);
    let out = match &args.mode {
        Mode::DbBench => report::child_main(engine, dir, num, seed, cache, args.compression, shape.value_bytes, &bar),
        Mode::Scale => scale::child_main(engine, dir, num, seed, cache, &bar),
        Mode::Ycsb { records, operations } => {
            ycsb::run_engine(engine, dir, *records, *operations, seed, cache, shape, &bar).map(|r| ycsb::format(&r))
        }
    };
    out.map_err(|e| e.to_string())
}

fn run(args: Args) -> Result<(), String> {
    if let Some(engine) = &args.child {
        print!("{}", run_child(engine, &args)?);
        return Ok(());
    }
    let own_dir = args.dir.is_none();
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("cellar-peers-{}", std::process::id())));
    let engines = args.engines.clone().unwrap_or_else(|| match args.mode {
        Mode::DbBench => peers::default_engines(),
        Mode::Ycsb { .. } => ycsb::ENGINES.iter().map(|s| s.to_string()).collect(),
        Mode::Scale => ["cellar", "cellar-tiered", "fjall", "rocksdb"]
            .iter()
            .filter(|e| peers::IN_PROCESS.contains(e))
            .map(|s| s.to_string())
            .collect(),
    });
    let config = Config {
        mode: args.mode.clone(),
        num: args.num,
        runs: args.runs,
        engines,
        cache: args
            .cache_data
            .then(|| cache_for_all_data(&args.mode, args.num, args.shape)),
        compression: args.compression,
        shape: args.shape,
        dir,
        exe: std::env::current_exe().map_err(|e| e.to_string())?,
    };
    #[cfg(feature = "rocksdb")]
    if config.compression == Compression::Lz4
        && !cellar_bench::peers::rocksdb::LZ4
        && config.engines.iter().any(|e| e == "rocksdb")
    {
        return Err(cellar_bench::peers::rocksdb::LZ4_MISSING.to_string());
    }
    if !cfg!(feature = "rocksdb") {
        eprintln!("peers: built without the `rocksdb` feature: RocksDB is not measured in process");
    }
    let mut log = |msg: &str| eprintln!("peers: {msg}");
    let result = match &config.mode {
        Mode::DbBench => peers::run(&config, &mut log).and_then(|runs| {
            let hits = report::check_hits(&runs)?;
            if let Some(path) = &args.csv {
                std::fs::write(path, report::csv(&config, &runs))
                    .map_err(|e| cellar_bench::Error::Peer(format!("{}: {e}", path.display())))?;
            }
            Ok(report::render(&config, &runs, &hits))
        }),
        Mode::Scale => scale::run(&config, &mut log).and_then(|runs| {
            let hits = scale::check_hits(&runs)?;
            Ok(scale::render(&config, &runs, &hits))
        }),
        Mode::Ycsb { records, operations } => ycsb::run(&config, &mut log).and_then(|runs| {
            let hits = ycsb::check_hits(&runs, config.shape.fields)?;
            Ok(ycsb::render(&config, *records, *operations, &runs, &hits))
        }),
    };
    if own_dir {
        let _ = std::fs::remove_dir_all(&config.dir);
    }
    print!("{}", result.map_err(|e| e.to_string())?);
    Ok(())
}
