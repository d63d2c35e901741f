//! Block checksums: a CRC-32 over a block's bytes and its kind byte, masked.
//!
//! Every block in a table file ends with a 4-byte checksum, so a flipped bit is
//! caught when the block is read and reported as corruption instead of being
//! returned as a wrong answer. CRC-32 (the IEEE polynomial, computed by
//! `crc32fast` with hardware instructions where the CPU has them) catches every
//! burst error of up to 32 bits and all but one in 2^32 random corruptions, at
//! a few gigabytes per second: far cheaper than the read it protects.
//!
//! The kind byte is covered too, so a data block cannot be mistaken for an
//! index block even if a handle points at the wrong place.

/// Added after rotating, exactly as LevelDB does (`crc32c::Mask`).
const MASK_DELTA: u32 = 0xa282_ead8;

/// The stored checksum of a block: CRC-32 of `contents` followed by the `kind`
/// byte, then [`mask`]ed.
pub fn block_checksum(contents: &[u8], kind: u8) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(contents);
    hasher.update(&[kind]);
    mask(hasher.finalize())
}

/// Masks a CRC before it is stored.
///
/// Why: a CRC has algebraic structure. The CRC of a message followed by its
/// own CRC is a fixed constant (the "residue"; zero for CRCs without a final
/// inversion), whatever the message. So if a checksummed stream ever contains
/// raw CRCs of its own parts (a block copied into a log record, a table
/// embedded in another file), the outer checksum is partly decided by that
/// structure instead of by the data, and some corruptions go unseen. Rotating
/// and adding a constant breaks the relation; it costs two instructions.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Undoes [`mask`]. Only tests need it: a reader compares masked values.
#[cfg(test)]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_a_known_string_matches_the_ieee_check_value() {
        // "123456789" is the standard check input; 0xCBF43926 is CRC-32/IEEE's.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn mask_then_unmask_is_the_identity() {
        for crc in [0, 1, 0xCBF4_3926, u32::MAX, 0x8000_0000] {
            assert_eq!(unmask(mask(crc)), crc);
        }
    }

    #[test]
    fn masked_crc_differs_from_the_raw_crc() {
        let raw = crc32fast::hash(b"abc\x01");
        assert_ne!(block_checksum(b"abc", 1), raw);
        assert_eq!(unmask(block_checksum(b"abc", 1)), raw);
    }

    #[test]
    fn kind_byte_changes_the_checksum() {
        assert_ne!(block_checksum(b"same bytes", 1), block_checksum(b"same bytes", 2));
    }

    #[test]
    fn one_flipped_bit_changes_the_checksum() {
        let mut data = b"the quick brown fox".to_vec();
        let before = block_checksum(&data, 1);
        if let Some(byte) = data.get_mut(4) {
            *byte ^= 0x01;
        }
        assert_ne!(block_checksum(&data, 1), before);
    }
}
