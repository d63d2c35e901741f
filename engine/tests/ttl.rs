//! Time to live on the wall clock: a cell is read while its timestamp is
//! within the family's `ttl` of now, and not after, whether it sits in a
//! memtable, a table file or the output of a compaction; a snapshot keeps
//! the clock it was taken at; the statistics count what a reader sees.
//! (`model.rs` checks TTL with timestamps that have always expired or never
//! will; here cells expire while the test runs.)

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cellar_engine::{ColumnRange, Compaction, FamilyOptions, RowRange, Store, StoreOptions};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn now_ms() -> Result<u64, Box<dyn std::error::Error>> {
    Ok(u64::try_from(
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis(),
    )?)
}

#[test]
fn cells_expire_on_the_clock_in_memtables_tables_and_compactions_and_a_snapshot_keeps_its_clock() -> TestResult {
    // Both strategies at once, to wait for the clock once.
    std::thread::scope(|s| {
        let runs = [Compaction::SizeTiered, Compaction::LEVELED]
            .map(|c| s.spawn(move || expire_on_the_clock(c).map_err(|e| e.to_string())));
        runs.into_iter()
            .try_for_each(|run| run.join().map_err(|_| "a run panicked".to_string())?)
    })?;
    Ok(())
}

fn expire_on_the_clock(compaction: Compaction) -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = FamilyOptions::default()
        .ttl(Duration::from_millis(1000))
        .max_versions(3)
        .compaction(compaction);
    let store = Store::open(dir.path(), StoreOptions::default().family_with("t", options))?;
    let t0 = now_ms()?;
    store.put("t", "r", "a", "now")?;
    store.put_at("t", "r", "b", t0 + 3_600_000, "in an hour")?;
    store.put_at("t", "r", "c", t0 - 600, "expires in 400 ms")?;
    store.put_at("t", "r2", "a", t0 - 5000, "expired")?;
    assert_eq!(store.get("t", "r2", "a")?, None);
    assert_eq!(store.get_row("t", "r")?.len(), 3);
    let before = store.snapshot();
    store.flush()?;

    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(store.get("t", "r", "c")?, None, "c has expired");
    assert_eq!(store.versions("t", "r", "c")?, vec![]);
    assert_eq!(store.get_row("t", "r")?.len(), 2);
    assert_eq!(before.get_row("t", "r")?.len(), 3, "the snapshot reads at its own time");
    store.compact("t")?;
    assert_eq!(
        before.get_row("t", "r")?.len(),
        3,
        "and keeps what it reads through a compaction"
    );
    assert_eq!(store.get_row("t", "r")?.len(), 2);

    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(store.get("t", "r", "a")?, None, "a has expired");
    let rows: Vec<_> = store.scan("t", &RowRange::all())?.collect::<Result<_, _>>()?;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].cells.len(), 1);
    assert_eq!(rows[0].cells[0].value, "in an hour");
    drop(before);
    store.compact("t")?;
    assert_eq!(store.slice("t", "r", &ColumnRange::all())?.len(), 1);
    let stats = store.stats()?;
    let family = stats.family("t").ok_or("no stats of t")?;
    assert_eq!(
        (family.live_entries, family.stored_entries),
        (1, 1),
        "the compaction dropped what expired"
    );
    Ok(())
}

/// A TTL too long to count in milliseconds (more than half a billion years)
/// expires nothing; its millisecond count was once cut to 64 bits, and this
/// one came out as 1 ms.
#[test]
fn a_ttl_longer_than_u64_milliseconds_expires_nothing_before_or_after_a_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ttl = Duration::new(18_446_744_073_709_551, 617_000_000); // 2^64 + 1 ms
    let options = || StoreOptions::default().family_with("t", FamilyOptions::default().ttl(ttl));
    let store = Store::open(dir.path(), options())?;
    store.put_at("t", "r", "c", now_ms()? - 10, "kept")?;
    assert!(store.get("t", "r", "c")?.is_some());
    store.flush()?;
    store.compact("t")?;
    assert!(store.get("t", "r", "c")?.is_some());
    drop(store);
    let store = Store::open(dir.path(), StoreOptions::default())?;
    assert!(store.get("t", "r", "c")?.is_some());
    drop(store);
    let store = Store::open(dir.path(), options())?;
    assert!(store.get("t", "r", "c")?.is_some());
    Ok(())
}

/// A TTL that is lengthened (or removed) again shows what had expired where
/// no flush or compaction has dropped it yet; it never shows a version that
/// a deletion or a newer version hid when it expired. A flush and a minor
/// compaction (whose inputs are not the family's oldest) used to drop an
/// expired deletion, or an expired newest version, outright: the older
/// version in a deeper file came back.
#[test]
fn a_longer_ttl_never_brings_back_a_deleted_or_overwritten_version() -> TestResult {
    for compaction in [Compaction::LEVELED, Compaction::SizeTiered] {
        let dir = tempfile::tempdir()?;
        let plain = FamilyOptions::default().compaction(compaction).compaction_trigger(0);
        let store = Store::open(dir.path(), StoreOptions::default().family_with("f", plain.clone()))?;
        let (two_hours_ago, ninety_minutes_ago) = (now_ms()? - 7_200_000, now_ms()? - 5_400_000);
        store.put_at("f", "r", "a", two_hours_ago, "deleted")?;
        store.put_at("f", "r", "b", two_hours_ago, "overwritten")?;
        store.put_at("f", "r2", "x", two_hours_ago, "its row deleted")?;
        store.compact("f")?;
        store.delete_at("f", "r", "a", ninety_minutes_ago)?;
        store.put_at("f", "r", "b", ninety_minutes_ago, "newest")?;
        store.delete_row_at("f", "r2", ninety_minutes_ago)?;
        // Everything has expired under an hour's TTL; the flush writes the
        // memtable above the compacted file, which is not among its inputs.
        store.alter_family("f", plain.clone().ttl(Duration::from_secs(3600)))?;
        assert_eq!(store.get_row("f", "r")?, vec![]);
        store.flush()?;
        for ttl in [None, Some(Duration::from_secs(3600)), None] {
            let options = match ttl {
                Some(ttl) => plain.clone().ttl(ttl),
                None => plain.clone(),
            };
            store.alter_family("f", options)?;
            let value = |column: &str| -> Result<Option<String>, Box<dyn std::error::Error>> {
                let cell = store.get("f", "r", column)?;
                Ok(cell.map(|c| String::from_utf8_lossy(&c.value).into_owned()))
            };
            assert_eq!(
                value("a")?,
                None,
                "{compaction:?} ttl {ttl:?}: a deleted cell came back"
            );
            assert!(
                value("b")? != Some("overwritten".to_string()),
                "{compaction:?} ttl {ttl:?}: an overwritten version came back"
            );
            assert_eq!(
                store.get_row("f", "r2")?,
                vec![],
                "{compaction:?} ttl {ttl:?}: a deleted row came back"
            );
            // A compaction of every file (bottommost) may drop all of it.
            store.compact("f")?;
        }
    }
    Ok(())
}
