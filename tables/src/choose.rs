//! Which layout serves a read: the key designer's planner, asked of every
//! readable layout.
//!
//! For each readable layout the access path is translated into the
//! planner's terms (`cellar_keys::planner::Query`): its equality values, and
//! its range as a time predicate when the range field is the time field the
//! layout's timestamp parts read. The planner walks the layout's key as a
//! hashed store's (Cassandra's) partition key plus clustering columns, which
//! is how a layout is stored here: partition = row, clustering = columns.
//! Its plan is one of
//!
//! * a **slice** of one partition (a point read or a column range),
//! * a **fan-out** over the partitions of time buckets or salts, at most
//!   [`cellar_keys::planner::MAX_FAN_OUT`] of them,
//! * a **full scan**, when the read does not fix the partition key: that
//!   layout does not serve the path.
//!
//! Among the layouts that serve it, the choice prefers a plan that is exact
//! (every record in its slices answers the read), then fewer slices, then
//! slices already in the path's order (so the limit stops the read early),
//! then the order the layouts were declared in. When none serves it, the
//! planner's `serving_layout` proposes one, adapted to the table: the
//! refusal names it, ready for [`crate::Table::add_layout`].

use bytes::Bytes;
use cellar_engine::ColumnRange;
use cellar_keys::key::{FieldEncoding, KeyDesign, Part};
use cellar_keys::planner::{self, Plan, PlanKind, Query, TimePredicate};

use crate::catalog::Definition;
use crate::error::Result;
use crate::layout::{Layout, LayoutSpec, LayoutState, Role};
use crate::path::{AccessPath, Params};
use crate::record::Value;
use crate::schema::FieldType;

/// One slice of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The partition (row key).
    pub row: Vec<u8>,
    /// The columns of it, with the limit when it can be pushed down.
    pub columns: ColumnRange,
}

/// How a layout serves a read.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The layout.
    pub layout: String,
    /// The key designer's plan.
    pub plan: Plan,
    /// The slices to read.
    pub requests: Vec<Request>,
    /// Every record in the slices answers the read: nothing is read and dropped.
    pub exact: bool,
    /// The slices yield records in the path's order, so the limit is pushed
    /// down and the read stops early.
    pub ordered: bool,
}

/// The outcome of planning a read.
#[derive(Clone, Debug, PartialEq)]
pub enum Planned {
    /// The best layout's plan.
    Served(Box<Choice>),
    /// No readable layout serves it: why not, layout by layout, and one that would.
    Unserved {
        /// `layout: why` for every readable layout.
        reasons: Vec<String>,
        /// A layout that would serve it.
        suggestion: Option<LayoutSpec>,
    },
}

/// Plans a read on every readable layout and picks the best.
pub(crate) fn choose(def: &Definition, path: &AccessPath, params: &Params) -> Result<Planned> {
    let mut best: Option<((bool, usize, bool, usize), Choice)> = None;
    let mut reasons = Vec::new();
    for (index, layout) in def.layouts.iter().enumerate().filter(|(_, l)| l.is_readable()) {
        match plan_on(def, layout, path, params)? {
            Ok(choice) => {
                let rank = (!choice.exact, choice.requests.len(), !choice.ordered, index);
                if best.as_ref().is_none_or(|(r, _)| rank < *r) {
                    best = Some((rank, choice));
                }
            }
            Err(why) => reasons.push(format!("{}: {why}", layout.name)),
        }
    }
    Ok(match best {
        Some((_, choice)) => Planned::Served(Box::new(choice)),
        None => Planned::Unserved {
            reasons,
            suggestion: suggest(def, path, params)?,
        },
    })
}

/// The planner's query for a path on one layout, or why the layout's key
/// cannot take the path's range.
fn keys_query(layout: &Layout, path: &AccessPath, params: &Params) -> std::result::Result<Query, String> {
    let time_field = layout.time_field.as_deref();
    let mut equals = Vec::new();
    let mut time = TimePredicate::Any;
    for (f, v) in &params.values {
        match v {
            Value::Int(t) if Some(f.as_str()) == time_field && *t >= 0 => time = TimePredicate::At(*t as u64),
            _ => equals.push((f.clone(), v.clone())),
        }
    }
    if let (Some(r), Some((from, to))) = (&path.range, params.between) {
        if Some(r.as_str()) != time_field {
            return Err(format!(
                "its key orders by {}, not by {r}",
                time_field.map_or("no time field".to_string(), |t| t.to_string())
            ));
        }
        time = TimePredicate::Between(from, to);
    }
    Ok(Query {
        name: path.name.clone(),
        equals,
        time,
        newest_first: path.newest_first && path.range.is_some() && path.range.as_deref() == time_field,
        limit: path.limit,
    })
}

/// How one layout would serve a read, or why it does not.
fn plan_on(
    def: &Definition,
    layout: &Layout,
    path: &AccessPath,
    params: &Params,
) -> Result<std::result::Result<Choice, String>> {
    let query = match keys_query(layout, path, params) {
        Ok(q) => q,
        Err(why) => return Ok(Err(why)),
    };
    let id = def.schema.primary_key.first().map_or("id", String::as_str);
    let plan = planner::plan(&layout.key, &query, true, id)?;
    if plan.kind == PlanKind::FullScan {
        return Ok(Err(plan.note));
    }
    let Some(partitions) = plan.partitions.clone() else {
        return Ok(Err("the plan names no partition".into()));
    };
    let ordered = plan.exact && plan.ranges.len() == 1 && in_path_order(def, layout, path, params);
    let mut requests = Vec::new();
    for range in &plan.ranges {
        // The partition a range lies in: the longest one its start begins with.
        let Some(row) = partitions
            .iter()
            .filter(|p| range.from.starts_with(p))
            .max_by_key(|p| p.len())
        else {
            return Ok(Err("a range of the plan lies in no partition".into()));
        };
        let tail = |key: &[u8]| key.get(row.len()..).unwrap_or(&[]).to_vec();
        let from = tail(&range.from);
        let to = range.to.as_deref().filter(|t| t.starts_with(row)).map(tail);
        let mut columns = ColumnRange {
            from: (!from.is_empty()).then(|| Bytes::from(from)),
            to: to.map(Bytes::from),
            ..ColumnRange::default()
        };
        if ordered {
            columns.limit = path.limit;
        }
        requests.push(Request {
            row: row.clone(),
            columns,
        });
    }
    Ok(Ok(Choice {
        layout: layout.name.clone(),
        exact: plan.exact,
        plan,
        requests,
        ordered,
    }))
}

/// True when, inside the one partition a plan reads, the layout keeps the
/// records a read selects in the path's order: after the parts the read
/// fixes comes the range field in the wanted direction, then the
/// primary-key fields not fixed, each in an order-preserving encoding. Then
/// the first `limit` columns of the slice are the answer.
fn in_path_order(def: &Definition, layout: &Layout, path: &AccessPath, params: &Params) -> bool {
    let given = |f: &str| params.value(f).is_some();
    let time_given = layout.time_field.as_deref().is_some_and(given);
    let parts = &layout.key.parts;
    // With one slice the partition is one row: all its parts are constant.
    let split = layout.key.partition_len();
    let mut rest = parts.iter().enumerate().filter(|(_, p)| !p.is_literal()).peekable();
    // Skip the parts the read fixes.
    while let Some((i, p)) = rest.peek() {
        let fixed = *i < split
            || match p {
                Part::Field { name, .. } | Part::Salt { field: name, .. } | Part::HashPrefix { field: name, .. } => {
                    given(name)
                }
                Part::Timestamp(_) => time_given,
                _ => false,
            };
        if !fixed {
            break;
        }
        rest.next();
    }
    let mut pending: Vec<&str> = def
        .schema
        .primary_key
        .iter()
        .map(String::as_str)
        .filter(|k| !given(k))
        .collect();
    if pending.is_empty() {
        return true; // at most one record
    }
    if let Some(range) = &path.range {
        if layout.time_field.as_deref() != Some(range.as_str()) {
            return false;
        }
        // Ascending buckets before an ascending time keep its order.
        while let Some((_, Part::Timestamp(form))) = rest.peek() {
            if form.is_bucket() && !path.newest_first {
                rest.next();
            } else {
                break;
            }
        }
        match rest.next() {
            Some((_, Part::Timestamp(form))) if !form.is_bucket() && form.newest_first() == path.newest_first => {}
            _ => return false,
        }
    }
    for (i, part) in rest {
        let Part::Field { name, encoding } = part else {
            return false;
        };
        if pending.first() != Some(&name.as_str()) {
            return false;
        }
        let ty = def.schema.field_named(name).map(|f| f.ty);
        let keeps_order = match encoding {
            FieldEncoding::Padded(_) | FieldEncoding::U64 | FieldEncoding::FlippedLong => ty != Some(FieldType::Text),
            // Text sorts as its bytes only when nothing follows it.
            FieldEncoding::Text => ty == Some(FieldType::Text) && i + 1 == parts.len(),
            FieldEncoding::RawLong => false,
        };
        if !keeps_order {
            return false;
        }
        pending.remove(0);
        if pending.is_empty() {
            return true;
        }
    }
    false
}

/// A layout that would serve the path: the planner's `serving_layout` (the
/// equality fields, then the time in the wanted order, then the id), with
/// the primary key completed, numbers zero-padded so that ties keep their
/// order, and no timestamp when the path has no range field. `None` when the
/// path has nothing to key on, or the proposal would not serve it either.
fn suggest(def: &Definition, path: &AccessPath, params: &Params) -> Result<Option<LayoutSpec>> {
    if path.equals.is_empty() && path.range.is_none() {
        return Ok(None);
    }
    let schema = &def.schema;
    let sample = |f: &str| match schema.field_named(f).map(|f| f.ty) {
        Some(FieldType::Text) => Value::Text(String::new()),
        _ => Value::Int(0),
    };
    let query = Query {
        name: path.name.clone(),
        equals: path
            .equals
            .iter()
            .map(|f| (f.clone(), params.value(f).cloned().unwrap_or_else(|| sample(f))))
            .collect(),
        time: TimePredicate::Any,
        newest_first: path.newest_first && path.range.is_some(),
        limit: path.limit,
    };
    let id = schema.primary_key.first().map_or("id", String::as_str);
    let proposed = planner::serving_layout(&query, id);
    let mut parts: Vec<Part> = Vec::new();
    for part in proposed.parts {
        match part {
            Part::Timestamp(_) if path.range.is_none() => {}
            Part::Separator(_) if matches!(parts.last(), None | Some(Part::Separator(_))) => {}
            Part::Field {
                name,
                encoding: FieldEncoding::Text,
            } if schema.field_named(&name).is_some_and(|f| f.ty != FieldType::Text) => parts.push(Part::Field {
                name,
                encoding: FieldEncoding::Padded(19),
            }),
            other => parts.push(other),
        }
    }
    for k in &schema.primary_key {
        if !parts.iter().any(|p| matches!(p, Part::Field { name, .. } if name == k)) {
            if !matches!(parts.last(), None | Some(Part::Separator(_))) {
                parts.push(Part::Separator(b"#".to_vec()));
            }
            let encoding = match schema.field_named(k).map(|f| f.ty) {
                Some(FieldType::Text) => FieldEncoding::Text,
                _ => FieldEncoding::Padded(19),
            };
            parts.push(Part::Field {
                name: k.clone(),
                encoding,
            });
        }
    }
    while matches!(parts.last(), Some(Part::Separator(_))) {
        parts.pop();
    }
    let key = KeyDesign {
        parts,
        partition_parts: None,
    };
    let base = match (path.equals.is_empty(), &path.range) {
        (false, _) => format!("{}_by_{}", schema.name, path.equals.join("_")),
        (true, Some(r)) => format!("{}_by_{r}_hour", schema.name),
        (true, None) => return Ok(None),
    };
    // A name the table does not have yet, so that add_layout takes the
    // suggestion as it is: the layout by the same fields may exist, ordered
    // by another time.
    let candidates = std::iter::once(base.clone())
        .chain(path.range.iter().map(|r| format!("{base}_{r}")))
        .chain((2..10).map(|n| format!("{base}_{n}")));
    let Some(name) = candidates.into_iter().find(|n| def.layout(n).is_err()) else {
        return Ok(None);
    };
    let mut spec = LayoutSpec::new(&name, &key.to_string());
    if let Some(r) = &path.range {
        spec = spec.time(r);
    }
    // Offer it only if it is a valid layout that serves the path.
    let Ok(layout) = Layout::new(schema, &spec, Role::Copy, LayoutState::Readable) else {
        return Ok(None);
    };
    Ok(match plan_on(def, &layout, path, params)? {
        Ok(_) => Some(spec),
        Err(_) => None,
    })
}
