//! Compaction: merging table files to drop what no reader can see.
//!
//! Every flush adds a *run* (one sorted file). Reads get slower and space grows
//! with every run, because old versions and tombstones pile up. Compaction
//! merges runs, dropping the entries no reader can see. A family compacts in
//! one of two ways ([`crate::options::Compaction`]), which trade three costs
//! against each other: *write amplification* (bytes written to disk per byte
//! the user wrote), *read amplification* (runs a read consults) and *space
//! amplification* (bytes on disk per byte of live data).
//!
//! * **Size-tiered** (Cassandra's, RocksDB's "universal"): when
//!   `compaction_trigger` runs of similar size sit side by side (in age
//!   order), they are merged into one. A byte is rewritten once per tier it
//!   climbs, about `log_trigger(data / memtable)` times (2 or 3 for a
//!   gigabyte of 64 MiB flushes): the cheapest writes. The price: a key range
//!   is spread over up to `trigger - 1` runs per tier, so a seek merges that
//!   many cursors, and an overwritten cell keeps a superseded copy in each
//!   tier until the tiers meet (space amplification up to about 2×, and 2×
//!   again while the largest tiers are merged). Merging only neighbours keeps
//!   the runs ordered by age, which point reads rely on to stop early.
//! * **Leveled** (the default; LevelDB's, RocksDB's): flushes land in level 0, one
//!   run each. Level 0 is merged into the *base level* once it holds
//!   `compaction_trigger` runs; below it, each level is one run of files with
//!   disjoint rows, and a level over its target gives one file (with every
//!   file of the next level sharing a row with it) to the next level; a file
//!   that shares no row with the next level moves there without a rewrite.
//!   Targets are set from the last level up, each level `1 / multiplier` of
//!   the one below (RocksDB's `level_compaction_dynamic_level_bytes`), so the
//!   levels above the last hold about `1 / multiplier` of the data: a read
//!   consults level 0's few runs and then one file per level, and at most
//!   about `1 / multiplier` of the bytes are superseded versions (space
//!   amplification about 1.1 with ×10, plus level 0; see below). The price:
//!   a file merged one level down rewrites about `multiplier` bytes of the
//!   level below per byte of its own, so a byte is written about `multiplier` times
//!   per level it moves down (RocksDB measures 10 to 30 in all): several
//!   times size-tiered's writes, which the background thread pays for and
//!   writers feel once it falls behind.
//! * **Major** compaction merges every run of a family into one run (at the
//!   last level, for a leveled family), split into files of the target size.
//!
//! Where a leveled family's bytes go once no flush or compaction has work
//! left, taken apart file by file by `cargo run --release -p cellar-bench
//! --example space -- --num 10000000 --dir DIR --settle false`
//! (`bench/src/peers/space.rs`): after 10M random puts of db_bench's shape
//! (16-byte keys, 100-byte values; 6.32M distinct keys) and after 10M more
//! (8.65M), 1.185 and 1.212 times the user bytes (within 0.001 from run to
//! run). The last level stores 123.4 bytes per entry against 116 of data:
//! the key as stored 18.1 (the row's last bytes, the column and its
//! separators, the timestamp as an XOR; sequence numbers are zeroed there),
//! entry headers, restarts and block trailers 3.6, the index 0.35, the bloom
//! filter's 10 bits per row 1.25. So the last level alone would be 1.064.
//! Above it, after the fill and after the overwrite: level 0 0.164 and 0.080
//! (three flushes, then two, under the trigger of four; 127 bytes per
//! entry, their sequence numbers not yet zeroed), the base level 0.023 and
//! 0.078 (under its target of a tenth of the last), the active memtable's
//! log 0.011 and 0.017 (145 bytes per write); the manifest a few tens of KB.
//! Nothing else: no log segment past its use, no unused tail, no table file
//! the version does not list. The entries beyond one per key, 0.108 and
//! 0.133 per key, are nearly all old versions in the last level (635K of
//! 683K, then 1.09M of 1.15M), each shadowed by its newer copy above: the
//! levels above the last hold newest versions, and the space they cost is
//! the last level's old copies until they are merged down. The figure is
//! where the writes stopped: settled after every million writes (`--every
//! 1000000`), the same run gave 1.08 to 1.19 during the fill and 1.13 to
//! 1.26 during the overwrite, as level 0 fills to three runs and empties,
//! the base level to its target and the log to a full memtable (about 0.046
//! at this size). Fewer copies cost writes: a trigger of 2 gave 1.112 and
//! 1.136, a 32 MiB memtable 1.130 and 1.114, for write amplification of
//! about 8.7 and 9.6 against 6.1 and 7.0; and neither bounds the figure
//! (1.19 at some stopping points of the overwrite), because a full
//! memtable's log (0.046) or a full base level (0.10) alone is more than the
//! 0.036 between the last level and 1.10.
//!
//! What bounds it is the *settle at rest* ([`crate::Settle`], on by
//! default, for both strategies): once a leveled family's writes pause for
//! a second, and it holds 256 MiB of tables with at least 3% of its bytes
//! above the last level, the compacting thread flushes its memtable and
//! merges every run into the last level (a major compaction; see
//! [`settle_due_in`] and `store/settle.rs`).
//! The same command without `--settle false`: 1.063 after the fill and
//! 1.065 after the overwrite (within 0.001 over two runs), the last level
//! alone, every superseded copy gone and the log empty. The wait for
//! background work after each phase took 3.7 and 5.3 to 5.5 s, against 0.8
//! and 1.7 s without the settle: the minor compactions, the idle second
//! from the first look after them, then about 2 and 3 s of flushing and
//! merging on an otherwise idle machine. The settles wrote 0.78 and 1.07 GB,
//! 0.67 and 0.91 bytes per user byte of the phase: write amplification 6.78
//! and 7.39 in all, against 6.10 and 7.00. The scale run (`cargo run
//! --release -p cellar-bench --bin peers -- --scale --num 10000000 --runs 1
//! --engines cellar`, one run each) shows 1.06 once settled after
//! every phase, against 1.19, 1.21, 1.21 and 1.21 without the settle; its
//! untimed waits took 4.8 and 7.1 s after the fill and the overwrite
//! (0.7 and 0.6 s), and on the settled tree a seek consults 2 sources
//! instead of 5 or 6 (seekrandom 214k/s against 72k/s, readrandom 364k/s
//! against 290k/s). While writes go on the figure moves as above; the
//! settle bounds it once they pause.
//!
//! A size-tiered family is settled the same way, with "above the last
//! level" read as "outside the largest run" (see [`settle_due_in`] for why
//! the largest and not the oldest), into one run at level 0, where its runs
//! live. It has more to win: the same `space` command with `--compaction
//! tiered --settle false` leaves 1.476 after the fill and 2.071 after the
//! overwrite (20 and 35 files, 0.37 and 0.90 superseded copies per key:
//! tiers merge only with neighbours of similar size, and when the writes
//! stopped the newer runs had not met the big old ones), for write
//! amplification of 3.63 and 3.93. With the settle (`--compaction
//! tiered`): 1.063 and 1.065, the one run a leveled settle leaves too, after
//! waits of 5.7 and 7.6 s (none without it: the tiers had nothing to
//! merge), the settles writing 0.78 and 1.07 GB (0.67 and 0.91 bytes per
//! user byte of the phase): write amplification 4.31 and 4.44 in all,
//! against leveled's 6.78 and 7.39 with its settle (6.10 and 7.00
//! without). The scale run with `--engines cellar-tiered` shows 1.06 once settled after every phase, against 1.48,
//! 2.07, 2.07 and 2.07 without the settle; 12 and 16 table files against 20
//! and 35; untimed waits of 5.5 and 7.7 s after the fill and the overwrite
//! (0.0 without); and on the settled tree a get consults 2 sources instead
//! of 6.6 to 7.0, a seek 2 instead of 8 or 9 (seekrandom 215k/s against
//! 35k/s, readrandom 354k/s against 235k/s). The price is the point of
//! choosing size-tiered: every settle rewrites the whole family, so a
//! family written in bursts with pauses of a second or more between them is
//! rewritten once per burst that adds 3% to it; `settle_when_idle(None)`
//! keeps the writes size-tiered alone would do.
//!
//! Which files to merge is decided by [`choose`], a pure function of the
//! files' levels, runs, sizes and row ranges ([`FileShape`]), so each policy
//! is tested without any I/O. [`Compactor`] decides, entry by entry, what
//! survives.
//!
//! A *bottommost* compaction (one after which no older entry of its rows is
//! left anywhere: its inputs include the oldest run of a size-tiered family,
//! or no deeper level of a leveled one holds any of its rows) may drop
//! deletions, and also writes as 0 every sequence number up to its horizon:
//! nothing older exists to order against, every reader of the new version
//! sees all of it, and the compacted run's keys then differ from their
//! neighbours only where the cells do. A later sequence number (a write not
//! yet visible when the work began) keeps its value, so no snapshot sees that
//! write early.

use std::ops::Range;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::key::{self, Kind};
use crate::memtable::Memtable;
use crate::options::{Compaction, FamilyOptions};
use crate::output::TableOutput;
use crate::visibility::{Verdict, Visibility};

/// The largest number of runs one size-tiered compaction merges.
pub const MAX_RUNS_PER_COMPACTION: usize = 32;

/// Levels of a leveled family: level 0 (flushes) and levels 1 to 6, as in
/// RocksDB. With a ×10 multiplier, six levels hold a million times the base.
pub const LEVELS: u32 = 7;

/// The deepest level: where a leveled family's data settles, and where its
/// major compaction writes.
pub const LAST_LEVEL: u32 = LEVELS - 1;

/// What compaction planning knows of one table file: nothing that needs I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileShape<'a> {
    /// The file number.
    pub file_id: u64,
    /// The run it belongs to.
    pub run: u64,
    /// Its level (0 in a family that was always size-tiered; one altered
    /// from leveled keeps its levels).
    pub level: u32,
    /// Bytes on disk.
    pub size: u64,
    /// The encoded rows (`escaped(row) 00 01`) of its first and last keys.
    pub first_row: &'a [u8],
    /// See `first_row`.
    pub last_row: &'a [u8],
}

impl FileShape<'_> {
    /// Whether the two files hold some row in common.
    fn shares_rows(&self, first_row: &[u8], last_row: &[u8]) -> bool {
        self.first_row <= last_row && first_row <= self.last_row
    }
}

/// What to compact next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Merge these files into a new run at `level`, joining the run `run`
    /// (a level's) or a run of its own (`None`).
    Merge {
        /// File numbers of the inputs.
        inputs: Vec<u64>,
        /// Level of the output.
        level: u32,
        /// The run the output joins.
        run: Option<u64>,
        /// No older entry of the inputs' rows is left outside them.
        bottommost: bool,
    },
    /// Move one file to `level`, into run `run`, without rewriting it: no
    /// file there shares a row with it, so nothing is merged and nothing is
    /// dropped (RocksDB's trivial move).
    Move {
        /// The file number.
        file_id: u64,
        /// The level it moves to.
        level: u32,
        /// The run it joins.
        run: Option<u64>,
    },
}

/// What to compact in a family whose files are `files` (in read order, see
/// `FamilyVersion::order_tables`), or `None`. A trigger of 0 turns
/// automatic compaction off.
pub fn choose(files: &[FileShape<'_>], options: &FamilyOptions) -> Option<Choice> {
    if options.compaction_trigger == 0 {
        return None;
    }
    match options.compaction {
        Compaction::SizeTiered => choose_tiered(files, options.compaction_trigger),
        Compaction::Leveled { base_bytes, multiplier } => {
            choose_leveled(files, options.compaction_trigger, base_bytes, u64::from(multiplier))
        }
    }
}

/// The runs of `files` (consecutive files of one run), newest first.
fn runs<'f, 'a>(files: &'f [FileShape<'a>]) -> Vec<&'f [FileShape<'a>]> {
    files.chunk_by(|a, b| a.run == b.run).collect()
}

/// Size-tiered: the first group of similar neighbouring runs (see
/// [`tier`]) merged into one run at the level of the newest, bottommost if
/// it includes the oldest.
fn choose_tiered(files: &[FileShape<'_>], trigger: usize) -> Option<Choice> {
    let runs = runs(files);
    let sizes: Vec<u64> = runs.iter().map(|r| r.iter().map(|f| f.size).sum()).collect();
    let range = tier(&sizes, trigger)?;
    let group = runs.get(range.clone())?;
    // The output takes the place of its newest input, at the smallest level
    // among the inputs (0 in a family that was always size-tiered; a level
    // below in one altered from leveled, which keeps its levels). Files are
    // read level by level, level 0 by age (`FamilyVersion::order_tables`),
    // and that order must stay newest first for every row:
    // 1. The runs before the group hold newer entries, and stay before the
    //    output: they are at a smaller level, or at level 0 with newer
    //    entries than the output's newest.
    // 2. The runs after the group hold older entries, and stay after it: at
    //    a larger level, or at level 0 with older entries.
    // 3. A level below 0 is one run of files with disjoint rows. The inputs
    //    are whole runs, so the output's level held only inputs, and the
    //    output (cut where rows end) is that level's one run.
    // Written at level 0, a merge of levels 4 and 5 was read before level
    // 3, which holds newer entries of the same rows, and every rule that
    // trusts the order went wrong: back to leveled, level 3 moved down into
    // level 6 by a bottommost merge, which dropped a deletion whose cell's
    // older value that output still held, and the cell came back.
    let level = group.iter().filter_map(|r| r.first()).map(|f| f.level).min()?;
    Some(Choice::Merge {
        inputs: group.iter().flat_map(|r| r.iter().map(|f| f.file_id)).collect(),
        level,
        run: None,
        // Nothing after the group, so no older entry of its rows outside it.
        bottommost: range.end == runs.len(),
    })
}

/// The runs to merge, as a range of indexes into `run_sizes` (newest first),
/// or `None`. Runs are grouped with their neighbours while each new run is
/// within half to twice the average size of the group so far (Cassandra's
/// size-tiered buckets); the first group of at least `trigger` runs wins.
pub fn tier(run_sizes: &[u64], trigger: usize) -> Option<Range<usize>> {
    if trigger == 0 {
        return None;
    }
    let trigger = trigger.max(2);
    for start in 0..run_sizes.len() {
        let mut end = start + 1;
        let mut total = run_sizes.get(start).copied().unwrap_or(0);
        while let Some(&size) = run_sizes.get(end) {
            let average = total / (end - start) as u64;
            if size.saturating_mul(2) < average
                || size > average.saturating_mul(2)
                || end - start >= MAX_RUNS_PER_COMPACTION
            {
                break;
            }
            total += size;
            end += 1;
        }
        if end - start >= trigger {
            return Some(start..end);
        }
    }
    None
}

/// The target size of each level, and the base level (where level 0 is
/// merged), from the levels' sizes (`sizes[l]`, level 0 unused).
///
/// The last level's target is what it holds; each level above is
/// `1 / multiplier` of the one below, up to the first whose target would
/// fall under `base_bytes / multiplier`: that level is the base, and the
/// levels above it are not used (target 0). A small family so merges level 0
/// straight into the last level; the base moves up a level each time the
/// data grows `multiplier` times. (RocksDB's `level_compaction_dynamic_level_bytes`.)
///
/// RocksDB (`VersionStorageInfo::CalculateBaseBytes`) picks the same base
/// level, then raises every level's target to at least `base_bytes` (and to
/// level 0's size): its comment says a level smaller than level 0 (an
/// hourglass) would win the compaction thread by its size score while level
/// 0 fills up and stalls writes. cellar leaves that floor out: its base
/// level holds `1 / multiplier` of the level below and no more (level 0 is
/// scored by its runs, not its bytes). With 1 GB in the last level, RocksDB
/// lets level 5 hold 256 MiB, a quarter of it, where cellar lets it hold
/// 100 MB: fewer newer copies above the last level, so fewer old copies in
/// it that they shadow, for smaller and more frequent merges into it.
/// Measured with the `space` example (10M puts of db_bench's shape, then 10M
/// more, each settled, without the settle at rest: `--settle false`): with
/// the floor added here, 1.291 and 1.339 times the user bytes (RocksDB's own
/// run: 1.28 and 1.39) for write amplification of 4.65 and 5.81; without
/// it, 1.185 and 1.212 for 6.10 and 7.00.
pub fn level_targets(
    sizes: &[u64; LEVELS as usize],
    base_bytes: u64,
    multiplier: u64,
) -> ([u64; LEVELS as usize], u32) {
    let mut targets = [0u64; LEVELS as usize];
    let last = LAST_LEVEL as usize;
    let bottom = sizes.iter().skip(1).copied().max().unwrap_or(0);
    let floor = base_bytes / multiplier.max(1);
    let mut base = last;
    let mut target = bottom;
    if let Some(t) = targets.get_mut(last) {
        *t = bottom;
    }
    while base > 1 {
        let above = target / multiplier.max(1);
        if above < floor.max(1) {
            break;
        }
        base -= 1;
        target = above;
        if let Some(t) = targets.get_mut(base) {
            *t = above;
        }
    }
    (targets, base as u32)
}

/// Leveled: the level most over its target (level 0 by its runs against the
/// trigger, the others by bytes against [`level_targets`]), compacted one
/// step down.
fn choose_leveled(files: &[FileShape<'_>], trigger: usize, base_bytes: u64, multiplier: u64) -> Option<Choice> {
    let mut sizes = [0u64; LEVELS as usize];
    for f in files {
        if let Some(s) = sizes.get_mut(f.level.min(LAST_LEVEL) as usize) {
            *s += f.size;
        }
    }
    let (targets, base) = level_targets(&sizes, base_bytes, multiplier);
    let level0_runs = runs(files)
        .iter()
        .filter(|r| r.first().is_some_and(|f| f.level == 0))
        .count();

    // Scores, in thousandths: how far over its target a level is. Level 0
    // counts runs (each must be read apart); a level above the base should be
    // empty, so any byte in it is over.
    let mut best: Option<(u64, u32)> = None;
    let mut consider = |score: u64, level: u32| {
        if score >= 1000 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
    };
    consider((level0_runs * 1000 / trigger.max(1)) as u64, 0);
    for level in 1..LAST_LEVEL {
        let size = sizes.get(level as usize).copied().unwrap_or(0);
        let target = targets.get(level as usize).copied().unwrap_or(0);
        if size > 0 {
            consider(size.saturating_mul(1000) / target.max(1), level);
        }
    }
    let (_, level) = best?;
    let level_run = |l: u32| files.iter().find(|f| f.level == l).map(|f| f.run);
    let deeper_shares =
        |output: u32, first: &[u8], last: &[u8]| files.iter().any(|f| f.level > output && f.shares_rows(first, last));
    // Where a level's files go: the next level, or, from above the base
    // level, the first level below that holds data, or else the base. Data
    // never jumps over a level that holds data: a row's entries in a deeper
    // level must stay older than those above.
    let output = if level < base {
        (level + 1..base)
            .find(|&l| sizes.get(l as usize).is_some_and(|&s| s > 0))
            .unwrap_or(base)
    } else {
        level + 1
    };

    // The files to take down.
    let taken: Vec<&FileShape<'_>> = if level == 0 {
        files.iter().filter(|f| f.level == 0).collect()
    } else {
        // The file whose rows the output level holds least of, per byte of
        // its own (RocksDB's `kMinOverlappingRatio`): the cheapest step down.
        let overlap = |f: &FileShape<'_>| -> u64 {
            files
                .iter()
                .filter(|g| g.level == output && g.shares_rows(f.first_row, f.last_row))
                .map(|g| g.size)
                .sum()
        };
        let pick = files
            .iter()
            .filter(|f| f.level == level)
            .min_by_key(|f| (overlap(f).saturating_mul(1024) / f.size.max(1), f.first_row))?;
        vec![pick]
    };
    let first = taken.iter().map(|f| f.first_row).min()?;
    let last = taken.iter().map(|f| f.last_row).max()?;
    let below: Vec<&FileShape<'_>> = files
        .iter()
        .filter(|f| f.level == output && f.shares_rows(first, last))
        .collect();
    let run = level_run(output);
    if let ([only], []) = (taken.as_slice(), below.as_slice()) {
        return Some(Choice::Move {
            file_id: only.file_id,
            level: output,
            run,
        });
    }
    // Bottommost if no deeper level holds a row of any input: the files
    // taken from below may reach past the rows of those taken from above.
    let inputs: Vec<&FileShape<'_>> = taken.iter().chain(&below).copied().collect();
    let first = inputs.iter().map(|f| f.first_row).min()?;
    let last = inputs.iter().map(|f| f.last_row).max()?;
    Some(Choice::Merge {
        inputs: inputs.iter().map(|f| f.file_id).collect(),
        level: output,
        run,
        bottommost: !deeper_shares(output, first, last),
    })
}

/// How long until a family at rest is due a settle (see [`crate::Settle`]):
/// `None` if it is not to be settled at all (no settle in its options,
/// automatic compaction off, table files under the byte floor, or too little
/// outside the run a settle leaves), else how much longer its writes must
/// pause, having paused for `paused` (zero: settle now).
///
/// A settle is a major compaction, which leaves one run: a leveled family's
/// last level, a size-tiered family's single run. What it can win is the
/// copies kept *outside* that run, so the percentage counts:
///
/// * **Leveled**: its files at levels 0 to 5, everything above the last
///   level. Each of them is a newer version than what the last level holds
///   of its key (or a key the last level lacks), so they bound the old
///   copies a merge into the last level can drop.
/// * **Size-tiered**: every run but the *largest*. A tiered tree has no
///   level to merge into, only runs in age order; the settle merges them
///   all into one. The merged run holds at least one entry per distinct
///   cell of the largest run, so the entries outside it bound the copies
///   the merge can drop (the same bound as the leveled case, where the
///   last level is the largest run). The oldest run would count more
///   whenever a newer tier outgrew it (four 256 MiB runs merged into a
///   newer 1 GiB one ahead of an older 300 MiB run), and rewrite a
///   gigabyte to win at most 300 MB. Usually the two are the same run:
///   tiers grow with age.
///
/// Under both, `memtable_bytes` counts too, what its memtables would write
/// as tables: a settle flushes them, and the log they pin is deleted once no
/// family needs it. (Their memory would not do: a memtable's row filter is
/// allocated whole by its first write, up to 16 MiB, so one write would
/// count as megabytes.) A deletion outside the run counts only its own
/// bytes, not those of the value it hides inside it, so under deletions a
/// settle wins more than the percentage says. A family just settled holds
/// one run and nothing in memory, so it is not settled again until it has
/// been written to.
pub fn settle_due_in(
    files: &[FileShape<'_>],
    memtable_bytes: u64,
    options: &FamilyOptions,
    paused: Duration,
) -> Option<Duration> {
    let settle = options.settle_when_idle?;
    if options.compaction_trigger == 0 {
        return None;
    }
    let tables: u64 = files.iter().map(|f| f.size).sum();
    if tables < settle.min_bytes {
        return None;
    }
    // The bytes that stay where they are if the settle leaves the tree as it is.
    let kept = match options.compaction {
        Compaction::Leveled { .. } => files.iter().filter(|f| f.level == LAST_LEVEL).map(|f| f.size).sum(),
        Compaction::SizeTiered => runs(files)
            .iter()
            .map(|r| r.iter().map(|f| f.size).sum::<u64>())
            .max()
            .unwrap_or(0),
    };
    let outside = tables.saturating_sub(kept).saturating_add(memtable_bytes);
    let total = tables.saturating_add(memtable_bytes);
    if outside == 0 || outside.saturating_mul(100) < total.saturating_mul(u64::from(settle.min_above_percent)) {
        return None;
    }
    Some(settle.idle.saturating_sub(paused))
}

/// What a flush or a compaction keeps, decided one entry at a time over its
/// merged inputs (cell order: row, column, newest first) by the one
/// visibility rule ([`Visibility`]).
///
/// Only entries that no reader of the *new* version can see are dropped.
/// Older snapshots keep reading the inputs (a flushed memtable, or input files
/// that stay on disk until the last snapshot listing them is dropped), so they
/// need nothing from the output. Every reader of the new version reads at a
/// sequence number at or above `horizon` (the sequence visible when the work
/// started), so the rule is applied as a reader at `horizon` would apply it.
pub(crate) struct Compactor {
    rule: Visibility,
    bottommost: bool,
}

/// What becomes of one entry of a flush or a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Written to the output as it is.
    Entry,
    /// Written as a cell deletion with the same timestamp and sequence
    /// number, and no value (an expired version; see [`Compactor::judge`]).
    AsDeletion,
    /// Left out: no reader of the new version can see it.
    Drop,
}

impl Compactor {
    /// `bottommost`: the inputs include the family's oldest run, so no older
    /// entry exists anywhere else.
    pub fn new(horizon: u64, max_versions: u32, expire_before: u64, bottommost: bool) -> Compactor {
        Compactor {
            rule: Visibility::new(horizon, max_versions, expire_before),
            bottommost,
        }
    }

    /// What becomes of the entry with this key (as [`Compactor::judge`]
    /// says): the tests' way to ask.
    #[cfg(test)]
    pub fn keep(&mut self, entry_key: &[u8]) -> Option<Keep> {
        self.judge(entry_key).map(|judged| judged.keep)
    }

    /// What becomes of the entry with this key, with the parts of the key
    /// the output records (decoded once, by the rule; see [`Judged`]);
    /// `None` if the key does not decode. Such an entry is neither kept nor
    /// dropped: the caller stops with a corruption naming the input that
    /// holds it, so compaction never loses bytes it does not understand,
    /// nor copies them on as if they were sound.
    pub fn judge(&mut self, entry_key: &[u8]) -> Option<Judged> {
        let (verdict, (timestamp, sequence, kind)) = self.rule.judge_decoded(entry_key)?;
        let keep = match verdict {
            // Seen by readers at the horizon, or written after it (a reader
            // between the two must still find it, and what it would hide).
            Verdict::Visible | Verdict::Unwritten => Keep::Entry,
            // A deletion is dropped only when nothing older exists outside the
            // inputs (bottommost: whatever it hides in the inputs is dropped
            // here too).
            Verdict::Deletion if self.bottommost => Keep::Drop,
            Verdict::Deletion => Keep::Entry,
            // The newest expired entry of its cell (or row). No reader sees
            // it, nor anything older in its cell; but the family's TTL may be
            // lengthened again (`alter`), and then older versions outside the
            // inputs would come back where it was: a deleted value, or one a
            // newer version replaced. So unless nothing older exists outside
            // the inputs, it stays, a version as a cell deletion (the key
            // without the value, as RocksDB turns what a compaction filter
            // removes into a deletion): what expired stays gone, whatever the
            // TTL becomes.
            Verdict::Expired if self.bottommost => Keep::Drop,
            Verdict::Expired => match kind {
                Kind::Put => Keep::AsDeletion,
                _ => Keep::Entry,
            },
            // Hidden by a deletion, replaced by a later write with the same
            // timestamp, beyond max_versions, or expired under a newer entry
            // of its cell: no reader sees it, nor would under a longer TTL.
            Verdict::Hidden => Keep::Drop,
        };
        Some(Judged {
            keep,
            timestamp,
            sequence,
            kind,
        })
    }

    /// The encoded row prefix of the entry last judged (`key::row_part` of
    /// its key, which the rule found when the row started): the output's
    /// filter key, without a search for the row's end in every key.
    pub fn row(&self) -> &[u8] {
        self.rule.row()
    }
}

/// What [`Compactor::judge`] says of an entry, with its key's suffix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Judged {
    /// What becomes of it.
    pub keep: Keep,
    /// Its timestamp, as its key says.
    pub timestamp: u64,
    /// Its sequence number, as its key says.
    pub sequence: u64,
    /// Its kind, as its key says.
    pub kind: Kind,
}

/// Writes a frozen memtable to `out`, without the versions no reader of the
/// new version can see (a cell overwritten in the memtable is written once).
/// A flush is a compaction of one memtable, never bottommost: older files may
/// hold what its deletions hide. Snapshots taken before keep reading the
/// memtable itself.
pub(crate) fn flush_memtable(
    memtable: &Memtable,
    options: &FamilyOptions,
    horizon: u64,
    now_ms: u64,
    out: &mut TableOutput<'_>,
) -> Result<()> {
    let mut compactor = Compactor::new(horizon, options.max_versions, options.expire_before(now_ms), false);
    let mut rewritten = Vec::new();
    memtable.for_each(|k, value| {
        // A memtable holds only keys the store encoded itself.
        let Some(judged) = compactor.judge(k) else {
            return Err(Error::corruption("<memtable>", 0, "an entry's key does not decode"));
        };
        let (ts, seq) = (judged.timestamp, judged.sequence);
        match judged.keep {
            Keep::Entry => out.add(k, value, compactor.row(), (ts, seq, judged.kind)),
            Keep::AsDeletion => {
                key::cell_deletion_into(k, &mut rewritten);
                out.add(&rewritten, &[], compactor.row(), (ts, seq, Kind::DeleteCell))
            }
            Keep::Drop => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key;
    use proptest::prelude::*;

    #[test]
    fn similar_neighbours_are_merged_once_there_are_enough() {
        assert_eq!(tier(&[10, 10, 10], 4), None);
        assert_eq!(tier(&[10, 11, 9, 10], 4), Some(0..4));
        // A big old run is left out of a group of small new ones.
        assert_eq!(tier(&[10, 10, 10, 10, 1000], 4), Some(0..4));
        // A small new run does not join; the four similar ones behind it do.
        assert_eq!(tier(&[1, 100, 100, 100, 100], 4), Some(1..5));
        assert_eq!(tier(&[100, 100, 100, 100], 0), None);
    }

    const MB: u64 = 1 << 20;

    /// A file of `size` MiB at `level` in `run`, holding rows `first` to `last`.
    fn file(id: u64, run: u64, level: u32, size: u64, first: &'static str, last: &'static str) -> FileShape<'static> {
        FileShape {
            file_id: id,
            run,
            level,
            size: size * MB,
            first_row: first.as_bytes(),
            last_row: last.as_bytes(),
        }
    }

    fn leveled(trigger: usize) -> FamilyOptions {
        FamilyOptions::default()
            .compaction(Compaction::LEVELED)
            .compaction_trigger(trigger)
    }

    #[test]
    fn size_tiered_merges_whole_runs_and_is_bottommost_with_the_oldest() {
        let files = [
            file(9, 9, 0, 10, "a", "z"),
            file(8, 8, 0, 10, "a", "z"),
            file(6, 6, 0, 10, "a", "m"),
            file(7, 6, 0, 10, "n", "z"),
            file(5, 5, 0, 11, "a", "z"),
        ];
        let options = FamilyOptions::default()
            .compaction(Compaction::SizeTiered)
            .compaction_trigger(3);
        // Runs 9, 8, 6 (two files, 20 MiB) and 5: 9 and 8 and then 6 is within twice their average.
        assert_eq!(
            choose(&files, &options),
            Some(Choice::Merge {
                inputs: vec![9, 8, 6, 7, 5],
                level: 0,
                run: None,
                bottommost: true
            })
        );
        assert_eq!(choose(&files[..2], &options), None);
        assert_eq!(choose(&files, &options.compaction_trigger(0)), None);
    }

    #[test]
    fn size_tiered_output_takes_the_level_of_its_newest_input() {
        // A leveled family altered to size-tiered keeps its levels: level 3 (1 MiB) is
        // too small to join levels 4 and 5 (20 and 22 MiB), which merge, and holds newer
        // entries of their rows. At level 0 the output would be read before level 3, and
        // a later merge of level 3 into the last level would count as bottommost and drop
        // deletions that hide the output's entries; at level 4 it stays behind level 3.
        let files = [
            file(30, 3, 3, 1, "a", "z"),
            file(40, 4, 4, 10, "a", "m"),
            file(41, 4, 4, 10, "n", "z"),
            file(50, 5, 5, 22, "a", "z"),
            file(60, 6, 6, 500, "a", "z"),
        ];
        let options = FamilyOptions::default()
            .compaction(Compaction::SizeTiered)
            .compaction_trigger(2);
        assert_eq!(
            choose(&files, &options),
            Some(Choice::Merge {
                inputs: vec![40, 41, 50],
                level: 4,
                run: None,
                bottommost: false
            })
        );
        // With the last run: level 5's data and level 6's, bottommost, still behind level 3.
        let files = [files[0].clone(), file(50, 5, 5, 400, "a", "z"), files[4].clone()];
        assert_eq!(
            choose(&files, &options),
            Some(Choice::Merge {
                inputs: vec![50, 60],
                level: 5,
                run: None,
                bottommost: true
            })
        );
        // Level 0's runs are newer than every level: a group that takes one of them is
        // written at level 0, ordered among its runs by its newest entry.
        let files = [
            file(9, 9, 0, 1, "a", "z"),
            file(30, 3, 3, 1, "a", "z"),
            files[2].clone(),
        ];
        assert_eq!(
            choose(&files, &options),
            Some(Choice::Merge {
                inputs: vec![9, 30],
                level: 0,
                run: None,
                bottommost: false
            })
        );
    }

    /// A settled-looking leveled family: 1.2 GB in the last level, and
    /// `above` MiB at the base level.
    fn at_rest(above: u64) -> Vec<FileShape<'static>> {
        let mut files = vec![file(5, 4, 6, 1200, "a", "z")];
        if above > 0 {
            files.insert(0, file(10, 3, 5, above, "a", "z"));
        }
        files
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_leveled_family_with_enough_above_its_last_level_is_settled_once_its_writes_pause() {
        let options = leveled(4);
        // 60 MiB above 1.2 GB: 4.8% of 1260 MiB. Due once writes have paused 1 s.
        let files = at_rest(60);
        assert_eq!(settle_due_in(&files, 0, &options, Duration::ZERO), Some(SECOND));
        assert_eq!(
            settle_due_in(&files, 0, &options, Duration::from_millis(300)),
            Some(Duration::from_millis(700))
        );
        assert_eq!(settle_due_in(&files, 0, &options, SECOND), Some(Duration::ZERO));
        assert_eq!(settle_due_in(&files, 0, &options, 5 * SECOND), Some(Duration::ZERO));
        // Level 0 counts as above the last level, as the base level does.
        let level_0 = [file(20, 20, 0, 60, "a", "z"), file(5, 4, 6, 1200, "a", "z")];
        assert_eq!(settle_due_in(&level_0, 0, &options, SECOND), Some(Duration::ZERO));
    }

    #[test]
    fn a_settled_family_is_not_settled_again_until_3_percent_of_it_sits_above_the_last_level() {
        let options = leveled(4);
        // Just settled: everything in the last level, nothing in memory.
        assert_eq!(settle_due_in(&at_rest(0), 0, &options, 5 * SECOND), None);
        // 37 MiB of 1237 is 2.99%; 38 of 1238 is 3.07%.
        assert_eq!(settle_due_in(&at_rest(37), 0, &options, 5 * SECOND), None);
        assert_eq!(
            settle_due_in(&at_rest(38), 0, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        // The memtables count as above it: a settle flushes them.
        assert_eq!(
            settle_due_in(&at_rest(0), 38 * MB, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        assert_eq!(
            settle_due_in(&at_rest(20), 18 * MB, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        assert_eq!(settle_due_in(&at_rest(20), 17 * MB, &options, 5 * SECOND), None);
    }

    #[test]
    fn a_family_under_the_byte_floor_or_not_compacting_or_without_the_settle_is_never_settled() {
        // 200 MiB, all of it at level 0: under the 256 MiB floor.
        let small = [file(20, 20, 0, 200, "a", "z")];
        assert_eq!(settle_due_in(&small, 0, &leveled(4), 5 * SECOND), None);
        // The memtables do not count toward the floor: only table files do.
        assert_eq!(settle_due_in(&small, 100 * MB, &leveled(4), 5 * SECOND), None);
        let files = at_rest(100);
        assert_eq!(settle_due_in(&files, 0, &leveled(4), 5 * SECOND), Some(Duration::ZERO));
        assert_eq!(
            settle_due_in(&files, 0, &leveled(0), 5 * SECOND),
            None,
            "automatic compaction off"
        );
        let never = leveled(4).settle_when_idle(None);
        assert_eq!(settle_due_in(&files, 0, &never, 5 * SECOND), None, "no settle");
        // A floor, an idle time and a share of the family's own.
        let own = leveled(4).settle_when_idle(Some(crate::options::Settle {
            idle: Duration::from_millis(50),
            min_bytes: MB,
            min_above_percent: 50,
        }));
        let level_0 = [file(20, 20, 0, 1, "a", "z"), file(5, 4, 6, 1, "a", "z")];
        assert_eq!(
            settle_due_in(&level_0, 0, &own, Duration::from_millis(20)),
            Some(Duration::from_millis(30))
        );
        assert_eq!(
            settle_due_in(&at_rest(100), 0, &own, 5 * SECOND),
            None,
            "100 MiB of 1300 is under 50%"
        );
    }

    fn tiered() -> FamilyOptions {
        FamilyOptions::default().compaction(Compaction::SizeTiered)
    }

    /// A size-tiered family: one 1.2 GB run (two files), the oldest, and
    /// newer runs of `newer` MiB each, newest first.
    fn tiers(newer: &[u64]) -> Vec<FileShape<'static>> {
        let mut files: Vec<FileShape<'static>> = newer
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let id = 100 - i as u64;
                file(id, id, 0, size, "a", "z")
            })
            .collect();
        files.push(file(5, 4, 0, 600, "a", "m"));
        files.push(file(6, 4, 0, 600, "n", "z"));
        files
    }

    #[test]
    fn a_size_tiered_family_with_enough_outside_its_largest_run_is_settled_once_its_writes_pause() {
        let options = tiered();
        // Three newer runs, 20 + 20 + 20 MiB beside 1200: 4.8% of 1260 MiB.
        let files = tiers(&[20, 20, 20]);
        assert_eq!(settle_due_in(&files, 0, &options, Duration::ZERO), Some(SECOND));
        assert_eq!(
            settle_due_in(&files, 0, &options, Duration::from_millis(300)),
            Some(Duration::from_millis(700))
        );
        assert_eq!(settle_due_in(&files, 0, &options, SECOND), Some(Duration::ZERO));
        // 37 MiB of 1237 is 2.99%; 38 of 1238 is 3.07%, in one run or in several.
        assert_eq!(settle_due_in(&tiers(&[37]), 0, &options, 5 * SECOND), None);
        assert_eq!(settle_due_in(&tiers(&[20, 17]), 0, &options, 5 * SECOND), None);
        assert_eq!(
            settle_due_in(&tiers(&[38]), 0, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        assert_eq!(
            settle_due_in(&tiers(&[20, 18]), 0, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        // The memtables count as outside the run: a settle flushes them.
        assert_eq!(
            settle_due_in(&tiers(&[20]), 18 * MB, &options, 5 * SECOND),
            Some(Duration::ZERO)
        );
        assert_eq!(settle_due_in(&tiers(&[20]), 17 * MB, &options, 5 * SECOND), None);
        // The byte floor counts table files only, as for a leveled family.
        let small = [file(20, 20, 0, 100, "a", "z"), file(19, 19, 0, 100, "a", "z")];
        assert_eq!(settle_due_in(&small, 100 * MB, &options, 5 * SECOND), None);
        assert_eq!(
            settle_due_in(&files, 0, &options.clone().compaction_trigger(0), 5 * SECOND),
            None,
            "automatic compaction off"
        );
        assert_eq!(
            settle_due_in(&files, 0, &options.settle_when_idle(None), 5 * SECOND),
            None,
            "no settle"
        );
    }

    #[test]
    fn a_size_tiered_family_in_one_run_is_not_settled_again_and_the_run_that_stays_is_its_largest() {
        let options = tiered();
        // What a settle leaves: one run, whatever its files, and nothing in memory.
        assert_eq!(settle_due_in(&tiers(&[]), 0, &options, 5 * SECOND), None);
        // The same files at the last level of a leveled family are settled too.
        let last_level: Vec<FileShape<'static>> = tiers(&[])
            .into_iter()
            .map(|f| FileShape { level: LAST_LEVEL, ..f })
            .collect();
        assert_eq!(settle_due_in(&last_level, 0, &leveled(4), 5 * SECOND), None);
        // A leveled family's run outside its last level counts whole; a tiered
        // family's whole tree is at level 0, and only its largest run stays.
        let one_run_at_level_0 = tiers(&[]);
        assert_eq!(
            settle_due_in(&one_run_at_level_0, 0, &leveled(4), 5 * SECOND),
            Some(Duration::ZERO)
        );
        // A 1000 MiB newer tier beside the 1200 MiB oldest run: with the newest
        // run, 1030 of 2230 MiB lie outside the largest.
        let grown = [
            file(9, 9, 0, 30, "a", "z"),
            file(8, 8, 0, 1000, "a", "z"),
            file(5, 4, 0, 600, "a", "m"),
            file(6, 4, 0, 600, "n", "z"),
        ];
        assert_eq!(settle_due_in(&grown, 0, &options, 5 * SECOND), Some(Duration::ZERO));
        // A big newer run ahead of a small oldest one: only the small one
        // (and the newest) lies outside it, 2.9% of 1236 MiB, not worth a rewrite.
        let small_oldest = [
            file(9, 9, 0, 16, "a", "z"),
            file(8, 8, 0, 1200, "a", "z"),
            file(5, 4, 0, 20, "a", "z"),
        ];
        assert_eq!(settle_due_in(&small_oldest, 0, &options, 5 * SECOND), None);
        // A family altered from leveled keeps its levels: its runs are still runs.
        let altered = [
            file(9, 9, 0, 40, "a", "z"),
            file(10, 3, 5, 60, "a", "z"),
            file(5, 4, 6, 1200, "a", "z"),
        ];
        assert_eq!(settle_due_in(&altered, 0, &options, 5 * SECOND), Some(Duration::ZERO));
        assert_eq!(settle_due_in(&altered[2..], 0, &options, 5 * SECOND), None);
    }

    #[test]
    fn level_targets_grow_from_the_last_level_up_and_the_base_follows_the_data() {
        let base = 256 * MB;
        let at = |bottom: u64| {
            let mut sizes = [0; LEVELS as usize];
            sizes[LAST_LEVEL as usize] = bottom;
            level_targets(&sizes, base, 10)
        };
        // Empty, or less than ten times the floor: level 0 goes straight to the last level.
        assert_eq!(at(0), ([0, 0, 0, 0, 0, 0, 0], 6));
        assert_eq!(at(100 * MB), ([0, 0, 0, 0, 0, 0, 100 * MB], 6));
        // 1.2 GB: the base is level 5, a tenth of it.
        assert_eq!(at(1200 * MB), ([0, 0, 0, 0, 0, 120 * MB, 1200 * MB], 5));
        // 20 GB: levels 4 and 5.
        assert_eq!(at(20_000 * MB), ([0, 0, 0, 0, 200 * MB, 2000 * MB, 20_000 * MB], 4));
    }

    #[test]
    fn level_0_is_merged_into_the_base_level_once_it_holds_trigger_runs() {
        // Level 6 holds 1.2 GB, so level 5 is the base, with a target of 120 MiB.
        let files = [
            file(20, 20, 0, 40, "c", "x"),
            file(19, 19, 0, 40, "a", "k"),
            file(18, 18, 0, 40, "b", "y"),
            file(10, 3, 5, 50, "a", "f"),
            file(11, 3, 5, 50, "g", "p"),
            file(5, 4, 6, 1200, "a", "z"),
        ];
        assert_eq!(
            choose(&files, &leveled(4)),
            None,
            "three runs, trigger 4; level 5 under its target"
        );
        // All of level 0, and the base files sharing rows with it ("a" to "y": both), join the
        // base level's run; level 6 holds those rows too, so this is not bottommost.
        assert_eq!(
            choose(&files, &leveled(3)),
            Some(Choice::Merge {
                inputs: vec![20, 19, 18, 10, 11],
                level: 5,
                run: Some(3),
                bottommost: false
            })
        );
    }

    #[test]
    fn the_level_most_over_its_target_gives_the_file_cheapest_to_merge_down() {
        let files = [
            file(20, 20, 0, 40, "c", "x"),
            file(19, 19, 0, 40, "a", "k"),
            file(18, 18, 0, 40, "b", "y"),
            file(10, 3, 5, 50, "a", "f"),
            file(11, 3, 5, 50, "g", "p"),
            file(12, 3, 5, 60, "q", "z"),
            file(5, 4, 6, 1200, "a", "z"),
        ];
        // Level 5 at 160/120 is further over than level 0 at 3/3. Every file of level 5
        // shares rows with the one file of level 6; the 60 MiB one brings the most of its
        // own bytes per byte merged.
        assert_eq!(
            choose(&files, &leveled(3)),
            Some(Choice::Merge {
                inputs: vec![12, 5],
                level: 6,
                run: Some(4),
                bottommost: true
            })
        );
    }

    #[test]
    fn a_file_sharing_no_row_with_the_level_below_moves_without_a_rewrite() {
        // A lone flush on an empty family goes to the last level as it is.
        let files = [file(7, 7, 0, 40, "a", "k")];
        assert_eq!(
            choose(&files, &leveled(1)),
            Some(Choice::Move {
                file_id: 7,
                level: 6,
                run: None
            })
        );
        // A level over its target moves a file whose rows the next level lacks.
        let files = [
            file(10, 3, 5, 200, "m", "p"),
            file(5, 4, 6, 300, "a", "c"),
            file(6, 4, 6, 300, "q", "z"),
            file(4, 4, 6, 600, "d", "l"),
        ];
        assert_eq!(
            choose(&files, &leveled(4)),
            Some(Choice::Move {
                file_id: 10,
                level: 6,
                run: Some(4)
            })
        );
    }

    #[test]
    fn a_merge_is_bottommost_only_if_no_deeper_level_holds_a_row_of_any_input() {
        // Level 4's file ("m" to "n") takes level 5's file ("a" to "z") with it; level 6
        // holds "b", outside the rows of the file taken from level 4 but inside those of
        // the one from level 5: a deletion of "b" must stay, to hide level 6's "b".
        let files = [
            file(10, 3, 4, 300, "m", "n"),
            file(11, 4, 5, 100, "a", "z"),
            file(12, 5, 6, 1000, "b", "b"),
            file(13, 5, 6, 9000, "c", "c"),
        ];
        assert_eq!(
            choose(&files, &leveled(4)),
            Some(Choice::Merge {
                inputs: vec![10, 11],
                level: 5,
                run: Some(4),
                bottommost: false
            })
        );
    }

    #[test]
    fn data_above_the_base_level_is_always_moved_down() {
        // The family shrank: levels 2 and 3 are above the base now (level 6 alone is under
        // ten times the floor), so they empty whatever their size, the larger first, each
        // into the first level below it that holds data, or else the base.
        let files = [
            file(3, 3, 2, 1, "a", "b"),
            file(4, 4, 3, 5, "a", "z"),
            file(5, 5, 6, 50, "a", "z"),
        ];
        assert_eq!(
            choose(&files, &leveled(4)),
            Some(Choice::Merge {
                inputs: vec![4, 5],
                level: 6,
                run: Some(5),
                bottommost: true
            })
        );
        assert_eq!(
            choose(&files[..1], &leveled(4)),
            Some(Choice::Move {
                file_id: 3,
                level: 6,
                run: None
            })
        );
        let with_level_0 = [file(9, 9, 0, 1, "a", "z"), files[0].clone(), files[2].clone()];
        assert_eq!(
            choose(&with_level_0, &leveled(1)),
            Some(Choice::Merge {
                inputs: vec![3, 5],
                level: 6,
                run: Some(5),
                bottommost: true
            }),
            "level 2 first; level 0 would have gone to level 2, not over it"
        );
    }

    #[test]
    fn compaction_drops_what_no_reader_sees() {
        use crate::key::Kind;
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        let mut c = Compactor::new(u64::MAX, 1, 0, false);
        assert_eq!(
            c.keep(&k("", 50, 9, Kind::DeleteRow)),
            Some(Keep::Entry),
            "not bottommost: the row tombstone stays"
        );
        assert_eq!(
            c.keep(&k("a", 60, 10, Kind::Put)),
            Some(Keep::Entry),
            "newer than the row deletion"
        );
        assert_eq!(
            c.keep(&k("a", 40, 3, Kind::Put)),
            Some(Keep::Drop),
            "hidden by the row deletion"
        );
        assert_eq!(c.keep(&k("b", 70, 11, Kind::Put)), Some(Keep::Entry));
        assert_eq!(
            c.keep(&k("b", 65, 8, Kind::Put)),
            Some(Keep::Drop),
            "beyond max_versions"
        );
        let mut bottom = Compactor::new(u64::MAX, 2, 0, true);
        assert_eq!(
            bottom.keep(&k("c", 30, 5, Kind::DeleteCell)),
            Some(Keep::Drop),
            "bottommost: tombstone dropped"
        );
        assert_eq!(
            bottom.keep(&k("c", 20, 4, Kind::Put)),
            Some(Keep::Drop),
            "and what it hid"
        );
        assert_eq!(bottom.keep(&k("d", 20, 4, Kind::Put)), Some(Keep::Entry));
        assert_eq!(
            bottom.keep(&k("d", 20, 2, Kind::Put)),
            Some(Keep::Drop),
            "same timestamp, earlier write"
        );
        assert_eq!(
            bottom.keep(&k("d", 10, 1, Kind::Put)),
            Some(Keep::Entry),
            "second version kept"
        );
        let mut ttl = Compactor::new(u64::MAX, 2, 100, true);
        assert_eq!(ttl.keep(&k("e", 99, 1, Kind::Put)), Some(Keep::Drop), "expired");
    }

    #[test]
    fn the_newest_expired_entry_of_a_cell_or_row_stays_until_nothing_older_is_left_outside() {
        use crate::key::Kind;
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        let row_deletion = |ts, seq| key::encode(b"r", b"", ts, seq, Kind::DeleteRow);
        // Everything before timestamp 100 has expired.
        let mut c = Compactor::new(u64::MAX, 2, 100, false);
        let kept = [
            (row_deletion(90, 9), Keep::Entry, "the row's newest deletion, expired"),
            (row_deletion(80, 8), Keep::Drop, "an older one"),
            (k("a", 150, 10, Kind::Put), Keep::Entry, "not expired"),
            (k("a", 95, 7, Kind::Put), Keep::AsDeletion, "the newest expired version"),
            (k("a", 94, 6, Kind::Put), Keep::Drop, "older than it"),
            (k("b", 85, 4, Kind::Put), Keep::Drop, "under the expired row deletion"),
            (k("c", 97, 2, Kind::DeleteCell), Keep::Entry, "an expired cell deletion"),
            (k("c", 96, 1, Kind::Put), Keep::Drop, "under it"),
        ];
        for (entry, keep, why) in kept {
            assert_eq!(c.keep(&entry), Some(keep), "{why}");
        }
        // Bottommost: nothing older is left for them to hide, under any TTL.
        let mut bottom = Compactor::new(u64::MAX, 2, 100, true);
        assert_eq!(bottom.keep(&row_deletion(90, 9)), Some(Keep::Drop));
        assert_eq!(bottom.keep(&k("a", 95, 7, Kind::Put)), Some(Keep::Drop));
        // The rewritten key: the same cell and place in key order, a deletion.
        let mut rewritten = Vec::new();
        key::cell_deletion_into(&k("a", 95, 7, Kind::Put), &mut rewritten);
        assert_eq!(rewritten, k("a", 95, 7, Kind::DeleteCell));
    }

    #[test]
    fn an_entry_whose_key_does_not_decode_is_neither_kept_nor_dropped() {
        use crate::key::Kind;
        let mut c = Compactor::new(u64::MAX, 1, 0, true);
        let sound = key::encode(b"r", b"a", 5, 1, Kind::Put);
        assert_eq!(c.keep(b"too short for a suffix"), None);
        // A sound suffix after a body with no row terminator.
        let no_row = [&b"r"[..], &sound[sound.len() - key::SUFFIX_LEN..]].concat();
        assert_eq!(c.keep(&no_row), None);
        assert_eq!(c.keep(&sound), Some(Keep::Entry));
    }

    #[test]
    fn writes_after_the_horizon_are_kept_and_hide_nothing() {
        use crate::key::Kind;
        let k = |col: &str, ts, seq, kind| key::encode(b"r", col.as_bytes(), ts, seq, kind);
        // A reader may still be at sequence 5: it must find the version seq 9 replaces.
        let mut c = Compactor::new(5, 1, 0, true);
        assert_eq!(
            c.keep(&k("", 40, 8, Kind::DeleteRow)),
            Some(Keep::Entry),
            "not yet visible to every reader"
        );
        assert_eq!(
            c.keep(&k("a", 30, 9, Kind::Put)),
            Some(Keep::Entry),
            "not yet visible to every reader"
        );
        assert_eq!(
            c.keep(&k("a", 20, 4, Kind::Put)),
            Some(Keep::Entry),
            "the newest version at the horizon"
        );
        assert_eq!(
            c.keep(&k("a", 10, 3, Kind::Put)),
            Some(Keep::Drop),
            "replaced before the horizon"
        );
        assert_eq!(c.keep(&k("b", 10, 2, Kind::Put)), Some(Keep::Entry));
    }

    /// Row names for generated shapes: one byte each, so ranges are easy to read.
    const ROW_NAMES: [&[u8]; 26] = [
        b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"i", b"j", b"k", b"l", b"m", b"n", b"o", b"p", b"q", b"r",
        b"s", b"t", b"u", b"v", b"w", b"x", b"y", b"z",
    ];

    /// A leveled family's shape: level 0's runs (any rows, one file each,
    /// newest first), then levels 1 to 6, each one run of files with
    /// disjoint rows in key order (generated ranges that overlap the one
    /// before them are left out).
    fn leveled_shape() -> impl Strategy<Value = Vec<FileShape<'static>>> {
        let level0 = proptest::collection::vec((0..26usize, 0..26usize, 1..40u64), 0..5);
        let level = proptest::collection::vec((0..26usize, 0..26usize, 1..400u64), 0..4);
        (level0, proptest::collection::vec(level, 6)).prop_map(|(level0, levels)| {
            let mut files = Vec::new();
            // Level 0's ids count down from 1000 (newest first), the levels' up from 2000.
            for (i, (a, b, size)) in level0.into_iter().enumerate() {
                let id = 1000 - i as u64;
                files.push(file_bytes(id, id, 0, size, a.min(b), a.max(b)));
            }
            let mut id = 2000;
            for (i, pieces) in levels.into_iter().enumerate() {
                let level = i as u32 + 1;
                // Disjoint ranges: sort the pieces and keep those that do not
                // overlap the one before.
                let mut ranges: Vec<(usize, usize, u64)> =
                    pieces.into_iter().map(|(a, b, s)| (a.min(b), a.max(b), s)).collect();
                ranges.sort();
                let mut last_end: Option<usize> = None;
                for (first, last, size) in ranges {
                    if last_end.is_some_and(|end| first <= end) {
                        continue;
                    }
                    last_end = Some(last);
                    id += 1;
                    files.push(file_bytes(id, u64::from(level), level, size, first, last));
                }
            }
            files
        })
    }

    /// A file of `size` KiB holding rows `ROW_NAMES[first]` to `ROW_NAMES[last]`.
    fn file_bytes(id: u64, run: u64, level: u32, size: u64, first: usize, last: usize) -> FileShape<'static> {
        FileShape {
            file_id: id,
            run,
            level,
            size: size * 1024,
            first_row: ROW_NAMES[first],
            last_row: ROW_NAMES[last],
        }
    }

    proptest! {
        /// Whatever a leveled family's shape, a choice keeps it leveled and
        /// its age order true: level 0 goes whole; the output level's files
        /// that share a row with what comes down are merged too, so the level
        /// stays disjoint; nothing jumps over a level that holds data; a file
        /// moves only where no file shares its rows; and a merge is
        /// bottommost exactly when no deeper file shares a row with it.
        #[test]
        fn a_leveled_choice_keeps_levels_disjoint_and_calls_bottommost_right(
            files in leveled_shape(),
            trigger in 1..5usize,
        ) {
            let options = FamilyOptions::default()
                .compaction(Compaction::Leveled { base_bytes: 64 * 1024, multiplier: 2 })
                .compaction_trigger(trigger);
            let Some(choice) = choose(&files, &options) else { return Ok(()) };
            let by_id = |id: u64| files.iter().find(|f| f.file_id == id);
            let run_of = |level: u32| files.iter().find(|f| f.level == level).map(|f| f.run);
            let (moved, out, run, bottommost): (Vec<&FileShape<'_>>, u32, Option<u64>, Option<bool>) = match &choice {
                Choice::Merge { inputs, level, run, bottommost } => {
                    let inputs: Vec<&FileShape<'_>> = inputs.iter().filter_map(|&id| by_id(id)).collect();
                    (inputs, *level, *run, Some(*bottommost))
                }
                Choice::Move { file_id, level, run } => (by_id(*file_id).into_iter().collect(), *level, *run, None),
            };
            prop_assert!(!moved.is_empty(), "{:?}", choice);
            let from = moved.iter().map(|f| f.level).min().unwrap_or(0);
            prop_assert!(from < out && out <= LAST_LEVEL, "{:?}", choice);
            prop_assert!(moved.iter().all(|f| f.level == from || f.level == out), "{:?}", choice);
            prop_assert_eq!(run, run_of(out), "the output joins its level's run");
            prop_assert!(
                !files.iter().any(|f| f.level > from && f.level < out),
                "{:?} jumps over a level that holds data", choice
            );
            if from == 0 {
                prop_assert!(
                    files.iter().filter(|f| f.level == 0).all(|f| moved.iter().any(|m| m.file_id == f.file_id)),
                    "level 0 goes whole: {:?}", choice
                );
            }
            let first = moved.iter().map(|f| f.first_row).min().unwrap_or(b"");
            let last = moved.iter().map(|f| f.last_row).max().unwrap_or(b"");
            let stays = |f: &&FileShape<'_>| !moved.iter().any(|m| m.file_id == f.file_id);
            prop_assert!(
                !files.iter().filter(stays).any(|f| f.level == out && f.shares_rows(first, last)),
                "{:?} leaves a file of level {} sharing its rows", choice, out
            );
            let deeper = files.iter().any(|f| f.level > out && f.shares_rows(first, last));
            if let Some(bottommost) = bottommost {
                prop_assert_eq!(bottommost, !deeper, "{:?}", choice);
            }
        }
    }
}
