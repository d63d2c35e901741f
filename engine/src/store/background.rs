//! The background threads: one flushes, one compacts, and unless every write
//! syncs (`SyncPolicy::Always`) one syncs the log: when a write has waited
//! its interval (`Interval`), or to write the log back ahead of its rotation
//! (`Never`, `Buffered`).
//!
//! Each sleeps on the store's condition variable until it is signalled (a
//! memtable was frozen, a flush finished, a write is waiting for its interval
//! sync), then works until there is nothing left to do. Nothing polls: the
//! sync thread sleeps until the one moment a sync is due, and only while a
//! write waits for one; the flush thread wakes once after a pause in the
//! writes, and only while flushed memtables wait to be freed (see
//! `retire`); the compacting thread, out of work, wakes when a family's
//! writes will have paused long enough for its settle, and only while some
//! family qualifies for one (see `settle`: under a steady load, once per
//! idle time; with none qualifying, never). A failure stops the store's
//! writes.
//!
//! The compacting thread runs at a lower CPU priority than the writers
//! (`StoreOptions::compaction_nice`): a merge can wait a scheduler slice,
//! while a writer waiting behind one is a latency spike. The flushing thread
//! keeps the writers' priority, since a writer facing full memtables waits
//! for it.

use parking_lot::MutexGuard;

use super::retire::RETIRED_GRACE;
use super::settle::{Quiet, SettleCheck};
use super::*;

impl Inner {
    pub(super) fn background_loop(&self, job: Job) {
        if let Job::Sync = job {
            return self.log_sync_loop();
        }
        if let Job::Compaction = job {
            lower_cpu_priority(self.options.compaction_nice);
        }
        // The compacting thread's memory of each family's writes (see `settle`).
        let mut quiet = Quiet::default();
        loop {
            {
                let mut bg = self.background.lock();
                loop {
                    if bg.shutdown {
                        return;
                    }
                    let pending = match job {
                        Job::Flush => &mut bg.flush_pending,
                        _ => &mut bg.compaction_pending,
                    };
                    if *pending {
                        *pending = false;
                        break;
                    }
                    if matches!(job, Job::Flush) && self.has_retired() {
                        // Flushed memtables wait for the writer to free them
                        // (see `retire`); after a pause in the writes, this
                        // thread frees them instead.
                        if self.wake.wait_for(&mut bg, RETIRED_GRACE).timed_out() {
                            MutexGuard::unlocked(&mut bg, || self.free_retired_if_writes_paused());
                        }
                    } else if let (Job::Compaction, Some(at)) = (job, bg.settle_at) {
                        // A family qualifies for a settle: look again once
                        // its writes may have paused long enough.
                        if self.wake.wait_until(&mut bg, at).timed_out() || Instant::now() >= at {
                            break;
                        }
                    } else {
                        self.wake.wait(&mut bg);
                    }
                }
                match job {
                    Job::Flush => bg.flushing = true,
                    _ => bg.compacting = true,
                }
            }
            let result = loop {
                if self.shutting_down.load(Ordering::SeqCst) || self.stopped.lock().is_some() {
                    break Ok(None);
                }
                let step = match job {
                    Job::Flush => self.flush_one(),
                    _ => self.compact_minor(),
                };
                match step {
                    Ok(true) => continue,
                    Ok(false) if matches!(job, Job::Compaction) => {}
                    Ok(false) => break Ok(None),
                    Err(e) => break Err(e),
                }
                // Out of minor compactions: a family to settle, or a moment
                // to look again.
                match self.settle_if_quiet(&mut quiet) {
                    Ok(SettleCheck::Settled) => continue,
                    Ok(SettleCheck::Next(at)) => break Ok(at),
                    Err(e) => break Err(e),
                }
            };
            let settle_at = match result {
                Ok(at) => at,
                Err(e) => {
                    if !self.shutting_down.load(Ordering::SeqCst) {
                        self.stop(&e);
                    }
                    None
                }
            };
            let mut bg = self.background.lock();
            match job {
                Job::Flush => {
                    bg.flushing = false;
                    bg.compaction_pending = true;
                }
                _ => {
                    bg.compacting = false;
                    // Set with `compacting` cleared, under the lock: a
                    // waiter for background work never sees the thread idle
                    // while a settle is still due.
                    bg.settle_at = settle_at;
                }
            }
            self.wake.notify_all();
        }
    }

    /// `SyncPolicy::Interval(d)`: a write that does not sync the log itself
    /// (its last sync is younger than `d`) sets the moment one is due; this
    /// thread sleeps until then and syncs, so an unsynced write waits at most
    /// `d` even if no other write comes. `Never` and `Buffered`: a write
    /// hands over the segment every `LOG_WRITEBACK_BYTES`, and this thread
    /// syncs it without the write lock, while writes go on.
    fn log_sync_loop(&self) {
        loop {
            let writeback = {
                let mut bg = self.background.lock();
                loop {
                    if bg.shutdown {
                        return;
                    }
                    if let Some(segment) = bg.writeback.take() {
                        break Some(segment);
                    }
                    match bg.sync_at {
                        None => self.wake.wait(&mut bg),
                        Some(at) if Instant::now() >= at => {
                            bg.sync_at = None;
                            break None;
                        }
                        Some(at) => {
                            self.wake.wait_until(&mut bg, at);
                        }
                    }
                }
            };
            if let Some((file, path)) = writeback {
                // As any failed fsync: the kernel may have dropped pages of
                // acknowledged writes, so the store stops.
                if let Err(e) = crate::log::sync_file(&file, &path) {
                    self.stop(&e);
                }
                continue;
            }
            let mut w = self.writer.lock();
            if w.unsynced && self.stopped.lock().is_none() {
                // A failure stops the store (in `sync_log`); the next write
                // gets the error.
                let _ = self.sync_log(&mut w);
            }
            drop(w);
            self.hook("background::interval_sync");
        }
    }
}

/// Lowers the calling thread's CPU priority to the nice value `nice` (at
/// most 19, the lowest; 0 changes nothing). On Linux a nice value belongs
/// to a thread, not to its process (`setpriority(2)` given a thread id), so
/// only this thread yields. Lowering needs no privilege; if the call fails
/// anyway, the thread keeps its priority, which costs latency, not
/// correctness.
#[cfg(target_os = "linux")]
fn lower_cpu_priority(nice: u8) {
    if nice == 0 {
        return;
    }
    // SAFETY: neither call takes a pointer; each only reads or sets the
    // calling thread's scheduling attributes.
    unsafe {
        let thread = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, i32::from(nice.min(19)));
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_cpu_priority(_nice: u8) {}
