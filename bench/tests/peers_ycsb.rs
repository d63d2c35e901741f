//! YCSB on tiny data: every workload runs on cellar and on both models of
//! each peer built in, every read finds its record, and the engines read the
//! same records.
#![cfg(feature = "peers")]

use cellar_bench::peers::ycsb::{self, workload::Op, YcsbRuns};
use cellar_bench::peers::Shape;
use cellar_bench::progress::Silent;

#[test]
fn every_ycsb_workload_runs_and_the_engines_read_the_same_records() -> Result<(), Box<dyn std::error::Error>> {
    let (records, operations) = (1000, 400);
    let mut runs = YcsbRuns::new();
    for engine in ycsb::ENGINES {
        let dir = tempfile::tempdir()?;
        let run = ycsb::run_engine(
            engine,
            dir.path(),
            records,
            operations,
            11,
            None,
            Shape::default(),
            &Silent,
        )?;
        // What a child prints is what the parent reads.
        assert_eq!(ycsb::parse(&ycsb::format(&run))?, run, "{engine}");
        let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["load", "A", "B", "C", "F", "D", "E"], "{engine}");
        let load = run.phase("load").and_then(|p| p.op(Op::Insert)).ok_or("no load")?;
        assert_eq!(load.count, records, "{engine}");
        // As YCSB counts them, each of F's read-modify-writes is also a read
        // and an update.
        let f = run.phase("F").ok_or("no F")?;
        let (f_reads, f_rmws) = (
            f.op(Op::Read).ok_or("no F reads")?,
            f.op(Op::ReadModifyWrite).ok_or("no RMWs")?,
        );
        assert_eq!((f_reads.count, f_reads.found), (operations, operations), "{engine}");
        assert_eq!(f.op(Op::Update).map(|u| u.count), Some(f_rmws.count), "{engine}");
        let e = run.phase("E").ok_or("no E")?;
        let scans = e.op(Op::Scan).ok_or("no scans")?;
        assert!(scans.count > 300 && scans.found > scans.count, "{engine} {scans:?}");
        runs.insert(engine.to_string(), vec![run]);
    }
    let hits = ycsb::check_hits(&runs, 10)?;
    assert!(
        hits.starts_with("hits checked: cellar, fjall-field, fjall-record"),
        "{hits}"
    );
    Ok(())
}
