//! Reading a table file: `Table` (open, filter, verify, dump) and `TableIter`.
//!
//! Opening a table maps the file into memory (mmap) and reads it from the end:
//! the footer names the filter, properties and index blocks, which are
//! checked and kept in memory for the table's life, as LevelDB's table cache
//! keeps open tables. After that, a point read costs one binary search of the
//! in-memory index and one data block; a key the filter rules out costs no
//! block at all. Raw data blocks are never cached here: each read goes to the
//! mapped file (the operating system's page cache decides what stays in RAM),
//! which keeps the per-operation [`ReadCost`] an honest count of blocks read.
//! A compressed block is looked up first in the [`BlockCache`] the table was
//! opened with (if any), and on a miss read as stored, decompressed and left
//! there; the cost says which.
//!
//! The whole map is held as one [`Bytes`], so blocks and the values handed out
//! are zero-copy, reference-counted slices of it: a value outlives the
//! iterator that found it, and the file stays mapped until the last one goes.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use memmap2::Mmap;

use crate::block::{Block, BlockIter, KeyEncoding, MAX_TRAILER_WORDS};
use crate::bloom::{filter_hash, BloomFilter};
use crate::cache::BlockCache;
use crate::checksum::block_checksum;
use crate::coding::get_fixed32;
use crate::compression::{decompress, Codec, Compression};
use crate::cost::ReadCost;
use crate::error::{io_error, Error, Result};
use crate::format::{split_kind_byte, BlockHandle, BlockKind, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::prefetch::prefetch_all;
use crate::properties::TableProperties;

/// An open, immutable table file. `Send + Sync`: share it in an `Arc`.
pub struct Table {
    path: Arc<Path>,
    /// The whole file, memory-mapped.
    bytes: Bytes,
    footer: Footer,
    properties: TableProperties,
    /// One entry per data block, in key (and file) order.
    index: Vec<IndexEntry>,
    /// The first 16 bytes of each index separator as one big-endian integer
    /// (zero-padded), side by side: a seek's binary search compares these
    /// integers and looks at a whole separator only when two heads are equal,
    /// instead of following a pointer and calling `memcmp` at every step.
    index_heads: Vec<u128>,
    /// Whether each data block's checksum and restart array have been checked
    /// since the table was opened, and the block found stored raw. The file
    /// is immutable and mapped, so a block checked once is served like a
    /// block cache hit (RocksDB too checks a block when it fills its cache,
    /// not on every hit, and parses its restart array once): neither the
    /// checksum nor the restart offsets are checked again.
    /// [`Table::verify`] always checks everything. (A compressed block is
    /// never marked: it is served by the block cache or read again.)
    checked: Vec<AtomicBool>,
    filter: Option<BloomFilter>,
    /// The cache of decompressed blocks and this table's number in it
    /// (consulted only when the table has compression).
    cache: Option<(BlockCache, u64)>,
}

impl std::fmt::Debug for Table {
    /// Everything but the mapped bytes, which may be gigabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_size", &self.file_size())
            .field("footer", &self.footer)
            .field("properties", &self.properties)
            .field("index_entries", &self.index.len())
            .field("filter", &self.filter.as_ref().map(BloomFilter::num_bits))
            .finish()
    }
}

/// The first 16 bytes of `key` as a big-endian integer, zero-padded. Comparing
/// heads orders keys as their bytes do, except that keys with equal heads
/// (zero is the smallest byte, so padding never moves a key past one it is a
/// prefix of) need their whole bytes compared.
fn key_head(key: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let n = key.len().min(16);
    if let (Some(dst), Some(src)) = (head.get_mut(..n), key.get(..n)) {
        dst.copy_from_slice(src);
    }
    u128::from_be_bytes(head)
}

/// An index entry: where a data block is, under a key that is at least its
/// last key and less than the next block's first key (the last key itself for
/// the table's last block).
#[derive(Debug, Clone)]
struct IndexEntry {
    separator: Vec<u8>,
    handle: BlockHandle,
}

/// What [`Table::verify`] checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Blocks read and checksummed (data, filter, properties, index).
    pub blocks: u64,
    /// Of which data blocks.
    pub data_blocks: u64,
    /// Entries decoded from the data blocks.
    pub entries: u64,
    /// Bytes checked: every block with its trailer, plus the footer.
    pub bytes: u64,
}

/// One block of a table, as [`Table::blocks`] lists it for a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// What the block holds.
    pub kind: BlockKind,
    /// Where it is (size without the trailer).
    pub handle: BlockHandle,
    /// Entries in a data or index block; 0 for the filter and properties, and
    /// for a block whose checksum fails.
    pub entries: u64,
    /// First key of a data or index block (empty otherwise).
    pub first_key: Vec<u8>,
    /// Last key of a data or index block (empty otherwise).
    pub last_key: Vec<u8>,
    /// Whether the stored checksum and kind match the block's bytes.
    pub checksum_ok: bool,
    /// How the block is stored (its trailer's codec bits).
    pub codec: Codec,
    /// Size of its contents once decompressed (`handle.size` for a raw block;
    /// 0 for a block whose checksum fails).
    pub uncompressed_size: u64,
}

impl Table {
    /// Opens the table at `path`: maps it, checks the footer, and reads and
    /// verifies the properties, filter and index blocks.
    ///
    /// Errors: [`Error::Io`] if the file cannot be read; [`Error::Corruption`]
    /// if it is shorter than a footer, has a bad magic number, or any of those
    /// blocks is damaged; [`Error::UnsupportedVersion`] if a newer build wrote it.
    ///
    /// A table opened this way has no block cache: every compressed block it
    /// reads is decompressed again ([`Table::open_with_cache`] shares one).
    pub fn open(path: &Path) -> Result<Table> {
        Table::open_cached(path, None)
    }

    /// [`Table::open`], with `cache` holding the table's decompressed blocks.
    pub fn open_with_cache(path: &Path, cache: &BlockCache) -> Result<Table> {
        Table::open_cached(path, Some(cache))
    }

    fn open_cached(path: &Path, cache: Option<&BlockCache>) -> Result<Table> {
        let file = File::open(path).map_err(io_error(path))?;
        let len = file.metadata().map_err(io_error(path))?.len();
        if len < FOOTER_LEN as u64 {
            return Err(Error::Corruption {
                file: path.to_path_buf(),
                offset: 0,
                what: format!("file of {len} bytes is too short for the {FOOTER_LEN}-byte footer"),
            });
        }
        // SAFETY: mapping a file is unsafe because another process could change
        // or truncate it while mapped (a read of a truncated page is SIGBUS).
        // Table files are immutable once renamed into place and only deleted
        // (unlinking keeps the mapping valid), never rewritten or truncated.
        // What no mapping can turn into an `Err`: a page the kernel fails to
        // read from the disk (an I/O error, a failing device) is also a
        // SIGBUS, which ends the process where a `read` would have returned
        // an error. LevelDB and RocksDB accept the same for their mmap reads;
        // checksums still catch pages that read back wrong.
        let mmap = unsafe { Mmap::map(&file) }.map_err(io_error(path))?;
        let bytes = Bytes::from_owner(mmap);
        let footer_offset = len - FOOTER_LEN as u64;
        let footer_bytes = bytes.get(footer_offset as usize..).unwrap_or_default();
        let footer = Footer::decode(footer_bytes, path, footer_offset)?;

        let mut table = Table {
            path: Arc::from(path),
            bytes,
            footer,
            properties: TableProperties::default(),
            index: Vec::new(),
            index_heads: Vec::new(),
            checked: Vec::new(),
            filter: None,
            cache: None,
        };
        table.properties = table.load_properties()?;
        table.filter = table.load_filter()?;
        table.index = table.load_index()?;
        table.index_heads = table.index.iter().map(|e| key_head(&e.separator)).collect();
        table.checked = table.index.iter().map(|_| AtomicBool::new(false)).collect();
        if table.properties.compression != Compression::None {
            table.cache = cache.map(|cache| (cache.clone(), cache.table_number()));
        }
        Ok(table)
    }

    /// The file this table was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The properties stored in the table.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// Size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Asks the Bloom filter whether any entry has this `filter_key`. False
    /// means certainly not; true means maybe (or that the table has no
    /// filter). Counts `filter_checks`, and `filter_negatives` for a false,
    /// in `cost`; a table without a filter counts nothing.
    pub fn may_contain(&self, filter_key: &[u8], cost: &mut ReadCost) -> bool {
        self.may_contain_hash(filter_hash(filter_key), cost)
    }

    /// [`Table::may_contain`] for a key given by its [`filter_hash`]: a read
    /// that asks many tables about one key hashes it once.
    pub fn may_contain_hash(&self, hash: u64, cost: &mut ReadCost) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        cost.filter_checks += 1;
        let maybe = filter.may_contain(hash);
        if !maybe {
            cost.filter_negatives += 1;
        }
        maybe
    }

    /// An iterator over the table's entries, holding the table alive.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            block_index: 0,
            block: None,
            cost: ReadCost::default(),
            file: None,
            upper_bound: None,
        }
    }

    /// An iterator that reads its data blocks with plain `pread` calls into
    /// buffers of its own (a window of 256 KiB at a time, `READ_AHEAD`)
    /// instead of through the map. For a reader that walks a whole file
    /// once, such as a compaction: the blocks it reads stay in the operating
    /// system's page cache but never become resident pages of this process,
    /// so merging large files does not grow the process's memory.
    /// Blocks are counted and checksummed exactly as [`Table::iter`]'s are.
    ///
    /// The file is opened again by its name. A file no longer under that
    /// name (deleted or renamed since the table was opened: a read-only open
    /// of a store whose writer has since compacted the file away, or given a
    /// pending file its final name) is read through the map instead, which
    /// still holds every byte (unlinking or renaming a file keeps a mapping
    /// of it valid): the walk costs resident pages then, not an error.
    pub fn iter_unmapped(self: &Arc<Self>) -> Result<TableIter> {
        let file = match File::open(&*self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.iter()),
            Err(e) => return Err(io_error(&self.path)(e)),
        };
        let mut iter = self.iter();
        iter.file = Some(Unmapped {
            file,
            window: Bytes::new(),
            start: 0,
            spare: Bytes::new(),
        });
        Ok(iter)
    }

    /// Re-reads every block and the footer, checks every checksum, decodes
    /// every entry and checks that keys increase, that each data block ends
    /// with its index key and that the counts match the properties. Returns
    /// what was checked, or the first problem found.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        let footer_offset = self.file_size() - FOOTER_LEN as u64;
        let footer_bytes = self.bytes.get(footer_offset as usize..).unwrap_or_default();
        Footer::decode(footer_bytes, &self.path, footer_offset)?;
        report.bytes += FOOTER_LEN as u64;

        let mut previous: Option<Vec<u8>> = None;
        let mut previous_separator: Option<&[u8]> = None;
        for entry in &self.index {
            let handle = entry.handle;
            let (contents, _) = self.read_data(handle, None, &mut ReadCost::default())?;
            let block = self.data_block(contents, handle)?;
            let mut iter = block.iter();
            iter.seek_to_first()?;
            if !iter.valid() {
                return Err(self.corruption(handle.offset, "empty data block".into()));
            }
            if previous_separator.is_some_and(|separator| separator >= iter.key()) {
                return Err(self.corruption(handle.offset, "first key is not past the previous index key".into()));
            }
            previous_separator = Some(entry.separator.as_slice());
            while iter.valid() {
                if previous.as_deref().is_some_and(|p| p >= iter.key()) {
                    return Err(self.corruption(handle.offset, format!("key {:?} is out of order", iter.key())));
                }
                previous = Some(iter.key().to_vec());
                report.entries += 1;
                iter.next()?;
            }
            if previous.as_deref().is_none_or(|last| last > entry.separator.as_slice()) {
                return Err(self.corruption(handle.offset, "last key is past the index key".into()));
            }
            report.data_blocks += 1;
            report.blocks += 1;
            report.bytes += handle.size_with_trailer();
        }
        if report.entries != self.properties.entries {
            let what = format!(
                "{} entries found, properties say {}",
                report.entries, self.properties.entries
            );
            return Err(self.corruption(self.footer.properties.offset, what));
        }

        let mut count = |handle: BlockHandle| {
            report.blocks += 1;
            report.bytes += handle.size_with_trailer();
        };
        if self.load_filter()?.is_some() {
            count(self.footer.filter);
        }
        self.load_properties()?;
        count(self.footer.properties);
        self.load_index()?;
        count(self.footer.index);
        Ok(report)
    }

    /// Every block of the file in file order (data blocks, filter,
    /// properties, index), for a dump. A block whose checksum fails is listed
    /// with `checksum_ok: false` rather than stopping the listing.
    pub fn blocks(&self) -> Result<Vec<BlockInfo>> {
        let mut blocks = Vec::with_capacity(self.index.len() + 3);
        for entry in &self.index {
            blocks.push(self.block_info(entry.handle, BlockKind::Data)?);
        }
        if self.footer.filter.size > 0 {
            blocks.push(self.block_info(self.footer.filter, BlockKind::Filter)?);
        }
        blocks.push(self.block_info(self.footer.properties, BlockKind::Properties)?);
        blocks.push(self.block_info(self.footer.index, BlockKind::Index)?);
        Ok(blocks)
    }

    /// THE choke point: every block read on behalf of an operation comes
    /// through here. It records the byte range in `cost` (data blocks only:
    /// the others are in memory since [`open`](Self::open)), verifies the
    /// checksum and kind, and returns the decoded block.
    ///
    /// A data block read through the map whose checksum was already checked
    /// since the table was opened is not checked again (see `checked`); it is
    /// counted all the same. Its cache lines are all requested at once before
    /// its first byte is used: a reader walks a block entry after entry, and
    /// an entry's place depends on the lengths in the one before, so taken
    /// line by line each line of the walk would wait for memory in turn (a
    /// chain of dependent misses, ~100 ns each for a block not in cache).
    /// Requested together, the lines arrive in parallel, as they do for a
    /// block copied whole out of a file or a block cache. A row of ten
    /// 100-byte cells covers a third of a 4 KiB block and the walk to it from
    /// its restart point much of the rest, so the whole block is asked for.
    ///
    /// In a table with compression, a block not known to be raw is looked up
    /// in the block cache first; a compressed block read from the file is
    /// decompressed and left in the cache. A reader
    /// with a `file` of its own (a compaction, walking the table once) never
    /// uses the cache, so as not to push out what the reads need.
    fn read_block(&self, position: usize, cost: &mut ReadCost, file: Option<&mut Unmapped>) -> Result<Option<Block>> {
        let Some(entry) = self.index.get(position) else {
            return Ok(None);
        };
        let handle = entry.handle;
        let checked = self.checked.get(position);
        let mapped = file.is_none();
        if let (true, Some(done)) = (mapped, checked) {
            if done.load(Ordering::Acquire) {
                cost.record_data_block(handle.offset, handle.size_with_trailer());
                // Bounds were checked when the index was loaded.
                let (start, end) = (handle.offset as usize, (handle.offset + handle.size) as usize);
                prefetch_all(&self.bytes, start..end);
                let contents = self.bytes.slice(start..end);
                let block = Block::checked_before(contents, self.key_encoding(), Arc::clone(&self.path), handle.offset);
                return block.map(Some);
            }
        }
        let cache = self.cache.as_ref().filter(|_| mapped);
        if let Some((cache, table)) = cache {
            if let Some(block) = cache.get(*table, handle.offset) {
                cost.record_cache_hit();
                return Ok(Some(block));
            }
            cost.cache_misses += 1;
        }
        let (contents, codec) = self.read_data(handle, file, cost)?;
        let block = self.data_block(contents, handle)?;
        match (codec, cache) {
            (Codec::None, _) => {
                if let (true, Some(done)) = (mapped, checked) {
                    done.store(true, Ordering::Release);
                }
            }
            (_, Some((cache, table))) => cache.insert(*table, handle.offset, block.clone()),
            (_, None) => {}
        }
        Ok(Some(block))
    }

    /// Reads the data block at `handle` from the file (or `file`), checks it,
    /// and decompresses it if it is stored compressed; records the bytes as
    /// stored and the bytes decompressed in `cost`. Returns the block's
    /// contents and how it was stored.
    fn read_data(
        &self,
        handle: BlockHandle,
        file: Option<&mut Unmapped>,
        cost: &mut ReadCost,
    ) -> Result<(Bytes, Codec)> {
        cost.record_data_block(handle.offset, handle.size_with_trailer());
        let (stored, codec) = self.read_verified_from(handle, BlockKind::Data, file)?;
        if codec == Codec::None {
            return Ok((stored, codec));
        }
        let raw = decompress(codec, &stored)
            .map_err(|what| self.corruption(handle.offset, format!("bad {codec} block: {what}")))?;
        cost.decompressed_bytes += raw.len() as u64;
        Ok((Bytes::from(raw), codec))
    }

    /// The position of the first data block whose separator is `>= target`
    /// (the block that holds the first key `>= target`, if any does).
    fn index_position(&self, target: &[u8]) -> usize {
        let head = key_head(target);
        let (mut low, mut high) = (0, self.index_heads.len());
        while low < high {
            let mid = low + (high - low) / 2;
            let before = match self.index_heads.get(mid).map(|h| h.cmp(&head)) {
                Some(std::cmp::Ordering::Less) => true,
                Some(std::cmp::Ordering::Equal) => self.index.get(mid).is_some_and(|e| e.separator.as_slice() < target),
                _ => false,
            };
            if before {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// The contents of the block at `handle` (a zero-copy slice of the map),
    /// after checking that it lies inside the file, that its checksum matches
    /// and that its trailer names `kind`, stored raw.
    fn read_verified(&self, handle: BlockHandle, kind: BlockKind) -> Result<Bytes> {
        let (contents, _) = self.read_verified_from(handle, kind, None)?;
        Ok(contents)
    }

    /// The contents of the block at `handle` as stored and their codec,
    /// reading through `file` (with `pread`) instead of the map when one is
    /// given, after the checks of [`Table::read_verified`]. Only a data block
    /// of a table of format version 3 may be compressed.
    fn read_verified_from(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        file: Option<&mut Unmapped>,
    ) -> Result<(Bytes, Codec)> {
        let blocks_end = self.file_size() - FOOTER_LEN as u64;
        let Some(end) = handle.end().filter(|&end| end <= blocks_end) else {
            let what = format!(
                "{kind} block at {} of {} bytes runs past the last block (which ends at {blocks_end})",
                handle.offset, handle.size
            );
            return Err(self.corruption(handle.offset, what));
        };
        // Both fit in the file, hence in usize.
        let (start, end) = (handle.offset as usize, end as usize);
        let raw = match file {
            None => self.bytes.slice(start..end),
            Some(file) => file
                .read(handle.offset, end as u64, blocks_end)
                .map_err(io_error(&self.path))?,
        };
        let contents_len = raw.len() - BLOCK_TRAILER_LEN;
        let contents = raw.slice(..contents_len);
        let trailer_offset = handle.offset + contents_len as u64;
        let trailer = raw.get(contents_len..).unwrap_or_default();
        let (stored_kind, stored_crc) = match (trailer.first(), get_fixed32(trailer, 1)) {
            (Some(&k), Some(crc)) => (k, crc),
            _ => return Err(self.corruption(trailer_offset, "missing block trailer".into())),
        };
        let computed = block_checksum(&contents, stored_kind);
        if computed != stored_crc {
            let what =
                format!("checksum mismatch in {kind} block: stored {stored_crc:#010x}, computed {computed:#010x}");
            return Err(self.corruption(handle.offset, what));
        }
        let (kind_bits, codec_bits) = split_kind_byte(stored_kind);
        let codec = Codec::from_u8(codec_bits)
            .filter(|&codec| codec == Codec::None || (kind == BlockKind::Data && self.footer.version >= 3));
        match codec {
            Some(codec) if kind_bits == kind.as_u8() => Ok((contents, codec)),
            _ => {
                let what = format!("expected a {kind} block, found kind byte {stored_kind:#04x}");
                Err(self.corruption(trailer_offset, what))
            }
        }
    }

    fn load_properties(&self) -> Result<TableProperties> {
        let handle = self.footer.properties;
        let contents = self.read_verified(handle, BlockKind::Properties)?;
        let properties = TableProperties::decode(&contents, self.footer.version, &self.path, handle.offset)?;
        if properties.key_trailer_words > MAX_TRAILER_WORDS as u64 {
            let what = format!(
                "key trailer of {} words (at most {MAX_TRAILER_WORDS})",
                properties.key_trailer_words
            );
            return Err(self.corruption(handle.offset, what));
        }
        if properties.file_size != self.file_size() {
            let what = format!(
                "properties say the file is {} bytes, it is {}",
                properties.file_size,
                self.file_size()
            );
            return Err(self.corruption(handle.offset, what));
        }
        Ok(properties)
    }

    fn load_filter(&self) -> Result<Option<BloomFilter>> {
        let handle = self.footer.filter;
        if handle.size == 0 {
            return Ok(None);
        }
        let contents = self.read_verified(handle, BlockKind::Filter)?;
        match BloomFilter::decode(contents) {
            Some(filter) => Ok(Some(filter)),
            None => Err(self.corruption(handle.offset, "malformed bloom filter".into())),
        }
    }

    /// Decodes the index block into memory, checking that its keys increase,
    /// that every handle lies before the filter block and that there is one
    /// entry per data block.
    fn load_index(&self) -> Result<Vec<IndexEntry>> {
        let handle = self.footer.index;
        let block = Block::new(
            self.read_verified(handle, BlockKind::Index)?,
            Arc::clone(&self.path),
            handle.offset,
        )?;
        let bad = |what: String| self.corruption(handle.offset, format!("bad index block: {what}"));
        let data_end = match self.footer.filter.size {
            0 => self.footer.properties.offset,
            _ => self.footer.filter.offset,
        };
        let mut index: Vec<IndexEntry> = Vec::new();
        let mut iter = block.iter();
        iter.seek_to_first()?;
        while iter.valid() {
            let value = iter.value();
            let data_handle = match BlockHandle::decode(&value) {
                Some((h, used)) if used == value.len() => h,
                _ => return Err(bad(format!("entry {} has a malformed handle", index.len()))),
            };
            if data_handle.end().is_none_or(|end| end > data_end) {
                return Err(bad(format!("entry {} points past the data blocks", index.len())));
            }
            if index.last().is_some_and(|last| last.separator.as_slice() >= iter.key()) {
                return Err(bad(format!("entry {} is out of order", index.len())));
            }
            index.push(IndexEntry {
                separator: iter.key().to_vec(),
                handle: data_handle,
            });
            iter.next()?;
        }
        if index.len() as u64 != self.properties.data_blocks {
            let what = format!(
                "{} entries for {} data blocks",
                index.len(),
                self.properties.data_blocks
            );
            return Err(bad(what));
        }
        Ok(index)
    }

    fn block_info(&self, handle: BlockHandle, kind: BlockKind) -> Result<BlockInfo> {
        let mut info = BlockInfo {
            kind,
            handle,
            entries: 0,
            first_key: Vec::new(),
            last_key: Vec::new(),
            checksum_ok: false,
            codec: Codec::None,
            uncompressed_size: 0,
        };
        let contents = match kind {
            BlockKind::Data => self.read_data(handle, None, &mut ReadCost::default()),
            _ => self.read_verified(handle, kind).map(|contents| (contents, Codec::None)),
        };
        let Ok((contents, codec)) = contents else {
            return Ok(info);
        };
        info.checksum_ok = true;
        info.codec = codec;
        info.uncompressed_size = contents.len() as u64;
        if matches!(kind, BlockKind::Data | BlockKind::Index) {
            let block = match kind {
                BlockKind::Data => self.data_block(contents, handle)?,
                _ => Block::new(contents, Arc::clone(&self.path), handle.offset)?,
            };
            let mut iter = block.iter();
            iter.seek_to_first()?;
            while iter.valid() {
                if info.entries == 0 {
                    info.first_key = iter.key().to_vec();
                }
                info.entries += 1;
                info.last_key.clear();
                info.last_key.extend_from_slice(iter.key());
                iter.next()?;
            }
        }
        Ok(info)
    }

    /// Wraps the contents of the data block at `handle`, with this table's
    /// key encoding, checking its restart array.
    fn data_block(&self, contents: Bytes, handle: BlockHandle) -> Result<Block> {
        Block::with_encoding(contents, self.key_encoding(), Arc::clone(&self.path), handle.offset)
    }

    /// How this table's data blocks store their keys.
    fn key_encoding(&self) -> KeyEncoding {
        KeyEncoding {
            trailer_words: self.properties.key_trailer_words as usize, // checked at open
            tail_copies: self.properties.tail_copies != 0,
        }
    }

    fn corruption(&self, offset: u64, what: String) -> Error {
        Error::Corruption {
            file: self.path.to_path_buf(),
            offset,
            what,
        }
    }
}

/// Bytes an unmapped iterator reads with one `pread` ([`Table::iter_unmapped`]).
///
/// A compaction walks whole files in order: reading them a block at a time
/// cost a system call (and a buffer) per 4 KiB block; a window of 256 KiB
/// costs one per 64 blocks. The blocks are slices of the window, so a window
/// is freed once the iterator has moved past its last block.
const READ_AHEAD: u64 = 256 << 10;

/// A table file read through windows of [`READ_AHEAD`] bytes, in place of
/// the map (see [`Table::iter_unmapped`]).
#[derive(Debug)]
struct Unmapped {
    file: File,
    /// The bytes read last, from offset `start` of the file.
    window: Bytes,
    start: u64,
    /// The window before this one, whose buffer the next window reuses.
    ///
    /// A fresh 256 KiB buffer per window cost an allocation, its zeroing
    /// and its release (glibc gives a buffer that large back to the system
    /// or consolidates free chunks for it): about 4% of a compaction thread's
    /// time. By the time a third window is read, nothing holds the first one
    /// any more (the block cursor moved two windows on), so its buffer is
    /// taken back whole; if something still holds it (a caller kept a value),
    /// a new buffer is allocated as before.
    spare: Bytes,
}

impl Unmapped {
    /// Bytes `[start, end)` of the file: from the current window if it holds
    /// them, else from a new window read from `start` on, at most to `limit`
    /// (`end <= limit`: where the blocks end, as read-ahead past them would
    /// read the index and footer for nothing).
    fn read(&mut self, start: u64, end: u64, limit: u64) -> std::io::Result<Bytes> {
        let window_end = self.start + self.window.len() as u64;
        if start < self.start || end > window_end {
            let len = (end - start).max(READ_AHEAD).min(limit.max(end) - start);
            let mut buf = self.buffer(len as usize);
            self.file.read_exact_at(&mut buf, start)?;
            self.spare = std::mem::replace(&mut self.window, buf.freeze());
            self.start = start;
        }
        Ok(self
            .window
            .slice((start - self.start) as usize..(end - self.start) as usize))
    }

    /// A buffer of `len` bytes to read into: the spare window's if no one
    /// holds it and it is large enough (its old bytes are all overwritten by
    /// the read), else a new one.
    fn buffer(&mut self, len: usize) -> BytesMut {
        match std::mem::take(&mut self.spare).try_into_mut() {
            Ok(mut buf) if buf.len() >= len => {
                buf.truncate(len);
                buf
            }
            _ => BytesMut::zeroed(len),
        }
    }
}

/// A cursor over a table's entries in key order, with the [`ReadCost`] of
/// everything it read.
///
/// It holds an `Arc` of its table, so it can outlive the caller's handle (a
/// compaction may drop the table from the current version while a scan is
/// still reading it). Methods that move the cursor return `Result`: a damaged
/// block is an error, after which the iterator is invalid.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    /// Position in the index of the data block being read.
    block_index: usize,
    block: Option<BlockIter>,
    cost: ReadCost,
    /// Read blocks from this file instead of the map (see [`Table::iter_unmapped`]).
    file: Option<Unmapped>,
    /// Keys at or after this are of no interest (see [`TableIter::set_upper_bound`]).
    upper_bound: Option<Bytes>,
}

impl TableIter {
    /// Positions at the first entry (invalid if the table is empty). Reads
    /// the first data block; no index search is needed.
    pub fn seek_to_first(&mut self) -> Result<()> {
        let result = self.seek_to_first_inner();
        self.invalidate_on_error(result)
    }

    /// Positions at the first entry whose key is `>= target` (invalid if there
    /// is none). One index lookup (a binary search in memory, counted in
    /// `index_lookups`), then one data block read: the first block whose index
    /// key is `>= target` holds the answer, unless `target` falls between the
    /// block's last key and its (shortened) index key, when the answer is the
    /// next block's first entry and a second block is read.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let result = self.seek_inner(target);
        self.invalidate_on_error(result)
    }

    /// Moves to the next entry, reading the next data block when this one is
    /// exhausted. Does nothing on an invalid iterator.
    #[expect(
        clippy::should_implement_trait,
        reason = "a cursor step that can fail (LevelDB's `Next`), not `Iterator::next`"
    )]
    pub fn next(&mut self) -> Result<()> {
        let result = self.next_inner();
        self.invalidate_on_error(result)
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        self.block.as_ref().is_some_and(BlockIter::valid)
    }

    /// How many leading bytes the current key kept from the one before it
    /// when [`TableIter::next`] stepped within a block (see
    /// [`BlockIter::kept_prefix`]); 0 after a seek, in a new block, or
    /// when invalid.
    pub fn kept_prefix(&self) -> usize {
        match &self.block {
            Some(block) if block.valid() => block.kept_prefix(),
            _ => 0,
        }
    }

    /// The current key (empty when invalid).
    pub fn key(&self) -> &[u8] {
        match &self.block {
            Some(block) if block.valid() => block.key(),
            _ => &[],
        }
    }

    /// The current value, a zero-copy slice of the mapped file (empty when
    /// invalid).
    pub fn value(&self) -> Bytes {
        match &self.block {
            Some(block) => block.value(),
            None => Bytes::new(),
        }
    }

    /// The current value, borrowed from the block in hand (empty when
    /// invalid): valid until the iterator moves, with no reference count
    /// raised (see [`TableIter::value`] for one that outlives it).
    pub fn value_bytes(&self) -> &[u8] {
        match &self.block {
            Some(block) => block.value_bytes(),
            None => &[],
        }
    }

    /// Walks the entries of the data block in hand (see [`BlockIter::walk`]):
    /// `visit` is handed the current entry and, while it answers true, each
    /// later entry of the same block. Nothing is read: at the block's end the
    /// walk stops on its last entry, and [`TableIter::next`] moves on through
    /// the choke point as always. Returns true when `visit` declined an entry
    /// (the iterator stays on it). A damaged entry is an error, after which
    /// the iterator is invalid, as after [`TableIter::next`].
    pub fn walk_block(&mut self, visit: impl FnMut(&[u8], &[u8], &Bytes) -> bool) -> Result<bool> {
        let Some(block) = &mut self.block else {
            return Ok(false);
        };
        let result = block.walk(visit);
        if result.is_err() {
            self.block = None;
        }
        result
    }

    /// What this iterator has read so far.
    pub fn cost(&self) -> &ReadCost {
        &self.cost
    }

    /// Tells the iterator that the caller wants no key at or after `bound`
    /// (RocksDB's `iterate_upper_bound`). When a data block is exhausted and
    /// its index separator is already at or past the bound, every key of the
    /// next block is too: the iterator becomes invalid instead of reading it.
    /// A range read that ends where a block ends reads no block beyond it.
    /// Keys before the bound are produced as always; the caller still checks
    /// each key against its own end.
    ///
    /// The bound is shared, not copied: a read that opens a cursor per
    /// source hands each the same bytes, at the cost of a reference count.
    pub fn set_upper_bound(&mut self, bound: Option<Bytes>) {
        self.upper_bound = bound;
    }

    /// The table being read.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The file offset of the data block the iterator stands in (for an
    /// error about the entry it is on).
    pub fn block_offset(&self) -> u64 {
        self.table.index.get(self.block_index).map_or(0, |e| e.handle.offset)
    }

    fn seek_to_first_inner(&mut self) -> Result<()> {
        if let Some(block) = self.load_block(0)? {
            block.seek_to_first()?;
        }
        self.skip_exhausted_blocks()
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        self.cost.index_lookups += 1;
        let position = self.table.index_position(target);
        // A seek that lands in the block already in hand re-positions inside it:
        // the block was read (and counted) once, as a block cache would serve it.
        let reuse = self.block_index == position && self.block.is_some();
        let block = if reuse {
            self.block.as_mut()
        } else {
            self.load_block(position)?
        };
        if let Some(block) = block {
            block.seek(target)?;
        }
        self.skip_exhausted_blocks()
    }

    fn next_inner(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        if let Some(block) = &mut self.block {
            block.next()?;
        }
        self.skip_exhausted_blocks()
    }

    /// Reads data block `position` of the index through the choke point and
    /// makes it current; past the last block the iterator becomes invalid.
    fn load_block(&mut self, position: usize) -> Result<Option<&mut BlockIter>> {
        // The cursor on the block left behind hands its buffers on.
        let previous = self.block.take();
        let Some(block) = self.table.read_block(position, &mut self.cost, self.file.as_mut())? else {
            return Ok(None);
        };
        self.block_index = position;
        let iter = match previous {
            Some(previous) => previous.move_to(block),
            None => block.into_iter_owned(),
        };
        Ok(Some(self.block.insert(iter)))
    }

    /// While the current block is exhausted, moves to the start of the next.
    /// (Data blocks are never empty, so this reads at most one block unless
    /// the file is damaged.)
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while self.block.as_ref().is_some_and(|block| !block.valid()) {
            if let (Some(bound), Some(entry)) = (&self.upper_bound, self.table.index.get(self.block_index)) {
                if entry.separator.as_slice() >= &bound[..] {
                    self.block = None;
                    break;
                }
            }
            match self.load_block(self.block_index + 1)? {
                Some(block) => block.seek_to_first()?,
                None => break,
            }
        }
        Ok(())
    }

    fn invalidate_on_error(&mut self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            self.block = None;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::tests::{key, value, write_paged_table, write_paged_table_with, TestResult};
    use crate::builder::{TableBuilder, TableOptions};
    use crate::format::FORMAT_VERSION;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn paged_table(dir: &tempfile::TempDir) -> Result<(PathBuf, Arc<Table>)> {
        let path = dir.path().join("000001.sst");
        write_paged_table(&path)?;
        Ok((path.clone(), Arc::new(Table::open(&path)?)))
    }

    /// A table of 1200 values of 1 KiB (value `i` is 1024 bytes of `i as
    /// u8`): about 1.2 MB, five windows of [`READ_AHEAD`] bytes for an
    /// unmapped iterator.
    fn windowed_table(dir: &tempfile::TempDir) -> Result<Arc<Table>> {
        let path = dir.path().join("000001.sst");
        let mut builder = TableBuilder::create(&path, TableOptions::default())?;
        for i in 0..1200 {
            builder.add(&key(i), &[i as u8; 1024], &key(i), false)?;
        }
        let props = builder.finish()?;
        assert!(props.data_bytes > 4 * READ_AHEAD);
        Ok(Arc::new(Table::open(&path)?))
    }

    fn flip_byte(path: &Path, offset: u64) -> std::io::Result<()> {
        let mut bytes = std::fs::read(path)?;
        if let Some(byte) = bytes.get_mut(offset as usize) {
            *byte ^= 0x01;
        }
        std::fs::write(path, bytes)
    }

    /// Every entry of a table, in order.
    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// Reads the whole table with one iterator; returns what it read and its cost.
    fn scan(table: &Arc<Table>) -> Result<(Entries, ReadCost)> {
        let mut iter = table.iter();
        let mut entries = Vec::new();
        iter.seek_to_first()?;
        while iter.valid() {
            entries.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next()?;
        }
        Ok((entries, iter.cost().clone()))
    }

    #[test]
    fn table_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Table>();
        assert_send_sync::<TableIter>();
    }

    #[test]
    fn ten_thousand_keys_round_trip_with_iteration_and_seek_of_every_7th_key() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("big.sst");
        let mut builder = TableBuilder::create(&path, TableOptions::default())?;
        for i in 0..10_000 {
            builder.add(&key(i), format!("value-{i}").as_bytes(), &key(i), false)?;
        }
        let props = builder.finish()?;
        let table = Arc::new(Table::open(&path)?);
        assert_eq!(table.properties(), &props);
        assert_eq!(table.file_size(), props.file_size);
        assert_eq!(table.path(), path);

        let (entries, cost) = scan(&table)?;
        assert_eq!(entries.len(), 10_000);
        for (i, (k, v)) in entries.iter().enumerate() {
            assert_eq!(k, &key(i));
            assert_eq!(v, format!("value-{i}").as_bytes());
        }
        assert_eq!(cost.data_blocks, props.data_blocks);
        assert_eq!(cost.data_bytes, props.data_bytes);

        for i in (0..10_000).step_by(7) {
            let mut iter = table.iter();
            iter.seek(&key(i))?;
            assert_eq!(iter.key(), key(i));
            assert_eq!(iter.value(), format!("value-{i}").as_bytes());
            assert_eq!((iter.cost().index_lookups, iter.cost().data_blocks), (1, 1));
            // Just past key i lands on key i + 1, possibly in the next block.
            let mut after = key(i);
            after.push(0);
            iter.seek(&after)?;
            if i + 1 < 10_000 {
                assert_eq!(iter.key(), key(i + 1));
            } else {
                assert!(!iter.valid());
            }
        }
        Ok(())
    }

    #[test]
    fn a_seek_finds_its_block_among_separators_whose_heads_agree() -> TestResult {
        // Keys that agree on their first 40 bytes: every index head is equal
        // and the whole separators decide.
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("000001.sst");
        let options = TableOptions {
            block_size: 256,
            restart_interval: 4,
            bloom_bits_per_key: 10,
            key_trailer_words: 0,
            tail_copies: false,
            compression: Compression::None,
        };
        let long = |i: usize| format!("{}{i:05}", "r".repeat(40)).into_bytes();
        let mut builder = TableBuilder::create(&path, options)?;
        for i in (0..1000).step_by(2) {
            builder.add(&long(i), &value(i), &long(i), false)?;
        }
        builder.finish()?;
        let table = Arc::new(Table::open(&path)?);
        assert!(table.index_heads.windows(2).all(|pair| pair.first() == pair.last()));
        assert!(table.index.len() > 50, "{} blocks", table.index.len());
        let mut iter = table.iter();
        for i in 0..999 {
            iter.seek(&long(i))?;
            assert_eq!(iter.key(), long(i.next_multiple_of(2)), "seek {i}");
        }
        iter.seek(&long(999))?;
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn seek_reads_exactly_one_data_block_and_counts_its_pages() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;

        // key00005 is in block 0: bytes 0..=4008, page 0.
        let mut iter = table.iter();
        iter.seek(&key(5))?;
        assert_eq!(iter.key(), key(5));
        assert_eq!(iter.value(), value(5));
        let cost = iter.cost();
        assert_eq!(cost.index_lookups, 1);
        assert_eq!(cost.data_blocks, 1);
        assert_eq!(cost.data_bytes, 4009);
        assert_eq!(cost.pages_touched(), 1);
        assert_eq!((cost.filter_checks, cost.filter_negatives), (0, 0));
        Ok(())
    }

    #[test]
    fn an_unmapped_iterator_reads_and_counts_the_same_entries_and_blocks() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let (mut mapped, mut unmapped) = (table.iter(), table.iter_unmapped()?);
        mapped.seek_to_first()?;
        unmapped.seek_to_first()?;
        while mapped.valid() {
            assert!(unmapped.valid());
            assert_eq!((mapped.key(), mapped.value()), (unmapped.key(), unmapped.value()));
            mapped.next()?;
            unmapped.next()?;
        }
        assert!(!unmapped.valid());
        assert_eq!(mapped.cost(), unmapped.cost());
        Ok(())
    }

    #[test]
    fn an_unmapped_iterator_of_a_file_deleted_since_it_was_opened_reads_the_map() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, table) = paged_table(&dir)?;
        std::fs::remove_file(&path)?;
        let (mut mapped, mut unmapped) = (table.iter(), table.iter_unmapped()?);
        mapped.seek_to_first()?;
        unmapped.seek_to_first()?;
        let mut entries = 0;
        while mapped.valid() {
            assert_eq!((mapped.key(), mapped.value()), (unmapped.key(), unmapped.value()));
            mapped.next()?;
            unmapped.next()?;
            entries += 1;
        }
        assert!(!unmapped.valid());
        assert!(entries > 0);
        assert_eq!(mapped.cost(), unmapped.cost());
        Ok(())
    }

    #[test]
    fn an_unmapped_iterator_reads_a_file_larger_than_its_window_in_windows() -> TestResult {
        let dir = tempfile::tempdir()?;
        let table = windowed_table(&dir)?;
        let (mut mapped, mut unmapped) = (table.iter(), table.iter_unmapped()?);
        mapped.seek_to_first()?;
        unmapped.seek_to_first()?;
        let mut entries = 0;
        while mapped.valid() {
            assert!(unmapped.valid());
            assert_eq!((mapped.key(), mapped.value()), (unmapped.key(), unmapped.value()));
            mapped.next()?;
            unmapped.next()?;
            entries += 1;
        }
        assert!(!unmapped.valid());
        assert_eq!(entries, 1200);
        assert_eq!(mapped.cost(), unmapped.cost());
        // A seek back before the window in hand reads the blocks it needs again.
        unmapped.seek(&key(7))?;
        assert_eq!((unmapped.key(), &unmapped.value()[..]), (&key(7)[..], &[7u8; 1024][..]));
        Ok(())
    }

    #[test]
    fn values_kept_from_an_unmapped_iterator_outlive_the_windows_it_reuses() -> TestResult {
        let dir = tempfile::tempdir()?;
        // Five windows: the third and later would reuse the first ones'
        // buffers, were no value of theirs still held.
        let table = windowed_table(&dir)?;
        let mut unmapped = table.iter_unmapped()?;
        unmapped.seek_to_first()?;
        let mut kept = Vec::new();
        while unmapped.valid() {
            // Every 100th value kept, as a caller that holds a row might.
            let i: usize = std::str::from_utf8(unmapped.key().get(3..).unwrap_or_default())?.parse()?;
            if i.is_multiple_of(100) {
                kept.push((i, unmapped.value()));
            }
            unmapped.next()?;
        }
        assert_eq!(kept.len(), 12);
        for (i, value) in kept {
            assert_eq!(&value[..], &[i as u8; 1024][..], "value {i}");
        }
        Ok(())
    }

    #[test]
    fn an_unmapped_iterator_reads_into_the_buffer_two_windows_back_only_when_nothing_holds_it() -> TestResult {
        let dir = tempfile::tempdir()?;
        let table = windowed_table(&dir)?;
        let mut unmapped = table.iter_unmapped()?;
        unmapped.seek_to_first()?;
        // The first value is kept: the first window's buffer is held.
        let first = unmapped.value();
        // Each window read, as its start in the file and its buffer's address.
        let mut windows: Vec<(u64, usize)> = Vec::new();
        while unmapped.valid() {
            if let Some(file) = &unmapped.file {
                let window = (file.start, file.window.as_ptr() as usize);
                if windows.last() != Some(&window) {
                    windows.push(window);
                }
            }
            unmapped.next()?;
        }
        assert!(windows.len() >= 5, "{windows:?}");
        let buffer = |i: usize| windows.get(i).map(|&(_, at)| at);
        assert_ne!(buffer(2), buffer(0), "the third window read into the held first one");
        for i in 3..windows.len() {
            assert_eq!(
                buffer(i),
                buffer(i - 2),
                "window {i} did not take back window {}'s buffer",
                i - 2
            );
        }
        assert!(
            first.len() == 1024 && first.iter().all(|&b| b == 0),
            "the first value was overwritten"
        );
        Ok(())
    }

    #[test]
    fn a_second_seek_into_the_block_in_hand_reads_nothing_more() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut iter = table.iter();
        iter.seek(&key(5))?;
        iter.seek(&key(20))?;
        assert_eq!(iter.key(), key(20));
        assert_eq!((iter.cost().index_lookups, iter.cost().data_blocks), (2, 1));
        // A seek into another block reads that block.
        iter.seek(&key(45))?;
        assert_eq!(iter.cost().data_blocks, 2);
        Ok(())
    }

    #[test]
    fn a_block_straddling_a_page_boundary_touches_two_pages() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        // key00045 is in block 1: bytes 4009..=8017, pages 0 and 1.
        let mut iter = table.iter();
        iter.seek(&key(45))?;
        assert_eq!(iter.key(), key(45));
        assert_eq!(iter.cost().data_blocks, 1);
        assert_eq!(iter.cost().pages_touched(), 2);
        Ok(())
    }

    #[test]
    fn a_full_scan_reads_every_block_once_and_each_page_once() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let (entries, cost) = scan(&table)?;
        assert_eq!(entries.len(), 120);
        assert_eq!(cost.index_lookups, 0);
        assert_eq!(cost.data_blocks, 3);
        assert_eq!(cost.data_bytes, 12_027);
        assert_eq!(cost.pages_touched(), 3); // bytes 0..=12026: pages 0, 1, 2
        Ok(())
    }

    #[test]
    fn seek_past_the_last_key_reads_no_data_block() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut iter = table.iter();
        iter.seek(b"key00119\x00")?;
        assert!(!iter.valid());
        assert_eq!(iter.key(), b"");
        assert_eq!(iter.value(), Bytes::new());
        assert_eq!((iter.cost().index_lookups, iter.cost().data_blocks), (1, 0));
        assert_eq!(iter.cost().pages_touched(), 0);
        iter.next()?;
        assert!(!iter.valid());
        Ok(())
    }

    #[test]
    fn next_crosses_into_the_next_block_through_the_choke_point() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut iter = table.iter();
        iter.seek(&key(39))?; // last entry of block 0
        iter.next()?;
        assert_eq!(iter.key(), key(40));
        assert_eq!(iter.cost().data_blocks, 2);
        assert_eq!(iter.cost().pages_touched(), 2);
        Ok(())
    }

    #[test]
    fn a_block_walk_hands_over_the_entries_of_the_block_in_hand_and_reads_no_other() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut iter = table.iter();
        iter.seek(&key(30))?;
        // Declined at key 35: the iterator stays on it.
        let mut seen = Vec::new();
        let declined = iter.walk_block(|k, v, block| {
            // The value lies in the block handed over with it.
            assert_eq!(block.slice_ref(v), v);
            seen.push((k.to_vec(), v.to_vec()));
            k != key(35).as_slice()
        })?;
        let expected: Vec<(Vec<u8>, Vec<u8>)> = (30..36).map(|i| (key(i), value(i))).collect();
        assert_eq!((declined, seen, iter.key().to_vec()), (true, expected, key(35)));
        // Taken to the block's end (key 39): the walk stays on its last entry
        // and reads nothing more; `next` crosses into the next block.
        let mut walked = Vec::new();
        let declined = iter.walk_block(|k, _, _| {
            walked.push(k.to_vec());
            true
        })?;
        assert_eq!((declined, walked), (false, (35..40).map(key).collect::<Vec<_>>()));
        assert_eq!((iter.key().to_vec(), iter.cost().data_blocks), (key(39), 1));
        iter.next()?;
        assert_eq!((iter.key().to_vec(), iter.cost().data_blocks), (key(40), 2));
        Ok(())
    }

    #[test]
    fn a_filter_negative_costs_zero_data_blocks() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut cost = ReadCost::default();
        assert!(!table.may_contain(b"absent-row", &mut cost));
        assert_eq!((cost.filter_checks, cost.filter_negatives), (1, 1));
        assert_eq!((cost.data_blocks, cost.pages_touched()), (0, 0));
        for i in 0..120 {
            assert!(table.may_contain(&key(i), &mut cost));
        }
        assert_eq!((cost.filter_checks, cost.filter_negatives), (121, 1));
        Ok(())
    }

    #[test]
    fn a_table_without_a_filter_may_contain_everything_and_counts_no_check() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.sst");
        let options = TableOptions {
            bloom_bits_per_key: 0,
            ..TableOptions::default()
        };
        let mut builder = TableBuilder::create(&path, options)?;
        builder.add(b"a", b"1", b"a", false)?;
        builder.finish()?;
        let table = Table::open(&path)?;
        let mut cost = ReadCost::default();
        assert!(table.may_contain(b"absent-row", &mut cost));
        assert_eq!(cost, ReadCost::default());
        assert_eq!(table.blocks()?.len(), 3); // data, properties, index
        assert_eq!(table.verify()?.blocks, 3);
        Ok(())
    }

    #[test]
    fn an_empty_table_opens_and_iterates_nothing() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("empty.sst");
        let props = TableBuilder::create(&path, TableOptions::default())?.finish()?;
        assert_eq!((props.entries, props.data_blocks, props.data_bytes), (0, 0, 0));
        let table = Arc::new(Table::open(&path)?);
        let mut iter = table.iter();
        iter.seek_to_first()?;
        assert!(!iter.valid());
        iter.seek(b"")?;
        assert!(!iter.valid());
        let kinds: Vec<BlockKind> = table.blocks()?.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [BlockKind::Filter, BlockKind::Properties, BlockKind::Index]);
        assert_eq!(table.verify()?.entries, 0);
        Ok(())
    }

    #[test]
    fn blocks_lists_every_block_in_file_order() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let info = |kind, offset, size, entries, first: &[u8], last: &[u8]| BlockInfo {
            kind,
            handle: BlockHandle::new(offset, size),
            entries,
            first_key: first.to_vec(),
            last_key: last.to_vec(),
            checksum_ok: true,
            codec: Codec::None,
            uncompressed_size: size,
        };
        let expected = vec![
            info(BlockKind::Data, 0, 4004, 40, b"key00000", b"key00039"),
            info(BlockKind::Data, 4009, 4004, 40, b"key00040", b"key00079"),
            info(BlockKind::Data, 8018, 4004, 40, b"key00080", b"key00119"),
            info(BlockKind::Filter, 12_027, 151, 0, b"", b""),
            info(BlockKind::Properties, 12_183, 43, 0, b"", b""),
            info(BlockKind::Index, 12_231, 60, 3, b"key0003:", b"key00119"), // separators, then the last key
        ];
        assert_eq!(table.blocks()?, expected);
        Ok(())
    }

    #[test]
    fn verify_checks_every_block_and_entry() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let expected = VerifyReport {
            blocks: 6,
            data_blocks: 3,
            entries: 120,
            bytes: 12_368,
        };
        assert_eq!(table.verify()?, expected);
        Ok(())
    }

    #[test]
    fn a_flipped_byte_in_a_data_block_is_corruption_naming_the_file_and_block() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, _) = paged_table(&dir)?;
        flip_byte(&path, 4009 + 100)?; // inside block 1
        let table = Arc::new(Table::open(&path)?); // data blocks are not read at open

        let mut iter = table.iter();
        iter.seek(&key(5))?; // block 0 is intact
        assert_eq!(iter.key(), key(5));
        match iter.seek(&key(45)) {
            Err(Error::Corruption { file, offset, what }) => {
                assert_eq!(file, path);
                assert_eq!(offset, 4009);
                assert!(what.starts_with("checksum mismatch in data block"), "{what}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        assert!(!iter.valid());
        assert_eq!(iter.cost().data_blocks, 2); // the bad block was read

        assert!(matches!(table.verify(), Err(Error::Corruption { offset: 4009, .. })));
        let ok: Vec<bool> = table.blocks()?.iter().map(|b| b.checksum_ok).collect();
        assert_eq!(ok, [true, false, true, true, true, true]);
        Ok(())
    }

    #[test]
    fn a_flipped_byte_in_the_index_or_properties_fails_open_at_that_block() -> TestResult {
        for (offset, block_offset) in [(12_231 + 3, 12_231), (12_183 + 1, 12_183), (12_027 + 7, 12_027)] {
            let dir = tempfile::tempdir()?;
            let (path, _) = paged_table(&dir)?;
            flip_byte(&path, offset)?;
            match Table::open(&path) {
                Err(Error::Corruption { offset, .. }) => assert_eq!(offset, block_offset),
                other => panic!("expected corruption, got {other:?}"),
            }
        }
        Ok(())
    }

    #[test]
    fn every_single_flipped_byte_is_detected_by_open_or_verify() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, _) = paged_table(&dir)?;
        let original = std::fs::read(&path)?;
        let damaged = dir.path().join("damaged.sst");
        for offset in 0..original.len() {
            let mut bytes = original.clone();
            bytes[offset] ^= 0x01;
            std::fs::write(&damaged, &bytes)?;
            let result = Table::open(&damaged).and_then(|table| table.verify());
            assert!(result.is_err(), "flip at {offset} went unnoticed");
        }
        Ok(())
    }

    #[test]
    fn an_upper_bound_at_or_below_a_blocks_separator_stops_before_the_next_block() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let blocks = table.index.len();
        assert!(blocks >= 3, "{blocks} blocks");
        for (i, entry) in table.index.iter().enumerate().take(blocks - 1) {
            // At the separator: the next block's keys are all past the bound.
            let mut iter = table.iter();
            iter.set_upper_bound(Some(Bytes::copy_from_slice(&entry.separator)));
            iter.seek_to_first()?;
            while iter.valid() {
                iter.next()?;
            }
            assert_eq!(iter.cost().data_blocks, i as u64 + 1, "bound at separator {i}");
            // Just past it, the next block may hold keys below the bound: it is read.
            let mut above = entry.separator.clone();
            above.push(0);
            let mut iter = table.iter();
            iter.set_upper_bound(Some(Bytes::copy_from_slice(&above)));
            iter.seek_to_first()?;
            while iter.valid() && iter.key() < above.as_slice() {
                iter.next()?;
            }
            assert_eq!(iter.cost().data_blocks, i as u64 + 2, "bound above separator {i}");
        }
        Ok(())
    }

    #[test]
    fn a_data_block_is_checked_the_first_time_it_is_read_and_then_served_as_checked() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, table) = paged_table(&dir)?;
        let (entries, _) = scan(&table)?;
        // Damage the first data block in place, under the open table's map.
        let mut file = std::fs::OpenOptions::new().write(true).open(&path)?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(10))?;
        std::io::Write::write_all(&mut file, b"damage")?;
        drop(file);
        let (again, cost) = scan(&table)?;
        assert_eq!(again.len(), entries.len(), "already checked: read as it is now");
        assert_eq!(
            cost.data_blocks,
            table.properties().data_blocks,
            "and counted all the same"
        );
        assert!(matches!(table.verify(), Err(Error::Corruption { offset: 0, .. })));
        // A table opened afresh checks it again.
        let reopened = Arc::new(Table::open(&path)?);
        assert!(matches!(scan(&reopened), Err(Error::Corruption { offset: 0, .. })));
        Ok(())
    }

    #[test]
    fn a_restart_array_out_of_order_under_a_good_checksum_is_corruption_at_every_read() -> TestResult {
        // Restart points out of order would send a seek's binary search to the
        // wrong entry. Only the first read of a block walks its restart array
        // (later ones trust it, as they trust its checksum): a block that fails
        // the walk is never marked checked, so every read reports it.
        let dir = tempfile::tempdir()?;
        let (path, table) = paged_table(&dir)?;
        let first = table.index.first().map(|e| e.handle).ok_or("no data block")?;
        let mut bytes = std::fs::read(&path)?;
        let size = first.size as usize;
        let count = get_fixed32(&bytes, size - 4).ok_or("no restart count")? as usize;
        let entries_end = size - 4 - 4 * count;
        // Swap restart points 1 and 2, then make the checksum match again.
        let (at1, at2) = (entries_end + 4, entries_end + 8);
        let restart1: [u8; 4] = bytes.get(at1..at1 + 4).ok_or("short")?.try_into()?;
        let restart2: [u8; 4] = bytes.get(at2..at2 + 4).ok_or("short")?.try_into()?;
        bytes.get_mut(at1..at1 + 4).ok_or("short")?.copy_from_slice(&restart2);
        bytes.get_mut(at2..at2 + 4).ok_or("short")?.copy_from_slice(&restart1);
        let kind = *bytes.get(size).ok_or("no trailer")?;
        let crc = block_checksum(bytes.get(..size).ok_or("short")?, kind);
        bytes
            .get_mut(size + 1..size + 5)
            .ok_or("short")?
            .copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, bytes)?;

        let table = Arc::new(Table::open(&path)?);
        let mut iter = table.iter();
        for _ in 0..2 {
            match iter.seek(&key(3)) {
                Err(Error::Corruption { file, offset, what }) => {
                    assert_eq!((file, offset), (path.clone(), at2 as u64));
                    assert!(what.contains("restart point 2"), "{what}");
                }
                other => panic!("expected corruption, got {other:?}"),
            }
            assert!(!iter.valid());
        }
        // The other blocks read as ever.
        iter.seek(&key(119))?;
        assert_eq!(iter.key(), key(119));
        Ok(())
    }

    #[test]
    fn a_truncated_file_is_corruption() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, _) = paged_table(&dir)?;
        let bytes = std::fs::read(&path)?;

        std::fs::write(&path, &bytes[..50])?;
        match Table::open(&path) {
            Err(Error::Corruption { offset, what, .. }) => {
                assert_eq!(offset, 0);
                assert!(what.contains("too short"), "{what}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }

        std::fs::write(&path, &bytes[..bytes.len() - 10])?;
        assert!(matches!(Table::open(&path), Err(Error::Corruption { .. })));
        std::fs::write(&path, b"")?;
        assert!(matches!(Table::open(&path), Err(Error::Corruption { offset: 0, .. })));
        Ok(())
    }

    #[test]
    fn a_bad_magic_number_is_corruption() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, _) = paged_table(&dir)?;
        flip_byte(&path, 12_367)?;
        match Table::open(&path) {
            Err(Error::Corruption { file, offset, what }) => {
                assert_eq!(file, path);
                assert_eq!(offset, 12_360);
                assert!(what.starts_with("bad magic"), "{what}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn a_future_format_version_is_unsupported() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, _) = paged_table(&dir)?;
        let mut bytes = std::fs::read(&path)?;
        let at = bytes.len() - 12;
        bytes[at..at + 4].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        std::fs::write(&path, bytes)?;
        match Table::open(&path) {
            Err(Error::UnsupportedVersion { file, found, supported }) => {
                assert_eq!(file, path);
                assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
            }
            other => panic!("expected unsupported version, got {other:?}"),
        }
        Ok(())
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_it() {
        let path = Path::new("/nonexistent/000001.sst");
        match Table::open(path) {
            Err(Error::Io { path: p, .. }) => assert_eq!(p, path),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn values_outlive_the_iterator_and_the_table_handle() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = paged_table(&dir)?;
        let mut iter = table.iter();
        drop(table);
        iter.seek(&key(7))?;
        let v = iter.value();
        drop(iter);
        assert_eq!(v, value(7));
        Ok(())
    }

    /// The paged table with its data blocks compressed by `compression`,
    /// opened with `cache` if one is given.
    fn compressed_paged_table(
        dir: &tempfile::TempDir,
        compression: Compression,
        cache: Option<&BlockCache>,
    ) -> Result<(PathBuf, Arc<Table>)> {
        let path = dir.path().join("000002.sst");
        write_paged_table_with(&path, compression)?;
        let table = match cache {
            Some(cache) => Table::open_with_cache(&path, cache)?,
            None => Table::open(&path)?,
        };
        Ok((path, Arc::new(table)))
    }

    #[test]
    fn a_compressed_table_stores_each_data_block_compressed_and_the_others_raw() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, table) = compressed_paged_table(&dir, Compression::Lz4, None)?;
        let props = table.properties();
        assert_eq!((props.compression, props.compressed_blocks), (Compression::Lz4, 3));
        // 4,004-byte blocks of 85-byte runs of one letter shrink to about 540 bytes.
        assert_eq!((props.data_bytes, props.uncompressed_data_bytes), (1_629, 12_027));
        assert_eq!(props.file_size, 1_975);
        let stored: Vec<(BlockKind, u64, u64, Codec, u64)> = table
            .blocks()?
            .iter()
            .map(|b| (b.kind, b.handle.offset, b.handle.size, b.codec, b.uncompressed_size))
            .collect();
        assert_eq!(
            stored,
            [
                (BlockKind::Data, 0, 537, Codec::Lz4, 4004),
                (BlockKind::Data, 542, 538, Codec::Lz4, 4004),
                (BlockKind::Data, 1085, 539, Codec::Lz4, 4004),
                (BlockKind::Filter, 1629, 151, Codec::None, 151),
                (BlockKind::Properties, 1785, 48, Codec::None, 48),
                (BlockKind::Index, 1838, 60, Codec::None, 60),
            ]
        );
        let bytes = std::fs::read(&path)?;
        assert_eq!(bytes[537], 0x11, "data, lz4");
        assert_eq!(
            &bytes[bytes.len() - 12..bytes.len() - 8],
            &3u32.to_le_bytes(),
            "format version 3"
        );
        let (entries, _) = scan(&table)?;
        assert_eq!(entries.len(), 120);
        assert_eq!(entries[45], (key(45), value(45)));
        assert_eq!(table.verify()?.entries, 120);
        Ok(())
    }

    #[test]
    fn a_table_without_compression_is_written_in_version_2() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (path, table) = paged_table(&dir)?;
        let bytes = std::fs::read(&path)?;
        assert_eq!(&bytes[bytes.len() - 12..bytes.len() - 8], &2u32.to_le_bytes());
        assert_eq!(table.properties().compression, Compression::None);
        Ok(())
    }

    #[test]
    fn a_compressed_block_read_counts_its_stored_bytes_and_then_hits_the_cache() -> TestResult {
        let dir = tempfile::tempdir()?;
        let cache = BlockCache::new(1 << 20);
        let (_, table) = compressed_paged_table(&dir, Compression::Lz4, Some(&cache))?;

        // First read of key00005: block 0 (537 + 5 bytes as stored) from the file.
        let mut iter = table.iter();
        iter.seek(&key(5))?;
        assert_eq!((iter.key(), iter.value()), (key(5).as_slice(), Bytes::from(value(5))));
        let cost = iter.cost();
        assert_eq!((cost.data_blocks, cost.data_bytes, cost.pages_touched()), (1, 542, 1));
        assert_eq!(
            (cost.cache_hits, cost.cache_misses, cost.decompressed_bytes),
            (0, 1, 4004)
        );
        assert_eq!(cache.len(), 1);

        // Second read, another iterator: the decompressed block is in the cache.
        let mut iter = table.iter();
        iter.seek(&key(7))?;
        assert_eq!(iter.value(), value(7));
        let cost = iter.cost();
        assert_eq!((cost.data_blocks, cost.data_bytes, cost.pages_touched()), (1, 0, 0));
        assert_eq!((cost.cache_hits, cost.cache_misses, cost.decompressed_bytes), (1, 0, 0));

        // A scan: block 0 from the cache, blocks 1 and 2 (543 + 544 bytes) from the file.
        let (entries, cost) = scan(&table)?;
        assert_eq!(entries.len(), 120);
        assert_eq!((cost.data_blocks, cost.data_bytes, cost.pages_touched()), (3, 1_087, 1));
        assert_eq!(
            (cost.cache_hits, cost.cache_misses, cost.decompressed_bytes),
            (1, 2, 8_008)
        );
        Ok(())
    }

    #[test]
    fn without_a_cache_every_read_of_a_compressed_block_decompresses_it() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_, table) = compressed_paged_table(&dir, Compression::Zstd { level: 3 }, None)?;
        for _ in 0..2 {
            let mut iter = table.iter();
            iter.seek(&key(45))?;
            assert_eq!(iter.value(), value(45));
            let cost = iter.cost();
            assert_eq!(
                (cost.data_blocks, cost.data_bytes, cost.decompressed_bytes),
                (1, 295, 4004)
            );
            assert_eq!((cost.cache_hits, cost.cache_misses), (0, 0));
        }
        Ok(())
    }

    #[test]
    fn a_compaction_reader_neither_looks_in_nor_fills_the_cache() -> TestResult {
        let dir = tempfile::tempdir()?;
        let cache = BlockCache::new(1 << 20);
        let (_, table) = compressed_paged_table(&dir, Compression::Lz4, Some(&cache))?;
        let mut iter = table.iter_unmapped()?;
        iter.seek_to_first()?;
        while iter.valid() {
            iter.next()?;
        }
        let cost = iter.cost();
        assert_eq!(
            (cost.data_blocks, cost.data_bytes, cost.decompressed_bytes),
            (3, 1_629, 12_012)
        );
        assert_eq!((cost.cache_hits, cost.cache_misses), (0, 0));
        assert!(cache.is_empty());
        Ok(())
    }

    #[test]
    fn a_raw_block_in_a_compressed_table_is_read_zero_copy_after_one_cache_miss() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("t.sst");
        let options = TableOptions {
            compression: Compression::Lz4,
            ..TableOptions::default()
        };
        let mut builder = TableBuilder::create(&path, options)?;
        // Bytes of a linear congruential generator: the block cannot shrink by 1/8.
        let mut x = 7u32;
        let noise: Vec<u8> = (0..2000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 24) as u8
            })
            .collect();
        builder.add(b"k", &noise, b"k", false)?;
        let props = builder.finish()?;
        assert_eq!((props.compression, props.compressed_blocks), (Compression::Lz4, 0));
        let cache = BlockCache::new(1 << 20);
        let table = Arc::new(Table::open_with_cache(&path, &cache)?);
        let costs: Vec<(u64, u64, u64)> = (0..2)
            .map(|_| {
                let mut iter = table.iter();
                iter.seek(b"k").map(|()| {
                    let c = iter.cost();
                    (c.cache_misses, c.cache_hits, c.data_bytes)
                })
            })
            .collect::<Result<_>>()?;
        assert_eq!(costs, [(1, 0, props.data_bytes), (0, 0, props.data_bytes)]);
        assert!(cache.is_empty());
        Ok(())
    }

    #[test]
    fn every_flipped_byte_of_a_compressed_table_is_corruption_never_a_panic_or_other_data() -> TestResult {
        for compression in [Compression::Lz4, Compression::Zstd { level: 3 }] {
            let dir = tempfile::tempdir()?;
            let (path, table) = compressed_paged_table(&dir, compression, None)?;
            let (original, _) = scan(&table)?;
            let bytes = std::fs::read(&path)?;
            let damaged = dir.path().join("damaged.sst");
            for offset in 0..bytes.len() {
                for mask in [0x01, 0x80, 0xff] {
                    let mut copy = bytes.clone();
                    copy[offset] ^= mask;
                    std::fs::write(&damaged, &copy)?;
                    let cache = BlockCache::new(1 << 20);
                    let table = match Table::open_with_cache(&damaged, &cache) {
                        Err(Error::Corruption { .. }) => continue,
                        // The version's low bits, flipped to a version this build knows no more of.
                        Err(Error::UnsupportedVersion { .. }) => continue,
                        Err(other) => panic!("{compression}, flip {mask:#x} at {offset}: {other:?}"),
                        Ok(table) => Arc::new(table),
                    };
                    match scan(&table) {
                        Ok((entries, _)) => assert_eq!(entries, original, "{compression}: flip at {offset}"),
                        Err(Error::Corruption { .. }) => {}
                        Err(other) => panic!("{compression}, flip {mask:#x} at {offset}: {other:?}"),
                    }
                    assert!(
                        matches!(table.verify(), Err(Error::Corruption { .. })),
                        "{compression}: flip {mask:#x} at {offset} went unnoticed"
                    );
                }
            }
        }
        Ok(())
    }

    /// Keys of 0..16 bytes and values of 0..40, so small blocks hold few entries.
    fn entry_map() -> impl Strategy<Value = BTreeMap<Vec<u8>, Vec<u8>>> {
        prop::collection::btree_map(
            prop::collection::vec(any::<u8>(), 0..16),
            prop::collection::vec(any::<u8>(), 0..40),
            0..300,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn random_sorted_key_sets_round_trip(
            map in entry_map(),
            block_size in 1usize..600,
            restart_interval in 1usize..20,
            key_trailer_words in 0usize..=2,
            tail_copies in any::<bool>(),
            compression in prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(Compression::Zstd { level: 1 })],
            probes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..32), 1..20),
        ) {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.sst");
            // With a key trailer, every key gets one: small numbers derived
            // from the key, so neighbours' words differ in a few low bytes.
            let map: BTreeMap<Vec<u8>, Vec<u8>> = map
                .into_iter()
                .map(|(mut k, v)| {
                    let seed = k.iter().fold(7u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                    for word in 0..key_trailer_words as u64 {
                        k.extend_from_slice(&(seed.rotate_left(word as u32 * 29) % 100_000).to_be_bytes());
                    }
                    (k, v)
                })
                .collect();
            let options = TableOptions { block_size, restart_interval, bloom_bits_per_key: 10, key_trailer_words, tail_copies, compression };
            let mut builder = TableBuilder::create(&path, options)?;
            for (k, v) in &map {
                builder.add(k, v, k, false)?;
            }
            builder.finish()?;
            let table = Arc::new(Table::open(&path)?);

            let (entries, _) = scan(&table)?;
            let expected: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(entries, expected);
            prop_assert_eq!(table.verify()?.entries, map.len() as u64);

            let mut cost = ReadCost::default();
            for k in map.keys() {
                prop_assert!(table.may_contain(k, &mut cost));
            }
            for probe in probes {
                let mut iter = table.iter();
                iter.seek(&probe)?;
                match map.range(probe..).next() {
                    Some((k, v)) => {
                        prop_assert_eq!(iter.key(), k.as_slice());
                        prop_assert_eq!(iter.value(), Bytes::from(v.clone()));
                        prop_assert!(iter.cost().data_blocks >= 1);
                    }
                    None => prop_assert!(!iter.valid()),
                }
            }
        }

        #[test]
        fn every_block_kind_round_trips_under_each_compression(
            entries in prop::collection::btree_map(
                prop::collection::vec(any::<u8>(), 0..24),
                // A value is a short pattern repeated, so blocks do compress.
                (prop::collection::vec(any::<u8>(), 1..8), 0usize..40),
                1..300,
            ),
            block_size in 64usize..2048,
            compression in prop_oneof![Just(Compression::None), Just(Compression::Lz4), (1i32..=9).prop_map(|level| Compression::Zstd { level })],
        ) {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.sst");
            let map: BTreeMap<Vec<u8>, Vec<u8>> = entries
                .into_iter()
                .map(|(k, (pattern, times))| (k, pattern.repeat(times)))
                .collect();
            let options = TableOptions { block_size, compression, ..TableOptions::default() };
            let mut builder = TableBuilder::create(&path, options)?;
            for (k, v) in &map {
                builder.add(k, v, k, false)?;
            }
            let written = builder.finish()?;
            let cache = BlockCache::new(1 << 20);
            let table = Arc::new(Table::open_with_cache(&path, &cache)?);
            // Properties: read back as written.
            prop_assert_eq!(table.properties(), &written);
            // Data blocks: every entry back, twice (the second time from the cache).
            let expected: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            for _ in 0..2 {
                let (entries, cost) = scan(&table)?;
                prop_assert_eq!(&entries, &expected);
                prop_assert_eq!(cost.data_blocks, written.data_blocks);
            }
            // Index and filter: every key found through both.
            let mut cost = ReadCost::default();
            for (k, v) in &map {
                prop_assert!(table.may_contain(k, &mut cost));
                let mut iter = table.iter();
                iter.seek(k)?;
                prop_assert_eq!((iter.key(), iter.value()), (k.as_slice(), Bytes::from(v.clone())));
            }
            // Only data blocks are compressed, and the properties count them.
            let blocks = table.blocks()?;
            let compressed = blocks.iter().filter(|b| b.codec != Codec::None).count() as u64;
            prop_assert_eq!(compressed, written.compressed_blocks);
            for b in &blocks {
                prop_assert!(b.codec == Codec::None || (b.kind == BlockKind::Data && b.codec == compression.codec()));
            }
            let kinds: std::collections::BTreeSet<u8> = blocks.iter().map(|b| b.kind.as_u8()).collect();
            prop_assert_eq!(kinds.len(), 4);
            prop_assert_eq!(table.verify()?.entries, map.len() as u64);
        }

        #[test]
        fn arbitrary_bytes_never_panic_table_open(
            bytes in prop::collection::vec(any::<u8>(), 0..600),
            with_footer_tail in any::<bool>(),
        ) {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("junk.sst");
            let mut bytes = bytes;
            if with_footer_tail {
                // A valid version and magic, so the handles before them get decoded.
                bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
                bytes.extend_from_slice(b"cellarSS");
            }
            std::fs::write(&path, &bytes)?;
            if let Ok(table) = Table::open(&path) {
                let table = Arc::new(table);
                let _ = table.verify();
                let _ = table.blocks();
                let _ = scan(&table);
            }
        }

        #[test]
        fn a_damaged_table_is_never_read_as_different_data(
            offset in 0usize..12_368,
            mask in 1u8..=255,
            truncate_to in prop::option::of(0usize..12_368),
        ) {
            let dir = tempfile::tempdir()?;
            let (path, table) = paged_table(&dir)?;
            let (original, _) = scan(&table)?;
            drop(table);
            let mut bytes = std::fs::read(&path)?;
            bytes[offset] ^= mask;
            if let Some(len) = truncate_to {
                bytes.truncate(len);
            }
            std::fs::write(&path, &bytes)?;
            // Opening may fail; if it succeeds, reading must fail or be right.
            if let Ok(table) = Table::open(&path) {
                let table = Arc::new(table);
                if let Ok((entries, _)) = scan(&table) {
                    prop_assert_eq!(entries, original);
                }
                prop_assert!(table.verify().is_err());
            }
        }
    }
}
