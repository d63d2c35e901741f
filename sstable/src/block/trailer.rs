//! Key trailers: the numbers that end every key, stored as XORs.
//!
//! Prefix compression only shares the *front* of a key. Storage engines end
//! every key with numbers: RocksDB a sequence number and kind, cellar an
//! inverted timestamp and an inverted sequence/kind, 16 bytes per cell. Those
//! bytes differ from one key to the next, so plain prefix compression stores
//! all of them, for every entry. Yet neighbours' numbers are close (cells of
//! one row are written together, and a fully compacted run has every sequence
//! number zeroed), so they differ only in their low bits.
//!
//! A block built with a *key trailer* of `n` words treats the last `8 * n`
//! bytes of every key as big-endian `u64`s and stores each one as its XOR
//! with the same word of the previous key, which is small when the numbers
//! are close and 0 when they are equal (HBase's DIFF encodings do the same
//! for timestamps). The first XOR is always written; it carries one bit per
//! later word saying whether that word changed, and unchanged words take no
//! bytes at all:
//!
//! ```text
//! entry   = shared | unshared | value_len | body[shared..] | trailer | value
//! trailer = the n words, 8 bytes each                 in the block's first entry
//!         | varint(xor_0 << (n-1) | changed_1..n-1)    elsewhere, then
//!           varint(xor_i) for each later word that changed
//! ```
//!
//! where `body` is the key without its trailer and `shared` counts body bytes.
//! An entry XORs against the key before it, except at a restart point, which
//! must decode on its own: it XORs against the block's first key, which a
//! reader decodes once when it loads the block.
//!
//! cellar's keys end with a timestamp and a sequence/kind word: between two
//! cells written a second apart and compacted (sequence zeroed), the trailer
//! costs 2 bytes instead of 16. With `n = 0` this is exactly the plain format.

use std::ops::Range;

use crate::coding::{get_varint128, get_varint64, put_varint128, put_varint64};

/// The most words a key trailer may have.
pub const MAX_TRAILER_WORDS: usize = 4;

/// Size of one key-trailer word.
pub(super) const WORD_LEN: usize = 8;

/// A key's trailer words (only the first `trailer_words` of a block are used).
pub(super) type Words = [u64; MAX_TRAILER_WORDS];

/// An entry's key trailer as stored.
pub(super) enum StoredTrailer {
    /// In the block's first entry: the words' bytes, right after the body.
    Whole(Range<usize>),
    /// Elsewhere: each word XOR the previous key's, or at a restart point the
    /// first key's (only the first `trailer_words` are used).
    Xor(Words),
}

/// Writes `trailer` (the last bytes of a key, `words` words) as XORs against
/// `base`, the previous key's trailer or, at a restart point, the first key's.
#[inline]
pub(super) fn put_xors(buf: &mut Vec<u8>, trailer: &[u8], base: &[u8], words: usize) {
    let mut xors = [0u64; MAX_TRAILER_WORDS];
    for ((xor, word), base) in xors
        .iter_mut()
        .zip(trailer.chunks_exact(WORD_LEN))
        .zip(base.chunks_exact(WORD_LEN))
    {
        *xor = read_word(word) ^ read_word(base);
    }
    encode_xors(buf, xors.get(..words).unwrap_or_default());
}

/// Writes the XORs of a key trailer (every entry but the block's first): the
/// first XOR, shifted left to make room for one "changed" bit per later word,
/// then each later word that changed.
fn encode_xors(buf: &mut Vec<u8>, xors: &[u64]) {
    let Some((&first, later)) = xors.split_first() else {
        return;
    };
    let mut changed = 0u64;
    for (bit, &xor) in later.iter().enumerate() {
        if xor != 0 {
            changed |= 1 << bit;
        }
    }
    // The same varint either way; a head that fits 64 bits (almost all:
    // a close first word leaves its top bits clear) is written as a `u64`,
    // without 128-bit arithmetic.
    match first.checked_shl(later.len() as u32) {
        Some(shifted) if shifted >> later.len() == first => put_varint64(buf, shifted | changed),
        _ => put_varint128(buf, u128::from(first) << later.len() | u128::from(changed)),
    }
    for &xor in later.iter().filter(|&&xor| xor != 0) {
        put_varint64(buf, xor);
    }
}

/// Reads the XORs of a `words`-word trailer from the front of `input`:
/// the XORs and the bytes they took, or `None` if they are cut short or do
/// not fit a word. Nothing for a block without a trailer.
#[inline]
pub(super) fn decode_xors(input: &[u8], words: usize) -> Option<(Words, usize)> {
    let mut xors = [0u64; MAX_TRAILER_WORDS];
    let Some((first, later)) = xors.get_mut(..words).and_then(|x| x.split_first_mut()) else {
        return Some((xors, 0));
    };
    // Almost every head fits in 64 bits: decode it as such first.
    let (head, mut at) = match get_varint64(input) {
        Some((head, n)) => (u128::from(head), n),
        None => get_varint128(input)?,
    };
    *first = u64::try_from(head >> later.len()).ok()?;
    for (bit, xor) in later.iter_mut().enumerate() {
        if head & (1 << bit) != 0 {
            let (value, n) = get_varint64(input.get(at..).unwrap_or_default())?;
            *xor = value;
            at += n;
        }
    }
    Some((xors, at))
}

/// Sets `words` to an entry's trailer: read whole from `contents`, or each
/// XOR applied to the previous key's words (already in `words`) or, at a
/// restart point, to the block's `first` key's.
#[inline]
pub(super) fn apply(words: &mut [u64], stored: &StoredTrailer, contents: &[u8], restart: bool, first: &Words) {
    match stored {
        StoredTrailer::Whole(bytes) => read_words(contents.get(bytes.clone()).unwrap_or_default(), words),
        StoredTrailer::Xor(xors) => {
            if restart {
                for (word, first) in words.iter_mut().zip(first) {
                    *word = *first;
                }
            }
            for (word, xor) in words.iter_mut().zip(xors) {
                *word ^= xor;
            }
        }
    }
}

/// Appends `words` to `key`, 8 big-endian bytes each.
#[inline]
pub(super) fn push_words(key: &mut Vec<u8>, words: &[u64]) {
    // Word by word, each a copy of a fixed 8 bytes that compiles to one
    // store: one copy of a variable length was a call to `memcpy` per entry
    // a cursor steps over (4% of a compaction's time on rows of small cells).
    key.reserve(words.len() * WORD_LEN);
    for word in words {
        key.extend_from_slice(&word.to_be_bytes());
    }
}

/// Reads `bytes` as big-endian words into `words` (as many as both hold).
#[inline]
pub(super) fn read_words(bytes: &[u8], words: &mut [u64]) {
    for (word, bytes) in words.iter_mut().zip(bytes.chunks_exact(WORD_LEN)) {
        *word = read_word(bytes);
    }
}

/// A key-trailer word: 8 big-endian bytes (fewer read as zero-padded, which
/// only happens on a slice the caller already checked).
#[inline]
fn read_word(bytes: &[u8]) -> u64 {
    if let Ok(word) = <[u8; WORD_LEN]>::try_from(bytes) {
        return u64::from_be_bytes(word);
    }
    let mut word = [0u8; WORD_LEN];
    for (to, from) in word.iter_mut().zip(bytes) {
        *to = *from;
    }
    u64::from_be_bytes(word)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use bytes::Bytes;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    use super::super::tests::{collect, round_trip_and_seek, TestResult};
    use super::super::{Block, BlockBuilder, KeyEncoding};
    use crate::error::Error;

    /// `body` followed by the trailer words, big-endian.
    fn with_trailer(body: &[u8], words: &[u64]) -> Vec<u8> {
        let mut key = body.to_vec();
        for word in words {
            key.extend_from_slice(&word.to_be_bytes());
        }
        key
    }

    #[test]
    fn key_trailers_are_stored_whole_once_and_as_xor_elsewhere() -> TestResult {
        let mut builder = BlockBuilder::with_key_trailer(2, 2);
        // Body "ab", then two words; the next key shares the body and the
        // first word, and its second word differs in the low byte.
        assert_eq!(builder.add(&with_trailer(b"ab", &[7, 0x1_0003]), b"x"), 2 + 16);
        assert_eq!(builder.add(&with_trailer(b"ab", &[7, 0x1_0005]), b"y"), 2);
        assert_eq!(builder.add(&with_trailer(b"b", &[7, 0x1_0005]), b"z"), 1 + 2);
        let bytes = builder.finish();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0u8, 2, 1, b'a', b'b'][..],            // restart point: whole body
            &[0, 0, 0, 0, 0, 0, 0, 7],               // and both words, 8 bytes each
            &[0, 0, 0, 0, 0, 1, 0, 3],
            b"x",
            &[2, 0, 1, 1, 6, b'y'],                  // shares "ab"; 7^7 = 0 (bit: word 1 changed), 5^3 = 6
            &[0, 1, 1, b'b', 1, 6, b'z'],            // restart point: XOR with the first key's trailer
            &[0, 0, 0, 0, 28, 0, 0, 0, 2, 0, 0, 0],  // restarts 0 and 28, count 2
        ]
        .concat();
        assert_eq!(bytes, expected);

        let block = Block::with_key_trailer(Bytes::from(bytes), 2, Arc::from(Path::new("test.sst")), 0)?;
        let entries = collect(&block)?;
        assert_eq!(
            entries,
            vec![
                (with_trailer(b"ab", &[7, 0x1_0003]), b"x".to_vec()),
                (with_trailer(b"ab", &[7, 0x1_0005]), b"y".to_vec()),
                (with_trailer(b"b", &[7, 0x1_0005]), b"z".to_vec()),
            ]
        );
        let mut iter = block.iter();
        iter.seek(&with_trailer(b"ab", &[7, 0x1_0004]))?;
        assert_eq!(iter.value(), Bytes::from_static(b"y"));
        Ok(())
    }

    #[test]
    fn a_key_trailer_past_the_entries_is_corruption() -> TestResult {
        // Restart point "k" whose 8-byte trailer is cut to 3 bytes.
        let bytes = vec![0, 1, 0, b'k', 0, 0, 7, 0, 0, 0, 0, 1, 0, 0, 0];
        // The first key's trailer is decoded when the block is loaded.
        let block = Block::with_key_trailer(Bytes::from(bytes), 1, Arc::from(Path::new("test.sst")), 1000);
        assert!(matches!(block, Err(Error::Corruption { offset: 1000, .. })));
        let too_wide = Block::with_key_trailer(Bytes::from(vec![0, 0, 0, 0]), 5, Arc::from(Path::new("t.sst")), 0);
        assert!(matches!(too_wide, Err(Error::Corruption { .. })));
        Ok(())
    }

    proptest! {
        #[test]
        fn random_entries_with_key_trailers_round_trip_and_seek(
            map in prop::collection::btree_map(
                // Mostly close numbers, sometimes any: XORs of every width.
                (prop::collection::vec(any::<u8>(), 0..6), prop_oneof![0u64..300, any::<u64>()], 0u64..3),
                prop::collection::vec(any::<u8>(), 0..10),
                0..200,
            ),
            interval in 1usize..20,
            probe in (prop::collection::vec(any::<u8>(), 0..6), prop_oneof![0u64..300, any::<u64>()], 0u64..3),
        ) {
            let key = |(body, a, b): &(Vec<u8>, u64, u64)| with_trailer(body, &[!a, !b]);
            // Byte order of the encoded keys is the order a table is built in.
            let sorted: BTreeMap<Vec<u8>, Vec<u8>> = map.iter().map(|(k, v)| (key(k), v.clone())).collect();
            let encoding = KeyEncoding { trailer_words: 2, tail_copies: false };
            round_trip_and_seek(&sorted, encoding, interval, &key(&probe))?;
        }
    }
}
