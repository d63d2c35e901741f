//! YCSB's core workloads and the client loop that runs them.
//!
//! | workload | mix | request distribution | models |
//! |---|---|---|---|
//! | load | insert every record | record numbers in order, keys hashed | bulk load |
//! | A | 50% read, 50% update | scrambled zipfian | session store |
//! | B | 95% read, 5% update | scrambled zipfian | photo tagging |
//! | C | 100% read | scrambled zipfian | user profile cache |
//! | D | 95% read, 5% insert | latest | status updates |
//! | E | 95% scan (1 to 100 records, uniform), 5% insert | scrambled zipfian | threaded conversations |
//! | F | 50% read, 50% read-modify-write | scrambled zipfian | user database |
//!
//! As in YCSB's `CoreWorkload`: record `n`'s key is `user` followed by the
//! decimal FNV hash of `n` (`insertorder=hashed`), so the load writes in
//! random key order; a read reads every field (`readallfields=true`); an
//! update writes one field chosen uniformly (`writeallfields=false`); a
//! read-modify-write reads the record, then updates one field, timed as one
//! operation, and its read and its update are also counted and timed as a
//! read and an update (YCSB's `DBWrapper` times every call to the database,
//! so F's reads are all its operations). The zipfian key chooser spans the
//! records plus twice the inserts a workload expects, and a draw beyond the
//! newest acknowledged record is drawn again. An operation's time is the
//! store's call alone: keys and values are built before the clock starts.
//! The workloads run in YCSB's recommended sequence: load, A, B, C, F, D,
//! then the records deleted and loaded again (D inserted some), then E; each
//! on the store closed and opened again, as each is a YCSB process of its
//! own. The run is one client thread, no target rate.
//! A record has `fieldcount` fields of `fieldlength` bytes (YCSB's options,
//! 10 and 100 by default: [`Shape`]), named `field0`, `field1`, ...

use std::time::{Duration, Instant};

use super::generator::{ScrambledZipfian, SkewedLatest, Uniform};
use super::latency::{Latencies, Percentiles};
use super::record::{field_name, RecordStore};
use crate::error::{Error, Result};
use crate::peers::workloads::{Rng, Values};
use crate::peers::Shape;
use crate::progress::Progress;

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Writes a new record.
    Insert,
    /// Reads a record's fields.
    Read,
    /// Writes one field.
    Update,
    /// Reads a run of records.
    Scan,
    /// Reads a record, then writes one field.
    ReadModifyWrite,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 5] = [Op::Insert, Op::Read, Op::Update, Op::Scan, Op::ReadModifyWrite];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Read => "read",
            Op::Update => "update",
            Op::Scan => "scan",
            Op::ReadModifyWrite => "rmw",
        }
    }

    /// The operation of a name.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }
}

/// Which records the operations pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// YCSB's scrambled zipfian (constant 0.99).
    Zipfian,
    /// YCSB's skewed latest: the newest records the hottest.
    Latest,
}

/// A workload: the share of each operation and the request distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// `A` to `F`.
    pub name: &'static str,
    /// Operations and their shares, in YCSB's order (read, update, insert,
    /// scan, read-modify-write), zero shares left out.
    pub mix: &'static [(Op, f64)],
    /// Which records the operations pick.
    pub distribution: Distribution,
    /// Runs on the records deleted and loaded again, not on the store the
    /// workloads before it changed (E, after D's inserts).
    pub reload: bool,
}

/// The core workloads, in the order [`run_all`] runs them: YCSB's recommended
/// sequence A, B, C, F, D (D inserts), then the records deleted and loaded
/// again, then E.
pub const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "A",
        mix: &[(Op::Read, 0.5), (Op::Update, 0.5)],
        distribution: Distribution::Zipfian,
        reload: false,
    },
    Workload {
        name: "B",
        mix: &[(Op::Read, 0.95), (Op::Update, 0.05)],
        distribution: Distribution::Zipfian,
        reload: false,
    },
    Workload {
        name: "C",
        mix: &[(Op::Read, 1.0)],
        distribution: Distribution::Zipfian,
        reload: false,
    },
    Workload {
        name: "F",
        mix: &[(Op::Read, 0.5), (Op::ReadModifyWrite, 0.5)],
        distribution: Distribution::Zipfian,
        reload: false,
    },
    Workload {
        name: "D",
        mix: &[(Op::Read, 0.95), (Op::Insert, 0.05)],
        distribution: Distribution::Latest,
        reload: false,
    },
    Workload {
        name: "E",
        mix: &[(Op::Insert, 0.05), (Op::Scan, 0.95)],
        distribution: Distribution::Zipfian,
        reload: true,
    },
];

/// Phases in the order a report lists them.
pub const PHASES: [&str; 7] = ["load", "A", "B", "C", "D", "E", "F"];

/// Longest scan of workload E (`maxscanlength`).
pub const MAX_SCAN: u64 = 100;

/// YCSB's key of record `n`.
pub fn record_key(n: u64) -> Vec<u8> {
    format!("user{}", super::generator::fnv_hash64(n as i64)).into_bytes()
}

/// One operation type's results in a phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpReport {
    /// Operations done.
    pub count: u64,
    /// Records found: by reads and read-modify-writes (each must find its
    /// record with every field), and returned by scans.
    pub found: u64,
    /// Latency percentiles.
    pub latency: Percentiles,
}

/// One phase's results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseReport {
    /// `load` or a workload's name.
    pub name: String,
    /// Operations done.
    pub ops: u64,
    /// Seconds they took.
    pub seconds: f64,
    /// Per operation type.
    pub by_op: Vec<(Op, OpReport)>,
}

impl PhaseReport {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        crate::peers::per_second(self.ops, self.seconds)
    }

    /// The results of one operation type.
    pub fn op(&self, op: Op) -> Option<&OpReport> {
        self.by_op.iter().find(|(o, _)| *o == op).map(|(_, r)| r)
    }
}

/// YCSB's key chooser of a workload.
enum Chooser {
    /// Spans the records plus twice the inserts expected; a draw beyond the
    /// newest record is drawn again (`CoreWorkload.nextKeynum`).
    Zipfian(ScrambledZipfian),
    /// Counts back from the newest record.
    Latest(SkewedLatest),
}

impl Chooser {
    /// The next record, `last` being the newest.
    fn next(&mut self, last: i64, rng: &mut Rng) -> i64 {
        match self {
            Chooser::Latest(latest) => latest.next(last, rng),
            Chooser::Zipfian(zipfian) => loop {
                let n = zipfian.next(rng);
                if n <= last {
                    break n;
                }
            },
        }
    }
}

/// The client: the record count and the generators' state. The store is
/// handed to each phase, as a reload before E replaces it.
struct Client<'a> {
    /// Records inserted so far: the next insert is record `records`.
    records: u64,
    rng: Rng,
    values: Values,
    /// The fields' names, `field0` to `field{fieldcount - 1}`.
    names: Vec<Vec<u8>>,
    /// Bytes of a field's value (`fieldlength`).
    field_bytes: usize,
    /// Picks the field an update writes.
    fields: Uniform,
    progress: &'a dyn Progress,
}

/// Steps between progress updates.
const STEP: u64 = 1000;

/// The latencies and records found of each operation type a phase reports.
struct Measured(Vec<(Op, Latencies, u64)>);

impl Measured {
    /// The operation types of `mix`, and for a read-modify-write also the
    /// read and the update it is made of, which YCSB measures on their own
    /// as well (its `DBWrapper` times every call to the database).
    fn of(mix: &[(Op, f64)]) -> Measured {
        let mut ops: Vec<Op> = mix.iter().map(|(op, _)| *op).collect();
        if ops.contains(&Op::ReadModifyWrite) {
            for op in [Op::Read, Op::Update] {
                if !ops.contains(&op) {
                    ops.push(op);
                }
            }
        }
        Measured(ops.into_iter().map(|op| (op, Latencies::default(), 0)).collect())
    }

    /// Records one operation of type `op` that took `took` and found `found` records.
    fn record(&mut self, op: Op, took: Duration, found: u64) {
        if let Some((_, l, f)) = self.0.iter_mut().find(|(o, _, _)| *o == op) {
            l.record(took);
            *f += found;
        }
    }

    /// The reports, in the order of [`Measured::of`].
    fn reports(self) -> Vec<(Op, OpReport)> {
        self.0
            .into_iter()
            .map(|(op, mut l, found)| {
                (
                    op,
                    OpReport {
                        count: l.count(),
                        found,
                        latency: l.percentiles(),
                    },
                )
            })
            .collect()
    }
}

impl Client<'_> {
    /// The key and field values of the next record (not timed: YCSB builds
    /// them before it calls the database).
    fn next_record(&mut self) -> (Vec<u8>, Vec<Vec<u8>>) {
        let key = record_key(self.records);
        let values = (0..self.names.len())
            .map(|_| self.values.next(self.field_bytes).to_vec())
            .collect();
        (key, values)
    }

    /// Inserts the next record; returns how long the store took.
    fn insert<S: RecordStore + ?Sized>(&mut self, store: &mut S) -> Result<Duration> {
        let (key, values) = self.next_record();
        let fields: Vec<(&[u8], &[u8])> = self
            .names
            .iter()
            .map(Vec::as_slice)
            .zip(values.iter().map(Vec::as_slice))
            .collect();
        let t = Instant::now();
        store.insert(&key, &fields)?;
        let took = t.elapsed();
        self.records += 1;
        Ok(took)
    }

    /// A field chosen uniformly (its index in `names`) and a new value for
    /// it, as an update writes.
    fn field_update(&mut self) -> (usize, Vec<u8>) {
        let field = self.fields.next(&mut self.rng) as usize;
        (field, self.values.next(self.field_bytes).to_vec())
    }

    /// Loads `records` records into an empty `store` (the phase `name`).
    fn load<S: RecordStore + ?Sized>(&mut self, store: &mut S, name: &str, records: u64) -> Result<PhaseReport> {
        let mut latencies = Latencies::default();
        self.records = 0;
        self.progress.start(name, records);
        let start = Instant::now();
        for i in 0..records {
            latencies.record(self.insert(store)?);
            if i % STEP == STEP - 1 {
                self.progress.advance(STEP);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        self.progress.finish();
        Ok(PhaseReport {
            name: name.into(),
            ops: records,
            seconds,
            by_op: vec![(
                Op::Insert,
                OpReport {
                    count: records,
                    found: 0,
                    latency: latencies.percentiles(),
                },
            )],
        })
    }

    /// Runs `operations` operations of `workload` on `store`.
    fn run<S: RecordStore + ?Sized>(
        &mut self,
        store: &mut S,
        workload: &Workload,
        operations: u64,
    ) -> Result<PhaseReport> {
        let insert_share: f64 = workload
            .mix
            .iter()
            .filter(|(op, _)| *op == Op::Insert)
            .map(|(_, s)| s)
            .sum();
        let expected_new = (operations as f64 * insert_share * 2.0) as i64;
        let mut chooser = match workload.distribution {
            Distribution::Zipfian => Chooser::Zipfian(ScrambledZipfian::new(0, self.records as i64 + expected_new)),
            Distribution::Latest => Chooser::Latest(SkewedLatest::new(self.records as i64 - 1)),
        };
        let scan_length = Uniform::new(1, MAX_SCAN);
        let fields = self.names.len();
        let mut measured = Measured::of(workload.mix);

        self.progress.start(workload.name, operations);
        let start = Instant::now();
        for i in 0..operations {
            let op = choose(workload.mix, super::generator::next_f64(&mut self.rng));
            let last = self.records as i64 - 1;
            let mut next_record = |rng: &mut Rng| chooser.next(last, rng);
            let (took, found) = match op {
                Op::Insert => (self.insert(store)?, 0),
                Op::Read => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let t = Instant::now();
                    let found = store.read(&key)? == fields;
                    (t.elapsed(), u64::from(found))
                }
                Op::Update => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let (field, value) = self.field_update();
                    let name = self.names.get(field).map(Vec::as_slice).unwrap_or_default();
                    let t = Instant::now();
                    store.update(&key, name, &value)?;
                    (t.elapsed(), 0)
                }
                Op::Scan => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let len = scan_length.next(&mut self.rng) as usize;
                    let t = Instant::now();
                    let (records, read) = store.scan(&key, len)?;
                    let took = t.elapsed();
                    if read != records * fields {
                        return Err(Error::Peer(format!(
                            "a scan of workload {} read {read} fields from {records} records",
                            workload.name
                        )));
                    }
                    (took, records as u64)
                }
                Op::ReadModifyWrite => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let (field, value) = self.field_update();
                    let name = self.names.get(field).map(Vec::as_slice).unwrap_or_default();
                    let t = Instant::now();
                    let found = u64::from(store.read(&key)? == fields);
                    let read = t.elapsed();
                    let u = Instant::now();
                    store.update(&key, name, &value)?;
                    let update = u.elapsed();
                    let took = t.elapsed();
                    measured.record(Op::Read, read, found);
                    measured.record(Op::Update, update, 0);
                    (took, found)
                }
            };
            measured.record(op, took, found);
            if i % STEP == STEP - 1 {
                self.progress.advance(STEP);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        self.progress.finish();
        let by_op = measured.reports();
        for (op, r) in &by_op {
            if matches!(op, Op::Read | Op::ReadModifyWrite) && r.found != r.count {
                return Err(Error::Peer(format!(
                    "workload {}: {} of {} {}s did not find their record with all {fields} fields",
                    workload.name,
                    r.count - r.found,
                    r.count,
                    op.name()
                )));
            }
        }
        Ok(PhaseReport {
            name: workload.name.into(),
            ops: operations,
            seconds,
            by_op,
        })
    }
}

/// YCSB's `DiscreteGenerator`: the operation whose share covers `u` in [0, 1).
fn choose(mix: &[(Op, f64)], mut u: f64) -> Op {
    let total: f64 = mix.iter().map(|(_, s)| s).sum();
    for (op, share) in mix {
        let p = share / total;
        if u < p {
            return *op;
        }
        u -= p;
    }
    mix.last().map_or(Op::Read, |(op, _)| *op)
}

/// What [`run_all`] asks of its opener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// A new, empty store (the store before it, if any, closed).
    New,
    /// The store just closed, opened again.
    Again,
}

/// Opens a store as [`Opening`] says.
pub type OpenStore<'a, S> = dyn FnMut(Opening) -> Result<Box<S>> + 'a;

/// Settles `store`'s background work (untimed), closes it and opens one as `how` says.
fn reopen<S: RecordStore + ?Sized>(open: &mut OpenStore<'_, S>, store: Box<S>, how: Opening) -> Result<Box<S>> {
    let mut store = store;
    store.settle()?;
    drop(store);
    open(how)
}

/// Runs YCSB's recommended sequence on stores from `open`: loads `records`
/// records of `shape`'s fields into a new store, runs A, B, C, F and D for
/// `operations` operations each, then loads the records again into a new
/// store (D inserted some; untimed, not reported) and runs E. Each phase is
/// a process of its own under YCSB, so here each workload runs on the store
/// closed and opened again: its caches cold, its memtable recovered as the
/// engine recovers one; before every close the store's background work is
/// let settle (untimed). `seed` fixes every key, operation and value, so
/// every engine gets the same run. Returns the phases and the last store.
pub fn run_all<S: RecordStore + ?Sized>(
    open: &mut OpenStore<'_, S>,
    records: u64,
    operations: u64,
    seed: u64,
    shape: Shape,
    progress: &dyn Progress,
) -> Result<(Vec<PhaseReport>, Box<S>)> {
    if records == 0 {
        // No key could be chosen: the zipfian chooser would draw forever.
        return Err(Error::Peer("YCSB needs at least one record to run workloads on".into()));
    }
    let mut value_rng = Rng::new(seed ^ 0xF1E1D);
    let fields = shape.fields.max(1);
    let mut client = Client {
        records: 0,
        rng: Rng::new(seed),
        values: Values::new(&mut value_rng),
        names: (0..fields).map(field_name).collect(),
        field_bytes: shape.field_bytes,
        fields: Uniform::new(0, fields as u64 - 1),
        progress,
    };
    let mut store = open(Opening::New)?;
    let mut phases = vec![client.load(store.as_mut(), "load", records)?];
    for workload in &WORKLOADS {
        if workload.reload {
            store = reopen(open, store, Opening::New)?;
            client.load(store.as_mut(), &format!("reload for {}", workload.name), records)?;
        }
        store = reopen(open, store, Opening::Again)?;
        phases.push(client.run(store.as_mut(), workload, operations)?);
    }
    store.settle()?;
    Ok((phases, store))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::rc::Rc;

    /// Records as maps of field name to value length: what the client wrote;
    /// `log` (shared by every store of a run) keeps what it asked.
    struct Recorder {
        records: Records,
        log: Rc<RefCell<Log>>,
    }

    /// What the client asked of every store of a run.
    #[derive(Default)]
    struct Log {
        /// Each update's field and value length.
        updates: Vec<(Vec<u8>, usize)>,
        /// Each read's key.
        reads: Vec<Vec<u8>>,
    }

    /// A store's records, shared by the `Recorder`s that open it.
    type Records = Rc<RefCell<BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, usize>>>>;

    impl RecordStore for Recorder {
        fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
            let mut records = self.records.borrow_mut();
            let record = records.entry(key.to_vec()).or_default();
            for (name, value) in fields {
                record.insert(name.to_vec(), value.len());
            }
            Ok(())
        }
        fn read(&mut self, key: &[u8]) -> Result<usize> {
            self.log.borrow_mut().reads.push(key.to_vec());
            Ok(self.records.borrow().get(key).map_or(0, BTreeMap::len))
        }
        fn update(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<()> {
            self.log.borrow_mut().updates.push((field.to_vec(), value.len()));
            self.records
                .borrow_mut()
                .entry(key.to_vec())
                .or_default()
                .insert(field.to_vec(), value.len());
            Ok(())
        }
        fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)> {
            let read: Vec<usize> = self
                .records
                .borrow()
                .range(start.to_vec()..)
                .take(records)
                .map(|(_, r)| r.len())
                .collect();
            Ok((read.len(), read.iter().sum()))
        }
        fn settle(&mut self) -> Result<()> {
            Ok(())
        }
    }

    /// A run on [`Recorder`]s: the phases, the stores asked for, the last
    /// store's records, every update and every read.
    struct Recorded {
        phases: Vec<PhaseReport>,
        opened: Vec<Opening>,
        last: BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, usize>>,
        updates: Vec<(Vec<u8>, usize)>,
        reads: Vec<Vec<u8>>,
    }

    fn record(records: u64, operations: u64, shape: Shape) -> Result<Recorded> {
        let log = Rc::new(RefCell::new(Log::default()));
        let mut current = Records::default();
        let mut opened = Vec::new();
        let mut open = |how| {
            opened.push(how);
            if how == Opening::New {
                current = Records::default();
            }
            Ok(Box::new(Recorder {
                records: Rc::clone(&current),
                log: Rc::clone(&log),
            }))
        };
        let (phases, last) = run_all(&mut open, records, operations, 1, shape, &crate::progress::Silent)?;
        let last = last.records.take();
        let log = log.take();
        Ok(Recorded {
            phases,
            opened,
            last,
            updates: log.updates,
            reads: log.reads,
        })
    }

    #[test]
    fn records_have_the_field_count_and_length_asked_for() -> Result<()> {
        let shape = Shape {
            fields: 25,
            field_bytes: 7,
            ..Shape::default()
        };
        let run = record(300, 200, shape)?;
        let names: Vec<Vec<u8>> = (0..25).map(field_name).collect();
        assert!(run.last.len() > 300);
        for record in run.last.values() {
            assert_eq!(record.len(), 25);
            assert!(names.iter().all(|n| record.get(n) == Some(&7)), "{record:?}");
        }
        assert!(run.updates.len() > 100);
        assert!(run.updates.iter().all(|(name, len)| names.contains(name) && *len == 7));
        Ok(())
    }

    fn phase<'a>(phases: &'a [PhaseReport], name: &str) -> &'a PhaseReport {
        phases
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no phase {name}"))
    }

    fn count(phase: &PhaseReport, op: Op) -> u64 {
        phase.op(op).map_or(0, |r| r.count)
    }

    /// YCSB times a read-modify-write as one operation and, as it does every
    /// call to the database (`DBWrapper`), its read as a read and its update
    /// as an update: workload F's reads are all its operations.
    #[test]
    fn workload_f_counts_a_read_modify_writes_read_and_update_as_ycsb_does() -> Result<()> {
        let run = record(300, 400, Shape::default())?;
        let f = phase(&run.phases, "F");
        let rmw = count(f, Op::ReadModifyWrite);
        assert!(rmw > 100 && rmw < 300, "{rmw}");
        assert_eq!(count(f, Op::Read), f.ops);
        assert_eq!(count(f, Op::Update), rmw);
        assert_eq!(f.op(Op::Read).map(|r| r.found), Some(f.ops));
        Ok(())
    }

    /// YCSB's recommended sequence deletes the records after D and loads
    /// them again for E, so E starts from `records` records, not from those
    /// plus D's inserts.
    #[test]
    fn workload_e_runs_on_the_records_loaded_again() -> Result<()> {
        let run = record(300, 400, Shape::default())?;
        let (d, e) = (phase(&run.phases, "D"), phase(&run.phases, "E"));
        assert!(count(d, Op::Insert) > 0 && count(e, Op::Insert) > 0);
        assert_eq!(run.opened.iter().filter(|o| **o == Opening::New).count(), 2);
        assert_eq!(run.last.len() as u64, 300 + count(e, Op::Insert));
        let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["load", "A", "B", "C", "F", "D", "E"]);
        Ok(())
    }

    /// D's "latest" reads favour the newest record, counting the records D
    /// itself inserts: only D reads records past the load's (A, B, C and F
    /// insert none, E only scans), and a good share of its reads are of them.
    #[test]
    fn workload_d_reads_the_records_it_inserts() -> Result<()> {
        let run = record(300, 2000, Shape::default())?;
        let d = phase(&run.phases, "D");
        let inserted: Vec<Vec<u8>> = (300..300 + count(d, Op::Insert)).map(record_key).collect();
        let newest = inserted.last().cloned().unwrap_or_default();
        let of_inserted = run.reads.iter().filter(|k| inserted.contains(k)).count() as u64;
        assert!(
            of_inserted * 4 > count(d, Op::Read),
            "{of_inserted} of {}",
            count(d, Op::Read)
        );
        assert!(run.reads.contains(&newest));
        Ok(())
    }

    /// Under YCSB each phase is a process that opens the store and closes
    /// it: each workload runs on the store closed and opened again.
    #[test]
    fn each_workload_runs_on_the_store_opened_again() -> Result<()> {
        let run = record(300, 400, Shape::default())?;
        use Opening::{Again, New};
        assert_eq!(run.opened, [New, Again, Again, Again, Again, Again, New, Again]);
        Ok(())
    }

    /// With no records, no key can be chosen: an error, not a client
    /// drawing keys forever.
    #[test]
    fn a_run_without_records_is_refused() {
        let refused = record(0, 10, Shape::default()).err().map(|e| e.to_string());
        assert_eq!(
            refused.as_deref(),
            Some("YCSB needs at least one record to run workloads on")
        );
    }

    /// YCSB's `DiscreteGenerator` holds the operations in the order
    /// `CoreWorkload` adds them: read, update, insert, scan, read-modify-write.
    #[test]
    fn every_workload_mix_is_in_ycsbs_order() {
        let rank = |op: &Op| {
            [Op::Read, Op::Update, Op::Insert, Op::Scan, Op::ReadModifyWrite]
                .iter()
                .position(|o| o == op)
        };
        for w in WORKLOADS {
            let ranks: Vec<_> = w.mix.iter().map(|(op, _)| rank(op)).collect();
            assert!(
                ranks.windows(2).all(|p| p[0] < p[1]),
                "workload {}: {:?}",
                w.name,
                w.mix
            );
        }
    }

    #[test]
    fn record_keys_are_ycsb_hashed_keys() {
        assert_eq!(record_key(0), b"user6284781860667377211".to_vec());
        assert_eq!(record_key(1), b"user8517097267634966620".to_vec());
    }

    #[test]
    fn the_operation_chooser_splits_by_share() {
        let mix = &[(Op::Read, 0.95), (Op::Insert, 0.05)];
        assert_eq!(choose(mix, 0.0), Op::Read);
        assert_eq!(choose(mix, 0.9499), Op::Read);
        assert_eq!(choose(mix, 0.9501), Op::Insert);
        assert_eq!(choose(mix, 0.999_999), Op::Insert);
    }

    #[test]
    fn every_workload_mix_sums_to_one() {
        for w in WORKLOADS {
            let total: f64 = w.mix.iter().map(|(_, s)| s).sum();
            assert!((total - 1.0).abs() < 1e-9, "{}", w.name);
        }
    }
}
