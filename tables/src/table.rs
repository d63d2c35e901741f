//! A table and its writes: every layout changed in one atomic batch.
//!
//! The rule that keeps the copies in step is simple to state: **every write
//! to a table is one [`WriteBatch`] that changes every layout**, source of
//! truth and copies (and a layout being built) together. The engine applies
//! a batch as one log record, across column families, so after a crash
//! either every layout has the change or none does. Cassandra's materialized
//! views lack exactly this (the base table and the view are written
//! separately, by different replicas), and that is why their copies drift.
//!
//! * [`Table::insert`] puts the record in every layout.
//! * [`Table::update`] reads the old record from the source of truth; in a
//!   layout whose key reads a changed field the record **moves**: a
//!   tombstone at the old cell and a put at the new one; in the others it is
//!   rewritten in place.
//! * [`Table::delete`] reads the old record (to know where its copies are)
//!   and puts a tombstone in every layout.
//!
//! Update and delete read before they write, so two writers must not
//! interleave on one record: both would read the same old record and move
//! it twice, leaving a copy behind. A table therefore serialises its writes
//! with one lock (the price: one writer at a time per table; Cassandra's
//! views take a lock per partition on the base replica for the same reason).
//! Reads never take it: they read a snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cellar_engine::{FamilyOptions, Store, WriteBatch};
use parking_lot::{Mutex, MutexGuard, RwLock};

use crate::catalog::{self, Definition, CATALOG_FAMILY, DEFINITION_COLUMN};
use crate::error::{Error, Result};
use crate::layout::{Address, Layout};
use crate::record::{self, Record};
use crate::schema::Schema;

/// How a table writes.
#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    /// Write every cell with this timestamp instead of the store's clock.
    /// Correct either way, because a table's writes are serialised and the
    /// engine lets the later of two writes with one timestamp win; a fixed
    /// time makes every byte on disk the same from run to run (the lesson
    /// uses it). It must not be older than what the table already holds: a
    /// cell with a later timestamp hides an older tombstone or put. An update
    /// or delete of a record written later than this time is refused; an
    /// insert over the tombstones of a record deleted later than this time
    /// cannot be seen (its own cell is gone), so keep one fixed time for a
    /// table, or move it only forward.
    pub timestamp: Option<u64>,
    /// Options of the families the table creates for its layouts.
    pub family: FamilyOptions,
}

impl TableOptions {
    /// Writes at a fixed time.
    pub fn fixed_time(mut self, ms: u64) -> TableOptions {
        self.timestamp = Some(ms);
        self
    }

    /// Creates layout families with these options.
    pub fn family_options(mut self, options: FamilyOptions) -> TableOptions {
        self.family = options;
        self
    }
}

/// What one write did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Entries in its batch (puts and tombstones), all layouts.
    pub entries: u64,
    /// Their bytes: row + column + value.
    pub bytes: u64,
    /// The layouts in which an update moved the record to another cell.
    pub moved: Vec<String>,
}

/// One layout's share of the writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutWrites {
    /// Puts.
    pub puts: u64,
    /// Tombstones.
    pub tombstones: u64,
    /// Bytes of both: row + column + value.
    pub bytes: u64,
}

/// The writes a table handle has made since it was opened (backfills are
/// counted in their own report).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteCounts {
    /// Records inserted.
    pub inserts: u64,
    /// Records updated.
    pub updates: u64,
    /// Records deleted.
    pub deletes: u64,
    /// Rows moved: per update, the layouts in which the record changed cell.
    pub rows_moved: u64,
    /// Entries written, all layouts.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Per layout.
    pub by_layout: BTreeMap<String, LayoutWrites>,
}

/// A query-first table: one source of truth and a layout per read path,
/// kept in step. Share one handle (`Arc<Table>`) between threads.
pub struct Table {
    pub(crate) store: Arc<Store>,
    pub(crate) def: RwLock<Arc<Definition>>,
    /// Serialises writes and backfill batches (see the module docs).
    pub(crate) write: Mutex<()>,
    pub(crate) options: TableOptions,
    pub(crate) counts: Mutex<WriteCounts>,
    /// Layouts with a backfill handle alive.
    pub(crate) backfilling: Mutex<BTreeSet<String>>,
    _open: OpenGuard,
}

/// The tables open in this process, by store folder and name.
fn open_tables() -> &'static Mutex<BTreeSet<(PathBuf, String)>> {
    static OPEN: OnceLock<Mutex<BTreeSet<(PathBuf, String)>>> = OnceLock::new();
    OPEN.get_or_init(|| Mutex::new(BTreeSet::new()))
}

struct OpenGuard((PathBuf, String));

impl OpenGuard {
    fn take(store: &Store, name: &str) -> Result<OpenGuard> {
        let id = (store.dir().to_path_buf(), name.to_string());
        if !open_tables().lock().insert(id.clone()) {
            return Err(Error::AlreadyOpen(name.to_string()));
        }
        Ok(OpenGuard(id))
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        open_tables().lock().remove(&self.0);
    }
}

/// A batch of changes to the layouts of one table or more, counted as it
/// is built: [`Changes::take_counts`] hands over what the writes added
/// since the last call, one write's share.
pub(crate) struct Changes {
    pub batch: WriteBatch,
    timestamp: Option<u64>,
    pub report: WriteReport,
    pub by_layout: BTreeMap<String, LayoutWrites>,
}

impl Changes {
    pub(crate) fn new(timestamp: Option<u64>) -> Changes {
        Changes {
            batch: WriteBatch::new(),
            timestamp,
            report: WriteReport::default(),
            by_layout: BTreeMap::new(),
        }
    }

    /// The timestamp the next cells are written with (each table has its own).
    pub(crate) fn write_at(&mut self, timestamp: Option<u64>) {
        self.timestamp = timestamp;
    }

    /// What was counted since the last call, leaving the batch as it is.
    pub(crate) fn take_counts(&mut self) -> (WriteReport, BTreeMap<String, LayoutWrites>) {
        (std::mem::take(&mut self.report), std::mem::take(&mut self.by_layout))
    }

    fn count(&mut self, layout: &str, bytes: usize, tombstone: bool) {
        let w = self.by_layout.entry(layout.to_string()).or_default();
        if tombstone {
            w.tombstones += 1;
        } else {
            w.puts += 1;
        }
        w.bytes += bytes as u64;
        self.report.entries += 1;
        self.report.bytes += bytes as u64;
    }

    pub(crate) fn put(&mut self, layout: &str, at: &Address, value: &[u8]) {
        match self.timestamp {
            Some(ts) => self.put_as_of(layout, at, value, ts),
            None => {
                self.batch.put(layout, &at.row, &at.column, value);
                self.count(layout, at.row.len() + at.column.len() + value.len(), false);
            }
        }
    }

    /// A put at a given time: a backfill's copy carries the time of the
    /// source cell it copies.
    pub(crate) fn put_as_of(&mut self, layout: &str, at: &Address, value: &[u8], timestamp: u64) {
        self.batch.put_at(layout, &at.row, &at.column, timestamp, value);
        self.count(layout, at.row.len() + at.column.len() + value.len(), false);
    }

    pub(crate) fn delete(&mut self, layout: &str, at: &Address) {
        match self.timestamp {
            Some(ts) => self.batch.delete_at(layout, &at.row, &at.column, ts),
            None => self.batch.delete(layout, &at.row, &at.column),
        };
        self.count(layout, at.row.len() + at.column.len(), true);
    }

    /// Rewrites the table's definition in the catalog (not counted: it is
    /// no layout's data).
    pub(crate) fn put_definition(&mut self, def: &Definition) {
        let text = def.to_text();
        match self.timestamp {
            Some(ts) => self
                .batch
                .put_at(CATALOG_FAMILY, def.name(), DEFINITION_COLUMN, ts, text),
            None => self.batch.put(CATALOG_FAMILY, def.name(), DEFINITION_COLUMN, text),
        };
    }
}

/// One write to a table, as [`Table::insert`], [`Table::update`] and
/// [`Table::delete`] take it, and as a [`crate::Batch`] gathers them.
pub(crate) enum Write<'r> {
    Insert(&'r Record),
    Update { key: &'r Record, changes: &'r Record },
    Delete(&'r Record),
}

impl Table {
    /// Creates a table in `store`: checks the declaration, creates a family
    /// per layout and records the definition in the catalog.
    pub fn create(store: Arc<Store>, schema: &Schema, options: TableOptions) -> Result<Table> {
        let def = Definition::from_schema(schema)?;
        let guard = OpenGuard::take(&store, def.name())?;
        catalog::ensure_catalog(&store)?;
        if catalog::load(&store.snapshot(), def.name())?.is_some() {
            return Err(schema.schema_error("the store already holds a table of this name: use Table::open"));
        }
        for layout in &def.layouts {
            create_layout_family(&store, &def, layout, &options.family)?;
        }
        let mut changes = Changes::new(options.timestamp);
        changes.put_definition(&def);
        store.write(&changes.batch)?;
        Ok(Table::with(store, def, options, guard))
    }

    /// Opens a table the store's catalog holds.
    pub fn open(store: Arc<Store>, name: &str, options: TableOptions) -> Result<Table> {
        let guard = OpenGuard::take(&store, name)?;
        if !store.families().iter().any(|f| f == CATALOG_FAMILY) {
            return Err(Error::UnknownTable(name.to_string()));
        }
        let def = catalog::load(&store.snapshot(), name)?.ok_or_else(|| Error::UnknownTable(name.to_string()))?;
        for layout in &def.layouts {
            if !store.families().contains(&layout.name) {
                return Err(Error::Corruption {
                    family: CATALOG_FAMILY.to_string(),
                    row: name.to_string(),
                    what: format!(
                        "the definition names layout {}, and the store has no such family",
                        layout.name
                    ),
                });
            }
        }
        Ok(Table::with(store, def, options, guard))
    }

    /// Opens the table if the store holds it (its fields and primary key must
    /// be the declared ones; its layouts are the stored ones, which may
    /// include layouts added since), or creates it.
    pub fn open_or_create(store: Arc<Store>, schema: &Schema, options: TableOptions) -> Result<Table> {
        let exists = store.families().iter().any(|f| f == CATALOG_FAMILY)
            && catalog::load(&store.snapshot(), &schema.name)?.is_some();
        if !exists {
            return Table::create(store, schema, options);
        }
        let table = Table::open(store, &schema.name, options)?;
        let def = table.definition();
        if def.schema.fields != schema.fields || def.schema.primary_key != schema.primary_key {
            return Err(schema.schema_error("the stored table has other fields or another primary key"));
        }
        Ok(table)
    }

    fn with(store: Arc<Store>, def: Definition, options: TableOptions, guard: OpenGuard) -> Table {
        Table {
            store,
            def: RwLock::new(Arc::new(def)),
            write: Mutex::new(()),
            options,
            counts: Mutex::new(WriteCounts::default()),
            backfilling: Mutex::new(BTreeSet::new()),
            _open: guard,
        }
    }

    /// The table's name.
    pub fn name(&self) -> String {
        self.def.read().name().to_string()
    }

    /// The current definition: fields, key, layouts and their states.
    pub fn definition(&self) -> Arc<Definition> {
        self.def.read().clone()
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The writes made through this handle so far.
    pub fn write_counts(&self) -> WriteCounts {
        self.counts.lock().clone()
    }

    /// The record with this primary key, read from the source of truth.
    pub fn get(&self, key: &Record) -> Result<Option<Record>> {
        let def = self.definition();
        def.schema.check_key(key)?;
        let source = def.source();
        let at = source.address(&def.schema, key)?;
        match self.store.get(&source.name, &at.row, &at.column)? {
            Some(cell) => Ok(Some(decode_cell(&def, source, &at, &cell.value)?)),
            None => Ok(None),
        }
    }

    /// Inserts a new record into every layout, in one batch. A primary key
    /// the table already holds is refused ([`Error::Exists`]): an insert that
    /// overwrote would leave the old record's copies where its key fields
    /// put them.
    pub fn insert(&self, record: &Record) -> Result<WriteReport> {
        self.write_one(Write::Insert(record))
            .map(|report| report.unwrap_or_default())
    }

    /// Changes some fields of a record, in every layout, in one batch: the
    /// record moves in each layout whose key reads a changed field, and is
    /// rewritten in place in the others. The report lists where it moved.
    pub fn update(&self, key: &Record, changes: &Record) -> Result<WriteReport> {
        self.write_one(Write::Update { key, changes })
            .map(|report| report.unwrap_or_default())
    }

    /// Deletes a record from every layout, in one batch; `None` when the
    /// table holds no record with this key.
    pub fn delete(&self, key: &Record) -> Result<Option<WriteReport>> {
        self.write_one(Write::Delete(key))
    }

    /// One write, alone in its batch, under the table's write lock.
    fn write_one(&self, write: Write<'_>) -> Result<Option<WriteReport>> {
        let _w = self.write.lock();
        let def = self.definition();
        let mut changes = Changes::new(self.options.timestamp);
        if !self.plan_write(&def, &write, &mut changes)?.1 {
            return Ok(None);
        }
        self.store.write(&changes.batch)?;
        let (report, by_layout) = changes.take_counts();
        self.count(&write, &report, by_layout);
        Ok(Some(report))
    }

    /// Adds what `write` does to every layout to `changes`, reading the
    /// record it replaces from the source of truth (the caller holds the
    /// write lock and `def` is the definition read under it). Returns the
    /// record's address in the source of truth, and whether anything is to
    /// be written (not for the delete of a record the table does not hold).
    pub(crate) fn plan_write(
        &self,
        def: &Definition,
        write: &Write<'_>,
        changes: &mut Changes,
    ) -> Result<(Address, bool)> {
        changes.write_at(self.options.timestamp);
        let source = def.source();
        match *write {
            Write::Insert(record) => {
                def.schema.check_record(record, true)?;
                let at = source.address(&def.schema, record)?;
                if self.store.get(&source.name, &at.row, &at.column)?.is_some() {
                    return Err(Error::Exists {
                        table: def.name().to_string(),
                        key: def.schema.key_text(record),
                    });
                }
                let value = record::encode(&def.schema, record);
                for layout in &def.layouts {
                    changes.put(&layout.name, &layout.address(&def.schema, record)?, &value);
                }
                Ok((at, true))
            }
            Write::Update { key, changes: fields } => {
                def.schema.check_record(fields, false)?;
                if let Some((field, _)) = fields
                    .iter()
                    .find(|(f, _)| def.schema.primary_key.iter().any(|k| k == f))
                {
                    return Err(Error::PrimaryKeyChange {
                        table: def.name().to_string(),
                        field: field.to_string(),
                    });
                }
                let (at, old) = self.read_for_write(def, key)?;
                let old = old.ok_or_else(|| Error::NotFound {
                    table: def.name().to_string(),
                    key: key.to_string(),
                })?;
                let new = old.merged(fields);
                let value = record::encode(&def.schema, &new);
                for layout in &def.layouts {
                    let from = layout.address(&def.schema, &old)?;
                    let to = layout.address(&def.schema, &new)?;
                    if from != to {
                        changes.delete(&layout.name, &from);
                        changes.report.moved.push(layout.name.clone());
                    }
                    changes.put(&layout.name, &to, &value);
                }
                Ok((at, true))
            }
            Write::Delete(key) => {
                let (at, old) = self.read_for_write(def, key)?;
                let Some(old) = old else {
                    return Ok((at, false));
                };
                for layout in &def.layouts {
                    changes.delete(&layout.name, &layout.address(&def.schema, &old)?);
                }
                Ok((at, true))
            }
        }
    }

    /// The current record for a key, read under the write lock, with its
    /// address in the source of truth. A record stored at a later time than
    /// the table's fixed write time is refused: the tombstones and puts that
    /// would replace it carry an older timestamp, and the engine lets the
    /// newer cell hide them (a delete that deletes nothing, a moved record
    /// whose old copy stays).
    fn read_for_write(&self, def: &Definition, key: &Record) -> Result<(Address, Option<Record>)> {
        def.schema.check_key(key)?;
        let source = def.source();
        let at = source.address(&def.schema, key)?;
        let Some(cell) = self.store.get(&source.name, &at.row, &at.column)? else {
            return Ok((at, None));
        };
        if let Some(fixed) = self.options.timestamp.filter(|fixed| *fixed < cell.timestamp) {
            return Err(def.schema.record_error(format!(
                "{} was written at {}, after the fixed time {fixed} this table writes at: its tombstones and \
                 puts would be hidden behind the record's cells; write at {} or later",
                def.schema.key_text(key),
                cell.timestamp,
                cell.timestamp
            )));
        }
        let record = decode_cell(def, source, &at, &cell.value)?;
        Ok((at, Some(record)))
    }

    /// Counts a write that reached the store.
    pub(crate) fn count(&self, write: &Write<'_>, report: &WriteReport, by_layout: BTreeMap<String, LayoutWrites>) {
        let mut c = self.counts.lock();
        match write {
            Write::Insert(_) => c.inserts += 1,
            Write::Update { .. } => {
                c.updates += 1;
                c.rows_moved += report.moved.len() as u64;
            }
            Write::Delete(_) => c.deletes += 1,
        }
        c.entries += report.entries;
        c.bytes += report.bytes;
        for (layout, w) in by_layout {
            let total = c.by_layout.entry(layout).or_default();
            total.puts += w.puts;
            total.tombstones += w.tombstones;
            total.bytes += w.bytes;
        }
    }

    /// Adds the rewrite of the table's definition to `changes` (the caller
    /// holds the write lock). At a fixed time older than the stored
    /// definition's it is refused: the catalog would keep the older cell
    /// visible, and after a reopen the table would have its old layouts (a
    /// dropped layout named again without its family, and the table would
    /// not open; a staged one forgotten).
    pub(crate) fn put_definition(&self, changes: &mut Changes, next: &Definition) -> Result<()> {
        if let Some(fixed) = self.options.timestamp {
            let stored = self.store.get(CATALOG_FAMILY, next.name(), DEFINITION_COLUMN)?;
            if let Some(at) = stored.map(|cell| cell.timestamp).filter(|at| fixed < *at) {
                return Err(next.schema.schema_error(format!(
                    "its definition was stored at {at}, after the fixed time {fixed} this table writes at: a \
                     change written then would be hidden behind it; write at {at} or later"
                )));
            }
        }
        changes.put_definition(next);
        Ok(())
    }

    /// The write lock: held by every write, from its read of the old record
    /// to its batch, and by each backfill batch.
    pub(crate) fn lock_writes(&self) -> MutexGuard<'_, ()> {
        self.write.lock()
    }
}

/// Creates a layout's family, or accepts an existing one that holds nothing
/// (a table creation or a staging that stopped half-way left it). A family
/// another table's definition names is refused, even empty: the two tables'
/// records would mix in it.
pub(crate) fn create_layout_family(
    store: &Store,
    def: &Definition,
    layout: &Layout,
    options: &FamilyOptions,
) -> Result<()> {
    if let Some(other) = table_with_layout(store, def.name(), &layout.name)? {
        return Err(def.schema.schema_error(format!(
            "layout {}: table {other} keeps its layout {} in that family; name the layout for this table",
            layout.name, layout.name
        )));
    }
    if store.families().contains(&layout.name) {
        let mut rows = store.scan(&layout.name, &cellar_engine::RowRange::all().limit(1))?;
        if rows.next().transpose()?.is_some() {
            return Err(def.schema.schema_error(format!(
                "layout {}: the store already has a family of this name holding data",
                layout.name
            )));
        }
        return Ok(());
    }
    store.create_family(&layout.name, options.clone())?;
    Ok(())
}

/// The table other than `table` whose definition has a layout named `name`.
fn table_with_layout(store: &Store, table: &str, name: &str) -> Result<Option<String>> {
    let snapshot = store.snapshot();
    for other in catalog::tables(store)? {
        if other == table {
            continue;
        }
        if let Some(d) = catalog::load(&snapshot, &other)? {
            if d.layouts.iter().any(|l| l.name == name) {
                return Ok(Some(other));
            }
        }
    }
    Ok(None)
}

/// A record from a layout's cell, or corruption naming the cell.
pub(crate) fn decode_cell(def: &Definition, layout: &Layout, at: &Address, value: &[u8]) -> Result<Record> {
    record::decode(&def.schema, value).map_err(|what| Error::Corruption {
        family: layout.name.clone(),
        row: cellar_keys::encoding::to_string_binary(&at.row),
        what: format!("record: {what}"),
    })
}
