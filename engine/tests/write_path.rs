//! The write path under several writers at once, under every sync policy,
//! with batches across families, readers on snapshots, families created,
//! truncated and dropped beside the writes, and the edge cases of a batch
//! (empty, the same cell twice, a put and a delete of one cell).
//!
//! `concurrency.rs` has one writer; here several write at once, so group
//! commit (`SyncPolicy::Always`) and the other policies' paths each carry
//! writes from threads that race for the write lock. Every acknowledged
//! write must be read back: by a snapshot taken after it returned, after
//! the flushes and compactions it caused, and after a reopen.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cellar_engine::{FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch};

type TestResult = Result<(), Box<dyn StdError + Send + Sync>>;

const WRITERS: u64 = 3;
const WRITES: u64 = 250;

fn small_family() -> FamilyOptions {
    FamilyOptions::default().memtable_max_entries(40).compaction_trigger(2)
}

fn row(writer: u64, i: u64) -> String {
    format!("w{writer}-{i:05}")
}

/// The values of one column of a family, by row, as a snapshot reads them.
fn column_values(
    snapshot: &cellar_engine::Snapshot,
    family: &str,
) -> Result<BTreeMap<String, String>, Box<dyn StdError + Send + Sync>> {
    let mut out = BTreeMap::new();
    for r in snapshot.scan(family, &RowRange::all())? {
        let r = r?;
        for cell in r.cells {
            out.insert(
                format!(
                    "{}/{}",
                    String::from_utf8(r.key.to_vec())?,
                    String::from_utf8(cell.column.to_vec())?
                ),
                String::from_utf8(cell.value.to_vec())?,
            );
        }
    }
    Ok(out)
}

/// What the writers wrote once all of `acked[w]` writes of each returned:
/// in `a` and `b` alike, a row per write and each writer's `hot` row at its
/// last write.
fn expected(acked: &[u64]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (w, &n) in acked.iter().enumerate() {
        for i in 0..n {
            out.insert(format!("{}/c", row(w as u64, i)), i.to_string());
        }
        if n > 0 {
            out.insert(format!("hot{w}/n"), (n - 1).to_string());
        }
    }
    out
}

/// Several writers, each writing batches of two families (a row of its own
/// and its hot row, in both), readers checking every snapshot: both
/// families agree, and every write acknowledged before the snapshot is in
/// it. Then the end state, and the same after a reopen.
fn writers_race(sync: SyncPolicy) -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .sync(sync)
            .family_with("a", small_family())
            .family_with("b", small_family())
    };
    let store = Arc::new(Store::open(dir.path(), options())?);
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, acked, stop) = (store.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || -> Result<u64, Box<dyn StdError + Send + Sync>> {
                let mut checks = 0;
                while !stop.load(Ordering::Acquire) || checks == 0 {
                    let before: Vec<u64> = acked.iter().map(|n| n.load(Ordering::Acquire)).collect();
                    let snapshot = store.snapshot();
                    let a = column_values(&snapshot, "a")?;
                    let b = column_values(&snapshot, "b")?;
                    assert_eq!(a, b, "snapshot {}: a batch is half visible", snapshot.sequence());
                    // Every write acknowledged before the snapshot is in it.
                    for (w, &n) in before.iter().enumerate() {
                        for i in 0..n {
                            let key = format!("{}/c", row(w as u64, i));
                            assert_eq!(a.get(&key), Some(&i.to_string()), "acknowledged {key} unread");
                        }
                        let hot: u64 = match a.get(&format!("hot{w}/n")) {
                            Some(v) => v.parse()?,
                            None => continue,
                        };
                        assert!(hot + 1 >= n, "writer {w}: hot row at {hot}, {n} acknowledged");
                    }
                    checks += 1;
                }
                Ok(checks)
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (store, acked) = (store.clone(), acked.clone());
            std::thread::spawn(move || -> TestResult {
                let mut batch = WriteBatch::new();
                for i in 0..WRITES {
                    batch.clear();
                    let value = i.to_string();
                    for family in ["a", "b"] {
                        batch.put(family, row(w, i), "c", &value);
                        batch.put(family, format!("hot{w}"), "n", &value);
                    }
                    store.write(&batch)?;
                    acked[w as usize].store(i + 1, Ordering::Release);
                }
                Ok(())
            })
        })
        .collect();
    for w in writers {
        w.join().map_err(|_| "a writer panicked")??;
    }
    stop.store(true, Ordering::Release);
    for r in readers {
        r.join().map_err(|_| "a reader panicked")??;
    }
    let want = expected(&vec![WRITES; WRITERS as usize]);
    store.wait_for_background_work()?;
    let stats = store.stats()?;
    let a = stats.family("a").ok_or("no stats of a")?;
    assert!(
        a.flushes > 0 && a.compactions > 0,
        "{sync:?}: flushes and compactions ran"
    );
    for family in ["a", "b"] {
        assert_eq!(column_values(&store.snapshot(), family)?, want, "{sync:?}: {family}");
    }
    drop(store);
    let store = Store::open(dir.path(), options())?;
    for family in ["a", "b"] {
        assert_eq!(
            column_values(&store.snapshot(), family)?,
            want,
            "{sync:?}: {family} reopened"
        );
    }
    Ok(())
}

#[test]
fn several_writers_with_group_commit_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Always)
}

#[test]
fn several_writers_with_interval_sync_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Interval(Duration::from_millis(2)))
}

#[test]
fn several_writers_with_no_sync_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Never)
}

#[test]
fn several_writers_with_a_buffered_log_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Buffered)
}
