//! The merge iterator: many sorted sources read as one sorted stream.
//!
//! Each source (a memtable or a table file) is already sorted by internal key.
//! A binary min-heap holds one position per source, ordered by its current key,
//! so the next entry of the merged stream is always at the top: `log k` key
//! comparisons per entry for `k` sources. Internal keys are unique (every write
//! has its own sequence number), so there are no ties to break between sources;
//! the source index breaks them anyway, newest first, to be safe.
//!
//! The merged stream still holds every version and every tombstone; hiding them
//! is the next step's job ([`crate::visibility`]).

use bytes::Bytes;

use cellar_sstable::coding::common_prefix_len;

use crate::error::{Error, Result};
use crate::source::{BlockWalk, Cursor, ValueIn};

/// A k-way merge of cursors by key.
pub(crate) struct MergeIterator {
    cursors: Vec<Cursor>,
    /// Indexes into `cursors`, a min-heap by `(key, index)`.
    heap: Vec<usize>,
    /// The heap position (1 or 2) of the top's smaller child, while known.
    /// A read mostly steps the top cursor, which leaves both children where
    /// they are: the top then stays on top if it is still before the smaller
    /// one, one comparison instead of two.
    smaller_child: Option<usize>,
    /// Where the top's key first differs from its smaller child's, when the
    /// last comparison found it smaller there (`None` when not known). A
    /// step that keeps more than these leading bytes of the top's key
    /// (its block's shared prefix, [`Cursor::kept_prefix`]) leaves it
    /// smaller, with no comparison: a compaction walking a row of a
    /// hundred cells compares its row with the next source's once per
    /// restart point, not once per cell. Known only while `smaller_child`
    /// is, and forgotten with it.
    top_lead: Option<usize>,
}

impl MergeIterator {
    /// Merges `cursors` (each already positioned at its first entry).
    pub fn new(cursors: Vec<Cursor>) -> MergeIterator {
        let heap: Vec<usize> = (0..cursors.len())
            .filter(|&i| cursors.get(i).is_some_and(Cursor::valid))
            .collect();
        let mut merge = MergeIterator {
            cursors,
            heap,
            smaller_child: None,
            top_lead: None,
        };
        for i in (0..merge.heap.len() / 2).rev() {
            merge.sift_down(i);
        }
        merge
    }

    fn less(&self, a: usize, b: usize) -> bool {
        self.compare(a, b).0
    }

    /// Whether heap position `a` comes before `b` (by key, then cursor
    /// index), and if so by its key, where the two keys first differ: the
    /// byte at which `a`'s is smaller (`None` when it is a prefix of
    /// `b`'s, or the keys are equal).
    #[inline]
    fn compare(&self, a: usize, b: usize) -> (bool, Option<usize>) {
        let (Some(&ca), Some(&cb)) = (self.heap.get(a), self.heap.get(b)) else {
            return (false, None);
        };
        let (Some(x), Some(y)) = (self.cursors.get(ca), self.cursors.get(cb)) else {
            return (false, None);
        };
        let (x, y) = (x.key(), y.key());
        // One pass of eight bytes at a time, inline: the keys of a merge's
        // sources mostly differ a few words in (the same row prefix, a
        // nearby row), where a call to `memcmp` costs more than the compare.
        let at = common_prefix_len(x, y);
        match (x.get(at), y.get(at)) {
            (Some(p), Some(q)) => (p < q, (p < q).then_some(at)),
            (None, Some(_)) => (true, None),
            (Some(_), None) => (false, None),
            (None, None) => (ca < cb, None),
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < self.heap.len() && self.less(l, smallest) {
                smallest = l;
            }
            if r < self.heap.len() && self.less(r, smallest) {
                smallest = r;
            }
            if smallest == i {
                return;
            }
            self.heap.swap(i, smallest);
            i = smallest;
        }
    }

    fn top(&self) -> Option<&Cursor> {
        self.heap.first().and_then(|&i| self.cursors.get(i))
    }

    /// Whether there is a current entry.
    #[inline]
    pub fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    /// The current (smallest) key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.top().map(Cursor::key).unwrap_or(&[])
    }

    /// The error for the current entry, whose key does not decode: it names
    /// the source that holds it.
    pub fn undecodable_key(&self) -> Error {
        match self.top() {
            Some(cursor) => cursor.undecodable_key(),
            None => Error::corruption("<merged read>", 0, "an entry's key does not decode"),
        }
    }

    /// The current value.
    #[inline]
    pub fn value(&self) -> Bytes {
        self.top().map(Cursor::value).unwrap_or_default()
    }

    /// Lends the current value to `f` (see [`Cursor::with_value`]).
    #[inline]
    pub fn with_value<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self.top() {
            Some(cursor) => cursor.with_value(f),
            None => f(&[]),
        }
    }

    /// Advances past the current entry.
    pub fn next(&mut self) -> Result<()> {
        let Some(&top) = self.heap.first() else {
            return Ok(());
        };
        if let Some(cursor) = self.cursors.get_mut(top) {
            cursor.next()?;
            let kept = cursor.kept_prefix();
            if !cursor.valid() {
                self.heap.swap_remove(0);
                self.forget_children();
            }
            self.settle_top(kept);
        }
        Ok(())
    }

    /// Walks the data block the top cursor stands in (a memtable's list, if
    /// it is over one; see [`Cursor::walk_block`]) for as long as the top
    /// stays the smallest: while its keys are below the current key of the
    /// cursor that would come next (the top's smaller child), the merged
    /// stream is that cursor's own, and the walk takes its entries in one
    /// loop. When it stops, the heap is restored as after
    /// [`MergeIterator::next`]. With no cursor nothing is walked
    /// ([`BlockWalk::Declined`]).
    pub fn walk_block(&mut self, visit: impl FnMut(&[u8], &[u8], ValueIn<'_>) -> bool) -> Result<BlockWalk> {
        let Some(&top) = self.heap.first() else {
            return Ok(BlockWalk::Declined);
        };
        if !self.cursors.get(top).is_some_and(Cursor::valid) {
            return Ok(BlockWalk::Declined);
        }
        // The walk stays below the key of the cursor that would come next,
        // borrowed where it lies (that cursor does not move meanwhile).
        let walked = match self.heap.len() {
            1 => match self.cursors.get_mut(top) {
                Some(cursor) => cursor.walk_block(None, visit)?,
                None => return Ok(BlockWalk::Declined),
            },
            _ => {
                let child = self.smaller_child();
                let next = self.heap.get(child).copied().unwrap_or(top);
                let Ok([cursor, next]) = self.cursors.get_disjoint_mut([top, next]) else {
                    return Ok(BlockWalk::Declined);
                };
                cursor.walk_block(Some(next.key()), visit)?
            }
        };
        if walked == BlockWalk::Declined {
            return Ok(walked);
        }
        if !self.cursors.get(top).is_some_and(Cursor::valid) {
            self.heap.swap_remove(0);
            self.forget_children();
        }
        // The walk moved the top many entries: compared afresh.
        self.settle_top(0);
        Ok(walked)
    }

    /// The heap position (1 or 2) of the top's smaller child (with two or
    /// more cursors), remembered until a child moves.
    fn smaller_child(&mut self) -> usize {
        match self.smaller_child {
            Some(child) => child,
            None => {
                let child = if self.heap.len() > 2 && self.less(2, 1) { 2 } else { 1 };
                self.smaller_child = Some(child);
                child
            }
        }
    }

    /// Forgets what is known of the top's children (one of them moved, or
    /// the top changed).
    fn forget_children(&mut self) {
        self.smaller_child = None;
        self.top_lead = None;
    }

    /// Restores the heap after the top cursor moved (its children did not),
    /// its new key keeping `kept` leading bytes of the one before (0 if
    /// unknown).
    fn settle_top(&mut self, kept: usize) {
        let len = self.heap.len();
        if len < 2 {
            return;
        }
        let child = self.smaller_child();
        // The last key was below the child's, first differing from it at
        // byte `lead`; a key that kept that byte is below it too.
        if self.top_lead.is_some_and(|lead| kept > lead) {
            return;
        }
        let (less, lead) = self.compare(0, child);
        if less {
            self.top_lead = lead;
            return;
        }
        self.heap.swap(0, child);
        self.forget_children();
        self.sift_down(child);
    }

    /// Moves past every entry before `target`: each cursor still before it
    /// seeks (an index search, perhaps a block), the others stay where they are.
    ///
    /// The cursors before `target` are exactly the ones that come to the top
    /// while the top is before it (the heap's order), so they are taken from
    /// the top one at a time and sifted back down after their seek: a read
    /// that skips the rest of a cell (most often found in one or two of its
    /// sources) pays a comparison or two per cursor moved, not a rebuild of
    /// the whole heap with every cursor's key compared to `target`.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        while let Some(&top) = self.heap.first() {
            let Some(cursor) = self.cursors.get_mut(top) else {
                return Ok(());
            };
            if cursor.key() >= target {
                break;
            }
            cursor.seek(target)?;
            if !cursor.valid() {
                self.heap.swap_remove(0);
            }
            self.forget_children();
            self.sift_down(0);
        }
        Ok(())
    }

    /// The cursors, in the order given (for per-source accounting).
    pub fn cursors(&self) -> &[Cursor] {
        &self.cursors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{self, Kind};
    use crate::memtable::Memtable;
    use crate::source::Source;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn memtable(keys: &[(u8, u64)]) -> Arc<Memtable> {
        let m = Memtable::new();
        for &(row, seq) in keys {
            let k = key::encode(&[row], b"c", 1, seq, Kind::Put);
            m.insert(&k, &[row], 1, seq, false, 1);
        }
        Arc::new(m)
    }

    fn source(memtable: &Arc<Memtable>) -> Source<'_> {
        Source::Memtable { memtable, active: true }
    }

    /// The merged stream's values (each a row's one byte), to its end.
    fn drain(merge: &mut MergeIterator) -> Result<Vec<u8>> {
        let mut rows = Vec::new();
        while merge.valid() {
            rows.push(merge.value()[0]);
            merge.next()?;
        }
        Ok(rows)
    }

    #[test]
    fn merges_sources_in_key_order_and_counts_per_source() -> Result<()> {
        let a = memtable(&[(1, 1), (4, 2), (9, 3)]);
        let b = memtable(&[(2, 4), (3, 5)]);
        let c = memtable(&[]);
        let end = Bytes::from(key::row_prefix(&[9]));
        let cursors = vec![
            source(&a).cursor(b"", Some(end.clone()))?,
            source(&b).cursor(b"", Some(end))?,
            source(&c).cursor(b"", None)?,
        ];
        let mut merge = MergeIterator::new(cursors);
        let rows = drain(&mut merge)?;
        assert_eq!(rows, vec![1, 2, 3, 4]);
        let examined: Vec<u64> = merge.cursors().iter().map(Cursor::examined).collect();
        assert_eq!(examined, vec![2, 2, 0]);
        Ok(())
    }

    #[test]
    fn a_seek_moves_only_the_cursors_before_its_target_and_each_counts_where_it_lands() -> Result<()> {
        let a = memtable(&[(1, 1), (2, 2), (3, 3), (9, 4)]);
        let b = memtable(&[(5, 5), (6, 6)]);
        let c = memtable(&[(2, 7), (8, 8)]);
        let d = memtable(&[(7, 9)]);
        let cursors = vec![
            source(&a).cursor(b"", None)?,
            source(&b).cursor(b"", None)?,
            source(&c).cursor(b"", None)?,
            source(&d).cursor(b"", None)?,
        ];
        let mut merge = MergeIterator::new(cursors);
        merge.seek(&key::row_prefix(&[6]))?;
        let rows = drain(&mut merge)?;
        assert_eq!(rows, vec![6, 7, 8, 9]);
        // Each cursor counts its first entry and, if it moved, the one its
        // seek landed on (`a` searched past 2 and 3, `c` stepped to 8); `d`
        // was already past the target and did not move.
        let examined: Vec<u64> = merge.cursors().iter().map(Cursor::examined).collect();
        assert_eq!(examined, vec![2, 2, 2, 1]);
        Ok(())
    }

    #[test]
    fn the_top_stays_on_top_while_it_is_before_its_smaller_child_and_yields_when_not() -> Result<()> {
        // Runs of two from each source in turn, one source ending first: the
        // top stays for a step, then hands over, over and over.
        let a = memtable(&[(1, 1), (2, 2), (7, 3), (8, 4), (13, 5)]);
        let b = memtable(&[(3, 6), (4, 7), (9, 8), (10, 9)]);
        let c = memtable(&[(5, 10), (6, 11), (11, 12), (12, 13), (14, 14), (15, 15)]);
        let cursors = vec![
            source(&a).cursor(b"", None)?,
            source(&b).cursor(b"", None)?,
            source(&c).cursor(b"", None)?,
        ];
        let mut merge = MergeIterator::new(cursors);
        let rows = drain(&mut merge)?;
        assert_eq!(rows, (1..=15).collect::<Vec<u8>>());
        Ok(())
    }

    /// A cursor over a table file holding `keys` (puts, each its own
    /// version), written as a flush writes one.
    fn table_cursor(dir: &std::path::Path, keys: &[Vec<u8>]) -> Result<Cursor> {
        use crate::options::FamilyOptions;
        let m = Memtable::new();
        for k in keys {
            let (ts, seq, _) = key::suffix(k).unwrap_or((0, 0, Kind::Put));
            m.insert(k, k, ts, seq, false, 1);
        }
        let options = FamilyOptions::default().max_versions(u32::MAX);
        let next_file = std::sync::atomic::AtomicU64::new(1);
        let mut out = crate::output::TableOutput::new(dir, &next_file, &options, 1, 0, false);
        crate::compaction::flush_memtable(&m, &options, u64::MAX, 0, &mut out)?;
        let table = out
            .finish()?
            .pop()
            .map(|t| t.publish(&cellar_sstable::BlockCache::new(0)));
        match table {
            Some(table) => crate::source::whole_file_cursor(&table?),
            None => Err(Error::corruption(dir, 0, "no table written")),
        }
    }

    proptest::proptest! {
        /// Table files whose rows share long prefixes and hold many columns,
        /// rows and cells spread over the sources (a row's columns in several
        /// files, a cell's versions too): the merged stream is every key in
        /// order, each once. The top stays on top without a comparison while
        /// its keys keep the bytes that put it before the next source's;
        /// this checks that it never stays when it should not.
        #[test]
        fn table_cursors_merge_in_key_order_while_steps_keep_a_shared_prefix(
            sources in proptest::collection::vec(
                proptest::collection::btree_set((0..5u8, 0..40u8, 0..3u64), 0..300),
                1..6,
            ),
        ) {
            let fail = |e: Error| TestCaseError::fail(e.to_string());
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut cursors = Vec::new();
            let mut model = Vec::new();
            for (index, entries) in sources.iter().enumerate() {
                // Sequence numbers unique across sources: no key twice.
                let keys: Vec<Vec<u8>> = entries
                    .iter()
                    .map(|&(row, column, version)| {
                        let row = format!("user00000000{row}");
                        let column = format!("field{column}");
                        let seq = 1 + version * 10 + index as u64;
                        key::encode(row.as_bytes(), column.as_bytes(), seq, seq, Kind::Put)
                    })
                    .collect();
                let mut sorted = keys.clone();
                sorted.sort();
                model.extend(sorted.iter().cloned());
                if !sorted.is_empty() {
                    let sub = dir.path().join(index.to_string());
                    std::fs::create_dir_all(&sub).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    cursors.push(table_cursor(&sub, &sorted).map_err(fail)?);
                }
            }
            model.sort();
            let mut merge = MergeIterator::new(cursors);
            let mut merged = Vec::new();
            while merge.valid() {
                merged.push(merge.key().to_vec());
                merge.next().map_err(fail)?;
            }
            prop_assert_eq!(merged, model);
        }
    }

    /// An entry of a source in the model: its row, timestamp and sequence.
    type Entry = (u8, u64, u64);

    fn entry() -> impl proptest::strategy::Strategy<Value = Entry> {
        (0..6u8, 0..3u64, 0..4u64)
    }

    proptest::proptest! {
        /// Any mix of steps and seeks over up to seven sources (some empty,
        /// some bounded above, some holding keys that others hold too) walks
        /// the entries of every source in `(key, source)` order, each once:
        /// a seek passes exactly the entries before its target, however
        /// many cursors it moves, and moves none when the walk is already
        /// there.
        #[test]
        fn steps_and_seeks_walk_the_sources_in_key_then_source_order(
            sources in proptest::collection::vec(
                (proptest::collection::btree_set(entry(), 0..8), proptest::option::of(0..7u8)),
                0..7,
            ),
            // `None` steps; `Some` seeks to that entry's key (often one a
            // cursor stands exactly on, or one already passed).
            steps in proptest::collection::vec(proptest::option::of(entry()), 0..40),
        ) {
            let encode = |&(row, ts, seq): &Entry| key::encode(&[row], b"c", ts, seq, Kind::Put);
            let mut cursors = Vec::new();
            let mut tables = Vec::new();
            let mut model: Vec<(Vec<u8>, usize, Vec<u8>)> = Vec::new();
            for (index, (entries, end)) in sources.iter().enumerate() {
                let m = Memtable::new();
                let end = end.map(|row| key::row_prefix(&[row]));
                for e in entries {
                    let k = encode(e);
                    let value = vec![index as u8, e.0, e.1 as u8, e.2 as u8];
                    m.insert(&k, &value, e.1, e.2, false, 1);
                    if end.as_ref().is_none_or(|end| k < *end) {
                        model.push((k, index, value));
                    }
                }
                tables.push((Arc::new(m), end));
            }
            for (m, end) in &tables {
                cursors.push(source(m).cursor(b"", end.clone().map(Bytes::from)).map_err(|e| TestCaseError::fail(e.to_string()))?);
            }
            model.sort();
            let mut merge = MergeIterator::new(cursors);
            let mut at = 0;
            for step in steps {
                match step {
                    None => {
                        merge.next().map_err(|e| TestCaseError::fail(e.to_string()))?;
                        at = (at + 1).min(model.len());
                    }
                    Some(target) => {
                        let target = encode(&target);
                        merge.seek(&target).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        at = at.max(model.partition_point(|(k, _, _)| *k < target));
                    }
                }
                match model.get(at) {
                    Some((k, _, value)) => {
                        prop_assert!(merge.valid());
                        prop_assert_eq!(merge.key(), k.as_slice());
                        prop_assert_eq!(merge.value().to_vec(), value.clone());
                    }
                    None => prop_assert!(!merge.valid()),
                }
            }
        }
    }
}
