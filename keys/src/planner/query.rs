//! The reads a planner is asked about: what a read names (fields matched
//! exactly, a time, an order, a limit), and the typical reads of each workload.

use crate::encoding::{hour_bucket, HOUR_MS};
use crate::workload::{Record, Value, WorkloadKind};

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
        // Times are unsigned milliseconds: compared as u64, a bound past
        // i64::MAX (a read "from then on") is not a negative number.
        let ts = match get("ts") {
            Some(Value::Int(ts)) => u64::try_from(ts).ok(),
            _ => None,
        };
        let time_ok = match (self.time, ts) {
            (TimePredicate::Any, _) => true,
            (TimePredicate::At(t), Some(ts)) => ts == t,
            (TimePredicate::Between(a, b), Some(ts)) => (a..b).contains(&ts),
            _ => false,
        };
        time_ok && self.equals.iter().all(|(f, v)| get(f).as_ref() == Some(v))
    }

    /// The value the read matches `field` with, if it names it.
    pub(super) fn value_of(&self, field: &str) -> Option<&Value> {
        self.equals.iter().find(|(f, _)| f == field).map(|(_, v)| v)
    }
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
