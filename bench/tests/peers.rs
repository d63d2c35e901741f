//! A smoke test of the `peers` harness: a tiny run of each in-process engine.
#![cfg(feature = "peers")]

use cellar_bench::peers::{self, workloads};
use cellar_bench::progress::Silent;

#[test]
fn every_workload_runs_on_every_in_process_engine_and_reports_round_trip() -> Result<(), Box<dyn std::error::Error>> {
    for engine in peers::IN_PROCESS {
        let dir = tempfile::tempdir()?;
        let text = peers::child_main(engine, dir.path(), 2000, 7, &Silent)?;
        let report = peers::parse_report(&text)?;
        assert_eq!(report.workloads.len(), workloads::WORKLOADS.len(), "{engine}");
        for m in &report.workloads {
            assert!(m.ops > 0 && m.seconds > 0.0, "{engine} {m:?}");
        }
        // fillseq leaves every key; readseq after fillrandom + overwrite finds the distinct ones.
        assert_eq!(report.live_entries.0, 2000, "{engine}");
        let readseq = report
            .workloads
            .iter()
            .find(|m| m.workload == "readseq")
            .ok_or("no readseq")?;
        assert!(readseq.ops >= report.live_entries.1, "{engine}");
        assert!(report.fillrandom_disk.1 > 0, "{engine}");
    }
    Ok(())
}
