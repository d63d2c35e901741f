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
//! blocks are plain: both 0). Version 3 (a table built with compression)
//! adds four counters after `tail_copies`:
//!
//! ```text
//!            | compression | compression_level | compressed_blocks | uncompressed_data_bytes
//! ```
//!
//! `compression` is the codec the table's builder used (0 none, 1 LZ4,
//! 2 Zstandard) and `compression_level` its level (Zstandard's; 0 otherwise);
//! `compressed_blocks` counts the data blocks stored compressed (the others
//! saved less than 1/8 and are raw) and `uncompressed_data_bytes` is what
//! `data_bytes` would be with every block raw. A table of version 1 or 2
//! has no compression: read as 0, 0, 0 and `data_bytes`.
//!
//! `file_size` is fixed-width because the block stores the size of the file
//! that contains it: with a fixed width the builder knows the block's own size
//! before it knows the value.

use std::path::Path;

use crate::coding::{get_fixed64, get_varint64, put_varint64};
use crate::compression::Compression;
use crate::error::{Error, Result};
use crate::format::{FORMAT_VERSION, UNCOMPRESSED_FORMAT_VERSION};

/// Number of varint counters at the start of the block (version 3).
const COUNTERS: usize = 16;

/// The counters of each format version (1, 2, 3).
fn counters_in(version: u32) -> usize {
    match version {
        1 => 10,
        2 => 12,
        _ => COUNTERS,
    }
}

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
    /// How the data blocks were compressed (the builder's option; each block
    /// may still be stored raw, see `compressed_blocks`).
    pub compression: Compression,
    /// Data blocks stored compressed.
    pub compressed_blocks: u64,
    /// `data_bytes` as it would be with every block stored raw (trailers
    /// included); equal to `data_bytes` in a table without compression.
    pub uncompressed_data_bytes: u64,
    /// Size of the whole file in bytes.
    pub file_size: u64,
}

impl TableProperties {
    /// The format version of a table with these properties: 3 with
    /// compression, else 2 (see [`crate::FORMAT_VERSION`]).
    pub fn format_version(&self) -> u32 {
        match self.compression {
            Compression::None => UNCOMPRESSED_FORMAT_VERSION,
            _ => FORMAT_VERSION,
        }
    }

    /// The properties block's contents, in [`format_version`](Self::format_version).
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        for value in self.counters().into_iter().take(counters_in(self.format_version())) {
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
        // Where the compression counter is (or would be), for an error about it.
        let mut compression_at = 0;
        for (i, counter) in counters.iter_mut().take(counters_in(version)).enumerate() {
            if i == 12 {
                compression_at = reader.at;
            }
            *counter = reader.varint().ok_or_else(|| bad(reader.at, "counter"))?;
        }
        let first_key = reader.key().ok_or_else(|| bad(reader.at, "first key"))?;
        let last_key = reader.key().ok_or_else(|| bad(reader.at, "last key"))?;
        let file_size = get_fixed64(bytes, reader.at).ok_or_else(|| bad(reader.at, "file size"))?;
        if reader.at + 8 != bytes.len() {
            return Err(bad(reader.at + 8, "trailing bytes"));
        }
        let [entries, tombstones, data_blocks, data_bytes, index_bytes, filter_bytes, raw_key_bytes, raw_value_bytes, stored_key_bytes, distinct_filter_keys, key_trailer_words, tail_copies, codec, level, compressed_blocks, uncompressed_data_bytes] =
            counters;
        let compression = u8::try_from(codec)
            .ok()
            .and_then(|codec| Compression::from_parts(codec, level))
            .ok_or_else(|| bad(compression_at, &format!("unknown compression {codec} level {level}")))?;
        if version >= 3 && compression == Compression::None {
            return Err(bad(compression_at, "a version 3 table without compression"));
        }
        let uncompressed_data_bytes = match version {
            1 | 2 => data_bytes,
            _ => uncompressed_data_bytes,
        };
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
            compression,
            compressed_blocks,
            uncompressed_data_bytes,
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
            u64::from(self.compression.codec().as_u8()),
            self.compression.level().unsigned_abs().into(),
            self.compressed_blocks,
            self.uncompressed_data_bytes,
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
            compression: Compression::None,
            compressed_blocks: 0,
            uncompressed_data_bytes: 300,
            file_size: 460,
        }
    }

    fn compressed_sample() -> TableProperties {
        TableProperties {
            compression: Compression::Zstd { level: 3 },
            compressed_blocks: 1,
            uncompressed_data_bytes: 700,
            ..sample()
        }
    }

    #[test]
    fn properties_round_trip() -> Result<()> {
        let bytes = sample().encode();
        // 12 counters (300 and 200 take 2 bytes each) + 1 + 5 + 1 + 6 + 8.
        assert_eq!(bytes.len(), 14 + 6 + 7 + 8);
        assert_eq!(sample().format_version(), 2);
        assert_eq!(TableProperties::decode(&bytes, 2, Path::new("t.sst"), 0)?, sample());
        Ok(())
    }

    #[test]
    fn compressed_properties_add_four_counters_in_version_3() -> Result<()> {
        let bytes = compressed_sample().encode();
        assert_eq!(compressed_sample().format_version(), 3);
        // The version-2 bytes with 2, 3, 1 and 700 (2 bytes) after the twelfth counter.
        let v2 = sample().encode();
        let mut expected = v2[..14].to_vec();
        expected.extend_from_slice(&[2, 3, 1, 0xbc, 0x05]);
        expected.extend_from_slice(&v2[14..]);
        assert_eq!(bytes, expected);
        assert_eq!(
            TableProperties::decode(&bytes, FORMAT_VERSION, Path::new("t.sst"), 0)?,
            compressed_sample()
        );
        Ok(())
    }

    #[test]
    fn an_unknown_compression_is_corruption_at_its_counter() {
        let mut bytes = compressed_sample().encode();
        bytes[14] = 9; // codec 9
        assert!(matches!(
            TableProperties::decode(&bytes, FORMAT_VERSION, Path::new("t.sst"), 100),
            Err(Error::Corruption { offset: 114, .. })
        ));
    }

    #[test]
    fn empty_table_properties_round_trip() -> Result<()> {
        let empty = TableProperties::default();
        assert_eq!(empty.encode().len(), 12 + 2 + 8);
        assert_eq!(
            TableProperties::decode(&empty.encode(), 2, Path::new("t.sst"), 0)?,
            empty
        );
        Ok(())
    }

    #[test]
    fn truncated_properties_are_corruption() {
        let bytes = compressed_sample().encode();
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
            TableProperties::decode(&bytes, 2, Path::new("t.sst"), 100),
            Err(Error::Corruption { offset: 135, .. })
        ));
    }

    #[test]
    fn key_length_past_the_block_is_corruption() {
        // Twelve zero counters, then a first key claiming 1,000 bytes.
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(&[0xe8, 0x07]);
        assert!(matches!(
            TableProperties::decode(&bytes, 2, Path::new("t.sst"), 0),
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
