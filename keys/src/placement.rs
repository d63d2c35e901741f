//! Where each write lands: a simulated cluster.
//!
//! Two families of stores place rows in opposite ways.
//!
//! * **Range-partitioned** (HBase, Bigtable): rows are kept sorted by key and
//!   the key space is cut into contiguous *regions* (tablets). A region that
//!   grows past its split size splits at its middle key; the daughters stay on
//!   the parent's server until a balancer moves them. Neighbouring keys live
//!   together, so a key whose writes always arrive at one end of the key space
//!   (a timestamp first) sends *every* write to the last region, however often
//!   it splits.
//! * **Hashed** (Cassandra, DynamoDB): the partition key is hashed and the hash
//!   picks the node. Writes spread whatever the key looks like, as long as
//!   there are many partition keys and none is much hotter than the rest.
//!
//! Time is cut into `ticks` equal slices of the workload's span (the columns
//! of the picture); "each simulated minute" of the HBase balancer and the
//! Bigtable load split is one tick.
//!
//! ## What is simplified
//!
//! * Sizes are counted in rows, standing in for bytes (the 128 MB flush size
//!   and 10 GB maximum become `flush_rows` and `max_rows`).
//! * A region checks its split size after every write, not after a flush;
//!   splits are instant and there is no compaction debt.
//! * The HBase balancer only evens out region *counts* (as the simple load
//!   balancer does): while one server has two more regions than another, it
//!   moves the first region (in key order) of the fullest server to the
//!   emptiest. The stochastic balancer's cost functions are not modelled.
//! * The Bigtable model splits a tablet that took more than `load_share` of a
//!   tick's writes at the median key written in that tick, then places
//!   tablets on nodes by that tick's load (largest first, onto the least
//!   loaded node). Bigtable's real rebalancing is not published; this only
//!   shows its shape: load splits help a hot *range*, never a hot *point*.
//! * Hashed stores use [`crate::encoding::hash64`] (FNV-1a with a murmur
//!   finaliser), not Cassandra's Murmur3 tokens; tokens are derived from node
//!   names, not random. DynamoDB partitions own equal slices of the hash space
//!   and never split for heat (real DynamoDB adapts capacity and splits).
//! * No replication: a write counts once, on the node that owns it.

use std::collections::BTreeSet;

use crate::encoding::{hash64, prefix_successor};
use crate::error::{Error, Result};
use crate::key::{KeyDesign, Part};

/// When a region splits (HBase's split policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPolicy {
    /// `SteppingSplitPolicy`, the default since HBase 2.0: twice the flush
    /// size while the table has one region on the server, then the maximum.
    Stepping {
        /// Memstore flush size, in rows.
        flush_rows: u64,
        /// `hbase.hregion.max.filesize`, in rows.
        max_rows: u64,
    },
    /// `IncreasingToUpperBoundRegionSplitPolicy` (default in 0.94 to 1.x):
    /// `min(max, 2 × flush × regions³)`, where `regions` counts the table's
    /// regions on the same server.
    IncreasingToUpperBound {
        /// Memstore flush size, in rows.
        flush_rows: u64,
        /// `hbase.hregion.max.filesize`, in rows.
        max_rows: u64,
    },
    /// `ConstantSizeRegionSplitPolicy`: always the maximum.
    Constant {
        /// Split size, in rows.
        max_rows: u64,
    },
}

impl SplitPolicy {
    /// The size past which a region splits, when `regions_on_server` regions
    /// of the table (this one included) are on its server.
    ///
    /// ```
    /// use cellar_keys::placement::SplitPolicy;
    /// let p = SplitPolicy::IncreasingToUpperBound { flush_rows: 128, max_rows: 10_240 };
    /// assert_eq!(p.split_size(1), 256); // 2 × 128 × 1³
    /// assert_eq!(p.split_size(2), 2048); // 2 × 128 × 2³
    /// assert_eq!(p.split_size(3), 6912); // 2 × 128 × 3³
    /// assert_eq!(p.split_size(4), 10_240); // 16 384 capped at the maximum
    /// ```
    pub fn split_size(&self, regions_on_server: usize) -> u64 {
        match *self {
            SplitPolicy::Stepping { flush_rows, max_rows } => {
                if regions_on_server <= 1 {
                    flush_rows.saturating_mul(2).min(max_rows)
                } else {
                    max_rows
                }
            }
            SplitPolicy::IncreasingToUpperBound { flush_rows, max_rows } => {
                // HBase uses the maximum when the count is 0 or above 100.
                if regions_on_server == 0 || regions_on_server > 100 {
                    return max_rows;
                }
                let r = regions_on_server as u64;
                (2u64.saturating_mul(flush_rows).saturating_mul(r * r * r)).min(max_rows)
            }
            SplitPolicy::Constant { max_rows } => max_rows,
        }
    }
}

/// The store being simulated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StoreModel {
    /// HBase: regions split by a policy; a balancer evens counts each tick.
    HBase {
        /// The split policy.
        policy: SplitPolicy,
    },
    /// Bigtable-like: a constant split size plus load-based splits, tablets
    /// placed by load each tick.
    Bigtable {
        /// Split size, in rows.
        split_rows: u64,
        /// A tablet taking more than this share of a tick's writes splits.
        load_share: f64,
    },
    /// Cassandra-like token ring.
    Ring {
        /// Tokens (virtual nodes) per node.
        num_tokens: usize,
    },
    /// DynamoDB-like partitions owning equal slices of the hash space; each
    /// partition counts as one server.
    EqualPartitions,
}

impl std::fmt::Display for StoreModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreModel::HBase { policy } => match policy {
                SplitPolicy::Stepping { flush_rows, max_rows } => write!(
                    f,
                    "HBase, SteppingSplitPolicy (flush {flush_rows} rows, max {max_rows} rows)"
                ),
                SplitPolicy::IncreasingToUpperBound { flush_rows, max_rows } => write!(
                    f,
                    "HBase, IncreasingToUpperBoundRegionSplitPolicy (flush {flush_rows} rows, max {max_rows} rows)"
                ),
                SplitPolicy::Constant { max_rows } => {
                    write!(f, "HBase, ConstantSizeRegionSplitPolicy ({max_rows} rows)")
                }
            },
            StoreModel::Bigtable { split_rows, load_share } => write!(
                f,
                "Bigtable-like (split at {split_rows} rows or {:.0}% of a slice's writes, placed by load)",
                load_share * 100.0
            ),
            StoreModel::Ring { num_tokens } => write!(f, "Cassandra-like token ring ({num_tokens} tokens per node)"),
            StoreModel::EqualPartitions => f.write_str("DynamoDB-like equal hash partitions"),
        }
    }
}

impl StoreModel {
    /// True for stores that keep rows sorted by the whole key.
    pub fn is_range(&self) -> bool {
        matches!(self, StoreModel::HBase { .. } | StoreModel::Bigtable { .. })
    }
}

/// Most servers (nodes, partitions) a simulation takes: it keeps a write
/// count per server per time slice, and prints one share per server.
pub const MAX_SERVERS: usize = 10_000;

/// Most regions a range store may be pre-split into (and so the most split
/// points [`presplit_points`] returns, plus one).
pub const MAX_PRESPLIT: usize = 100_000;

/// Most tokens per node on a ring (Cassandra's default is 16; 256 was the
/// old one).
pub const MAX_TOKENS: usize = 1024;

/// Most time slices or key bins of a simulation (picture columns and rows).
pub const MAX_TICKS: usize = 10_000;

/// The simulated cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    /// The store.
    pub model: StoreModel,
    /// Region servers, nodes, or (for equal partitions) partitions.
    pub servers: usize,
    /// Regions to create before the first write (range stores; 0 or 1 = none).
    pub presplit: usize,
    /// Time slices (picture columns, balancer rounds).
    pub ticks: usize,
    /// Rows of the picture (key-space bins).
    pub key_bins: usize,
}

impl ClusterSpec {
    /// Four servers, HBase stepping policy with a flush size of 64 rows and a
    /// maximum of 1000 rows, 60 ticks.
    pub fn new(model: StoreModel) -> ClusterSpec {
        ClusterSpec {
            model,
            servers: 4,
            presplit: 0,
            ticks: 60,
            key_bins: 100,
        }
    }

    /// The default HBase cluster.
    pub fn hbase() -> ClusterSpec {
        ClusterSpec::new(StoreModel::HBase {
            policy: SplitPolicy::Stepping {
                flush_rows: 64,
                max_rows: 1000,
            },
        })
    }
}

/// One region of the final layout of a range store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// First key (inclusive); empty for the first region.
    pub start: Vec<u8>,
    /// End key (exclusive); `None` for the last region.
    pub end: Option<Vec<u8>>,
    /// Server holding it.
    pub server: usize,
    /// Rows in it.
    pub rows: usize,
}

/// Who owns what at the end of the run.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// Sorted regions of a range store.
    Range(Vec<RegionInfo>),
    /// A token ring: `(token, node)` sorted by token.
    Ring(Vec<(u64, usize)>),
    /// Equal hash partitions.
    Equal(usize),
}

impl Layout {
    /// The server owning a partition key in a hashed store.
    pub fn owner(&self, partition_key: &[u8]) -> usize {
        let h = hash64(partition_key);
        match self {
            Layout::Ring(tokens) => ring_owner(tokens, h),
            Layout::Equal(n) => equal_owner(*n, h),
            Layout::Range(regions) => regions
                .iter()
                .rposition(|r| r.start.as_slice() <= partition_key)
                .and_then(|i| regions.get(i))
                .map_or(0, |r| r.server),
        }
    }

    /// Regions of a range store that overlap `[from, to)` (`to = None`: to
    /// the end), and the distinct servers holding them.
    pub fn regions_overlapping(&self, from: &[u8], to: Option<&[u8]>) -> (Vec<usize>, BTreeSet<usize>) {
        let mut regions = Vec::new();
        let mut servers = BTreeSet::new();
        if let Layout::Range(list) = self {
            for (i, r) in list.iter().enumerate() {
                let starts_before_to = to.is_none_or(|t| r.start.as_slice() < t);
                let ends_after_from = r.end.as_deref().is_none_or(|e| e > from);
                if starts_before_to && ends_after_from {
                    regions.push(i);
                    servers.insert(r.server);
                }
            }
        }
        (regions, servers)
    }
}

fn ring_owner(tokens: &[(u64, usize)], h: u64) -> usize {
    let i = tokens.partition_point(|(t, _)| *t < h);
    tokens.get(i).or(tokens.first()).map_or(0, |(_, n)| *n)
}

fn equal_owner(partitions: usize, h: u64) -> usize {
    ((u128::from(h) * partitions as u128) >> 64) as usize
}

/// What the simulation saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The store simulated.
    pub model: StoreModel,
    /// Servers (nodes, partitions).
    pub servers: usize,
    /// Writes per tick per server: `[tick][server]`.
    pub writes: Vec<Vec<u64>>,
    /// Writes per tick per key-space bin: `[tick][bin]`, bin 0 = first key.
    /// The bins cut one key space for the whole run (see [`simulate`]).
    pub heat: Vec<Vec<u64>>,
    /// The servers that took the writes of each heat cell, `[tick][bin]`,
    /// in server order.
    pub heat_servers: Vec<Vec<Vec<usize>>>,
    /// The first and last distinct key of each bin (range stores; a bin no
    /// key falls in is `None`). Hashed stores bin the hash space: `None`.
    pub bin_keys: Vec<Option<(Vec<u8>, Vec<u8>)>>,
    /// Region (or ownership) boundaries at the end of each tick, as positions
    /// in the key space from 0.0 (first key) to 1.0.
    pub boundaries: Vec<Vec<f64>>,
    /// The final layout.
    pub layout: Layout,
    /// Region splits that happened (range stores).
    pub splits: usize,
    /// Writes that landed in the last region of the key space (range stores).
    pub writes_to_last_region: u64,
    /// Time of the first write, and the width of a tick, in milliseconds.
    pub tick_start_ms: u64,
    /// Width of one tick in milliseconds.
    pub tick_ms: u64,
}

impl Placement {
    /// All writes simulated.
    pub fn total_writes(&self) -> u64 {
        self.writes.iter().flatten().sum()
    }

    /// Writes per server over the whole run.
    pub fn writes_per_server(&self) -> Vec<u64> {
        let mut out = vec![0; self.servers];
        for tick in &self.writes {
            for (s, w) in tick.iter().enumerate() {
                if let Some(o) = out.get_mut(s) {
                    *o += w;
                }
            }
        }
        out
    }
}

/// A region while the simulation runs.
struct Region {
    start: Vec<u8>,
    keys: BTreeSet<Vec<u8>>,
    server: usize,
    tick_writes: u64,
    tick_keys: Vec<Vec<u8>>,
}

impl Region {
    fn new(start: Vec<u8>, server: usize) -> Region {
        Region {
            start,
            keys: BTreeSet::new(),
            server,
            tick_writes: 0,
            tick_keys: Vec::new(),
        }
    }
}

/// Pre-split points for `n` regions: one per salt or hash bucket range when
/// the key starts with a salt or hash prefix (the reader knows the bucket
/// values), otherwise HBase's `UniformSplit` over the first byte, which only
/// helps keys whose first byte is spread over all 256 values.
///
/// `n` is taken as at most [`MAX_PRESPLIT`].
pub fn presplit_points(design: &KeyDesign, n: usize) -> Vec<Vec<u8>> {
    if n < 2 {
        return Vec::new();
    }
    let n = n.min(MAX_PRESPLIT);
    let mut lead = Vec::new();
    for part in &design.parts {
        match part {
            Part::Constant(b) | Part::Separator(b) => lead.extend(b),
            _ => break,
        }
    }
    let mut points: Vec<Vec<u8>> = match design.leading_bucket_part() {
        Some(Part::Salt { buckets, .. }) | Some(Part::RoundRobin { buckets }) => (1..n)
            .map(|j| Part::bucket_bytes(*buckets, (j as u64 * u64::from(*buckets) / n as u64) as u32))
            .collect(),
        Some(Part::HashPrefix { digits, .. }) => {
            let d = u32::from((*digits).clamp(1, 8));
            let space = 16u64.pow(d);
            (1..n)
                .map(|j| format!("{:0w$x}", j as u64 * space / n as u64, w = d as usize).into_bytes())
                .collect()
        }
        _ => {
            lead.clear();
            // One byte cuts the key space in at most 256 regions.
            let n = n.min(256);
            (1..n).map(|j| vec![(j * 256 / n) as u8]).collect()
        }
    };
    for p in &mut points {
        p.splice(0..0, lead.iter().copied());
    }
    points.dedup();
    points.retain(|p| !p.is_empty());
    points
}

/// Simulates the writes (`(key, placement key, timestamp)` in write order;
/// the placement key is the whole key for range stores and the partition key
/// for hashed ones) on a cluster.
pub fn simulate(spec: &ClusterSpec, design: &KeyDesign, writes: &[(Vec<u8>, Vec<u8>, u64)]) -> Result<Placement> {
    check_sizes(spec)?;
    let t0 = writes.first().map_or(0, |w| w.2);
    let t1 = writes.last().map_or(0, |w| w.2);
    let tick_ms = ((t1 - t0.min(t1)) / spec.ticks as u64 + 1).max(1);
    let tick_of = |ts: u64| (((ts - t0.min(ts)) / tick_ms) as usize).min(spec.ticks - 1);
    let mut placement = Placement {
        model: spec.model,
        servers: spec.servers,
        writes: vec![vec![0; spec.servers]; spec.ticks],
        heat: vec![vec![0; spec.key_bins]; spec.ticks],
        heat_servers: vec![vec![Vec::new(); spec.key_bins]; spec.ticks],
        bin_keys: vec![None; spec.key_bins],
        boundaries: vec![Vec::new(); spec.ticks],
        layout: Layout::Equal(spec.servers),
        splits: 0,
        writes_to_last_region: 0,
        tick_start_ms: t0,
        tick_ms,
    };
    match spec.model {
        StoreModel::HBase { .. } | StoreModel::Bigtable { .. } => {
            simulate_range(spec, design, writes, &tick_of, &mut placement)?
        }
        StoreModel::Ring { num_tokens } => {
            if num_tokens == 0 {
                return Err(Error::InvalidSetting("num_tokens must be at least 1".into()));
            }
            let mut tokens: Vec<(u64, usize)> = (0..spec.servers)
                .flat_map(|n| (0..num_tokens).map(move |i| (hash64(format!("node{n}/token{i}").as_bytes()), n)))
                .collect();
            tokens.sort_unstable();
            let mut bounds = Vec::new();
            for pair in tokens.windows(2) {
                if let [(_, a), (t, b)] = pair {
                    if a != b {
                        bounds.push(*t as f64 / 2f64.powi(64));
                    }
                }
            }
            hashed(spec, writes, &tick_of, &mut placement, |h| ring_owner(&tokens, h));
            placement.boundaries = vec![bounds; spec.ticks];
            placement.layout = Layout::Ring(tokens);
        }
        StoreModel::EqualPartitions => {
            let n = spec.servers;
            hashed(spec, writes, &tick_of, &mut placement, |h| equal_owner(n, h));
            let bounds: Vec<f64> = (1..n).map(|j| j as f64 / n as f64).collect();
            placement.boundaries = vec![bounds; spec.ticks];
            placement.layout = Layout::Equal(n);
        }
    }
    Ok(placement)
}

/// Checks a cluster's sizes against the simulation's limits, before
/// anything is allocated for them.
fn check_sizes(spec: &ClusterSpec) -> Result<()> {
    if spec.servers == 0 || spec.ticks == 0 || spec.key_bins == 0 {
        return Err(Error::InvalidSetting(
            "servers, ticks and key bins must be at least 1".into(),
        ));
    }
    if region_rows(&spec.model).contains(&0) {
        return Err(Error::InvalidSetting(
            "flush and split sizes must be at least 1 row".into(),
        ));
    }
    let tokens = match spec.model {
        StoreModel::Ring { num_tokens } => num_tokens,
        _ => 1,
    };
    for (name, value, max) in [
        ("servers", spec.servers, MAX_SERVERS),
        ("presplit", spec.presplit, MAX_PRESPLIT),
        ("num_tokens", tokens, MAX_TOKENS),
        ("ticks", spec.ticks, MAX_TICKS),
        ("key bins", spec.key_bins, MAX_TICKS),
    ] {
        if value > max {
            return Err(Error::InvalidSetting(format!(
                "{name} {value} is over {max}, the most the simulation takes"
            )));
        }
    }
    Ok(())
}

/// The sizes in rows a range store's model splits or flushes at (none for
/// a hashed store). A size of 0 would split a region at every write.
fn region_rows(model: &StoreModel) -> Vec<u64> {
    match *model {
        StoreModel::HBase {
            policy:
                SplitPolicy::Stepping { flush_rows, max_rows }
                | SplitPolicy::IncreasingToUpperBound { flush_rows, max_rows },
        } => vec![flush_rows, max_rows],
        StoreModel::HBase {
            policy: SplitPolicy::Constant { max_rows },
        } => vec![max_rows],
        StoreModel::Bigtable { split_rows, .. } => vec![split_rows],
        StoreModel::Ring { .. } | StoreModel::EqualPartitions => Vec::new(),
    }
}

fn hashed(
    spec: &ClusterSpec,
    writes: &[(Vec<u8>, Vec<u8>, u64)],
    tick_of: &dyn Fn(u64) -> usize,
    placement: &mut Placement,
    owner: impl Fn(u64) -> usize,
) {
    for (_, pk, ts) in writes {
        let h = hash64(pk);
        let t = tick_of(*ts);
        let bin = ((u128::from(h) * spec.key_bins as u128) >> 64) as usize;
        if let Some(c) = placement.writes.get_mut(t).and_then(|row| row.get_mut(owner(h))) {
            *c += 1;
        }
        if let Some(c) = placement.heat.get_mut(t).and_then(|row| row.get_mut(bin)) {
            *c += 1;
        }
        note_server(placement, t, bin, owner(h));
    }
}

/// Records that `server` took a write of heat cell `(tick, bin)`.
fn note_server(placement: &mut Placement, tick: usize, bin: usize, server: usize) {
    if let Some(servers) = placement.heat_servers.get_mut(tick).and_then(|row| row.get_mut(bin)) {
        if let Err(at) = servers.binary_search(&server) {
            servers.insert(at, server);
        }
    }
}

fn simulate_range(
    spec: &ClusterSpec,
    design: &KeyDesign,
    writes: &[(Vec<u8>, Vec<u8>, u64)],
    tick_of: &dyn Fn(u64) -> usize,
    placement: &mut Placement,
) -> Result<()> {
    let mut regions = vec![Region::new(Vec::new(), 0)];
    for (i, point) in presplit_points(design, spec.presplit).into_iter().enumerate() {
        regions.push(Region::new(point, (i + 1) % spec.servers));
    }
    let mut boundary_keys: Vec<Vec<Vec<u8>>> = vec![Vec::new(); spec.ticks];
    // The server each write went to, in write order, for the picture.
    let mut write_servers: Vec<Option<usize>> = Vec::with_capacity(writes.len());
    let mut current_tick = 0;
    let mut tick_total = 0u64;
    for (key, _, ts) in writes {
        let t = tick_of(*ts);
        while current_tick < t {
            end_tick(spec, &mut regions, tick_total, placement);
            boundary_keys[current_tick] = regions.iter().skip(1).map(|r| r.start.clone()).collect();
            current_tick += 1;
            tick_total = 0;
        }
        let idx = regions.partition_point(|r| r.start.as_slice() <= key.as_slice()).max(1) - 1;
        if idx + 1 == regions.len() {
            placement.writes_to_last_region += 1;
        }
        let Some(region) = regions.get_mut(idx) else {
            write_servers.push(None);
            continue;
        };
        write_servers.push(Some(region.server));
        region.keys.insert(key.clone());
        region.tick_writes += 1;
        if matches!(spec.model, StoreModel::Bigtable { .. }) {
            region.tick_keys.push(key.clone());
        }
        tick_total += 1;
        if let Some(c) = placement.writes.get_mut(t).and_then(|row| row.get_mut(region.server)) {
            *c += 1;
        }
        let server = region.server;
        let rows = region.keys.len() as u64;
        let limit = match spec.model {
            StoreModel::HBase { policy } => policy.split_size(regions.iter().filter(|r| r.server == server).count()),
            StoreModel::Bigtable { split_rows, .. } => split_rows,
            _ => u64::MAX,
        };
        if rows > limit.max(1) {
            let mid = regions
                .get(idx)
                .and_then(|r| r.keys.iter().nth(r.keys.len() / 2))
                .cloned();
            if let Some(mid) = mid {
                split_at(&mut regions, idx, mid, placement);
            }
        }
    }
    while current_tick < spec.ticks {
        end_tick(spec, &mut regions, tick_total, placement);
        boundary_keys[current_tick] = regions.iter().skip(1).map(|r| r.start.clone()).collect();
        current_tick += 1;
        tick_total = 0;
    }
    // Positions in the picture: a key's rank among every distinct key the
    // run writes. One key space for the whole picture, as Bigtable's Key
    // Visualizer cuts one set of key buckets for the whole time it shows: a
    // key keeps its height from the first column to the last, a region
    // boundary stays where the split put it, and a monotonic key draws the
    // diagonal the Key Visualizer's guide calls the sign of sequential keys.
    // (Ranking each tick's writes among the keys written *so far* instead
    // would stretch the first ticks' few keys over the whole height: a tall
    // wedge at the left edge that is an artefact of the drawing.)
    let bins = spec.key_bins;
    let mut all: Vec<&[u8]> = writes.iter().map(|(k, _, _)| k.as_slice()).collect();
    all.sort_unstable();
    all.dedup();
    let n = all.len().max(1);
    let bin_of = |key: &[u8]| (all.partition_point(|k| *k < key) * bins / n).min(bins - 1);
    for (i, (key, _, ts)) in writes.iter().enumerate() {
        let (t, bin) = (tick_of(*ts), bin_of(key));
        if let Some(c) = placement.heat.get_mut(t).and_then(|row| row.get_mut(bin)) {
            *c += 1;
        }
        if let Some(Some(server)) = write_servers.get(i) {
            note_server(placement, t, bin, *server);
        }
    }
    for (t, keys) in boundary_keys.iter().enumerate() {
        if let Some(slot) = placement.boundaries.get_mut(t) {
            *slot = keys
                .iter()
                .map(|b| all.partition_point(|k| *k < b.as_slice()) as f64 / n as f64)
                .filter(|y| *y > 0.0 && *y < 1.0)
                .collect();
        }
    }
    for (b, slot) in placement.bin_keys.iter_mut().enumerate() {
        // Ranks r with r * bins / n == b: from ceil(b n / bins) to ceil((b + 1) n / bins).
        let first = (b * n).div_ceil(bins);
        let end = ((b + 1) * n).div_ceil(bins).min(all.len());
        if let (Some(lo), Some(hi)) = (all.get(first), end.checked_sub(1).and_then(|e| all.get(e))) {
            if first < end {
                *slot = Some((lo.to_vec(), hi.to_vec()));
            }
        }
    }
    let count = regions.len();
    placement.layout = Layout::Range(
        regions
            .iter()
            .enumerate()
            .map(|(i, r)| RegionInfo {
                start: r.start.clone(),
                end: if i + 1 < count {
                    regions.get(i + 1).map(|n| n.start.clone())
                } else {
                    None
                },
                server: r.server,
                rows: r.keys.len(),
            })
            .collect(),
    );
    Ok(())
}

/// Splits region `idx` at `mid`: keys below stay, `mid` and above go to a
/// daughter on the same server. Refused when one side would be empty.
fn split_at(regions: &mut Vec<Region>, idx: usize, mid: Vec<u8>, placement: &mut Placement) {
    let Some(region) = regions.get_mut(idx) else { return };
    if mid <= region.start || region.keys.first().is_none_or(|first| *first >= mid) {
        return;
    }
    let upper = region.keys.split_off(&mid);
    let mut daughter = Region::new(mid.clone(), region.server);
    daughter.keys = upper;
    let (low, high): (Vec<Vec<u8>>, Vec<Vec<u8>>) = region.tick_keys.drain(..).partition(|k| *k < mid);
    daughter.tick_writes = high.len() as u64;
    region.tick_writes = region.tick_writes.saturating_sub(daughter.tick_writes);
    region.tick_keys = low;
    daughter.tick_keys = high;
    regions.insert(idx + 1, daughter);
    placement.splits += 1;
}

/// What happens at the end of a tick: the HBase balancer, or the Bigtable
/// load split and placement.
fn end_tick(spec: &ClusterSpec, regions: &mut Vec<Region>, tick_total: u64, placement: &mut Placement) {
    match spec.model {
        StoreModel::HBase { .. } => loop {
            let mut counts = vec![0usize; spec.servers];
            for r in regions.iter() {
                if let Some(c) = counts.get_mut(r.server) {
                    *c += 1;
                }
            }
            let (Some(most), Some(least)) = (
                (0..spec.servers).max_by_key(|&s| (counts[s], std::cmp::Reverse(s))),
                (0..spec.servers).min_by_key(|&s| (counts[s], s)),
            ) else {
                break;
            };
            if counts[most] <= counts[least] + 1 {
                break;
            }
            if let Some(r) = regions.iter_mut().find(|r| r.server == most) {
                r.server = least;
            }
        },
        StoreModel::Bigtable { load_share, .. } => {
            let threshold = (load_share * tick_total as f64).max(1.0);
            let mut i = 0;
            while i < regions.len() {
                let hot = regions.get(i).filter(|r| r.tick_writes as f64 > threshold).map(|r| {
                    let mut keys = r.tick_keys.clone();
                    keys.sort_unstable();
                    keys.dedup();
                    keys.get(keys.len() / 2).cloned()
                });
                if let Some(Some(mid)) = hot {
                    let before = regions.len();
                    split_at(regions, i, mid, placement);
                    if regions.len() > before {
                        continue; // the lower half may still be hot
                    }
                }
                i += 1;
            }
            // Place by load: hottest tablet first, onto the least loaded node.
            let mut order: Vec<usize> = (0..regions.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(regions.get(i).map_or(0, |r| r.tick_writes)));
            let mut load = vec![(0u64, 0usize); spec.servers];
            for i in order {
                let Some(r) = regions.get_mut(i) else { continue };
                let node = (0..spec.servers).min_by_key(|&s| (load[s], s)).unwrap_or(0);
                load[node].0 += r.tick_writes;
                load[node].1 += 1;
                r.server = node;
            }
        }
        _ => {}
    }
    for r in regions.iter_mut() {
        r.tick_writes = 0;
        r.tick_keys.clear();
    }
}

/// Checks the layout of a range store: regions start at the empty key, each
/// ends where the next begins (contiguous, no overlap, no gap), the last runs
/// to the end, and every key in `keys` falls in exactly one region whose row
/// count agrees. Returns a description of the first violation.
pub fn check_range_layout(layout: &Layout, keys: &BTreeSet<Vec<u8>>) -> std::result::Result<(), String> {
    let Layout::Range(regions) = layout else {
        return Err("not a range layout".into());
    };
    let first = regions.first().ok_or("no regions")?;
    if !first.start.is_empty() {
        return Err("the first region does not start at the empty key".into());
    }
    for pair in regions.windows(2) {
        if let [a, b] = pair {
            if a.end.as_ref() != Some(&b.start) {
                return Err(format!("gap or overlap between regions at {:?}", b.start));
            }
            if a.start >= b.start {
                return Err("regions out of order".into());
            }
        }
    }
    if regions.last().is_some_and(|r| r.end.is_some()) {
        return Err("the last region does not run to the end".into());
    }
    let mut counts = vec![0usize; regions.len()];
    for key in keys {
        let holders: Vec<usize> = regions
            .iter()
            .enumerate()
            .filter(|(_, r)| r.start <= *key && r.end.as_ref().is_none_or(|e| key < e))
            .map(|(i, _)| i)
            .collect();
        match holders.as_slice() {
            [i] => counts[*i] += 1,
            _ => return Err(format!("key {key:?} is held by {} regions", holders.len())),
        }
    }
    for (r, c) in regions.iter().zip(&counts) {
        if r.rows != *c {
            return Err(format!("region at {:?} claims {} rows, holds {c}", r.start, r.rows));
        }
    }
    Ok(())
}

/// The exclusive end of the key range that starts with `prefix` (re-exported
/// for planners and tests).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    prefix_successor(prefix)
}
