//! A table's declaration: its fields, its primary key, and its layouts.
//!
//! Query-first design starts from the reads, but a table still needs to say
//! what a record is. The **primary key** names one record (as in Cassandra,
//! it cannot be updated: a record with another key is another record). The
//! **source of truth** is the layout keyed by the primary key alone: updates
//! and deletes read the old record from it, and a new layout is backfilled
//! from it. Every other layout is a copy, keyed for one read path.

use crate::error::{Error, Result};
use crate::layout::LayoutSpec;
use crate::record::{Record, Value};

/// The type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A signed 64-bit integer.
    Int,
    /// Text (UTF-8).
    Text,
    /// Milliseconds since 1970 (a non-negative integer); a layout can order
    /// or bucket by it.
    Time,
}

impl FieldType {
    /// The name used in a table definition: `int`, `text`, `time`.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int => "int",
            FieldType::Text => "text",
            FieldType::Time => "time",
        }
    }

    /// The type with this name.
    pub fn from_name(name: &str) -> Option<FieldType> {
        match name {
            "int" => Some(FieldType::Int),
            "text" => Some(FieldType::Text),
            "time" => Some(FieldType::Time),
            _ => None,
        }
    }

    /// The CQL type Cassandra would use.
    pub fn cql(self) -> &'static str {
        match self {
            FieldType::Int => "bigint",
            FieldType::Text => "text",
            FieldType::Time => "timestamp",
        }
    }
}

/// A field: a name and a type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name (`[a-z0-9_]`, as in the key syntax).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
}

/// A table's declaration.
///
/// ```
/// use cellar_tables::{LayoutSpec, Schema};
/// let orders = Schema::new("orders")
///     .int("order_id")
///     .int("customer")
///     .time("placed_at")
///     .text("status")
///     .primary_key(&["order_id"])
///     .source_of_truth(LayoutSpec::new("orders", "pad(order_id,10)"))
///     .layout(LayoutSpec::new("orders_by_customer", "pad(customer,8) | revts(ms,19) pad(order_id,10)").time("placed_at"));
/// assert_eq!(orders.layouts.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The table's name.
    pub name: String,
    /// Its fields, in the order records are stored.
    pub fields: Vec<Field>,
    /// The fields that name one record.
    pub primary_key: Vec<String>,
    /// The layout keyed by the primary key alone.
    pub source: Option<LayoutSpec>,
    /// The copies, one per read path, in the order the planner prefers them
    /// when two serve a read equally well.
    pub layouts: Vec<LayoutSpec>,
}

impl Schema {
    /// A table with no fields yet.
    pub fn new(name: &str) -> Schema {
        Schema {
            name: name.to_string(),
            fields: Vec::new(),
            primary_key: Vec::new(),
            source: None,
            layouts: Vec::new(),
        }
    }

    /// Adds a field.
    pub fn field(mut self, name: &str, ty: FieldType) -> Schema {
        self.fields.push(Field {
            name: name.to_string(),
            ty,
        });
        self
    }

    /// Adds an integer field.
    pub fn int(self, name: &str) -> Schema {
        self.field(name, FieldType::Int)
    }

    /// Adds a text field.
    pub fn text(self, name: &str) -> Schema {
        self.field(name, FieldType::Text)
    }

    /// Adds a time field (milliseconds).
    pub fn time(self, name: &str) -> Schema {
        self.field(name, FieldType::Time)
    }

    /// Sets the primary key.
    pub fn primary_key(mut self, fields: &[&str]) -> Schema {
        self.primary_key = fields.iter().map(|f| f.to_string()).collect();
        self
    }

    /// Sets the source-of-truth layout.
    pub fn source_of_truth(mut self, layout: LayoutSpec) -> Schema {
        self.source = Some(layout);
        self
    }

    /// Adds a copy layout.
    pub fn layout(mut self, layout: LayoutSpec) -> Schema {
        self.layouts.push(layout);
        self
    }

    /// The field with this name.
    pub fn field_named(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub(crate) fn schema_error(&self, what: impl Into<String>) -> Error {
        Error::Schema {
            table: self.name.clone(),
            what: what.into(),
        }
    }

    pub(crate) fn record_error(&self, what: impl Into<String>) -> Error {
        Error::Record {
            table: self.name.clone(),
            what: what.into(),
        }
    }

    /// Checks the fields and the primary key (the layouts are checked by
    /// [`crate::layout::Layout::new`]).
    pub(crate) fn check(&self) -> Result<()> {
        cellar_engine::validate_family_name(&self.name)
            .map_err(|_| self.schema_error("a table name is 1 to 64 of [a-z0-9_]"))?;
        if self.fields.is_empty() {
            return Err(self.schema_error("a table needs at least one field"));
        }
        for (i, f) in self.fields.iter().enumerate() {
            if f.name.is_empty() || !f.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(self.schema_error(format!("field name {:?}: use letters, digits and _", f.name)));
            }
            if f.name == "ts" {
                return Err(self.schema_error(
                    "`ts` is the key syntax's name for a layout's time field: name the field for what it is",
                ));
            }
            if self.fields[..i].iter().any(|g| g.name == f.name) {
                return Err(self.schema_error(format!("field {} is declared twice", f.name)));
            }
        }
        if self.primary_key.is_empty() {
            return Err(self.schema_error("a table needs a primary key"));
        }
        for (i, k) in self.primary_key.iter().enumerate() {
            if self.field_named(k).is_none() {
                return Err(self.schema_error(format!("primary key field {k} is not a field")));
            }
            if self.primary_key[..i].contains(k) {
                return Err(self.schema_error(format!("primary key field {k} is named twice")));
            }
        }
        Ok(())
    }

    /// Checks a record, a key or a set of changes against the fields: every
    /// field it names exists and has a value of the field's type; with
    /// `complete`, every field is there.
    pub(crate) fn check_record(&self, record: &Record, complete: bool) -> Result<()> {
        for (name, value) in record.iter() {
            let field = self
                .field_named(name)
                .ok_or_else(|| self.record_error(format!("unknown field {name}")))?;
            let ok = match (field.ty, value) {
                (FieldType::Int, Value::Int(_)) | (FieldType::Text, Value::Text(_)) => true,
                (FieldType::Time, Value::Int(v)) => *v >= 0,
                _ => false,
            };
            if !ok {
                return Err(self.record_error(format!(
                    "field {name} is {}, not {value}{}",
                    field.ty.name(),
                    if field.ty == FieldType::Time {
                        " (a time is a non-negative number of milliseconds)"
                    } else {
                        ""
                    }
                )));
            }
        }
        if complete {
            if let Some(missing) = self.fields.iter().find(|f| record.get(&f.name).is_none()) {
                return Err(self.record_error(format!("the record has no {}", missing.name)));
            }
        }
        Ok(())
    }

    /// Checks a primary key: exactly the key fields, with values of their types.
    pub(crate) fn check_key(&self, key: &Record) -> Result<()> {
        self.check_record(key, false)?;
        let named: Vec<&str> = key.iter().map(|(f, _)| f).collect();
        let mut wanted: Vec<&str> = self.primary_key.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        if named != wanted {
            return Err(self.record_error(format!(
                "a key gives exactly the primary key fields ({}), not {}",
                self.primary_key.join(", "),
                if named.is_empty() {
                    "none".into()
                } else {
                    named.join(", ")
                }
            )));
        }
        Ok(())
    }

    /// The primary key of a record, as `field=value` pairs.
    pub(crate) fn key_text(&self, record: &Record) -> String {
        record.project(self.primary_key.iter().map(String::as_str)).to_string()
    }
}
