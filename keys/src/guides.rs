//! What the guides say: a key design read against the advice of the Bigtable
//! and HBase schema guides, before any write is simulated.
//!
//! The simulation shows *that* a key hot-spots or a read becomes a scan; the
//! guides say *why*, from the parts alone. Each finding names the part, says
//! what its bytes do, with bytes the part's own encoder wrote, and cites the
//! guide that gives the advice:
//!
//! * a time part leading the key of a range store: every write lands next to
//!   the last one (Bigtable's guide advises against a timestamp alone or at
//!   the start of a row key; HBase's calls it the monotonically increasing
//!   row key);
//! * a number written as text: `"10"` sorts before `"2"`;
//! * a raw signed long: `-1` sorts after `255`;
//! * a reverse timestamp: `Long.MAX_VALUE - ts` puts the newest row first;
//! * salts, round-robin salts and hash prefixes: what they spread, and what
//!   a reader must then do;
//! * a text part with no separator after it: two records can make one key.
//!
//! ```
//! use cellar_keys::{guides, syntax};
//! let key = syntax::parse(r##"ts(ms) "#" field(order_id)"##)?;
//! let findings = guides::check(&key, &guides::FieldKinds::numbers(&["order_id"]), true);
//! assert!(findings[0].says.contains("leads the key"));
//! # Ok::<(), cellar_keys::Error>(())
//! ```

use crate::encoding::{raw_long, reverse_ts19, to_string_binary};
use crate::experiment::Run;
use crate::key::{FieldEncoding, KeyDesign, Part, TimeForm};
use crate::workload::{Record, Value};

/// Where a piece of advice comes from.
pub const BIGTABLE: &str = "Bigtable, schema design best practices";
/// The HBase reference guide's chapter on row keys.
pub const HBASE: &str = "HBase reference guide, Rowkey design";
/// The DynamoDB guide on partition keys (Cassandra's data modelling guide
/// gives the same advice for its partition keys).
pub const DYNAMODB: &str = "AWS, Designing partition keys and write sharding";

/// One thing the guides say about a design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The part it is about, as key syntax (`ts(ms)`).
    pub part: String,
    /// Whether following the advice would change the design (a warning),
    /// or the finding only explains what the part does (a note).
    pub warning: bool,
    /// What the part's bytes do, with an example.
    pub says: String,
    /// The guides that give the advice.
    pub sources: Vec<&'static str>,
}

impl Finding {
    /// One line: `advice: ts(ms) leads the key: ... (Bigtable, ...)`, or
    /// `note: ...` for a finding that only explains.
    pub fn line(&self) -> String {
        format!(
            "{}: {} ({})",
            if self.warning { "advice" } else { "note" },
            self.says,
            self.sources.join("; ")
        )
    }
}

/// Which fields of the workload hold numbers (the rest hold text): a number
/// written as text sorts wrongly, text written as text does not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldKinds {
    numbers: Vec<String>,
}

impl FieldKinds {
    /// The numeric fields of a record (`ts` is always a number).
    pub fn of(record: &Record) -> FieldKinds {
        FieldKinds {
            numbers: record
                .fields
                .iter()
                .filter(|(_, v)| matches!(v, Value::Int(_)))
                .map(|(n, _)| n.to_string())
                .collect(),
        }
    }

    /// These fields hold numbers.
    pub fn numbers(names: &[&str]) -> FieldKinds {
        FieldKinds {
            numbers: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn is_number(&self, name: &str) -> bool {
        self.numbers.iter().any(|n| n == name)
    }
}

/// What the guides say about a run's key, on its store and workload (the
/// first record says which fields hold numbers).
pub fn of_run(run: &Run) -> Vec<Finding> {
    let fields = run.records.first().map(FieldKinds::of).unwrap_or_default();
    check(&run.experiment.key, &fields, run.experiment.cluster.model.is_range())
}

/// The findings as the lines `cellar keys` and its report print.
pub fn lines(findings: &[Finding]) -> Vec<String> {
    if findings.is_empty() {
        return vec!["what the guides say: nothing against this key".to_string()];
    }
    let mut out = vec!["what the guides say:".to_string()];
    out.extend(findings.iter().map(|f| format!("  {}", f.line())));
    out
}

/// Reads `design` against the guides, first part first. `range_store` is
/// true for stores that keep rows sorted and split them into regions
/// (Bigtable, HBase), false for hashed stores (Cassandra, DynamoDB), where
/// only the partition key decides placement.
pub fn check(design: &KeyDesign, fields: &FieldKinds, range_store: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(f) = leading_time(design, range_store) {
        out.push(f);
    }
    // A hashed store orders rows only inside a partition: the partition
    // key's bytes are hashed, so their order does not matter.
    let hashed_until = if range_store { 0 } else { design.partition_len() };
    let values: Vec<(usize, &Part)> = design
        .parts
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_literal())
        .collect();
    for (position, &(i, part)) in values.iter().enumerate() {
        let leads = position == 0;
        if let Some(f) = about_part(part, fields, leads, range_store, i < hashed_until) {
            out.push(f);
        }
        // A text part with a part of no fixed width after it and no
        // separator between: no byte says where one ends and the next begins.
        // (Fixed-width parts alone after it are fine: their width does.)
        let text = matches!(
            part,
            Part::Field {
                encoding: FieldEncoding::Text,
                ..
            }
        );
        let mut run_after = design
            .parts
            .get(i + 1..)
            .unwrap_or_default()
            .iter()
            .take_while(|p| !p.is_literal());
        if let Some(next) = run_after.find(|p| p.fixed_width().is_none()).filter(|_| text) {
            out.push(Finding {
                part: part.to_string(),
                warning: true,
                says: format!(
                    "{part} is text of no fixed width and {next} follows it with no separator: the values \
                     (\"1\", \"23\") and (\"12\", \"3\") make the same bytes, so one write overwrites the other; \
                     put a separator between them"
                ),
                sources: vec![HBASE],
            });
        }
    }
    out
}

/// A time part first: on a range store every write sorts next to the one
/// before; on a hashed store a partition key of a time bucket alone sends a
/// period's writes to one partition.
fn leading_time(design: &KeyDesign, range_store: bool) -> Option<Finding> {
    let first = design.parts.iter().find(|p| !p.is_literal())?;
    let Part::Timestamp(form) = first else {
        return None;
    };
    if !range_store {
        let partition = design.parts.get(..design.partition_len()).unwrap_or_default();
        // A bucket alone: a whole hour (day, month) of writes hashes to one
        // partition. (A millisecond alone hashes to a partition of its own,
        // and the writes spread.)
        let bucket_only = partition
            .iter()
            .filter(|p| !p.is_literal())
            .all(|p| matches!(p, Part::Timestamp(f) if f.is_bucket()));
        return bucket_only.then(|| Finding {
            part: first.to_string(),
            warning: true,
            says: format!(
                "{first} is the whole partition key: every write of the same bucket goes to one partition, \
                 on one node, until the next bucket starts; lead the partition key with the entity the reads name"
            ),
            sources: vec![DYNAMODB],
        });
    }
    let where_ = if form.is_bucket() {
        "every write of one bucket shares it, so one region takes a whole bucket's writes, and the \
         next bucket's land next to them"
    } else if form.newest_first() {
        "each write sorts before every earlier one, so the first region takes every write"
    } else {
        "each write sorts after every earlier one, so the last region takes every write; splitting \
         never helps, the newest region is always the hot one"
    };
    Some(Finding {
        part: first.to_string(),
        warning: true,
        says: format!(
            "{first} leads the key: {where_}. Lead with a field the reads name (or a salt) and put the time after it"
        ),
        sources: vec![BIGTABLE, HBASE],
    })
}

/// What one value part's encoding does to order and placement.
/// `hashed` is true for a part of a hashed store's partition key, whose
/// bytes are hashed: their order does not matter.
fn about_part(part: &Part, fields: &FieldKinds, leads: bool, range_store: bool, hashed: bool) -> Option<Finding> {
    let finding = |warning: bool, says: String, sources: Vec<&'static str>| {
        Some(Finding {
            part: part.to_string(),
            warning,
            says,
            sources,
        })
    };
    match part {
        Part::Field {
            name,
            encoding: FieldEncoding::Text,
        } if fields.is_number(name) && !hashed => finding(
            true,
            format!(
                "{part} writes the number {name} as text, and bytes compare left to right: \"10\" sorts before \
                 \"2\" ('1' < '2'), so a range over {name} is not a range of keys; write it zero-padded \
                 (pad({name},W)) or as 8 bytes (u64({name}))"
            ),
            vec![BIGTABLE, HBASE],
        ),
        Part::Field {
            name,
            encoding: FieldEncoding::RawLong,
        } if !hashed => finding(
            true,
            format!(
                "{part} writes {name} as Bytes.toBytes(long), two's complement: -1 is {} and 255 is {}, so \
                 every negative value sorts after every positive one; flip({name}) flips the sign bit and \
                 keeps numeric order",
                to_string_binary(&raw_long(-1)),
                to_string_binary(&raw_long(255))
            ),
            vec![HBASE],
        ),
        Part::Timestamp(form @ (TimeForm::Reversed19 | TimeForm::Reversed8)) => {
            let (older, newer) = (1_704_067_200_000u64, 1_704_067_200_001u64);
            let show = |ts: u64| match form {
                TimeForm::Reversed19 => String::from_utf8_lossy(&reverse_ts19(ts)).into_owned(),
                _ => to_string_binary(&crate::encoding::reverse_ts8(ts)),
            };
            finding(
                false,
                format!(
                    "{part} writes Long.MAX_VALUE - ts: a later time gives a smaller value ({newer} ms is {}, \
                     {older} ms is {}), so the newest row sorts first and a scan from the prefix reads the \
                     latest rows first",
                    show(newer),
                    show(older)
                ),
                vec![BIGTABLE, HBASE],
            )
        }
        Part::RoundRobin { buckets } => finding(
            true,
            format!(
                "{part} spreads writes over {buckets} buckets by write number, which no reader can work out: \
                 every read, a point read included, is a fan-out over all {buckets} buckets; salt with a hash \
                 of a field the reads know (salt(f,{buckets})) instead"
            ),
            vec![HBASE],
        ),
        Part::Salt { field, buckets } if leads && range_store => finding(
            false,
            format!(
                "{part} spreads writes over {buckets} buckets; a read that knows {field} works out its \
                 bucket, a read that does not (everything in one minute) is a fan-out of {buckets} scans"
            ),
            vec![HBASE],
        ),
        Part::HashPrefix { field, .. } if leads && range_store => finding(
            false,
            format!(
                "{part} spreads writes, but neighbouring values of {field} land far apart: a read of one {field} \
                 is one scan, a range over {field} is a scan of the whole table"
            ),
            vec![BIGTABLE, HBASE],
        ),
        _ => None,
    }
}
