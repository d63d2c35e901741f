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

/// The CQL type of a workload field.
fn cql_type(kind: WorkloadKind, field: &str) -> &'static str {
    match (kind, field) {
        (_, "ts") => "timestamp",
        (WorkloadKind::TimeSeries, "metric") => "text",
        _ => "bigint",
    }
}

/// A Cassandra `CREATE TABLE` for the design.
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
    let plen = design.partition_len();
    let mut columns: Vec<(String, &'static str)> = Vec::new();
    let mut partition: Vec<String> = Vec::new();
    let mut clustering: Vec<(String, bool)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for (i, part) in design.parts.iter().enumerate() {
        let (name, ty, desc) = match part {
            Part::Field { name, .. } => (name.clone(), cql_type(kind, name), false),
            Part::Timestamp(TimeForm::HourBucket) => {
                notes.push("hour: the hour bucket (YYYYMMDDHH), computed by the writer".into());
                ("hour".into(), "int", false)
            }
            Part::Timestamp(form) => ("ts".into(), "timestamp", form.newest_first()),
            Part::Salt { field, buckets } => {
                notes.push(format!(
                    "salt: hash({field}) mod {buckets}, computed by the writer and by every reader"
                ));
                ("salt".into(), "int", false)
            }
            Part::RoundRobin { buckets } => {
                notes.push(format!(
                    "shard: write number mod {buckets}; readers must query every shard"
                ));
                ("shard".into(), "int", false)
            }
            Part::HashPrefix { field, digits } => {
                notes.push(format!("hash_prefix: first {digits} hex digits of hash({field})"));
                ("hash_prefix".into(), "text", false)
            }
            Part::Constant(b) => {
                notes.push(format!(
                    "const {}: a Cassandra table already names its rows; dropped",
                    to_string_binary(b)
                ));
                continue;
            }
            Part::Separator(_) => continue,
        };
        if columns.iter().any(|(c, _)| *c == name) {
            continue; // pad(customer) after salt(customer): one column
        }
        columns.push((name.clone(), ty));
        if i < plen {
            partition.push(name);
        } else {
            clustering.push((name, desc));
        }
    }
    for field in kind.fields().iter().copied().chain(["ts"]) {
        if !columns.iter().any(|(c, _)| c == field) {
            columns.push((field.to_string(), cql_type(kind, field)));
        }
    }
    let mut out = String::new();
    for n in &notes {
        let _ = writeln!(out, "-- {n}");
    }
    let _ = writeln!(out, "CREATE TABLE {table} (");
    for (c, t) in &columns {
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
    let points: Vec<String> = presplit_points(design, regions)
        .iter()
        .map(|p| format!("\"{}\"", to_string_binary(p).replace('"', "\\x22")))
        .collect();
    let mut out = format!("create '{table}', {{NAME => 'f', VERSIONS => 1}}");
    if !points.is_empty() {
        let _ = write!(out, ", SPLITS => [{}]", points.join(", "));
    }
    out.push('\n');
    out
}

/// A value as CQL would write it (for examples).
pub fn cql_literal(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}
