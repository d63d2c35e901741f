//! Installing a version: the one way the store's set of sources changes.
//!
//! A flush, a compaction, a new family and a log rotation all end the same
//! way: a new [`Version`] replaces the current one, and (all but the
//! rotation) the manifest records why. [`Inner::install`] is the only place
//! that happens, in this order (LevelDB's `VersionSet::LogAndApply`):
//!
//! 1. Take the manifest lock: one install at a time.
//! 2. Read the writer's newest log segment (the *log hint*) before looking at
//!    any memtable. A write that lands after this read is in that segment or
//!    a newer one; read the other way round, a write could land in segment L
//!    and the log move on to L+1 between the two reads, and the install
//!    would record that nothing older than L+1 is needed while the write
//!    lives only in memory.
//! 3. Read the current version, and decide the change from the two.
//! 4. Add the next file number if numbers were handed out since the
//!    manifest last recorded it (every flush, compaction and move takes
//!    some), apply the edits to a copy of the manifest's state, append them
//!    durably, then swap the state ([`Manifest::log_and_apply`]). If the append
//!    fails, nothing in memory has changed.
//! 5. Give the new table files their final names and open them; swap the
//!    version.
//! 6. Signal the waiting threads, holding the lock they wait under.

use super::*;
use crate::manifest::ManifestState;
use crate::output::PendingTable;

/// What a change is decided from, read in the order the protocol says.
pub(super) struct Base<'a> {
    /// The writer's newest log segment, read before any memtable.
    pub log_hint: u64,
    /// The version to change.
    pub current: Arc<Version>,
    /// What the manifest records now.
    pub state: &'a ManifestState,
}

/// A change to install.
pub(super) struct Change {
    /// The edits that make it durable (none: a change of memory only, such
    /// as freezing a memtable).
    pub edits: Vec<Edit>,
    /// Table files the edits list, still under their pending names, with
    /// their family: each is added to `version` once published.
    pub tables: Vec<(u32, PendingTable)>,
    /// The next version, apart from `tables`.
    pub version: Version,
}

impl Change {
    /// A change that adds no table file.
    pub fn new(edits: Vec<Edit>, version: Version) -> Change {
        Change {
            edits,
            tables: Vec::new(),
            version,
        }
    }
}

impl Inner {
    /// Installs the change `decide` makes from the current state (see the
    /// module's steps), and returns what `decide` returned with it. An error
    /// from `decide` or from the manifest leaves everything as it was; the
    /// pending table files of a change that was not recorded are removed.
    pub(super) fn install<T>(&self, decide: impl FnOnce(&Base<'_>) -> Result<(Change, T)>) -> Result<T> {
        let mut manifest = self.manifest.lock();
        let log_hint = self.writer_log_number_hint();
        let current = self.current();
        let base = Base {
            log_hint,
            current,
            state: manifest.state(),
        };
        let (change, out) = decide(&base)?;
        let Change {
            mut edits,
            tables,
            mut version,
        } = change;
        if let Some(edit) = self.next_file_edit(&edits, manifest.state()) {
            edits.push(edit);
        }
        if let Err(e) = manifest.log_and_apply(&edits, &self.next_file) {
            for (_, table) in tables {
                table.discard();
            }
            return Err(e);
        }
        let mut published: BTreeMap<u32, Vec<Arc<TableFile>>> = BTreeMap::new();
        for (family, table) in tables {
            // A failure here leaves the remaining files pending but listed:
            // the next open gives them their names. The store stops (the
            // caller's error), and its old version stays consistent.
            published
                .entry(family)
                .or_default()
                .push(Arc::new(table.publish(&self.block_cache)?));
        }
        for (id, files) in published {
            if let Some(fam) = version.families.get(&id) {
                let mut f = (**fam).clone();
                f.tables.extend(files);
                FamilyVersion::order_tables(&mut f.tables);
                version = version.with_family(f);
            }
        }
        self.set_current(version);
        drop(manifest);
        self.notify_waiters();
        Ok(out)
    }

    /// The edit that records the next file number, for a change that writes
    /// the manifest while numbers have been handed out since it last said:
    /// the tables the change lists, and any number taken meanwhile (a
    /// move's new run, a log segment). A number the manifest does not cover
    /// is handed out again after a reopen, and two runs of one number are
    /// read as one (see `OverlappingFiles` in `read`). A change that writes
    /// nothing records nothing: the next one that writes covers it.
    fn next_file_edit(&self, edits: &[Edit], state: &ManifestState) -> Option<Edit> {
        let next = self.next_file.load(Ordering::SeqCst);
        (!edits.is_empty() && next > state.next_file_number).then_some(Edit::NextFileNumber(next))
    }

    /// The oldest log segment some family still needs, as the manifest records it.
    pub(super) fn oldest_log_needed(&self) -> Option<u64> {
        self.manifest.lock().state().oldest_log_needed()
    }
}
