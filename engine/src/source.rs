//! Sources: the memtables and table files a read consults, behind one cursor type.
//!
//! A cursor walks one source in key order inside a half-open key range
//! `[start, end)` and counts what it produced, so the read can report, per
//! source, how many entries it examined and which blocks it read.

use std::cell::OnceCell;
use std::sync::Arc;

use bytes::Bytes;
use cellar_sstable::{filter_hash, ReadCost, TableIter};

use crate::error::{Error, Result};
use crate::key;
use crate::memtable::{Hit, Memtable, MemtableCursor};
use crate::trace::{Settled, SourceKind, SourceTrace};
use crate::version::{FamilyVersion, TableFile};

/// One source of a family, borrowed from a version, newest first in [`sources`].
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    Memtable { memtable: &'a Arc<Memtable>, active: bool },
    Table(&'a Arc<TableFile>),
}

/// The sources of a family, newest first: active memtable, frozen memtables, tables.
pub(crate) fn sources(family: &FamilyVersion) -> impl Iterator<Item = Source<'_>> {
    let active = std::iter::once(Source::Memtable {
        memtable: &family.active,
        active: true,
    });
    let frozen = family.frozen.iter().map(|m| Source::Memtable {
        memtable: m,
        active: false,
    });
    active.chain(frozen).chain(family.tables.iter().map(Source::Table))
}

/// The row a read is about: its encoded prefix (the key its tables' bloom
/// filters hold) and that key's filter hash, computed when the first filter
/// is asked and reused for every other table of the read.
pub(crate) struct RowKey<'a> {
    pub prefix: &'a [u8],
    hash: OnceCell<u64>,
}

impl RowKey<'_> {
    pub fn new(prefix: &[u8]) -> RowKey<'_> {
        RowKey {
            prefix,
            hash: OnceCell::new(),
        }
    }

    fn hash(&self) -> u64 {
        *self.hash.get_or_init(|| filter_hash(self.prefix))
    }
}

/// Whether a sorted file whose keys run from `first` to `last` may hold a key
/// starting with `prefix` (no allocation: a point read asks this of every file).
pub(crate) fn may_hold_prefix(first: &[u8], last: &[u8], prefix: &[u8]) -> bool {
    last >= prefix && (first < prefix || first.starts_with(prefix))
}

impl Source<'_> {
    pub fn kind(&self) -> SourceKind {
        match self {
            Source::Memtable { active: true, .. } => SourceKind::ActiveMemtable,
            Source::Memtable { active: false, .. } => SourceKind::FrozenMemtable,
            Source::Table(t) => SourceKind::Table {
                file_id: t.meta.file_id,
                run: t.meta.run,
            },
        }
    }

    /// Largest timestamp and sequence number the source may hold.
    pub fn max_ts_seq(&self) -> (u64, u64) {
        match self {
            Source::Memtable { memtable, .. } => (memtable.max_ts(), memtable.max_seq()),
            Source::Table(t) => (t.meta.max_ts, t.meta.max_seq),
        }
    }

    /// Whether the source may hold tombstones.
    pub fn has_tombstones(&self) -> bool {
        match self {
            Source::Memtable { memtable, .. } => memtable.tombstones() > 0,
            Source::Table(t) => t.meta.tombstones > 0,
        }
    }

    /// Settles a source for a read of one row: a table by its key range,
    /// then by its bloom filter; a memtable by its row filter.
    pub fn settle_row(&self, row: &RowKey, cost: &mut ReadCost) -> Settled {
        self.settle_by(|first, last| may_hold_prefix(first, last, row.prefix), Some(row), cost)
    }

    /// Settles a source without searching it when it can. A table: by its
    /// key range (does it hold any key in `[start, end)`?), then by its bloom
    /// filter for `row`, when the read is about one row. A memtable: by its
    /// row filter, when the read is about one row (a memtable's keys are
    /// spread over the whole key space, so its key range rarely rules
    /// anything out, and finding its last key is a search of its own).
    pub fn settle(&self, start: &[u8], end: Option<&[u8]>, row: Option<&RowKey>, cost: &mut ReadCost) -> Settled {
        self.settle_by(|first, last| last >= start && end.is_none_or(|e| first < e), row, cost)
    }

    /// Key range first (`overlaps` is given the file's first and last key), then
    /// the bloom filter for `row`, if any.
    ///
    /// A memtable's row filter is probed and counted as a table's bloom filter
    /// is (a check, and a negative when it rules the row out), so a trace
    /// reads the same for both: a memtable settled by its filter was visited
    /// (its filter asked) and not searched. An empty memtable has no filter
    /// to ask, and is searched.
    fn settle_by(
        &self,
        overlaps: impl FnOnce(&[u8], &[u8]) -> bool,
        row: Option<&RowKey>,
        cost: &mut ReadCost,
    ) -> Settled {
        let t = match self {
            Source::Table(t) => t,
            Source::Memtable { memtable, .. } => {
                let Some(answer) = row.and_then(|row| memtable.may_hold_row(row.hash())) else {
                    return Settled::Searched;
                };
                cost.filter_checks += 1;
                if answer {
                    return Settled::Searched;
                }
                cost.filter_negatives += 1;
                return Settled::Filter;
            }
        };
        if !overlaps(&t.meta.first_key, &t.meta.last_key) {
            Settled::KeyRange
        } else if row.is_some_and(|row| !t.table.may_contain_hash(row.hash(), cost)) {
            Settled::Filter
        } else {
            Settled::Searched
        }
    }

    /// Opens the source for reading: point probes first, then (optionally) a cursor.
    /// On a table, probes and cursor share one iterator, so a block read for a
    /// probe is not read again by the next probe or the cursor.
    pub fn open(&self) -> Reader {
        match self {
            Source::Memtable { memtable, .. } => Reader::Mem((*memtable).clone()),
            Source::Table(t) => Reader::Table(Box::new(t.table.iter())),
        }
    }
}

/// A source opened for one read.
pub(crate) enum Reader {
    Mem(Arc<Memtable>),
    /// Boxed: a table iterator is large, a memtable handle one pointer.
    Table(Box<TableIter>),
}

impl Reader {
    /// The first entry with a key starting with `prefix` and a sequence number
    /// at most `snapshot`: the newest visible version of one cell in this source,
    /// as its `(timestamp, sequence, kind)` and value.
    ///
    /// Seeking to `prefix` itself finds the first key of the cell: a cell prefix
    /// ends with the `00 01` terminator, so no other cell's key starts with it.
    pub fn newest_with_prefix(&mut self, prefix: &[u8], snapshot: u64, trace: &mut SourceTrace) -> Result<Option<Hit>> {
        match self {
            Reader::Mem(memtable) => {
                let (hit, examined) = memtable.newest_with_prefix(prefix, snapshot);
                trace.entries_examined += examined;
                Ok(hit)
            }
            Reader::Table(iter) => {
                iter.seek(prefix)?;
                while iter.valid() && iter.key().starts_with(prefix) {
                    trace.entries_examined += 1;
                    let Some(found) = key::suffix(iter.key()) else {
                        return Err(undecodable_key(iter));
                    };
                    if found.1 <= snapshot {
                        return Ok(Some((found, iter.value())));
                    }
                    iter.next()?;
                }
                Ok(None)
            }
        }
    }

    /// What the reader has read so far (nothing for a memtable).
    pub fn cost(&self) -> Option<&ReadCost> {
        match self {
            Reader::Mem(_) => None,
            Reader::Table(iter) => Some(iter.cost()),
        }
    }

    /// Turns the reader into a cursor over `[start, end)`, positioned at its first entry.
    pub fn into_cursor(self, start: &[u8], end: Option<Bytes>) -> Result<Cursor> {
        let inner = match self {
            Reader::Mem(memtable) => CursorInner::Mem(MemtableCursor::seek(memtable, start)),
            Reader::Table(mut iter) => {
                // No block past the range's end is read to learn that it ended.
                iter.set_upper_bound(end.clone());
                iter.seek(start)?;
                CursorInner::Table(iter)
            }
        };
        let mut cursor = Cursor {
            inner,
            end,
            examined: 0,
            valid: false,
        };
        cursor.check_valid();
        Ok(cursor)
    }
}

/// The error for an entry whose key does not decode (a block that passed its
/// checksum yet holds nonsense): the table file and the block it stands in.
fn undecodable_key(iter: &TableIter) -> Error {
    Error::corruption(
        iter.table().path(),
        iter.block_offset(),
        "an entry's key does not decode",
    )
}

/// A cursor over a whole table file for a reader that walks it once in the
/// background (a compaction, the statistics): its blocks are read with `pread`
/// into buffers of its own, not through the file's map, so reading gigabytes
/// does not make them resident pages of the process.
pub(crate) fn whole_file_cursor(table: &TableFile) -> Result<Cursor> {
    Reader::Table(Box::new(table.table.iter_unmapped()?)).into_cursor(&[], None)
}

impl Source<'_> {
    /// A cursor over `[start, end)`, positioned at its first entry.
    pub fn cursor(&self, start: &[u8], end: Option<Bytes>) -> Result<Cursor> {
        self.open().into_cursor(start, end)
    }
}

enum CursorInner {
    Mem(MemtableCursor),
    /// Boxed: a table iterator is large, a memtable handle one pointer.
    Table(Box<TableIter>),
    /// Boxed: a run's files and its open iterator are many words, and every
    /// cursor of a read is as large as the largest kind.
    Run(Box<RunFiles>),
}

/// The files of one run that a range read may need, walked as one sorted
/// sequence.
///
/// Files of a run hold disjoint key ranges, in key order, so one cursor can
/// walk them one after another and open a file only when it gets there. A
/// read that stops early (a scan with a limit, a seek with no end key) never
/// opens the files after the one it stopped in, where a cursor per file would
/// have sought into each of them, a data block apiece, before the first row.
struct RunFiles {
    /// The files, in key order, with their positions among the read's sources.
    files: Vec<(usize, Arc<TableFile>)>,
    /// Position in `files` of the open file.
    at: usize,
    iter: Box<TableIter>,
    /// Each file already left behind: its source position, the entries
    /// examined in it and what it read.
    left: Vec<(usize, u64, ReadCost)>,
    /// The cursor's examined count when the open file was opened.
    examined_before: u64,
    /// The end of the read's range, given to every file opened.
    end: Option<Bytes>,
}

impl RunFiles {
    /// Opens the first file at `start`.
    fn open(files: Vec<(usize, Arc<TableFile>)>, start: &[u8], end: Option<Bytes>) -> Result<RunFiles> {
        let Some((_, first)) = files.first() else {
            return Err(Error::InvalidArgument("a run cursor needs a file".into()));
        };
        let iter = Self::open_file(first, start, end.as_ref())?;
        Ok(RunFiles {
            files,
            at: 0,
            iter,
            left: Vec::new(),
            examined_before: 0,
            end,
        })
    }

    /// An iterator on `file` at `target`, bounded by `end`.
    fn open_file(file: &TableFile, target: &[u8], end: Option<&Bytes>) -> Result<Box<TableIter>> {
        let mut iter = Box::new(file.table.iter());
        iter.set_upper_bound(end.cloned());
        iter.seek(target)?;
        Ok(iter)
    }

    /// While the open file is exhausted, moves to the next file that holds
    /// keys at or after `target` (files that end before it are never opened).
    fn advance(&mut self, target: &[u8], examined: u64) -> Result<()> {
        while !self.iter.valid() {
            let next = self
                .files
                .iter()
                .enumerate()
                .skip(self.at + 1)
                .find(|(_, (_, f))| f.meta.last_key.as_slice() >= target);
            let Some((at, (_, file))) = next else {
                return Ok(());
            };
            let iter = Self::open_file(file, target, self.end.as_ref())?;
            let finished = std::mem::replace(&mut self.iter, iter);
            if let Some((source, _)) = self.files.get(self.at) {
                self.left
                    .push((*source, examined - self.examined_before, finished.cost().clone()));
            }
            self.at = at;
            self.examined_before = examined;
        }
        Ok(())
    }

    /// Every file opened so far: source position, entries examined, what it read.
    fn opened(&self, examined: u64) -> impl Iterator<Item = (usize, u64, &ReadCost)> {
        let open = self
            .files
            .get(self.at)
            .map(|(source, _)| (*source, examined - self.examined_before, self.iter.cost()));
        self.left.iter().map(|(s, e, c)| (*s, *e, c)).chain(open)
    }
}

/// Where an entry [`Cursor::walk_block`] hands over has its value, for a
/// reader that keeps it.
#[derive(Clone, Copy)]
pub(crate) enum ValueIn<'a> {
    /// In a table's data block, whose contents these are.
    Block(&'a Bytes),
    /// In a memtable's arena.
    Arena,
}

impl ValueIn<'_> {
    /// `value` (which lies where `self` says) as a handle to keep: a
    /// zero-copy slice of its block, or a copy out of the arena (as
    /// [`Cursor::value`] gives either).
    #[inline]
    pub fn keep(self, value: &[u8]) -> Bytes {
        match self {
            ValueIn::Block(block) => block.slice_ref(value),
            ValueIn::Arena => crate::memtable::copy_value(value),
        }
    }
}

/// How [`Cursor::walk_block`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockWalk {
    /// Nothing was walked: the cursor is at its end.
    Declined,
    /// The visitor declined an entry, or the next entry lies at or past the
    /// walk's bound: the cursor stands on it. Or the next entry lies past
    /// the range's end, and the cursor is at its end.
    Stopped,
    /// The visitor took the block's last entry (a memtable's: its list's
    /// last); the cursor still stands on it, and [`Cursor::next`] moves on
    /// (into the next block).
    BlockEnd,
}

/// A position in one source, bounded above by `end`.
pub(crate) struct Cursor {
    inner: CursorInner,
    end: Option<Bytes>,
    examined: u64,
    valid: bool,
}

impl Cursor {
    #[inline]
    fn raw_key(&self) -> Option<&[u8]> {
        match &self.inner {
            CursorInner::Mem(m) => m.key(),
            CursorInner::Table(t) => t.valid().then(|| t.key()),
            CursorInner::Run(r) => r.iter.valid().then(|| r.iter.key()),
        }
    }

    fn check_valid(&mut self) {
        self.valid = match (self.raw_key(), &self.end) {
            (None, _) => false,
            (Some(k), Some(end)) => k < end.as_ref(),
            (Some(_), None) => true,
        };
        if self.valid {
            self.examined += 1;
        }
    }

    /// Whether the cursor is on an entry inside its range.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not valid).
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.raw_key().unwrap_or(&[])
    }

    /// How many leading bytes the current key kept from the one before it,
    /// when [`Cursor::next`] stepped within a table's block (see
    /// `TableIter::kept_prefix`); 0 when unknown (a memtable, a seek, a new
    /// block or file).
    #[inline]
    pub fn kept_prefix(&self) -> usize {
        match &self.inner {
            CursorInner::Mem(_) => 0,
            CursorInner::Table(t) => t.kept_prefix(),
            CursorInner::Run(r) => r.iter.kept_prefix(),
        }
    }

    /// The current value (zero-copy).
    #[inline]
    pub fn value(&self) -> Bytes {
        match &self.inner {
            CursorInner::Mem(m) => m.value(),
            CursorInner::Table(t) => t.value(),
            CursorInner::Run(r) => r.iter.value(),
        }
    }

    /// Lends the current value to `f` (empty when not valid): a table's
    /// value borrowed from its block or the memtable's arena, no reference
    /// count raised and nothing copied.
    #[inline]
    pub fn with_value<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match &self.inner {
            CursorInner::Mem(m) => f(m.value_bytes()),
            CursorInner::Table(t) => f(t.value_bytes()),
            CursorInner::Run(r) => f(r.iter.value_bytes()),
        }
    }

    /// Moves to the next entry.
    pub fn next(&mut self) -> Result<()> {
        match &mut self.inner {
            CursorInner::Mem(m) => m.next(),
            CursorInner::Table(t) => t.next()?,
            CursorInner::Run(r) => {
                r.iter.next()?;
                if !r.iter.valid() {
                    // The next file's keys all come after this one's.
                    let last = r
                        .files
                        .get(r.at)
                        .map(|(_, f)| f.meta.last_key.clone())
                        .unwrap_or_default();
                    r.advance(&last, self.examined)?;
                }
            }
        }
        self.check_valid();
        Ok(())
    }

    /// Walks the entries of the data block in hand, from the current one, in
    /// one loop (see [`TableIter::walk_block`]); a memtable walks its list
    /// as one block. `visit` is handed each entry of the range, with where
    /// its value lies, while it answers true ("done with it, go on"). Each
    /// entry the walk steps to is checked against the range's end and
    /// counted as examined exactly as [`Cursor::next`] would; no block is
    /// read, so the trace is the same whichever way a read walks. With a
    /// `bound`, the walk also stops on the first entry at or past it
    /// (counted, as a step onto it is): the key where another source's
    /// entries come first.
    pub fn walk_block(
        &mut self,
        bound: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8], ValueIn<'_>) -> bool,
    ) -> Result<BlockWalk> {
        if !self.valid {
            return Ok(BlockWalk::Declined);
        }
        let (end, examined) = (self.end.as_deref(), &mut self.examined);
        let (mut first, mut past_end) = (true, false);
        // Whether the walk goes on to an entry: the current one always;
        // each next one if it lies inside the range (counted) and below `bound`.
        let mut admit = |key: &[u8]| {
            if first {
                first = false;
                return true;
            }
            if end.is_some_and(|end| key >= end) {
                past_end = true;
                return false;
            }
            *examined += 1;
            bound.is_none_or(|bound| key < bound)
        };
        let stopped = match &mut self.inner {
            CursorInner::Mem(m) => m.walk(|key, value| admit(key) && visit(key, value, ValueIn::Arena)),
            CursorInner::Table(t) => {
                t.walk_block(|key, value, block| admit(key) && visit(key, value, ValueIn::Block(block)))?
            }
            CursorInner::Run(r) => r
                .iter
                .walk_block(|key, value, block| admit(key) && visit(key, value, ValueIn::Block(block)))?,
        };
        self.valid = !past_end;
        Ok(match stopped {
            true => BlockWalk::Stopped,
            false => BlockWalk::BlockEnd,
        })
    }

    /// Moves to the first entry at or after `target` (a cursor already there
    /// stays): a skip over entries the read does not need, which are not
    /// counted as examined.
    ///
    /// Most seeks of a read land close by: past a cell's versions, the next
    /// column of the row is usually the cursor's next entry. So a seek first
    /// takes one step, and searches (an index and a block, or a skip list
    /// from its top) only if that step fell short of `target`. The step is
    /// part of the seek: it counts as examined only the entry the seek lands
    /// on, as a search would.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        if self.raw_key().is_some_and(|k| k >= target) {
            return Ok(());
        }
        if !self.step_reaches(target)? {
            self.search(target)?;
        }
        self.check_valid();
        Ok(())
    }

    /// One step; whether it landed at or past `target` (or on the end, where
    /// a search would land too).
    fn step_reaches(&mut self, target: &[u8]) -> Result<bool> {
        Ok(match &mut self.inner {
            CursorInner::Mem(m) => {
                m.next();
                m.key().is_none_or(|k| k >= target)
            }
            CursorInner::Table(t) => {
                t.next()?;
                !t.valid() || t.key() >= target
            }
            // At a file's end the search below opens the right next file.
            CursorInner::Run(r) => {
                r.iter.next()?;
                r.iter.valid() && r.iter.key() >= target
            }
        })
    }

    /// Moves to the first entry at or after `target` by searching for it.
    fn search(&mut self, target: &[u8]) -> Result<()> {
        match &mut self.inner {
            CursorInner::Mem(m) => m.reseek(target),
            CursorInner::Table(t) => t.seek(target)?,
            CursorInner::Run(r) => {
                // Past the open file's end this leaves it exhausted, and
                // `advance` opens the file that holds `target`.
                r.iter.seek(target)?;
                r.advance(target, self.examined)?;
            }
        }
        Ok(())
    }

    /// A cursor over `[start, end)` of the files of one run (in key order,
    /// each paired with its position among the read's sources), positioned at
    /// its first entry. Only the first file is opened now.
    pub fn over_run(files: Vec<(usize, Arc<TableFile>)>, start: &[u8], end: Option<Bytes>) -> Result<Cursor> {
        let mut run = RunFiles::open(files, start, end.clone())?;
        run.advance(start, 0)?;
        let mut cursor = Cursor {
            inner: CursorInner::Run(Box::new(run)),
            end,
            examined: 0,
            valid: false,
        };
        cursor.check_valid();
        Ok(cursor)
    }

    /// For the trace: each file of a run this cursor has opened, as its source
    /// position, the entries examined in it and what it read. `None` for a
    /// cursor over a single source.
    pub fn run_files(&self) -> Option<Vec<(usize, u64, &ReadCost)>> {
        match &self.inner {
            CursorInner::Run(r) => Some(r.opened(self.examined).collect()),
            _ => None,
        }
    }

    /// The error for the entry the cursor is on, whose key does not decode:
    /// a table's file and block. (A memtable holds only keys the store
    /// encoded itself.)
    pub fn undecodable_key(&self) -> Error {
        match &self.inner {
            CursorInner::Mem(_) => Error::corruption("<memtable>", 0, "an entry's key does not decode"),
            CursorInner::Table(t) => undecodable_key(t),
            CursorInner::Run(r) => undecodable_key(&r.iter),
        }
    }

    /// Entries produced inside the range so far.
    pub fn examined(&self) -> u64 {
        self.examined
    }

    /// Blocks this cursor read (nothing for a memtable).
    pub fn cost(&self) -> Option<&ReadCost> {
        match &self.inner {
            CursorInner::Mem(_) => None,
            CursorInner::Table(t) => Some(t.cost()),
            CursorInner::Run(r) => Some(r.iter.cost()),
        }
    }
}
