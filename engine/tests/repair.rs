//! Repair: a store that does not open is rebuilt from the files it still has.
//!
//! `Store::repair` (LevelDB's `RepairDB`) reads every table file back whole,
//! replays every log record that still decodes, writes a new manifest, and
//! moves what it cannot use to the store's `lost/` folder. These tests damage
//! one thing at a time and check what comes back, what goes to `lost/`, and
//! what the report says.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::path::{Path, PathBuf};

use cellar_engine::{Compaction, Error, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("a", FamilyOptions::default().compaction_trigger(0))
        .family_with("b", FamilyOptions::default().max_versions(2).compaction_trigger(0))
}

/// Rows of `family`, as `row=value` strings.
fn rows(store: &Store, family: &str) -> Vec<String> {
    store
        .scan(family, &RowRange::all())
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            format!(
                "{}={}",
                String::from_utf8_lossy(&row.key),
                String::from_utf8_lossy(&row.cells[0].value)
            )
        })
        .collect()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Two flushes in `a` (rows a0..a3 in two tables), one in `b`, and rows a4
/// and b1 still in the log.
fn store_with_tables_and_log(dir: &Path) {
    let store = Store::open(dir, options()).unwrap();
    for (family, rows) in [("a", 0..2), ("b", 0..1), ("a", 2..4)] {
        for i in rows {
            store
                .put_at(family, format!("{family}{i}"), "c", 1, format!("v{i}"))
                .unwrap();
        }
        store.flush_family(family).unwrap();
    }
    store.put_at("a", "a4", "c", 1, "v4").unwrap();
    store.put_at("b", "b1", "c", 1, "v1").unwrap();
}

fn tables_of(dir: &Path, family: &str) -> Vec<PathBuf> {
    let mut tables: Vec<PathBuf> = std::fs::read_dir(dir.join(family))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".sst"))
        .collect();
    tables.sort();
    tables
}

#[test]
fn a_store_without_its_manifest_is_rebuilt_from_tables_and_log() -> TestResult {
    let dir = tempfile::tempdir()?;
    store_with_tables_and_log(dir.path());
    // The manifest is gone; CURRENT names nothing.
    let manifest = dir
        .path()
        .join(std::fs::read_to_string(dir.path().join("CURRENT"))?.trim_end());
    std::fs::write(&manifest, b"")?;
    assert!(matches!(
        Store::open(dir.path(), options()),
        Err(Error::Corruption { .. })
    ));

    let report = Store::repair(dir.path())?;
    assert_eq!(report.old_manifest.as_deref(), Some(manifest.as_path()));
    assert!(report.manifest_damage.is_some());
    let families: Vec<(String, bool, u64)> = report
        .families
        .iter()
        .map(|f| (f.name.clone(), f.from_manifest, f.tables))
        .collect();
    // Without a manifest the families come from their folders, and the log's
    // records name family ids nothing maps to a name any more.
    assert_eq!(families, [("a".to_string(), false, 2), ("b".to_string(), false, 1)]);
    assert_eq!(report.orphan_log_records, 2);
    assert_eq!(report.lost.len(), 1, "the empty manifest: {report:?}");

    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a0=v0", "a1=v1", "a2=v2", "a3=v3"]);
    assert_eq!(rows(&store, "b"), ["b0=v0"]);
    Ok(())
}

#[test]
fn with_a_readable_manifest_repair_also_replays_the_log() -> TestResult {
    let dir = tempfile::tempdir()?;
    store_with_tables_and_log(dir.path());
    let report = Store::repair(dir.path())?;
    assert_eq!(report.manifest_damage, None);
    assert_eq!(report.log_records, 2);
    assert_eq!(report.orphan_log_records, 0);
    let families: Vec<(String, bool, u64, u64)> = report
        .families
        .iter()
        .map(|f| (f.name.clone(), f.from_manifest, f.tables, f.log_entries))
        .collect();
    assert_eq!(families, [("a".to_string(), true, 2, 1), ("b".to_string(), true, 1, 1)]);
    // The old manifest is kept aside, as LevelDB's repair does.
    assert_eq!(names_in(&dir.path().join("lost")).len(), 1);
    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a0=v0", "a1=v1", "a2=v2", "a3=v3", "a4=v4"]);
    assert_eq!(rows(&store, "b"), ["b0=v0", "b1=v1"]);
    // The options the manifest recorded survive.
    assert_eq!(store.family_options("b")?.max_versions, 2);
    Ok(())
}

#[test]
fn a_table_that_does_not_read_back_goes_to_lost_and_the_rest_comes_back() -> TestResult {
    let dir = tempfile::tempdir()?;
    store_with_tables_and_log(dir.path());
    let damaged = tables_of(dir.path(), "a").remove(0);
    let mut bytes = std::fs::read(&damaged)?;
    bytes[20] ^= 0x40; // inside the first data block
    std::fs::write(&damaged, &bytes)?;

    let report = Store::repair(dir.path())?;
    let lost: Vec<(&Path, &str)> = report
        .lost
        .iter()
        .map(|l| (l.from.as_path(), l.why.as_str()))
        .filter(|(from, _)| from.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert_eq!(lost.len(), 1, "{report:?}");
    assert_eq!(lost[0].0, damaged.as_path());
    assert!(lost[0].1.contains("checksum"), "{}", lost[0].1);
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    assert!(names_in(&dir.path().join("lost")).contains(&format!("a-{name}")));

    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a2=v2", "a3=v3", "a4=v4"]);
    assert_eq!(rows(&store, "b"), ["b0=v0", "b1=v1"]);
    store.verify()?;
    Ok(())
}

/// A store in `dir` whose one non-empty log segment holds five records, one
/// put each (`a0` to `a4` in family `a`): the segment's path.
fn five_puts_in_one_log(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    {
        let store = Store::open(dir, options())?;
        for i in 0..5 {
            store.put_at("a", format!("a{i}"), "c", 1, format!("v{i}"))?;
        }
    }
    let logs: Vec<PathBuf> = names_in(dir)
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
        .collect();
    match logs.as_slice() {
        [log] => Ok(log.clone()),
        _ => Err(format!("expected one non-empty log segment, found {logs:?}").into()),
    }
}

#[test]
fn a_damaged_log_record_is_skipped_and_the_records_after_it_are_kept() -> TestResult {
    let dir = tempfile::tempdir()?;
    let log = five_puts_in_one_log(dir.path())?;
    let mut bytes = std::fs::read(&log)?;
    let record = bytes.len() / 5;
    bytes[2 * record + 12] ^= 0x40; // record 2's payload
    std::fs::write(&log, &bytes)?;
    assert!(matches!(
        Store::open(dir.path(), options()),
        Err(Error::Corruption { .. })
    ));

    let report = Store::repair(dir.path())?;
    assert_eq!(report.log_records, 4);
    assert_eq!(report.skipped_log.len(), 1);
    assert_eq!(report.skipped_log[0].offset, 2 * record as u64);
    assert!(report.lost.iter().any(|l| l.from == log), "{report:?}");
    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a0=v0", "a1=v1", "a3=v3", "a4=v4"]);
    Ok(())
}

/// A log record whose frame and checksum are good but whose payload is not
/// a write batch (here: a format byte no cellar writes) is damage like a
/// flipped byte: repair reports it with its reason, replays the records
/// around it, and keeps the segment in `lost/` instead of deleting it.
#[test]
fn a_log_record_that_is_not_a_write_batch_is_reported_and_its_segment_kept_in_lost() -> TestResult {
    let dir = tempfile::tempdir()?;
    let log = five_puts_in_one_log(dir.path())?;
    let mut bytes = std::fs::read(&log)?;
    let record = bytes.len() / 5;
    let at = 2 * record;
    // Record 2: the top byte of its first 8 payload bytes says its format.
    bytes[at + 8 + 7] = 3;
    let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into()?) as usize;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[at + 4..at + 8 + length]);
    let crc = hasher.finalize().rotate_right(15).wrapping_add(0xa282_ead8);
    bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&log, &bytes)?;
    let refused = Store::open(dir.path(), options()).map(drop);
    assert!(
        matches!(&refused, Err(Error::Corruption { file, offset, .. }) if *file == log && *offset == at as u64),
        "{refused:?}"
    );

    let report = Store::repair(dir.path())?;
    assert_eq!(report.log_records, 4);
    assert_eq!(report.skipped_log.len(), 1, "{report:?}");
    assert_eq!(report.skipped_log[0].offset, at as u64);
    assert_eq!(report.skipped_log[0].bytes, record as u64);
    assert_eq!(
        report.skipped_log[0].why,
        "log record is not a write batch: unknown batch format (top byte of the first sequence number)"
    );
    let kept = report.lost.iter().find(|l| l.from == log);
    assert!(
        kept.is_some_and(|l| l.to.exists()),
        "the segment is kept in lost/: {report:?}"
    );
    assert_eq!(std::fs::read(&kept.unwrap().to)?, bytes, "and kept as it was");
    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a0=v0", "a1=v1", "a3=v3", "a4=v4"]);
    Ok(())
}

#[test]
fn repair_refuses_an_open_store_and_a_folder_that_is_not_one() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), options())?;
    assert!(matches!(Store::repair(dir.path()), Err(Error::Locked { .. })));
    drop(store);
    let empty = tempfile::tempdir()?;
    assert!(matches!(Store::repair(empty.path()), Err(Error::NotAStore { .. })));
    assert!(matches!(
        Store::repair(empty.path().join("missing")),
        Err(Error::NotAStore { .. })
    ));
    Ok(())
}

/// A store that lost `CURRENT` is not a new store: opening it must not
/// create one over its files (which used to start a fresh `MANIFEST-000001`
/// in place of the old one). The open names `CURRENT`; repair finds the
/// newest manifest and brings everything back.
#[test]
fn a_store_that_lost_current_is_not_created_again_and_repair_finds_its_manifest() -> TestResult {
    let dir = tempfile::tempdir()?;
    store_with_tables_and_log(dir.path());
    std::fs::remove_file(dir.path().join("CURRENT"))?;
    let before = names_in(dir.path());
    for create in [true, false] {
        match Store::open(dir.path(), options().create_if_missing(create)) {
            Err(Error::Corruption { file, offset, what }) => {
                assert_eq!(file, dir.path().join("CURRENT"));
                assert_eq!(offset, 0);
                assert!(
                    what.starts_with("missing, but the folder holds a store's files"),
                    "{what}"
                );
            }
            other => panic!("expected corruption of CURRENT, got {:?}", other.map(|_| ())),
        }
        assert_eq!(names_in(dir.path()), before, "nothing created or removed");
    }
    let report = Store::repair(dir.path())?;
    assert_eq!(report.log_records, 2, "{report:?}");
    let store = Store::open(dir.path(), options())?;
    assert_eq!(rows(&store, "a"), ["a0=v0", "a1=v1", "a2=v2", "a3=v3", "a4=v4"]);
    assert_eq!(rows(&store, "b"), ["b0=v0", "b1=v1"]);
    Ok(())
}

/// A leveled family with tiny levels: base `base_bytes`, ×2, trigger `trigger`.
fn leveled(base_bytes: u64, trigger: usize) -> FamilyOptions {
    FamilyOptions::default()
        .compaction(Compaction::Leveled {
            base_bytes,
            multiplier: 2,
        })
        .compaction_trigger(trigger)
}

/// Levels of family `e`'s tables, as `(level, tombstones)`, shallowest first.
fn levels(store: &Store) -> Vec<(u32, u64)> {
    let mut levels: Vec<(u32, u64)> = store
        .tables()
        .iter()
        .filter(|t| t.family == "e")
        .map(|t| (t.level, t.tombstones))
        .collect();
    levels.sort_unstable();
    levels
}

/// A leveled family `e` with 40 rows `a..`/`z..` at level 6 (5 KiB, which
/// make level 3 the base with a 1 KiB base size) and, written after them,
/// `write` (row `r` only) flushed and moved to level 3. Automatic compaction
/// is then turned off.
fn leveled_store_with(dir: &Path, write: impl FnOnce(&Store)) {
    let store = Store::open(dir, StoreOptions::default().family_with("e", leveled(1024, 1))).unwrap();
    for i in 0..20 {
        for row in [format!("a{i:02}"), format!("z{i:02}")] {
            store.put_at("e", row, "c", 1, [b'v'; 128]).unwrap();
        }
    }
    store.flush_family("e").unwrap();
    store.wait_for_background_work().unwrap();
    write(&store);
    store.flush_family("e").unwrap();
    store.wait_for_background_work().unwrap();
    assert_eq!(levels(&store).iter().map(|l| l.0).collect::<Vec<_>>(), [3, 6]);
    // Nothing compacts from here until the test says so.
    store.alter_family("e", leveled(1024, 0)).unwrap();
}

/// Copies a table of family `e` written by a store of its own in `donor`
/// into `dir`'s family `e` under number 900, one its manifest has not
/// reached: a table the manifest does not list, as a compaction output
/// whose record the damage took would be. Its sequence numbers are the
/// donor's: lower than any `dir` gave after its first writes.
fn lose_a_table_into(dir: &Path, donor: &Path, write: impl FnOnce(&Store)) {
    {
        let store = Store::open(donor, StoreOptions::default().family_with("e", leveled(1024, 0))).unwrap();
        write(&store);
        store.flush_family("e").unwrap();
    }
    let [table] = tables_of(donor, "e").try_into().unwrap();
    std::fs::copy(table, dir.join("e").join("000900.sst")).unwrap();
}

/// Repairs `dir`, then lets family `e` compact on its own: with a base size
/// of 1 GiB, level 6 is the base and level 3 above it, so level 3 is merged
/// into level 6, a bottommost merge (it drops deletions) unless level 0
/// holds two runs, which go first.
fn repair_then_compact(dir: &Path) -> Store {
    let report = Store::repair(dir).unwrap();
    let moved: Vec<(&str, u64)> = report
        .families
        .iter()
        .map(|f| (f.name.as_str(), f.tables_to_level_0))
        .collect();
    // The lost table's sequence numbers fit no one place (in the converse,
    // the donor's deletion is older by sequence, newer by timestamp): both
    // listed tables go to level 0 with it.
    assert_eq!(moved, [("e", 2)]);
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    assert_eq!(
        store.get("e", "r", "c").unwrap(),
        None,
        "a point read compares every source"
    );
    store.alter_family("e", leveled(1 << 30, 2)).unwrap();
    store.wait_for_background_work().unwrap();
    store
}

#[test]
fn a_cell_in_a_lost_table_stays_deleted_by_a_listed_deletion_through_compaction() -> TestResult {
    let (dir, donor) = (tempfile::tempdir()?, tempfile::tempdir()?);
    // The deletion (timestamp 2) is listed at level 3; the cell it deletes
    // (timestamp 1, an older write) is in a table the manifest lost.
    leveled_store_with(dir.path(), |store| store.delete_at("e", "r", "c", 2).unwrap());
    lose_a_table_into(dir.path(), donor.path(), |store| {
        store.put_at("e", "r", "c", 1, "deleted").unwrap()
    });
    let store = repair_then_compact(dir.path());
    // Had the lost table gone to level 0 (newer than every level), the
    // merge of level 3 into 6 would have been bottommost and dropped the
    // deletion while the cell it hides lived on above it.
    assert_eq!(store.get("e", "r", "c")?, None);
    assert_eq!(rows(&store, "e").len(), 40);
    // Every table went to level 0 and was merged as one into level 6.
    assert_eq!(levels(&store), [(6, 0)]);
    Ok(())
}

#[test]
fn a_deletion_in_a_lost_table_still_hides_a_listed_cell_through_compaction() -> TestResult {
    let (dir, donor) = (tempfile::tempdir()?, tempfile::tempdir()?);
    // The converse: the cell (timestamp 1) is listed at level 3, its
    // deletion (timestamp 2) is in a lost table with older sequence numbers.
    leveled_store_with(dir.path(), |store| store.put_at("e", "r", "c", 1, "deleted").unwrap());
    lose_a_table_into(dir.path(), donor.path(), |store| {
        store.delete_at("e", "r", "c", 2).unwrap()
    });
    let store = repair_then_compact(dir.path());
    assert_eq!(store.get("e", "r", "c")?, None);
    assert_eq!(rows(&store, "e").len(), 40);
    // The deletion still hides the cell after a major compaction too. (This
    // case passed before the fix as well: level 0 was right for a lost table
    // holding only a newer deletion. It checks that the fix, which moves
    // every table to level 0 here, keeps it so.)
    store.compact("e")?;
    assert_eq!(store.get("e", "r", "c")?, None);
    assert_eq!(levels(&store), [(6, 0)]);
    Ok(())
}

/// A file moved down a level into an empty one starts a run numbered from
/// the store's file numbers. That number must be recorded as used: repair
/// numbers what it writes from the recorded next file number, and gave the
/// table of the replayed log the moved file's run. Two runs of one family
/// under one number, side by side in read order (level 0, then the last
/// level), were read as one run of disjoint files: a scan walked them end to
/// end and point reads skipped the newer one.
#[test]
fn the_run_a_moved_file_starts_is_never_given_to_another_table() -> TestResult {
    let dir = tempfile::tempdir()?;
    let leveled = FamilyOptions::default()
        .compaction(Compaction::LEVELED)
        .compaction_trigger(1);
    let options = StoreOptions::default().family_with("f", leveled.clone());
    {
        let store = Store::open(dir.path(), options.clone())?;
        for i in 0..20 {
            store.put_at("f", format!("r{i:02}"), "c", 1, "flushed, then moved")?;
        }
        store.flush()?;
        store.wait_for_background_work()?;
        let tables = store.tables();
        assert_eq!(
            tables.iter().map(|t| t.level).collect::<Vec<_>>(),
            vec![6],
            "moved whole"
        );
        for i in 10..30 {
            store.put_at("f", format!("r{i:02}"), "c", 2, "in the log")?;
        }
    }
    let expected = |i: usize| if i < 10 { "flushed, then moved" } else { "in the log" };
    Store::repair(dir.path())?;
    // Read before any compaction could merge the two tables.
    let reader = cellar_engine::ReadOnlyStore::open(dir.path())?;
    let mut runs: Vec<(u32, u64)> = reader.tables().iter().map(|t| (t.level, t.run)).collect();
    runs.sort();
    let mut ids: Vec<u64> = runs.iter().map(|(_, run)| *run).collect();
    ids.sort();
    ids.dedup();
    let snapshot = reader.snapshot();
    let scanned: Vec<String> = snapshot
        .scan("f", &RowRange::all())?
        .map(|row| {
            row.map(|r| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&r.key),
                    String::from_utf8_lossy(&r.cells[0].value)
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let want: Vec<String> = (0..30).map(|i| format!("r{i:02}={}", expected(i))).collect();
    assert_eq!(scanned, want, "the scan, with runs {runs:?}");
    for i in 0..30 {
        let cell = snapshot.get("f", format!("r{i:02}"), "c")?.ok_or("missing")?;
        assert_eq!(&cell.value[..], expected(i).as_bytes(), "r{i:02}");
    }
    assert_eq!(ids.len(), runs.len(), "two levels share a run number: {runs:?}");
    drop(reader);
    let store = Store::open(dir.path(), options)?;
    assert_eq!(rows(&store, "f"), want);
    Ok(())
}
