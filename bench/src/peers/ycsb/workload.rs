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
//! operation. The zipfian key chooser spans the records plus twice the
//! inserts a workload expects, and a draw beyond the newest acknowledged
//! record is drawn again. The run is one client thread, no target rate.
//! A record has `fieldcount` fields of `fieldlength` bytes (YCSB's options,
//! 10 and 100 by default: [`Shape`]), named `field0`, `field1`, ...

use std::time::Instant;

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
}

/// The core workloads, in the order [`run_all`] runs them: YCSB's recommended
/// sequence A, B, C, F, D (D inserts), then E.
pub const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "A",
        mix: &[(Op::Read, 0.5), (Op::Update, 0.5)],
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "B",
        mix: &[(Op::Read, 0.95), (Op::Update, 0.05)],
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "C",
        mix: &[(Op::Read, 1.0)],
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "F",
        mix: &[(Op::Read, 0.5), (Op::ReadModifyWrite, 0.5)],
        distribution: Distribution::Zipfian,
    },
    Workload {
        name: "D",
        mix: &[(Op::Read, 0.95), (Op::Insert, 0.05)],
        distribution: Distribution::Latest,
    },
    Workload {
        name: "E",
        mix: &[(Op::Scan, 0.95), (Op::Insert, 0.05)],
        distribution: Distribution::Zipfian,
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

/// The client: the store, the record count and the generators' state.
struct Client<'a> {
    store: &'a mut dyn RecordStore,
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

impl Client<'_> {
    fn field_values(&mut self) -> Vec<Vec<u8>> {
        (0..self.names.len())
            .map(|_| self.values.next(self.field_bytes).to_vec())
            .collect()
    }

    fn insert(&mut self) -> Result<()> {
        let key = record_key(self.records);
        let values = self.field_values();
        let fields: Vec<(&[u8], &[u8])> = self
            .names
            .iter()
            .map(Vec::as_slice)
            .zip(values.iter().map(Vec::as_slice))
            .collect();
        self.store.insert(&key, &fields)?;
        self.records += 1;
        Ok(())
    }

    /// A field chosen uniformly (its index in `names`) and a new value for
    /// it, as an update writes.
    fn field_update(&mut self) -> (usize, Vec<u8>) {
        let field = self.fields.next(&mut self.rng) as usize;
        (field, self.values.next(self.field_bytes).to_vec())
    }

    /// Loads `records` records.
    fn load(&mut self, records: u64) -> Result<PhaseReport> {
        let mut latencies = Latencies::default();
        self.progress.start("load", records);
        let start = Instant::now();
        for i in 0..records {
            let t = Instant::now();
            self.insert()?;
            latencies.record(t.elapsed());
            if i % STEP == STEP - 1 {
                self.progress.advance(STEP);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        self.progress.finish();
        Ok(PhaseReport {
            name: "load".into(),
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

    /// Runs `operations` operations of `workload`.
    fn run(&mut self, workload: &Workload, operations: u64) -> Result<PhaseReport> {
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
        let mut latencies: Vec<(Op, Latencies, u64)> = workload
            .mix
            .iter()
            .map(|(op, _)| (*op, Latencies::default(), 0))
            .collect();

        self.progress.start(workload.name, operations);
        let start = Instant::now();
        for i in 0..operations {
            let op = choose(workload.mix, super::generator::next_f64(&mut self.rng));
            let last = self.records as i64 - 1;
            let mut next_record = |rng: &mut Rng| chooser.next(last, rng);
            let (t, found) = match op {
                Op::Insert => {
                    let t = Instant::now();
                    self.insert()?;
                    (t, 0)
                }
                Op::Read => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let t = Instant::now();
                    (t, u64::from(self.store.read(&key)? == fields))
                }
                Op::Update => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let (field, value) = self.field_update();
                    let name = self.names.get(field).map(Vec::as_slice).unwrap_or_default();
                    let t = Instant::now();
                    self.store.update(&key, name, &value)?;
                    (t, 0)
                }
                Op::Scan => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let len = scan_length.next(&mut self.rng) as usize;
                    let t = Instant::now();
                    let (records, read) = self.store.scan(&key, len)?;
                    if read != records * fields {
                        return Err(Error::Peer(format!(
                            "a scan of workload {} read {read} fields from {records} records",
                            workload.name
                        )));
                    }
                    (t, records as u64)
                }
                Op::ReadModifyWrite => {
                    let key = record_key(next_record(&mut self.rng) as u64);
                    let (field, value) = self.field_update();
                    let name = self.names.get(field).map(Vec::as_slice).unwrap_or_default();
                    let t = Instant::now();
                    let found = self.store.read(&key)? == fields;
                    self.store.update(&key, name, &value)?;
                    (t, u64::from(found))
                }
            };
            let took = t.elapsed();
            if let Some((_, l, f)) = latencies.iter_mut().find(|(o, _, _)| *o == op) {
                l.record(took);
                *f += found;
            }
            if i % STEP == STEP - 1 {
                self.progress.advance(STEP);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        self.progress.finish();
        let by_op: Vec<(Op, OpReport)> = latencies
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
            .collect();
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

/// Loads `records` records of `shape`'s fields into `store`, lets its
/// background work settle (untimed), then runs every workload for
/// `operations` operations; `seed` fixes every key, operation and value, so
/// every engine gets the same run.
pub fn run_all(
    store: &mut dyn RecordStore,
    records: u64,
    operations: u64,
    seed: u64,
    shape: Shape,
    progress: &dyn Progress,
) -> Result<Vec<PhaseReport>> {
    let mut value_rng = Rng::new(seed ^ 0xF1E1D);
    let fields = shape.fields.max(1);
    let mut client = Client {
        store,
        records: 0,
        rng: Rng::new(seed),
        values: Values::new(&mut value_rng),
        names: (0..fields).map(field_name).collect(),
        field_bytes: shape.field_bytes,
        fields: Uniform::new(0, fields as u64 - 1),
        progress,
    };
    let mut phases = vec![client.load(records)?];
    client.store.settle()?;
    for workload in &WORKLOADS {
        phases.push(client.run(workload, operations)?);
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Records as maps of field name to value length: what the client wrote.
    #[derive(Default)]
    struct Recorder(BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, usize>>);

    impl RecordStore for Recorder {
        fn insert(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
            let record = self.0.entry(key.to_vec()).or_default();
            for (name, value) in fields {
                record.insert(name.to_vec(), value.len());
            }
            Ok(())
        }
        fn read(&mut self, key: &[u8]) -> Result<usize> {
            Ok(self.0.get(key).map_or(0, BTreeMap::len))
        }
        fn update(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<()> {
            self.0
                .entry(key.to_vec())
                .or_default()
                .insert(field.to_vec(), value.len());
            Ok(())
        }
        fn scan(&mut self, start: &[u8], records: usize) -> Result<(usize, usize)> {
            let read: Vec<usize> = self
                .0
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

    #[test]
    fn records_have_the_field_count_and_length_asked_for() -> Result<()> {
        let mut store = Recorder::default();
        let shape = Shape {
            fields: 25,
            field_bytes: 7,
            ..Shape::default()
        };
        run_all(&mut store, 300, 200, 1, shape, &crate::progress::Silent)?;
        let names: Vec<Vec<u8>> = (0..25).map(field_name).collect();
        assert!(store.0.len() > 300);
        for record in store.0.values() {
            assert_eq!(record.len(), 25);
            assert!(names.iter().all(|n| record.get(n) == Some(&7)), "{record:?}");
        }
        Ok(())
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
