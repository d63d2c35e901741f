//! Power loss: after a power cut the store holds exactly what was fsynced.
//!
//! A killed process loses nothing the kernel already has; a power cut also
//! loses what the kernel had not written to the disk. The testkit's fault
//! journal (`cellar_testkit::fault`, a dev-dependency only) records
//! every sync, rename and removal under a watched folder, and
//! `Watch::power_loss` copies the folder as the disk would hold it if power
//! failed at that instant: each file cut to its length at its last sync, names
//! not yet made durable by a folder sync gone, removals not yet durable undone.
//! The store keeps running in the original; the copy is opened and compared
//! with a model.
//!
//! - [`SyncPolicy::Always`]: the copy holds exactly the acknowledged batches.
//! - [`SyncPolicy::Never`]: a prefix of them, possibly empty, and never part of
//!   a batch.
//! - Either way the copy opens, accepts writes and opens again.
//!
//! Memtables are small, so flushes and compactions run in the background and
//! the cuts land in the middle of them.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::path::{Path, PathBuf};

use cellar_engine::{FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch};
use cellar_testkit::fault;
use cellar_testkit::rng::SplitMix;

type TestResult = Result<(), Box<dyn StdError>>;

/// What the store should hold: (family, row, column) -> value.
type Model = BTreeMap<(String, String, String), String>;

const FAMILIES: [&str; 2] = ["a", "b"];

/// Every batch puts its number here in both families: after a cut, the two
/// markers say how many batches survived, and must agree.
const MARKER_ROW: &str = "~batch";
const MARKER_COLUMN: &str = "n";

/// Batch `number` (from 1) of the history of `seed`, and what it does to the
/// model. Puts, cell deletes and row deletes across both families, then the
/// markers. Timestamps are explicit and increasing, so the newest write of a
/// cell always wins and the model needs no clock.
fn batch(seed: u64, number: u64, model: &mut Model) -> WriteBatch {
    let mut rng = SplitMix::new(seed.wrapping_mul(1_000_003).wrapping_add(number));
    let mut batch = WriteBatch::new();
    let mut ts = number * 100;
    for op in 0..1 + rng.below(5) {
        ts += 1;
        let family = FAMILIES[rng.below(2)];
        let row = format!("row{:02}", rng.below(24));
        let column = format!("c{}", rng.below(4));
        match rng.below(10) {
            0..=6 => {
                let value = format!("{number}.{op}:{}", "x".repeat(rng.below(40)));
                batch.put_at(family, &row, &column, ts, &value);
                model.insert((family.into(), row, column), value);
            }
            7 | 8 => {
                batch.delete_at(family, &row, &column, ts);
                model.remove(&(family.to_string(), row, column));
            }
            _ => {
                batch.delete_row_at(family, &row, ts);
                model.retain(|(f, r, _), _| !(f == family && *r == row));
            }
        }
    }
    for family in FAMILIES {
        ts += 1;
        batch.put_at(family, MARKER_ROW, MARKER_COLUMN, ts, number.to_string());
        model.insert(
            (family.into(), MARKER_ROW.into(), MARKER_COLUMN.into()),
            number.to_string(),
        );
    }
    batch
}

/// The model after batches 1..=count of `seed`.
fn model_after(seed: u64, count: u64) -> Model {
    let mut model = Model::new();
    for number in 1..=count {
        batch(seed, number, &mut model);
    }
    model
}

/// Everything the store holds, in the model's shape.
fn contents(store: &Store) -> Result<Model, cellar_engine::Error> {
    let mut out = Model::new();
    for family in FAMILIES {
        for row in store.scan(family, &RowRange::all())? {
            let row = row?;
            for cell in row.cells {
                out.insert(
                    (
                        family.to_string(),
                        String::from_utf8_lossy(&row.key).into_owned(),
                        String::from_utf8_lossy(&cell.column).into_owned(),
                    ),
                    String::from_utf8_lossy(&cell.value).into_owned(),
                );
            }
        }
    }
    Ok(out)
}

/// The batch number a family's marker holds (0: none survived).
fn marker(model: &Model, family: &str) -> u64 {
    model
        .get(&(family.into(), MARKER_ROW.into(), MARKER_COLUMN.into()))
        .map_or(0, |n| n.parse().unwrap())
}

/// Small memtables (family `a` smaller than `b`, so `a` flushes while `b`
/// still needs the same log segment), compaction at two or three runs, and a
/// small log limit so that idle families are flushed too.
fn busy_options(sync: SyncPolicy) -> StoreOptions {
    let a = FamilyOptions::default()
        .memtable_max_entries(24)
        .compaction_trigger(2)
        .target_file_entries(40);
    let b = FamilyOptions::default()
        .memtable_max_entries(90)
        .compaction_trigger(3)
        .target_file_entries(60);
    StoreOptions {
        max_log_bytes: 16 << 10,
        ..StoreOptions::default()
            .sync(sync)
            .family_with("a", a)
            .family_with("b", b)
    }
}

/// One power cut: the copy of the disk, and how many batches had been
/// acknowledged when it was taken.
struct Cut {
    disk: PathBuf,
    acknowledged: u64,
}

/// Writes `batches` batches of `seed` to a new store under `root/disk`,
/// cutting the power after each count in `cut_after`, then closes the store.
fn write_with_cuts(
    root: &Path,
    seed: u64,
    sync: SyncPolicy,
    batches: u64,
    cut_after: &[u64],
) -> Result<Vec<Cut>, Box<dyn StdError>> {
    let disk = root.join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let store = Store::open(disk.join("store"), busy_options(sync))?;
    let mut model = Model::new();
    let mut cuts = Vec::new();
    for number in 1..=batches {
        store.write(&batch(seed, number, &mut model))?;
        if cut_after.contains(&number) {
            let copy = root.join(format!("cut-{number}"));
            watch.power_loss(&copy)?;
            cuts.push(Cut {
                disk: copy.join("store"),
                acknowledged: number,
            });
        }
    }
    drop(store);
    Ok(cuts)
}

/// Where to cut: `count` distinct points in 1..=batches, from `seed`.
fn cut_points(seed: u64, batches: u64, count: usize) -> Vec<u64> {
    let mut rng = SplitMix::new(seed ^ 0xC0FF_EE00);
    let mut points = std::collections::BTreeSet::new();
    while points.len() < count.min(batches as usize) {
        points.insert(1 + rng.below(batches as usize) as u64);
    }
    points.into_iter().collect()
}

/// Histories per test: `CELLAR_POWER_LOSS_SEEDS` for a longer run.
fn seeds(default: u64) -> u64 {
    std::env::var("CELLAR_POWER_LOSS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Batches per history and power cuts in each.
const BATCHES: u64 = 240;
const CUTS: usize = 5;

/// Opens the disk left by a cut, returns what it holds, and checks that the
/// store goes on: it takes a write, and a reopen keeps it.
fn recover(disk: &Path, sync: SyncPolicy) -> Result<Model, Box<dyn StdError>> {
    let held = {
        let store = Store::open(disk, busy_options(sync))?;
        let held = contents(&store)?;
        store.put_at("a", "after", "cut", u64::MAX / 2, "alive")?;
        held
    };
    let store = Store::open(disk, busy_options(sync))?;
    let after = store.get("a", "after", "cut")?.map(|c| c.value);
    assert_eq!(
        after.as_deref(),
        Some(&b"alive"[..]),
        "{}: a write after recovery was lost",
        disk.display()
    );
    Ok(held)
}

// ------------------------------------------------------------ randomized cuts

#[test]
fn power_loss_keeps_exactly_the_acknowledged_batches_with_sync_always() -> TestResult {
    for seed in 1..=seeds(6) {
        let root = tempfile::tempdir()?;
        let cut_after = cut_points(seed, BATCHES, CUTS);
        let cuts = write_with_cuts(root.path(), seed, SyncPolicy::Always, BATCHES, &cut_after)?;
        for cut in cuts {
            let held = recover(&cut.disk, SyncPolicy::Always)?;
            let expected = model_after(seed, cut.acknowledged);
            assert!(
                held == expected,
                "seed {seed}, cut after batch {}: the store holds batch {} / {} (markers a / b), {} cells, expected {}",
                cut.acknowledged,
                marker(&held, "a"),
                marker(&held, "b"),
                held.len(),
                expected.len()
            );
        }
    }
    Ok(())
}

#[test]
fn power_loss_keeps_a_prefix_of_the_batches_with_sync_never() -> TestResult {
    prefix_survives(SyncPolicy::Never, 1001..=1000 + seeds(8))
}

/// A buffered log loses, at a power cut, what the process had not handed to
/// the kernel as well as what the kernel had not written: still a prefix.
#[test]
fn power_loss_keeps_a_prefix_of_the_batches_with_a_buffered_log() -> TestResult {
    prefix_survives(SyncPolicy::Buffered, 2001..=2000 + seeds(4))
}

/// An interval that never comes due during the run: no sync but those of
/// rotations, so a prefix.
#[test]
fn power_loss_keeps_a_prefix_of_the_batches_with_a_long_sync_interval() -> TestResult {
    prefix_survives(
        SyncPolicy::Interval(std::time::Duration::from_secs(3600)),
        3001..=3000 + seeds(4),
    )
}

/// An interval of zero syncs before every write returns, as `Always` does:
/// the copy holds exactly the acknowledged batches.
#[test]
fn power_loss_keeps_exactly_the_acknowledged_batches_with_a_zero_sync_interval() -> TestResult {
    let sync = SyncPolicy::Interval(std::time::Duration::ZERO);
    for seed in 4001..=4000 + seeds(3) {
        let root = tempfile::tempdir()?;
        let cut_after = cut_points(seed, BATCHES, CUTS);
        for cut in write_with_cuts(root.path(), seed, sync, BATCHES, &cut_after)? {
            let held = recover(&cut.disk, sync)?;
            assert!(
                held == model_after(seed, cut.acknowledged),
                "seed {seed}, cut after batch {}: the store holds batch {} / {} (markers a / b)",
                cut.acknowledged,
                marker(&held, "a"),
                marker(&held, "b"),
            );
        }
    }
    Ok(())
}

/// Under `sync`, every power cut of the histories of `seeds` leaves the
/// first n acknowledged batches for some n, never part of a batch.
fn prefix_survives(sync: SyncPolicy, seeds: std::ops::RangeInclusive<u64>) -> TestResult {
    for seed in seeds {
        let root = tempfile::tempdir()?;
        let cut_after = cut_points(seed, BATCHES, CUTS);
        let cuts = write_with_cuts(root.path(), seed, sync, BATCHES, &cut_after)?;
        for cut in cuts {
            let held = recover(&cut.disk, sync)?;
            let survived = marker(&held, "a");
            assert_eq!(
                marker(&held, "b"),
                survived,
                "{sync:?}, seed {seed}, cut after batch {}: half of a batch survived",
                cut.acknowledged
            );
            assert!(survived <= cut.acknowledged);
            assert!(
                held == model_after(seed, survived),
                "{sync:?}, seed {seed}, cut after batch {}: the store is not the first {survived} batches",
                cut.acknowledged
            );
        }
    }
    Ok(())
}

// ------------------------------------------------------------ regressions

/// Regression: a log segment closed by a rotation was left unsynced under
/// `SyncPolicy::Never`. Family `a` was then flushed to a durable table while
/// family `b` still needed that segment for its half of the same batches, so
/// a power cut kept `a`'s half and lost `b`'s.
#[test]
fn never_sync_never_keeps_half_a_batch_across_families() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let options = StoreOptions::default()
        .sync(SyncPolicy::Never)
        .family_with("a", FamilyOptions::default().memtable_max_entries(10))
        .family("b");
    let store = Store::open(disk.join("store"), options.clone())?;
    for n in 1..=30u64 {
        let mut batch = WriteBatch::new();
        batch.put_at("a", "row", "n", n, n.to_string());
        batch.put_at("b", "row", "n", n, n.to_string());
        store.write(&batch)?;
    }
    store.wait_for_background_work()?; // `a` is in table files now; `b` only in the log
    watch.power_loss(&root.path().join("cut"))?;
    drop(store);

    let store = Store::open(root.path().join("cut/store"), options)?;
    let a = store.get("a", "row", "n")?.map(|c| c.value);
    let b = store.get("b", "row", "n")?.map(|c| c.value);
    assert!(a.is_some(), "the flush of `a` was durable");
    assert_eq!(a, b);
    Ok(())
}

/// Regression guard: the store folder a first open creates is made durable
/// in its parent (else a power cut takes the whole store, and the next open
/// silently creates an empty one).
#[test]
fn a_new_store_folder_survives_power_loss() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let options = StoreOptions::default().sync(SyncPolicy::Always).family("a");
    let store = Store::open(disk.join("new/nested/store"), options.clone())?;
    store.put("a", "row", "col", "kept")?;
    watch.power_loss(&root.path().join("cut"))?;
    drop(store);

    let store = Store::open(
        root.path().join("cut/new/nested/store"),
        options.create_if_missing(false),
    )?;
    assert_eq!(
        store.get("a", "row", "col")?.map(|c| c.value).as_deref(),
        Some(&b"kept"[..])
    );
    Ok(())
}

/// Guard: a family declared at an open gets a folder whose name is durable
/// before the manifest lists a table in it (else a power cut leaves a store
/// that does not open: "table file listed in the manifest is missing").
#[test]
fn a_family_added_at_open_survives_power_loss() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let store_dir = disk.join("store");
    drop(Store::open(&store_dir, StoreOptions::default().family("a"))?);

    let watch = fault::watch(&disk)?;
    let options = StoreOptions::default().sync(SyncPolicy::Always).family("a").family("b");
    let store = Store::open(&store_dir, options.clone())?;
    store.put("b", "row", "col", "in a table")?;
    store.flush()?;
    watch.power_loss(&root.path().join("cut"))?;
    drop(store);

    let store = Store::open(root.path().join("cut/store"), options)?;
    assert_eq!(
        store.get("b", "row", "col")?.map(|c| c.value).as_deref(),
        Some(&b"in a table"[..])
    );
    Ok(())
}

/// Guard: a family created on an open store survives a power cut with the
/// table files flushed into it.
#[test]
fn a_family_created_on_an_open_store_survives_power_loss() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let options = StoreOptions::default().sync(SyncPolicy::Always);
    let store = Store::open(disk.join("store"), options.clone())?;
    store.create_family("late", FamilyOptions::default())?;
    store.put("late", "row", "col", "flushed")?;
    store.flush()?;
    store.put("late", "row", "col2", "logged")?;
    watch.power_loss(&root.path().join("cut"))?;
    drop(store);

    let store = Store::open(root.path().join("cut/store"), options)?;
    let get = |column: &str| store.get("late", "row", column).map(|c| c.map(|c| c.value));
    assert_eq!(get("col")?.as_deref(), Some(&b"flushed"[..]));
    assert_eq!(get("col2")?.as_deref(), Some(&b"logged"[..]));
    Ok(())
}

/// Regression: a power cut during the very first open can leave
/// `MANIFEST-000001` on disk without the `CURRENT` that would name it. The
/// folder is still "not a store", but creating it again failed because the
/// manifest file already existed.
#[test]
fn a_store_whose_creation_was_cut_short_can_be_created_again() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let store_dir = disk.join("store");
    drop(Store::open(&store_dir, StoreOptions::default().family("a"))?);
    // What a cut between the manifest's folder sync and CURRENT's leaves: the
    // first manifest, holding only the snapshot it is created with, and
    // nothing naming it.
    let cut = root.path().join("cut");
    watch.power_loss(&cut)?;
    for entry in std::fs::read_dir(cut.join("store"))? {
        let path = entry?.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name != "MANIFEST-000001" && name != "LOCK" {
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
    }
    let manifest = cut.join("store/MANIFEST-000001");
    let bytes = std::fs::read(&manifest)?;
    let snapshot = 8 + u32::from_le_bytes(bytes[4..8].try_into()?) as usize;
    std::fs::write(&manifest, &bytes[..snapshot])?;

    let store = Store::open(cut.join("store"), StoreOptions::default().family("a"))?;
    store.put("a", "row", "col", "fresh")?;
    drop(store);
    let store = Store::open(cut.join("store"), StoreOptions::default().family("a"))?;
    assert_eq!(
        store.get("a", "row", "col")?.map(|c| c.value).as_deref(),
        Some(&b"fresh"[..])
    );
    Ok(())
}

/// Group commit: with `SyncPolicy::Always`, concurrent writers share fsyncs
/// (a writer whose record an earlier fsync covered does not sync again). A
/// power cut while they write keeps every write any of them had acknowledged.
#[test]
fn concurrent_writers_with_sync_always_lose_no_acknowledged_write() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let options = StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("a", FamilyOptions::default().memtable_max_entries(150));
    let store = std::sync::Arc::new(Store::open(&disk, options.clone())?);
    let acknowledged = std::sync::Mutex::new(Vec::new());
    let cut = root.path().join("cut");
    std::thread::scope(|scope| -> TestResult {
        for t in 0..4u32 {
            let (store, acknowledged) = (&store, &acknowledged);
            scope.spawn(move || {
                for i in 0..200u32 {
                    let row = format!("t{t}-{i:04}");
                    if store.put("a", &row, "c", &row).is_ok() {
                        acknowledged.lock().map(|mut a| a.push(row)).ok();
                    }
                }
            });
        }
        // Cut the power while the writers are busy: whatever was acknowledged
        // before the cut must be in the copy.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before_cut: Vec<String> = acknowledged.lock().map(|a| a.clone()).unwrap_or_default();
        watch.power_loss(&cut)?;
        let copy = Store::open(&cut, options.clone())?;
        for row in &before_cut {
            assert!(copy.get("a", row, "c")?.is_some(), "acknowledged {row} lost");
        }
        Ok(())
    })?;
    // And with no cut, everything is there after a reopen.
    drop(store);
    let store = Store::open(&disk, options)?;
    let rows = store.scan("a", &RowRange::all())?.collect::<Result<Vec<_>, _>>()?;
    assert_eq!(rows.len(), 800);
    Ok(())
}
