//! Adding a layout after launch: stage it, backfill it, then read from it
//! (or drop it).
//!
//! A new read path needs a new layout, and the layout needs every record
//! written before it existed. Copying them while the table keeps taking
//! writes is where hand-made copies drift, so the protocol is spelled out
//! here, and [`crate::Table::verify`] checks its result.
//!
//! 1. **Stage.** Under the table's write lock the definition gains the new
//!    layout in the state *building*, in the catalog and in memory. From
//!    that moment every insert, update and delete also writes the new layout,
//!    in its one atomic batch. Reads will not use the layout yet.
//! 2. **Copy in bounded batches.** The backfill takes a snapshot when it
//!    starts, after the staging: every record it does not see was written
//!    after staging, so a writer has put it in the new layout already. Each
//!    step reads the snapshot's next `batch_records` source cells after the
//!    cursor, without the lock (the expensive part: a range scan). Then,
//!    *under the write lock*, it re-reads each of those records from the live
//!    store and copies it only if it is unchanged; a record that changed or
//!    disappeared since the snapshot was written by a writer after staging,
//!    and that writer has already put it (or its tombstone) in the new
//!    layout. The copies, and the catalog's new cursor, are one batch.
//! 3. **Readable.** The step that finds the snapshot exhausted marks the
//!    layout readable, in the same batch as its last copies. Because the
//!    snapshot is fixed, the backfill ends however fast writers insert; a
//!    backfill that re-read the live source would chase every insert that
//!    lands after its cursor, and could run for ever. The price is the
//!    snapshot itself: it keeps the memtables and table files of its moment
//!    alive until the backfill ends.
//!
//! 4. **Dropped**, if it must go ([`crate::Table::drop_layout`]): the
//!    definition loses it under the write lock, then its family goes.
//!
//! Why no write is lost or duplicated: every write after staging reaches the
//! new layout itself, atomically with the source of truth. The backfill
//! copies a record only while holding the write lock and only in the state
//! the source holds at that instant, so a copy is never older than the
//! source: it can only rewrite, identically, what a writer already put, or
//! add a record no writer has touched since staging. A record deleted or
//! moved by a writer is never resurrected, because the re-read finds it gone
//! or changed. A crash loses nothing either: the cursor moves in the batch
//! that holds the copies it covers, so a reopened table resumes where the
//! last durable batch ended ([`crate::Table::backfill`] on the building
//! layout), and every write in between reached the layout by rule 1.
//!
//! The alternative, relying on the source cell's timestamp alone so that a
//! newer write always wins, needs timestamps that strictly increase per
//! record; a table writing at a fixed time (as the lesson does) has none,
//! and the engine lets the later of two equal timestamps win, which would
//! let a stale copy win. The re-read under the lock costs one point read per
//! copied record and holds writers back for one batch at a time.
//!
//! A copy does carry the source cell's timestamp, though (the one the
//! re-read returns): in families with a TTL a cell expires at its own time
//! plus the TTL, so a copy stamped with the time of the backfill would
//! outlive its source and serve a record the table no longer has.

use cellar_engine::{RowRange, Snapshot};

use crate::error::{Error, Result};
use crate::layout::{cells, Address, Layout, LayoutSpec, LayoutState, Role};
use crate::table::{create_layout_family, decode_cell, Changes, Table};

/// How a backfill runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackfillOptions {
    /// Source records read per batch (writers wait for at most one batch).
    pub batch_records: usize,
}

impl Default for BackfillOptions {
    fn default() -> BackfillOptions {
        BackfillOptions { batch_records: 1000 }
    }
}

/// How far a backfill has got, and what it has cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillProgress {
    /// The layout being filled.
    pub layout: String,
    /// Batches written.
    pub batches: u64,
    /// Source records read (from the snapshots).
    pub examined: u64,
    /// Records copied.
    pub copied: u64,
    /// Records not copied because a writer changed or deleted them since the
    /// snapshot (the writer wrote the new layout itself).
    pub skipped: u64,
    /// Entries written to the layout.
    pub entries_written: u64,
    /// Their bytes: row + column + value.
    pub bytes_written: u64,
    /// Entries the engine examined for the backfill's reads (the scans of
    /// the source and the re-reads under the lock), from their traces.
    pub read_entries_examined: u64,
    /// Data blocks those reads loaded.
    pub read_data_blocks: u64,
    /// Pages they touched.
    pub read_pages: u64,
    /// The layout is complete and readable.
    pub done: bool,
}

/// A backfill in progress: call [`Backfill::step`] until it returns true,
/// or [`Backfill::run`]. Writes to the table may go on meanwhile, from
/// other threads.
pub struct Backfill<'t> {
    table: &'t Table,
    /// The source as it was when the backfill started.
    snapshot: Snapshot,
    options: BackfillOptions,
    progress: BackfillProgress,
}

impl Table {
    /// Stages a new layout: from now on every write also goes to it; reads
    /// wait until a backfill has made it complete.
    pub fn stage_layout(&self, spec: &LayoutSpec) -> Result<()> {
        let def = self.definition();
        let layout = Layout::new(&def.schema, spec, Role::Copy, LayoutState::Building { cursor: None })?;
        if def.layout(&layout.name).is_ok() {
            return Err(def
                .schema
                .schema_error(format!("the table already has a layout {}", layout.name)));
        }
        create_layout_family(&self.store, &def, &layout, &self.options.family)?;
        let _w = self.lock_writes();
        let mut next = (*self.definition()).clone();
        next.layouts.push(layout);
        next.check_names()?;
        let mut changes = Changes::new(self.options.timestamp);
        self.put_definition(&mut changes, &next)?;
        self.store.write(&changes.batch)?;
        *self.def.write() = std::sync::Arc::new(next);
        Ok(())
    }

    /// A backfill of a staged layout (or one a crash interrupted: it resumes
    /// from its stored cursor).
    pub fn backfill(&self, layout: &str, options: BackfillOptions) -> Result<Backfill<'_>> {
        // The layout is checked, the backfill registered and its snapshot
        // taken under the lock of the running backfills, which a drop holds
        // from its check to its new definition: so a backfill never starts
        // on a layout a drop has already decided to remove.
        let mut running = self.backfilling.lock();
        let def = self.definition();
        if def.layout(layout)?.is_readable() {
            return Err(Error::NothingToBackfill(layout.to_string()));
        }
        if !running.insert(layout.to_string()) {
            return Err(Error::BackfillRunning(layout.to_string()));
        }
        let snapshot = self.store.snapshot();
        drop(running);
        Ok(Backfill {
            table: self,
            snapshot,
            options: BackfillOptions {
                batch_records: options.batch_records.max(1),
            },
            progress: BackfillProgress {
                layout: layout.to_string(),
                ..BackfillProgress::default()
            },
        })
    }

    /// Stages a layout and backfills it to the end, calling `on_progress`
    /// after every batch.
    pub fn add_layout(
        &self,
        spec: &LayoutSpec,
        options: BackfillOptions,
        on_progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<BackfillProgress> {
        self.stage_layout(spec)?;
        self.backfill(&spec.name, options)?.run(on_progress)
    }

    /// Removes a copy layout, staged or readable: the way back from a
    /// staging that cannot finish (a layout whose key refuses some records'
    /// values makes every write of such a record fail until it is gone) or
    /// from a read path no longer needed. Under the write lock the
    /// definition loses the layout, in the catalog and in memory, so no
    /// later write goes to it; then its family is dropped. The source of
    /// truth cannot be dropped, nor a layout whose backfill is running. If
    /// the process stops between the two steps, the family stays behind,
    /// named by no definition: `cellar drop-family` removes it.
    pub fn drop_layout(&self, name: &str) -> Result<()> {
        // Held until the definition no longer has the layout (see
        // `Table::backfill`); taken before the write lock, as nothing takes
        // them the other way round.
        let running = self.backfilling.lock();
        if running.contains(name) {
            return Err(Error::BackfillRunning(name.to_string()));
        }
        {
            let _w = self.lock_writes();
            let def = self.definition();
            if def.layout(name)?.role == Role::Source {
                return Err(def.schema.schema_error(format!(
                    "{name} is the source of truth: updates read from it and backfills copy it, so it stays"
                )));
            }
            let mut next = (*def).clone();
            next.layouts.retain(|l| l.name != name);
            let mut changes = Changes::new(self.options.timestamp);
            self.put_definition(&mut changes, &next)?;
            self.store.write(&changes.batch)?;
            *self.def.write() = std::sync::Arc::new(next);
        }
        drop(running);
        self.store.drop_family(name)?;
        Ok(())
    }
}

impl Backfill<'_> {
    /// Copies one batch; true once the layout is complete and readable.
    pub fn step(&mut self) -> Result<bool> {
        self.step_while(&mut || Ok(()))
    }

    /// [`Backfill::step`], running `meanwhile` between the batch's read of
    /// the source and its copies, with no lock held: the window in which a
    /// concurrent write meets the backfill. Writes made there land in the
    /// new layout by themselves, and the batch then skips the records they
    /// changed. (The lesson and the tests use it to place writes in that
    /// window deterministically.)
    pub fn step_while(&mut self, meanwhile: &mut dyn FnMut() -> Result<()>) -> Result<bool> {
        if self.progress.done {
            return Ok(true);
        }
        let table = self.table;
        let name = self.progress.layout.clone();
        let def = table.definition();
        let LayoutState::Building { cursor } = def.layout(&name)?.state.clone() else {
            self.progress.done = true;
            return Ok(true);
        };
        let source = def.source().name.clone();

        // 1. The next records after the cursor, from the snapshot, unlocked.
        let range = match &cursor {
            Some(c) => RowRange {
                from: Some(c.row.clone().into()),
                ..RowRange::all()
            },
            None => RowRange::all(),
        };
        let mut scan = self.snapshot.scan(&source, &range)?;
        let mut batch: Vec<(Address, bytes::Bytes)> = Vec::new();
        for cell in cells(&mut scan) {
            let (at, value) = cell?;
            if cursor.as_ref().is_some_and(|c| at <= *c) {
                continue;
            }
            batch.push((at, value));
            if batch.len() == self.options.batch_records {
                break;
            }
        }
        let trace = scan.trace();
        drop(scan);
        self.progress.read_entries_examined += trace.entries_examined();
        self.progress.read_data_blocks += trace.data_blocks();
        self.progress.read_pages += trace.pages_touched();
        self.progress.examined += batch.len() as u64;
        let exhausted = batch.len() < self.options.batch_records;
        meanwhile()?;

        // 2. Under the write lock: copy each record the source still holds unchanged.
        let _w = table.lock_writes();
        let def = table.definition();
        let layout = def.layout(&name)?.clone();
        if layout.is_readable() {
            self.progress.done = true;
            return Ok(true);
        }
        let source = def.source();
        let mut changes = Changes::new(table.options.timestamp);
        for (at, value) in &batch {
            let (now, trace) = table.store.get_traced(&source.name, &at.row, &at.column)?;
            self.progress.read_entries_examined += trace.entries_examined();
            self.progress.read_data_blocks += trace.data_blocks();
            self.progress.read_pages += trace.pages_touched();
            match now {
                Some(cell) if cell.value == *value => {
                    let record = decode_cell(&def, source, at, value)?;
                    let to = layout.address(&def.schema, &record)?;
                    changes.put_as_of(&layout.name, &to, value, cell.timestamp);
                    self.progress.copied += 1;
                }
                _ => self.progress.skipped += 1,
            }
        }

        // 3. The cursor (or readability) moves in the same batch as the copies.
        let mut next = (*def).clone();
        let cursor = batch.last().map(|(at, _)| at.clone()).or(cursor);
        for l in &mut next.layouts {
            if l.name == name {
                l.state = if exhausted {
                    LayoutState::Readable
                } else {
                    LayoutState::Building { cursor: cursor.clone() }
                };
            }
        }
        table.put_definition(&mut changes, &next)?;
        table.store.write(&changes.batch)?;
        *table.def.write() = std::sync::Arc::new(next);
        self.progress.batches += 1;
        self.progress.entries_written += changes.report.entries;
        self.progress.bytes_written += changes.report.bytes;
        self.progress.done = exhausted;
        Ok(exhausted)
    }

    /// How far it has got.
    pub fn progress(&self) -> &BackfillProgress {
        &self.progress
    }

    /// Runs to the end, calling `on_progress` after every batch.
    pub fn run(mut self, on_progress: &mut dyn FnMut(&BackfillProgress)) -> Result<BackfillProgress> {
        loop {
            let done = self.step()?;
            on_progress(&self.progress);
            if done {
                return Ok(self.progress.clone());
            }
        }
    }
}

impl Drop for Backfill<'_> {
    fn drop(&mut self) {
        self.table.backfilling.lock().remove(&self.progress.layout);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use cellar_engine::{Store, StoreOptions};

    use super::*;
    use crate::{Record, Schema, TableOptions};

    /// A drop of a layout waits for the write lock after it has found no
    /// backfill running; a backfill of that layout started in that wait
    /// must not be granted, or it would fill (from a snapshot taken before
    /// the drop) a layout of the same name staged again later, and mark it
    /// complete without the records written in between. Here the test holds
    /// the write lock as a writer would: the drop waits, a backfill is asked
    /// for, and at most one of the two may succeed.
    #[test]
    fn a_backfill_asked_for_while_its_layout_is_being_dropped_is_refused(
    ) -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Arc::new(Store::open(dir.path(), StoreOptions::default())?);
        let schema = Schema::new("t")
            .int("id")
            .int("group")
            .primary_key(&["id"])
            .source_of_truth(LayoutSpec::new("t", "pad(id,10)"));
        let table = Table::create(store, &schema, TableOptions::default())?;
        table.insert(&Record::new().with("id", 1).with("group", 1))?;
        let by_group = LayoutSpec::new("t_by_group", "pad(group,4) | pad(id,10)");
        table.stage_layout(&by_group)?;
        let (dropped, started) = std::thread::scope(|s| {
            let held = table.lock_writes();
            let dropper = s.spawn(|| table.drop_layout("t_by_group"));
            std::thread::sleep(Duration::from_millis(100));
            let starter = s.spawn(|| table.backfill("t_by_group", BackfillOptions::default()).map(drop));
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
            (dropper.join(), starter.join())
        });
        let (dropped, started) = (
            dropped.map_err(|_| "the drop panicked")?,
            started.map_err(|_| "the backfill panicked")?,
        );
        assert!(
            !(dropped.is_ok() && started.is_ok()),
            "a backfill was granted for a layout being dropped"
        );
        Ok(())
    }
}
