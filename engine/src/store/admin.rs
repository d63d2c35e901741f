//! Changing a family as a whole: its options (`alter`), all its cells at
//! once (`truncate`), or the family itself (`drop`), as the HBase shell's
//! `alter`, `truncate` and `drop` do for a table.
//!
//! Each is one manifest edit group installed like any other version change
//! (see `install`):
//! - **alter**: `SetFamilyOptions`. Reads use the new options at once (fewer
//!   versions, a TTL); files keep the block size, filter and encoding they
//!   were written with, and new flushes and compactions use the new ones.
//!   What they dropped stays dropped: more versions or a longer TTL show
//!   only what is still stored (an expired cell comes back only where no
//!   compaction has dropped it, and never one a deletion or a newer
//!   version hid; see `FamilyOptions::ttl`).
//! - **drop**: `RemoveFamily`. The family's id is never used again, so what
//!   the log still holds under it is skipped by every later replay; its
//!   table files are deleted once no snapshot holds them (a reader that took
//!   one before the drop still reads them), then its folder.
//! - **truncate**: `RemoveFamily` of the old id and `AddFamily` of the same
//!   name and options under a new id, in one group: the same family, empty.
//!
//! A drop or a truncate also records, as the last sequence number used,
//! the newest write its memtables held if no flush recorded one as new:
//! those writes are now in no table, and the segments that hold them are
//! no longer replayed.
//!
//! A drop or a truncate holds the writer lock and the family's compaction
//! lock while it installs, so no write or compaction of the family is half
//! done when it goes (a compaction running then finishes first). Its
//! memtables are not flushed: they are thrown away, as its files are; a
//! flush that was writing one when the family went finds the family gone
//! and deletes what it wrote.

use super::*;

impl Store {
    /// Gives a family new options (see the module documentation for what
    /// changes when).
    pub fn alter_family(&self, family: &str, options: FamilyOptions) -> Result<()> {
        options.validate()?;
        let id = self.inner.family_id(family)?;
        self.inner.install(|base| {
            let Some(now) = base.current.families.get(&id) else {
                return Err(Error::UnknownFamily(family.to_string()));
            };
            let mut next = (**now).clone();
            next.options = Arc::new(options.clone());
            let edits = vec![Edit::SetFamilyOptions {
                id,
                options: options.encode(),
            }];
            Ok((Change::new(edits, base.current.with_family(next)), ()))
        })
    }

    /// Drops a family: its cells, its files, and its name (which a later
    /// `create_family` may use again, for a new family).
    pub fn drop_family(&self, family: &str) -> Result<()> {
        let id = self.inner.family_id(family)?;
        let dropped = self.inner.remove_family(id, family, |_, _, current| {
            let mut next = current.clone();
            next.families.remove(&id);
            next.by_name.remove(family);
            Ok((Vec::new(), next))
        })?;
        let folder = dropped.dir.clone();
        drop(dropped);
        self.inner.hook("drop::installed");
        // Empty once no reader holds a table file of the family; if one
        // does, the next open removes what is left. A family created since
        // under the same name owns the folder now: the writer lock keeps
        // one from being created between the check and the removal.
        let _writer = self.inner.writer.lock();
        if self.inner.current().family(family).is_none() {
            let _ = std::fs::remove_dir(&folder);
        }
        Ok(())
    }

    /// Empties a family: every cell goes, the family and its options stay.
    pub fn truncate_family(&self, family: &str) -> Result<()> {
        let id = self.inner.family_id(family)?;
        self.inner.remove_family(id, family, |base, old, current| {
            let new_id = base.state.next_family_id();
            let edits = vec![
                Edit::AddFamily {
                    id: new_id,
                    name: family.to_string(),
                    options: old.options.encode(),
                },
                Edit::SetLogNumber {
                    family: new_id,
                    log_number: base.log_hint,
                },
            ];
            let mut next = current.clone();
            next.families.remove(&id);
            let empty = FamilyVersion {
                id: new_id,
                name: family.to_string(),
                options: old.options.clone(),
                dir: old.dir.clone(),
                active: Arc::new(Memtable::for_family(&old.options)),
                frozen: Vec::new(),
                tables: Vec::new(),
                counters: old.counters.clone(),
            };
            Ok((edits, next.with_family(empty)))
        })?;
        Ok(())
    }
}

impl Inner {
    /// Installs `RemoveFamily` of `id` with what `replace` adds (more edits,
    /// and the version after, made from the family and the current version),
    /// holding the family's compaction lock and the writer lock. The removed
    /// family's table files are marked for deletion; it is returned for its
    /// folder.
    fn remove_family(
        &self,
        id: u32,
        name: &str,
        replace: impl FnOnce(&install::Base<'_>, &FamilyVersion, &Version) -> Result<(Vec<Edit>, Version)>,
    ) -> Result<Arc<FamilyVersion>> {
        let lock = self.compaction_lock(id);
        let _compaction = lock.lock();
        let _writer = self.writer.lock();
        self.check_stopped()?;
        let removed = self.install(|base| {
            let Some(old) = base.current.families.get(&id).cloned() else {
                return Err(Error::UnknownFamily(name.to_string()));
            };
            let (more, version) = replace(base, &old, &base.current)?;
            let mut edits = vec![Edit::RemoveFamily { id }];
            edits.extend(more);
            // The family's memtables go, and with them its hold on the log
            // segments they came from: the next open replays from a later
            // segment, and checks that its first record follows the last
            // sequence number recorded. Writes only those memtables held
            // must count as used, or they read as missing records.
            let unflushed = std::iter::once(&old.active)
                .chain(&old.frozen)
                .map(|m| m.max_seq())
                .max()
                .unwrap_or(0);
            if unflushed > base.state.last_sequence {
                edits.push(Edit::LastSequence(unflushed));
            }
            Ok((Change::new(edits, version), old))
        })?;
        for table in &removed.tables {
            table.mark_obsolete();
        }
        Ok(removed)
    }
}
