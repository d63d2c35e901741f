//! Seeded, reproducible write workloads.
//!
//! A key is only good or bad *for a workload*: the same timestamp-first key is
//! harmless for a trickle of writes and a disaster for a firehose. Each
//! workload here is a stream of records in time order, each with a few named
//! fields and a millisecond timestamp (also readable as the field `ts`). The
//! same [`WorkloadSpec`] (kind, count, span, seed) always produces the same
//! records, so a test or a README can quote exact numbers.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::error::{Error, Result};

/// 2024-01-01T00:00:00Z in milliseconds: where every workload's clock starts.
pub const EPOCH_MS: u64 = 1_704_067_200_000;

/// A field value: a number or a piece of text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// A signed integer.
    Int(i64),
    /// Text.
    Text(String),
}

impl Value {
    /// The value's bytes as text: what a `field(..)` part writes, and what a
    /// salt or hash prefix hashes.
    pub fn text_bytes(&self) -> Vec<u8> {
        match self {
            Value::Int(v) => v.to_string().into_bytes(),
            Value::Text(s) => s.as_bytes().to_vec(),
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// One write: a timestamp and named fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// When it was written, in milliseconds since 1970.
    pub ts_ms: u64,
    /// The fields, in the workload's order.
    pub fields: Vec<(&'static str, Value)>,
}

impl Record {
    /// The value of a field; `ts` is the timestamp as a number.
    pub fn get(&self, name: &str) -> Option<Value> {
        if name == "ts" {
            return Some(Value::Int(self.ts_ms as i64));
        }
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }

    /// The record as one line of `name=value` pairs: what the real store
    /// keeps in the row's one cell, so a plan can check each row it reads.
    pub fn encode(&self) -> String {
        let mut out = format!("ts={}", self.ts_ms);
        for (name, value) in &self.fields {
            match value {
                Value::Int(v) => out.push_str(&format!(";{name}={v}")),
                Value::Text(s) => out.push_str(&format!(";{name}=\"{s}\"")),
            }
        }
        out
    }
}

/// The four workloads of the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Orders with sequential ids, from 100 customers (uniform).
    Orders,
    /// Devices × metrics, every series reporting in turn.
    TimeSeries,
    /// Events of 1000 users drawn from a Zipf distribution (s = 1.1): user 1
    /// writes most.
    ZipfUsers,
    /// Orders of 20 tenants, one of which (tenant 1) is the big customer with
    /// half of all orders.
    Tenants,
}

impl WorkloadKind {
    /// Every workload, in the order the CLI lists them.
    pub const ALL: [WorkloadKind; 4] = [
        WorkloadKind::Orders,
        WorkloadKind::TimeSeries,
        WorkloadKind::ZipfUsers,
        WorkloadKind::Tenants,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Orders => "orders",
            WorkloadKind::TimeSeries => "timeseries",
            WorkloadKind::ZipfUsers => "users",
            WorkloadKind::Tenants => "tenants",
        }
    }

    /// The workload with this command-line name.
    pub fn from_name(name: &str) -> Result<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
            Error::InvalidSetting(format!(
                "unknown workload {name:?}: use {}",
                WorkloadKind::ALL.map(|k| k.name()).join(", ")
            ))
        })
    }

    /// The fields its records carry (besides `ts`).
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Orders => &["customer", "order_id"],
            WorkloadKind::TimeSeries => &["device", "metric"],
            WorkloadKind::ZipfUsers => &["user", "event_id"],
            WorkloadKind::Tenants => &["tenant", "order_id"],
        }
    }

    /// The fields that name one entity (the "customer 42" of a read).
    pub fn entity_fields(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Orders => &["customer"],
            WorkloadKind::TimeSeries => &["device", "metric"],
            WorkloadKind::ZipfUsers => &["user"],
            WorkloadKind::Tenants => &["tenant"],
        }
    }

    /// The field that makes a record unique within its entity and instant.
    pub fn id_field(self) -> &'static str {
        match self {
            WorkloadKind::Orders | WorkloadKind::Tenants => "order_id",
            WorkloadKind::TimeSeries => "device",
            WorkloadKind::ZipfUsers => "event_id",
        }
    }
}

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// Which workload.
    pub kind: WorkloadKind,
    /// How many writes.
    pub writes: usize,
    /// Time from the first write to the last, in milliseconds.
    pub span_ms: u64,
    /// Seed of the random choices.
    pub seed: u64,
}

impl WorkloadSpec {
    /// 10 000 writes over one hour, seed 7.
    pub fn new(kind: WorkloadKind) -> WorkloadSpec {
        WorkloadSpec {
            kind,
            writes: 10_000,
            span_ms: 3_600_000,
            seed: 7,
        }
    }

    /// The same spec with another number of writes.
    pub fn writes(mut self, n: usize) -> WorkloadSpec {
        self.writes = n;
        self
    }

    /// The same spec with another time span.
    pub fn span_ms(mut self, ms: u64) -> WorkloadSpec {
        self.span_ms = ms;
        self
    }

    /// The same spec with another seed.
    pub fn seed(mut self, seed: u64) -> WorkloadSpec {
        self.seed = seed;
        self
    }

    /// Checks the spec: the span must end by `i64::MAX` milliseconds, the
    /// largest time a record carries (as a signed long, as HBase and
    /// Cassandra keep it).
    pub fn check(&self) -> Result<()> {
        let end = EPOCH_MS
            .checked_add(self.span_ms)
            .filter(|end| *end <= crate::encoding::LONG_MAX);
        if end.is_none() {
            return Err(Error::InvalidSetting(format!(
                "a span of {} ms from {EPOCH_MS} ms ends past {} ms, the largest time a record holds",
                self.span_ms,
                i64::MAX
            )));
        }
        Ok(())
    }

    /// The records, in time order. Writes are spread evenly over the span
    /// (write `i` at `EPOCH_MS + i × span / writes`), so time order is write
    /// order.
    pub fn generate(&self) -> Vec<Record> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let n = self.writes.max(1) as u64;
        let zipf = Zipf::new(1000, 1.1);
        let metrics = ["cpu", "disk", "mem", "net"];
        let devices = 25u64;
        (0..self.writes as u64)
            .map(|i| {
                // In 128 bits: `i × span` passes 2^64 for long spans.
                let offset = u128::from(i) * u128::from(self.span_ms) / u128::from(n);
                let ts_ms = EPOCH_MS.saturating_add(u64::try_from(offset).unwrap_or(u64::MAX));
                let fields = match self.kind {
                    WorkloadKind::Orders => vec![
                        ("customer", Value::Int(rng.random_range(1..=100))),
                        ("order_id", Value::Int(i as i64 + 1)),
                    ],
                    WorkloadKind::TimeSeries => {
                        let series = i % (devices * metrics.len() as u64);
                        let metric = metrics[(series % metrics.len() as u64) as usize];
                        vec![
                            ("device", Value::Int((series / metrics.len() as u64) as i64 + 1)),
                            ("metric", Value::Text(metric.to_string())),
                        ]
                    }
                    WorkloadKind::ZipfUsers => vec![
                        ("user", Value::Int(zipf.sample(rng.random::<f64>()) as i64)),
                        ("event_id", Value::Int(i as i64 + 1)),
                    ],
                    WorkloadKind::Tenants => {
                        let tenant = if rng.random_bool(0.5) {
                            1
                        } else {
                            rng.random_range(2..=20)
                        };
                        vec![("tenant", Value::Int(tenant)), ("order_id", Value::Int(i as i64 + 1))]
                    }
                };
                Record { ts_ms, fields }
            })
            .collect()
    }
}

/// A Zipf distribution over `1..=n` by inverse transform over the cumulative
/// weights `1/k^s`: rank 1 is the most frequent.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Zipf {
        let mut total = 0.0;
        let mut cumulative = Vec::with_capacity(n);
        for k in 1..=n {
            total += 1.0 / (k as f64).powf(s);
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        Zipf { cumulative }
    }

    /// The rank for a uniform number in `[0, 1)`.
    fn sample(&self, u: f64) -> usize {
        self.cumulative
            .partition_point(|&c| c < u)
            .min(self.cumulative.len().saturating_sub(1))
            + 1
    }
}
