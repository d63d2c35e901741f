//! When one machine is outgrown: the same design as Cassandra CQL and as
//! HBase shell statements.
//!
//! A layout is already what both systems store. For **Cassandra** each
//! layout is a table whose partition key is the layout's partition parts and
//! whose clustering columns are the rest, in the key's order (the key
//! designer's `cassandra_table` writes the `CREATE TABLE`); a write to a
//! query-first table becomes a `BEGIN BATCH ... APPLY BATCH` with one
//! statement per layout, and a key-changing update a `DELETE` at the old key
//! and an `INSERT` at the new one. For **HBase** each layout is a table with
//! one family `f`: the row key is the partition, the qualifier the clustering
//! key, the value the record, exactly the cells cellar stores, pre-split at
//! the row keys that cut the layout's data into equal parts.
//!
//! What does not move unchanged is the guarantee: a Cassandra logged batch
//! is eventually applied in full but is not isolated (a reader can see one
//! table changed and not the other), and HBase has no batch across rows or
//! tables at all. On one machine cellar's `WriteBatch` gives both.

use std::fmt::Write as _;
use std::sync::Arc;

use cellar_engine::RowRange;
use cellar_keys::export::{cassandra_table, cql_literal, hbase_bytes, hbase_with_splits, key_column, CqlColumns};
use cellar_keys::key::Part;
use cellar_keys::placement::{presplit_points, MAX_PRESPLIT};

use crate::catalog::Definition;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::record::{self, Record, Value};
use crate::table::Table;

fn columns(def: &Definition, layout: &Layout) -> CqlColumns {
    CqlColumns {
        fields: def
            .schema
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.ty.cql().to_string()))
            .collect(),
        time_field: layout.time_field.clone().unwrap_or_else(|| "ts".into()),
    }
}

/// The key columns of a layout for one record: (column, CQL literal), in
/// key order, each once.
fn key_values(def: &Definition, layout: &Layout, record: &Record) -> Result<Vec<(String, String)>> {
    let cols = columns(def, layout);
    let mut out: Vec<(String, String)> = Vec::new();
    for part in &layout.key.parts {
        let Some(col) = key_column(part, &cols) else {
            continue;
        };
        if out.iter().any(|(c, _)| *c == col.name) {
            continue;
        }
        let literal = match part {
            Part::Field { name, .. } => record.get(name).map(cql_literal).unwrap_or_else(|| "null".into()),
            Part::Timestamp(form) if !form.is_bucket() => {
                let field = layout.time_field.as_deref().unwrap_or("ts");
                record.get(field).map(cql_literal).unwrap_or_else(|| "null".into())
            }
            _ => {
                // A value the writer computes: a bucket or salt number, a hash prefix.
                let bytes = layout.part_bytes(&def.schema, part, record)?;
                let text = String::from_utf8_lossy(&bytes).into_owned();
                if col.cql_type == "int" || col.cql_type == "bigint" {
                    text.trim_start_matches('0').parse::<i64>().unwrap_or(0).to_string()
                } else {
                    cql_literal(&Value::Text(text))
                }
            }
        };
        out.push((col.name, literal));
    }
    Ok(out)
}

fn cql_insert_one(def: &Definition, layout: &Layout, record: &Record) -> Result<String> {
    let mut cols = key_values(def, layout, record)?;
    for f in &def.schema.fields {
        if !cols.iter().any(|(c, _)| *c == f.name) {
            let v = record.get(&f.name).map(cql_literal).unwrap_or_else(|| "null".into());
            cols.push((f.name.clone(), v));
        }
    }
    let names: Vec<&str> = cols.iter().map(|(c, _)| c.as_str()).collect();
    let values: Vec<&str> = cols.iter().map(|(_, v)| v.as_str()).collect();
    Ok(format!(
        "  INSERT INTO {} ({}) VALUES ({});\n",
        layout.name,
        names.join(", "),
        values.join(", ")
    ))
}

fn where_clause(def: &Definition, layout: &Layout, record: &Record) -> Result<String> {
    Ok(key_values(def, layout, record)?
        .iter()
        .map(|(c, v)| format!("{c} = {v}"))
        .collect::<Vec<_>>()
        .join(" AND "))
}

impl Table {
    /// The definition, and a record before and after an update.
    fn before_and_after(&self, key: &Record, changes: &Record) -> Result<(Arc<Definition>, Record, Record)> {
        let def = self.definition();
        def.schema.check_record(changes, false)?;
        let old = self.get(key)?.ok_or_else(|| Error::NotFound {
            table: def.name().to_string(),
            key: key.to_string(),
        })?;
        let new = old.merged(changes);
        Ok((def, old, new))
    }

    /// One Cassandra `CREATE TABLE` per layout.
    pub fn cql_schema(&self) -> String {
        let def = self.definition();
        let mut out = format!("-- table {}: one Cassandra table per layout\n", def.name());
        for layout in &def.layouts {
            if layout.role == crate::layout::Role::Source {
                out.push_str("-- the source of truth\n");
            }
            out.push_str(&cassandra_table(&layout.key, &columns(&def, layout), &layout.name));
        }
        out
    }

    /// The logged batch an insert of `record` becomes in Cassandra.
    pub fn cql_insert(&self, record: &Record) -> Result<String> {
        let def = self.definition();
        def.schema.check_record(record, true)?;
        let mut out = String::from("BEGIN BATCH\n");
        for layout in &def.layouts {
            out.push_str(&cql_insert_one(&def, layout, record)?);
        }
        out.push_str("APPLY BATCH;\n");
        Ok(out)
    }

    /// The logged batch an update becomes in Cassandra: in each layout whose
    /// key changes, a `DELETE` at the old key and an `INSERT` at the new one;
    /// elsewhere an `UPDATE` of the changed fields. The old record is read
    /// from the source of truth, as the update itself does.
    pub fn cql_update(&self, key: &Record, changes: &Record) -> Result<String> {
        let (def, old, new) = self.before_and_after(key, changes)?;
        let mut out = String::from("BEGIN BATCH\n");
        for layout in &def.layouts {
            if layout.address(&def.schema, &old)? != layout.address(&def.schema, &new)? {
                let _ = writeln!(
                    out,
                    "  DELETE FROM {} WHERE {};",
                    layout.name,
                    where_clause(&def, layout, &old)?
                );
                out.push_str(&cql_insert_one(&def, layout, &new)?);
            } else {
                let set: Vec<String> = changes
                    .iter()
                    .map(|(f, v)| format!("{f} = {}", cql_literal(v)))
                    .collect();
                let _ = writeln!(
                    out,
                    "  UPDATE {} SET {} WHERE {};",
                    layout.name,
                    set.join(", "),
                    where_clause(&def, layout, &new)?
                );
            }
        }
        out.push_str("APPLY BATCH;\n");
        Ok(out)
    }

    /// One HBase `create` per layout, pre-split into `regions` regions at the
    /// row keys that cut the layout's records into equal parts (for an empty
    /// layout, the key designer's split points).
    pub fn hbase_schema(&self, regions: usize) -> Result<String> {
        let def = self.definition();
        let mut out = format!("# table {}: one HBase table per layout, family f\n", def.name());
        for layout in &def.layouts {
            let mut rows: Vec<(Vec<u8>, u64)> = Vec::new();
            for row in self.store.scan(&layout.name, &RowRange::all())? {
                let row = row?;
                rows.push((row.key.to_vec(), row.cells.len() as u64));
            }
            let splits = if rows.is_empty() {
                presplit_points(&layout.key, regions)
            } else {
                data_splits(&rows, regions)
            };
            out.push_str(&hbase_with_splits(&layout.name, &splits));
        }
        Ok(out)
    }

    /// The puts an insert of `record` becomes in the HBase shell.
    pub fn hbase_insert(&self, record: &Record) -> Result<String> {
        let def = self.definition();
        def.schema.check_record(record, true)?;
        let value = record::encode(&def.schema, record);
        let mut out = String::from("# one put per layout; HBase applies each on its own\n");
        for layout in &def.layouts {
            out.push_str(&hbase_put(layout, &layout.address(&def.schema, record)?, &value));
        }
        Ok(out)
    }

    /// The deletes and puts an update becomes in the HBase shell.
    pub fn hbase_update(&self, key: &Record, changes: &Record) -> Result<String> {
        let (def, old, new) = self.before_and_after(key, changes)?;
        let value = record::encode(&def.schema, &new);
        let mut out = String::from(
            "# HBase applies each statement on its own: a crash between them leaves the layouts out of step\n",
        );
        for layout in &def.layouts {
            let from = layout.address(&def.schema, &old)?;
            let to = layout.address(&def.schema, &new)?;
            if from != to {
                let _ = writeln!(
                    out,
                    "delete '{}', {}, {}",
                    layout.name,
                    hbase_bytes(&from.row),
                    hbase_bytes(&[b"f:".as_slice(), &from.column].concat())
                );
            }
            out.push_str(&hbase_put(layout, &to, &value));
        }
        Ok(out)
    }
}

fn hbase_put(layout: &Layout, at: &crate::layout::Address, value: &[u8]) -> String {
    format!(
        "put '{}', {}, {}, {}\n",
        layout.name,
        hbase_bytes(&at.row),
        hbase_bytes(&[b"f:".as_slice(), &at.column].concat()),
        hbase_bytes(value)
    )
}

/// The row keys at which `regions - 1` cuts divide the rows' records into
/// equal parts (rows are never split: a cut falls between rows). `regions`
/// is taken as at most [`MAX_PRESPLIT`], as the key designer's split points are.
fn data_splits(rows: &[(Vec<u8>, u64)], regions: usize) -> Vec<Vec<u8>> {
    let regions = regions.min(MAX_PRESPLIT);
    let total: u64 = rows.iter().map(|(_, n)| n).sum();
    // The share before cut `next`, in 128 bits: `total × next` passes 2^64.
    let share = |next: usize| (u128::from(total) * next as u128 / regions as u128) as u64;
    let mut splits: Vec<Vec<u8>> = Vec::new();
    let mut seen = 0u64;
    let mut next = 1usize;
    for (i, (row, n)) in rows.iter().enumerate() {
        while next < regions && seen >= share(next) {
            if i > 0 && splits.last() != Some(row) {
                splits.push(row.clone());
            }
            next += 1;
        }
        seen += n;
    }
    splits
}
