//! Access paths: the reads a table is designed for, written down first.
//!
//! Query-first design lists the reads before it designs a key (seed 001,
//! "enumerate access paths"): each as a sentence with its inputs and its
//! order, "given a customer, the 20 most recent orders". An [`AccessPath`]
//! is that sentence as data:
//!
//! * **equality fields**: the inputs matched exactly (the customer);
//! * an optional **range field**, a time field the read may bound to
//!   `[from, to)` and that orders the result, oldest or newest first;
//! * a **limit**.
//!
//! Its answer is defined without any layout: the records whose fields equal
//! the parameters and whose range field lies in the bounds, ordered by the
//! range field (then by primary key, so that ties have one order), cut at
//! the limit. Every layout that serves the path must return exactly that,
//! and so must the filtering scan; the tests check both against a brute-force
//! filter.

use std::cmp::Ordering;
use std::fmt;

use crate::error::Result;
use crate::record::{IntoValue, Record, Value};
use crate::schema::{FieldType, Schema};

/// A read path, declared before any key is designed.
///
/// ```
/// use cellar_tables::AccessPath;
/// let latest = AccessPath::new("the latest orders of a customer")
///     .equals("customer")
///     .newest_first("placed_at")
///     .limit(20);
/// assert_eq!(latest.to_string(), "the latest orders of a customer (customer =; placed_at newest first; limit 20)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessPath {
    /// What a person calls it.
    pub name: String,
    /// Fields matched exactly.
    pub equals: Vec<String>,
    /// The time field the read ranges over and orders by.
    pub range: Option<String>,
    /// Order by the range field newest first (else oldest first).
    pub newest_first: bool,
    /// At most this many records.
    pub limit: Option<usize>,
}

impl AccessPath {
    /// A path with no inputs yet.
    pub fn new(name: &str) -> AccessPath {
        AccessPath {
            name: name.to_string(),
            equals: Vec::new(),
            range: None,
            newest_first: false,
            limit: None,
        }
    }

    /// Adds a field matched exactly.
    pub fn equals(mut self, field: &str) -> AccessPath {
        self.equals.push(field.to_string());
        self
    }

    /// Ranges over and orders by a time field, oldest first.
    pub fn oldest_first(mut self, field: &str) -> AccessPath {
        self.range = Some(field.to_string());
        self.newest_first = false;
        self
    }

    /// Ranges over and orders by a time field, newest first.
    pub fn newest_first(mut self, field: &str) -> AccessPath {
        self.range = Some(field.to_string());
        self.newest_first = true;
        self
    }

    /// At most `n` records.
    pub fn limit(mut self, n: usize) -> AccessPath {
        self.limit = Some(n);
        self
    }

    /// Checks the path and its parameters against a table's fields.
    pub(crate) fn check(&self, schema: &Schema, params: &Params) -> Result<()> {
        let fail = |what: String| schema.record_error(format!("path \"{}\": {what}", self.name));
        for f in &self.equals {
            if schema.field_named(f).is_none() {
                return Err(fail(format!("{f} is not a field")));
            }
            if !params.values.iter().any(|(g, _)| g == f) {
                return Err(fail(format!("no value is given for {f}")));
            }
        }
        if let Some((f, _)) = params.values.iter().find(|(f, _)| !self.equals.contains(f)) {
            return Err(fail(format!("{f} is not one of the path's equality fields")));
        }
        schema.check_record(&params.as_record(), false)?;
        match (&self.range, params.between) {
            (Some(r), _) if schema.field_named(r).map(|f| f.ty) != Some(FieldType::Time) => {
                Err(fail(format!("the range field {r} is not a time field")))
            }
            (None, Some(_)) => Err(fail("the path has no range field to bound".into())),
            (_, Some((from, to))) if from >= to => Err(fail(format!("the range [{from}, {to}) is empty"))),
            _ => Ok(()),
        }
    }

    /// Whether a record answers the path with these parameters.
    pub fn matches(&self, params: &Params, record: &Record) -> bool {
        let equal = params.values.iter().all(|(f, v)| record.get(f) == Some(v));
        let in_range = match (&self.range, params.between) {
            (Some(r), Some((from, to))) => {
                matches!(record.get(r), Some(Value::Int(t)) if *t >= 0 && (from..to).contains(&(*t as u64)))
            }
            _ => true,
        };
        equal && in_range
    }

    /// The path's order: by the range field (oldest or newest first), then by
    /// primary key.
    pub fn compare(&self, schema: &Schema, a: &Record, b: &Record) -> Ordering {
        let by_range = match &self.range {
            Some(r) => {
                let o = a.get(r).cmp(&b.get(r));
                if self.newest_first {
                    o.reverse()
                } else {
                    o
                }
            }
            None => Ordering::Equal,
        };
        by_range.then_with(|| {
            schema
                .primary_key
                .iter()
                .map(|k| a.get(k).cmp(&b.get(k)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    }

    /// Orders records as the path wants them and cuts them at its limit.
    pub fn finish(&self, schema: &Schema, records: &mut Vec<Record>) {
        records.sort_by(|a, b| self.compare(schema, a, b));
        if let Some(n) = self.limit {
            records.truncate(n);
        }
    }
}

impl fmt::Display for AccessPath {
    /// `name (customer =; placed_at newest first; limit 20)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.equals.iter().map(|e| format!("{e} =")).collect();
        if let Some(r) = &self.range {
            parts.push(format!(
                "{r} {}",
                if self.newest_first {
                    "newest first"
                } else {
                    "oldest first"
                }
            ));
        }
        if let Some(n) = self.limit {
            parts.push(format!("limit {n}"));
        }
        write!(f, "{} ({})", self.name, parts.join("; "))
    }
}

/// The values of one read of a path: its equality fields, and optionally
/// bounds `[from, to)` on its range field.
///
/// ```
/// use cellar_tables::Params;
/// let p = Params::new().eq("warehouse", 3).between(1_717_200_000_000, 1_717_286_400_000);
/// assert_eq!(p.between, Some((1_717_200_000_000, 1_717_286_400_000)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Equality values, by field.
    pub values: Vec<(String, Value)>,
    /// Bounds on the range field, milliseconds, `[from, to)`.
    pub between: Option<(u64, u64)>,
}

impl Params {
    /// No values yet.
    pub fn new() -> Params {
        Params::default()
    }

    /// The value of an equality field.
    pub fn eq(mut self, field: &str, value: impl IntoValue) -> Params {
        self.values.push((field.to_string(), value.into_value()));
        self
    }

    /// Bounds the range field to `[from, to)`.
    pub fn between(mut self, from: u64, to: u64) -> Params {
        self.between = Some((from, to));
        self
    }

    /// The value given for a field.
    pub fn value(&self, field: &str) -> Option<&Value> {
        self.values.iter().find(|(f, _)| f == field).map(|(_, v)| v)
    }

    fn as_record(&self) -> Record {
        let mut r = Record::new();
        for (f, v) in &self.values {
            r.set(f, v.clone());
        }
        r
    }
}
