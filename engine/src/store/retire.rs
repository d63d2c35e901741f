//! Who frees a flushed memtable: the writer, on its next write.
//!
//! A memtable's memory was allocated by the thread that wrote it. glibc's
//! allocator gives every thread an arena of its own, so the writer's
//! allocations are uncontended; but a block freed by *another* thread goes
//! back to the arena it came from, under that arena's lock, which the writer
//! takes for its own allocations. When the memtable was crossbeam's skip
//! list, one allocation per node, the flush thread dropping the memtable it
//! had just written out freed ~600k nodes into the writer's arena one lock
//! at a time. Measured on a YCSB load of 300k records (10 cells each): the
//! writer blocked on that lock ~6000 times, a third of its wall time, and
//! loaded 90k records/s; retired here and freed by the writer, 126-132k.
//!
//! So a flush *retires* its memtable here, and the next write frees it after
//! releasing the write lock: the memory goes back to the arena it came from,
//! by the thread that owns it. Since the memtable keeps its nodes in chunks
//! of its own ([`crate::arena`]), as RocksDB's and LevelDB's do, a flushed
//! 64 MiB memtable is ten small chunks to free and about thirty of 2 MiB
//! kept for the next memtable (not 600k frees), and the fight for the lock
//! is small wherever it is freed; the writer frees it all the same.
//!
//! A store that stops writing must not keep its retired memtables forever:
//! the flush thread, with no work, wakes after [`RETIRED_GRACE`] and frees
//! those no write has followed (the writer is not allocating, so there is no
//! lock to fight over). Under a steady load the writer always writes within
//! the grace, and frees them itself. (Freeing at the very moment the flush
//! thread runs out of work did not do, with crossbeam's list: the writer had
//! not yet written after the flush in almost every case, and the contention
//! came back.)

use std::time::Duration;

use super::*;

/// How long the writes must pause before the flush thread frees retired
/// memtables itself.
pub(super) const RETIRED_GRACE: Duration = Duration::from_millis(100);

impl Inner {
    /// Hands a memtable whose flush is installed to the next writer to free.
    pub(super) fn retire(&self, memtable: Arc<Memtable>) {
        let seen = self.visible_seq.load(Ordering::Acquire);
        self.retired.lock().push((memtable, seen));
    }

    pub(super) fn has_retired(&self) -> bool {
        !self.retired.lock().is_empty()
    }

    /// The writer frees every retired memtable (those a reader still holds,
    /// in a snapshot or a read under way, live on until that reader lets go).
    pub(super) fn free_retired(&self) {
        let retired = std::mem::take(&mut *self.retired.lock());
        drop(retired);
    }

    /// The flush thread, after a pause in the writes, frees the retired
    /// memtables no write has followed. One a write has followed (that write
    /// missed it, retired while it ran) is marked as seen now, and freed
    /// after the next pause if no writer frees it first.
    pub(super) fn free_retired_if_writes_paused(&self) {
        self.hook("retire::paused");
        let now = self.visible_seq.load(Ordering::Acquire);
        let paused: Vec<(Arc<Memtable>, u64)> = {
            let mut retired = self.retired.lock();
            let (paused, mut written_since): (Vec<_>, Vec<_>) = retired.drain(..).partition(|(_, seen)| *seen == now);
            for (_, seen) in &mut written_since {
                *seen = now;
            }
            *retired = written_since;
            paused
        };
        drop(paused);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::sync::{Mutex as StdMutex, Weak};
    use std::time::{Duration, Instant};

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    const PATIENCE: Duration = Duration::from_secs(30);

    /// The family's active memtable, weakly held so the test never keeps it alive.
    fn active(store: &Store) -> Weak<Memtable> {
        let v = store.inner.current();
        let f = v.families.values().next().map(|f| Arc::downgrade(&f.active));
        f.unwrap_or_default()
    }

    /// Waits (at most `PATIENCE`) until `done` holds.
    fn wait_until(what: &str, done: impl Fn() -> bool) -> TestResult {
        let deadline = Instant::now() + PATIENCE;
        while !done() {
            if Instant::now() > deadline {
                return Err(format!("timed out waiting until {what}").into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// A store with family "a" whose memtable freezes (and is flushed) every
    /// `entries` writes.
    fn store_flushing_every(dir: &Path, entries: usize) -> Result<Store> {
        let family = FamilyOptions::default()
            .memtable_max_entries(entries)
            .compaction_trigger(0);
        Store::open(dir, StoreOptions::default().family_with("a", family))
    }

    /// Writes the four cells that fill the active memtable of a store from
    /// `store_flushing_every(_, 4)`, which freezes it for the flush thread;
    /// returns that memtable, weakly held.
    fn fill_the_memtable(store: &Store) -> Result<Weak<Memtable>> {
        let memtable = active(store);
        for i in 0..4 {
            store.put("a", format!("r{i}"), "c", "v")?;
        }
        Ok(memtable)
    }

    #[test]
    fn a_flushed_memtable_is_freed_by_the_next_write_not_by_the_flush_thread() -> TestResult {
        let dir = tempfile::tempdir()?;
        let store = store_flushing_every(dir.path(), 4)?;
        // The flush thread, about to free after a pause, waits here until the test ends.
        let (release, parked) = channel::<()>();
        let parked = Arc::new(StdMutex::new(parked));
        store.inner.hooks.set("retire::paused", move || {
            let rx = parked.lock().unwrap_or_else(|e| e.into_inner());
            let _ = rx.recv_timeout(PATIENCE);
        });
        let first = fill_the_memtable(&store)?;
        // The memtable was frozen, flushed and retired.
        wait_until("the memtable is retired", || store.inner.retired.lock().len() == 1)?;
        assert!(first.upgrade().is_some(), "the flush thread freed the memtable");

        store.put("a", "r9", "c", "v")?;
        assert!(first.upgrade().is_none(), "the next write did not free it");
        assert!(store.inner.retired.lock().is_empty());
        release.send(())?;
        Ok(())
    }

    #[test]
    fn a_store_that_stops_writing_has_its_flushed_memtable_freed_by_the_flush_thread() -> TestResult {
        let dir = tempfile::tempdir()?;
        let store = store_flushing_every(dir.path(), 4)?;
        let first = fill_the_memtable(&store)?;
        wait_until("the flushed memtable is freed", || first.upgrade().is_none())?;
        assert!(store.inner.retired.lock().is_empty());
        Ok(())
    }

    #[test]
    fn a_snapshot_keeps_a_retired_memtable_until_it_is_dropped() -> TestResult {
        let dir = tempfile::tempdir()?;
        let store = store_flushing_every(dir.path(), 2)?;
        let first = active(&store);
        store.put("a", "r1", "c", "one")?;
        let snapshot = store.snapshot();
        store.put("a", "r2", "c", "two")?;
        // Flushed, retired and freed by the idle flush thread: only the
        // snapshot holds the memtable now.
        wait_until("only the snapshot holds the memtable", || first.strong_count() == 1)?;
        let cell = snapshot.get("a", "r1", "c")?.map(|c| c.value.to_vec());
        assert_eq!(cell, Some(b"one".to_vec()));
        drop(snapshot);
        assert!(first.upgrade().is_none());
        Ok(())
    }
}
