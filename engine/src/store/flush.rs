//! Flush: a frozen memtable becomes a table file.
//!
//! The flush thread writes the oldest frozen memtable of a family to a new
//! table file (one run), leaving out the versions no reader can see any more
//! (a cell overwritten in the same memtable is written once), then installs
//! it (see `install`): one manifest edit adds the file and moves the family's
//! oldest needed log segment forward, and a new version replaces the
//! memtable by the file. Log segments no family needs any more are then
//! deleted.

use super::*;

impl Inner {
    /// Freezes the non-empty memtables of `ids` and waits until every frozen
    /// memtable of those families is in a table file. A close ends the wait
    /// with an error: the flush thread stops at once, and the compacting
    /// thread (which flushes a family before settling it) must too.
    pub(super) fn flush_and_wait(&self, ids: &[u32]) -> Result<()> {
        {
            let mut w = self.writer.lock();
            self.check_stopped()?;
            let v = self.current();
            let nonempty: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|id| v.families.get(id).is_some_and(|f| !f.active.is_empty()))
                .collect();
            if !nonempty.is_empty() {
                self.rotate(&mut w, &nonempty)?;
            }
        }
        let mut bg = self.background.lock();
        loop {
            self.check_stopped()?;
            if bg.shutdown {
                return Err(Error::WritesStopped("the store is closing".into()));
            }
            let v = self.current();
            if ids
                .iter()
                .all(|id| v.families.get(id).is_none_or(|f| f.frozen.is_empty()))
            {
                return Ok(());
            }
            self.wake.wait(&mut bg);
        }
    }

    /// Writes the oldest frozen memtable of some family to a table file and
    /// installs it. Returns whether there was one.
    pub(super) fn flush_one(&self) -> Result<bool> {
        let v = self.current();
        let Some((fam, memtable)) = v
            .families
            .values()
            .find_map(|f| f.frozen.last().map(|m| (f.clone(), m.clone())))
        else {
            return Ok(false);
        };
        let run = self.next_file.fetch_add(1, Ordering::SeqCst);
        let mut out = TableOutput::new(&fam.dir, &self.next_file, &fam.options, run, 0, false);
        // Every reader of the version installed below reads at or above the
        // sequence visible now (see `Inner::snapshot`).
        let horizon = self.visible_seq.load(Ordering::Acquire);
        compaction::flush_memtable(&memtable, &fam.options, horizon, now_ms(), &mut out)?;
        let tables = out.finish()?;
        let written: u64 = tables.iter().map(|t| t.meta.size).sum();
        self.hook("flush::written");

        let dropped = self.install(|base| {
            let mut next = (*base.current).clone();
            let Some(now) = base.current.families.get(&fam.id) else {
                // The family was dropped or truncated while this flush ran
                // (see `admin`): its memtable went with it, and so does what
                // the flush wrote.
                for t in tables {
                    t.discard();
                }
                return Ok((Change::new(Vec::new(), next), true));
            };
            let frozen: Vec<Arc<Memtable>> = now
                .frozen
                .iter()
                .filter(|m| !Arc::ptr_eq(m, &memtable))
                .cloned()
                .collect();
            // The family still needs the oldest segment its other memtables
            // hold; with none, the newest segment (the log hint, read first).
            let from_memtables = frozen
                .iter()
                .chain(std::iter::once(&now.active))
                .filter_map(|m| m.first_log())
                .min();
            self.hook("flush::memtables_read");
            let log_number = from_memtables.unwrap_or(base.log_hint);
            let mut edits: Vec<Edit> = tables
                .iter()
                .map(|t| Edit::AddTable {
                    family: fam.id,
                    table: t.meta.clone(),
                })
                .collect();
            edits.push(Edit::SetLogNumber {
                family: fam.id,
                log_number,
            });
            // A family with nothing in memory holds no log: move its log
            // number up too, or an idle family pins every segment after its
            // last flush.
            for (id, other) in &base.current.families {
                let stale = base
                    .state
                    .families
                    .get(id)
                    .is_some_and(|s| s.log_number < base.log_hint);
                if *id != fam.id && stale && other.frozen.is_empty() && other.active.is_empty() {
                    edits.push(Edit::SetLogNumber {
                        family: *id,
                        log_number: base.log_hint,
                    });
                }
            }
            edits.push(Edit::LastSequence(base.state.last_sequence.max(memtable.max_seq())));
            let mut f = (**now).clone();
            f.frozen = frozen;
            next = next.with_family(f);
            let tables = tables.into_iter().map(|t| (fam.id, t)).collect();
            // Counted before the new version is swapped in: `flush_and_wait`
            // returns once the version no longer holds the memtable, and
            // counted after the install, the statistics read right after
            // `Store::flush` missed the last flush. (If the manifest append
            // fails, the store stops; the bytes were written all the same.)
            fam.counters.flushes.fetch_add(1, Ordering::Relaxed);
            fam.counters.flush_bytes.fetch_add(written, Ordering::Relaxed);
            Ok((
                Change {
                    edits,
                    tables,
                    version: next,
                },
                false,
            ))
        })?;
        if dropped {
            return Ok(true);
        }
        // Removing files needs no manifest lock: the manifest already says
        // these segments are not needed.
        if let Some(needed) = self.oldest_log_needed() {
            self.delete_logs_before(needed);
        }
        // The writer frees it (see `retire`): dropped here, its nodes would
        // go back to the writer's malloc arena under the lock the writer needs.
        drop(v);
        self.retire(memtable);
        Ok(true)
    }

    /// Removes the log segments older than `needed` (every family's oldest
    /// needed segment), except the one being written.
    pub(super) fn delete_logs_before(&self, needed: u64) {
        let obsolete: Vec<u64> = {
            let logs = self.live_logs.lock();
            let current = logs.keys().next_back().copied().unwrap_or(0);
            logs.keys().copied().filter(|&n| n < needed && n != current).collect()
        };
        // Unlinked without the lock held, so a log rotation never waits on it.
        for n in obsolete {
            // A segment that cannot be removed is only wasted space; the next
            // open skips it (it is older than every family's log number) and
            // removes it.
            if cellar_fs::remove(&log_path(&self.dir, n)).is_ok() {
                self.live_logs.lock().remove(&n);
            }
        }
    }
}
