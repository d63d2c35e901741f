//! The corruption matrix: for every kind of file a store keeps (table data,
//! index, filter and properties blocks, table footer, manifest record, log
//! record in the middle, log tail) flip bytes, and separately truncate, then
//! open the store and read everything.
//!
//! What must happen: a clear `Error::Corruption` naming the damaged file (or
//! `Error::UnsupportedVersion` for a footer claiming a newer format), or, for a
//! torn log tail only, recovery of the records before it. Never a panic, and
//! never a wrong value: every value read is compared with what was written.
//!
//! Each case damages a fresh copy of a pristine store, so the cases are
//! independent.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use cellar_engine::{Error, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy};
use cellar_sstable::{BlockKind, Table, FOOTER_LEN, FORMAT_VERSION};

type TestResult = Result<(), Box<dyn std::error::Error>>;
type Model = BTreeMap<String, String>;

const FAMILY: &str = "f";

// ------------------------------------------------------------------ helpers

fn options(family: FamilyOptions) -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with(FAMILY, family)
}

/// Small blocks so one table has many data blocks; no automatic compaction,
/// so each flush stays one table (and one manifest record).
fn table_family() -> FamilyOptions {
    FamilyOptions::default().block_size(256).compaction_trigger(0)
}

fn row(i: usize) -> String {
    format!("row{i:04}")
}

fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 37))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn flip_byte(path: &Path, offset: u64) {
    let mut file = OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut byte).unwrap();
    byte[0] ^= 0x5A;
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.write_all(&byte).unwrap();
    file.sync_all().unwrap();
}

fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// Offsets and lengths of the frames (`crc u32 | length u32 | payload`) of a
/// log segment or manifest.
fn frames(path: &Path) -> Vec<(u64, u64)> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at as u64, (8 + length) as u64));
        at += 8 + length;
    }
    assert_eq!(at, bytes.len(), "{} is a sequence of whole frames", path.display());
    out
}

fn is_corruption_of(e: &Error, damaged: &Path) -> bool {
    matches!(e, Error::Corruption { file, .. } if file == damaged)
}

/// What reading a damaged store gave.
#[derive(Debug, Default)]
struct Reads {
    /// Keys read back with their written value.
    correct: usize,
    /// Keys not found.
    missing: Vec<String>,
    /// Reads that failed with a corruption naming the damaged file.
    corruption_errors: usize,
}

/// Reads every key of `model` (point reads and one scan) from `store`.
/// Panics on a wrong value, an unexpected key, or an error other than a
/// corruption naming `damaged`.
fn read_everything(store: &Store, model: &Model, damaged: &Path, case: &str) -> Reads {
    let mut reads = Reads::default();
    for (key, want) in model {
        match store.get(FAMILY, key, "c") {
            Ok(Some(cell)) => {
                assert_eq!(
                    String::from_utf8_lossy(&cell.value),
                    *want,
                    "{case}: wrong value for {key}"
                );
                reads.correct += 1;
            }
            Ok(None) => reads.missing.push(key.clone()),
            Err(e) => {
                assert!(
                    is_corruption_of(&e, damaged),
                    "{case}: reading {key} gave {e}, not a corruption of {}",
                    damaged.display()
                );
                reads.corruption_errors += 1;
            }
        }
    }
    match store.scan(FAMILY, &RowRange::all()) {
        Ok(scan) => {
            for row in scan {
                match row {
                    Ok(row) => {
                        let key = String::from_utf8_lossy(&row.key).into_owned();
                        let want = model.get(&key);
                        assert!(want.is_some(), "{case}: the scan returned an unwritten row {key}");
                        assert_eq!(row.cells.len(), 1, "{case}: row {key}");
                        assert_eq!(
                            Some(&String::from_utf8_lossy(&row.cells[0].value).into_owned()),
                            want,
                            "{case}: the scan returned a wrong value for {key}"
                        );
                    }
                    Err(e) => {
                        assert!(is_corruption_of(&e, damaged), "{case}: the scan gave {e}");
                        reads.corruption_errors += 1;
                        break;
                    }
                }
            }
        }
        Err(e) => {
            assert!(is_corruption_of(&e, damaged), "{case}: the scan gave {e}");
            reads.corruption_errors += 1;
        }
    }
    reads
}

/// Damage of a table file: the store refuses to open with a corruption of the
/// table, or opens, and then reads (or at least `verify`) report the
/// corruption, and every value read is right.
fn expect_table_damage_detected(dir: &Path, model: &Model, table: &Path, case: &str) {
    match Store::open(dir, options(table_family())) {
        Err(e) => assert!(
            is_corruption_of(&e, table),
            "{case}: open gave {e}, not a corruption of {}",
            table.display()
        ),
        Ok(store) => {
            let reads = read_everything(&store, model, table, case);
            assert!(
                reads.missing.is_empty(),
                "{case}: rows silently missing: {:?}",
                reads.missing
            );
            match store.verify() {
                Err(e) => assert!(is_corruption_of(&e, table), "{case}: verify gave {e}"),
                Ok(blocks) => panic!("{case}: verify found nothing wrong in {blocks} blocks"),
            }
        }
    }
}

// --------------------------------------------------------------- fixtures

/// A store whose family holds one flushed table of 300 rows (many data
/// blocks, a filter, properties, an index). Returns the model and the table's
/// path relative to the store folder.
fn table_store(dir: &Path) -> (Model, PathBuf) {
    let store = Store::open(dir, options(table_family())).unwrap();
    let mut model = Model::new();
    for i in 0..300 {
        store.put_at(FAMILY, row(i), "c", 1, value(i)).unwrap();
        model.insert(row(i), value(i));
    }
    store.flush().unwrap();
    drop(store);
    let tables = files_with_suffix(&dir.join(FAMILY), ".sst");
    assert_eq!(tables.len(), 1);
    let relative = tables[0].strip_prefix(dir).unwrap().to_path_buf();
    (model, relative)
}

/// Runs `damage` on a fresh copy of `pristine`, then checks with `check`.
fn on_a_copy(pristine: &Path, damage: impl FnOnce(&Path), check: impl FnOnce(&Path)) {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(pristine, copy.path());
    damage(copy.path());
    check(copy.path());
}

// ------------------------------------------------------------------ tables

#[test]
fn damaged_table_blocks_are_reported_as_corruption_of_the_table() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path());
    let blocks = Table::open(&pristine.path().join(&relative))?.blocks()?;
    let data_blocks = blocks.iter().filter(|b| b.kind == BlockKind::Data).count();
    assert!(data_blocks > 5, "the fixture has many data blocks ({data_blocks})");
    for kind in [
        BlockKind::Data,
        BlockKind::Filter,
        BlockKind::Properties,
        BlockKind::Index,
    ] {
        let chosen: Vec<_> = blocks.iter().filter(|b| b.kind == kind).collect();
        assert!(!chosen.is_empty(), "the fixture has a {kind:?} block");
        // First, middle and last data block; the one block of the other kinds.
        let picks = [0, chosen.len() / 2, chosen.len() - 1];
        for &pick in &picks {
            let handle = chosen[pick].handle;
            // Damage inside the contents, at the first byte, and in the trailer (kind, crc).
            for (what, offset) in [
                ("first byte", handle.offset),
                ("middle byte", handle.offset + handle.size / 2),
                ("trailer kind", handle.offset + handle.size),
                ("trailer crc", handle.offset + handle.size + 3),
            ] {
                let case = format!("{kind:?} block {pick} at {}: {what} flipped", handle.offset);
                on_a_copy(
                    pristine.path(),
                    |dir| flip_byte(&dir.join(&relative), offset),
                    |dir| expect_table_damage_detected(dir, &model, &dir.join(&relative), &case),
                );
            }
        }
    }
    Ok(())
}

#[test]
fn damaged_table_footer_is_corruption_and_a_newer_version_is_unsupported() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path());
    let size = len(&pristine.path().join(&relative));
    let footer = size - FOOTER_LEN as u64;
    // Filter, properties and index handles (first byte and zero padding), magic.
    for (what, offset) in [
        ("filter handle", footer),
        ("filter handle padding", footer + 19),
        ("properties handle", footer + 20),
        ("properties handle padding", footer + 39),
        ("index handle", footer + 40),
        ("index handle padding", footer + 59),
        ("magic", footer + 64),
        ("last byte of the magic", size - 1),
    ] {
        let case = format!("footer {what} flipped");
        on_a_copy(
            pristine.path(),
            |dir| flip_byte(&dir.join(&relative), offset),
            |dir| expect_table_damage_detected(dir, &model, &dir.join(&relative), &case),
        );
    }
    // Version 0 is not a version: corruption.
    on_a_copy(
        pristine.path(),
        |dir| write_at(&dir.join(&relative), footer + 60, &0u32.to_le_bytes()),
        |dir| expect_table_damage_detected(dir, &model, &dir.join(&relative), "footer version 0"),
    );
    // A newer version: the store names the file and both versions.
    on_a_copy(
        pristine.path(),
        |dir| write_at(&dir.join(&relative), footer + 60, &(FORMAT_VERSION + 1).to_le_bytes()),
        |dir| match Store::open(dir, options(table_family())) {
            Err(Error::UnsupportedVersion { file, found, supported }) => {
                assert_eq!(file, dir.join(&relative));
                assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
            }
            other => panic!(
                "a newer footer version: expected UnsupportedVersion, got {other:?}",
                other = other.err()
            ),
        },
    );
    Ok(())
}

#[test]
fn truncated_table_is_corruption_of_the_table() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path());
    let size = len(&pristine.path().join(&relative));
    for cut in [
        size - 1,
        size - FOOTER_LEN as u64,
        size - FOOTER_LEN as u64 - 1,
        size / 2,
        FOOTER_LEN as u64,
        10,
        0,
    ] {
        let case = format!("table cut to {cut} of {size} bytes");
        on_a_copy(
            pristine.path(),
            |dir| truncate(&dir.join(&relative), cut),
            |dir| expect_table_damage_detected(dir, &model, &dir.join(&relative), &case),
        );
    }
    Ok(())
}

// ---------------------------------------------------------------- manifest

/// A store with four flushes, hence a manifest of several records (the
/// snapshot, the family's creation, one record per flush).
fn manifest_store(dir: &Path) -> Model {
    let store = Store::open(dir, options(table_family())).unwrap();
    let mut model = Model::new();
    for part in 0..4 {
        for i in part * 50..(part + 1) * 50 {
            store.put_at(FAMILY, row(i), "c", 1, value(i)).unwrap();
            model.insert(row(i), value(i));
        }
        store.flush().unwrap();
    }
    model
}

fn manifest_of(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.trim_end())
}

#[test]
fn damaged_manifest_record_in_the_middle_is_corruption_of_the_manifest() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let model = manifest_store(pristine.path());
    let records = frames(&manifest_of(pristine.path()));
    assert!(records.len() >= 4, "the manifest has {} records", records.len());
    // Every record but the last (the last one is a torn tail when damaged).
    for (index, &(offset, size)) in records.iter().enumerate().take(records.len() - 1) {
        for (what, at) in [
            ("crc", offset),
            ("length", offset + 4),
            ("payload", offset + 8 + (size - 8) / 2),
            ("last byte", offset + size - 1),
        ] {
            let case = format!("manifest record {index} at {offset}: {what} flipped");
            on_a_copy(
                pristine.path(),
                |dir| flip_byte(&manifest_of(dir), at),
                |dir| match Store::open(dir, options(table_family())) {
                    Err(e) => assert!(is_corruption_of(&e, &manifest_of(dir)), "{case}: open gave {e}"),
                    Ok(store) => {
                        // The known limit of the frame format: a flipped length that points
                        // past the end of the file reads as a torn tail. Nothing wrong may be read.
                        assert_eq!(what, "length", "{case}: the store opened");
                        let reads = read_everything(&store, &model, &manifest_of(dir), &case);
                        assert_eq!(reads.corruption_errors, 0, "{case}");
                    }
                },
            );
        }
    }
    Ok(())
}

#[test]
fn truncated_manifest_keeps_whole_records_and_never_reads_a_wrong_value() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let model = manifest_store(pristine.path());
    let manifest = manifest_of(pristine.path());
    let records = frames(&manifest);
    // Cut inside the first record (the snapshot): no record survives, which a
    // fsynced manifest can never be, so it is corruption.
    let (first, first_size) = records[0];
    on_a_copy(
        pristine.path(),
        |dir| truncate(&manifest_of(dir), first + first_size / 2),
        |dir| match Store::open(dir, options(table_family())) {
            Err(e) => assert!(is_corruption_of(&e, &manifest_of(dir)), "snapshot cut: {e}"),
            Ok(_) => panic!("a manifest cut inside its snapshot opened"),
        },
    );
    // Cut inside a later record: that record is a torn tail (a crash during its
    // append, so it was never acknowledged) and the state before it is kept.
    // Rows whose flush it recorded are missing; no row is ever wrong.
    for (index, &(offset, size)) in records.iter().enumerate().skip(1) {
        let case = format!("manifest cut inside record {index}");
        on_a_copy(
            pristine.path(),
            |dir| truncate(&manifest_of(dir), offset + size / 2),
            |dir| {
                let store = Store::open(dir, options(table_family())).unwrap();
                let reads = read_everything(&store, &model, &manifest_of(dir), &case);
                assert_eq!(reads.corruption_errors, 0, "{case}");
                store.verify().unwrap();
            },
        );
    }
    Ok(())
}

// --------------------------------------------------------------------- log

/// A store whose 40 writes are all still in the log (one record each).
fn log_store(dir: &Path) -> (Model, PathBuf) {
    let store = Store::open(dir, options(FamilyOptions::default())).unwrap();
    let mut model = Model::new();
    for i in 0..40 {
        store.put_at(FAMILY, row(i), "c", 1, value(i)).unwrap();
        model.insert(row(i), value(i));
    }
    drop(store);
    let logs = files_with_suffix(dir, ".log");
    let with_records: Vec<_> = logs.into_iter().filter(|p| len(p) > 0).collect();
    assert_eq!(with_records.len(), 1, "one log segment holds the writes");
    let relative = with_records[0].strip_prefix(dir).unwrap().to_path_buf();
    assert_eq!(frames(&with_records[0]).len(), 40, "one record per write");
    (model, relative)
}

/// The first `n` rows of the model.
fn prefix(model: &Model, n: usize) -> Model {
    model.iter().take(n).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The store opens and holds exactly `expected`.
fn expect_exactly(dir: &Path, model: &Model, expected: &Model, log: &Path, case: &str) {
    let store = Store::open(dir, options(FamilyOptions::default())).unwrap_or_else(|e| panic!("{case}: {e}"));
    let reads = read_everything(&store, model, log, case);
    assert_eq!(reads.corruption_errors, 0, "{case}");
    assert_eq!(reads.correct, expected.len(), "{case}: rows recovered");
    let missing: Vec<String> = model.keys().filter(|k| !expected.contains_key(*k)).cloned().collect();
    assert_eq!(reads.missing, missing, "{case}: rows dropped");
}

#[test]
fn damaged_log_record_in_the_middle_is_corruption_of_the_log() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = log_store(pristine.path());
    let records = frames(&pristine.path().join(&relative));
    for index in [0, 1, 20, 38] {
        let (offset, size) = records[index];
        for (what, at) in [
            ("crc", offset),
            ("payload", offset + 8 + (size - 8) / 2),
            ("last byte", offset + size - 1),
        ] {
            let case = format!("log record {index}: {what} flipped");
            on_a_copy(
                pristine.path(),
                |dir| flip_byte(&dir.join(&relative), at),
                |dir| match Store::open(dir, options(FamilyOptions::default())) {
                    Err(e) => assert!(is_corruption_of(&e, &dir.join(&relative)), "{case}: open gave {e}"),
                    Ok(_) => panic!("{case}: the store opened, dropping acknowledged writes"),
                },
            );
        }
    }
    // With salvage_log the records before the damage are kept, and only they.
    let (offset, _) = records[20];
    on_a_copy(
        pristine.path(),
        |dir| flip_byte(&dir.join(&relative), offset + 10),
        |dir| {
            let mut salvage = options(FamilyOptions::default());
            salvage.salvage_log = true;
            let store = Store::open(dir, salvage).unwrap();
            let reads = read_everything(&store, &model, &dir.join(&relative), "salvage");
            assert_eq!(reads.correct, 20);
            assert_eq!(reads.missing.len(), 20);
        },
    );
    Ok(())
}

#[test]
fn torn_log_tail_recovers_the_records_before_it() -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = log_store(pristine.path());
    let path = pristine.path().join(&relative);
    let size = len(&path);
    let records = frames(&path);
    let (last, last_size) = records[39];
    // The last record damaged in place (a write that reached the disk in part).
    // (Not its length: a smaller length with bytes after it is damage in the
    // middle by rule 6 of FORMAT-log-manifest.md, which a torn write never makes.)
    for (what, at) in [
        ("crc", last),
        ("payload", last + 8 + (last_size - 8) / 2),
        ("last byte", size - 1),
    ] {
        let case = format!("last log record: {what} flipped");
        on_a_copy(
            pristine.path(),
            |dir| flip_byte(&dir.join(&relative), at),
            |dir| expect_exactly(dir, &model, &prefix(&model, 39), &dir.join(&relative), &case),
        );
    }
    // The log cut anywhere: the whole records before the cut survive.
    for (keep, cut) in [
        (39, size - 1),
        (39, last + 4),
        (39, last),
        (20, records[20].0 + records[20].1 / 2),
        (20, records[20].0 + 3),
        (0, 5),
        (0, 0),
    ] {
        let case = format!("log cut to {cut} of {size} bytes");
        on_a_copy(
            pristine.path(),
            |dir| truncate(&dir.join(&relative), cut),
            |dir| expect_exactly(dir, &model, &prefix(&model, keep), &dir.join(&relative), &case),
        );
    }
    // Zeros where the last record was (space allocated, never written).
    on_a_copy(
        pristine.path(),
        |dir| write_at(&dir.join(&relative), last, &vec![0u8; last_size as usize]),
        |dir| expect_exactly(dir, &model, &prefix(&model, 39), &dir.join(&relative), "zeroed tail"),
    );
    Ok(())
}
