//! The settle at rest: a family whose writes have paused is merged whole
//! into one run (HBase's major compaction of a quiet table): a leveled
//! family into its last level, a size-tiered family into a single run.
//!
//! Neither strategy leaves a quiet family in one run. Leveled compaction
//! keeps the levels above the last small, but not empty: level 0 holds the
//! last few flushes and the base level up to a tenth of the last, all of it
//! newer versions of keys whose older copies wait in the last level.
//! Size-tiered compaction keeps several runs side by side, and a cell
//! overwritten since the largest run was written has a copy in it and one
//! in each newer run that holds it, until the tiers meet (at 10M keys of
//! db_bench's shape, a fill and an overwrite leave 20 and 35 files, 0.37
//! and 0.90 superseded copies per key, 1.48 and 2.07 times the user's bytes).
//! While writes go on that is the price of cheap merges; once they stop,
//! nothing will ever merge those copies away. So when the compacting
//! thread has nothing else to do, it looks at each family
//! ([`compaction::settle_due_in`], a pure decision: big enough, and enough
//! of it outside the run a settle would leave, which is the last level of
//! a leveled family and the largest run of a size-tiered one) and, if one
//! qualifies, sleeps until its writes will have paused for the family's
//! idle time, then looks again. A family with no write since is settled:
//! its memtable is flushed, then every run is merged into one
//! (`Inner::compact_major`, the work of [`Store::compact`]: at the last
//! level, or for a size-tiered family at level 0, where its runs live). The
//! result is one run, so the same decision finds nothing outside it, and
//! the family is not settled again until new writes reach its percentage
//! (3% by default) of it.
//!
//! Why flush first: the memtable holds the newest writes, each a newer copy
//! of some key in the tables or a key they lack, and the log segment behind it stays on
//! disk as long as the memtable holds its writes (at 10M keys of db_bench's
//! shape, 0.011 to 0.017 of the user's bytes, up to 0.046 with a full
//! memtable). Flushed, it joins the merge, and its segment is deleted once
//! no other family needs it. The cost is one small table file, written and
//! merged at once, and a memtable's memory freed that the next write would
//! have filled again.
//!
//! A write during a settle just goes on: its memtable is flushed to level 0
//! as usual, and stays there until the next minor compaction or settle. A
//! close cuts the settle short as it does any compaction (nothing
//! installed, its output removed). [`Store::wait_for_background_work`]
//! counts a family waiting for its settle as work left.

use std::collections::HashMap;

use super::*;

/// What the compacting thread remembers of each family between two looks:
/// how many writes it had taken, and since when that number has not moved.
#[derive(Default)]
pub(super) struct Quiet {
    families: HashMap<u32, (u64, Instant)>,
}

/// What a look for a family to settle did.
pub(super) enum SettleCheck {
    /// It settled one; the compacting thread looks again (minor compactions
    /// first: flushes may have landed meanwhile).
    Settled,
    /// None was due: look again at this moment (`None`: no family
    /// qualifies, so only new work wakes the thread).
    Next(Option<Instant>),
}

impl Inner {
    /// Settles the first family due a settle, if one is; else says when
    /// the next one will be. Only the compacting thread calls this, with its
    /// own `quiet`.
    pub(super) fn settle_if_quiet(&self, quiet: &mut Quiet) -> Result<SettleCheck> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Ok(SettleCheck::Next(None));
        }
        let now = Instant::now();
        let v = self.current();
        quiet.families.retain(|id, _| v.families.contains_key(id));
        let mut next: Option<Instant> = None;
        let mut due = None;
        for fam in v.families.values() {
            // Every write to the family adds to this counter, under the
            // write lock: unchanged since the last look, no write came.
            let writes = fam.counters.user_entries.load(Ordering::Relaxed);
            // A new count starts the idle time from a clock read after
            // the count: never earlier than the write that made it.
            let since = match quiet.families.get(&fam.id) {
                Some(&(seen, since)) if seen == writes => since,
                _ => Instant::now(),
            };
            quiet.families.insert(fam.id, (writes, since));
            let shapes: Vec<FileShape<'_>> = fam.tables.iter().map(|t| t.shape()).collect();
            // The memtables' entries at the tables' bytes per entry: about
            // what a flush of them would write.
            let (bytes, entries) = fam
                .tables
                .iter()
                .fold((0u64, 0u64), |(b, e), t| (b + t.meta.size, e + t.meta.entries));
            let in_memory: u64 = fam.frozen.iter().chain([&fam.active]).map(|m| m.entries() as u64).sum();
            let memtables = in_memory.saturating_mul(bytes / entries.max(1));
            match compaction::settle_due_in(&shapes, memtables, &fam.options, now.duration_since(since)) {
                None => {}
                Some(wait) if wait.is_zero() => {
                    due.get_or_insert_with(|| (fam.id, fam.name.clone(), fam.counters.clone()));
                }
                Some(wait) => {
                    // An idle time past what the clock can add is never over.
                    if let Some(at) = now.checked_add(wait) {
                        next = Some(next.map_or(at, |n| n.min(at)));
                    }
                }
            }
        }
        drop(v);
        let Some((id, name, counters)) = due else {
            return Ok(SettleCheck::Next(next));
        };
        self.flush_and_wait(&[id])?;
        self.hook("settle::flushed");
        match self.compact_major(id, &name) {
            Ok(report) => {
                counters.settles.fetch_add(1, Ordering::Relaxed);
                counters
                    .settle_bytes_written
                    .fetch_add(report.output_bytes, Ordering::Relaxed);
            }
            // Dropped (or truncated: a new id) since the look: nothing to settle.
            Err(Error::UnknownFamily(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(SettleCheck::Settled)
    }
}
