//! `verify`: does every layout hold exactly the records of the source of truth?
//!
//! The check a user can run at any time, and the tests' oracle. On one
//! snapshot (so writes may go on meanwhile, and the definition read is the
//! one of that moment) it reads every record of the source of truth, checks
//! that each lies where its own primary key puts it, computes where each
//! must lie in every other layout, and compares with what each layout holds:
//!
//! * **missing**: a record the layout should hold and does not;
//! * **unexpected**: a cell no record explains (a copy left behind by a move
//!   or a delete: the drift of hand-kept copies);
//! * **wrong**: the right cell with another value (a stale copy).
//!
//! A layout still being built may lack records its backfill has not reached
//! (past its cursor), but nothing it holds may be unexpected or wrong.

use std::collections::BTreeMap;

use bytes::Bytes;
use cellar_engine::RowRange;

use crate::catalog;
use crate::error::{Error, Result};
use crate::layout::{cells, Address, LayoutState};
use crate::record;
use crate::table::Table;

/// Problems kept per layout for the report (the counts are complete).
const EXAMPLES: usize = 5;

/// What [`Table::verify`] found in one layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutCheck {
    /// The layout.
    pub layout: String,
    /// Whether reads may use it (a building layout may lack records).
    pub readable: bool,
    /// Cells it holds.
    pub cells: u64,
    /// Records it should hold and does not.
    pub missing: u64,
    /// Cells no record of the source explains.
    pub unexpected: u64,
    /// Cells where a record belongs, holding another value.
    pub wrong: u64,
    /// The first few problems, for a person.
    pub examples: Vec<String>,
}

impl LayoutCheck {
    fn problem(&mut self, what: String) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(what);
        }
    }

    /// No missing, unexpected or wrong cell.
    pub fn is_consistent(&self) -> bool {
        self.missing == 0 && self.unexpected == 0 && self.wrong == 0
    }
}

/// What [`Table::verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Records in the source of truth.
    pub records: u64,
    /// Every layout, the source of truth first (its "wrong" cells are
    /// records stored under another key than their own, or that do not decode).
    pub layouts: Vec<LayoutCheck>,
}

impl VerifyReport {
    /// Every layout agrees with the source of truth.
    pub fn is_consistent(&self) -> bool {
        self.layouts.iter().all(LayoutCheck::is_consistent)
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} records in the source of truth", self.records)?;
        for l in &self.layouts {
            writeln!(
                f,
                "{}{}: {} cells, {} missing, {} unexpected, {} wrong",
                l.layout,
                if l.readable { "" } else { " (building)" },
                l.cells,
                l.missing,
                l.unexpected,
                l.wrong
            )?;
            for e in &l.examples {
                writeln!(f, "  {e}")?;
            }
        }
        Ok(())
    }
}

impl Table {
    /// Checks that every layout agrees with the source of truth, on one snapshot.
    pub fn verify(&self) -> Result<VerifyReport> {
        let snapshot = self.store.snapshot();
        let name = self.name();
        let def = catalog::load(&snapshot, &name)?.ok_or(Error::UnknownTable(name))?;
        let source = def.source();
        let mut report = VerifyReport::default();
        let mut check = LayoutCheck {
            layout: source.name.clone(),
            readable: true,
            ..LayoutCheck::default()
        };
        // Every record of the source, with its own address and value.
        let mut records = Vec::new();
        for cell in cells(snapshot.scan(&source.name, &RowRange::all())?) {
            let (at, value) = cell?;
            check.cells += 1;
            let record = match record::decode(&def.schema, &value) {
                Ok(r) => r,
                Err(why) => {
                    check.wrong += 1;
                    check.problem(format!("{at}: does not decode: {why}"));
                    continue;
                }
            };
            match source.address(&def.schema, &record) {
                Ok(own) if own == at => records.push((at, value, record)),
                Ok(own) => {
                    check.wrong += 1;
                    check.problem(format!("{at}: holds {record}, whose key is {own}"));
                }
                Err(e) => {
                    check.wrong += 1;
                    check.problem(format!("{at}: {e}"));
                }
            }
        }
        report.records = records.len() as u64;
        report.layouts.push(check);

        for layout in def.layouts.iter().skip(1) {
            let mut check = LayoutCheck {
                layout: layout.name.clone(),
                readable: layout.is_readable(),
                ..LayoutCheck::default()
            };
            // Where each record must lie: layout address -> (value, source address).
            let mut expected: BTreeMap<Address, (&Bytes, &Address)> = BTreeMap::new();
            for (at, value, record) in &records {
                match layout.address(&def.schema, record) {
                    Ok(to) => {
                        expected.insert(to, (value, at));
                    }
                    Err(e) => {
                        check.missing += 1;
                        check.problem(format!("record at {at} has no place: {e}"));
                    }
                }
            }
            for cell in cells(snapshot.scan(&layout.name, &RowRange::all())?) {
                let (at, value) = cell?;
                check.cells += 1;
                match expected.remove(&at) {
                    Some((want, _)) if *want == value => {}
                    Some((_, from)) => {
                        check.wrong += 1;
                        check.problem(format!("{at}: not the value of the record at {from}"));
                    }
                    None => {
                        check.unexpected += 1;
                        check.problem(format!("{at}: no record of the source lies here"));
                    }
                }
            }
            let copied_up_to = match &layout.state {
                LayoutState::Readable => None,
                LayoutState::Building { cursor } => Some(cursor.clone()),
            };
            for (at, (_, from)) in expected {
                let owed = match &copied_up_to {
                    None => true,
                    Some(cursor) => cursor.as_ref().is_some_and(|c| from <= c),
                };
                if owed {
                    check.missing += 1;
                    check.problem(format!("{at}: missing the record at {from}"));
                }
            }
            report.layouts.push(check);
        }
        Ok(report)
    }
}
