//! Model test over *byte* keys: rows and columns that are empty, hold zero
//! bytes (the escape byte of the key encoding), `FF` bytes (the top of every
//! prefix successor) and are prefixes of one another, with timestamps at both
//! ends of `u64`; one row and one column of the longest size allowed, and
//! values many blocks long. Every read (`get`, `versions`, `get_row`,
//! `visit_row`, `slice` forward and reversed, `scan` and its `visit_row`, with
//! byte bounds and prefixes; rows and scans read every way the API offers,
//! see `read_ways`) is checked against a `BTreeMap` of every write, on the
//! store, on every snapshot taken so far and on read-only opens, after
//! flushes, size-tiered and leveled compactions, and reopens.
//!
//! The visibility rules are those of `model.rs`: a deletion hides the
//! versions older than itself by `(timestamp, sequence)`; two puts with the
//! same timestamp are one version (the later write wins); `versions()` gives
//! up to `max_versions`. As there, a put is never written under a stored
//! deletion with a larger timestamp (whether that put shows depends on
//! whether the tombstone was compacted away): its timestamp is lifted to the
//! deletion's.
//!
//! `PROPTEST_CASES` raises the number of cases (default 8, to stay fast; 300
//! pass in about 5 minutes on a busy two-core machine, where the default takes 6 s).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::sync::LazyLock;

use cellar_engine::{
    Cell, ColumnRange, Compaction, Compression, FamilyOptions, ReadOnlyStore, RowRange, Snapshot, Store, StoreOptions,
    WriteBatch, MAX_COLUMN_BYTES, MAX_ROW_BYTES,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

mod read_ways;

const FAMILIES: [&str; 3] = ["tiered", "leveled", "packed"];
const MAX_VERSIONS: [u32; 3] = [2, 2, 1];

const SHORT_ROWS: [&[u8]; 12] = [
    b"",
    b"\0",
    b"\0\0",
    b"\0\x01",
    b"a",
    b"a\0",
    b"a\0b",
    b"a\xff",
    b"ab",
    b"\xff",
    b"\xff\0",
    b"\xff\xff",
];
const SHORT_COLUMNS: [&[u8]; 7] = [b"", b"\0", b"\0\x01", b"c", b"c\0", b"c\xff", b"\xff"];

/// The rows: the short ones and one of the longest size allowed, of zero
/// and FF bytes (escaped, its keys are half as long again), sorting between
/// `a\0b` and `a\xff`; each of its keys fills a block of its own.
static ROWS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let mut rows: Vec<Vec<u8>> = SHORT_ROWS.iter().map(|r| r.to_vec()).collect();
    rows.push(longest(b"a\0\xff", MAX_ROW_BYTES));
    rows
});

/// The columns: the short ones and one of the longest size allowed, sorting
/// between `c\0` and `c\xff`.
static COLUMNS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let mut columns: Vec<Vec<u8>> = SHORT_COLUMNS.iter().map(|c| c.to_vec()).collect();
    columns.push(longest(b"c\0", MAX_COLUMN_BYTES));
    columns
});

/// `pattern` repeated to exactly `len` bytes.
fn longest(pattern: &[u8], len: usize) -> Vec<u8> {
    pattern.iter().copied().cycle().take(len).collect()
}

/// A row or column for a failure message: a long one by its start and length.
fn shown(bytes: &[u8]) -> String {
    match bytes.len() {
        0..=16 => format!("{bytes:?}"),
        len => format!("{:?}.. ({len} bytes)", &bytes[..8]),
    }
}
/// Bounds and prefixes of ranges: some are rows or columns, some fall between.
const BOUNDS: [&[u8]; 12] = [
    b"",
    b"\0",
    b"\0\xff",
    b"\x01",
    b"a",
    b"a\0",
    b"a\x01",
    b"a\xff",
    b"b",
    b"\xff",
    b"\xff\0",
    b"\xff\xff",
];
const TIMESTAMPS: [u64; 6] = [0, 1, 2, 3, u64::MAX - 1, u64::MAX];

fn family_options(index: usize) -> FamilyOptions {
    let options = FamilyOptions::default()
        .compaction(Compaction::SizeTiered)
        .max_versions(MAX_VERSIONS[index])
        .memtable_max_entries(6)
        .compaction_trigger(2)
        .target_file_entries(5)
        .block_size(64);
    match index {
        1 => options.compaction(Compaction::Leveled {
            base_bytes: 300,
            multiplier: 2,
        }),
        2 => options.tail_copies(true).compression(Compression::Lz4),
        _ => options,
    }
}

fn store_options() -> StoreOptions {
    StoreOptions::default()
        .block_cache_bytes(512)
        .family_with(FAMILIES[0], family_options(0))
        .family_with(FAMILIES[1], family_options(1))
        .family_with(FAMILIES[2], family_options(2))
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

#[derive(Clone, Debug)]
enum Write {
    Put { f: usize, r: usize, c: usize, ts: u64 },
    Delete { f: usize, r: usize, c: usize, ts: u64 },
    DeleteRow { f: usize, r: usize, ts: u64 },
}

#[derive(Clone, Debug)]
struct Bounds {
    from: Option<usize>,
    to: Option<usize>,
    prefix: Option<usize>,
    limit: Option<usize>,
    reverse: bool,
}

#[derive(Clone, Debug)]
enum Op {
    Single(Write),
    Batch(Vec<Write>),
    Flush,
    Compact(usize),
    Reopen,
    Wait,
    TakeSnapshot,
    /// `alter_family` to leveled (true) or size-tiered compaction, with
    /// other block sizes and compression: files written one way are then
    /// compacted the other.
    Alter(usize, bool),
    /// Open the store read-only beside the writer and check every read of it.
    ReadOnly,
    /// Check one more slice of one row and one more scan, on the store and every snapshot.
    Ranges(usize, usize, Bounds, Bounds),
}

fn write_strategy() -> impl Strategy<Value = Write> {
    let f = || 0..FAMILIES.len();
    let r = || prop_oneof![1 => Just(4usize), 2 => 0..ROWS.len()];
    let c = || 0..COLUMNS.len();
    let ts = || (0..TIMESTAMPS.len()).prop_map(|i| TIMESTAMPS[i]);
    prop_oneof![
        6 => (f(), r(), c(), ts()).prop_map(|(f, r, c, ts)| Write::Put { f, r, c, ts }),
        2 => (f(), r(), c(), ts()).prop_map(|(f, r, c, ts)| Write::Delete { f, r, c, ts }),
        1 => (f(), r(), ts()).prop_map(|(f, r, ts)| Write::DeleteRow { f, r, ts }),
    ]
}

fn bounds_strategy() -> impl Strategy<Value = Bounds> {
    let bound = || proptest::option::of(0..BOUNDS.len());
    (
        bound(),
        bound(),
        bound(),
        proptest::option::of(0usize..4),
        any::<bool>(),
    )
        .prop_map(|(from, to, prefix, limit, reverse)| Bounds {
            from,
            to,
            prefix,
            limit,
            reverse,
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => write_strategy().prop_map(Op::Single),
        3 => vec(write_strategy(), 1..5).prop_map(Op::Batch),
        1 => Just(Op::Flush),
        1 => (0..FAMILIES.len()).prop_map(Op::Compact),
        1 => Just(Op::Reopen),
        1 => Just(Op::Wait),
        1 => Just(Op::TakeSnapshot),
        1 => Just(Op::ReadOnly),
        1 => (0..FAMILIES.len(), any::<bool>()).prop_map(|(f, leveled)| Op::Alter(f, leveled)),
        2 => (0..FAMILIES.len(), 0..ROWS.len(), bounds_strategy(), bounds_strategy())
            .prop_map(|(f, r, a, b)| Op::Ranges(f, r, a, b)),
    ]
}

// ---------------------------------------------------------------------- model

type EntryKey = (usize, usize, Option<usize>);
/// Every write at one key: `(timestamp, sequence) -> Some(value)` for a put,
/// `None` for a tombstone.
type History = BTreeMap<(u64, u64), Option<Vec<u8>>>;
/// (column, timestamp, value)
type Expected = (Vec<u8>, u64, Vec<u8>);

#[derive(Default)]
struct Model {
    writes: BTreeMap<EntryKey, History>,
    next_seq: u64,
}

impl Model {
    fn newest_tombstone(&self, key: EntryKey, upto: u64) -> Option<(u64, u64)> {
        self.writes
            .get(&key)?
            .iter()
            .filter(|((_, seq), v)| *seq <= upto && v.is_none())
            .map(|(age, _)| *age)
            .max()
    }

    fn versions(&self, f: usize, r: usize, c: usize, upto: u64) -> Vec<Expected> {
        let hide = self
            .newest_tombstone((f, r, None), upto)
            .max(self.newest_tombstone((f, r, Some(c)), upto));
        let mut out = Vec::new();
        let mut last_ts = None;
        for (&(ts, seq), value) in self.writes.get(&(f, r, Some(c))).into_iter().flatten().rev() {
            let Some(value) = value else { continue };
            if seq > upto || hide.is_some_and(|t| (ts, seq) < t) || last_ts == Some(ts) {
                continue;
            }
            last_ts = Some(ts);
            out.push((COLUMNS[c].clone(), ts, value.clone()));
            if out.len() == MAX_VERSIONS[f] as usize {
                break;
            }
        }
        out
    }

    fn get(&self, f: usize, r: usize, c: usize, upto: u64) -> Option<Expected> {
        self.versions(f, r, c, upto).into_iter().next()
    }

    /// The live cells of a row in column (byte) order.
    fn row(&self, f: usize, r: usize, upto: u64) -> Vec<Expected> {
        let mut cells: Vec<Expected> = (0..COLUMNS.len()).filter_map(|c| self.get(f, r, c, upto)).collect();
        cells.sort();
        cells
    }

    fn slice(&self, f: usize, r: usize, range: &ColumnRange, upto: u64) -> Vec<Expected> {
        let mut cells: Vec<Expected> = self
            .row(f, r, upto)
            .into_iter()
            .filter(|(col, _, _)| {
                range.from.as_ref().is_none_or(|from| col.as_slice() >= from.as_ref())
                    && range.to.as_ref().is_none_or(|to| col.as_slice() < to.as_ref())
            })
            .collect();
        if range.reverse {
            cells.reverse();
        }
        cells.truncate(range.limit.unwrap_or(usize::MAX));
        cells
    }

    fn scan(&self, f: usize, range: &RowRange, upto: u64) -> Vec<(Vec<u8>, Vec<Expected>)> {
        let mut rows: Vec<(Vec<u8>, Vec<Expected>)> = (0..ROWS.len())
            .map(|r| (ROWS[r].clone(), self.row(f, r, upto)))
            .filter(|(key, cells)| {
                !cells.is_empty()
                    && range.from.as_ref().is_none_or(|from| key.as_slice() >= from.as_ref())
                    && range.to.as_ref().is_none_or(|to| key.as_slice() < to.as_ref())
                    && range.prefix.as_ref().is_none_or(|p| key.starts_with(p))
            })
            .collect();
        rows.sort();
        rows.truncate(range.limit.unwrap_or(usize::MAX));
        rows
    }

    /// A put under a stored deletion with a larger timestamp gets the
    /// deletion's timestamp (see the file comment).
    fn settle(&self, w: &Write, staged: &[(EntryKey, u64)]) -> Write {
        let Write::Put { f, r, c, ts } = *w else {
            return w.clone();
        };
        let covering = [(f, r, None), (f, r, Some(c))];
        let mut newest = ts;
        for key in covering {
            for (&(t, _), v) in self.writes.get(&key).into_iter().flatten() {
                if v.is_none() {
                    newest = newest.max(t);
                }
            }
        }
        for (key, t) in staged {
            if covering.contains(key) {
                newest = newest.max(*t);
            }
        }
        Write::Put { f, r, c, ts: newest }
    }

    fn record(&mut self, w: &Write, value: Vec<u8>) -> u64 {
        self.next_seq += 1;
        let seq = self.next_seq;
        let (key, ts, v) = match *w {
            Write::Put { f, r, c, ts } => ((f, r, Some(c)), ts, Some(value)),
            Write::Delete { f, r, c, ts } => ((f, r, Some(c)), ts, None),
            Write::DeleteRow { f, r, ts } => ((f, r, None), ts, None),
        };
        self.writes.entry(key).or_default().insert((ts, seq), v);
        seq
    }
}

// ------------------------------------------------------------------ checking

fn fail(e: impl Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn expected(cells: Vec<Cell>) -> Vec<Expected> {
    cells
        .into_iter()
        .map(|c| (c.column.to_vec(), c.timestamp, c.value.to_vec()))
        .collect()
}

fn column_range(b: &Bounds) -> ColumnRange {
    let mut range = match b.prefix {
        Some(p) => ColumnRange::prefix(BOUNDS[p]),
        None => ColumnRange::all(),
    };
    if let Some(from) = b.from {
        range.from = Some(BOUNDS[from].to_vec().into());
    }
    if let Some(to) = b.to {
        range.to = Some(BOUNDS[to].to_vec().into());
    }
    range.limit = b.limit;
    range.reverse = b.reverse;
    range
}

fn row_range(b: &Bounds) -> RowRange {
    RowRange {
        from: b.from.map(|i| BOUNDS[i].to_vec().into()),
        to: b.to.map(|i| BOUNDS[i].to_vec().into()),
        prefix: b.prefix.map(|i| BOUNDS[i].to_vec().into()),
        limit: b.limit,
    }
}

fn fixed_column_ranges() -> Vec<ColumnRange> {
    vec![
        ColumnRange::all(),
        ColumnRange::all().reverse().limit(2),
        ColumnRange::prefix(b"\0"),
        ColumnRange::prefix(b"c"),
        ColumnRange::prefix(b"\xff"),
        ColumnRange::between(b"\0", b"c\0"),
        ColumnRange::starting_at(b"\0\x01").reverse(),
    ]
}

fn fixed_row_ranges() -> Vec<RowRange> {
    vec![
        RowRange::all(),
        RowRange::prefix(b"\0"),
        RowRange::prefix(b"a"),
        RowRange::prefix(b"a\0"),
        RowRange::prefix(b"\xff"),
        RowRange::prefix(b"\xff\xff"),
        RowRange::between(b"\0", b"a\x01"),
        RowRange::between(b"a", b"\xff").limit(2),
    ]
}

/// Reads of one snapshot (the store's own reads go through a fresh one,
/// except `get`, `versions` and `get_row`, which are read both ways).
fn check_snapshot(
    snap: &Snapshot,
    model: &Model,
    upto: u64,
    extra: Option<(usize, usize, &Bounds, &Bounds)>,
    step: usize,
) -> Result<(), TestCaseError> {
    for (f, family) in FAMILIES.iter().enumerate() {
        for (r, row) in ROWS.iter().enumerate() {
            for (c, column) in COLUMNS.iter().enumerate() {
                let got = snap.get(family, row, column).map_err(fail)?;
                let got = got.map(|c| (c.column.to_vec(), c.timestamp, c.value.to_vec()));
                prop_assert_eq!(
                    got,
                    model.get(f, r, c, upto),
                    "step {}: get {} {} {}",
                    step,
                    family,
                    shown(row),
                    shown(column)
                );
                let got = expected(snap.versions(family, row, column).map_err(fail)?);
                prop_assert_eq!(
                    got,
                    model.versions(f, r, c, upto),
                    "step {}: versions {} {} {}",
                    step,
                    family,
                    shown(row),
                    shown(column)
                );
            }
            let want = model.row(f, r, upto);
            let what = format!("step {step}: {family} {}", shown(row));
            let got = read_ways::row_every_way(snap, family, row, &what)?;
            prop_assert_eq!(&got, &want, "{} read every way", what);
            for range in fixed_column_ranges() {
                let got = expected(snap.slice(family, row, &range).map_err(fail)?);
                prop_assert_eq!(
                    got,
                    model.slice(f, r, &range, upto),
                    "step {}: slice {} {} {:?}",
                    step,
                    family,
                    shown(row),
                    range
                );
            }
        }
        for range in fixed_row_ranges() {
            check_scan(snap, model, f, &range, upto, step)?;
        }
    }
    if let Some((f, r, columns, rows)) = extra {
        let range = column_range(columns);
        let got = expected(snap.slice(FAMILIES[f], &ROWS[r], &range).map_err(fail)?);
        prop_assert_eq!(
            got,
            model.slice(f, r, &range, upto),
            "step {}: slice {} {} {:?}",
            step,
            FAMILIES[f],
            shown(&ROWS[r]),
            range
        );
        check_scan(snap, model, f, &row_range(rows), upto, step)?;
    }
    Ok(())
}

/// A scan's rows as a failure message shows them: rows and columns by
/// [`shown`], values by their length.
type ShownRow = (String, Vec<(String, u64, usize)>);

fn shown_rows(rows: &[read_ways::LentRow]) -> Vec<ShownRow> {
    rows.iter()
        .map(|(key, cells)| {
            let cells = cells.iter().map(|(c, ts, v)| (shown(c), *ts, v.len())).collect();
            (shown(key), cells)
        })
        .collect()
}

fn check_scan(
    snap: &Snapshot,
    model: &Model,
    f: usize,
    range: &RowRange,
    upto: u64,
    step: usize,
) -> Result<(), TestCaseError> {
    let want = model.scan(f, range, upto);
    let what = format!("step {step}: scan {} {range:?}", FAMILIES[f]);
    let got = read_ways::scan_every_way(snap, FAMILIES[f], range, &what)?;
    prop_assert!(
        got == want,
        "{}: got {:?}, want {:?}",
        what,
        shown_rows(&got),
        shown_rows(&want)
    );
    Ok(())
}

fn value_of(seq: u64) -> Vec<u8> {
    // Zero and FF bytes in values too, and a repeating part LZ4 compresses;
    // every fifth value many blocks long (a value is stored whole in one block).
    let mut v = format!("v{seq}").into_bytes();
    v.extend_from_slice(b"\0\xff");
    v.extend_from_slice(&b"cellar".repeat(if seq.is_multiple_of(5) { 500 } else { 3 }));
    v
}

fn apply(batch: &mut WriteBatch, w: &Write, value: &[u8]) {
    match *w {
        Write::Put { f, r, c, ts } => batch.put_at(FAMILIES[f], &ROWS[r], &COLUMNS[c], ts, value),
        Write::Delete { f, r, c, ts } => batch.delete_at(FAMILIES[f], &ROWS[r], &COLUMNS[c], ts),
        Write::DeleteRow { f, r, ts } => batch.delete_row_at(FAMILIES[f], &ROWS[r], ts),
    };
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(fail)?;
    let mut store = Some(Store::open(dir.path(), store_options()).map_err(fail)?);
    let mut model = Model::default();
    let mut snapshots: Vec<(Snapshot, u64)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let s = store.as_ref().ok_or_else(|| fail("no store"))?;
        let mut extra = None;
        match op {
            Op::Single(w) => {
                let w = model.settle(w, &[]);
                let value = value_of(model.next_seq + 1);
                match w {
                    Write::Put { f, r, c, ts } => s.put_at(FAMILIES[f], &ROWS[r], &COLUMNS[c], ts, &value),
                    Write::Delete { f, r, c, ts } => s.delete_at(FAMILIES[f], &ROWS[r], &COLUMNS[c], ts),
                    Write::DeleteRow { f, r, ts } => s.delete_row_at(FAMILIES[f], &ROWS[r], ts),
                }
                .map_err(fail)?;
                model.record(&w, value);
            }
            Op::Batch(writes) => {
                let mut batch = WriteBatch::new();
                let mut staged: Vec<(EntryKey, u64)> = Vec::new();
                let mut settled = Vec::new();
                for w in writes {
                    let w = model.settle(w, &staged);
                    match w {
                        Write::Delete { f, r, c, ts } => staged.push(((f, r, Some(c)), ts)),
                        Write::DeleteRow { f, r, ts } => staged.push(((f, r, None), ts)),
                        Write::Put { .. } => {}
                    }
                    settled.push(w);
                }
                let mut values = Vec::new();
                for (i, w) in settled.iter().enumerate() {
                    let value = value_of(model.next_seq + 1 + i as u64);
                    apply(&mut batch, w, &value);
                    values.push(value);
                }
                s.write(&batch).map_err(fail)?;
                for (w, value) in settled.iter().zip(values) {
                    model.record(w, value);
                }
            }
            Op::Flush => s.flush().map_err(fail)?,
            Op::Compact(f) => {
                s.compact(FAMILIES[*f]).map_err(fail)?;
            }
            Op::Reopen => {
                drop(store.take());
                store = Some(Store::open(dir.path(), store_options()).map_err(fail)?);
            }
            Op::Wait => s.wait_for_background_work().map_err(fail)?,
            Op::TakeSnapshot => {
                let snap = s.snapshot();
                prop_assert_eq!(snap.sequence(), model.next_seq, "snapshot sequence");
                snapshots.push((snap, model.next_seq));
            }
            Op::Alter(f, leveled) => {
                let options = family_options(*f);
                let options = if *leveled {
                    options
                        .compaction(Compaction::Leveled {
                            base_bytes: 200,
                            multiplier: 3,
                        })
                        .block_size(96)
                } else {
                    options
                        .compaction(Compaction::SizeTiered)
                        .compression(Compression::Zstd { level: 1 })
                };
                s.alter_family(FAMILIES[*f], options).map_err(fail)?;
            }
            Op::ReadOnly => {
                let reader = ReadOnlyStore::open(dir.path()).map_err(fail)?;
                check_snapshot(&reader.snapshot(), &model, model.next_seq, None, step)?;
            }
            Op::Ranges(f, r, a, b) => extra = Some((*f, *r, a, b)),
        }
        let s = store.as_ref().ok_or_else(|| fail("no store"))?;
        check_snapshot(&s.snapshot(), &model, model.next_seq, extra, step)?;
        for (snap, upto) in &snapshots {
            check_snapshot(snap, &model, *upto, extra, step)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn byte_keys_read_as_the_model_says(ops in vec(op_strategy(), 1..50)) {
        run(&ops)?;
    }
}

/// A value of the largest size allowed, under the longest row and column,
/// in a family that compresses: read back whole by every read (point,
/// versions, row, slice, scan, each visitor) from the memtable, from a
/// table file and after a compaction.
#[test]
fn a_value_of_the_largest_size_reads_back_every_way() -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(fail)?;
    let store = Store::open(dir.path(), store_options()).map_err(fail)?;
    let (row, column) = (&ROWS[ROWS.len() - 1], &COLUMNS[COLUMNS.len() - 1]);
    let value = longest(b"value\0\xff", cellar_engine::MAX_VALUE_BYTES);
    for family in FAMILIES {
        store.put_at(family, row, column, 7, &value).map_err(fail)?;
        store.put_at(family, b"a", b"c", 1, b"small").map_err(fail)?;
    }
    let want = vec![(column.clone(), 7, value.clone())];
    for stage in ["memtable", "table", "compacted"] {
        match stage {
            "table" => store.flush().map_err(fail)?,
            "compacted" => {
                for family in FAMILIES {
                    store.compact(family).map_err(fail)?;
                }
            }
            _ => {}
        }
        let snapshot = store.snapshot();
        for family in FAMILIES {
            let what = format!("{stage}: {family}");
            let got = snapshot.get(family, row, column).map_err(fail)?;
            let got = got.map(|c| (c.column.to_vec(), c.timestamp, c.value.to_vec()));
            prop_assert!(got.as_ref() == want.first(), "{}: get", what);
            prop_assert!(expected(snapshot.versions(family, row, column).map_err(fail)?) == want);
            prop_assert!(
                read_ways::row_every_way(&snapshot, family, row, &what)? == want,
                "{}",
                what
            );
            let slice = ColumnRange::starting_at(b"c\0");
            prop_assert!(expected(snapshot.slice(family, row, &slice).map_err(fail)?) == want);
            let rows = read_ways::scan_every_way(&snapshot, family, &RowRange::prefix(b"a\0"), &what)?;
            prop_assert!(rows == vec![(row.clone(), want.clone())], "{}: scan", what);
        }
    }
    Ok(())
}
