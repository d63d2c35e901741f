//! Crashes at every step of a family drop, truncate and alter, and of a
//! compaction of compressed tables.
//!
//! The testkit's fault journal images the store folder after *every* file
//! system call the operation makes (create, sync, rename, removal), as a
//! power cut (`Crash::PowerLoss`: what was synced) and as a killed process
//! (`Crash::Kill`: every byte the kernel has) would leave it. Between two
//! calls the disk's durable state does not change, so the images are every
//! state a crash during the operation can leave. Each image must open (a
//! crash is not damage), and must hold:
//!
//! - everything acknowledged in the families the operation does not touch;
//! - for a **drop**, the family whole, or gone; once gone in one image, gone
//!   in every later one, and gone after the drop returned;
//! - for a **truncate**, the family whole, or empty, or holding only what
//!   was written after the truncate; never going back;
//! - for an **alter**, every cell, with the old or the new options, never
//!   going back;
//! - for a **compaction**, every cell.
//!
//! Each image is opened twice: recovery writes (it flushes the log, records
//! a new segment, deletes leftovers), and what it wrote must hold the same
//! answer, so no dropped family or truncated cell comes back on the second
//! open.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cellar_engine::{Compaction, Compression, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy};
use cellar_testkit::fault::{self, Crash};

/// `(row, value)` of column `c` in one family.
type Rows = BTreeMap<String, String>;

/// The family the operations change, and the one they must leave alone.
const TARGET: &str = "target";
const BYSTANDER: &str = "bystander";

fn family(compression: Compression) -> FamilyOptions {
    FamilyOptions::default()
        .compression(compression)
        .block_size(256)
        .compaction_trigger(0)
}

/// Both families declared, compressed (LZ4 and Zstandard), synced writes.
fn options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with(TARGET, family(Compression::Lz4))
        .family_with(BYSTANDER, family(Compression::Zstd { level: 3 }))
}

/// How a crash image is reopened: no family declared, so a dropped one is
/// not created again by the open itself.
fn reopen_options() -> StoreOptions {
    StoreOptions::default().sync(SyncPolicy::Always)
}

fn value(family: &str, i: usize) -> String {
    format!("{family}-{i}-{}", "compressible ".repeat(4))
}

/// Writes rows 0..40 of each family: three flushed tables and ten rows
/// only in the log. Returns what each family holds.
fn fill(store: &Store) -> BTreeMap<String, Rows> {
    let mut held = BTreeMap::new();
    for family in [TARGET, BYSTANDER] {
        let rows: &mut Rows = held.entry(family.to_string()).or_default();
        for i in 0..40 {
            store
                .put_at(family, format!("r{i:03}"), "c", 1, value(family, i))
                .unwrap();
            rows.insert(format!("r{i:03}"), value(family, i));
            if i % 10 == 9 && i < 30 {
                store.flush_family(family).unwrap();
            }
        }
    }
    held
}

/// What a family holds, or `None` if the store has no such family.
fn rows_of(store: &Store, family: &str) -> Option<Rows> {
    if !store.families().iter().any(|f| f == family) {
        return None;
    }
    let mut rows = Rows::new();
    for row in store.scan(family, &RowRange::all()).unwrap() {
        let row = row.unwrap();
        assert_eq!(row.cells.len(), 1);
        rows.insert(
            String::from_utf8_lossy(&row.key).into_owned(),
            String::from_utf8_lossy(&row.cells[0].value).into_owned(),
        );
    }
    Some(rows)
}

/// One crash image, opened: what the target family holds, its compression,
/// after checking the bystander holds `bystander`. Opened twice; both opens
/// must agree.
fn open_image(image: &Path, bystander: &Rows) -> (Option<Rows>, Option<Compression>) {
    let mut answers = Vec::new();
    for open in ["first", "second"] {
        let store = Store::open(image.join("store"), reopen_options())
            .unwrap_or_else(|e| panic!("{}: the {open} open of a crash image failed: {e}", image.display()));
        assert_eq!(
            rows_of(&store, BYSTANDER).as_ref(),
            Some(bystander),
            "{}: the {open} open: the bystander family changed",
            image.display()
        );
        store
            .verify()
            .unwrap_or_else(|e| panic!("{}: verify: {e}", image.display()));
        let compression = store.family_options(TARGET).ok().map(|o| o.compression);
        answers.push((rows_of(&store, TARGET), compression));
    }
    assert_eq!(
        answers[0],
        answers[1],
        "{}: a second open changed what the first recovered",
        image.display()
    );
    answers.swap_remove(0)
}

/// A store filled by `fill` under `root/disk/store`, watched; `operate`
/// runs with an image made before it, after every file system call it
/// makes, and after it returned. Returns the images in order, what `fill`
/// wrote, and what `operate` returned.
fn crash_during(
    root: &Path,
    crash: Crash,
    operate: impl FnOnce(&Store) -> Rows,
) -> (Vec<PathBuf>, BTreeMap<String, Rows>, Rows) {
    crash_during_with(root, crash, options(), fill, operate)
}

/// [`crash_during`] on a store opened with `options` and filled by `prepare`.
fn crash_during_with(
    root: &Path,
    crash: Crash,
    options: StoreOptions,
    prepare: impl FnOnce(&Store) -> BTreeMap<String, Rows>,
    operate: impl FnOnce(&Store) -> Rows,
) -> (Vec<PathBuf>, BTreeMap<String, Rows>, Rows) {
    let disk = root.join("disk");
    std::fs::create_dir(&disk).unwrap();
    let watch = fault::watch(&disk).unwrap();
    let store = Store::open(disk.join("store"), options).unwrap();
    let written = prepare(&store);
    let images = root.join("images");
    std::fs::create_dir(&images).unwrap();
    let before = root.join("before");
    watch.crash(&before, crash).unwrap();
    watch.crash_after_every_call(&images, crash);
    let after = operate(&store);
    let mut made = vec![before];
    made.extend(watch.stop_crashing().unwrap());
    let last = root.join("returned");
    watch.crash(&last, crash).unwrap();
    made.push(last);
    drop(store);
    assert!(
        made.len() > 3,
        "the operation made {} file system calls",
        made.len() - 1
    );
    (made, written, after)
}

/// The states an image may show, in the order they must come.
fn stage(
    images: &[PathBuf],
    bystander: &Rows,
    classify: impl Fn(&Path, Option<Rows>, Option<Compression>) -> usize,
) -> Vec<usize> {
    let stages: Vec<usize> = images
        .iter()
        .map(|image| {
            let (rows, compression) = open_image(image, bystander);
            classify(image, rows, compression)
        })
        .collect();
    for pair in stages.windows(2) {
        assert!(
            pair[0] <= pair[1],
            "a later crash went back to an earlier state: {stages:?}"
        );
    }
    stages
}

const CRASHES: [Crash; 2] = [Crash::PowerLoss, Crash::Kill];

#[test]
fn a_crash_at_any_step_of_a_drop_leaves_the_family_whole_or_gone_for_good() {
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let (images, written, _) = crash_during(root.path(), crash, |store| {
            store.drop_family(TARGET).unwrap();
            Rows::new()
        });
        let stages = stage(&images, &written[BYSTANDER], |image, rows, _| match rows {
            Some(rows) if rows == written[TARGET] => 0,
            None => 1,
            Some(rows) => panic!("{crash:?} {}: the family holds {} rows", image.display(), rows.len()),
        });
        assert_eq!(
            stages.last(),
            Some(&1),
            "{crash:?}: the drop returned, so it is durable: {stages:?}"
        );
        println!("{crash:?}: {} images of a drop: {stages:?}", images.len());
    }
}

#[test]
fn a_crash_at_any_step_of_a_truncate_never_brings_a_truncated_cell_back() {
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let (images, written, after) = crash_during(root.path(), crash, |store| {
            store.truncate_family(TARGET).unwrap();
            let mut after = Rows::new();
            for i in 100..103 {
                store
                    .put_at(TARGET, format!("r{i:03}"), "c", 2, value(TARGET, i))
                    .unwrap();
                after.insert(format!("r{i:03}"), value(TARGET, i));
            }
            store.flush_family(TARGET).unwrap();
            after
        });
        let stages = stage(&images, &written[BYSTANDER], |image, rows, compression| {
            let rows = rows.unwrap_or_else(|| panic!("{crash:?} {}: the family is gone", image.display()));
            assert_eq!(compression, Some(Compression::Lz4), "a truncate keeps the options");
            if rows == written[TARGET] {
                return 0;
            }
            // After the truncate: a prefix of the writes after it, and nothing from before.
            let prefix = after
                .iter()
                .take(rows.len())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Rows>();
            assert_eq!(
                rows,
                prefix,
                "{crash:?} {}: a truncated cell came back",
                image.display()
            );
            1 + rows.len()
        });
        assert_eq!(
            (stages.first(), stages.last()),
            (Some(&0), Some(&(1 + after.len()))),
            "{crash:?}: {stages:?}"
        );
        println!(
            "{crash:?}: {} images of a truncate and writes: {stages:?}",
            images.len()
        );
    }
}

#[test]
fn a_crash_at_any_step_of_an_alter_and_the_compaction_after_it_keeps_every_cell() {
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let zstd = Compression::Zstd { level: 5 };
        let (images, written, _) = crash_during(root.path(), crash, |store| {
            store.alter_family(TARGET, family(zstd)).unwrap();
            store.flush_family(TARGET).unwrap();
            store.compact(TARGET).unwrap();
            Rows::new()
        });
        let stages = stage(&images, &written[BYSTANDER], |image, rows, compression| {
            assert_eq!(
                rows.as_ref(),
                Some(&written[TARGET]),
                "{crash:?} {}: cells changed",
                image.display()
            );
            match compression {
                Some(Compression::Lz4) => 0,
                Some(c) if c == zstd => 1,
                other => panic!("{crash:?} {}: compression {other:?}", image.display()),
            }
        });
        assert_eq!(
            (stages.first(), stages.last()),
            (Some(&0), Some(&1)),
            "{crash:?}: {stages:?}"
        );
        println!(
            "{crash:?}: {} images of an alter and a compaction: {stages:?}",
            images.len()
        );
    }
}

#[test]
fn a_crash_at_any_step_of_a_compaction_of_compressed_tables_keeps_every_cell() {
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let (images, written, _) = crash_during(root.path(), crash, |store| {
            // Overwrites and deletions, so the compaction drops versions.
            for i in 0..20 {
                store
                    .put_at(BYSTANDER, format!("r{i:03}"), "c", 1, "older, same timestamp")
                    .unwrap();
            }
            store.flush_family(BYSTANDER).unwrap();
            store.compact(TARGET).unwrap();
            Rows::new()
        });
        let mut bystander = written[BYSTANDER].clone();
        let rewritten: Rows = (0..20)
            .map(|i| (format!("r{i:03}"), "older, same timestamp".to_string()))
            .collect();
        // The bystander's rewrites are acknowledged one by one; each image
        // holds a prefix of them, and the target whole.
        let mut stages = Vec::new();
        for image in &images {
            let store = Store::open(image.join("store"), reopen_options())
                .unwrap_or_else(|e| panic!("{}: {e}", image.display()));
            assert_eq!(
                rows_of(&store, TARGET).as_ref(),
                Some(&written[TARGET]),
                "{crash:?} {}",
                image.display()
            );
            let held = rows_of(&store, BYSTANDER).unwrap();
            let changed = rewritten.keys().filter(|k| held[*k] == rewritten[*k]).count();
            for (k, v) in rewritten.iter().take(changed) {
                bystander.insert(k.clone(), v.clone());
            }
            assert_eq!(
                held,
                bystander,
                "{crash:?} {}: not a prefix of the rewrites",
                image.display()
            );
            bystander = written[BYSTANDER].clone();
            store.verify().unwrap();
            stages.push(changed);
        }
        for pair in stages.windows(2) {
            assert!(pair[0] <= pair[1], "{crash:?}: {stages:?}");
        }
        assert_eq!((stages.first(), stages.last()), (Some(&0), Some(&20)));
        println!("{crash:?}: {} images of a compaction: {stages:?}", images.len());
    }
}

/// Fills the stores as `fill` does, then gives the target family what a
/// compaction must drop, in three more flushed tables and the log:
/// overwrites (rows 0 to 9), cell deletions (10 to 19), row deletions (20
/// to 24), a put older than the stored one (25: hidden) and one with the
/// same timestamp written later (26: it wins). Returns what each family
/// holds.
fn fill_with_deletions(store: &Store) -> BTreeMap<String, Rows> {
    let mut held = fill(store);
    let target = held.get_mut(TARGET).unwrap();
    for i in 0..10 {
        store.put_at(TARGET, format!("r{i:03}"), "c", 2, "overwritten").unwrap();
        target.insert(format!("r{i:03}"), "overwritten".to_string());
    }
    store.flush_family(TARGET).unwrap();
    for i in 10..20 {
        store.delete_at(TARGET, format!("r{i:03}"), "c", 3).unwrap();
        target.remove(&format!("r{i:03}"));
    }
    store.flush_family(TARGET).unwrap();
    for i in 20..25 {
        store.delete_row_at(TARGET, format!("r{i:03}"), 3).unwrap();
        target.remove(&format!("r{i:03}"));
    }
    store.flush_family(TARGET).unwrap();
    store.put_at(TARGET, "r025", "c", 0, "older timestamp").unwrap();
    store.put_at(TARGET, "r026", "c", 1, "same timestamp, later").unwrap();
    target.insert("r026".to_string(), "same timestamp, later".to_string());
    held
}

/// A major compaction drops superseded versions and every deletion (what
/// they hid is among its inputs): a crash at any step of it, in a leveled
/// family and in a size-tiered one, leaves exactly the family's cells,
/// never a deleted or overwritten one back, and the compaction that
/// returned left no deletion and no superseded entry stored.
#[test]
fn a_crash_at_any_step_of_a_compaction_that_drops_deletions_brings_nothing_back() {
    let strategies = [Compaction::LEVELED, Compaction::SizeTiered];
    for (crash, compaction) in CRASHES.into_iter().flat_map(|c| strategies.map(|s| (c, s))) {
        let root = tempfile::tempdir().unwrap();
        let options = StoreOptions::default()
            .sync(SyncPolicy::Always)
            .family_with(TARGET, family(Compression::Lz4).compaction(compaction))
            .family_with(BYSTANDER, family(Compression::None));
        let (images, written, stored) = crash_during_with(root.path(), crash, options, fill_with_deletions, |store| {
            store.compact(TARGET).unwrap();
            let tables: Vec<_> = store.tables().into_iter().filter(|t| t.family == TARGET).collect();
            let entries: u64 = tables.iter().map(|t| t.entries).sum();
            let tombstones: u64 = tables.iter().map(|t| t.tombstones).sum();
            Rows::from([
                ("entries".to_string(), entries.to_string()),
                ("tombstones".to_string(), tombstones.to_string()),
            ])
        });
        let expected = &written[TARGET];
        assert_eq!(
            (&stored["entries"], &stored["tombstones"]),
            (&expected.len().to_string(), &"0".to_string()),
            "{crash:?} {compaction:?}: what the compaction left stored"
        );
        for image in &images {
            let (rows, _) = open_image(image, &written[BYSTANDER]);
            assert_eq!(
                rows.as_ref(),
                Some(expected),
                "{crash:?} {compaction:?} {}: the target family's cells",
                image.display()
            );
        }
        println!("{crash:?} {compaction:?}: {} images of a compaction", images.len());
    }
}

/// Background work under crashes: a leveled family with small levels is
/// switched to automatic compaction, and its flushed tables are merged down
/// and moved whole into empty levels. Every image after every file system
/// call of that work holds exactly the family's cells, and opens twice to
/// the same answer.
#[test]
fn a_crash_at_any_step_of_background_merges_and_moves_keeps_every_cell() {
    let small_levels = || {
        family(Compression::None)
            .compaction(Compaction::Leveled {
                base_bytes: 2048,
                multiplier: 2,
            })
            .target_file_entries(8)
    };
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let options = StoreOptions::default()
            .sync(SyncPolicy::Always)
            .family_with(TARGET, small_levels())
            .family_with(BYSTANDER, family(Compression::None));
        // Flushed tables to merge, and rows after all of theirs in the log.
        let prepare = |store: &Store| {
            let mut held = fill_with_deletions(store);
            store.flush_family(TARGET).unwrap();
            for i in 0..10 {
                store.put_at(TARGET, format!("s{i:03}"), "c", 1, "after").unwrap();
                held.get_mut(TARGET)
                    .unwrap()
                    .insert(format!("s{i:03}"), "after".to_string());
            }
            held
        };
        let (images, written, _) = crash_during_with(root.path(), crash, options, prepare, |store| {
            // Level 0 merged into the last level, then a flush of rows no
            // table below holds, moved down whole.
            store
                .alter_family(TARGET, small_levels().compaction_trigger(1))
                .unwrap();
            store.wait_for_background_work().unwrap();
            let merged = store.tables().iter().filter(|t| t.family == TARGET).count();
            store.flush_family(TARGET).unwrap();
            store.wait_for_background_work().unwrap();
            let tables: Vec<_> = store.tables().into_iter().filter(|t| t.family == TARGET).collect();
            // (To level 5, the base level now, as a run of its own.)
            assert!(tables.iter().all(|t| t.level > 0), "{tables:?}");
            assert_eq!(tables.len(), merged + 1, "the flushed table moved, not merged");
            Rows::new()
        });
        for image in &images {
            let (rows, _) = open_image(image, &written[BYSTANDER]);
            assert_eq!(
                rows.as_ref(),
                Some(&written[TARGET]),
                "{crash:?} {}: the target family's cells",
                image.display()
            );
        }
        println!("{crash:?}: {} images of background merges and moves", images.len());
    }
}

/// A crash at any step of a repair (a power cut, or the process killed)
/// leaves a store that either opens, or that a second repair rebuilds; in
/// both cases it holds every row the repair was to bring back: the tables'
/// and the log's. A repair never deletes what it did not read back, so a
/// crash in the middle cannot lose what the first one was moving.
#[test]
fn a_crash_at_any_step_of_a_repair_loses_no_row_a_second_repair_brings_back() {
    for crash in CRASHES {
        let root = tempfile::tempdir().unwrap();
        let disk = root.path().join("disk");
        std::fs::create_dir(&disk).unwrap();
        let store_dir = disk.join("store");
        let written = {
            let store = Store::open(&store_dir, options()).unwrap();
            fill(&store)
        };
        // Damage in the middle of the manifest: the open refuses, repair reads on.
        let current = std::fs::read_to_string(store_dir.join("CURRENT")).unwrap();
        let manifest = store_dir.join(current.trim_end());
        let mut bytes = std::fs::read(&manifest).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x5A;
        std::fs::write(&manifest, bytes).unwrap();
        assert!(
            Store::open(&store_dir, reopen_options()).is_err(),
            "the damage stops the open"
        );

        let watch = fault::watch(&disk).unwrap();
        let images = root.path().join("images");
        std::fs::create_dir(&images).unwrap();
        watch.crash_after_every_call(&images, crash);
        Store::repair(&store_dir).unwrap();
        let made = watch.stop_crashing().unwrap();
        drop(watch);
        assert!(made.len() > 5, "{crash:?}: the repair made {} calls", made.len());
        let mut repaired_again = 0;
        for image in &made {
            let dir = image.join("store");
            let store = match Store::open(&dir, reopen_options()) {
                Ok(store) => store,
                Err(_) => {
                    repaired_again += 1;
                    Store::repair(&dir)
                        .unwrap_or_else(|e| panic!("{crash:?} {}: a second repair: {e}", image.display()));
                    Store::open(&dir, reopen_options())
                        .unwrap_or_else(|e| panic!("{crash:?} {}: open after the second repair: {e}", image.display()))
                }
            };
            for family in [TARGET, BYSTANDER] {
                assert_eq!(
                    rows_of(&store, family).as_ref(),
                    Some(&written[family]),
                    "{crash:?} {}: {family}",
                    image.display()
                );
            }
        }
        println!(
            "{crash:?}: {} images of a repair, {repaired_again} of which needed a second repair",
            made.len()
        );
    }
}
