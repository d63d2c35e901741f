//! The crash test (issue 5): a child writes numbered batches, the parent kills
//! it with SIGKILL at random moments and checks what the reopened store holds.
//!
//! ```text
//! cargo run --release -p cellar-bench --bin crash -- [--kills K] [--seconds S] [--dir PATH] [--seed N]
//! ```
//!
//! See `cellar_bench::crash` for what is written and what is checked.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cellar_bench::crash::{self, CrashConfig};

fn usage() -> ExitCode {
    eprintln!("usage: crash [--kills K] [--seconds S] [--dir PATH] [--seed N] [--max-delay-ms MS]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut kills = 200u64;
    let mut seconds = None;
    let mut dir = None;
    let mut seed = None;
    let mut max_delay_ms = 150u64;
    let mut child = false;
    let mut sync = None;
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--child" {
            child = true;
            i += 1;
            continue;
        }
        let Some(value) = args.get(i + 1) else {
            return usage();
        };
        let ok = match flag {
            "--kills" => value.parse().map(|v| kills = v).is_ok(),
            "--seconds" => value
                .parse::<f64>()
                .map(|v| seconds = Some(Duration::from_secs_f64(v)))
                .is_ok(),
            "--dir" => {
                dir = Some(PathBuf::from(value));
                true
            }
            "--seed" => value.parse().map(|v| seed = Some(v)).is_ok(),
            "--max-delay-ms" => value.parse().map(|v| max_delay_ms = v).is_ok(),
            "--sync" => {
                sync = crash::parse_sync(value);
                sync.is_some()
            }
            _ => false,
        };
        if !ok {
            return usage();
        }
        i += 2;
    }

    if child {
        // The hidden child mode: write batches until killed.
        let (Some(dir), Some(sync)) = (dir, sync) else {
            return usage();
        };
        let mut out = std::io::stdout().lock();
        return match crash::run_child(&dir, sync, &mut out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("crash child: {e}");
                ExitCode::FAILURE
            }
        };
    }

    let seed = seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let temporary = dir.is_none();
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join(format!("cellar-crash-{}", std::process::id())));
    let child_exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("crash: cannot find my own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("crash test: {kills} kills, seed {seed}, store {}", dir.display());
    let config = CrashConfig {
        dir: dir.clone(),
        kills,
        time_limit: seconds,
        seed,
        max_delay: Duration::from_millis(max_delay_ms),
        child_exe,
    };
    let result = crash::run(&config, &mut |outcome| {
        let bad = outcome.lost + outcome.half_applied + outcome.unwritten > 0 || outcome.reopen_failed;
        if bad || outcome.kill % 25 == 0 {
            println!(
                "kill {:4} ({}): acknowledged {}, recovered {}{}",
                outcome.kill,
                outcome.sync,
                outcome.acknowledged,
                outcome.recovered,
                if bad { " FAILED" } else { "" }
            );
        }
        for line in &outcome.detail {
            println!("    {line}");
        }
    });
    match result {
        Ok(report) => {
            println!(
                "batches acknowledged {}, unwritten batches seen {}",
                report.acknowledged, report.unwritten
            );
            println!("{}", report.summary());
            if report.clean() {
                if temporary {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("crash: {e}");
            ExitCode::FAILURE
        }
    }
}
