//! Block compression: each data block squeezed on its own, kept only if it pays.
//!
//! A table's data blocks are where its bytes are, and neighbouring entries in
//! a sorted block repeat themselves (column names, value shapes), so a general
//! purpose compressor shrinks them well. cellar compresses **each data block
//! on its own**, as LevelDB, RocksDB and HBase do: a read still fetches one
//! block and decompresses only that, never a whole file.
//!
//! ```text
//! stored data block = uncompressed_len: varint u32 | codec payload
//! ```
//!
//! The payload is an LZ4 *block* (`lz4_flex`, no frame) or a Zstandard frame
//! (`zstd`, the reference C library). The length in front lets a reader
//! allocate the output once and check that the codec produced exactly that
//! many bytes. The block trailer's kind byte says which codec was used (see
//! [`crate::format::kind_byte`]), and the checksum covers the bytes as stored,
//! so damage is caught before the decompressor ever sees it.
//!
//! **LevelDB's rule**: a block is stored compressed only when that saves at
//! least 1/8 of it. A block that barely shrinks would cost a decompression on
//! every read for almost no space; it is stored raw, and read zero-copy from
//! the memory map like any block of an uncompressed table.
//!
//! Index and filter blocks are never compressed: they are read once, when a
//! table is opened, and kept in memory. The filter is random bits that do not
//! compress; the index is small.
//!
//! What it costs: decompressing a 4 KiB block takes a few microseconds (LZ4)
//! or a few more (Zstd), paid on every read that misses the block cache
//! ([`crate::BlockCache`]); what it saves is disk space and pages read.

use crate::coding::{get_varint32, put_varint64};

/// How a table's data blocks are compressed: a family's choice, recorded in
/// each table's properties.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Blocks stored as built (the default).
    #[default]
    None,
    /// LZ4: fast to compress, very fast to decompress, a moderate ratio.
    /// Cassandra's default and the usual choice of RocksDB and fjall users.
    Lz4,
    /// Zstandard at `level` (1 to 22; 3 is zstd's default): a better ratio
    /// than LZ4 for a slower compression and a somewhat slower decompression.
    Zstd {
        /// Compression level, 1 (fastest) to 22 (smallest).
        level: i32,
    },
}

/// Lowest and highest Zstandard level accepted.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

/// How one block is stored: the high four bits of its trailer's kind byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Codec {
    /// Stored as built.
    None = 0,
    /// An LZ4 block.
    Lz4 = 1,
    /// A Zstandard frame.
    Zstd = 2,
}

impl Codec {
    /// The codec stored as `bits`, if any.
    pub fn from_u8(bits: u8) -> Option<Codec> {
        match bits {
            0 => Some(Codec::None),
            1 => Some(Codec::Lz4),
            2 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// The number stored in the trailer and the properties.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// `none`, `lz4`, `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Compression {
    /// The codec a compressed block of this compression is stored with.
    pub fn codec(self) -> Codec {
        match self {
            Compression::None => Codec::None,
            Compression::Lz4 => Codec::Lz4,
            Compression::Zstd { .. } => Codec::Zstd,
        }
    }

    /// The level a table records: Zstandard's, 0 for the others.
    pub fn level(self) -> i32 {
        match self {
            Compression::Zstd { level } => level,
            _ => 0,
        }
    }

    /// The compression a table recorded as `codec` and `level`, if valid.
    pub fn from_parts(codec: u8, level: u64) -> Option<Compression> {
        let compression = match (Codec::from_u8(codec)?, level) {
            (Codec::None, 0) => Compression::None,
            (Codec::Lz4, 0) => Compression::Lz4,
            (Codec::Zstd, level) => Compression::Zstd {
                level: i32::try_from(level).ok()?,
            },
            _ => return None,
        };
        compression.check().ok()?;
        Some(compression)
    }

    /// Whether the compression can be used: a Zstandard level must be in
    /// [`ZSTD_LEVELS`]. The error says what is wrong.
    pub fn check(self) -> std::result::Result<(), String> {
        match self {
            Compression::Zstd { level } if !ZSTD_LEVELS.contains(&level) => Err(format!(
                "zstd level {level} is outside {}..={}",
                ZSTD_LEVELS.start(),
                ZSTD_LEVELS.end()
            )),
            _ => Ok(()),
        }
    }

    /// Reads `none`, `lz4`, `zstd` (level 3) or `zstd:LEVEL`.
    pub fn parse(text: &str) -> Option<Compression> {
        let compression = match text {
            "none" => Compression::None,
            "lz4" => Compression::Lz4,
            "zstd" => Compression::Zstd { level: 3 },
            _ => Compression::Zstd {
                level: text.strip_prefix("zstd:")?.parse().ok()?,
            },
        };
        compression.check().ok()?;
        Some(compression)
    }
}

impl std::fmt::Display for Compression {
    /// What [`Compression::parse`] reads back: `none`, `lz4`, `zstd:3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
            other => f.write_str(other.codec().name()),
        }
    }
}

/// Compresses data blocks for one table builder, keeping the codec's state
/// (a Zstandard context is a few hundred KiB, made once per table).
pub struct Compressor {
    compression: Compression,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("compression", &self.compression)
            .finish()
    }
}

impl Compressor {
    /// A compressor for `compression` (see [`Compression::check`]).
    pub fn new(compression: Compression) -> std::io::Result<Compressor> {
        let zstd = match compression {
            Compression::Zstd { level } => Some(zstd::bulk::Compressor::new(level)?),
            _ => None,
        };
        Ok(Compressor { compression, zstd })
    }

    /// The block as it is to be stored and how: compressed, if that saves at
    /// least 1/8 of it, else `raw` itself.
    pub fn compress(&mut self, raw: Vec<u8>) -> (Vec<u8>, Codec) {
        let payload = match (self.compression, &mut self.zstd) {
            (Compression::None, _) => return (raw, Codec::None),
            (Compression::Lz4, _) => lz4_flex::block::compress(&raw),
            (Compression::Zstd { .. }, Some(zstd)) => match zstd.compress(&raw) {
                Ok(payload) => payload,
                // zstd refuses only what it cannot hold in memory: keep the block raw.
                Err(_) => return (raw, Codec::None),
            },
            (Compression::Zstd { .. }, None) => return (raw, Codec::None),
        };
        let mut stored = Vec::with_capacity(payload.len() + 5);
        put_varint64(&mut stored, raw.len() as u64);
        stored.extend_from_slice(&payload);
        if stored.len() < raw.len() - raw.len() / 8 {
            (stored, self.compression.codec())
        } else {
            (raw, Codec::None)
        }
    }
}

thread_local! {
    /// A Zstandard decompression context per thread, made on first use. A
    /// context is a few hundred KiB to set up; made per block it cost more
    /// than the decompression itself (measured with the `codecs` bench:
    /// about 65 microseconds a 4 KiB block, against about 10 reused).
    static ZSTD_CONTEXT: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses a block stored with `codec` (not [`Codec::None`]). The error
/// says what is wrong with the bytes; the caller names the file and offset.
pub fn decompress(codec: Codec, stored: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (len, n) = get_varint32(stored).ok_or("bad uncompressed length")?;
    let payload = stored.get(n..).unwrap_or_default();
    // The length is checked against what the payload can hold before it is
    // allocated, so a damaged length cannot ask for gigabytes.
    let plausible = match codec {
        Codec::None => return Err("a raw block is not decompressed".into()),
        // An LZ4 sequence turns at most one byte into 255.
        Codec::Lz4 => u64::from(len) <= (payload.len() as u64).saturating_mul(255),
        // A Zstandard frame records its size, and ours always does.
        Codec::Zstd => {
            matches!(zstd::zstd_safe::get_frame_content_size(payload), Ok(Some(size)) if size == u64::from(len))
        }
    };
    if !plausible {
        return Err(format!(
            "{codec} payload of {} bytes cannot hold the {len} bytes its header says",
            payload.len()
        ));
    }
    let len = len as usize;
    let mut out = vec![0u8; len];
    let written = match codec {
        Codec::None => 0,
        Codec::Lz4 => lz4_flex::block::decompress_into(payload, &mut out).map_err(|e| format!("lz4: {e}"))?,
        Codec::Zstd => ZSTD_CONTEXT.with(|context| -> std::result::Result<usize, String> {
            let mut context = context.borrow_mut();
            let context = match &mut *context {
                Some(context) => context,
                none => none.insert(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?),
            };
            context
                .decompress_to_buffer(payload, out.as_mut_slice())
                .map_err(|e| format!("zstd: {e}"))
        })?,
    };
    if written != len {
        return Err(format!(
            "{codec} block decompressed to {written} bytes, its header says {len}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 KiB of text that repeats itself, as sorted keys do.
    fn compressible() -> Vec<u8> {
        (0..300)
            .flat_map(|i| format!("row{i:05}/title=").into_bytes())
            .take(4096)
            .collect()
    }

    #[test]
    fn names_parse_back() {
        for c in [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd { level: 3 },
            Compression::Zstd { level: 19 },
        ] {
            assert_eq!(Compression::parse(&c.to_string()), Some(c));
        }
        assert_eq!(Compression::parse("zstd"), Some(Compression::Zstd { level: 3 }));
        for bad in ["", "LZ4", "zstd:0", "zstd:23", "zstd:x", "snappy"] {
            assert_eq!(Compression::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn compression_round_trips_through_its_recorded_parts() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd { level: 7 }] {
            assert_eq!(Compression::from_parts(c.codec().as_u8(), c.level() as u64), Some(c));
        }
        assert_eq!(Compression::from_parts(1, 3), None);
        assert_eq!(Compression::from_parts(2, 0), None);
        assert_eq!(Compression::from_parts(3, 0), None);
    }

    #[test]
    fn a_compressible_block_is_stored_compressed_and_decompresses_to_itself() -> std::result::Result<(), String> {
        for compression in [Compression::Lz4, Compression::Zstd { level: 3 }] {
            let raw = compressible();
            let mut compressor = Compressor::new(compression).map_err(|e| e.to_string())?;
            let (stored, codec) = compressor.compress(raw.clone());
            assert_eq!(codec, compression.codec());
            assert!(stored.len() < raw.len() / 2, "{compression}: {} bytes", stored.len());
            assert_eq!(&stored[..2], &[0x80, 0x20], "4096 as a varint");
            assert_eq!(decompress(codec, &stored)?, raw);
        }
        Ok(())
    }

    #[test]
    fn a_block_that_saves_less_than_an_eighth_is_stored_raw() -> std::io::Result<()> {
        // Bytes of a linear congruential generator: nothing to compress.
        let mut x = 12345u32;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 24) as u8
            })
            .collect();
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd { level: 3 }] {
            let (stored, codec) = Compressor::new(compression)?.compress(random.clone());
            assert_eq!(
                (codec, stored.as_slice()),
                (Codec::None, random.as_slice()),
                "{compression}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_wrong_length_or_damaged_payload_is_an_error_not_a_panic() -> std::io::Result<()> {
        for compression in [Compression::Lz4, Compression::Zstd { level: 3 }] {
            let (stored, codec) = Compressor::new(compression)?.compress(compressible());
            let mut longer = stored.clone();
            longer[0] = 0x81; // claims 4097 bytes
            assert!(decompress(codec, &longer).is_err());
            for cut in 0..stored.len() {
                assert!(decompress(codec, &stored[..cut]).is_err(), "{compression} cut at {cut}");
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_a_decompressor(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decompress(Codec::Lz4, &bytes);
            let _ = decompress(Codec::Zstd, &bytes);
        }
    }
}
