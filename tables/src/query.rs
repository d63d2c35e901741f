//! Reads: a declared path on the layout that serves it, or, when asked for,
//! a filtering scan.
//!
//! A read names an [`AccessPath`] and its [`Params`]. [`crate::choose`]
//! picks the layout whose key makes it one slice (or a bounded fan-out of
//! slices over time buckets); the slices are read on one snapshot, so a read
//! never sees half of a write. A path no layout serves is refused, with the
//! layout that would serve it: the answer to a new read path is a new layout
//! and a backfill, not a scan that slows down as the table grows (seed 001).
//!
//! A **filtering scan** reads every record of the source of truth and keeps
//! those that match, as Cassandra's `ALLOW FILTERING` does. It answers any
//! path, and its cost is the whole table; it runs only when the caller asks
//! for it ([`QueryOptions::allow_filtering`]), and the lesson runs it beside
//! every layout read to show what the layout saves.

use cellar_engine::{RowRange, Trace};

use crate::choose::{choose, Choice, Planned};
use crate::error::{Error, Result};
use crate::layout::{cells, Address};
use crate::path::{AccessPath, Params};
use crate::record::Record;
use crate::table::{decode_cell, Table};

/// How a read may run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryOptions {
    /// When no layout serves the path, answer with a filtering scan of the
    /// source of truth instead of refusing.
    pub allow_filtering: bool,
}

impl QueryOptions {
    /// Allows a filtering scan.
    pub fn allow_filtering(mut self) -> QueryOptions {
        self.allow_filtering = true;
        self
    }
}

/// A read's answer and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// The records, in the path's order, cut at its limit.
    pub records: Vec<Record>,
    /// The layout read.
    pub layout: String,
    /// How it was served; `None` for a filtering scan.
    pub choice: Option<Choice>,
    /// Read requests made to the store (slices, or the one scan).
    pub requests: u64,
    /// The engine's traces of those requests, one after the other (the
    /// sources of each request in turn).
    pub trace: Trace,
}

impl QueryResult {
    /// Whether it was a filtering scan.
    pub fn is_filtering_scan(&self) -> bool {
        self.choice.is_none()
    }
}

impl Table {
    /// How a read would be served, or why no layout serves it.
    pub fn plan(&self, path: &AccessPath, params: &Params) -> Result<Planned> {
        let def = self.definition();
        path.check(&def.schema, params)?;
        choose(&def, path, params)
    }

    /// Reads a path on the layout that serves it; refuses a path no
    /// readable layout serves ([`Error::Unserved`], with a layout that would).
    pub fn query(&self, path: &AccessPath, params: &Params) -> Result<QueryResult> {
        self.query_with(path, params, QueryOptions::default())
    }

    /// [`Table::query`], with options.
    pub fn query_with(&self, path: &AccessPath, params: &Params, options: QueryOptions) -> Result<QueryResult> {
        match self.plan(path, params)? {
            Planned::Served(choice) => self.read_slices(path, params, *choice),
            Planned::Unserved { .. } if options.allow_filtering => self.filtering_scan(path, params),
            Planned::Unserved { reasons, suggestion } => Err(Error::Unserved {
                path: path.name.clone(),
                reasons,
                suggestion: suggestion.map(Box::new),
            }),
        }
    }

    /// Answers a path by reading every record of the source of truth and
    /// keeping those that match.
    pub fn filtering_scan(&self, path: &AccessPath, params: &Params) -> Result<QueryResult> {
        let def = self.definition();
        path.check(&def.schema, params)?;
        let source = def.source();
        let snapshot = self.store.snapshot();
        let mut scan = snapshot.scan(&source.name, &RowRange::all())?;
        let mut records = Vec::new();
        for cell in cells(&mut scan) {
            let (at, value) = cell?;
            let record = decode_cell(&def, source, &at, &value)?;
            if path.matches(params, &record) {
                records.push(record);
            }
        }
        path.finish(&def.schema, &mut records);
        Ok(QueryResult {
            records,
            layout: source.name.clone(),
            choice: None,
            requests: 1,
            trace: scan.trace(),
        })
    }

    fn read_slices(&self, path: &AccessPath, params: &Params, choice: Choice) -> Result<QueryResult> {
        let def = self.definition();
        let layout = def.layout(&choice.layout)?;
        let snapshot = self.store.snapshot();
        let mut records = Vec::new();
        let mut total = Trace::default();
        for request in &choice.requests {
            let (cells, trace) = snapshot.slice_traced(&layout.name, &request.row, &request.columns)?;
            for cell in cells {
                let at = Address {
                    row: request.row.clone(),
                    column: cell.column.to_vec(),
                };
                let record = decode_cell(&def, layout, &at, &cell.value)?;
                // An exact plan drops nothing here; an inexact one drops what
                // its slices hold beyond the answer.
                if path.matches(params, &record) {
                    records.push(record);
                }
            }
            total.sources.extend(trace.sources);
            total.entries_returned += trace.entries_returned;
        }
        path.finish(&def.schema, &mut records);
        Ok(QueryResult {
            records,
            layout: layout.name.clone(),
            requests: choice.requests.len() as u64,
            choice: Some(choice),
            trace: total,
        })
    }
}
