//! Exact read costs (`engine/src/trace.rs`): how each source was
//! settled, data blocks read, entries examined and returned. The lesson tables
//! are printed from these counters, so they are asserted to the unit.

use std::error::Error;

use cellar_engine::{ColumnRange, FamilyOptions, RowRange, Settled, Snapshot, SourceKind, Store, StoreOptions};

type TestResult = Result<(), Box<dyn Error>>;

/// One family, no automatic compaction: every flush stays one file.
fn store_with(dir: &std::path::Path, options: FamilyOptions) -> Result<Store, cellar_engine::Error> {
    Store::open(
        dir,
        StoreOptions::default().family_with("f", options.compaction_trigger(0)),
    )
}

#[test]
fn absent_row_inside_three_files_key_ranges_is_ruled_out_by_three_filters_and_reads_no_data_block() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    // Every file spans rows "a" to "z", so "m" is inside every key range: only
    // the bloom filter can rule a file out.
    for file in 0..3 {
        store.put_at("f", "a", "c", file, "first row")?;
        store.put_at("f", "z", "c", file, "last row")?;
        store.flush()?;
    }
    assert_eq!(store.tables().len(), 3);

    let (cell, trace) = store.get_traced("f", "m", "c")?;
    assert_eq!(cell, None);
    assert_eq!(trace.sources_visited(), 4, "the (empty) memtable and three files");
    assert_eq!(trace.files_visited(), 3);
    assert_eq!(trace.settled_by(Settled::Filter), 3);
    assert_eq!(trace.settled_by(Settled::KeyRange), 0);
    assert_eq!(trace.settled_by(Settled::Searched), 1, "only the memtable is searched");
    assert_eq!(trace.filter_checks(), 3);
    assert_eq!(trace.filter_negatives(), 3);
    assert_eq!(trace.data_blocks(), 0);
    assert_eq!(trace.data_bytes(), 0);
    assert_eq!(trace.pages_touched(), 0);
    assert_eq!(trace.entries_examined(), 0);
    assert_eq!(trace.entries_returned, 0);
    assert_eq!(trace.sources[0].source, SourceKind::ActiveMemtable);

    // A whole-row read of the absent row costs the same.
    let (cells, trace) = store.get_row_traced("f", "m")?;
    assert!(cells.is_empty());
    assert_eq!(
        (trace.filter_negatives(), trace.data_blocks(), trace.entries_examined()),
        (3, 0, 0)
    );

    // A row past every file's key range is settled by the key range, without a filter probe.
    let (_, trace) = store.get_traced("f", "zz", "c")?;
    assert_eq!(trace.settled_by(Settled::KeyRange), 3);
    assert_eq!((trace.filter_checks(), trace.data_blocks()), (0, 0));
    Ok(())
}

#[test]
fn point_read_of_a_flushed_cell_reads_one_data_block_and_examines_one_entry() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    for i in 0..50 {
        store.put_at("f", format!("row{i:02}"), "c", 7, format!("value {i}"))?;
    }
    store.flush()?;
    let tables = store.tables();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].data_blocks, 1, "50 small cells fit in one 4 KiB block");

    let (cell, trace) = store.get_traced("f", "row25", "c")?;
    let cell = cell.expect("row25 is stored");
    assert_eq!((&cell.value[..], cell.timestamp), (&b"value 25"[..], 7));
    assert_eq!(trace.sources_visited(), 2);
    assert_eq!(trace.files_visited(), 1);
    assert_eq!(trace.data_blocks(), 1);
    assert_eq!(trace.pages_touched(), 1);
    assert_eq!(trace.entries_examined(), 1);
    assert_eq!(trace.entries_returned, 1);
    assert_eq!(trace.filter_checks(), 1);
    assert_eq!(trace.filter_negatives(), 0);
    let table = &trace.sources[1];
    assert_eq!(table.settled, Settled::Searched);
    assert_eq!((table.data_blocks, table.entries_examined), (1, 1));
    assert!(
        table.data_bytes > 0 && table.data_bytes <= 4096 + 5,
        "{}",
        table.data_bytes
    );
    Ok(())
}

#[test]
fn a_memtable_whose_row_filter_rules_the_row_out_is_visited_like_a_filtered_file_and_not_searched() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    // row1's three columns in one table file; rows around it in another
    // (whose key range covers row1: its bloom filter decides); then rows of
    // which row1 is not one in the memtable, row2's `b` among them.
    for column in ["a", "b", "c"] {
        store.put_at("f", "row1", column, 1, format!("row1 {column}"))?;
    }
    store.flush()?;
    for row in ["row0", "row2", "row9"] {
        store.put_at("f", row, "a", 2, "older")?;
    }
    store.flush()?;
    for i in 3..13 {
        store.put_at("f", format!("row{i}"), "a", 2, "other")?;
    }
    store.put_at("f", "row2", "b", 3, "newer")?;

    let (cells, trace) = store.get_row_traced("f", "row1")?;
    assert_eq!(cells.len(), 3);
    let kinds: Vec<(SourceKind, Settled)> = trace.sources.iter().map(|s| (s.source, s.settled)).collect();
    assert!(matches!(
        kinds[..],
        [
            (SourceKind::ActiveMemtable, Settled::Filter),
            (SourceKind::Table { .. }, Settled::Filter),
            (SourceKind::Table { .. }, Settled::Searched)
        ]
    ));
    // The memtable visited (its filter asked) and not searched, as the
    // newer file is not: no entry examined in either.
    assert_eq!((trace.sources_visited(), trace.files_visited()), (3, 2));
    assert_eq!((trace.filter_checks(), trace.filter_negatives()), (3, 2));
    let examined: Vec<u64> = trace.sources.iter().map(|s| s.entries_examined).collect();
    assert_eq!(examined, [0, 0, 3]);
    assert_eq!((trace.data_blocks(), trace.entries_returned), (1, 3));
    let memtable = &trace.sources[0];
    assert_eq!(
        (
            memtable.filter_checks,
            memtable.filter_negatives,
            memtable.data_blocks,
            memtable.index_lookups
        ),
        (1, 1, 0, 0)
    );

    // A point read of a cell settles them the same way.
    let (cell, trace) = store.get_traced("f", "row1", "b")?;
    assert_eq!(cell.map(|c| c.value), Some("row1 b".into()));
    assert_eq!(trace.settled_by(Settled::Filter), 2);
    assert_eq!(
        (
            trace.filter_checks(),
            trace.filter_negatives(),
            trace.entries_examined()
        ),
        (3, 2, 1)
    );

    // A row the memtable holds is searched there (its filter said "maybe").
    let (cells, trace) = store.get_row_traced("f", "row2")?;
    let values: Vec<&[u8]> = cells.iter().map(|c| &c.value[..]).collect();
    assert_eq!(values, [&b"older"[..], b"newer"]);
    let settled: Vec<Settled> = trace.sources.iter().map(|s| s.settled).collect();
    assert_eq!(settled, [Settled::Searched, Settled::Searched, Settled::KeyRange]);
    let examined: Vec<u64> = trace.sources.iter().map(|s| s.entries_examined).collect();
    assert_eq!(examined, [1, 1, 0]);
    assert_eq!((trace.filter_checks(), trace.filter_negatives()), (2, 0));
    Ok(())
}

#[test]
fn an_empty_memtable_has_no_row_filter_to_ask_and_is_searched() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    store.put_at("f", "row1", "a", 1, "v")?;
    store.flush()?;
    let (_, trace) = store.get_row_traced("f", "row1")?;
    let memtable = &trace.sources[0];
    assert_eq!(
        (
            memtable.source,
            memtable.settled,
            memtable.filter_checks,
            memtable.entries_examined
        ),
        (SourceKind::ActiveMemtable, Settled::Searched, 0, 0)
    );
    Ok(())
}

#[test]
fn slice_examines_exactly_the_cells_in_its_range_when_there_are_no_tombstones() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    // Columns 00..14 in the first file, 15..29 in the second, 30..39 in the memtable;
    // another row in each source around "book".
    for (range, flush) in [(0..15, true), (15..30, true), (30..40, false)] {
        for col in range {
            store.put("f", "book", format!("col{col:02}"), format!("v{col}"))?;
        }
        store.put("f", "album", "x", "other row")?;
        store.put("f", "cd", "x", "other row")?;
        if flush {
            store.flush()?;
        }
    }

    let (cells, trace) = store.slice_traced("f", "book", &ColumnRange::between("col10", "col35"))?;
    assert_eq!(cells.len(), 25);
    assert_eq!(trace.entries_examined(), 25);
    assert_eq!(trace.entries_returned, 25);

    let (cells, trace) = store.get_row_traced("f", "book")?;
    assert_eq!(
        (cells.len(), trace.entries_examined(), trace.entries_returned),
        (40, 40, 40)
    );

    // A reverse slice reads its whole range forward and returns the last cells.
    let (cells, trace) = store.slice_traced("f", "book", &ColumnRange::between("col10", "col35").reverse().limit(5))?;
    let columns: Vec<&[u8]> = cells.iter().map(|c| &c.column[..]).collect();
    assert_eq!(columns, vec![&b"col34"[..], b"col33", b"col32", b"col31", b"col30"]);
    assert_eq!((trace.entries_examined(), trace.entries_returned), (25, 5));

    // Shadowed versions in range are examined too: ten columns written again.
    for col in 10..20 {
        store.put("f", "book", format!("col{col:02}"), format!("again {col}"))?;
    }
    let (cells, trace) = store.slice_traced("f", "book", &ColumnRange::between("col10", "col20"))?;
    assert_eq!(
        (cells.len(), trace.entries_examined(), trace.entries_returned),
        (10, 20, 10)
    );
    assert!(cells.iter().all(|c| c.value.starts_with(b"again")));
    Ok(())
}

#[test]
fn scan_examines_every_stored_version_and_tombstone() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    // 30 rows x 2 columns, in the first file.
    for r in 0..30 {
        store.put("f", format!("r{r:02}"), "a", "1")?;
        store.put("f", format!("r{r:02}"), "b", "1")?;
    }
    store.flush()?;
    // Second file: 10 overwrites, 5 cell tombstones, 2 row tombstones.
    for r in 0..10 {
        store.put("f", format!("r{r:02}"), "a", "2")?;
    }
    for r in 10..15 {
        store.delete("f", format!("r{r:02}"), "b")?;
    }
    store.delete_row("f", "r20")?;
    store.delete_row("f", "r21")?;
    store.flush()?;
    // Memtable: 3 new rows.
    for r in 30..33 {
        store.put("f", format!("r{r:02}"), "a", "3")?;
    }
    let stored = 60 + 10 + 5 + 2 + 3;
    let live_cells = 60 - 5 - 4 + 3;
    let live_rows = 30 - 2 + 3;

    let (rows, trace) = store.scan_traced("f", &RowRange::all())?;
    assert_eq!(rows.len(), live_rows);
    assert_eq!(rows.iter().map(|r| r.cells.len()).sum::<usize>(), live_cells);
    assert_eq!(trace.entries_examined(), stored);
    assert_eq!(trace.entries_returned, live_rows as u64);
    let stats = store.stats()?;
    let f = stats.family("f").expect("family f");
    assert_eq!(
        (f.stored_entries, f.live_entries, f.tombstones),
        (stored, live_cells as u64, 7)
    );

    // A row range examines the versions of its rows only: r05..r15 holds
    // 20 cells + 5 overwrites + 5 tombstones.
    let (rows, trace) = store.scan_traced("f", &RowRange::between("r05", "r15"))?;
    assert_eq!((rows.len(), trace.entries_examined()), (10, 30));

    // After a major compaction only live cells are stored and examined.
    store.compact("f")?;
    let (rows, trace) = store.scan_traced("f", &RowRange::all())?;
    assert_eq!(rows.len(), live_rows);
    assert_eq!(trace.entries_examined(), live_cells as u64);
    Ok(())
}

#[test]
fn a_row_read_steps_over_eight_superseded_versions_then_seeks_to_the_next_column() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    for ts in 0..20 {
        store.put_at("f", "hot", "a", ts, format!("v{ts}"))?;
    }
    store.put_at("f", "hot", "b", 1, "b")?;

    let (cells, trace) = store.get_row_traced("f", "hot")?;
    let got: Vec<(&[u8], u64)> = cells.iter().map(|c| (&c.column[..], c.timestamp)).collect();
    assert_eq!(got, vec![(&b"a"[..], 19), (&b"b"[..], 1)]);
    // The newest version of `a`, the next one (where the read stops after
    // returning it), 8 more stepped over, then one seek lands on `b`: 11 of
    // the 21 entries, the 10 older versions of `a` never examined.
    assert_eq!((trace.entries_examined(), trace.entries_returned), (11, 2));

    // A slice of `a` alone: the same 10 entries, then the seek ends its range.
    let (cells, trace) = store.slice_traced("f", "hot", &ColumnRange::between("a", "b"))?;
    assert_eq!((cells.len(), trace.entries_examined()), (1, 10));
    Ok(())
}

#[test]
fn after_a_cell_that_needed_a_seek_the_next_cell_of_piled_versions_is_sought_at_once() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    for ts in 0..20 {
        store.put_at("f", "hot", "a", ts, format!("a{ts}"))?;
        store.put_at("f", "hot", "b", ts, format!("b{ts}"))?;
    }

    let (cells, trace) = store.get_row_traced("f", "hot")?;
    let got: Vec<(&[u8], u64)> = cells.iter().map(|c| (&c.column[..], c.timestamp)).collect();
    assert_eq!(got, vec![(&b"a"[..], 19), (&b"b"[..], 19)]);
    // `a`: its newest version, the next one and 8 more stepped over, then a
    // seek lands on `b`'s newest (11). `b`: the version after its newest is
    // the only one examined before the seek that ends the row (12), where
    // stepping first would have examined 8 more.
    assert_eq!((trace.entries_examined(), trace.entries_returned), (12, 2));
    Ok(())
}

#[test]
fn a_seek_to_the_next_column_steps_onto_it_without_searching_the_file_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    store.put_at("f", "hot", "a", 0, "a0")?;
    store.put_at("f", "hot", "b", 0, "b0")?;
    store.flush()?;
    for ts in 1..21 {
        store.put_at("f", "hot", "a", ts, format!("a{ts}"))?;
    }

    let (cells, trace) = store.get_row_traced("f", "hot")?;
    let got: Vec<(&[u8], u64)> = cells.iter().map(|c| (&c.column[..], c.timestamp)).collect();
    assert_eq!(got, vec![(&b"a"[..], 20), (&b"b"[..], 0)]);
    // Past `a`'s versions the read seeks to the next column: the memtable
    // searches its skip list, the file is one step from `b` and takes it.
    // The file's only index lookup is the one that opened it.
    let file = &trace.sources[1];
    assert_eq!((file.index_lookups, file.data_blocks, file.entries_examined), (1, 1, 2));
    Ok(())
}

#[test]
fn flush_writes_only_the_versions_a_reader_can_still_see() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default().max_versions(2))?;
    for ts in 0..20 {
        store.put_at("f", "hot", "a", ts, format!("v{ts}"))?;
    }
    store.delete_at("f", "hot", "b", 5)?;
    store.put_at("f", "hot", "b", 4, "hidden by the deletion")?;
    store.put_at("f", "hot", "c", 1, "c")?;
    // A snapshot taken before the flush keeps every version it saw.
    store.put_at("f", "hot", "c", 2, "c, newer")?;
    let before = store.snapshot();
    store.put_at("f", "hot", "c", 3, "c, newest")?;
    store.flush()?;

    let tables = store.tables();
    assert_eq!(tables.len(), 1);
    // a: 2 of 20 versions; b: the deletion (older files may hold what it hides); c: 2 of 3.
    assert_eq!((tables[0].entries, tables[0].tombstones), (5, 1));
    let versions: Vec<u64> = store.versions("f", "hot", "c")?.iter().map(|c| c.timestamp).collect();
    assert_eq!(versions, vec![3, 2]);
    let versions: Vec<u64> = before.versions("f", "hot", "c")?.iter().map(|c| c.timestamp).collect();
    assert_eq!(
        versions,
        vec![2, 1],
        "the snapshot still reads the memtable it was taken on"
    );
    assert_eq!(store.get("f", "hot", "b")?, None);
    Ok(())
}

#[test]
fn a_scan_opens_the_files_of_a_run_only_as_it_reaches_them() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default().target_file_entries(10))?;
    for r in 0..50 {
        store.put("f", format!("r{r:02}"), "c", "v")?;
    }
    // One run of 5 files, 10 rows each.
    store.compact("f")?;
    assert_eq!(store.tables().len(), 5);

    // Three rows from r12: the second file alone; the three after it are never opened.
    let (rows, trace) = store.scan_traced("f", &RowRange::all().limit(3))?;
    assert_eq!(rows.len(), 3);
    let mut scan = store.scan(
        "f",
        &RowRange {
            from: Some("r12".into()),
            ..RowRange::default()
        },
    )?;
    let first: Vec<_> = scan.by_ref().take(3).collect::<Result<_, _>>()?;
    assert_eq!(
        first.iter().map(|r| &r.key[..]).collect::<Vec<_>>(),
        vec![&b"r12"[..], b"r13", b"r14"]
    );
    let seek = scan.trace();
    assert_eq!(
        (
            seek.sources_visited(),
            seek.settled_by(Settled::KeyRange),
            seek.files_visited()
        ),
        (3, 1, 2),
        "memtable, the first file (before r12, by key range) and the second file"
    );
    // r12 to r14, r15 (which ends r14) and r16, where the cursor moved after it.
    assert_eq!((seek.data_blocks(), seek.entries_examined()), (1, 5));
    assert_eq!((trace.files_visited(), trace.data_blocks()), (1, 1));

    // A full scan reaches every file.
    let (rows, trace) = store.scan_traced("f", &RowRange::all())?;
    assert_eq!((rows.len(), trace.files_visited(), trace.data_blocks()), (50, 5, 5));
    assert_eq!(trace.entries_examined(), 50);
    Ok(())
}

/// `visit_row_traced` is `get_row_traced` without the cells kept: the same
/// sources, blocks and entries, and as many entries returned as it lent.
#[test]
fn a_visited_row_costs_what_the_same_row_read_whole_costs() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    store.put_at("f", "book", "author", 1, "Herbert")?;
    store.put_at("f", "book", "title", 1, "Dune")?;
    store.flush()?;
    store.put_at("f", "book", "title", 2, "Dune (1st ed.)")?;
    store.put_at("f", "other", "title", 2, "Emma")?;

    let (cells, whole) = store.get_row_traced("f", "book")?;
    let mut lent = Vec::new();
    let (count, visited) = store.visit_row_traced("f", "book", |c| {
        lent.push((c.column.to_vec(), c.value.to_vec()));
    })?;
    assert_eq!(count, 2);
    assert_eq!(
        lent,
        cells
            .iter()
            .map(|c| (c.column.to_vec(), c.value.to_vec()))
            .collect::<Vec<_>>()
    );
    assert_eq!(visited, whole);
    assert_eq!(visited.entries_returned, 2);
    assert_eq!(visited.sources_visited(), 2, "the memtable and the file");
    assert_eq!(visited.data_blocks(), 1);
    assert_eq!(visited.entries_examined(), 3, "two versions of title and the author");

    // On a snapshot, the same: the row as of then.
    let snapshot = store.snapshot();
    store.delete_row("f", "book")?;
    let (count, trace) = snapshot.visit_row_traced("f", "book", |_| {})?;
    assert_eq!((count, trace.entries_returned), (2, 2));
    assert_eq!(store.visit_row_traced("f", "book", |_| {})?.0, 0);
    Ok(())
}

/// `visit_row_traced` against `get_row_traced` wherever the row lies: the
/// memtable only, a table file only, both, a row deletion above its cells,
/// no source at all, and on a snapshot taken before a flush (which still
/// reads the memtable the flush wrote out).
#[test]
fn a_visited_row_costs_what_get_row_costs_wherever_the_row_lies() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), FamilyOptions::default())?;
    let same = |snapshot: &Snapshot, cells: usize, what: &str| -> TestResult {
        let (got, whole) = snapshot.get_row_traced("f", "r")?;
        let (count, visited) = snapshot.visit_row_traced("f", "r", |_| {})?;
        assert_eq!((got.len(), count), (cells, cells), "{what}");
        assert_eq!(visited, whole, "{what}");
        assert_eq!(visited.entries_returned, cells as u64, "{what}");
        Ok(())
    };
    same(&store.snapshot(), 0, "an empty family")?;
    store.put_at("f", "r", "a", 1, "x")?;
    store.put_at("f", "r", "b", 1, "y")?;
    let before_flush = store.snapshot();
    same(&before_flush, 2, "the memtable only")?;
    store.flush()?;
    same(&store.snapshot(), 2, "a table file only")?;
    same(&before_flush, 2, "a snapshot older than the flush")?;
    store.put_at("f", "r", "b", 2, "z")?;
    same(&store.snapshot(), 2, "the memtable and a table file")?;
    store.delete_row_at("f", "r", 3)?;
    same(&store.snapshot(), 0, "a row deletion above every cell")?;
    same(&before_flush, 2, "the old snapshot, after all that")?;
    Ok(())
}
