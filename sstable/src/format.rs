//! The table file's frame: block handles, block trailers and the footer.
//!
//! A table file is a sequence of blocks followed by a fixed-size footer:
//!
//! ```text
//! | data block 0 | ... | data block n-1 | filter | properties | index | footer (72 bytes) |
//! ```
//!
//! Every block is followed by a 5-byte trailer, `kind: u8 | masked crc32: u32 LE`
//! (see [`crate::checksum`]). Blocks find each other through *handles*
//! (offset and size, the size not counting the trailer): the index maps the
//! last key of each data block to its handle, and the footer, found at a
//! known distance from the end of the file, holds the handles of the filter,
//! properties and index blocks. Reading a table therefore starts at its end.
//!
//! ```text
//! footer = filter handle   (varints, zero-padded to 20 bytes)
//!        | properties handle (20 bytes)
//!        | index handle      (20 bytes)
//!        | format version: u32 LE
//!        | magic: u64 LE  ("cellarSS" in a hex dump)
//! ```
//!
//! The footer has a fixed size so it can be found without reading anything
//! else; varint handles padded to a fixed width keep it fixed. The magic number
//! says "this is a cellar table", the version says which format the rest is in.

use std::path::Path;

use crate::checksum::block_checksum;
use crate::coding::{get_fixed32, get_fixed64, get_varint64, put_varint64, varint_len, MAX_VARINT64_LEN};
use crate::compression::Codec;
use crate::error::{Error, Result};

/// The newest format version this build writes and reads.
///
/// * 1: plain blocks.
/// * 2: data blocks may store a key trailer
///   ([`crate::TableOptions::key_trailer_words`], recorded in the properties).
/// * 3: data blocks may be compressed (the high bits of the trailer's kind
///   byte say how); the properties record the compression.
///
/// Every version from 1 up is read. A table built without compression is
/// written as version 2 ([`UNCOMPRESSED_FORMAT_VERSION`]), byte for byte what
/// a build before compression wrote, so such a build still reads it.
pub const FORMAT_VERSION: u32 = 3;

/// The version of a table built without compression.
pub const UNCOMPRESSED_FORMAT_VERSION: u32 = 2;

/// The last 8 bytes of every table file: the bytes `cellarSS` read as a
/// little-endian `u64`.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"cellarSS");

/// Bytes after every block: kind (1) and masked CRC (4).
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Room for one handle in the footer: two 10-byte varints.
pub const MAX_HANDLE_LEN: usize = 2 * MAX_VARINT64_LEN;

/// Size of the footer: three handles, the version and the magic number.
pub const FOOTER_LEN: usize = 3 * MAX_HANDLE_LEN + 4 + 8;

/// Where a block lives in the file: its first byte and its size, the trailer
/// not included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the block's first byte in the file.
    pub offset: u64,
    /// Size of the block's contents, without the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// A handle for `size` bytes at `offset`.
    pub fn new(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    /// Appends the handle as two varints, offset then size.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }

    /// Decodes a handle from the start of `input`: the handle and the bytes
    /// it took, or `None` if the varints are bad.
    pub fn decode(input: &[u8]) -> Option<(BlockHandle, usize)> {
        let (offset, n1) = get_varint64(input)?;
        let (size, n2) = get_varint64(input.get(n1..)?)?;
        Some((BlockHandle { offset, size }, n1 + n2))
    }

    /// Size of the block on disk, trailer included.
    pub fn size_with_trailer(&self) -> u64 {
        self.size.saturating_add(BLOCK_TRAILER_LEN as u64)
    }

    /// Offset just past the block's trailer, or `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// What a block holds; written in its trailer and covered by its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlockKind {
    /// Sorted key/value entries.
    Data = 1,
    /// Last key of each data block -> its handle.
    Index = 2,
    /// The Bloom filter.
    Filter = 3,
    /// The [`crate::TableProperties`].
    Properties = 4,
}

impl BlockKind {
    /// The kind stored as `byte`, if any.
    pub fn from_u8(byte: u8) -> Option<BlockKind> {
        match byte {
            1 => Some(BlockKind::Data),
            2 => Some(BlockKind::Index),
            3 => Some(BlockKind::Filter),
            4 => Some(BlockKind::Properties),
            _ => None,
        }
    }

    /// The byte stored in the trailer.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// A lower-case name for messages and dumps: `data`, `index`, ...
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::Index => "index",
            BlockKind::Filter => "filter",
            BlockKind::Properties => "properties",
        }
    }
}

impl std::fmt::Display for BlockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The trailer's kind byte: the block's kind in the low four bits, the codec
/// it is stored with in the high four (0, raw, in every table before version 3,
/// so the byte of an uncompressed block is just its kind).
pub fn kind_byte(kind: BlockKind, codec: Codec) -> u8 {
    kind.as_u8() | codec.as_u8() << 4
}

/// The kind and codec bits of a trailer's kind byte (either may be unknown).
pub fn split_kind_byte(byte: u8) -> (u8, u8) {
    (byte & 0x0f, byte >> 4)
}

/// The 5-byte trailer written after `contents` (a block of `kind` stored with
/// `codec`): kind byte, then masked CRC-32 LE of the contents and that byte.
pub fn block_trailer(contents: &[u8], kind: BlockKind, codec: Codec) -> [u8; BLOCK_TRAILER_LEN] {
    let byte = kind_byte(kind, codec);
    let crc = block_checksum(contents, byte).to_le_bytes();
    let [c0, c1, c2, c3] = crc;
    [byte, c0, c1, c2, c3]
}

/// The fixed-size record at the end of every table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The Bloom filter block; size 0 means the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// Format version of the file ([`FORMAT_VERSION`] when written by this build).
    pub version: u32,
}

impl Footer {
    /// The footer's [`FOOTER_LEN`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(FOOTER_LEN);
        for handle in [self.filter, self.properties, self.index] {
            let start = buf.len();
            handle.encode_to(&mut buf);
            buf.resize(start + MAX_HANDLE_LEN, 0);
        }
        buf.extend_from_slice(&self.version.to_le_bytes());
        buf.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        buf
    }

    /// Decodes the footer from `bytes`, the last [`FOOTER_LEN`] bytes of
    /// `file`, which start at byte `offset` of the file.
    ///
    /// The magic number is checked first (a wrong one means "not a cellar
    /// table", [`Error::Corruption`]), then the version (a newer one is
    /// [`Error::UnsupportedVersion`]: its handles may not mean what this build
    /// thinks), then the handles and their zero padding.
    pub fn decode(bytes: &[u8], file: &Path, offset: u64) -> Result<Footer> {
        let corruption = |at: usize, what: String| Error::Corruption {
            file: file.to_path_buf(),
            offset: offset + at as u64,
            what,
        };
        if bytes.len() != FOOTER_LEN {
            return Err(corruption(
                0,
                format!("footer is {} bytes, expected {FOOTER_LEN}", bytes.len()),
            ));
        }
        let magic_at = FOOTER_LEN - 8;
        let magic = get_fixed64(bytes, magic_at).unwrap_or(0);
        if magic != TABLE_MAGIC {
            let what = format!("bad magic number {magic:#018x} (expected {TABLE_MAGIC:#018x}): not a cellar table");
            return Err(corruption(magic_at, what));
        }
        let version_at = FOOTER_LEN - 12;
        let version = get_fixed32(bytes, version_at).unwrap_or(0);
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if version == 0 {
            return Err(corruption(version_at, "format version 0 was never written".into()));
        }
        let mut handles = [BlockHandle::default(); 3];
        for (i, handle) in handles.iter_mut().enumerate() {
            let at = i * MAX_HANDLE_LEN;
            let slot = bytes.get(at..at + MAX_HANDLE_LEN).unwrap_or_default();
            let decoded = BlockHandle::decode(slot);
            // Canonical varints followed by zeros only: with no checksum on the
            // footer, this is what makes every flipped bit in it detectable.
            // A handle of size 0 (a table without a filter) is all zeros: its
            // offset is 0 too, so a flipped bit cannot make a filter vanish.
            let canonical = |h: &BlockHandle, used: usize| {
                used == varint_len(h.offset) + varint_len(h.size)
                    && slot.get(used..).is_some_and(|pad| pad.iter().all(|&b| b == 0))
                    && (h.size > 0 || h.offset == 0)
            };
            match decoded {
                Some((h, used)) if canonical(&h, used) => *handle = h,
                _ => return Err(corruption(at, format!("bad block handle {i} in footer"))),
            }
        }
        let [filter, properties, index] = handles;
        Ok(Footer {
            filter,
            properties,
            index,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Footer {
        Footer {
            filter: BlockHandle::new(8_018, 151),
            properties: BlockHandle::new(8_174, 60),
            index: BlockHandle::new(8_239, 40),
            version: FORMAT_VERSION,
        }
    }

    #[test]
    fn magic_reads_cellarss_in_a_hex_dump() {
        assert_eq!(&TABLE_MAGIC.to_le_bytes(), b"cellarSS");
        assert_eq!(TABLE_MAGIC, 0x5353_7261_6c6c_6563);
    }

    #[test]
    fn handle_is_two_varints() {
        let mut buf = Vec::new();
        BlockHandle::new(300, 5).encode_to(&mut buf);
        assert_eq!(buf, [0xac, 0x02, 0x05]);
        assert_eq!(BlockHandle::decode(&buf), Some((BlockHandle::new(300, 5), 3)));
        assert_eq!(BlockHandle::decode(&[0xac]), None);
        assert_eq!(BlockHandle::new(300, 5).end(), Some(310));
        assert_eq!(BlockHandle::new(u64::MAX, 5).end(), None);
    }

    #[test]
    fn block_kinds_round_trip_through_their_byte() {
        for kind in [
            BlockKind::Data,
            BlockKind::Index,
            BlockKind::Filter,
            BlockKind::Properties,
        ] {
            assert_eq!(BlockKind::from_u8(kind.as_u8()), Some(kind));
        }
        assert_eq!(BlockKind::Data.as_u8(), 1);
        assert_eq!(BlockKind::Properties.as_u8(), 4);
        assert_eq!(BlockKind::from_u8(0), None);
        assert_eq!(BlockKind::from_u8(5), None);
    }

    #[test]
    fn trailer_is_kind_then_masked_crc() {
        let trailer = block_trailer(b"abc", BlockKind::Index, Codec::None);
        assert_eq!(trailer[0], 2);
        assert_eq!(get_fixed32(&trailer, 1), Some(block_checksum(b"abc", 2)));
    }

    #[test]
    fn the_kind_byte_of_a_compressed_block_carries_its_codec_in_the_high_bits() {
        assert_eq!(kind_byte(BlockKind::Data, Codec::None), 0x01);
        assert_eq!(kind_byte(BlockKind::Data, Codec::Lz4), 0x11);
        assert_eq!(kind_byte(BlockKind::Data, Codec::Zstd), 0x21);
        assert_eq!(split_kind_byte(0x21), (1, 2));
        let trailer = block_trailer(b"abc", BlockKind::Data, Codec::Lz4);
        assert_eq!(trailer[0], 0x11);
        assert_eq!(get_fixed32(&trailer, 1), Some(block_checksum(b"abc", 0x11)));
    }

    #[test]
    fn footer_is_72_bytes_and_round_trips() -> Result<()> {
        let bytes = sample().encode();
        assert_eq!(bytes.len(), 72);
        assert_eq!(&bytes[..5], &[0xd2, 0x3e, 0x97, 0x01, 0x00]); // 8018, 151
        assert_eq!(&bytes[60..64], &FORMAT_VERSION.to_le_bytes());
        assert_eq!(&bytes[64..], b"cellarSS");
        assert_eq!(Footer::decode(&bytes, Path::new("t.sst"), 1000)?, sample());
        Ok(())
    }

    #[test]
    fn bad_magic_is_corruption_at_the_magic_field() {
        let mut bytes = sample().encode();
        bytes[70] ^= 0xff;
        match Footer::decode(&bytes, Path::new("t.sst"), 1000) {
            Err(Error::Corruption { offset, what, .. }) => {
                assert_eq!(offset, 1064);
                assert!(what.starts_with("bad magic"), "{what}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn newer_version_is_unsupported() {
        let footer = Footer {
            version: FORMAT_VERSION + 1,
            ..sample()
        };
        match Footer::decode(&footer.encode(), Path::new("t.sst"), 0) {
            Err(Error::UnsupportedVersion { found, supported, .. }) => {
                assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
            }
            other => panic!("expected unsupported version, got {other:?}"),
        }
    }

    #[test]
    fn nonzero_handle_padding_is_corruption() {
        let mut bytes = sample().encode();
        bytes[MAX_HANDLE_LEN + 19] = 1; // last padding byte of the properties handle
        assert!(matches!(
            Footer::decode(&bytes, Path::new("t.sst"), 0),
            Err(Error::Corruption { offset: 20, .. })
        ));
    }

    #[test]
    fn an_empty_handle_with_an_offset_is_corruption() {
        // A bit flipped into a varint's continuation bit can leave a handle of
        // size 0, which would otherwise read as "no filter".
        let footer = Footer {
            filter: BlockHandle::new(1629, 0),
            ..sample()
        };
        assert!(matches!(
            Footer::decode(&footer.encode(), Path::new("t.sst"), 0),
            Err(Error::Corruption { offset: 0, .. })
        ));
        let footer = Footer {
            filter: BlockHandle::default(),
            ..sample()
        };
        assert_eq!(
            Footer::decode(&footer.encode(), Path::new("t.sst"), 0).ok(),
            Some(footer)
        );
    }

    #[test]
    fn overlong_handle_varint_is_corruption() {
        // 151 written as [0x97, 0x81, 0x00] instead of [0x97, 0x01]: same value.
        let mut bytes = sample().encode();
        assert_eq!(&bytes[2..5], &[0x97, 0x01, 0x00]);
        bytes[3] = 0x81;
        assert!(matches!(
            Footer::decode(&bytes, Path::new("t.sst"), 0),
            Err(Error::Corruption { offset: 0, .. })
        ));
    }
}
