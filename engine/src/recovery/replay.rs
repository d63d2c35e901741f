//! Recovery's log step: replay the segments a family still needs.
//!
//! Segments are read oldest first, every record into its family's memtable,
//! skipping what the family already flushed. Two kinds of evidence decide
//! what damage means:
//!
//! - **Which segment.** A segment is synced when the next one starts, before
//!   any write goes to the next, so only the newest segment holding any bytes
//!   can end in an interrupted write. Damage in any other segment is
//!   corruption, whatever it looks like (see [`crate::log::read_log`] for the
//!   rules inside one file).
//! - **Sequence numbers.** Every record's first sequence number follows the
//!   previous record's last, across segments (the writer numbers writes one
//!   after the other and never skips). A record that does not follow is
//!   proof that records before it are missing, even when what remains
//!   frames perfectly (an older segment cut at a record boundary). The
//!   first record must not start after the manifest's last sequence plus
//!   one: every record of the segments no longer needed is in a table.
//!
//! With `salvage`, replay instead stops at the first damage (a point in time:
//! no write after a lost one is applied), and the damaged segment and every
//! later one are moved to `lost/` once the store opens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::batch::{self, LoggedOp};
use crate::error::{Error, Result};
use crate::files::{self, log_path};
use crate::key;
use crate::log::{self, ReadMode};
use crate::manifest::ManifestState;
use crate::memtable::Memtable;

/// What replaying the log gave.
pub(super) struct Replayed {
    /// Per family, the writes it had not flushed.
    pub(super) memtables: BTreeMap<u32, Memtable>,
    /// The last sequence number used, in the manifest or in the log.
    pub(super) last_seq: u64,
    /// Every segment replay was given (those in the folder), read or not, oldest first.
    pub(super) segments: Vec<u64>,
    /// Segments salvage dropped (from the first damaged one on).
    pub(super) dropped: Vec<PathBuf>,
}

/// The log segments a replay reads, and where their bytes come from: the
/// store folder, or files a read-only open holds open.
pub(super) trait Segments {
    /// The segments, oldest first.
    fn numbers(&self) -> Vec<u64>;
    /// How long segment `number` is now.
    fn len(&self, number: u64) -> Result<u64>;
    /// The bytes of segment `number`.
    fn read(&self, number: u64) -> Result<Bytes>;
}

/// The segments in the store folder as it was listed, each read by its name.
struct InFolder<'a> {
    dir: &'a Path,
    numbers: Vec<u64>,
}

impl Segments for InFolder<'_> {
    fn numbers(&self) -> Vec<u64> {
        self.numbers.clone()
    }

    fn len(&self, number: u64) -> Result<u64> {
        let path = log_path(self.dir, number);
        Ok(std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len())
    }

    fn read(&self, number: u64) -> Result<Bytes> {
        let path = log_path(self.dir, number);
        std::fs::read(&path).map(Bytes::from).map_err(|e| Error::io(&path, e))
    }
}

/// Replays every segment in the folder some family still needs (see the module).
pub(super) fn replay_logs(dir: &Path, state: &ManifestState, salvage: bool) -> Result<Replayed> {
    let segments = InFolder {
        dir,
        numbers: files::log_numbers(dir)?,
    };
    replay_segments(dir, state, salvage, &segments)
}

/// Replays every one of `segments` some family still needs; `dir` names them in errors.
pub(super) fn replay_segments(
    dir: &Path,
    state: &ManifestState,
    salvage: bool,
    segments: &dyn Segments,
) -> Result<Replayed> {
    let numbers = segments.numbers();
    let needed = state.oldest_log_needed().unwrap_or(u64::MAX);
    let to_read: Vec<u64> = numbers.iter().copied().filter(|&n| n >= needed).collect();
    let mut lengths = Vec::with_capacity(to_read.len());
    for &number in &to_read {
        lengths.push(segments.len(number)?);
    }
    let newest_with_bytes = to_read
        .iter()
        .zip(&lengths)
        .rev()
        .find(|(_, &len)| len > 0)
        .map(|(&n, _)| n);

    let mut replay = Replay {
        state,
        memtables: BTreeMap::new(),
        last_seq: state.last_sequence,
        previous_last: None,
    };
    let mut dropped = Vec::new();
    // The segment before the one being read, and its length.
    let mut previous: Option<(u64, u64)> = None;
    for (i, (&number, &len)) in to_read.iter().zip(&lengths).enumerate() {
        let path = log_path(dir, number);
        // Where missing records would have been, if this segment's first
        // record shows a gap: the end of the segment before it.
        let before = match previous {
            Some((n, l)) => (log_path(dir, n), l),
            None => (path.clone(), 0),
        };
        let data = segments.read(number)?;
        let complete = if salvage {
            replay.salvage_segment(&path, number, data, &before)?
        } else {
            let mode = ReadMode::Strict {
                may_end_torn: Some(number) == newest_with_bytes,
            };
            replay.segment(&path, number, data, mode, &before)?;
            true
        };
        if !complete {
            dropped.extend(to_read.iter().skip(i).map(|&n| log_path(dir, n)));
            break;
        }
        previous = Some((number, len));
    }
    Ok(Replayed {
        memtables: replay.memtables,
        last_seq: replay.last_seq,
        segments: numbers,
        dropped,
    })
}

/// Replay in progress.
struct Replay<'a> {
    state: &'a ManifestState,
    memtables: BTreeMap<u32, Memtable>,
    last_seq: u64,
    /// The last sequence number of the last record replayed.
    previous_last: Option<u64>,
}

/// Why a record cannot be applied: what to report, and where.
struct Refused {
    file: PathBuf,
    offset: u64,
    what: String,
}

impl Replay<'_> {
    /// Replays one whole segment; any refused record is corruption.
    /// (`RecoverLogFile` in LevelDB.)
    fn segment(
        &mut self,
        path: &Path,
        number: u64,
        data: Bytes,
        mode: ReadMode,
        before: &(PathBuf, u64),
    ) -> Result<()> {
        let contents = log::decode_log(path, data, mode)?;
        for (offset, payload) in &contents.records {
            if let Err(r) = self.record(path, number, *offset, payload, before) {
                return Err(Error::corruption(r.file, r.offset, r.what));
            }
        }
        Ok(())
    }

    /// Replays the records of one segment up to its first damage or its
    /// first record that does not follow; returns whether it read the whole
    /// segment.
    fn salvage_segment(&mut self, path: &Path, number: u64, data: Bytes, before: &(PathBuf, u64)) -> Result<bool> {
        let contents = log::decode_log(path, data, ReadMode::Salvage)?;
        for (offset, payload) in &contents.records {
            if self.record(path, number, *offset, payload, before).is_err() {
                return Ok(false);
            }
        }
        Ok(contents.damage.is_empty())
    }

    /// Applies one record: checks that it follows the previous one, then
    /// adds each of its writes to its family's memtable unless the family
    /// already flushed this segment.
    fn record(
        &mut self,
        path: &Path,
        number: u64,
        offset: u64,
        payload: &bytes::Bytes,
        before: &(PathBuf, u64),
    ) -> std::result::Result<(), Refused> {
        let refuse = |what: String| Refused {
            file: path.to_path_buf(),
            offset,
            what,
        };
        let (first, ops) = match batch::decode(payload) {
            Ok(batch) => batch,
            Err(why) => return Err(refuse(format!("log record is not a write batch: {why}"))),
        };
        let expected = self.previous_last.map_or(self.state.last_sequence + 1, |last| last + 1);
        let follows = match self.previous_last {
            Some(_) => first == expected,
            None => first <= expected,
        };
        if !follows {
            let what = format!(
                "records are missing: the next write is sequence {expected}, but the record at offset \
                 {offset} of {} starts at {first}",
                path.display()
            );
            return Err(if offset == 0 {
                Refused {
                    file: before.0.clone(),
                    offset: before.1,
                    what,
                }
            } else {
                refuse(what)
            });
        }
        let count = ops.len() as u64;
        for (i, op) in ops.into_iter().enumerate() {
            let seq = first + i as u64;
            let Some(family) = self.state.families.get(&op.family) else {
                if self.state.dropped.contains_key(&op.family) {
                    continue; // the family was dropped after this write
                }
                return Err(refuse(format!("log names unknown family id {}", op.family)));
            };
            if number < family.log_number {
                continue; // already in a table file
            }
            insert_logged(&mut self.memtables, &op, seq, number);
        }
        let last = first + count.saturating_sub(1);
        self.previous_last = Some(last);
        self.last_seq = self.last_seq.max(last);
        Ok(())
    }
}

/// Adds one logged write, with sequence number `seq`, from log segment
/// `segment`, to its family's memtable.
pub(super) fn insert_logged(memtables: &mut BTreeMap<u32, Memtable>, op: &LoggedOp, seq: u64, segment: u64) {
    let k = key::encode(&op.row, &op.column, op.timestamp, seq, op.kind);
    memtables.entry(op.family).or_insert_with(Memtable::new).insert(
        &k,
        &op.value,
        op.timestamp,
        seq,
        op.kind.is_tombstone(),
        segment,
    );
}

#[cfg(test)]
mod tests {
    //! Logs of both record formats replay; a compact record that frames well
    //! and does not decode is corruption wherever it is.

    use std::path::{Path, PathBuf};

    use bytes::Bytes;

    use crate::batch::{self, LoggedOp};
    use crate::files;
    use crate::key::{self, Kind};
    use crate::log::{self, ReadMode};
    use crate::{Error, ReadOnlyStore, Row, RowRange, Snapshot, Store, StoreOptions, SyncPolicy, WriteBatch};

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn options() -> StoreOptions {
        StoreOptions::default().sync(SyncPolicy::Always).family("a").family("b")
    }

    /// Every kind of write, in batches of one and of many cells, rows shared
    /// and not, timestamps the store's and the caller's.
    fn write_everything(store: &Store, round: usize) -> crate::Result<()> {
        for i in 0..30 {
            store.put("a", format!("row{round}-{i:02}"), "col", format!("a{i}"))?;
        }
        store.put_at("b", "versioned", format!("col{round}"), 1, "one")?;
        store.put_at("b", "versioned", format!("col{round}"), 2, "two")?;
        store.delete("a", format!("row{round}-07"), "col")?;
        store.delete_row("a", format!("row{round}-08"))?;
        let mut wide = WriteBatch::new();
        for field in 0..20 {
            wide.put(
                "b",
                format!("wide{round}"),
                format!("field{field}"),
                format!("v{field:010}"),
            );
        }
        wide.put_at("b", format!("wide{round}"), "old", 5, "five")
            .delete("a", format!("row{round}-09"), "col")
            .put("a", format!("row{round}-10"), "", "")
            .delete_row_at("b", format!("gone{round}"), 3);
        store.write(&wide)
    }

    /// Every row of family `a`, of family `b`, and every version of the
    /// versioned columns.
    type Contents = (Vec<Row>, Vec<Row>, Vec<Vec<crate::Cell>>);

    /// Every row of families `a` and `b`, as one snapshot reads them.
    fn rows_of_a_and_b(snapshot: &Snapshot) -> crate::Result<(Vec<Row>, Vec<Row>)> {
        let rows = |family| {
            snapshot
                .scan(family, &RowRange::all())?
                .collect::<crate::Result<Vec<Row>>>()
        };
        Ok((rows("a")?, rows("b")?))
    }

    /// Everything the store holds: every row of both families, and every
    /// version of the versioned columns.
    fn contents(store: &Store) -> crate::Result<Contents> {
        let (a, b) = rows_of_a_and_b(&store.snapshot())?;
        let versions = (0..2)
            .map(|round| store.versions("b", "versioned", format!("col{round}")))
            .collect::<crate::Result<Vec<_>>>()?;
        Ok((a, b, versions))
    }

    /// The store's log segments.
    fn segments(dir: &Path) -> crate::Result<Vec<PathBuf>> {
        Ok(files::log_numbers(dir)?
            .into_iter()
            .map(|n| files::log_path(dir, n))
            .collect())
    }

    /// The batches of a segment, each with its record's payload.
    fn batches(path: &Path) -> crate::Result<Vec<(Bytes, u64, Vec<LoggedOp>)>> {
        let contents = log::read_log(path, ReadMode::Strict { may_end_torn: true })?;
        let mut out = Vec::new();
        for (offset, payload) in contents.records {
            let (first, ops) =
                batch::decode(&payload).map_err(|why| Error::corruption(path, offset, why.to_string()))?;
            out.push((payload, first, ops));
        }
        Ok(out)
    }

    /// The format of a payload: the top byte of its first 8 bytes.
    fn format(payload: &[u8]) -> Option<u8> {
        payload.get(7).copied()
    }

    /// Rewrites every segment of the store in the first format, as cellar
    /// wrote logs before the compact one; returns how many records it rewrote.
    fn rewrite_in_the_first_format(dir: &Path) -> crate::Result<usize> {
        rewrite_segments_in_the_first_format(&segments(dir)?)
    }

    /// Rewrites the given segments in the first format; returns how many
    /// records it rewrote.
    fn rewrite_segments_in_the_first_format(paths: &[PathBuf]) -> crate::Result<usize> {
        let mut records = 0;
        for path in paths {
            let mut file = Vec::new();
            for (payload, first, ops) in batches(path)? {
                assert_eq!(format(&payload), Some(2), "the write path writes the compact format");
                let mut old = Vec::new();
                batch::encode_v1(first, &ops, &mut old);
                log::encode_record(&mut file, &old)?;
                records += 1;
            }
            std::fs::write(path, file).map_err(|e| Error::io(path, e))?;
        }
        Ok(records)
    }

    #[test]
    fn a_store_whose_log_is_in_the_first_format_reopens_with_every_write_and_takes_new_ones() -> TestResult {
        let dir = tempfile::tempdir()?;
        let before = {
            let store = Store::open(dir.path(), options())?;
            write_everything(&store, 0)?;
            assert_eq!(store.tables().len(), 0, "everything is in the log only");
            contents(&store)?
        };
        assert_eq!(rewrite_in_the_first_format(dir.path())?, 30 + 2 + 2 + 1);
        let old_segments = segments(dir.path())?;

        let after = {
            let store = Store::open(dir.path(), options())?;
            assert_eq!(contents(&store)?, before);
            write_everything(&store, 1)?;
            contents(&store)?
        };
        // The old segments were replayed into tables at the open; the new
        // writes went to a new segment, in the compact format.
        let new_segments: Vec<PathBuf> = segments(dir.path())?
            .into_iter()
            .filter(|p| !old_segments.contains(p))
            .collect();
        let new_formats: Vec<Option<u8>> = new_segments
            .iter()
            .map(|p| batches(p))
            .collect::<crate::Result<Vec<_>>>()?
            .concat()
            .iter()
            .map(|(payload, _, _)| format(payload))
            .collect();
        assert_eq!(new_formats, vec![Some(2); 35]);
        assert_ne!(after, before);

        let store = Store::open(dir.path(), options())?;
        assert_eq!(contents(&store)?, after);
        drop(store);
        let snapshot = ReadOnlyStore::open(dir.path())?.snapshot();
        assert_eq!(snapshot.scan("b", &RowRange::all())?.count(), after.1.len());
        Ok(())
    }

    /// An older cellar's segment, still needed by an idle family, followed
    /// by segments this one wrote: one store, both formats, each segment
    /// one of them.
    #[test]
    fn segments_of_both_formats_replay_together() -> TestResult {
        let dir = tempfile::tempdir()?;
        let options = || {
            StoreOptions::default()
                .sync(SyncPolicy::Always)
                .family_with("a", crate::FamilyOptions::default().memtable_max_entries(8))
                .family("b")
        };
        let before = {
            let store = Store::open(dir.path(), options())?;
            store.put_at("b", "idle", "c", 1, "pins the oldest segment")?;
            for i in 0..30 {
                let mut two = WriteBatch::new();
                two.put("a", format!("row{i:02}"), "c", format!("a{i}")).put_at(
                    "b",
                    format!("row{i:02}"),
                    "c",
                    2,
                    format!("b{i}"),
                );
                store.write(&two)?;
            }
            rows_of_a_and_b(&store.snapshot())?
        };
        let all = segments(dir.path())?;
        assert!(all.len() >= 3, "rotations made several segments: {all:?}");
        let oldest = all.first().cloned().into_iter().collect::<Vec<_>>();
        assert!(rewrite_segments_in_the_first_format(&oldest)? > 0);
        let formats: Vec<Option<u8>> = all
            .iter()
            .map(|p| Ok(batches(p)?.first().and_then(|(payload, _, _)| format(payload))))
            .collect::<crate::Result<Vec<_>>>()?;
        assert_eq!(formats.first(), Some(&Some(0)));
        assert!(formats.iter().skip(1).any(|f| *f == Some(2)), "{formats:?}");

        assert_eq!(rows_of_a_and_b(&ReadOnlyStore::open(dir.path())?.snapshot())?, before);
        let store = Store::open(dir.path(), options())?;
        assert_eq!(rows_of_a_and_b(&store.snapshot())?, before);
        Ok(())
    }

    #[test]
    fn a_read_only_open_replays_a_log_in_the_first_format() -> TestResult {
        let dir = tempfile::tempdir()?;
        let before = {
            let store = Store::open(dir.path(), options())?;
            write_everything(&store, 0)?;
            contents(&store)?
        };
        rewrite_in_the_first_format(dir.path())?;
        let snapshot = ReadOnlyStore::open(dir.path())?.snapshot();
        assert_eq!(rows_of_a_and_b(&snapshot)?, (before.0, before.1));
        Ok(())
    }

    /// A store with a few writes in its log, and a compact record for the
    /// next write (a put of `r`/`c`, timestamp 300, in family `a`) that
    /// `edit` changes before it is framed, checksum and all, and appended as
    /// the last record of the newest segment. Returns the record's offset.
    fn with_last_record(dir: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> crate::Result<u64> {
        {
            let store = Store::open(dir, options())?;
            for i in 0..5 {
                store.put("a", format!("row{i}"), "col", "value")?;
            }
        }
        let newest = segments(dir)?
            .pop()
            .ok_or_else(|| Error::InvalidArgument("no segment".into()))?;
        let records = batches(&newest)?;
        let (_, first, ops) = records
            .last()
            .ok_or_else(|| Error::InvalidArgument("no record".into()))?;
        let family = ops.first().map_or(0, |op| op.family);
        let next = LoggedOp {
            family,
            kind: Kind::Put,
            timestamp: 300,
            row: Bytes::from_static(b"r"),
            column: Bytes::from_static(b"c"),
            value: Bytes::from_static(b"v"),
        };
        let mut payload = Vec::new();
        batch::encode(first + ops.len() as u64, &[next], &mut payload);
        edit(&mut payload);
        let mut file = std::fs::read(&newest).map_err(|e| Error::io(&newest, e))?;
        let offset = file.len() as u64;
        log::encode_record(&mut file, &payload)?;
        std::fs::write(&newest, file).map_err(|e| Error::io(&newest, e))?;
        Ok(offset)
    }

    #[test]
    fn the_undamaged_appended_record_replays() -> TestResult {
        let dir = tempfile::tempdir()?;
        with_last_record(dir.path(), |_| ())?;
        let store = Store::open(dir.path(), options())?;
        let cell = store.get("a", "r", "c")?.map(|c| (c.timestamp, c.value));
        assert_eq!(cell, Some((300, Bytes::from_static(b"v"))));
        Ok(())
    }

    #[test]
    fn a_checksum_valid_compact_record_that_does_not_decode_is_corruption_not_a_torn_tail() -> TestResult {
        // The payload: 8 head | count | timestamp 300 (2 bytes) | flags | family | 1 r | 1 c | 1 v
        type Case = (&'static str, fn(&mut Vec<u8>), &'static str);
        let cases: [Case; 8] = [
            (
                "a varint cut short",
                |p| p.truncate(10),
                "a varint is cut short by the end of the record",
            ),
            (
                "a length past the end",
                |p| p[15] = 9,
                "a field runs past the end of the record",
            ),
            ("trailing bytes", |p| p.push(0), "bytes after the last operation"),
            (
                "unknown flag bits",
                |p| p[11] |= 0x80,
                "an operation's flags have unknown bits set",
            ),
            (
                "the first op shares a row",
                |p| p[11] |= 0x08,
                "the first operation shares a row",
            ),
            (
                "no operations",
                |p| {
                    p[8] = 0;
                    p.truncate(11);
                },
                "a batch of no operations",
            ),
            (
                "a put turned into a row deletion",
                |p| p[11] |= 0x03,
                "a row deletion names a column",
            ),
            (
                "two ops, the second numbered past the largest sequence number",
                |p| {
                    p[..7].fill(0xff);
                    p[8] = 2;
                    // put, same family, same row: column "c", value "v"
                    p.extend_from_slice(&[0x0d, 1, b'c', 1, b'v']);
                },
                "operations numbered past the largest sequence number",
            ),
        ];
        for (case, edit, why) in cases {
            let dir = tempfile::tempdir()?;
            let offset = with_last_record(dir.path(), edit)?;
            let expected = format!("log record is not a write batch: {why}");
            for (open, result) in [
                ("open", Store::open(dir.path(), options()).map(drop)),
                ("read-only open", ReadOnlyStore::open(dir.path()).map(drop)),
            ] {
                match result {
                    Err(Error::Corruption { offset: at, what, .. }) => {
                        assert_eq!((at, what.as_str()), (offset, expected.as_str()), "{case}, {open}");
                    }
                    other => panic!("{case}, {open}: expected corruption, got {other:?}"),
                }
            }
        }
        Ok(())
    }

    /// The frame of `payload`, appended to the file at `path`; returns its offset.
    fn append_record(path: &Path, payload: &[u8]) -> crate::Result<u64> {
        let mut file = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let offset = file.len() as u64;
        log::encode_record(&mut file, payload)?;
        std::fs::write(path, file).map_err(|e| Error::io(path, e))?;
        Ok(offset)
    }

    /// A compact record whose flags byte says "row deletion" for a put of a
    /// column: it frames, its checksum is good, and it is corruption where
    /// it is, followed by good records or in an older segment, for an open
    /// and a read-only open alike; salvage keeps what came before it.
    #[test]
    fn a_malformed_record_in_the_middle_or_in_an_older_segment_is_corruption_at_its_offset() -> TestResult {
        for older_segment in [false, true] {
            let dir = tempfile::tempdir()?;
            let offset = with_last_record(dir.path(), |p| p[11] |= 0x03)?;
            let newest = segments(dir.path())?
                .pop()
                .ok_or_else(|| Error::InvalidArgument("no segment".into()))?;
            // A good record after it, numbered after it (its one op).
            let records = log::read_log(&newest, ReadMode::Strict { may_end_torn: true })?.records;
            let (_, payload) = records
                .last()
                .ok_or_else(|| Error::InvalidArgument("no record".into()))?;
            let head: [u8; 8] = payload.get(..8).and_then(|h| h.try_into().ok()).unwrap_or_default();
            let first = u64::from_le_bytes(head) & key::MAX_SEQUENCE;
            let family = 1; // family `a`, as `with_last_record` wrote it
            let mut next = Vec::new();
            let op = LoggedOp {
                family,
                kind: Kind::Put,
                timestamp: 400,
                row: Bytes::from_static(b"after"),
                column: Bytes::from_static(b"c"),
                value: Bytes::from_static(b"v"),
            };
            batch::encode(first + 1, &[op], &mut next);
            if older_segment {
                // ... in the next segment, which makes this one older.
                let number = files::log_numbers(dir.path())?.last().copied().unwrap_or(0) + 1;
                std::fs::write(files::log_path(dir.path(), number), [])?;
                append_record(&files::log_path(dir.path(), number), &next)?;
            } else {
                append_record(&newest, &next)?;
            }
            let expected = "log record is not a write batch: a row deletion names a column";
            for (open, result) in [
                ("open", Store::open(dir.path(), options()).map(drop)),
                ("read-only open", ReadOnlyStore::open(dir.path()).map(drop)),
            ] {
                match result {
                    Err(Error::Corruption { file, offset: at, what }) => {
                        assert_eq!(
                            (file, at, what.as_str()),
                            (newest.clone(), offset, expected),
                            "{open}, older segment: {older_segment}"
                        );
                    }
                    other => panic!("{open}, older segment: {older_segment}: expected corruption, got {other:?}"),
                }
            }
            let mut salvage = options();
            salvage.salvage_log = true;
            let store = Store::open(dir.path(), salvage)?;
            let rows: Vec<Vec<u8>> = store
                .scan("a", &RowRange::all())?
                .map(|row| row.map(|r| r.key.to_vec()))
                .collect::<crate::Result<_>>()?;
            assert_eq!(rows, (0..5).map(|i| format!("row{i}").into_bytes()).collect::<Vec<_>>());
        }
        Ok(())
    }

    /// A manifest whose last sequence number is past what a key holds (so
    /// the next write would be numbered from 0 once it wrapped, older than
    /// every earlier one) is corruption of the record that says so.
    #[test]
    fn a_last_sequence_past_the_largest_is_corruption_of_its_manifest_record() -> TestResult {
        for last in [key::MAX_SEQUENCE + 1, u64::MAX] {
            let dir = tempfile::tempdir()?;
            {
                let store = Store::open(dir.path(), options())?;
                store.put("a", "r", "c", "old")?;
            }
            let manifest = crate::manifest::live_manifest(dir.path())?;
            let edits = crate::manifest::encode_edits(&[crate::manifest::Edit::LastSequence(last)]);
            let offset = append_record(&manifest, &edits)?;
            for (open, result) in [
                ("open", Store::open(dir.path(), options()).map(drop)),
                ("read-only open", ReadOnlyStore::open(dir.path()).map(drop)),
            ] {
                match result {
                    Err(Error::Corruption { file, offset: at, what }) => {
                        assert_eq!((&file, at), (&manifest, offset), "{last}, {open}: {what}");
                        assert!(what.starts_with("last sequence number"), "{last}, {open}: {what}");
                    }
                    other => panic!("{last}, {open}: expected corruption, got {other:?}"),
                }
            }
        }
        Ok(())
    }
}
