//! The settle at rest (`FamilyOptions::settle_when_idle`): a family whose
//! writes pause is merged whole by the compacting thread, a leveled one into
//! its last level and a size-tiered one into a single run, never while its
//! writes go on, and not again until it has been written to;
//! `wait_for_background_work` waits for it; reads see the same cells before
//! and after. A floor of 64 KiB (the default is 256 MiB) lets a small family
//! qualify.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use cellar_engine::{Compaction, FamilyOptions, RowRange, Settle, Store, StoreOptions, TableInfo};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The last level of a leveled family, where a settle writes.
const LAST_LEVEL: u32 = 6;

/// How long the test family's writes must pause before it is settled.
const IDLE: Duration = Duration::from_millis(500);

/// Longest a test waits for the store to do something by itself.
const PATIENCE: Duration = Duration::from_secs(30);

/// Rows the writes draw from.
const ROWS: u64 = 3000;

/// A small leveled family that flushes every 500 entries and is settled
/// after `IDLE` once it holds 64 KiB of tables, 1% of it above the last level.
fn family() -> FamilyOptions {
    FamilyOptions::default()
        .memtable_max_entries(500)
        .target_file_entries(2000)
        .settle_when_idle(Some(Settle {
            idle: IDLE,
            min_bytes: 64 << 10,
            min_above_percent: 1,
        }))
}

/// The same family, size-tiered: flushes of 500 entries, merged four at a
/// time into runs of similar size.
fn tiered_family() -> FamilyOptions {
    family().compaction(Compaction::SizeTiered)
}

fn open(dir: &Path, options: FamilyOptions) -> Result<Store, cellar_engine::Error> {
    Store::open(dir, StoreOptions::default().family_with("f", options))
}

/// The cells a reader should see: row to value (`None`: deleted).
type Model = BTreeMap<String, Option<String>>;

/// The writes of the tests: puts over `ROWS` rows, one in eight a deletion,
/// drawn from a small generator, so that rows are overwritten and deleted
/// across flushes and levels.
struct Writer {
    state: u64,
    written: u64,
}

impl Writer {
    fn new(seed: u64) -> Writer {
        Writer {
            state: seed,
            written: 0,
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn write(&mut self, store: &Store, model: &mut Model) -> TestResult {
        let draw = self.next();
        let row = format!("row{:05}", (draw >> 8) % ROWS);
        if draw.is_multiple_of(8) {
            store.delete("f", &row, "c")?;
            model.insert(row, None);
        } else {
            let value = format!("value {} of {row}, padded to look like data", self.written);
            store.put("f", &row, "c", &value)?;
            model.insert(row, Some(value));
        }
        self.written += 1;
        Ok(())
    }
}

/// Every live cell, read by a scan and by point reads, against the model.
fn check(store: &Store, model: &Model) -> TestResult {
    let expected: Vec<(String, String)> = model
        .iter()
        .filter_map(|(row, value)| value.as_ref().map(|v| (row.clone(), v.clone())))
        .collect();
    let (rows, _) = store.scan_traced("f", &RowRange::all())?;
    let scanned: Vec<(String, String)> = rows
        .iter()
        .flat_map(|r| {
            r.cells.iter().map(|c| {
                (
                    String::from_utf8_lossy(&r.key).into_owned(),
                    String::from_utf8_lossy(&c.value).into_owned(),
                )
            })
        })
        .collect();
    assert_eq!(scanned, expected);
    for (row, value) in model.iter().step_by(7) {
        let got = store
            .get("f", row, "c")?
            .map(|c| String::from_utf8_lossy(&c.value).into_owned());
        assert_eq!(&got, value, "{row}");
    }
    Ok(())
}

fn settles(store: &Store) -> Result<u64, Box<dyn std::error::Error>> {
    Ok(store.stats()?.family("f").map_or(0, |f| f.settles))
}

/// The levels of the table files.
fn levels(tables: &[TableInfo]) -> Vec<u32> {
    tables.iter().map(|t| t.level).collect()
}

/// The runs of the family's table files, in the order the tables list them
/// (newest first).
fn runs(tables: &[TableInfo]) -> Vec<u64> {
    let mut runs: Vec<u64> = tables.iter().map(|t| t.run).collect();
    runs.dedup();
    runs
}

/// The two strategies a settle merges, each with its picture of "settled".
#[derive(Clone, Copy, Debug)]
enum Strategy {
    /// Everything in the last level.
    Leveled,
    /// One run, at level 0 where a tiered family's runs live.
    Tiered,
}

impl Strategy {
    fn options(self) -> FamilyOptions {
        match self {
            Strategy::Leveled => family(),
            Strategy::Tiered => tiered_family(),
        }
    }

    /// Whether the tables are what a settle leaves.
    fn settled(self, tables: &[TableInfo]) -> bool {
        match self {
            Strategy::Leveled => tables.iter().all(|t| t.level == LAST_LEVEL),
            Strategy::Tiered => runs(tables).len() == 1 && tables.iter().all(|t| t.level == 0),
        }
    }

    /// Something lies outside what a settle leaves: the memtable, or a table
    /// above the last level (leveled) or in another run (tiered).
    fn unsettled(self, store: &Store) -> Result<bool, Box<dyn std::error::Error>> {
        let memtable = store.stats()?.family("f").map_or(0, |f| f.memtable_entries);
        Ok(memtable > 0 || !self.settled(&store.tables()))
    }
}

/// The log segments in `dir`, by size.
fn log_sizes(dir: &Path) -> Result<Vec<u64>, Box<dyn std::error::Error>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| e.metadata().map_or(u64::MAX, |m| m.len()))
        .collect())
}

/// Writes `n` cells, ending with 250 in the memtable (it flushes every 500),
/// so the family qualifies for a settle when they stop.
fn write_some(store: &Store, writer: &mut Writer, model: &mut Model, n: u64) -> TestResult {
    assert_eq!(n % 500, 250);
    for _ in 0..n {
        writer.write(store, model)?;
    }
    Ok(())
}

/// Writes that go on hold the settle off; once they pause, the compacting
/// thread settles the family with nobody asking.
fn writes_that_go_on_hold_off_the_settle(strategy: Strategy, seed: u64) -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = open(dir.path(), strategy.options())?;
    let (mut writer, mut model) = (Writer::new(seed), Model::new());
    write_some(&store, &mut writer, &mut model, 10_250)?;

    // Writes go on for four idle times, a few every 2 ms: the family
    // qualifies all along (the memtable alone is more than 1% of it), and is
    // never settled.
    let start = Instant::now();
    while start.elapsed() < 4 * IDLE {
        for _ in 0..20 {
            writer.write(&store, &mut model)?;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // The clock is read before each write: the settle may come an idle time
    // after the last write, never sooner.
    let mut stopped = Instant::now();
    while writer.written % 500 != 250 {
        stopped = Instant::now();
        writer.write(&store, &mut model)?;
    }
    assert_eq!(settles(&store)?, 0, "settled while writes went on");
    // 250 entries in the memtable at least, whatever the minor compactions
    // made of the tables (a tiered family's runs all merged into one, at times).
    assert!(strategy.unsettled(&store)?, "{:?}", levels(&store.tables()));
    check(&store, &model)?;

    // The writes stop; nobody asks: the compacting thread settles the family.
    while settles(&store)? == 0 {
        assert!(stopped.elapsed() < PATIENCE, "no settle after the writes stopped");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        stopped.elapsed() >= IDLE,
        "settled {:?} after the last write",
        stopped.elapsed()
    );
    store.wait_for_background_work()?;
    assert_eq!(settles(&store)?, 1);
    let tables = store.tables();
    assert!(strategy.settled(&tables), "{:?} {:?}", levels(&tables), runs(&tables));
    assert!(!strategy.unsettled(&store)?);
    check(&store, &model)?;
    Ok(())
}

#[test]
fn writes_that_go_on_hold_off_the_settle_and_a_pause_brings_it_without_being_asked() -> TestResult {
    writes_that_go_on_hold_off_the_settle(Strategy::Leveled, 1)
}

#[test]
fn a_size_tiered_family_is_settled_into_one_run_once_its_writes_pause_and_not_before() -> TestResult {
    writes_that_go_on_hold_off_the_settle(Strategy::Tiered, 5)
}

/// `wait_for_background_work` returns only after the settle; a second wait
/// finds nothing to do, and a few writes are not worth another.
fn the_wait_returns_after_the_settle(strategy: Strategy, seed: u64) -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = open(dir.path(), strategy.options())?;
    let (mut writer, mut model) = (Writer::new(seed), Model::new());
    write_some(&store, &mut writer, &mut model, 11_750)?;
    // 11,750 cells, then 500 more: 250 left in the memtable. The clock is
    // read before each of the last writes, so the idle time the wait must
    // sit out is measured from no later than the engine measures it.
    let mut last_write = Instant::now();
    for _ in 0..500 {
        last_write = Instant::now();
        writer.write(&store, &mut model)?;
    }
    assert!(strategy.unsettled(&store)?);
    check(&store, &model)?;

    store.wait_for_background_work()?;
    assert!(
        last_write.elapsed() >= IDLE,
        "returned after {:?}",
        last_write.elapsed()
    );
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("no family f")?;
    assert_eq!(f.settles, 1);
    assert!(f.settle_bytes_written > 0 && f.settle_bytes_written <= f.compaction_bytes_written);
    // Settled, the memtable flushed, and the log it held gone: the one
    // segment left holds nothing.
    let settled = store.tables();
    assert!(
        strategy.settled(&settled),
        "{:?} {:?}",
        levels(&settled),
        runs(&settled)
    );
    assert_eq!(f.memtable_entries, 0);
    assert_eq!(log_sizes(dir.path())?, [0], "the log segments left");
    // The settle dropped every deletion and superseded version: one entry per live cell.
    assert_eq!(f.stored_entries, f.live_entries);
    assert_eq!(f.live_entries, model.values().filter(|v| v.is_some()).count() as u64);
    check(&store, &model)?;

    // Settled, and not written since: a second wait finds nothing to do.
    let compactions = f.compactions;
    let again = Instant::now();
    store.wait_for_background_work()?;
    assert!(again.elapsed() < IDLE, "waited {:?}", again.elapsed());
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("no family f")?;
    assert_eq!((f.settles, f.compactions), (1, compactions));
    assert_eq!(store.tables(), settled);

    // One write is less than 1% of the family: not worth a rewrite.
    writer.write(&store, &mut model)?;
    store.wait_for_background_work()?;
    assert_eq!(settles(&store)?, 1);
    check(&store, &model)?;
    // 250 more (about 9% of the family) are: settled again once the writes pause.
    for _ in 0..250 {
        writer.write(&store, &mut model)?;
    }
    store.wait_for_background_work()?;
    assert_eq!(settles(&store)?, 2);
    assert!(strategy.settled(&store.tables()));
    check(&store, &model)?;
    Ok(())
}

#[test]
fn wait_for_background_work_returns_after_the_settle_and_a_second_wait_settles_nothing() -> TestResult {
    the_wait_returns_after_the_settle(Strategy::Leveled, 2)
}

#[test]
fn wait_for_background_work_returns_after_a_size_tiered_settle_and_a_second_wait_settles_nothing() -> TestResult {
    the_wait_returns_after_the_settle(Strategy::Tiered, 6)
}

#[test]
fn the_settle_options_are_kept_by_the_manifest_and_a_settled_store_reopens_settled() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = open(dir.path(), family())?;
    let (mut writer, mut model) = (Writer::new(3), Model::new());
    write_some(&store, &mut writer, &mut model, 8_250)?;
    store.wait_for_background_work()?;
    assert_eq!(settles(&store)?, 1);
    let settled = store.tables();
    drop(store);

    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(store.family_options("f")?, family());
    store.wait_for_background_work()?;
    assert_eq!(settles(&store)?, 0, "settled again after a reopen");
    assert_eq!(store.tables(), settled);
    check(&store, &model)?;
    Ok(())
}

/// Under the default floor (256 MiB: tests, lessons and small stores never
/// see a settle) or with the settle off, a family stays as its minor
/// compactions leave it.
fn under_the_floor_or_off_nothing_is_settled(strategy: Strategy, seed: u64) -> TestResult {
    for settle in [Some(Settle::default()), None] {
        let dir = tempfile::tempdir()?;
        let store = open(dir.path(), strategy.options().settle_when_idle(settle))?;
        let (mut writer, mut model) = (Writer::new(seed), Model::new());
        write_some(&store, &mut writer, &mut model, 10_250)?;
        std::thread::sleep(2 * IDLE);
        store.wait_for_background_work()?;
        assert_eq!(settles(&store)?, 0);
        assert!(strategy.unsettled(&store)?);
        check(&store, &model)?;
    }
    Ok(())
}

#[test]
fn a_family_under_the_floor_or_without_the_settle_is_left_as_leveled_compaction_leaves_it() -> TestResult {
    under_the_floor_or_off_nothing_is_settled(Strategy::Leveled, 4)
}

#[test]
fn a_size_tiered_family_under_the_floor_or_without_the_settle_keeps_its_runs() -> TestResult {
    under_the_floor_or_off_nothing_is_settled(Strategy::Tiered, 7)
}
