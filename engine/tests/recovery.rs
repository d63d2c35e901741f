//! Recovery: what a store holds after it is closed, crashed, or damaged, and
//! the errors it gives for what it cannot accept.
//!
//! Covers the write path, the manifest and locking
//! (`engine/FORMAT-log-manifest.md`): every acknowledged
//! write survives a reopen and a SIGKILL; a torn last log record is dropped; a
//! damaged log record followed by good ones, or a damaged data block, is an
//! `Error::Corruption` naming the file; an idle family does not pin the log.

use std::error::Error as StdError;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cellar_engine::{
    Cell, ColumnRange, Compaction, Error, FamilyOptions, Row, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch,
    MAX_COLUMN_BYTES, MAX_ROW_BYTES, MAX_VALUE_BYTES,
};
use cellar_testkit::dirs::copy_store;

type TestResult = Result<(), Box<dyn StdError>>;

/// The log segments (`<number>.log`) in the store folder, oldest first.
fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .expect("read the store folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let number = name.strip_suffix(".log")?.parse().ok()?;
            Some((number, e.path()))
        })
        .collect();
    logs.sort();
    logs.into_iter().map(|(_, p)| p).collect()
}

fn newest_log(dir: &Path) -> PathBuf {
    log_files(dir).pop().expect("the store has a log segment")
}

fn flip_byte(path: &Path, offset: u64) -> TestResult {
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut byte)?;
    byte[0] ^= 0x5A;
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(&byte)?;
    file.sync_all()?;
    Ok(())
}

fn small_memtables() -> FamilyOptions {
    FamilyOptions::default().memtable_max_entries(16).compaction_trigger(2)
}

fn two_families() -> StoreOptions {
    StoreOptions::default()
        .family("a")
        .family_with("b", FamilyOptions::default().max_versions(3))
}

fn value_of(store: &Store, family: &str, row: &str, column: &str) -> Result<Option<String>, Error> {
    Ok(store
        .get(family, row, column)?
        .map(|c| String::from_utf8_lossy(&c.value).into_owned()))
}

// ------------------------------------------------------------- clean reopen

/// Recovery sorts a family folder's files from one listing taken before it
/// writes, then flushes the replayed log into tables numbered from the
/// manifest's next file number, which an unfinished or unrecorded table
/// left by a crash may already carry (its edit never became durable, so it
/// never raised the number). The leftover is removed by its path only after
/// the new table has its final name: recovery must not take the table it
/// wrote for the leftover it listed.
#[test]
fn a_leftover_numbered_like_the_opens_own_flush_is_not_taken_for_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().family("f");
    let store = Store::open(dir.path(), options())?;
    store.put("f", "r", "c", "v")?;
    // Closed unflushed: the next open flushes the log into a table.
    drop(store);
    let family = dir.path().join("f");
    for n in 1..=30u64 {
        std::fs::write(family.join(format!("{n:06}.sst.pending")), b"left by a crash")?;
        std::fs::write(family.join(format!("{n:06}.sst.pending.tmp")), b"left by a crash")?;
    }
    let store = Store::open(dir.path(), options())?;
    assert_eq!(value_of(&store, "f", "r", "c")?, Some("v".to_string()));
    let left: Vec<String> = std::fs::read_dir(&family)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    let [table] = left.as_slice() else {
        panic!("one table file and no leftover: {left:?}")
    };
    let number: u64 = table.strip_suffix(".sst").ok_or("a table")?.parse()?;
    assert!(number <= 30, "the flush took a leftover's number: {table}");
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(value_of(&store, "f", "r", "c")?, Some("v".to_string()));
    Ok(())
}

#[test]
fn acknowledged_writes_survive_a_reopen_without_flush() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), two_families())?;
        for i in 0..100 {
            store.put("a", format!("row{i:03}"), "col", format!("a{i}"))?;
        }
        store.put_at("b", "versioned", "col", 1, "one")?;
        store.put_at("b", "versioned", "col", 2, "two")?;
        store.put_at("b", "versioned", "col", 3, "three")?;
        store.delete("a", "row007", "col")?;
        store.delete_row("a", "row008")?;
        let mut batch = WriteBatch::new();
        batch
            .put("a", "batched", "x", "1")
            .put("b", "batched", "y", "2")
            .delete("a", "row009", "col");
        store.write(&batch)?;
        // No flush: everything is in the log and the memtables only.
        assert_eq!(store.tables().len(), 0);
    }
    let store = Store::open(dir.path(), two_families())?;
    for i in 0..100 {
        let expected = (!(7..=9).contains(&i)).then(|| format!("a{i}"));
        assert_eq!(
            value_of(&store, "a", &format!("row{i:03}"), "col")?,
            expected,
            "row{i:03}"
        );
    }
    let versions: Vec<(u64, String)> = store
        .versions("b", "versioned", "col")?
        .into_iter()
        .map(|c| (c.timestamp, String::from_utf8_lossy(&c.value).into_owned()))
        .collect();
    assert_eq!(
        versions,
        vec![(3, "three".to_string()), (2, "two".to_string()), (1, "one".to_string())]
    );
    assert_eq!(value_of(&store, "a", "batched", "x")?.as_deref(), Some("1"));
    assert_eq!(value_of(&store, "b", "batched", "y")?.as_deref(), Some("2"));
    assert_eq!(store.scan("a", &RowRange::all())?.count(), 98);
    Ok(())
}

#[test]
fn acknowledged_writes_survive_many_flushes_compactions_and_reopens() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .family_with("a", small_memtables())
            .family_with("b", small_memtables().max_versions(2))
    };
    let mut expected = std::collections::BTreeMap::new();
    for round in 0..4u32 {
        let store = Store::open(dir.path(), options())?;
        for i in 0..300u32 {
            let row = format!("row{:03}", (i * 7 + round) % 150);
            let value = format!("r{round}i{i}");
            store.put("a", &row, "col", &value)?;
            expected.insert(row.clone(), Some(value));
            if i % 11 == 0 {
                store.delete("a", &row, "col")?;
                expected.insert(row, None);
            }
            if i % 97 == 0 {
                store.compact("a")?;
            }
        }
        store.put_at("b", "versions", "col", u64::from(round), format!("round {round}"))?;
        if round % 2 == 0 {
            store.flush()?;
        }
        // Dropped with frozen memtables and compactions possibly in flight.
    }
    let store = Store::open(dir.path(), options())?;
    store.wait_for_background_work()?;
    for (row, value) in &expected {
        assert_eq!(&value_of(&store, "a", row, "col")?, value, "{row}");
    }
    let live = expected.values().filter(|v| v.is_some()).count();
    assert_eq!(store.scan("a", &RowRange::all())?.count(), live);
    let versions: Vec<u64> = store
        .versions("b", "versions", "col")?
        .iter()
        .map(|c| c.timestamp)
        .collect();
    assert_eq!(versions, vec![3, 2]);
    assert!(store.stats()?.family("a").expect("family a").flushes > 0 || !store.tables().is_empty());
    store.verify()?;
    Ok(())
}

/// Regression: a log rotation takes a file number that the manifest records
/// only with the next flush. Closing before that flush ran made the next open
/// (or the first rotation after it) create a log segment that already existed
/// (`Error::Io`, "File exists"), so the store could not be used again.
#[test]
fn reopen_never_reuses_the_number_of_an_unrecorded_log_segment() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().family_with("b", FamilyOptions::default().memtable_max_entries(5));
    for round in 0..60u64 {
        let store = Store::open(dir.path(), options())?;
        // The fifth entry freezes the memtable and starts a new log segment; the
        // store is closed at once, usually before the background flush runs.
        for column in 0..5u64 {
            store.put_at("b", "row", format!("c{column}"), round, format!("round {round}"))?;
        }
    }
    let store = Store::open(dir.path(), options())?;
    let row = store.get_row("b", "row")?;
    assert_eq!(row.len(), 5);
    assert!(row.iter().all(|c| c.timestamp == 59 && &c.value[..] == b"round 59"));
    Ok(())
}

/// Regression: a trivial move (a leveled family's file moved down a level
/// as it is) takes a new run number from the store's file numbers, and the
/// manifest did not record it. The next open handed the number out again,
/// here to the table its log replay wrote at level 0, while the moved file
/// at level 6 was in a run of that number. A read of a range takes a run's
/// files as one stretch in key order, so row `b` (at level 0) was looked
/// for among the files of row `a` and missed: `versions`, `get_row` and
/// `scan` did not return it, where `get` (which asks each file) did.
#[test]
fn reopen_never_reuses_the_run_number_of_a_moved_table() -> TestResult {
    let dir = tempfile::tempdir()?;
    let leveled = |trigger| {
        FamilyOptions::default()
            .compaction(Compaction::Leveled {
                base_bytes: 1 << 20,
                multiplier: 10,
            })
            .compaction_trigger(trigger)
    };
    let options = || {
        StoreOptions::default()
            .family_with("f", leveled(0))
            .family_with("g", leveled(0))
    };
    {
        let store = Store::open(dir.path(), options())?;
        for family in ["f", "g"] {
            store.put_at(family, "a", "c", 1, "a")?;
        }
        store.flush()?;
        // Each family's file moves from level 0 to level 6 into a new run,
        // one family after the other: two numbers taken, nothing recorded
        // since the flush.
        for family in ["g", "f"] {
            store.alter_family(family, leveled(1))?;
            store.wait_for_background_work()?;
        }
        store.put_at("f", "b", "c", 2, "b")?;
    }
    let store = Store::open(dir.path(), options())?;
    let want = vec![Cell {
        column: "c".into(),
        timestamp: 2,
        value: "b".into(),
    }];
    assert_eq!(store.get("f", "b", "c")?.as_ref(), want.first());
    assert_eq!(store.versions("f", "b", "c")?, want);
    assert_eq!(store.get_row("f", "b")?, want);
    let rows: Vec<Row> = store.scan("f", &RowRange::all())?.collect::<Result<_, _>>()?;
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.key.as_ref()).collect();
    assert_eq!(keys, [&b"a"[..], b"b"]);
    // A run is at one level.
    let tables = store.tables();
    let levels_of = |family: &str, run: u64| -> Vec<u32> {
        let mut levels: Vec<u32> = tables
            .iter()
            .filter(|t| t.family == family && t.run == run)
            .map(|t| t.level)
            .collect();
        levels.dedup();
        levels
    };
    for t in &tables {
        assert_eq!(levels_of(&t.family, t.run), [t.level], "run {} of {}", t.run, t.family);
    }
    Ok(())
}

// ------------------------------------------------------------ damaged logs

/// Ten single-put records of identical size: returns the record length.
fn write_ten_equal_records(dir: &Path) -> Result<u64, Box<dyn StdError>> {
    let store = Store::open(dir, StoreOptions::default().family("a"))?;
    for i in 0..10 {
        store.put_at("a", format!("row{i}"), "col", 100 + i, format!("value{i}"))?;
    }
    drop(store);
    let logs = log_files(dir);
    assert_eq!(logs.len(), 1, "one log segment: {logs:?}");
    let len = std::fs::metadata(&logs[0])?.len();
    assert_eq!(len % 10, 0, "ten records of one size");
    Ok(len / 10)
}

#[test]
fn torn_last_log_record_is_dropped_and_the_rest_recovered() -> TestResult {
    let dir = tempfile::tempdir()?;
    let record = write_ten_equal_records(dir.path())?;
    let log = newest_log(dir.path());
    let file = OpenOptions::new().write(true).open(&log)?;
    file.set_len(10 * record - 3)?;
    drop(file);

    let store = Store::open(dir.path(), StoreOptions::default())?;
    for i in 0..9 {
        assert_eq!(
            value_of(&store, "a", &format!("row{i}"), "col")?,
            Some(format!("value{i}")),
            "row{i}"
        );
    }
    assert_eq!(
        value_of(&store, "a", "row9", "col")?,
        None,
        "the torn record was never acknowledged"
    );
    // The store goes on: new writes, another reopen.
    store.put("a", "row9", "col", "again")?;
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(value_of(&store, "a", "row9", "col")?.as_deref(), Some("again"));
    assert_eq!(store.scan("a", &RowRange::all())?.count(), 10);
    Ok(())
}

#[test]
fn flipped_byte_in_a_middle_log_record_is_corruption_on_open() -> TestResult {
    let dir = tempfile::tempdir()?;
    let record = write_ten_equal_records(dir.path())?;
    let log = newest_log(dir.path());
    // Record 4's payload (after its 8-byte frame header); records 5..9 follow intact.
    flip_byte(&log, 4 * record + 8 + 2)?;
    match Store::open(dir.path(), StoreOptions::default()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, log);
            assert_eq!(offset, 4 * record, "the offset of the damaged record");
        }
        Err(other) => panic!("expected Error::Corruption, got {other:?}"),
        Ok(_) => panic!("a damaged record followed by good ones must not open"),
    }
    // Nothing was deleted: the log is still there for a salvage.
    assert!(log.exists());
    Ok(())
}

#[test]
fn flipped_byte_in_a_table_data_block_is_corruption_on_the_read_that_touches_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let table = {
        let store = Store::open(dir.path(), StoreOptions::default().family("t"))?;
        for i in 0..200 {
            store.put_at("t", format!("row{i:03}"), "col", 1, format!("{i:0>40}"))?;
        }
        store.flush()?;
        let tables = store.tables();
        assert_eq!(tables.len(), 1);
        assert!(
            tables[0].data_blocks >= 3,
            "several data blocks: {}",
            tables[0].data_blocks
        );
        tables[0].path.clone()
    };
    // Offset 30 is inside the first entry of data block 0 (row000).
    flip_byte(&table, 30)?;

    // Opening checks footer, index and filter only: it succeeds.
    let store = Store::open(dir.path(), StoreOptions::default())?;
    let is_corruption_of_table = |e: &Error| matches!(e, Error::Corruption { file, .. } if *file == table);
    let err = store
        .get("t", "row000", "col")
        .expect_err("row000 is in the damaged block");
    assert!(is_corruption_of_table(&err), "{err:?}");
    let err = store.slice("t", "row001", &ColumnRange::all()).expect_err("row001 too");
    assert!(is_corruption_of_table(&err), "{err:?}");
    let err = store
        .scan("t", &RowRange::all())
        .and_then(|scan| scan.collect::<Result<Vec<_>, Error>>())
        .expect_err("a scan reads every block");
    assert!(is_corruption_of_table(&err), "{err:?}");
    let err = store.verify().expect_err("verify checks every block");
    assert!(is_corruption_of_table(&err), "{err:?}");
    // A read of another block is not affected.
    assert_eq!(value_of(&store, "t", "row199", "col")?, Some(format!("{:0>40}", 199)));
    Ok(())
}

// --------------------------------------------------------------- process kill

const KILL_CHILD_DIR: &str = "CELLAR_TEST_KILL_CHILD_DIR";
const KILL_CHILD_SYNC: &str = "CELLAR_TEST_KILL_CHILD_SYNC";
const KILL_TEST: &str = "acknowledged_writes_survive_sigkill_with_sync_always";
const BUFFERED_KILL_TEST: &str = "buffered_log_keeps_a_prefix_of_whole_batches_across_sigkill";

fn kill_options(sync: SyncPolicy) -> StoreOptions {
    StoreOptions::default().sync(sync).family_with(
        "k",
        FamilyOptions::default().memtable_max_entries(40).compaction_trigger(2),
    )
}

fn kill_sync() -> SyncPolicy {
    match std::env::var(KILL_CHILD_SYNC).as_deref() {
        Ok("buffered") => SyncPolicy::Buffered,
        _ => SyncPolicy::Always,
    }
}

/// The child: writes forever, printing each key once its write returned.
fn kill_child(dir: &Path) -> TestResult {
    let store = Store::open(dir, kill_options(kill_sync()))?;
    let stdout = std::io::stdout();
    for i in 0..u64::MAX {
        let mut batch = WriteBatch::new();
        batch.put("k", format!("key{i:08}"), "v", format!("value{i}"));
        batch.put("k", format!("key{i:08}"), "w", format!("second{i}"));
        store.write(&batch)?;
        let mut out = stdout.lock();
        writeln!(out, "ACK {i}")?;
        out.flush()?;
    }
    Ok(())
}

#[test]
fn acknowledged_writes_survive_sigkill_with_sync_always() -> TestResult {
    if let Some(dir) = std::env::var_os(KILL_CHILD_DIR) {
        return kill_child(Path::new(&dir));
    }
    let dir = tempfile::tempdir()?;
    let acked = run_and_kill_child(KILL_TEST, "always", dir.path())?;
    assert!(acked.len() >= 300, "the child acknowledged only {} writes", acked.len());
    assert_eq!(acked, (0..acked.len() as u64).collect::<Vec<_>>());

    let store = Store::open(dir.path(), kill_options(SyncPolicy::Always))?;
    for &i in &acked {
        let row = format!("key{i:08}");
        assert_eq!(value_of(&store, "k", &row, "v")?, Some(format!("value{i}")), "{row}");
        assert_eq!(value_of(&store, "k", &row, "w")?, Some(format!("second{i}")), "{row}");
    }
    // Whatever else survived is a prefix of the history, each batch whole.
    let rows: Vec<_> = store.scan("k", &RowRange::all())?.collect::<Result<_, Error>>()?;
    assert!(rows.len() >= acked.len());
    assert_prefix_of_whole_batches(&rows);
    Ok(())
}

/// `SyncPolicy::Buffered` trades the last log buffer on a process crash for a
/// system call per 64 KiB: what survives a SIGKILL is a prefix of the batches,
/// each whole, missing at most what fits in one buffer.
#[test]
fn buffered_log_keeps_a_prefix_of_whole_batches_across_sigkill() -> TestResult {
    if let Some(dir) = std::env::var_os(KILL_CHILD_DIR) {
        return kill_child(Path::new(&dir));
    }
    let dir = tempfile::tempdir()?;
    let acked = run_and_kill_child(BUFFERED_KILL_TEST, "buffered", dir.path())?;
    let store = Store::open(dir.path(), kill_options(SyncPolicy::Buffered))?;
    let rows: Vec<_> = store.scan("k", &RowRange::all())?.collect::<Result<_, Error>>()?;
    assert_prefix_of_whole_batches(&rows);
    // One batch's log record is over 100 bytes, so one buffer holds fewer than 656.
    let lost = acked.len().saturating_sub(rows.len());
    println!(
        "acknowledged {}, recovered {}, lost with the buffer {lost}",
        acked.len(),
        rows.len()
    );
    assert!(
        lost * 100 <= cellar_engine::LOG_BUFFER_BYTES,
        "{lost} acknowledged batches lost: more than one log buffer"
    );
    Ok(())
}

fn assert_prefix_of_whole_batches(rows: &[cellar_engine::Row]) {
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(&row.key[..], format!("key{i:08}").as_bytes());
        assert_eq!(row.cells.len(), 2, "batch {i} is whole");
    }
}

/// Runs this test binary's `test` as a writer child on `dir`, kills it with
/// SIGKILL after 300 acknowledged batches, and returns every batch number it
/// acknowledged.
fn run_and_kill_child(test: &str, sync: &str, dir: &Path) -> Result<Vec<u64>, Box<dyn StdError>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(KILL_CHILD_DIR, dir)
        .env(KILL_CHILD_SYNC, sync)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked: Vec<u64> = Vec::new();
    // The test harness prints "test <name> ... " before the child's first line.
    let ack = |line: &str| line.rsplit_once("ACK ").map(|(_, i)| i.to_string());
    for line in lines.by_ref() {
        if let Some(i) = ack(&line?) {
            acked.push(i.parse()?);
            if acked.len() == 300 {
                break;
            }
        }
    }
    child.kill()?; // SIGKILL
    child.wait()?;
    // Lines printed before the kill were acknowledged too.
    for line in lines {
        if let Some(i) = ack(&line?) {
            acked.push(i.parse()?);
        }
    }
    Ok(acked)
}

// ----------------------------------------------------------------- locking

/// A child started while the store is open holds a copy of the `LOCK` file
/// (and so its `flock`) from `fork` until `exec`; here the child sleeps 60 ms
/// in that gap. Closing the store and opening it again meanwhile used to
/// fail with `Error::Locked`; the open now waits the child out.
#[test]
fn a_reopen_waits_out_a_child_that_holds_the_lock_until_it_executes() -> TestResult {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
    store.put("a", "r", "c", "v")?;
    let child = std::thread::spawn(|| {
        let mut command = Command::new("true");
        // SAFETY: the closure runs in the forked child before `exec` and only
        // sleeps (nanosleep is async-signal-safe).
        unsafe {
            command.pre_exec(|| {
                std::thread::sleep(std::time::Duration::from_millis(60));
                Ok(())
            });
        }
        command.status()
    });
    std::thread::sleep(std::time::Duration::from_millis(15));
    drop(store);
    let reopened = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(value_of(&reopened, "a", "r", "c")?.as_deref(), Some("v"));
    let status = child.join().map_err(|_| "the child's thread panicked")??;
    assert!(status.success());
    Ok(())
}

#[test]
fn second_open_is_locked_until_the_first_store_is_dropped() -> TestResult {
    let dir = tempfile::tempdir()?;
    let first = Store::open(dir.path(), StoreOptions::default().family("a"))?;
    first.put("a", "r", "c", "v")?;
    match Store::open(dir.path(), StoreOptions::default()) {
        Err(Error::Locked { dir: locked }) => assert_eq!(locked, dir.path()),
        Err(other) => panic!("expected Error::Locked, got {other:?}"),
        Ok(_) => panic!("a second handle opened a locked store"),
    }
    // The failed open changed nothing.
    assert_eq!(value_of(&first, "a", "r", "c")?.as_deref(), Some("v"));
    drop(first);
    let second = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(value_of(&second, "a", "r", "c")?.as_deref(), Some("v"));
    Ok(())
}

// ------------------------------------------------------- refused arguments

#[test]
fn invalid_family_names_are_refused_before_touching_the_disk() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store_dir = dir.path().join("store");
    for bad in ["", "../escape", "a/b", "Upper", "dot.ted", &"x".repeat(65)] {
        match Store::open(&store_dir, StoreOptions::default().family(bad)) {
            Err(Error::InvalidFamilyName(name)) => assert_eq!(name, bad),
            Err(other) => panic!("{bad:?}: expected InvalidFamilyName, got {other:?}"),
            Ok(_) => panic!("{bad:?} was accepted"),
        }
    }
    assert!(!store_dir.exists(), "nothing was created for an invalid name");
    assert!(!dir.path().join("escape").exists());

    let store = Store::open(&store_dir, StoreOptions::default().family("a"))?;
    for bad in ["..", "a b", "é"] {
        assert!(
            matches!(store.create_family(bad, FamilyOptions::default()), Err(Error::InvalidFamilyName(n)) if n == bad)
        );
    }
    assert!(matches!(store.create_family("a", FamilyOptions::default()), Err(Error::FamilyExists(n)) if n == "a"));
    assert!(matches!(
        Store::open(dir.path().join("other"), StoreOptions::default().family("x").family("x")),
        Err(Error::FamilyExists(n)) if n == "x"
    ));
    Ok(())
}

#[test]
fn unknown_family_is_an_error_for_every_operation_and_a_batch_naming_one_applies_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
    let unknown = |r: Result<(), Error>| matches!(r, Err(Error::UnknownFamily(n)) if n == "nope");
    assert!(unknown(store.put("nope", "r", "c", "v")));
    assert!(unknown(store.put_at("nope", "r", "c", 1, "v")));
    assert!(unknown(store.delete("nope", "r", "c")));
    assert!(unknown(store.delete_row("nope", "r")));
    assert!(unknown(store.get("nope", "r", "c").map(drop)));
    assert!(unknown(store.versions("nope", "r", "c").map(drop)));
    assert!(unknown(store.get_row("nope", "r").map(drop)));
    assert!(unknown(store.slice("nope", "r", &ColumnRange::all()).map(drop)));
    assert!(unknown(store.scan("nope", &RowRange::all()).map(drop)));
    assert!(unknown(store.snapshot().get("nope", "r", "c").map(drop)));
    assert!(unknown(store.flush_family("nope")));
    assert!(unknown(store.compact("nope").map(drop)));
    assert!(unknown(store.family_options("nope").map(drop)));

    let mut batch = WriteBatch::new();
    batch.put("a", "r", "c", "v").put("nope", "r", "c", "v");
    assert!(unknown(store.write(&batch)));
    assert_eq!(store.get("a", "r", "c")?, None, "a refused batch applies nothing");
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(store.get("a", "r", "c")?, None, "nor does it reach the log");
    Ok(())
}

#[test]
fn oversized_row_column_or_value_is_too_large_and_the_limits_themselves_are_accepted() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
    let row_over = vec![b'r'; MAX_ROW_BYTES + 1];
    let column_over = vec![b'c'; MAX_COLUMN_BYTES + 1];
    let value_over = vec![b'v'; MAX_VALUE_BYTES + 1];
    let too_large = |r: Result<(), Error>, what: &str, len: usize, limit: usize| match r {
        Err(Error::TooLarge {
            what: w,
            len: l,
            limit: m,
        }) => w == what && l == len && m == limit,
        _ => false,
    };
    assert!(too_large(
        store.put("a", &row_over, "c", "v"),
        "row",
        MAX_ROW_BYTES + 1,
        MAX_ROW_BYTES
    ));
    assert!(too_large(
        store.put("a", "r", &column_over, "v"),
        "column",
        MAX_COLUMN_BYTES + 1,
        MAX_COLUMN_BYTES
    ));
    assert!(too_large(
        store.put("a", "r", "c", &value_over),
        "value",
        MAX_VALUE_BYTES + 1,
        MAX_VALUE_BYTES
    ));
    assert!(too_large(
        store.delete_row("a", &row_over),
        "row",
        MAX_ROW_BYTES + 1,
        MAX_ROW_BYTES
    ));
    let mut batch = WriteBatch::new();
    batch.put("a", "fine", "c", "v").put("a", "r", &column_over, "v");
    assert!(too_large(
        store.write(&batch),
        "column",
        MAX_COLUMN_BYTES + 1,
        MAX_COLUMN_BYTES
    ));
    assert_eq!(store.get("a", "fine", "c")?, None, "a refused batch applies nothing");
    assert_eq!(store.scan("a", &RowRange::all())?.count(), 0);

    let row = vec![b'r'; MAX_ROW_BYTES];
    let column = vec![b'c'; MAX_COLUMN_BYTES];
    let value = vec![b'v'; MAX_VALUE_BYTES];
    store.put("a", &row, &column, &value)?;
    store.flush()?;
    let cell = store.get("a", &row, &column)?.expect("a cell at the limits");
    assert_eq!(cell.value.len(), MAX_VALUE_BYTES);
    assert_eq!(&cell.column[..], &column[..]);
    Ok(())
}

/// `SyncPolicy::Interval` with a period too long to add to the clock (say
/// `Duration::MAX`, "as good as never") never comes due: writes go on, and a
/// clean close still syncs them. (The sync's due time was once computed
/// with `Instant + Duration`, which panics on overflow: the first write
/// panicked.)
#[test]
fn a_sync_interval_too_long_to_add_to_the_clock_never_comes_due_and_writes_go_on() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .family("a")
            .sync(SyncPolicy::Interval(std::time::Duration::MAX))
    };
    let store = Store::open(dir.path(), options())?;
    for i in 0..3 {
        store.put("a", format!("r{i}"), "c", "v")?;
    }
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(store.scan("a", &RowRange::all())?.count(), 3);
    Ok(())
}

/// A batch is one log record, and a record holds at most 256 MiB: a batch of
/// values each within the limit may still not fit. It is refused as too
/// large, like an oversized value, and the store goes on taking writes (it
/// was once taken for a failed log write, which stops the store).
#[test]
fn a_batch_too_large_for_one_log_record_is_refused_and_the_store_goes_on() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
    let value = vec![b'v'; MAX_VALUE_BYTES];
    let mut batch = WriteBatch::new();
    for i in 0..17 {
        batch.put("a", format!("r{i:02}"), "c", &value);
    }
    let refused = store.write(&batch);
    drop(batch);
    assert!(
        matches!(
            refused,
            Err(Error::TooLarge {
                what: "write batch",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(store.get("a", "r00", "c")?, None, "a refused batch applies nothing");
    store.put("a", "after", "c", "v")?;
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(
        store.scan("a", &RowRange::all())?.count(),
        1,
        "nor does it reach the log"
    );
    assert!(store.get("a", "after", "c")?.is_some());
    Ok(())
}

// ------------------------------------------------------------- log trimming

/// One write to family `idle`, then 4,000 puts of ~150 bytes to `busy` (1,000
/// rows over and over), and the background work settled. Returns the most
/// log segments seen live, sampled every 100 puts.
fn one_idle_write_then_4000_busy_ones(store: &Store, dir: &Path) -> Result<usize, Box<dyn StdError>> {
    store.put("idle", "once", "col", "only write")?;
    let mut most_logs = 0;
    for i in 0..4000 {
        store.put("busy", format!("row{:05}", i % 1000), "col", format!("{i:0>100}"))?;
        if i % 100 == 99 {
            most_logs = most_logs.max(log_files(dir).len());
        }
    }
    store.wait_for_background_work()?;
    Ok(most_logs)
}
#[test]
fn an_idle_family_does_not_pin_the_log() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = StoreOptions {
        max_log_bytes: 32 * 1024,
        ..StoreOptions::default()
    }
    .family("idle")
    .family_with(
        "busy",
        FamilyOptions::default().memtable_max_entries(20).compaction_trigger(4),
    );
    let store = Store::open(dir.path(), options)?;
    let most_logs = one_idle_write_then_4000_busy_ones(&store, dir.path())?;
    let logs = log_files(dir.path());
    // 4,000 writes of ~150 log bytes rotate the log ~200 times (every 20 entries).
    // Only segments of unflushed memtables may stay: at most 4 frozen + 1 active.
    assert!(
        logs.len() <= 2,
        "after background work: {} log segments: {logs:?}",
        logs.len()
    );
    assert!(most_logs <= 12, "at some point {most_logs} log segments were live");
    assert_eq!(value_of(&store, "idle", "once", "col")?.as_deref(), Some("only write"));
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(value_of(&store, "idle", "once", "col")?.as_deref(), Some("only write"));
    assert_eq!(
        value_of(&store, "busy", "row00999", "col")?,
        Some(format!("{:0>100}", 3999))
    );
    Ok(())
}

/// The default bound (`max_log_bytes` 0) follows the memtables' size: with
/// small memtables, an idle family's one old write pins a few segments, not
/// every segment written since (it used to pin 256 MiB of them).
#[test]
fn by_default_an_idle_family_pins_a_few_segments_however_small_the_memtables() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .family("idle")
            .family_with("busy", FamilyOptions::default().memtable_max_entries(20))
    };
    let store = Store::open(dir.path(), options())?;
    let most_logs = one_idle_write_then_4000_busy_ones(&store, dir.path())?;
    // 200 rotations, each closing a segment of ~3 KB; the live log may hold
    // four memtables of ~6 KB, so about eight segments, plus the ones flushes
    // in progress still hold.
    assert!(most_logs <= 14, "at some point {most_logs} log segments were live");
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(value_of(&store, "idle", "once", "col")?.as_deref(), Some("only write"));
    assert_eq!(
        value_of(&store, "busy", "row00999", "col")?,
        Some(format!("{:0>100}", 3999))
    );
    Ok(())
}

#[test]
fn buffered_log_keeps_every_write_across_a_clean_close() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().sync(SyncPolicy::Buffered).family("a");
    {
        let store = Store::open(dir.path(), options())?;
        for i in 0..1000u32 {
            store.put("a", format!("r{i:04}"), "c", i.to_le_bytes())?;
        }
    }
    let store = Store::open(dir.path(), options())?;
    let rows = store.scan("a", &RowRange::all())?.collect::<Result<Vec<_>, _>>()?;
    assert_eq!(rows.len(), 1000);
    assert_eq!(
        store.get("a", "r0999", "c")?.map(|c| c.value.to_vec()),
        Some(999u32.to_le_bytes().to_vec())
    );
    Ok(())
}

// ------------------------------------------- damage is decided from evidence

/// Every file under `dir` (but `LOCK`), with its bytes: what "nothing was
/// deleted or changed" is checked against.
fn snapshot_files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read a folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.file_name().is_some_and(|n| n != "LOCK") {
                let relative = path.strip_prefix(root).expect("under the root").to_path_buf();
                out.insert(relative, std::fs::read(&path).expect("read a file"));
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Offsets and lengths of the frames (`crc u32 | length u32 | payload`) of a
/// log segment or manifest.
fn frames(path: &Path) -> Vec<(u64, u64)> {
    let bytes = std::fs::read(path).expect("read");
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        out.push((at as u64, (8 + length) as u64));
        at += 8 + length;
    }
    out
}

fn manifest_of(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    dir.join(current.trim_end())
}

/// Item 1 of the durability review: one row per open, three times (each open
/// flushes the row the previous one logged), then a flush. A middle record of
/// the manifest whose length field is set to run past the end of the file
/// used to read as a torn tail: the store opened without the tables that
/// record and the ones after it listed, and deleted their files. Valid
/// records after the damaged one prove it is not the end of an interrupted
/// write: the open must fail, naming the manifest and the record, and leave
/// every file as it was.
#[test]
fn a_middle_manifest_length_running_past_the_end_is_corruption_and_deletes_nothing() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let options = || StoreOptions::default().family("f");
    for i in 0..3 {
        let store = Store::open(pristine.path(), options())?;
        store.put_at("f", format!("row{i}"), "c", 1, format!("value{i}"))?;
    }
    Store::open(pristine.path(), options())?.flush()?;
    let manifest = manifest_of(pristine.path());
    let records = frames(&manifest);
    let size = std::fs::metadata(&manifest)?.len();
    assert!(records.len() >= 5, "{} manifest records", records.len());
    let mut damaged = 0;
    for &(offset, _) in &records[1..records.len() - 1] {
        let copy = tempfile::tempdir()?;
        copy_store(pristine.path(), copy.path());
        let path = manifest_of(copy.path());
        // The length now runs one byte past the end of the file.
        let past_end = (size - offset - 8 + 1) as u32;
        let mut bytes = std::fs::read(&path)?;
        bytes[offset as usize + 4..offset as usize + 8].copy_from_slice(&past_end.to_le_bytes());
        std::fs::write(&path, &bytes)?;
        let before = snapshot_files(copy.path());
        match Store::open(copy.path(), options()) {
            Err(Error::Corruption { file, offset: at, .. }) => {
                assert_eq!(file, path, "record at {offset}");
                assert_eq!(at, offset, "the damaged record's offset");
            }
            Err(other) => panic!("record at {offset}: expected corruption, got {other:?}"),
            Ok(store) => {
                let rows = store.scan("f", &RowRange::all())?.count();
                panic!("record at {offset}: the store opened with {rows} of 3 rows");
            }
        }
        assert!(
            snapshot_files(copy.path()) == before,
            "record at {offset}: files changed"
        );
        // Every row is in a table file: repair brings all three back.
        let report = Store::repair(copy.path())?;
        assert!(
            report.lost.iter().all(|l| l.from == path),
            "only the manifest is set aside: {report:?}"
        );
        let store = Store::open(copy.path(), options())?;
        for i in 0..3 {
            assert_eq!(
                value_of(&store, "f", &format!("row{i}"), "c")?,
                Some(format!("value{i}")),
                "record at {offset}: row{i} after repair"
            );
        }
        damaged += 1;
    }
    assert!(damaged >= 3, "{damaged} middle records damaged");
    // README's Reliability table quotes what follows the first comma.
    let outcome = format!(
        "for each of the {damaged} middle records: \
         the open fails naming the manifest and the record's offset, no file changed; repair restores 3 of 3 rows"
    );
    println!("a middle manifest record's length run past the end of the file, {outcome}");
    cellar_testkit::readme::assert_quoted(&outcome);
    Ok(())
}

/// Item 2 of the durability review: a log segment is synced when the next
/// one starts, so a record cut short in a segment that has a successor with
/// records was acknowledged, and losing it is damage, not a torn tail.
#[test]
fn a_record_cut_short_in_an_older_log_segment_is_corruption() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = || {
        StoreOptions::default()
            .sync(SyncPolicy::Always)
            .family_with("small", FamilyOptions::default().memtable_max_entries(2))
            .family("big")
    };
    {
        let store = Store::open(dir.path(), options())?;
        store.put_at("big", "b0", "c", 1, "kept in the log")?;
        store.put_at("small", "s0", "c", 1, "one")?;
        // This batch fills `small`: the log moves to a new segment, and `big`
        // still needs the old one for both of its rows.
        let mut batch = WriteBatch::new();
        batch.put_at("big", "b1", "c", 1, "in the last record of the old segment");
        batch.put_at("small", "s1", "c", 1, "two");
        store.write(&batch)?;
        store.put_at("big", "b2", "c", 1, "in the new segment")?;
        store.wait_for_background_work()?;
    }
    let logs: Vec<PathBuf> = log_files(dir.path())
        .into_iter()
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false))
        .collect();
    assert_eq!(logs.len(), 2, "two segments hold records: {logs:?}");
    let older = &logs[0];
    let records = frames(older);
    let (last, last_len) = *records.last().expect("records");
    let file = OpenOptions::new().write(true).open(older)?;
    file.set_len(last + last_len - 3)?;
    drop(file);
    let before = snapshot_files(dir.path());
    match Store::open(dir.path(), options()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(&file, older);
            assert_eq!(offset, last, "the offset of the record cut short");
        }
        Err(other) => panic!("expected corruption, got {other:?}"),
        Ok(store) => panic!(
            "the store opened; big/b1 reads {:?}",
            value_of(&store, "big", "b1", "c")?
        ),
    }
    assert!(snapshot_files(dir.path()) == before, "files changed");
    Ok(())
}

// ------------------------------------------- random batches through a crash

use cellar_engine::key::Kind;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// One operation of a random batch: family, row, column (indexes into the
/// pools below), kind, the caller's timestamp or the store's, value.
#[derive(Clone, Debug)]
struct RandomOp {
    family: usize,
    row: usize,
    column: usize,
    kind: Kind,
    timestamp: Option<u64>,
    value: Vec<u8>,
}

const FAMILIES: [&str; 3] = ["a", "b", "c"];
/// Rows and columns that are empty, hold the key encoding's escape byte
/// (0x00) and the top byte (0xFF), and are prefixes of one another.
const ROWS: [&[u8]; 6] = [b"", b"r", b"r\x00", b"\x00", b"\xff", b"r\xff\x00"];
const COLUMNS: [&[u8]; 4] = [b"", b"c", b"\x00", b"\xff\xff"];

fn random_op() -> impl Strategy<Value = RandomOp> {
    let kind = prop_oneof![4 => Just(Kind::Put), 1 => Just(Kind::DeleteCell), 1 => Just(Kind::DeleteRow)];
    let timestamp = prop_oneof![
        3 => Just(None),
        1 => Just(Some(0)),
        1 => Just(Some(5)),
        1 => Just(Some(1_700_000_000_000)),
        1 => Just(Some(u64::MAX)),
    ];
    let value = prop_oneof![Just(Vec::new()), proptest::collection::vec(any::<u8>(), 0..12)];
    (
        0..FAMILIES.len(),
        0..ROWS.len(),
        0..COLUMNS.len(),
        kind,
        timestamp,
        value,
    )
        .prop_map(|(family, row, column, kind, timestamp, value)| RandomOp {
            family,
            row,
            column,
            kind,
            timestamp,
            value,
        })
}

fn add_op(batch: &mut WriteBatch, op: &RandomOp) {
    let (family, row, column) = (FAMILIES[op.family], ROWS[op.row], COLUMNS[op.column]);
    match (op.kind, op.timestamp) {
        (Kind::Put, None) => batch.put(family, row, column, &op.value),
        (Kind::Put, Some(ts)) => batch.put_at(family, row, column, ts, &op.value),
        (Kind::DeleteCell, None) => batch.delete(family, row, column),
        (Kind::DeleteCell, Some(ts)) => batch.delete_at(family, row, column, ts),
        (Kind::DeleteRow, None) => batch.delete_row(family, row),
        (Kind::DeleteRow, Some(ts)) => batch.delete_row_at(family, row, ts),
    };
}

/// Every version (timestamp, value) of every cell of the pools, by
/// (family, row, column) indexes.
type Cells = std::collections::BTreeMap<(usize, usize, usize), Vec<(u64, Vec<u8>)>>;

/// What a reader sees: the cells, and per family the rows a scan returns.
type Seen = (Cells, Vec<Vec<Vec<u8>>>);

fn seen(snapshot: &cellar_engine::Snapshot) -> Result<Seen, Error> {
    let mut cells = Cells::new();
    let mut rows = Vec::new();
    for (f, family) in FAMILIES.iter().enumerate() {
        for (r, row) in ROWS.iter().enumerate() {
            for (c, column) in COLUMNS.iter().enumerate() {
                let versions = snapshot.versions(family, row, column)?;
                if !versions.is_empty() {
                    cells.insert(
                        (f, r, c),
                        versions.into_iter().map(|v| (v.timestamp, v.value.to_vec())).collect(),
                    );
                }
            }
        }
        let scanned = snapshot
            .scan(family, &RowRange::all())?
            .map(|row| row.map(|row| row.key.to_vec()))
            .collect::<Result<Vec<_>, Error>>()?;
        rows.push(scanned);
    }
    Ok((cells, rows))
}

fn random_batch_options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Never)
        .family("a")
        .family_with("b", FamilyOptions::default().max_versions(3))
        .family("c")
}

/// The log records of `path` hold exactly the batches written, op by op:
/// family, kind, row, column, value, the caller's timestamp, or one store
/// timestamp for the batch that never goes back; sequence numbers follow.
fn check_logged(path: &Path, batches: &[Vec<RandomOp>]) -> Result<(), TestCaseError> {
    let dump = cellar_engine::inspect::dump_log(path).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(dump.damage.is_empty());
    let written: Vec<&Vec<RandomOp>> = batches.iter().filter(|b| !b.is_empty()).collect();
    prop_assert_eq!(dump.records.len(), written.len());
    let mut next_seq = 1;
    let mut clock = 0;
    for (record, ops) in dump.records.iter().zip(written) {
        let (first, logged) = record
            .batch
            .as_ref()
            .map_err(|why| TestCaseError::fail(format!("not a batch: {why}")))?;
        prop_assert_eq!(*first, next_seq);
        next_seq += ops.len() as u64;
        prop_assert_eq!(logged.len(), ops.len());
        let mut batch_clock = None;
        for (w, op) in logged.iter().zip(ops) {
            prop_assert_eq!(w.family_id as usize, op.family + 1);
            prop_assert_eq!(w.kind, op.kind);
            prop_assert_eq!(&w.row[..], ROWS[op.row]);
            let column: &[u8] = if op.kind == Kind::DeleteRow {
                b""
            } else {
                COLUMNS[op.column]
            };
            prop_assert_eq!(&w.column[..], column);
            let value: &[u8] = if op.kind == Kind::Put { &op.value } else { b"" };
            prop_assert_eq!(&w.value[..], value);
            match op.timestamp {
                Some(ts) => prop_assert_eq!(w.timestamp, ts),
                None => {
                    prop_assert_eq!(*batch_clock.get_or_insert(w.timestamp), w.timestamp);
                    prop_assert!(w.timestamp >= clock);
                }
            }
        }
        clock = batch_clock.unwrap_or(clock);
    }
    Ok(())
}

/// Random batches (every kind, the caller's timestamps and the store's,
/// binary rows and columns, empty parts, batches spanning families and rows
/// and back, of one op, empty) are written with the log only; the log must
/// hold them exactly, and a crash anywhere (the folder copied with the log
/// cut at `cut`, a whole record boundary or inside a record) must reopen to
/// what a reader saw after the last batch whose record is whole, for an
/// open, a read-only open and a second open; a write after it is the newest.
/// A clean close reopens to everything.
fn random_batches_through_a_crash(
    batches: &[Vec<RandomOp>],
    cut: proptest::sample::Index,
) -> Result<(), TestCaseError> {
    let fail = |e: Error| TestCaseError::fail(e.to_string());
    let dir = cellar_testkit::dirs::scratch();
    let store = Store::open(dir.path(), random_batch_options()).map_err(fail)?;
    let log = newest_log(dir.path());
    let mut ends = vec![0u64];
    let mut views = vec![seen(&store.snapshot()).map_err(fail)?];
    for ops in batches {
        let mut batch = WriteBatch::new();
        for op in ops {
            add_op(&mut batch, op);
        }
        store.write(&batch).map_err(fail)?;
        ends.push(
            std::fs::metadata(&log)
                .map_err(|e| TestCaseError::fail(e.to_string()))?
                .len(),
        );
        views.push(seen(&store.snapshot()).map_err(fail)?);
    }
    prop_assert_eq!(log_files(dir.path()), vec![log.clone()], "everything in one segment");
    check_logged(&log, batches)?;

    // Cut at a record boundary half the time, anywhere the other half.
    let len = ends.last().copied().unwrap_or(0);
    let at = cut.index(2 * ends.len() + len as usize + 1);
    let cut_at = match at.checked_sub(2 * ends.len()) {
        Some(offset) => offset as u64,
        None => ends[at / 2].saturating_sub((at % 2) as u64),
    };
    let whole = ends.iter().rposition(|&end| end <= cut_at).unwrap_or(0);
    let copy = cellar_testkit::dirs::scratch();
    copy_store(dir.path(), copy.path());
    let copied_log = copy.path().join(log.file_name().unwrap_or_default());
    let bytes = std::fs::read(&copied_log).map_err(|e| TestCaseError::fail(e.to_string()))?;
    std::fs::write(&copied_log, &bytes[..cut_at as usize]).map_err(|e| TestCaseError::fail(e.to_string()))?;

    let read_only = cellar_engine::ReadOnlyStore::open(copy.path()).map_err(fail)?;
    prop_assert_eq!(
        &seen(&read_only.snapshot()).map_err(fail)?,
        &views[whole],
        "read-only, cut at {}",
        cut_at
    );
    for open in 0..2 {
        let reopened = Store::open(copy.path(), random_batch_options()).map_err(fail)?;
        prop_assert_eq!(
            &seen(&reopened.snapshot()).map_err(fail)?,
            &views[whole],
            "open {}, cut at {}",
            open,
            cut_at
        );
    }
    let reopened = Store::open(copy.path(), random_batch_options()).map_err(fail)?;
    // A later write to a cell at the largest timestamp is its newest version:
    // the sequence numbers went on from the last one replayed.
    reopened.put_at("a", "r", "c", u64::MAX, "after").map_err(fail)?;
    let newest = reopened.get("a", "r", "c").map_err(fail)?.map(|c| c.value.to_vec());
    prop_assert_eq!(newest, Some(b"after".to_vec()));
    drop(reopened);

    drop(store);
    let store = Store::open(dir.path(), random_batch_options()).map_err(fail)?;
    prop_assert_eq!(
        &seen(&store.snapshot()).map_err(fail)?,
        views.last().unwrap_or(&views[0]),
        "clean close"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_batches_survive_a_crash_at_any_byte_of_the_log_as_a_reader_saw_them(
        batches in proptest::collection::vec(proptest::collection::vec(random_op(), 0..7), 1..10),
        cut in any::<proptest::sample::Index>(),
    ) {
        random_batches_through_a_crash(&batches, cut)?;
    }
}
