//! Writing a block: entries in key order, a restart point every
//! `restart_interval` entries, and the restart array at the end.

use crate::coding::{common_prefix_len, put_varint64};

use super::tail_copy::RecentBodies;
use super::trailer::{self, MAX_TRAILER_WORDS, WORD_LEN};
use super::{KeyEncoding, U32_LEN};

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
    entries: usize,
    /// Entries to add before the next restart point (0: the next is one).
    /// Counted down rather than `entries % restart_interval`: a division per
    /// entry of every flush and compaction.
    to_restart: usize,
    last_key: Vec<u8>,
    /// The trailer of the block's first key: what restart points XOR against.
    first_trailer: Vec<u8>,
    /// With tail copies: the bodies a copy may reach.
    recent: Option<RecentBodies>,
}

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
            entries: 0,
            to_restart: 0,
            last_key: Vec::new(),
            first_trailer: Vec::new(),
            recent: encoding.tail_copies.then(RecentBodies::default),
        }
    }

    /// Appends an entry and returns how many key bytes it stored (the
    /// literal part of the body, the copy reference and the trailer as
    /// written), for the table's `stored_key_bytes` property.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> usize {
        let mut last_key = std::mem::take(&mut self.last_key);
        let shared = common_prefix_len(&last_key, key);
        let stored = self.add_after(key, value, &last_key, shared);
        // The new key shares its first `shared` bytes with the last one.
        last_key.truncate(shared);
        last_key.extend_from_slice(key.get(shared..).unwrap_or_default());
        self.last_key = last_key;
        stored
    }

    /// [`BlockBuilder::add`] for a caller that keeps the last key itself
    /// (the table builder, which needs it for its order check and its
    /// index): `last_key` is the key added just before this one and
    /// `shared_with_last` how many leading bytes `key` shares with it. The
    /// block keeps no copy of its own (one copy of every key, not two), and
    /// [`BlockBuilder::last_key`] is not kept.
    pub(crate) fn add_after(&mut self, key: &[u8], value: &[u8], last_key: &[u8], shared_with_last: usize) -> usize {
        let trailer_len = self.trailer_words * WORD_LEN;
        debug_assert!(key.len() >= trailer_len, "key shorter than its trailer");
        let (body, trailer) = key.split_at(key.len().saturating_sub(trailer_len));
        let restart = self.to_restart == 0;
        self.to_restart = match restart {
            true => self.restart_interval - 1,
            false => self.to_restart - 1,
        };
        let shared = if restart {
            let offset = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
            debug_assert!(offset != u32::MAX, "block grew past 4 GiB");
            self.restarts.push(offset);
            if let Some(recent) = &mut self.recent {
                recent.restart();
            }
            0
        } else {
            // The bodies share what the keys share, up to the shorter body.
            let last_body_len = last_key.len().saturating_sub(trailer_len);
            shared_with_last.min(last_body_len).min(body.len())
        };
        let unshared = body.get(shared..).unwrap_or_default();
        let (literal, copy) = match &self.recent {
            Some(recent) => recent.split(unshared),
            None => (unshared, 0),
        };
        put_varint64(&mut self.buf, shared as u64);
        put_varint64(&mut self.buf, literal.len() as u64);
        put_varint64(&mut self.buf, value.len() as u64);
        let key_start = self.buf.len();
        if self.recent.is_some() {
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
                false => last_key
                    .get(last_key.len().saturating_sub(trailer_len)..)
                    .unwrap_or_default(),
            };
            trailer::put_xors(&mut self.buf, trailer, base, self.trailer_words);
        }
        let stored = self.buf.len() - key_start;
        self.buf.extend_from_slice(value);
        if let Some(recent) = &mut self.recent {
            recent.push(body);
        }
        self.entries += 1;
        stored
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

    /// The last key added with [`BlockBuilder::add`] (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart trailer, returns the finished block and leaves the
    /// builder empty, ready for the next block.
    pub fn finish(&mut self) -> Vec<u8> {
        // The next block starts with this one's room: blocks are about the
        // same size, and a buffer grown from empty costs a dozen reallocations
        // a block (while a flush runs, the writer waited on the allocator's
        // lock for them).
        let room = self.buf.capacity();
        let mut block = std::mem::replace(&mut self.buf, Vec::with_capacity(room));
        for restart in &self.restarts {
            block.extend_from_slice(&restart.to_le_bytes());
        }
        let count = u32::try_from(self.restarts.len()).unwrap_or(u32::MAX);
        block.extend_from_slice(&count.to_le_bytes());
        self.restarts.clear();
        self.entries = 0;
        self.to_restart = 0;
        self.last_key.clear();
        block
    }
}
