//! The query planner: what a read costs under a key design.
//!
//! A wide-column store finds rows only through the key. A read can be served
//! by one contiguous slice of the key space only if it fixes every part of
//! the key before the one it ranges over (equality first, range last). So
//! the planner walks the key's parts from the left:
//!
//! * a constant or separator is fixed by definition;
//! * a part whose field the read names exactly is fixed (its bytes join the
//!   prefix);
//! * a salt or hash prefix of a field the read does not name cannot be
//!   computed, so the read must try every bucket: a **fan-out** of one scan
//!   per bucket (a round-robin salt always fans out: nobody can compute it);
//! * a timestamp the read ranges over ends the prefix with a **range**;
//! * anything else ends the walk: what follows is unconstrained, and rows in
//!   the slice that do not match are read and thrown away.
//!
//! If nothing that depends on the read narrowed the key space, the read is a
//! **full scan**, and the planner proposes the layout that would serve it (a
//! layout per read path). For hashed stores the partition key must be fully
//! known (or enumerable, as a salt is); otherwise the read is a scatter-gather
//! over every partition on every node.
//!
//! Then [`RealStore`] runs each plan on a real cellar store holding the
//! generated rows, counts rows read (from the engine's [`cellar_engine::Trace`])
//! and returned, and checks both against a brute-force filter of the data.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use cellar_engine::{RowRange, Store, StoreOptions, WriteBatch};

use crate::encoding::{hour_bucket, prefix_successor, to_string_binary, HOUR_MS};
use crate::error::Result;
use crate::experiment::Run;
use crate::key::{FieldEncoding, KeyDesign, Part, TimeForm};
use crate::placement::Layout;
use crate::workload::{Record, Value, WorkloadKind};

/// Most scans a fan-out may issue before the planner calls it a full scan.
pub const MAX_FAN_OUT: usize = 256;

/// What a read says about time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimePredicate {
    /// Any time.
    Any,
    /// Exactly this millisecond.
    At(u64),
    /// From the first millisecond (inclusive) to the second (exclusive).
    Between(u64, u64),
}

/// A typical read, in the terms of the workload's fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// What a person would call it.
    pub name: String,
    /// Fields the read matches exactly.
    pub equals: Vec<(String, Value)>,
    /// The time the read wants.
    pub time: TimePredicate,
    /// Newest rows first (with `limit`: the latest N).
    pub newest_first: bool,
    /// At most this many rows.
    pub limit: Option<usize>,
}

impl Query {
    /// True if a record with these field values answers the read.
    pub fn matches(&self, get: impl Fn(&str) -> Option<Value>) -> bool {
        let time_ok = match (self.time, get("ts")) {
            (TimePredicate::Any, _) => true,
            (TimePredicate::At(t), Some(Value::Int(ts))) => ts == t as i64,
            (TimePredicate::Between(a, b), Some(Value::Int(ts))) => (a as i64..b as i64).contains(&ts),
            _ => false,
        };
        time_ok && self.equals.iter().all(|(f, v)| get(f).as_ref() == Some(v))
    }

    fn value_of(&self, field: &str) -> Option<&Value> {
        self.equals.iter().find(|(f, _)| f == field).map(|(_, v)| v)
    }
}

/// The shape of a plan, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    /// The whole key is known: one row (or one per bucket if fanned out).
    PointGet,
    /// One contiguous slice.
    RangeScan,
    /// One slice per salt or hash bucket (or per enumerated partition).
    FanOut,
    /// Every row of the table.
    FullScan,
}

/// One scan of the key space, `[from, to)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanRange {
    /// First key (inclusive).
    pub from: Vec<u8>,
    /// End key (exclusive); `None` = to the end of the table.
    pub to: Option<Vec<u8>>,
    /// Stop after this many rows (pushed down only when every row of the
    /// range matches and rows come in the wanted order).
    pub limit: Option<usize>,
}

impl ScanRange {
    /// True if `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.from.as_slice() && self.to.as_deref().is_none_or(|t| key < t)
    }
}

/// How a read will be served.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The read.
    pub query: Query,
    /// Point get, range scan, fan-out or full scan.
    pub kind: PlanKind,
    /// The parts the read fixes, in key syntax.
    pub fixed: Vec<String>,
    /// The part a range is taken on, if any.
    pub range_on: Option<String>,
    /// The parts that fan out, and the number of scans they make.
    pub fan_out: Option<(String, usize)>,
    /// The scans.
    pub ranges: Vec<ScanRange>,
    /// True when every row in the ranges answers the read (no filter needed).
    pub exact: bool,
    /// True when the ranges yield rows newest first.
    pub newest_first_order: bool,
    /// Hashed stores: whether the partition key is known, and the partition
    /// keys (prefixes) the read visits.
    pub partitions: Option<Vec<Vec<u8>>>,
    /// For a full scan: a key layout that would serve this read.
    pub serving_layout: Option<KeyDesign>,
    /// A sentence about the plan.
    pub note: String,
}

/// The workload's typical reads: one row; one entity over a time range; the
/// latest rows of an entity (the 20 latest orders for customer 42); everything
/// in one minute; and for orders, all orders of a day across customers.
pub fn typical_queries(kind: WorkloadKind, records: &[Record]) -> Vec<Query> {
    let (Some(first), Some(last)) = (records.first(), records.last()) else {
        return Vec::new();
    };
    let mid = first.ts_ms + (last.ts_ms - first.ts_ms) / 2;
    let quarter = ((last.ts_ms - first.ts_ms) / 8).max(1);
    let (entity, latest, noun): (Vec<(String, Value)>, usize, &str) = match kind {
        WorkloadKind::Orders => (vec![("customer".into(), Value::Int(42))], 20, "orders"),
        WorkloadKind::TimeSeries => (
            vec![
                ("device".into(), Value::Int(7)),
                ("metric".into(), Value::Text("cpu".into())),
            ],
            10,
            "readings",
        ),
        WorkloadKind::ZipfUsers => (vec![("user".into(), Value::Int(1))], 10, "events"),
        WorkloadKind::Tenants => (vec![("tenant".into(), Value::Int(1))], 10, "orders"),
    };
    let who = entity
        .iter()
        .map(|(f, v)| format!("{f} {}", v.to_string().trim_matches('"')))
        .collect::<Vec<_>>()
        .join(", ");
    let pick = records.get(records.len() / 2).unwrap_or(first);
    let mut equals: Vec<(String, Value)> = pick.fields.iter().map(|(f, v)| (f.to_string(), v.clone())).collect();
    equals.retain(|(f, _)| f != "ts");
    let minute = mid / 60_000 * 60_000;
    let mut queries = vec![
        Query {
            name: format!(
                "one row ({})",
                equals
                    .iter()
                    .map(|(f, v)| format!("{f}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            equals,
            time: TimePredicate::At(pick.ts_ms),
            newest_first: false,
            limit: None,
        },
        Query {
            name: format!("{who} over a time range ({} minutes)", (2 * quarter + 30_000) / 60_000),
            equals: entity.clone(),
            time: TimePredicate::Between(mid - quarter, mid + quarter),
            newest_first: false,
            limit: None,
        },
        Query {
            name: format!("the {latest} latest {noun} for {who}"),
            equals: entity,
            time: TimePredicate::Any,
            newest_first: true,
            limit: Some(latest),
        },
        Query {
            name: format!("everything in one minute ({})", clock(minute)),
            equals: Vec::new(),
            time: TimePredicate::Between(minute, minute + 60_000),
            newest_first: false,
            limit: None,
        },
    ];
    if kind == WorkloadKind::Orders {
        let day = first.ts_ms / (24 * HOUR_MS) * (24 * HOUR_MS);
        queries.push(Query {
            name: format!("all orders on a given day across customers ({})", &clock(day)[..10]),
            equals: Vec::new(),
            time: TimePredicate::Between(day, day + 24 * HOUR_MS),
            newest_first: false,
            limit: None,
        });
    }
    queries
}

/// `YYYY-MM-DD HH:MM` (UTC) of a millisecond timestamp.
pub fn clock(ts: u64) -> String {
    let h = String::from_utf8_lossy(&hour_bucket(ts)).into_owned();
    let minutes = ts / 60_000 % 60;
    format!("{}-{}-{} {}:{minutes:02}", &h[0..4], &h[4..6], &h[6..8], &h[8..10])
}

/// The state of the walk over the key's parts.
struct Walk {
    prefixes: Vec<Vec<u8>>,
    fixed: Vec<String>,
    fan: Vec<String>,
    narrowed: bool,
    consumed: BTreeSet<String>,
    time_consumed: bool,
    ambiguous: bool,
}

impl Walk {
    fn push(&mut self, bytes: &[u8]) {
        for p in &mut self.prefixes {
            p.extend_from_slice(bytes);
        }
    }

    /// Multiplies the prefixes by the bucket values; false if too many.
    fn fan_out(&mut self, values: &[Vec<u8>], part: &Part) -> bool {
        if self.prefixes.len() * values.len() > MAX_FAN_OUT {
            return false;
        }
        self.prefixes = self
            .prefixes
            .iter()
            .flat_map(|p| values.iter().map(move |v| [p.as_slice(), v].concat()))
            .collect();
        self.fan.push(part.to_string());
        true
    }
}

/// Plans a read under a key design. `hashed` says the store hashes the
/// partition key (Cassandra, DynamoDB) instead of keeping the whole key sorted.
pub fn plan(design: &KeyDesign, query: &Query, hashed: bool, id_field: &str) -> Result<Plan> {
    let mut w = Walk {
        prefixes: vec![Vec::new()],
        fixed: Vec::new(),
        fan: Vec::new(),
        narrowed: false,
        consumed: BTreeSet::new(),
        time_consumed: query.time == TimePredicate::Any,
        ambiguous: false,
    };
    let partition_len = if hashed { design.partition_len() } else { 0 };
    let mut partitions: Option<Vec<Vec<u8>>> = None;
    let mut range: Option<(Vec<u8>, Vec<u8>, String)> = None; // (vmin, vmax) encodings and the part
    let mut stopped_at: Option<usize> = None;
    let mut partition_unknown = false;
    for (i, part) in design.parts.iter().enumerate() {
        if hashed && i == partition_len {
            partitions = Some(w.prefixes.clone());
        }
        let in_partition = hashed && i < partition_len;
        let last_pushed_text = matches!(
            part,
            Part::Field {
                encoding: FieldEncoding::Text,
                ..
            }
        );
        let ok = match part {
            Part::Constant(b) | Part::Separator(b) => {
                w.push(b);
                true
            }
            Part::Field { name, encoding } => {
                let value = query.value_of(name).cloned().or(match (name.as_str(), query.time) {
                    ("ts", TimePredicate::At(t)) => Some(Value::Int(t as i64)),
                    _ => None,
                });
                match value {
                    Some(v) => {
                        w.push(&Part::encode_field(&v, *encoding)?);
                        w.fixed.push(part.to_string());
                        w.narrowed = true;
                        if name == "ts" {
                            w.time_consumed = true;
                        } else {
                            w.consumed.insert(name.clone());
                        }
                        true
                    }
                    None => false,
                }
            }
            Part::Timestamp(form) => match query.time {
                TimePredicate::At(t) => {
                    w.push(&form.encode(t)?);
                    w.fixed.push(part.to_string());
                    w.narrowed = true;
                    w.time_consumed = *form != TimeForm::HourBucket;
                    true
                }
                TimePredicate::Between(a, b) if b > a => {
                    if in_partition {
                        // A hashed partition key cannot be ranged over, only
                        // enumerated: one partition per hour bucket.
                        let hours: Vec<Vec<u8>> = if *form == TimeForm::HourBucket {
                            (a / HOUR_MS..=(b - 1) / HOUR_MS)
                                .map(|h| hour_bucket(h * HOUR_MS))
                                .collect()
                        } else {
                            Vec::new()
                        };
                        if hours.is_empty() || !w.fan_out(&hours, part) {
                            false
                        } else {
                            w.narrowed = true;
                            true
                        }
                    } else {
                        let (lo, hi) = if form.newest_first() { (b - 1, a) } else { (a, b - 1) };
                        range = Some((form.encode(lo)?, form.encode(hi)?, part.to_string()));
                        w.narrowed = true;
                        w.time_consumed = *form != TimeForm::HourBucket;
                        stopped_at = Some(i);
                        break;
                    }
                }
                _ => false,
            },
            Part::Salt { field, buckets } => match query.value_of(field) {
                Some(v) => {
                    w.push(&Part::bucket_bytes(*buckets, Part::salt_of(v, *buckets)));
                    w.fixed.push(part.to_string());
                    w.narrowed = true;
                    true
                }
                None => {
                    let values: Vec<Vec<u8>> = (0..*buckets).map(|b| Part::bucket_bytes(*buckets, b)).collect();
                    w.fan_out(&values, part)
                }
            },
            Part::RoundRobin { buckets } => {
                let values: Vec<Vec<u8>> = (0..*buckets).map(|b| Part::bucket_bytes(*buckets, b)).collect();
                w.fan_out(&values, part)
            }
            Part::HashPrefix { field, digits } => match query.value_of(field) {
                Some(v) => {
                    w.push(&Part::hash_prefix_of(v, *digits));
                    w.fixed.push(part.to_string());
                    w.narrowed = true;
                    true
                }
                None => {
                    let space = 16usize.checked_pow(u32::from(*digits)).unwrap_or(usize::MAX);
                    if space > MAX_FAN_OUT {
                        false
                    } else {
                        let values: Vec<Vec<u8>> = (0..space)
                            .map(|h| format!("{h:0w$x}", w = usize::from(*digits)).into_bytes())
                            .collect();
                        w.fan_out(&values, part)
                    }
                }
            },
        };
        if !ok {
            if in_partition {
                partition_unknown = true;
            }
            stopped_at = Some(i);
            break;
        }
        // A text field must be closed by a literal, or "4" would also match "42".
        if last_pushed_text && !design.parts.get(i + 1).is_some_and(Part::is_literal) {
            w.ambiguous = true;
        }
    }
    if hashed && partitions.is_none() && !partition_unknown {
        partitions = Some(w.prefixes.clone());
    }
    let next_part = stopped_at.and_then(|i| design.parts.get(i));
    let newest_first_order = matches!(next_part, Some(Part::Timestamp(f)) if f.newest_first())
        || (stopped_at.is_none() && w.prefixes.len() == 1);
    // A point read names the whole key, so a text part cannot run into the
    // next one there.
    let mut exact = (!w.ambiguous || stopped_at.is_none())
        && w.time_consumed
        && query.equals.iter().all(|(f, _)| w.consumed.contains(f));
    let full = !w.narrowed || partition_unknown;
    let mut ranges: Vec<ScanRange> = if full {
        exact = query.equals.is_empty() && query.time == TimePredicate::Any;
        vec![ScanRange {
            from: Vec::new(),
            to: None,
            limit: None,
        }]
    } else if let Some((lo, hi, _)) = &range {
        w.prefixes
            .iter()
            .map(|p| ScanRange {
                from: [p.as_slice(), lo].concat(),
                to: prefix_successor(&[p.as_slice(), hi].concat()),
                limit: None,
            })
            .collect()
    } else if stopped_at.is_none() {
        w.prefixes
            .iter()
            .map(|p| ScanRange {
                from: p.clone(),
                to: Some([p.as_slice(), &[0]].concat()),
                limit: None,
            })
            .collect()
    } else {
        w.prefixes
            .iter()
            .map(|p| ScanRange {
                from: p.clone(),
                to: prefix_successor(p),
                limit: None,
            })
            .collect()
    };
    let push_limit = exact && !full && (newest_first_order || !query.newest_first);
    if let (Some(n), true) = (query.limit, push_limit) {
        for r in &mut ranges {
            r.limit = Some(n);
        }
    }
    let kind = if full {
        PlanKind::FullScan
    } else if ranges.len() > 1 {
        PlanKind::FanOut
    } else if stopped_at.is_none() {
        PlanKind::PointGet
    } else {
        PlanKind::RangeScan
    };
    let fan_out = (!w.fan.is_empty() && !full).then(|| (w.fan.join(" × "), ranges.len()));
    let serving_layout = full.then(|| serving_layout(query, id_field));
    let first_value_part = design.parts.iter().find(|p| !p.is_literal());
    let mut note = match kind {
        PlanKind::PointGet => "the read fixes every part: a point read".to_string(),
        PlanKind::RangeScan => "one contiguous slice of the key space".to_string(),
        PlanKind::FanOut => format!(
            "{} scans, one per bucket of {} (the read cannot compute it)",
            ranges.len(),
            w.fan.join(" × ")
        ),
        PlanKind::FullScan if partition_unknown => format!(
            "the partition key is not known ({} is not fixed): scatter-gather over every partition",
            next_part.map_or("a part".into(), |p| p.to_string())
        ),
        PlanKind::FullScan => format!(
            "the read fixes no leading part (the key starts with {}): every row is read",
            first_value_part.map_or("nothing".into(), |p| p.to_string())
        ),
    };
    if query.newest_first && !full {
        if push_limit {
            let _ = write!(
                note,
                "; rows come newest first, so the scan stops after {}",
                query.limit.unwrap_or(0)
            );
        } else if matches!(next_part, Some(Part::Timestamp(f)) if !f.newest_first()) {
            note.push_str("; rows come oldest first (no reverse scan), so the slice is read to its end for the latest");
        }
    }
    if !exact && !full {
        let unchecked: Vec<&str> = query
            .equals
            .iter()
            .map(|(f, _)| f.as_str())
            .filter(|f| !w.consumed.contains(*f))
            .collect();
        if unchecked.is_empty() {
            note.push_str("; rows in the slice that do not match are read and dropped");
        } else {
            let _ = write!(
                note,
                "; {} is not in the prefix the read fixes, so rows are read and dropped unless they match",
                unchecked.join(", ")
            );
        }
    }
    Ok(Plan {
        query: query.clone(),
        kind,
        fixed: w.fixed,
        range_on: range.map(|(_, _, p)| p),
        fan_out,
        ranges,
        exact,
        newest_first_order,
        partitions: if hashed && !partition_unknown { partitions } else { None },
        serving_layout,
        note,
    })
}

/// A key layout that serves a read as one range scan: the fields it matches
/// exactly first (zero-padded numbers, text closed by a separator), then the
/// time in the order it wants, then the id that makes rows unique. A read with
/// no entity gets an hour bucket first: a layout of its own, written beside
/// the main one (a layout per read path), whose writes crowd into the current
/// hour unless it is salted.
pub fn serving_layout(query: &Query, id_field: &str) -> KeyDesign {
    let mut b = KeyDesign::builder();
    for (f, v) in &query.equals {
        b = match v {
            Value::Int(_) => b.pad(f, 12),
            Value::Text(_) => b.field(f),
        }
        .sep("#");
    }
    if query.equals.is_empty() {
        b = b.timestamp(TimeForm::HourBucket).sep("#");
    }
    b = b
        .timestamp(if query.newest_first {
            TimeForm::Reversed19
        } else {
            TimeForm::Millis13
        })
        .sep("#");
    if query.value_of(id_field).is_none() {
        b = b.field(id_field);
    }
    let mut key = b.build();
    if matches!(key.parts.last(), Some(Part::Separator(_))) {
        key.parts.pop();
    }
    key
}

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

/// A plan and its execution as the lines the command prints.
pub fn describe(plan: &Plan, exec: Option<&Execution>, hashed: bool) -> Vec<String> {
    let mut out = vec![format!("read: {}", plan.query.name)];
    let shape = match plan.kind {
        PlanKind::PointGet => "point read".to_string(),
        PlanKind::RangeScan => "one range scan".to_string(),
        PlanKind::FanOut => format!("fan-out of {} scans", plan.ranges.len()),
        PlanKind::FullScan => "FULL SCAN".to_string(),
    };
    let limit = plan.ranges.first().and_then(|r| r.limit);
    out.push(format!(
        "  plan: {shape}{}: {}",
        limit.map(|n| format!(", limit {n}")).unwrap_or_default(),
        plan.note
    ));
    if !plan.fixed.is_empty() || plan.range_on.is_some() {
        out.push(format!(
            "  fixes: {}{}",
            if plan.fixed.is_empty() {
                "nothing".into()
            } else {
                plan.fixed.join(" ")
            },
            plan.range_on
                .as_ref()
                .map(|p| format!("; range on {p}"))
                .unwrap_or_default()
        ));
    }
    if let Some((parts, n)) = &plan.fan_out {
        out.push(format!("  fan-out: {n} scans over {parts}"));
    }
    if hashed {
        out.push(match &plan.partitions {
            Some(p) if p.len() == 1 => "  partition key: known (1 partition)".to_string(),
            Some(p) => format!("  partition key: enumerated ({} partitions)", p.len()),
            None => "  partition key: not known".to_string(),
        });
    }
    for r in plan.ranges.iter().take(3) {
        out.push(format!(
            "  scan [{}, {}){}",
            to_string_binary(&r.from),
            r.to.as_deref().map_or("end".into(), to_string_binary),
            r.limit.map(|n| format!(" limit {n}")).unwrap_or_default()
        ));
    }
    if plan.ranges.len() > 3 {
        out.push(format!("  ... and {} more scans", plan.ranges.len() - 3));
    }
    if let Some(layout) = &plan.serving_layout {
        out.push(format!("  a layout that serves it as one range scan: {layout}"));
    }
    if let Some(e) = exec {
        out.push(format!(
            "  ran on cellar: {} {}{} on {} server{} touched, {} rows read, {} returned; brute force: {} {}",
            e.regions,
            if hashed { "partition" } else { "region" },
            if e.regions == 1 { "" } else { "s" },
            e.servers,
            if e.servers == 1 { "" } else { "s" },
            e.rows_read,
            e.rows_returned,
            e.expected.len(),
            if e.agrees() { "(agrees)" } else { "(DISAGREES)" }
        ));
    }
    out
}
