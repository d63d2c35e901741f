//! `peers`: cellar against fjall (and RocksDB's db_bench when installed) on
//! db_bench's workloads.
//!
//! ```text
//! cargo run --release -p cellar-bench --bin peers -- [--num N] [--runs R] [--csv FILE]
//!     [--engines cellar,cellar-wide,fjall,db_bench] [--dir DIR]
//! ```
//!
//! Each run of each engine is a child process of this binary (`--child ENGINE`),
//! so peak RSS is per engine.

use std::path::PathBuf;
use std::process::ExitCode;

use cellar_bench::peers::{self, Config};
use cellar_bench::progress::TerminalBar;

struct Args {
    num: u64,
    runs: usize,
    csv: Option<PathBuf>,
    engines: Option<Vec<String>>,
    dir: Option<PathBuf>,
    child: Option<String>,
    seed: u64,
}

fn usage() -> String {
    "usage: peers [--num N] [--runs R] [--csv FILE] [--engines a,b,..] [--dir DIR]".to_string()
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        num: 1_000_000,
        runs: 3,
        csv: None,
        engines: None,
        dir: None,
        child: None,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(usage());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{}", usage()))?;
        let bad = |_| format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--num" => args.num = value.parse().map_err(bad)?,
            "--runs" => args.runs = value.parse().map_err(bad)?,
            "--seed" => args.seed = value.parse().map_err(bad)?,
            "--csv" => args.csv = Some(PathBuf::from(&value)),
            "--dir" => args.dir = Some(PathBuf::from(&value)),
            "--child" => args.child = Some(value.clone()),
            "--engines" => args.engines = Some(value.split(',').map(str::to_string).collect()),
            _ => return Err(format!("unknown option {flag}\n{}", usage())),
        }
    }
    if args.num == 0 || args.runs == 0 {
        return Err("--num and --runs must be positive".into());
    }
    Ok(args)
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

fn run(args: Args) -> Result<(), String> {
    if let Some(engine) = &args.child {
        let dir = args.dir.ok_or("--child needs --dir")?;
        let report =
            peers::child_main(engine, &dir, args.num, args.seed, &TerminalBar::new()).map_err(|e| e.to_string())?;
        print!("{report}");
        return Ok(());
    }
    let own_dir = args.dir.is_none();
    let dir = args
        .dir
        .unwrap_or_else(|| std::env::temp_dir().join(format!("cellar-peers-{}", std::process::id())));
    let config = Config {
        num: args.num,
        runs: args.runs,
        engines: args.engines.unwrap_or_else(peers::default_engines),
        dir,
        exe: std::env::current_exe().map_err(|e| e.to_string())?,
    };
    if !config.engines.iter().any(|e| e == "db_bench") && peers::db_bench::find().is_none() {
        eprintln!("peers: no db_bench ($DB_BENCH or /usr/bin/db_bench): RocksDB is not measured");
    }
    let runs = peers::run(&config, &mut |msg| eprintln!("peers: {msg}"));
    if own_dir {
        let _ = std::fs::remove_dir_all(&config.dir);
    }
    let runs = runs.map_err(|e| e.to_string())?;
    print!("{}", peers::render(&config, &runs));
    if let Some(path) = &args.csv {
        std::fs::write(path, peers::csv(&config, &runs)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
