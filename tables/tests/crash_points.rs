//! A crash at every step of a table's writes: the store's folder is copied
//! as a power loss, or a killed process, would leave it after every file
//! system call of a move (an update that changes a key field, so the record
//! leaves one row of a layout for another), of a [`Batch`] that inserts one
//! record and deletes another, and of the flush after them. Every copy must
//! reopen with its layouts in step (`verify`), each write whole or absent,
//! and the states in the order the writes were made. `crash.rs` kills a
//! process at random moments; this test visits every moment of a few writes.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellar_engine::{Store, StoreOptions, SyncPolicy};
use cellar_tables::{Batch, Record, Table, TableOptions};
use cellar_testkit::fault::{self, Crash};
use common::*;

/// What an image may hold, in the order the writes make them.
fn stage(table: &Table, image: &Path) -> Result<usize> {
    let report = table.verify()?;
    assert!(report.is_consistent(), "{}:\n{report}", image.display());
    let first = table.get(&key(1))?.and_then(|r| r.int("customer"));
    let (second, third) = (table.get(&key(2))?.is_some(), table.get(&key(3))?.is_some());
    // The move is one batch: the record is under its old customer or its new.
    let by_customer = |customer: i64| -> Result<Vec<i64>> {
        let path = latest_of_customer(10);
        let params = cellar_tables::Params::new().eq("customer", customer);
        Ok(ids(&table.query(&path, &params)?.records))
    };
    let (old, new) = (by_customer(42)?, by_customer(43)?);
    let stage = match (first, second, third) {
        (Some(42), false, true) => 0,
        (Some(43), false, true) => 1,
        (Some(43), true, false) => 2,
        other => panic!("{}: orders 1, 2 and 3 are {other:?}", image.display()),
    };
    let expected: (Vec<i64>, Vec<i64>) = match stage {
        0 => (vec![3, 1], vec![]),
        1 => (vec![3], vec![1]),
        _ => (vec![], vec![2, 1]),
    };
    assert_eq!((old, new), expected, "{}: stage {stage}, by customer", image.display());
    Ok(stage)
}

fn options() -> StoreOptions {
    // Every write synced: a power loss keeps every acknowledged write, so the
    // image taken after the writes returned shows the last stage.
    StoreOptions::default().sync(SyncPolicy::Always)
}

fn open_image(image: &Path) -> Result<usize> {
    let store = Arc::new(Store::open(image.join("store"), options())?);
    let table = Table::open(store, "orders", TableOptions::default())?;
    stage(&table, image)
}

/// The images of `crash` during the writes: one before, one after every
/// file system call, one after they returned.
fn images_of(root: &Path, crash: Crash) -> Result<Vec<PathBuf>> {
    let disk = root.join("disk");
    std::fs::create_dir(&disk)?;
    let watch = fault::watch(&disk)?;
    let store = Arc::new(Store::open(disk.join("store"), options())?);
    let table = Table::create(store.clone(), &orders_schema(), TableOptions::default())?;
    // Orders 1 and 3 of customer 42, order 3 the newer.
    table.insert(&order(1, 42, T0, 1, T0 + DAY, "placed"))?;
    table.insert(&order(3, 42, T0 + HOUR, 1, T0 + DAY, "placed"))?;
    let before = root.join("before");
    watch.crash(&before, crash)?;
    let images = root.join("images");
    std::fs::create_dir(&images)?;
    watch.crash_after_every_call(&images, crash);
    table.update(&key(1), &Record::new().with("customer", 43))?;
    let mut batch = Batch::new();
    batch.insert(&table, order(2, 43, T0 + 2 * HOUR, 1, T0 + DAY, "placed"));
    batch.delete(&table, key(3));
    batch.write()?;
    store.flush()?;
    let mut made = vec![before];
    made.extend(watch.stop_crashing()?);
    let returned = root.join("returned");
    watch.crash(&returned, crash)?;
    made.push(returned);
    Ok(made)
}

#[test]
fn a_crash_at_any_step_of_a_move_and_a_batch_leaves_every_layout_in_step() -> Result {
    for crash in [Crash::PowerLoss, Crash::Kill] {
        let root = tempfile::tempdir()?;
        let images = images_of(root.path(), crash)?;
        assert!(images.len() > 5, "{crash:?}: only {} images", images.len());
        let stages = images
            .iter()
            .map(|image| open_image(image))
            .collect::<Result<Vec<_>>>()?;
        assert!(stages.windows(2).all(|w| w[0] <= w[1]), "{crash:?}: {stages:?}");
        assert_eq!(stages.first(), Some(&0), "{crash:?}");
        assert_eq!(stages.last(), Some(&2), "{crash:?}");
        assert!(
            stages.contains(&1),
            "{crash:?}: an image between the two writes: {stages:?}"
        );
    }
    Ok(())
}
