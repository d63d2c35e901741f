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
        let Some((first, ops)) = batch::decode(payload) else {
            return Err(refuse("log record is not a write batch".to_string()));
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
