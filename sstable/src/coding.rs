//! Varints and fixed-width integers: how numbers are written into blocks.
//!
//! Lengths in a block are usually tiny (a shared prefix of 7 bytes, a value of
//! 100), so writing them as 4- or 8-byte integers would waste most of the
//! block. A varint (LEB128) writes 7 bits per byte, low bits first, and sets
//! the high bit of every byte except the last: 0..=127 takes one byte, 128..=16383
//! two, a `u32` at most 5 and a `u64` at most 10.
//!
//! ```text
//! 300 = 0b1_0010_1100  ->  [1010_1100, 0000_0010] = [0xAC, 0x02]
//!                           ^ more      ^ last
//! ```
//!
//! Decoders return `None` on short or overlong input instead of panicking:
//! the bytes may come from a damaged file.
//!
//! And [`common_prefix_len`], the byte comparison that prefix compression
//! and merges of sorted keys make for every entry.

/// Longest varint encoding of a `u32`.
pub const MAX_VARINT32_LEN: usize = 5;
/// Longest varint encoding of a `u64`.
pub const MAX_VARINT64_LEN: usize = 10;

/// Appends `value` to `buf` as a varint.
pub fn put_varint64(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // Truncation is the point: keep the low 7 bits, flag "more follows".
        buf.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// How many bytes [`put_varint64`] writes for `value`.
pub fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Decodes a varint from the start of `input`, returning the value and the
/// number of bytes it took, or `None` if the input ends mid-varint or the
/// varint is longer than 10 bytes or overflows 64 bits.
#[inline]
pub fn get_varint64(input: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &byte) in input.iter().take(MAX_VARINT64_LEN).enumerate() {
        let low = u64::from(byte & 0x7f);
        let shift = 7 * i as u32;
        // The 10th byte may only carry the single top bit of a u64.
        if i == MAX_VARINT64_LEN - 1 && low > 1 {
            return None;
        }
        value |= low << shift;
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Longest varint encoding of a `u128`.
pub const MAX_VARINT128_LEN: usize = 19;

/// Appends `value` to `buf` as a varint (the same encoding as
/// [`put_varint64`], for the few values wider than 64 bits).
pub fn put_varint128(buf: &mut Vec<u8>, mut value: u128) {
    while value >= 0x80 {
        buf.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Decodes a varint written by [`put_varint128`]; `None` if the input ends
/// mid-varint or the varint is longer than 19 bytes or overflows 128 bits.
#[inline]
pub fn get_varint128(input: &[u8]) -> Option<(u128, usize)> {
    if let Some(&byte) = input.first().filter(|&&b| b < 0x80) {
        return Some((u128::from(byte), 1)); // the common case: one byte
    }
    let mut value: u128 = 0;
    for (i, &byte) in input.iter().take(MAX_VARINT128_LEN).enumerate() {
        let low = u128::from(byte & 0x7f);
        // The 19th byte may only carry the top two bits of a u128.
        if i == MAX_VARINT128_LEN - 1 && low > 3 {
            return None;
        }
        value |= low << (7 * i as u32);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Decodes a varint that must fit in a `u32`; `None` as for [`get_varint64`]
/// or if the value is larger than `u32::MAX`.
#[inline]
pub fn get_varint32(input: &[u8]) -> Option<(u32, usize)> {
    let (value, len) = get_varint64(input)?;
    if len > MAX_VARINT32_LEN {
        return None;
    }
    Some((u32::try_from(value).ok()?, len))
}

/// Reads a little-endian `u32` at `offset`, or `None` if out of range.
pub fn get_fixed32(input: &[u8], offset: usize) -> Option<u32> {
    let bytes = input.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a little-endian `u64` at `offset`, or `None` if out of range.
pub fn get_fixed64(input: &[u8], offset: usize) -> Option<u64> {
    let bytes = input.get(offset..offset.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Length of the longest common prefix of `a` and `b`.
///
/// Compared eight bytes at a time: every entry of every flush and compaction
/// passes here (a block shares a key's prefix with the last one's; a merge
/// compares its sources' keys), and neighbouring keys of a wide row share
/// most of their bytes (the row, often the start of the column name). In the first word that
/// differs, the XOR's lowest set bit (the words read little-endian) is in
/// the first differing byte.
#[inline]
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    const WORD: usize = 8;
    let len = a.len().min(b.len());
    let mut at = 0;
    while let (Some(x), Some(y)) = (a.get(at..at + WORD), b.get(at..at + WORD)) {
        let (Ok(x), Ok(y)) = (<[u8; WORD]>::try_from(x), <[u8; WORD]>::try_from(y)) else {
            break;
        };
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            return at + (diff.trailing_zeros() / 8) as usize;
        }
        at += WORD;
    }
    let (a, b) = (a.get(at..len).unwrap_or_default(), b.get(at..len).unwrap_or_default());
    at + a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn common_prefix_len_is_exact_for_every_pair_of_lengths_and_first_difference_up_to_three_words() {
        // Empty keys, keys shorter than a word, whole words and a few bytes
        // past them; alike to the shorter one's end, or first differing in
        // any one bit of any byte before it.
        for a_len in 0..=25usize {
            for b_len in 0..=25usize {
                let a: Vec<u8> = (0..a_len as u8).collect();
                let shorter = a_len.min(b_len);
                for differ_at in 0..=shorter {
                    let mut b: Vec<u8> = (0..b_len as u8).collect();
                    if differ_at < shorter {
                        b[differ_at] ^= 1 << (differ_at % 8);
                    }
                    let lens = (a_len, b_len, differ_at);
                    assert_eq!(common_prefix_len(&a, &b), differ_at, "{lens:?}");
                    assert_eq!(common_prefix_len(&b, &a), differ_at, "{lens:?}");
                }
            }
        }
    }

    proptest::proptest! {
        /// The word-at-a-time count agrees with a byte-at-a-time one, for
        /// keys that differ anywhere (before, inside or after a whole word)
        /// or where one is a prefix of the other.
        #[test]
        fn common_prefix_len_counts_the_bytes_both_start_with(
            shared in proptest::collection::vec(any::<u8>(), 0..40),
            a in proptest::collection::vec(0..3u8, 0..12),
            b in proptest::collection::vec(0..3u8, 0..12),
        ) {
            let (x, y) = ([shared.as_slice(), &a].concat(), [shared.as_slice(), &b].concat());
            let expected = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
            prop_assert_eq!(common_prefix_len(&x, &y), expected);
            prop_assert_eq!(common_prefix_len(&y, &x), expected);
        }
    }

    fn encode(value: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        put_varint64(&mut buf, value);
        buf
    }

    #[test]
    fn small_numbers_take_one_byte() {
        assert_eq!(encode(0), [0x00]);
        assert_eq!(encode(1), [0x01]);
        assert_eq!(encode(127), [0x7f]);
    }

    #[test]
    fn three_hundred_is_ac_02() {
        assert_eq!(encode(128), [0x80, 0x01]);
        assert_eq!(encode(300), [0xac, 0x02]);
        assert_eq!(encode(16_383), [0xff, 0x7f]);
        assert_eq!(encode(16_384), [0x80, 0x80, 0x01]);
    }

    #[test]
    fn largest_values_take_five_and_ten_bytes() {
        let buf = encode(u64::from(u32::MAX));
        assert_eq!(buf, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(encode(u64::MAX).len(), 10);
        assert_eq!(get_varint64(&encode(u64::MAX)), Some((u64::MAX, 10)));
        assert_eq!(get_varint32(&buf), Some((u32::MAX, 5)));
    }

    #[test]
    fn varint_len_matches_the_encoding() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(varint_len(value), encode(value).len(), "value {value}");
        }
    }

    #[test]
    fn decoding_reports_bytes_used_and_ignores_what_follows() {
        assert_eq!(get_varint64(&[0xac, 0x02, 0xff, 0xff]), Some((300, 2)));
    }

    #[test]
    fn truncated_varint_is_none() {
        assert_eq!(get_varint64(&[]), None);
        assert_eq!(get_varint64(&[0x80]), None);
        assert_eq!(get_varint64(&[0xff, 0xff]), None);
    }

    #[test]
    fn overlong_or_overflowing_varint_is_none() {
        assert_eq!(get_varint64(&[0xff; 11]), None);
        // 10th byte carrying more than the one remaining bit.
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        assert_eq!(get_varint64(&too_big), None);
        // Fits in u64 but not in u32.
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
        assert_eq!(get_varint32(&encode(u64::from(u32::MAX) + 1)), None);
    }

    #[test]
    fn wide_varints_round_trip_and_agree_with_narrow_ones() {
        for value in [
            0u128,
            1,
            300,
            u128::from(u64::MAX),
            u128::from(u64::MAX) << 3,
            u128::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint128(&mut buf, value);
            assert_eq!(get_varint128(&buf), Some((value, buf.len())), "value {value}");
            if let Ok(narrow) = u64::try_from(value) {
                assert_eq!(buf, encode(narrow));
            }
        }
        assert_eq!(get_varint128(&[0xff; 20]), None);
        let mut too_big = vec![0xff; 18];
        too_big.push(0x04);
        assert_eq!(get_varint128(&too_big), None);
        assert_eq!(get_varint128(&[0x80]), None);
    }

    #[test]
    fn fixed_width_reads_are_little_endian_and_bounds_checked() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09];
        assert_eq!(get_fixed32(&bytes, 0), Some(0x0403_0201));
        assert_eq!(get_fixed32(&bytes, 5), Some(0x0908_0706));
        assert_eq!(get_fixed32(&bytes, 6), None);
        assert_eq!(get_fixed64(&bytes, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(get_fixed64(&bytes, 2), None);
        assert_eq!(get_fixed32(&bytes, usize::MAX), None);
    }
}
