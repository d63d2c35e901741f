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

/// An interval of zero syncs at every write; one too long to add to the
/// clock never comes due (a close still syncs).
#[test]
fn several_writers_with_a_zero_or_endless_sync_interval_lose_nothing() -> TestResult {
    writers_race(SyncPolicy::Interval(Duration::ZERO))?;
    writers_race(SyncPolicy::Interval(Duration::MAX))
}

#[test]
fn several_writers_with_no_sync_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Never)
}

#[test]
fn several_writers_with_a_buffered_log_lose_nothing_and_readers_never_see_half_a_batch() -> TestResult {
    writers_race(SyncPolicy::Buffered)
}

/// What one cell reads as: its value, and every version `versions` returns.
fn cell_state(
    store: &Store,
    family: &str,
    row: &str,
    column: &str,
) -> Result<(Option<String>, Vec<String>), Box<dyn StdError + Send + Sync>> {
    let value = store
        .get(family, row, column)?
        .map(|c| String::from_utf8_lossy(&c.value).into_owned());
    let versions = store
        .versions(family, row, column)?
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.value).into_owned())
        .collect();
    Ok((value, versions))
}

/// One cell written twice in one batch, as RocksDB and cellar both number
/// the operations of a batch one after another: the later operation wins,
/// whether it is a put or a delete, and with one timestamp the two puts are
/// one version. (HBase gives every cell of one mutation the same sequence
/// id, so two puts of one cell at one timestamp in one `Put` are one key to
/// its memstore, whose set keeps the one added last: last wins there too;
/// but a delete in the same mutation hides a put of its timestamp whatever
/// their order, where here the order decides.) The answer must not change
/// when the memtable is replayed from the log, flushed, or compacted.
#[test]
fn the_same_cell_twice_in_one_batch_reads_as_its_last_operation_in_memtable_log_table_and_compaction() -> TestResult {
    let dir = tempfile::tempdir()?;
    // `f` and `g` get their operations one family after the other; `h` and
    // `i` get them interleaved, one op each in turn, so the batch is runs of
    // one op and its log record has ops of one row in two families in a row.
    let versions = || FamilyOptions::default().max_versions(3).compaction_trigger(0);
    let options = || {
        StoreOptions::default()
            .family_with("f", versions())
            .family_with("g", FamilyOptions::default().compaction_trigger(0))
            .family_with("h", versions())
            .family_with("i", FamilyOptions::default().compaction_trigger(0))
    };
    let cases: [Case; 7] = [
        (
            "put-put",
            [Step::Put("first"), Step::Put("second")],
            Some("second"),
            &["second"],
        ),
        (
            "put-put-at",
            [Step::PutAt(7, "first"), Step::PutAt(7, "second")],
            Some("second"),
            &["second"],
        ),
        ("put-delete", [Step::Put("deleted"), Step::Delete], None, &[]),
        (
            "delete-put",
            [Step::Delete, Step::Put("after")],
            Some("after"),
            &["after"],
        ),
        (
            "row-delete-put",
            [Step::DeleteRow, Step::Put("after")],
            Some("after"),
            &["after"],
        ),
        ("put-row-delete", [Step::Put("deleted"), Step::DeleteRow], None, &[]),
        (
            "older-newer",
            [Step::PutAt(5, "older"), Step::PutAt(6, "newer")],
            Some("newer"),
            &["newer", "older"],
        ),
    ];
    let check = |store: &Store, when: &str| -> TestResult {
        for (r, _, value, versions) in cases {
            for family in ["f", "g", "h", "i"] {
                let (got, got_versions) = cell_state(store, family, r, "c")?;
                assert_eq!(got.as_deref(), value, "{family} {r} {when}");
                if family == "f" || family == "h" {
                    assert_eq!(got_versions, versions, "{family} {r} {when}: versions");
                }
            }
        }
        Ok(())
    };
    {
        let store = Store::open(dir.path(), options())?;
        let mut batch = WriteBatch::new();
        for family in ["f", "g"] {
            for (r, steps, _, _) in cases {
                for step in steps {
                    step.apply(&mut batch, family, r);
                }
            }
        }
        for (r, steps, _, _) in cases {
            for step in steps {
                for family in ["h", "i"] {
                    step.apply(&mut batch, family, r);
                }
            }
        }
        store.write(&batch)?;
        check(&store, "in the memtable")?;
    }
    let store = Store::open(dir.path(), options())?;
    check(&store, "replayed from the log")?;
    store.flush()?;
    check(&store, "flushed")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    check(&store, "flushed, reopened")?;
    for family in ["f", "g", "h", "i"] {
        store.compact(family)?;
    }
    check(&store, "compacted")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    check(&store, "compacted, reopened")?;
    Ok(())
}

/// A row, the two operations a batch does to its column `c`, and what the
/// column then reads as: its value and its versions.
type Case = (&'static str, [Step; 2], Option<&'static str>, &'static [&'static str]);

/// One operation on column `c` of a row, for the batch tests.
#[derive(Clone, Copy)]
enum Step {
    Put(&'static str),
    PutAt(u64, &'static str),
    Delete,
    DeleteRow,
}

impl Step {
    fn apply(self, batch: &mut WriteBatch, family: &str, row: &str) {
        match self {
            Step::Put(value) => batch.put(family, row, "c", value),
            Step::PutAt(ts, value) => batch.put_at(family, row, "c", ts, value),
            Step::Delete => batch.delete(family, row, "c"),
            Step::DeleteRow => batch.delete_row(family, row),
        };
    }
}

/// An empty batch writes nothing and takes no sequence number; a batch with
/// one operation that cannot be applied (an unknown family, a value over
/// the limit) applies none of its operations, and the store goes on.
#[test]
fn an_empty_batch_writes_nothing_and_a_batch_with_one_bad_operation_writes_none_of_them() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().family_with("f", FamilyOptions::default());
    let store = Store::open(dir.path(), options())?;
    store.put("f", "r", "c", "before")?;
    let sequence = store.snapshot().sequence();
    store.write(&WriteBatch::new())?;
    assert_eq!(
        store.snapshot().sequence(),
        sequence,
        "an empty batch took a sequence number"
    );

    let mut unknown = WriteBatch::new();
    unknown.put("f", "r", "c", "half").put("nope", "r", "c", "x");
    assert!(matches!(
        store.write(&unknown),
        Err(cellar_engine::Error::UnknownFamily(_))
    ));
    let mut too_large = WriteBatch::new();
    too_large
        .put("f", "r", "c", "half")
        .put("f", "r2", "c", vec![0u8; cellar_engine::MAX_VALUE_BYTES + 1]);
    assert!(matches!(
        store.write(&too_large),
        Err(cellar_engine::Error::TooLarge { .. })
    ));
    assert_eq!(
        store.snapshot().sequence(),
        sequence,
        "a refused batch took a sequence number"
    );
    assert_eq!(cell_state(&store, "f", "r", "c")?.0.as_deref(), Some("before"));
    store.put("f", "r", "c", "after")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(cell_state(&store, "f", "r", "c")?.0.as_deref(), Some("after"));
    assert_eq!(store.get("f", "r2", "c")?, None);
    Ok(())
}

/// One batch of many tiny cells, far more than a memtable's entry limit,
/// across two families: it lands whole in one memtable each (a batch is not
/// split), is flushed and compacted whole, and replays whole from the log.
#[test]
fn one_batch_many_times_a_memtable_is_read_whole_after_replay_flush_and_compaction() -> TestResult {
    const CELLS: u64 = 5000;
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .family_with("a", small_family())
            .family_with("b", small_family())
    };
    let check = |store: &Store, when: &str| -> TestResult {
        for family in ["a", "b"] {
            let values = column_values(&store.snapshot(), family)?;
            assert_eq!(values.len() as u64, CELLS, "{family} {when}");
            assert_eq!(
                values.get("r04321/c").map(String::as_str),
                Some("4321"),
                "{family} {when}"
            );
        }
        Ok(())
    };
    {
        let store = Store::open(dir.path(), options())?;
        let mut batch = WriteBatch::new();
        for i in 0..CELLS {
            batch.put("a", format!("r{i:05}"), "c", i.to_string());
            batch.put("b", format!("r{i:05}"), "c", i.to_string());
        }
        store.write(&batch)?;
        check(&store, "written")?;
    }
    let store = Store::open(dir.path(), options())?;
    check(&store, "replayed")?;
    store.flush()?;
    store.wait_for_background_work()?;
    store.compact("a")?;
    check(&store, "flushed and compacted")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    check(&store, "reopened")?;
    Ok(())
}

/// Writers of batches across `a` and a family that another thread drops,
/// creates again and truncates, while flushes and compactions of both run:
/// a batch refused because its family is gone writes nothing (its `a` half
/// neither), every acknowledged batch's `a` half stays, no snapshot holds a
/// row of the changed family without its `a` half, and a truncated or
/// dropped row never comes back, in the store or after a reopen.
#[test]
fn batches_across_a_family_being_dropped_created_and_truncated_are_all_or_nothing() -> TestResult {
    family_changes_race(SyncPolicy::Never)?;
    family_changes_race(SyncPolicy::Always)
}

fn family_changes_race(sync: SyncPolicy) -> TestResult {
    const CHANGES: u64 = 15;
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().sync(sync).family_with("a", small_family());
    let store = Arc::new(Store::open(dir.path(), options())?);
    store.create_family("x", small_family())?;
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicU64::new(0));
    let changer = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || -> Result<u64, Box<dyn StdError + Send + Sync>> {
            let mut changes = 0u64;
            while changes < CHANGES {
                match changes % 3 {
                    0 => store.truncate_family("x")?,
                    1 => store.drop_family("x")?,
                    _ => store.create_family("x", small_family())?,
                }
                // Right after a truncate or a create the family is empty
                // but for writes that came after the change.
                if changes % 3 != 1 {
                    let snapshot = store.snapshot();
                    let x = column_values(&snapshot, "x")?;
                    let a = column_values(&snapshot, "a")?;
                    for (key, value) in &x {
                        assert_eq!(a.get(key), Some(value), "{key} in x without its a half");
                    }
                }
                changes += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            stop.store(true, Ordering::Release);
            Ok(changes)
        })
    };
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (store, stop, refused) = (store.clone(), stop.clone(), refused.clone());
            std::thread::spawn(move || -> Result<Vec<u64>, Box<dyn StdError + Send + Sync>> {
                let mut acked = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Acquire) {
                    i += 1;
                    let mut batch = WriteBatch::new();
                    batch.put("a", row(w, i), "c", i.to_string());
                    batch.put("x", row(w, i), "c", i.to_string());
                    match store.write(&batch) {
                        Ok(()) => acked.push(i),
                        Err(cellar_engine::Error::UnknownFamily(_)) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(acked)
            })
        })
        .collect();
    let mut want = BTreeMap::new();
    for (w, writer) in writers.into_iter().enumerate() {
        for i in writer.join().map_err(|_| "a writer panicked")?? {
            want.insert(format!("{}/c", row(w as u64, i)), i.to_string());
        }
    }
    changer.join().map_err(|_| "the changer panicked")??;
    let refused = refused.load(Ordering::Relaxed);
    assert!(
        refused > 0 && !want.is_empty(),
        "{} batches written, {refused} refused",
        want.len()
    );
    store.wait_for_background_work()?;
    let check = |store: &Store, when: &str| -> Result<BTreeMap<String, String>, Box<dyn StdError + Send + Sync>> {
        let snapshot = store.snapshot();
        assert_eq!(column_values(&snapshot, "a")?, want, "a {when}");
        let x = match store.families().iter().any(|f| f == "x") {
            true => column_values(&snapshot, "x")?,
            false => BTreeMap::new(),
        };
        for (key, value) in &x {
            assert_eq!(want.get(key), Some(value), "{key} in x without its a half, {when}");
        }
        Ok(x)
    };
    let x = check(&store, "at the end")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(check(&store, "reopened")?, x, "x reopened");
    Ok(())
}

fn now_ms() -> Result<u64, Box<dyn StdError + Send + Sync>> {
    Ok(u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis(),
    )?)
}

/// A TTL family written, flushed and compacted (small memtables, both
/// strategies) while cells expire, read all the while: a cell acknowledged
/// before a read and within the TTL of the read's clock is read, one whose
/// TTL had run out before the read began is not, and one that expired is
/// never read again, by a snapshot, a scan, or after a reopen. A row has
/// two versions (one cell 250 ms older than the other, `max_versions(1)`):
/// while the newer one lives it is the one read, and once it expires
/// nothing is.
#[test]
fn ttl_cells_expire_exactly_once_while_writes_flushes_and_compactions_run() -> TestResult {
    const TTL_MS: u64 = 300;
    const ROWS_WRITTEN: usize = 400;
    std::thread::scope(|s| {
        let runs = [
            cellar_engine::Compaction::SizeTiered,
            cellar_engine::Compaction::LEVELED,
        ]
        .map(|c| s.spawn(move || ttl_run(c, TTL_MS, ROWS_WRITTEN).map_err(|e| e.to_string())));
        runs.into_iter()
            .try_for_each(|run| run.join().map_err(|_| "a run panicked".to_string())?)
    })?;
    Ok(())
}

/// Whether a cell of timestamp `ts` is surely live for a read whose clock is
/// in `[before, after]` (`Some(true)`), surely expired (`Some(false)`), or
/// on the edge (`None`).
fn surely_live(ts: u64, ttl: u64, before: u64, after: u64) -> Option<bool> {
    if ts + ttl > after + 1 {
        Some(true)
    } else if ts + ttl + 1 < before {
        Some(false)
    } else {
        None
    }
}

fn ttl_run(compaction: cellar_engine::Compaction, ttl: u64, rows: usize) -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default().family_with(
            "t",
            small_family()
                .memtable_max_entries(30)
                .max_versions(1)
                .ttl(Duration::from_millis(ttl))
                .compaction(compaction),
        )
    };
    let store = Arc::new(Store::open(dir.path(), options())?);
    // Row i: its newer version's timestamp, once acknowledged.
    let written: Arc<parking_lot::Mutex<Vec<u64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, written, stop) = (store.clone(), written.clone(), stop.clone());
        std::thread::spawn(move || -> Result<u64, Box<dyn StdError + Send + Sync>> {
            let mut gone = std::collections::BTreeSet::new();
            let mut checks = 0;
            while !stop.load(Ordering::Acquire) || checks == 0 {
                let acked = written.lock().clone();
                let before = now_ms()?;
                let snapshot = store.snapshot();
                let after = now_ms()?;
                let read = column_values(&snapshot, "t")?;
                for (i, &ts) in acked.iter().enumerate() {
                    let key = format!("r{i:04}/c");
                    let value = read.get(&key);
                    if let Some(v) = value {
                        assert_eq!(v, "newer", "{key}: the older version was read");
                        assert!(!gone.contains(&i), "{key} expired and came back");
                    }
                    match surely_live(ts, ttl, before, after) {
                        Some(true) => assert!(value.is_some(), "{key} is live and was not read"),
                        Some(false) => assert!(value.is_none(), "{key} expired and was read"),
                        None => {}
                    }
                    if value.is_none() {
                        gone.insert(i);
                    }
                }
                checks += 1;
            }
            Ok(checks)
        })
    };
    for i in 0..rows {
        // Timestamps from now to 200 ms ago: cells expire from 100 to 300 ms on.
        let ts = now_ms()? - (i as u64 * 37) % 200;
        let mut batch = WriteBatch::new();
        batch
            .put_at("t", format!("r{i:04}"), "c", ts - 250, "older")
            .put_at("t", format!("r{i:04}"), "c", ts, "newer");
        store.write(&batch)?;
        written.lock().push(ts);
        if i % 50 == 49 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    store.wait_for_background_work()?;
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Release);
    reader.join().map_err(|_| "the reader panicked")??;
    let stats = store.stats()?;
    let t = stats.family("t").ok_or("no stats of t")?;
    assert!(
        t.flushes > 0 && t.compactions > 0,
        "flushes {} compactions {}",
        t.flushes,
        t.compactions
    );
    let acked = written.lock().clone();
    let check = |store: &Store, when: &str| -> TestResult {
        let before = now_ms()?;
        let read = column_values(&store.snapshot(), "t")?;
        let after = now_ms()?;
        for (i, &ts) in acked.iter().enumerate() {
            let key = format!("r{i:04}/c");
            if let Some(live) = surely_live(ts, ttl, before, after) {
                assert_eq!(read.contains_key(&key), live, "{key} {when}");
            }
        }
        Ok(())
    };
    check(&store, "at the end")?;
    drop(store);
    let store = Store::open(dir.path(), options())?;
    check(&store, "reopened")?;
    store.compact("t")?;
    check(&store, "compacted")?;
    Ok(())
}

/// A family dropped while a snapshot holds its table files, created again
/// under the same name (the same folder), written and flushed while the
/// snapshot still reads the old files, then closed with the snapshot still
/// held: the snapshot reads the old family to the end, the new family reads
/// only its own rows, and after a reopen (which clears what the drop left)
/// the new family's files and rows are all there.
#[test]
fn a_family_created_again_while_a_snapshot_holds_the_dropped_ones_files_keeps_its_own() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().family_with("a", FamilyOptions::default());
    let store = Store::open(dir.path(), options())?;
    store.create_family("x", FamilyOptions::default())?;
    store.put("x", "old", "c", "dropped")?;
    store.flush()?;
    let snapshot = store.snapshot();
    store.drop_family("x")?;
    store.create_family("x", FamilyOptions::default())?;
    store.put("x", "new", "c", "kept")?;
    store.flush()?;
    store.put("x", "newer", "c", "in the log")?;
    let value = |s: &cellar_engine::Snapshot, row: &str| -> Result<Option<String>, Box<dyn StdError + Send + Sync>> {
        Ok(s.get("x", row, "c")?
            .map(|c| String::from_utf8_lossy(&c.value).into_owned()))
    };
    assert_eq!(value(&snapshot, "old")?.as_deref(), Some("dropped"));
    assert_eq!(value(&snapshot, "new")?, None);
    assert_eq!(value(&store.snapshot(), "old")?, None, "a dropped cell came back");
    assert_eq!(value(&store.snapshot(), "new")?.as_deref(), Some("kept"));
    drop(store);
    assert_eq!(value(&snapshot, "old")?.as_deref(), Some("dropped"), "after the close");
    let store = Store::open(dir.path(), options())?;
    assert_eq!(value(&store.snapshot(), "old")?, None, "a dropped cell came back");
    assert_eq!(value(&store.snapshot(), "new")?.as_deref(), Some("kept"));
    assert_eq!(value(&store.snapshot(), "newer")?.as_deref(), Some("in the log"));
    store.verify()?;
    assert_eq!(
        value(&snapshot, "old")?.as_deref(),
        Some("dropped"),
        "after a reopen deleted what the drop left"
    );
    drop(snapshot);
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(value(&store.snapshot(), "new")?.as_deref(), Some("kept"));
    assert_eq!(value(&store.snapshot(), "old")?, None);
    Ok(())
}

/// `flush` and `compact` called while other threads write without a pause
/// return. (`flush_and_wait` waits until the family has no frozen memtable
/// at all, those frozen after the call too; it gets there because writers
/// stall at `max_immutable_memtables` and the flush thread catches up. A
/// change that let writes outrun the flush thread would show here.)
#[test]
fn a_flush_returns_while_writers_keep_filling_memtables() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(Store::open(
        dir.path(),
        StoreOptions::default()
            .sync(SyncPolicy::Never)
            .family_with("a", small_family().memtable_max_entries(10)),
    )?);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || -> Result<u64, Box<dyn StdError + Send + Sync>> {
                let mut i = 0;
                while !stop.load(Ordering::Acquire) {
                    store.put("a", row(w, i % 500), "c", i.to_string())?;
                    i += 1;
                }
                Ok(i)
            })
        })
        .collect();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let flusher = {
        let store = store.clone();
        std::thread::spawn(move || -> TestResult {
            for _ in 0..5 {
                store.flush()?;
                store.compact("a")?;
            }
            let _ = done_tx.send(());
            Ok(())
        })
    };
    let finished = done_rx.recv_timeout(Duration::from_secs(20)).is_ok();
    stop.store(true, Ordering::Release);
    for w in writers {
        w.join().map_err(|_| "a writer panicked")??;
    }
    flusher.join().map_err(|_| "the flusher panicked")??;
    assert!(finished, "flush and compact waited on writes that came after them");
    Ok(())
}
