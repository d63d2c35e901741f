//! Family changes (drop, truncate) of a family whose writes are still only
//! in the log: the store must reopen.
//!
//! A drop or a truncate throws the family's memtables away, and with them
//! the family's claim on the log segments they came from: the next open
//! starts its replay after those segments. The writes they held are then
//! in no table and in no segment replayed, which is right (they were
//! dropped), but the manifest's last sequence number must cover them: the
//! replay checks that the first record it reads follows that number, and a
//! gap is missing records, corruption. A drop or truncate used to leave the
//! number where the last flush put it, and a store whose dropped family had
//! the newest unflushed writes did not open again.
//!
//! An alter from leveled to size-tiered keeps the family's files at their
//! levels; the size-tiered merges that follow must keep them read newest
//! first.

use std::collections::BTreeMap;

use cellar_engine::{Compaction, FamilyOptions, Row, RowRange, Store, StoreOptions, SyncPolicy};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn options() -> StoreOptions {
    let family = FamilyOptions::default().compaction_trigger(0);
    StoreOptions::default()
        .family_with("kept", family.clone())
        .family_with("changed", family)
}

/// Writes to `kept`, then to `changed` (never flushed), flushes `kept`
/// (the manifest's last sequence is now `kept`'s write, and only `changed`
/// holds the first segment), changes `changed` with `change` (no family
/// holds the first segment now), and writes to `kept` again: the reopened
/// store holds exactly `kept`'s rows, and `changed` as `change` left it.
fn change_then_reopen(change: impl Fn(&Store) -> cellar_engine::Result<()>) -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), options())?;
        store.put("kept", "r1", "c", "1")?;
        store.put(
            "changed",
            "gone",
            "c",
            "written after kept's last flushed write, only in the log",
        )?;
        store.flush_family("kept")?;
        change(&store)?;
        store.put("kept", "r2", "c", "2")?;
        store.put("kept", "r3", "c", "3")?;
    }
    let store = Store::open(dir.path(), StoreOptions::default())?;
    for (row, want) in [("r1", "1"), ("r2", "2"), ("r3", "3")] {
        assert_eq!(
            store.get("kept", row, "c")?.map(|c| c.value),
            Some(want.into()),
            "{row}"
        );
    }
    if store.families().iter().any(|f| f == "changed") {
        assert_eq!(store.get("changed", "gone", "c")?, None, "a truncated cell came back");
    }
    store.put("kept", "r4", "c", "4")?;
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(store.get("kept", "r4", "c")?.map(|c| c.value), Some("4".into()));
    Ok(())
}

#[test]
fn a_store_reopens_after_a_drop_of_a_family_with_writes_only_in_the_log() -> TestResult {
    change_then_reopen(|store| store.drop_family("changed"))
}

#[test]
fn a_store_reopens_after_a_truncate_of_a_family_with_writes_only_in_the_log() -> TestResult {
    change_then_reopen(|store| store.truncate_family("changed"))
}

#[test]
fn a_store_reopens_after_a_drop_and_a_create_of_the_same_name() -> TestResult {
    change_then_reopen(|store| {
        store.drop_family("changed")?;
        store.create_family("changed", FamilyOptions::default())
    })
}

/// Offsets of the frames (`crc u32 | length u32 | payload`) of a manifest.
fn frames(path: &std::path::Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(header) = bytes.get(at + 4..at + 8) {
        out.push(at as u64);
        let length = u32::from_le_bytes(header.try_into().unwrap_or_default()) as usize;
        at += 8 + length;
    }
    out
}

fn live_manifest(dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    Ok(dir.join(std::fs::read_to_string(dir.join("CURRENT"))?.trim_end()))
}

/// A family dropped and then created again under the same name, whose
/// manifest is then damaged at the record of the new family: repair reads
/// the manifest up to the damage, which knows the name only as a dropped
/// family's. The new family's table (written after the drop) was treated as
/// a leftover of the drop, and the first open after the repair deleted it.
/// Its rows come back; the dropped family's do not.
#[test]
fn repair_keeps_the_tables_of_a_family_created_again_after_a_drop_of_its_name() -> TestResult {
    let dir = tempfile::tempdir()?;
    let manifest;
    let create_record;
    {
        let store = Store::open(dir.path(), options())?;
        store.put("changed", "old", "c", "dropped")?;
        store.flush()?;
        store.drop_family("changed")?;
        manifest = live_manifest(dir.path())?;
        let before = frames(&manifest).len();
        store.create_family("changed", FamilyOptions::default())?;
        create_record = frames(&manifest)[before];
        store.put("changed", "new", "c", "acknowledged")?;
        store.flush()?;
        assert_eq!(live_manifest(dir.path())?, manifest);
    }
    // A byte of the create's record (inside its payload) flipped.
    let mut bytes = std::fs::read(&manifest)?;
    let at = create_record as usize + 12;
    bytes[at] ^= 0x5A;
    std::fs::write(&manifest, bytes)?;
    match Store::open(dir.path(), StoreOptions::default()) {
        Err(cellar_engine::Error::Corruption { file, offset, .. }) => {
            assert_eq!((file, offset), (manifest.clone(), create_record));
        }
        other => panic!("expected corruption of the manifest, got {:?}", other.map(|_| ())),
    }
    let report = Store::repair(dir.path())?;
    for _ in 0..2 {
        let store = Store::open(dir.path(), StoreOptions::default())?;
        assert!(
            store.families().iter().any(|f| f == "changed"),
            "the family created after the drop is gone: {report:?}"
        );
        assert_eq!(
            store.get("changed", "new", "c")?.map(|c| c.value),
            Some("acknowledged".into())
        );
        assert_eq!(store.get("changed", "old", "c")?, None, "a dropped cell came back");
    }
    Ok(())
}

/// The bytes at each level of the family `f`.
fn level_sizes(store: &Store) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for t in store.tables().iter().filter(|t| t.family == "f") {
        *out.entry(t.level).or_insert(0) += t.size;
    }
    out
}

/// A leveled family altered to size-tiered keeps its files where they are:
/// one run per level, read level by level, newest first. Size-tiered merges
/// neighbouring runs of similar size, and used to write the output at level
/// 0 whatever the inputs' levels: a merge of levels 4 and 5 went to level 0,
/// before level 3, which holds newer entries of the same rows (here the
/// deletion of `x:c`, whose older value level 5 holds). The order says the
/// merged value is the newer one. Every rule that trusts the order then goes
/// wrong: back to leveled, level 3 is above the base level and moves down
/// to level 6, the deepest data level: that merge is bottommost, and drops
/// the deletion, while the value it deleted is still at level 0, and read.
/// The output belongs at level 4, the level of its newest input.
#[test]
fn a_size_tiered_merge_of_deeper_levels_stays_behind_the_newer_levels_above_them() -> TestResult {
    let dir = tempfile::tempdir()?;
    let leveled = |base_bytes| {
        FamilyOptions::default()
            .compaction(Compaction::Leveled {
                base_bytes,
                multiplier: 2,
            })
            .memtable_max_entries(5)
            .compaction_trigger(2)
            .target_file_entries(8)
            .block_size(128)
    };
    let store = Store::open(
        dir.path(),
        StoreOptions::default()
            .sync(SyncPolicy::Never)
            .family_with("f", leveled(1 << 40)),
    )?;
    let big = "v".repeat(200);
    let mut ts = 0;
    let mut tick = || {
        ts += 1;
        ts
    };
    // Level 6: rows "f000" to "z", a range that takes in every row written below.
    for i in 0..100 {
        store.put_at("f", format!("f{i:03}"), "c", tick(), &big)?;
    }
    store.put_at("f", "z", "c", tick(), &big)?;
    store.compact("f")?;
    let bottom = level_sizes(&store).get(&6).copied().ok_or("no level 6")?;
    // Each smaller base size moves the base level (where level 0 is merged)
    // up one: level 5 gets the value of x:c, level 4 as many bytes of other
    // rows, level 3 the deletion of x:c and one small cell.
    store.alter_family("f", leveled(bottom))?;
    store.put_at("f", "x", "c", tick(), "deleted later")?;
    for i in 0..9 {
        store.put_at("f", format!("m{i}"), "c", tick(), &big)?;
    }
    store.wait_for_background_work()?;
    store.alter_family("f", leveled(bottom / 2))?;
    for i in 0..10 {
        store.put_at("f", format!("n{i}"), "c", tick(), &big)?;
    }
    store.wait_for_background_work()?;
    store.alter_family("f", leveled(bottom / 4))?;
    store.delete_at("f", "x", "c", tick())?;
    store.flush_family("f")?;
    store.put_at("f", "b", "c", tick(), "b")?;
    store.flush_family("f")?;
    store.wait_for_background_work()?;
    assert_eq!(level_sizes(&store).keys().copied().collect::<Vec<_>>(), [3, 4, 5, 6]);

    // Levels 4 and 5 are similar; level 3 is too small to join them.
    store.alter_family("f", leveled(bottom).compaction(Compaction::SizeTiered))?;
    store.wait_for_background_work()?;
    let tiered_levels: Vec<u32> = level_sizes(&store).keys().copied().collect();
    assert_eq!(store.get("f", "x", "c")?, None);

    // Leveled again, with level 6 the base: every level above it moves down.
    store.alter_family("f", leveled(1 << 40))?;
    store.wait_for_background_work()?;
    assert_eq!(store.get("f", "x", "c")?, None, "a deleted cell came back");
    assert_eq!(store.versions("f", "x", "c")?, []);
    assert_eq!(store.get_row("f", "x")?, []);
    let rows: Vec<Row> = store.scan("f", &RowRange::all())?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), 101 + 9 + 10 + 1, "level 6, m0-m8, n0-n9 and b");
    assert!(rows.iter().all(|r| r.key.as_ref() != b"x"), "a deleted row came back");
    assert_eq!(
        tiered_levels,
        [3, 4, 6],
        "levels 4 and 5 merged into level 4, behind level 3"
    );
    assert_eq!(level_sizes(&store).keys().copied().collect::<Vec<_>>(), [6]);
    Ok(())
}
