//! Reading a block: a cursor that rebuilds each key from the one before it,
//! and seeks by binary search over the restart points.

use std::ops::Range;

use bytes::Bytes;

use crate::error::Result;

use super::tail_copy::RecentBodies;
use super::trailer::{self, Words, MAX_TRAILER_WORDS, WORD_LEN};
use super::Block;

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
    words: Words,
    /// With tail copies: the bodies decoded since the last restart point.
    recent: Option<RecentBodies>,
    /// Restart keys decoded during a seek's binary search.
    probe: Vec<u8>,
    value: Range<usize>,
    valid: bool,
    /// How many leading bytes the current key kept from the key before it,
    /// when [`BlockIter::next`] stepped to it (0 after a seek: the key
    /// before is one the caller never saw). See [`BlockIter::kept_prefix`].
    kept: usize,
}

impl BlockIter {
    /// A cursor over `block`, not yet positioned.
    pub(super) fn new(block: Block) -> BlockIter {
        // Room for a typical key, so decoding the first few keys does not
        // grow the buffer step by step.
        BlockIter::with_buffers(block, Vec::with_capacity(64), Vec::new(), None)
    }

    /// A cursor over `block` that keeps this cursor's buffers (its key, its
    /// probe, its recent bodies), not yet positioned: a reader moving on to
    /// the next block of a file allocates nothing for it.
    pub fn move_to(self, block: Block) -> BlockIter {
        BlockIter::with_buffers(block, self.key, self.probe, self.recent)
    }

    fn with_buffers(block: Block, mut key: Vec<u8>, mut probe: Vec<u8>, recent: Option<RecentBodies>) -> BlockIter {
        key.clear();
        probe.clear();
        let recent = match (block.tail_copies, recent) {
            (false, _) => None,
            (true, Some(mut recent)) => {
                recent.restart();
                Some(recent)
            }
            (true, None) => Some(RecentBodies::default()),
        };
        BlockIter {
            block,
            next_offset: 0,
            key,
            probe,
            value: 0..0,
            valid: false,
            kept: 0,
            next_restart: 0,
            next_restart_offset: 0,
            words: [0; MAX_TRAILER_WORDS],
            recent,
        }
    }

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
        self.kept = 0;
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
        self.kept = entry.shared;
        self.key
            .extend_from_slice(self.block.contents.get(entry.body.clone()).unwrap_or_default());
        if let Some(recent) = &mut self.recent {
            if restart {
                recent.restart();
            }
            let (distance, len) = entry.copy;
            if len > 0 {
                let Some(tail) = recent.tail(distance, len) else {
                    let what = format!("entry copies {len} bytes from {distance} keys back, which has none");
                    return Err(self.block.corruption(offset, what));
                };
                self.key.extend_from_slice(tail);
            }
            recent.push(&self.key);
        }
        let words = self.words.get_mut(..self.block.trailer_words).unwrap_or_default();
        trailer::apply(
            words,
            &entry.trailer,
            &self.block.contents,
            restart,
            &self.block.first_trailer,
        );
        trailer::push_words(&mut self.key, words);
        if restart {
            self.set_next_restart(self.next_restart + 1);
        }
        self.next_offset = entry.value.end;
        self.value = entry.value;
        self.valid = true;
        Ok(())
    }

    /// Hands the current entry (key, value, and the block's contents, which
    /// the value lies in: a reader that keeps it takes a zero-copy slice
    /// with [`Bytes::slice_ref`]) to `visit`, and while `visit`
    /// answers true ("done with it") and the block holds another entry,
    /// steps to that entry and hands it over too: a reader that walks many
    /// entries of one block (the cells of a row) does so in one loop here,
    /// with no call through the layers above per entry.
    ///
    /// Returns true when `visit` declined an entry: the iterator stays on it.
    /// False when `visit` took the block's last entry (the iterator stays on
    /// that entry; [`BlockIter::next`] moves past it) or the iterator is
    /// invalid. Every step is [`BlockIter::next`]'s decode, with its checks.
    pub fn walk(&mut self, mut visit: impl FnMut(&[u8], &[u8], &Bytes) -> bool) -> Result<bool> {
        while self.valid {
            let contents = &self.block.contents;
            let value = contents.get(self.value.clone()).unwrap_or_default();
            if !visit(&self.key, value, contents) {
                return Ok(true);
            }
            if self.next_offset >= self.block.entries_end {
                return Ok(false);
            }
            self.next()?;
        }
        Ok(false)
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

    /// How many leading bytes the current key shares with the one before
    /// it, as the entry stores it (its `shared` length; a restart point
    /// shares none), when the last move was [`BlockIter::next`]; 0 after a
    /// seek. A merge whose last comparison found this cursor's key before
    /// another at byte `d` knows, if the new key kept more than `d` bytes,
    /// that it is still before it: no comparison.
    pub fn kept_prefix(&self) -> usize {
        self.kept
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

    /// The current value, borrowed from the block (empty when invalid): for
    /// a reader that looks at it and moves on, no reference count to raise.
    pub fn value_bytes(&self) -> &[u8] {
        match self.valid {
            true => self.block.contents.get(self.value.clone()).unwrap_or_default(),
            false => &[],
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
