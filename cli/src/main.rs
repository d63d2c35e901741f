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

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod dump;
mod format;
mod keys;
mod lesson;
mod load;
mod repair;
mod shell;
mod store_cmds;

/// A miniature LSM wide-column storage engine that counts what every read costs.
#[derive(Debug, Parser)]
#[command(name = "cellar", version, about, propagate_version = true)]
struct Cli {
    /// The store folder [default: ./cellar-data]. For `lesson`: keep the
    /// lesson stores here instead of in a temporary folder.
    #[arg(long, value_name = "PATH", global = true)]
    dir: Option<std::path::PathBuf>,
    /// A column family to create if the store lacks it (repeatable); the store
    /// itself is created when a family is named.
    #[arg(long = "family", value_name = "NAME", global = true)]
    families: Vec<String>,
    /// Print JSON (get, slice, scan, stats, files, explain).
    #[arg(long, global = true)]
    json: bool,
    /// Print timestamps as UTC dates instead of milliseconds.
    #[arg(long, global = true)]
    human: bool,
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
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cellar: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    let ctx = store_cmds::Context {
        dir: cli.dir.clone().unwrap_or_else(|| "cellar-data".into()),
        families: cli.families,
        json: cli.json,
        human: cli.human,
    };
    match cli.command {
        Command::Lesson(mut args) => {
            args.dir = cli.dir;
            lesson::run(&args)
        }
        Command::Shell => shell::run(&ctx),
        Command::Keys(args) => keys::run(&args, &mut std::io::stdout().lock()),
        Command::Repair => repair::run(&ctx.dir, &mut std::io::stdout().lock()),
        Command::Store(command) => {
            let store = if command.needs_store() {
                Some(store_cmds::open(&ctx)?)
            } else {
                None
            };
            let stdout = std::io::stdout();
            store_cmds::run(&ctx, store.as_ref(), &command, &mut stdout.lock())
        }
    }
}
