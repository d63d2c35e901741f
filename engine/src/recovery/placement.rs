//! Where repair puts a table file the old manifest did not list.
//!
//! A leveled family's compactions trust one fact about its tables: for any
//! row, a table read earlier (level 0's runs newest first, then each deeper
//! level) holds only entries written after those of every table read later.
//! A merge is *bottommost*, and drops deletions and writes sequence numbers
//! as 0, when no deeper level holds a row of its inputs: everything older is
//! assumed to be below. A table placed as newer than it is breaks that: a
//! merge of a deeper level drops a deletion while the cell it hides lives on
//! in the misplaced table above, or writes a newer version's sequence number
//! as 0 so that an older one, above it, wins.
//!
//! Repair keeps every listed table where the old manifest had it (those
//! places were consistent when it was written). A table it did not list (a
//! flush or compaction output whose record the damage took, or any table
//! when no manifest is readable) has lost its level, but not its sequence
//! numbers: each table file records its smallest and largest. The table
//! goes to level 0, as its own run, when that is true to them: every table
//! of a deeper level that shares a row with it holds only older entries,
//! and every level-0 run that shares a row with it is wholly older or wholly
//! newer (level 0 is read in order of its runs' newest entries). That is
//! the common case, a lost flush.
//!
//! Otherwise (a lost compaction output holds entries older than a level
//! below it, say) no single place is true, and every table of the family
//! goes to level 0, each run keeping its files: LevelDB's `RepairDB` puts
//! every table there. Level 0 is merged as a whole into the level below it,
//! and with nothing below, that merge takes every table and orders every
//! entry by its key (timestamp and sequence number), so it decides right
//! whatever the tables' order. Until then, reads are right too: a point read
//! compares the versions it finds by timestamp and sequence number, and a
//! range read merges its sources by key. The cost is that one merge of the
//! whole family.
//!
//! A size-tiered family has only level 0, so there is nothing to give up;
//! its runs are ordered by their newest entries, and a merge of neighbours
//! is bottommost when it takes the oldest. Two runs sharing a row whose
//! sequence numbers interleave (a lost compaction output and one of its
//! inputs whose deletion did not reach the disk) hold the same entries, so
//! that order does not matter for them.

use std::collections::HashMap;

use crate::key;
use crate::manifest::TableMeta;

/// One table of a family, and whether the old manifest listed it (then its
/// level and run are the manifest's).
pub(super) struct Found<'a> {
    pub meta: &'a mut TableMeta,
    pub listed: bool,
}

/// Places the tables of one family (see the module): tables not listed
/// stay at level 0 when that is true to their sequence numbers, else every
/// table goes to level 0. Returns how many tables changed level.
pub(super) fn place(tables: &mut [Found<'_>]) -> u64 {
    let metas: Vec<&TableMeta> = tables.iter().map(|t| &*t.meta).collect();
    let true_at_level_0 = tables
        .iter()
        .filter(|t| !t.listed)
        .all(|t| fits_level_0(t.meta, &metas));
    if true_at_level_0 {
        return 0;
    }
    let mut moved = 0;
    for t in tables.iter_mut().filter(|t| t.meta.level != 0) {
        t.meta.level = 0;
        moved += 1;
    }
    moved
}

/// Whether `table`, at level 0 as a run of its own, is read before exactly
/// the entries older than its own among `all` (which holds it).
fn fits_level_0(table: &TableMeta, all: &[&TableMeta]) -> bool {
    // Level 0 is read in order of each run's newest entry: a run is older or
    // newer than `table` as a whole.
    let mut runs: HashMap<u64, (u64, u64)> = HashMap::new();
    for t in all.iter().filter(|t| t.level == 0) {
        let bounds = runs.entry(t.run).or_insert((t.min_seq, t.max_seq));
        *bounds = (bounds.0.min(t.min_seq), bounds.1.max(t.max_seq));
    }
    all.iter()
        .filter(|other| other.file_id != table.file_id && shares_rows(table, other))
        .all(|other| {
            if other.level > 0 {
                other.max_seq < table.min_seq
            } else {
                let (min, max) = runs.get(&other.run).copied().unwrap_or((other.min_seq, other.max_seq));
                max < table.min_seq || table.max_seq < min
            }
        })
}

/// Whether the two tables hold some row in common, by their first and last keys.
fn shares_rows(a: &TableMeta, b: &TableMeta) -> bool {
    let row = |k: &[u8]| -> Vec<u8> { key::row_part(k).unwrap_or(k).to_vec() };
    row(&a.first_key) <= row(&b.last_key) && row(&b.first_key) <= row(&a.last_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Kind;

    /// Table `id` at `level` in run `run`, rows `first` to `last`, written at
    /// sequence numbers `seqs`.
    fn table(id: u64, run: u64, level: u32, rows: (&str, &str), seqs: (u64, u64)) -> TableMeta {
        let mut meta = TableMeta::empty(id, run, level);
        meta.count(
            &key::encode(rows.0.as_bytes(), b"c", 1, seqs.0, Kind::Put),
            1,
            seqs.0,
            false,
        );
        meta.count(
            &key::encode(rows.1.as_bytes(), b"c", 1, seqs.1, Kind::Put),
            1,
            seqs.1,
            false,
        );
        meta
    }

    fn levels_after_placing(mut tables: Vec<(TableMeta, bool)>) -> (Vec<u32>, u64) {
        let mut found: Vec<Found<'_>> = tables
            .iter_mut()
            .map(|(meta, listed)| Found { meta, listed: *listed })
            .collect();
        let moved = place(&mut found);
        (tables.iter().map(|(m, _)| m.level).collect(), moved)
    }

    #[test]
    fn a_lost_table_newer_than_every_level_it_shares_rows_with_stays_at_level_0() {
        let tables = vec![
            (table(5, 5, 6, ("a", "z"), (0, 0)), true),
            (table(7, 7, 3, ("m", "p"), (40, 50)), true),
            (table(8, 8, 0, ("b", "c"), (60, 70)), true),
            // Newer than level 3 and 6 below it; older than run 8, which it does not share rows with.
            (table(9, 9, 0, ("n", "o"), (51, 55)), false),
            (table(10, 10, 0, ("x", "y"), (80, 90)), false),
        ];
        assert_eq!(levels_after_placing(tables), (vec![6, 3, 0, 0, 0], 0));
    }

    #[test]
    fn a_lost_table_older_than_a_level_below_puts_every_table_in_level_0() {
        // A lost compaction output, its sequence numbers written as 0, under level 3's rows.
        let tables = vec![
            (table(5, 5, 6, ("a", "z"), (0, 0)), true),
            (table(7, 7, 3, ("m", "p"), (40, 50)), true),
            (table(9, 9, 0, ("n", "o"), (0, 0)), false),
        ];
        assert_eq!(levels_after_placing(tables), (vec![0, 0, 0], 2));
    }

    #[test]
    fn a_lost_table_whose_sequence_numbers_interleave_with_a_level_0_run_puts_every_table_in_level_0() {
        let tables = vec![
            (table(5, 5, 6, ("a", "z"), (0, 0)), true),
            // Run 6: two files; the lost table falls between their sequence numbers.
            (table(6, 6, 0, ("a", "c"), (10, 20)), true),
            (table(7, 6, 0, ("x", "z"), (40, 50)), true),
            (table(9, 9, 0, ("b", "b"), (30, 35)), false),
        ];
        assert_eq!(levels_after_placing(tables), (vec![0, 0, 0, 0], 1));
    }
}
