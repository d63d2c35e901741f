//! Table blocks that pass their checksum and hold nonsense.
//!
//! The corruption matrix flips bytes, and each block's checksum catches the
//! flip before anything decodes the block. This test goes past the checksum:
//! it changes a block's bytes (or the codec its trailer names) and writes the
//! trailer's checksum again, so only the decoding can object: a compressed
//! block whose length header asks for gigabytes, an LZ4 block or Zstandard
//! frame that decodes to garbage, a raw block said to be compressed and the
//! other way round, an index whose handles point anywhere, a filter or
//! properties block of random bytes. Tables stored raw, with LZ4 and with
//! Zstandard are all attacked.
//!
//! What must hold: no panic (open, point reads, scans, `verify`, a read-only
//! open, repair); an error is a corruption naming the table (or the store's
//! folder, for repair's report).
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cellar_engine::{Compression, Error, FamilyOptions, ReadOnlyStore, RowRange, Store, StoreOptions, SyncPolicy};
use cellar_sstable::{BlockKind, Table, BLOCK_TRAILER_LEN};
use cellar_testkit::dirs::{copy_store, scratch};
use cellar_testkit::rng::SplitMix;

fn options(compression: Compression) -> StoreOptions {
    StoreOptions::default().sync(SyncPolicy::Never).family_with(
        "f",
        FamilyOptions::default()
            .compression(compression)
            .block_size(256)
            .compaction_trigger(0),
    )
}

fn row(i: usize) -> String {
    format!("row{i:04}")
}

/// One flushed table of 200 rows, values that compress; its path relative
/// to the store.
fn build(dir: &Path, compression: Compression) -> PathBuf {
    let store = Store::open(dir, options(compression)).unwrap();
    for i in 0..200 {
        store
            .put_at("f", row(i), "c", 1, format!("value {i} {}", "abc".repeat(i % 13)))
            .unwrap();
    }
    store.flush().unwrap();
    drop(store);
    let folder = dir.join("f");
    let table = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    table.strip_prefix(dir).unwrap().to_path_buf()
}

/// The trailer checksum of a block: masked CRC-32 of its contents and kind byte.
fn checksum(contents: &[u8], kind: u8) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(contents);
    hasher.update(&[kind]);
    hasher.finalize().rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Changes the block at `offset` (`size` bytes of contents, then the
/// trailer) one way, chosen by `rng`, and writes its checksum again.
fn mutate(bytes: &mut [u8], offset: usize, size: usize, rng: &mut SplitMix) -> String {
    let contents = offset..offset + size;
    let kind_at = offset + size;
    let what = match rng.below(5) {
        0 | 1 => {
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let at = contents.start + rng.below(size);
                bytes[at] ^= 1 << rng.below(8);
            }
            format!("{flips} bits flipped")
        }
        2 => {
            // A huge varint where a compressed block keeps its length (and a
            // raw block its first entry's shared length).
            let n = size.min(5);
            bytes[offset..offset + n].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f][..n]);
            "a huge varint at the start".to_string()
        }
        3 => {
            let codec = [0u8, 1, 2, 3, 15][rng.below(5)];
            bytes[kind_at] = (bytes[kind_at] & 0x0f) | codec << 4;
            format!("codec bits {codec}")
        }
        _ => {
            for b in &mut bytes[contents.clone()] {
                *b = rng.next_u64() as u8;
            }
            "random contents".to_string()
        }
    };
    let crc = checksum(&bytes[contents], bytes[kind_at]);
    bytes[kind_at + 1..kind_at + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
    what
}

/// An error of a read: a corruption (or newer version) naming the table.
/// Unless `strict`, also a corruption that names no file (`<merged read>`
/// at offset 0), as merged reads reported an undecodable key before they
/// named its table: the never-panic test counts such errors, the strict
/// test fails on them.
fn names_the_table(e: &Error, table: &Path) -> bool {
    let strict = STRICT.with(|s| s.get());
    match e {
        Error::Corruption { file, .. } | Error::UnsupportedVersion { file, .. } if file == table => true,
        Error::Corruption { file, .. } if !strict && file == Path::new("<merged read>") => {
            UNNAMED.with(|n| n.set(n.get() + 1));
            true
        }
        _ => false,
    }
}

thread_local! {
    static STRICT: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    static UNNAMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Every read of the store in `dir`; panics (caught by the caller) on an
/// error that does not name `table`.
fn read_everything(dir: &Path, table: &Path, compression: Compression, case: &str) {
    match Store::open(dir, options(compression)) {
        Err(e) => assert!(names_the_table(&e, table), "{case}: open: {e}"),
        Ok(store) => {
            for i in 0..200 {
                if let Err(e) = store.get("f", row(i), "c") {
                    assert!(names_the_table(&e, table), "{case}: get: {e}");
                }
            }
            if let Ok(scan) = store.scan("f", &RowRange::all()) {
                for r in scan {
                    if let Err(e) = r {
                        assert!(names_the_table(&e, table), "{case}: scan: {e}");
                        break;
                    }
                }
            }
            if let Err(e) = store.verify() {
                assert!(names_the_table(&e, table), "{case}: verify: {e}");
            }
        }
    }
    if let Ok(reader) = ReadOnlyStore::open(dir) {
        for i in 0..200 {
            let _ = reader.snapshot().get("f", row(i), "c");
        }
    }
    let _ = Table::open(table).and_then(|t| t.verify().map(|_| ()));
    let _ = Store::repair(dir);
    if let Ok(store) = Store::open(dir, options(compression)) {
        if let Ok(scan) = store.scan("f", &RowRange::all()) {
            for r in scan {
                if r.is_err() {
                    break;
                }
            }
        }
    }
}

fn per_block() -> usize {
    std::env::var("CELLAR_HOSTILE_PER_BLOCK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
}

#[test]
fn blocks_that_pass_their_checksum_and_decode_to_nonsense_never_panic() {
    STRICT.with(|s| s.set(false));
    attack_every_block();
}

/// A scan that meets an entry whose key does not decode (a block that
/// passes its checksum and decompresses to nonsense, e.g. one Zstandard
/// frame with 3 bits flipped) names the table file and the block: the merge
/// knows which cursor holds the entry, and the cursor its table and block
/// (`MergeIterator::undecodable_key`). It used to report `corruption in
/// <merged read> at offset 0`.
#[test]
fn every_error_of_a_block_that_decodes_to_nonsense_names_the_table() {
    attack_every_block();
}

fn attack_every_block() {
    let mut panics = Vec::new();
    let mut cases = 0;
    for (seed, compression) in [Compression::None, Compression::Lz4, Compression::Zstd { level: 3 }]
        .into_iter()
        .enumerate()
    {
        let pristine = scratch();
        let relative = build(pristine.path(), compression);
        let blocks = Table::open(&pristine.path().join(&relative)).unwrap().blocks().unwrap();
        let pristine_bytes = std::fs::read(pristine.path().join(&relative)).unwrap();
        let mut rng = SplitMix::new(seed as u64 + 7);
        for block in &blocks {
            // Every index, filter and properties block; every third data block.
            if block.kind == BlockKind::Data && (block.handle.offset / 256) % 3 != 0 {
                continue;
            }
            for _ in 0..per_block() {
                let mut bytes = pristine_bytes.clone();
                let what = mutate(
                    &mut bytes,
                    block.handle.offset as usize,
                    block.handle.size as usize,
                    &mut rng,
                );
                let case = format!(
                    "{compression:?}: {:?} block at {} ({}): {what}",
                    block.kind, block.handle.offset, block.codec
                );
                let copy = scratch();
                copy_store(pristine.path(), copy.path());
                let table = copy.path().join(&relative);
                std::fs::write(&table, &bytes).unwrap();
                cases += 1;
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    read_everything(copy.path(), &table, compression, &case)
                }));
                if let Err(panic) = outcome {
                    let what = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    panics.push(format!("{case}: {what}"));
                }
            }
        }
    }
    println!(
        "{cases} blocks changed behind a good checksum; {} panics; {} errors named no file",
        panics.len(),
        UNNAMED.with(|n| n.get())
    );
    assert!(cases > 50, "{cases}");
    assert!(panics.is_empty(), "{:#?}", panics);
}

/// The table fixture stored raw, with one key's kind byte (the last byte of
/// its suffix) made one no writer writes, and the block's checksum written
/// again. Returns the store, the damaged row, the table, and the offset of
/// the damaged block.
fn a_key_of_no_kind() -> (tempfile::TempDir, String, PathBuf, u64) {
    let dir = scratch();
    let relative = build(dir.path(), Compression::None);
    let path = dir.path().join(&relative);
    let mut bytes = std::fs::read(&path).unwrap();
    // A key stored whole (the first of a restart interval): row, terminator,
    // column, terminator, then 16 bytes of suffix.
    let (row, at) = (0..200)
        .find_map(|i| {
            let whole = [row(i).as_bytes(), b"\x00\x01c\x00\x01"].concat();
            bytes
                .windows(whole.len())
                .position(|w| w == whole)
                .map(|p| (row(i), p + whole.len()))
        })
        .unwrap();
    bytes[at + 15] = 0x80; // the stored tag is inverted: kind 0x7f
    let start = write_resealed(&path, bytes, at);
    (dir, row, path, start)
}

/// Writes `bytes` (table `path`'s, changed at `at`) back with the checksum
/// of the data block holding `at` computed again, so the change reads as
/// what it is and not as a damaged block. Returns the block's offset.
fn write_resealed(path: &Path, mut bytes: Vec<u8>, at: usize) -> u64 {
    let blocks = Table::open(path).unwrap().blocks().unwrap();
    let block = blocks
        .iter()
        .find(|b| (b.handle.offset as usize..(b.handle.offset + b.handle.size) as usize).contains(&at))
        .unwrap();
    let (start, end) = (
        block.handle.offset as usize,
        (block.handle.offset + block.handle.size) as usize,
    );
    let crc = checksum(&bytes[start..end], bytes[end]);
    bytes[end + 1..end + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
    start as u64
}

/// A key that does not decode is corruption naming its table, for a point
/// read, a row read and a scan alike. (The visibility rule used to judge
/// such a key hidden, and reads answered "no such cell" or left the row out
/// of a scan: a silent wrong answer where the damage is plain to see.)
#[test]
fn a_key_that_does_not_decode_is_corruption_not_a_missing_cell() {
    let (dir, row, table, _) = a_key_of_no_kind();
    let store = Store::open(dir.path(), options(Compression::None)).unwrap();
    match store.get("f", &row, "c") {
        Err(e) => assert!(names_the_table(&e, &table), "{e}"),
        Ok(cell) => panic!("{row}: a key that does not decode read as {cell:?}"),
    }
    match store.get_row("f", &row) {
        Err(e) => assert!(names_the_table(&e, &table), "{e}"),
        Ok(cells) => panic!("{row}: a row with a key that does not decode read as {cells:?}"),
    }
    let scanned: Result<Vec<_>, _> = store.scan("f", &RowRange::all()).unwrap().collect();
    match scanned {
        Err(e) => assert!(names_the_table(&e, &table), "{e}"),
        Ok(rows) => panic!("a scan over a key that does not decode read {} rows", rows.len()),
    }
}

/// A compaction that meets a key that does not decode stops with a
/// corruption naming the table and the block, and installs nothing: the
/// damaged table stays as it was, and no output is left behind. (It used to
/// drop such an entry when its row did not decode, or fail naming only the
/// family's folder.) The statistics, which read every entry, say the same.
#[test]
fn a_compaction_over_a_key_that_does_not_decode_fails_naming_the_table_and_keeps_it() {
    let (dir, _, table, block) = a_key_of_no_kind();
    let store = Store::open(dir.path(), options(Compression::None)).unwrap();
    let before = std::fs::read(&table).unwrap();
    let names_the_block =
        |e: &Error| matches!(e, Error::Corruption { file, offset, .. } if *file == table && *offset == block);
    match store.compact("f") {
        Err(e) => assert!(names_the_block(&e), "{e}"),
        Ok(report) => panic!("a compaction over a key that does not decode wrote {report:?}"),
    }
    match store.stats() {
        Err(e) => assert!(names_the_block(&e), "{e}"),
        Ok(stats) => panic!("statistics over a key that does not decode: {stats:?}"),
    }
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path().join("f"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files, std::slice::from_ref(&table));
    assert_eq!(std::fs::read(&table).unwrap(), before);
    assert_eq!(store.tables().len(), 1);
}

/// A key that does not decode in the middle of a wide row's block (a
/// restart key, stored whole, inside the block: the cells before it are
/// walked in one loop inside the block, not entry by entry) is corruption
/// naming the table and the block, for a visited row and a visited scan
/// alike, as it is for the entry-by-entry walk.
#[test]
fn a_key_that_does_not_decode_inside_a_walked_block_names_the_table_and_the_block() {
    let dir = scratch();
    let store = Store::open(dir.path(), StoreOptions::default().sync(SyncPolicy::Never).family("f")).unwrap();
    for c in 0..40 {
        store.put_at("f", "wide", format!("c{c:02}"), 1, "v").unwrap();
    }
    store.flush().unwrap();
    drop(store);
    let table = std::fs::read_dir(dir.path().join("f"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    // The 17th key starts the second restart interval: its body is stored
    // whole, then its trailer as XORs against the block's first key (see
    // `cellar_sstable`'s `block/trailer.rs`): a head of 1 (the same
    // timestamp, the sequence word changed), then that word's XOR, whose
    // low byte (the kind's) is 0, so its first varint byte is 0x80. Its 7
    // low bits set, the kind is one no writer writes.
    let whole = b"wide\x00\x01c16\x00\x01";
    let at = bytes.windows(whole.len()).position(|w| w == whole).unwrap() + whole.len();
    assert_eq!((bytes[at], bytes[at + 1]), (0x01, 0x80));
    bytes[at + 1] = 0xff;
    let start = write_resealed(&table, bytes, at);

    let store = Store::open(dir.path(), StoreOptions::default().sync(SyncPolicy::Never).family("f")).unwrap();
    let names_the_block =
        |e: &Error| matches!(e, Error::Corruption { file, offset, .. } if *file == table && *offset == start);
    let mut lent = 0;
    match store.visit_row("f", "wide", |_| lent += 1) {
        Err(e) => assert!(names_the_block(&e), "{e}"),
        Ok(n) => panic!("a row with a key that does not decode lent {n} cells"),
    }
    assert_eq!(lent, 16, "the cells before the damaged one");
    let mut scan = store.scan("f", &RowRange::all()).unwrap();
    match scan.visit_row(|_| {}) {
        Err(e) => assert!(names_the_block(&e), "{e}"),
        Ok(more) => panic!("a scan over a key that does not decode visited a row ({more})"),
    }
}
