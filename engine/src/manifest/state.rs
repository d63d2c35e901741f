//! The manifest's state machine: what replaying edits builds, and the rules
//! an edit must follow.
//!
//! [`ManifestState`] is the store as the manifest describes it: families,
//! their options and table files, the oldest log segment each still needs,
//! the last sequence number and the next file number. Replaying a manifest
//! applies its edits in order to an empty state. An edit that does not fit
//! (a family added twice, a table removed that is not there) is refused, so a
//! manifest that says something impossible is reported, never half-applied.

use std::collections::BTreeMap;

use super::edit::{Edit, TableMeta};
use crate::error::{Error, Result};
use crate::key::MAX_SEQUENCE;

/// One column family as the manifest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FamilyState {
    /// The family's id.
    pub(crate) id: u32,
    /// The family's name.
    pub(crate) name: String,
    /// The family's options, encoded by the engine.
    pub(crate) options: Vec<u8>,
    /// The oldest log segment the family still needs (0: none recorded yet).
    pub(crate) log_number: u64,
    /// The family's table files in the order they were added.
    pub(crate) tables: Vec<TableMeta>,
}

/// The store as the manifest describes it: the result of replaying every edit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ManifestState {
    /// The families by id.
    pub(crate) families: BTreeMap<u32, FamilyState>,
    /// The largest sequence number that may appear in a table file.
    pub(crate) last_sequence: u64,
    /// The next unused file number.
    pub(crate) next_file_number: u64,
    /// Families dropped, by id, with their names: their ids are never used
    /// again (the log may still hold writes under them, which replay skips),
    /// and a folder of a dropped name that no family has holds only files
    /// to delete.
    pub(crate) dropped: BTreeMap<u32, String>,
}

impl ManifestState {
    /// Applies one edit.
    ///
    /// An edit that does not fit the state (a family added twice, an unknown
    /// family, a table added twice or removed without being there) is refused
    /// with [`Error::InvalidArgument`]. The engine should never produce one;
    /// when replay finds one, it is reported as corruption of the manifest.
    pub(crate) fn apply(&mut self, edit: &Edit) -> Result<()> {
        self.try_apply(edit).map_err(Error::InvalidArgument)
    }

    /// Applies an edit group, all or nothing: if one edit is refused, the
    /// state is left as it was.
    ///
    /// [`super::Manifest::log_and_apply`] calls this on a copy of its state
    /// *before* appending the group, so an edit that does not fit is never made
    /// durable (it would make the store impossible to reopen).
    pub(crate) fn apply_all(&mut self, edits: &[Edit]) -> Result<()> {
        let mut next = self.clone();
        for edit in edits {
            next.apply(edit)?;
        }
        *self = next;
        Ok(())
    }

    /// The id a new family gets: never one a family had, dropped or not.
    pub(crate) fn next_family_id(&self) -> u32 {
        self.families
            .keys()
            .chain(self.dropped.keys())
            .max()
            .map_or(1, |m| m + 1)
    }

    /// The first number no file and no run the state lists uses: the
    /// recorded next file number, or past it where a table's number or run
    /// is. File numbers and run numbers come from one counter; a move that
    /// started a run once did not record the number it took (see
    /// `Inner::move_table`), and a later open or repair handed the same
    /// number to another run of the family, which the read path then read
    /// as one run with it.
    pub(crate) fn first_unused_number(&self) -> u64 {
        self.families
            .values()
            .flat_map(|f| &f.tables)
            .map(|t| t.file_id.max(t.run).saturating_add(1))
            .fold(self.next_file_number, u64::max)
    }

    /// The oldest log segment some family still needs (`None` without families).
    pub(crate) fn oldest_log_needed(&self) -> Option<u64> {
        self.families.values().map(|f| f.log_number).min()
    }

    /// The edits that rebuild this state from an empty one.
    ///
    /// A new manifest starts with this group, so its first record alone
    /// describes the whole store.
    pub(crate) fn snapshot(&self) -> Vec<Edit> {
        let mut edits = vec![
            Edit::NextFileNumber(self.next_file_number),
            Edit::LastSequence(self.last_sequence),
        ];
        // Dropped families first, so a live family may have a dropped name.
        for (id, name) in &self.dropped {
            edits.push(Edit::AddFamily {
                id: *id,
                name: name.clone(),
                options: Vec::new(),
            });
            edits.push(Edit::RemoveFamily { id: *id });
        }
        for family in self.families.values() {
            edits.push(Edit::AddFamily {
                id: family.id,
                name: family.name.clone(),
                options: family.options.clone(),
            });
            edits.push(Edit::SetLogNumber {
                family: family.id,
                log_number: family.log_number,
            });
            edits.extend(family.tables.iter().map(|table| Edit::AddTable {
                family: family.id,
                table: table.clone(),
            }));
        }
        edits
    }

    /// [`ManifestState::apply`], with the reason for a refusal as plain text
    /// (replay reports it as corruption of the record that holds the edit).
    pub(crate) fn try_apply(&mut self, edit: &Edit) -> std::result::Result<(), String> {
        match edit {
            Edit::AddFamily { id, name, options } => {
                if self.families.contains_key(id) {
                    return Err(format!("family id {id} is added twice"));
                }
                if self.dropped.contains_key(id) {
                    return Err(format!("family id {id} is added again after it was dropped"));
                }
                if self.families.values().any(|family| family.name == *name) {
                    return Err(format!("family name {name:?} is added twice"));
                }
                self.families.insert(
                    *id,
                    FamilyState {
                        id: *id,
                        name: name.clone(),
                        options: options.clone(),
                        log_number: 0,
                        tables: Vec::new(),
                    },
                );
            }
            Edit::SetFamilyOptions { id, options } => {
                self.family_mut(*id)?.options = options.clone();
            }
            Edit::AddTable { family, table } => {
                let state = self.family_mut(*family)?;
                if state.tables.iter().any(|t| t.file_id == table.file_id) {
                    return Err(format!("table {} is added twice to family {family}", table.file_id));
                }
                state.tables.push(table.clone());
            }
            Edit::RemoveTable { family, file_id } => {
                let state = self.family_mut(*family)?;
                let Some(index) = state.tables.iter().position(|t| t.file_id == *file_id) else {
                    return Err(format!(
                        "table {file_id} is removed from family {family}, which does not have it"
                    ));
                };
                state.tables.remove(index);
            }
            Edit::SetLogNumber { family, log_number } => {
                self.family_mut(*family)?.log_number = *log_number;
            }
            // Keys keep 56 bits of a sequence number and the write path
            // numbers no write past them: a larger last sequence is no
            // store's, and the next write would be numbered from it (from 0,
            // once `u64::MAX` wrapped), older than every write before it.
            Edit::LastSequence(sequence) if *sequence > MAX_SEQUENCE => {
                return Err(format!(
                    "last sequence number {sequence} is past the largest a key holds ({MAX_SEQUENCE})"
                ));
            }
            Edit::LastSequence(sequence) => self.last_sequence = *sequence,
            Edit::NextFileNumber(number) => self.next_file_number = *number,
            Edit::RemoveFamily { id } => {
                let family = self
                    .families
                    .remove(id)
                    .ok_or_else(|| format!("family id {id} is dropped, but does not exist"))?;
                self.dropped.insert(*id, family.name);
            }
        }
        Ok(())
    }

    /// The family with id `id`, or the reason it cannot be edited.
    fn family_mut(&mut self, id: u32) -> std::result::Result<&mut FamilyState, String> {
        self.families
            .get_mut(&id)
            .ok_or_else(|| format!("family id {id} does not exist"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn edits_that_do_not_fit_are_refused_and_leave_the_state_unchanged() {
        let mut state = initial_state();
        let before = state.clone();
        let refused = [
            (
                Edit::AddFamily {
                    id: 1,
                    name: "other".to_string(),
                    options: vec![],
                },
                "family id 1 is added twice",
            ),
            (
                Edit::AddFamily {
                    id: 3,
                    name: "users".to_string(),
                    options: vec![],
                },
                "family name \"users\" is added twice",
            ),
            (
                Edit::SetLogNumber {
                    family: 3,
                    log_number: 1,
                },
                "family id 3 does not exist",
            ),
            (
                remove_table(2, 5),
                "table 5 is removed from family 2, which does not have it",
            ),
            (
                Edit::LastSequence(MAX_SEQUENCE + 1),
                "last sequence number 72057594037927936 is past the largest a key holds (72057594037927935)",
            ),
        ];
        for (edit, message) in refused {
            // The first edit of the group fits; the group still changes nothing.
            let group = [Edit::LastSequence(9), edit];
            let err = state.apply_all(&group).expect_err("refused");
            assert!(matches!(err, Error::InvalidArgument(ref m) if m == message), "{err:?}");
            assert_eq!(state, before);
        }
        let add = add_table(2, 5);
        state.apply(&add).expect("first add");
        let err = state.apply(&add).expect_err("second add");
        assert!(matches!(err, Error::InvalidArgument(ref m) if m == "table 5 is added twice to family 2"));
    }

    #[test]
    fn snapshot_rebuilds_the_state_from_empty() {
        let mut state = initial_state();
        for group in flush_and_compaction() {
            state.apply_all(&group).expect("apply");
        }
        state.apply_all(&[add_table(2, 3), add_table(2, 1)]).expect("apply");
        let mut rebuilt = ManifestState::default();
        rebuilt.apply_all(&state.snapshot()).expect("snapshot");
        assert_eq!(rebuilt, state);
        assert_eq!(
            rebuilt.families[&2]
                .tables
                .iter()
                .map(|t| t.file_id)
                .collect::<Vec<_>>(),
            [3, 1]
        );
    }

    #[test]
    fn a_dropped_family_keeps_its_id_out_of_use_and_survives_a_snapshot() {
        let mut state = initial_state();
        // Family 2 ("events") dropped, then a family of the same name.
        let events_again = Edit::AddFamily {
            id: state.next_family_id(),
            name: "events".to_string(),
            options: vec![],
        };
        assert_eq!(state.next_family_id(), 3);
        state
            .apply_all(&[Edit::RemoveFamily { id: 2 }, events_again])
            .expect("drop and re-create");
        assert_eq!(state.dropped.get(&2).map(String::as_str), Some("events"));
        assert_eq!(state.next_family_id(), 4, "id 2 is never used again");
        let refused = state.apply(&Edit::AddFamily {
            id: 2,
            name: "other".to_string(),
            options: vec![],
        });
        assert!(
            matches!(refused, Err(Error::InvalidArgument(ref m)) if m == "family id 2 is added again after it was dropped")
        );
        let mut rebuilt = ManifestState::default();
        rebuilt.apply_all(&state.snapshot()).expect("snapshot");
        assert_eq!(rebuilt, state);
    }

    #[test]
    fn the_first_unused_number_is_past_every_file_and_run_listed() {
        let mut state = initial_state();
        let recorded = state.next_file_number;
        assert_eq!(state.first_unused_number(), recorded);
        // The test tables' runs are ten times their numbers: run 40 for table 4.
        state.apply_all(&[add_table(2, 4)]).expect("add");
        assert!(recorded < 41);
        assert_eq!(state.first_unused_number(), 41);
        state.apply(&Edit::NextFileNumber(100)).expect("record");
        assert_eq!(state.first_unused_number(), 100);
    }
}
