//! Families that compress their tables: what is stored, what a read costs
//! through the block cache, and a family whose compression changes.

use std::error::Error;

use cellar_engine::{Compression, FamilyOptions, RowRange, Store, StoreOptions};

type TestResult = Result<(), Box<dyn Error>>;

/// `row00`, `row01`, ...: a value of 100 bytes that repeats a short text.
fn value(i: usize) -> String {
    format!("loan of copy {i:02} at branch 7; ").repeat(4)[..100].to_string()
}

fn write_rows(store: &Store, rows: std::ops::Range<usize>) -> Result<(), cellar_engine::Error> {
    for i in rows {
        store.put_at("books", format!("row{i:02}"), "loan", 1, value(i))?;
    }
    store.flush()
}

fn open(dir: &std::path::Path, compression: Compression) -> Result<Store, cellar_engine::Error> {
    let family = FamilyOptions::default().compaction_trigger(0).compression(compression);
    Store::open(dir, StoreOptions::default().family_with("books", family))
}

#[test]
fn a_compressed_read_counts_stored_bytes_then_hits_the_block_cache() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = open(dir.path(), Compression::Lz4)?;
    write_rows(&store, 0..20)?;
    // 20 cells of 100-byte values: one data block of 2,334 bytes as built,
    // stored in 402 (both with a 5-byte trailer).
    let [table] = store.tables().try_into().map_err(|_| "one table")?;
    assert_eq!(
        (table.compression, table.data_blocks, table.compressed_blocks),
        (Compression::Lz4, 1, 1)
    );
    assert_eq!((table.uncompressed_data_bytes, table.data_bytes), (2_334 + 5, 402 + 5));

    let (cell, trace) = store.get_traced("books", "row07", "loan")?;
    assert_eq!(cell.map(|c| c.value), Some(value(7).into_bytes().into()));
    assert_eq!(
        (trace.data_blocks(), trace.data_bytes(), trace.pages_touched()),
        (1, 407, 1)
    );
    assert_eq!(
        (trace.cache_hits(), trace.cache_misses(), trace.decompressed_bytes()),
        (0, 1, 2_334)
    );

    // The same block again: decompressed already, no byte of the file read.
    let (_, trace) = store.get_traced("books", "row13", "loan")?;
    assert_eq!(
        (trace.data_blocks(), trace.data_bytes(), trace.pages_touched()),
        (1, 0, 0)
    );
    assert_eq!(
        (trace.cache_hits(), trace.cache_misses(), trace.decompressed_bytes()),
        (1, 0, 0)
    );
    let table_source = &trace.sources[1];
    assert_eq!((table_source.cache_hits, table_source.data_blocks), (1, 1));
    assert_eq!(store.block_cache().len(), 1);
    Ok(())
}

#[test]
fn with_no_block_cache_every_read_decompresses_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default()
        .compaction_trigger(0)
        .compression(Compression::Lz4);
    let store = Store::open(
        dir.path(),
        StoreOptions::default()
            .block_cache_bytes(0)
            .family_with("books", family),
    )?;
    write_rows(&store, 0..20)?;
    for _ in 0..2 {
        let (_, trace) = store.get_traced("books", "row07", "loan")?;
        assert_eq!(
            (trace.data_bytes(), trace.cache_misses(), trace.decompressed_bytes()),
            (407, 1, 2_334)
        );
    }
    Ok(())
}

#[test]
fn a_family_whose_compression_changes_reads_its_old_and_new_tables() -> TestResult {
    let dir = tempfile::tempdir()?;
    for (at, compression) in [
        (0, Compression::None),
        (20, Compression::Lz4),
        (40, Compression::Zstd { level: 3 }),
    ] {
        let store = open(dir.path(), compression)?;
        assert_eq!(store.family_options("books")?.compression, compression);
        write_rows(&store, at..at + 20)?;
    }
    let store = open(dir.path(), Compression::Zstd { level: 3 })?;
    let mut kinds: Vec<(Compression, u64)> = store
        .tables()
        .iter()
        .map(|t| (t.compression, t.compressed_blocks))
        .collect();
    kinds.sort_by_key(|(c, _)| c.to_string());
    assert_eq!(
        kinds,
        [
            (Compression::Lz4, 1),
            (Compression::None, 0),
            (Compression::Zstd { level: 3 }, 1)
        ]
    );
    let read_all = |store: &Store| -> Result<Vec<(String, String)>, cellar_engine::Error> {
        let mut out = Vec::new();
        for row in store.scan("books", &RowRange::all())? {
            let row = row?;
            for cell in row.cells {
                out.push((
                    String::from_utf8_lossy(&row.key).into_owned(),
                    String::from_utf8_lossy(&cell.value).into_owned(),
                ));
            }
        }
        Ok(out)
    };
    let expected: Vec<(String, String)> = (0..60).map(|i| (format!("row{i:02}"), value(i))).collect();
    assert_eq!(read_all(&store)?, expected);
    for i in [5, 25, 45] {
        let cell = store.get("books", format!("row{i:02}"), "loan")?;
        assert_eq!(cell.map(|c| c.value), Some(value(i).into_bytes().into()));
    }

    // A compaction rewrites all three in the family's compression now.
    store.compact("books")?;
    let tables = store.tables();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].compression, Compression::Zstd { level: 3 });
    assert_eq!(read_all(&store)?, expected);
    assert_eq!(
        store.verify()?,
        5,
        "2 data blocks, the filter, the properties, the index"
    );
    Ok(())
}

#[test]
fn an_invalid_zstd_level_is_refused_before_anything_is_written() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default().compression(Compression::Zstd { level: 30 });
    match Store::open(dir.path(), StoreOptions::default().family_with("books", family)) {
        Err(cellar_engine::Error::InvalidArgument(what)) => assert!(what.contains("zstd level 30"), "{what}"),
        Err(other) => panic!("expected an invalid argument, got {other}"),
        Ok(_) => panic!("a zstd level of 30 was accepted"),
    }
    assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
    Ok(())
}
