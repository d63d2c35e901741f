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
//! The manifest only grows, so now and then the engine starts a fresh one that
//! begins with a snapshot of the whole state. The small file `CURRENT` names
//! the live manifest; it is replaced by writing a temporary file and renaming
//! it over the old one, which a POSIX file system does atomically. A reader
//! therefore always finds either the old manifest or the new one, complete.
//!
//! ```text
//! store/CURRENT            "MANIFEST-000012\n"
//! store/MANIFEST-000012    | snapshot group | edit group | edit group | ...
//! ```

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use cellar_fs as fs;

use crate::error::{Error, Result};
use crate::log::{self, TailPolicy};

/// The name of the file that names the live manifest.
const CURRENT: &str = "CURRENT";

/// The temporary file a new `CURRENT` is written to before the rename.
const CURRENT_TEMP: &str = "CURRENT.tmp";

/// What every manifest file name starts with; the file number follows.
const MANIFEST_PREFIX: &str = "MANIFEST-";

/// The version byte that starts every encoded edit group.
///
/// A cellar that finds a larger version refuses to open the store rather than
/// misread it ([`Error::UnsupportedVersion`]).
const EDIT_FORMAT_VERSION: u8 = 1;

/// The tag byte that starts each encoded [`Edit`]. Never reuse a number.
mod tag {
    /// [`super::Edit::AddFamily`].
    pub(super) const ADD_FAMILY: u8 = 1;
    /// [`super::Edit::SetFamilyOptions`].
    pub(super) const SET_FAMILY_OPTIONS: u8 = 2;
    /// [`super::Edit::AddTable`].
    pub(super) const ADD_TABLE: u8 = 3;
    /// [`super::Edit::RemoveTable`].
    pub(super) const REMOVE_TABLE: u8 = 4;
    /// [`super::Edit::SetLogNumber`].
    pub(super) const SET_LOG_NUMBER: u8 = 5;
    /// [`super::Edit::LastSequence`].
    pub(super) const LAST_SEQUENCE: u8 = 6;
    /// [`super::Edit::NextFileNumber`].
    pub(super) const NEXT_FILE_NUMBER: u8 = 7;
}

/// The file name of manifest number `number`: `MANIFEST-000012`.
fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// One change to the store's file set or counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// A new column family. `options` are opaque bytes encoded by the engine.
    AddFamily {
        /// The family's id, used by every other edit.
        id: u32,
        /// The family's name.
        name: String,
        /// The family's options, encoded by the engine.
        options: Vec<u8>,
    },
    /// New options for an existing family.
    SetFamilyOptions {
        /// The family.
        id: u32,
        /// The options, encoded by the engine.
        options: Vec<u8>,
    },
    /// A table file now belongs to a family.
    AddTable {
        /// The family.
        family: u32,
        /// The table.
        table: TableMeta,
    },
    /// A table file no longer belongs to a family (it was compacted away).
    RemoveTable {
        /// The family.
        family: u32,
        /// The table's file number.
        file_id: u64,
    },
    /// The oldest log segment this family still needs: older segments hold
    /// only writes the family has already flushed.
    SetLogNumber {
        /// The family.
        family: u32,
        /// The file number of that segment.
        log_number: u64,
    },
    /// The largest sequence number that may appear in a table file.
    LastSequence(u64),
    /// The next unused file number (logs, tables and manifests share one
    /// number space, so a number names one file for the life of the store).
    NextFileNumber(u64),
}

/// What the manifest knows about one table file, enough to plan reads and
/// compactions without opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// The file number.
    pub(crate) file_id: u64,
    /// The sorted run the file belongs to.
    pub(crate) run: u64,
    /// File size in bytes.
    pub(crate) size: u64,
    /// Entries stored, tombstones included.
    pub(crate) entries: u64,
    /// Tombstones stored.
    pub(crate) tombstones: u64,
    /// The smallest internal key in the file.
    pub(crate) first_key: Vec<u8>,
    /// The largest internal key in the file.
    pub(crate) last_key: Vec<u8>,
    /// Smallest sequence number in the file.
    pub(crate) min_seq: u64,
    /// Largest sequence number in the file.
    pub(crate) max_seq: u64,
    /// Smallest cell timestamp in the file.
    pub(crate) min_ts: u64,
    /// Largest cell timestamp in the file.
    pub(crate) max_ts: u64,
}

/// One column family as the manifest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FamilyState {
    /// The family's id.
    pub(crate) id: u32,
    /// The family's name.
    pub(crate) name: String,
    /// The family's options, encoded by the engine.
    pub(crate) options: Vec<u8>,
    /// The oldest log segment the family still needs (0: none recorded yet).
    pub(crate) log_number: u64,
    /// The family's table files in the order they were added.
    pub(crate) tables: Vec<TableMeta>,
}

/// The store as the manifest describes it: the result of replaying every edit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ManifestState {
    /// The families by id.
    pub(crate) families: BTreeMap<u32, FamilyState>,
    /// The largest sequence number that may appear in a table file.
    pub(crate) last_sequence: u64,
    /// The next unused file number.
    pub(crate) next_file_number: u64,
}

impl ManifestState {
    /// Applies one edit.
    ///
    /// An edit that does not fit the state (a family added twice, an unknown
    /// family, a table added twice or removed without being there) is refused
    /// with [`Error::InvalidArgument`]. The engine should never produce one;
    /// when replay finds one, it is reported as corruption of the manifest.
    pub(crate) fn apply(&mut self, edit: &Edit) -> Result<()> {
        self.try_apply(edit).map_err(Error::InvalidArgument)
    }

    /// Applies an edit group, all or nothing: if one edit is refused, the
    /// state is left as it was.
    ///
    /// The engine calls this on its state *before* [`Manifest::append`], so an
    /// edit that does not fit is never made durable (it would make the store
    /// impossible to reopen).
    pub(crate) fn apply_all(&mut self, edits: &[Edit]) -> Result<()> {
        let mut next = self.clone();
        for edit in edits {
            next.apply(edit)?;
        }
        *self = next;
        Ok(())
    }

    /// The edits that rebuild this state from an empty one.
    ///
    /// A new manifest starts with this group, so its first record alone
    /// describes the whole store.
    pub(crate) fn snapshot(&self) -> Vec<Edit> {
        let mut edits = vec![
            Edit::NextFileNumber(self.next_file_number),
            Edit::LastSequence(self.last_sequence),
        ];
        for family in self.families.values() {
            edits.push(Edit::AddFamily {
                id: family.id,
                name: family.name.clone(),
                options: family.options.clone(),
            });
            edits.push(Edit::SetLogNumber {
                family: family.id,
                log_number: family.log_number,
            });
            edits.extend(family.tables.iter().map(|table| Edit::AddTable {
                family: family.id,
                table: table.clone(),
            }));
        }
        edits
    }

    /// [`ManifestState::apply`], with the reason for a refusal as plain text.
    fn try_apply(&mut self, edit: &Edit) -> std::result::Result<(), String> {
        match edit {
            Edit::AddFamily { id, name, options } => {
                if self.families.contains_key(id) {
                    return Err(format!("family id {id} is added twice"));
                }
                if self.families.values().any(|family| family.name == *name) {
                    return Err(format!("family name {name:?} is added twice"));
                }
                self.families.insert(
                    *id,
                    FamilyState {
                        id: *id,
                        name: name.clone(),
                        options: options.clone(),
                        log_number: 0,
                        tables: Vec::new(),
                    },
                );
            }
            Edit::SetFamilyOptions { id, options } => {
                self.family_mut(*id)?.options = options.clone();
            }
            Edit::AddTable { family, table } => {
                let state = self.family_mut(*family)?;
                if state.tables.iter().any(|t| t.file_id == table.file_id) {
                    return Err(format!("table {} is added twice to family {family}", table.file_id));
                }
                state.tables.push(table.clone());
            }
            Edit::RemoveTable { family, file_id } => {
                let state = self.family_mut(*family)?;
                let Some(index) = state.tables.iter().position(|t| t.file_id == *file_id) else {
                    return Err(format!(
                        "table {file_id} is removed from family {family}, which does not have it"
                    ));
                };
                state.tables.remove(index);
            }
            Edit::SetLogNumber { family, log_number } => {
                self.family_mut(*family)?.log_number = *log_number;
            }
            Edit::LastSequence(sequence) => self.last_sequence = *sequence,
            Edit::NextFileNumber(number) => self.next_file_number = *number,
        }
        Ok(())
    }

    /// The family with id `id`, or the reason it cannot be edited.
    fn family_mut(&mut self, id: u32) -> std::result::Result<&mut FamilyState, String> {
        self.families
            .get_mut(&id)
            .ok_or_else(|| format!("family id {id} does not exist"))
    }
}

/// Encodes an edit group: the version byte, then each edit as a tag byte and
/// its fields. Integers are fixed-width little-endian; byte strings and names
/// are a u32 length then the bytes. (FORMAT-log-manifest.md has the diagrams.)
fn encode_edits(edits: &[Edit]) -> Vec<u8> {
    let mut out = vec![EDIT_FORMAT_VERSION];
    for edit in edits {
        match edit {
            Edit::AddFamily { id, name, options } => {
                out.push(tag::ADD_FAMILY);
                put_u32(&mut out, *id);
                put_bytes(&mut out, name.as_bytes());
                put_bytes(&mut out, options);
            }
            Edit::SetFamilyOptions { id, options } => {
                out.push(tag::SET_FAMILY_OPTIONS);
                put_u32(&mut out, *id);
                put_bytes(&mut out, options);
            }
            Edit::AddTable { family, table } => {
                out.push(tag::ADD_TABLE);
                put_u32(&mut out, *family);
                for value in [table.file_id, table.run, table.size, table.entries, table.tombstones] {
                    put_u64(&mut out, value);
                }
                put_bytes(&mut out, &table.first_key);
                put_bytes(&mut out, &table.last_key);
                for value in [table.min_seq, table.max_seq, table.min_ts, table.max_ts] {
                    put_u64(&mut out, value);
                }
            }
            Edit::RemoveTable { family, file_id } => {
                out.push(tag::REMOVE_TABLE);
                put_u32(&mut out, *family);
                put_u64(&mut out, *file_id);
            }
            Edit::SetLogNumber { family, log_number } => {
                out.push(tag::SET_LOG_NUMBER);
                put_u32(&mut out, *family);
                put_u64(&mut out, *log_number);
            }
            Edit::LastSequence(sequence) => {
                out.push(tag::LAST_SEQUENCE);
                put_u64(&mut out, *sequence);
            }
            Edit::NextFileNumber(number) => {
                out.push(tag::NEXT_FILE_NUMBER);
                put_u64(&mut out, *number);
            }
        }
    }
    out
}

/// Appends `value` as 4 little-endian bytes.
fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends `value` as 8 little-endian bytes.
fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A u32 length, then the bytes. (A string over 4 GiB cannot reach the disk:
/// the whole group must fit in one record of at most [`log::MAX_RECORD`].)
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

/// Why an edit group did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DecodeError {
    /// The group was written by a newer cellar (this version byte).
    Version(u8),
    /// The bytes are not a valid edit group.
    Malformed(String),
}

impl DecodeError {
    /// The engine error for this failure in the record at `offset` of `file`.
    fn into_error(self, file: &Path, offset: u64) -> Error {
        match self {
            DecodeError::Version(found) => Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: u32::from(found),
                supported: u32::from(EDIT_FORMAT_VERSION),
            },
            DecodeError::Malformed(what) => Error::corruption(file, offset, what),
        }
    }
}

/// Decodes an edit group written by [`encode_edits`]. Never panics, whatever the bytes.
fn decode_edits(payload: &[u8]) -> std::result::Result<Vec<Edit>, DecodeError> {
    let mut reader = Reader { rest: payload };
    let version = reader.u8("the version byte")?;
    if version != EDIT_FORMAT_VERSION {
        return Err(DecodeError::Version(version));
    }
    let mut edits = Vec::new();
    while !reader.rest.is_empty() {
        let edit = match reader.u8("an edit tag")? {
            tag::ADD_FAMILY => Edit::AddFamily {
                id: reader.u32("a family id")?,
                name: reader.string("a family name")?,
                options: reader.bytes("family options")?,
            },
            tag::SET_FAMILY_OPTIONS => Edit::SetFamilyOptions {
                id: reader.u32("a family id")?,
                options: reader.bytes("family options")?,
            },
            tag::ADD_TABLE => Edit::AddTable {
                family: reader.u32("a family id")?,
                table: TableMeta {
                    file_id: reader.u64("a table file id")?,
                    run: reader.u64("a table run")?,
                    size: reader.u64("a table size")?,
                    entries: reader.u64("a table entry count")?,
                    tombstones: reader.u64("a table tombstone count")?,
                    first_key: reader.bytes("a table first key")?,
                    last_key: reader.bytes("a table last key")?,
                    min_seq: reader.u64("a table min sequence")?,
                    max_seq: reader.u64("a table max sequence")?,
                    min_ts: reader.u64("a table min timestamp")?,
                    max_ts: reader.u64("a table max timestamp")?,
                },
            },
            tag::REMOVE_TABLE => Edit::RemoveTable {
                family: reader.u32("a family id")?,
                file_id: reader.u64("a table file id")?,
            },
            tag::SET_LOG_NUMBER => Edit::SetLogNumber {
                family: reader.u32("a family id")?,
                log_number: reader.u64("a log number")?,
            },
            tag::LAST_SEQUENCE => Edit::LastSequence(reader.u64("a sequence number")?),
            tag::NEXT_FILE_NUMBER => Edit::NextFileNumber(reader.u64("a file number")?),
            unknown => {
                return Err(DecodeError::Malformed(format!("unknown edit tag {unknown}")));
            }
        };
        edits.push(edit);
    }
    Ok(edits)
}

/// Reads fields from the front of an encoded edit group, checking every length.
struct Reader<'a> {
    /// The bytes not read yet.
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The next `N` bytes; `what` names the field for the error.
    fn array<const N: usize>(&mut self, what: &str) -> std::result::Result<[u8; N], DecodeError> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or_else(|| cut_short(what))?;
        self.rest = tail;
        Ok(*head)
    }

    /// One byte.
    fn u8(&mut self, what: &str) -> std::result::Result<u8, DecodeError> {
        let [byte] = self.array::<1>(what)?;
        Ok(byte)
    }

    /// A little-endian u32.
    fn u32(&mut self, what: &str) -> std::result::Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian u64.
    fn u64(&mut self, what: &str) -> std::result::Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A u32 length, then that many bytes.
    fn bytes(&mut self, what: &str) -> std::result::Result<Vec<u8>, DecodeError> {
        let len = self.u32(what)? as usize;
        let (head, tail) = self.rest.split_at_checked(len).ok_or_else(|| cut_short(what))?;
        self.rest = tail;
        Ok(head.to_vec())
    }

    /// Like [`Reader::bytes`], and the bytes must be UTF-8.
    fn string(&mut self, what: &str) -> std::result::Result<String, DecodeError> {
        String::from_utf8(self.bytes(what)?).map_err(|_| DecodeError::Malformed(format!("{what} is not UTF-8")))
    }
}

/// The error for a group that ends in the middle of a field.
fn cut_short(what: &str) -> DecodeError {
    DecodeError::Malformed(format!("edit group ends inside {what}"))
}

/// The live manifest file of a store, open for appending edit groups.
///
/// The engine serialises calls (they take `&mut self`): edit groups are
/// appended one at a time, each fsynced before the call returns.
#[derive(Debug)]
pub(crate) struct Manifest {
    /// The store directory.
    dir: PathBuf,
    /// The live manifest file.
    path: PathBuf,
    /// The file, positioned at its end.
    file: File,
    /// Its length in bytes.
    size: u64,
    /// Set when a write or fsync failed: the end of the file, or which
    /// manifest `CURRENT` names, is then unknown, so nothing more is written
    /// until the store is reopened.
    failed: bool,
}

impl Manifest {
    /// Creates a new store's manifest: `MANIFEST-<number>` holding `state` as a
    /// snapshot, then `CURRENT` naming it.
    ///
    /// `CURRENT` must not exist yet (else [`Error::InvalidArgument`]): it is
    /// written last, so a crash part way leaves a directory that is still
    /// "not a store" and can be created again.
    pub(crate) fn create(dir: &Path, number: u64, state: &ManifestState) -> Result<Manifest> {
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
        Ok(Manifest {
            dir: dir.to_path_buf(),
            path,
            file,
            size,
            failed: false,
        })
    }

    /// Opens the manifest that `CURRENT` names and replays it into a state.
    ///
    /// A torn last record was never acknowledged: it is dropped and cut off the
    /// file, so the next append follows the last good record. Any other damage
    /// is an [`Error::Corruption`] naming the manifest file and the record's
    /// offset. A directory without `CURRENT` is [`Error::NotAStore`]; a
    /// `CURRENT` that is malformed or names a missing file is corruption of
    /// `CURRENT`.
    pub(crate) fn open(dir: &Path) -> Result<(Manifest, ManifestState)> {
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

        let contents = match log::read_log(&path, TailPolicy::TolerateTornTail) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    &current,
                    0,
                    format!("names {name}, which does not exist"),
                ))
            }
            other => other?,
        };
        // `create` and `rewrite` fsync the snapshot before CURRENT names the
        // file, so a manifest that CURRENT names always holds a first record.
        if contents.records.is_empty() {
            return Err(Error::corruption(&path, 0, "the manifest holds no records"));
        }
        let mut state = ManifestState::default();
        for (offset, payload) in &contents.records {
            let edits = decode_edits(payload).map_err(|e| e.into_error(&path, *offset))?;
            for edit in &edits {
                state
                    .try_apply(edit)
                    .map_err(|what| Error::corruption(&path, *offset, what))?;
            }
        }

        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| Error::io(&path, source))?;
        if contents.dropped_tail.is_some() {
            // Left in place, the torn bytes would sit between the last good
            // record and the next one, and the next open would see corruption
            // in the middle of the file.
            file.set_len(contents.valid_len)
                .and_then(|()| fs::sync_all(&file, &path))
                .map_err(|source| Error::io(&path, source))?;
        }
        let manifest = Manifest {
            dir: dir.to_path_buf(),
            path,
            file,
            size: contents.valid_len,
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
    pub(crate) fn append(&mut self, edits: &[Edit]) -> Result<()> {
        self.check_not_failed()?;
        let mut frame = Vec::new();
        log::encode_record(&mut frame, &encode_edits(edits))?;
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
    /// The engine calls this when [`Manifest::size`] grows past a limit.
    ///
    /// A crash at any point leaves `CURRENT` naming a complete manifest, old or
    /// new. If only the removal of the old file fails, the new manifest is
    /// already live (`path()` names it) and the error is returned so the
    /// caller can report it; the old file is then garbage.
    pub(crate) fn rewrite(&mut self, new_number: u64, state: &ManifestState) -> Result<()> {
        self.check_not_failed()?;
        let (path, file, size) = write_snapshot(&self.dir, new_number, state)?;
        if let Err(error) = install_current(&self.dir, new_number) {
            // The rename may or may not have happened.
            self.failed = true;
            return Err(error);
        }
        let old = std::mem::replace(&mut self.path, path);
        self.file = file;
        self.size = size;
        fs::remove(&old).map_err(|source| Error::io(&old, source))
    }

    /// Bytes in the live manifest file.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The live manifest file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
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

/// Writes `MANIFEST-<number>` in `dir` holding a snapshot of `state`, fsyncs
/// it and the directory, and returns its path, the open file and its size.
fn write_snapshot(dir: &Path, number: u64, state: &ManifestState) -> Result<(PathBuf, File, u64)> {
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
fn install_current(dir: &Path, number: u64) -> Result<()> {
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
    use super::*;
    use proptest::prelude::*;

    /// A table with every field different, derived from `file_id`.
    fn table(file_id: u64) -> TableMeta {
        TableMeta {
            file_id,
            run: file_id * 10,
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
    fn add_table(family: u32, file_id: u64) -> Edit {
        Edit::AddTable {
            family,
            table: table(file_id),
        }
    }

    /// `RemoveTable` of `file_id` from `family`.
    fn remove_table(family: u32, file_id: u64) -> Edit {
        Edit::RemoveTable { family, file_id }
    }

    /// Two families, "users" (id 1) and "events" (id 2), and the counters.
    fn initial_state() -> ManifestState {
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
    fn flush_and_compaction() -> Vec<Vec<Edit>> {
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

    /// Creates a store in `dir` with manifest number 1 and appends `groups`,
    /// applying each to the returned state first.
    fn store_with(dir: &Path, groups: &[Vec<Edit>]) -> (Manifest, ManifestState) {
        let mut state = initial_state();
        let mut manifest = Manifest::create(dir, 1, &state).expect("create");
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

    #[test]
    fn reopen_replays_appended_edits_to_the_same_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (manifest, state) = store_with(dir.path(), &flush_and_compaction());
        let size = manifest.size();
        drop(manifest);

        let (reopened, replayed) = Manifest::open(dir.path()).expect("open");
        assert_eq!(replayed, state);
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
        let (mut manifest, _) = Manifest::open(dir.path()).expect("open");
        let group = [Edit::LastSequence(77)];
        state.apply_all(&group).expect("apply");
        manifest.append(&group).expect("append");
        drop(manifest);
        let (_, replayed) = Manifest::open(dir.path()).expect("reopen");
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
        let (reopened, replayed) = Manifest::open(dir.path()).expect("open");
        let mut expected = state;
        expected.last_sequence = 500;
        assert_eq!(replayed, expected);
        assert_eq!(reopened.path(), dir.path().join("MANIFEST-000009"));
    }

    #[test]
    fn torn_last_group_is_dropped_and_cut_off_before_the_next_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let groups = flush_and_compaction();
        let (manifest, _) = store_with(dir.path(), &groups[..2]);
        let good_size = manifest.size();
        drop(manifest);
        let (mut manifest, before_last) = Manifest::open(dir.path()).expect("open");
        manifest.append(&groups[2]).expect("append");
        let path = manifest.path().to_path_buf();
        drop(manifest);
        // The last group reached the disk only in part.
        let bytes = std::fs::read(&path).expect("read");
        std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("write");

        let (mut manifest, replayed) = Manifest::open(dir.path()).expect("open torn");
        assert_eq!(replayed, before_last);
        assert_eq!(manifest.size(), good_size);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), good_size);

        manifest.append(&[Edit::LastSequence(130)]).expect("append");
        drop(manifest);
        let (_, replayed) = Manifest::open(dir.path()).expect("reopen");
        let mut expected = before_last;
        expected.last_sequence = 130;
        assert_eq!(replayed, expected);
    }

    #[test]
    fn flipped_byte_in_a_middle_group_is_corruption_naming_the_manifest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (manifest, _) = store_with(dir.path(), &flush_and_compaction());
        let path = manifest.path().to_path_buf();
        drop(manifest);
        let contents = log::read_log(&path, TailPolicy::TolerateTornTail).expect("read");
        assert_eq!(contents.records.len(), 4);
        let second = contents.records[1].0;
        flip_byte(&path, second + 10);

        let err = Manifest::open(dir.path()).expect_err("corruption");
        match err {
            Error::Corruption { file, offset, what } => {
                assert_eq!(file, path);
                assert_eq!(offset, second);
                assert_eq!(what, "checksum mismatch");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
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
        let err = Manifest::open(dir.path()).expect_err("corruption");
        match err {
            Error::Corruption { file, offset: at, what } => {
                assert_eq!(file, path);
                assert_eq!(at, offset);
                assert_eq!(what, "table 99 is removed from family 1, which does not have it");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn directory_without_current_is_not_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Manifest::open(dir.path()).expect_err("not a store");
        assert!(matches!(err, Error::NotAStore { dir: ref d } if d == dir.path()));
    }

    #[test]
    fn current_naming_a_missing_manifest_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("CURRENT"), b"MANIFEST-000042\n").expect("write");
        let err = Manifest::open(dir.path()).expect_err("corruption");
        match err {
            Error::Corruption { file, offset, what } => {
                assert_eq!(file, dir.path().join("CURRENT"));
                assert_eq!(offset, 0);
                assert_eq!(what, "names MANIFEST-000042, which does not exist");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn malformed_current_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        for text in [&b"MANIFEST-000001"[..], b"../etc/passwd\n", b"MANIFEST-\n", b""] {
            std::fs::write(dir.path().join("CURRENT"), text).expect("write");
            let err = Manifest::open(dir.path()).expect_err("corruption");
            assert!(matches!(err, Error::Corruption { offset: 0, .. }), "{err:?}");
        }
    }

    #[test]
    fn create_refuses_a_directory_that_already_has_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(store_with(dir.path(), &[]));
        let err = Manifest::create(dir.path(), 2, &ManifestState::default()).expect_err("exists");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(!dir.path().join("MANIFEST-000002").exists());
    }

    #[test]
    fn edits_that_do_not_fit_are_refused_and_leave_the_state_unchanged() {
        let mut state = initial_state();
        let before = state.clone();
        let refused = [
            (
                Edit::AddFamily {
                    id: 1,
                    name: "other".to_string(),
                    options: vec![],
                },
                "family id 1 is added twice",
            ),
            (
                Edit::AddFamily {
                    id: 3,
                    name: "users".to_string(),
                    options: vec![],
                },
                "family name \"users\" is added twice",
            ),
            (
                Edit::SetLogNumber {
                    family: 3,
                    log_number: 1,
                },
                "family id 3 does not exist",
            ),
            (
                remove_table(2, 5),
                "table 5 is removed from family 2, which does not have it",
            ),
        ];
        for (edit, message) in refused {
            // The first edit of the group fits; the group still changes nothing.
            let group = [Edit::LastSequence(9), edit];
            let err = state.apply_all(&group).expect_err("refused");
            assert!(matches!(err, Error::InvalidArgument(ref m) if m == message), "{err:?}");
            assert_eq!(state, before);
        }
        let add = add_table(2, 5);
        state.apply(&add).expect("first add");
        let err = state.apply(&add).expect_err("second add");
        assert!(matches!(err, Error::InvalidArgument(ref m) if m == "table 5 is added twice to family 2"));
    }

    #[test]
    fn snapshot_rebuilds_the_state_from_empty() {
        let mut state = initial_state();
        for group in flush_and_compaction() {
            state.apply_all(&group).expect("apply");
        }
        state.apply_all(&[add_table(2, 3), add_table(2, 1)]).expect("apply");
        let mut rebuilt = ManifestState::default();
        rebuilt.apply_all(&state.snapshot()).expect("snapshot");
        assert_eq!(rebuilt, state);
        assert_eq!(
            rebuilt.families[&2]
                .tables
                .iter()
                .map(|t| t.file_id)
                .collect::<Vec<_>>(),
            [3, 1]
        );
    }

    #[test]
    fn edit_encoding_is_version_then_tagged_little_endian_fields() {
        let edits = [
            Edit::LastSequence(5),
            Edit::AddFamily {
                id: 2,
                name: "ab".to_string(),
                options: vec![0xee],
            },
            Edit::RemoveTable {
                family: 1,
                file_id: 0x0102,
            },
        ];
        let expected: Vec<u8> = [
            &[1u8][..],                               // version
            &[6, 5, 0, 0, 0, 0, 0, 0, 0],             // LastSequence(5)
            &[1, 2, 0, 0, 0],                         // AddFamily, id 2
            &[2, 0, 0, 0, b'a', b'b'],                //   name "ab"
            &[1, 0, 0, 0, 0xee],                      //   options [0xee]
            &[4, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0], // RemoveTable 1, 0x0102
        ]
        .concat();
        assert_eq!(encode_edits(&edits), expected);
        assert_eq!(decode_edits(&expected), Ok(edits.to_vec()));
        assert_eq!(encode_edits(&[]), [1]);
    }

    #[test]
    fn group_from_a_newer_version_is_refused() {
        assert_eq!(decode_edits(&[2, 6]), Err(DecodeError::Version(2)));
        let err = DecodeError::Version(2).into_error(Path::new("MANIFEST-000001"), 0);
        assert!(matches!(
            err,
            Error::UnsupportedVersion {
                found: 2,
                supported: 1,
                ..
            }
        ));
    }

    #[test]
    fn malformed_groups_say_what_is_wrong() {
        assert_eq!(
            decode_edits(&[]),
            Err(DecodeError::Malformed(
                "edit group ends inside the version byte".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 99]),
            Err(DecodeError::Malformed("unknown edit tag 99".to_string()))
        );
        assert_eq!(
            decode_edits(&[1, 6, 1, 2]),
            Err(DecodeError::Malformed(
                "edit group ends inside a sequence number".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 1, 0, 0, 0, 0, 9, 0, 0, 0, b'x']),
            Err(DecodeError::Malformed(
                "edit group ends inside a family name".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0, 0, 0, 0]),
            Err(DecodeError::Malformed("a family name is not UTF-8".to_string()))
        );
    }

    /// Any edit, with short strings so cases stay small.
    fn any_edit() -> impl Strategy<Value = Edit> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..8);
        let table = (any::<[u64; 9]>(), bytes(), bytes()).prop_map(|(n, first_key, last_key)| TableMeta {
            file_id: n[0],
            run: n[1],
            size: n[2],
            entries: n[3],
            tombstones: n[4],
            first_key,
            last_key,
            min_seq: n[5],
            max_seq: n[6],
            min_ts: n[7],
            max_ts: n[8],
        });
        prop_oneof![
            (any::<u32>(), ".{0,8}", bytes()).prop_map(|(id, name, options)| Edit::AddFamily { id, name, options }),
            (any::<u32>(), bytes()).prop_map(|(id, options)| Edit::SetFamilyOptions { id, options }),
            (any::<u32>(), table).prop_map(|(family, table)| Edit::AddTable { family, table }),
            (any::<u32>(), any::<u64>()).prop_map(|(family, file_id)| Edit::RemoveTable { family, file_id }),
            (any::<u32>(), any::<u64>()).prop_map(|(family, log_number)| Edit::SetLogNumber { family, log_number }),
            any::<u64>().prop_map(Edit::LastSequence),
            any::<u64>().prop_map(Edit::NextFileNumber),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_edit_groups_round_trip(edits in proptest::collection::vec(any_edit(), 0..12)) {
            prop_assert_eq!(decode_edits(&encode_edits(&edits)), Ok(edits));
        }

        #[test]
        fn arbitrary_bytes_never_panic_in_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_edits(&bytes);
            let mut versioned = vec![EDIT_FORMAT_VERSION];
            versioned.extend_from_slice(&bytes);
            let _ = decode_edits(&versioned);
        }
    }
}
