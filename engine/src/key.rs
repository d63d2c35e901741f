//! The internal key: one byte string whose plain byte order is the cell order.
//!
//! Every entry in a memtable or a table file is stored under a key built from
//! `(row, column, timestamp, sequence, kind)`:
//!
//! ```text
//! escaped(row) 00 01 | escaped(column) 00 01 | !timestamp (8, BE) | !(sequence << 8 | kind) (8, BE)
//!                    | 00 00   (instead of the column, for a row tombstone)
//! ```
//!
//! * `escaped` writes every `00` byte as `00 FF`, so the terminator `00 01` can
//!   never appear inside a row or column, and a row that is a prefix of another
//!   (`ab` before `abc`) sorts first: `00 01` is smaller than any data byte or
//!   escaped zero.
//! * A row tombstone uses `00 00` where a column would go, which sorts before
//!   every column of its row (even the empty column, `00 01`). A reader walking a
//!   row therefore meets the row's deletions before its cells.
//! * The timestamp and the sequence number are stored inverted (`!x`), so the
//!   newest version of a cell sorts first and a point read can stop at the first
//!   entry it finds.
//!
//! Because the whole order is byte order, table files, merge iterators and
//! binary searches compare plain bytes and need no custom comparator: the
//! encoding *is* the schema (the first rule of row-key design: encode for
//! byte order).
//!
//! The price is a few bytes per cell: 2 + 2 terminator bytes, 16 bytes of
//! timestamp and sequence, plus one byte per zero byte in the row or column.
//! Table blocks win most of it back: prefix compression removes the repeated
//! row, and the 16-byte suffix is a *key trailer* stored as XORs against the
//! previous key's (`cellar_sstable::BlockBuilder::with_key_trailer`), 1 to 3
//! bytes when neighbouring cells were written close together or compacted.

/// Bytes after the row and column that every key carries: timestamp and sequence/kind.
pub const SUFFIX_LEN: usize = 16;

/// Largest sequence number: sequence numbers share 8 bytes with the kind byte.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

const TERMINATOR: [u8; 2] = [0x00, 0x01];
const ROW_MARKER: [u8; 2] = [0x00, 0x00];

/// What an entry says about its cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A value.
    Put,
    /// A cell tombstone: hides this column's versions older than itself.
    DeleteCell,
    /// A row tombstone: hides every column of the row older than itself.
    DeleteRow,
}

impl Kind {
    fn to_byte(self) -> u8 {
        match self {
            Kind::Put => 1,
            Kind::DeleteCell => 2,
            Kind::DeleteRow => 3,
        }
    }

    fn from_byte(byte: u8) -> Option<Kind> {
        match byte {
            1 => Some(Kind::Put),
            2 => Some(Kind::DeleteCell),
            3 => Some(Kind::DeleteRow),
            _ => None,
        }
    }

    /// Whether this entry is a deletion of some kind.
    pub fn is_tombstone(self) -> bool {
        self != Kind::Put
    }
}

/// An internal key taken apart. Borrowed from the encoded bytes where possible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedKey {
    /// The row, unescaped.
    pub row: Vec<u8>,
    /// The column, unescaped (empty for a row tombstone).
    pub column: Vec<u8>,
    /// The cell's timestamp.
    pub timestamp: u64,
    /// The write's sequence number.
    pub sequence: u64,
    /// What the entry is.
    pub kind: Kind,
}

/// Appends `bytes` with every `00` written as `00 FF`.
pub fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    // A row or column with no zero in it (most of them) is one copy, not a
    // push per byte.
    if !has_zero(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    out.reserve(escaped_len(bytes));
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
}

/// The encoded row prefix `escaped(row) 00 01`: the start of every key of the
/// row, and the filter key given to table files' bloom filters.
pub fn row_prefix(row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + 2);
    row_prefix_into(row, &mut out);
    out
}

/// Appends the encoded row prefix `escaped(row) 00 01` to `out`.
pub fn row_prefix_into(row: &[u8], out: &mut Vec<u8>) {
    escape_into(row, out);
    out.extend_from_slice(&TERMINATOR);
}

/// The prefix shared by every version of one cell: `escaped(row) 00 01 escaped(column) 00 01`.
pub fn cell_prefix(row: &[u8], column: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + column.len() + 4 + SUFFIX_LEN);
    escape_into(row, &mut out);
    out.extend_from_slice(&TERMINATOR);
    escape_into(column, &mut out);
    out.extend_from_slice(&TERMINATOR);
    out
}

/// The prefix shared by the row tombstones of a row: `escaped(row) 00 01 00 00`.
pub fn row_tombstone_prefix(row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(escaped_len(row) + 4);
    escape_into(row, &mut out);
    out.extend_from_slice(&TERMINATOR);
    out.extend_from_slice(&ROW_MARKER);
    out
}

/// Appends the 16-byte suffix: inverted timestamp and inverted sequence/kind.
pub fn push_suffix(out: &mut Vec<u8>, timestamp: u64, sequence: u64, kind: Kind) {
    out.extend_from_slice(&(!timestamp).to_be_bytes());
    let tag = (sequence.min(MAX_SEQUENCE) << 8) | u64::from(kind.to_byte());
    out.extend_from_slice(&(!tag).to_be_bytes());
}

/// Encodes a complete internal key.
pub fn encode(row: &[u8], column: &[u8], timestamp: u64, sequence: u64, kind: Kind) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(row, column, kind));
    encode_into(&mut out, row, column, timestamp, sequence, kind);
    out
}

/// Appends a complete internal key to `out`.
pub fn encode_into(out: &mut Vec<u8>, row: &[u8], column: &[u8], timestamp: u64, sequence: u64, kind: Kind) {
    row_prefix_into(row, out);
    encode_after_row_into(out, column, timestamp, sequence, kind);
}

/// Appends the rest of an internal key to `out`, which holds the row prefix
/// (`escaped(row) 00 01`, see [`row_prefix`]): a writer putting several cells
/// of one row encodes the row once.
pub fn encode_after_row_into(out: &mut Vec<u8>, column: &[u8], timestamp: u64, sequence: u64, kind: Kind) {
    if kind == Kind::DeleteRow {
        out.extend_from_slice(&ROW_MARKER);
    } else {
        escape_into(column, out);
        out.extend_from_slice(&TERMINATOR);
    }
    push_suffix(out, timestamp, sequence, kind);
}

/// Exact length of the encoded key of `(row, column)` for an entry of `kind`,
/// so a buffer can be allocated once at its final size.
pub fn encoded_len(row: &[u8], column: &[u8], kind: Kind) -> usize {
    let column_part = if kind == Kind::DeleteRow {
        ROW_MARKER.len()
    } else {
        escaped_len(column) + TERMINATOR.len()
    };
    escaped_len(row) + TERMINATOR.len() + column_part + SUFFIX_LEN
}

/// Length of `bytes` once escaped (every zero byte takes two).
pub fn escaped_len(bytes: &[u8]) -> usize {
    bytes.len() + bytes.iter().filter(|&&b| b == 0).count()
}

/// Copies `key` into `out` with its sequence number set to 0 (the kind stays).
///
/// A bottommost compaction writes every key this way (RocksDB does the same):
/// no reader of its output can need the order of writes any more, and in a
/// table block a zero sequence costs one byte instead of eight (see
/// `cellar_sstable::BlockBuilder::with_key_trailer`). A key too short to have
/// a suffix is copied unchanged.
pub fn zero_sequence_into(key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(key);
    // The tag is `!(sequence << 8 | kind)`: its first 7 bytes hold the
    // inverted sequence, so a zero sequence is seven 0xFF bytes.
    let tag_start = out.len().saturating_sub(8);
    if out.len() >= SUFFIX_LEN {
        if let Some(sequence_bytes) = out.get_mut(tag_start..tag_start + 7) {
            sequence_bytes.fill(0xFF);
        }
    }
}

/// Copies the key of a put into `out` as the key of a cell deletion with the
/// same timestamp and sequence number: the same cell, the same place in key
/// order (no other entry has that timestamp and sequence), only the kind
/// byte differs. A compaction writes an expired version this way where it
/// may not drop it (see `crate::compaction::Compactor`). A key too short to
/// have a suffix is copied unchanged.
pub fn cell_deletion_into(put_key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(put_key);
    // The tag is `!(sequence << 8 | kind)`: its last byte is the inverted kind.
    if out.len() >= SUFFIX_LEN {
        if let Some(kind) = out.last_mut() {
            *kind = !Kind::DeleteCell.to_byte();
        }
    }
}

/// Timestamp, sequence and kind of an encoded key, read from its fixed suffix.
pub fn suffix(key: &[u8]) -> Option<(u64, u64, Kind)> {
    let at = key.len().checked_sub(SUFFIX_LEN)?;
    let ts_bytes: [u8; 8] = key.get(at..at + 8)?.try_into().ok()?;
    let tag_bytes: [u8; 8] = key.get(at + 8..)?.try_into().ok()?;
    let tag = !u64::from_be_bytes(tag_bytes);
    let kind = Kind::from_byte((tag & 0xFF) as u8)?;
    Some((!u64::from_be_bytes(ts_bytes), tag >> 8, kind))
}

/// The part of a key before its suffix: the cell prefix (or row-tombstone prefix).
pub fn prefix(key: &[u8]) -> &[u8] {
    key.get(..key.len().saturating_sub(SUFFIX_LEN)).unwrap_or(&[])
}

/// The encoded row prefix (`escaped(row) 00 01`) at the start of a key.
pub fn row_part(key: &[u8]) -> Option<&[u8]> {
    let end = find_terminator(key, 0)?;
    key.get(..end + 2)
}

/// Position of the first unescaped `00 01` or `00 00` at or after `from`.
fn find_terminator(key: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        // Jump to the next zero byte: only zeros can start a terminator.
        i += first_zero(key.get(i..)?)?;
        match key.get(i + 1) {
            Some(0xFF) => i += 2,
            Some(_) => return Some(i),
            None => return None,
        }
    }
}

/// Whether `bytes` holds a zero byte: whether a row or column needs
/// escaping, or an escaped one unescaping. Most are short names with no
/// zero, asked about once per cell a read returns, so a short one is looked
/// at as two overlapping 4-byte words (the test of [`first_zero`], on 32
/// bits) instead of byte by byte.
#[inline]
pub fn has_zero(bytes: &[u8]) -> bool {
    const ONES: u32 = 0x0101_0101;
    const HIGHS: u32 = 0x8080_8080;
    let zero_in = |word: &[u8; 4]| {
        let w = u32::from_le_bytes(*word);
        w.wrapping_sub(ONES) & !w & HIGHS != 0
    };
    match (bytes.len(), bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        (4..=8, Some(first), Some(last)) => zero_in(first) || zero_in(last),
        (0..=3, _, _) => bytes.contains(&0),
        _ => first_zero(bytes).is_some(),
    }
}

/// Position of the first zero byte of `bytes`, eight bytes at a time.
///
/// Every flush and compaction finds each entry's row this way, so the scan
/// is worth a word at a time: in a word `w`, `(w - 0x0101..01) & !w &
/// 0x8080..80` flags every zero byte, and possibly bytes after one (a borrow
/// runs upward), never one before it; read little-endian, the lowest flag
/// is the first zero in memory. The last bytes (fewer than eight) are
/// looked at one by one.
fn first_zero(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let Ok(word) = <[u8; 8]>::try_from(chunk).map(u64::from_le_bytes) else {
            break;
        };
        let zeros = word.wrapping_sub(ONES) & !word & HIGHS;
        if zeros != 0 {
            return Some(at + zeros.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    bytes.get(at..)?.iter().position(|&b| b == 0).map(|i| at + i)
}

/// `bytes` unescaped, as a new buffer (one allocation, a plain copy when
/// there is no zero byte to unescape).
pub(crate) fn unescaped(bytes: &[u8]) -> bytes::Bytes {
    if has_zero(bytes) {
        bytes::Bytes::from(unescape(bytes))
    } else {
        bytes::Bytes::copy_from_slice(bytes)
    }
}

fn unescape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    unescape_into(bytes, &mut out);
    out
}

/// Appends `bytes` with every `00 FF` written back as `00`.
pub(crate) fn unescape_into(bytes: &[u8], out: &mut Vec<u8>) {
    let mut rest = bytes;
    // Copy runs up to and including each zero byte, then skip its 0xFF.
    while let Some(zero) = first_zero(rest) {
        out.extend_from_slice(rest.get(..=zero).unwrap_or_default());
        rest = rest.get(zero + 2..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
}

/// Decodes a whole internal key; `None` if it is not one.
pub fn parse(key: &[u8]) -> Option<ParsedKey> {
    let (timestamp, sequence, kind) = suffix(key)?;
    let body = prefix(key);
    let row_end = find_terminator(body, 0)?;
    if body.get(row_end + 1) != Some(&0x01) {
        return None;
    }
    let row = unescape(body.get(..row_end)?);
    let rest = body.get(row_end + 2..)?;
    let column = if kind == Kind::DeleteRow {
        if rest != ROW_MARKER {
            return None;
        }
        Vec::new()
    } else {
        let col_end = find_terminator(rest, 0)?;
        if col_end + 2 != rest.len() || rest.get(col_end + 1) != Some(&0x01) {
            return None;
        }
        unescape(rest.get(..col_end)?)
    };
    Some(ParsedKey {
        row,
        column,
        timestamp,
        sequence,
        kind,
    })
}

/// The smallest byte string greater than every string that starts with `prefix`,
/// or `None` when there is none (the prefix is all `FF`). Used as the exclusive
/// end of a prefix scan.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    successor_into(prefix, &mut out).then_some(out)
}

/// [`prefix_successor`] written into `out` (cleared first), so a caller that
/// needs many reuses one buffer; false, with `out` empty, when there is none.
pub fn successor_into(prefix: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(prefix);
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn key_layout_is_exactly_as_documented() {
        let key = encode(b"r\0", b"c", 5, 7, Kind::Put);
        let mut expected = vec![b'r', 0x00, 0xFF, 0x00, 0x01, b'c', 0x00, 0x01];
        expected.extend_from_slice(&(!5u64).to_be_bytes());
        expected.extend_from_slice(&(!((7u64 << 8) | 1)).to_be_bytes());
        assert_eq!(key, expected);
    }

    #[test]
    fn zeroing_the_sequence_keeps_everything_else() {
        let mut out = Vec::new();
        for kind in [Kind::Put, Kind::DeleteCell, Kind::DeleteRow] {
            zero_sequence_into(&encode(b"r", b"c", 5, 123_456, kind), &mut out);
            assert_eq!(out, encode(b"r", b"c", 5, 0, kind));
        }
    }

    #[test]
    fn a_key_encoded_after_its_row_prefix_is_the_whole_key() {
        for kind in [Kind::Put, Kind::DeleteCell, Kind::DeleteRow] {
            let mut out = Vec::new();
            row_prefix_into(b"r\0w", &mut out);
            assert_eq!(out, row_prefix(b"r\0w"));
            encode_after_row_into(&mut out, b"\0c", 5, 7, kind);
            assert_eq!(out, encode(b"r\0w", b"\0c", 5, 7, kind));
        }
    }

    #[test]
    fn encoded_len_is_exact() {
        for (row, column, kind) in [
            (&b"r\0w"[..], &b"\0c"[..], Kind::Put),
            (b"row", b"", Kind::DeleteCell),
            (b"\0\0", b"ignored", Kind::DeleteRow),
        ] {
            assert_eq!(encoded_len(row, column, kind), encode(row, column, 1, 1, kind).len());
        }
    }

    #[test]
    fn row_tombstone_sorts_before_every_column_of_its_row() {
        let tomb = encode(b"row", b"", 1, 1, Kind::DeleteRow);
        for column in [&b""[..], b"\0", b"a", b"\xff"] {
            assert!(tomb < encode(b"row", column, u64::MAX, MAX_SEQUENCE, Kind::Put));
        }
        assert!(tomb > encode(b"ro", b"zzz", 0, 0, Kind::Put));
    }

    #[test]
    fn newer_versions_sort_first() {
        let old = encode(b"r", b"c", 10, 1, Kind::Put);
        let new = encode(b"r", b"c", 11, 0, Kind::Put);
        let same_ts_later_write = encode(b"r", b"c", 10, 2, Kind::Put);
        assert!(new < same_ts_later_write);
        assert!(same_ts_later_write < old);
    }

    #[test]
    fn parse_returns_what_encode_wrote() {
        let key = encode(b"a\0b", b"\0\0", 42, 9, Kind::DeleteCell);
        let parsed = parse(&key).expect("valid key");
        assert_eq!(parsed.row, b"a\0b");
        assert_eq!(parsed.column, b"\0\0");
        assert_eq!(
            (parsed.timestamp, parsed.sequence, parsed.kind),
            (42, 9, Kind::DeleteCell)
        );
        assert_eq!(row_part(&key), Some(&row_prefix(b"a\0b")[..]));
    }

    #[test]
    fn garbage_is_not_a_key() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(&[0u8; 16]), None);
        assert_eq!(parse(&[1u8; 40]), None);
    }

    #[test]
    fn prefix_successor_bounds_a_prefix() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xFFu8), any::<u8>()], 0..6)
    }

    proptest! {
        #[test]
        fn byte_order_equals_cell_order(
            a in (bytes(), bytes(), any::<u64>(), 0..MAX_SEQUENCE),
            b in (bytes(), bytes(), any::<u64>(), 0..MAX_SEQUENCE),
        ) {
            let ka = encode(&a.0, &a.1, a.2, a.3, Kind::Put);
            let kb = encode(&b.0, &b.1, b.2, b.3, Kind::Put);
            // Cell order: row ascending, column ascending, timestamp descending, sequence descending.
            let order = a.0.cmp(&b.0)
                .then(a.1.cmp(&b.1))
                .then(b.2.cmp(&a.2))
                .then(b.3.cmp(&a.3));
            prop_assert_eq!(ka.cmp(&kb), order);
            let parsed = parse(&ka).expect("round trip");
            prop_assert_eq!((parsed.row, parsed.column, parsed.timestamp, parsed.sequence), (a.0, a.1, a.2, a.3));
        }

        #[test]
        fn first_zero_and_has_zero_find_the_zero_bytes(data in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0x80u8), Just(0xFFu8), any::<u8>()], 0..40)) {
            prop_assert_eq!(first_zero(&data), data.iter().position(|&b| b == 0));
            prop_assert_eq!(has_zero(&data), data.contains(&0));
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse(&data);
            let _ = row_part(&data);
        }
    }
}
