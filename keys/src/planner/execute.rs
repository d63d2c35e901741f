//! Execution: each plan run on a real cellar store holding the generated rows,
//! rows read counted from the engine's trace, and the answer checked against
//! a brute-force filter of the data.
//!
//! The store lives in a temporary folder (`tempfile`), which is why this
//! library, and not only its tests, depends on `tempfile`.

use std::collections::{BTreeMap, BTreeSet};

use cellar_engine::{RowRange, Store, StoreOptions, WriteBatch};

use crate::error::Result;
use crate::experiment::Run;
use crate::key::KeyDesign;
use crate::placement::Layout;
use crate::workload::{Record, Value};

use super::plan::{plan, Plan};
use super::query::{typical_queries, Query};

/// The family the real store keeps the rows in.
pub const FAMILY: &str = "rows";

/// A real cellar store (in a temporary folder) holding a run's rows, one cell
/// per row (column `r`, the record as `name=value` pairs), so that the
/// engine's "entries examined" counts rows read.
pub struct RealStore {
    store: Store,
    _dir: tempfile::TempDir,
    /// The rows as the store holds them: last write to a key wins.
    pub rows: BTreeMap<Vec<u8>, Record>,
    layout: Layout,
    hashed: bool,
    design: KeyDesign,
}

/// What running a plan did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Execution {
    /// Scans issued.
    pub scans: usize,
    /// Regions (range stores) or partitions (hashed stores) touched.
    pub regions: usize,
    /// Distinct servers (nodes) touched.
    pub servers: usize,
    /// Rows read: entries the engine examined, summed over the scans' traces.
    pub rows_read: u64,
    /// Rows the read returned, after filtering and the limit.
    pub rows_returned: usize,
    /// Keys returned, in returned order.
    pub returned: Vec<Vec<u8>>,
    /// Rows a brute-force filter of the data says the read should return.
    pub expected: Vec<Vec<u8>>,
    /// Matching rows that lie in none of the plan's ranges (must be 0).
    pub outside_ranges: usize,
}

impl Execution {
    /// True when the plan returned exactly the brute-force answer and every
    /// matching row lay inside its ranges.
    pub fn agrees(&self) -> bool {
        self.returned == self.expected && self.outside_ranges == 0
    }
}

fn decode(value: &[u8]) -> Vec<(String, Value)> {
    String::from_utf8_lossy(value)
        .split(';')
        .filter_map(|pair| {
            let (name, v) = pair.split_once('=')?;
            let value = match v.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                Some(text) => Value::Text(text.to_string()),
                None => Value::Int(v.parse().ok()?),
            };
            Some((name.to_string(), value))
        })
        .collect()
}

fn order_newest_first(rows: &mut [(Vec<u8>, u64)]) {
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

impl RealStore {
    /// Opens a store in a temporary folder and writes the run's rows to it,
    /// in write batches, then flushes so the reads come from table files.
    pub fn load(run: &Run) -> Result<RealStore> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(dir.path(), StoreOptions::default().family(FAMILY))?;
        let mut rows = BTreeMap::new();
        let mut batch = WriteBatch::new();
        for (key, record) in run.keys.iter().zip(&run.records) {
            batch.put(FAMILY, key, "r", record.encode());
            rows.insert(key.clone(), record.clone());
            if batch.len() >= 1000 {
                store.write(&batch)?;
                batch = WriteBatch::new();
            }
        }
        if !batch.is_empty() {
            store.write(&batch)?;
        }
        store.flush()?;
        Ok(RealStore {
            store,
            _dir: dir,
            rows,
            layout: run.placement.layout.clone(),
            hashed: !run.experiment.cluster.model.is_range(),
            design: run.experiment.key.clone(),
        })
    }

    /// Runs a plan: every scan on the real store, then the filter, the order
    /// and the limit; and the brute-force answer beside it.
    pub fn execute(&self, plan: &Plan) -> Result<Execution> {
        let q = &plan.query;
        let mut rows_read = 0;
        let mut found: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for r in &plan.ranges {
            let mut range = match &r.to {
                Some(to) => RowRange::between(&r.from, to),
                None => RowRange {
                    from: Some(r.from.clone().into()),
                    ..RowRange::all()
                },
            };
            if let Some(n) = r.limit {
                range = range.limit(n);
            }
            let (rows, trace) = self.store.scan_traced(FAMILY, &range)?;
            rows_read += trace.entries_examined();
            for row in rows {
                let fields = row.cells.first().map(|c| decode(&c.value)).unwrap_or_default();
                let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
                if q.matches(get) {
                    let ts = fields
                        .iter()
                        .find_map(|(n, v)| match (n.as_str(), v) {
                            ("ts", Value::Int(t)) => Some(*t as u64),
                            _ => None,
                        })
                        .unwrap_or(0);
                    found.insert(row.key.to_vec(), ts);
                }
            }
        }
        let returned = finish(found.into_iter().collect(), q);
        let matching: Vec<(Vec<u8>, u64)> = self
            .rows
            .iter()
            .filter(|(_, rec)| q.matches(|n| rec.get(n)))
            .map(|(k, rec)| (k.clone(), rec.ts_ms))
            .collect();
        let outside_ranges = matching
            .iter()
            .filter(|(k, _)| !plan.ranges.iter().any(|r| r.contains(k)))
            .count();
        let expected = finish(matching, q);
        let (regions, servers) = self.touched(plan);
        Ok(Execution {
            scans: plan.ranges.len(),
            regions,
            servers,
            rows_read,
            rows_returned: returned.len(),
            returned,
            expected,
            outside_ranges,
        })
    }

    /// Regions (or partitions) and servers a plan touches.
    fn touched(&self, plan: &Plan) -> (usize, usize) {
        if self.hashed {
            return match &plan.partitions {
                Some(pks) => {
                    let keys: BTreeSet<&Vec<u8>> = pks.iter().collect();
                    let nodes: BTreeSet<usize> = keys.iter().map(|k| self.layout.owner(k)).collect();
                    (keys.len(), nodes.len())
                }
                None => {
                    let mut pks = BTreeSet::new();
                    let mut nodes = BTreeSet::new();
                    for (key, rec) in &self.rows {
                        let pk = self.design.partition_key(rec, 0).unwrap_or_else(|_| key.clone());
                        nodes.insert(self.layout.owner(&pk));
                        pks.insert(pk);
                    }
                    (pks.len(), nodes.len())
                }
            };
        }
        let mut regions = BTreeSet::new();
        let mut servers = BTreeSet::new();
        for r in &plan.ranges {
            let (rs, ss) = self.layout.regions_overlapping(&r.from, r.to.as_deref());
            regions.extend(rs);
            servers.extend(ss);
        }
        (regions.len(), servers.len())
    }
}

fn finish(mut rows: Vec<(Vec<u8>, u64)>, q: &Query) -> Vec<Vec<u8>> {
    if q.newest_first {
        order_newest_first(&mut rows);
    }
    if let Some(n) = q.limit {
        rows.truncate(n);
    }
    rows.into_iter().map(|(k, _)| k).collect()
}

/// Plans and runs every typical read of a run on a real store.
pub fn plan_and_run(run: &Run) -> Result<Vec<(Plan, Execution)>> {
    let store = RealStore::load(run)?;
    let kind = run.experiment.workload.kind;
    let hashed = !run.experiment.cluster.model.is_range();
    typical_queries(kind, &run.records)
        .iter()
        .map(|q| {
            let p = plan(&run.experiment.key, q, hashed, kind.id_field())?;
            let e = store.execute(&p)?;
            Ok((p, e))
        })
        .collect()
}
