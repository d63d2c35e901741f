//! The edit codec: how an edit group is laid out in a manifest record.
//!
//! An [`Edit`] is one change to the store's file set or counters; a group of
//! edits is one record of the manifest, encoded as a version byte and then
//! each edit as a tag byte and its fields (FORMAT-log-manifest.md has the
//! byte diagrams). Decoding checks every length and never panics, whatever
//! the bytes: a record that does not decode is corruption of the manifest.

use std::path::Path;

use crate::error::Error;

/// The version byte that starts every encoded edit group.
///
/// A cellar that finds a larger version refuses to open the store rather than
/// misread it ([`Error::UnsupportedVersion`]). Version 2 added
/// [`Edit::RemoveFamily`]; version 3 added a table below level 0
/// ([`tag::ADD_TABLE_AT_LEVEL`], which only a family with leveled compaction
/// writes). A group is written as the lowest version that holds its edits, so
/// a store whose families were never dropped and are all size-tiered stays
/// readable by a cellar that knows version 1 only.
pub(crate) const EDIT_FORMAT_VERSION: u8 = 3;

/// The version that added [`Edit::RemoveFamily`].
const EDIT_FORMAT_VERSION_2: u8 = 2;

/// The first version, without [`Edit::RemoveFamily`] or levels.
const EDIT_FORMAT_VERSION_1: u8 = 1;

/// The tag byte that starts each encoded [`Edit`]. Never reuse a number.
mod tag {
    /// [`super::Edit::AddFamily`].
    pub(super) const ADD_FAMILY: u8 = 1;
    /// [`super::Edit::SetFamilyOptions`].
    pub(super) const SET_FAMILY_OPTIONS: u8 = 2;
    /// [`super::Edit::AddTable`].
    pub(super) const ADD_TABLE: u8 = 3;
    /// [`super::Edit::RemoveTable`].
    pub(super) const REMOVE_TABLE: u8 = 4;
    /// [`super::Edit::SetLogNumber`].
    pub(super) const SET_LOG_NUMBER: u8 = 5;
    /// [`super::Edit::LastSequence`].
    pub(super) const LAST_SEQUENCE: u8 = 6;
    /// [`super::Edit::NextFileNumber`].
    pub(super) const NEXT_FILE_NUMBER: u8 = 7;
    /// [`super::Edit::RemoveFamily`] (format version 2).
    pub(super) const REMOVE_FAMILY: u8 = 8;
    /// [`super::Edit::AddTable`] of a table at a level other than 0 (format
    /// version 3): the fields of [`ADD_TABLE`], then the level (u32).
    pub(super) const ADD_TABLE_AT_LEVEL: u8 = 9;
}

/// One change to the store's file set or counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// A new column family. `options` are opaque bytes encoded by the engine.
    AddFamily {
        /// The family's id, used by every other edit.
        id: u32,
        /// The family's name.
        name: String,
        /// The family's options, encoded by the engine.
        options: Vec<u8>,
    },
    /// New options for an existing family.
    SetFamilyOptions {
        /// The family.
        id: u32,
        /// The options, encoded by the engine.
        options: Vec<u8>,
    },
    /// A table file now belongs to a family.
    AddTable {
        /// The family.
        family: u32,
        /// The table.
        table: TableMeta,
    },
    /// A table file no longer belongs to a family (it was compacted away).
    RemoveTable {
        /// The family.
        family: u32,
        /// The table's file number.
        file_id: u64,
    },
    /// The oldest log segment this family still needs: older segments hold
    /// only writes the family has already flushed.
    SetLogNumber {
        /// The family.
        family: u32,
        /// The file number of that segment.
        log_number: u64,
    },
    /// The largest sequence number that may appear in a table file.
    LastSequence(u64),
    /// The next unused file number (logs, tables and manifests share one
    /// number space, so a number names one file for the life of the store).
    NextFileNumber(u64),
    /// A family is dropped: its tables leave the store, and what the log
    /// holds for its id is never replayed. Its id is never used again.
    RemoveFamily {
        /// The family.
        id: u32,
    },
}

/// What the manifest knows about one table file, enough to plan reads and
/// compactions without opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableMeta {
    /// The file number.
    pub(crate) file_id: u64,
    /// The sorted run the file belongs to.
    pub(crate) run: u64,
    /// Its level: 0 for every file of a size-tiered family and for a
    /// leveled family's flushes; 1 and deeper for a leveled family's levels,
    /// each one run.
    pub(crate) level: u32,
    /// File size in bytes.
    pub(crate) size: u64,
    /// Entries stored, tombstones included.
    pub(crate) entries: u64,
    /// Tombstones stored.
    pub(crate) tombstones: u64,
    /// The smallest internal key in the file.
    pub(crate) first_key: Vec<u8>,
    /// The largest internal key in the file.
    pub(crate) last_key: Vec<u8>,
    /// Smallest sequence number in the file.
    pub(crate) min_seq: u64,
    /// Largest sequence number in the file.
    pub(crate) max_seq: u64,
    /// Smallest cell timestamp in the file.
    pub(crate) min_ts: u64,
    /// Largest cell timestamp in the file.
    pub(crate) max_ts: u64,
}

impl TableMeta {
    /// The record of a table file about to receive its first entry.
    pub(crate) fn empty(file_id: u64, run: u64, level: u32) -> TableMeta {
        TableMeta {
            file_id,
            run,
            level,
            size: 0,
            entries: 0,
            tombstones: 0,
            first_key: Vec::new(),
            last_key: Vec::new(),
            min_seq: u64::MAX,
            max_seq: 0,
            min_ts: u64::MAX,
            max_ts: 0,
        }
    }

    /// Counts one more entry, the largest so far, with the timestamp,
    /// sequence number and kind its key ends with.
    pub(crate) fn count(&mut self, entry_key: &[u8], timestamp: u64, sequence: u64, tombstone: bool) {
        if self.entries == 0 {
            self.first_key = entry_key.to_vec();
        }
        self.count_entry(timestamp, sequence, tombstone);
        self.last_key.clear();
        self.last_key.extend_from_slice(entry_key);
    }

    /// [`TableMeta::count`] without the keys: for a writer that takes the
    /// first and last key from the table builder's properties when the file
    /// is finished, rather than copying every key as it goes.
    pub(crate) fn count_entry(&mut self, timestamp: u64, sequence: u64, tombstone: bool) {
        self.entries += 1;
        self.tombstones += u64::from(tombstone);
        self.min_seq = self.min_seq.min(sequence);
        self.max_seq = self.max_seq.max(sequence);
        self.min_ts = self.min_ts.min(timestamp);
        self.max_ts = self.max_ts.max(timestamp);
    }
}

/// Encodes an edit group: the version byte, then each edit as a tag byte and
/// its fields. Integers are fixed-width little-endian; byte strings and names
/// are a u32 length then the bytes. (FORMAT-log-manifest.md has the diagrams.)
pub(crate) fn encode_edits(edits: &[Edit]) -> Vec<u8> {
    let version = edits.iter().map(version_needed).max().unwrap_or(EDIT_FORMAT_VERSION_1);
    let mut out = vec![version];
    for edit in edits {
        match edit {
            Edit::AddFamily { id, name, options } => {
                out.push(tag::ADD_FAMILY);
                put_u32(&mut out, *id);
                put_bytes(&mut out, name.as_bytes());
                put_bytes(&mut out, options);
            }
            Edit::SetFamilyOptions { id, options } => {
                out.push(tag::SET_FAMILY_OPTIONS);
                put_u32(&mut out, *id);
                put_bytes(&mut out, options);
            }
            Edit::AddTable { family, table } => {
                out.push(if table.level == 0 {
                    tag::ADD_TABLE
                } else {
                    tag::ADD_TABLE_AT_LEVEL
                });
                put_u32(&mut out, *family);
                for value in [table.file_id, table.run, table.size, table.entries, table.tombstones] {
                    put_u64(&mut out, value);
                }
                put_bytes(&mut out, &table.first_key);
                put_bytes(&mut out, &table.last_key);
                for value in [table.min_seq, table.max_seq, table.min_ts, table.max_ts] {
                    put_u64(&mut out, value);
                }
                if table.level != 0 {
                    put_u32(&mut out, table.level);
                }
            }
            Edit::RemoveTable { family, file_id } => {
                out.push(tag::REMOVE_TABLE);
                put_u32(&mut out, *family);
                put_u64(&mut out, *file_id);
            }
            Edit::SetLogNumber { family, log_number } => {
                out.push(tag::SET_LOG_NUMBER);
                put_u32(&mut out, *family);
                put_u64(&mut out, *log_number);
            }
            Edit::LastSequence(sequence) => {
                out.push(tag::LAST_SEQUENCE);
                put_u64(&mut out, *sequence);
            }
            Edit::NextFileNumber(number) => {
                out.push(tag::NEXT_FILE_NUMBER);
                put_u64(&mut out, *number);
            }
            Edit::RemoveFamily { id } => {
                out.push(tag::REMOVE_FAMILY);
                put_u32(&mut out, *id);
            }
        }
    }
    out
}

/// The lowest format version that can hold `edit`.
fn version_needed(edit: &Edit) -> u8 {
    match edit {
        Edit::AddTable { table, .. } if table.level != 0 => EDIT_FORMAT_VERSION,
        Edit::RemoveFamily { .. } => EDIT_FORMAT_VERSION_2,
        _ => EDIT_FORMAT_VERSION_1,
    }
}

/// Appends `value` as 4 little-endian bytes.
fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends `value` as 8 little-endian bytes.
fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A u32 length, then the bytes. (A string over 4 GiB cannot reach the disk:
/// the whole group must fit in one record of at most [`crate::log::MAX_RECORD`].)
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

/// Why an edit group did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The group was written by a newer cellar (this version byte).
    Version(u8),
    /// The bytes are not a valid edit group.
    Malformed(String),
}

impl DecodeError {
    /// The engine error for this failure in the record at `offset` of `file`.
    pub(crate) fn into_error(self, file: &Path, offset: u64) -> Error {
        match self {
            DecodeError::Version(found) => Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: u32::from(found),
                supported: u32::from(EDIT_FORMAT_VERSION),
            },
            DecodeError::Malformed(what) => Error::corruption(file, offset, what),
        }
    }
}

/// Decodes an edit group written by [`encode_edits`]. Never panics, whatever the bytes.
pub(crate) fn decode_edits(payload: &[u8]) -> std::result::Result<Vec<Edit>, DecodeError> {
    let mut reader = Reader { rest: payload };
    let version = reader.u8("the version byte")?;
    if !(EDIT_FORMAT_VERSION_1..=EDIT_FORMAT_VERSION).contains(&version) {
        return Err(DecodeError::Version(version));
    }
    let mut edits = Vec::new();
    while !reader.rest.is_empty() {
        let edit = match reader.u8("an edit tag")? {
            tag::ADD_FAMILY => Edit::AddFamily {
                id: reader.u32("a family id")?,
                name: reader.string("a family name")?,
                options: reader.bytes("family options")?,
            },
            tag::SET_FAMILY_OPTIONS => Edit::SetFamilyOptions {
                id: reader.u32("a family id")?,
                options: reader.bytes("family options")?,
            },
            tag::ADD_TABLE => Edit::AddTable {
                family: reader.u32("a family id")?,
                table: reader.table(0)?,
            },
            tag::ADD_TABLE_AT_LEVEL if version >= EDIT_FORMAT_VERSION => {
                let family = reader.u32("a family id")?;
                let mut table = reader.table(0)?;
                table.level = reader.u32("a table level")?;
                if table.level == 0 {
                    return Err(DecodeError::Malformed("a table added at a level has level 0".into()));
                }
                Edit::AddTable { family, table }
            }
            tag::REMOVE_TABLE => Edit::RemoveTable {
                family: reader.u32("a family id")?,
                file_id: reader.u64("a table file id")?,
            },
            tag::SET_LOG_NUMBER => Edit::SetLogNumber {
                family: reader.u32("a family id")?,
                log_number: reader.u64("a log number")?,
            },
            tag::LAST_SEQUENCE => Edit::LastSequence(reader.u64("a sequence number")?),
            tag::NEXT_FILE_NUMBER => Edit::NextFileNumber(reader.u64("a file number")?),
            tag::REMOVE_FAMILY if version >= EDIT_FORMAT_VERSION_2 => Edit::RemoveFamily {
                id: reader.u32("a family id")?,
            },
            unknown => {
                return Err(DecodeError::Malformed(format!("unknown edit tag {unknown}")));
            }
        };
        edits.push(edit);
    }
    Ok(edits)
}

/// Reads fields from the front of an encoded edit group, checking every length.
struct Reader<'a> {
    /// The bytes not read yet.
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// The fields of a [`TableMeta`] (all but its level), at `level`.
    fn table(&mut self, level: u32) -> std::result::Result<TableMeta, DecodeError> {
        Ok(TableMeta {
            file_id: self.u64("a table file id")?,
            run: self.u64("a table run")?,
            level,
            size: self.u64("a table size")?,
            entries: self.u64("a table entry count")?,
            tombstones: self.u64("a table tombstone count")?,
            first_key: self.bytes("a table first key")?,
            last_key: self.bytes("a table last key")?,
            min_seq: self.u64("a table min sequence")?,
            max_seq: self.u64("a table max sequence")?,
            min_ts: self.u64("a table min timestamp")?,
            max_ts: self.u64("a table max timestamp")?,
        })
    }

    /// The next `N` bytes; `what` names the field for the error.
    fn array<const N: usize>(&mut self, what: &str) -> std::result::Result<[u8; N], DecodeError> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or_else(|| cut_short(what))?;
        self.rest = tail;
        Ok(*head)
    }

    /// One byte.
    fn u8(&mut self, what: &str) -> std::result::Result<u8, DecodeError> {
        let [byte] = self.array::<1>(what)?;
        Ok(byte)
    }

    /// A little-endian u32.
    fn u32(&mut self, what: &str) -> std::result::Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian u64.
    fn u64(&mut self, what: &str) -> std::result::Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A u32 length, then that many bytes.
    fn bytes(&mut self, what: &str) -> std::result::Result<Vec<u8>, DecodeError> {
        let len = self.u32(what)? as usize;
        let (head, tail) = self.rest.split_at_checked(len).ok_or_else(|| cut_short(what))?;
        self.rest = tail;
        Ok(head.to_vec())
    }

    /// Like [`Reader::bytes`], and the bytes must be UTF-8.
    fn string(&mut self, what: &str) -> std::result::Result<String, DecodeError> {
        String::from_utf8(self.bytes(what)?).map_err(|_| DecodeError::Malformed(format!("{what} is not UTF-8")))
    }
}

/// The error for a group that ends in the middle of a field.
fn cut_short(what: &str) -> DecodeError {
    DecodeError::Malformed(format!("edit group ends inside {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edit_encoding_is_version_then_tagged_little_endian_fields() {
        let edits = [
            Edit::LastSequence(5),
            Edit::AddFamily {
                id: 2,
                name: "ab".to_string(),
                options: vec![0xee],
            },
            Edit::RemoveTable {
                family: 1,
                file_id: 0x0102,
            },
        ];
        let expected: Vec<u8> = [
            &[1u8][..],                               // version
            &[6, 5, 0, 0, 0, 0, 0, 0, 0],             // LastSequence(5)
            &[1, 2, 0, 0, 0],                         // AddFamily, id 2
            &[2, 0, 0, 0, b'a', b'b'],                //   name "ab"
            &[1, 0, 0, 0, 0xee],                      //   options [0xee]
            &[4, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0], // RemoveTable 1, 0x0102
        ]
        .concat();
        assert_eq!(encode_edits(&edits), expected);
        assert_eq!(decode_edits(&expected), Ok(edits.to_vec()));
        assert_eq!(encode_edits(&[]), [1]);
    }

    #[test]
    fn group_from_a_newer_version_is_refused() {
        assert_eq!(decode_edits(&[4, 6]), Err(DecodeError::Version(4)));
        let err = DecodeError::Version(4).into_error(Path::new("MANIFEST-000001"), 0);
        assert!(matches!(
            err,
            Error::UnsupportedVersion {
                found: 4,
                supported: 3,
                ..
            }
        ));
    }

    #[test]
    fn only_a_group_that_drops_a_family_is_version_2() {
        assert_eq!(encode_edits(&[Edit::LastSequence(1)]).first(), Some(&1));
        let drop = [Edit::RemoveFamily { id: 3 }];
        assert_eq!(encode_edits(&drop), [2, 8, 3, 0, 0, 0]);
        assert_eq!(decode_edits(&[2, 8, 3, 0, 0, 0]), Ok(drop.to_vec()));
        // Version 1 had no tag 8.
        assert_eq!(
            decode_edits(&[1, 8, 3, 0, 0, 0]),
            Err(DecodeError::Malformed("unknown edit tag 8".to_string()))
        );
    }

    #[test]
    fn a_table_below_level_0_is_written_as_version_3_with_its_level_last() {
        let mut table = TableMeta::empty(7, 7, 0);
        table.first_key = b"a".to_vec();
        table.last_key = b"b".to_vec();
        let at_0 = encode_edits(&[Edit::AddTable {
            family: 1,
            table: table.clone(),
        }]);
        table.level = 3;
        let at_3 = encode_edits(&[Edit::AddTable {
            family: 1,
            table: table.clone(),
        }]);
        assert_eq!(at_0.get(..2), Some(&[1u8, 3][..]), "version 1, tag ADD_TABLE");
        assert_eq!(at_3.get(..2), Some(&[3u8, 9][..]), "version 3, tag ADD_TABLE_AT_LEVEL");
        assert_eq!(at_3.len(), at_0.len() + 4);
        assert_eq!(at_3.get(at_0.len()..), Some(&[3u8, 0, 0, 0][..]));
        assert_eq!(at_3.get(2..at_0.len()), at_0.get(2..));
        assert_eq!(decode_edits(&at_3), Ok(vec![Edit::AddTable { family: 1, table }]));
        // A group with a drop and a level is version 3; the drop alone stays version 2.
        let both = [
            Edit::RemoveFamily { id: 3 },
            Edit::AddTable {
                family: 1,
                table: TableMeta::empty(1, 1, 2),
            },
        ];
        assert_eq!(encode_edits(&both).first(), Some(&3));
        // The new tag in an older group is not an edit of that version.
        for older in [1u8, 2] {
            let mut old = at_3.clone();
            old[0] = older;
            assert_eq!(
                decode_edits(&old),
                Err(DecodeError::Malformed("unknown edit tag 9".into()))
            );
        }
        // A level-0 table under the level tag is malformed, not silently at level 0.
        let mut zero = at_3.clone();
        let n = zero.len();
        zero[n - 4] = 0;
        assert_eq!(
            decode_edits(&zero),
            Err(DecodeError::Malformed("a table added at a level has level 0".into()))
        );
    }

    #[test]
    fn malformed_groups_say_what_is_wrong() {
        assert_eq!(
            decode_edits(&[]),
            Err(DecodeError::Malformed(
                "edit group ends inside the version byte".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 99]),
            Err(DecodeError::Malformed("unknown edit tag 99".to_string()))
        );
        assert_eq!(
            decode_edits(&[1, 6, 1, 2]),
            Err(DecodeError::Malformed(
                "edit group ends inside a sequence number".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 1, 0, 0, 0, 0, 9, 0, 0, 0, b'x']),
            Err(DecodeError::Malformed(
                "edit group ends inside a family name".to_string()
            ))
        );
        assert_eq!(
            decode_edits(&[1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0, 0, 0, 0]),
            Err(DecodeError::Malformed("a family name is not UTF-8".to_string()))
        );
    }

    /// Any edit, with short strings so cases stay small.
    fn any_edit() -> impl Strategy<Value = Edit> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..8);
        let table =
            (any::<[u64; 9]>(), 0..8u32, bytes(), bytes()).prop_map(|(n, level, first_key, last_key)| TableMeta {
                file_id: n[0],
                run: n[1],
                level,
                size: n[2],
                entries: n[3],
                tombstones: n[4],
                first_key,
                last_key,
                min_seq: n[5],
                max_seq: n[6],
                min_ts: n[7],
                max_ts: n[8],
            });
        prop_oneof![
            (any::<u32>(), ".{0,8}", bytes()).prop_map(|(id, name, options)| Edit::AddFamily { id, name, options }),
            (any::<u32>(), bytes()).prop_map(|(id, options)| Edit::SetFamilyOptions { id, options }),
            (any::<u32>(), table).prop_map(|(family, table)| Edit::AddTable { family, table }),
            (any::<u32>(), any::<u64>()).prop_map(|(family, file_id)| Edit::RemoveTable { family, file_id }),
            (any::<u32>(), any::<u64>()).prop_map(|(family, log_number)| Edit::SetLogNumber { family, log_number }),
            any::<u64>().prop_map(Edit::LastSequence),
            any::<u64>().prop_map(Edit::NextFileNumber),
            any::<u32>().prop_map(|id| Edit::RemoveFamily { id }),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_edit_groups_round_trip(edits in proptest::collection::vec(any_edit(), 0..12)) {
            prop_assert_eq!(decode_edits(&encode_edits(&edits)), Ok(edits));
        }

        #[test]
        fn arbitrary_bytes_never_panic_in_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_edits(&bytes);
            let mut versioned = vec![EDIT_FORMAT_VERSION];
            versioned.extend_from_slice(&bytes);
            let _ = decode_edits(&versioned);
        }
    }
}
