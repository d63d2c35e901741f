//! `cellar lesson [append-only|wide-row|layout|all|query-first] [--dir PATH] [--report FILE]`:
//! the wide-column lesson, reproduced on a real store, and the query-first
//! lesson on query-first tables (see `cellar_bench::lesson`). For
//! `query-first`, `--json` prints its figures as one object and `--export
//! cql|hbase` its design as Cassandra or HBase statements.
//!
//! Without `--dir` each lesson builds its store in a temporary folder that is
//! removed afterwards; with `--dir` the stores are kept, one subfolder per
//! lesson, for a learner to open and explore. With `--report` the tables
//! and their pictures are also written to one HTML page.

use std::io::Write;
use std::path::{Path, PathBuf};

use cellar_bench::lesson;
use cellar_bench::progress::TerminalBar;
use clap::ValueEnum;

use crate::Error;

/// Arguments of `cellar lesson`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which lesson to run.
    #[arg(value_enum, default_value_t = Which::All)]
    which: Which,
    /// Also write the tables and their pictures to this file, one
    /// self-contained HTML page (no script, nothing fetched).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// For `query-first`: print the design as Cassandra CQL or HBase shell
    /// statements instead of the tables.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    export: Option<Export>,
}

/// The systems `--export` writes statements for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Export {
    /// `CREATE TABLE` per layout, and the logged batches of a write.
    Cql,
    /// `create` per layout with split points, and the puts of a write.
    Hbase,
}

/// The lessons, by the name the command line knows them by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// Tombstones, sources visited newest to oldest, compaction.
    AppendOnly,
    /// A 4,000-column row sliced by column range; the same question by another partition key.
    WideRow,
    /// Column families against one family holding every field, in pages touched.
    Layout,
    /// The three above, in the lesson's order.
    All,
    /// A layout per read path against a filtering scan: what it saves and
    /// what it costs (seed 001; not part of `all`, which is seed 003's lesson).
    QueryFirst,
}

impl Which {
    const EACH: [Which; 3] = [Which::Layout, Which::WideRow, Which::AppendOnly];

    fn name(self) -> &'static str {
        match self {
            Which::AppendOnly => "append-only",
            Which::WideRow => "wide-row",
            Which::Layout => "layout",
            Which::All => "all",
            Which::QueryFirst => "query-first",
        }
    }

    fn selected(self) -> Vec<Which> {
        match self {
            Which::All => Which::EACH.to_vec(),
            one => vec![one],
        }
    }
}

/// Refuses a `--dir` that is a file, or a folder for one of the lessons to
/// run that is not absent or empty ([`lesson::check_folder`]), before any
/// lesson starts (each lesson checks its own folder too, but only when its
/// turn comes, after the lessons before it have run and kept their stores).
fn check_folders(dir: &Path, lessons: &[Which]) -> Result<(), Error> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "{} is a file, not a folder: --dir names the folder the lesson stores are kept in",
            dir.display()
        )
        .into());
    }
    for which in lessons {
        lesson::check_folder(&dir.join(which.name()))?;
    }
    Ok(())
}

/// Runs the chosen lessons and prints their tables on stdout. With `dir` (the
/// global `--dir`, which the store commands share) the stores are kept there,
/// one subfolder per lesson, which must be empty or absent.
pub fn run(args: &Args, dir: Option<&Path>, json: bool) -> Result<(), Error> {
    for (given, flag) in [(json, "--json"), (args.export.is_some(), "--export")] {
        if given && args.which != Which::QueryFirst {
            return Err(format!("{flag} does not apply to `lesson {}`", args.which.name()).into());
        }
    }
    if let Some(path) = &args.report {
        crate::picture::check_report_path(path)?;
    }
    if let Some(dir) = dir {
        check_folders(dir, &args.which.selected())?;
    }
    let temporary = match dir {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("cellar-lesson-").tempdir()?),
    };
    let root: &Path = match (dir, &temporary) {
        (Some(dir), _) => dir,
        (None, Some(t)) => t.path(),
        (None, None) => return Err("no folder for the lesson's stores".into()),
    };
    let mut stdout = std::io::stdout().lock();
    let mut sections = Vec::new();
    for (n, which) in args.which.selected().into_iter().enumerate() {
        let dir = root.join(which.name());
        let bar = TerminalBar::new();
        let (text, section) = match which {
            Which::AppendOnly => {
                let r = lesson::append_only_with(&dir, &bar)?;
                (r.render(), r.section())
            }
            Which::WideRow => {
                let r = lesson::wide_row_with(&dir, &bar)?;
                (r.render(), r.section())
            }
            Which::Layout => {
                let r = lesson::layout_with(&dir, &bar)?;
                (r.render(), r.section())
            }
            Which::QueryFirst => {
                let r = lesson::query_first_with(&dir, &bar)?;
                let text = match (json, args.export) {
                    (true, _) => format!("{:#}\n", query_first_json(&r)),
                    (false, Some(Export::Cql)) => r.cql.clone(),
                    (false, Some(Export::Hbase)) => r.hbase.clone(),
                    (false, None) => r.render(),
                };
                (text, r.section())
            }
            Which::All => continue,
        };
        sections.push(section);
        if n > 0 {
            writeln!(stdout)?;
        }
        write!(stdout, "{text}")?;
    }
    if let Some(path) = &args.report {
        std::fs::write(path, lesson::page(sections).finish()).map_err(|e| format!("{}: {e}", path.display()))?;
        if json {
            eprintln!("report written to {}", path.display());
        } else {
            writeln!(stdout, "\nreport written to {}", path.display())?;
        }
    }
    match temporary {
        Some(t) => t.close()?,
        // With --json stdout holds one JSON object and nothing else.
        None if json => eprintln!("the stores are kept in {}", root.display()),
        None => writeln!(stdout, "\nthe stores are kept in {}", root.display())?,
    }
    Ok(())
}
/// The query-first lesson as JSON: every path with the entries its layout
/// and a filtering scan examined, and the write amplification (entries
/// written per order insert across the order table's layouts).
fn query_first_json(r: &lesson::QueryFirstReport) -> serde_json::Value {
    let path = |p: &lesson::PathCost| {
        serde_json::json!({
            "path": p.path,
            "asked": p.asked,
            "layout": p.layout,
            "requests": p.requests,
            "layout_entries_examined": p.layout_cost.entries_examined,
            "layout_data_blocks": p.layout_cost.data_blocks,
            "scan_entries_examined": p.scan_cost.entries_examined,
            "scan_data_blocks": p.scan_cost.data_blocks,
            "returned": p.returned,
        })
    };
    let layout_bytes: serde_json::Map<String, serde_json::Value> = r
        .layouts
        .iter()
        .map(|l| (l.layout.clone(), serde_json::json!(l.family.table_bytes)))
        .collect();
    serde_json::json!({
        "paths": r.paths.iter().chain([&r.after_launch]).map(path).collect::<Vec<_>>(),
        "write_amplification": r.write_amplification(),
        "rows_moved_per_reroute": r.reroute_moved as f64 / r.reroutes.max(1) as f64,
        "backfill": {
            "layout": r.backfill.layout,
            "batches": r.backfill.batches,
            "copied": r.backfill.copied,
            "skipped": r.backfill.skipped,
            "entries_written": r.backfill.entries_written,
            "read_entries_examined": r.backfill.read_entries_examined,
        },
        "largest_partition": {
            "without_bucket": r.without_bucket.largest_records,
            "with_bucket": r.with_bucket.largest_records,
        },
        "layout_bytes": layout_bytes,
    })
}
