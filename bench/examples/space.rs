//! Where the scale run's bytes go: builds `cellar`'s store of the
//! scale run (db_bench's 16-byte keys and 100-byte values, fillrandom then
//! overwrite, each settled, no manual compaction) and prints, after each
//! phase, its bytes on disk taken apart (`cellar_bench::peers::space`).
//!
//! `cargo run --release -p cellar-bench --example space -- --num 10000000 --dir /tmp/space`
//! (an empty or absent folder, else it refuses; the store is kept there for `cellar` to inspect).
//! `--every N` also settles after every N writes and prints the figure there
//! (each such wait settles the family at rest too, once it passes 256 MiB:
//! `--settle false` shows what leveled compaction alone leaves);
//! `--trigger`, `--memtable-bytes`, `--tail-copies`, `--settle` and
//! `--compaction` change the family's options from `cellar`'s (the
//! defaults, leveled, settled at rest; `--settle false` leaves the settle
//! out; `--compaction tiered` is the scale run's `cellar-tiered`, whose
//! runs all sit at level 0, so its breakdown shows them all there).

use std::path::PathBuf;

use cellar_bench::peers::space;

const USAGE: &str = "--num N --seed S --every N --dir PATH, and to try other family options: \
                     --trigger RUNS --memtable-bytes BYTES --tail-copies true|false --settle true|false \
                     --compaction leveled|tiered";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut num, mut seed, mut every, mut dir) = (2_000_000u64, 1u64, 0u64, None);
    let mut family = space::scale_family();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--num" => num = value.parse()?,
            "--seed" => seed = value.parse()?,
            "--every" => every = value.parse()?,
            "--dir" => dir = Some(PathBuf::from(value)),
            "--trigger" => family = family.compaction_trigger(value.parse()?),
            "--memtable-bytes" => family = family.memtable_max_bytes(value.parse()?),
            "--tail-copies" => family = family.tail_copies(value.parse()?),
            "--settle" => {
                let on: bool = value.parse()?;
                family = family.settle_when_idle(on.then(cellar_engine::Settle::default));
            }
            "--compaction" => {
                family = family.compaction(match value.as_str() {
                    "leveled" => cellar_engine::Compaction::LEVELED,
                    "tiered" => cellar_engine::Compaction::SizeTiered,
                    _ => return Err(format!("--compaction takes leveled or tiered: {USAGE}").into()),
                });
            }
            _ => return Err(format!("unknown argument {arg}: {USAGE}").into()),
        }
    }
    let dir = dir.ok_or("--dir PATH is needed (the store is kept there)")?;
    print!("{}", space::fill_and_measure(&dir, family, num, seed, every)?);
    Ok(())
}
