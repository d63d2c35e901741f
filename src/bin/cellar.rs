//! `cellar`: the command line of the cellar store.
//!
//! The commands live in `src/cli/`, one module per subcommand; this file only
//! hands over to them.

#[path = "../cli/mod.rs"]
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
