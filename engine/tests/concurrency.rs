//! Concurrency: readers on snapshots while one writer, background flushes and
//! minor compactions change the store underneath: a read works on a
//! consistent snapshot, so it never blocks writers or compactions.
//!
//! `CELLAR_STRESS_SECS` sets how long the stress test runs (default 2 s).

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cellar_engine::{ColumnRange, FamilyOptions, RowRange, Snapshot, Store, StoreOptions, WriteBatch};

type TestResult = Result<(), Box<dyn StdError + Send + Sync>>;

const ROWS: u64 = 10;

fn stress_duration() -> Duration {
    let secs = std::env::var("CELLAR_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

fn row(x: u64) -> String {
    format!("r{x}")
}

/// The value of every row of one family's column in a snapshot, by row.
fn column_by_row(
    snapshot: &Snapshot,
    family: &str,
    column: &str,
) -> Result<BTreeMap<String, u64>, Box<dyn StdError + Send + Sync>> {
    let mut out = BTreeMap::new();
    for r in snapshot.scan(family, &RowRange::all())? {
        let r = r?;
        for cell in r.cells {
            assert_eq!(&cell.column[..], column.as_bytes());
            out.insert(
                String::from_utf8(r.key.to_vec())?,
                std::str::from_utf8(&cell.value)?.parse()?,
            );
        }
    }
    Ok(out)
}

/// One reader: snapshot after snapshot, the two halves of every pair agree,
/// and no row's value ever goes backwards.
fn reader(store: &Store, stop: &AtomicBool, id: u64) -> Result<u64, Box<dyn StdError + Send + Sync>> {
    let mut checks = 0u64;
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut x = id;
    while !stop.load(Ordering::Relaxed) || checks == 0 {
        let snapshot = store.snapshot();
        // Point reads of one pair.
        x = (x + 3) % ROWS;
        let left = snapshot.get("a", row(x), "left")?.map(|c| c.value);
        let right = snapshot.get("b", row(x), "right")?.map(|c| c.value);
        assert_eq!(left, right, "snapshot {}: pair {x} disagrees", snapshot.sequence());
        // The same pair through a slice.
        let sliced = snapshot.slice("a", row(x), &ColumnRange::prefix("le"))?;
        assert_eq!(sliced.first().map(|c| c.value.clone()), left);
        // Every pair at once, through scans of both families.
        let lefts = column_by_row(&snapshot, "a", "left")?;
        let rights = column_by_row(&snapshot, "b", "right")?;
        assert_eq!(lefts, rights, "snapshot {}: scans disagree", snapshot.sequence());
        for (r, v) in lefts {
            let before = seen.insert(r.clone(), v).unwrap_or(0);
            assert!(v >= before, "row {r} went back from {before} to {v}");
        }
        checks += 1;
    }
    Ok(checks)
}

#[test]
fn snapshot_readers_always_see_both_cells_of_a_batch_while_flushes_and_compactions_run() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = || FamilyOptions::default().memtable_max_entries(50).compaction_trigger(2);
    let store = Arc::new(Store::open(
        dir.path(),
        StoreOptions::default()
            .family_with("a", family())
            .family_with("b", family()),
    )?);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|id| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || reader(&store, &stop, id))
        })
        .collect();

    let deadline = Instant::now() + stress_duration();
    let mut written = 0u64;
    while Instant::now() < deadline || written < 1000 {
        written += 1;
        let x = written % ROWS;
        let value = written.to_string();
        let mut batch = WriteBatch::new();
        batch.put("a", row(x), "left", &value).put("b", row(x), "right", &value);
        store.write(&batch)?;
    }
    stop.store(true, Ordering::Relaxed);
    let mut checks = Vec::new();
    for r in readers {
        checks.push(r.join().map_err(|_| "a reader panicked")??);
    }
    assert!(checks.iter().all(|&c| c > 0), "every reader checked: {checks:?}");

    // The writes did go through flushes and compactions, and the end state is exact.
    store.wait_for_background_work()?;
    let stats = store.stats()?;
    let a = stats.family("a").expect("family a");
    assert!(
        a.flushes > 0 && a.compactions > 0,
        "flushes {} compactions {}",
        a.flushes,
        a.compactions
    );
    let snapshot = store.snapshot();
    let expected: BTreeMap<String, u64> = (written.saturating_sub(ROWS - 1)..=written)
        .map(|i| (row(i % ROWS), i))
        .collect();
    assert_eq!(column_by_row(&snapshot, "a", "left")?, expected);
    assert_eq!(column_by_row(&snapshot, "b", "right")?, expected);
    Ok(())
}

#[test]
fn a_snapshot_held_across_a_major_compaction_reads_its_old_values_and_keeps_its_files() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        dir.path(),
        StoreOptions::default().family_with("a", FamilyOptions::default().compaction_trigger(0)),
    )?;
    for i in 0..20 {
        store.put_at("a", format!("row{i:02}"), "c", 1, "old")?;
    }
    store.flush()?;
    store.put_at("a", "row00", "c", 1, "old, second file")?;
    store.flush()?;
    let old_files: Vec<_> = store.tables().into_iter().map(|t| t.path).collect();
    assert_eq!(old_files.len(), 2);

    let snapshot = store.snapshot();
    for i in 0..20 {
        store.put_at("a", format!("row{i:02}"), "c", 2, "new")?;
    }
    store.delete_row("a", "row05")?;
    let report = store.compact("a")?;
    assert_eq!(report.input_files, 3);
    assert_eq!(report.output_entries, 19, "new versions only; the deleted row is gone");
    let new_files: Vec<_> = store.tables().into_iter().map(|t| t.path).collect();
    assert_eq!(new_files.len(), 1);

    // The snapshot still reads what it saw, from the replaced files.
    assert_eq!(
        snapshot.get("a", "row00", "c")?.map(|c| c.value),
        Some("old, second file".into())
    );
    assert_eq!(snapshot.get("a", "row05", "c")?.map(|c| c.value), Some("old".into()));
    let rows: Vec<_> = snapshot.scan("a", &RowRange::all())?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r.cells.len() == 1 && r.cells[0].timestamp == 1));
    // The store reads the new state.
    assert_eq!(store.get("a", "row00", "c")?.map(|c| c.value), Some("new".into()));
    assert_eq!(store.get("a", "row05", "c")?, None);
    assert_eq!(store.scan("a", &RowRange::all())?.count(), 19);

    assert!(
        old_files.iter().all(|p| p.exists()),
        "a snapshot's files stay while it is held"
    );
    drop(snapshot);
    store.wait_for_background_work()?;
    assert!(old_files.iter().all(|p| !p.exists()), "and go when it is dropped");
    assert!(new_files.iter().all(|p| p.exists()));
    Ok(())
}

/// Rows a writer has written, read by readers while it writes: the
/// memtables' row filters (filled as the writer inserts, read with no lock)
/// never hide a row a reader's snapshot can see.
#[test]
fn row_reads_find_every_row_written_before_their_snapshot_while_memtables_fill_and_rotate() -> TestResult {
    const COLUMNS: [&str; 3] = ["a", "b", "c"];
    let dir = tempfile::tempdir()?;
    // Small memtables: rows land in the active memtable, in frozen ones
    // waiting for their flush, and in table files, all while readers read.
    let options = FamilyOptions::default().memtable_max_entries(60).compaction_trigger(4);
    let store = Arc::new(Store::open(
        dir.path(),
        StoreOptions::default().family_with("f", options),
    )?);
    // Rows acknowledged so far: row `i` for every `i` below it.
    let acknowledged = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3u64)
        .map(|id| {
            let (store, acknowledged, stop) = (store.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || -> Result<u64, Box<dyn StdError + Send + Sync>> {
                let mut reads = 0u64;
                let mut x = id;
                while !stop.load(Ordering::Relaxed) || reads == 0 {
                    // The count first, then the snapshot: every row below
                    // the count was written before the snapshot was taken.
                    let written = acknowledged.load(Ordering::Acquire);
                    let snapshot = store.snapshot();
                    if written == 0 {
                        continue;
                    }
                    // The newest row (most likely still in the active
                    // memtable) and an older one.
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    for i in [written - 1, (x >> 33) % written] {
                        let cells = snapshot.get_row("f", row(i))?;
                        let columns: Vec<&[u8]> = cells.iter().map(|c| &c.column[..]).collect();
                        assert_eq!(columns, [b"a", b"b", b"c"], "row {i} of {written}");
                        let mut visited = 0;
                        snapshot.visit_row("f", row(i), |_| visited += 1)?;
                        assert_eq!(visited, 3, "row {i} of {written}, visited");
                        let cell = snapshot.get("f", row(i), "b")?.map(|c| c.value);
                        assert_eq!(cell, Some(i.to_string().into()), "row {i} of {written}, get");
                        reads += 1;
                    }
                }
                Ok(reads)
            })
        })
        .collect();

    let deadline = Instant::now() + stress_duration();
    let mut written = 0u64;
    while Instant::now() < deadline || written < 2000 {
        let mut batch = WriteBatch::new();
        for column in COLUMNS {
            batch.put("f", row(written), column, written.to_string());
        }
        store.write(&batch)?;
        written += 1;
        acknowledged.store(written, Ordering::Release);
    }
    stop.store(true, Ordering::Relaxed);
    let mut reads = Vec::new();
    for r in readers {
        reads.push(r.join().map_err(|_| "a reader panicked")??);
    }
    assert!(reads.iter().all(|&n| n > 0), "every reader read: {reads:?}");
    let stats = store.stats()?;
    let f = stats.family("f").expect("family f");
    assert!(f.flushes > 10, "memtables rotated and flushed: {}", f.flushes);
    Ok(())
}

#[test]
fn a_scan_opened_on_a_memtable_reads_it_whole_after_its_flush_and_the_store_is_gone() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(
        dir.path(),
        StoreOptions::default().family_with("f", FamilyOptions::default()),
    )?;
    let mut batch = WriteBatch::new();
    for i in 0..100u64 {
        batch.put("f", row(1000 + i), "c", i.to_string());
    }
    store.write(&batch)?;
    // The scan stands in the active memtable; then the memtable is frozen,
    // flushed and dropped by the store, more rows arrive, and the store closes.
    let mut scan = store.scan("f", &RowRange::all())?;
    let first = scan.next().ok_or("a first row")??;
    store.flush()?;
    let mut later = WriteBatch::new();
    later.put("f", row(1050), "c", "later");
    store.write(&later)?;
    drop(store);
    // The rest of the scan, on another thread: the rows it was opened on.
    let rest = std::thread::spawn(move || -> Result<Vec<(String, String)>, String> {
        scan.map(|r| {
            let r = r.map_err(|e| e.to_string())?;
            let value = r.cells.first().map(|c| String::from_utf8_lossy(&c.value).into_owned());
            Ok((String::from_utf8_lossy(&r.key).into_owned(), value.unwrap_or_default()))
        })
        .collect()
    })
    .join()
    .map_err(|_| "the scanning thread panicked")??;
    assert_eq!(String::from_utf8_lossy(&first.key), "r1000");
    assert_eq!(rest.len(), 99);
    assert_eq!(rest[49], ("r1050".to_string(), "50".to_string()));
    assert_eq!(rest[98], ("r1099".to_string(), "99".to_string()));
    Ok(())
}

/// A cell's writes in the racing-compactions test: `(timestamp, value)`,
/// `None` for a cell deletion; a row deletion is kept under column `""`.
type Writes = BTreeMap<(u64, String), Vec<(u64, Option<String>)>>;

/// A row as the racing-compactions test compares it: its key, and each
/// cell's column, timestamp and value.
type RowCells = (String, Vec<(String, u64, String)>);

/// What a reader of `writes` sees of one cell: the versions newer than its
/// newest deletion (of the cell or of its row), newest first, at most `max`.
/// Timestamps only grow in that test, so age is the timestamp alone.
fn model_versions(writes: &Writes, row: u64, column: &str, max: usize) -> Vec<(u64, String)> {
    let deleted = |key: &(u64, String)| -> u64 {
        writes
            .get(key)
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.is_none())
            .map(|(ts, _)| *ts)
            .max()
            .unwrap_or(0)
    };
    let hide = deleted(&(row, String::new())).max(deleted(&(row, column.to_string())));
    let mut out: Vec<(u64, String)> = writes
        .get(&(row, column.to_string()))
        .into_iter()
        .flatten()
        .filter_map(|(ts, v)| v.as_ref().filter(|_| *ts > hide).map(|v| (*ts, v.clone())))
        .collect();
    out.sort_by(|a, b| b.cmp(a));
    out.truncate(max);
    out
}

/// Every cell and row of both families of the racing-compactions test, read
/// through `snapshot`, against `writes` as they were when it was taken.
fn check_against_writes(
    snapshot: &Snapshot,
    writes: &BTreeMap<&'static str, Writes>,
    what: &str,
) -> Result<(), Box<dyn StdError + Send + Sync>> {
    for (family, writes) in writes {
        let mut rows = Vec::new();
        for r in 0..RACE_ROWS {
            let mut row = Vec::new();
            for c in RACE_COLUMNS {
                let want = model_versions(writes, r, c, 2);
                let got: Vec<(u64, String)> = snapshot
                    .versions(family, row_name(r), c)?
                    .into_iter()
                    .map(|cell| (cell.timestamp, String::from_utf8_lossy(&cell.value).into_owned()))
                    .collect();
                assert_eq!(got, want, "{what}: {family} {} {c}", row_name(r));
                row.extend(want.first().map(|(ts, v)| (c.to_string(), *ts, v.clone())));
            }
            if !row.is_empty() {
                rows.push((row_name(r), row));
            }
        }
        let scanned: Vec<RowCells> = snapshot
            .scan(family, &RowRange::all())?
            .map(|r| {
                r.map(|r| {
                    let cells = r
                        .cells
                        .iter()
                        .map(|c| {
                            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                            (text(&c.column), c.timestamp, text(&c.value))
                        })
                        .collect();
                    (String::from_utf8_lossy(&r.key).into_owned(), cells)
                })
            })
            .collect::<Result<_, _>>()?;
        assert_eq!(scanned, rows, "{what}: scan of {family}");
    }
    Ok(())
}

const RACE_ROWS: u64 = 24;
const RACE_COLUMNS: [&str; 3] = ["a", "b", "c"];

fn row_name(r: u64) -> String {
    format!("row{r:02}")
}

/// Manual major compactions, from another thread, racing the writer and the
/// background flushes and minor compactions of a leveled and a size-tiered
/// family (tiny memtables and levels, so every kind of merge and move runs):
/// snapshots taken between writes read, after all of it, exactly what was
/// written before them, and so does the store at the end and after a reopen.
#[test]
fn snapshots_read_what_they_saw_while_manual_compactions_race_background_ones() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = |compaction| {
        FamilyOptions::default()
            .compaction(compaction)
            .compaction_trigger(2)
            .max_versions(2)
            .memtable_max_entries(16)
            .target_file_entries(12)
    };
    let families = ["leveled", "tiered"];
    let options = StoreOptions::default()
        .family_with(
            families[0],
            family(cellar_engine::Compaction::Leveled {
                base_bytes: 2048,
                multiplier: 2,
            }),
        )
        .family_with(families[1], family(cellar_engine::Compaction::SizeTiered));
    let store = Arc::new(Store::open(dir.path(), options.clone())?);
    let done = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || -> Result<u64, String> {
            let mut compactions = 0;
            while !done.load(Ordering::Relaxed) {
                for family in ["leveled", "tiered"] {
                    store.compact(family).map_err(|e| e.to_string())?;
                    compactions += 1;
                }
            }
            Ok(compactions)
        })
    };
    let mut writes: BTreeMap<&'static str, Writes> = families.iter().map(|f| (*f, Writes::new())).collect();
    let mut held: Vec<(Snapshot, BTreeMap<&'static str, Writes>)> = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for ts in 1..=3000u64 {
        // xorshift: the same history on every run.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let family = families[(x % 2) as usize];
        let r = (x >> 8) % RACE_ROWS;
        let c = RACE_COLUMNS[((x >> 16) % 3) as usize];
        let cells = writes.get_mut(family).ok_or("no family")?;
        match (x >> 24) % 10 {
            0 => {
                store.delete_at(family, row_name(r), c, ts)?;
                cells.entry((r, c.to_string())).or_default().push((ts, None));
            }
            1 => {
                store.delete_row_at(family, row_name(r), ts)?;
                cells.entry((r, String::new())).or_default().push((ts, None));
            }
            _ => {
                let value = format!("v{ts}");
                store.put_at(family, row_name(r), c, ts, &value)?;
                cells.entry((r, c.to_string())).or_default().push((ts, Some(value)));
            }
        }
        if ts % 150 == 0 {
            if held.len() == 4 {
                let (snapshot, then) = held.remove(0);
                check_against_writes(&snapshot, &then, &format!("snapshot let go at {ts}"))?;
            }
            held.push((store.snapshot(), writes.clone()));
        }
    }
    done.store(true, Ordering::Relaxed);
    let compactions = compactor.join().map_err(|_| "the compactor panicked")??;
    assert!(compactions >= 2, "{compactions} manual compactions");
    for (i, (snapshot, then)) in held.iter().enumerate() {
        check_against_writes(snapshot, then, &format!("held snapshot {i}"))?;
    }
    check_against_writes(&store.snapshot(), &writes, "the store")?;
    store.wait_for_background_work()?;
    drop(held);
    drop(Arc::try_unwrap(store).map_err(|_| "the store is still shared")?);
    let store = Store::open(dir.path(), options)?;
    check_against_writes(&store.snapshot(), &writes, "reopened")?;
    Ok(())
}

/// A file moved down a level without a rewrite is the same file listed
/// again. A snapshot taken before the move (holding the first listing) or
/// after it (holding the second) reads it after a later merge replaced it,
/// and the file stays on disk until the last version holding it under
/// either listing is dropped. The first listing was never marked obsolete
/// and the second deleted the file when it went: the file was gone while a
/// snapshot taken before the move still held it (its reads went on through
/// the map).
#[test]
fn a_moved_file_stays_until_no_snapshot_holds_it_under_either_listing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let off = FamilyOptions::default()
        .compaction(cellar_engine::Compaction::LEVELED)
        .compaction_trigger(0);
    let store = Store::open(dir.path(), StoreOptions::default().family_with("f", off.clone()))?;
    for i in 0..50 {
        store.put_at("f", row(i), "c", 1, "first")?;
    }
    store.flush()?;
    let flushed = store.tables();
    assert_eq!(flushed.iter().map(|t| t.level).collect::<Vec<_>>(), vec![0]);
    let before_move = store.snapshot();
    // Automatic compaction on: the lone file moves to the last level as it is.
    store.alter_family("f", off.compaction_trigger(1))?;
    store.wait_for_background_work()?;
    let moved = store.tables();
    assert_eq!(
        moved.iter().map(|t| (t.file_id, t.level)).collect::<Vec<_>>(),
        vec![(flushed[0].file_id, 6)],
        "moved, not rewritten"
    );
    let after_move = store.snapshot();
    for i in 0..50 {
        store.put_at("f", row(i), "c", 2, "second")?;
    }
    store.flush()?;
    store.wait_for_background_work()?;
    assert!(
        store.tables().iter().all(|t| t.file_id != flushed[0].file_id),
        "merged away"
    );
    for (name, snapshot) in [("after the move", after_move), ("before the move", before_move)] {
        assert!(flushed[0].path.exists(), "{name}: the file is held by a snapshot");
        let rows: Vec<_> = snapshot.scan("f", &RowRange::all())?.collect::<Result<_, _>>()?;
        assert_eq!(rows.len(), 50, "{name}");
        assert!(rows.iter().all(|r| &r.cells[0].value[..] == b"first"), "{name}");
        drop(snapshot);
    }
    store.wait_for_background_work()?;
    assert!(!flushed[0].path.exists(), "deleted once no version holds it");
    assert_eq!(store.get("f", row(7), "c")?.map(|c| c.value), Some("second".into()));
    Ok(())
}
