//! The design as statements for the real systems, for a user who outgrows
//! one machine.
//!
//! * **Cassandra** has no byte-string row key: it has a *partition key*
//!   (hashed to place the partition) and *clustering columns* (sorted within
//!   it). Each value part becomes a column; the leading
//!   [`KeyDesign::partition_parts`] form the partition key, the rest cluster;
//!   a reversed timestamp becomes `CLUSTERING ORDER BY (ts DESC)` instead of a
//!   computed value, and separators disappear (the columns are typed).
//! * **HBase** takes the byte key as it is; what the shell needs is the table,
//!   a column family, and the pre-split points so the first writes do not all
//!   land on one region.

use std::fmt::Write as _;

use crate::encoding::to_string_binary;
use crate::key::{KeyDesign, Part, TimeForm};
use crate::placement::presplit_points;
use crate::workload::{Value, WorkloadKind};

/// What a Cassandra table holds besides its key parts: every field of the
/// record with its CQL type, and which field the key's timestamp parts
/// (`ts(..)`, `revts(..)`, the buckets) read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CqlColumns {
    /// Every field with its CQL type (`bigint`, `text`, `timestamp`), in order.
    pub fields: Vec<(String, String)>,
    /// The field the timestamp parts read (`ts` in the workloads).
    pub time_field: String,
}

impl CqlColumns {
    /// The columns of a workload's records: its fields as `bigint` (a time
    /// series' `metric` as `text`), and `ts` as a `timestamp`.
    pub fn of_workload(kind: WorkloadKind) -> CqlColumns {
        let ty = |field: &str| match (kind, field) {
            (WorkloadKind::TimeSeries, "metric") => "text",
            _ => "bigint",
        };
        let mut fields: Vec<(String, String)> = kind
            .fields()
            .iter()
            .map(|f| (f.to_string(), ty(f).to_string()))
            .collect();
        fields.push(("ts".into(), "timestamp".into()));
        CqlColumns {
            fields,
            time_field: "ts".into(),
        }
    }

    fn type_of(&self, field: &str) -> String {
        self.fields
            .iter()
            .find(|(f, _)| f == field)
            .map_or_else(|| "bigint".to_string(), |(_, t)| t.clone())
    }
}

/// The Cassandra column a key part becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyColumn {
    /// Column name: the field, or `salt`, `shard`, `hash_prefix`, `hour`,
    /// `day`, `month` for the values a writer computes.
    pub name: String,
    /// Its CQL type.
    pub cql_type: String,
    /// Clustered newest first (a reversed timestamp).
    pub descending: bool,
    /// What the writer must compute, for a comment above the statement.
    pub note: Option<String>,
}

/// The column a key part becomes; `None` for separators, and for constants
/// (a Cassandra table already names its rows).
pub fn key_column(part: &Part, columns: &CqlColumns) -> Option<KeyColumn> {
    let column = |name: &str, ty: &str, descending: bool, note: Option<String>| KeyColumn {
        name: name.to_string(),
        cql_type: ty.to_string(),
        descending,
        note,
    };
    let time = &columns.time_field;
    // A CQL int is 32 bits, signed: a bucket number past it is a bigint.
    let int_for = |largest: u64| if largest > i32::MAX as u64 { "bigint" } else { "int" };
    Some(match part {
        Part::Field { name, .. } => column(name, &columns.type_of(name), false, None),
        Part::Timestamp(form) if form.is_bucket() => {
            // The largest bucket each can write is of the year 9999.
            let (name, shape, largest) = match form {
                TimeForm::HourBucket => ("hour", "YYYYMMDDHH", 9_999_123_123),
                TimeForm::DayBucket => ("day", "YYYYMMDD", 99_991_231),
                _ => ("month", "YYYYMM", 999_912),
            };
            column(
                name,
                int_for(largest),
                false,
                Some(format!(
                    "{name}: the {name} bucket ({shape}) of {time}, computed by the writer"
                )),
            )
        }
        Part::Timestamp(form) => column(time, "timestamp", form.newest_first(), None),
        Part::Salt { field, buckets } => column(
            "salt",
            int_for(u64::from(*buckets).saturating_sub(1)),
            false,
            Some(format!(
                "salt: hash({field}) mod {buckets}, computed by the writer and by every reader"
            )),
        ),
        Part::RoundRobin { buckets } => column(
            "shard",
            int_for(u64::from(*buckets).saturating_sub(1)),
            false,
            Some(format!(
                "shard: write number mod {buckets}; readers must query every shard"
            )),
        ),
        Part::HashPrefix { field, digits } => column(
            "hash_prefix",
            "text",
            false,
            Some(format!("hash_prefix: first {digits} hex digits of hash({field})")),
        ),
        Part::Constant(_) | Part::Separator(_) => return None,
    })
}

/// A Cassandra `CREATE TABLE` for the design, on a workload's records.
///
/// ```
/// use cellar_keys::{export::cassandra, syntax::parse, workload::WorkloadKind};
/// let key = parse(r##"pad(customer,12) | revts(ms,19) "#" field(order_id)"##)?;
/// let cql = cassandra(&key, WorkloadKind::Orders, "orders_by_customer");
/// assert!(cql.contains("PRIMARY KEY ((customer), ts, order_id)"));
/// assert!(cql.contains("CLUSTERING ORDER BY (ts DESC, order_id ASC)"));
/// # Ok::<(), cellar_keys::Error>(())
/// ```
pub fn cassandra(design: &KeyDesign, kind: WorkloadKind, table: &str) -> String {
    cassandra_table(design, &CqlColumns::of_workload(kind), table)
}

/// A Cassandra `CREATE TABLE` for the design, on records with the given
/// columns: each value part of the key becomes a column ([`key_column`]);
/// the leading [`KeyDesign::partition_parts`] form the partition key, the
/// rest cluster; the record's other fields follow.
pub fn cassandra_table(design: &KeyDesign, columns: &CqlColumns, table: &str) -> String {
    let plen = design.partition_len();
    let mut defined: Vec<(String, String)> = Vec::new();
    let mut partition: Vec<String> = Vec::new();
    let mut clustering: Vec<(String, bool)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for (i, part) in design.parts.iter().enumerate() {
        if let Part::Constant(b) = part {
            notes.push(format!(
                "const {}: a Cassandra table already names its rows; dropped",
                to_string_binary(b)
            ));
        }
        let Some(col) = key_column(part, columns) else {
            continue;
        };
        notes.extend(col.note.clone());
        if defined.iter().any(|(c, _)| *c == col.name) {
            continue; // pad(customer) after salt(customer): one column
        }
        defined.push((col.name.clone(), col.cql_type.clone()));
        if i < plen {
            partition.push(col.name);
        } else {
            clustering.push((col.name, col.descending));
        }
    }
    for (field, ty) in &columns.fields {
        if !defined.iter().any(|(c, _)| c == field) {
            defined.push((field.clone(), ty.clone()));
        }
    }
    let mut out = String::new();
    for n in &notes {
        let _ = writeln!(out, "-- {n}");
    }
    let _ = writeln!(out, "CREATE TABLE {table} (");
    for (c, t) in &defined {
        let _ = writeln!(out, "    {c} {t},");
    }
    let _ = write!(out, "    PRIMARY KEY (({})", partition.join(", "));
    for (c, _) in &clustering {
        let _ = write!(out, ", {c}");
    }
    out.push_str(")\n)");
    if !clustering.is_empty() {
        let order: Vec<String> = clustering
            .iter()
            .map(|(c, desc)| format!("{c} {}", if *desc { "DESC" } else { "ASC" }))
            .collect();
        let _ = write!(out, " WITH CLUSTERING ORDER BY ({})", order.join(", "));
    }
    out.push_str(";\n");
    out
}

/// An HBase shell `create` with one column family and `regions - 1` split
/// points (see [`presplit_points`]), printed with `\xNN` escapes inside
/// double quotes, which the shell (JRuby) reads as bytes.
///
/// ```
/// use cellar_keys::{export::hbase, syntax::parse};
/// let key = parse(r##"salt(user,16) "#" field(user)"##)?;
/// assert_eq!(
///     hbase(&key, "events", 4),
///     "create 'events', {NAME => 'f', VERSIONS => 1}, SPLITS => [\"04\", \"08\", \"12\"]\n"
/// );
/// # Ok::<(), cellar_keys::Error>(())
/// ```
pub fn hbase(design: &KeyDesign, table: &str, regions: usize) -> String {
    hbase_with_splits(table, &presplit_points(design, regions))
}

/// An HBase shell `create` with one column family `f` and the given split
/// points (for a design whose split points come from its data rather than
/// from a leading salt).
pub fn hbase_with_splits(table: &str, splits: &[Vec<u8>]) -> String {
    let points: Vec<String> = splits.iter().map(|p| hbase_bytes(p)).collect();
    let mut out = format!("create '{table}', {{NAME => 'f', VERSIONS => 1}}");
    if !points.is_empty() {
        let _ = write!(out, ", SPLITS => [{}]", points.join(", "));
    }
    out.push('\n');
    out
}

/// Bytes as an HBase shell (JRuby) string literal: double quotes, `\xNN`
/// escapes for everything but printable ASCII, and for `"` and `#`. A
/// double-quoted Ruby string reads `#{..}` as code to run and `#@x`, `#$x`
/// as variables, so a `#` left bare would let a key or a value run in the
/// shell of whoever pastes the statement, and write other bytes than its own.
///
/// ```
/// use cellar_keys::export::hbase_bytes;
/// assert_eq!(hbase_bytes(b"a#{b}\"\x00"), r#""a\x23{b}\x22\x00""#);
/// ```
pub fn hbase_bytes(bytes: &[u8]) -> String {
    format!(
        "\"{}\"",
        to_string_binary(bytes).replace('"', "\\x22").replace('#', "\\x23")
    )
}

/// A value as CQL would write it (for examples).
pub fn cql_literal(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}
