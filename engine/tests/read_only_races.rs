//! A read-only open beside a busy writer: it must see one moment of the
//! store, or retry, and never a torn view.
//!
//! The writer puts rows `r000000`, `r000001`, ... one at a time, in order,
//! while small memtables, a small log limit and an eager compaction trigger
//! keep flushes, log rotations, log deletions and compactions going. Every
//! moment of that store holds exactly a prefix of the rows. A reader that
//! opens while it runs must therefore see a prefix (no gap), at least as long
//! as the rows acknowledged before its open began. (The deterministic
//! interleaving of the worst case, a flush that deletes the log segment the
//! reader's manifest still needs, is the unit test
//! `a_read_only_open_racing_a_flush_that_deletes_its_log_segment_retries`.)
//!
//! Every read of the view works, the ones that walk whole table files
//! (statistics, the deletions an export writes) too, whatever the writer
//! deleted or renamed since the open.
//!
//! And an open beside such a writer succeeds. It once read the manifest,
//! then listed and read the log; a writer that flushed more often than an
//! attempt takes deleted a needed segment in that gap during every attempt,
//! and the open gave up with the error of its last attempt ("records are
//! missing", twice in about a thousand opens of the heavy test at the end).
//! Now an attempt holds every segment and table open before it reads the
//! manifest, so what the manifest needs stays readable.
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cellar_engine::{Error, FamilyOptions, ReadOnlyStore, RowRange, Store, StoreOptions, SyncPolicy};

fn busy() -> StoreOptions {
    let family = FamilyOptions::default()
        .memtable_max_entries(16)
        .compaction_trigger(2)
        .target_file_entries(40);
    StoreOptions {
        max_log_bytes: 4 << 10,
        ..StoreOptions::default().sync(SyncPolicy::Never).family_with("f", family)
    }
}

fn row(i: u64) -> String {
    format!("r{i:06}")
}

/// How many rows the writer puts: `default`, or `CELLAR_READ_ONLY_ROWS`.
fn rows_to_write(default: u64) -> u64 {
    std::env::var("CELLAR_READ_ONLY_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// What the reader's opens gave while the writer ran.
#[derive(Debug, Default)]
struct Opens {
    whole: u64,
    /// Opens that gave up, with the last error.
    gave_up: Vec<String>,
}

/// Opens the store read-only again and again while a writer puts `total`
/// rows, checking each view; then once more after the writer is done, which
/// must see every row.
fn open_beside_a_writer(total: u64) -> Opens {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path(), busy()).unwrap());
    let acknowledged = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, acknowledged, done) = (store.clone(), acknowledged.clone(), done.clone());
        std::thread::spawn(move || -> cellar_engine::Result<()> {
            for i in 0..total {
                store.put_at("f", row(i), "c", 1, format!("v{i}"))?;
                acknowledged.store(i + 1, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
            Ok(())
        })
    };
    let mut opens = Opens::default();
    let mut last = false;
    while !last {
        last = done.load(Ordering::SeqCst);
        let before = acknowledged.load(Ordering::SeqCst);
        let reader = match ReadOnlyStore::open(dir.path()) {
            Ok(reader) => reader,
            Err(e) => {
                assert!(!last, "the open after the writer finished failed: {e}");
                assert!(
                    matches!(e, Error::Corruption { .. } | Error::Io { .. }),
                    "an open gave up with {e}"
                );
                opens.gave_up.push(e.to_string());
                continue;
            }
        };
        let mut seen = 0u64;
        for r in reader.snapshot().scan("f", &RowRange::all()).unwrap() {
            let r = r.unwrap();
            assert_eq!(
                String::from_utf8_lossy(&r.key),
                row(seen),
                "a torn view: the store never held this row without the one before it"
            );
            seen += 1;
        }
        assert!(
            seen >= before,
            "sees {seen} rows, but {before} were acknowledged before the open began"
        );
        if last {
            assert_eq!(seen, total);
        }
        // The reads that walk whole files (statistics; the deletions an
        // export writes) read the same view, though the writer has since
        // compacted some of its tables away or renamed the pending ones.
        let live = reader.stats().unwrap().families[0].live_entries;
        assert_eq!(live, seen, "the statistics count the rows the scan saw");
        let deletions = cellar_engine::inspect::deletions(&reader.snapshot(), "f").unwrap();
        assert!(deletions.is_empty(), "{deletions:?}");
        opens.whole += 1;
    }
    writer.join().unwrap().unwrap();
    opens
}

#[test]
fn a_read_only_open_beside_a_flushing_compacting_writer_sees_a_whole_prefix() {
    let opens = open_beside_a_writer(rows_to_write(6000));
    println!(
        "{} opens saw a whole prefix; {} gave up after their retries",
        opens.whole,
        opens.gave_up.len()
    );
    assert!(opens.whole > 1, "{opens:?}");
}

#[test]
#[ignore = "heavy: 150 000 rows and about a thousand opens, minutes in a debug build; run with --ignored"]
fn a_read_only_open_beside_a_flushing_compacting_writer_never_gives_up() {
    // A store this large takes a debug build longer to read than the
    // writer takes between two flushes.
    let opens = open_beside_a_writer(rows_to_write(150_000));
    assert!(opens.gave_up.is_empty(), "{opens:?}");
}
