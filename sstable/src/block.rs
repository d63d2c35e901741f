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
//! # Key trailers
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
//! costs 2 bytes instead of 16. With `n = 0` this is exactly the plain format
//! above.
//!
//! # Tail copies
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

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::coding::{get_fixed32, get_varint128, get_varint32, get_varint64, put_varint128, put_varint64};
use crate::error::{Error, Result};

/// Size of one restart offset and of the restart count in the block trailer.
const U32_LEN: usize = 4;

/// Size of one key-trailer word.
const WORD_LEN: usize = 8;

/// The most words a key trailer may have.
pub const MAX_TRAILER_WORDS: usize = 4;

/// Writes sorted entries into one block.
///
/// The caller adds keys in strictly increasing order, each at least as long
/// as the key trailer, and keeps a block under 4 GiB (restart offsets are
/// `u32`); [`crate::TableBuilder`] guarantees all three.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    trailer_words: usize,
    tail_copies: bool,
    entries: usize,
    last_key: Vec<u8>,
    /// The trailer of the block's first key: what restart points XOR against.
    first_trailer: Vec<u8>,
    /// With tail copies: the bodies of the keys since the last restart point
    /// (the first `recent_len`; the rest are spare buffers).
    recent: Vec<Vec<u8>>,
    recent_len: usize,
}

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

/// The farthest back (in entries) a tail copy may reach.
const MAX_COPY_DISTANCE: usize = 15;

/// Bits of a copy's varint that hold the distance.
const COPY_DISTANCE_BITS: u32 = 4;

impl BlockBuilder {
    /// A builder of plain blocks that starts a restart point every
    /// `restart_interval` entries (0 is treated as 1: every entry a restart point).
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder::with_key_trailer(restart_interval, 0)
    }

    /// A builder whose keys end with `trailer_words` big-endian `u64`s,
    /// stored as XOR with the previous key's (at most [`MAX_TRAILER_WORDS`]).
    pub fn with_key_trailer(restart_interval: usize, trailer_words: usize) -> BlockBuilder {
        let encoding = KeyEncoding {
            trailer_words,
            tail_copies: false,
        };
        BlockBuilder::with_encoding(restart_interval, encoding)
    }

    /// A builder of blocks in `encoding`.
    pub fn with_encoding(restart_interval: usize, encoding: KeyEncoding) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            trailer_words: encoding.trailer_words.min(MAX_TRAILER_WORDS),
            tail_copies: encoding.tail_copies,
            entries: 0,
            last_key: Vec::new(),
            first_trailer: Vec::new(),
            recent: Vec::new(),
            recent_len: 0,
        }
    }

    /// Appends an entry and returns how many key bytes it stored (the
    /// literal part of the body, the copy reference and the trailer as
    /// written), for the table's `stored_key_bytes` property.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> usize {
        let trailer_len = self.trailer_words * WORD_LEN;
        debug_assert!(key.len() >= trailer_len, "key shorter than its trailer");
        let (body, trailer) = key.split_at(key.len().saturating_sub(trailer_len));
        let restart = self.entries.is_multiple_of(self.restart_interval);
        if restart {
            self.recent_len = 0;
        }
        let shared = if restart {
            let offset = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
            debug_assert!(offset != u32::MAX, "block grew past 4 GiB");
            self.restarts.push(offset);
            0
        } else {
            let last_body = self
                .last_key
                .get(..self.last_key.len().saturating_sub(trailer_len))
                .unwrap_or_default();
            common_prefix_len(last_body, body)
        };
        let unshared = body.get(shared..).unwrap_or_default();
        let (literal, copy) = self.tail_copy(unshared);
        put_varint64(&mut self.buf, shared as u64);
        put_varint64(&mut self.buf, literal.len() as u64);
        put_varint64(&mut self.buf, value.len() as u64);
        let key_start = self.buf.len();
        if self.tail_copies {
            put_varint64(&mut self.buf, copy);
        }
        self.buf.extend_from_slice(literal);
        if self.entries == 0 {
            self.buf.extend_from_slice(trailer);
            self.first_trailer.clear();
            self.first_trailer.extend_from_slice(trailer);
        } else {
            let base = match restart {
                true => self.first_trailer.as_slice(),
                false => self
                    .last_key
                    .get(self.last_key.len().saturating_sub(trailer_len)..)
                    .unwrap_or_default(),
            };
            let mut xors = [0u64; MAX_TRAILER_WORDS];
            for ((xor, word), base) in xors
                .iter_mut()
                .zip(trailer.chunks_exact(WORD_LEN))
                .zip(base.chunks_exact(WORD_LEN))
            {
                *xor = read_word(word) ^ read_word(base);
            }
            encode_trailer_xors(&mut self.buf, xors.get(..self.trailer_words).unwrap_or_default());
        }
        let stored = self.buf.len() - key_start;
        self.buf.extend_from_slice(value);

        // The new key shares its first `shared` bytes with the last one.
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(key.get(shared..).unwrap_or_default());
        if self.tail_copies {
            if self.recent.len() <= self.recent_len {
                self.recent.push(Vec::new());
            }
            if let Some(slot) = self.recent.get_mut(self.recent_len) {
                slot.clear();
                slot.extend_from_slice(body);
            }
            self.recent_len += 1;
        }
        self.entries += 1;
        stored
    }

    /// Splits `unshared` into a literal and a copy of the longest tail it has
    /// in common with a body since the restart point (`copy_len << 4 |
    /// distance`, 0 for none). A copy shorter than 2 bytes would save nothing.
    fn tail_copy<'k>(&self, unshared: &'k [u8]) -> (&'k [u8], u64) {
        let mut best = (0usize, 0usize); // (length, distance)
        if self.tail_copies {
            let since_restart = self.recent.get(..self.recent_len).unwrap_or_default();
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
        }
        if best.0 < 2 {
            return (unshared, 0);
        }
        let literal = unshared.get(..unshared.len() - best.0).unwrap_or_default();
        (literal, ((best.0 as u64) << COPY_DISTANCE_BITS) | best.1 as u64)
    }

    /// Size of the block if it were finished now: entries plus trailer.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + self.restarts.len() * U32_LEN + U32_LEN
    }

    /// Number of entries added since the last [`finish`](Self::finish).
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// True when no entry has been added since the last finish.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart trailer, returns the finished block and leaves the
    /// builder empty, ready for the next block.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut block = std::mem::take(&mut self.buf);
        for restart in &self.restarts {
            block.extend_from_slice(&restart.to_le_bytes());
        }
        let count = u32::try_from(self.restarts.len()).unwrap_or(u32::MAX);
        block.extend_from_slice(&count.to_le_bytes());
        self.restarts.clear();
        self.entries = 0;
        self.last_key.clear();
        block
    }
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Writes the XORs of a key trailer (every entry but the block's first): the
/// first XOR, shifted left to make room for one "changed" bit per later word,
/// then each later word that changed.
fn encode_trailer_xors(buf: &mut Vec<u8>, xors: &[u64]) {
    let Some((&first, later)) = xors.split_first() else {
        return;
    };
    let mut head = u128::from(first) << later.len();
    for (bit, &xor) in later.iter().enumerate() {
        if xor != 0 {
            head |= 1 << bit;
        }
    }
    put_varint128(buf, head);
    for &xor in later.iter().filter(|&&xor| xor != 0) {
        put_varint64(buf, xor);
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
    /// Words of key trailer (see the module documentation); 0 for plain blocks.
    trailer_words: usize,
    tail_copies: bool,
    /// The first key's trailer words, which restart points XOR against.
    first_trailer: [u64; MAX_TRAILER_WORDS],
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

/// An entry's key trailer as stored.
enum StoredTrailer {
    /// In the block's first entry: the words' bytes, right after the body.
    Whole(Range<usize>),
    /// Elsewhere: each word XOR the previous key's, or at a restart point the
    /// first key's (only the first `trailer_words` are used).
    Xor([u64; MAX_TRAILER_WORDS]),
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
        let mut previous: Option<usize> = None;
        for i in 0..block.num_restarts {
            let restart = block.restart_offset(i)?;
            let in_order = match previous {
                None => restart == 0,
                Some(p) => restart > p,
            };
            if !in_order || restart >= block.entries_end {
                return Err(block.corruption(
                    block.entries_end + i * U32_LEN,
                    format!("restart point {i} at {restart} is out of order or past the entries"),
                ));
            }
            previous = Some(restart);
        }
        if block.trailer_words > 0 && block.entries_end > 0 {
            if let StoredTrailer::Whole(trailer) = block.decode_entry(0)?.trailer {
                let bytes = block.contents.get(trailer).unwrap_or_default();
                for (word, bytes) in block.first_trailer.iter_mut().zip(bytes.chunks_exact(WORD_LEN)) {
                    *word = read_word(bytes);
                }
            }
        }
        Ok(block)
    }

    /// An iterator over this block's entries (not yet positioned: call
    /// [`BlockIter::seek_to_first`] or [`BlockIter::seek`]).
    pub fn iter(&self) -> BlockIter {
        BlockIter {
            block: self.clone(),
            next_offset: 0,
            // Room for a typical key, so decoding the first few keys does not
            // grow the buffer step by step.
            key: Vec::with_capacity(64),
            probe: Vec::new(),
            value: 0..0,
            valid: false,
            next_restart: 0,
            next_restart_offset: 0,
            words: [0; MAX_TRAILER_WORDS],
            recent: Vec::new(),
            recent_len: 0,
        }
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

    /// Decodes the entry at `offset` (the first entry stores its trailer
    /// whole, the others as XORs), checking that every part lies within the
    /// entries. The value ends where the next entry starts.
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
            let (value, n) = get_varint64(input).ok_or_else(|| bad("tail copy"))?;
            body_start += n;
            let distance = (value & ((1 << COPY_DISTANCE_BITS) - 1)) as usize;
            let len = usize::try_from(value >> COPY_DISTANCE_BITS).map_err(|_| bad("tail copy"))?;
            if (distance == 0) != (len == 0) {
                return Err(bad("tail copy"));
            }
            copy = (distance, len);
        }
        let body_end = body_start
            .checked_add(unshared as usize)
            .filter(|&end| end <= self.entries_end)
            .ok_or_else(|| bad("key runs past the entries"))?;
        let (trailer, trailer_end) = if offset == 0 {
            let end = body_end + self.trailer_words * WORD_LEN;
            (StoredTrailer::Whole(body_end..end), end)
        } else {
            let mut xors = [0u64; MAX_TRAILER_WORDS];
            let mut at = body_end;
            if let Some((first, later)) = xors.get_mut(..self.trailer_words).and_then(|x| x.split_first_mut()) {
                let input = self.contents.get(at..self.entries_end).unwrap_or_default();
                // Almost every head fits in 64 bits: decode it as such first.
                let (head, n) = match get_varint64(input) {
                    Some((head, n)) => (u128::from(head), n),
                    None => get_varint128(input).ok_or_else(|| bad("key trailer"))?,
                };
                at += n;
                *first = u64::try_from(head >> later.len()).map_err(|_| bad("key trailer"))?;
                for (bit, xor) in later.iter_mut().enumerate() {
                    if head & (1 << bit) != 0 {
                        let input = self.contents.get(at..self.entries_end).unwrap_or_default();
                        let (value, n) = get_varint64(input).ok_or_else(|| bad("key trailer"))?;
                        *xor = value;
                        at += n;
                    }
                }
            }
            (StoredTrailer::Xor(xors), at)
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
                self.push_trailer(&entry.trailer, &self.first_trailer, key);
                Ok(key.as_slice() < target)
            }
            // The body differs from `target` within its length, or `target`
            // ends first: either way the body decides.
            _ => Ok(body < target),
        }
    }

    /// Appends a decoded trailer to `key`: the stored bytes, or each XOR
    /// applied to the matching word of `base`.
    fn push_trailer(&self, trailer: &StoredTrailer, base: &[u64; MAX_TRAILER_WORDS], key: &mut Vec<u8>) {
        match trailer {
            StoredTrailer::Whole(bytes) => key.extend_from_slice(self.contents.get(bytes.clone()).unwrap_or_default()),
            StoredTrailer::Xor(xors) => {
                for (xor, base) in xors.iter().zip(base).take(self.trailer_words) {
                    key.extend_from_slice(&(xor ^ base).to_be_bytes());
                }
            }
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

/// A cursor over a [`Block`]'s entries in key order.
///
/// It owns a (cheap, reference-counted) copy of the block, rebuilds each full
/// key from the shared prefix of the previous one, and hands out values as
/// zero-copy slices. Any decoding error leaves it invalid and is returned.
#[derive(Debug)]
pub struct BlockIter {
    block: Block,
    /// Where the entry after the current one starts.
    next_offset: usize,
    /// The first restart point not yet passed, and its offset (`usize::MAX`
    /// past the last): tells whether the next entry is one.
    next_restart: usize,
    next_restart_offset: usize,
    key: Vec<u8>,
    /// The current key's trailer words, which the next entry's XORs apply to.
    words: [u64; MAX_TRAILER_WORDS],
    /// With tail copies: the bodies decoded since the last restart point
    /// (the first `recent_len`; the rest are spare buffers).
    recent: Vec<Vec<u8>>,
    recent_len: usize,
    /// Restart keys decoded during a seek's binary search.
    probe: Vec<u8>,
    value: Range<usize>,
    valid: bool,
}

impl BlockIter {
    /// Positions at the first entry (invalid if the block is empty).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.key.clear();
        self.next_offset = 0;
        self.set_next_restart(0);
        self.valid = true;
        self.next()
    }

    /// Positions at the first entry whose key is `>= target`, or invalid if
    /// every key is smaller.
    ///
    /// Binary search finds the last restart point whose key is `< target`
    /// (those keys are stored whole, so they can be compared without decoding
    /// anything before them); a linear scan from there finds the entry.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.valid = false;
        if self.block.num_restarts == 0 {
            return Ok(());
        }
        let (mut left, mut right) = (0, self.block.num_restarts - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            if self.block.restart_key_is_less(mid, target, &mut self.probe)? {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.key.clear();
        self.next_offset = self.block.restart_offset(left)?;
        self.set_next_restart(left);
        self.valid = true;
        self.next()?;
        while self.valid && self.key.as_slice() < target {
            self.next()?;
        }
        Ok(())
    }

    /// Moves to the next entry; past the last one the iterator becomes invalid.
    /// Does nothing on an invalid iterator.
    #[expect(
        clippy::should_implement_trait,
        reason = "a cursor step that can fail (LevelDB's `Next`), not `Iterator::next`"
    )]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        self.valid = false;
        if self.next_offset >= self.block.entries_end {
            return Ok(());
        }
        let offset = self.next_offset;
        let restart = offset == self.next_restart_offset;
        let entry = self.block.decode_entry(offset)?;
        let trailer_len = self.block.trailer_words * WORD_LEN;
        // The previous key's body; at a restart point there is none to share.
        let previous_body = match restart {
            true => 0,
            false => self.key.len().checked_sub(trailer_len).unwrap_or(usize::MAX),
        };
        if entry.shared > previous_body || (restart && (entry.shared != 0 || entry.copy.1 != 0)) {
            let what = format!(
                "entry shares {} bytes of a {}-byte previous key",
                entry.shared,
                self.key.len()
            );
            return Err(self.block.corruption(offset, what));
        }
        self.key.truncate(entry.shared);
        self.key
            .extend_from_slice(self.block.contents.get(entry.body.clone()).unwrap_or_default());
        if self.block.tail_copies {
            if restart {
                self.recent_len = 0;
            }
            let (distance, len) = entry.copy;
            if len > 0 {
                let tail = self
                    .recent_len
                    .checked_sub(distance)
                    .and_then(|at| self.recent.get(at..self.recent_len))
                    .and_then(|bodies| bodies.first())
                    .and_then(|body| body.get(body.len().checked_sub(len)?..));
                let Some(tail) = tail else {
                    let what = format!("entry copies {len} bytes from {distance} keys back, which has none");
                    return Err(self.block.corruption(offset, what));
                };
                self.key.extend_from_slice(tail);
            }
            if self.recent.len() <= self.recent_len {
                self.recent.push(Vec::new());
            }
            if let Some(slot) = self.recent.get_mut(self.recent_len) {
                slot.clear();
                slot.extend_from_slice(&self.key);
            }
            self.recent_len += 1;
        }
        let words = self.words.get_mut(..self.block.trailer_words).unwrap_or_default();
        match entry.trailer {
            StoredTrailer::Whole(bytes) => {
                let bytes = self.block.contents.get(bytes).unwrap_or_default();
                for (word, bytes) in words.iter_mut().zip(bytes.chunks_exact(WORD_LEN)) {
                    *word = read_word(bytes);
                }
            }
            StoredTrailer::Xor(xors) => {
                // The XORs apply to the previous key's words, or at a restart
                // point to the block's first key's.
                if restart {
                    for (word, first) in words.iter_mut().zip(self.block.first_trailer) {
                        *word = first;
                    }
                }
                for (word, xor) in words.iter_mut().zip(xors) {
                    *word ^= xor;
                }
            }
        }
        let mut bytes = [0u8; MAX_TRAILER_WORDS * WORD_LEN];
        for (chunk, word) in bytes.chunks_exact_mut(WORD_LEN).zip(words.iter()) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        self.key
            .extend_from_slice(bytes.get(..words.len() * WORD_LEN).unwrap_or_default());
        if restart {
            self.set_next_restart(self.next_restart + 1);
        }
        self.next_offset = entry.value.end;
        self.value = entry.value;
        self.valid = true;
        Ok(())
    }

    /// Remembers that restart point `index` is the next one to meet.
    fn set_next_restart(&mut self, index: usize) {
        self.next_restart = index;
        self.next_restart_offset = match index < self.block.num_restarts {
            // Offsets were checked when the block was loaded.
            true => self.block.restart_offset(index).unwrap_or(usize::MAX),
            false => usize::MAX,
        };
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when invalid).
    pub fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// The current value, a zero-copy slice of the block (empty when invalid).
    pub fn value(&self) -> Bytes {
        if self.valid {
            self.block.contents.slice(self.value.clone())
        } else {
            Bytes::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn block_of(bytes: Vec<u8>) -> Result<Block> {
        Block::new(Bytes::from(bytes), Arc::from(Path::new("test.sst")), 1000)
    }

    /// `key000`, `key001`, ... with values `v0`, `v1`, ...
    fn numbered(n: usize, restart_interval: usize) -> Result<Block> {
        let mut builder = BlockBuilder::new(restart_interval);
        for i in 0..n {
            builder.add(format!("key{i:03}").as_bytes(), format!("v{i}").as_bytes());
        }
        block_of(builder.finish())
    }

    fn collect(block: &Block) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut iter = block.iter();
        iter.seek_to_first()?;
        while iter.valid() {
            out.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next()?;
        }
        Ok(out)
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

    /// Builds a block of `sorted` in `encoding`, reads every entry back and
    /// checks that a seek to `probe` lands where the map says.
    fn round_trip_and_seek(
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
