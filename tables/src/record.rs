//! Records: what a table holds, and the bytes every layout stores for one.
//!
//! A record is a set of named values. Every layout keeps the *whole* record
//! in one cell (row = the layout's partition key, column = its clustering
//! key), so any layout can answer a read without going back to another: that
//! is the duplication query-first design accepts. One cell per record also
//! makes the engine's counters speak in records: "entries examined" by a read
//! is records read.
//!
//! The cell value is the record's fields in the schema's order:
//!
//! ```text
//! version 0x01 | field * n
//! field = int or time: 8 bytes, big-endian two's complement
//!       | text:        length u32 big-endian | UTF-8 bytes
//! ```
//!
//! A value that does not decode exactly (short, long, bad UTF-8) is
//! corruption, never a guess.

use std::collections::BTreeMap;
use std::fmt;

pub use cellar_keys::workload::Value;

use crate::schema::{FieldType, Schema};

/// The format version written as the first byte of every record.
const RECORD_VERSION: u8 = 1;

/// Something that can be a field value: integers (and times in
/// milliseconds), text, or a [`Value`].
pub trait IntoValue {
    /// The value.
    fn into_value(self) -> Value;
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}
impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::Int(self)
    }
}
impl IntoValue for i32 {
    fn into_value(self) -> Value {
        Value::Int(i64::from(self))
    }
}
impl IntoValue for u32 {
    fn into_value(self) -> Value {
        Value::Int(i64::from(self))
    }
}
impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::Text(self.to_string())
    }
}
impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::Text(self)
    }
}

/// A record: field name to value. Also used for a primary key (only the key
/// fields) and for the changes of an update (only the changed fields).
///
/// ```
/// use cellar_tables::{Record, Value};
/// let order = Record::new().with("order_id", 7).with("status", "placed");
/// assert_eq!(order.get("order_id"), Some(&Value::Int(7)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Record {
    values: BTreeMap<String, Value>,
}

impl Record {
    /// An empty record.
    pub fn new() -> Record {
        Record::default()
    }

    /// The record with `field` set to `value`.
    pub fn with(mut self, field: &str, value: impl IntoValue) -> Record {
        self.set(field, value);
        self
    }

    /// Sets `field` to `value`.
    pub fn set(&mut self, field: &str, value: impl IntoValue) {
        self.values.insert(field.to_string(), value.into_value());
    }

    /// The value of `field`.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.values.get(field)
    }

    /// The integer value of `field` (times are integers of milliseconds).
    pub fn int(&self, field: &str) -> Option<i64> {
        match self.values.get(field) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// Fields and values, in field-name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of fields set.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The record with every field of `changes` replacing its own.
    pub fn merged(&self, changes: &Record) -> Record {
        let mut out = self.clone();
        for (k, v) in &changes.values {
            out.values.insert(k.clone(), v.clone());
        }
        out
    }

    /// Only the fields named (those it has).
    pub fn project<'a>(&self, fields: impl IntoIterator<Item = &'a str>) -> Record {
        let mut out = Record::new();
        for f in fields {
            if let Some(v) = self.values.get(f) {
                out.values.insert(f.to_string(), v.clone());
            }
        }
        out
    }
}

impl fmt::Display for Record {
    /// `field=value` pairs, text quoted: `order_id=7 status="placed"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// The cell value of a record: its fields in the schema's order. The record
/// must already be checked against the schema ([`Schema::check_record`]).
pub(crate) fn encode(schema: &Schema, record: &Record) -> Vec<u8> {
    let mut out = vec![RECORD_VERSION];
    for field in &schema.fields {
        match record.get(&field.name) {
            Some(Value::Int(v)) => out.extend_from_slice(&v.to_be_bytes()),
            Some(Value::Text(t)) => {
                out.extend_from_slice(&(t.len() as u32).to_be_bytes());
                out.extend_from_slice(t.as_bytes());
            }
            // A checked record has every field; nothing is written for a
            // missing one, and decoding will then refuse the value.
            None => {}
        }
    }
    out
}

/// A record from its cell value, or why the bytes are not one.
pub(crate) fn decode(schema: &Schema, bytes: &[u8]) -> std::result::Result<Record, String> {
    let (&version, mut rest) = bytes.split_first().ok_or("an empty record value")?;
    if version != RECORD_VERSION {
        return Err(format!("record format version {version}, expected {RECORD_VERSION}"));
    }
    let mut record = Record::new();
    for field in &schema.fields {
        let value = match field.ty {
            FieldType::Int | FieldType::Time => {
                let (head, tail) = rest
                    .split_first_chunk::<8>()
                    .ok_or_else(|| format!("field {} is cut short", field.name))?;
                rest = tail;
                Value::Int(i64::from_be_bytes(*head))
            }
            FieldType::Text => {
                let (len, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| format!("field {} is cut short", field.name))?;
                let len = u32::from_be_bytes(*len) as usize;
                let text = tail
                    .get(..len)
                    .ok_or_else(|| format!("field {} is cut short", field.name))?;
                rest = tail.get(len..).unwrap_or(&[]);
                Value::Text(String::from_utf8(text.to_vec()).map_err(|_| format!("field {} is not UTF-8", field.name))?)
            }
        };
        record.values.insert(field.name.clone(), value);
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the last field", rest.len()));
    }
    Ok(record)
}
