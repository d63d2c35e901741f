//! Tail copies: a key may end with the end of an earlier key.
//!
//! Prefix compression shares a key's front with the key before it. In a
//! wide-column store the rest of a key repeats too, from further back: the
//! column name. The cells of a row come in column order, so `book:7/status`
//! follows `book:7/branch_id` (sharing only `book:7/`), but ends exactly like
//! `book:6/status` three keys earlier. A block built with *tail copies* lets
//! each entry end its body with a copy of the last bytes of the body of one of
//! the (at most 15) keys since the restart point before it:
//!
//! ```text
//! entry = shared | literal_len | value_len | copy | literal | trailer | value
//! copy  = varint(copy_len << 4 | distance)      0: no copy
//! body  = previous body[..shared] + literal + last copy_len bytes of the body `distance` keys back
//! ```
//!
//! A restart point copies nothing (it must decode on its own). The builder
//! picks the earlier key with the longest common tail. HBase's PREFIX_TREE
//! encoding goes further (a trie of rows, families and qualifiers per block);
//! this is the smallest step that stops a block from storing the same column
//! name once per row.

use crate::coding::get_varint64;

/// The farthest back (in entries) a tail copy may reach.
const MAX_COPY_DISTANCE: usize = 15;

/// Bits of a copy's varint that hold the distance.
const COPY_DISTANCE_BITS: u32 = 4;

/// The bodies of the keys since the last restart point, oldest first: what
/// a copy may reach. The builder and the iterator each keep one, and keep it
/// the same way, so a distance means the same key to both.
#[derive(Debug, Default)]
pub(super) struct RecentBodies {
    /// The first `len` are the bodies; the rest are spare buffers, kept to
    /// save an allocation per key.
    bodies: Vec<Vec<u8>>,
    len: usize,
}

impl RecentBodies {
    /// Forgets every body: a restart point copies nothing and nothing after
    /// it copies from before it.
    #[inline]
    pub(super) fn restart(&mut self) {
        self.len = 0;
    }

    /// Remembers `body` as the newest key's.
    #[inline]
    pub(super) fn push(&mut self, body: &[u8]) {
        if self.bodies.len() <= self.len {
            self.bodies.push(Vec::new());
        }
        if let Some(slot) = self.bodies.get_mut(self.len) {
            slot.clear();
            slot.extend_from_slice(body);
        }
        self.len += 1;
    }

    /// Splits `unshared` into a literal and a copy of the longest tail it has
    /// in common with a remembered body (`copy_len << 4 | distance`, 0 for
    /// none). A copy shorter than 2 bytes would save nothing.
    pub(super) fn split<'k>(&self, unshared: &'k [u8]) -> (&'k [u8], u64) {
        let mut best = (0usize, 0usize); // (length, distance)
        let since_restart = self.bodies.get(..self.len).unwrap_or_default();
        for (back, body) in since_restart.iter().rev().take(MAX_COPY_DISTANCE).enumerate() {
            let common = unshared
                .iter()
                .rev()
                .zip(body.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            if common > best.0 {
                best = (common, back + 1);
            }
        }
        if best.0 < 2 {
            return (unshared, 0);
        }
        let literal = unshared.get(..unshared.len() - best.0).unwrap_or_default();
        (literal, ((best.0 as u64) << COPY_DISTANCE_BITS) | best.1 as u64)
    }

    /// The last `len` bytes of the body `distance` keys back, if there is
    /// such a body and it is that long.
    #[inline]
    pub(super) fn tail(&self, distance: usize, len: usize) -> Option<&[u8]> {
        let body = self.bodies.get(self.len.checked_sub(distance)?..self.len)?.first()?;
        body.get(body.len().checked_sub(len)?..)
    }
}

/// Reads a copy from the front of `input`: `((distance, length), bytes
/// taken)`, `(0, 0)` for none; `None` when cut short or when exactly one of
/// distance and length is 0.
#[inline]
pub(super) fn decode(input: &[u8]) -> Option<((usize, usize), usize)> {
    let (value, n) = get_varint64(input)?;
    let distance = (value & ((1 << COPY_DISTANCE_BITS) - 1)) as usize;
    let len = usize::try_from(value >> COPY_DISTANCE_BITS).ok()?;
    if (distance == 0) != (len == 0) {
        return None;
    }
    Some(((distance, len), n))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use bytes::Bytes;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    use super::super::tests::{collect, round_trip_and_seek, TestResult};
    use super::super::{Block, BlockBuilder, KeyEncoding, MAX_TRAILER_WORDS};
    use crate::error::Error;

    /// Plain keys with tail copies.
    const TAIL_COPIES: KeyEncoding = KeyEncoding {
        trailer_words: 0,
        tail_copies: true,
    };

    #[test]
    fn an_entry_copies_its_tail_from_a_key_since_the_restart_point() -> TestResult {
        let encoding = TAIL_COPIES;
        let mut builder = BlockBuilder::with_encoding(16, encoding);
        // Cells of two rows with the same two columns.
        assert_eq!(builder.add(b"r1/city", b"a"), 1 + 7); // restart point: copy 0, whole key
        assert_eq!(builder.add(b"r1/name", b"b"), 1 + 4); // shares "r1/", nothing to copy
        assert_eq!(builder.add(b"r2/city", b"c"), 1 + 1); // shares "r", copies "/city" from 2 back
        assert_eq!(builder.add(b"r2/name", b"d"), 1); // shares "r2/", copies "name" from 2 back
        let bytes = builder.finish();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0u8, 7, 1, 0][..], b"r1/city", b"a",
            &[3, 4, 1, 0], b"name", b"b",
            &[1, 1, 1, (5 << 4) | 2, b'2', b'c'],   // "r" + "2" + "/city" (5 bytes, 2 keys back)
            &[3, 0, 1, (4 << 4) | 2, b'd'],         // "r2/" + "name" (4 bytes, 2 keys back)
            &[0, 0, 0, 0, 1, 0, 0, 0],              // one restart point, at 0
        ]
        .concat();
        assert_eq!(bytes, expected);
        let block = Block::with_encoding(Bytes::from(bytes), encoding, Arc::from(Path::new("t.sst")), 0)?;
        let keys: Vec<Vec<u8>> = collect(&block)?.into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [&b"r1/city"[..], b"r1/name", b"r2/city", b"r2/name"]);
        let mut iter = block.iter();
        iter.seek(b"r2/d")?;
        assert_eq!(iter.key(), b"r2/name");
        Ok(())
    }

    #[test]
    fn a_tail_copy_reaching_past_the_restart_point_is_corruption() -> TestResult {
        let encoding = TAIL_COPIES;
        // Entry 0 "ab"; entry 1 copies 2 bytes from 3 keys back (there is 1).
        let bytes = vec![0, 2, 0, 0, b'a', b'b', 0, 0, 0, (2 << 4) | 3, 0, 0, 0, 0, 1, 0, 0, 0];
        let block = Block::with_encoding(Bytes::from(bytes), encoding, Arc::from(Path::new("t.sst")), 0)?;
        let mut iter = block.iter();
        iter.seek_to_first()?;
        assert!(matches!(iter.next(), Err(Error::Corruption { offset: 6, .. })));
        // A restart point that copies.
        let bytes = vec![0, 0, 0, (2 << 4) | 1, 0, 0, 0, 0, 1, 0, 0, 0];
        let block = Block::with_encoding(Bytes::from(bytes), encoding, Arc::from(Path::new("t.sst")), 0)?;
        assert!(matches!(block.iter().seek_to_first(), Err(Error::Corruption { .. })));
        Ok(())
    }

    proptest! {
        #[test]
        fn wide_column_keys_with_tail_copies_round_trip_and_seek(
            cells in prop::collection::btree_set((0u16..60, 0usize..4, 0u64..50), 0..300),
            interval in 1usize..20,
            trailer_words in 0usize..=2,
            probe in (0u16..60, 0usize..4, 0u64..50),
        ) {
            // Rows, a few column names, a trailer: the shape tail copies are for.
            const COLUMNS: [&[u8]; 4] = [b"branch_id", b"loan_count", b"status", b"title"];
            let key = |&(row, column, version): &(u16, usize, u64)| {
                let mut k = format!("book:{row}/").into_bytes();
                k.extend_from_slice(COLUMNS.get(column).copied().unwrap_or_default());
                for word in 0..trailer_words as u64 {
                    k.extend_from_slice(&(!(version * 3 + word)).to_be_bytes());
                }
                k
            };
            let sorted: BTreeMap<Vec<u8>, Vec<u8>> =
                cells.iter().map(|c| (key(c), format!("{c:?}").into_bytes())).collect();
            let encoding = KeyEncoding { trailer_words, tail_copies: true };
            round_trip_and_seek(&sorted, encoding, interval, &key(&probe))?;
        }

        #[test]
        fn arbitrary_bytes_never_panic_a_block_with_a_key_trailer_or_tail_copies(
            bytes in prop::collection::vec(any::<u8>(), 0..300),
            trailer_words in 0usize..=MAX_TRAILER_WORDS,
            tail_copies in any::<bool>(),
            target in prop::collection::vec(any::<u8>(), 0..20),
        ) {
            let encoding = KeyEncoding { trailer_words, tail_copies };
            if let Ok(block) = Block::with_encoding(Bytes::from(bytes), encoding, Arc::from(Path::new("t.sst")), 0) {
                let mut iter = block.iter();
                let mut steps = 0;
                if iter.seek_to_first().is_ok() {
                    while iter.valid() && steps < 1000 {
                        if iter.next().is_err() {
                            break;
                        }
                        steps += 1;
                    }
                }
                let _ = iter.seek(&target);
            }
        }
    }
}
