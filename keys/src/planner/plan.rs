//! Planning: the walk over the key's parts, left to right, that turns a read
//! into scans of the key space (see the module documentation of
//! [`planner`](super)).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::encoding::prefix_successor;
use crate::error::Result;
use crate::key::{FieldEncoding, KeyDesign, Part, TimeForm};
use crate::workload::Value;

use super::query::{Query, TimePredicate};

/// Most scans a fan-out may issue before the planner calls it a full scan.
pub const MAX_FAN_OUT: usize = 256;

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
    /// Nothing to read: the read names a value no key of the design can
    /// hold (a negative number under `pad(..)`, a time past what `ts(ms)`
    /// writes), so no row matches.
    Empty,
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

/// The walk over a key's parts, left to right, and what it found.
struct Walk {
    /// The key prefixes the read fixes so far: one, or one per fanned-out bucket.
    prefixes: Vec<Vec<u8>>,
    /// The parts fixed, in key syntax.
    fixed: Vec<String>,
    /// The parts fanned out, in key syntax.
    fan: Vec<String>,
    /// Whether anything that depends on the read narrowed the key space.
    narrowed: bool,
    /// Fields whose exact value the prefix holds.
    consumed: BTreeSet<String>,
    /// Whether the prefix or range settles the read's time.
    time_consumed: bool,
    /// A text field not closed by a literal: "4" would also match "42".
    ambiguous: bool,
    /// The range the walk ended with: (low, high) encodings and the part.
    range: Option<(Vec<u8>, Vec<u8>, String)>,
    /// The part the walk stopped at (`None`: it fixed every part).
    stopped_at: Option<usize>,
    /// Hashed stores: the read cannot name the partition key.
    partition_unknown: bool,
    /// Hashed stores: the partition keys the read visits.
    partitions: Option<Vec<Vec<u8>>>,
    /// A value the read names that the part it belongs in cannot hold, and
    /// why: no key holds it, so nothing matches.
    unheld: Option<String>,
}

/// What one part did to the walk.
enum Step {
    /// Fixed or fanned out: the walk goes on.
    Fixed,
    /// A range was taken on it: the walk ends there.
    Range,
    /// The read cannot fix it: the walk stops before it.
    Stop,
    /// The part cannot hold the value the read names: no row matches.
    Unheld,
}

impl Walk {
    /// Walks `design`'s parts from the left as far as `query` fixes them.
    fn over(design: &KeyDesign, query: &Query, hashed: bool) -> Result<Walk> {
        let mut w = Walk {
            prefixes: vec![Vec::new()],
            fixed: Vec::new(),
            fan: Vec::new(),
            narrowed: false,
            consumed: BTreeSet::new(),
            time_consumed: query.time == TimePredicate::Any,
            ambiguous: false,
            range: None,
            stopped_at: None,
            partition_unknown: false,
            partitions: None,
            unheld: None,
        };
        let partition_len = if hashed { design.partition_len() } else { 0 };
        for (i, part) in design.parts.iter().enumerate() {
            if hashed && i == partition_len {
                w.partitions = Some(w.prefixes.clone());
            }
            let in_partition = hashed && i < partition_len;
            match w.step(part, query, in_partition)? {
                Step::Fixed => {}
                Step::Range => {
                    w.stopped_at = Some(i);
                    break;
                }
                Step::Stop => {
                    if in_partition {
                        w.partition_unknown = true;
                    }
                    w.stopped_at = Some(i);
                    break;
                }
                Step::Unheld => {
                    w.stopped_at = Some(i);
                    break;
                }
            }
            // A text field must be closed by a literal, or "4" would also match "42".
            let text = matches!(
                part,
                Part::Field {
                    encoding: FieldEncoding::Text,
                    ..
                }
            );
            // (An empty literal closes nothing.)
            let closed = matches!(
                design.parts.get(i + 1),
                Some(Part::Constant(b) | Part::Separator(b)) if !b.is_empty()
            );
            if text && !closed {
                w.ambiguous = true;
            }
        }
        if hashed && w.partitions.is_none() && !w.partition_unknown {
            w.partitions = Some(w.prefixes.clone());
        }
        Ok(w)
    }

    /// Takes one part: fixes it from the read, fans it out over its buckets,
    /// takes a range on it, or stops.
    fn step(&mut self, part: &Part, query: &Query, in_partition: bool) -> Result<Step> {
        let fixed = |ok: bool| if ok { Step::Fixed } else { Step::Stop };
        Ok(match part {
            Part::Constant(b) | Part::Separator(b) => {
                self.push(b);
                Step::Fixed
            }
            Part::Field { name, encoding } => {
                let value = query.value_of(name).cloned().or(match (name.as_str(), query.time) {
                    ("ts", TimePredicate::At(t)) => Some(Value::Int(t as i64)),
                    _ => None,
                });
                match value {
                    Some(v) => {
                        let bytes = match Part::encode_field(&v, *encoding) {
                            Ok(bytes) => bytes,
                            Err(e) => return Ok(self.unheld(part, &v.to_string(), e)),
                        };
                        self.push(&bytes);
                        self.fixed.push(part.to_string());
                        self.narrowed = true;
                        if name == "ts" {
                            self.time_consumed = true;
                        } else {
                            self.consumed.insert(name.clone());
                        }
                        Step::Fixed
                    }
                    None => Step::Stop,
                }
            }
            Part::Timestamp(form) => match query.time {
                // `encode` refuses a time past the form's last, and says why:
                // no key holds that time.
                TimePredicate::At(t) => match form.encode(t) {
                    Ok(bytes) => {
                        self.push(&bytes);
                        self.fixed.push(part.to_string());
                        self.narrowed = true;
                        self.time_consumed = !form.is_bucket();
                        Step::Fixed
                    }
                    Err(e) => self.unheld(part, &t.to_string(), e),
                },
                TimePredicate::Between(a, b) if b > a => {
                    // A range that starts past the form's last time holds no key.
                    if let Err(e) = form.encode(a) {
                        return Ok(self.unheld(part, &format!("[{a}, {b})"), e));
                    }
                    // A bound past the form's last time ("from a on", to =
                    // u64::MAX) reads up to that last time: no key holds a later one.
                    let b = b.min(form.last_ms().saturating_add(1));
                    if in_partition {
                        // A hashed partition key cannot be ranged over, only
                        // enumerated: one partition per time bucket.
                        let buckets = form.buckets_between(a, b, MAX_FAN_OUT).unwrap_or_default();
                        if buckets.is_empty() || !self.fan_out(&buckets, part) {
                            Step::Stop
                        } else {
                            self.narrowed = true;
                            Step::Fixed
                        }
                    } else {
                        let (lo, hi) = if form.newest_first() { (b - 1, a) } else { (a, b - 1) };
                        self.range = Some((form.encode(lo)?, form.encode(hi)?, part.to_string()));
                        self.narrowed = true;
                        self.time_consumed = !form.is_bucket();
                        Step::Range
                    }
                }
                _ => Step::Stop,
            },
            Part::Salt { field, buckets } => match query.value_of(field) {
                Some(v) => {
                    self.push(&Part::bucket_bytes(*buckets, Part::salt_of(v, *buckets)));
                    self.fixed.push(part.to_string());
                    self.narrowed = true;
                    Step::Fixed
                }
                None => fixed(self.fan_out_over(u64::from(*buckets), |b| Part::bucket_bytes(*buckets, b as u32), part)),
            },
            Part::RoundRobin { buckets } => {
                fixed(self.fan_out_over(u64::from(*buckets), |b| Part::bucket_bytes(*buckets, b as u32), part))
            }
            Part::HashPrefix { field, digits } => match query.value_of(field) {
                Some(v) => {
                    self.push(&Part::hash_prefix_of(v, *digits));
                    self.fixed.push(part.to_string());
                    self.narrowed = true;
                    Step::Fixed
                }
                None => {
                    let space = 16u64.checked_pow(u32::from(*digits)).unwrap_or(u64::MAX);
                    let hex = |h: u64| format!("{h:0w$x}", w = usize::from(*digits)).into_bytes();
                    fixed(self.fan_out_over(space, hex, part))
                }
            },
        })
    }

    /// Whether multiplying the prefixes by `count` values stays within
    /// [`MAX_FAN_OUT`] scans.
    fn fan_out_fits(&self, count: u64) -> bool {
        (self.prefixes.len() as u64).saturating_mul(count) <= MAX_FAN_OUT as u64
    }

    /// [`Walk::fan_out`] over the `count` values `value(0)`, `value(1)`...,
    /// counted before they are listed: a salt of four billion buckets is
    /// refused without four billion keys in memory.
    fn fan_out_over(&mut self, count: u64, value: impl Fn(u64) -> Vec<u8>, part: &Part) -> bool {
        if !self.fan_out_fits(count) {
            return false;
        }
        let values: Vec<Vec<u8>> = (0..count).map(value).collect();
        self.fan_out(&values, part)
    }

    /// Notes that `part` cannot hold `value` (the encoder said why).
    fn unheld(&mut self, part: &Part, value: &str, why: crate::Error) -> Step {
        let why = match why {
            crate::Error::Encode { why, .. } => why,
            other => other.to_string(),
        };
        self.unheld = Some(format!("{part} cannot hold {value}: {why}"));
        Step::Unheld
    }

    fn push(&mut self, bytes: &[u8]) {
        for p in &mut self.prefixes {
            p.extend_from_slice(bytes);
        }
    }

    /// Multiplies the prefixes by the bucket values; false if too many.
    fn fan_out(&mut self, values: &[Vec<u8>], part: &Part) -> bool {
        if !self.fan_out_fits(values.len() as u64) {
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

    /// The scans the prefixes make: each prefix with the range, or the rows
    /// of the exact key, or every key that starts with the prefix.
    fn scan_ranges(&self) -> Vec<ScanRange> {
        let scan = |from: Vec<u8>, to: Option<Vec<u8>>| ScanRange { from, to, limit: None };
        self.prefixes
            .iter()
            .map(|p| match (&self.range, self.stopped_at) {
                (Some((lo, hi, _)), _) => scan(
                    [p.as_slice(), lo].concat(),
                    prefix_successor(&[p.as_slice(), hi].concat()),
                ),
                (None, None) => scan(p.clone(), Some([p.as_slice(), &[0]].concat())),
                (None, Some(_)) => scan(p.clone(), prefix_successor(p)),
            })
            .collect()
    }
}

/// Plans a read under a key design. `hashed` says the store hashes the
/// partition key (Cassandra, DynamoDB) instead of keeping the whole key sorted.
pub fn plan(design: &KeyDesign, query: &Query, hashed: bool, id_field: &str) -> Result<Plan> {
    let mut w = Walk::over(design, query, hashed)?;
    if let Some(why) = w.unheld.take() {
        return Ok(Plan {
            query: query.clone(),
            kind: PlanKind::Empty,
            fixed: std::mem::take(&mut w.fixed),
            range_on: None,
            fan_out: None,
            ranges: Vec::new(),
            exact: true,
            newest_first_order: true,
            partitions: hashed.then(Vec::new),
            serving_layout: None,
            note: format!("no key holds what the read names: {why}"),
        });
    }
    let next_part = w.stopped_at.and_then(|i| design.parts.get(i));
    let newest_first_order = matches!(next_part, Some(Part::Timestamp(f)) if f.newest_first())
        || (w.stopped_at.is_none() && w.prefixes.len() == 1);
    let full = !w.narrowed || w.partition_unknown;
    let (mut ranges, exact) = if full {
        let everything = ScanRange {
            from: Vec::new(),
            to: None,
            limit: None,
        };
        let exact = query.equals.is_empty() && query.time == TimePredicate::Any;
        (vec![everything], exact)
    } else {
        // A point read names the whole key, so a text part cannot run into
        // the next one there.
        let exact = (!w.ambiguous || w.stopped_at.is_none())
            && w.time_consumed
            && query.equals.iter().all(|(f, _)| w.consumed.contains(f));
        (w.scan_ranges(), exact)
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
    } else if w.stopped_at.is_none() {
        PlanKind::PointGet
    } else {
        PlanKind::RangeScan
    };
    let mut plan = Plan {
        query: query.clone(),
        kind,
        fixed: std::mem::take(&mut w.fixed),
        range_on: w.range.take().map(|(_, _, p)| p),
        fan_out: (!w.fan.is_empty() && !full).then(|| (w.fan.join(" × "), ranges.len())),
        ranges,
        exact,
        newest_first_order,
        partitions: if hashed && !w.partition_unknown {
            w.partitions.take()
        } else {
            None
        },
        serving_layout: full.then(|| serving_layout(query, id_field)),
        note: String::new(),
    };
    plan.note = note(&plan, &w, design, next_part, push_limit);
    Ok(plan)
}

/// The sentence that says what the plan does and what it costs beyond the
/// rows it returns.
fn note(plan: &Plan, w: &Walk, design: &KeyDesign, next_part: Option<&Part>, push_limit: bool) -> String {
    let query = &plan.query;
    let full = plan.kind == PlanKind::FullScan;
    let first_value_part = design.parts.iter().find(|p| !p.is_literal());
    let mut note = match plan.kind {
        PlanKind::PointGet => "the read fixes every part: a point read".to_string(),
        PlanKind::RangeScan => "one contiguous slice of the key space".to_string(),
        PlanKind::FanOut => format!(
            "{} scans, one per bucket of {} (the read cannot compute it)",
            plan.ranges.len(),
            w.fan.join(" × ")
        ),
        PlanKind::FullScan if w.partition_unknown => format!(
            "the partition key is not known ({} is not fixed): scatter-gather over every partition",
            next_part.map_or("a part".into(), |p| p.to_string())
        ),
        PlanKind::FullScan => format!(
            "the read fixes no leading part (the key starts with {}): every row is read",
            first_value_part.map_or("nothing".into(), |p| p.to_string())
        ),
        // `plan` writes its own note.
        PlanKind::Empty => "nothing to read".to_string(),
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
    if !plan.exact && !full {
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
    note
}

/// The smallest time bucket (hour, day, month) that holds every time of
/// `time` in one bucket; an hour for a single time or none, a month for a
/// range longer than that (still one range: buckets sort in time order).
fn bucket_holding(time: &TimePredicate) -> TimeForm {
    let TimePredicate::Between(from, to) = *time else {
        return TimeForm::HourBucket;
    };
    let last = to.saturating_sub(1).max(from);
    [TimeForm::HourBucket, TimeForm::DayBucket]
        .into_iter()
        .find(|form| form.encode(from).ok() == form.encode(last).ok())
        .unwrap_or(TimeForm::MonthBucket)
}

/// A key layout that serves a read as one range scan: the fields it matches
/// exactly first (zero-padded numbers, text closed by a separator), then the
/// time in the order it wants, then the id that makes rows unique. A read with
/// no entity gets a time bucket first, the smallest that holds its whole time
/// range (a minute's read an hour, a day's read the day, as seed 000 says: "a
/// layout, whose leading part is the day"): a layout of its own, written
/// beside the main one (a layout per read path), whose writes crowd into the
/// current bucket unless it is salted.
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
        b = b.timestamp(bucket_holding(&query.time)).sep("#");
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
