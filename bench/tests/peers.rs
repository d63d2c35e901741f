//! Smoke tests of the `peers` harness: a tiny run of each in-process engine
//! on db_bench's workloads and on the scale phases, and a check that the
//! engines that run the same keys find the same entries.
#![cfg(feature = "peers")]

use cellar_bench::peers::{self, report, scale, workloads, Runs};
use cellar_bench::progress::Silent;
use cellar_engine::Compression;

#[test]
fn every_workload_runs_on_every_in_process_engine_and_the_engines_agree_on_hits(
) -> Result<(), Box<dyn std::error::Error>> {
    let mut runs = Runs::new();
    for engine in peers::IN_PROCESS {
        let dir = tempfile::tempdir()?;
        let text = report::child_main(engine, dir.path(), 2000, 7, None, Compression::None, 100, &Silent)?;
        let run = report::parse(&text)?;
        assert_eq!(run.workloads.len(), workloads::WORKLOADS.len(), "{engine}");
        for m in &run.workloads {
            assert!(m.ops > 0 && m.seconds > 0.0, "{engine} {m:?}");
        }
        // fillseq leaves every key; readseq after fillrandom + overwrite finds the distinct ones.
        assert_eq!(run.live_entries.0, 2000, "{engine}");
        let readseq = run.workload("readseq").ok_or("no readseq")?;
        assert!(readseq.ops >= run.live_entries.1, "{engine}");
        // Reads of existing keys under a writer thread find every one, and
        // the writer wrote.
        let rww = run.workload("readwhilewriting").ok_or("no readwhilewriting")?;
        assert!(
            rww.ops == 400 && rww.found == rww.ops && rww.writes > 0,
            "{engine} {rww:?}"
        );
        assert!(run.fillrandom_disk.1 > 0, "{engine}");
        let memory = run.memory.ok_or("no memory figures")?;
        assert!(memory.hwm_kib > 0 && memory.anon_kib > 0, "{engine} {memory:?}");
        runs.insert(engine.to_string(), vec![run]);
    }
    let hits = report::check_hits(&runs)?;
    assert!(
        hits.starts_with("hits checked: cellar, cellar-buffered, cellar-tiered, fjall"),
        "{hits}"
    );
    Ok(())
}

#[test]
fn a_value_size_reaches_every_engine_and_every_column_of_a_wide_row() -> Result<(), Box<dyn std::error::Error>> {
    let (num, value_bytes) = (2000u64, 1000usize);
    let mut runs = Runs::new();
    for engine in ["cellar", "cellar-wide", "fjall"] {
        let dir = tempfile::tempdir()?;
        let text = report::child_main(
            engine,
            dir.path(),
            num,
            7,
            None,
            Compression::None,
            value_bytes,
            &Silent,
        )?;
        let run = report::parse(&text)?;
        // Compacted, the sequential fill holds every value: 1000 bytes each
        // (db_bench's 100 would leave a tenth of that; fjall's journal adds
        // megabytes of its own, so there is no upper bound).
        let (values, compacted) = (num * value_bytes as u64, run.fillseq_disk.1);
        assert!(
            compacted >= values,
            "{engine}: {compacted} bytes for {values} of values"
        );
        if engine != "cellar-wide" {
            runs.insert(engine.to_string(), vec![run]);
        }
    }
    let hits = report::check_hits(&runs)?;
    assert!(hits.starts_with("hits checked: cellar, fjall"), "{hits}");
    Ok(())
}

#[test]
fn with_lz4_every_engine_finds_the_same_entries_in_less_space() -> Result<(), Box<dyn std::error::Error>> {
    let mut runs = Runs::new();
    for engine in ["cellar", "fjall"] {
        let mut space = Vec::new();
        for compression in [Compression::None, Compression::Lz4] {
            let dir = tempfile::tempdir()?;
            let text = report::child_main(engine, dir.path(), 20_000, 7, None, compression, 100, &Silent)?;
            let run = report::parse(&text)?;
            space.push(run.fillseq_disk.1);
            if compression == Compression::Lz4 {
                runs.insert(engine.to_string(), vec![run]);
            }
        }
        // Half-compressible values against random ones: LZ4 must save space.
        assert!(space[1] < space[0], "{engine}: {space:?} bytes after compaction");
    }
    let hits = report::check_hits(&runs)?;
    assert!(hits.starts_with("hits checked: cellar, fjall"), "{hits}");
    Ok(())
}

#[test]
fn the_scale_phases_record_the_tree_and_cellar_its_read_amplification() -> Result<(), Box<dyn std::error::Error>> {
    let mut runs = scale::ScaleRuns::new();
    let engines = ["cellar", "cellar-tiered", "fjall", "rocksdb"]
        .into_iter()
        .filter(|e| peers::IN_PROCESS.contains(e));
    for engine in engines {
        let dir = tempfile::tempdir()?;
        let phases = scale::parse(&scale::child_main(engine, dir.path(), 3000, 3, None, &Silent)?)?;
        let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, scale::PHASES, "{engine}");
        for p in &phases {
            assert!(p.ops > 0 && p.live > 0 && p.settled.0 > 0, "{engine} {p:?}");
            assert!(p.peak.hwm_kib > 0, "{engine} {p:?}");
        }
        // Under the writer every read finds its key, the writer wrote, and
        // only overwrote: the distinct keys are those the fills left.
        let [.., seeks, under_writes] = phases.as_slice() else {
            return Err(format!("{engine}: {} phases", phases.len()).into());
        };
        assert_eq!(under_writes.name, "readwhilewriting");
        assert_eq!(under_writes.found, under_writes.ops, "{engine} {under_writes:?}");
        assert!(under_writes.writes > 0, "{engine} {under_writes:?}");
        assert_eq!(under_writes.live, seeks.live, "{engine}");
        assert!(phases
            .iter()
            .filter(|p| p.name != "readwhilewriting")
            .all(|p| p.writes == 0));
        let amp = phases.last().and_then(|p| p.seek_amp);
        if engine == "fjall" {
            assert_eq!(amp, None, "fjall does not count its reads");
        } else {
            // At least the memtable is consulted by every seek.
            assert!(amp.is_some_and(|a| a.sources >= 1.0), "{engine} {amp:?}");
        }
        runs.insert(engine.to_string(), vec![phases]);
    }
    let hits = scale::check_hits(&runs)?;
    assert!(hits.starts_with("hits checked: cellar, cellar-tiered, fjall"), "{hits}");
    Ok(())
}
