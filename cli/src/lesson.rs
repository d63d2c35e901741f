//! `cellar lesson [append-only|wide-row|layout|all] [--dir PATH] [--report FILE]`: the
//! wide-column lesson, reproduced on a real store (see `cellar_bench::lesson`).
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
    /// All three, in the lesson's order.
    All,
}

impl Which {
    const EACH: [Which; 3] = [Which::Layout, Which::WideRow, Which::AppendOnly];

    fn name(self) -> &'static str {
        match self {
            Which::AppendOnly => "append-only",
            Which::WideRow => "wide-row",
            Which::Layout => "layout",
            Which::All => "all",
        }
    }

    fn selected(self) -> Vec<Which> {
        match self {
            Which::All => Which::EACH.to_vec(),
            one => vec![one],
        }
    }
}

/// Runs the chosen lessons and prints their tables on stdout. With `dir` (the
/// global `--dir`, which the store commands share) the stores are kept there,
/// one subfolder per lesson, which must be empty or absent.
pub fn run(args: &Args, dir: Option<&Path>) -> Result<(), Error> {
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
        writeln!(stdout, "\nreport written to {}", path.display())?;
    }
    match temporary {
        Some(t) => t.close()?,
        None => writeln!(stdout, "\nthe stores are kept in {}", root.display())?,
    }
    Ok(())
}
