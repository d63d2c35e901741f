//! Every way the API offers to read a row or a scan, read on one snapshot
//! and compared with each other: shared by the model tests (`model.rs`,
//! `binary_keys.rs`), which then compare the one answer with their models.
//!
//! A row: `get_row`, `visit_row` (each cell lent, under the row's key),
//! `get_row_traced`, `slice_traced` of every column and `visit_row_traced`,
//! which are one read and so report one trace. A scan: its iterator, `Scan::visit_row`, and the
//! two in turn starting with either; `Scan::visit_row` counts a row as the
//! iterator does, so all four report the same trace after every row and at
//! the end, and all agree when the scan has ended.

use cellar_engine::{ColumnRange, RowRange, Scan, Snapshot, Trace};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// A cell as compared: (column, timestamp, value).
pub type Lent = (Vec<u8>, u64, Vec<u8>);
/// A row as compared: its key and its cells.
pub type LentRow = (Vec<u8>, Vec<Lent>);

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn lent(cells: Vec<cellar_engine::Cell>) -> Vec<Lent> {
    cells
        .into_iter()
        .map(|c| (c.column.to_vec(), c.timestamp, c.value.to_vec()))
        .collect()
}

/// Whether two traces of the same read report the same figures. A block a
/// compressing family reads through the block cache is a hit or a miss
/// depending on what the reads before it left there, so where either trace
/// used the cache, only the figures the cache does not change are compared.
pub fn same_cost(a: &Trace, b: &Trace, what: &str) -> Result<(), TestCaseError> {
    let cached = |t: &Trace| t.cache_hits() + t.cache_misses() > 0;
    if !cached(a) && !cached(b) {
        prop_assert_eq!(a, b, "{}: traces differ", what);
        return Ok(());
    }
    let strip = |t: &Trace| {
        let mut t = t.clone();
        for s in &mut t.sources {
            (
                s.data_bytes,
                s.pages_touched,
                s.decompressed_bytes,
                s.cache_hits,
                s.cache_misses,
            ) = (0, 0, 0, 0, 0);
        }
        t
    };
    prop_assert_eq!(strip(a), strip(b), "{}: traces differ", what);
    Ok(())
}

/// A row read every way on `snapshot`; every way gives the same cells, the
/// two traced reads the same trace. Returns the cells.
pub fn row_every_way(snapshot: &Snapshot, family: &str, row: &[u8], what: &str) -> Result<Vec<Lent>, TestCaseError> {
    let owned = lent(snapshot.get_row(family, row).map_err(fail)?);
    let mut visited = Vec::new();
    let mut keys = Vec::new();
    let count = snapshot
        .visit_row(family, row, |c| {
            keys.push(c.row.to_vec());
            visited.push((c.column.to_vec(), c.timestamp, c.value.to_vec()));
        })
        .map_err(fail)?;
    prop_assert_eq!(count, visited.len(), "{}: visit_row's count", what);
    prop_assert_eq!(&visited, &owned, "{}: visit_row against get_row", what);
    prop_assert!(
        keys.iter().all(|k| k == row),
        "{}: visit_row lent rows {:?}",
        what,
        keys
    );
    let (cells, row_trace) = snapshot.get_row_traced(family, row).map_err(fail)?;
    prop_assert_eq!(&lent(cells), &owned, "{}: get_row_traced against get_row", what);
    prop_assert_eq!(
        row_trace.entries_returned,
        owned.len() as u64,
        "{}: rows returned",
        what
    );
    let (cells, slice_trace) = snapshot.slice_traced(family, row, &ColumnRange::all()).map_err(fail)?;
    prop_assert_eq!(
        &lent(cells),
        &owned,
        "{}: slice_traced of every column against get_row",
        what
    );
    same_cost(&row_trace, &slice_trace, what)?;
    let mut lent_again = Vec::new();
    let (count, visit_trace) = snapshot
        .visit_row_traced(family, row, |c| {
            lent_again.push((c.column.to_vec(), c.timestamp, c.value.to_vec()));
        })
        .map_err(fail)?;
    prop_assert_eq!(count, lent_again.len(), "{}: visit_row_traced's count", what);
    prop_assert_eq!(&lent_again, &owned, "{}: visit_row_traced against get_row", what);
    same_cost(&row_trace, &visit_trace, what)?;
    Ok(owned)
}

/// Reads a scan to its end: by its iterator, by [`Scan::visit_row`], or the
/// two in turn (`alternate`, starting with a visit if `visit_first`); then
/// checks that both ways agree the scan has ended. Returns the rows, and the
/// scan's trace after each row and at the end.
fn read_scan_by(
    scan: &mut Scan,
    visit_first: bool,
    alternate: bool,
) -> Result<(Vec<LentRow>, Vec<Trace>), TestCaseError> {
    let mut out = Vec::new();
    let mut traces = Vec::new();
    let mut visit = visit_first;
    loop {
        if visit {
            let mut keys = Vec::new();
            let mut row = Vec::new();
            let more = scan
                .visit_row(|c| {
                    keys.push(c.row.to_vec());
                    row.push((c.column.to_vec(), c.timestamp, c.value.to_vec()));
                })
                .map_err(fail)?;
            if !more {
                prop_assert!(row.is_empty(), "a scan with no row left lent cells");
                break;
            }
            let key = keys.first().cloned().unwrap_or_default();
            prop_assert!(
                keys.iter().all(|k| *k == key),
                "one row lent under several keys: {:?}",
                keys
            );
            prop_assert!(!row.is_empty(), "a visited row {:?} had no cell", key);
            out.push((key, row));
        } else {
            match scan.next() {
                Some(row) => {
                    let row = row.map_err(fail)?;
                    out.push((row.key.to_vec(), lent(row.cells)));
                }
                None => break,
            }
        }
        traces.push(scan.trace());
        visit = if alternate { !visit } else { visit };
    }
    prop_assert!(scan.next().is_none(), "the iterator went on after the end");
    prop_assert!(
        !scan.visit_row(|_| {}).map_err(fail)?,
        "visit_row went on after the end"
    );
    traces.push(scan.trace());
    Ok((out, traces))
}

/// A scan read every way on `snapshot`; every way returns the same rows and
/// reports the same trace. Returns the rows.
pub fn scan_every_way(
    snapshot: &Snapshot,
    family: &str,
    range: &RowRange,
    what: &str,
) -> Result<Vec<LentRow>, TestCaseError> {
    let mut iterated = snapshot.scan(family, range).map_err(fail)?;
    let (rows, traces) = read_scan_by(&mut iterated, false, false)?;
    let returned: Vec<u64> = traces.iter().map(|t| t.entries_returned).collect();
    let counted: Vec<u64> = (1..=rows.len() as u64).chain([rows.len() as u64]).collect();
    prop_assert_eq!(returned, counted, "{}: rows returned", what);
    for (visit_first, alternate) in [(true, false), (false, true), (true, true)] {
        let mut scan = snapshot.scan(family, range).map_err(fail)?;
        let (got, got_traces) = read_scan_by(&mut scan, visit_first, alternate)?;
        let how = format!("{what} (visit first {visit_first}, alternate {alternate})");
        prop_assert_eq!(&got, &rows, "{}: against the iterator", how);
        // The same cost after every row, not only at the end.
        for (row, (a, b)) in got_traces.iter().zip(&traces).enumerate() {
            same_cost(a, b, &format!("{how}, after row {row}"))?;
        }
    }
    Ok(rows)
}
