//! Write batches: several puts and deletes, across families, applied atomically.
//!
//! A batch is one record in the write-ahead log, so after a crash either all of
//! it is replayed or none of it. Its operations take consecutive sequence
//! numbers and become visible to readers together.
//!
//! # The log record payload of a batch
//!
//! The write path writes the compact format; the reader reads both it and the
//! first format, which every segment written before it holds.
//!
//! The compact format (integers little-endian, `varint` = LEB128):
//!
//! ```text
//! (2 << 56 | first_sequence) u64 | count varint | timestamp varint | op * count
//! op = flags u8 | [family_id varint] | [timestamp varint] | [row_len varint | row]
//!      | column_len varint | column | value_len varint | value
//! flags = kind (bits 0-1: 1 put, 2 delete cell, 3 delete row)
//!       | 0x04 same family: no family_id, the previous op's
//!       | 0x08 same row: no row, the previous op's
//!       | 0x10 own timestamp: a timestamp follows, else the batch's
//! ```
//!
//! A write's ops are usually the cells of one row of one family, all at the
//! time of the write, so after the first op an op is its flags, its column
//! and its value with a byte of length each: a 10-byte field of a YCSB row
//! costs about 20 bytes in the log instead of 65. Sequence numbers are
//! implied, `first_sequence + i` for the op at `i`, in both formats.
//!
//! The first format:
//!
//! ```text
//! first_sequence u64 | count u32 | op * count
//! op = family_id u32 | kind u8 | timestamp u64 | row_len u32 | row | column_len u32 | column | value_len u32 | value
//! ```
//!
//! The top byte of the first 8 bytes tells them apart, with no marker record
//! and no state carried from one record to the next (so a repair that skips
//! damage reads every record that survives). In the first format it is the
//! top byte of a sequence number, and no store ever hands out a sequence
//! number of 2^56 or more: keys keep 56 bits of it (`key::MAX_SEQUENCE`), and
//! the write path refuses a write that would go past it. So it is 0 in every
//! first-format payload, and 2 in every compact one. Any other value, any
//! compact payload that does not decode exactly to its last byte, and a
//! batch of either format that no write path writes (see `check_batch`), is
//! corruption.

use std::ops::Range;

use bytes::Bytes;
use cellar_sstable::coding::{get_varint64, put_varint64, MAX_VARINT64_LEN};

use crate::error::{Error, Result};
use crate::key::{Kind, MAX_SEQUENCE};
use crate::options::{MAX_COLUMN_BYTES, MAX_ROW_BYTES, MAX_VALUE_BYTES};

/// One operation of a batch, before its family is resolved: where its bytes
/// are in the batch's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OpSpan {
    /// Position of its family in the batch's list of family names.
    family: usize,
    kind: Kind,
    /// `None` = the store's clock at write time.
    timestamp: Option<u64>,
    row: Range<usize>,
    column: Range<usize>,
    value: Range<usize>,
}

/// A group of writes applied atomically: all or nothing, even across a crash.
///
/// ```
/// # fn main() -> Result<(), cellar_engine::Error> {
/// let mut batch = cellar_engine::WriteBatch::new();
/// batch.put("loans", "book:1", "loan|2024-03-01|0", "member:7");
/// batch.put("members", "member:7", "loan|2024-03-01|1|0", "book:1");
/// batch.delete("loans", "book:1", "loan|2023-01-01|9");
/// assert_eq!(batch.len(), 3);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Every operation's row, column and value, one after another: a batch
    /// of many cells costs a few growing buffers, not three allocations a cell.
    data: Vec<u8>,
    ops: Vec<OpSpan>,
    /// The families named, each once.
    families: Vec<String>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Empties the batch and keeps its buffers, as RocksDB's
    /// `WriteBatch::Clear` does: a writer that reuses one batch for write
    /// after write allocates nothing for it once its buffers have grown.
    ///
    /// ```
    /// let mut batch = cellar_engine::WriteBatch::new();
    /// batch.put("loans", "book:1", "loan|2024-03-01|0", "member:7");
    /// batch.clear();
    /// assert!(batch.is_empty());
    /// assert_eq!(batch, cellar_engine::WriteBatch::new());
    /// ```
    pub fn clear(&mut self) {
        self.data.clear();
        self.ops.clear();
        self.families.clear();
    }

    fn push(&mut self, family: &str, kind: Kind, row: &[u8], column: &[u8], timestamp: Option<u64>, value: &[u8]) {
        let family = match self.families.iter().position(|f| f == family) {
            Some(i) => i,
            None => {
                self.families.push(family.to_string());
                self.families.len() - 1
            }
        };
        // A batch usually holds operations alike (the cells of a row, say):
        // the first one makes room for eight like it, so a batch of ten cells
        // grows its buffers twice, not a dozen times.
        if self.ops.is_empty() {
            self.data.reserve(8 * (row.len() + column.len() + value.len()));
            self.ops.reserve(8);
        }
        // The cells of a row follow one another: their row is stored once,
        // so the write path finds it in the same place and need not compare
        // it byte by byte (see [`same_bytes`]).
        let last_row = self
            .ops
            .last()
            .map(|last| last.row.clone())
            .filter(|last| self.data.get(last.clone()) == Some(row));
        let mut append = |bytes: &[u8]| {
            let start = self.data.len();
            self.data.extend_from_slice(bytes);
            start..self.data.len()
        };
        let row = last_row.unwrap_or_else(|| append(row));
        let (column, value) = (append(column), append(value));
        self.ops.push(OpSpan {
            family,
            kind,
            timestamp,
            row,
            column,
            value,
        });
    }

    /// Puts a value at the store's current time.
    pub fn put(
        &mut self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.push(family, Kind::Put, row.as_ref(), column.as_ref(), None, value.as_ref());
        self
    }

    /// Puts a value with a timestamp chosen by the caller.
    pub fn put_at(
        &mut self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        timestamp: u64,
        value: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.push(
            family,
            Kind::Put,
            row.as_ref(),
            column.as_ref(),
            Some(timestamp),
            value.as_ref(),
        );
        self
    }

    /// Deletes every version of a column written up to now.
    pub fn delete(&mut self, family: &str, row: impl AsRef<[u8]>, column: impl AsRef<[u8]>) -> &mut Self {
        self.push(family, Kind::DeleteCell, row.as_ref(), column.as_ref(), None, b"");
        self
    }

    /// Deletes every version of a column with a timestamp up to `timestamp`.
    pub fn delete_at(
        &mut self,
        family: &str,
        row: impl AsRef<[u8]>,
        column: impl AsRef<[u8]>,
        timestamp: u64,
    ) -> &mut Self {
        self.push(
            family,
            Kind::DeleteCell,
            row.as_ref(),
            column.as_ref(),
            Some(timestamp),
            b"",
        );
        self
    }

    /// Deletes every column of a row written up to now.
    pub fn delete_row(&mut self, family: &str, row: impl AsRef<[u8]>) -> &mut Self {
        self.push(family, Kind::DeleteRow, row.as_ref(), b"", None, b"");
        self
    }

    /// Deletes every column of a row with a timestamp up to `timestamp`.
    pub fn delete_row_at(&mut self, family: &str, row: impl AsRef<[u8]>, timestamp: u64) -> &mut Self {
        self.push(family, Kind::DeleteRow, row.as_ref(), b"", Some(timestamp), b"");
        self
    }

    /// The operations, borrowed, as the write path takes them.
    pub(crate) fn op_refs(&self) -> Vec<OpRef<'_>> {
        let bytes = |range: &Range<usize>| self.data.get(range.clone()).unwrap_or_default();
        self.ops
            .iter()
            .map(|op| OpRef {
                family: self.families.get(op.family).map_or("", String::as_str),
                kind: op.kind,
                row: bytes(&op.row),
                column: bytes(&op.column),
                timestamp: op.timestamp,
                value: bytes(&op.value),
            })
            .collect()
    }
}

/// One operation as the write path takes it: borrowed, so a single `put`
/// copies its bytes once (into the memtable) and builds no batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpRef<'a> {
    pub family: &'a str,
    pub kind: Kind,
    pub row: &'a [u8],
    pub column: &'a [u8],
    /// `None` = the store's clock at write time.
    pub timestamp: Option<u64>,
    pub value: &'a [u8],
}

/// Whether two byte strings are equal, answered without reading them when
/// they are the same bytes in memory: consecutive operations of a row share
/// their row in a [`WriteBatch`], and the write path asks of each operation
/// whether its row is the last one's (to share it in the log record, and
/// to set the row's filter bits once).
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || a == b
}

/// Checks every operation against the documented size limits.
pub(crate) fn check_limits(ops: &[OpRef<'_>]) -> Result<()> {
    for op in ops {
        if let Some((what, len, limit)) = part_over_limit(op.row, op.column, op.value) {
            return Err(Error::TooLarge { what, len, limit });
        }
    }
    Ok(())
}

/// The first part of an operation longer than a write may make it: which
/// part, its length and its limit. The write path refuses such an op
/// ([`check_limits`]), so a logged one is damage ([`check_op`]).
fn part_over_limit(row: &[u8], column: &[u8], value: &[u8]) -> Option<(&'static str, usize, usize)> {
    [
        ("row", row.len(), MAX_ROW_BYTES),
        ("column", column.len(), MAX_COLUMN_BYTES),
        ("value", value.len(), MAX_VALUE_BYTES),
    ]
    .into_iter()
    .find(|&(_, len, limit)| len > limit)
}

/// An operation as the log stores it: family resolved, timestamp fixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LoggedOp {
    pub family: u32,
    pub kind: Kind,
    pub timestamp: u64,
    pub row: Bytes,
    pub column: Bytes,
    pub value: Bytes,
}

fn kind_byte(kind: Kind) -> u8 {
    match kind {
        Kind::Put => 1,
        Kind::DeleteCell => 2,
        Kind::DeleteRow => 3,
    }
}

fn kind_of(byte: u8) -> Option<Kind> {
    match byte {
        1 => Some(Kind::Put),
        2 => Some(Kind::DeleteCell),
        3 => Some(Kind::DeleteRow),
        _ => None,
    }
}

/// Why a log record payload is not a write batch (for the corruption report).
pub(crate) type Malformed = &'static str;

/// The format of a compact payload, in the top byte of its first 8 bytes.
const FORMAT_V2: u8 = 2;
/// Flags byte of a compact op: the low two bits are the kind (1, 2, 3)...
const KIND_BITS: u8 = 0b0000_0011;
/// ...no family id follows: the op's family is the previous op's;
const SAME_FAMILY: u8 = 0b0000_0100;
/// ...no row follows: the op's row is the previous op's;
const SAME_ROW: u8 = 0b0000_1000;
/// ...a timestamp follows: the op's own, not the batch's.
const OWN_TIMESTAMP: u8 = 0b0001_0000;
/// The bits a flags byte may have; any other bit set is corruption, so a
/// later format can give the spare bits a meaning without being misread.
const KNOWN_FLAGS: u8 = KIND_BITS | SAME_FAMILY | SAME_ROW | OWN_TIMESTAMP;

/// Appends a length-prefixed byte string: varint length, then the bytes.
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Writes a batch's log record payload in the compact format, one op at a
/// time, as the write path resolves them (under the write lock, so it must
/// stay cheap: a few comparisons and byte pushes an op, no allocation once
/// the caller's buffer has grown).
pub(crate) struct Encoder<'o, 'r> {
    /// The payload being written.
    out: &'o mut Vec<u8>,
    /// The batch's timestamp; an op with another one carries its own.
    timestamp: u64,
    /// The previous op's family and row, which the next op may share.
    family: Option<u32>,
    row: Option<&'r [u8]>,
}

impl<'o, 'r> Encoder<'o, 'r> {
    /// Starts a payload of `count` ops numbered from `first_sequence`, whose
    /// ops mostly have the timestamp `timestamp`.
    ///
    /// `first_sequence + count - 1` must be at most [`MAX_SEQUENCE`]: the
    /// top byte of the first 8 bytes is the format, not part of the number.
    pub(crate) fn begin(first_sequence: u64, count: usize, timestamp: u64, out: &'o mut Vec<u8>) -> Encoder<'o, 'r> {
        let head = (u64::from(FORMAT_V2) << 56) | (first_sequence & MAX_SEQUENCE);
        out.extend_from_slice(&head.to_le_bytes());
        put_varint64(out, count as u64);
        put_varint64(out, timestamp);
        Encoder {
            out,
            timestamp,
            family: None,
            row: None,
        }
    }

    /// Appends one op.
    pub(crate) fn op(&mut self, family: u32, kind: Kind, timestamp: u64, row: &'r [u8], column: &[u8], value: &[u8]) {
        let out = &mut *self.out;
        let same_family = self.family == Some(family);
        let same_row = self.row.is_some_and(|last| same_bytes(last, row));
        let own_timestamp = timestamp != self.timestamp;
        let mut flags = kind_byte(kind);
        if same_family {
            flags |= SAME_FAMILY;
        }
        if same_row {
            flags |= SAME_ROW;
        }
        if own_timestamp {
            flags |= OWN_TIMESTAMP;
        }
        out.push(flags);
        if !same_family {
            put_varint64(out, u64::from(family));
            self.family = Some(family);
        }
        if own_timestamp {
            put_varint64(out, timestamp);
        }
        if !same_row {
            put_bytes(out, row);
            self.row = Some(row);
        }
        put_bytes(out, column);
        put_bytes(out, value);
    }
}

/// Encodes a batch as one log record payload, in the compact format, with
/// the first op's timestamp as the batch's.
#[cfg(test)]
pub(crate) fn encode(first_sequence: u64, ops: &[LoggedOp], out: &mut Vec<u8>) {
    let timestamp = ops.first().map_or(0, |op| op.timestamp);
    let mut encoder = Encoder::begin(first_sequence, ops.len(), timestamp, out);
    for op in ops {
        encoder.op(op.family, op.kind, op.timestamp, &op.row, &op.column, &op.value);
    }
}

/// Encodes a batch as one log record payload in the first format, as cellar
/// wrote every batch before the compact one: kept to write old segments in tests.
#[cfg(test)]
pub(crate) fn encode_v1(first_sequence: u64, ops: &[LoggedOp], out: &mut Vec<u8>) {
    out.extend_from_slice(&first_sequence.to_le_bytes());
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for op in ops {
        out.extend_from_slice(&op.family.to_le_bytes());
        out.push(kind_byte(op.kind));
        out.extend_from_slice(&op.timestamp.to_le_bytes());
        for part in [&op.row, &op.column, &op.value] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
}

/// Reads a payload from the front; every read checks what is left, so no
/// bytes on disk can make it read past the end or panic.
struct Reader<'a> {
    payload: &'a Bytes,
    at: usize,
}

impl Reader<'_> {
    fn left(&self) -> usize {
        self.payload.len().saturating_sub(self.at)
    }

    /// The next `n` bytes, as a zero-copy slice of the payload.
    fn take(&mut self, n: usize) -> std::result::Result<Bytes, Malformed> {
        if n > self.left() {
            return Err("a field runs past the end of the record");
        }
        let out = self.payload.slice(self.at..self.at + n);
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], Malformed> {
        let bytes = self.payload.get(self.at..).and_then(|rest| rest.first_chunk::<N>());
        let out = *bytes.ok_or("a field runs past the end of the record")?;
        self.at += N;
        Ok(out)
    }

    fn u8(&mut self) -> std::result::Result<u8, Malformed> {
        let [byte] = self.array::<1>()?;
        Ok(byte)
    }

    fn u32(&mut self) -> std::result::Result<u32, Malformed> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> std::result::Result<u64, Malformed> {
        self.array().map(u64::from_le_bytes)
    }

    /// A LEB128 varint of at most 10 bytes whose value fits in 64 bits
    /// (the table format's coder, `cellar_sstable::coding`).
    fn varint(&mut self) -> std::result::Result<u64, Malformed> {
        let rest = self.payload.get(self.at..).unwrap_or_default();
        match get_varint64(rest) {
            Some((value, len)) => {
                self.at += len;
                Ok(value)
            }
            // Every byte left says "more follows": the record ends inside it.
            None if rest.len() < MAX_VARINT64_LEN && rest.iter().all(|b| b & 0x80 != 0) => {
                Err("a varint is cut short by the end of the record")
            }
            None => Err("a varint does not fit in 64 bits"),
        }
    }

    /// A byte string with a varint length.
    fn bytes(&mut self) -> std::result::Result<Bytes, Malformed> {
        let len = self.varint()?;
        self.take(usize::try_from(len).map_err(|_| "a field runs past the end of the record")?)
    }
}

/// Decodes a log record payload of either format into its first sequence
/// number and its ops, or says why the bytes are not a batch. Row, column
/// and value are zero-copy slices of `payload`.
///
/// The top byte of the first 8 bytes tells the formats apart: the first
/// format stores the first sequence number there, whose top byte is 0
/// (see the module documentation); the compact one stores 2.
pub(crate) fn decode(payload: &Bytes) -> std::result::Result<(u64, Vec<LoggedOp>), Malformed> {
    let mut reader = Reader { payload, at: 0 };
    let head = reader.u64()?;
    let first = head & MAX_SEQUENCE;
    let ops = match (head >> 56) as u8 {
        0 => decode_v1_ops(&mut reader)?,
        FORMAT_V2 => decode_v2_ops(&mut reader)?,
        _ => return Err("unknown batch format (top byte of the first sequence number)"),
    };
    if reader.left() != 0 {
        return Err("bytes after the last operation");
    }
    check_batch(first, &ops)?;
    Ok((first, ops))
}

/// Refuses a batch that parses but that no write path writes: a record's
/// checksum was good, so it is no torn write, and replaying it would apply
/// something nobody wrote. The write path never logs an empty batch, never
/// numbers an op past [`MAX_SEQUENCE`] (keys keep 56 bits of a sequence
/// number; a larger one would be clamped, two ops sharing one), never gives
/// a deletion a value or a row deletion a column (a flipped kind would
/// otherwise turn a put into a deletion unnoticed), and never writes a part
/// over its limit ([`check_limits`]).
fn check_batch(first: u64, ops: &[LoggedOp]) -> std::result::Result<(), Malformed> {
    let Some(last_offset) = (ops.len() as u64).checked_sub(1) else {
        return Err("a batch of no operations");
    };
    if first.checked_add(last_offset).is_none_or(|last| last > MAX_SEQUENCE) {
        return Err("operations numbered past the largest sequence number");
    }
    ops.iter().try_for_each(check_op)
}

/// Refuses an op the write path cannot have written (see [`check_batch`]).
fn check_op(op: &LoggedOp) -> std::result::Result<(), Malformed> {
    if op.kind == Kind::DeleteRow && !op.column.is_empty() {
        return Err("a row deletion names a column");
    }
    if op.kind != Kind::Put && !op.value.is_empty() {
        return Err("a deletion carries a value");
    }
    match part_over_limit(&op.row, &op.column, &op.value) {
        Some(("row", ..)) => Err("a row longer than a write may be"),
        Some(("column", ..)) => Err("a column longer than a write may be"),
        Some(_) => Err("a value longer than a write may be"),
        None => Ok(()),
    }
}

/// The ops of a first-format payload, after its first sequence number.
fn decode_v1_ops(reader: &mut Reader<'_>) -> std::result::Result<Vec<LoggedOp>, Malformed> {
    let count = reader.u32()?;
    let mut ops = Vec::with_capacity((count as usize).min(1 << 16));
    for _ in 0..count {
        let family = reader.u32()?;
        let kind = kind_of(reader.u8()?).ok_or("an operation of unknown kind")?;
        let timestamp = reader.u64()?;
        let mut parts = [Bytes::new(), Bytes::new(), Bytes::new()];
        for part in &mut parts {
            let len = reader.u32()? as usize;
            *part = reader.take(len)?;
        }
        let [row, column, value] = parts;
        ops.push(LoggedOp {
            family,
            kind,
            timestamp,
            row,
            column,
            value,
        });
    }
    Ok(ops)
}

/// The ops of a compact payload, after its first 8 bytes.
fn decode_v2_ops(reader: &mut Reader<'_>) -> std::result::Result<Vec<LoggedOp>, Malformed> {
    let count = reader.varint()?;
    let batch_timestamp = reader.varint()?;
    // An op is at least 3 bytes (flags, column length, value length): a
    // count the record cannot hold is refused before anything is allocated.
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= reader.left() / 3)
        .ok_or("more operations than the record can hold")?;
    let mut ops: Vec<LoggedOp> = Vec::with_capacity(count);
    for _ in 0..count {
        let flags = reader.u8()?;
        if flags & !KNOWN_FLAGS != 0 {
            return Err("an operation's flags have unknown bits set");
        }
        let kind = kind_of(flags & KIND_BITS).ok_or("an operation of unknown kind")?;
        let previous = ops.last();
        let family = if flags & SAME_FAMILY != 0 {
            previous
                .map(|op| op.family)
                .ok_or("the first operation shares a family")?
        } else {
            u32::try_from(reader.varint()?).map_err(|_| "a family id does not fit in 32 bits")?
        };
        let timestamp = match flags & OWN_TIMESTAMP {
            0 => batch_timestamp,
            _ => reader.varint()?,
        };
        let row = if flags & SAME_ROW != 0 {
            previous
                .map(|op| op.row.clone())
                .ok_or("the first operation shares a row")?
        } else {
            reader.bytes()?
        };
        let column = reader.bytes()?;
        let value = reader.bytes()?;
        ops.push(LoggedOp {
            family,
            kind,
            timestamp,
            row,
            column,
            value,
        });
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op(
        family: u32,
        kind: Kind,
        timestamp: u64,
        row: &'static [u8],
        column: &'static [u8],
        value: &'static [u8],
    ) -> LoggedOp {
        LoggedOp {
            family,
            kind,
            timestamp,
            row: Bytes::from_static(row),
            column: Bytes::from_static(column),
            value: Bytes::from_static(value),
        }
    }

    /// Two cells of one row at the batch's time, then a row tombstone of
    /// another family with its own timestamp.
    fn three_ops() -> Vec<LoggedOp> {
        vec![
            op(2, Kind::Put, 99, b"row", b"col", b"value"),
            op(2, Kind::DeleteCell, 99, b"row", b"c2", b""),
            op(1, Kind::DeleteRow, 100, b"r2", b"", b""),
        ]
    }

    #[test]
    fn first_format_round_trips_through_its_log_encoding() {
        let ops = three_ops();
        let mut out = Vec::new();
        encode_v1(41, &ops, &mut out);
        assert_eq!(
            out.len(),
            8 + 4 + (4 + 1 + 8 + 12 + 3 + 3 + 5) + (4 + 1 + 8 + 12 + 3 + 2) + (4 + 1 + 8 + 12 + 2)
        );
        assert_eq!(decode(&Bytes::from(out)), Ok((41, ops)));
    }

    #[test]
    fn compact_format_writes_a_shared_row_family_and_timestamp_once() {
        let ops = three_ops();
        let mut out = Vec::new();
        encode(41, &ops, &mut out);
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[41, 0, 0, 0, 0, 0, 0, 2][..], // first sequence, format 2 in the top byte
            &[3, 99],                       // count, the batch's timestamp
            &[0x01, 2, 3], b"row", &[3], b"col", &[5], b"value", // put: family 2, row
            &[0x0e, 2], b"c2", &[0],        // delete cell: same family, same row
            &[0x13, 1, 100, 2], b"r2", &[0, 0], // delete row: family 1, own timestamp
        ]
        .concat();
        assert_eq!(out, expected);
        assert_eq!(decode(&Bytes::from(out)), Ok((41, ops)));
    }

    #[test]
    fn the_cells_of_a_row_put_one_after_another_store_their_row_once() {
        let mut batch = WriteBatch::new();
        batch
            .put("f", "row", "a", "1")
            .put("f", "row", "b", "2")
            .delete("f", "other", "c");
        batch.put("f", "row", "d", "3");
        let ops = batch.op_refs();
        let rows: Vec<&[u8]> = ops.iter().map(|op| op.row).collect();
        assert_eq!(rows, [&b"row"[..], b"row", b"other", b"row"]);
        // The second cell's row is the first's bytes; a row that comes back
        // after another one is stored again.
        assert!(std::ptr::eq(ops[0].row.as_ptr(), ops[1].row.as_ptr()));
        assert!(!std::ptr::eq(ops[1].row.as_ptr(), ops[3].row.as_ptr()));
        assert_eq!(batch.data.len(), "row".len() * 2 + "other".len() + 4 + 3);
        // Equal bytes are the same row wherever they lie.
        assert!(same_bytes(ops[1].row, ops[3].row));
        assert!(!same_bytes(ops[0].row, ops[2].row));
        assert!(same_bytes(b"", &ops[2].value[..0]));
    }

    #[test]
    fn a_shared_row_decodes_as_the_same_slice_of_the_payload() {
        let mut out = Vec::new();
        encode(7, &three_ops(), &mut out);
        let payload = Bytes::from(out);
        let (_, ops) = decode(&payload).expect("decode");
        assert_eq!(ops[0].row.as_ptr(), ops[1].row.as_ptr());
        assert!(payload.as_ptr_range().contains(&ops[0].row.as_ptr()));
    }

    #[test]
    fn varints_take_seven_bits_a_byte() {
        for (value, bytes) in [
            (0u64, vec![0u8]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (300, vec![0xac, 0x02]),
            (
                u64::MAX,
                vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            put_varint64(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            let payload = Bytes::from(out);
            let mut reader = Reader {
                payload: &payload,
                at: 0,
            };
            assert_eq!(reader.varint(), Ok(value));
            assert_eq!(reader.left(), 0);
        }
    }

    /// A compact payload of one put, with `edit` applied to its bytes.
    fn damaged(edit: impl FnOnce(&mut Vec<u8>)) -> std::result::Result<(u64, Vec<LoggedOp>), Malformed> {
        let mut out = Vec::new();
        encode(5, &[op(0, Kind::Put, 300, b"r", b"c", b"v")], &mut out);
        // 8 head | 1 count | 2 timestamp | flags, family | 1 r | 1 c | 1 v
        assert_eq!(out.len(), 8 + 1 + 2 + 2 + 2 + 2 + 2);
        edit(&mut out);
        decode(&Bytes::from(out))
    }

    #[test]
    fn malformed_compact_payloads_are_refused_with_a_reason() {
        type Edit = Box<dyn FnOnce(&mut Vec<u8>)>;
        let cases: [(&str, Edit, Malformed); 9] = [
            (
                "varint cut short",
                Box::new(|b| b.truncate(10)),
                "a varint is cut short by the end of the record",
            ),
            (
                "value cut short",
                Box::new(|b| b.truncate(b.len() - 1)),
                "a field runs past the end of the record",
            ),
            (
                "length past the end",
                Box::new(|b| b[15] = 9),
                "a field runs past the end of the record",
            ),
            (
                "trailing bytes",
                Box::new(|b| b.push(0)),
                "bytes after the last operation",
            ),
            (
                "unknown flag bit",
                Box::new(|b| b[11] |= 0x20),
                "an operation's flags have unknown bits set",
            ),
            (
                "kind 0",
                Box::new(|b| b[11] &= !KIND_BITS),
                "an operation of unknown kind",
            ),
            (
                "first op shares a row",
                Box::new(|b| b[11] |= SAME_ROW),
                "the first operation shares a row",
            ),
            (
                "count past the bytes",
                Box::new(|b| b[8] = 99),
                "more operations than the record can hold",
            ),
            (
                "unknown format",
                Box::new(|b| b[7] = 3),
                "unknown batch format (top byte of the first sequence number)",
            ),
        ];
        for (case, edit, why) in cases {
            assert_eq!(damaged(edit), Err(why), "{case}");
        }
        assert_eq!(
            damaged(|b| {
                b[11] |= SAME_FAMILY;
                b.remove(12);
            }),
            Err("the first operation shares a family")
        );
        assert_eq!(
            damaged(|b| b.splice(9..11, [0xff; 10].iter().copied()).for_each(drop)),
            Err("a varint does not fit in 64 bits")
        );
        assert!(damaged(|_| ()).is_ok());
    }

    /// Payloads that frame and parse, but that no write path ever writes:
    /// each is corruption (the checksum was good, so no torn write), with
    /// its reason, in both formats.
    #[test]
    fn batches_no_writer_writes_are_refused_in_both_formats() {
        type Case = (&'static str, u64, Vec<LoggedOp>, Malformed);
        let big = |n: usize| Bytes::from(vec![b'x'; n]);
        let mut long_row = op(1, Kind::Put, 5, b"r", b"c", b"v");
        long_row.row = big(MAX_ROW_BYTES + 1);
        let mut long_column = op(1, Kind::Put, 5, b"r", b"c", b"v");
        long_column.column = big(MAX_COLUMN_BYTES + 1);
        let mut long_value = op(1, Kind::Put, 5, b"r", b"c", b"v");
        long_value.value = big(MAX_VALUE_BYTES + 1);
        let cases: Vec<Case> = vec![
            ("no operations", 7, vec![], "a batch of no operations"),
            (
                "numbered past the largest sequence number",
                MAX_SEQUENCE,
                vec![
                    op(1, Kind::Put, 5, b"r", b"c1", b"v"),
                    op(1, Kind::Put, 5, b"r", b"c2", b"v"),
                ],
                "operations numbered past the largest sequence number",
            ),
            (
                "a row deletion that names a column",
                7,
                vec![op(1, Kind::DeleteRow, 5, b"r", b"c", b"")],
                "a row deletion names a column",
            ),
            (
                "a row deletion with a value",
                7,
                vec![op(1, Kind::DeleteRow, 5, b"r", b"", b"v")],
                "a deletion carries a value",
            ),
            (
                "a cell deletion with a value",
                7,
                vec![op(1, Kind::DeleteCell, 5, b"r", b"c", b"v")],
                "a deletion carries a value",
            ),
            (
                "a row over the limit",
                7,
                vec![long_row],
                "a row longer than a write may be",
            ),
            (
                "a column over the limit",
                7,
                vec![long_column],
                "a column longer than a write may be",
            ),
            (
                "a value over the limit",
                7,
                vec![long_value],
                "a value longer than a write may be",
            ),
        ];
        for (case, first, ops, why) in cases {
            let (mut compact, mut old) = (Vec::new(), Vec::new());
            encode(first, &ops, &mut compact);
            encode_v1(first, &ops, &mut old);
            assert_eq!(decode(&Bytes::from(compact)), Err(why), "{case}, compact format");
            assert_eq!(decode(&Bytes::from(old)), Err(why), "{case}, first format");
        }
    }

    /// The edges that are allowed: the last op numbered exactly
    /// `MAX_SEQUENCE`, parts exactly at the write path's limits, empty rows,
    /// columns and values, and a row deletion at the largest timestamp.
    #[test]
    fn batches_at_the_limits_round_trip_in_both_formats() {
        let mut at_limits = op(3, Kind::Put, u64::MAX, b"", b"", b"");
        at_limits.row = Bytes::from(vec![0xff; MAX_ROW_BYTES]);
        at_limits.column = Bytes::from(vec![0x00; MAX_COLUMN_BYTES]);
        at_limits.value = Bytes::from(vec![0x00; MAX_VALUE_BYTES]);
        let ops = vec![
            op(0, Kind::Put, 0, b"", b"", b""),
            at_limits,
            op(u32::MAX, Kind::DeleteRow, u64::MAX, b"\x00\xff", b"", b""),
        ];
        let first = MAX_SEQUENCE - 2;
        for encoder in [encode, encode_v1] {
            let mut out = Vec::new();
            encoder(first, &ops, &mut out);
            assert_eq!(decode(&Bytes::from(out)), Ok((first, ops.clone())));
        }
    }

    #[test]
    fn oversized_parts_are_refused() {
        let mut batch = WriteBatch::new();
        batch.put("f", vec![0u8; MAX_ROW_BYTES + 1], "c", "v");
        assert!(matches!(
            check_limits(&batch.op_refs()),
            Err(Error::TooLarge { what: "row", .. })
        ));
    }

    /// Ops as a write makes them: a few families, rows often repeated, most
    /// ops at the batch's time and some at their own, every kind, parts
    /// often empty.
    fn ops_strategy() -> impl Strategy<Value = Vec<LoggedOp>> {
        let part = |max: usize| {
            prop_oneof![Just(Vec::new()), proptest::collection::vec(any::<u8>(), 0..max)].prop_map(Bytes::from)
        };
        let rows = prop_oneof![
            Just(Bytes::from_static(b"row")),
            Just(Bytes::from_static(b"other")),
            Just(Bytes::new()),
            part(300)
        ];
        let family = prop_oneof![0u32..3, any::<u32>()];
        let kind = prop_oneof![Just(Kind::Put), Just(Kind::DeleteCell), Just(Kind::DeleteRow)];
        let timestamp = prop_oneof![3 => Just(1_700_000_000_000u64), 1 => any::<u64>()];
        // A deletion carries no value, a row deletion no column: the
        // write path never writes one that does (see `check_op`).
        let one = (family, kind, timestamp, rows, part(20), part(200)).prop_map(
            |(family, kind, timestamp, row, column, value)| LoggedOp {
                family,
                kind,
                timestamp,
                row,
                column: if kind == Kind::DeleteRow { Bytes::new() } else { column },
                value: if kind == Kind::Put { value } else { Bytes::new() },
            },
        );
        proptest::collection::vec(one, 1..40)
    }

    proptest! {
        #[test]
        fn compact_format_decodes_to_what_the_first_format_decodes_to(
            ops in ops_strategy(),
            first in prop_oneof![0..=MAX_SEQUENCE - 64, MAX_SEQUENCE - 64..=MAX_SEQUENCE],
        ) {
            let (mut compact, mut old) = (Vec::new(), Vec::new());
            encode(first, &ops, &mut compact);
            encode_v1(first, &ops, &mut old);
            let from_old = decode(&Bytes::from(old));
            if first + (ops.len() as u64 - 1) <= MAX_SEQUENCE {
                prop_assert_eq!(&from_old, &Ok((first, ops)));
            } else {
                prop_assert_eq!(&from_old, &Err("operations numbered past the largest sequence number"));
            }
            prop_assert_eq!(decode(&Bytes::from(compact)), from_old);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode(&Bytes::from(data));
        }

        #[test]
        fn decoding_arbitrary_bytes_after_either_format_head_never_panics(
            format in prop_oneof![Just(0u8), Just(FORMAT_V2)],
            data in proptest::collection::vec(any::<u8>(), 0..128),
        ) {
            let payload = [&[1, 0, 0, 0, 0, 0, 0, format][..], &data].concat();
            let _ = decode(&Bytes::from(payload));
        }

        #[test]
        fn every_cut_of_a_compact_payload_is_refused(ops in ops_strategy(), cut in any::<prop::sample::Index>()) {
            prop_assume!(!ops.is_empty());
            let mut out = Vec::new();
            encode(9, &ops, &mut out);
            out.truncate(cut.index(out.len()));
            prop_assert!(decode(&Bytes::from(out)).is_err());
        }
    }
}
