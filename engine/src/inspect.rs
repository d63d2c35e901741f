//! Looking inside a store's log and manifest without opening the store: the
//! decoded records that `cellar dump-log` and `cellar dump-manifest` print
//! (RocksDB's `ldb dump_wal` and `ldb manifest_dump`); and the deletions a
//! snapshot sees, which reads never return (`cellar export` writes them).
//!
//! Both files are sequences of CRC-framed records (`FORMAT-log-manifest.md`).
//! A log record is one write batch (in the first format or the compact one,
//! read alike): its first sequence number and its
//! operations, each with its family's id. A manifest record is one edit
//! group: the changes to the file set that took effect together. Replaying
//! the groups in order builds the store's state (its families, their table
//! files, the oldest log segment each still needs), which is how opening a
//! store knows what it holds.
//!
//! Reading here takes no lock and writes nothing, so it works beside a running
//! store and on a copy without write permission. Damage is not an error: what
//! does not decode is reported as a range of bytes, and reading goes on at the
//! next good record (the reader `repair` uses), because someone looking at a
//! damaged file wants to see all of it. Only a file that cannot be read at all
//! is an error.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::batch;
use crate::error::{Error, Result};
use crate::key;
use crate::key::Kind;
use crate::log::{self, ReadMode};
use crate::manifest::{self, Edit, ManifestState, TableMeta};
use crate::merge::MergeIterator;
use crate::options::FamilyOptions;
use crate::read::Snapshot;
use crate::source::{sources, whole_file_cursor, Source};

/// Bytes of a file that did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedRange {
    /// Offset of the first byte that did not decode.
    pub offset: u64,
    /// How many bytes were skipped.
    pub bytes: u64,
    /// Why.
    pub why: String,
    /// Whether it looks like the end of an interrupted write (a torn tail).
    pub torn: bool,
}

impl From<&log::Damage> for DamagedRange {
    fn from(d: &log::Damage) -> DamagedRange {
        DamagedRange {
            offset: d.offset,
            bytes: d.bytes,
            why: d.why.clone(),
            torn: d.torn,
        }
    }
}

/// One operation of a logged write batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedWrite {
    /// The family's id (the manifest names it).
    pub family_id: u32,
    /// Put, cell deletion or row deletion.
    pub kind: Kind,
    /// The cell's timestamp.
    pub timestamp: u64,
    /// Row key.
    pub row: Bytes,
    /// Column (empty for a row deletion).
    pub column: Bytes,
    /// Value (empty for a deletion).
    pub value: Bytes,
}

impl From<batch::LoggedOp> for LoggedWrite {
    fn from(op: batch::LoggedOp) -> LoggedWrite {
        LoggedWrite {
            family_id: op.family,
            kind: op.kind,
            timestamp: op.timestamp,
            row: op.row,
            column: op.column,
            value: op.value,
        }
    }
}

/// One record of a log segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Where the record's frame starts in the file.
    pub offset: u64,
    /// Length of its payload (the frame adds a header).
    pub payload_bytes: u64,
    /// The write batch: its first sequence number (each operation takes the
    /// next) and its operations. Or, if the payload is not a batch, why: the
    /// reason recovery gives when it refuses the record as corruption.
    pub batch: std::result::Result<(u64, Vec<LoggedWrite>), String>,
}

/// A log segment, record by record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDump {
    /// The file.
    pub path: PathBuf,
    /// Its length.
    pub file_bytes: u64,
    /// The records that decode, in file order.
    pub records: Vec<LogRecord>,
    /// The ranges that do not, in file order.
    pub damage: Vec<DamagedRange>,
}

/// Reads a log segment (`<n>.log`) record by record.
///
/// Damage at the end of the newest segment that an interrupted write can
/// leave is marked [`DamagedRange::torn`], as opening the store judges it
/// (and drops it quietly); any other damage is not.
pub fn dump_log(path: &Path) -> Result<LogDump> {
    let may_end_torn = is_newest_segment(path);
    let contents = log::read_log(path, ReadMode::Resync { may_end_torn })?;
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| crate::error::Error::io(path, e))?
        .len();
    let records = contents
        .records
        .iter()
        .map(|(offset, payload)| LogRecord {
            offset: *offset,
            payload_bytes: payload.len() as u64,
            batch: batch::decode(payload)
                .map(|(first, ops)| (first, ops.into_iter().map(LoggedWrite::from).collect()))
                .map_err(|why| why.to_string()),
        })
        .collect();
    Ok(LogDump {
        path: path.to_path_buf(),
        file_bytes,
        records,
        damage: contents.damage.iter().map(DamagedRange::from).collect(),
    })
}

/// Whether the log segment at `path` may end in an interrupted write, as
/// opening decides: no later segment in its folder holds a byte. A file not
/// named like a segment (`<n>.log`), or in a folder that cannot be listed, is
/// all there is of its log, so it may.
fn is_newest_segment(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(number) = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(crate::files::log_number)
    else {
        return true;
    };
    let Ok(numbers) = crate::files::log_numbers(dir) else {
        return true;
    };
    !numbers
        .into_iter()
        .filter(|&n| n > number)
        .any(|n| std::fs::metadata(crate::files::log_path(dir, n)).is_ok_and(|m| m.len() > 0))
}

/// What the manifest says of one table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRecord {
    /// The file number (`<n>.sst` in the family's folder).
    pub file_id: u64,
    /// The sorted run it belongs to.
    pub run: u64,
    /// Its level (0 but in a leveled family; see [`crate::Compaction`]).
    pub level: u32,
    /// Its size in bytes.
    pub size: u64,
    /// Entries, tombstones included.
    pub entries: u64,
    /// Tombstones.
    pub tombstones: u64,
    /// Its smallest internal key (see [`crate::key`]).
    pub first_key: Vec<u8>,
    /// Its largest internal key.
    pub last_key: Vec<u8>,
    /// Smallest and largest sequence number in it.
    pub sequences: (u64, u64),
    /// Smallest and largest cell timestamp in it.
    pub timestamps: (u64, u64),
}

impl From<&TableMeta> for TableRecord {
    fn from(t: &TableMeta) -> TableRecord {
        TableRecord {
            file_id: t.file_id,
            run: t.run,
            level: t.level,
            size: t.size,
            entries: t.entries,
            tombstones: t.tombstones,
            first_key: t.first_key.clone(),
            last_key: t.last_key.clone(),
            sequences: (t.min_seq, t.max_seq),
            timestamps: (t.min_ts, t.max_ts),
        }
    }
}

/// One edit of a manifest record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestEdit {
    /// A new column family (`None`: its options do not decode).
    AddFamily {
        /// Its id, which the other edits and the log use.
        id: u32,
        /// Its name.
        name: String,
        /// Its options.
        options: Option<FamilyOptions>,
    },
    /// New options for a family.
    SetFamilyOptions {
        /// The family.
        id: u32,
        /// The options.
        options: Option<FamilyOptions>,
    },
    /// A table file joins a family (a flush or a compaction's output).
    AddTable {
        /// The family.
        family: u32,
        /// The file.
        table: TableRecord,
    },
    /// A table file leaves a family (a compaction's input).
    RemoveTable {
        /// The family.
        family: u32,
        /// The file number.
        file_id: u64,
    },
    /// The oldest log segment the family still needs.
    SetLogNumber {
        /// The family.
        family: u32,
        /// The segment's number.
        log_number: u64,
    },
    /// The largest sequence number a table file may hold.
    LastSequence(u64),
    /// The next unused file number.
    NextFileNumber(u64),
    /// A family is dropped; its id is never used again.
    RemoveFamily {
        /// The family.
        id: u32,
    },
}

impl From<&Edit> for ManifestEdit {
    fn from(edit: &Edit) -> ManifestEdit {
        match edit {
            Edit::AddFamily { id, name, options } => ManifestEdit::AddFamily {
                id: *id,
                name: name.clone(),
                options: FamilyOptions::decode(options),
            },
            Edit::SetFamilyOptions { id, options } => ManifestEdit::SetFamilyOptions {
                id: *id,
                options: FamilyOptions::decode(options),
            },
            Edit::AddTable { family, table } => ManifestEdit::AddTable {
                family: *family,
                table: TableRecord::from(table),
            },
            Edit::RemoveTable { family, file_id } => ManifestEdit::RemoveTable {
                family: *family,
                file_id: *file_id,
            },
            Edit::SetLogNumber { family, log_number } => ManifestEdit::SetLogNumber {
                family: *family,
                log_number: *log_number,
            },
            Edit::LastSequence(n) => ManifestEdit::LastSequence(*n),
            Edit::NextFileNumber(n) => ManifestEdit::NextFileNumber(*n),
            Edit::RemoveFamily { id } => ManifestEdit::RemoveFamily { id: *id },
        }
    }
}

/// One record of a manifest: an edit group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestRecord {
    /// Where the record's frame starts in the file.
    pub offset: u64,
    /// Its edits (empty if the payload does not decode).
    pub edits: Vec<ManifestEdit>,
    /// Why the payload does not decode, or why an edit does not fit the
    /// state before it (replay would refuse the manifest there).
    pub problem: Option<String>,
}

/// One family as the whole manifest leaves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilySummary {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// The oldest log segment it still needs.
    pub log_number: u64,
    /// Its table files, in the order they were added.
    pub tables: Vec<TableRecord>,
}

/// A manifest, record by record, and the state its records build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestDump {
    /// The file.
    pub path: PathBuf,
    /// Its length.
    pub file_bytes: u64,
    /// The records that frame, in file order.
    pub records: Vec<ManifestRecord>,
    /// The ranges that do not, in file order.
    pub damage: Vec<DamagedRange>,
    /// The families after every record that fits.
    pub families: Vec<FamilySummary>,
    /// The largest sequence number a table file may hold.
    pub last_sequence: u64,
    /// The next unused file number.
    pub next_file_number: u64,
}

/// The manifest that the store in `dir` uses, as its `CURRENT` file names it.
pub fn live_manifest(dir: &Path) -> Result<PathBuf> {
    manifest::live_manifest(dir)
}

/// Reads a manifest (`MANIFEST-<n>`) record by record and replays it.
///
/// A manifest may always end in a torn record (a crash during an append,
/// which opening drops); such damage is marked [`DamagedRange::torn`].
pub fn dump_manifest(path: &Path) -> Result<ManifestDump> {
    let contents = log::read_log(path, ReadMode::Resync { may_end_torn: true })?;
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| crate::error::Error::io(path, e))?
        .len();
    let mut state = ManifestState::default();
    let mut records = Vec::new();
    for (offset, payload) in &contents.records {
        let mut record = ManifestRecord {
            offset: *offset,
            edits: Vec::new(),
            problem: None,
        };
        match manifest::decode_edits(payload) {
            Ok(edits) => {
                record.edits = edits.iter().map(ManifestEdit::from).collect();
                // Applied one by one, as replay does: the first that does not
                // fit is the problem, and what came before it stays applied.
                for edit in &edits {
                    if let Err(why) = state.try_apply(edit) {
                        record.problem = Some(why);
                        break;
                    }
                }
            }
            Err(e) => record.problem = Some(e.into_error(path, *offset).to_string()),
        }
        records.push(record);
    }
    let families = state
        .families
        .values()
        .map(|f| FamilySummary {
            id: f.id,
            name: f.name.clone(),
            log_number: f.log_number,
            tables: f.tables.iter().map(TableRecord::from).collect(),
        })
        .collect();
    Ok(ManifestDump {
        path: path.to_path_buf(),
        file_bytes,
        records,
        damage: contents.damage.iter().map(DamagedRange::from).collect(),
        families,
        last_sequence: state.last_sequence,
        next_file_number: state.next_file_number,
    })
}

/// A deletion a reader sees: the newest tombstone of a row, or of one
/// column of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    /// The row.
    pub row: Bytes,
    /// The column; `None` for a row tombstone (every column of the row).
    pub column: Option<Bytes>,
    /// Versions up to this timestamp are deleted.
    pub timestamp: u64,
}

/// The deletions `snapshot` sees in `family`, in row order, a row's
/// tombstone before its columns': for each row and each column the newest
/// tombstone written at or before the snapshot (older ones hide nothing it
/// does not). A deletion stays in the store until a compaction proves
/// nothing older is left for it to hide, so this is also what a copy of the
/// family needs to hide the same cells in a store that holds older ones.
///
/// It reads every entry of the family, as [`crate::Store::stats`] does.
pub fn deletions(snapshot: &Snapshot, family: &str) -> Result<Vec<Deletion>> {
    let fam = snapshot
        .version
        .family(family)
        .ok_or_else(|| Error::UnknownFamily(family.to_string()))?;
    let mut cursors = Vec::new();
    for source in sources(fam) {
        match source {
            Source::Memtable { memtable, .. } if memtable.is_empty() => {}
            Source::Memtable { .. } => cursors.push(source.cursor(&[], None)?),
            Source::Table(table) => cursors.push(whole_file_cursor(table)?),
        }
    }
    let mut merge = MergeIterator::new(cursors);
    let mut out = Vec::new();
    // The row (or row and column) of the last deletion kept: newer entries
    // come first, so the first tombstone of each is its newest.
    let mut last: Vec<u8> = Vec::new();
    while merge.valid() {
        let k = merge.key();
        match key::suffix(k) {
            Some((timestamp, seq, kind)) if kind.is_tombstone() && seq <= snapshot.sequence => {
                let prefix = key::prefix(k);
                if prefix != last.as_slice() {
                    last = prefix.to_vec();
                    let parsed = key::parse(k).ok_or_else(|| merge.undecodable_key())?;
                    out.push(Deletion {
                        row: Bytes::from(parsed.row),
                        column: (kind == Kind::DeleteCell).then(|| Bytes::from(parsed.column)),
                        timestamp,
                    });
                }
            }
            Some(_) => {}
            None => return Err(merge.undecodable_key()),
        }
        merge.next()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, StoreOptions, WriteBatch};

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn newest_log(dir: &Path) -> std::result::Result<PathBuf, Box<dyn std::error::Error>> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        logs.sort();
        Ok(logs.pop().ok_or("no log segment")?)
    }

    #[test]
    fn a_logged_batch_reads_back_with_its_sequence_numbers() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
            let mut batch = WriteBatch::new();
            batch.put_at("books", "b1", "title", 7, "Dune");
            batch.delete_row_at("books", "b2", 8);
            store.write(&batch)?;
        }
        let dump = dump_log(&newest_log(dir.path())?)?;
        assert!(dump.damage.is_empty());
        let [record] = dump.records.as_slice() else {
            return Err(format!("one record expected: {dump:?}").into());
        };
        let (first, writes) = record.batch.clone().map_err(|why| format!("not a batch: {why}"))?;
        assert_eq!(first, 1);
        let shown: Vec<(Kind, &[u8], u64)> = writes.iter().map(|w| (w.kind, &w.row[..], w.timestamp)).collect();
        assert_eq!(shown, [(Kind::Put, &b"b1"[..], 7), (Kind::DeleteRow, &b"b2"[..], 8)]);
        Ok(())
    }

    /// The last record of the newest segment cut short is a torn tail, as
    /// opening the store calls it; the same cut in a segment followed by one
    /// holding bytes is damage.
    #[test]
    fn a_cut_last_record_is_a_torn_tail_only_in_the_newest_segment() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
            store.put_at("books", "b1", "title", 7, "Dune")?;
            store.put_at("books", "b2", "title", 8, "Emma")?;
        }
        let path = newest_log(dir.path())?;
        let bytes = std::fs::read(&path)?;
        let second = dump_log(&path)?.records.get(1).map(|r| r.offset).ok_or("two records")?;
        std::fs::write(&path, &bytes[..bytes.len() - 3])?;
        let dump = dump_log(&path)?;
        let shown: Vec<(u64, u64, bool)> = dump.damage.iter().map(|d| (d.offset, d.bytes, d.torn)).collect();
        let cut = bytes.len() as u64 - 3 - second;
        assert_eq!((dump.records.len(), shown), (1, vec![(second, cut, true)]));
        // A newer segment holding bytes: this one cannot end in a torn write.
        let number = crate::files::log_numbers(dir.path())?.last().copied().unwrap_or(0) + 1;
        std::fs::write(crate::files::log_path(dir.path(), number), b"x")?;
        let dump = dump_log(&path)?;
        let shown: Vec<(u64, u64, bool)> = dump.damage.iter().map(|d| (d.offset, d.bytes, d.torn)).collect();
        assert_eq!(shown, vec![(second, cut, false)]);
        Ok(())
    }

    /// A manifest may always end in a torn write (an append cut short).
    #[test]
    fn a_cut_last_manifest_record_is_a_torn_tail() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
            store.put_at("books", "b1", "title", 7, "Dune")?;
            store.flush()?;
        }
        let path = live_manifest(dir.path())?;
        let bytes = std::fs::read(&path)?;
        std::fs::write(&path, &bytes[..bytes.len() - 1])?;
        let dump = dump_manifest(&path)?;
        assert_eq!(dump.damage.iter().map(|d| d.torn).collect::<Vec<_>>(), [true]);
        Ok(())
    }

    /// A record that frames but is not a batch shows recovery's reason.
    #[test]
    fn a_record_that_is_not_a_batch_says_why() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("000001.log");
        let mut good = Vec::new();
        let op = batch::LoggedOp {
            family: 1,
            kind: Kind::Put,
            timestamp: 7,
            row: Bytes::from_static(b"r"),
            column: Bytes::from_static(b"c"),
            value: Bytes::from_static(b"v"),
        };
        batch::encode(1, &[op], &mut good);
        let mut bad = good.clone();
        bad[7] = 9;
        let mut file = Vec::new();
        log::encode_record(&mut file, &bad)?;
        log::encode_record(&mut file, &good)?;
        std::fs::write(&path, file)?;
        let dump = dump_log(&path)?;
        assert!(dump.damage.is_empty());
        let shown: Vec<Option<&str>> = dump
            .records
            .iter()
            .map(|r| r.batch.as_ref().err().map(String::as_str))
            .collect();
        assert_eq!(
            shown,
            [
                Some("unknown batch format (top byte of the first sequence number)"),
                None
            ]
        );
        Ok(())
    }

    #[test]
    fn the_manifest_replays_to_the_families_and_their_tables() -> TestResult {
        let dir = tempfile::tempdir()?;
        {
            let store = Store::open(dir.path(), StoreOptions::default().family("books"))?;
            store.put_at("books", "b1", "title", 7, "Dune")?;
            store.flush()?;
        }
        let dump = dump_manifest(&live_manifest(dir.path())?)?;
        assert!(dump.damage.is_empty() && dump.records.iter().all(|r| r.problem.is_none()));
        let [books] = dump.families.as_slice() else {
            return Err(format!("one family expected: {dump:?}").into());
        };
        assert_eq!((books.name.as_str(), books.tables.len()), ("books", 1));
        assert!(dump.records.iter().any(|r| r
            .edits
            .iter()
            .any(|e| matches!(e, ManifestEdit::AddFamily { name, options: Some(_), .. } if name == "books"))));
        assert_eq!(dump.last_sequence, 1);
        Ok(())
    }

    #[test]
    fn deletions_are_the_newest_tombstone_of_each_row_and_column_a_snapshot_sees() -> TestResult {
        let dir = tempfile::tempdir()?;
        let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
        store.put_at("f", "r1", "c", 5, "v")?;
        store.delete_at("f", "r1", "c", 3)?;
        store.flush()?;
        let before = store.snapshot();
        store.delete_at("f", "r1", "c", 6)?;
        store.delete_row_at("f", "r2", 7)?;
        let seen: Vec<(Bytes, Option<Bytes>, u64)> = deletions(&store.snapshot(), "f")?
            .into_iter()
            .map(|d| (d.row, d.column, d.timestamp))
            .collect();
        assert_eq!(
            seen,
            [
                (Bytes::from("r1"), Some(Bytes::from("c")), 6),
                (Bytes::from("r2"), None, 7)
            ]
        );
        let earlier: Vec<u64> = deletions(&before, "f")?.iter().map(|d| d.timestamp).collect();
        assert_eq!(earlier, [3]);
        Ok(())
    }
}
