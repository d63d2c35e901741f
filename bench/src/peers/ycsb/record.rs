//! A YCSB record (named fields: ten by default) and the ways an engine can
//! store one.
//!
//! A wide-column store holds a record as it is: a row whose columns are the
//! fields ([`CellarRow`]); reading the record reads the row, updating a field
//! writes one column. A key-value store has two models, and a user picks one:
//!
//! * [`RecordPerKey`]: one key per record, the fields serialized into the
//!   value. A read is one point lookup; an update must read the value, change
//!   one field and write the whole value back (as YCSB's RocksDB binding does).
//! * [`KeyPerField`]: one key per field (`record key 00 field name`). An
//!   update is one blind write; a read is a short prefix scan over the
//!   record's keys, one per field.
//!
//! Both models are written once over [`KeyValue`], the handful of operations
//! they need, which fjall and RocksDB implement.
//!
//! Every model reads each entry a read or scan returns, as db_bench's loops
//! do: at least the lengths of its key and value, summed and handed to
//! `black_box` (the record-per-key model decodes the value as well).

use std::hint::black_box;
use std::path::Path;

use cellar_engine::{RowRange, Store, StoreOptions, SyncPolicy, WriteBatch};

use crate::error::{Error, Result};
use crate::peers::cellar::cell_bytes;

/// Fields of a record: YCSB's default `fieldcount`.
pub const FIELDS: usize = 10;
/// Bytes of a field's value: YCSB's default `fieldlength`.
pub const FIELD_BYTES: usize = 100;

/// The name of field `i`, as YCSB names it: `field0`, `field1`, ...
pub fn field_name(i: usize) -> Vec<u8> {
    format!("field{i}").into_bytes()
}

/// A store of records: what a YCSB client asks of a database.
pub trait RecordStore {
    /// Writes a new record with every field, given as (name, value) pairs.
    fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()>;
    /// Reads every field of a record; returns how many fields it found
    /// (0: no such record).
    fn read(&mut self, key: &[u8]) -> Result<usize>;
    /// Sets the field named `field` of a record to `value`.
    fn update(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<()>;
    /// Reads up to `records` records in key order from the first at or after
    /// `start`, every field; returns (records, fields) read.
    fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)>;
    /// Waits for the background work the engine has started (not timed).
    fn settle(&mut self) -> Result<()>;
}

/// The key-value operations the two key-value models need.
pub trait KeyValue {
    /// Writes one key.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Writes several keys atomically (one batch).
    fn put_batch(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<()>;
    /// Reads one key into `value`; false if absent.
    fn get(&mut self, key: &[u8], value: &mut Vec<u8>) -> Result<bool>;
    /// Visits keys in order from `from` (inclusive) to `to` (exclusive, `None`:
    /// no end) while `visit` returns true.
    fn scan(&mut self, from: &[u8], to: Option<&[u8]>, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<()>;
    /// Waits for the engine's background work.
    fn settle(&mut self) -> Result<()>;
}

/// Copies the value a store returned for a key into `value`; false if the
/// key had none.
pub fn copy_value(found: Option<impl AsRef<[u8]>>, value: &mut Vec<u8>) -> bool {
    let Some(found) = found else {
        return false;
    };
    value.clear();
    value.extend_from_slice(found.as_ref());
    true
}

/// Serializes a record's fields into one value as YCSB's RocksDB binding
/// does (`serializeValues`): for each field, its name's length (4 bytes,
/// big-endian), the name, the value's length (4 bytes, big-endian) and the
/// value. Ten 100-byte fields named `field0`..`field9` make 1140 bytes.
pub fn encode(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    out.clear();
    for (name, value) in fields {
        for part in [name, value] {
            out.extend_from_slice(&(part.len() as u32).to_be_bytes());
            out.extend_from_slice(part);
        }
    }
}

/// Splits a length-prefixed part (4 bytes, big-endian, then the bytes) off
/// the front of `bytes`; `None` if `bytes` ends first.
fn split_part(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<4>()?;
    rest.split_at_checked(usize::try_from(u32::from_be_bytes(*len)).ok()?)
}

/// The fields of a value written by [`encode`].
pub fn decode(mut bytes: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let bad = || Error::Peer("a stored record does not decode".into());
    let mut fields = Vec::new();
    while !bytes.is_empty() {
        let (name, rest) = split_part(bytes).ok_or_else(bad)?;
        let (value, rest) = split_part(rest).ok_or_else(bad)?;
        fields.push((name, value));
        bytes = rest;
    }
    Ok(fields)
}

/// One key per record, the fields serialized in its value.
pub struct RecordPerKey<K> {
    kv: K,
    value: Vec<u8>,
    encoded: Vec<u8>,
}

impl<K: KeyValue> RecordPerKey<K> {
    /// The model over a key-value store.
    pub fn new(kv: K) -> RecordPerKey<K> {
        RecordPerKey {
            kv,
            value: Vec::new(),
            encoded: Vec::new(),
        }
    }
}

impl<K: KeyValue> RecordStore for RecordPerKey<K> {
    fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        encode(fields, &mut self.encoded);
        self.kv.put(key, &self.encoded)
    }

    fn read(&mut self, key: &[u8]) -> Result<usize> {
        if !self.kv.get(key, &mut self.value)? {
            return Ok(0);
        }
        Ok(decode(&self.value)?.len())
    }

    fn update(&mut self, key: &[u8], name: &[u8], value: &[u8]) -> Result<()> {
        let found = self.kv.get(key, &mut self.value)?;
        let mut fields = if found { decode(&self.value)? } else { Vec::new() };
        match fields.iter_mut().find(|(n, _)| *n == name) {
            Some(f) => f.1 = value,
            None => fields.push((name, value)),
        }
        encode(&fields, &mut self.encoded);
        self.kv.put(key, &self.encoded)
    }

    fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)> {
        let (mut read, mut fields, mut damaged, mut bytes) = (0, 0, false, 0);
        self.kv.scan(start, None, &mut |key, value| {
            bytes += key.len() + value.len();
            match decode(value) {
                Ok(f) => fields += f.len(),
                Err(_) => damaged = true,
            }
            read += 1;
            read < records
        })?;
        black_box(bytes);
        if damaged {
            return Err(Error::Peer("a scanned record does not decode".into()));
        }
        Ok((read, fields))
    }

    fn settle(&mut self) -> Result<()> {
        self.kv.settle()
    }
}

/// One key per field: `record key`, a zero byte, the field's name. YCSB's
/// record keys (`user` and digits) hold no zero byte, so a record's fields
/// sort together, before the next record's.
pub struct KeyPerField<K> {
    kv: K,
    key: Vec<u8>,
}

impl<K: KeyValue> KeyPerField<K> {
    /// The model over a key-value store.
    pub fn new(kv: K) -> KeyPerField<K> {
        KeyPerField { kv, key: Vec::new() }
    }

    /// Sets `self.key` to the key of field `name` of record `key`.
    fn field_key(&mut self, key: &[u8], name: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
        self.key.push(0);
        self.key.extend_from_slice(name);
    }
}

/// The record key of a field key.
fn record_of(field_key: &[u8]) -> &[u8] {
    field_key.split(|b| *b == 0).next().unwrap_or(field_key)
}

impl<K: KeyValue> RecordStore for KeyPerField<K> {
    fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        let keys: Vec<Vec<u8>> = fields
            .iter()
            .map(|(name, _)| {
                self.field_key(key, name);
                self.key.clone()
            })
            .collect();
        let pairs: Vec<(&[u8], &[u8])> = keys
            .iter()
            .map(Vec::as_slice)
            .zip(fields.iter().map(|(_, value)| *value))
            .collect();
        self.kv.put_batch(&pairs)
    }

    fn read(&mut self, key: &[u8]) -> Result<usize> {
        // The record's fields are the keys in [key 00, key 01).
        let (mut from, mut to) = (key.to_vec(), key.to_vec());
        from.push(0);
        to.push(1);
        let (mut fields, mut bytes) = (0, 0);
        self.kv.scan(&from, Some(&to), &mut |key, value| {
            fields += 1;
            bytes += key.len() + value.len();
            true
        })?;
        black_box(bytes);
        Ok(fields)
    }

    fn update(&mut self, key: &[u8], name: &[u8], value: &[u8]) -> Result<()> {
        self.field_key(key, name);
        self.kv.put(&self.key, value)
    }

    fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)> {
        let (mut read, mut fields, mut bytes) = (0, 0, 0);
        let mut current: Vec<u8> = Vec::new();
        self.kv.scan(start, None, &mut |k, value| {
            let record = record_of(k);
            if read == 0 || record != current.as_slice() {
                if read == records {
                    return false;
                }
                read += 1;
                current.clear();
                current.extend_from_slice(record);
            }
            fields += 1;
            bytes += k.len() + value.len();
            true
        })?;
        black_box(bytes);
        Ok((read, fields))
    }

    fn settle(&mut self) -> Result<()> {
        self.kv.settle()
    }
}

const FAMILY: &str = "usertable";

/// cellar: a record is a row, its fields the row's columns.
pub struct CellarRow {
    store: Store,
    /// One batch reused for every insert (cleared, its buffers kept), as
    /// the record models reuse their encoding buffer.
    batch: WriteBatch,
    /// Whether reads keep the cells (`get_row`, the scan iterator's
    /// [`Row`](cellar_engine::Row)s) instead of visiting them.
    keep_cells: bool,
}

impl CellarRow {
    /// Opens a fresh store in `dir` with one family of default options
    /// (4 KiB blocks, bloom 10 bits per row, 64 MiB memtable, one version per
    /// cell), every write handed to the OS (`SyncPolicy::Never`).
    pub fn open(dir: &Path) -> Result<CellarRow> {
        let store = Store::open(dir, StoreOptions::default().sync(SyncPolicy::Never).family(FAMILY))?;
        Ok(CellarRow {
            store,
            batch: WriteBatch::new(),
            keep_cells: false,
        })
    }

    /// [`CellarRow::open`] for a reader that keeps what it reads: a read is
    /// `get_row` (a vector of [`Cell`](cellar_engine::Cell)s, each holding
    /// its column and value as reference-counted handles) and a scan
    /// iterates [`Row`](cellar_engine::Row)s, as a program that hands
    /// records on would read them.
    pub fn open_keeping_cells(dir: &Path) -> Result<CellarRow> {
        Ok(CellarRow {
            keep_cells: true,
            ..CellarRow::open(dir)?
        })
    }
}

impl RecordStore for CellarRow {
    fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        self.batch.clear();
        for (name, value) in fields {
            self.batch.put(FAMILY, key, name, value);
        }
        Ok(self.store.write(&self.batch)?)
    }

    /// The row's cells lent one by one (`visit_row`), as a reader that
    /// looks at each field and keeps none of the engine's handles would:
    /// the record models likewise decode a borrowed value. Each cell's key
    /// (row and column) and value lengths are read, as the models read theirs.
    fn read(&mut self, key: &[u8]) -> Result<usize> {
        let mut bytes = 0;
        if self.keep_cells {
            let cells = self.store.get_row(FAMILY, key)?;
            for cell in &cells {
                bytes += key.len() + cell.column.len() + cell.value.len();
            }
            black_box(bytes);
            return Ok(cells.len());
        }
        let fields = self.store.visit_row(FAMILY, key, |cell| {
            bytes += cell_bytes(&cell);
        })?;
        black_box(bytes);
        Ok(fields)
    }

    fn update(&mut self, key: &[u8], name: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.store.put(FAMILY, key, name, value)?)
    }

    fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)> {
        let range = RowRange {
            from: Some(start.to_vec().into()),
            ..RowRange::default()
        }
        .limit(records);
        let (mut read, mut fields, mut bytes) = (0, 0, 0);
        let mut scan = self.store.scan(FAMILY, &range)?;
        if self.keep_cells {
            for row in scan {
                let row = row?;
                read += 1;
                fields += row.cells.len();
                for cell in &row.cells {
                    bytes += row.key.len() + cell.column.len() + cell.value.len();
                }
            }
            black_box(bytes);
            return Ok((read, fields));
        }
        while scan.visit_row(|cell| {
            fields += 1;
            bytes += cell_bytes(&cell);
        })? {
            read += 1;
        }
        black_box(bytes);
        Ok((read, fields))
    }

    fn settle(&mut self) -> Result<()> {
        Ok(self.store.wait_for_background_work()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A key-value store in a map: the models' behaviour without an engine.
    #[derive(Default)]
    struct MapKv(BTreeMap<Vec<u8>, Vec<u8>>);

    impl KeyValue for MapKv {
        fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
            self.0.insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn put_batch(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
            for (k, v) in pairs {
                self.put(k, v)?;
            }
            Ok(())
        }
        fn get(&mut self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
            let found = self.0.get(key);
            if let Some(v) = found {
                value.clone_from(v);
            }
            Ok(found.is_some())
        }
        fn scan(&mut self, from: &[u8], to: Option<&[u8]>, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
            for (k, v) in self.0.range(from.to_vec()..) {
                if to.is_some_and(|t| k.as_slice() >= t) || !visit(k, v) {
                    break;
                }
            }
            Ok(())
        }
        fn settle(&mut self) -> Result<()> {
            Ok(())
        }
    }

    fn values(fill: u8) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..FIELDS)
            .map(|i| (field_name(i), vec![fill + i as u8; FIELD_BYTES]))
            .collect()
    }

    fn exercise(store: &mut dyn RecordStore) -> Result<()> {
        let v = values(10);
        let refs: Vec<(&[u8], &[u8])> = v.iter().map(|(n, v)| (n.as_slice(), v.as_slice())).collect();
        for key in ["user1", "user12", "user2", "user3"] {
            store.insert(key.as_bytes(), &refs)?;
        }
        assert_eq!(store.read(b"user12")?, FIELDS);
        assert_eq!(store.read(b"user11")?, 0);
        store.update(b"user12", b"field3", b"new")?;
        assert_eq!(store.read(b"user12")?, FIELDS);
        // "user12" sorts between "user1" and "user2".
        assert_eq!(store.scan(b"user1", 2)?, (2, 2 * FIELDS));
        assert_eq!(store.scan(b"user10", 5)?, (3, 3 * FIELDS));
        assert_eq!(store.scan(b"user4", 5)?, (0, 0));
        Ok(())
    }

    /// YCSB's RocksDB binding (`RocksDBClient.serializeValues`) writes each
    /// field as its name's length (4 bytes, big-endian), the name, the
    /// value's length (4 bytes, big-endian) and the value: a record of ten
    /// 100-byte fields is 1140 bytes.
    #[test]
    fn a_record_is_encoded_as_ycsbs_rocksdb_binding_encodes_it() {
        let mut out = Vec::new();
        encode(&[(b"field0", b"abc")], &mut out);
        assert_eq!(out, b"\0\0\0\x06field0\0\0\0\x03abc".to_vec());
        let value = [7u8; FIELD_BYTES];
        let names: Vec<Vec<u8>> = (0..FIELDS).map(field_name).collect();
        let fields: Vec<(&[u8], &[u8])> = names.iter().map(|n| (n.as_slice(), &value[..])).collect();
        encode(&fields, &mut out);
        assert_eq!(out.len(), 1140);
    }

    #[test]
    fn a_record_round_trips_through_its_encoding() -> Result<()> {
        let mut out = Vec::new();
        encode(&[(b"field0", b"abc"), (b"f", b"")], &mut out);
        assert_eq!(out.len(), (4 + 6 + 4 + 3) + (4 + 1 + 4));
        assert_eq!(
            decode(&out)?,
            vec![(&b"field0"[..], &b"abc"[..]), (&b"f"[..], &b""[..])]
        );
        assert!(decode(out.get(..out.len() - 1).unwrap_or_default()).is_err());
        Ok(())
    }

    #[test]
    fn the_record_per_key_model_reads_updates_and_scans_records() -> Result<()> {
        let mut model = RecordPerKey::new(MapKv::default());
        exercise(&mut model)?;
        let mut value = Vec::new();
        assert!(model.kv.get(b"user12", &mut value)?);
        let fields = decode(&value)?;
        assert_eq!(fields.get(3), Some(&(&b"field3"[..], &b"new"[..])));
        assert_eq!(model.kv.0.len(), 4);
        Ok(())
    }

    #[test]
    fn the_key_per_field_model_reads_updates_and_scans_records() -> Result<()> {
        let mut model = KeyPerField::new(MapKv::default());
        exercise(&mut model)?;
        assert_eq!(model.kv.0.get(&b"user12\0field3"[..]), Some(&b"new".to_vec()));
        assert_eq!(model.kv.0.len(), 4 * FIELDS);
        Ok(())
    }

    #[test]
    fn the_cellar_row_model_reads_updates_and_scans_records() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        exercise(&mut CellarRow::open(dir.path())?)
    }

    #[test]
    fn the_cellar_row_model_keeping_its_cells_reads_updates_and_scans_records() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let mut keeping = CellarRow::open_keeping_cells(dir.path())?;
        assert!(keeping.keep_cells);
        exercise(&mut keeping)
    }

    /// YCSB opens the store again for each workload.
    #[test]
    fn the_cellar_row_model_opens_its_store_again() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        exercise(&mut CellarRow::open(dir.path())?)?;
        let mut again = CellarRow::open(dir.path())?;
        assert_eq!(again.read(b"user12")?, FIELDS);
        assert_eq!(again.scan(b"user1", 5)?, (4, 4 * FIELDS));
        Ok(())
    }
}
