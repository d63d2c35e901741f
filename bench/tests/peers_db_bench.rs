//! The db_bench adapter for real, at a tiny `--num`, when db_bench is installed
//! (`$DB_BENCH` or `/usr/bin/db_bench`; Debian's `rocksdb-tools`). Without it
//! the test says so and passes: CI machines do not have db_bench.
#![cfg(feature = "peers")]

use cellar_bench::peers::{self, db_bench, workloads};

#[test]
fn db_bench_runs_every_workload_when_installed() -> Result<(), Box<dyn std::error::Error>> {
    let Some(bin) = db_bench::find() else {
        eprintln!("skipped: no db_bench ($DB_BENCH or /usr/bin/db_bench); `apt-get install rocksdb-tools` to run it");
        return Ok(());
    };
    let num = 3000;
    let dir = tempfile::tempdir()?;
    let report = db_bench::run_all(&bin, dir.path(), num, 1, None, cellar_engine::Compression::None, 100)?;
    let names: Vec<&str> = report.workloads.iter().map(|m| m.workload.as_str()).collect();
    assert_eq!(names, workloads::WORKLOADS);
    for m in &report.workloads {
        assert!(m.ops > 0 && m.seconds > 0.0 && m.ops_per_sec() > 0.0, "{m:?}");
    }
    let ops = |w: &str| report.workload(w).map_or(0, |m| m.ops);
    assert_eq!(ops("fillseq"), num);
    assert_eq!(ops("readrandom"), num / 5);
    assert_eq!(ops("seekrandom"), num / 10);
    assert_eq!(ops("readwhilewriting"), num / 5);
    // rand() % N leaves about 63% of the keys after fillrandom, more after overwrite.
    let distinct = report.live_entries.1;
    assert!(
        distinct > num / 2 && distinct < num * 3 / 4,
        "{distinct} distinct of {num}"
    );
    assert!(ops("readseq") >= distinct && ops("readseq") <= num, "{report:?}");
    let entry = peers::ENTRY_BYTES;
    for (what, (fill, compacted), live) in [
        ("fillseq", report.fillseq_disk, num),
        ("fillrandom", report.fillrandom_disk, distinct),
    ] {
        assert!(
            fill >= live * entry && compacted >= live * entry,
            "{what}: {fill} {compacted}"
        );
        assert!(
            compacted < live * entry * 2,
            "{what}: {compacted} bytes for {live} entries"
        );
    }
    let fill = report.fillrandom_memory.ok_or("no fillrandom memory")?;
    let run = report.memory.ok_or("no run memory")?;
    assert!(fill.hwm_kib > 0 && fill.anon_kib > 0, "{report:?}");
    assert!(run.hwm_kib >= fill.hwm_kib, "{report:?}");
    assert!(peers::db_bench::label(&bin).starts_with("db_bench"));
    Ok(())
}
