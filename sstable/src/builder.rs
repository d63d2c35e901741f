//! Writing a table file: `TableBuilder` streams sorted entries to disk.
//!
//! Entries arrive in key order. They fill a data block; when the block
//! reaches `block_size` it is written out at once, and only its last key and
//! handle stay in memory (for the index), together with an 8-byte hash per
//! distinct filter key (for the Bloom filter). So a builder's memory grows
//! with the number of blocks, not with the data: a 1 GiB table at 4 KiB blocks
//! keeps ~260,000 index entries, not the gigabyte.
//!
//! [`finish`](TableBuilder::finish) then appends the filter, the properties,
//! the index and the footer. The file is written under a temporary name
//! (`<path>.tmp`), fsynced, renamed to `path` and the directory fsynced, so
//! `path` never names a half-written table: after a crash it is either
//! absent or complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use cellar_fs as fs;

use crate::block::{BlockBuilder, KeyEncoding, MAX_TRAILER_WORDS};
use crate::bloom::{filter_hash, BloomFilterBuilder};
use crate::coding::common_prefix_len;
use crate::compression::{Codec, Compression, Compressor};
use crate::error::{io_error, Error, Result};
use crate::format::{block_trailer, BlockHandle, BlockKind, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::properties::TableProperties;

/// Longest key a table accepts (1 GiB).
///
/// Lengths are stored as varint `u32`s and restart offsets as `u32`, so a
/// block must stay under 4 GiB: with keys and values of at most 1 GiB each
/// and blocks cut at 1 GiB, it does.
pub const MAX_KEY_LEN: usize = 1 << 30;

/// Longest value a table accepts (1 GiB); see [`MAX_KEY_LEN`].
pub const MAX_VALUE_LEN: usize = 1 << 30;

/// Blocks are cut at this size even if `block_size` is larger.
const MAX_BLOCK_SIZE: usize = 1 << 30;

/// How a table file is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// A data block is cut once its size reaches this many bytes (default
    /// 4096, one page). A block holds at least one entry, so one large value
    /// makes one large block. Smaller blocks make point reads cheaper and
    /// the index larger.
    pub block_size: usize,
    /// Every this-many entries a key is stored whole (default 16). Smaller
    /// makes seeks within a block faster and blocks larger.
    pub restart_interval: usize,
    /// Bloom filter bits per distinct filter key (default 10: about 1 % false
    /// positives for 1.25 bytes per key). 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Every key ends with this many big-endian `u64` words, which data
    /// blocks store as XOR with the previous key's (see [`crate::BlockBuilder::with_key_trailer`]);
    /// default 0, at most [`crate::MAX_TRAILER_WORDS`]. A key shorter than
    /// its trailer is [`Error::TooShort`].
    pub key_trailer_words: usize,
    /// Data block entries may end with a copy of the tail of one of the keys
    /// since their restart point, where wide-column keys repeat their column
    /// names (see [`crate::KeyEncoding`]); default off.
    pub tail_copies: bool,
    /// How data blocks are compressed, each on its own (default none; see
    /// [`Compression`]). A table with compression is written in format
    /// version 3, one without in version 2.
    pub compression: Compression,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            key_trailer_words: 0,
            tail_copies: false,
            compression: Compression::None,
        }
    }
}

/// Bytes a builder collects before handing them to the OS (RocksDB's
/// `writable_file_max_buffer_size` default). A write of a 4 KiB block costs
/// a system call and the kernel's fixed work per call (the file's times,
/// its journal entry) that a 1 MiB write pays once for 256 blocks: measured
/// on ext4 here, writing 256 MiB took ~0.2 s of system time in 4 KiB writes
/// and ~0.06 s in 1 MiB ones.
const WRITE_BUFFER: usize = 1 << 20;

/// Streams sorted entries into a new table file.
///
/// Dropping a builder that was not finished removes its temporary file.
/// After an I/O error the file is in an unknown state: drop the builder
/// rather than adding more ([`Error::KeyOrder`], [`Error::TooLarge`] and [`Error::TooShort`]
/// change nothing and leave it usable).
#[derive(Debug)]
pub struct TableBuilder {
    path: PathBuf,
    tmp_path: PathBuf,
    /// Blocks collect here and go to the OS a buffer at a time: one system
    /// call per [`WRITE_BUFFER`] bytes, not one per 4 KiB block.
    file: BufWriter<File>,
    options: TableOptions,
    /// Bytes written to the file so far.
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// The last data block written, waiting for the next key to choose its
    /// index key (see [`shortest_separator`]).
    pending_index: Option<BlockHandle>,
    filter: Option<BloomFilterBuilder>,
    last_filter_key: Option<Vec<u8>>,
    /// Whether the last filter key was a prefix of its key (see
    /// [`TableBuilder::add`]): then the next one is compared through the
    /// bytes the keys share.
    last_filter_key_in_key: bool,
    compressor: Compressor,
    /// Counted as entries arrive; `last_key` doubles as the order check.
    props: TableProperties,
    finished: bool,
}

impl TableBuilder {
    /// Starts a table that [`finish`](Self::finish) will publish at `path`;
    /// until then it is written to `<path>.tmp` (replacing any left by a crash).
    pub fn create(path: &Path, options: TableOptions) -> Result<TableBuilder> {
        if options.key_trailer_words > MAX_TRAILER_WORDS {
            return Err(Error::TooLarge {
                what: "key trailer (in words)",
                len: options.key_trailer_words as u64,
                max: MAX_TRAILER_WORDS as u64,
            });
        }
        options.compression.check().map_err(Error::InvalidOption)?;
        let compressor = Compressor::new(options.compression).map_err(io_error(path))?;
        let tmp_path = tmp_path_for(path);
        let file = fs::create(&tmp_path).map_err(io_error(&tmp_path))?;
        let filter = (options.bloom_bits_per_key > 0).then(|| BloomFilterBuilder::new(options.bloom_bits_per_key));
        let props = TableProperties {
            key_trailer_words: options.key_trailer_words as u64,
            tail_copies: u64::from(options.tail_copies),
            compression: options.compression,
            ..TableProperties::default()
        };
        Ok(TableBuilder {
            path: path.to_path_buf(),
            tmp_path,
            file: BufWriter::with_capacity(WRITE_BUFFER, file),
            data_block: BlockBuilder::with_encoding(
                options.restart_interval,
                KeyEncoding {
                    trailer_words: options.key_trailer_words,
                    tail_copies: options.tail_copies,
                },
            ),
            index_block: BlockBuilder::new(options.restart_interval),
            pending_index: None,
            filter,
            compressor,
            options,
            offset: 0,
            last_filter_key: None,
            last_filter_key_in_key: false,
            props,
            finished: false,
        })
    }

    /// Appends an entry. `key` must be strictly greater than the previous key
    /// ([`Error::KeyOrder`] otherwise, and nothing is added).
    ///
    /// `filter_key` is what the Bloom filter is built over; the engine passes
    /// the encoded row, so "is this row here?" is answered without a block
    /// read. Equal consecutive filter keys are hashed once. A filter key
    /// that is a slice of the front of `key` itself (`&key[..n]`, as the
    /// engine's row is) is told from the last one by the bytes the keys
    /// share, with no comparison of its own. `tombstone` only counts in the
    /// properties: the table does not interpret values.
    pub fn add(&mut self, key: &[u8], value: &[u8], filter_key: &[u8], tombstone: bool) -> Result<()> {
        check_len("key", key.len(), MAX_KEY_LEN)?;
        check_len("value", value.len(), MAX_VALUE_LEN)?;
        let trailer_len = self.options.key_trailer_words * 8;
        if key.len() < trailer_len {
            return Err(Error::TooShort {
                len: key.len() as u64,
                min: trailer_len as u64,
            });
        }
        // One pass over the bytes the key shares with the last one answers
        // the order check, the filter key's and what to copy of the key.
        let shared = common_prefix_len(key, &self.props.last_key);
        let increasing = match (key.get(shared), self.props.last_key.get(shared)) {
            (Some(k), Some(last)) => k > last,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if self.props.entries > 0 && !increasing {
            return Err(Error::KeyOrder {
                previous: self.props.last_key.clone(),
                key: key.to_vec(),
            });
        }

        // A filter key that is a prefix of its key (the very bytes, as
        // cellar's row is of its cell's key) is the last one if the last
        // was too, of the same length, and the keys share it.
        let in_key = std::ptr::eq(filter_key.as_ptr(), key.as_ptr()) && filter_key.len() <= key.len();
        let same_filter_key = match (self.last_filter_key_in_key && in_key, &self.last_filter_key) {
            (true, Some(last)) => last.len() == filter_key.len() && shared >= filter_key.len(),
            (_, last) => last.as_deref() == Some(filter_key),
        };
        self.last_filter_key_in_key = in_key;
        if !same_filter_key {
            if let Some(filter) = &mut self.filter {
                filter.add_hash(filter_hash(filter_key));
            }
            self.props.distinct_filter_keys += 1;
            // Its buffer reused: no allocation per row.
            let last = self.last_filter_key.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(filter_key);
        }

        if let Some(handle) = self.pending_index.take() {
            // `last_key` is still the previous block's last key.
            let separator = shortest_separator(&self.props.last_key, key);
            self.add_index_entry(&separator, handle);
        }
        // The block reads the last key from here: one copy of each key.
        let stored = self.data_block.add_after(key, value, &self.props.last_key, shared);
        let props = &mut self.props;
        if props.entries == 0 {
            props.first_key = key.to_vec();
        }
        // The bytes it shares with the last key are there already.
        props.last_key.truncate(shared);
        props.last_key.extend_from_slice(key.get(shared..).unwrap_or_default());
        props.entries += 1;
        props.tombstones += u64::from(tombstone);
        props.raw_key_bytes += key.len() as u64;
        props.raw_value_bytes += value.len() as u64;
        props.stored_key_bytes += stored as u64;

        if self.data_block.estimated_size() >= self.options.block_size.min(MAX_BLOCK_SIZE) {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// The last key added (empty before the first).
    pub fn last_key(&self) -> &[u8] {
        &self.props.last_key
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Bytes written so far plus the block being filled: what the file would
    /// be, less its filter, properties, index and footer. A caller splitting
    /// output into files of a target size compares against this.
    pub fn estimated_file_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() {
            0
        } else {
            self.data_block.estimated_size() as u64
        };
        self.offset + pending
    }

    /// Writes the last data block, the filter, the properties, the index and
    /// the footer; fsyncs the file, renames it to its final path and fsyncs
    /// the directory. Returns the table's properties.
    pub fn finish(mut self) -> Result<TableProperties> {
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            // The last block's index key is its last key: a seek past it reads nothing.
            let last_key = std::mem::take(&mut self.props.last_key);
            self.add_index_entry(&last_key, handle);
            self.props.last_key = last_key;
        }

        let filter = self.filter.as_ref().map(BloomFilterBuilder::finish);
        let filter_handle = match filter {
            Some(contents) => {
                let handle = self.write_block(contents, BlockKind::Filter, Codec::None)?;
                self.props.filter_bytes = handle.size_with_trailer();
                handle
            }
            None => BlockHandle::default(), // size 0: no filter
        };

        // The properties record the file's size, so everything after them
        // must be sized first: the index (already in memory) and the footer.
        let index = self.index_block.finish();
        self.props.index_bytes = (index.len() + BLOCK_TRAILER_LEN) as u64;
        let properties_len = (self.props.encode().len() + BLOCK_TRAILER_LEN) as u64; // file_size is fixed-width
        self.props.file_size = self.offset + properties_len + self.props.index_bytes + FOOTER_LEN as u64;

        let properties_handle = self.write_block(self.props.encode(), BlockKind::Properties, Codec::None)?;
        let index_handle = self.write_block(index, BlockKind::Index, Codec::None)?;
        let footer = Footer {
            filter: filter_handle,
            properties: properties_handle,
            index: index_handle,
            version: self.props.format_version(),
        };
        self.write(&footer.encode())?;
        debug_assert_eq!(self.offset, self.props.file_size);

        // Durable before visible: data fsynced, then the name, then the
        // directory entry that holds the name.
        self.file.flush().map_err(io_error(&self.tmp_path))?;
        fs::sync_all(self.file.get_ref(), &self.tmp_path).map_err(io_error(&self.tmp_path))?;
        fs::rename(&self.tmp_path, &self.path).map_err(io_error(&self.path))?;
        self.finished = true;
        sync_parent_dir(&self.path)?;
        Ok(std::mem::take(&mut self.props))
    }

    /// Gives up on the table: the temporary file is removed (dropping an
    /// unfinished builder does the same).
    pub fn abandon(self) {
        drop(self);
    }

    /// Writes the pending data block, compressed if the table asks for it
    /// and that saves at least 1/8; its index entry waits for the next key
    /// (or for [`finish`](Self::finish)). Does nothing if the block is empty.
    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        let raw_len = (raw.len() + BLOCK_TRAILER_LEN) as u64;
        let (contents, codec) = self.compressor.compress(raw);
        let handle = self.write_block(contents, BlockKind::Data, codec)?;
        self.pending_index = Some(handle);
        let props = &mut self.props;
        props.data_blocks += 1;
        props.data_bytes += handle.size_with_trailer();
        props.uncompressed_data_bytes += raw_len;
        props.compressed_blocks += u64::from(codec != Codec::None);
        Ok(())
    }

    fn add_index_entry(&mut self, index_key: &[u8], handle: BlockHandle) {
        let mut encoded = Vec::with_capacity(8);
        handle.encode_to(&mut encoded);
        self.index_block.add(index_key, &encoded);
    }

    /// Appends `contents` (a block of `kind`, stored with `codec`) and its
    /// trailer; returns the block's handle.
    fn write_block(&mut self, mut contents: Vec<u8>, kind: BlockKind, codec: Codec) -> Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        let trailer = block_trailer(&contents, kind, codec);
        contents.extend_from_slice(&trailer);
        self.write(&contents)?;
        Ok(handle)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(io_error(&self.tmp_path))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

impl Drop for TableBuilder {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort: a leftover `.tmp` is harmless and replaced next time.
            let _ = fs::remove(&self.tmp_path);
        }
    }
}

/// A short key `s` with `start <= s < limit` (`start < limit`): the index
/// key of a data block whose last key is `start` and whose next block starts
/// at `limit`.
///
/// The index needs only a key that tells the two blocks apart, not the
/// block's whole last key: between `user0042/email...` and `user0047/age...`
/// the one-byte-longer `user0043` does. Shorter index keys make a smaller
/// index, kept in memory for every open table (LevelDB's
/// `FindShortestSeparator`, with RocksDB's refinement for neighbouring bytes).
/// A seek for a key between `start` and `s` reads this block, finds nothing
/// and moves on to the next block's first entry.
pub(crate) fn shortest_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let common = crate::coding::common_prefix_len(start, limit);
    let (Some(&s), Some(&l)) = (start.get(common), limit.get(common)) else {
        return start.to_vec(); // one is a prefix of the other: nothing shorter fits
    };
    // `start[..at]` followed by `byte`.
    let bumped = |at: usize, byte: u8| {
        let mut separator = start.get(..at).unwrap_or_default().to_vec();
        separator.push(byte);
        separator
    };
    if s < l && s + 1 < l {
        return bumped(common, s + 1); // bump the first differing byte
    }
    if s < l {
        // `s + 1 == l`: keep `s`, then bump the first later byte that can be.
        if let Some((j, &byte)) = start.iter().enumerate().skip(common + 1).find(|(_, &b)| b < 0xff) {
            return bumped(j, byte + 1);
        }
    }
    start.to_vec()
}

/// `<path>.tmp`.
fn tmp_path_for(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::TooLarge {
            what,
            len: len as u64,
            max: max as u64,
        });
    }
    Ok(())
}

/// Fsyncs the directory holding `path`, making a rename into it durable.
fn sync_parent_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::sync_dir(dir).map_err(io_error(dir))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    /// Key `i` of the fixture tables: `key00000`, `key00001`, ... (8 bytes).
    pub(crate) fn key(i: usize) -> Vec<u8> {
        format!("key{i:05}").into_bytes()
    }

    /// Value `i` of [`write_paged_table`]: 85 bytes of one letter.
    pub(crate) fn value(i: usize) -> Vec<u8> {
        vec![b'a' + (i % 26) as u8; 85]
    }

    /// A table whose layout can be worked out by hand, for exact assertions.
    ///
    /// 120 entries, keys 8 bytes, values 85 bytes, restart interval 1 (no
    /// prefix sharing, so every entry is 3 + 8 + 85 = 96 bytes plus a 4-byte
    /// restart offset), `block_size` 4000. After `n` entries a block is
    /// `100n + 4` bytes, which reaches 4000 at n = 40: three blocks of 4004
    /// bytes, 4009 with their trailers, at offsets 0, 4009 and 8018. Block 0
    /// lies in page 0; block 1 (bytes 4009..=8017) straddles pages 0 and 1.
    /// Every 10th entry is a tombstone; each key is its own filter key.
    pub(crate) fn write_paged_table(path: &Path) -> Result<TableProperties> {
        write_paged_table_with(path, Compression::None)
    }

    /// [`write_paged_table`] with its data blocks compressed by `compression`.
    pub(crate) fn write_paged_table_with(path: &Path, compression: Compression) -> Result<TableProperties> {
        let options = TableOptions {
            block_size: 4000,
            restart_interval: 1,
            bloom_bits_per_key: 10,
            key_trailer_words: 0,
            tail_copies: false,
            compression,
        };
        let mut builder = TableBuilder::create(path, options)?;
        for i in 0..120 {
            builder.add(&key(i), &value(i), &key(i), i % 10 == 0)?;
        }
        builder.finish()
    }

    #[test]
    fn properties_of_the_paged_table_are_exact() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("000001.sst");
        let props = write_paged_table(&path)?;
        let expected = TableProperties {
            entries: 120,
            tombstones: 12,
            first_key: b"key00000".to_vec(),
            last_key: b"key00119".to_vec(),
            data_blocks: 3,
            data_bytes: 3 * 4009,
            // 3 entries of 3 + 8 + handle (3, 4, 4 bytes), 3 restarts, count, trailer.
            index_bytes: 44 + 12 + 4 + 5,
            // 1,200 bits = 150 bytes, k, trailer.
            filter_bytes: 150 + 1 + 5,
            raw_key_bytes: 960,
            raw_value_bytes: 10_200,
            stored_key_bytes: 960,
            distinct_filter_keys: 120,
            key_trailer_words: 0,
            tail_copies: 0,
            compression: Compression::None,
            compressed_blocks: 0,
            uncompressed_data_bytes: 3 * 4009,
            // data 12,027 + filter 156 + properties 43 + 5 + index 65 + footer 72.
            file_size: 12_368,
        };
        assert_eq!(props, expected);
        assert_eq!(std::fs::metadata(&path)?.len(), 12_368);
        Ok(())
    }

    #[test]
    fn separators_are_short_and_between_their_neighbours() {
        for (start, limit, expected) in [
            (&b"user0042/email"[..], &b"user0047/age"[..], &b"user0043"[..]), // bump the first difference
            (b"key00039", b"key00040", b"key0003:"),                          // neighbours: bump a later byte
            (b"ab\xff\xff", b"ac", b"ab\xff\xff"),                            // nothing to bump: start itself
            (b"abc", b"abcd", b"abc"),                                        // a prefix: start itself
        ] {
            let separator = shortest_separator(start, limit);
            assert_eq!(separator, expected, "{start:?} .. {limit:?}");
            assert!(start <= separator.as_slice() && separator.as_slice() < limit);
        }
    }

    proptest::proptest! {
        #[test]
        fn a_separator_is_never_outside_its_neighbours(
            a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
        ) {
            let (start, limit) = if a < b { (a, b) } else { (b, a) };
            proptest::prop_assume!(start < limit);
            let separator = shortest_separator(&start, &limit);
            proptest::prop_assert!(start <= separator && separator < limit);
            proptest::prop_assert!(separator.len() <= start.len());
        }
    }

    #[test]
    fn table_is_written_to_a_tmp_name_then_renamed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("000001.sst");
        let tmp = dir.path().join("000001.sst.tmp");
        let mut builder = TableBuilder::create(&path, TableOptions::default())?;
        builder.add(b"a", b"1", b"a", false)?;
        assert!(tmp.exists());
        assert!(!path.exists());
        builder.finish()?;
        assert!(!tmp.exists());
        assert!(path.exists());
        Ok(())
    }

    #[test]
    fn abandon_removes_the_temporary_file() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.sst");
        let mut builder = TableBuilder::create(&path, TableOptions::default())?;
        builder.add(b"a", b"1", b"a", false)?;
        builder.abandon();
        assert!(!dir.path().join("t.sst.tmp").exists());
        assert!(!path.exists());
        Ok(())
    }

    #[test]
    fn dropping_an_unfinished_builder_removes_the_temporary_file() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.sst");
        drop(TableBuilder::create(&path, TableOptions::default())?);
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
        Ok(())
    }

    #[test]
    fn keys_must_strictly_increase() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), TableOptions::default())?;
        builder.add(b"b", b"1", b"b", false)?;
        for bad in [&b"a"[..], b"b", b""] {
            match builder.add(bad, b"2", bad, false) {
                Err(Error::KeyOrder { previous, key }) => {
                    assert_eq!(previous, b"b");
                    assert_eq!(key, bad);
                }
                other => panic!("expected KeyOrder for {bad:?}, got {other:?}"),
            }
        }
        assert_eq!(builder.entries(), 1);
        builder.add(b"ba", b"3", b"ba", false)?;
        assert_eq!(builder.entries(), 2);
        Ok(())
    }

    #[test]
    fn the_empty_key_may_come_first() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), TableOptions::default())?;
        builder.add(b"", b"v", b"", false)?;
        builder.add(b"a", b"v", b"a", false)?;
        assert_eq!(builder.finish()?.entries, 2);
        Ok(())
    }

    #[test]
    fn consecutive_equal_filter_keys_are_hashed_once() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), TableOptions::default())?;
        for (key, row) in [
            ("row1/a", "row1"),
            ("row1/b", "row1"),
            ("row2/a", "row2"),
            ("row3/a", "row1"),
        ] {
            builder.add(key.as_bytes(), b"v", row.as_bytes(), false)?;
        }
        // row1, row2, then row1 again (not consecutive, so counted again).
        assert_eq!(builder.finish()?.distinct_filter_keys, 3);
        Ok(())
    }

    #[test]
    fn estimated_file_size_counts_written_blocks_and_the_pending_one() -> TestResult {
        let dir = tempfile::tempdir()?;
        let options = TableOptions {
            block_size: 4000,
            restart_interval: 1,
            bloom_bits_per_key: 10,
            key_trailer_words: 0,
            tail_copies: false,
            compression: Compression::None,
        };
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), options)?;
        assert_eq!(builder.estimated_file_size(), 0);
        builder.add(&key(0), &value(0), &key(0), false)?;
        assert_eq!(builder.estimated_file_size(), 104); // 96 + one restart + count
        for i in 1..40 {
            builder.add(&key(i), &value(i), &key(i), false)?;
        }
        assert_eq!(builder.estimated_file_size(), 4009); // block 0 written, none pending
        builder.add(&key(40), &value(40), &key(40), false)?;
        assert_eq!(builder.estimated_file_size(), 4009 + 104);
        Ok(())
    }

    #[test]
    fn a_large_value_makes_one_large_block() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), TableOptions::default())?;
        builder.add(b"big", &vec![7u8; 10_000], b"big", false)?;
        builder.add(b"small", b"v", b"small", false)?;
        let props = builder.finish()?;
        assert_eq!(props.data_blocks, 2);
        // 3 varints (1 + 1 + 2 bytes) + 3 + 10,000 + restart + count + trailer.
        // The second block: 1 + 1 + 1 + 5 + 1 + 4 + 4 + trailer.
        assert_eq!(props.data_bytes, (10_007 + 8 + 5) + (9 + 8 + 5));
        Ok(())
    }

    #[test]
    fn zero_bloom_bits_writes_no_filter() -> TestResult {
        let dir = tempfile::tempdir()?;
        let options = TableOptions {
            bloom_bits_per_key: 0,
            ..TableOptions::default()
        };
        let mut builder = TableBuilder::create(&dir.path().join("t.sst"), options)?;
        builder.add(b"a", b"1", b"a", false)?;
        let props = builder.finish()?;
        assert_eq!(props.filter_bytes, 0);
        assert_eq!(props.distinct_filter_keys, 1);
        Ok(())
    }

    /// A table's bytes with each filter key passed as `&key[..n]` (told
    /// from the last one by the bytes the keys share) or as a copy of those
    /// bytes (compared whole), or one way then the other.
    fn table_bytes(dir: &Path, entries: &[(Vec<u8>, usize)], as_slice: impl Fn(usize) -> bool) -> Result<Vec<u8>> {
        let path = dir.join(format!("t{}.sst", std::fs::read_dir(dir).map_or(0, |d| d.count())));
        let options = TableOptions {
            block_size: 256,
            key_trailer_words: 1,
            ..TableOptions::default()
        };
        let mut builder = TableBuilder::create(&path, options)?;
        for (i, (key, n)) in entries.iter().enumerate() {
            let copy = key.get(..*n).unwrap_or_default().to_vec();
            let filter_key = if as_slice(i) {
                key.get(..*n).unwrap_or_default()
            } else {
                &copy
            };
            builder.add(key, b"v", filter_key, false)?;
        }
        builder.finish()?;
        std::fs::read(&path).map_err(io_error(&path))
    }

    proptest::proptest! {
        /// Filter keys at the front of their keys, of every length (shorter,
        /// longer, equal to the last one's, one a prefix of the other), come
        /// out the same whether told apart through the keys' shared bytes
        /// or compared whole: the same filter, counts and bytes.
        #[test]
        fn a_filter_key_inside_its_key_is_told_from_the_last_as_a_copy_of_it_is(
            entries in proptest::collection::btree_map(
                proptest::collection::vec(0..3u8, 8..16),
                0..9usize,
                1..200,
            ),
            mix in proptest::prelude::any::<u64>(),
        ) {
            let dir = tempfile::tempdir().map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            // Keys sorted, at least one trailer word long; filter keys up to 8 bytes.
            let entries: Vec<(Vec<u8>, usize)> = entries.into_iter().collect();
            let fail = |e: Error| proptest::test_runner::TestCaseError::fail(e.to_string());
            let copies = table_bytes(dir.path(), &entries, |_| false).map_err(fail)?;
            let slices = table_bytes(dir.path(), &entries, |_| true).map_err(fail)?;
            let mixed = table_bytes(dir.path(), &entries, |i| mix >> (i % 64) & 1 == 1).map_err(fail)?;
            proptest::prop_assert!(copies == slices);
            proptest::prop_assert!(copies == mixed);
        }
    }
}
