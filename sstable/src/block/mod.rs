//! Blocks: the unit a table file is read in.
//!
//! A table file is cut into blocks of about 4 KiB (one disk page), each read
//! and checksummed whole. Inside a block, entries are sorted, and because
//! neighbouring keys in a sorted run share long prefixes (`user0001/name`,
//! `user0001/email`, ...), each key stores only what differs from the key
//! before it:
//!
//! ```text
//! entry  = shared: varint | unshared: varint | value_len: varint | key[shared..] | value
//! block  = entry* | restart offset (u32 LE)* | restart count (u32 LE)
//! ```
//!
//! Prefix compression makes a key depend on every key before it, which would
//! force a reader to decode a block from its start. So every
//! `restart_interval`-th entry (16 by default) is a *restart point*: it stores
//! its whole key (`shared = 0`), and the trailer lists where each one starts.
//! A seek binary-searches the restart points, then scans at most 16 entries.
//! The interval trades space (a full key and 4 bytes per restart) for seek time.
//!
//! That is LevelDB's block, and all of it is in three places: [`BlockBuilder`]
//! (`builder.rs`) writes entries and the restart array, [`Block`] (here)
//! checks the restart array and decodes one entry, and [`BlockIter`]
//! (`iter.rs`) rebuilds keys while it walks and seeks.
//!
//! # Two layers a first reading can skip
//!
//! A block built with a [`KeyEncoding`] other than the default stores its
//! keys more tightly; each layer is a module of its own, and with both off a
//! block is exactly the format above:
//!
//! - `trailer.rs`, *key trailers*: the fixed numbers that end every key (a
//!   cell's timestamp and sequence) are stored as XORs against the previous
//!   key's, a byte or two instead of 16.
//! - `tail_copy.rs`, *tail copies*: a key may end with a copy of the end of
//!   an earlier key since the restart point (a column name that repeats from
//!   row to row), one byte instead of the name.
//!
//! With both, an entry is:
//!
//! ```text
//! entry = shared | literal_len | value_len | copy | literal | trailer | value
//! key   = previous body[..shared] + literal + copied tail, then the trailer
//! ```

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::coding::{get_fixed32, get_varint32};
use crate::error::{Error, Result};

mod builder;
mod iter;
mod tail_copy;
mod trailer;

pub use builder::BlockBuilder;
pub use iter::BlockIter;
pub use trailer::MAX_TRAILER_WORDS;
use trailer::{StoredTrailer, Words, WORD_LEN};

/// Size of one restart offset and of the restart count in the block trailer.
const U32_LEN: usize = 4;

/// How a block stores its keys beyond LevelDB's prefix compression (see the
/// module documentation). The default is plain blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyEncoding {
    /// Keys end with this many big-endian `u64` words, stored as XORs
    /// (at most [`MAX_TRAILER_WORDS`]).
    pub trailer_words: usize,
    /// An entry may end with a copy of an earlier key's tail.
    pub tail_copies: bool,
}

/// A decoded, read-only block: its bytes (a zero-copy slice of the file) and
/// where its restart trailer starts.
///
/// A block remembers which file and offset it came from, so that a damaged
/// entry found while iterating is reported at its exact place in the file.
#[derive(Clone)]
pub struct Block {
    contents: Bytes,
    /// End of the entries, start of the restart offsets.
    entries_end: usize,
    num_restarts: usize,
    /// Words of key trailer (see `trailer.rs`); 0 for plain blocks.
    trailer_words: usize,
    tail_copies: bool,
    /// The first key's trailer words, which restart points XOR against.
    first_trailer: Words,
    file: Arc<Path>,
    offset: u64,
}

/// Where one entry's parts lie in a block.
struct EntryParts {
    /// Body bytes shared with the previous key.
    shared: usize,
    /// The body bytes this entry stores.
    body: Range<usize>,
    /// The tail copied from an earlier key: (distance back, length); (0, 0) for none.
    copy: (usize, usize),
    trailer: StoredTrailer,
    value: Range<usize>,
}

impl std::fmt::Debug for Block {
    /// Where the block is and its shape, not its (possibly large) bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("file", &self.file)
            .field("offset", &self.offset)
            .field("size", &self.contents.len())
            .field("num_restarts", &self.num_restarts)
            .finish()
    }
}

impl Block {
    /// Checks the trailer of `contents` (a plain block read from `file` at
    /// byte `offset`) and wraps it. Restart offsets must start at 0, increase
    /// and point inside the entries; otherwise [`Error::Corruption`].
    pub fn new(contents: Bytes, file: Arc<Path>, offset: u64) -> Result<Block> {
        Block::with_key_trailer(contents, 0, file, offset)
    }

    /// [`Block::new`] for a block whose keys end with `trailer_words` words
    /// (as built by [`BlockBuilder::with_key_trailer`]); more than
    /// [`MAX_TRAILER_WORDS`] is [`Error::Corruption`].
    pub fn with_key_trailer(contents: Bytes, trailer_words: usize, file: Arc<Path>, offset: u64) -> Result<Block> {
        let encoding = KeyEncoding {
            trailer_words,
            tail_copies: false,
        };
        Block::with_encoding(contents, encoding, file, offset)
    }

    /// [`Block::new`] for a block built in `encoding` (a key trailer of more
    /// than [`MAX_TRAILER_WORDS`] is [`Error::Corruption`]).
    pub fn with_encoding(contents: Bytes, encoding: KeyEncoding, file: Arc<Path>, offset: u64) -> Result<Block> {
        Block::open(contents, encoding, file, offset, true)
    }

    /// [`Block::with_encoding`] for the same bytes again: a block of an
    /// immutable file that this process already wrapped once with
    /// [`Block::with_encoding`], all its restart offsets checked then. It
    /// reads the restart count and the first key's trailer (the restart
    /// count is bounds-checked still) but does not walk the restart array
    /// again: a seek that loads the block reads only the restart offsets its
    /// binary search visits. Every offset is still bounds-checked where it is
    /// used, so even bytes that changed under the map could cause an error,
    /// never a panic.
    pub(crate) fn checked_before(
        contents: Bytes,
        encoding: KeyEncoding,
        file: Arc<Path>,
        offset: u64,
    ) -> Result<Block> {
        Block::open(contents, encoding, file, offset, false)
    }

    /// Wraps `contents` after checking its restart count and, with
    /// `check_restarts`, every restart offset.
    fn open(
        contents: Bytes,
        encoding: KeyEncoding,
        file: Arc<Path>,
        offset: u64,
        check_restarts: bool,
    ) -> Result<Block> {
        let len = contents.len();
        let trailer_words = encoding.trailer_words;
        let mut block = Block {
            contents,
            entries_end: 0,
            num_restarts: 0,
            trailer_words,
            tail_copies: encoding.tail_copies,
            first_trailer: [0; MAX_TRAILER_WORDS],
            file,
            offset,
        };
        if trailer_words > MAX_TRAILER_WORDS {
            let what = format!("key trailer of {trailer_words} words (at most {MAX_TRAILER_WORDS})");
            return Err(block.corruption(0, what));
        }
        let count = match len.checked_sub(U32_LEN) {
            Some(at) => get_fixed32(&block.contents, at).unwrap_or(0),
            None => return Err(block.corruption(0, format!("block of {len} bytes has no restart count"))),
        };
        let trailer = (count as usize)
            .checked_mul(U32_LEN)
            .and_then(|n| n.checked_add(U32_LEN))
            .filter(|&n| n <= len);
        let Some(trailer) = trailer else {
            let at = len.saturating_sub(U32_LEN);
            return Err(block.corruption(
                at,
                format!("restart count {count} does not fit in a block of {len} bytes"),
            ));
        };
        block.entries_end = len - trailer;
        block.num_restarts = count as usize;
        if count == 0 && block.entries_end > 0 {
            return Err(block.corruption(block.entries_end, "entries but no restart points".into()));
        }
        if check_restarts {
            block.check_restart_offsets()?;
        }
        if block.trailer_words > 0 && block.entries_end > 0 {
            if let StoredTrailer::Whole(trailer) = block.decode_entry(0)?.trailer {
                let bytes = block.contents.get(trailer).unwrap_or_default();
                trailer::read_words(bytes, &mut block.first_trailer);
            }
        }
        Ok(block)
    }

    /// Checks that the restart offsets start at 0, increase and point inside
    /// the entries: a seek's binary search over them is right only then.
    fn check_restart_offsets(&self) -> Result<()> {
        let mut previous: Option<usize> = None;
        for i in 0..self.num_restarts {
            let restart = self.restart_offset(i)?;
            let in_order = match previous {
                None => restart == 0,
                Some(p) => restart > p,
            };
            if !in_order || restart >= self.entries_end {
                return Err(self.corruption(
                    self.entries_end + i * U32_LEN,
                    format!("restart point {i} at {restart} is out of order or past the entries"),
                ));
            }
            previous = Some(restart);
        }
        Ok(())
    }

    /// An iterator over this block's entries (not yet positioned: call
    /// [`BlockIter::seek_to_first`] or [`BlockIter::seek`]).
    pub fn iter(&self) -> BlockIter {
        BlockIter::new(self.clone())
    }

    /// A cursor that takes the block over (no reference count to raise and
    /// later drop, as [`Block::iter`] must for its copy).
    pub fn into_iter_owned(self) -> BlockIter {
        BlockIter::new(self)
    }

    /// Size of the block in bytes, trailer of restarts included.
    pub fn size(&self) -> usize {
        self.contents.len()
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Offset (within the block) of restart point `index`.
    fn restart_offset(&self, index: usize) -> Result<usize> {
        let at = self.entries_end + index * U32_LEN;
        match get_fixed32(&self.contents, at) {
            Some(offset) => Ok(offset as usize),
            None => Err(self.corruption(at, format!("restart point {index} is missing"))),
        }
    }

    /// Decodes the entry at `offset`, checking that every part lies within
    /// the entries: the three lengths, then the tail copy and the key trailer
    /// when the block has them. The value ends where the next entry starts.
    #[inline]
    fn decode_entry(&self, offset: usize) -> Result<EntryParts> {
        let bad = |what: &str| self.corruption(offset, format!("bad entry: {what}"));
        let input = self
            .contents
            .get(offset..self.entries_end)
            .ok_or_else(|| bad("offset past the entries"))?;
        let (shared, unshared, value_len, header) = match input {
            // The common case, LevelDB's fast path: all three lengths fit in a byte.
            [a, b, c, ..] if (a | b | c) < 0x80 => (u32::from(*a), u32::from(*b), u32::from(*c), 3),
            _ => {
                let (shared, n1) = get_varint32(input).ok_or_else(|| bad("shared length"))?;
                let rest = input.get(n1..).unwrap_or_default();
                let (unshared, n2) = get_varint32(rest).ok_or_else(|| bad("unshared length"))?;
                let rest = rest.get(n2..).unwrap_or_default();
                let (value_len, n3) = get_varint32(rest).ok_or_else(|| bad("value length"))?;
                (shared, unshared, value_len, n1 + n2 + n3)
            }
        };
        let mut body_start = offset + header;
        let mut copy = (0, 0);
        if self.tail_copies {
            let input = self.contents.get(body_start..self.entries_end).unwrap_or_default();
            let (decoded, n) = tail_copy::decode(input).ok_or_else(|| bad("tail copy"))?;
            body_start += n;
            copy = decoded;
        }
        let body_end = body_start
            .checked_add(unshared as usize)
            .filter(|&end| end <= self.entries_end)
            .ok_or_else(|| bad("key runs past the entries"))?;
        let (trailer, trailer_end) = if offset == 0 {
            // The block's first entry stores its trailer whole.
            let end = body_end + self.trailer_words * WORD_LEN;
            (StoredTrailer::Whole(body_end..end), end)
        } else {
            let input = self.contents.get(body_end..self.entries_end).unwrap_or_default();
            let (xors, n) = trailer::decode_xors(input, self.trailer_words).ok_or_else(|| bad("key trailer"))?;
            (StoredTrailer::Xor(xors), body_end + n)
        };
        let value_end = trailer_end
            .checked_add(value_len as usize)
            .filter(|&end| end <= self.entries_end)
            .ok_or_else(|| bad("key or value runs past the entries"))?;
        Ok(EntryParts {
            shared: shared as usize,
            body: body_start..body_end,
            copy,
            trailer,
            value: trailer_end..value_end,
        })
    }

    /// Whether the key stored at restart point `index` (where `shared` must
    /// be 0) is less than `target`. The body alone usually decides; only
    /// when it is a prefix of `target` is the whole key decoded (into `key`).
    fn restart_key_is_less(&self, index: usize, target: &[u8], key: &mut Vec<u8>) -> Result<bool> {
        let offset = self.restart_offset(index)?;
        let entry = self.decode_entry(offset)?;
        if entry.shared != 0 || entry.copy.1 != 0 {
            let what = format!("restart point {index} shares or copies key bytes");
            return Err(self.corruption(offset, what));
        }
        let body = self.contents.get(entry.body).unwrap_or_default();
        match target.get(..body.len()) {
            Some(front) if front == body => {
                key.clear();
                key.extend_from_slice(body);
                let mut words = self.first_trailer;
                let words = words.get_mut(..self.trailer_words).unwrap_or_default();
                trailer::apply(words, &entry.trailer, &self.contents, true, &self.first_trailer);
                trailer::push_words(key, words);
                Ok(key.as_slice() < target)
            }
            // The body differs from `target` within its length, or `target`
            // ends first: either way the body decides.
            _ => Ok(body < target),
        }
    }

    /// An [`Error::Corruption`] at `offset_in_block`.
    fn corruption(&self, offset_in_block: usize, what: String) -> Error {
        Error::Corruption {
            file: self.file.to_path_buf(),
            offset: self.offset + offset_in_block as u64,
            what,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! The plain block, and the helpers the layers' tests share.

    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    pub(super) type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    pub(super) fn block_of(bytes: Vec<u8>) -> Result<Block> {
        Block::new(Bytes::from(bytes), Arc::from(Path::new("test.sst")), 1000)
    }

    /// `key000`, `key001`, ... with values `v0`, `v1`, ...
    pub(super) fn numbered(n: usize, restart_interval: usize) -> Result<Block> {
        let mut builder = BlockBuilder::new(restart_interval);
        for i in 0..n {
            builder.add(format!("key{i:03}").as_bytes(), format!("v{i}").as_bytes());
        }
        block_of(builder.finish())
    }

    pub(super) fn collect(block: &Block) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut iter = block.iter();
        iter.seek_to_first()?;
        while iter.valid() {
            out.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next()?;
        }
        Ok(out)
    }

    /// Builds a block of `sorted` in `encoding`, reads every entry back and
    /// checks that a seek to `probe` lands where the map says.
    pub(super) fn round_trip_and_seek(
        sorted: &BTreeMap<Vec<u8>, Vec<u8>>,
        encoding: KeyEncoding,
        interval: usize,
        probe: &[u8],
    ) -> std::result::Result<(), TestCaseError> {
        let mut builder = BlockBuilder::with_encoding(interval, encoding);
        for (k, v) in sorted {
            builder.add(k, v);
        }
        let block = Block::with_encoding(
            Bytes::from(builder.finish()),
            encoding,
            Arc::from(Path::new("t.sst")),
            0,
        )?;
        let want: Vec<_> = sorted.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(collect(&block)?, want);
        let mut iter = block.iter();
        iter.seek(probe)?;
        match sorted.range(probe.to_vec()..).next() {
            Some((k, v)) => {
                prop_assert_eq!(iter.key(), k.as_slice());
                prop_assert_eq!(iter.value(), Bytes::from(v.clone()));
            }
            None => prop_assert!(!iter.valid()),
        }
        Ok(())
    }

    #[test]
    fn entries_are_prefix_compressed_with_restarts_in_the_trailer() {
        let mut builder = BlockBuilder::new(2);
        assert_eq!(builder.add(b"abc", b"1"), 3);
        assert_eq!(builder.add(b"abd", b"2"), 1);
        assert_eq!(builder.add(b"b", b"3"), 1);
        assert_eq!(builder.estimated_size(), 29);
        let bytes = builder.finish();
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            0, 3, 1, b'a', b'b', b'c', b'1', // offset 0: restart point, whole key
            2, 1, 1, b'd', b'2',             // offset 7: shares "ab"
            0, 1, 1, b'b', b'3',             // offset 12: restart point
            0, 0, 0, 0, 12, 0, 0, 0,         // restart offsets 0 and 12
            2, 0, 0, 0,                      // restart count
        ];
        assert_eq!(bytes, expected);
        assert!(builder.is_empty());
        assert_eq!(builder.estimated_size(), 4);
    }

    #[test]
    fn block_round_trips_every_entry_in_order() -> TestResult {
        let block = numbered(100, 16)?;
        assert_eq!(block.num_restarts(), 7); // entries 0, 16, 32, 48, 64, 80, 96
        let entries = collect(&block)?;
        assert_eq!(entries.len(), 100);
        assert_eq!(entries.first(), Some(&(b"key000".to_vec(), b"v0".to_vec())));
        assert_eq!(entries.get(57), Some(&(b"key057".to_vec(), b"v57".to_vec())));
        assert_eq!(entries.last(), Some(&(b"key099".to_vec(), b"v99".to_vec())));
        Ok(())
    }

    #[test]
    fn seek_lands_on_restart_points_and_between_them() -> TestResult {
        let block = numbered(100, 16)?;
        let mut iter = block.iter();
        for (target, expected) in [
            (&b"key016"[..], &b"key016"[..]), // exactly a restart point
            (b"key020", b"key020"),           // between restart points
            (b"key0205", b"key021"),          // between two keys
            (b"key015", b"key015"),           // last entry before a restart
            (b"key096", b"key096"),           // last restart point
            (b"key099", b"key099"),           // last key
            (b"a", b"key000"),                // before the first key
            (b"", b"key000"),                 // the empty key is smallest
        ] {
            iter.seek(target)?;
            assert!(iter.valid(), "seek {target:?}");
            assert_eq!(iter.key(), expected, "seek {target:?}");
        }
        iter.seek(b"key020")?;
        assert_eq!(iter.value(), Bytes::from_static(b"v20"));
        iter.next()?;
        assert_eq!(iter.key(), b"key021");
        Ok(())
    }

    #[test]
    fn seek_past_the_end_is_invalid() -> TestResult {
        let block = numbered(100, 16)?;
        let mut iter = block.iter();
        iter.seek(b"key0990")?;
        assert!(!iter.valid());
        iter.seek(b"z")?;
        assert!(!iter.valid());
        assert_eq!(iter.key(), b"");
        assert_eq!(iter.value(), Bytes::new());
        iter.next()?; // a no-op once invalid
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn next_past_the_last_entry_is_invalid() -> TestResult {
        let block = numbered(2, 16)?;
        let mut iter = block.iter();
        iter.seek_to_first()?;
        iter.next()?;
        assert_eq!(iter.key(), b"key001");
        iter.next()?;
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn empty_block_is_four_zero_bytes_and_has_no_entries() -> TestResult {
        let bytes = BlockBuilder::new(16).finish();
        assert_eq!(bytes, [0, 0, 0, 0]);
        let block = block_of(bytes)?;
        let mut iter = block.iter();
        iter.seek_to_first()?;
        assert!(!iter.valid());
        iter.seek(b"")?;
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn empty_key_and_empty_value_round_trip() -> TestResult {
        let mut builder = BlockBuilder::new(16);
        builder.add(b"", b"");
        builder.add(b"a", b"");
        builder.add(b"ab", b"x");
        let block = block_of(builder.finish())?;
        let expected = vec![
            (b"".to_vec(), b"".to_vec()),
            (b"a".to_vec(), b"".to_vec()),
            (b"ab".to_vec(), b"x".to_vec()),
        ];
        assert_eq!(collect(&block)?, expected);
        let mut iter = block.iter();
        iter.seek(b"")?;
        assert_eq!(iter.key(), b"");
        Ok(())
    }

    #[test]
    fn restart_interval_one_makes_every_entry_a_restart_point() -> TestResult {
        let block = numbered(10, 1)?;
        assert_eq!(block.num_restarts(), 10);
        let mut iter = block.iter();
        iter.seek(b"key007")?;
        assert_eq!(iter.key(), b"key007");
        Ok(())
    }

    #[test]
    fn values_are_zero_copy_slices_of_the_block() -> TestResult {
        let block = numbered(3, 16)?;
        let mut iter = block.iter();
        iter.seek(b"key001")?;
        let value = iter.value();
        let base = block.contents.as_ptr() as usize;
        let at = value.as_ptr() as usize;
        assert!(at >= base && at + value.len() <= base + block.size());
        // Borrowed, the same bytes in the same place.
        let borrowed = iter.value_bytes();
        assert_eq!((borrowed, borrowed.as_ptr()), (&value[..], value.as_ptr()));
        Ok(())
    }

    #[test]
    fn too_short_block_is_corruption_at_the_block_offset() {
        match block_of(vec![1, 0]) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, Path::new("test.sst"));
                assert_eq!(offset, 1000);
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn restart_count_larger_than_the_block_is_corruption() {
        // 4 bytes claiming 1,000 restart points.
        assert!(matches!(
            block_of(vec![0xe8, 0x03, 0, 0]),
            Err(Error::Corruption { offset: 1000, .. })
        ));
    }

    #[test]
    fn entry_running_past_the_entries_is_corruption_at_that_entry() -> TestResult {
        // One entry: shared 0, unshared 1, value_len 9 (but only 1 value byte).
        let bytes = vec![0, 1, 9, b'k', b'v', 0, 0, 0, 0, 1, 0, 0, 0];
        let block = block_of(bytes)?;
        let mut iter = block.iter();
        match iter.seek_to_first() {
            Err(Error::Corruption { offset, what, .. }) => {
                assert_eq!(offset, 1000);
                assert!(what.contains("runs past"), "{what}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn shared_longer_than_previous_key_is_corruption() -> TestResult {
        // Entry 0 "k"; entry 1 claims 5 shared bytes (restart interval 16).
        let bytes = vec![0, 1, 0, b'k', 5, 1, 0, b'x', 0, 0, 0, 0, 1, 0, 0, 0];
        let block = block_of(bytes)?;
        let mut iter = block.iter();
        iter.seek_to_first()?;
        assert!(matches!(iter.next(), Err(Error::Corruption { offset: 1004, .. })));
        Ok(())
    }

    proptest! {
        #[test]
        fn random_sorted_entries_round_trip_and_seek(
            map in prop::collection::btree_map(
                prop::collection::vec(any::<u8>(), 0..12),
                prop::collection::vec(any::<u8>(), 0..20),
                0..200,
            ),
            interval in 1usize..20,
            probe in prop::collection::vec(any::<u8>(), 0..12),
        ) {
            let mut builder = BlockBuilder::new(interval);
            for (k, v) in &map {
                builder.add(k, v);
            }
            let block = block_of(builder.finish())?;
            let got = collect(&block)?;
            let want: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(got, want);

            let mut iter = block.iter();
            iter.seek(&probe)?;
            let expected = map.range(probe.clone()..).next();
            match expected {
                Some((k, v)) => {
                    prop_assert!(iter.valid());
                    prop_assert_eq!(iter.key(), k.as_slice());
                    prop_assert_eq!(iter.value(), Bytes::from(v.clone()));
                }
                None => prop_assert!(!iter.valid()),
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_block_decoder(
            bytes in prop::collection::vec(any::<u8>(), 0..300),
            target in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            if let Ok(block) = block_of(bytes) {
                let mut iter = block.iter();
                let mut steps = 0;
                if iter.seek_to_first().is_ok() {
                    while iter.valid() && steps < 1000 {
                        let _ = iter.value();
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
