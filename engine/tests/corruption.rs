//! The corruption matrix: for every kind of file a store keeps (table data,
//! index, filter and properties blocks, table footer, manifest, every log
//! segment) flip bytes, and separately truncate, then open the store and
//! read everything.
//!
//! What must happen: a clear `Error::Corruption` naming the damaged file (or
//! `Error::UnsupportedVersion` for a footer claiming a newer format), or
//! exactly the data a crash at that point would leave (the newest log
//! segment only: its end is where a crash cuts). Never a panic, never a
//! wrong value, and never a file deleted or changed by an open that fails.
//! For the manifest and the log, every single byte is flipped and the file
//! is cut at every offset; after each open that fails, `Store::repair` must
//! bring back every row a table still holds and every log record the damage
//! did not touch.
//!
//! Each case damages a fresh copy of a pristine store, so the cases are
//! independent. The manifest and log cases run in a memory file system when
//! there is one (`/dev/shm`): they are about bytes, not about syncs, and
//! thousands of opens and repairs would otherwise spend minutes in fsync.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use cellar_engine::{Compression, Error, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy, WriteBatch};
use cellar_sstable::{BlockKind, Codec, Table, FOOTER_LEN, FORMAT_VERSION};
use cellar_testkit::dirs::{copy_store, scratch};

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
fn expect_table_damage_detected(dir: &Path, family: &FamilyOptions, model: &Model, table: &Path, case: &str) {
    match Store::open(dir, options(family.clone())) {
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

/// The table fixture's family, its data blocks stored raw, as LZ4 blocks and
/// as Zstandard frames: damage must be caught before a decompressor sees it.
fn table_families() -> Vec<FamilyOptions> {
    [Compression::None, Compression::Lz4, Compression::Zstd { level: 3 }]
        .into_iter()
        .map(|c| table_family().compression(c))
        .collect()
}

/// A store whose family holds one flushed table of 300 rows (many data
/// blocks, a filter, properties, an index). Returns the model and the table's
/// path relative to the store folder.
fn table_store(dir: &Path, family: &FamilyOptions) -> (Model, PathBuf) {
    let store = Store::open(dir, options(family.clone())).unwrap();
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
    copy_store(pristine, copy.path());
    damage(copy.path());
    check(copy.path());
}

// ------------------------------------------------------------------ tables

#[test]
fn damaged_table_blocks_are_reported_as_corruption_of_the_table() -> TestResult {
    for family in table_families() {
        damaged_table_blocks_are_reported_as_corruption_of_the_table_with(family)?;
    }
    Ok(())
}

fn damaged_table_blocks_are_reported_as_corruption_of_the_table_with(family: FamilyOptions) -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path(), &family);
    let blocks = Table::open(&pristine.path().join(&relative))?.blocks()?;
    let data_blocks = blocks.iter().filter(|b| b.kind == BlockKind::Data).count();
    assert!(data_blocks > 5, "the fixture has many data blocks ({data_blocks})");
    let compressed = blocks.iter().filter(|b| b.codec != Codec::None).count();
    if family.compression != Compression::None {
        assert!(
            compressed > data_blocks / 2,
            "{:?}: {compressed} of {data_blocks} data blocks stored compressed",
            family.compression
        );
    }
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
                let case = format!(
                    "{:?}: {kind:?} block {pick} at {}: {what} flipped",
                    family.compression, handle.offset
                );
                on_a_copy(
                    pristine.path(),
                    |dir| flip_byte(&dir.join(&relative), offset),
                    |dir| expect_table_damage_detected(dir, &family, &model, &dir.join(&relative), &case),
                );
            }
        }
    }
    Ok(())
}

#[test]
fn damaged_table_footer_is_corruption_and_a_newer_version_is_unsupported() -> TestResult {
    for family in table_families() {
        damaged_table_footer_is_corruption_and_a_newer_version_is_unsupported_with(family)?;
    }
    Ok(())
}

fn damaged_table_footer_is_corruption_and_a_newer_version_is_unsupported_with(family: FamilyOptions) -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path(), &family);
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
            |dir| expect_table_damage_detected(dir, &family, &model, &dir.join(&relative), &case),
        );
    }
    // Version 0 is not a version: corruption.
    on_a_copy(
        pristine.path(),
        |dir| write_at(&dir.join(&relative), footer + 60, &0u32.to_le_bytes()),
        |dir| expect_table_damage_detected(dir, &family, &model, &dir.join(&relative), "footer version 0"),
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
    for family in table_families() {
        truncated_table_is_corruption_of_the_table_with(family)?;
    }
    Ok(())
}

fn truncated_table_is_corruption_of_the_table_with(family: FamilyOptions) -> TestResult {
    let pristine = tempfile::tempdir()?;
    let (model, relative) = table_store(pristine.path(), &family);
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
            |dir| expect_table_damage_detected(dir, &family, &model, &dir.join(&relative), &case),
        );
    }
    Ok(())
}

/// A leveled family after background compactions (files merged down and
/// moved whole): every table file the manifest lists, removed in turn, is
/// reported by a writable and a read-only open as a corruption naming it,
/// and the open that fails deletes and changes nothing. A compaction's edit
/// that names a file the disk lacks is never quietly dropped.
#[test]
fn a_listed_table_file_that_is_missing_is_reported_and_the_open_changes_nothing() -> TestResult {
    let pristine = scratch();
    let family = FamilyOptions::default()
        .compaction(cellar_engine::Compaction::Leveled {
            base_bytes: 4096,
            multiplier: 2,
        })
        .compaction_trigger(2)
        .memtable_max_entries(40)
        .target_file_entries(30);
    let tables = {
        let store = Store::open(pristine.path(), options(family.clone()))?;
        for i in 0..400 {
            store.put(FAMILY, row(i * 7 % 211), "c", value(i))?;
        }
        store.flush()?;
        store.wait_for_background_work()?;
        store.tables()
    };
    assert!(
        tables.iter().map(|t| t.level).max() > Some(1) && tables.len() > 3,
        "compactions formed levels: {tables:?}"
    );
    for table in &tables {
        let relative = table.path.strip_prefix(pristine.path())?.to_path_buf();
        on_a_copy(
            pristine.path(),
            |dir| std::fs::remove_file(dir.join(&relative)).unwrap(),
            |dir| {
                let missing = dir.join(&relative);
                let before = file_contents(dir);
                let e = Store::open(dir, options(family.clone())).err();
                assert!(
                    e.as_ref().is_some_and(|e| is_corruption_of(e, &missing)),
                    "{}: the open gave {e:?}",
                    relative.display()
                );
                let e = cellar_engine::ReadOnlyStore::open(dir).err();
                assert!(
                    e.as_ref().is_some_and(|e| is_corruption_of(e, &missing)),
                    "{}: the read-only open gave {e:?}",
                    relative.display()
                );
                assert!(
                    file_contents(dir) == before,
                    "{}: a failed open changed files",
                    relative.display()
                );
            },
        );
    }
    Ok(())
}

// ------------------------------------------------ manifest and log matrix

/// Every file under `dir` but `LOCK`, with its bytes.
fn file_contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.file_name().unwrap() != "LOCK" {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What a store holds: `(family, row) -> value` of column `c`.
type Contents = BTreeMap<(String, String), String>;

fn contents(store: &Store, families: &[&str]) -> Contents {
    let mut out = Contents::new();
    for family in families {
        for row in store.scan(family, &RowRange::all()).unwrap() {
            let row = row.unwrap();
            assert_eq!(row.cells.len(), 1);
            out.insert(
                (family.to_string(), String::from_utf8_lossy(&row.key).into_owned()),
                String::from_utf8_lossy(&row.cells[0].value).into_owned(),
            );
        }
    }
    out
}

/// The record (offset, length) of `records` that holds byte `at`, or the
/// one that starts at `at`, or `None` past the last.
fn record_at(records: &[(u64, u64)], at: u64) -> Option<(u64, u64)> {
    records.iter().copied().find(|&(offset, size)| at < offset + size)
}

/// One way to damage a file: flip the byte at an offset, or cut the file there.
#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip(u64),
    Cut(u64),
}

impl Damage {
    /// Every flip and every cut of a file of `len` bytes.
    fn all(len: u64) -> impl Iterator<Item = Damage> {
        (0..len).map(Damage::Flip).chain((0..len).map(Damage::Cut))
    }

    fn apply(self, path: &Path) {
        match self {
            Damage::Flip(at) => flip_byte(path, at),
            Damage::Cut(at) => truncate(path, at),
        }
    }

    fn at(self) -> u64 {
        match self {
            Damage::Flip(at) | Damage::Cut(at) => at,
        }
    }
}

/// Tallies of a matrix, printed at its end (README's Reliability table
/// quotes them).
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    corruption: usize,
    opened_exactly: usize,
    repaired_rows: usize,
    repair_expected_rows: usize,
}

/// Checks that a failed open named `file` at `offset` and left every file as
/// it was.
fn expect_corruption_at(
    result: Result<Store, Error>,
    file: &Path,
    offset: u64,
    before: &BTreeMap<PathBuf, Vec<u8>>,
    dir: &Path,
    case: &str,
) {
    match result {
        Err(Error::Corruption {
            file: f,
            offset: o,
            what,
        }) => {
            assert_eq!(f, file, "{case}: {what}");
            assert_eq!(o, offset, "{case}: {what}");
        }
        Err(other) => panic!("{case}: expected corruption of {}, got {other}", file.display()),
        Ok(_) => panic!("{case}: the store opened"),
    }
    assert!(file_contents(dir) == *before, "{case}: the failed open changed files");
}

/// Repairs the store in `dir`, opens it, and checks it holds exactly `expected`.
fn repair_and_expect(
    dir: &Path,
    options: StoreOptions,
    families: &[&str],
    expected: &Contents,
    tally: &mut Tally,
    case: &str,
) {
    let report = Store::repair(dir).unwrap_or_else(|e| panic!("{case}: repair failed: {e}"));
    let store = Store::open(dir, options).unwrap_or_else(|e| panic!("{case}: open after repair: {e} ({report:?})"));
    let held = contents(&store, families);
    assert!(
        held == *expected,
        "{case}: after repair the store holds {held:?}, expected {expected:?}; {report:?}"
    );
    tally.repaired_rows += held.len();
    tally.repair_expected_rows += expected.len();
}

/// Three flushes of ten rows: a manifest of five records (the snapshot, the
/// family's creation, one per flush), every row in a table.
fn manifest_store(dir: &Path) -> Contents {
    let store = Store::open(dir, options(table_family())).unwrap();
    let mut written = Contents::new();
    for part in 0..3 {
        for i in part * 10..(part + 1) * 10 {
            store.put_at(FAMILY, row(i), "c", 1, value(i)).unwrap();
            written.insert((FAMILY.to_string(), row(i)), value(i));
        }
        store.flush().unwrap();
    }
    written
}

fn manifest_of(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.trim_end())
}

/// Every flipped byte and every cut of the manifest: the open fails with a
/// corruption naming the manifest at the first record the damage touched
/// (a damaged last record reads as a torn write, but the table it listed
/// proves it was acknowledged), changing nothing; then repair brings back
/// every row, all of which are in tables.
#[test]
fn every_damage_to_the_manifest_is_reported_at_its_record_and_repair_restores_every_row() -> TestResult {
    let pristine = scratch();
    let written = manifest_store(pristine.path());
    let manifest = manifest_of(pristine.path());
    let records = frames(&manifest);
    assert_eq!(records.len(), 5, "{records:?}");
    let mut tally = Tally::default();
    for damage in Damage::all(len(&manifest)) {
        let case = format!("manifest {damage:?}");
        let copy = scratch();
        copy_store(pristine.path(), copy.path());
        let path = manifest_of(copy.path());
        damage.apply(&path);
        let before = file_contents(copy.path());
        let (record, _) = record_at(&records, damage.at()).unwrap();
        expect_corruption_at(
            Store::open(copy.path(), options(table_family())),
            &path,
            record,
            &before,
            copy.path(),
            &case,
        );
        tally.cases += 1;
        tally.corruption += 1;
        repair_and_expect(
            copy.path(),
            options(table_family()),
            &[FAMILY],
            &written,
            &mut tally,
            &case,
        );
    }
    // README's Reliability table quotes this line.
    let line = format!(
        "manifest damage matrix: {} cases (each of its {} bytes flipped, and the file cut at each offset): \
         {} opens fail with a corruption naming the manifest and the first damaged record's offset, changing no file; \
         repair after each brings back every row ({} of {} rows in all)",
        tally.cases,
        tally.cases / 2,
        tally.corruption,
        tally.repaired_rows,
        tally.repair_expected_rows
    );
    println!("{line}");
    cellar_testkit::readme::assert_quoted(&line);
    Ok(())
}

/// Two families: `t` flushes every four writes, `l` keeps everything in the
/// log. Six batches, each putting row i in both: the log moves to a second
/// segment after batch 4, which flushes `t`'s rows 0..4 to a table. So the
/// older segment holds batches 1..4, the newer one batches 5 and 6.
const LOG_FAMILIES: [&str; 2] = ["t", "l"];

fn log_options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with(
            "t",
            FamilyOptions::default().memtable_max_entries(4).compaction_trigger(0),
        )
        .family("l")
}

/// The rows batch `i` (from 0) writes.
fn batch_rows(i: usize) -> [((String, String), String); 2] {
    LOG_FAMILIES.map(|family| ((family.to_string(), row(i)), format!("{family}-{}", value(i))))
}

fn log_store(dir: &Path) -> Vec<PathBuf> {
    let store = Store::open(dir, log_options()).unwrap();
    for i in 0..6 {
        let mut batch = WriteBatch::new();
        for ((family, row), value) in batch_rows(i) {
            batch.put_at(&family, row, "c", 1, value);
        }
        store.write(&batch).unwrap();
    }
    store.wait_for_background_work().unwrap();
    drop(store);
    let segments: Vec<PathBuf> = files_with_suffix(dir, ".log")
        .into_iter()
        .filter(|p| len(p) > 0)
        .collect();
    assert_eq!(segments.len(), 2, "{segments:?}");
    assert_eq!(frames(&segments[0]).len(), 4);
    assert_eq!(frames(&segments[1]).len(), 2);
    assert_eq!(
        files_with_suffix(&dir.join("t"), ".sst").len(),
        1,
        "t's first four rows are in a table"
    );
    segments
}

/// The rows of batches `batches`, plus `t`'s rows 0..4, which its table holds.
fn rows_of(batches: impl IntoIterator<Item = usize>) -> Contents {
    let mut out: Contents = (0..4).map(|i| batch_rows(i)[0].clone()).collect();
    out.extend(batches.into_iter().flat_map(batch_rows));
    out
}

/// Every flipped byte and every cut of each log segment. In the older
/// segment (synced when the newer one began) every damage is corruption at
/// the first record it touched; a cut at a record boundary too, found by the
/// sequence numbers that no longer follow. In the newest segment a damaged
/// last record, or any cut, is where a crash would have stopped: the store
/// opens with exactly the batches before it. Damage to a record followed by
/// a good one is corruption. After each failed open, repair brings back the
/// table's rows and every record the damage did not touch.
#[test]
fn every_damage_to_every_log_segment_is_reported_or_is_a_crash_and_repair_keeps_the_rest() -> TestResult {
    let pristine = scratch();
    let segments = log_store(pristine.path());
    let mut tally = Tally::default();
    for (index, segment) in segments.iter().enumerate() {
        let newest = index == segments.len() - 1;
        let relative = segment.strip_prefix(pristine.path()).unwrap().to_path_buf();
        let records = frames(segment);
        // Batches held by this segment, in order.
        let first_batch = if newest { 4 } else { 0 };
        for damage in Damage::all(len(segment)) {
            let case = format!("segment {index} {damage:?}");
            let copy = scratch();
            copy_store(pristine.path(), copy.path());
            let path = copy.path().join(&relative);
            damage.apply(&path);
            let before = file_contents(copy.path());
            let touched =
                record_at(&records, damage.at()).map(|(offset, _)| records.iter().position(|r| r.0 == offset).unwrap());
            let touched = touched.unwrap_or(records.len());
            // Records this damage leaves whole: all but the touched one for a
            // flip, those before the cut for a cut.
            let intact = |k: usize| match damage {
                Damage::Flip(_) => k != touched,
                Damage::Cut(_) => k < touched,
            };
            let last_touched = touched == records.len() - 1;
            // The one damage a crash cannot make: a length over the 256 MiB
            // record limit (an interrupted write leaves missing or zero
            // bytes, never new ones), whatever the record.
            let over_limit = match damage {
                Damage::Flip(at) => {
                    let bytes = std::fs::read(&path).unwrap();
                    let offset = records.get(touched).map_or(0, |r| r.0) as usize;
                    let length = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().unwrap());
                    (offset as u64 + 4..offset as u64 + 8).contains(&at) && length as usize > 256 << 20
                }
                Damage::Cut(_) => false,
            };
            let crash = newest && (matches!(damage, Damage::Cut(_)) || last_touched) && !over_limit;
            tally.cases += 1;
            if crash {
                let store = Store::open(copy.path(), log_options()).unwrap_or_else(|e| panic!("{case}: {e}"));
                let expected =
                    rows_of((0..4).chain((0..records.len()).filter(|&k| k < touched).map(|k| first_batch + k)));
                assert!(contents(&store, &LOG_FAMILIES) == expected, "{case}");
                tally.opened_exactly += 1;
                continue;
            }
            let offset = records.get(touched).map_or(len(&path), |r| r.0);
            expect_corruption_at(
                Store::open(copy.path(), log_options()),
                &path,
                offset,
                &before,
                copy.path(),
                &case,
            );
            tally.corruption += 1;
            let whole =
                (0..6).filter(|&b| b < first_batch || b >= first_batch + records.len() || intact(b - first_batch));
            repair_and_expect(
                copy.path(),
                log_options(),
                &LOG_FAMILIES,
                &rows_of(whole),
                &mut tally,
                &case,
            );
        }
    }
    // README's Reliability table quotes this line.
    let line = format!(
        "log damage matrix, {} segments: {} cases (each byte flipped, and each segment cut at each offset): \
         {} opens fail with a corruption naming the segment and the damaged record's offset, changing no file; \
         {} (damage a crash can leave at the end of the newest segment) open with exactly the batches before it; \
         repair after each failed open brings back every table row and every record the damage left whole \
         ({} of {} rows in all)",
        segments.len(),
        tally.cases,
        tally.corruption,
        tally.opened_exactly,
        tally.repaired_rows,
        tally.repair_expected_rows
    );
    println!("{line}");
    cellar_testkit::readme::assert_quoted(&line);
    Ok(())
}

/// With `salvage_log` the store opens with the batches before the damage,
/// and only those (a point in time: nothing after a lost write is applied);
/// the segments it could not use wait in `lost/`.
#[test]
fn salvage_keeps_the_batches_before_the_damage_and_moves_the_rest_to_lost() -> TestResult {
    let pristine = scratch();
    let segments = log_store(pristine.path());
    let relative = segments[0].strip_prefix(pristine.path())?.to_path_buf();
    let (second, _) = frames(&segments[0])[1];
    let copy = scratch();
    copy_store(pristine.path(), copy.path());
    flip_byte(&copy.path().join(&relative), second + 10);
    let mut salvage = log_options();
    salvage.salvage_log = true;
    let store = Store::open(copy.path(), salvage)?;
    assert!(contents(&store, &LOG_FAMILIES) == rows_of([0]));
    let mut lost: Vec<String> = std::fs::read_dir(copy.path().join("lost"))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    lost.sort();
    let expected: Vec<String> = segments
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(lost, expected);
    Ok(())
}

// ------------------------------------- manifest records of family changes

/// The families of the family-change fixture: `f` is left alone, `z` is
/// altered (to Zstandard: an options record of the version that holds a
/// compression), `d` is dropped, `t` truncated.
const ADMIN_FAMILIES: [&str; 4] = ["f", "z", "d", "t"];

fn admin_options() -> StoreOptions {
    let mut options = StoreOptions::default().sync(SyncPolicy::Always);
    for family in ADMIN_FAMILIES {
        options = options.family_with(family, table_family());
    }
    options
}

/// A store whose manifest holds every kind of family change: rows in all
/// four families, flushed; `z` altered to Zstandard, `d` dropped, `t`
/// truncated, each its own record; then rows 10..15 of `f`, `z` and `t`,
/// flushed, so the manifest's last records list tables (their files prove
/// those records were acknowledged). Returns what the store holds and the
/// offsets of the alter, drop and truncate records.
fn admin_manifest_store(dir: &Path) -> (Contents, Vec<u64>) {
    let store = Store::open(dir, admin_options()).unwrap();
    let mut held = Contents::new();
    for family in ADMIN_FAMILIES {
        for i in 0..10 {
            store.put_at(family, row(i), "c", 1, value(i)).unwrap();
            held.insert((family.to_string(), row(i)), value(i));
        }
    }
    store.flush().unwrap();
    let manifest = manifest_of(dir);
    let mut admin = Vec::new();
    let mut record = |change: &dyn Fn(&Store)| {
        let before = frames(&manifest).len();
        change(&store);
        let after = frames(&manifest);
        assert_eq!(after.len(), before + 1, "one record per family change");
        admin.push(after[before].0);
    };
    record(&|s| {
        s.alter_family("z", table_family().compression(Compression::Zstd { level: 3 }))
            .unwrap()
    });
    record(&|s| s.drop_family("d").unwrap());
    record(&|s| s.truncate_family("t").unwrap());
    held.retain(|(family, _), _| family != "d" && family != "t");
    for family in ["f", "z", "t"] {
        for i in 10..15 {
            store.put_at(family, row(i), "c", 1, value(i)).unwrap();
            held.insert((family.to_string(), row(i)), value(i));
        }
    }
    store.flush().unwrap();
    drop(store);
    assert_eq!(
        manifest_of(dir),
        manifest,
        "no rewrite: the records are where they were"
    );
    (held, admin)
}

/// The store in `dir` opened without declaring a family (so the open adds
/// none back), checked to hold exactly `expected`. Family `d` may be there
/// only if `repaired_drop` (repair rebuilt the manifest from a prefix that
/// ends before the drop's record: nothing left says it was dropped), and
/// then empty: its cells never come back. Returns whether it was there.
fn expect_admin_contents(dir: &Path, expected: &Contents, repaired_drop: bool, case: &str) -> bool {
    let store = Store::open(dir, StoreOptions::default().sync(SyncPolicy::Always))
        .unwrap_or_else(|e| panic!("{case}: open: {e}"));
    let mut families = store.families();
    families.sort();
    let dropped_back = families.iter().any(|f| f == "d");
    if dropped_back {
        assert!(repaired_drop, "{case}: the dropped family came back");
        assert_eq!(
            store.scan("d", &RowRange::all()).unwrap().count(),
            0,
            "{case}: a dropped cell came back"
        );
        families.retain(|f| f != "d");
    }
    assert_eq!(families, ["f", "t", "z"], "{case}: a family went");
    assert!(contents(&store, &["f", "z", "t"]) == *expected, "{case}");
    dropped_back
}

/// Every flipped byte and every cut of the records an alter, a drop and a
/// truncate write (and a flip in each byte of the record after each): the
/// open fails with a corruption naming the manifest at the first damaged
/// record, changing nothing; repair brings back every row that is still
/// in a table, and no dropped or truncated cell. (When the damage took the
/// drop's own record, repair cannot know of the drop: the family comes
/// back, empty.)
#[test]
fn damage_to_alter_drop_and_truncate_records_is_reported_at_its_record_and_repair_keeps_them_done() -> TestResult {
    let pristine = scratch();
    let (held, admin) = admin_manifest_store(pristine.path());
    expect_admin_contents(pristine.path(), &held, false, "the undamaged fixture");
    // `expect_admin_contents` opened (and so changed) the fixture: build a fresh one.
    let pristine = scratch();
    let (held, admin_again) = admin_manifest_store(pristine.path());
    assert_eq!(admin, admin_again);
    let manifest = manifest_of(pristine.path());
    let records = frames(&manifest);
    let mut damages = Vec::new();
    for &offset in &admin {
        let index = records.iter().position(|r| r.0 == offset).unwrap();
        let (start, size) = records[index];
        damages.extend((start..start + size).flat_map(|at| [Damage::Flip(at), Damage::Cut(at)]));
        let (next, next_size) = records[index + 1];
        damages.extend((next..next + next_size).map(Damage::Flip));
    }
    let mut tally = Tally::default();
    let mut dropped_back = 0;
    for damage in damages {
        let case = format!("manifest with family changes {damage:?}");
        let copy = scratch();
        copy_store(pristine.path(), copy.path());
        let path = manifest_of(copy.path());
        damage.apply(&path);
        let before = file_contents(copy.path());
        let (record, _) = record_at(&records, damage.at()).unwrap();
        expect_corruption_at(
            Store::open(copy.path(), StoreOptions::default().sync(SyncPolicy::Always)),
            &path,
            record,
            &before,
            copy.path(),
            &case,
        );
        tally.cases += 1;
        let report = Store::repair(copy.path()).unwrap_or_else(|e| panic!("{case}: repair failed: {e}"));
        // The drop's record is the second family change; damage at it or
        // before it leaves repair a manifest that never dropped `d`.
        let repaired_drop = record <= admin[1];
        if expect_admin_contents(
            copy.path(),
            &held,
            repaired_drop,
            &format!("{case}, repaired ({report:?})"),
        ) {
            dropped_back += 1;
        }
    }
    println!(
        "family change records: {} cases of damage, each a corruption at its record; repair after each keeps every row \
         and no dropped or truncated cell ({dropped_back} bring the dropped family back, empty: the damage took the record \
         of its drop)",
        tally.cases
    );
    Ok(())
}

// ------------------------------------------------------------------ CURRENT

/// Every flipped byte and every cut of `CURRENT`: a corruption naming
/// `CURRENT` at offset 0, nothing changed; repair finds the manifest.
#[test]
fn every_damage_to_current_is_corruption_of_current_and_repair_finds_the_manifest() -> TestResult {
    let pristine = scratch();
    let written = manifest_store(pristine.path());
    let current = pristine.path().join("CURRENT");
    let mut cases = 0;
    for damage in Damage::all(len(&current)) {
        let case = format!("CURRENT {damage:?}");
        let copy = scratch();
        copy_store(pristine.path(), copy.path());
        let path = copy.path().join("CURRENT");
        damage.apply(&path);
        let before = file_contents(copy.path());
        let result = Store::open(copy.path(), options(table_family()));
        if matches!(damage, Damage::Cut(0)) {
            // An empty CURRENT: still a store's folder, not a new store.
            assert!(result.is_err(), "{case}: opened");
        }
        expect_corruption_at(result, &path, 0, &before, copy.path(), &case);
        repair_and_expect(
            copy.path(),
            options(table_family()),
            &[FAMILY],
            &written,
            &mut Tally::default(),
            &case,
        );
        cases += 1;
    }
    assert_eq!(cases, 2 * len(&current));
    Ok(())
}

// ------------------------------------ log records of a dropped family

/// Families of the dropped-family log fixture: `d` is dropped, `l` keeps
/// everything in the log, `x` is flushed.
fn dropped_log_options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family("d")
        .family("l")
        .family("x")
}

/// Batches 0..4 put row i in `d`, `l` and `x`; `d` is dropped; a flush of
/// `x` moves the log to a second segment, which batches 4..6 (into `l` and
/// `x`) go to. The older segment, still needed by `l`, holds every write
/// `d` ever had. Returns the older segment, relative to the store.
fn dropped_log_store(dir: &Path) -> PathBuf {
    let store = Store::open(dir, dropped_log_options()).unwrap();
    for i in 0..6 {
        let families: &[&str] = if i < 4 { &["d", "l", "x"] } else { &["l", "x"] };
        let mut batch = WriteBatch::new();
        for family in families {
            batch.put_at(family, row(i), "c", 1, format!("{family}-{}", value(i)));
        }
        store.write(&batch).unwrap();
        if i == 3 {
            store.drop_family("d").unwrap();
            store.flush_family("x").unwrap();
        }
    }
    drop(store);
    let segments: Vec<PathBuf> = files_with_suffix(dir, ".log")
        .into_iter()
        .filter(|p| len(p) > 0)
        .collect();
    assert_eq!(segments.len(), 2, "{segments:?}");
    assert_eq!(frames(&segments[0]).len(), 4);
    segments[0].strip_prefix(dir).unwrap().to_path_buf()
}

/// What the dropped-family fixture holds when batch `lost` of the older
/// segment is lost (`None`: nothing lost).
fn dropped_log_rows(lost: Option<usize>) -> Contents {
    let mut out = Contents::new();
    for i in 0..6 {
        // `x`'s first four rows are in its table.
        out.insert(("x".to_string(), row(i)), format!("x-{}", value(i)));
        if Some(i) != lost {
            out.insert(("l".to_string(), row(i)), format!("l-{}", value(i)));
        }
    }
    out
}

/// A damaged record of an older segment is corruption even when the family
/// it wrote to was dropped (the damage hides which family that was); after
/// repair the dropped family's writes stay gone and every other intact
/// record is back.
#[test]
fn damage_to_log_records_of_a_dropped_family_is_corruption_and_repair_keeps_the_drop() -> TestResult {
    let pristine = scratch();
    let relative = dropped_log_store(pristine.path());
    {
        let store = Store::open(pristine.path(), dropped_log_options())?;
        let mut families = store.families();
        families.sort();
        assert_eq!(families, ["d", "l", "x"]);
        assert_eq!(
            store.scan("d", &RowRange::all())?.count(),
            0,
            "declared again: a new, empty family"
        );
    }
    let pristine = scratch();
    let relative_again = dropped_log_store(pristine.path());
    assert_eq!(relative, relative_again);
    let records = frames(&pristine.path().join(&relative));
    let mut cases = 0;
    for at in 0..len(&pristine.path().join(&relative)) {
        let case = format!("older segment with a dropped family's writes: byte {at} flipped");
        let copy = scratch();
        copy_store(pristine.path(), copy.path());
        let path = copy.path().join(&relative);
        flip_byte(&path, at);
        let before = file_contents(copy.path());
        let touched = records.iter().position(|&(o, l)| at < o + l).unwrap();
        let options = StoreOptions::default().sync(SyncPolicy::Always);
        expect_corruption_at(
            Store::open(copy.path(), options.clone()),
            &path,
            records[touched].0,
            &before,
            copy.path(),
            &case,
        );
        Store::repair(copy.path()).unwrap_or_else(|e| panic!("{case}: repair: {e}"));
        let store = Store::open(copy.path(), options).unwrap_or_else(|e| panic!("{case}: open after repair: {e}"));
        let mut families = store.families();
        families.sort();
        assert_eq!(families, ["l", "x"], "{case}: the dropped family came back");
        assert!(
            contents(&store, &["l", "x"]) == dropped_log_rows(Some(touched)),
            "{case}: after repair"
        );
        cases += 1;
    }
    assert!(cases > 100, "{cases}");
    Ok(())
}
