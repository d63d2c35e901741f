//! One try of a key: generate the workload, render every key, simulate where
//! the writes land, and judge the spread.

use std::collections::HashMap;

use crate::encoding::to_string_binary;
use crate::error::Result;
use crate::key::KeyDesign;
use crate::placement::{simulate, ClusterSpec, Placement};
use crate::verdict::Verdict;
use crate::workload::{Record, WorkloadSpec};

/// A key, a workload and a cluster.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The key design.
    pub key: KeyDesign,
    /// The workload.
    pub workload: WorkloadSpec,
    /// The simulated cluster.
    pub cluster: ClusterSpec,
}

/// What a key costs in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySizes {
    /// Shortest key.
    pub min: usize,
    /// Longest key.
    pub max: usize,
    /// Mean over all writes.
    pub mean: f64,
    /// Sum over all writes: the key is stored with every cell, so this is
    /// a floor on what the keys alone cost.
    pub total: u64,
}

/// The outcome of an [`Experiment`].
#[derive(Clone, Debug)]
pub struct Run {
    /// The experiment.
    pub experiment: Experiment,
    /// The records written, in order.
    pub records: Vec<Record>,
    /// Their row keys, in the same order.
    pub keys: Vec<Vec<u8>>,
    /// Where they landed.
    pub placement: Placement,
    /// The spread.
    pub verdict: Verdict,
    /// The key sizes.
    pub sizes: KeySizes,
    /// The first collision, if any: (earlier write, later write) with the same key.
    pub first_collision: Option<(usize, usize)>,
}

impl Experiment {
    /// Puts the three together.
    pub fn new(key: KeyDesign, workload: WorkloadSpec, cluster: ClusterSpec) -> Experiment {
        Experiment { key, workload, cluster }
    }

    /// Generates, renders, simulates, judges.
    pub fn run(&self) -> Result<Run> {
        self.key.check(self.workload.kind.name(), self.workload.kind.fields())?;
        self.workload.check()?;
        let records = self.workload.generate();
        let mut keys = Vec::with_capacity(records.len());
        let mut writes = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            let key = self.key.render(r, i as u64)?;
            let placement_key = if self.cluster.model.is_range() {
                key.clone()
            } else {
                self.key.partition_key(r, i as u64)?
            };
            writes.push((key.clone(), placement_key, r.ts_ms));
            keys.push(key);
        }
        let placement = simulate(&self.cluster, &self.key, &writes)?;
        let mut verdict = Verdict::of(&placement);
        let (collisions, first_collision) = collisions(&keys);
        verdict.collisions = collisions;
        let total: u64 = keys.iter().map(|k| k.len() as u64).sum();
        let sizes = KeySizes {
            min: keys.iter().map(Vec::len).min().unwrap_or(0),
            max: keys.iter().map(Vec::len).max().unwrap_or(0),
            mean: total as f64 / keys.len().max(1) as f64,
            total,
        };
        Ok(Run {
            experiment: self.clone(),
            records,
            keys,
            placement,
            verdict,
            sizes,
            first_collision,
        })
    }
}

/// How many keys repeat an earlier one, and the first such pair.
fn collisions(keys: &[Vec<u8>]) -> (u64, Option<(usize, usize)>) {
    let mut first_seen: HashMap<&[u8], usize> = HashMap::with_capacity(keys.len());
    let mut count = 0;
    let mut first = None;
    for (i, key) in keys.iter().enumerate() {
        if let Some(&earlier) = first_seen.get(key.as_slice()) {
            count += 1;
            first.get_or_insert((earlier, i));
        } else {
            first_seen.insert(key, i);
        }
    }
    (count, first)
}

impl Run {
    /// The first `n` keys as HBase prints them.
    pub fn sample_keys(&self, n: usize) -> Vec<String> {
        self.keys.iter().take(n).map(|k| to_string_binary(k)).collect()
    }

    /// Distinct row keys: later writes to the same key overwrite earlier ones.
    pub fn distinct_rows(&self) -> usize {
        let mut k: Vec<&Vec<u8>> = self.keys.iter().collect();
        k.sort_unstable();
        k.dedup();
        k.len()
    }
}
