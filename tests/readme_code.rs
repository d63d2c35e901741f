//! README's "The API in a dozen lines", compiled and run: the lines between
//! `// README begin` and `// README end` are the README's block, which
//! [`cellar_testkit::readme::assert_rust_block`] checks line by line, so the
//! README cannot show an API the library no longer has.
//! (`tables/tests/readme_code.rs` does the same for the query-first block.)

use std::error::Error;

/// The README's block, as it stands there (hence no `rustfmt`): a store in
/// `./cellar-data`, a few writes, a slice, a traced read, a scan, a flush,
/// a compaction and the statistics.
#[rustfmt::skip]
#[expect(unused_variables, reason = "the README's scan loop leaves `row` to the reader")]
fn the_api_in_a_dozen_lines() -> Result<(), Box<dyn Error>> {
    // README begin
    use cellar::{ColumnRange, RowRange, Store, StoreOptions, FamilyOptions};

    let store = Store::open("./cellar-data", StoreOptions::default()
        .family("loans")
        .family_with("members", FamilyOptions::default().max_versions(3)))?;
    store.put("loans", "book:3", "loan|2024-03-02|0", "member:17")?;          // timestamp = now
    store.put_at("loans", "book:3", "loan|2024-03-09|1", 1_709_942_400_000, "member:5")?;
    store.delete("loans", "book:3", "loan|2024-03-09|1")?;                     // cell tombstone
    store.delete_row("members", "member:5")?;                                  // row tombstone
    let march = store.slice("loans", "book:3", &ColumnRange::between("loan|2024-03", "loan|2024-04"))?;
    let (cell, trace) = store.get_traced("loans", "book:3", "loan|2024-03-02|0")?;
    println!("{} sources, {} data blocks, {} pages", trace.sources_visited(), trace.data_blocks(), trace.pages_touched());
    for row in store.scan("loans", &RowRange::prefix("book:"))? { let row = row?; /* row.key, row.cells */ }
    store.flush()?; store.compact("loans")?; let stats = store.stats()?;
    // README end
    assert_eq!(march.len(), 1, "the cell of 2024-03-09 was deleted");
    assert_eq!(cell.map(|c| c.value), Some("member:17".into()));
    assert_eq!(stats.families.iter().map(|f| f.live_entries).sum::<u64>(), 1);
    Ok(())
}

#[test]
fn the_readme_api_block_runs_and_is_the_block_the_readme_shows() -> Result<(), Box<dyn Error>> {
    cellar_testkit::readme::assert_rust_block(include_str!("readme_code.rs"));
    // The block opens `./cellar-data`: run it in a folder of its own (this
    // is the only test of this file that uses the current folder).
    let folder = tempfile::tempdir()?;
    std::env::set_current_dir(folder.path())?;
    the_api_in_a_dozen_lines()
}
