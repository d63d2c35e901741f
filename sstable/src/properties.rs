//! Table properties: what a table holds, known without reading its data.
//!
//! The builder counts as it writes (entries, tombstones, key range, bytes by
//! block kind, key bytes before and after prefix compression) and stores the
//! totals in a small block of their own. The engine uses them to choose files
//! for compaction and to report space amplification; a learner uses them to
//! see what prefix compression and the filter cost or saved.
//!
//! ```text
//! properties = entries | tombstones | data_blocks | data_bytes | index_bytes
//!            | filter_bytes | raw_key_bytes | raw_value_bytes | stored_key_bytes
//!            | distinct_filter_keys | key_trailer_words | tail_copies  (each a varint u64)
//!            | first_key_len: varint | first_key | last_key_len: varint | last_key
//!            | file_size: u64 LE
//! ```
//!
//! Format version 1 had neither `key_trailer_words` nor `tail_copies` (its
//! blocks are plain: both 0).
//!
//! `file_size` is fixed-width because the block stores the size of the file
//! that contains it: with a fixed width the builder knows the block's own size
//! before it knows the value.

use std::path::Path;

use crate::coding::{get_fixed64, get_varint64, put_varint64};
use crate::error::{Error, Result};

/// Number of varint counters at the start of the block.
const COUNTERS: usize = 12;

/// Counts and sizes of one table file.
///
/// Sizes of blocks include their 5-byte trailers, so
/// `data_bytes + filter_bytes + index_bytes + properties block + 72 = file_size`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Number of entries.
    pub entries: u64,
    /// Entries the caller marked as tombstones.
    pub tombstones: u64,
    /// The smallest key (empty if the table is empty).
    pub first_key: Vec<u8>,
    /// The largest key (empty if the table is empty).
    pub last_key: Vec<u8>,
    /// Number of data blocks.
    pub data_blocks: u64,
    /// Bytes of all data blocks, trailers included.
    pub data_bytes: u64,
    /// Bytes of the index block, trailer included.
    pub index_bytes: u64,
    /// Bytes of the filter block, trailer included (0 without a filter).
    pub filter_bytes: u64,
    /// Sum of the full lengths of all keys.
    pub raw_key_bytes: u64,
    /// Sum of the lengths of all values.
    pub raw_value_bytes: u64,
    /// Key bytes actually written: what prefix compression and tail copies
    /// left of each key, copy references and key trailers as stored.
    pub stored_key_bytes: u64,
    /// Number of filter keys hashed into the filter (consecutive repeats once).
    pub distinct_filter_keys: u64,
    /// Words of key trailer in data blocks ([`crate::TableOptions::key_trailer_words`]).
    pub key_trailer_words: u64,
    /// 1 if data block entries may copy an earlier key's tail
    /// ([`crate::TableOptions::tail_copies`]), else 0.
    pub tail_copies: u64,
    /// Size of the whole file in bytes.
    pub file_size: u64,
}

impl TableProperties {
    /// The properties block's contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        for value in self.counters() {
            put_varint64(&mut buf, value);
        }
        for key in [&self.first_key, &self.last_key] {
            put_varint64(&mut buf, key.len() as u64);
            buf.extend_from_slice(key);
        }
        buf.extend_from_slice(&self.file_size.to_le_bytes());
        buf
    }

    /// Decodes a properties block of format `version` read from `file` at
    /// byte `offset`; any malformed or trailing byte is [`Error::Corruption`].
    pub fn decode(bytes: &[u8], version: u32, file: &Path, offset: u64) -> Result<TableProperties> {
        let mut reader = Reader { bytes, at: 0 };
        let bad = |at: usize, what: &str| Error::Corruption {
            file: file.to_path_buf(),
            offset: offset + at as u64,
            what: format!("bad properties block: {what}"),
        };
        let mut counters = [0u64; COUNTERS];
        let stored = if version < 2 { COUNTERS - 2 } else { COUNTERS };
        for counter in counters.iter_mut().take(stored) {
            *counter = reader.varint().ok_or_else(|| bad(reader.at, "counter"))?;
        }
        let first_key = reader.key().ok_or_else(|| bad(reader.at, "first key"))?;
        let last_key = reader.key().ok_or_else(|| bad(reader.at, "last key"))?;
        let file_size = get_fixed64(bytes, reader.at).ok_or_else(|| bad(reader.at, "file size"))?;
        if reader.at + 8 != bytes.len() {
            return Err(bad(reader.at + 8, "trailing bytes"));
        }
        let [entries, tombstones, data_blocks, data_bytes, index_bytes, filter_bytes, raw_key_bytes, raw_value_bytes, stored_key_bytes, distinct_filter_keys, key_trailer_words, tail_copies] =
            counters;
        Ok(TableProperties {
            entries,
            tombstones,
            first_key,
            last_key,
            data_blocks,
            data_bytes,
            index_bytes,
            filter_bytes,
            raw_key_bytes,
            raw_value_bytes,
            stored_key_bytes,
            distinct_filter_keys,
            key_trailer_words,
            tail_copies,
            file_size,
        })
    }

    /// The varint counters, in their order on disk.
    fn counters(&self) -> [u64; COUNTERS] {
        [
            self.entries,
            self.tombstones,
            self.data_blocks,
            self.data_bytes,
            self.index_bytes,
            self.filter_bytes,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.stored_key_bytes,
            self.distinct_filter_keys,
            self.key_trailer_words,
            self.tail_copies,
        ]
    }
}

/// A cursor over the properties block.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// A varint; on failure the cursor does not move.
    fn varint(&mut self) -> Option<u64> {
        let (value, len) = get_varint64(self.bytes.get(self.at..)?)?;
        self.at += len;
        Some(value)
    }

    /// A length-prefixed key; on failure the cursor stays at the length.
    fn key(&mut self) -> Option<Vec<u8>> {
        let (len, n) = get_varint64(self.bytes.get(self.at..)?)?;
        let start = self.at + n;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        let key = self.bytes.get(start..end)?;
        self.at = end;
        Some(key.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FORMAT_VERSION;

    fn sample() -> TableProperties {
        TableProperties {
            entries: 3,
            tombstones: 1,
            first_key: b"apple".to_vec(),
            last_key: b"cherry".to_vec(),
            data_blocks: 1,
            data_bytes: 300,
            index_bytes: 20,
            filter_bytes: 14,
            raw_key_bytes: 17,
            raw_value_bytes: 200,
            stored_key_bytes: 15,
            distinct_filter_keys: 3,
            key_trailer_words: 2,
            tail_copies: 1,
            file_size: 460,
        }
    }

    #[test]
    fn properties_round_trip() -> Result<()> {
        let bytes = sample().encode();
        // 12 counters (300 and 200 take 2 bytes each) + 1 + 5 + 1 + 6 + 8.
        assert_eq!(bytes.len(), 14 + 6 + 7 + 8);
        assert_eq!(
            TableProperties::decode(&bytes, FORMAT_VERSION, Path::new("t.sst"), 0)?,
            sample()
        );
        Ok(())
    }

    #[test]
    fn empty_table_properties_round_trip() -> Result<()> {
        let empty = TableProperties::default();
        assert_eq!(empty.encode().len(), 12 + 2 + 8);
        assert_eq!(
            TableProperties::decode(&empty.encode(), FORMAT_VERSION, Path::new("t.sst"), 0)?,
            empty
        );
        Ok(())
    }

    #[test]
    fn truncated_properties_are_corruption() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            let result = TableProperties::decode(&bytes[..len], FORMAT_VERSION, Path::new("t.sst"), 100);
            assert!(matches!(result, Err(Error::Corruption { .. })), "length {len}");
        }
    }

    #[test]
    fn trailing_bytes_are_corruption_at_their_offset() {
        let mut bytes = sample().encode();
        bytes.push(0);
        assert!(matches!(
            TableProperties::decode(&bytes, FORMAT_VERSION, Path::new("t.sst"), 100),
            Err(Error::Corruption { offset: 135, .. })
        ));
    }

    #[test]
    fn key_length_past_the_block_is_corruption() {
        // Twelve zero counters, then a first key claiming 1,000 bytes.
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(&[0xe8, 0x07]);
        assert!(matches!(
            TableProperties::decode(&bytes, FORMAT_VERSION, Path::new("t.sst"), 0),
            Err(Error::Corruption { offset: 12, .. })
        ));
    }

    #[test]
    fn version_1_properties_have_no_key_trailer() -> Result<()> {
        let v2 = sample().encode();
        // A version-1 block: the same, without the last two counters (one byte each).
        let mut v1 = v2[..12].to_vec();
        v1.extend_from_slice(&v2[14..]);
        let decoded = TableProperties::decode(&v1, 1, Path::new("t.sst"), 0)?;
        let expected = TableProperties {
            key_trailer_words: 0,
            tail_copies: 0,
            ..sample()
        };
        assert_eq!(decoded, expected);
        Ok(())
    }
}
