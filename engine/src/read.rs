//! The read path: point reads, slices of a row, and scans over rows, on a snapshot.
//!
//! A [`Snapshot`] is an `Arc` of the version current when it was taken plus the
//! last sequence number then visible. Everything read through it sees exactly
//! the writes up to that number, however long it is held, while writers,
//! flushes and compactions go on.
//!
//! * A **point read** (`get`) consults the sources newest first and stops at the
//!   first decisive hit: once it holds a version `(ts, seq)`, a source whose
//!   largest timestamp and sequence are not newer cannot change the answer.
//!   The newest row deletion and the newest entry of the cell then go through
//!   the visibility rule ([`crate::visibility`]), like every other read.
//! * A **range read** (`get_row`, `slice`, `scan`) merges every source that may
//!   hold keys in the range ([`crate::merge`]) and passes the merged stream
//!   through the visibility step ([`crate::visibility`]).
//! * A range read hands out its cells in one of two ways: as [`Cell`]s (and
//!   [`Row`]s) the caller keeps, each holding its column and value as
//!   reference-counted handles; or lent to a visitor ([`Snapshot::visit_row`],
//!   [`Scan::visit_row`]) as a [`CellRef`] borrowed from the block it lies
//!   in, for a caller that looks at each cell and moves on: no handle to
//!   count up and down, no vector to build. Both walk exactly the same
//!   entries.
//! * A row's cells are walked inside their data block where they can be
//!   (`RangeRead::walk_cells`), whether they are lent or kept: while the
//!   merge's top cursor stays on top, each entry of its block (or of its
//!   memtable's list) is decoded, counted, judged and handed over in one
//!   loop, with no call through the merge, the cursor and the table per
//!   cell (a row of a hundred small cells pays those layers a hundred times
//!   otherwise). A block's end, another source's turn, a new row and a
//!   settled cell's versions go entry by entry. Both ways read, count and
//!   return the same.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use cellar_sstable::ReadCost;

use crate::error::{Error, Result};
use crate::key::{self, Kind};
use crate::merge::MergeIterator;
use crate::source::{sources, BlockWalk, Cursor, RowKey, Source, ValueIn};
use crate::trace::{Settled, SourceKind, SourceTrace, Trace};
use crate::version::{FamilyVersion, TableFile, Version};
use crate::visibility::{Verdict, Visibility};

/// One version of one column of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Column name.
    pub column: Bytes,
    /// Timestamp of this version (milliseconds by default).
    pub timestamp: u64,
    /// The value.
    pub value: Bytes,
}

/// One visible cell lent to a visitor ([`Snapshot::visit_row`],
/// [`Scan::visit_row`]): its parts borrowed from where they lie (a table
/// file's block, a memtable's arena, the read's own buffers), valid for the
/// one call.
///
/// A [`Cell`] holds its column and value as two reference-counted handles,
/// counted up when the cell is made and down when it is dropped, and a
/// [`Row`] is a vector of them. A reader that looks at each cell and moves on
/// (sums, copies into its own structures, serializes) pays for none of that
/// through a visitor, as a RocksDB iterator hands out slices valid until it
/// moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellRef<'a> {
    /// Row key.
    pub row: &'a [u8],
    /// Column name.
    pub column: &'a [u8],
    /// Timestamp of this version.
    pub timestamp: u64,
    /// The value.
    pub value: &'a [u8],
}

/// A row as a scan returns it: its key and its visible cells in column order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Row key.
    pub key: Bytes,
    /// Latest version of each live column, in column order.
    pub cells: Vec<Cell>,
}

/// Which columns of a row a slice returns.
///
/// ```
/// use cellar_engine::ColumnRange;
/// // March 2024 of a loan history, newest ten first:
/// let march = ColumnRange::between("loan|2024-03", "loan|2024-04").reverse().limit(10);
/// assert_eq!(march.limit, Some(10));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnRange {
    /// First column (inclusive); `None` = from the start of the row.
    pub from: Option<Bytes>,
    /// End column (exclusive); `None` = to the end of the row.
    pub to: Option<Bytes>,
    /// Return at most this many cells.
    pub limit: Option<usize>,
    /// Return the last cells of the range first.
    pub reverse: bool,
}

impl ColumnRange {
    /// Every column.
    pub fn all() -> ColumnRange {
        ColumnRange::default()
    }
    /// Columns in `[from, to)`.
    pub fn between(from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) -> ColumnRange {
        ColumnRange {
            from: Some(Bytes::copy_from_slice(from.as_ref())),
            to: Some(Bytes::copy_from_slice(to.as_ref())),
            ..ColumnRange::default()
        }
    }
    /// Columns at or after `from`.
    pub fn starting_at(from: impl AsRef<[u8]>) -> ColumnRange {
        ColumnRange {
            from: Some(Bytes::copy_from_slice(from.as_ref())),
            ..ColumnRange::default()
        }
    }
    /// Columns starting with `prefix`.
    pub fn prefix(prefix: impl AsRef<[u8]>) -> ColumnRange {
        let p = prefix.as_ref();
        ColumnRange {
            from: Some(Bytes::copy_from_slice(p)),
            to: key::prefix_successor(p).map(Bytes::from),
            ..ColumnRange::default()
        }
    }
    /// At most `n` cells.
    pub fn limit(mut self, n: usize) -> ColumnRange {
        self.limit = Some(n);
        self
    }
    /// Last columns first.
    pub fn reverse(mut self) -> ColumnRange {
        self.reverse = true;
        self
    }
}

/// Which rows a scan returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowRange {
    /// First row (inclusive).
    pub from: Option<Bytes>,
    /// End row (exclusive).
    pub to: Option<Bytes>,
    /// Only rows starting with these bytes.
    pub prefix: Option<Bytes>,
    /// Return at most this many rows.
    pub limit: Option<usize>,
}

impl RowRange {
    /// Every row.
    pub fn all() -> RowRange {
        RowRange::default()
    }
    /// Rows in `[from, to)`.
    pub fn between(from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) -> RowRange {
        RowRange {
            from: Some(Bytes::copy_from_slice(from.as_ref())),
            to: Some(Bytes::copy_from_slice(to.as_ref())),
            ..RowRange::default()
        }
    }
    /// Rows whose key starts with `prefix`.
    pub fn prefix(prefix: impl AsRef<[u8]>) -> RowRange {
        RowRange {
            prefix: Some(Bytes::copy_from_slice(prefix.as_ref())),
            ..RowRange::default()
        }
    }
    /// At most `n` rows.
    pub fn limit(mut self, n: usize) -> RowRange {
        self.limit = Some(n);
        self
    }

    /// The range as internal keys `[start, end)`.
    fn key_range(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut start = Vec::new();
        let mut end: Option<Vec<u8>> = None;
        if let Some(from) = &self.from {
            start = key::row_prefix(from);
        }
        if let Some(to) = &self.to {
            end = Some(key::row_prefix(to));
        }
        if let Some(prefix) = &self.prefix {
            let mut escaped = Vec::new();
            key::escape_into(prefix, &mut escaped);
            let prefix_end = key::prefix_successor(&escaped);
            if escaped > start {
                start = escaped;
            }
            end = match (end, prefix_end) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        (start, end)
    }
}

/// A consistent view of the store at one moment.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) version: Arc<Version>,
    pub(crate) sequence: u64,
    pub(crate) now_ms: u64,
}

impl Snapshot {
    /// The last sequence number this snapshot sees.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    fn family(&self, name: &str) -> Result<&Arc<FamilyVersion>> {
        self.version
            .family(name)
            .ok_or_else(|| Error::UnknownFamily(name.to_string()))
    }

    fn expire_before(&self, family: &FamilyVersion) -> u64 {
        family.options.expire_before(self.now_ms)
    }

    /// The latest live version of one cell.
    pub fn get(&self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> Result<Option<Cell>> {
        Ok(self.get_traced(family, row, column)?.0)
    }

    /// [`Snapshot::get`], with the read's [`Trace`].
    pub fn get_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
    ) -> Result<(Option<Cell>, Trace)> {
        let fam = self.family(family)?;
        let (row, column) = (row.as_ref(), column.as_ref());
        let cell_prefix = key::cell_prefix(row, column);
        // The cell prefix starts with the encoded row: `escaped(row) 00 01`.
        let row_len = cell_prefix.len() - key::escaped_len(column) - 2;
        let row_prefix = cell_prefix.get(..row_len).unwrap_or(&[]);
        let row_key = RowKey::new(row_prefix);
        let mut tombstone_prefix = Vec::new();

        // The newest row deletion and the newest entry of the cell over the
        // sources so far, as `(ts, seq, kind, value)`: the visibility rule
        // needs nothing else to decide a point read.
        let mut row_deletion: Option<(u64, u64)> = None;
        let mut newest: Option<(u64, u64, Kind, Bytes)> = None;
        let mut trace = Trace::default();
        for source in sources(fam) {
            let decided = row_deletion.max(newest.as_ref().map(|n| (n.0, n.1)));
            if let Some(decided) = decided {
                // Nothing in this source is newer than what we hold: skip it. Not
                // `break`: an older source may still hold a larger timestamp (a
                // put with an explicit timestamp written before a smaller one).
                if source.max_ts_seq() <= decided {
                    continue;
                }
            }
            let mut cost = ReadCost::default();
            let settled = source.settle_row(&row_key, &mut cost);
            let mut st = SourceTrace::new(source.kind(), settled);
            if settled == Settled::Searched {
                let mut reader = source.open();
                if source.has_tombstones() {
                    if tombstone_prefix.is_empty() {
                        tombstone_prefix = key::row_tombstone_prefix(row);
                    }
                    if let Some(((ts, seq, _), _)) =
                        reader.newest_with_prefix(&tombstone_prefix, self.sequence, &mut st)?
                    {
                        row_deletion = row_deletion.max(Some((ts, seq)));
                    }
                }
                if let Some(((ts, seq, kind), value)) =
                    reader.newest_with_prefix(&cell_prefix, self.sequence, &mut st)?
                {
                    if newest.as_ref().is_none_or(|n| (ts, seq) > (n.0, n.1)) {
                        newest = Some((ts, seq, kind, value));
                    }
                }
                if let Some(c) = reader.cost() {
                    cost.add(c);
                }
            }
            st.add_cost(&cost);
            trace.sources.push(st);
        }
        let mut rule = Visibility::new(self.sequence, 1, self.expire_before(fam));
        if let Some((ts, seq)) = row_deletion {
            rule.judge_entry(ts, seq, Kind::DeleteRow);
        }
        rule.start_cell();
        let cell = match newest {
            Some((ts, seq, kind, value)) if rule.judge_entry(ts, seq, kind) == Verdict::Visible => Some(Cell {
                column: Bytes::copy_from_slice(column),
                timestamp: ts,
                value,
            }),
            _ => None,
        };
        trace.entries_returned = u64::from(cell.is_some());
        Ok((cell, trace))
    }

    /// Up to the family's `max_versions` live versions of one cell, newest first.
    pub fn versions(&self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> Result<Vec<Cell>> {
        let fam = self.family(family)?;
        let (row, column) = (row.as_ref(), column.as_ref());
        let start = key::cell_prefix(row, column);
        let end = key::prefix_successor(&start);
        let row_prefix = key::row_prefix(row);
        let one_row = OneRow {
            row,
            prefix: &row_prefix,
        };
        let mut read = RangeRead::new(self, fam, &start, end, Some(one_row), fam.options.max_versions, false)?;
        let mut out = Vec::new();
        while let Some(cell) = read.next_cell()? {
            out.push(cell);
        }
        Ok(out)
    }

    /// Every live column of a row, latest versions, in column order.
    pub fn get_row(&self, family: &str, row: impl AsRef<[u8]>) -> Result<Vec<Cell>> {
        self.slice(family, row, &ColumnRange::all())
    }

    /// [`Snapshot::get_row`] for a reader that does not keep the cells:
    /// `visit` is lent every live column of the row, latest version, in
    /// column order (see [`CellRef`]). Returns the number of cells visited.
    /// It reads exactly what `get_row` reads (the same trace), and builds no
    /// [`Cell`] and no vector.
    pub fn visit_row(&self, family: &str, row: impl AsRef<[u8]>, visit: impl FnMut(CellRef<'_>)) -> Result<usize> {
        Ok(self.lend_row(family, row.as_ref(), visit, false)?.0)
    }

    /// [`Snapshot::visit_row`], with the read's [`Trace`]: the trace of
    /// [`Snapshot::get_row_traced`] for the same row.
    pub fn visit_row_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        visit: impl FnMut(CellRef<'_>),
    ) -> Result<(usize, Trace)> {
        let (visited, read) = self.lend_row(family, row.as_ref(), visit, true)?;
        let mut trace = read.trace();
        trace.entries_returned = visited as u64;
        Ok((visited, trace))
    }

    /// Lends every live column of `row` to `visit`; the count, and the read
    /// (for its trace, which an untraced read never builds).
    fn lend_row(
        &self,
        family: &str,
        row: &[u8],
        mut visit: impl FnMut(CellRef<'_>),
        traced: bool,
    ) -> Result<(usize, RangeRead)> {
        let mut read = self.row_read(family, row, &ColumnRange::all(), traced)?;
        let mut visited = 0;
        while read.stop_at_visible()? {
            // The read keeps no copy of its row: the cell is lent the caller's.
            visited += read.lend_cells(&mut |cell| visit(CellRef { row, ..cell }))?;
        }
        Ok((visited, read))
    }

    /// [`Snapshot::get_row`], with the read's [`Trace`].
    pub fn get_row_traced(&self, family: &str, row: impl AsRef<[u8]>) -> Result<(Vec<Cell>, Trace)> {
        self.slice_traced(family, row, &ColumnRange::all())
    }

    /// The latest versions of a row's columns in a range, in column order (or reversed).
    pub fn slice(&self, family: &str, row: impl AsRef<[u8]>, columns: &ColumnRange) -> Result<Vec<Cell>> {
        Ok(self.read_slice(family, row.as_ref(), columns, false)?.0)
    }

    /// [`Snapshot::slice`], with the read's [`Trace`].
    ///
    /// A reverse slice reads the range forward and keeps the last `limit` cells:
    /// its trace shows the whole range read.
    pub fn slice_traced(
        &self,
        family: &str,
        row: impl AsRef<[u8]>,
        columns: &ColumnRange,
    ) -> Result<(Vec<Cell>, Trace)> {
        let (cells, read) = self.read_slice(family, row.as_ref(), columns, true)?;
        let mut trace = read.trace();
        trace.entries_returned = cells.len() as u64;
        Ok((cells, trace))
    }

    /// The walk over a slice of one row (its columns' range; the limit and
    /// the direction are the caller's), `traced` or not (see [`RangeRead::new`]).
    fn row_read(&self, family: &str, row: &[u8], columns: &ColumnRange, traced: bool) -> Result<RangeRead> {
        let fam = self.family(family)?;
        let row_prefix = key::row_prefix(row);
        // A read of the whole row starts at the row's prefix itself.
        let start = columns.from.as_ref().map(|from| {
            let mut k = row_prefix.clone();
            key::escape_into(from, &mut k);
            k
        });
        let end = match &columns.to {
            Some(to) => {
                let mut k = row_prefix.clone();
                key::escape_into(to, &mut k);
                Some(k)
            }
            None => key::prefix_successor(&row_prefix),
        };
        let one_row = OneRow {
            row,
            prefix: &row_prefix,
        };
        RangeRead::new(
            self,
            fam,
            start.as_deref().unwrap_or(&row_prefix),
            end,
            Some(one_row),
            1,
            traced,
        )
    }

    /// A slice's cells, and the read that found them (for its trace, which
    /// an untraced read never builds).
    fn read_slice(
        &self,
        family: &str,
        row: &[u8],
        columns: &ColumnRange,
        traced: bool,
    ) -> Result<(Vec<Cell>, RangeRead)> {
        let mut read = self.row_read(family, row, columns, traced)?;
        let limit = columns.limit.unwrap_or(usize::MAX);
        if !columns.reverse {
            // Room for as many cells as the last row read had (rows of a
            // family tend to be alike), within reason: one allocation, not
            // one per doubling.
            let mut cells = Vec::with_capacity(read.columns.len().min(limit).min(PRESIZED_CELLS));
            while cells.len() < limit && read.stop_at_visible()? {
                let room = limit - cells.len();
                read.take_cells(&mut cells, room)?;
            }
            return Ok((cells, read));
        }
        // Reversed: read the range forward, keeping the last `limit` cells.
        let mut last = VecDeque::new();
        if limit > 0 {
            while let Some(cell) = read.next_cell()? {
                last.push_back(cell);
                if last.len() > limit {
                    last.pop_front();
                }
            }
        }
        let mut cells: Vec<Cell> = last.into();
        cells.reverse();
        Ok((cells, read))
    }

    /// The rows of a range, as an iterator of rows (latest version of each live column).
    pub fn scan(&self, family: &str, rows: &RowRange) -> Result<Scan> {
        let fam = self.family(family)?;
        let (start, end) = rows.key_range();
        // A scan's trace may be asked for at any time.
        let read = RangeRead::new(self, fam, &start, end, None, 1, true)?;
        Ok(Scan {
            read,
            ahead: ReadAhead::Nothing,
            lent_column: Vec::new(),
            lent_value: Vec::new(),
            remaining: rows.limit.unwrap_or(usize::MAX),
            returned: 0,
            last_width: 0,
        })
    }
}

/// Versions of a settled cell a read steps over before it seeks past the rest.
const SEQUENTIAL_SKIPS: usize = 8;

/// At most this many cells of room are reserved for a slice up front.
const PRESIZED_CELLS: usize = 256;

thread_local! {
    /// The column names of the last row read by a read of one row on this
    /// thread (`get_row`, `slice`, `versions`), by position. A program that
    /// reads rows of one family over and over (a record per row) meets the
    /// same columns every time: its cells share these names, a reference
    /// count each, instead of an allocation each. The names are immutable
    /// and a few bytes; a row with other columns simply replaces them.
    static LAST_ROW_COLUMNS: std::cell::Cell<Vec<Bytes>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The escaped column of a put's key (`row prefix ++ escaped(column) 00 01 ++
/// suffix`) whose encoded row prefix is `row_prefix`; `None` if it is too short.
#[inline]
fn escaped_column<'k>(entry_key: &'k [u8], row_prefix: &[u8]) -> Option<&'k [u8]> {
    let body = key::prefix(entry_key);
    body.get(row_prefix.len()..body.len().checked_sub(2)?)
}

/// A visible entry's timestamp and where its escaped column lies in its key
/// (after the row prefix `row`); `None` if the key does not decode.
#[inline]
fn visible_cell(entry_key: &[u8], row: &[u8]) -> Option<(u64, std::ops::Range<usize>)> {
    let column = escaped_column(entry_key, row)?;
    let (timestamp, _, _) = key::suffix(entry_key)?;
    Some((timestamp, row.len()..row.len() + column.len()))
}

/// A lent cell's column name: its escaped form itself when it holds no zero
/// byte (the common case: nothing copied), else unescaped into `buffer`.
#[inline]
fn column_name<'a>(escaped: &'a [u8], buffer: &'a mut Vec<u8>) -> &'a [u8] {
    if !key::has_zero(escaped) {
        return escaped;
    }
    buffer.clear();
    key::unescape_into(escaped, buffer);
    buffer.as_slice()
}

/// The row a read of one row is about: its key, and its encoded prefix
/// (computed once by the caller, which builds its range from it).
#[derive(Clone, Copy)]
struct OneRow<'a> {
    row: &'a [u8],
    prefix: &'a [u8],
}

/// The files of one run that overlap a read's key range, found by two
/// binary searches instead of two key comparisons per file.
///
/// The files of a run hold disjoint key ranges in key order, so both their
/// first keys and their last keys ascend: the files that overlap
/// `[start, end)` are one stretch, from the first whose last key is at or
/// after `start` to the last whose first key is before `end`. Every file
/// outside it is settled by its key range exactly as [`Source::settle`]
/// would settle it, without comparing its keys; a file inside it is asked
/// as usual (its bloom filter may still settle it).
#[derive(Default)]
struct OverlappingFiles {
    /// The run last looked at, and the positions (in the family's tables)
    /// where its files end and where its overlapping stretch lies.
    run: Option<u64>,
    run_end: usize,
    stretch: std::ops::Range<usize>,
}

impl OverlappingFiles {
    /// Whether the file at `table` (a position in `tables`, taken in order)
    /// may hold keys in `[start, end)`.
    fn holds(&mut self, tables: &[Arc<TableFile>], table: usize, start: &[u8], end: Option<&[u8]>) -> bool {
        let Some(file) = tables.get(table) else {
            return true;
        };
        if self.run != Some(file.meta.run) || table >= self.run_end {
            let files = tables.get(table..).unwrap_or_default();
            let len = files.iter().take_while(|f| f.meta.run == file.meta.run).count();
            let files = files.get(..len).unwrap_or_default();
            let from = files.partition_point(|f| f.meta.last_key.as_slice() < start);
            let to = end.map_or(len, |end| files.partition_point(|f| f.meta.first_key.as_slice() < end));
            self.run = Some(file.meta.run);
            self.run_end = table + len;
            self.stretch = table + from..table + to.max(from);
        }
        self.stretch.contains(&table)
    }
}

/// What [`RangeRead::walk_cells`] does with the next entry of a block.
enum Next {
    /// Take it: a visible cell of the row, with its timestamp and where its
    /// escaped column lies in its key.
    Take(u64, std::ops::Range<usize>),
    /// Pass it: the rule hides it (its verdict is taken).
    Pass,
    /// Leave it, unjudged, to the entry-by-entry walk.
    Stop,
    /// Its key does not decode.
    Damaged,
}

/// A visible cell [`RangeRead::walk_cells`] found in a block (or a
/// memtable), borrowed where it lies, with what a [`CellSink`] needs to name it.
struct Found<'a> {
    /// The read's row (empty for a read of one row: its caller has it).
    row: &'a [u8],
    /// The cell's column, escaped as in its key.
    escaped: &'a [u8],
    timestamp: u64,
    value: &'a [u8],
    /// Where `value` lies (a table's block or a memtable's arena).
    value_in: ValueIn<'a>,
    /// The read's buffer for a column name that must be unescaped.
    unescaped: &'a mut Vec<u8>,
    /// The last row's column names, and the cell's position in its row
    /// (see [`RangeRead::shared_column`]).
    names: &'a mut Vec<Bytes>,
    at: usize,
}

/// What a read does with the visible cells it walks: lend them to a
/// visitor ([`Lend`]) or keep them as [`Cell`]s ([`Keep`]).
trait CellSink {
    /// Takes the visible entry the walk stands on, entry by entry (the walk
    /// moves past it).
    fn take_current(&mut self, read: &mut RangeRead) -> Result<()>;
    /// Takes a visible cell found inside a block (or a memtable).
    fn take_found(&mut self, found: Found<'_>);
}

/// Lends each cell to a visitor, borrowed where it lies.
struct Lend<'v, F>(&'v mut F);

impl<F: FnMut(CellRef<'_>)> CellSink for Lend<'_, F> {
    #[inline]
    fn take_current(&mut self, read: &mut RangeRead) -> Result<()> {
        read.lend_cell(self.0)
    }

    #[inline]
    fn take_found(&mut self, found: Found<'_>) {
        (self.0)(CellRef {
            row: found.row,
            column: column_name(found.escaped, found.unescaped),
            timestamp: found.timestamp,
            value: found.value,
        });
    }
}

/// Keeps each cell: its value a zero-copy slice of its block (a copy out of
/// a memtable), its column shared with the last row's where it can be.
struct Keep<'c>(&'c mut Vec<Cell>);

impl CellSink for Keep<'_> {
    #[inline]
    fn take_current(&mut self, read: &mut RangeRead) -> Result<()> {
        self.0.push(read.take_cell()?);
        Ok(())
    }

    #[inline]
    fn take_found(&mut self, found: Found<'_>) {
        self.0.push(Cell {
            column: RangeRead::shared_column(found.names, found.at, found.escaped),
            timestamp: found.timestamp,
            value: found.value_in.keep(found.value),
        });
    }
}

/// A merged, visibility-filtered walk over one family's key range.
struct RangeRead {
    merge: MergeIterator,
    visibility: Visibility,
    /// Traces of every source, in source order, with what settling it cost
    /// (its filter probes); `cursor_of[i]` maps a searched source to its
    /// cursor in `merge`. Both empty for a read built untraced.
    traces: Vec<SourceTrace>,
    cursor_of: Vec<Option<usize>>,
    /// The row of the last cell returned, unescaped (left empty by a read of
    /// one row: its caller has the row), and the visibility rule's count of
    /// rows started when it was returned: a cell starts a row when the count
    /// has moved since (no key comparison needed). One buffer serves every
    /// row: a visitor borrows it, and only a [`Row`] copies it out (a scan of
    /// short rows would otherwise allocate and free once per row).
    row: Vec<u8>,
    row_number: u64,
    /// Whether the visible entry the walk stands on (or the last cell
    /// returned) started a row, its timestamp, and where its escaped column
    /// lies in its key.
    new_row: bool,
    timestamp: u64,
    column: std::ops::Range<usize>,
    /// A lent column whose name holds a zero byte, unescaped.
    unescaped: Vec<u8>,
    /// Whether the last settled cell skipped needed a seek (see
    /// [`RangeRead::skip_settled_cell`]).
    versions_piled: bool,
    /// The column names of the last row, by position, and the position of
    /// the next cell in its row. Rows of a family mostly share their columns,
    /// so a cell whose name matches the last row's at its position shares
    /// that name (a reference count) instead of copying its own (an
    /// allocation per cell). A scan keeps its own; a read of one row takes
    /// the names of the last row read on this thread ([`LAST_ROW_COLUMNS`])
    /// and leaves its own there when it is dropped.
    columns: Vec<Bytes>,
    column_at: usize,
    /// Whether this is a read of one row (see `columns`).
    one_row: bool,
    /// Where a seek past a settled cell's versions aims (kept, so a read
    /// that seeks past many cells allocates its target once).
    seek_target: Vec<u8>,
}

impl RangeRead {
    /// Sets up a walk of `[start, end)`. With `row`, the walk is inside one row:
    /// table files are settled by their bloom filter too, and when the range
    /// starts after the row's first key, each source is probed for the row's
    /// tombstones first (they sort before every column). Only a `traced`
    /// read keeps what [`RangeRead::trace`] reports: a read whose caller
    /// will not ask (`get_row`, `visit_row`, `slice`) builds no trace.
    fn new(
        snap: &Snapshot,
        fam: &FamilyVersion,
        start: &[u8],
        end: Option<Vec<u8>>,
        row: Option<OneRow<'_>>,
        versions: u32,
        traced: bool,
    ) -> Result<RangeRead> {
        let mut visibility = Visibility::new(snap.sequence, versions, snap.expire_before(fam));
        let end_bytes = end.map(Bytes::from);
        let row_prefix = row.map(|r| r.prefix);
        let row_key = row_prefix.map(RowKey::new);
        let probe_tombstones = row_prefix.is_some_and(|p| start > p);
        let tombstone_prefix = row
            .filter(|_| probe_tombstones)
            .map(|r| key::row_tombstone_prefix(r.row));
        let mut row_tombstone: Option<(u64, u64)> = None;

        let count = 1 + fam.frozen.len() + fam.tables.len();
        // An untraced read keeps no trace: two allocations fewer per read.
        let traced_sources = if traced { count } else { 0 };
        let mut traces = Vec::with_capacity(traced_sources);
        let mut cursor_of = Vec::with_capacity(traced_sources);
        let settle_start = row_prefix.filter(|_| probe_tombstones).unwrap_or(start);
        let mut overlapping = OverlappingFiles::default();
        let first_table = 1 + fam.frozen.len();
        // First every source is settled; the ones left to search are opened
        // below, in the same order, into a vector of their number (a read
        // of one row searches few of a family's sources, and a cursor is
        // many words).
        let mut searched = Vec::new();
        for (index, source) in sources(fam).enumerate() {
            let mut cost = ReadCost::default();
            let outside = match index.checked_sub(first_table) {
                Some(table) => !overlapping.holds(&fam.tables, table, settle_start, end_bytes.as_deref()),
                None => false,
            };
            let settled = match outside {
                true => Settled::KeyRange,
                false => source.settle(settle_start, end_bytes.as_deref(), row_key.as_ref(), &mut cost),
            };
            if settled == Settled::Searched {
                searched.push((index, source));
            }
            if traced {
                let mut st = SourceTrace::new(source.kind(), settled);
                st.add_cost(&cost);
                traces.push(st);
                cursor_of.push(None);
            }
        }
        let mut cursors = Vec::with_capacity(searched.len());
        // A scan reads the searched files of one run through one cursor (see
        // `Cursor::over_run`): `run` gathers them until the run changes.
        let mut run: (Option<u64>, Vec<(usize, Arc<TableFile>)>) = (None, Vec::new());
        // Where an untraced read counts a tombstone probe (nowhere anyone looks).
        let mut untraced = SourceTrace::new(SourceKind::ActiveMemtable, Settled::Searched);
        for (index, source) in searched {
            let run_id = match source {
                Source::Table(t) if row.is_none() => Some(t.meta.run),
                _ => None,
            };
            if run.0 != run_id && !run.1.is_empty() {
                cursors.push(Cursor::over_run(std::mem::take(&mut run.1), start, end_bytes.clone())?);
            }
            run.0 = run_id;
            if let Some(cursor) = cursor_of.get_mut(index) {
                *cursor = Some(cursors.len());
            }
            if let (Source::Table(t), Some(_)) = (source, run_id) {
                run.1.push((index, t.clone()));
                continue;
            }
            let mut reader = source.open();
            if let (true, Some(tp)) = (probe_tombstones && source.has_tombstones(), &tombstone_prefix) {
                // The probe's entries count in the source's trace (an untraced read has none).
                let st = traces.get_mut(index).unwrap_or(&mut untraced);
                if let Some(((ts, seq, _), _)) = reader.newest_with_prefix(tp, snap.sequence, st)? {
                    row_tombstone = row_tombstone.max(Some((ts, seq)));
                }
            }
            // The cursor continues the probe's iterator: its cost includes the probe's.
            cursors.push(reader.into_cursor(start, end_bytes.clone())?);
        }
        if !run.1.is_empty() {
            cursors.push(Cursor::over_run(run.1, start, end_bytes)?);
        }
        if let Some(rp) = row_prefix {
            visibility.enter_row(rp, row_tombstone);
        }
        Ok(RangeRead {
            merge: MergeIterator::new(cursors),
            visibility,
            traces,
            cursor_of,
            row: Vec::new(),
            row_number: 0,
            new_row: false,
            timestamp: 0,
            column: 0..0,
            unescaped: Vec::new(),
            versions_piled: false,
            columns: match row {
                // (During the thread's teardown there are none to take.)
                Some(_) => LAST_ROW_COLUMNS.try_with(std::cell::Cell::take).unwrap_or_default(),
                None => Vec::new(),
            },
            column_at: 0,
            one_row: row.is_some(),
            seek_target: Vec::new(),
        })
    }

    /// Moves to the next visible entry and stays on it, judged but not yet
    /// returned ([`RangeRead::take_cell`] or [`RangeRead::lend_cell`] does
    /// that); false at the end of the range. The key is decoded in place:
    /// [`RangeRead::row`] is the entry's row (copied only when it changes),
    /// `new_row` says whether it starts one, `timestamp` is its timestamp.
    #[inline]
    fn stop_at_visible(&mut self) -> Result<bool> {
        while self.merge.valid() {
            if self.visibility.cell_settled() {
                self.skip_settled_cell()?;
                if !self.merge.valid() {
                    break;
                }
            }
            let entry_key = self.merge.key();
            // A key that does not decode gets no verdict: it is damage, and
            // the merge names the table and block that hold it.
            let Some(verdict) = self.visibility.judge(entry_key) else {
                return Err(self.merge.undecodable_key());
            };
            if verdict == Verdict::Visible {
                let Some((timestamp, column)) = visible_cell(entry_key, self.visibility.row()) else {
                    return Err(self.merge.undecodable_key());
                };
                self.column = column;
                self.timestamp = timestamp;
                self.new_row = self.visibility.rows_started() != self.row_number;
                if self.new_row {
                    self.row_number = self.visibility.rows_started();
                    if !self.one_row {
                        let row_prefix = self.visibility.row();
                        self.row.clear();
                        key::unescape_into(
                            row_prefix.get(..row_prefix.len().saturating_sub(2)).unwrap_or_default(),
                            &mut self.row,
                        );
                    }
                    self.column_at = 0;
                }
                return Ok(true);
            }
            self.merge.next()?;
        }
        Ok(false)
    }

    /// The visible entry [`RangeRead::stop_at_visible`] stopped on, as a cell
    /// (its column shared with the last row's where it can be); the walk
    /// moves past it.
    #[inline]
    fn take_cell(&mut self) -> Result<Cell> {
        let escaped = self.merge.key().get(self.column.clone()).unwrap_or_default();
        let cell = Cell {
            column: Self::shared_column(&mut self.columns, self.column_at, escaped),
            timestamp: self.timestamp,
            value: self.merge.value(),
        };
        self.column_at += 1;
        self.merge.next()?;
        Ok(cell)
    }

    /// Lends the visible entry [`RangeRead::stop_at_visible`] stopped on to
    /// `visit`, borrowed where it lies (a table's block or a memtable's
    /// arena); the walk moves past it. Nothing is counted or
    /// allocated per cell, except a column whose name holds a zero byte,
    /// unescaped into a buffer the read keeps.
    fn lend_cell(&mut self, visit: &mut impl FnMut(CellRef<'_>)) -> Result<()> {
        let escaped = self.merge.key().get(self.column.clone()).unwrap_or_default();
        let column = column_name(escaped, &mut self.unescaped);
        let (row, timestamp) = (&self.row, self.timestamp);
        self.merge.with_value(|value| {
            visit(CellRef {
                row,
                column,
                timestamp,
                value,
            })
        });
        self.column_at += 1;
        self.merge.next()
    }

    /// Lends the visible entry [`RangeRead::stop_at_visible`] stopped on to
    /// `visit`, and the visible cells of its row that follow it in the same
    /// data block or memtable (see [`RangeRead::walk_cells`]). Returns the
    /// number lent.
    fn lend_cells(&mut self, visit: &mut impl FnMut(CellRef<'_>)) -> Result<usize> {
        self.walk_cells(usize::MAX, &mut Lend(visit))
    }

    /// Appends the visible entry [`RangeRead::stop_at_visible`] stopped on
    /// to `cells`, as [`RangeRead::take_cell`] does, and the visible cells
    /// of its row that follow it in the same data block or memtable, `limit` in all at
    /// most (see [`RangeRead::walk_cells`]): a [`Cell`]'s value is a
    /// zero-copy slice of its block (a copy out of a memtable's arena), as
    /// it is when taken entry by entry.
    fn take_cells(&mut self, cells: &mut Vec<Cell>, limit: usize) -> Result<usize> {
        self.walk_cells(limit, &mut Keep(cells))
    }

    /// Hands the visible entry [`RangeRead::stop_at_visible`] stopped on to
    /// `sink`, then goes on handing it the visible cells of the same row
    /// that follow it in the same data block (or memtable), in one loop,
    /// while the merge's top cursor stays on top, up to `limit` cells in all
    /// (at least one). Returns the number handed over.
    ///
    /// The loop is the read's own walk with the layers between a cell and
    /// its block taken out: each entry is decoded by the block, checked and
    /// counted by the cursor ([`Cursor::walk_block`](crate::source::Cursor::walk_block)),
    /// judged by the visibility rule, and handed over. Whatever is not the
    /// plain case stops it where the entry-by-entry walk takes over with
    /// nothing lost: the end of the block, another source's turn, the first
    /// entry of a new row, an entry of a cell already settled (whose versions
    /// [`RangeRead::skip_settled_cell`] steps or seeks past), and the entry
    /// after the `limit`th cell (stepped onto, not judged, as the
    /// entry-by-entry walk leaves it). Either way the read examines and
    /// reads exactly the same entries and blocks.
    fn walk_cells(&mut self, limit: usize, sink: &mut impl CellSink) -> Result<usize> {
        #[cfg(test)]
        if tests::ENTRY_BY_ENTRY.with(std::cell::Cell::get) {
            sink.take_current(self)?;
            return Ok(1);
        }
        let RangeRead {
            merge,
            visibility,
            row,
            new_row,
            timestamp,
            column,
            unescaped,
            versions_piled,
            columns,
            column_at,
            ..
        } = self;
        let (mut taken, mut first, mut damaged) = (0, true, false);
        let walked = merge.walk_block(|entry_key, value, value_in| {
            if !first {
                if taken >= limit {
                    return false;
                }
                match Self::judge_next(visibility, versions_piled, entry_key) {
                    Next::Take(ts, escaped) => {
                        (*timestamp, *column, *new_row) = (ts, escaped, false);
                    }
                    Next::Pass => return true,
                    Next::Stop => return false,
                    Next::Damaged => {
                        damaged = true;
                        return false;
                    }
                }
            }
            first = false;
            sink.take_found(Found {
                row,
                escaped: entry_key.get(column.clone()).unwrap_or_default(),
                timestamp: *timestamp,
                value,
                value_in,
                unescaped,
                names: columns,
                at: *column_at,
            });
            *column_at += 1;
            taken += 1;
            true
        })?;
        if damaged {
            return Err(self.merge.undecodable_key());
        }
        match walked {
            BlockWalk::Declined => {
                sink.take_current(self)?;
                return Ok(1);
            }
            BlockWalk::Stopped => {}
            BlockWalk::BlockEnd => self.merge.next()?,
        }
        Ok(taken)
    }

    /// [`RangeRead::stop_at_visible`]'s step on one entry, for
    /// [`RangeRead::walk_cells`]: whether to take it (its timestamp and where
    /// its escaped column lies), pass it, or stop before it and leave it to
    /// the entry-by-entry walk (it starts a row, or it is of a settled cell:
    /// neither is judged here, so the walk meets it exactly as it would have).
    #[inline]
    fn judge_next(visibility: &mut Visibility, versions_piled: &mut bool, entry_key: &[u8]) -> Next {
        if visibility.cell_settled() {
            if visibility.in_cell(entry_key) {
                return Next::Stop;
            }
            // What `skip_settled_cell` concludes on a cell with no version left.
            *versions_piled = false;
        }
        // (A read of one row never leaves its row: its range lies inside it.)
        match visibility.judge_in_row(entry_key) {
            None => Next::Damaged,
            Some(None) => Next::Stop,
            Some(Some(Verdict::Visible)) => match visible_cell(entry_key, visibility.row()) {
                Some((timestamp, column)) => Next::Take(timestamp, column),
                None => Next::Damaged,
            },
            Some(Some(_)) => Next::Pass,
        }
    }

    /// The next visible cell. Its row is [`RangeRead::row`]; `new_row` says
    /// whether it starts a row.
    #[inline]
    fn next_cell(&mut self) -> Result<Option<Cell>> {
        match self.stop_at_visible()? {
            true => self.take_cell().map(Some),
            false => Ok(None),
        }
    }

    /// The name of the cell at position `at` of its row, from its escaped
    /// form: the last row's name at that position when it is the same
    /// column, else a copy, which replaces the last row's names from `at` on.
    fn shared_column(names: &mut Vec<Bytes>, at: usize, escaped: &[u8]) -> Bytes {
        // An escaped column with no zero byte is the column itself.
        if let Some(name) = names
            .get(at)
            .filter(|name| !key::has_zero(escaped) && name.as_ref() == escaped)
        {
            return name.clone();
        }
        let name = key::unescaped(escaped);
        names.truncate(at);
        names.push(name.clone());
        name
    }

    /// Moves past the rest of a cell the visibility rule has settled (its
    /// versions all returned, or a deletion covering it): a few steps, then,
    /// if more versions remain, one seek to the next cell. Stepping is cheaper
    /// when a cell has a version or two left; seeking when a hot cell has
    /// piled up many (RocksDB makes the same choice, after 8 steps).
    ///
    /// Versions pile up on hot rows (every update of a row's columns lands
    /// in the memtable), so once a cell of the read has needed a seek, the
    /// next settled cell seeks at once instead of stepping first; a cell
    /// whose versions end within the steps turns stepping back on.
    fn skip_settled_cell(&mut self) -> Result<()> {
        let patience = if self.versions_piled { 0 } else { SEQUENTIAL_SKIPS };
        let mut steps = 0;
        while self.merge.valid() && self.visibility.in_cell(self.merge.key()) {
            if steps == patience && key::successor_into(self.visibility.cell(), &mut self.seek_target) {
                self.merge.seek(&self.seek_target)?;
                self.versions_piled = true;
                return Ok(());
            }
            self.merge.next()?;
            steps += 1;
        }
        self.versions_piled = false;
        Ok(())
    }

    /// The trace so far (of a read built `traced`; an untraced read lists no source).
    ///
    /// A file of a run that a scan has not reached yet is not listed: the
    /// read has not consulted it (and may never need to).
    fn trace(&self) -> Trace {
        let cursors = self.merge.cursors();
        let mut sources = Vec::with_capacity(self.traces.len());
        for (index, (st, cursor)) in self.traces.iter().zip(&self.cursor_of).enumerate() {
            let mut st = st.clone();
            if let Some(c) = cursor.and_then(|i| cursors.get(i)) {
                let (examined, read) = match c.run_files() {
                    Some(files) => match files.into_iter().find(|(source, _, _)| *source == index) {
                        Some((_, examined, read)) => (examined, Some(read)),
                        None => continue,
                    },
                    None => (c.examined(), c.cost()),
                };
                st.entries_examined += examined;
                if let Some(read) = read {
                    st.add_read(read);
                }
            }
            sources.push(st);
        }
        Trace {
            sources,
            entries_returned: 0,
        }
    }
}

impl Drop for RangeRead {
    /// A read of one row leaves its column names for the next one on this thread.
    fn drop(&mut self) {
        if self.one_row {
            let names = std::mem::take(&mut self.columns);
            // During the thread's teardown the names are simply dropped.
            let _ = LAST_ROW_COLUMNS.try_with(|last| last.set(names));
        }
    }
}

/// The longest value [`Scan::visit_row`] copies when it reads ahead to the
/// next row's first cell; a longer one is held as a [`Cell`].
const LENT_COPY_MAX: usize = 256;

/// The first cell of the next row, read while finishing the last one (a row
/// ends only where the next one begins).
#[derive(Default)]
enum ReadAhead {
    /// None read: the scan has not begun, or its last row took it.
    #[default]
    Nothing,
    /// Held as a [`Cell`]: by the iterator, and by [`Scan::visit_row`] when
    /// the value is longer than [`LENT_COPY_MAX`].
    Held(Cell),
    /// Copied by [`Scan::visit_row`]: the cell's timestamp, with its column
    /// and value in the two buffers the scan keeps (`lent_column`,
    /// `lent_value`). A copy of a short value costs less than the two
    /// reference counts of a cell counted up and down once per row.
    Copied(u64),
}

/// An iterator over the rows of a scan. [`Scan::trace`] tells what it has cost so far.
pub struct Scan {
    read: RangeRead,
    /// The first cell of the next row, if the last row read it.
    ahead: ReadAhead,
    /// The column and value of a [`ReadAhead::Copied`] cell.
    lent_column: Vec<u8>,
    lent_value: Vec<u8>,
    remaining: usize,
    returned: u64,
    /// Cells in the last row returned.
    last_width: usize,
}

impl Scan {
    /// The cost of the scan so far.
    pub fn trace(&self) -> Trace {
        let mut trace = self.read.trace();
        trace.entries_returned = self.returned;
        trace
    }

    /// Lends the cells of the next row to `visit`, one call per cell in
    /// column order (see [`CellRef`]); false when the scan has no row left.
    /// The row counts as one the scan returned, exactly as if the iterator
    /// had returned it (the two may be mixed), but no [`Row`] or [`Cell`] is
    /// built for it.
    pub fn visit_row(&mut self, mut visit: impl FnMut(CellRef<'_>)) -> Result<bool> {
        if self.remaining == 0 {
            return Ok(false);
        }
        let mut width = 0;
        match std::mem::take(&mut self.ahead) {
            ReadAhead::Held(first) => {
                visit(CellRef {
                    row: &self.read.row,
                    column: &first.column,
                    timestamp: first.timestamp,
                    value: &first.value,
                });
                width += 1;
            }
            ReadAhead::Copied(timestamp) => {
                visit(CellRef {
                    row: &self.read.row,
                    column: &self.lent_column,
                    timestamp,
                    value: &self.lent_value,
                });
                width += 1;
            }
            ReadAhead::Nothing => {
                if !self.read.stop_at_visible()? {
                    return Ok(false);
                }
                width += self.read.lend_cells(&mut visit)?;
            }
        }
        // The first cell of the next row is read now, as the iterator
        // does (the walk moves past it the same way, so a trace counts the
        // same entries either way), copied, and lent from the copy next time.
        while self.read.stop_at_visible()? {
            if self.read.new_row {
                // A long value is held, not copied (a reference count
                // instead of a copy as long as the value).
                if self.read.merge.with_value(|v| v.len()) > LENT_COPY_MAX {
                    self.ahead = ReadAhead::Held(self.read.take_cell()?);
                    break;
                }
                let (column, value, mut timestamp) = (&mut self.lent_column, &mut self.lent_value, 0);
                self.read.lend_cell(&mut |cell| {
                    column.clear();
                    column.extend_from_slice(cell.column);
                    value.clear();
                    value.extend_from_slice(cell.value);
                    timestamp = cell.timestamp;
                })?;
                // Stored here, not in the closure: storing drops the old
                // value, code that kept the copy above from being inlined.
                self.ahead = ReadAhead::Copied(timestamp);
                break;
            }
            width += self.read.lend_cells(&mut visit)?;
        }
        self.last_width = width;
        self.remaining -= 1;
        self.returned += 1;
        Ok(true)
    }

    fn next_row(&mut self) -> Result<Option<Row>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let first = match std::mem::take(&mut self.ahead) {
            ReadAhead::Held(first) => Some(first),
            // After a visited row, its copy (two allocations, paid only by
            // a caller that mixes the two ways of reading a scan).
            ReadAhead::Copied(timestamp) => Some(Cell {
                column: Bytes::copy_from_slice(&self.lent_column),
                timestamp,
                value: Bytes::copy_from_slice(&self.lent_value),
            }),
            ReadAhead::Nothing => match self.read.stop_at_visible()? {
                true => None,
                false => return Ok(None),
            },
        };
        // Rows of a family tend to have the same columns: room for as many
        // cells as the last row had saves growing the vector cell by cell.
        let mut cells = Vec::with_capacity(self.last_width.max(1));
        match first {
            Some(first) => cells.push(first),
            // The walk stands on the row's first cell.
            None => _ = self.read.take_cells(&mut cells, usize::MAX)?,
        }
        let row_key = Bytes::copy_from_slice(&self.read.row);
        while self.read.stop_at_visible()? {
            if self.read.new_row {
                self.ahead = ReadAhead::Held(self.read.take_cell()?);
                break;
            }
            self.read.take_cells(&mut cells, usize::MAX)?;
        }
        self.last_width = cells.len();
        self.remaining -= 1;
        self.returned += 1;
        Ok(Some(Row { key: row_key, cells }))
    }
}

impl Iterator for Scan {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        self.next_row().transpose()
    }
}

#[cfg(test)]
mod tests {
    use crate::{CellRef, RowRange, Store, StoreOptions};

    /// A cell lent to a visitor, owned: (row, column, timestamp, value).
    type Lent = (Vec<u8>, Vec<u8>, u64, Vec<u8>);

    fn owned(c: CellRef<'_>) -> Lent {
        (c.row.to_vec(), c.column.to_vec(), c.timestamp, c.value.to_vec())
    }

    /// The cells a row read returned, as a visitor of `row` would have them.
    fn as_lent(row: &str, cells: Vec<crate::Cell>) -> Vec<Lent> {
        cells
            .into_iter()
            .map(|c| {
                (
                    row.as_bytes().to_vec(),
                    c.column.to_vec(),
                    c.timestamp,
                    c.value.to_vec(),
                )
            })
            .collect()
    }

    /// Rows `r0`..`r3` with columns `a`, `b`, `c` and a column whose name holds
    /// a zero byte, written to a table file; then, in the memtable, `b` of
    /// `r1` overwritten, `c` of `r2` deleted and `r3` deleted whole.
    fn store_of_tables_and_memtable(dir: &std::path::Path) -> crate::Result<Store> {
        let store = Store::open(dir, StoreOptions::default().family("f"))?;
        for row in ["r0", "r1", "r2", "r3"] {
            for column in [&b"a"[..], b"b", b"c", b"z\0z"] {
                store.put_at("f", row, column, 5, [row.as_bytes(), column].concat())?;
            }
        }
        store.flush()?;
        store.put_at("f", "r1", "b", 6, "new")?;
        store.delete("f", "r2", "c")?;
        store.delete_row("f", "r3")?;
        Ok(store)
    }

    /// Each table file a traced read visited, and whether its key range
    /// settled it (ruled it out without a search).
    fn settled_by_key_range(trace: &crate::Trace) -> Vec<(u64, bool)> {
        use crate::trace::{Settled, SourceKind};
        trace
            .sources
            .iter()
            .filter_map(|s| match s.source {
                SourceKind::Table { file_id, .. } => Some((file_id, s.settled == Settled::KeyRange)),
                _ => None,
            })
            .collect()
    }

    /// Each of `tables`, and whether its own key range misses `[start, end)`:
    /// what comparing each file on its own says, the model for a read that
    /// settles a run's files by binary search.
    fn outside_key_range(
        tables: &[std::sync::Arc<crate::version::TableFile>],
        start: &[u8],
        end: &[u8],
    ) -> Vec<(u64, bool)> {
        tables
            .iter()
            .map(|t| {
                (
                    t.meta.file_id,
                    !(t.meta.last_key.as_slice() >= start && t.meta.first_key.as_slice() < end),
                )
            })
            .collect()
    }

    #[test]
    fn a_row_read_settles_by_key_range_exactly_the_files_of_a_run_outside_its_row() -> crate::Result<()> {
        use crate::{ColumnRange, FamilyOptions};
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let family = FamilyOptions::default().target_file_entries(4).compaction_trigger(0);
        let store = Store::open(dir.path(), StoreOptions::default().family_with("f", family))?;
        // Rows `r0`..`r9` of three cells each, compacted into one run of
        // files cut after four entries (at the end of the row: two rows a file).
        for row in 0..10 {
            for column in ["a", "b", "c"] {
                store.put("f", format!("r{row}"), column, "v")?;
            }
        }
        store.flush()?;
        store.compact("f")?;
        let snapshot = store.snapshot();
        let fam = snapshot.family("f")?;
        let runs: Vec<u64> = fam.tables.iter().map(|t| t.meta.run).collect();
        assert_eq!((runs.len(), runs.iter().all(|&r| Some(&r) == runs.first())), (5, true));
        // Rows before, inside and after the run; a row's prefix ("r") and the
        // first and last rows of files.
        for row in ["a", "r", "r0", "r1", "r3", "r4", "r9", "s"] {
            let prefix = crate::key::row_prefix(row.as_bytes());
            let end = crate::key::prefix_successor(&prefix).unwrap_or_default();
            let expected = outside_key_range(&fam.tables, &prefix, &end);
            let (_, whole) = store.get_row_traced("f", row)?;
            let (_, slice) = store.slice_traced("f", row, &ColumnRange::starting_at("b"))?;
            assert_eq!(
                (settled_by_key_range(&whole), settled_by_key_range(&slice)),
                (expected.clone(), expected),
                "row {row}"
            );
        }
        Ok(())
    }

    #[test]
    fn row_reads_of_files_cut_inside_rows_match_a_model_and_settle_by_key_range() -> crate::Result<()> {
        use crate::{ColumnRange, Compaction, FamilyOptions};
        use std::collections::BTreeMap;
        // Rows and columns that are empty, hold zero and FF bytes and are
        // prefixes of one another; a size-tiered family cuts its files every
        // three entries, inside rows (and inside a row's deletions).
        const ROWS: [&[u8]; 7] = [b"", b"r", b"r\0", b"r\0\0", b"r0", b"r\xff", b"s"];
        const COLUMNS: [&[u8]; 6] = [b"", b"a", b"a\0", b"b", b"c", b"c\xff"];
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let family = FamilyOptions::default()
            .compaction(Compaction::SizeTiered)
            .target_file_entries(3)
            .block_size(64)
            .compaction_trigger(0);
        let store = Store::open(dir.path(), StoreOptions::default().family_with("f", family))?;
        let mut model: BTreeMap<(&[u8], &[u8]), String> = BTreeMap::new();
        // Timestamps rise with every write: the last write of a cell wins.
        let clock = std::cell::Cell::new(10);
        let tick = || {
            clock.set(clock.get() + 1);
            clock.get()
        };
        let put = |model: &mut BTreeMap<(&'static [u8], &'static [u8]), String>, row, column| {
            let ts = tick();
            let value = format!("{ts}");
            model.insert((row, column), value.clone());
            store.put_at("f", row, column, ts, value)
        };
        // One run of files cut inside rows, then a run of one file, then the memtable.
        for (i, &row) in ROWS.iter().enumerate() {
            for (j, &column) in COLUMNS.iter().enumerate() {
                if (i + j) % 3 != 0 {
                    put(&mut model, row, column)?;
                }
            }
        }
        store.delete_row_at("f", b"r\0", tick())?;
        model.retain(|&(row, _), _| row != b"r\0");
        for &column in &COLUMNS[3..] {
            put(&mut model, b"r\0", column)?;
        }
        store.flush()?;
        store.compact("f")?;
        store.delete_row_at("f", b"r0", tick())?;
        model.retain(|&(row, _), _| row != b"r0");
        put(&mut model, b"r0", b"c")?;
        put(&mut model, b"r", b"a\0")?;
        store.flush()?;
        put(&mut model, b"r\xff", b"")?;
        put(&mut model, b"s", b"b")?;

        let snapshot = store.snapshot();
        let fam = snapshot.family("f")?;
        assert!(fam.tables.len() >= 8, "{} files", fam.tables.len());
        let ranges = [
            ColumnRange::all(),
            ColumnRange::starting_at("a\0"),
            ColumnRange::starting_at("c"),
            ColumnRange::between("a", "c"),
            ColumnRange::between("", "a\0"),
            ColumnRange::between("b", "b"),
            ColumnRange::between("c", "a"),
            ColumnRange::prefix("c"),
            ColumnRange::starting_at("d"),
        ];
        for row in ROWS.iter().chain([&b"q"[..], b"r\0\x01", b"r00", b"t"].iter()) {
            let prefix = crate::key::row_prefix(row);
            for range in &ranges {
                let from = range.from.as_deref().unwrap_or_default();
                let in_range = |c: &[u8]| c >= from && range.to.as_deref().is_none_or(|to| c < to);
                let expected: Vec<(&[u8], &str)> = model
                    .iter()
                    .filter(|(&(r, c), _)| r == *row && in_range(c))
                    .map(|(&(_, c), v)| (c, v.as_str()))
                    .collect();
                let (cells, trace) = store.slice_traced("f", row, range)?;
                let got: Vec<(&[u8], &str)> = cells
                    .iter()
                    .map(|c| (&c.column[..], std::str::from_utf8(&c.value).unwrap_or("?")))
                    .collect();
                assert_eq!(got, expected, "row {row:?}, {range:?}");
                // A file is settled by its key range exactly when it holds no
                // key from the row's first (its deletions, when the range
                // starts past them) to the range's end.
                let mut start = prefix.clone();
                crate::key::escape_into(from, &mut start);
                let settle_start = if start > prefix { prefix.clone() } else { start };
                let end = match &range.to {
                    Some(to) => {
                        let mut end = prefix.clone();
                        crate::key::escape_into(to, &mut end);
                        end
                    }
                    None => crate::key::prefix_successor(&prefix).unwrap_or_default(),
                };
                assert_eq!(
                    settled_by_key_range(&trace),
                    outside_key_range(&fam.tables, &settle_start, &end),
                    "row {row:?}, {range:?}"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn a_slice_counts_its_tombstone_probe_in_the_source_it_probed() -> crate::Result<()> {
        use crate::trace::SourceKind;
        use crate::ColumnRange;
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
        for column in ["a", "b", "c"] {
            store.put_at("f", "r1", column, 1, "old")?;
        }
        store.flush()?;
        // The memtable holds the row's deletion and two newer columns; the
        // table, no tombstone to probe for.
        store.delete_row_at("f", "r1", 2)?;
        store.put_at("f", "r1", "b", 3, "new")?;
        store.put_at("f", "r1", "c", 3, "new")?;
        let (cells, trace) = store.slice_traced("f", "r1", &ColumnRange::starting_at("b"))?;
        let cells: Vec<(&[u8], u64)> = cells.iter().map(|c| (&c.column[..], c.timestamp)).collect();
        assert_eq!(cells, [(&b"b"[..], 3), (b"c", 3)]);
        let examined: Vec<(bool, u64)> = trace
            .sources
            .iter()
            .map(|s| (s.source == SourceKind::ActiveMemtable, s.entries_examined))
            .collect();
        // The memtable: its deletion (the probe), then `b` and `c`; the
        // table: its `b` and `c`, no probe.
        assert_eq!(examined, [(true, 3), (false, 2)]);
        Ok(())
    }

    #[test]
    fn visiting_a_row_lends_exactly_the_cells_get_row_returns() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = store_of_tables_and_memtable(dir.path())?;
        for row in ["r0", "r1", "r2", "r3", "none"] {
            let mut lent = Vec::new();
            let count = store.visit_row("f", row, |c| lent.push(owned(c)))?;
            let cells = as_lent(row, store.get_row("f", row)?);
            assert_eq!((count, &lent), (cells.len(), &cells), "row {row}");
        }
        let mut r1 = Vec::new();
        store.visit_row("f", "r1", |c| {
            r1.push((c.column.to_vec(), c.timestamp, c.value.to_vec()))
        })?;
        assert_eq!(
            r1,
            [
                (b"a".to_vec(), 5, b"r1a".to_vec()),
                (b"b".to_vec(), 6, b"new".to_vec()),
                (b"c".to_vec(), 5, b"r1c".to_vec()),
                (b"z\0z".to_vec(), 5, b"r1z\0z".to_vec()),
            ]
        );
        Ok(())
    }

    #[test]
    fn visiting_a_scan_lends_the_rows_the_iterator_returns_at_the_same_cost() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = store_of_tables_and_memtable(dir.path())?;
        let range = RowRange::all().limit(2);
        let mut rows = store.scan("f", &RowRange::all().limit(2))?;
        let mut iterated = Vec::new();
        for row in rows.by_ref() {
            let row = row?;
            for c in row.cells {
                iterated.push((row.key.to_vec(), c.column.to_vec(), c.timestamp, c.value.to_vec()));
            }
        }
        let mut visits = store.scan("f", &range)?;
        let mut lent = Vec::new();
        let mut widths = Vec::new();
        loop {
            let before = lent.len();
            if !visits.visit_row(|c| lent.push(owned(c)))? {
                break;
            }
            widths.push(lent.len() - before);
        }
        assert_eq!(lent, iterated);
        // r0 whole; r1 with its new `b`; the limit stops there.
        assert_eq!(widths, [4, 4]);
        assert_eq!(visits.trace(), rows.trace());
        Ok(())
    }

    /// A store whose rows of many cells hold every case a walk inside a
    /// block meets: versions piled up (more than a read steps over before it
    /// seeks), cell and row deletions, expired cells, entries written after
    /// a snapshot, zero bytes in column names; spread over a compacted run of
    /// files, a newer file and the memtable, in blocks of a few entries. Also
    /// the snapshot taken in the middle. `seed` varies what is written.
    fn store_of_wide_rows(dir: &std::path::Path, seed: u64) -> crate::Result<(Store, crate::Snapshot)> {
        use crate::FamilyOptions;
        use std::time::Duration;
        let family = FamilyOptions::default()
            .max_versions(20)
            .ttl(Duration::from_secs(3600))
            .block_size(160)
            .target_file_entries(150)
            .compaction_trigger(0);
        let store = Store::open(dir, StoreOptions::default().family_with("f", family))?;
        let now = crate::clock::now_ms();
        let expired = now - 7_200_000;
        let mut state = seed | 1;
        let mut random = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let column = |c: u64| match c % 7 {
            0 => format!("z\0{c:02}"),
            _ => format!("c{c:02}"),
        };
        let mut ts = now - 1000;
        let mut write = |store: &Store, rows: &[u64], random: &mut dyn FnMut(u64) -> u64| -> crate::Result<()> {
            for &row in rows {
                let name = format!("r{row}");
                for c in 0..40u64 {
                    ts += 1;
                    let when = if random(9) == 0 { expired + c } else { ts };
                    match random(20) {
                        0 => store.delete_at("f", &name, column(c), when)?,
                        1..=3 => {}
                        4 => {
                            // A warm cell: a few versions, which a read steps over.
                            for v in 0..3 {
                                store.put_at("f", &name, column(c), ts + v, format!("{row}.{c}.{v}"))?;
                            }
                        }
                        5 => {
                            // A hot cell: many versions, some expired.
                            for v in 0..12 {
                                let when = if v % 5 == 4 { expired + v } else { ts + v };
                                store.put_at("f", &name, column(c), when, format!("{row}.{c}.{v}"))?;
                            }
                        }
                        _ => store.put_at("f", &name, column(c), when, format!("{row}.{c}@{when}"))?,
                    }
                }
                match random(6) {
                    0 => store.delete_row_at("f", &name, ts - random(30))?,
                    1 => store.delete_row_at("f", &name, expired)?,
                    _ => {}
                }
            }
            Ok(())
        };
        // Later writes leave some rows side by side in the files alone (a
        // scan walks from one into the next inside a block), and pile
        // versions of others across sources.
        write(&store, &[0, 1, 2, 3, 4, 5, 6, 7], &mut random)?;
        store.flush()?;
        store.compact("f")?;
        write(&store, &[0, 1, 2, 3], &mut random)?;
        let snapshot = store.snapshot();
        write(&store, &[2, 3, 4, 5], &mut random)?;
        store.flush()?;
        write(&store, &[0, 3, 6], &mut random)?;
        Ok((store, snapshot))
    }

    thread_local! {
        /// Set by [`entry_by_entry`]: every read on this thread takes its
        /// cells one entry at a time, never inside a block.
        pub(super) static ENTRY_BY_ENTRY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// What `read` returns when its reads walk entry by entry: the reference
    /// the walk inside a block must match, cell for cell and in its trace.
    fn entry_by_entry<T>(read: impl FnOnce() -> T) -> T {
        ENTRY_BY_ENTRY.set(true);
        let out = read();
        ENTRY_BY_ENTRY.set(false);
        out
    }

    /// A scan's rows as lent cells, and its trace, read through the
    /// iterator (`visit` false) or by visiting each row.
    fn scanned(snapshot: &crate::Snapshot, range: &RowRange, visit: bool) -> crate::Result<(Vec<Lent>, crate::Trace)> {
        let mut scan = snapshot.scan("f", range)?;
        let mut cells = Vec::new();
        match visit {
            true => while scan.visit_row(|c| cells.push(owned(c)))? {},
            false => {
                for row in scan.by_ref() {
                    let row = row?;
                    for c in row.cells {
                        cells.push((row.key.to_vec(), c.column.to_vec(), c.timestamp, c.value.to_vec()));
                    }
                }
            }
        }
        Ok((cells, scan.trace()))
    }

    #[test]
    fn a_row_walked_inside_its_blocks_returns_and_costs_what_the_entry_by_entry_walk_returns() -> crate::Result<()> {
        use crate::ColumnRange;
        let slices = [
            ColumnRange::all(),
            ColumnRange::all().limit(1),
            ColumnRange::all().limit(3),
            ColumnRange::all().limit(7),
            ColumnRange::between("c05", "c20"),
            ColumnRange::starting_at("c10").limit(4),
            ColumnRange::prefix("z\0"),
            ColumnRange::all().reverse().limit(5),
        ];
        for seed in [1, 7, 42, 1234] {
            let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
            let (store, then) = store_of_wide_rows(dir.path(), seed)?;
            let files = store.snapshot().family("f")?.tables.len();
            assert!(files >= 3, "{files} files");
            for snapshot in [then, store.snapshot()] {
                let mut nonempty = 0;
                for row in ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "q"] {
                    let visit = || -> crate::Result<_> {
                        let mut lent = Vec::new();
                        let (count, trace) = snapshot.visit_row_traced("f", row, |c| lent.push(owned(c)))?;
                        Ok((count, lent, trace))
                    };
                    let (count, lent, visited) = visit()?;
                    assert_eq!(count, lent.len());
                    assert_eq!(
                        entry_by_entry(visit)?,
                        (count, lent.clone(), visited.clone()),
                        "seed {seed}, row {row}"
                    );
                    let (cells, returned) = snapshot.get_row_traced("f", row)?;
                    let reference = entry_by_entry(|| snapshot.get_row_traced("f", row))?;
                    assert_eq!(
                        (&cells, &returned),
                        (&reference.0, &reference.1),
                        "seed {seed}, row {row}"
                    );
                    assert_eq!(
                        (as_lent(row, cells), returned),
                        (lent, visited),
                        "seed {seed}, row {row}"
                    );
                    for range in &slices {
                        let sliced = snapshot.slice_traced("f", row, range)?;
                        let reference = entry_by_entry(|| snapshot.slice_traced("f", row, range))?;
                        assert_eq!(sliced, reference, "seed {seed}, row {row}, {range:?}");
                    }
                    nonempty += usize::from(count > 0);
                }
                assert!(nonempty >= 4, "seed {seed}: {nonempty} rows with cells");
                for range in [
                    RowRange::all(),
                    RowRange::all().limit(3),
                    RowRange::between("r2", "r6"),
                    RowRange::prefix("r7"),
                ] {
                    let iterated = scanned(&snapshot, &range, false)?;
                    assert_eq!(
                        entry_by_entry(|| scanned(&snapshot, &range, false))?,
                        iterated,
                        "seed {seed}, {range:?}"
                    );
                    let visited = scanned(&snapshot, &range, true)?;
                    assert_eq!(
                        entry_by_entry(|| scanned(&snapshot, &range, true))?,
                        visited,
                        "seed {seed}, {range:?}"
                    );
                    assert_eq!(visited, iterated, "seed {seed}, {range:?}");
                }
            }
        }
        Ok(())
    }

    #[test]
    fn a_scan_may_mix_visited_and_returned_rows() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = store_of_tables_and_memtable(dir.path())?;
        let mut scan = store.scan("f", &RowRange::all())?;
        let first = scan.next().transpose()?.map(|r| r.key.to_vec());
        let mut second = Vec::new();
        let visited = scan.visit_row(|c| second.push(owned(c)))?;
        // The row after a visited one is built from the copy of its first cell.
        let third = scan.next().transpose()?.map(|r| (r.key.to_vec(), r.cells));
        // r3 is deleted whole: nothing after r2.
        let done = (scan.visit_row(|_| {})?, scan.next().is_none());
        assert_eq!(first.as_deref(), Some(&b"r0"[..]));
        assert!(visited);
        let columns: Vec<(&[u8], &[u8])> = second.iter().map(|c| (&c.0[..], &c.1[..])).collect();
        assert_eq!(
            columns,
            [(&b"r1"[..], &b"a"[..]), (b"r1", b"b"), (b"r1", b"c"), (b"r1", b"z\0z")]
        );
        assert_eq!(third, Some((b"r2".to_vec(), store.get_row("f", "r2")?)));
        assert_eq!(third.map(|(_, cells)| cells.len()), Some(3));
        assert_eq!(done, (false, true));
        Ok(())
    }

    #[test]
    fn row_reads_on_one_thread_share_column_names_with_the_last_row_read() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
        for (row, columns) in [("r1", ["a", "b"]), ("r2", ["a", "b"]), ("r3", ["a", "c"])] {
            for column in columns {
                store.put("f", row, column, format!("{row}{column}"))?;
            }
        }
        // All three rows are held, so no name is freed and its address reused.
        let rows = [
            store.get_row("f", "r1")?,
            store.get_row("f", "r2")?,
            store.get_row("f", "r3")?,
        ];
        let cells: Vec<Vec<(&[u8], &[u8])>> = rows
            .iter()
            .map(|r| r.iter().map(|c| (&c.column[..], &c.value[..])).collect())
            .collect();
        assert_eq!(
            cells,
            [
                [(&b"a"[..], &b"r1a"[..]), (b"b", b"r1b")],
                [(b"a", b"r2a"), (b"b", b"r2b")],
                [(b"a", b"r3a"), (b"c", b"r3c")],
            ]
        );
        // r2 shares both names with r1; r3 shares `a` and has a name of its own for `c`.
        let at = |row: usize, cell: usize| rows[row][cell].column.as_ptr();
        assert_eq!((at(1, 0) == at(0, 0), at(1, 1) == at(0, 1)), (true, true));
        assert_eq!((at(2, 0) == at(1, 0), at(2, 1) == at(1, 1)), (true, false));
        Ok(())
    }

    #[test]
    fn a_scan_shares_a_column_name_with_the_last_row_that_had_it_at_that_position() -> crate::Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::Error::io("tempdir", e))?;
        let store = Store::open(dir.path(), StoreOptions::default().family("f"))?;
        for (row, columns) in [
            ("r1", ["a", "b"]),
            ("r2", ["a", "b"]),
            ("r3", ["a", "c"]),
            ("r4", ["a", "c"]),
        ] {
            for column in columns {
                store.put("f", row, column, format!("{row}{column}"))?;
            }
        }
        let (rows, _) = store.scan_traced("f", &RowRange::all())?;
        let names: Vec<Vec<(&[u8], *const u8)>> = rows
            .iter()
            .map(|r| r.cells.iter().map(|c| (&c.column[..], c.column.as_ptr())).collect())
            .collect();
        let columns: Vec<Vec<&[u8]>> = names.iter().map(|r| r.iter().map(|c| c.0).collect()).collect();
        assert_eq!(columns, [[b"a", b"b"], [b"a", b"b"], [b"a", b"c"], [b"a", b"c"]]);
        // `a` is one name for all four rows; `b` for the first two, `c` for the last two.
        let at = |row: usize, cell: usize| names[row][cell].1;
        assert!((1..4).all(|row| at(row, 0) == at(0, 0)));
        assert_eq!(
            (at(1, 1) == at(0, 1), at(2, 1) == at(1, 1), at(3, 1) == at(2, 1)),
            (true, false, true)
        );
        let values: Vec<&[u8]> = rows.iter().flat_map(|r| r.cells.iter().map(|c| &c.value[..])).collect();
        assert_eq!(
            values,
            [&b"r1a"[..], b"r1b", b"r2a", b"r2b", b"r3a", b"r3c", b"r4a", b"r4c"]
        );
        Ok(())
    }
}
