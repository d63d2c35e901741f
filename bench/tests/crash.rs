//! The short crash test of the suite: 30 SIGKILLs of a writing child (15 with
//! `SyncPolicy::Always`, 15 with `SyncPolicy::Never`), each followed by a
//! reopen that must hold every acknowledged batch, whole, and nothing else.
//! The long run is `cargo run --release -p cellar-bench --bin crash` (200 kills).

use std::path::PathBuf;
use std::time::Duration;

use cellar_bench::crash::{self, CrashConfig};

#[test]
fn sigkill_loses_no_acknowledged_batch_and_applies_none_in_part() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let config = CrashConfig {
        dir: dir.path().to_path_buf(),
        kills: 30,
        time_limit: None,
        // A fixed seed: the kill moments still vary with the machine's speed,
        // but every outcome must be clean, so the test cannot flake on them.
        seed: 5,
        max_delay: Duration::from_millis(60),
        child_exe: PathBuf::from(env!("CARGO_BIN_EXE_crash")),
    };
    let mut failures = Vec::new();
    let report = crash::run(&config, &mut |outcome| {
        if outcome.lost + outcome.half_applied + outcome.unwritten > 0 || outcome.reopen_failed {
            failures.push(format!("{outcome:?}"));
        }
    })?;
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(report.kills, 30);
    assert!(report.acknowledged > 0, "the children acknowledged no batch");
    assert_eq!(
        report.summary(),
        "kills 30, acknowledged batches lost 0, half-applied 0, reopen failures 0"
    );
    Ok(())
}
