//! How a layout's partitions are shaped: how many, and how large the largest.
//!
//! A partition is never split (seed 001: it lives on one server, is read,
//! compacted and repaired as one), so the largest one bounds what a layout
//! costs. A key whose partition grows with time (all of a warehouse's
//! shipments, forever) has no bound; a time bucket in the partition key
//! starts a new partition every day or month and caps it.

use cellar_engine::RowRange;

use crate::error::Result;
use crate::table::Table;

/// The partitions of one layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutShape {
    /// The layout.
    pub layout: String,
    /// Partitions (rows).
    pub partitions: u64,
    /// Records (cells).
    pub records: u64,
    /// Bytes of all cells: row + column + value.
    pub bytes: u64,
    /// The first largest partition in key order.
    pub largest: Vec<u8>,
    /// Its records.
    pub largest_records: u64,
    /// Its bytes.
    pub largest_bytes: u64,
}

impl Table {
    /// Counts a layout's partitions and finds its largest, by one scan.
    pub fn layout_shape(&self, layout: &str) -> Result<LayoutShape> {
        let def = self.definition();
        let layout = def.layout(layout)?;
        let mut shape = LayoutShape {
            layout: layout.name.clone(),
            ..LayoutShape::default()
        };
        for row in self.store.scan(&layout.name, &RowRange::all())? {
            let row = row?;
            let records = row.cells.len() as u64;
            let bytes: u64 = row
                .cells
                .iter()
                .map(|c| (row.key.len() + c.column.len() + c.value.len()) as u64)
                .sum();
            shape.partitions += 1;
            shape.records += records;
            shape.bytes += bytes;
            if records > shape.largest_records {
                shape.largest = row.key.to_vec();
                shape.largest_records = records;
                shape.largest_bytes = bytes;
            }
        }
        Ok(shape)
    }
}
