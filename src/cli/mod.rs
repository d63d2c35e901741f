//! The `cellar` command line (this folder belongs to the `cellar` binary, not
//! to the library).
//!
//! One variant of [`Command`] per subcommand, each implemented in a module of
//! its own with its clap arguments and a `run` function. To add a subcommand:
//! write `src/cli/<name>.rs` with an `Args` struct and `run`, add a variant
//! here and a line to [`run`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod lesson;

/// A miniature LSM wide-column storage engine that counts what every read costs.
#[derive(Debug, Parser)]
#[command(name = "cellar", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Reproduce the wide-column lesson on a real store and print its tables,
    /// the lesson's figures beside cellar's measured ones.
    Lesson(lesson::Args),
}

/// Any error a subcommand reports; printed as one line.
type Error = Box<dyn std::error::Error>;

/// Parses the command line, runs the subcommand, turns an error into a
/// message on stderr and a failing exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cellar: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), Error> {
    match command {
        Command::Lesson(args) => lesson::run(&args),
    }
}
