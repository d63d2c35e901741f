//! The manifest: which files make up the store, recorded so a crash cannot lose it.
//!
//! Table files are immutable; what changes is the *set* of them. A flush adds a
//! table, a compaction adds its outputs and removes its inputs, and both move
//! the log number a family still needs. The manifest records each such change
//! as an *edit group*: a list of [`Edit`]s that take effect together or not at
//! all, because the group is one CRC-framed record (the log's framing, see
//! [`crate::log`]) appended and fsynced before the engine acts on it. Opening a
//! store replays the groups in order into a [`ManifestState`].
//!
//! Three pieces, one file each:
//! - `edit`: the codec, how an edit group is laid out in a record;
//! - `state`: the state machine, what replaying edits builds and which edits
//!   are impossible;
//! - `file`: the manifest file and `CURRENT`, how records reach the disk and
//!   how a fresh manifest replaces a long one.
//!
//! [`Manifest`] puts them together: the live file and the state it holds, and
//! [`Manifest::log_and_apply`], the one way to change them (LevelDB's
//! `VersionSet::LogAndApply`): apply the group to a copy of the state, append
//! it durably, and only then replace the state with the copy.

mod edit;
mod file;
mod state;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
pub(crate) use edit::encode_edits;
pub(crate) use edit::{decode_edits, Edit, TableMeta};
pub(crate) use file::{apply_record, live_manifest, manifest_file_name};
pub(crate) use state::{FamilyState, ManifestState};

use crate::error::Result;

/// Writes a new manifest `MANIFEST-<number>` holding `state` and makes it
/// live, replacing whatever `CURRENT` named (repair does this). Returns its path.
pub(crate) fn write_new(dir: &Path, number: u64, state: &ManifestState) -> Result<std::path::PathBuf> {
    let (path, _, _) = file::write_snapshot(dir, number, state)?;
    file::install_current(dir, number)?;
    Ok(path)
}

/// The manifest is rewritten as a fresh snapshot once it grows past this.
const REWRITE_BYTES: u64 = 4 << 20;

/// The live manifest and the state its records build.
#[derive(Debug)]
pub(crate) struct Manifest {
    file: file::ManifestFile,
    state: ManifestState,
    /// A fresh manifest is started once the file grows past this.
    rewrite_bytes: u64,
}

impl Manifest {
    /// Creates a new store's manifest, numbered `number`, holding `state`.
    pub(crate) fn create(dir: &Path, number: u64, state: ManifestState) -> Result<Manifest> {
        let file = file::ManifestFile::create(dir, number, &state)?;
        Ok(Manifest {
            file,
            state,
            rewrite_bytes: REWRITE_BYTES,
        })
    }

    /// Opens the manifest `CURRENT` names and replays it. Writes nothing: a
    /// torn last record is cut off only by the first append.
    pub(crate) fn open(dir: &Path) -> Result<Manifest> {
        let (file, state) = file::ManifestFile::open(dir)?;
        Ok(Manifest {
            file,
            state,
            rewrite_bytes: REWRITE_BYTES,
        })
    }

    /// The state the manifest's records build.
    pub(crate) fn state(&self) -> &ManifestState {
        &self.state
    }

    /// The live manifest file.
    pub(crate) fn path(&self) -> &Path {
        self.file.path()
    }

    /// Where the good records end: the offset a missing record would have had.
    pub(crate) fn end(&self) -> u64 {
        self.file.size()
    }

    /// Makes an edit group durable and applies it, in that order: the group is
    /// applied to a copy of the state (a group that does not fit is refused
    /// before anything is written), appended and fsynced, and only then does
    /// the copy replace the state. If the append fails, the state is as it
    /// was. An empty group changes nothing and writes nothing.
    ///
    /// When the file has grown past its limit, a fresh manifest holding a
    /// snapshot replaces it, numbered from `next_file`. The group is durable
    /// whether or not that succeeds: a failure to write the new file leaves
    /// the old one live (tried again after the next group), and a failure
    /// while switching `CURRENT` makes every later append fail.
    pub(crate) fn log_and_apply(&mut self, edits: &[Edit], next_file: &AtomicU64) -> Result<()> {
        if edits.is_empty() {
            return Ok(());
        }
        let mut next = self.state.clone();
        next.apply_all(edits)?;
        self.file.append(edits)?;
        self.state = next;
        if self.file.size() > self.rewrite_bytes {
            let number = next_file.fetch_add(1, Ordering::SeqCst);
            let mut state = self.state.clone();
            state.next_file_number = next_file.load(Ordering::SeqCst);
            if self.file.rewrite(number, &state).is_ok() {
                self.state = state;
            }
        }
        Ok(())
    }

    /// Sets the size past which the file is rewritten (tests use a small one).
    #[cfg(test)]
    pub(crate) fn set_rewrite_bytes(&mut self, bytes: u64) {
        self.rewrite_bytes = bytes;
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! States and edit groups the manifest's tests share.

    use super::*;

    /// A table with every field different, derived from `file_id`.
    pub(crate) fn table(file_id: u64) -> TableMeta {
        TableMeta {
            file_id,
            run: file_id * 10,
            level: 0,
            size: 4096 * file_id,
            entries: 100 + file_id,
            tombstones: file_id,
            first_key: format!("a{file_id}").into_bytes(),
            last_key: format!("z{file_id}").into_bytes(),
            min_seq: 1000 + file_id,
            max_seq: 2000 + file_id,
            min_ts: 3000 + file_id,
            max_ts: 4000 + file_id,
        }
    }

    /// `AddTable` of [`table`]`(file_id)` to `family`.
    pub(crate) fn add_table(family: u32, file_id: u64) -> Edit {
        Edit::AddTable {
            family,
            table: table(file_id),
        }
    }

    /// `RemoveTable` of `file_id` from `family`.
    pub(crate) fn remove_table(family: u32, file_id: u64) -> Edit {
        Edit::RemoveTable { family, file_id }
    }

    /// Two families, "users" (id 1) and "events" (id 2), and the counters.
    pub(crate) fn initial_state() -> ManifestState {
        let mut state = ManifestState::default();
        state
            .apply_all(&[
                Edit::NextFileNumber(5),
                Edit::AddFamily {
                    id: 1,
                    name: "users".to_string(),
                    options: vec![1, 2, 3],
                },
                Edit::AddFamily {
                    id: 2,
                    name: "events".to_string(),
                    options: vec![],
                },
            ])
            .expect("initial edits");
        state
    }

    /// A flush of family 1 to table 5, then a compaction of 5 and 6 into 7.
    pub(crate) fn flush_and_compaction() -> Vec<Vec<Edit>> {
        vec![
            vec![
                add_table(1, 5),
                Edit::SetLogNumber {
                    family: 1,
                    log_number: 4,
                },
                Edit::LastSequence(120),
                Edit::NextFileNumber(6),
            ],
            vec![add_table(1, 6), Edit::NextFileNumber(7)],
            vec![
                add_table(1, 7),
                remove_table(1, 5),
                remove_table(1, 6),
                Edit::SetFamilyOptions {
                    id: 2,
                    options: vec![9],
                },
                Edit::NextFileNumber(8),
            ],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::error::Error;

    fn counter(next: u64) -> AtomicU64 {
        AtomicU64::new(next)
    }

    #[test]
    fn log_and_apply_changes_the_state_only_once_the_group_is_durable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut manifest = Manifest::create(dir.path(), 1, initial_state()).expect("create");
        let next = counter(8);
        for group in flush_and_compaction() {
            manifest.log_and_apply(&group, &next).expect("log and apply");
        }
        let after = manifest.state().clone();
        assert_eq!(after.families[&1].tables, [table(7)]);

        // A group that does not fit is refused before anything is written.
        let size = manifest.end();
        let err = manifest
            .log_and_apply(&[Edit::LastSequence(500), remove_table(1, 99)], &next)
            .expect_err("refused");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert_eq!(manifest.end(), size);
        assert_eq!(manifest.state(), &after);

        let reopened = Manifest::open(dir.path()).expect("reopen");
        assert_eq!(reopened.state(), &after);
    }

    #[test]
    fn a_failed_append_leaves_the_state_unchanged_and_stops_later_appends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut manifest = Manifest::create(dir.path(), 1, initial_state()).expect("create");
        let before = manifest.state().clone();
        // Swap the file for one opened read-only: the next write fails.
        let path = manifest.path().to_path_buf();
        manifest
            .file
            .replace_file_for_test(std::fs::File::open(&path).expect("open"));
        let next = counter(8);
        let err = manifest
            .log_and_apply(&[Edit::LastSequence(77)], &next)
            .expect_err("the write fails");
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        assert_eq!(manifest.state(), &before);
        let err = manifest
            .log_and_apply(&[Edit::LastSequence(78)], &next)
            .expect_err("stopped");
        assert!(matches!(err, Error::WritesStopped(_)), "{err:?}");
        assert_eq!(Manifest::open(dir.path()).expect("reopen").state(), &before);
    }

    #[test]
    fn a_long_manifest_is_replaced_by_a_snapshot_numbered_from_the_counter() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut manifest = Manifest::create(dir.path(), 1, initial_state()).expect("create");
        manifest.set_rewrite_bytes(200);
        let next = counter(8);
        for group in flush_and_compaction() {
            manifest.log_and_apply(&group, &next).expect("log and apply");
        }
        // Each group took the file past 200 bytes: three rewrites, numbered 8, 9, 10.
        assert_eq!(next.load(Ordering::SeqCst), 11);
        assert_eq!(manifest.path(), dir.path().join("MANIFEST-000010"));
        for old in ["MANIFEST-000001", "MANIFEST-000008", "MANIFEST-000009"] {
            assert!(!dir.path().join(old).exists(), "{old}");
        }
        assert_eq!(manifest.state().next_file_number, 11);
        assert_eq!(Manifest::open(dir.path()).expect("reopen").state(), manifest.state());
    }

    /// A rewrite whose removal of the old manifest fails still leaves a
    /// working manifest: the new one is live and the edit durable.
    #[test]
    fn a_failure_to_remove_the_old_manifest_after_a_rewrite_is_not_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut manifest = Manifest::create(dir.path(), 1, initial_state()).expect("create");
        manifest.set_rewrite_bytes(100);
        // Put a non-empty folder where the old manifest's name is: removing
        // a file by that name fails, whatever the user's rights.
        let old = dir.path().join("MANIFEST-000001");
        std::fs::rename(&old, dir.path().join("moved")).expect("rename");
        std::fs::create_dir(&old).expect("mkdir");
        std::fs::write(old.join("keep"), b"x").expect("write");
        let next = counter(8);
        let group = flush_and_compaction().remove(0);
        manifest
            .log_and_apply(&group, &next)
            .expect("the rewrite's cleanup failing is no error");
        assert_eq!(manifest.path(), dir.path().join("MANIFEST-000008"));
        manifest
            .log_and_apply(&[Edit::LastSequence(130)], &next)
            .expect("the manifest goes on");
        let reopened = Manifest::open(dir.path()).expect("reopen");
        assert_eq!(reopened.state(), manifest.state());
        assert_eq!(reopened.state().last_sequence, 130);
    }
}
