//! Races between the write path, flushes, compactions and close, forced with
//! hooks.
//!
//! Each test parks one thread at a named point (see `hooks`) and moves
//! another through the gap, or waits for a background thread to reach one,
//! so the interleaving that used to lose or expose a write happens on every
//! run, and no test sleeps for a guessed time.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use super::*;

type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Long enough for any step of these tests on a loaded machine; only a broken
/// interleaving waits this long.
const PATIENCE: Duration = Duration::from_secs(30);

/// A signal one thread sends and another waits for.
fn signal() -> (Sender<()>, Arc<StdMutex<Receiver<()>>>) {
    let (tx, rx) = channel();
    (tx, Arc::new(StdMutex::new(rx)))
}

fn wait(rx: &StdMutex<Receiver<()>>, what: &str) {
    let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
    if rx.recv_timeout(PATIENCE).is_err() {
        panic!("timed out waiting for {what}");
    }
}

/// Copies the store folder as a crash would leave it (a process crash keeps
/// every byte the kernel has; with `SyncPolicy::Always` so does a power cut).
fn crash_image(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            crash_image(&entry.path(), &target)?;
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A store with family "a", whose files are compacted only by `compact`.
fn store_compacted_by_hand(dir: &Path) -> Result<Arc<Store>> {
    let family = FamilyOptions::default().compaction_trigger(0);
    Ok(Arc::new(Store::open(
        dir,
        StoreOptions::default().family_with("a", family),
    )?))
}

fn value(store: &Store, row: &str) -> Result<Option<Vec<u8>>> {
    Ok(store.get("a", row, "c")?.map(|c| c.value.to_vec()))
}

/// Item 3 of the durability review. A flush records, for its family, the
/// oldest log segment still needed. It used to look at the memtables first
/// and read the writer's newest segment after: a write that landed in
/// segment L between the two reads, followed by a rotation to L+1, was
/// recorded as needing only L+1, and L was deleted while the write lived only
/// in memory. Reading the newest segment first closes the gap: a write after
/// that read is in that segment or a newer one.
#[test]
fn a_write_landing_while_a_flush_decides_its_log_number_keeps_its_segment() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default().memtable_max_entries(2).compaction_trigger(0);
    let options = StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("a", family);
    let store = Arc::new(Store::open(dir.path(), options.clone())?);

    let (in_flush, in_flush_rx) = signal();
    let (go, go_rx) = signal();
    let (rotated, rotated_rx) = signal();
    let (second_flush, second_flush_rx) = signal();
    let (finish, finish_rx) = signal();
    let flushes = AtomicUsize::new(0);
    store.inner.hooks.set("flush::memtables_read", move || {
        match flushes.fetch_add(1, Ordering::SeqCst) {
            0 => {
                let _ = in_flush.send(());
                wait(&go_rx, "the write and the rotation");
            }
            1 => {
                let _ = second_flush.send(());
                wait(&finish_rx, "the crash image");
            }
            _ => {}
        }
    });
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let armed_in_hook = armed.clone();
    store.inner.hooks.set("rotate::new_segment_live", move || {
        if armed_in_hook.load(Ordering::SeqCst) {
            let _ = rotated.send(());
        }
    });

    // The second put fills the memtable: rotation, then a flush, which stops
    // at the hook once it has looked at the (now empty) active memtable.
    store.put("a", "r0", "c", "0")?;
    store.put("a", "r1", "c", "1")?;
    wait(&in_flush_rx, "the first flush");
    armed.store(true, Ordering::SeqCst);
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || -> Result<()> {
            store.put("a", "r2", "c", "2")?; // lands in segment L
            store.put("a", "r3", "c", "3") // fills the memtable: rotation to L+1
        })
    };
    wait(&rotated_rx, "the rotation");
    let _ = go.send(());
    writer.join().map_err(|_| "the writer panicked")??;
    // r2 and r3 are acknowledged (synced). The flush of their memtable is
    // held at the hook, so they are only in the log and in memory.
    wait(&second_flush_rx, "the second flush");
    let image = tempfile::tempdir()?;
    crash_image(dir.path(), image.path())?;
    let _ = finish.send(());
    drop(store);

    let recovered = Store::open(image.path(), options)?;
    for (row, want) in [("r0", "0"), ("r1", "1"), ("r2", "2"), ("r3", "3")] {
        assert_eq!(
            value(&recovered, row)?.as_deref(),
            Some(want.as_bytes()),
            "{row} was acknowledged before the crash"
        );
    }
    Ok(())
}

/// Item 4 of the durability review. With `SyncPolicy::Always` a write that
/// fills its memtable freezes it before the writer has raised the visible
/// sequence. If that memtable was flushed and a bottommost compaction then
/// wrote its sequence numbers as 0, a new snapshot saw the write before it
/// was visible. A snapshot must see exactly the writes up to its sequence.
#[test]
fn a_bottommost_compaction_never_shows_a_snapshot_a_write_beyond_its_sequence() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default().memtable_max_entries(1).compaction_trigger(0);
    let options = StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("a", family);
    let store = Arc::new(Store::open(dir.path(), options)?);
    store.put("a", "r0", "c", "0")?;
    store.wait_for_background_work()?;

    let (reached, reached_rx) = signal();
    let (release, release_rx) = signal();
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let armed_in_hook = armed.clone();
    store.inner.hooks.set("write::durable", move || {
        if armed_in_hook.swap(false, Ordering::SeqCst) {
            let _ = reached.send(());
            wait(&release_rx, "the snapshot");
        }
    });
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || store.put("a", "r1", "c", "1"))
    };
    wait(&reached_rx, "the write of r1");
    // r1 (sequence 2) is in a frozen memtable; its writer has not returned.
    store.compact("a")?;
    let snapshot = store.snapshot();
    let seen = snapshot.get("a", "r1", "c")?.is_some();
    let _ = release.send(());
    writer.join().map_err(|_| "the writer panicked")??;
    assert_eq!(
        seen,
        snapshot.sequence() >= 2,
        "a snapshot at sequence {} {} r1 (sequence 2)",
        snapshot.sequence(),
        if seen { "sees" } else { "does not see" }
    );
    assert_eq!(value(&store, "r1")?.as_deref(), Some(&b"1"[..]));
    Ok(())
}

/// `SyncPolicy::Interval(d)` used to sync only when a later write came: a
/// store that went quiet kept its last writes unsynced forever. The sync
/// thread syncs them within `d`; a power cut after that keeps them.
#[test]
fn an_interval_sync_comes_even_when_no_later_write_does() -> TestResult {
    let root = tempfile::tempdir()?;
    let disk = root.path().join("disk");
    std::fs::create_dir(&disk)?;
    let watch = cellar_testkit::fault::watch(&disk)?;
    let options = StoreOptions::default()
        .sync(SyncPolicy::Interval(Duration::from_millis(100)))
        .family("a");
    let store = Store::open(disk.join("store"), options.clone())?;
    let (synced, synced_rx) = signal();
    store.inner.hooks.set("background::interval_sync", move || {
        let _ = synced.send(());
    });
    // Writes until one is left for the sync thread (a write that comes when
    // the last sync is older than the interval syncs by itself).
    let mut written = 0;
    loop {
        store.put("a", format!("r{written}"), "c", "quiet")?;
        written += 1;
        if store.inner.writer.lock().unsynced {
            break;
        }
        assert!(written < 1000, "every write synced by itself");
    }
    wait(&synced_rx, "the interval sync");
    watch.power_loss(&root.path().join("cut"))?;
    drop(store);
    let recovered = Store::open(root.path().join("cut/store"), options)?;
    for i in 0..written {
        assert!(recovered.get("a", format!("r{i}"), "c")?.is_some(), "r{i} was synced");
    }
    Ok(())
}

/// A compaction that sees the store closing stops, says so, and leaves no
/// output file behind (it used to return `Error::InvalidArgument`).
#[test]
fn a_compaction_interrupted_by_close_installs_nothing_and_leaves_no_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default().compaction_trigger(0);
    let store = Store::open(dir.path(), StoreOptions::default().family_with("a", family))?;
    for part in 0..2 {
        for i in 0..5000 {
            store.put("a", format!("row{i:05}"), "c", format!("{part}"))?;
        }
        store.flush()?;
    }
    let version = store.inner.current();
    let fam = version.family("a").ok_or("family a")?;
    assert_eq!(fam.tables.len(), 2);
    store.inner.shutting_down.store(true, Ordering::SeqCst);
    let outcome = store.inner.run_compaction(fam, fam.tables.clone(), true, 0, u64::MAX)?;
    store.inner.shutting_down.store(false, Ordering::SeqCst);
    assert!(matches!(outcome, compact::Compacted::Interrupted));
    let names: Vec<String> = std::fs::read_dir(dir.path().join("a"))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    assert_eq!(names.len(), 2, "only the two input tables: {names:?}");
    assert!(names.iter().all(|n| n.ends_with(".sst")), "{names:?}");
    assert_eq!(store.inner.current().family("a").ok_or("family a")?.tables.len(), 2);
    assert_eq!(value(&store, "row04999")?.as_deref(), Some(&b"1"[..]));
    Ok(())
}

/// A read-only open reads the manifest, then the log. A flush in between
/// (rotation to an empty segment, the memtable to a table, the manifest
/// edit, the old segment deleted) once left it a log that replayed cleanly
/// but lacked the flushed rows, and a manifest that listed no table holding
/// them: the open returned a store without rows the writer had acknowledged
/// long before. Then the open saw that the manifest changed while it read,
/// and started again, which a writer flushing faster than an attempt takes
/// could make it do until it gave up. Now it holds the segment open from
/// before it reads the manifest, and reads it, deleted, in one attempt.
#[test]
fn a_read_only_open_racing_a_flush_that_deletes_its_log_segment_reads_the_segment_it_holds() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(Store::open(dir.path(), StoreOptions::default().family("a"))?);
    for i in 0..10 {
        store.put("a", format!("r{i}"), "c", "v")?;
    }
    let flushes = Arc::new(AtomicUsize::new(0));
    {
        let (store, flushes) = (store.clone(), flushes.clone());
        crate::recovery::read_only::hook::set(dir.path(), move || {
            if flushes.fetch_add(1, Ordering::SeqCst) == 0 {
                store
                    .flush()
                    .expect("the flush between the reader's manifest and its log");
                // The flush thread deletes the flushed segment after the
                // flush returns; delete it now, as it will be.
                if let Some(needed) = store.inner.oldest_log_needed() {
                    store.inner.delete_logs_before(needed);
                }
            }
        });
    }
    let reader = crate::ReadOnlyStore::open(dir.path());
    crate::recovery::read_only::hook::clear(dir.path());
    let reader = reader?;
    let rows = reader.snapshot().scan("a", &crate::RowRange::all())?.count();
    assert_eq!(rows, 10, "every row was acknowledged before the open began");
    assert_eq!(
        reader.tables().len(),
        0,
        "the store as the manifest read describes it: the rows in the log"
    );
    assert_eq!(
        flushes.load(Ordering::SeqCst),
        1,
        "the flush ran during the one attempt, which read the deleted segment"
    );
    Ok(())
}

/// Every file under a family folder, by name.
fn folder_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    Ok(names)
}

/// A flush that has written its table when the family is dropped (or
/// truncated) installs nothing: its file goes, no cell of the old family
/// comes back, and the store reopens with the family as the change left it.
fn a_flush_racing(change: &'static str) -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default().compaction_trigger(0);
    let options = StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("a", family.clone())
        .family_with("b", family);
    let store = Arc::new(Store::open(dir.path(), options.clone())?);
    store.put("a", "flushed", "c", "0")?;
    store.flush()?;
    store.put("a", "in-flight", "c", "1")?;
    store.put("b", "kept", "c", "2")?;
    let changes = Arc::new(AtomicUsize::new(0));
    {
        // Weak: a hook that held the store would keep it open for good.
        let (weak, changes) = (Arc::downgrade(&store), changes.clone());
        store.inner.hooks.set("flush::written", move || {
            // The flush of `a`'s memtable holding "in-flight" has written its table.
            if changes.fetch_add(1, Ordering::SeqCst) == 0 {
                let store = weak.upgrade().expect("the store is open");
                let result = match change {
                    "drop" => store.drop_family("a"),
                    _ => store.truncate_family("a"),
                };
                result.expect("the change while the flush is in flight");
            }
        });
    }
    store.flush_family("a")?;
    assert_eq!(
        changes.load(Ordering::SeqCst),
        1,
        "the flush ran and the change came in its gap"
    );
    store.flush()?; // `b`
    let check = |store: &Store| -> TestResult {
        match change {
            "drop" => assert!(store.family_options("a").is_err(), "the dropped family came back"),
            _ => assert_eq!(
                store.scan("a", &crate::RowRange::all())?.count(),
                0,
                "a truncated cell came back"
            ),
        }
        assert_eq!(
            store.get("b", "kept", "c")?.map(|c| c.value.to_vec()),
            Some(b"2".to_vec())
        );
        Ok(())
    };
    check(&store)?;
    let version = store.inner.current();
    if change != "drop" {
        assert!(version.family("a").ok_or("family a")?.tables.is_empty());
    }
    // The folder of a dropped family stays if the flush's file was still in
    // it when the drop tried to remove it; it is empty.
    let folder = dir.path().join("a");
    if folder.exists() {
        assert_eq!(
            folder_names(&folder)?,
            Vec::<String>::new(),
            "the flush's table was left"
        );
    }
    drop(version);
    drop(store);
    let reopened = Store::open(dir.path(), StoreOptions::default())?;
    check(&reopened)
}

#[test]
fn a_flush_that_finds_its_family_dropped_installs_nothing_and_leaves_no_file() -> TestResult {
    a_flush_racing("drop")
}

#[test]
fn a_flush_that_finds_its_family_truncated_installs_nothing_and_leaves_no_file() -> TestResult {
    a_flush_racing("truncate")
}

/// A drop removes the family's folder once its files are gone. A family of
/// the same name created in the gap between the drop's install and that
/// removal had its folder removed under it, and its first flush failed (the
/// store then stopped accepting writes).
#[test]
fn a_family_created_while_a_drop_of_its_name_finishes_keeps_its_folder() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(Store::open(dir.path(), StoreOptions::default().family("a"))?);
    store.put("a", "old", "c", "0")?;
    store.flush()?;
    {
        let weak = Arc::downgrade(&store);
        store.inner.hooks.set("drop::installed", move || {
            weak.upgrade()
                .expect("the store is open")
                .create_family("a", FamilyOptions::default())
                .expect("the create in the drop's gap");
        });
    }
    store.drop_family("a")?;
    store.put("a", "new", "c", "1")?;
    store.flush()?;
    assert_eq!(
        store.get("a", "new", "c")?.map(|c| c.value.to_vec()),
        Some(b"1".to_vec())
    );
    assert_eq!(store.get("a", "old", "c")?, None);
    drop(store);
    let reopened = Store::open(dir.path(), StoreOptions::default())?;
    assert_eq!(
        reopened.get("a", "new", "c")?.map(|c| c.value.to_vec()),
        Some(b"1".to_vec())
    );
    Ok(())
}

/// A compaction between a read-only open's manifest and its table opens
/// deletes tables the manifest it read lists. The open once started again
/// (and saw the compacted table); now it held them open before it read the
/// manifest, and reads them, deleted, in one attempt.
#[test]
fn a_read_only_open_racing_a_compaction_that_deletes_its_tables_reads_the_tables_it_holds() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_compacted_by_hand(dir.path())?;
    for part in 0..3 {
        for i in 0..10 {
            store.put("a", format!("r{part}{i}"), "c", "v")?;
        }
        store.flush()?;
    }
    let compactions = Arc::new(AtomicUsize::new(0));
    {
        let (store, compactions) = (store.clone(), compactions.clone());
        crate::recovery::read_only::hook::set(dir.path(), move || {
            if compactions.fetch_add(1, Ordering::SeqCst) == 0 {
                store
                    .compact("a")
                    .expect("the compaction between the reader's manifest and its tables");
            }
        });
    }
    let reader = crate::ReadOnlyStore::open(dir.path());
    crate::recovery::read_only::hook::clear(dir.path());
    let reader = reader?;
    assert_eq!(reader.tables().len(), 3, "the three tables the manifest read lists");
    // A replaced table is deleted when the last version listing it goes,
    // and a background thread may still hold the version the compaction
    // replaced for a moment after `compact` returns: the deletion is
    // waited for (it once failed here about once in a hundred runs on a
    // busy machine), so the scan below reads tables that are gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while reader.tables().iter().any(|t| t.path.exists()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        reader.tables().iter().all(|t| !t.path.exists()),
        "all three deleted by the compaction"
    );
    assert_eq!(reader.snapshot().scan("a", &crate::RowRange::all())?.count(), 30);
    assert_eq!(
        compactions.load(Ordering::SeqCst),
        1,
        "the compaction ran during the one attempt, which read the deleted tables"
    );
    Ok(())
}

/// A read-only open of a damaged store (no writer) reports the damage after
/// one attempt: the manifest did not change while it read, so no writer
/// moved the store on. It used to take every error that a race could cause
/// as one, and retried for seconds before it reported the corruption.
#[test]
fn a_read_only_open_of_a_damaged_store_reports_the_damage_without_retrying() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
        for i in 0..4 {
            store.put("a", format!("r{i}"), "c", "v")?;
        }
    }
    // The store's one segment with records: its second record damaged.
    let segment = std::fs::read_dir(dir.path())?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
        .ok_or("a segment with records")?;
    let mut bytes = std::fs::read(&segment)?;
    let first_len = u32::from_le_bytes(bytes.get(4..8).ok_or("a header")?.try_into()?) as usize;
    let second = 8 + first_len;
    *bytes.get_mut(second + 10).ok_or("a second record")? ^= 0x5A;
    std::fs::write(&segment, bytes)?;
    let attempts = Arc::new(AtomicUsize::new(0));
    {
        let attempts = attempts.clone();
        crate::recovery::read_only::hook::set(dir.path(), move || {
            attempts.fetch_add(1, Ordering::SeqCst);
        });
    }
    let result = crate::ReadOnlyStore::open(dir.path());
    crate::recovery::read_only::hook::clear(dir.path());
    match result {
        Err(Error::Corruption { file, offset, .. }) => assert_eq!((file, offset), (segment, second as u64)),
        Err(e) => return Err(format!("expected corruption of the segment, got {e}").into()),
        Ok(_) => return Err("a damaged store opened".into()),
    }
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "the damage was retried");
    Ok(())
}

/// A major compaction used to merge holding the version it started from, and
/// through it every memtable of the store as it was then: a memtable filled
/// and flushed during the merge (minutes, for a large family) stayed in
/// memory until the merge ended. It now holds the family's files only, as a
/// background compaction does.
#[test]
fn a_memtable_flushed_during_a_major_compaction_is_freed_at_once() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_compacted_by_hand(dir.path())?;
    for i in 0..100 {
        store.put("a", format!("r{i:03}"), "c", "0")?;
    }
    store.flush()?;
    let (merging, merging_rx) = signal();
    let (release, release_rx) = signal();
    store.inner.hooks.set("compaction::merging", move || {
        let _ = merging.send(());
        wait(&release_rx, "the flush");
    });
    let compaction = {
        let store = store.clone();
        std::thread::spawn(move || store.compact("a"))
    };
    wait(&merging_rx, "the merge");
    store.put("a", "late", "c", "1")?;
    let memtable = Arc::downgrade(&store.inner.current().family("a").ok_or("family a")?.active);
    store.flush()?;
    // The flush thread lets go of the memtable once it has finished.
    store.wait_for_background_work()?;
    let kept = memtable.upgrade().is_some();
    let _ = release.send(());
    let report = compaction.join().map_err(|_| "the compaction panicked")??;
    assert!(!kept, "the memtable flushed during the merge is still in memory");
    assert_eq!(report.input_entries, 100);
    assert_eq!(value(&store, "late")?.as_deref(), Some(&b"1"[..]));
    Ok(())
}

/// A flush adds its counters before its version is swapped in; a merge and
/// a move added theirs after: a `stats` read in the gap (here, by the
/// compacting thread itself the moment its version is in) saw the new files
/// without the compaction that wrote them. Both now count as the flush does.
#[test]
fn statistics_read_once_a_move_or_a_merge_is_installed_count_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let leveled = FamilyOptions::default()
        .compaction(crate::Compaction::LEVELED)
        .compaction_trigger(1);
    let store = Arc::new(Store::open(
        dir.path(),
        StoreOptions::default().family_with("a", leveled),
    )?);
    let (seen, seen_rx) = channel();
    let seen = StdMutex::new(seen);
    {
        // Weak: a hook that held the store would keep it open for good.
        let weak = Arc::downgrade(&store);
        store.inner.hooks.set("compaction::installed", move || {
            let stats = weak.upgrade().map(|store| {
                let stats = store.stats().map(|s| s.family("a").cloned());
                let levels: Vec<u32> = store.tables().iter().map(|t| t.level).collect();
                (stats, levels)
            });
            // Sent once the store is let go: the test drops it after.
            if let Ok(tx) = seen.lock() {
                let _ = tx.send(stats);
            }
        });
    }
    let installed = || -> std::result::Result<_, Box<dyn std::error::Error>> {
        let (stats, levels) = seen_rx.recv_timeout(PATIENCE)?.ok_or("the store is open")?;
        let stats: crate::stats::FamilyStats = stats?.ok_or("family a")?;
        Ok((stats, levels))
    };
    for i in 0..20 {
        store.put("a", format!("r{i:02}"), "c", "0")?;
    }
    store.flush()?;
    // The lone level-0 file is moved whole to the last level.
    let (moved, levels) = installed()?;
    assert_eq!(levels, [compaction::LAST_LEVEL], "a move");
    assert_eq!(
        (moved.compactions, moved.compaction_bytes_written),
        (1, 0),
        "counted once the move is in"
    );
    for i in 10..30 {
        store.put("a", format!("r{i:02}"), "c", "1")?;
    }
    store.flush()?;
    // Its rows overlap the last level's: merged into it.
    let (merged, levels) = installed()?;
    assert_eq!(levels, [compaction::LAST_LEVEL], "a merge");
    assert_eq!(merged.compactions, 2, "counted once the merge is in");
    assert_eq!(
        merged.compaction_bytes_written, merged.table_bytes,
        "every file is the merge's output"
    );
    store.wait_for_background_work()?;
    store.inner.hooks.set("compaction::installed", || {});
    Ok(())
}

/// A store whose family "a" is due a settle at rest 200 ms after its last
/// write: 11,000 rows, flushed every 2,000, the last 1,000 in the memtable.
fn store_due_a_settle(dir: &Path) -> Result<Store> {
    let family = FamilyOptions::default()
        .memtable_max_entries(2000)
        .settle_when_idle(Some(crate::options::Settle {
            idle: Duration::from_millis(200),
            min_bytes: 1,
            min_above_percent: 1,
        }));
    let store = Store::open(dir, StoreOptions::default().family_with("a", family))?;
    for i in 0..11_000 {
        store.put("a", format!("row{i:05}"), "c", format!("v{i}"))?;
    }
    Ok(store)
}

/// Closes `store` once a background thread reaches the point `at` (and
/// holds it there until the close has begun); returns how long the close
/// took, or an error if it had not returned after `PATIENCE`.
fn close_when_the_settle_reaches(store: Store, at: &'static str) -> std::result::Result<Duration, String> {
    let (reached, reached_rx) = signal();
    let inner = Arc::downgrade(&store.inner);
    store.inner.hooks.set(at, move || {
        let _ = reached.send(());
        let deadline = std::time::Instant::now() + PATIENCE;
        while inner.upgrade().is_some_and(|i| !i.shutting_down.load(Ordering::SeqCst))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    wait(&reached_rx, at);
    let (closed, closed_rx) = channel();
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        drop(store);
        let _ = closed.send(start.elapsed());
    });
    closed_rx
        .recv_timeout(PATIENCE)
        .map_err(|_| format!("the close did not return while the settle was at {at}"))
}

/// A close while the compacting thread settles a family: it waits neither
/// for the flush the settle asked for (the flush thread stops at close, and
/// the compacting thread used to wait for that flush forever, so the close
/// never returned) nor for the merge, which is cut short and installs
/// nothing. The reopened store has every row.
#[test]
fn a_close_during_a_settle_cuts_it_short_and_loses_nothing() -> TestResult {
    for at in ["rotate::new_segment_live", "settle::flushed"] {
        let dir = tempfile::tempdir()?;
        let store = store_due_a_settle(dir.path())?;
        let took = close_when_the_settle_reaches(store, at)?;
        assert!(took < PATIENCE / 2, "the close took {took:?}");

        let family = FamilyOptions::default().settle_when_idle(None);
        let store = Store::open(dir.path(), StoreOptions::default().family_with("a", family))?;
        assert_eq!(store.stats()?.family("a").map(|f| f.live_entries), Some(11_000));
        for i in (0..11_000).step_by(97) {
            assert_eq!(
                value(&store, &format!("row{i:05}"))?,
                Some(format!("v{i}").into_bytes()),
                "{at}"
            );
        }
        // Nothing of the settle was installed: the files it would have
        // merged are still above the last level, and no file is left over.
        let tables = store.tables();
        assert!(
            tables.iter().any(|t| t.level < compaction::LAST_LEVEL),
            "{at}: {tables:?}"
        );
        let files = std::fs::read_dir(dir.path().join("a"))?.count();
        assert_eq!(files, tables.len(), "{at}");
    }
    Ok(())
}

/// A size-tiered family settles into one run at level 0, where its flushes
/// land too, and level 0's runs are read in the order of their newest
/// entries. Writes flushed while the settle merges are not among its inputs:
/// their run must stay ahead of the settled one (whose sequence numbers the
/// bottommost merge wrote as 0), in the version the settle installs and in
/// the one a reopen builds from the manifest, so their overwrites and
/// deletions hide the older cells the settled run holds.
#[test]
fn writes_flushed_during_a_size_tiered_settle_stay_newer_than_the_settled_run() -> TestResult {
    let dir = tempfile::tempdir()?;
    let family = FamilyOptions::default()
        .compaction(crate::options::Compaction::SizeTiered)
        .memtable_max_entries(5000)
        .settle_when_idle(Some(crate::options::Settle {
            idle: Duration::from_millis(200),
            min_bytes: 1,
            min_above_percent: 1,
        }));
    let open = |family: FamilyOptions| Store::open(dir.path(), StoreOptions::default().family_with("a", family));
    let store = open(family.clone())?;
    for i in 0..30_000 {
        store.put("a", format!("row{i:05}"), "c", "old")?;
    }
    // Once the settle has flushed and is about to merge, its merge waits for
    // the late writes (minor compactions before it merge freely).
    let (merging, merging_rx) = signal();
    let (release, release_rx) = signal();
    let inner = Arc::downgrade(&store.inner);
    store.inner.hooks.set("settle::flushed", move || {
        let Some(inner) = inner.upgrade() else { return };
        let (merging, release_rx) = (merging.clone(), release_rx.clone());
        inner.hooks.set("compaction::merging", move || {
            let _ = merging.send(());
            wait(&release_rx, "the late writes");
        });
    });
    wait(&merging_rx, "the settle's merge");
    // Under 1% of the family: not worth a second settle.
    for i in 0..50 {
        store.put("a", format!("row{i:05}"), "c", "new")?;
        store.delete("a", format!("row{:05}", 50 + i), "c")?;
    }
    store.flush()?;
    store.inner.hooks.set("compaction::merging", || {});
    let _ = release.send(());
    store.wait_for_background_work()?;
    assert_eq!(store.stats()?.family("a").map(|f| (f.settles, f.runs)), Some((1, 2)));
    let expect = |store: &Store, when: &str| -> TestResult {
        let tables = store.tables();
        assert_eq!(
            tables.first().map(|t| t.entries),
            Some(100),
            "{when}: the late run first"
        );
        for i in (0..30_000).step_by(7).chain(0..120) {
            let expected = match i {
                0..50 => Some(&b"new"[..]),
                50..100 => None,
                _ => Some(&b"old"[..]),
            };
            assert_eq!(
                value(store, &format!("row{i:05}"))?.as_deref(),
                expected,
                "{when}: row {i}"
            );
        }
        Ok(())
    };
    expect(&store, "settled")?;
    drop(store);
    let store = open(family.settle_when_idle(None))?;
    expect(&store, "reopened")?;
    Ok(())
}
