//! Write batches: several puts and deletes, across families, applied atomically.
//!
//! A batch is one record in the write-ahead log, so after a crash either all of
//! it is replayed or none of it. Its operations take consecutive sequence
//! numbers and become visible to readers together.
//!
//! Log record payload of a batch (all integers little-endian):
//!
//! ```text
//! first_sequence u64 | count u32 | op * count
//! op = family_id u32 | kind u8 | timestamp u64 | row_len u32 | row | column_len u32 | column | value_len u32 | value
//! ```

use std::ops::Range;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::key::Kind;
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
        let mut append = |bytes: &[u8]| {
            let start = self.data.len();
            self.data.extend_from_slice(bytes);
            start..self.data.len()
        };
        let (row, column, value) = (append(row), append(column), append(value));
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

/// Checks every operation against the documented size limits.
pub(crate) fn check_limits(ops: &[OpRef<'_>]) -> Result<()> {
    for op in ops {
        for (what, len, limit) in [
            ("row", op.row.len(), MAX_ROW_BYTES),
            ("column", op.column.len(), MAX_COLUMN_BYTES),
            ("value", op.value.len(), MAX_VALUE_BYTES),
        ] {
            if len > limit {
                return Err(Error::TooLarge { what, len, limit });
            }
        }
    }
    Ok(())
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

/// Starts a batch's log record payload: first sequence number and op count.
pub(crate) fn encode_header(first_sequence: u64, count: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&first_sequence.to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
}

/// Appends one operation to a batch's log record payload.
pub(crate) fn encode_op(
    family: u32,
    kind: Kind,
    timestamp: u64,
    row: &[u8],
    column: &[u8],
    value: &[u8],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&family.to_le_bytes());
    out.push(kind_byte(kind));
    out.extend_from_slice(&timestamp.to_le_bytes());
    for part in [row, column, value] {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
}

/// Encodes a batch as one log record payload.
#[cfg(test)]
fn encode(first_sequence: u64, ops: &[LoggedOp], out: &mut Vec<u8>) {
    encode_header(first_sequence, ops.len(), out);
    for op in ops {
        encode_op(op.family, op.kind, op.timestamp, &op.row, &op.column, &op.value, out);
    }
}

/// Decodes a log record payload; `None` if the bytes are not a batch.
/// Row, column and value are zero-copy slices of `payload`.
pub(crate) fn decode(payload: &Bytes) -> Option<(u64, Vec<LoggedOp>)> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<Bytes> {
        let end = at.checked_add(n)?;
        if end > payload.len() {
            return None;
        }
        let out = payload.slice(at..end);
        at = end;
        Some(out)
    };
    let first = u64::from_le_bytes(take(8)?.as_ref().try_into().ok()?);
    let count = u32::from_le_bytes(take(4)?.as_ref().try_into().ok()?);
    let mut ops = Vec::with_capacity((count as usize).min(1 << 16));
    for _ in 0..count {
        let family = u32::from_le_bytes(take(4)?.as_ref().try_into().ok()?);
        let kind = match take(1)?.first()? {
            1 => Kind::Put,
            2 => Kind::DeleteCell,
            3 => Kind::DeleteRow,
            _ => return None,
        };
        let timestamp = u64::from_le_bytes(take(8)?.as_ref().try_into().ok()?);
        let mut parts = [Bytes::new(), Bytes::new(), Bytes::new()];
        for part in &mut parts {
            let len = u32::from_le_bytes(take(4)?.as_ref().try_into().ok()?) as usize;
            *part = take(len)?;
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
    if at != payload.len() {
        return None;
    }
    Some((first, ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn batch_round_trips_through_its_log_encoding() {
        let ops = vec![
            LoggedOp {
                family: 2,
                kind: Kind::Put,
                timestamp: 99,
                row: Bytes::from_static(b"row"),
                column: Bytes::from_static(b"col"),
                value: Bytes::from_static(b"value"),
            },
            LoggedOp {
                family: 1,
                kind: Kind::DeleteRow,
                timestamp: 100,
                row: Bytes::from_static(b"r2"),
                column: Bytes::new(),
                value: Bytes::new(),
            },
        ];
        let mut out = Vec::new();
        encode(41, &ops, &mut out);
        assert_eq!(out.len(), 8 + 4 + (4 + 1 + 8 + 12 + 3 + 3 + 5) + (4 + 1 + 8 + 12 + 2));
        assert_eq!(decode(&Bytes::from(out)), Some((41, ops)));
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

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode(&Bytes::from(data));
        }
    }
}
