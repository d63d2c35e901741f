//! Key parts, and a key design built from them.
//!
//! A row key is a concatenation of parts. Each part says where its bytes come
//! from (a field of the record, its timestamp, a hash, a constant) and how
//! they are encoded (see [`crate::encoding`] for why the encoding matters).
//! The order of the parts decides everything else: the leading part decides
//! where writes land (a timestamp first sends them all to one place, a salt
//! first spreads them), and the prefix a read can fix decides whether it is a
//! range scan or a scan of the whole table.
//!
//! For hashed stores (Cassandra, DynamoDB) the leading parts up to
//! [`KeyDesign::partition_parts`] form the *partition key*, which is hashed to
//! place the row; the rest is the clustering (sort) key, ordered within the
//! partition.
//!
//! ```
//! use cellar_keys::key::{KeyDesign, TimeForm};
//! let key = KeyDesign::builder()
//!     .salt("customer", 16)
//!     .sep("#")
//!     .pad("customer", 12)
//!     .sep("#")
//!     .timestamp(TimeForm::Reversed19)
//!     .sep("#")
//!     .field("order_id")
//!     .build();
//! assert_eq!(
//!     key.to_string(),
//!     r##"salt(customer,16) "#" pad(customer,12) "#" revts(ms,19) "#" field(order_id)"##
//! );
//! ```

use crate::encoding::{self, decimal_width};
use crate::error::{Error, Result};
use crate::workload::{Record, Value};

/// How a field's value becomes bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldEncoding {
    /// As text: `42` becomes `"42"`. Numbers sort wrongly (`"10" < "2"`).
    Text,
    /// Zero-padded decimal of this width: `42` becomes `"000042"`.
    Padded(usize),
    /// 8 bytes, big-endian, unsigned (negative values are refused).
    U64,
    /// 8 bytes as HBase `Bytes.toBytes(long)`: negative numbers sort last.
    RawLong,
    /// 8 bytes with the sign bit flipped: numeric order over all longs.
    FlippedLong,
}

/// How the record's timestamp becomes bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeForm {
    /// 13 decimal digits of milliseconds: oldest first.
    Millis13,
    /// 8 big-endian bytes of milliseconds: oldest first.
    Bytes8,
    /// `Long.MAX_VALUE - ts` as 8 bytes: newest first.
    Reversed8,
    /// `Long.MAX_VALUE - ts` as 19 digits: newest first.
    Reversed19,
    /// The hour, `YYYYMMDDHH`: every write of an hour shares it.
    HourBucket,
    /// The day, `YYYYMMDD`: a partition per day bounds how large one grows.
    DayBucket,
    /// The month, `YYYYMM`.
    MonthBucket,
}

impl TimeForm {
    /// True when a larger timestamp sorts first.
    pub fn newest_first(self) -> bool {
        matches!(self, TimeForm::Reversed8 | TimeForm::Reversed19)
    }

    /// True for the hour, day and month buckets: a form that many
    /// timestamps share, so it groups rows rather than ordering them.
    pub fn is_bucket(self) -> bool {
        matches!(self, TimeForm::HourBucket | TimeForm::DayBucket | TimeForm::MonthBucket)
    }

    /// The buckets that the times `[from, to)` fall in, oldest first: the
    /// partitions a read of that range must visit when the bucket is part of
    /// a partition key. `None` for a form that is not a bucket, for an empty
    /// range, or when there would be more than `max` buckets (a fan-out too
    /// wide to be worth it).
    ///
    /// ```
    /// use cellar_keys::key::TimeForm;
    /// let (jan_30, feb_2) = (1_706_572_800_000, 1_706_832_000_000);
    /// assert_eq!(
    ///     TimeForm::DayBucket.buckets_between(jan_30, feb_2, 10),
    ///     Some(vec![b"20240130".to_vec(), b"20240131".to_vec(), b"20240201".to_vec()])
    /// );
    /// assert_eq!(TimeForm::MonthBucket.buckets_between(jan_30, feb_2, 10).map(|b| b.len()), Some(2));
    /// assert_eq!(TimeForm::HourBucket.buckets_between(jan_30, feb_2, 10), None); // 72 hours
    /// ```
    pub fn buckets_between(self, from: u64, to: u64, max: usize) -> Option<Vec<Vec<u8>>> {
        if to <= from || !self.is_bucket() {
            return None;
        }
        let last = to - 1;
        let mut out = Vec::new();
        let mut ts = from;
        loop {
            if out.len() == max {
                return None;
            }
            out.push(self.encode(ts).ok()?);
            // The first millisecond of the next bucket; none past `u64::MAX`.
            let next = match self {
                TimeForm::HourBucket => (ts / encoding::HOUR_MS + 1).checked_mul(encoding::HOUR_MS),
                TimeForm::DayBucket => (ts / encoding::DAY_MS + 1).checked_mul(encoding::DAY_MS),
                _ => {
                    let (y, m, _) = encoding::civil_from_days((ts / encoding::DAY_MS) as i64);
                    let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                    u64::try_from(encoding::days_from_civil(y, m, 1))
                        .ok()?
                        .checked_mul(encoding::DAY_MS)
                }
            };
            match next {
                Some(next) if next <= last => ts = next,
                _ => return Some(out),
            }
        }
    }

    /// The last millisecond this form can write: 13 digits end in 2286, a
    /// bucket's four-digit year in 9999 ([`encoding::LAST_BUCKET_MS`]), a
    /// reverse timestamp at `Long.MAX_VALUE` (past it, `Long.MAX_VALUE - ts`
    /// would be negative: every later time would share the key of
    /// `Long.MAX_VALUE`); 8 bytes take every `u64`.
    pub fn last_ms(self) -> u64 {
        match self {
            TimeForm::Millis13 => 9_999_999_999_999,
            TimeForm::HourBucket | TimeForm::DayBucket | TimeForm::MonthBucket => encoding::LAST_BUCKET_MS,
            TimeForm::Reversed8 | TimeForm::Reversed19 => encoding::LONG_MAX,
            TimeForm::Bytes8 => u64::MAX,
        }
    }

    /// The bytes of a timestamp in this form; a time past
    /// [`TimeForm::last_ms`] is refused, not written wider than the form.
    pub fn encode(self, ts: u64) -> Result<Vec<u8>> {
        if ts > self.last_ms() {
            return Err(Error::Encode {
                value: ts.to_string(),
                encoding: Part::Timestamp(self).to_string(),
                why: match self {
                    TimeForm::Millis13 => "needs more than 13 digits".into(),
                    TimeForm::Reversed8 | TimeForm::Reversed19 => {
                        "it is past Long.MAX_VALUE, and Long.MAX_VALUE - ts would be negative".into()
                    }
                    _ => "it is past the year 9999, and a bucket's year has four digits".into(),
                },
            });
        }
        Ok(match self {
            TimeForm::Millis13 => encoding::millis13(ts).ok_or_else(|| Error::Encode {
                value: ts.to_string(),
                encoding: "ts(ms)".into(),
                why: "needs more than 13 digits".into(),
            })?,
            TimeForm::Bytes8 => ts.to_be_bytes().to_vec(),
            TimeForm::Reversed8 => encoding::reverse_ts8(ts).to_vec(),
            TimeForm::Reversed19 => encoding::reverse_ts19(ts),
            TimeForm::HourBucket => encoding::hour_bucket(ts),
            TimeForm::DayBucket => encoding::day_bucket(ts),
            TimeForm::MonthBucket => encoding::month_bucket(ts),
        })
    }
}

/// One part of a row key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// A field of the record.
    Field {
        /// Field name.
        name: String,
        /// Its encoding.
        encoding: FieldEncoding,
    },
    /// The record's timestamp.
    Timestamp(TimeForm),
    /// `hash(field) mod buckets`, as zero-padded decimal. A reader who knows
    /// the field computes the bucket; one who does not must try them all.
    Salt {
        /// The field hashed.
        field: String,
        /// Number of buckets.
        buckets: u32,
    },
    /// `write number mod buckets`: spreads writes perfectly, but no reader
    /// can compute it, so every read is a fan-out over all buckets.
    RoundRobin {
        /// Number of buckets.
        buckets: u32,
    },
    /// The first `digits` hex digits of a hash of a field.
    HashPrefix {
        /// The field hashed.
        field: String,
        /// Hex digits kept (1 to 16).
        digits: u8,
    },
    /// Fixed bytes that name what the row is (`orders`).
    Constant(Vec<u8>),
    /// Fixed bytes between parts (`#`), so a text part cannot run into the
    /// next one.
    Separator(Vec<u8>),
}

impl Part {
    /// True for constants and separators, which carry no value.
    pub fn is_literal(&self) -> bool {
        matches!(self, Part::Constant(_) | Part::Separator(_))
    }

    /// The field a part reads, if any (`ts` for timestamps).
    pub fn field(&self) -> Option<&str> {
        match self {
            Part::Field { name, .. } => Some(name),
            Part::Salt { field, .. } | Part::HashPrefix { field, .. } => Some(field),
            Part::Timestamp(_) => Some("ts"),
            _ => None,
        }
    }

    /// Width in bytes when every value has the same width; `None` for text.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            Part::Field { encoding, .. } => match encoding {
                FieldEncoding::Text => None,
                FieldEncoding::Padded(w) => Some(*w),
                _ => Some(8),
            },
            Part::Timestamp(form) => Some(match form {
                TimeForm::Millis13 => 13,
                TimeForm::Bytes8 | TimeForm::Reversed8 => 8,
                TimeForm::Reversed19 => 19,
                TimeForm::HourBucket => 10,
                TimeForm::DayBucket => 8,
                TimeForm::MonthBucket => 6,
            }),
            Part::Salt { buckets, .. } | Part::RoundRobin { buckets } => {
                Some(decimal_width(u64::from(buckets.saturating_sub(1))))
            }
            Part::HashPrefix { digits, .. } => Some(usize::from(*digits)),
            Part::Constant(b) | Part::Separator(b) => Some(b.len()),
        }
    }

    /// The bytes of bucket `b` of a salt or round-robin part.
    pub fn bucket_bytes(buckets: u32, b: u32) -> Vec<u8> {
        let w = decimal_width(u64::from(buckets.saturating_sub(1)));
        format!("{b:0w$}").into_bytes()
    }

    /// The salt bucket of a value.
    pub fn salt_of(value: &Value, buckets: u32) -> u32 {
        (encoding::hash64(&value.text_bytes()) % u64::from(buckets.max(1))) as u32
    }

    /// The hash prefix of a value.
    pub fn hash_prefix_of(value: &Value, digits: u8) -> Vec<u8> {
        let hex = format!("{:016x}", encoding::hash64(&value.text_bytes()));
        hex.as_bytes()[..usize::from(digits.clamp(1, 16))].to_vec()
    }

    /// The bytes of one field value in an encoding.
    pub fn encode_field(value: &Value, encoding: FieldEncoding) -> Result<Vec<u8>> {
        let refuse = |why: &str| Error::Encode {
            value: value.to_string(),
            encoding: format!("{encoding:?}"),
            why: why.into(),
        };
        let number = || match value {
            Value::Int(v) => Ok(*v),
            Value::Text(_) => Err(refuse("text is not a number")),
        };
        Ok(match encoding {
            FieldEncoding::Text => value.text_bytes(),
            FieldEncoding::Padded(w) => {
                let v = u64::try_from(number()?).map_err(|_| refuse("negative numbers cannot be zero-padded"))?;
                encoding::padded_decimal(v, w).ok_or_else(|| refuse(&format!("needs more than {w} digits")))?
            }
            FieldEncoding::U64 => {
                let v = u64::try_from(number()?).map_err(|_| refuse("negative numbers are not unsigned"))?;
                encoding::unsigned_be(v).to_vec()
            }
            FieldEncoding::RawLong => encoding::raw_long(number()?).to_vec(),
            FieldEncoding::FlippedLong => encoding::flipped_long(number()?).to_vec(),
        })
    }

    /// This part's bytes for a record that is write number `write`.
    pub fn render(&self, record: &Record, write: u64) -> Result<Vec<u8>> {
        let value = |name: &str| {
            record.get(name).ok_or_else(|| Error::UnknownField {
                field: name.to_string(),
                workload: "record".into(),
                known: record.fields.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            })
        };
        match self {
            Part::Field { name, encoding } => Part::encode_field(&value(name)?, *encoding),
            Part::Timestamp(form) => form.encode(record.ts_ms),
            Part::Salt { field, buckets } => Ok(Part::bucket_bytes(*buckets, Part::salt_of(&value(field)?, *buckets))),
            Part::RoundRobin { buckets } => Ok(Part::bucket_bytes(
                *buckets,
                (write % u64::from((*buckets).max(1))) as u32,
            )),
            Part::HashPrefix { field, digits } => Ok(Part::hash_prefix_of(&value(field)?, *digits)),
            Part::Constant(b) | Part::Separator(b) => Ok(b.clone()),
        }
    }
}

/// A row-key design: parts in order, and for hashed stores how many leading
/// value parts form the partition key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyDesign {
    /// The parts, first byte first.
    pub parts: Vec<Part>,
    /// How many leading *value* parts (constants and separators not counted)
    /// form the partition key of a hashed store; `None` means the first one.
    pub partition_parts: Option<usize>,
}

impl KeyDesign {
    /// Starts an empty design.
    pub fn builder() -> KeyBuilder {
        KeyBuilder::default()
    }

    /// The row key of a record that is write number `write` (the write number
    /// matters only to a round-robin salt).
    pub fn render(&self, record: &Record, write: u64) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        for part in &self.parts {
            key.extend(part.render(record, write)?);
        }
        Ok(key)
    }

    /// How many parts (literals included) form the partition key: every part
    /// up to the last of the first `partition_parts` value parts.
    pub fn partition_len(&self) -> usize {
        let want = self.partition_parts.unwrap_or(1).max(1);
        let mut seen = 0;
        for (i, part) in self.parts.iter().enumerate() {
            if !part.is_literal() {
                seen += 1;
                if seen == want {
                    return i + 1;
                }
            }
        }
        self.parts.len()
    }

    /// The partition key of a record, for hashed placement.
    pub fn partition_key(&self, record: &Record, write: u64) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        for part in &self.parts[..self.partition_len()] {
            key.extend(part.render(record, write)?);
        }
        Ok(key)
    }

    /// The first part that reads a field not among `fields`, and that field.
    /// A time part (`ts(ms)`, `revts(ms,19)`, a bucket) is passed over: it
    /// reads the record's time, which the caller keeps apart from its fields
    /// (a workload's record as `ts`, a table under its layout's time field).
    pub fn unknown_field(&self, fields: &[&str]) -> Option<(&Part, &str)> {
        self.parts
            .iter()
            .filter(|p| !matches!(p, Part::Timestamp(_)))
            .find_map(|p| p.field().filter(|f| !fields.contains(f)).map(|f| (p, f)))
    }

    /// Checks that every field the design reads exists in `fields` (plus
    /// `ts`, a workload record's time), and that counts are in range (a
    /// partition key of at least one value part and no more than the key
    /// has).
    pub fn check(&self, workload: &str, fields: &[&str]) -> Result<()> {
        if self.parts.iter().all(Part::is_literal) {
            return Err(Error::InvalidSetting(
                "a key needs at least one part that is not a constant".into(),
            ));
        }
        let values = self.parts.iter().filter(|p| !p.is_literal()).count();
        if self.partition_parts == Some(0) {
            // Not read as one part, for the same reason as below (the
            // syntax refuses a `|` before the first value part).
            return Err(Error::InvalidSetting(
                "the partition key needs at least one value part".into(),
            ));
        }
        if let Some(n) = self.partition_parts.filter(|&n| n > values) {
            // Not cut to the whole key: a report on a partition key the
            // caller did not ask for would look like an answer about theirs.
            return Err(Error::InvalidSetting(format!(
                "the partition key is the first {n} value parts, and the key has {values}"
            )));
        }
        if let Some((_, field)) = self.unknown_field(&[fields, &["ts"]].concat()) {
            return Err(Error::UnknownField {
                field: field.to_string(),
                workload: workload.to_string(),
                known: format!("{} and ts", fields.join(", ")),
            });
        }
        for part in &self.parts {
            match part {
                Part::Salt { buckets: 0, .. } | Part::RoundRobin { buckets: 0 } => {
                    return Err(Error::InvalidSetting("a salt needs at least one bucket".into()))
                }
                Part::HashPrefix { digits, .. } if !(1..=16).contains(digits) => {
                    return Err(Error::InvalidSetting("a hash prefix keeps 1 to 16 hex digits".into()))
                }
                Part::Field {
                    encoding: FieldEncoding::Padded(0),
                    ..
                } => return Err(Error::InvalidSetting("padding needs a width of at least 1".into())),
                _ => {}
            }
        }
        Ok(())
    }

    /// The leading salt or hash part, if the key starts with one (used to
    /// choose pre-split points).
    pub fn leading_bucket_part(&self) -> Option<&Part> {
        self.parts
            .iter()
            .find(|p| !p.is_literal())
            .filter(|p| matches!(p, Part::Salt { .. } | Part::RoundRobin { .. } | Part::HashPrefix { .. }))
    }
}

/// Builds a [`KeyDesign`] part by part, in key order.
#[derive(Clone, Debug, Default)]
pub struct KeyBuilder {
    parts: Vec<Part>,
    partition_parts: Option<usize>,
}

impl KeyBuilder {
    fn push(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }
    /// A field as text.
    pub fn field(self, name: &str) -> Self {
        self.encoded(name, FieldEncoding::Text)
    }
    /// A field as zero-padded decimal.
    pub fn pad(self, name: &str, width: usize) -> Self {
        self.encoded(name, FieldEncoding::Padded(width))
    }
    /// A field in any encoding.
    pub fn encoded(self, name: &str, encoding: FieldEncoding) -> Self {
        self.push(Part::Field {
            name: name.to_string(),
            encoding,
        })
    }
    /// The timestamp in a form.
    pub fn timestamp(self, form: TimeForm) -> Self {
        self.push(Part::Timestamp(form))
    }
    /// A salt: hash of a field mod `buckets`.
    pub fn salt(self, field: &str, buckets: u32) -> Self {
        self.push(Part::Salt {
            field: field.to_string(),
            buckets,
        })
    }
    /// A round-robin salt over `buckets`.
    pub fn round_robin(self, buckets: u32) -> Self {
        self.push(Part::RoundRobin { buckets })
    }
    /// The first `digits` hex digits of a hash of a field.
    pub fn hash_prefix(self, field: &str, digits: u8) -> Self {
        self.push(Part::HashPrefix {
            field: field.to_string(),
            digits,
        })
    }
    /// A constant.
    pub fn constant(self, text: &str) -> Self {
        self.push(Part::Constant(text.as_bytes().to_vec()))
    }
    /// A separator.
    pub fn sep(self, text: &str) -> Self {
        self.push(Part::Separator(text.as_bytes().to_vec()))
    }
    /// Marks the parts so far as the partition key (for hashed stores); they
    /// must hold a value part ([`KeyDesign::check`] refuses a partition key
    /// of constants only).
    pub fn end_partition_key(mut self) -> Self {
        self.partition_parts = Some(self.parts.iter().filter(|p| !p.is_literal()).count());
        self
    }
    /// The design.
    pub fn build(self) -> KeyDesign {
        KeyDesign {
            parts: self.parts,
            partition_parts: self.partition_parts,
        }
    }
}
