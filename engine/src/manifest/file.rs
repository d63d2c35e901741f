//! The manifest file and `CURRENT`: how edit groups reach the disk.
//!
//! A manifest file is a sequence of records in the log's frame (see
//! [`crate::log`]); its first record is a snapshot of the whole state, every
//! later one an edit group. The small file `CURRENT` names the live manifest.
//! It is replaced by writing a temporary file and renaming it over the old
//! one, which a POSIX file system does atomically, so a reader always finds
//! either the old manifest or the new one, complete.
//!
//! ```text
//! store/CURRENT            "MANIFEST-000012\n"
//! store/MANIFEST-000012    | snapshot group | edit group | edit group | ...
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use cellar_fs as fs;

use super::edit::{decode_edits, encode_edits};
use super::state::ManifestState;
use crate::error::{Error, Result};
use crate::log::{self, Damage, ReadMode};

/// The name of the file that names the live manifest.
const CURRENT: &str = "CURRENT";

/// The temporary file a new `CURRENT` is written to before the rename.
const CURRENT_TEMP: &str = "CURRENT.tmp";

/// What every manifest file name starts with; the file number follows.
const MANIFEST_PREFIX: &str = "MANIFEST-";

/// The file name of manifest number `number`: `MANIFEST-000012`.
pub(crate) fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// The live manifest file of a store, open for appending edit groups.
///
/// The engine serialises calls (they take `&mut self`): edit groups are
/// appended one at a time, each fsynced before the call returns.
#[derive(Debug)]
pub(crate) struct ManifestFile {
    /// The store directory.
    dir: PathBuf,
    /// The live manifest file.
    path: PathBuf,
    /// The file, positioned at its end.
    file: File,
    /// Length of its good records, in bytes: where the next record goes.
    size: u64,
    /// A torn last record found on open, still on disk: it is cut off just
    /// before the first append (not at open, so that an open that then fails
    /// leaves every byte where it was).
    torn: Option<Damage>,
    /// Set when a write or fsync failed: the end of the file, or which
    /// manifest `CURRENT` names, is then unknown, so nothing more is written
    /// until the store is reopened.
    failed: bool,
}

impl ManifestFile {
    /// Creates a new store's manifest: `MANIFEST-<number>` holding `state` as a
    /// snapshot, then `CURRENT` naming it.
    ///
    /// `CURRENT` must not exist yet (else [`Error::InvalidArgument`]): it is
    /// written last, so a crash part way leaves a directory that is still
    /// "not a store" and can be created again.
    pub(crate) fn create(dir: &Path, number: u64, state: &ManifestState) -> Result<ManifestFile> {
        let current = dir.join(CURRENT);
        if current.try_exists().map_err(|source| Error::io(&current, source))? {
            return Err(Error::InvalidArgument(format!(
                "{} already holds a store (it has a CURRENT file)",
                dir.display()
            )));
        }
        // A creation that a crash cut short can leave this manifest behind.
        // No CURRENT names it, so it was never live: start it afresh (as
        // LevelDB does) rather than fail on it forever.
        let leftover = dir.join(manifest_file_name(number));
        match fs::remove(&leftover) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&leftover, source)),
            _ => {}
        }
        let (path, file, size) = write_snapshot(dir, number, state)?;
        install_current(dir, number)?;
        Ok(ManifestFile {
            dir: dir.to_path_buf(),
            path,
            file,
            size,
            torn: None,
            failed: false,
        })
    }

    /// Opens the manifest that `CURRENT` names and replays it into a state.
    ///
    /// A manifest may end in a torn record (a crash during an append, never
    /// acknowledged): when the evidence says so (no valid record after it,
    /// see [`log::read_log`]) it is dropped, and cut off the file before the
    /// next append. Any other damage is an [`Error::Corruption`] naming the
    /// manifest file and the record's offset. A directory without `CURRENT`
    /// is [`Error::NotAStore`]; a `CURRENT` that is malformed or names a
    /// missing file is corruption of `CURRENT`. Nothing is written.
    pub(crate) fn open(dir: &Path) -> Result<(ManifestFile, ManifestState)> {
        let path = live_manifest(dir)?;
        let contents = log::read_log(&path, ReadMode::Strict { may_end_torn: true })?;
        // `create` and `rewrite` fsync the snapshot before CURRENT names the
        // file, so a manifest that CURRENT names always holds a first record.
        if contents.records.is_empty() {
            return Err(Error::corruption(&path, 0, "the manifest holds no records"));
        }
        let state = replay(&path, &contents.records)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| Error::io(&path, source))?;
        let manifest = ManifestFile {
            dir: dir.to_path_buf(),
            path,
            file,
            size: contents.valid_len,
            torn: contents.torn_tail().cloned(),
            failed: false,
        };
        Ok((manifest, state))
    }

    /// Appends one edit group as one record and fsyncs it. Only after this
    /// returns is the edit durable.
    ///
    /// The caller applies the group to its state first
    /// ([`ManifestState::apply_all`]), so a group that does not fit is never
    /// written. After a failed write or fsync, every later call fails with
    /// [`Error::WritesStopped`].
    pub(crate) fn append(&mut self, edits: &[super::Edit]) -> Result<()> {
        self.check_not_failed()?;
        let mut frame = Vec::new();
        log::encode_record(&mut frame, &encode_edits(edits))?;
        if self.torn.is_some() {
            // Left in place, the torn bytes would sit between the last good
            // record and this one, and the next open would find damage in the
            // middle of the file.
            self.file
                .set_len(self.size)
                .and_then(|()| fs::sync_all(&self.file, &self.path))
                .map_err(|source| Error::io(&self.path, source))?;
            self.torn = None;
        }
        let written = self
            .file
            .write_all(&frame)
            .and_then(|()| fs::sync_data(&self.file, &self.path));
        if let Err(source) = written {
            self.failed = true;
            return Err(Error::io(&self.path, source));
        }
        self.size += frame.len() as u64;
        Ok(())
    }

    /// Starts a fresh manifest `MANIFEST-<new_number>` holding a snapshot of
    /// `state`: the new file is written and fsynced, `CURRENT` is swapped to it
    /// atomically, the directory is fsynced, and the old manifest is removed.
    ///
    /// A crash at any point leaves `CURRENT` naming a complete manifest, old or
    /// new. If writing the new file fails, the old one stays live and the
    /// error is returned. If only the removal of the old file fails, the new
    /// manifest is live and this returns `Ok`: the old file is garbage that
    /// the next open removes (its number is below the live one's), and a
    /// store whose edits are durable has no reason to stop.
    pub(crate) fn rewrite(&mut self, new_number: u64, state: &ManifestState) -> Result<()> {
        self.check_not_failed()?;
        let (path, file, size) = match write_snapshot(&self.dir, new_number, state) {
            Ok(written) => written,
            Err(error) => {
                let _ = fs::remove(&self.dir.join(manifest_file_name(new_number)));
                return Err(error);
            }
        };
        if let Err(error) = install_current(&self.dir, new_number) {
            // The rename may or may not have happened.
            self.failed = true;
            return Err(error);
        }
        let old = std::mem::replace(&mut self.path, path);
        self.file = file;
        self.size = size;
        self.torn = None;
        let _ = fs::remove(&old);
        Ok(())
    }

    /// Bytes of good records in the live manifest file: where the next one goes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The live manifest file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The torn last record found on open and not yet cut off.
    #[cfg(test)]
    pub(crate) fn torn(&self) -> Option<&Damage> {
        self.torn.as_ref()
    }

    /// Writes go to `file` from now on (a test makes them fail this way).
    #[cfg(test)]
    pub(crate) fn replace_file_for_test(&mut self, file: File) {
        self.file = file;
    }

    /// Refuses to write after an earlier failure (see the `failed` field).
    fn check_not_failed(&self) -> Result<()> {
        if self.failed {
            return Err(Error::WritesStopped(format!(
                "an earlier write to {} failed",
                self.path.display()
            )));
        }
        Ok(())
    }
}

/// The live manifest's path, from `CURRENT`.
///
/// No `CURRENT`: [`Error::NotAStore`]. A `CURRENT` that is malformed or names
/// a file that does not exist: corruption of `CURRENT` at offset 0.
pub(crate) fn live_manifest(dir: &Path) -> Result<PathBuf> {
    let current = dir.join(CURRENT);
    let text = match std::fs::read(&current) {
        Ok(text) => text,
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotAStore { dir: dir.to_path_buf() })
        }
        Err(source) => return Err(Error::io(&current, source)),
    };
    let name = parse_current(&text).ok_or_else(|| {
        Error::corruption(
            &current,
            0,
            format!(
                "expected \"MANIFEST-<number>\\n\", found {:?}",
                String::from_utf8_lossy(&text)
            ),
        )
    })?;
    let path = dir.join(name);
    if !path.try_exists().map_err(|source| Error::io(&path, source))? {
        return Err(Error::corruption(
            &current,
            0,
            format!("names {name}, which does not exist"),
        ));
    }
    Ok(path)
}

/// Applies the edit groups of a manifest file, in order, to an empty state.
/// A group that does not decode or does not fit is corruption at its offset.
pub(crate) fn replay(path: &Path, records: &[(u64, bytes::Bytes)]) -> Result<ManifestState> {
    let mut state = ManifestState::default();
    for (offset, payload) in records {
        apply_record(&mut state, path, *offset, payload)?;
    }
    Ok(state)
}

/// Applies one record (an edit group) of the manifest at `path` to `state`.
/// A group that does not decode or does not fit is corruption at `offset`;
/// `state` may then hold part of the group.
pub(crate) fn apply_record(state: &mut ManifestState, path: &Path, offset: u64, payload: &[u8]) -> Result<()> {
    let edits = decode_edits(payload).map_err(|e| e.into_error(path, offset))?;
    for edit in &edits {
        state
            .try_apply(edit)
            .map_err(|what| Error::corruption(path, offset, what))?;
    }
    Ok(())
}

/// Writes `MANIFEST-<number>` in `dir` holding a snapshot of `state`, fsyncs
/// it and the directory, and returns its path, the open file and its size.
pub(crate) fn write_snapshot(dir: &Path, number: u64, state: &ManifestState) -> Result<(PathBuf, File, u64)> {
    let path = dir.join(manifest_file_name(number));
    let mut frame = Vec::new();
    log::encode_record(&mut frame, &encode_edits(&state.snapshot()))?;
    let mut file = fs::create_new(&path).map_err(|source| Error::io(&path, source))?;
    file.write_all(&frame)
        .and_then(|()| fs::sync_data(&file, &path))
        .map_err(|source| Error::io(&path, source))?;
    // The new name must be durable before CURRENT can point at it.
    log::sync_dir(dir)?;
    Ok((path, file, frame.len() as u64))
}

/// Points `CURRENT` at `MANIFEST-<number>`: write a temporary file, fsync it,
/// rename it over `CURRENT` (atomic), fsync the directory (makes the rename durable).
pub(crate) fn install_current(dir: &Path, number: u64) -> Result<()> {
    let temp = dir.join(CURRENT_TEMP);
    let text = format!("{}\n", manifest_file_name(number));
    fs::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            fs::sync_all(&file, &temp)
        })
        .map_err(|source| Error::io(&temp, source))?;
    let current = dir.join(CURRENT);
    fs::rename(&temp, &current).map_err(|source| Error::io(&current, source))?;
    log::sync_dir(dir)
}

/// The manifest name in the contents of `CURRENT`, if well formed:
/// `MANIFEST-`, then a decimal file number, then one newline. (The check also
/// keeps a damaged `CURRENT` from naming a path outside the store.)
fn parse_current(text: &[u8]) -> Option<&str> {
    let name = std::str::from_utf8(text).ok()?.strip_suffix('\n')?;
    let digits = name.strip_prefix(MANIFEST_PREFIX)?;
    let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    (all_digits && digits.parse::<u64>().is_ok()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::Edit;
    use super::*;

    /// Creates a store in `dir` with manifest number 1 and appends `groups`,
    /// applying each to the returned state first.
    fn store_with(dir: &Path, groups: &[Vec<Edit>]) -> (ManifestFile, ManifestState) {
        let mut state = initial_state();
        let mut manifest = ManifestFile::create(dir, 1, &state).expect("create");
        for group in groups {
            state.apply_all(group).expect("apply");
            manifest.append(group).expect("append");
        }
        (manifest, state)
    }

    fn flip_byte(path: &Path, offset: u64) {
        let mut bytes = std::fs::read(path).expect("read");
        bytes[offset as usize] ^= 0x01;
        std::fs::write(path, bytes).expect("write");
    }

    fn corruption(err: Error) -> (PathBuf, u64, String) {
        match err {
            Error::Corruption { file, offset, what } => (file, offset, what),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn reopen_replays_appended_edits_to_the_same_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (manifest, state) = store_with(dir.path(), &flush_and_compaction());
        let size = manifest.size();
        drop(manifest);

        let (reopened, replayed) = ManifestFile::open(dir.path()).expect("open");
        assert_eq!(replayed, state);
        assert_eq!(reopened.torn(), None);
        assert_eq!(replayed.next_file_number, 8);
        assert_eq!(replayed.last_sequence, 120);
        let users = &replayed.families[&1];
        assert_eq!(users.log_number, 4);
        assert_eq!(users.tables, [table(7)]);
        assert_eq!(replayed.families[&2].options, [9]);
        assert_eq!(reopened.path(), dir.path().join("MANIFEST-000001"));
        assert_eq!(reopened.size(), size);
        assert_eq!(std::fs::metadata(reopened.path()).expect("stat").len(), size);
        assert_eq!(
            std::fs::read(dir.path().join("CURRENT")).expect("read"),
            b"MANIFEST-000001\n"
        );
    }

    #[test]
    fn appends_after_reopen_are_replayed_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (manifest, mut state) = store_with(dir.path(), &[]);
        drop(manifest);
        let (mut manifest, _) = ManifestFile::open(dir.path()).expect("open");
        let group = [Edit::LastSequence(77)];
        state.apply_all(&group).expect("apply");
        manifest.append(&group).expect("append");
        drop(manifest);
        let (_, replayed) = ManifestFile::open(dir.path()).expect("reopen");
        assert_eq!(replayed, state);
        assert_eq!(replayed.last_sequence, 77);
    }

    #[test]
    fn rewrite_swaps_current_to_a_snapshot_and_removes_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut manifest, state) = store_with(dir.path(), &flush_and_compaction());
        let old_path = manifest.path().to_path_buf();
        manifest.rewrite(9, &state).expect("rewrite");

        let snapshot_size = 8 + encode_edits(&state.snapshot()).len() as u64;
        assert_eq!(manifest.size(), snapshot_size);
        assert_eq!(manifest.path(), dir.path().join("MANIFEST-000009"));
        assert!(!old_path.exists());
        assert_eq!(
            std::fs::read(dir.path().join("CURRENT")).expect("read"),
            b"MANIFEST-000009\n"
        );

        let group = [Edit::LastSequence(500)];
        manifest.append(&group).expect("append");
        drop(manifest);
        let (reopened, replayed) = ManifestFile::open(dir.path()).expect("open");
        let mut expected = state;
        expected.last_sequence = 500;
        assert_eq!(replayed, expected);
        assert_eq!(reopened.path(), dir.path().join("MANIFEST-000009"));
    }

    #[test]
    fn torn_last_group_is_dropped_and_cut_off_only_before_the_next_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let groups = flush_and_compaction();
        let (manifest, _) = store_with(dir.path(), &groups[..2]);
        let good_size = manifest.size();
        drop(manifest);
        let (mut manifest, before_last) = ManifestFile::open(dir.path()).expect("open");
        manifest.append(&groups[2]).expect("append");
        let path = manifest.path().to_path_buf();
        drop(manifest);
        // The last group reached the disk only in part.
        let bytes = std::fs::read(&path).expect("read");
        let torn_len = bytes.len() as u64 - 3;
        std::fs::write(&path, &bytes[..torn_len as usize]).expect("write");

        let (mut manifest, replayed) = ManifestFile::open(dir.path()).expect("open torn");
        assert_eq!(replayed, before_last);
        assert_eq!(
            manifest.torn().map(|d| (d.offset, d.bytes)),
            Some((good_size, torn_len - good_size))
        );
        assert_eq!(manifest.size(), good_size);
        // Opening wrote nothing.
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), torn_len);

        manifest.append(&[Edit::LastSequence(130)]).expect("append");
        drop(manifest);
        let (reopened, replayed) = ManifestFile::open(dir.path()).expect("reopen");
        let mut expected = before_last;
        expected.last_sequence = 130;
        assert_eq!(replayed, expected);
        assert_eq!(reopened.torn(), None);
    }

    #[test]
    fn flipped_byte_in_a_middle_group_is_corruption_naming_the_manifest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (manifest, _) = store_with(dir.path(), &flush_and_compaction());
        let path = manifest.path().to_path_buf();
        drop(manifest);
        let contents = log::read_log(&path, ReadMode::Strict { may_end_torn: true }).expect("read");
        assert_eq!(contents.records.len(), 4);
        let second = contents.records[1].0;
        let third = contents.records[2].0;
        flip_byte(&path, second + 10);

        let (file, offset, what) = corruption(ManifestFile::open(dir.path()).expect_err("corruption"));
        assert_eq!(file, path);
        assert_eq!(offset, second);
        assert_eq!(
            what,
            format!("checksum mismatch (a valid record follows at offset {third})")
        );
    }

    #[test]
    fn group_that_does_not_fit_the_state_is_corruption_on_replay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut manifest, _) = store_with(dir.path(), &[]);
        let path = manifest.path().to_path_buf();
        let offset = manifest.size();
        // Bypass apply_all, as a buggy engine would.
        manifest.append(&[remove_table(1, 99)]).expect("append");
        drop(manifest);
        let (file, at, what) = corruption(ManifestFile::open(dir.path()).expect_err("corruption"));
        assert_eq!(file, path);
        assert_eq!(at, offset);
        assert_eq!(what, "table 99 is removed from family 1, which does not have it");
    }

    #[test]
    fn directory_without_current_is_not_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = ManifestFile::open(dir.path()).expect_err("not a store");
        assert!(matches!(err, Error::NotAStore { dir: ref d } if d == dir.path()));
    }

    #[test]
    fn current_naming_a_missing_manifest_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("CURRENT"), b"MANIFEST-000042\n").expect("write");
        let (file, offset, what) = corruption(ManifestFile::open(dir.path()).expect_err("corruption"));
        assert_eq!(file, dir.path().join("CURRENT"));
        assert_eq!(offset, 0);
        assert_eq!(what, "names MANIFEST-000042, which does not exist");
    }

    #[test]
    fn malformed_current_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        for text in [&b"MANIFEST-000001"[..], b"../etc/passwd\n", b"MANIFEST-\n", b""] {
            std::fs::write(dir.path().join("CURRENT"), text).expect("write");
            let err = ManifestFile::open(dir.path()).expect_err("corruption");
            assert!(matches!(err, Error::Corruption { offset: 0, .. }), "{err:?}");
        }
    }

    #[test]
    fn create_refuses_a_directory_that_already_has_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(store_with(dir.path(), &[]));
        let err = ManifestFile::create(dir.path(), 2, &ManifestState::default()).expect_err("exists");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(!dir.path().join("MANIFEST-000002").exists());
    }
}
