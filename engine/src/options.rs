//! Options of a store and of each column family, with their defaults.
//!
//! A store's options say how it writes its log; a family's options say how its
//! data is kept: how many versions, for how long, in which block size, with how
//! big a bloom filter, how its blocks are compressed, when its memtable is
//! flushed and when its files are compacted. Family options are recorded in
//! the manifest, so a store reopens with the options its families were created
//! with unless new ones are given. A family's options decide how its *new*
//! tables are written; each table records in its own properties how it was
//! written (its block size, its compression), so a family whose options change
//! still reads its older tables.

use std::time::Duration;

pub use cellar_sstable::Compression;

use crate::error::{Error, Result};

/// Longest row key, in bytes (HBase's limit is 32,767).
pub const MAX_ROW_BYTES: usize = 32 * 1024;
/// Longest column name, in bytes.
pub const MAX_COLUMN_BYTES: usize = 32 * 1024;
/// Largest value, in bytes. A value is stored whole in one block, so a very large
/// value makes one very large block.
pub const MAX_VALUE_BYTES: usize = 16 * 1024 * 1024;

/// When the write-ahead log is forced to stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `fdatasync` before every write returns: nothing acknowledged is lost even
    /// on power loss. Costs one disk flush per write (or per group of writes).
    Always,
    /// No `fdatasync` per write; every write is still handed to the operating
    /// system before it returns, so a crash of the process loses nothing, but a
    /// power loss can lose the last writes (a prefix of the history survives).
    /// A log segment is still synced once when it is closed (once per
    /// memtable), so that a flushed family never outlives the part of a batch
    /// another family holds only in that segment.
    Never,
    /// `fdatasync` at most this long after a write: a write whose last sync
    /// is older syncs at once, and a background thread syncs the last writes
    /// when this much time has passed, even if no other write comes.
    Interval(Duration),
    /// Writes collect in a buffer of [`LOG_BUFFER_BYTES`] in the process and go
    /// to the OS when it fills, when a log segment closes, and when the store
    /// closes: no system call per write, but a crash of the process can lose
    /// the last buffer of acknowledged writes (a prefix still survives). This
    /// is fjall's default journal behaviour; `Never` is RocksDB's and LevelDB's.
    Buffered,
}

/// Size of the in-process log buffer of [`SyncPolicy::Buffered`].
pub const LOG_BUFFER_BYTES: usize = 64 << 10;

impl SyncPolicy {
    /// How many bytes the log may hold in the process before writing them.
    pub(crate) fn log_buffer(self) -> usize {
        match self {
            SyncPolicy::Buffered => LOG_BUFFER_BYTES,
            _ => 0,
        }
    }
}

/// Options of a whole store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Create the store if the folder holds none (default true).
    pub create_if_missing: bool,
    /// When the log is synced (default [`SyncPolicy::Never`], as RocksDB and LevelDB default).
    pub sync: SyncPolicy,
    /// Once the live log segments together pass this many bytes, the families
    /// whose memtables hold the oldest segment are flushed, so that it can be
    /// deleted: this is how a family written rarely is kept from pinning the
    /// log (RocksDB's `max_total_wal_size`). 0, the default, means four times
    /// the largest memtable the store has filled (RocksDB's 0 means four times
    /// its memtable limits; a family's memtable may be limited by entries
    /// here, so the size memtables reach is what counts): room for every
    /// family's memtables to fill and wait for their flush, and no more.
    pub max_log_bytes: u64,
    /// Writers wait when a family has this many memtables waiting to be flushed
    /// (default 2). The active memtable fills only while fewer wait, and the
    /// write that fills it freezes it, so a family holds at most this many
    /// full memtables (plus the few writes that reach the new active one
    /// before the next write waits): with 2, one flushing while the next
    /// fills, as RocksDB's default `max_write_buffer_number` of 2 allows
    /// (measured at 10M random puts: 136 to 147 MiB of the writer's heap for
    /// two 64 MiB memtables, 88 MiB with 1). With 1, a writer waits for every
    /// flush (measured on 1M sequential puts: 12% slower than with 2).
    pub max_immutable_memtables: usize,
    /// Families declared at open: created if missing, options updated if present.
    pub families: Vec<(String, FamilyOptions)>,
    /// Bytes of decompressed data blocks kept in memory for the families that
    /// compress their tables, all families sharing it (default 32 MiB, as
    /// RocksDB's and fjall's block caches; 0 keeps none, so every read of a
    /// compressed block decompresses it). Raw blocks are never in it: they are
    /// read from the mapped file, and the OS page cache keeps their pages.
    pub block_cache_bytes: u64,
    /// On open, keep the log records before a damaged one and drop the rest,
    /// instead of refusing to open (default false: a damaged record in the
    /// middle of the log is an error, since records after it were acknowledged).
    pub salvage_log: bool,
    /// The nice value the compaction thread lowers itself to, 19 at most (default
    /// 10; 0 leaves it at the writer's priority; Linux only, elsewhere
    /// ignored). On a machine with fewer free cores than busy threads, the
    /// scheduler then hands a core to a writer before a compaction, so a write
    /// waits less often behind a scheduler slice of merging (RocksDB's
    /// `Env::LowerThreadPoolCPUPriority` for its compaction pool). Compaction
    /// still gets every core nobody else wants. No write waits for compaction
    /// itself (only for flushes, which keep the writer's priority, though a
    /// flush may wait while a compaction records its result in the
    /// manifest): a writer that outruns it leaves more runs for a read to
    /// merge until it catches up,
    /// which at 10M keys left the same table files and settled space after each
    /// phase. Measured on 2 cores, loading rows of a hundred fields (`peers
    /// --ycsb --records 200000 --field-count 100 --field-length 10`, five
    /// alternated runs): p99.9 insert latency 310 µs against 646 µs at 0, and
    /// 53k records/s against 49k.
    pub compaction_nice: u8,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create_if_missing: true,
            sync: SyncPolicy::Never,
            max_log_bytes: 0,
            max_immutable_memtables: 2,
            families: Vec::new(),
            salvage_log: false,
            block_cache_bytes: 32 << 20,
            compaction_nice: 10,
        }
    }
}

impl StoreOptions {
    /// Declares a family with default options.
    pub fn family(self, name: &str) -> Self {
        self.family_with(name, FamilyOptions::default())
    }

    /// Declares a family with the given options.
    pub fn family_with(mut self, name: &str, options: FamilyOptions) -> Self {
        self.families.push((name.to_string(), options));
        self
    }

    /// Sets the sync policy.
    pub fn sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }

    /// Sets whether a missing store is created.
    pub fn create_if_missing(mut self, create: bool) -> Self {
        self.create_if_missing = create;
        self
    }

    /// Sets the size of the block cache of decompressed blocks.
    pub fn block_cache_bytes(mut self, bytes: u64) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// Sets the compaction thread's nice value (see [`StoreOptions::compaction_nice`]).
    pub fn compaction_nice(mut self, nice: u8) -> Self {
        self.compaction_nice = nice;
        self
    }
}

/// How a family's table files are merged in the background.
///
/// Both strategies merge sorted runs to drop what no reader can see and to
/// keep reads from consulting too many files; they differ in what they
/// rewrite (`engine/src/compaction.rs` has the rules and their costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compaction {
    /// Size-tiered (Cassandra's, RocksDB's "universal"): runs of similar
    /// size are merged into one once `compaction_trigger` of them sit side
    /// by side. Each byte is rewritten about once per tier (few rewrites,
    /// fast writes), but a key range is spread over several runs, so a seek
    /// merges one cursor per run, and superseded versions wait in the
    /// younger runs until the tiers meet (more space).
    SizeTiered,
    /// Leveled (the default, as LevelDB's and RocksDB's): flushed runs (level 0) are
    /// merged into one sorted run per level, each level holding about
    /// `multiplier` times the one above it, sized from the last level up
    /// (RocksDB's dynamic level sizes). A read consults level 0 and one file
    /// per level, and at most about 1 / `multiplier` of the data is
    /// superseded versions; the price is rewriting each byte about
    /// `multiplier` times per level it moves down.
    Leveled {
        /// The largest target of the level that level 0 is merged into
        /// (default 256 MiB, RocksDB's `max_bytes_for_level_base`).
        base_bytes: u64,
        /// How many times larger each level is than the one above it (default 10).
        multiplier: u32,
    },
}

impl Compaction {
    /// Leveled compaction with RocksDB's default sizes: a 256 MiB base, ×10 per level.
    pub const LEVELED: Compaction = Compaction::Leveled {
        base_bytes: 256 << 20,
        multiplier: 10,
    };
}

/// When a family is *settled at rest*: once its writes have paused, the
/// compacting thread flushes its memtable and merges every run into one
/// (the major compaction of [`crate::Store::compact`]): a leveled family's
/// last level, or a size-tiered family's single run. HBase runs its major
/// compactions when a table is quiet the same way.
///
/// Leveled compaction alone leaves the levels above the last holding the
/// newest versions of some keys, and the last level their older copies: at
/// 10M random puts of db_bench's shape, 1.18 to 1.21 bytes on disk per user
/// byte where the last level alone is 1.06. Size-tiered compaction leaves
/// more: each tier keeps its own copy of a cell overwritten since, until
/// the tiers meet (1.48 to 2.07 at the same size). Merged into one run,
/// those copies go, to 1.06 under either strategy. The price is one
/// rewrite of the whole family per settle (at that size, 0.8 to 1.1 GB
/// written in 2 to 3 s on an idle machine; for a size-tiered family, chosen
/// for its cheap writes, that took its write amplification from 3.6 and
/// 3.9 to 4.3 and 4.4), so a settle waits for three things:
///
/// * the family's writes have paused for `idle` (reads, and writes to
///   other families, do not count), so a family is not rewritten under its
///   writers;
/// * its table files hold at least `min_bytes`: a small family costs little
///   space whatever its shape, and tests, lessons and small stores never see
///   a settle;
/// * what lies outside the run a settle would leave (a leveled family's
///   levels 0 to 5, a size-tiered family's runs but its largest) and its
///   memtables hold at least `min_above_percent` of its bytes: a family that
///   was settled and has not been written since is one run, and is not
///   rewritten again, and one written a little since is rewritten only once
///   that is worth a whole rewrite.
///
/// Only families with automatic compaction on (`compaction_trigger` above
/// 0) are settled. See `compaction::settle_due_in` for why a tiered
/// family's largest run, not its oldest, is the one that counts as settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// How long the family's writes must have paused (default 1 s). The
    /// compacting thread sees a pause only when it looks: after its minor
    /// compactions, and then once per `idle` while the family qualifies. So
    /// a settle starts one `idle` after the first look that follows the
    /// last write: between one and two `idle`s after it, or one after the
    /// compactions that follow it, if they take longer.
    pub idle: Duration,
    /// The family's table bytes must reach this (default 256 MiB, RocksDB's
    /// `max_bytes_for_level_base`: below it a leveled family has no level
    /// between level 0 and its last; the same floor holds for a size-tiered
    /// one, four 64 MiB flushes).
    pub min_bytes: u64,
    /// The bytes outside the run a settle leaves must reach this percentage
    /// of the family's bytes (default 3, from 1 to 100): for a leveled
    /// family its levels 0 to 5, for a size-tiered one every run but the
    /// largest, and for both the memtables' entries at the bytes per entry
    /// of the family's tables. Each such byte shadows at most one older
    /// copy in that run, so 3% bounds what a settle could still win at
    /// about 0.03 of the user's bytes, and a family written a little at a
    /// time is rewritten at most once per 3% of new bytes. (The name says
    /// "above" the last level, a leveled tree's picture.)
    pub min_above_percent: u32,
}

impl Default for Settle {
    fn default() -> Self {
        Settle {
            idle: Duration::from_secs(1),
            min_bytes: 256 << 20,
            min_above_percent: 3,
        }
    }
}

/// Options of one column family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyOptions {
    /// Versions kept per cell (default 1). Reads return at most this many; major
    /// compaction drops the rest.
    pub max_versions: u32,
    /// Cells older than this (by their timestamp, in milliseconds) are hidden
    /// from reads and dropped by compaction (default: none). A flush or a
    /// compaction with older entries left outside its inputs keeps the
    /// newest expired version of each cell as a deletion (no value), and an
    /// expired deletion as it is, until one that is bottommost drops them:
    /// a TTL lengthened later (`alter`) shows expired cells no compaction
    /// has dropped yet, never a version a deletion or a newer one hid.
    pub ttl: Option<Duration>,
    /// Target size of a data block (default 4096, one disk page).
    pub block_size: usize,
    /// Bloom filter bits per row key (default 10: about 1% false positives; 0 = no filter).
    pub bloom_bits_per_key: u32,
    /// A memtable is frozen and flushed when its size passes this (default 64 MiB).
    pub memtable_max_bytes: usize,
    /// ... or when it holds this many entries (default: no limit; the lesson uses 25,000).
    pub memtable_max_entries: Option<usize>,
    /// How table files are compacted (default [`Compaction::LEVELED`]: RocksDB's
    /// default; at 1M and 10M keys of db_bench's shape it wrote, read and
    /// sought faster than size-tiered, in less space; README "Performance").
    pub compaction: Compaction,
    /// Automatic compaction starts when this many runs of similar size sit
    /// side by side (size-tiered), or when level 0 holds this many runs
    /// (leveled) (default 4; 0 = automatic compaction off).
    pub compaction_trigger: usize,
    /// Compaction output files are cut at this size (default 64 MiB).
    pub target_file_bytes: u64,
    /// ... or at this many entries (default: no limit; the lesson uses 25,000).
    pub target_file_entries: Option<u64>,
    /// Table blocks store a cell's column name as a copy of an earlier key's
    /// when it repeats from row to row (default off; see
    /// `cellar_sstable::KeyEncoding`). Like HBase's per-family
    /// `DATA_BLOCK_ENCODING`: families of many small cells under a few column
    /// names shrink the most (the layout lesson's circulation family by a
    /// third), at the price of about 15% of scan and point-read speed.
    pub tail_copies: bool,
    /// How new tables compress their data blocks, each on its own (default
    /// none): HBase's per-family `COMPRESSION`. A block is stored compressed
    /// only when that saves at least 1/8 of it. Decompressed blocks are kept
    /// in the store's block cache ([`StoreOptions::block_cache_bytes`]).
    pub compression: Compression,

    /// When the family is merged into one run once its writes pause (its
    /// last level if leveled; default on, [`Settle::default`]: after 1 s,
    /// from 256 MiB, when 3% of its bytes sit outside the run it would
    /// leave; `None`: never). See [`Settle`].
    pub settle_when_idle: Option<Settle>,
}

impl Default for FamilyOptions {
    fn default() -> Self {
        FamilyOptions {
            max_versions: 1,
            ttl: None,
            block_size: 4096,
            bloom_bits_per_key: 10,
            memtable_max_bytes: 64 << 20,
            memtable_max_entries: None,
            compaction: Compaction::LEVELED,
            compaction_trigger: 4,
            target_file_bytes: 64 << 20,
            target_file_entries: None,
            tail_copies: false,
            compression: Compression::None,
            settle_when_idle: Some(Settle::default()),
        }
    }
}

impl FamilyOptions {
    /// Sets `tail_copies`.
    pub fn tail_copies(mut self, on: bool) -> Self {
        self.tail_copies = on;
        self
    }

    /// Sets how new tables compress their data blocks.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets `max_versions`.
    pub fn max_versions(mut self, n: u32) -> Self {
        self.max_versions = n;
        self
    }
    /// Sets the time to live.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
    /// Sets the memtable limit in entries.
    pub fn memtable_max_entries(mut self, n: usize) -> Self {
        self.memtable_max_entries = Some(n);
        self
    }
    /// Sets the memtable limit in bytes.
    pub fn memtable_max_bytes(mut self, n: usize) -> Self {
        self.memtable_max_bytes = n;
        self
    }
    /// Sets the compaction output size in entries.
    pub fn target_file_entries(mut self, n: u64) -> Self {
        self.target_file_entries = Some(n);
        self
    }
    /// Sets the compaction output size in bytes.
    pub fn target_file_bytes(mut self, n: u64) -> Self {
        self.target_file_bytes = n;
        self
    }
    /// Sets how table files are compacted.
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }
    /// Sets the compaction trigger (0 turns automatic compaction off).
    pub fn compaction_trigger(mut self, n: usize) -> Self {
        self.compaction_trigger = n;
        self
    }
    /// Sets the bloom filter size.
    pub fn bloom_bits_per_key(mut self, bits: u32) -> Self {
        self.bloom_bits_per_key = bits;
        self
    }
    /// Sets the block size.
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }
    /// Sets when the family is settled at rest (`None`: never).
    pub fn settle_when_idle(mut self, settle: Option<Settle>) -> Self {
        self.settle_when_idle = settle;
        self
    }

    /// Cells with a timestamp below this have expired at time `now_ms` (0 = no TTL).
    pub(crate) fn expire_before(&self, now_ms: u64) -> u64 {
        self.ttl.map_or(0, |ttl| now_ms.saturating_sub(ttl_millis(ttl)))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_versions == 0 {
            return Err(Error::InvalidArgument("max_versions must be at least 1".into()));
        }
        if self.block_size < 64 || self.block_size > (16 << 20) {
            return Err(Error::InvalidArgument(
                "block_size must be between 64 bytes and 16 MiB".into(),
            ));
        }
        if self.bloom_bits_per_key > 64 {
            return Err(Error::InvalidArgument("bloom_bits_per_key must be at most 64".into()));
        }
        if self.memtable_max_bytes < 1024 || self.memtable_max_entries == Some(0) {
            return Err(Error::InvalidArgument(
                "memtable limits must allow at least one entry".into(),
            ));
        }
        if self.target_file_bytes == 0 || self.target_file_entries == Some(0) {
            return Err(Error::InvalidArgument("target file size must be positive".into()));
        }
        self.compression.check().map_err(Error::InvalidArgument)?;
        if let Some(settle) = self.settle_when_idle {
            // 0% would settle a settled family again after every pause; the
            // manifest records the idle time in milliseconds.
            if !(1..=100).contains(&settle.min_above_percent) || settle.idle < Duration::from_millis(1) {
                return Err(Error::InvalidArgument(
                    "settle_when_idle needs an idle time of at least 1 ms and a percentage from 1 to 100".into(),
                ));
            }
        }
        if let Compaction::Leveled { base_bytes, multiplier } = self.compaction {
            if base_bytes == 0 || !(2..=1000).contains(&multiplier) {
                return Err(Error::InvalidArgument(
                    "leveled compaction needs a positive base size and a multiplier from 2 to 1000".into(),
                ));
            }
        }
        Ok(())
    }

    /// Encodes the options for the manifest: a version byte, then fixed fields
    /// (version 2 added `tail_copies`, one byte at the end; version 3 the
    /// compression: its codec byte, 0 none, 1 LZ4, 2 Zstandard, and its level,
    /// `i32` LE; version 4 the compaction strategy after that: a byte, 1 for
    /// leveled, then the base size (u64) and the multiplier (u32); version 5
    /// the settle after that, and the strategy byte may be 0, size-tiered,
    /// with nothing after it: a byte, 0 never, 1 then the idle time in
    /// milliseconds (u64), the byte floor (u64) and the percentage (u32)).
    /// Each family is written as the lowest version that holds its options,
    /// so a build before compression (or before leveled compaction, or
    /// before the settle) reads the manifest of a store that uses none (or
    /// keeps the default settle).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let version = match (self.compaction, self.compression) {
            _ if self.settle_when_idle != Some(Settle::default()) => 5u8,
            (Compaction::Leveled { .. }, _) => 4,
            (Compaction::SizeTiered, Compression::None) => 2,
            (Compaction::SizeTiered, _) => 3,
        };
        let mut out = vec![version];
        out.extend_from_slice(&self.max_versions.to_le_bytes());
        out.extend_from_slice(&self.ttl.map_or(u64::MAX, ttl_millis).to_le_bytes());
        out.extend_from_slice(&(self.block_size as u64).to_le_bytes());
        out.extend_from_slice(&self.bloom_bits_per_key.to_le_bytes());
        out.extend_from_slice(&(self.memtable_max_bytes as u64).to_le_bytes());
        out.extend_from_slice(&self.memtable_max_entries.map_or(u64::MAX, |n| n as u64).to_le_bytes());
        out.extend_from_slice(&(self.compaction_trigger as u64).to_le_bytes());
        out.extend_from_slice(&self.target_file_bytes.to_le_bytes());
        out.extend_from_slice(&self.target_file_entries.unwrap_or(u64::MAX).to_le_bytes());
        out.push(u8::from(self.tail_copies));
        if version >= 3 {
            out.push(self.compression.codec().as_u8());
            out.extend_from_slice(&self.compression.level().to_le_bytes());
        }
        match self.compaction {
            Compaction::Leveled { base_bytes, multiplier } => {
                out.push(1);
                out.extend_from_slice(&base_bytes.to_le_bytes());
                out.extend_from_slice(&multiplier.to_le_bytes());
            }
            Compaction::SizeTiered if version >= 5 => out.push(0),
            Compaction::SizeTiered => {}
        }
        if version >= 5 {
            match self.settle_when_idle {
                None => out.push(0),
                Some(settle) => {
                    out.push(1);
                    out.extend_from_slice(&duration_millis(settle.idle).to_le_bytes());
                    out.extend_from_slice(&settle.min_bytes.to_le_bytes());
                    out.extend_from_slice(&settle.min_above_percent.to_le_bytes());
                }
            }
        }
        out
    }

    /// Decodes what [`FamilyOptions::encode`] wrote; `None` if the bytes are not options.
    pub(crate) fn decode(bytes: &[u8]) -> Option<FamilyOptions> {
        let mut r = Reader { bytes, at: 0 };
        let [version] = r.take::<1>()?;
        if !(1..=5).contains(&version) {
            return None;
        }
        let max_versions = u32::from_le_bytes(r.take()?);
        let ttl = r.u64()?;
        let block_size = r.u64()? as usize;
        let bloom_bits_per_key = u32::from_le_bytes(r.take()?);
        let memtable_max_bytes = r.u64()? as usize;
        let memtable_max_entries = r.u64()?;
        let compaction_trigger = r.u64()? as usize;
        let target_file_bytes = r.u64()?;
        let target_file_entries = r.u64()?;
        let tail_copies = match version {
            1 => false,
            _ => match r.take::<1>()? {
                [0] => false,
                [1] => true,
                _ => return None,
            },
        };
        let compression = match version {
            1 | 2 => Compression::None,
            _ => {
                let [codec] = r.take::<1>()?;
                let level = i32::from_le_bytes(r.take()?);
                let compression = Compression::from_parts(codec, u64::try_from(level).ok()?)?;
                // Version 3 exists only for compression; version 4 may hold none.
                (version > 3 || compression != Compression::None).then_some(compression)?
            }
        };
        let compaction = match version {
            1..=3 => Compaction::SizeTiered,
            _ => match r.take::<1>()? {
                // Version 4 exists only for leveled; version 5 may be size-tiered.
                [0] if version >= 5 => Compaction::SizeTiered,
                [1] => {
                    let base_bytes = r.u64()?;
                    let multiplier = u32::from_le_bytes(r.take()?);
                    Compaction::Leveled { base_bytes, multiplier }
                }
                _ => return None,
            },
        };
        let settle_when_idle = match version {
            1..=4 => Some(Settle::default()),
            _ => match r.take::<1>()? {
                [0] => None,
                [1] => Some(Settle {
                    idle: Duration::from_millis(r.u64()?),
                    min_bytes: r.u64()?,
                    min_above_percent: u32::from_le_bytes(r.take()?),
                }),
                _ => return None,
            },
        };
        if r.at != bytes.len() {
            return None;
        }
        let options = FamilyOptions {
            max_versions,
            ttl: (ttl != u64::MAX).then(|| Duration::from_millis(ttl)),
            block_size,
            bloom_bits_per_key,
            memtable_max_bytes,
            memtable_max_entries: (memtable_max_entries != u64::MAX).then_some(memtable_max_entries as usize),
            compaction,
            compaction_trigger,
            target_file_bytes,
            target_file_entries: (target_file_entries != u64::MAX).then_some(target_file_entries),
            tail_copies,
            compression,
            settle_when_idle,
        };
        // Version 5 exists only for a settle other than the default.
        if version == 5 && options.settle_when_idle == Some(Settle::default()) {
            return None;
        }
        options.validate().ok()?;
        Some(options)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let out = self.bytes.get(self.at..self.at + N)?.try_into().ok()?;
        self.at += N;
        Some(out)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take()?))
    }
}

/// A TTL in milliseconds, saturating: a TTL longer than `u64::MAX`
/// milliseconds (half a billion years) is that, which expires nothing, as
/// no TTL does; its millisecond count was once cut to its low 64 bits, so
/// such a TTL could come out as a millisecond and expire everything. In
/// the manifest `u64::MAX` stands for "no TTL", and means the same.
fn ttl_millis(ttl: Duration) -> u64 {
    duration_millis(ttl)
}

/// A duration in milliseconds, saturating at `u64::MAX`.
fn duration_millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Checks a family name: `[a-z0-9_]{1,64}`. A name is never a path, so it cannot
/// escape the store's folder (`..`, `/` and the empty name are all refused).
/// `lost` is refused too: it is the store's folder for files that recovery or
/// repair could not use.
pub fn validate_family_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name != "lost"
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidFamilyName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_through_the_manifest_encoding() {
        let options = FamilyOptions::default()
            .max_versions(3)
            .ttl(Duration::from_secs(60))
            .memtable_max_entries(25_000)
            .target_file_entries(25_000)
            .tail_copies(true)
            .compaction(Compaction::LEVELED);
        assert_eq!(FamilyOptions::decode(&options.encode()), Some(options.clone()));
        // Size-tiered options without compression are written as version 2.
        let tiered = options.clone().compaction(Compaction::SizeTiered);
        let v2 = tiered.encode();
        assert_eq!(v2[0], 2);
        assert_eq!(FamilyOptions::decode(&v2), Some(tiered.clone()));
        // Version 1 (before tail copies): the same bytes without the last one.
        let mut v1 = v2.clone();
        v1[0] = 1;
        v1.pop();
        assert_eq!(FamilyOptions::decode(&v1), Some(tiered.tail_copies(false)));
        assert_eq!(
            FamilyOptions::decode(&FamilyOptions::default().encode()),
            Some(FamilyOptions::default())
        );
        assert_eq!(FamilyOptions::decode(&[1, 2, 3]), None);
    }

    #[test]
    fn compression_is_recorded_in_version_3_and_none_stays_version_2() {
        let plain = FamilyOptions::default().compaction(Compaction::SizeTiered);
        assert_eq!(plain.encode()[0], 2);
        for compression in [Compression::Lz4, Compression::Zstd { level: 19 }] {
            let options = plain.clone().tail_copies(true).compression(compression);
            let bytes = options.encode();
            assert_eq!(bytes[0], 3);
            // Version 2's bytes, then the codec byte and the level.
            let mut expected = plain.clone().tail_copies(true).encode();
            expected[0] = 3;
            expected.push(compression.codec().as_u8());
            expected.extend_from_slice(&compression.level().to_le_bytes());
            assert_eq!(bytes, expected);
            assert_eq!(FamilyOptions::decode(&bytes), Some(options));
        }
        // A codec this build does not know, a level out of range, a version 3
        // record that says "none", trailing bytes: not options.
        let mut bad = plain.clone().compression(Compression::Lz4).encode();
        let codec_at = bad.len() - 5;
        bad[codec_at] = 7;
        assert_eq!(FamilyOptions::decode(&bad), None);
        bad[codec_at] = 0;
        assert_eq!(FamilyOptions::decode(&bad), None);
        let mut bad = plain.clone().compression(Compression::Zstd { level: 3 }).encode();
        let level_at = bad.len() - 4;
        bad[level_at] = 40;
        assert_eq!(FamilyOptions::decode(&bad), None);
        let mut long = plain.clone().compression(Compression::Lz4).encode();
        long.push(0);
        assert_eq!(FamilyOptions::decode(&long), None);
        assert!(FamilyOptions::default()
            .compression(Compression::Zstd { level: 0 })
            .validate()
            .is_err());
    }

    #[test]
    fn leveled_compaction_is_recorded_in_version_4_after_the_compression() {
        let leveled = Compaction::Leveled {
            base_bytes: 600,
            multiplier: 2,
        };
        for compression in [Compression::None, Compression::Lz4] {
            let options = FamilyOptions::default().compression(compression).compaction(leveled);
            let bytes = options.encode();
            // Version 3's fields (the codec byte and level even for none), then
            // the strategy byte, the base size and the multiplier.
            let mut expected = FamilyOptions::default().compaction(Compaction::SizeTiered).encode();
            expected[0] = 4;
            expected.push(compression.codec().as_u8());
            expected.extend_from_slice(&compression.level().to_le_bytes());
            expected.push(1);
            expected.extend_from_slice(&600u64.to_le_bytes());
            expected.extend_from_slice(&2u32.to_le_bytes());
            assert_eq!(bytes, expected);
            assert_eq!(FamilyOptions::decode(&bytes), Some(options));
        }
        // A strategy this build does not know, a record cut short: not options.
        let mut bad = FamilyOptions::default().compaction(leveled).encode();
        let style_at = bad.len() - 13;
        bad[style_at] = 2;
        assert_eq!(FamilyOptions::decode(&bad), None);
        bad[style_at] = 1;
        bad.pop();
        assert_eq!(FamilyOptions::decode(&bad), None);
        for multiplier in [0, 1, 1001] {
            let options = FamilyOptions::default().compaction(Compaction::Leveled {
                base_bytes: 1 << 20,
                multiplier,
            });
            assert!(options.validate().is_err(), "{multiplier}");
        }
        let no_base = FamilyOptions::default().compaction(Compaction::Leveled {
            base_bytes: 0,
            multiplier: 10,
        });
        assert!(no_base.validate().is_err());
    }

    #[test]
    fn a_settle_other_than_the_default_is_recorded_in_version_5() {
        // The default settle needs no bytes: default options stay version 4.
        assert_eq!(FamilyOptions::default().encode()[0], 4);
        let own = Settle {
            idle: Duration::from_millis(250),
            min_bytes: 64 << 10,
            min_above_percent: 7,
        };
        for compaction in [Compaction::LEVELED, Compaction::SizeTiered] {
            for settle in [Some(own), None] {
                let options = FamilyOptions::default().compaction(compaction).settle_when_idle(settle);
                let bytes = options.encode();
                // Version 4's fields (the strategy byte 0 for size-tiered, with
                // nothing after it), then the settle.
                let mut expected = FamilyOptions::default().compaction(compaction).encode();
                if compaction == Compaction::SizeTiered {
                    expected = FamilyOptions::default().encode();
                    expected.truncate(expected.len() - 13);
                    expected.push(0);
                }
                expected[0] = 5;
                match settle {
                    None => expected.push(0),
                    Some(_) => {
                        expected.push(1);
                        expected.extend_from_slice(&250u64.to_le_bytes());
                        expected.extend_from_slice(&(64u64 << 10).to_le_bytes());
                        expected.extend_from_slice(&7u32.to_le_bytes());
                    }
                }
                assert_eq!(bytes, expected, "{compaction:?} {settle:?}");
                assert_eq!(FamilyOptions::decode(&bytes), Some(options));
            }
        }
        // Version 5 with the default settle, an unknown settle byte, a strategy
        // byte 0 in version 4, a 0% share, a record cut short: not options.
        let mut default_in_5 = FamilyOptions::default().settle_when_idle(None).encode();
        default_in_5.pop();
        default_in_5.push(1);
        default_in_5.extend_from_slice(&1000u64.to_le_bytes());
        default_in_5.extend_from_slice(&(256u64 << 20).to_le_bytes());
        default_in_5.extend_from_slice(&3u32.to_le_bytes());
        assert_eq!(FamilyOptions::decode(&default_in_5), None);
        let mut bad = FamilyOptions::default().settle_when_idle(None).encode();
        if let Some(last) = bad.last_mut() {
            *last = 2;
        }
        assert_eq!(FamilyOptions::decode(&bad), None);
        let mut tiered_4 = FamilyOptions::default()
            .compaction(Compaction::SizeTiered)
            .settle_when_idle(None)
            .encode();
        tiered_4[0] = 4;
        tiered_4.pop();
        assert_eq!(FamilyOptions::decode(&tiered_4), None);
        let zero = FamilyOptions::default().settle_when_idle(Some(Settle {
            min_above_percent: 0,
            ..own
        }));
        assert!(zero.validate().is_err());
        let mut zero_bytes = FamilyOptions::default().settle_when_idle(Some(own)).encode();
        let at = zero_bytes.len() - 4;
        zero_bytes[at] = 0;
        assert_eq!(FamilyOptions::decode(&zero_bytes), None);
        let mut short = FamilyOptions::default().settle_when_idle(Some(own)).encode();
        short.pop();
        assert_eq!(FamilyOptions::decode(&short), None);
        let instant = FamilyOptions::default().settle_when_idle(Some(Settle {
            idle: Duration::from_micros(500),
            ..own
        }));
        assert!(instant.validate().is_err(), "the manifest keeps milliseconds");
    }

    #[test]
    fn family_names_cannot_be_paths() {
        for bad in ["", "../x", "a/b", ".", "A", "é", &"a".repeat(65), "lost"] {
            assert!(
                matches!(validate_family_name(bad), Err(Error::InvalidFamilyName(_))),
                "{bad:?}"
            );
        }
        for good in ["a", "loans_by_book", "f0", &"z".repeat(64)] {
            assert!(validate_family_name(good).is_ok(), "{good:?}");
        }
    }
}
