use cellar_engine::{ColumnRange, FamilyOptions, RowRange, Settled, Store, StoreOptions};

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
