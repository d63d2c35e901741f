//! `cellar`: the command line of the cellar store.
//!
//! This package (`cli/`) is the `cellar` binary only; the library a program
//! embeds is the `cellar` package at the repository root, which this one
//! depends on like any other user.
//!
//! One variant of [`Command`] per subcommand, each implemented in a module of
//! its own with its clap arguments and a `run` function. To add a subcommand:
//! write `cli/src/<name>.rs` with an `Args` struct and `run`, add a variant
//! here and a line to [`run`].

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod clock;
mod dump;
mod dump_log;
mod dump_manifest;
mod exchange;
mod export;
mod families;
mod format;
mod keys;
mod lesson;
mod load;
mod opened;
mod picture;
mod reads;
mod repair;
mod shell;
mod stats;
mod store_cmds;
mod switches;

use store_cmds::Switch;

/// A miniature LSM wide-column storage engine that counts what every read costs.
#[derive(Debug, Parser)]
#[command(name = "cellar", version, about, propagate_version = true)]
struct Cli {
    /// The store folder [default: ./cellar-data]. For `lesson`: keep the
    /// lesson stores here instead of in a temporary folder.
    #[arg(long, value_name = "PATH", global = true)]
    dir: Option<std::path::PathBuf>,
    /// A column family to create if the store lacks it (repeatable); the store
    /// itself is created when a family is named, in a new or empty folder.
    #[arg(long = "family", value_name = "NAME", global = true)]
    families: Vec<String>,
    /// Print JSON (families, get, slice, scan, count, stats, files, explain, lesson query-first).
    #[arg(long, global = true)]
    json: bool,
    /// Print timestamps as UTC dates instead of milliseconds.
    #[arg(long, global = true)]
    human: bool,
    /// Print on stderr how long the command took (in the shell, after each line).
    #[arg(long, global = true)]
    time: bool,
    /// Open the store to read only: no lock taken, nothing written, so it
    /// works beside a running shell or on a copy that cannot be written.
    #[arg(long, global = true)]
    read_only: bool,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Reproduce the wide-column lesson on a real store and print its tables,
    /// the lesson's figures beside cellar's measured ones.
    Lesson(lesson::Args),
    /// An interactive prompt with the store commands, history and completion
    /// (reads commands from stdin when it is not a terminal).
    Shell,
    /// Try a row key on a workload: where the writes land (verdict, picture),
    /// what the typical reads cost (run on a real store), and the design as
    /// Cassandra or HBase statements.
    Keys(keys::Args),
    /// Rebuild a store that does not open (damaged manifest or log) from its
    /// table files and log; what cannot be read is kept in its lost/ folder.
    Repair,
    #[command(flatten)]
    Store(store_cmds::StoreCommand),
}

/// Any error a subcommand reports; printed as one line.
type Error = Box<dyn std::error::Error>;

/// Parses the command line, runs the subcommand, turns an error into a
/// message on stderr and a failing exit status.
fn main() -> ExitCode {
    let command = switches::negative_numbers_as_values(Cli::command());
    let parsed = switches::hide_unaccepted(command, accepts)
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidUtf8 => return not_utf8_exit(),
        Err(e) => return usage_exit(&e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`cellar scan | head`): it has
        // what it wanted, so stop quietly, as `cat` does when SIGPIPE ends it.
        Err(e) if is_broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            // Not eprintln!, which panics when stderr is a closed pipe too.
            let _ = writeln!(std::io::stderr(), "cellar: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints clap's help, version or usage error and says how to exit: clap's
/// code (0 for help and version, 2 for a usage error), unless the text could
/// not be written (`cellar --help > /dev/full`), which `Error::exit` would
/// hide behind a success.
fn usage_exit(e: &clap::Error) -> ExitCode {
    match e.print() {
        Err(io) if io.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "cellar: {io}");
            ExitCode::FAILURE
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
    }
}

/// Says which argument is not UTF-8 and how to write its bytes (clap says
/// only that one is), with clap's exit status for a usage error. Rows,
/// columns and values are text with `\xNN` escapes, as in the shell.
fn not_utf8_exit() -> ExitCode {
    let shown = std::env::args_os()
        .skip(1)
        .find(|a| a.to_str().is_none())
        .map(|a| format!(" ({})", format::escape(a.as_encoded_bytes())))
        .unwrap_or_default();
    let _ = writeln!(std::io::stderr(), "cellar: an argument {}{shown}", format::NOT_UTF8);
    ExitCode::from(2)
}

/// Whether an error is, or was caused by, writing to a pipe whose reader is gone.
pub fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Whether the subcommand `name` does something with a switch, with some
/// arguments (its help lists only these).
fn accepts(name: &str, switch: Switch) -> bool {
    match name {
        "lesson" => matches!(switch, Switch::Dir | Switch::Json),
        // The shell passes every switch on to its commands.
        "shell" => true,
        "keys" => false,
        "repair" => switch == Switch::Dir,
        _ => store_cmds::accepts(name, switch),
    }
}

/// Refuses a switch the command would ignore.
fn check_switches(cli: &Cli, name: &str, uses: impl Fn(Switch) -> bool) -> Result<(), Error> {
    let given = [
        (Switch::Json, cli.json, "--json"),
        (Switch::Human, cli.human, "--human"),
        (Switch::Dir, cli.dir.is_some(), "--dir"),
        (Switch::Family, !cli.families.is_empty(), "--family"),
        (Switch::ReadOnly, cli.read_only, "--read-only"),
    ];
    for (switch, on, flag) in given {
        if on && !uses(switch) {
            return Err(format!("{flag} does not apply to `{name}`").into());
        }
    }
    store_cmds::check_json_human(cli.json, cli.human)
}

/// How long something took, in the unit that reads best.
pub fn took(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    let ctx = store_cmds::Context {
        dir: cli.dir.clone().unwrap_or_else(|| "cellar-data".into()),
        families: cli.families.clone(),
        json: cli.json,
        human: cli.human,
        read_only: cli.read_only,
    };
    let started = Instant::now();
    let mut opening = None;
    match &cli.command {
        Command::Lesson(args) => {
            check_switches(&cli, "lesson", |s| accepts("lesson", s))?;
            lesson::run(args, cli.dir.as_deref(), cli.json)?;
        }
        Command::Shell => {
            check_switches(&cli, "shell", |s| accepts("shell", s))?;
            return shell::run(&ctx, cli.time);
        }
        Command::Keys(args) => {
            check_switches(&cli, "keys", |s| accepts("keys", s))?;
            keys::run(args, &mut std::io::stdout().lock())?;
        }
        Command::Repair => {
            check_switches(&cli, "repair", |s| accepts("repair", s))?;
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            repair::run(&ctx.dir, &mut out)?;
            out.flush()?;
        }
        Command::Store(command) => {
            check_switches(&cli, command.name(), |s| command.uses(s))?;
            let store = if command.needs_store() {
                let store = store_cmds::open(&ctx, &store_cmds::new_family_options(command))?;
                opening = Some(started.elapsed());
                Some(store)
            } else {
                None
            };
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            store_cmds::run(&ctx, store.as_ref(), command, &mut out)?;
            out.flush()?;
        }
    }
    if cli.time {
        let total = started.elapsed();
        let line = match opening {
            Some(open) => format!("took {}, plus {} to open the store", took(total - open), took(open)),
            None => format!("took {}", took(total)),
        };
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    Ok(())
}
