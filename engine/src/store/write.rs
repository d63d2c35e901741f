//! The write path: a write goes to the log, then to its families' memtables.
//!
//! One writer at a time holds the write lock: it gives the write its sequence
//! numbers and timestamps, appends one log record for the whole batch, inserts
//! every entry into its family's memtable, and freezes a memtable that is full
//! (starting a new log segment). With `SyncPolicy::Always` the fsync comes after
//! the lock is released, so concurrent writers share it (group commit), and the
//! write becomes visible to readers only once it is durable.

use super::*;

/// With `SyncPolicy::Never` or `Buffered`, the log thread `fdatasync`s the
/// segment being written each time this many bytes were appended to it
/// (RocksDB's `wal_bytes_per_sync`, at the 1 MiB it recommends).
///
/// Nothing waits for these syncs, and they promise nothing: they write the
/// segment back ahead of its rotation. A rotation must sync the closing
/// segment on the writer's path (see `rotate`); with 64 MiB memtables that
/// segment held ~70 MB the kernel had not yet written, and the writer waited
/// 30-60 ms for it, once per memtable. Written back 1 MiB at a time, what is
/// left for the rotation is at most about 1 MiB.
const LOG_WRITEBACK_BYTES: u64 = 1 << 20;

/// Operations of a write whose rows' filter lines are prefetched: enough
/// for a few rows, not a walk of a big batch twice.
const PREFETCH_ROWS: usize = 16;

impl Inner {
    /// Whether every family of `version` has room for another memtable: a
    /// write may go ahead without a stall.
    fn room(&self, version: &Version) -> bool {
        let max = self.options.max_immutable_memtables.max(1);
        version.families.values().all(|f| f.frozen.len() < max)
    }

    /// Waits while some family has too many memtables waiting for flush: the
    /// write stall that keeps memory bounded when writes outrun the disk.
    fn stall(&self) -> Result<()> {
        // Checked holding the lock a finished flush signals under.
        let mut bg = self.background.lock();
        loop {
            self.check_stopped()?;
            if self.room(&self.current()) {
                return Ok(());
            }
            self.wake.wait(&mut bg);
        }
    }

    pub(super) fn write(&self, ops: &[OpRef<'_>]) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        batch::check_limits(ops)?;
        // The version is read once, under the write lock, for both the stall
        // check and the write; a write that must stall waits without the lock.
        let (mut guard, version) = loop {
            let guard = self.writer.lock();
            self.check_stopped()?;
            let version = self.current();
            if self.room(&version) {
                break (guard, version);
            }
            drop(guard);
            self.stall()?;
        };
        let w = &mut *guard;
        let now = now_ms().max(w.last_ts);
        w.resolved.clear();
        // A batch usually names one family for all its operations: it is
        // looked up once, not once per cell.
        let mut last: Option<(&str, u32)> = None;
        for op in ops {
            let id = match last {
                Some((name, id)) if name == op.family => id,
                _ => {
                    let id = version
                        .by_name
                        .get(op.family)
                        .copied()
                        .ok_or_else(|| Error::UnknownFamily(op.family.to_string()))?;
                    last = Some((op.family, id));
                    id
                }
            };
            w.resolved.push((id, op.timestamp.unwrap_or(now)));
        }
        w.last_ts = now;
        // The row filter's lines for the batch's first rows are requested
        // now, to arrive while the log record is written (a new row's line
        // is a cache miss each; see `row_filter`). The memtable's inserter
        // hashes the row again: a hash of a few dozen bytes, against the
        // miss it hides.
        let mut prefetched: Option<&[u8]> = None;
        for (op, &(id, _)) in ops.iter().zip(&w.resolved).take(PREFETCH_ROWS) {
            if prefetched == Some(op.row) {
                continue;
            }
            prefetched = Some(op.row);
            if let Some(fam) = version.families.get(&id) {
                w.key.clear();
                key::row_prefix_into(op.row, &mut w.key);
                fam.active.prefetch_row(cellar_sstable::filter_hash(&w.key));
            }
        }
        let first = w.last_seq + 1;
        // The log's record format keeps the top byte of a sequence number
        // for itself (see `batch`), as keys do: a write that would number
        // past it is refused, before anything is written.
        let last = first.saturating_add(ops.len() as u64 - 1);
        if last > key::MAX_SEQUENCE {
            return Err(Error::TooLarge {
                what: "sequence number",
                len: usize::try_from(last).unwrap_or(usize::MAX),
                limit: usize::try_from(key::MAX_SEQUENCE).unwrap_or(usize::MAX),
            });
        }
        w.buf.clear();
        // The batch's timestamp is its first op's: `now` for a write at the
        // store's time (every such op shares it), or the caller's, when a
        // batch's ops all carry the same one (a load at one fixed time).
        let batch_ts = w.resolved.first().map_or(now, |&(_, ts)| ts);
        let mut encoder = batch::Encoder::begin(first, ops.len(), batch_ts, &mut w.buf);
        for (op, &(id, ts)) in ops.iter().zip(&w.resolved) {
            encoder.op(id, op.kind, ts, op.row, op.column, op.value);
        }
        // A batch is one log record. A batch of operations each within its
        // limit may still be too large for one: that is the caller's input,
        // refused before anything is written, not a failed log write (which
        // stops the store). Its buffer is not kept at that size.
        if w.buf.len() > crate::log::MAX_RECORD {
            let len = w.buf.len();
            w.buf = Vec::new();
            return Err(Error::TooLarge {
                what: "write batch",
                len,
                limit: crate::log::MAX_RECORD,
            });
        }
        let written = match w.log.append(&w.buf) {
            Ok(n) => n,
            Err(e) => {
                self.stop(&e);
                return Err(e);
            }
        };
        // With `Always`, the fsync happens after the write lock is released
        // (group commit, below); `Interval` syncs here when it is due, or
        // asks the sync thread to, so a write that no other follows is synced
        // within the interval too.
        let group_sync = self.options.sync == SyncPolicy::Always;
        if let SyncPolicy::Interval(every) = self.options.sync {
            if w.last_sync.elapsed() >= every {
                self.sync_log(w)?;
            } else if !w.unsynced {
                w.unsynced = true;
                let mut bg = self.background.lock();
                // A period too long to add to the clock never comes due
                // (`Instant + Duration` would panic): no timed sync, and a
                // close still syncs.
                bg.sync_at = w.last_sync.checked_add(every);
                self.wake.notify_all();
            }
        }
        if matches!(self.options.sync, SyncPolicy::Never | SyncPolicy::Buffered) {
            w.since_writeback += written;
            if w.since_writeback >= LOG_WRITEBACK_BYTES {
                w.since_writeback = 0;
                let mut bg = self.background.lock();
                bg.writeback = Some(w.log.sync_handle());
                self.wake.notify_all();
            }
        }
        let position = (w.log.number(), w.log.len());
        *self.appended.lock() = position;
        let sync_handle = group_sync.then(|| w.log.sync_handle());
        self.log_bytes.fetch_add(written, Ordering::Relaxed);
        let log_number = w.log.number();
        w.touched.clear();
        // The operations go in as runs of the same family (a whole batch,
        // usually): each run takes its memtable's inserter once and adds to
        // the family's counters once.
        let mut start = 0;
        while start < ops.len() {
            let id = w.resolved.get(start).map_or(0, |&(id, _)| id);
            let end = w
                .resolved
                .iter()
                .skip(start)
                .position(|&(other, _)| other != id)
                .map_or(ops.len(), |n| start + n);
            let run = start..end;
            start = end;
            let Some(fam) = version.families.get(&id) else {
                continue;
            };
            let mut inserter = fam.active.inserter(log_number);
            let mut user_bytes = 0;
            // The row's part of the key is encoded once for the cells of a
            // row that follow one another.
            let mut row: Option<(&[u8], usize)> = None;
            for (i, (op, &(_, ts))) in ops.iter().zip(&w.resolved).enumerate().take(run.end).skip(run.start) {
                let seq = first + i as u64;
                match row {
                    Some((same, len)) if batch::same_bytes(same, op.row) => w.key.truncate(len),
                    _ => {
                        w.key.clear();
                        key::row_prefix_into(op.row, &mut w.key);
                        inserter.enter_row(&w.key);
                        row = Some((op.row, w.key.len()));
                    }
                }
                key::encode_after_row_into(&mut w.key, op.column, ts, seq, op.kind);
                inserter.insert_in_row(&w.key, op.value, ts, seq, op.kind.is_tombstone());
                user_bytes += (op.row.len() + op.column.len() + op.value.len()) as u64;
            }
            drop(inserter);
            fam.counters.user_entries.fetch_add(run.len() as u64, Ordering::Relaxed);
            fam.counters.user_bytes.fetch_add(user_bytes, Ordering::Relaxed);
            if !w.touched.contains(&id) {
                w.touched.push(id);
            }
        }
        w.last_seq = first + ops.len() as u64 - 1;
        let last_seq = w.last_seq;
        if !group_sync {
            self.visible_seq.fetch_max(last_seq, Ordering::Release);
        }

        let full: Vec<u32> = w
            .touched
            .iter()
            .copied()
            .filter(|id| {
                version.families.get(id).is_some_and(|f| {
                    f.active.bytes() >= f.options.memtable_max_bytes
                        || f.options.memtable_max_entries.is_some_and(|n| f.active.entries() >= n)
                })
            })
            .collect();
        if !full.is_empty() {
            for id in &full {
                if let Some(f) = version.families.get(id) {
                    self.largest_full_memtable
                        .fetch_max(f.active.bytes() as u64, Ordering::Relaxed);
                }
            }
            self.rotate(w, &full)?;
        }
        drop(guard);
        if let Some((file, path)) = sync_handle {
            self.make_durable(position, &file, &path)?;
            self.hook("write::durable");
            // Every write up to `last_seq` is in the memtables (they were
            // inserted under the write lock) and, now, on stable storage.
            self.visible_seq.fetch_max(last_seq, Ordering::Release);
        }
        // Outside the write lock, so the next writer does not wait for it.
        self.free_retired();
        Ok(())
    }

    /// Group commit: returns once the log is durable up to `position`. The
    /// first writer to get here fsyncs everything appended so far; writers
    /// that queued behind it while it synced usually find their records
    /// already covered and return without an fsync of their own.
    pub(super) fn make_durable(&self, position: (u64, u64), file: &std::fs::File, path: &Path) -> Result<()> {
        let mut durable = self.durable.lock();
        // After a failed fsync nothing later proves the earlier records durable
        // (the kernel may have dropped their pages): every waiting writer fails.
        self.check_stopped()?;
        if *durable >= position {
            return Ok(());
        }
        // Everything appended to this segment before the fsync starts is covered
        // by it. (If the segment changed meanwhile, rotation synced this one.)
        let appended = *self.appended.lock();
        let target = if appended.0 == position.0 { appended } else { position };
        if let Err(e) = crate::log::sync_file(file, path) {
            self.stop(&e);
            return Err(e);
        }
        *durable = (*durable).max(target);
        Ok(())
    }

    /// Starts a new log segment and freezes the given families' memtables (plus
    /// any family whose memtable pins a log segment the store wants to delete).
    pub(super) fn rotate(&self, w: &mut Writer, families: &[u32]) -> Result<()> {
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        let new_log = match LogWriter::create(&log_path(&self.dir, number), number) {
            Ok(log) => log.buffered(self.options.sync.log_buffer()),
            Err(e) => {
                self.stop(&e);
                return Err(e);
            }
        };
        // The closing segment is synced whatever the policy: a family frozen
        // here may be flushed to a table file (durable) while another family
        // still needs this segment to replay its part of the same batches. An
        // unsynced segment would then let a power loss keep half of a batch.
        self.sync_log(w)?;
        {
            let mut durable = self.durable.lock();
            *durable = (*durable).max((w.log.number(), w.log.len()));
        }
        // Every write appended so far is in a memtable (inserted under the
        // write lock) and, now, durable: visible, before any of them can reach
        // a table file through the memtables frozen below.
        self.visible_seq.fetch_max(w.last_seq, Ordering::Release);
        *self.appended.lock() = (number, 0);
        let old = std::mem::replace(&mut w.log, new_log);
        let mut freeze: Vec<u32> = families.to_vec();
        {
            let mut logs = self.live_logs.lock();
            logs.insert(old.number(), old.len());
            logs.insert(number, 0);
            // An idle family must not pin the log forever: once the live
            // segments pass the limit, families still holding the oldest one
            // are flushed too.
            let total: u64 = logs.values().sum();
            if total > self.max_log_bytes() {
                if let Some(&oldest) = logs.keys().next() {
                    for (id, fam) in &self.current().families {
                        if fam.active.first_log().is_some_and(|l| l <= oldest) && !freeze.contains(id) {
                            freeze.push(*id);
                        }
                    }
                }
            }
        }
        self.hook("rotate::new_segment_live");
        self.install(|base| {
            let mut next = (*base.current).clone();
            for id in freeze {
                let Some(fam) = next.families.get(&id) else {
                    continue;
                };
                if fam.active.is_empty() {
                    continue;
                }
                let mut f = (**fam).clone();
                f.frozen.insert(0, f.active.clone());
                f.active = Arc::new(Memtable::for_family(&f.options));
                next.families.insert(id, Arc::new(f));
            }
            Ok((Change::new(Vec::new(), next), ()))
        })?;
        self.signal(Job::Flush);
        Ok(())
    }

    /// How many bytes the live log segments may hold before the families
    /// pinning the oldest one are flushed: `max_log_bytes`, or by default four
    /// times the largest memtable filled so far (none filled yet: no limit,
    /// since every segment then belongs to memtables still filling).
    ///
    /// Why four: each family needs the log from its oldest unflushed
    /// memtable on, up to `max_immutable_memtables` full ones and the one
    /// filling (three by default), so a busy family alone holds about three
    /// memtables' worth. Anything beyond that is pinned by a family whose
    /// memtable fills slowly, and flushing it early costs one small table.
    fn max_log_bytes(&self) -> u64 {
        match self.options.max_log_bytes {
            0 => match self.largest_full_memtable.load(Ordering::Relaxed) {
                0 => u64::MAX,
                largest => largest.saturating_mul(4),
            },
            limit => limit,
        }
    }

    /// Syncs the log (handing buffered records to the OS first). A failed
    /// fsync stops the store: the kernel may have dropped the dirty pages, so
    /// nothing written since the last good sync is known to be safe, and
    /// retrying cannot tell. Writes are refused until the store is reopened.
    pub(super) fn sync_log(&self, w: &mut Writer) -> Result<()> {
        if let Err(e) = w.log.sync() {
            self.stop(&e);
            return Err(e);
        }
        w.last_sync = Instant::now();
        w.unsynced = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log's compact record keeps the top byte of a sequence number for
    /// its format (see `batch`): a write that would number past
    /// `key::MAX_SEQUENCE` is refused whole, and a write that fits still goes in.
    #[test]
    fn a_write_numbered_past_the_largest_sequence_number_is_refused(
    ) -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(dir.path(), StoreOptions::default().family("a"))?;
        store.inner.writer.lock().last_seq = key::MAX_SEQUENCE - 1;
        let mut two = crate::WriteBatch::new();
        two.put("a", "r", "c1", "v").put("a", "r", "c2", "v");
        match store.write(&two) {
            Err(Error::TooLarge { what, len, limit }) => {
                assert_eq!(what, "sequence number");
                assert_eq!((len as u64, limit as u64), (key::MAX_SEQUENCE + 1, key::MAX_SEQUENCE));
            }
            other => return Err(format!("expected the write refused, got {other:?}").into()),
        }
        assert_eq!(store.get("a", "r", "c1")?, None, "nothing of the refused write went in");
        store.put("a", "r", "c1", "v")?;
        assert_eq!(
            store.get("a", "r", "c1")?.map(|c| c.value.to_vec()),
            Some(b"v".to_vec())
        );
        Ok(())
    }

    /// A store whose last write took `key::MAX_SEQUENCE` reopens (its log
    /// replayed, then its tables) with that write, refuses the next one
    /// with `TooLarge` (never numbering it from 0), and a read-only open
    /// reads it too.
    #[test]
    fn a_store_at_the_largest_sequence_number_reopens_with_its_last_write_and_refuses_the_next(
    ) -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let options = || StoreOptions::default().family("a");
        {
            let store = Store::open(dir.path(), options())?;
            // A write at MAX - 2 flushed, so the manifest's last sequence
            // number is there too; the last two only in the log.
            store.inner.writer.lock().last_seq = key::MAX_SEQUENCE - 3;
            store.put_at("a", "flushed", "c", 7, "v")?;
            store.flush()?;
            let mut two = crate::WriteBatch::new();
            two.put_at("a", "r", "c1", 7, "one").put_at("a", "r", "c2", 7, "two");
            store.write(&two)?;
        }
        let value = |cell: Option<crate::Cell>| cell.map(|c| (c.timestamp, c.value.to_vec()));
        let reader = crate::ReadOnlyStore::open(dir.path())?;
        assert_eq!(
            value(reader.snapshot().get("a", "r", "c2")?),
            Some((7, b"two".to_vec()))
        );
        for _ in 0..2 {
            let store = Store::open(dir.path(), options())?;
            assert_eq!(value(store.get("a", "r", "c1")?), Some((7, b"one".to_vec())));
            assert_eq!(value(store.get("a", "r", "c2")?), Some((7, b"two".to_vec())));
            assert_eq!(store.inner.writer.lock().last_seq, key::MAX_SEQUENCE);
            match store.put_at("a", "r", "c2", 7, "three") {
                Err(Error::TooLarge {
                    what: "sequence number",
                    ..
                }) => {}
                other => return Err(format!("expected the write refused, got {other:?}").into()),
            }
            assert_eq!(value(store.get("a", "r", "c2")?), Some((7, b"two".to_vec())));
        }
        Ok(())
    }
}
