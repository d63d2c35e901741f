//! Layouts: one key design per read path, each in a column family of its own.
//!
//! A layout is a name (also its family's name), a row-key design in the key
//! designer's syntax (`cellar_keys::syntax`), and the time field its
//! timestamp parts read. The design is cut in two where the partition key
//! ends (the `|` of the syntax, as a Cassandra primary key is):
//!
//! * the **partition parts** become the row key: everything a read must fix
//!   to find its partition, and the unit the store keeps together;
//! * the **clustering parts** become the column name: the order inside the
//!   partition, so a read is a slice of columns.
//!
//! So `pad(customer,8) | revts(ms,19) pad(order_id,10)` keeps each customer's
//! orders as the columns of one wide row, newest first, and "the 20 latest
//! orders of customer 42" is one slice of 20 columns. A record is stored
//! whole in that one cell ([`crate::record`]).
//!
//! A layout must identify a record (every primary-key field is one of its
//! parts), and its key must be computable from the record alone (so no
//! round-robin salt: an update could not find the old row). The source of
//! truth's key reads the primary key and nothing else.

use std::fmt;

use bytes::Bytes;
use cellar_engine::{validate_family_name, Row};
use cellar_keys::encoding::to_string_binary;
use cellar_keys::key::{FieldEncoding, KeyDesign, Part};
use cellar_keys::syntax;

use crate::catalog::CATALOG_FAMILY;
use crate::error::Result;
use crate::record::{Record, Value};
use crate::schema::{FieldType, Schema};

/// A layout as a person declares it: a name, a key in the key syntax, and
/// the field its timestamp parts (`ts(..)`, `revts(..)`, `day(ts)`...) read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutSpec {
    /// The layout's name, also its column family's.
    pub name: String,
    /// The key design, e.g. `pad(customer,8) | revts(ms,19) pad(order_id,10)`.
    pub key: String,
    /// The time field read by the key's timestamp parts.
    pub time_field: Option<String>,
}

impl LayoutSpec {
    /// A layout with no time field.
    pub fn new(name: &str, key: &str) -> LayoutSpec {
        LayoutSpec {
            name: name.to_string(),
            key: key.to_string(),
            time_field: None,
        }
    }

    /// The time field its timestamp parts read.
    pub fn time(mut self, field: &str) -> LayoutSpec {
        self.time_field = Some(field.to_string());
        self
    }
}

impl fmt::Display for LayoutSpec {
    /// `name: key`, then `, ts = field` when it has a time field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.key)?;
        if let Some(t) = &self.time_field {
            write!(f, ", ts = {t}")?;
        }
        Ok(())
    }
}

/// What a layout is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Keyed by the primary key: updates read from it, backfills copy it.
    Source,
    /// A copy keyed for a read path.
    Copy,
}

/// Whether reads may use a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutState {
    /// Complete: every record is in it.
    Readable,
    /// Staged: every write goes to it, and a backfill is copying the records
    /// written before; reads may not use it yet. `cursor` is the last
    /// source-of-truth cell the backfill has copied.
    Building {
        /// The last source cell copied; `None` before the first batch.
        cursor: Option<Address>,
    },
}

/// Where a record lies in a layout: its row (the partition key) and its
/// column (the clustering key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address {
    /// The row key.
    pub row: Vec<u8>,
    /// The column name.
    pub column: Vec<u8>,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {}",
            to_string_binary(&self.row),
            to_string_binary(&self.column)
        )
    }
}

/// The cells of a scan, each with its address, in key order.
pub(crate) fn cells(
    rows: impl Iterator<Item = cellar_engine::Result<Row>>,
) -> impl Iterator<Item = Result<(Address, Bytes)>> {
    rows.flat_map(|row| match row {
        Ok(row) => row
            .cells
            .into_iter()
            .map(|cell| {
                let at = Address {
                    row: row.key.to_vec(),
                    column: cell.column.to_vec(),
                };
                Ok((at, cell.value))
            })
            .collect::<Vec<_>>(),
        Err(e) => vec![Err(e.into())],
    })
}

/// A checked layout of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Its name and family.
    pub name: String,
    /// Its key design.
    pub key: KeyDesign,
    /// The field its timestamp parts read.
    pub time_field: Option<String>,
    /// Source of truth or copy.
    pub role: Role,
    /// Readable or being built.
    pub state: LayoutState,
}

impl Layout {
    /// Checks a declared layout against the table's fields.
    pub(crate) fn new(schema: &Schema, spec: &LayoutSpec, role: Role, state: LayoutState) -> Result<Layout> {
        let fail = |what: String| schema.schema_error(format!("layout {}: {what}", spec.name));
        validate_family_name(&spec.name).map_err(|_| fail("a layout name is 1 to 64 of [a-z0-9_]".into()))?;
        if spec.name == CATALOG_FAMILY {
            return Err(fail(format!("{CATALOG_FAMILY} is the family of the table catalog")));
        }
        let key = syntax::parse(&spec.key).map_err(|e| fail(e.to_string()))?;
        let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
        // Every field a part reads is one of the table's, said in the table's
        // terms. (`key.check` alone would say "workload" and let `ts` through:
        // the key syntax's name for a workload's time, which a table names by
        // its time field instead.)
        if let Some((part, field)) = key.unknown_field(&names) {
            return Err(fail(format!(
                "{part} reads {field}, which is not a field of the table ({})",
                names.join(", ")
            )));
        }
        key.check(&schema.name, &names).map_err(|e| fail(e.to_string()))?;
        if let Some(t) = &spec.time_field {
            match schema.field_named(t) {
                Some(f) if f.ty == FieldType::Time => {}
                Some(_) => return Err(fail(format!("the time field {t} is not a time field"))),
                None => return Err(fail(format!("the time field {t} is not a field"))),
            }
        }
        let mut has_time_part = false;
        for (i, part) in key.parts.iter().enumerate() {
            match part {
                Part::RoundRobin { .. } => {
                    return Err(fail(
                        "a round-robin salt cannot be computed from the record, so an update could not \
                         find the row to move: salt by a field, salt(f,N)"
                            .into(),
                    ))
                }
                Part::Timestamp(_) => {
                    if spec.time_field.is_none() {
                        return Err(fail(format!(
                            "{part} needs the layout's time field: LayoutSpec::time(\"field\")"
                        )));
                    }
                    has_time_part = true;
                }
                Part::Field { name, encoding } => {
                    let ty = schema.field_named(name).map(|f| f.ty);
                    if ty == Some(FieldType::Text) && *encoding != FieldEncoding::Text {
                        return Err(fail(format!(
                            "{part}: {name} is text, and this encoding is for numbers"
                        )));
                    }
                    if *encoding == FieldEncoding::Text
                        && key.parts.get(i + 1).is_some_and(|next| literal_stop(next).is_none())
                    {
                        return Err(fail(format!(
                            "{part} is text of any length: follow it with a separator such as \"#\", or the \
                             end of one value could be read as the start of the next"
                        )));
                    }
                }
                _ => {}
            }
        }
        if spec.time_field.is_some() && !has_time_part {
            return Err(fail("a time field is given but no part of the key reads it".into()));
        }
        for pk in &schema.primary_key {
            let named = key
                .parts
                .iter()
                .any(|p| matches!(p, Part::Field { name, .. } if name == pk));
            if !named {
                return Err(fail(format!(
                    "the key does not name {pk}, so two records could share a cell: every primary-key \
                     field must be a part of every layout's key"
                )));
            }
        }
        if role == Role::Source {
            for part in &key.parts {
                if let Some(f) = part.field() {
                    if !schema.primary_key.iter().any(|k| k == f) || matches!(part, Part::Timestamp(_)) {
                        return Err(fail(format!(
                            "{part}: the source of truth is keyed by the primary key alone, so that a key \
                             finds its record"
                        )));
                    }
                }
            }
        }
        Ok(Layout {
            name: spec.name.clone(),
            key,
            time_field: spec.time_field.clone(),
            role,
            state,
        })
    }

    /// The layout as it was declared.
    pub fn spec(&self) -> LayoutSpec {
        LayoutSpec {
            name: self.name.clone(),
            key: self.key.to_string(),
            time_field: self.time_field.clone(),
        }
    }

    /// Whether reads may use it.
    pub fn is_readable(&self) -> bool {
        self.state == LayoutState::Readable
    }

    /// The record's cell in this layout. The record must have every field
    /// the key reads (a checked record has them all).
    pub fn address(&self, schema: &Schema, record: &Record) -> Result<Address> {
        let split = self.key.partition_len();
        let mut address = Address {
            row: Vec::new(),
            column: Vec::new(),
        };
        for (i, part) in self.key.parts.iter().enumerate() {
            let bytes = self.part_bytes(schema, part, record)?;
            if let (
                Part::Field {
                    name,
                    encoding: FieldEncoding::Text,
                },
                Some(stop),
            ) = (part, self.key.parts.get(i + 1).and_then(literal_stop))
            {
                if bytes.contains(&stop) {
                    return Err(schema.record_error(format!(
                        "{name} = {:?} contains {:?}, the separator after it in layout {}: the key could not \
                         be read back",
                        String::from_utf8_lossy(&bytes),
                        char::from(stop),
                        self.name
                    )));
                }
            }
            if i < split {
                address.row.extend(bytes);
            } else {
                address.column.extend(bytes);
            }
        }
        Ok(address)
    }

    /// One part's bytes for a record, with the key designer's encoders.
    pub(crate) fn part_bytes(&self, schema: &Schema, part: &Part, record: &Record) -> Result<Vec<u8>> {
        let value = |name: &str| -> Result<&Value> {
            record
                .get(name)
                .ok_or_else(|| schema.record_error(format!("the record has no {name}")))
        };
        Ok(match part {
            Part::Field { name, encoding } => Part::encode_field(value(name)?, *encoding)?,
            Part::Timestamp(form) => {
                let field = self.time_field.as_deref().unwrap_or("ts");
                match value(field)? {
                    Value::Int(ms) if *ms >= 0 => form.encode(*ms as u64)?,
                    other => return Err(schema.record_error(format!("{field} = {other} is not a time"))),
                }
            }
            Part::Salt { field, buckets } => Part::bucket_bytes(*buckets, Part::salt_of(value(field)?, *buckets)),
            Part::HashPrefix { field, digits } => Part::hash_prefix_of(value(field)?, *digits),
            Part::Constant(b) | Part::Separator(b) => b.clone(),
            // Refused when the layout is declared.
            Part::RoundRobin { .. } => {
                return Err(schema.schema_error(format!("layout {}: a round-robin salt", self.name)))
            }
        })
    }
}

/// The byte that ends a text part: the first byte of the literal after it.
fn literal_stop(part: &Part) -> Option<u8> {
    match part {
        Part::Constant(b) | Part::Separator(b) => b.first().copied(),
        _ => None,
    }
}
