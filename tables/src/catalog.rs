//! The catalog: each table's definition, kept in the store it describes.
//!
//! A table's fields, primary key and layouts (with each layout's state and,
//! while it is being built, how far its backfill has got) are one cell of
//! the family `table_catalog`: row = the table's name, column `definition`.
//! Keeping it in the store, rather than in a file beside it, is what makes
//! a backfill crash-safe: each batch of copies and the cursor that says how
//! far they reach are one [`cellar_engine::WriteBatch`], so after a crash
//! the cursor never claims a copy that was lost, nor forgets one that was
//! made. And a reader that takes a snapshot sees the definition and the data
//! of the same moment.
//!
//! The definition is text, one line per item, so `cellar get` shows it:
//!
//! ```text
//! cellar-table 1
//! field order_id int
//! field placed_at time
//! primary_key order_id
//! layout orders source readable - pad(order_id,10)
//! layout orders_by_customer copy readable placed_at pad(customer,8) | revts(ms,19) pad(order_id,10)
//! layout orders_by_warehouse copy building:3030303030303432/ shipped_at pad(warehouse,4) | ...
//! ```
//!
//! A building layout's cursor is the hex of the row and column of the last
//! source cell copied (`building` alone: nothing copied yet).

use cellar_engine::{FamilyOptions, Snapshot, Store};

use crate::error::{Error, Result};
use crate::layout::{Address, Layout, LayoutSpec, LayoutState, Role};
use crate::schema::{Field, FieldType, Schema};

/// The family holding every table's definition.
pub const CATALOG_FAMILY: &str = "table_catalog";

/// The column of a table's definition.
pub(crate) const DEFINITION_COLUMN: &str = "definition";

const HEADER: &str = "cellar-table 1";

/// A table as the catalog keeps it: the schema's fields and key, and the
/// checked layouts with their states, source of truth first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// Fields and primary key (its `source` and `layouts` are left empty:
    /// the layouts below are the truth).
    pub schema: Schema,
    /// Source of truth first, then the copies in declaration order.
    pub layouts: Vec<Layout>,
}

impl Definition {
    /// Checks a declared schema and makes its definition, every layout readable
    /// (a new table is empty, so there is nothing to backfill).
    pub(crate) fn from_schema(schema: &Schema) -> Result<Definition> {
        schema.check()?;
        let bare = Schema {
            source: None,
            layouts: Vec::new(),
            ..schema.clone()
        };
        let source = schema
            .source
            .as_ref()
            .ok_or_else(|| schema.schema_error("a table needs a source-of-truth layout"))?;
        let mut layouts = vec![Layout::new(&bare, source, Role::Source, LayoutState::Readable)?];
        for spec in &schema.layouts {
            layouts.push(Layout::new(&bare, spec, Role::Copy, LayoutState::Readable)?);
        }
        let def = Definition { schema: bare, layouts };
        def.check_names()?;
        Ok(def)
    }

    pub(crate) fn check_names(&self) -> Result<()> {
        for (i, l) in self.layouts.iter().enumerate() {
            if self.layouts[..i].iter().any(|m| m.name == l.name) {
                return Err(self.schema.schema_error(format!("two layouts are named {}", l.name)));
            }
        }
        Ok(())
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.schema.name
    }

    /// The source of truth.
    pub fn source(&self) -> &Layout {
        // `from_schema` and `parse` both put it first, and there is always one.
        &self.layouts[0]
    }

    /// The layout with this name.
    pub fn layout(&self, name: &str) -> Result<&Layout> {
        self.layouts
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| Error::UnknownLayout {
                table: self.schema.name.clone(),
                layout: name.to_string(),
            })
    }

    /// The definition as the catalog stores it.
    pub(crate) fn to_text(&self) -> String {
        let mut out = format!("{HEADER}\n");
        for f in &self.schema.fields {
            out.push_str(&format!("field {} {}\n", f.name, f.ty.name()));
        }
        out.push_str(&format!("primary_key {}\n", self.schema.primary_key.join(" ")));
        for l in &self.layouts {
            let role = match l.role {
                Role::Source => "source",
                Role::Copy => "copy",
            };
            let state = match &l.state {
                LayoutState::Readable => "readable".to_string(),
                LayoutState::Building { cursor: None } => "building".to_string(),
                LayoutState::Building { cursor: Some(c) } => format!("building:{}/{}", hex(&c.row), hex(&c.column)),
            };
            out.push_str(&format!(
                "layout {} {role} {state} {} {}\n",
                l.name,
                l.time_field.as_deref().unwrap_or("-"),
                l.key
            ));
        }
        out
    }

    /// Reads a stored definition back; `family` and `row` say where it lay.
    pub(crate) fn parse(text: &str, row: &str) -> Result<Definition> {
        let bad = |what: String| Error::Corruption {
            family: CATALOG_FAMILY.to_string(),
            row: row.to_string(),
            what: format!("table definition: {what}"),
        };
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(bad(format!("does not start with {HEADER:?}")));
        }
        let mut schema = Schema::new(row);
        let mut specs: Vec<(LayoutSpec, Role, LayoutState)> = Vec::new();
        for line in lines {
            let mut words = line.splitn(2, ' ');
            let (kind, rest) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            match kind {
                "field" => {
                    let (name, ty) = rest
                        .split_once(' ')
                        .ok_or_else(|| bad(format!("field line {line:?}")))?;
                    let ty = FieldType::from_name(ty).ok_or_else(|| bad(format!("field type {ty:?}")))?;
                    schema.fields.push(Field {
                        name: name.to_string(),
                        ty,
                    });
                }
                "primary_key" => schema.primary_key = rest.split(' ').map(str::to_string).collect(),
                "layout" => {
                    let w: Vec<&str> = rest.splitn(5, ' ').collect();
                    let [name, role, state, time, key] = w[..] else {
                        return Err(bad(format!("layout line {line:?}")));
                    };
                    let role = match role {
                        "source" => Role::Source,
                        "copy" => Role::Copy,
                        _ => return Err(bad(format!("layout role {role:?}"))),
                    };
                    let state = parse_state(state).ok_or_else(|| bad(format!("layout state {state:?}")))?;
                    let mut spec = LayoutSpec::new(name, key);
                    if time != "-" {
                        spec = spec.time(time);
                    }
                    specs.push((spec, role, state));
                }
                _ => return Err(bad(format!("unknown line {line:?}"))),
            }
        }
        schema.check().map_err(|e| bad(e.to_string()))?;
        if specs.first().map(|s| s.1) != Some(Role::Source) || specs.iter().skip(1).any(|s| s.1 == Role::Source) {
            return Err(bad("the source of truth is not the first and only source layout".into()));
        }
        let mut layouts = Vec::new();
        for (spec, role, state) in &specs {
            layouts.push(Layout::new(&schema, spec, *role, state.clone()).map_err(|e| bad(e.to_string()))?);
        }
        let def = Definition { schema, layouts };
        def.check_names().map_err(|e| bad(e.to_string()))?;
        Ok(def)
    }
}

fn parse_state(state: &str) -> Option<LayoutState> {
    match state {
        "readable" => Some(LayoutState::Readable),
        "building" => Some(LayoutState::Building { cursor: None }),
        _ => {
            let (row, column) = state.strip_prefix("building:")?.split_once('/')?;
            Some(LayoutState::Building {
                cursor: Some(Address {
                    row: unhex(row)?,
                    column: unhex(column)?,
                }),
            })
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// Makes sure the store has the catalog family.
pub(crate) fn ensure_catalog(store: &Store) -> Result<()> {
    if !store.families().iter().any(|f| f == CATALOG_FAMILY) {
        store.create_family(CATALOG_FAMILY, FamilyOptions::default())?;
    }
    Ok(())
}

/// The stored definition of a table, as a snapshot sees it.
pub(crate) fn load(snapshot: &Snapshot, table: &str) -> Result<Option<Definition>> {
    let Some(cell) = snapshot.get(CATALOG_FAMILY, table, DEFINITION_COLUMN)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&cell.value).map_err(|_| Error::Corruption {
        family: CATALOG_FAMILY.to_string(),
        row: table.to_string(),
        what: "table definition is not UTF-8".into(),
    })?;
    Definition::parse(text, table).map(Some)
}

/// The names of the tables the store's catalog holds.
pub fn tables(store: &Store) -> Result<Vec<String>> {
    if !store.families().iter().any(|f| f == CATALOG_FAMILY) {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for row in store.scan(CATALOG_FAMILY, &cellar_engine::RowRange::all())? {
        names.push(String::from_utf8_lossy(&row?.key).into_owned());
    }
    Ok(names)
}
