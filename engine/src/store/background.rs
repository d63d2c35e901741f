//! The background threads: one flushes, one compacts.
//!
//! Each sleeps on the store's condition variable until it is signalled (a
//! memtable was frozen, a flush finished), then works until there is nothing
//! left to do. Nothing polls on a timer. A failure stops the store's writes.

use super::*;

impl Inner {
    pub(super) fn background_loop(&self, job: Job) {
        loop {
            {
                let mut bg = self.background.lock();
                loop {
                    if bg.shutdown {
                        return;
                    }
                    let pending = match job {
                        Job::Flush => &mut bg.flush_pending,
                        Job::Compaction => &mut bg.compaction_pending,
                    };
                    if *pending {
                        *pending = false;
                        break;
                    }
                    self.wake.wait(&mut bg);
                }
                match job {
                    Job::Flush => bg.flushing = true,
                    Job::Compaction => bg.compacting = true,
                }
            }
            let result = loop {
                if self.shutting_down.load(Ordering::SeqCst) || self.stopped.lock().is_some() {
                    break Ok(());
                }
                let step = match job {
                    Job::Flush => self.flush_one(),
                    Job::Compaction => self.compact_minor(),
                };
                match step {
                    Ok(true) => continue,
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            if let Err(e) = result {
                if !self.shutting_down.load(Ordering::SeqCst) {
                    self.stop(&e);
                }
            }
            let mut bg = self.background.lock();
            match job {
                Job::Flush => {
                    bg.flushing = false;
                    bg.compaction_pending = true;
                }
                Job::Compaction => bg.compacting = false,
            }
            drop(bg);
            self.wake.notify_all();
        }
    }
}
