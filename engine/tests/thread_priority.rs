//! The compaction thread yields the CPU to writers (`StoreOptions::compaction_nice`):
//! read back from the kernel, per thread, in `/proc/self/task`.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use cellar_engine::{Store, StoreOptions};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The nice value of every live thread of this process whose name starts
/// with `name` (the kernel keeps 15 bytes of a thread's name).
fn nice_of_threads(name: &str) -> Result<Vec<i64>, Box<dyn std::error::Error>> {
    let mut nices = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?.path();
        // A thread may end between the listing and the reads.
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(task.join("comm")),
            std::fs::read_to_string(task.join("stat")),
        ) else {
            continue;
        };
        let comm = comm.trim_end();
        if comm.is_empty() || !name.starts_with(comm) {
            continue;
        }
        // After the name in parentheses: state is field 3, nice field 19.
        let after_name = stat.rsplit_once(')').ok_or("stat without a name")?.1;
        let nice = after_name.split_whitespace().nth(16).ok_or("stat too short")?.parse()?;
        nices.push(nice);
    }
    Ok(nices)
}

/// Waits until the nice values of the threads named `name` are `expected`:
/// a thread names itself and sets its own priority as it starts, a moment
/// after the open returns.
fn wait_for_nice(name: &str, expected: &[i64]) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let nices = nice_of_threads(name)?;
        if nices == expected {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{name} threads at nice {nices:?}, expected {expected:?}").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_compaction_thread_runs_at_its_nice_value_and_the_flush_thread_at_the_writers() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
        wait_for_nice("cellar-compaction", &[10])?;
        wait_for_nice("cellar-flush", &[0])?;
        store.put("f", "r", "c", "v")?;
        store.flush()?;
        assert_eq!(store.get("f", "r", "c")?.map(|c| c.value), Some("v".into()));
    }
    // The store closed: its threads are gone.
    assert_eq!(nice_of_threads("cellar-compaction")?, Vec::<i64>::new());
    let _store = Store::open(dir.path(), StoreOptions::default().compaction_nice(0))?;
    wait_for_nice("cellar-compaction", &[0])?;
    drop(_store);
    let _store = Store::open(dir.path(), StoreOptions::default().compaction_nice(200))?;
    wait_for_nice("cellar-compaction", &[19])?;
    Ok(())
}
