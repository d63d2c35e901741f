use cellar_engine::{ColumnRange, Compaction, FamilyOptions, RowRange, Settled, Store, StoreOptions};

#[test]
fn lesson_append_only_figures() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let opts = FamilyOptions::default()
        .memtable_max_entries(25_000)
        .compaction_trigger(0)
        .target_file_entries(25_000);
    let store = Store::open(dir.path(), StoreOptions::default().family_with("loans", opts))?;
    let n = 100_000u32;
    for i in 1..=n {
        store.put(
            "loans",
            format!("loan:{i}"),
            "loan",
            format!("book={} return=null", i % 5000),
        )?;
    }
    for i in 1..=n {
        if i % 5 < 2 {
            store.put(
                "loans",
                format!("loan:{i}"),
                "loan",
                format!("book={} return=2024-06-01", i % 5000),
            )?;
        }
    }
    for i in 1..=n {
        if i % 5 == 4 {
            store.delete("loans", format!("loan:{i}"), "loan")?;
        }
    }
    store.wait_for_background_work()?;
    let stats = store.stats()?;
    let f = stats.family("loans").expect("family loans");
    println!("{f:?}");
    assert_eq!(f.table_files, 6);
    assert_eq!(f.stored_entries, 160_000);
    assert_eq!(f.live_entries, 80_000);
    for (row, visits, found) in [
        ("loan:99996", 2, true),
        ("loan:2", 7, true),
        ("loan:99994", 1, false),
        ("loan:999999", 7, false),
    ] {
        let (cell, trace) = store.get_traced("loans", row, "loan")?;
        println!(
            "{row}: {:?}",
            trace
                .sources
                .iter()
                .map(|s| (s.settled, s.data_blocks, s.entries_examined))
                .collect::<Vec<_>>()
        );
        assert_eq!(trace.sources_visited(), visits, "{row}");
        assert_eq!(cell.is_some(), found, "{row}");
    }
    let (_, t) = store.get_traced("loans", "loan:999999", "loan")?;
    assert_eq!(t.data_blocks(), 0);
    let (rows, trace) = store.scan_traced("loans", &RowRange::all())?;
    assert_eq!(rows.len(), 80_000);
    assert_eq!(trace.entries_examined(), 160_000);
    let report = store.compact("loans")?;
    println!("{report:?}");
    let stats = store.stats()?;
    let f = stats.family("loans").expect("family loans");
    assert_eq!((f.table_files, f.stored_entries, f.live_entries), (4, 80_000, 80_000));
    let (rows, trace) = store.scan_traced("loans", &RowRange::all())?;
    assert_eq!((rows.len(), trace.entries_examined()), (80_000, 80_000));
    let _ = Settled::Filter;
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(
        store.get("loans", "loan:2", "loan")?.map(|c| c.value),
        Some("book=2 return=null".into())
    );
    assert_eq!(store.slice("loans", "loan:3", &ColumnRange::all())?.len(), 1);
    assert_eq!(store.slice("loans", "loan:4", &ColumnRange::all())?.len(), 0);
    Ok(())
}

/// A bottommost compaction writes every sequence number as 0. Writes made
/// after it still order correctly against the compacted cells: a later write
/// with the same timestamp replaces one, a deletion at that timestamp hides it.
#[test]
fn writes_after_a_compaction_that_zeroed_sequences_still_win_their_ties() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
    store.put_at("f", "r", "a", 100, "first")?;
    store.put_at("f", "r", "a", 100, "second")?; // same timestamp: replaces
    store.put_at("f", "r", "b", 100, "kept")?;
    store.flush()?;
    store.compact("f")?;
    let value = |col: &str| -> Result<Option<Vec<u8>>, cellar_engine::Error> {
        Ok(store.get("f", "r", col)?.map(|c| c.value.to_vec()))
    };
    assert_eq!(value("a")?.as_deref(), Some(&b"second"[..]));

    store.put_at("f", "r", "a", 100, "third")?;
    store.delete_at("f", "r", "b", 100)?;
    assert_eq!(value("a")?.as_deref(), Some(&b"third"[..]), "from the memtable");
    assert_eq!(value("b")?, None);
    store.flush()?; // now a newer run above the zeroed one
    assert_eq!(value("a")?.as_deref(), Some(&b"third"[..]), "from the newer file");
    assert_eq!(value("b")?, None);
    store.compact("f")?;
    assert_eq!(value("a")?.as_deref(), Some(&b"third"[..]), "after merging both");
    assert_eq!(value("b")?, None);
    Ok(())
}

#[test]
fn stats_give_the_memtables_key_range_and_tombstones_as_a_file_gives_its_own() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
    let empty = store.stats()?;
    assert_eq!(empty.family("f").map(|f| f.memtable_key_range.clone()), Some(None));
    store.put_at("f", "m", "c", 1, "v")?;
    store.put_at("f", "b", "c", 1, "v")?;
    store.delete_at("f", "x", "c", 2)?;
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("family f")?;
    let (first, last) = f.memtable_key_range.clone().ok_or("a key range")?;
    let row = |k: &[u8]| cellar_engine::key::parse(k).map(|p| p.row.to_vec());
    assert_eq!(row(&first), Some(b"b".to_vec()));
    assert_eq!(row(&last), Some(b"x".to_vec()));
    assert_eq!(f.memtable_tombstones, 1);
    assert_eq!(f.memtable_entries, 3);
    Ok(())
}

#[test]
fn a_family_whose_memtables_flush_only_by_hand_takes_writes() -> Result<(), Box<dyn std::error::Error>> {
    // No byte limit within reach: the memtable's row filter once asked for
    // 1 % of usize::MAX at the first write, and the process aborted.
    let dir = tempfile::tempdir()?;
    let opts = FamilyOptions::default().memtable_max_bytes(usize::MAX);
    let store = Store::open(dir.path(), StoreOptions::default().family_with("f", opts))?;
    store.put("f", "r", "c", "v")?;
    let cell = store.get("f", "r", "c")?.map(|c| c.value);
    assert_eq!(cell, Some("v".into()));
    Ok(())
}

/// Every table file of `folder` as the disk has it: `(bytes, entries,
/// tombstones, key + value bytes)`, read entry by entry from the files
/// themselves, not from the manifest or the store's counters.
fn on_disk(folder: &std::path::Path) -> Result<(u64, u64, u64, u64), Box<dyn std::error::Error>> {
    let mut counted = (0, 0, 0, 0);
    for entry in std::fs::read_dir(folder)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("sst") {
            continue;
        }
        counted.0 += std::fs::metadata(&path)?.len();
        let table = std::sync::Arc::new(cellar_sstable::Table::open(&path)?);
        let mut it = table.iter();
        it.seek_to_first()?;
        while it.valid() {
            let (_, _, kind) = cellar_engine::key::suffix(it.key()).ok_or("a key without a suffix")?;
            counted.1 += 1;
            counted.2 += u64::from(kind.is_tombstone());
            counted.3 += (it.key().len() + it.value_bytes().len()) as u64;
            it.next()?;
        }
    }
    Ok(counted)
}

/// The counters and the space statistics after flushes and a major
/// compaction equal what is on disk, counted here file by file: bytes
/// written by flushes and by the compaction, bytes it read, entries,
/// tombstones, stored and live bytes, and the amplifications made of them.
#[test]
fn compaction_counters_and_space_statistics_equal_what_is_on_disk() -> Result<(), Box<dyn std::error::Error>> {
    for compaction in [Compaction::SizeTiered, Compaction::LEVELED] {
        let dir = tempfile::tempdir()?;
        let options = FamilyOptions::default()
            .compaction(compaction)
            .compaction_trigger(0)
            .max_versions(2)
            .target_file_entries(40);
        let store = Store::open(dir.path(), StoreOptions::default().family_with("f", options))?;
        let mut user_bytes = 0u64;
        for i in 0..300u64 {
            let (row, column) = (format!("r{:02}", i % 37), format!("c{}", i % 3));
            let value = format!("value {i}");
            match i % 11 {
                3 => {
                    store.delete_at("f", &row, &column, i)?;
                    user_bytes += (row.len() + column.len()) as u64;
                }
                7 => {
                    store.delete_row_at("f", &row, i)?;
                    user_bytes += row.len() as u64;
                }
                _ => {
                    store.put_at("f", &row, &column, i, &value)?;
                    user_bytes += (row.len() + column.len() + value.len()) as u64;
                }
            }
            if i % 60 == 59 {
                // Counted by the time the flush returns.
                store.flush()?;
                let stats = store.stats()?;
                let f = stats.family("f").ok_or("family f")?;
                assert_eq!(
                    (f.flushes, f.flush_bytes_written),
                    (i / 60 + 1, on_disk(&dir.path().join("f"))?.0),
                    "{compaction:?}: the flushes and their bytes, after flush {}",
                    i / 60 + 1
                );
            }
        }
        let folder = dir.path().join("f");
        let live = |store: &Store| -> Result<u64, Box<dyn std::error::Error>> {
            let mut live = 0;
            for r in 0..37 {
                for c in 0..3 {
                    live += store.versions("f", format!("r{r:02}"), format!("c{c}"))?.len() as u64;
                }
            }
            Ok(live)
        };
        let check = |store: &Store, what: &str| -> Result<(), Box<dyn std::error::Error>> {
            let (bytes, entries, tombstones, kv_bytes) = on_disk(&folder)?;
            let stats = store.stats()?;
            let f = stats.family("f").ok_or("family f")?;
            assert_eq!(f.table_bytes, bytes, "{compaction:?} {what}: table bytes");
            assert_eq!(f.file_sizes.iter().sum::<u64>(), bytes, "{compaction:?} {what}");
            assert_eq!(f.table_files as usize, store.tables().len(), "{compaction:?} {what}");
            assert_eq!(
                (f.stored_entries, f.tombstones, f.stored_bytes),
                (entries, tombstones, kv_bytes),
                "{compaction:?} {what}: stored entries, tombstones and bytes"
            );
            assert_eq!(f.live_entries, live(store)?, "{compaction:?} {what}: live entries");
            assert_eq!(f.user_bytes_written, user_bytes, "{compaction:?} {what}: user bytes");
            assert_eq!(
                f.write_amplification(),
                (f.flush_bytes_written + f.compaction_bytes_written) as f64 / user_bytes as f64
            );
            assert_eq!(f.space_amplification(), entries as f64 / f.live_entries as f64);
            assert_eq!(f.space_amplification_bytes(), kv_bytes as f64 / f.live_bytes as f64);
            Ok(())
        };
        check(&store, "flushed")?;
        let flushed = on_disk(&folder)?.0;
        let before = store.stats()?.family("f").cloned().ok_or("family f")?;
        assert_eq!(
            before.flush_bytes_written, flushed,
            "{compaction:?}: nothing compacted yet"
        );
        assert_eq!(before.compaction_bytes_written, 0);

        let report = store.compact("f")?;
        let (bytes, entries, tombstones, _) = on_disk(&folder)?;
        assert_eq!(tombstones, 0, "{compaction:?}: a major compaction keeps no deletion");
        assert_eq!(
            (report.input_bytes, report.output_bytes, report.output_entries),
            (flushed, bytes, entries),
            "{compaction:?}: the report"
        );
        let after = store.stats()?.family("f").cloned().ok_or("family f")?;
        assert_eq!(
            (
                after.compaction_bytes_read,
                after.compaction_bytes_written,
                after.flush_bytes_written
            ),
            (flushed, bytes, flushed),
            "{compaction:?}: the counters"
        );
        assert_eq!(
            after.stored_entries, after.live_entries,
            "{compaction:?}: nothing superseded"
        );
        check(&store, "compacted")?;
        drop(store);
        // Reopened: the counters start again, what is stored is the same.
        let store = Store::open(dir.path(), StoreOptions::default())?;
        let stats = store.stats()?;
        let f = stats.family("f").ok_or("family f")?;
        assert_eq!(
            (f.stored_entries, f.live_entries),
            (entries, entries),
            "{compaction:?}: reopened"
        );
    }
    Ok(())
}

/// The write counters start at 0 when a store opens, but the open writes
/// the log it replays to a table file, and that flush is counted: right
/// after a reopen, flush bytes stand against no user bytes (the statistics'
/// definitions say so).
#[test]
fn right_after_a_reopen_the_flush_of_the_replayed_log_is_counted_and_its_writes_are_not(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let options = StoreOptions::default().family("f");
    {
        let store = Store::open(dir.path(), options.clone())?;
        store.put("f", "row", "column", "only in the log")?;
        let f = store.stats()?.family("f").cloned().ok_or("family f")?;
        assert_eq!((f.user_entries_written, f.flushes), (1, 0));
    }
    let store = Store::open(dir.path(), options)?;
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("family f")?;
    assert_eq!((f.user_entries_written, f.user_bytes_written), (0, 0));
    let (bytes, entries, _, _) = on_disk(&dir.path().join("f"))?;
    assert_eq!(entries, 1);
    assert_eq!((f.flushes, f.flush_bytes_written), (1, bytes));
    Ok(())
}

/// Write amplification is 1.0 when no user bytes were written since the
/// store opened (the documented convention), even when the open's flush of
/// the log it replayed wrote a table; the first write after that gives the
/// plain ratio.
#[test]
fn write_amplification_is_one_until_a_user_byte_is_written() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let options = || StoreOptions::default().family_with("f", FamilyOptions::default().compaction_trigger(0));
    let store = Store::open(dir.path(), options())?;
    let stats = store.stats()?;
    assert_eq!((stats.disk_bytes_written(), stats.user_bytes_written()), (0, 0));
    assert_eq!(stats.write_amplification(), 1.0);
    assert_eq!(stats.family("f").ok_or("family f")?.write_amplification(), 1.0);
    store.put_at("f", "r", "c", 1, "v")?;
    drop(store);

    let store = Store::open(dir.path(), options())?;
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("family f")?;
    assert!(f.flush_bytes_written > 0, "the open flushed the replayed log");
    assert_eq!(stats.user_bytes_written(), 0);
    assert_eq!(stats.write_amplification(), 1.0);
    assert_eq!(f.write_amplification(), 1.0);

    store.put_at("f", "r", "d", 1, "w")?;
    let stats = store.stats()?;
    let f = stats.family("f").ok_or("family f")?;
    assert_eq!(f.user_bytes_written, 3);
    assert_eq!(f.write_amplification(), f.flush_bytes_written as f64 / 3.0);
    assert_eq!(stats.write_amplification(), stats.disk_bytes_written() as f64 / 3.0);
    Ok(())
}
