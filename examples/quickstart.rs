//! A first tour of cellar: open a store, write a wide row, slice it, delete,
//! flush, compact, and look at what each step cost.
//!
//! Run with `cargo run --release --example quickstart`.

use cellar::{ColumnRange, Store, StoreOptions, Trace};

fn print_trace(what: &str, trace: &Trace) {
    println!(
        "{what}: {} sources visited, {} data blocks, {} pages, {} entries examined, {} returned",
        trace.sources_visited(),
        trace.data_blocks(),
        trace.pages_touched(),
        trace.entries_examined(),
        trace.entries_returned
    );
    for s in &trace.sources {
        println!(
            "    {:?}: {:?}, {} data blocks, {} entries",
            s.source, s.settled, s.data_blocks, s.entries_examined
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default().family("loans"))?;

    // A wide row: one column per loan, named by date, so columns sort by time.
    for day in 1..=28 {
        for month in 1..=6 {
            let column = format!("loan|2024-{month:02}-{day:02}");
            store.put("loans", "book:3", column, format!("member:{}", day * month))?;
        }
    }
    store.delete("loans", "book:3", "loan|2024-03-05")?;

    let march = ColumnRange::between("loan|2024-03", "loan|2024-04");
    let (cells, trace) = store.slice_traced("loans", "book:3", &march)?;
    println!(
        "March of book:3 from the memtable: {} loans, first {:?} = {:?}",
        cells.len(),
        String::from_utf8_lossy(&cells[0].column),
        String::from_utf8_lossy(&cells[0].value)
    );
    print_trace("slice (memtable)", &trace);

    store.flush()?;
    let (cells, trace) = store.slice_traced("loans", "book:3", &march.clone().reverse().limit(3))?;
    let last: Vec<String> = cells
        .iter()
        .map(|c| String::from_utf8_lossy(&c.column).into_owned())
        .collect();
    println!("\nthe last three loans of March, from a table file: {last:?}");
    print_trace("slice (table file)", &trace);

    let (absent, trace) = store.get_traced("loans", "book:999", "loan|2024-03-01")?;
    println!("\na book never written: {absent:?}");
    print_trace("get", &trace);

    store.delete_row("loans", "book:3")?;
    store.put("loans", "book:4", "loan|2024-01-01", "member:1")?;
    store.flush()?;
    let report = store.compact("loans")?;
    println!(
        "\nmajor compaction: read {} files ({} bytes, {} entries), wrote {} files ({} bytes, {} entries)",
        report.input_files,
        report.input_bytes,
        report.input_entries,
        report.output_files,
        report.output_bytes,
        report.output_entries
    );

    let stats = store.stats()?;
    for f in &stats.families {
        println!("\nfamily {}: {} table files, {} stored entries, {} live, {} tombstones, space amplification {:.2}, write amplification {:.2}",
            f.name, f.table_files, f.stored_entries, f.live_entries, f.tombstones, f.space_amplification(), f.write_amplification());
    }
    println!(
        "store: {} user bytes written, {} bytes to disk (log + flush + compaction), write amplification {:.2}",
        stats.user_bytes_written(),
        stats.disk_bytes_written(),
        stats.write_amplification()
    );
    Ok(())
}
