//! Records that frame perfectly and say nonsense.
//!
//! The corruption matrix damages bytes, and the checksum of each record
//! catches it before anything decodes the payload. This test goes past the
//! checksum, as a bug in a writer, a tool that edits files, or a hostile
//! file would: it changes bytes of a record's payload (flips, a cut, bytes
//! added), then writes the record's length and checksum again, so the frame
//! is whole and only the decoding of the payload can object. Every record
//! of a manifest that holds every kind of edit (families added, altered with
//! a compression, dropped, truncated; tables added and removed) and every
//! record of both log segments is changed many ways.
//!
//! What must hold: no panic anywhere (open, read-only open, repair, reads,
//! `dump-manifest` and `dump-log`); a refused open is an error naming a file
//! of the store; an open that succeeds reads every family without a panic.
//!
//! A second test changes every byte of every record of a small log in the
//! compact format (three ways each), and asks more: the open is refused as
//! corruption at that record (or at the next, where a changed sequence
//! number leaves a gap), or it reads every other record exactly, and only
//! over records that are all write batches (none silently skipped).
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cellar_engine::{
    inspect, Compression, Error, FamilyOptions, ReadOnlyStore, RowRange, Store, StoreOptions, SyncPolicy,
};
use cellar_testkit::dirs::{copy_store, scratch};
use cellar_testkit::rng::SplitMix;

fn options() -> StoreOptions {
    let family = FamilyOptions::default().compaction_trigger(0).block_size(256);
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("f", family.clone())
        .family_with("z", family.clone())
        .family_with("d", family.clone())
        .family_with("t", family.memtable_max_entries(6))
}

/// Every kind of manifest edit, and two log segments: the older one still
/// needed by `f`, whose last writes are only in the log.
fn build(dir: &Path) {
    let store = Store::open(dir, options()).unwrap();
    for i in 0..8 {
        for family in ["f", "z", "d", "t"] {
            store
                .put_at(family, format!("r{i}"), "c", i, format!("{family}{i}-value"))
                .unwrap();
        }
        if i == 3 {
            store.flush_family("z").unwrap();
            store.flush_family("d").unwrap();
        }
    }
    store
        .alter_family(
            "z",
            FamilyOptions::default().compression(Compression::Zstd { level: 3 }),
        )
        .unwrap();
    store.flush_family("z").unwrap();
    store.compact("z").unwrap();
    store.drop_family("d").unwrap();
    store.truncate_family("t").unwrap();
    store.delete_row("f", "r1").unwrap();
    store.put("t", "after", "c", "truncate").unwrap();
}

/// `(offset, payload)` of every frame of a log-format file.
fn frames(bytes: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at, bytes[at + 8..at + 8 + length].to_vec()));
        at += 8 + length;
    }
    assert_eq!(at, bytes.len());
    out
}

/// One record framed as the log writes it: masked CRC-32 of the length and
/// the payload, the length, the payload.
fn frame(payload: &[u8]) -> Vec<u8> {
    let length = (payload.len() as u32).to_le_bytes();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&length);
    hasher.update(payload);
    let crc = hasher.finalize().rotate_right(15).wrapping_add(0xa282_ead8);
    let mut out = crc.to_le_bytes().to_vec();
    out.extend_from_slice(&length);
    out.extend_from_slice(payload);
    out
}

/// A changed payload: a few bytes flipped or set, a cut, or bytes added.
fn mutate(payload: &[u8], rng: &mut SplitMix) -> Vec<u8> {
    let mut out = payload.to_vec();
    match rng.below(6) {
        0..=2 if !out.is_empty() => {
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(out.len());
                out[at] = if rng.below(2) == 0 {
                    out[at] ^ (1 << rng.below(8))
                } else {
                    rng.next_u64() as u8
                };
            }
        }
        3 if !out.is_empty() => out.truncate(rng.below(out.len())),
        4 => {
            let at = rng.below(out.len() + 1);
            let added: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next_u64() as u8).collect();
            out.splice(at..at, added);
        }
        _ => {
            // A varint made huge: length and count fields are varints.
            if !out.is_empty() {
                let at = rng.below(out.len());
                out[at] = 0xff;
                if at + 1 < out.len() {
                    out[at + 1] = 0xff;
                }
            }
        }
    }
    out
}

/// Reads every family of an opened store, every row, without a panic (an
/// error is fine: the store may have opened on a record that lies).
fn read_all(store: &Store) {
    for family in store.families() {
        if let Ok(scan) = store.scan(&family, &RowRange::all()) {
            for row in scan {
                if row.is_err() {
                    break;
                }
            }
        }
    }
    let _ = store.verify();
}

/// What one changed store did.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    refused: usize,
    opened: usize,
    panics: Vec<String>,
}

/// Runs every check on the store in `dir` (a copy with one changed record
/// in `file`), catching panics into `tally`.
fn check(dir: &Path, file: &Path, case: &str, tally: &mut Tally) {
    tally.cases += 1;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _ = inspect::dump_manifest(&dir.join(std::fs::read_to_string(dir.join("CURRENT")).unwrap().trim_end()));
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "log") {
                let _ = inspect::dump_log(&path);
            }
        }
        if let Ok(reader) = ReadOnlyStore::open(dir) {
            for family in reader.families() {
                if let Ok(scan) = reader.snapshot().scan(&family, &RowRange::all()) {
                    for row in scan {
                        if row.is_err() {
                            break;
                        }
                    }
                }
            }
        }
        match Store::open(dir, StoreOptions::default().sync(SyncPolicy::Never)) {
            Ok(store) => {
                read_all(&store);
                true
            }
            Err(e) => {
                let named = match &e {
                    Error::Corruption { file, .. } | Error::UnsupportedVersion { file, .. } => file.starts_with(dir),
                    Error::Io { path, .. } => path.starts_with(dir),
                    _ => true,
                };
                assert!(named, "{case}: the open's error names no file of the store: {e}");
                let _ = file;
                if Store::repair(dir).is_ok() {
                    if let Ok(store) = Store::open(dir, StoreOptions::default().sync(SyncPolicy::Never)) {
                        read_all(&store);
                    }
                }
                false
            }
        }
    }));
    match outcome {
        Ok(true) => tally.opened += 1,
        Ok(false) => tally.refused += 1,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            tally.panics.push(format!("{case}: {what}"));
        }
    }
}

/// Changes each record of `file` (relative to the store) `per_record` ways.
fn attack(pristine: &Path, relative: &Path, per_record: usize, seed: u64, tally: &mut Tally) {
    let bytes = std::fs::read(pristine.join(relative)).unwrap();
    let records = frames(&bytes);
    let mut rng = SplitMix::new(seed);
    for (index, (offset, payload)) in records.iter().enumerate() {
        for attempt in 0..per_record {
            let changed = mutate(payload, &mut rng);
            let mut out = bytes[..*offset].to_vec();
            out.extend_from_slice(&frame(&changed));
            out.extend_from_slice(&bytes[offset + 8 + payload.len()..]);
            let copy = scratch();
            copy_store(pristine, copy.path());
            let path: PathBuf = copy.path().join(relative);
            std::fs::write(&path, out).unwrap();
            let case = format!("{} record {index} at {offset}, change {attempt}", relative.display());
            check(copy.path(), &path, &case, tally);
        }
    }
}

fn per_record() -> usize {
    std::env::var("CELLAR_HOSTILE_PER_RECORD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
}

#[test]
fn records_that_frame_well_and_decode_to_nonsense_never_panic() {
    let pristine = scratch();
    build(pristine.path());
    let current = std::fs::read_to_string(pristine.path().join("CURRENT")).unwrap();
    let mut files = vec![PathBuf::from(current.trim_end())];
    let mut logs: Vec<PathBuf> = std::fs::read_dir(pristine.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log") && std::fs::metadata(p).unwrap().len() > 0)
        .map(|p| PathBuf::from(p.file_name().unwrap()))
        .collect();
    logs.sort();
    assert!(!logs.is_empty(), "the fixture has log records");
    files.extend(logs);
    let mut tally = Tally::default();
    for (i, relative) in files.iter().enumerate() {
        attack(pristine.path(), relative, per_record(), 0xC0DE + i as u64, &mut tally);
    }
    println!(
        "{} records changed behind a good checksum: {} opens refused with an error naming a store file, {} opened; \
         {} panics",
        tally.cases,
        tally.refused,
        tally.opened,
        tally.panics.len()
    );
    assert!(tally.panics.is_empty(), "{:#?}", tally.panics);
}

/// The log of [`every_flip_of_a_compact_record_is_refused_at_it_or_leaves_the_others`]:
/// record `k` writes only row `r<k>` (and the row deletion row `zz`), each
/// cell its own column, so a change inside one record cannot reach a cell
/// of another.
fn small_log(dir: &Path) -> Vec<(&'static str, &'static str, &'static str)> {
    let store = Store::open(
        dir,
        StoreOptions::default().sync(SyncPolicy::Never).family("a").family("b"),
    )
    .unwrap();
    let mut spanning = cellar_engine::WriteBatch::new();
    spanning
        .put_at("a", "r0", "c0", 10, "v0")
        .put_at("a", "r0", "d0", 10, "w0")
        .put_at("b", "r0", "c0", 11, "x0")
        .put_at("a", "r0", "e0", 10, "");
    store.write(&spanning).unwrap();
    store.put("a", "r1", "c1", "v1").unwrap();
    let mut two = cellar_engine::WriteBatch::new();
    two.delete_at("a", "r2", "c2", 12).put_at("a", "r2", "d2", 13, "v2");
    store.write(&two).unwrap();
    store.delete_row_at("b", "zz", 5).unwrap();
    vec![
        ("a", "r0", "c0"),
        ("a", "r0", "d0"),
        ("b", "r0", "c0"),
        ("a", "r0", "e0"),
        ("a", "r1", "c1"),
        ("a", "r2", "d2"),
    ]
}

/// Every byte of every compact record of a small log, changed three ways
/// (low bit, high bit, all bits) with the frame's checksum made good again:
/// an open and a read-only open either refuse the log as corruption at that
/// record (or, for a changed sequence number, at the next one, where the
/// gap shows), or read every cell of every other record exactly as written.
/// Never a panic, never a torn tail, never a silently dropped record.
#[test]
fn every_flip_of_a_compact_record_is_refused_at_it_or_leaves_the_others() {
    let pristine = scratch();
    let cells = small_log(pristine.path());
    let log = std::fs::read_dir(pristine.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log") && std::fs::metadata(p).unwrap().len() > 0)
        .unwrap();
    let name = PathBuf::from(log.file_name().unwrap());
    let expected: Vec<_> = {
        let reader = ReadOnlyStore::open(pristine.path()).unwrap();
        cells
            .iter()
            .map(|&(f, r, c)| reader.snapshot().get(f, r, c).unwrap().map(|c| (c.timestamp, c.value)))
            .collect()
    };
    assert!(expected.iter().all(Option::is_some));
    // The record each cell came from.
    let record_of = [0, 0, 0, 0, 1, 2];
    let bytes = std::fs::read(&log).unwrap();
    let records = frames(&bytes);
    assert_eq!(records.len(), 4);
    let offsets: Vec<u64> = records.iter().map(|(at, _)| *at as u64).collect();
    let (mut refused, mut opened) = (0, 0);
    for (k, (offset, payload)) in records.iter().enumerate() {
        assert_eq!(payload[7], 2, "the compact format");
        for i in 0..payload.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut changed = payload.clone();
                changed[i] ^= mask;
                let mut out = bytes[..*offset].to_vec();
                out.extend_from_slice(&frame(&changed));
                out.extend_from_slice(&bytes[offset + 8 + payload.len()..]);
                let copy = scratch();
                copy_store(pristine.path(), copy.path());
                std::fs::write(copy.path().join(&name), out).unwrap();
                let case = format!("record {k}, byte {i}, mask {mask:#04x}");
                let dump = inspect::dump_log(&copy.path().join(&name)).unwrap();
                let read_only = ReadOnlyStore::open(copy.path()).map(|r| r.snapshot());
                let writable = Store::open(copy.path(), StoreOptions::default()).map(|s| s.snapshot());
                match (read_only, writable) {
                    (Ok(a), Ok(b)) => {
                        opened += 1;
                        // Opened over every record: each one is a batch.
                        let problems: Vec<_> = dump
                            .records
                            .iter()
                            .filter_map(|r| r.batch.as_ref().err().cloned())
                            .collect();
                        assert_eq!((dump.records.len(), problems), (4, vec![]), "{case}");
                        for (j, &(f, r, c)) in cells.iter().enumerate() {
                            if record_of[j] == k {
                                continue;
                            }
                            for snapshot in [&a, &b] {
                                let got = snapshot.get(f, r, c).unwrap().map(|c| (c.timestamp, c.value));
                                assert_eq!(got, expected[j], "{case}: {f}/{r}/{c}");
                            }
                        }
                    }
                    (Err(a), Err(b)) => {
                        refused += 1;
                        for e in [a, b] {
                            match e {
                                Error::Corruption { file, offset: at, what } => {
                                    assert_eq!(file, copy.path().join(&name), "{case}: {what}");
                                    let at_it = at == offsets[k] && what.starts_with("log record is not a write batch");
                                    let gap = what.starts_with("records are missing")
                                        && (at == offsets[k] || offsets.get(k + 1) == Some(&at));
                                    let family = what.starts_with("log names unknown family") && at == offsets[k];
                                    assert!(at_it || gap || family, "{case}: at {at}: {what}");
                                }
                                other => panic!("{case}: {other}"),
                            }
                        }
                    }
                    (a, b) => panic!("{case}: read-only {:?}, open {:?}", a.err(), b.err()),
                }
            }
        }
    }
    // README's Reliability table quotes this line.
    let line = format!(
        "{refused} changed records refused as corruption at them (or at the next, for a changed sequence number), \
         {opened} read with every other record intact"
    );
    println!("{line}");
    assert!(refused > 0 && opened > 0);
    cellar_testkit::readme::assert_quoted(&line);
}
