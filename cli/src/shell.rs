//! `cellar shell`: an interactive prompt over one open store, like the HBase
//! shell or `cqlsh`.
//!
//! The store is opened once, so writes stay in the memtable until `flush` and
//! a learner can watch a memtable fill, flush and compact. Each line is parsed
//! by the same clap definitions as the command line (`put books b1 title Dune`,
//! `explain slice books b1 --from a --to m`), with the same switches
//! (`--json`, `--human`, `--family`, `--time`); `help`, `help COMMAND`,
//! `exit` and `quit` are the shell's own, and `COMMAND --help` works too. On a
//! terminal the prompt has history (kept in `~/.cellar_history`) and tab
//! completion of commands, options and family names; when several choices
//! remain, a second Tab lists them, as bash does. When stdin is not a
//! terminal, the shell reads commands line by line without a prompt, so a
//! script can be piped in. An error prints clap's whole message (what was
//! wrong, the usage) and the shell goes on; the exit status says whether any
//! command failed.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Editor, Helper};

use crate::format::NOT_UTF8;
use crate::opened::Opened;
use crate::store_cmds::{self, Context, StoreCommand, Switch};
use crate::{families, is_broken_pipe, took, Error};

/// One line of the shell: a store command and the switches.
#[derive(Debug, Parser)]
#[command(name = "", no_binary_name = true, disable_version_flag = true)]
struct Line {
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Print timestamps as dates.
    #[arg(long, global = true)]
    human: bool,
    /// A column family to create if the store lacks it (repeatable).
    #[arg(long = "family", value_name = "NAME", global = true)]
    families: Vec<String>,
    /// Print how long the command took.
    #[arg(long, global = true)]
    time: bool,
    #[command(subcommand)]
    command: StoreCommand,
}

/// The definition of a line, each switch listed only by the commands that
/// accept it ([`crate::switches`]).
fn line_command() -> clap::Command {
    let command = crate::switches::negative_numbers_as_values(Line::command());
    crate::switches::hide_unaccepted(command, store_cmds::accepts)
}

/// Runs the shell until end of input, `exit` or `quit`.
pub fn run(ctx: &Context, time: bool) -> Result<(), Error> {
    let store = store_cmds::open(ctx, &cellar::FamilyOptions::default())?;
    let mut session = Session {
        ctx: ctx.clone(),
        time,
        store,
        failures: 0,
    };
    if std::io::stdin().is_terminal() {
        session.interactive()?;
    } else {
        session.script(&mut std::io::stdin().lock())?;
    }
    match session.failures {
        0 => Ok(()),
        n => Err(format!("{n} command(s) failed").into()),
    }
}

struct Session {
    ctx: Context,
    time: bool,
    store: Opened,
    failures: usize,
}

/// Whether the shell reads another line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Go,
    Stop,
}

impl Session {
    fn interactive(&mut self) -> Result<(), Error> {
        // List the choices on a second Tab (bash's way) rather than cycling
        // through them one Tab at a time.
        let config = Config::builder().completion_type(CompletionType::List).build();
        let mut editor: Editor<Completion, DefaultHistory> = Editor::with_config(config)?;
        editor.set_helper(Some(Completion {
            families: self.store.families(),
        }));
        let history = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cellar_history"));
        if let Some(path) = &history {
            // No history yet is not an error.
            let _ = editor.load_history(path);
        }
        writeln!(
            std::io::stdout(),
            "cellar shell on {}: type `help`, `exit` to leave",
            self.ctx.dir.display()
        )?;
        loop {
            match editor.readline("cellar> ") {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    if self.execute(&line)? == Next::Stop {
                        break;
                    }
                    // A `create` may have added families: complete them too.
                    editor.set_helper(Some(Completion {
                        families: self.store.families(),
                    }));
                }
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                // A byte that is not UTF-8 (a Latin-1 character pasted in):
                // the editor drops the line typed so far, and the shell
                // goes on, as it does after any failing command. Each such
                // error consumes the bad byte, so this cannot spin.
                Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                    self.fail(&format!("the line {NOT_UTF8}"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(path) = &history {
            let _ = editor.save_history(path);
        }
        Ok(())
    }

    /// Runs the lines of a script (stdin that is not a terminal) until its
    /// end, `exit` or `quit`. A line that is not UTF-8 is reported and
    /// counted like any failing command, and the script goes on: a bad byte
    /// is a mistake in that line (write it `\xNN`), not the end of the input.
    fn script(&mut self, input: &mut dyn BufRead) -> Result<(), Error> {
        let mut bytes = Vec::new();
        for number in 1.. {
            bytes.clear();
            if input.read_until(b'\n', &mut bytes)? == 0 {
                break;
            }
            let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let next = match std::str::from_utf8(line) {
                Ok(line) => self.execute(line)?,
                Err(_) => {
                    self.fail(&format!("line {number} {NOT_UTF8}"));
                    Next::Go
                }
            };
            if next == Next::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Runs one line. An error of the command is reported and counted; an
    /// error returned stops the shell (stdout is gone).
    fn execute(&mut self, line: &str) -> Result<Next, Error> {
        let started = Instant::now();
        let result = self.execute_line(line);
        match result {
            Ok(next) => {
                if self.time && next == Next::Go && !line.trim().is_empty() {
                    let _ = writeln!(std::io::stderr(), "took {}", took(started.elapsed()));
                }
                Ok(next)
            }
            Err(e) if is_broken_pipe(e.as_ref()) => Ok(Next::Stop),
            Err(e) => {
                self.fail(&e.to_string());
                Ok(Next::Go)
            }
        }
    }

    fn execute_line(&mut self, line: &str) -> Result<Next, Error> {
        let words = split_words(line)?;
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        match words.first().map(String::as_str) {
            None => return Ok(Next::Go),
            Some(w) if w.starts_with('#') => return Ok(Next::Go),
            Some("exit" | "quit") => return Ok(Next::Stop),
            Some(name @ ("repair" | "lesson" | "keys" | "shell")) => {
                return Err(not_in_the_shell(name, &self.ctx.dir).into());
            }
            Some("help") if words.len() == 1 => {
                let mut help = Line::command().help_template("{subcommands}");
                writeln!(out, "{}", help.render_help())?;
                writeln!(out, "  help COMMAND   what COMMAND takes (also COMMAND --help)")?;
                writeln!(out, "  exit, quit     leave the shell")?;
                return Ok(Next::Go);
            }
            Some(_) => {}
        }
        // `help put` is `put --help`.
        let words = match words.split_first() {
            Some((first, rest)) if first == "help" => {
                let mut w = rest.to_vec();
                w.push("--help".into());
                w
            }
            _ => words,
        };
        let parsed = match line_command()
            .try_get_matches_from(&words)
            .and_then(|matches| Line::from_arg_matches(&matches))
        {
            Ok(parsed) => parsed,
            Err(e) if e.kind() == ErrorKind::DisplayHelp => {
                write!(out, "{e}")?;
                return Ok(Next::Go);
            }
            Err(e) => {
                // clap's whole message: what was wrong, the usage, and how to get help.
                drop(out);
                self.fail(e.to_string().trim_end().trim_start_matches("error: "));
                return Ok(Next::Go);
            }
        };
        let name = parsed.command.name();
        for (on, switch, flag) in [
            (parsed.json, Switch::Json, "--json"),
            (parsed.human, Switch::Human, "--human"),
            (!parsed.families.is_empty(), Switch::Family, "--family"),
        ] {
            if on && !parsed.command.uses(switch) {
                return Err(format!("{flag} does not apply to `{name}`").into());
            }
        }
        // The families the shell was started with exist already; a line's
        // own `--family` names the ones this command is about.
        let families = if parsed.families.is_empty() {
            self.ctx.families.clone()
        } else {
            parsed.families.clone()
        };
        let ctx = Context {
            json: self.ctx.json || parsed.json,
            human: self.ctx.human || parsed.human,
            families,
            ..self.ctx.clone()
        };
        store_cmds::check_json_human(ctx.json, ctx.human)?;
        let started = Instant::now();
        if !parsed.families.is_empty() {
            let what = if parsed.command.writes() {
                parsed.command.name()
            } else {
                "--family"
            };
            let store = self.store.writable(what)?;
            families::ensure(store, &ctx.families, &store_cmds::new_family_options(&parsed.command))?;
        }
        store_cmds::run(&ctx, Some(&self.store), &parsed.command, &mut out)?;
        out.flush()?;
        if parsed.time && !self.time {
            let _ = writeln!(std::io::stderr(), "took {}", took(started.elapsed()));
        }
        Ok(Next::Go)
    }

    fn fail(&mut self, message: &str) {
        self.failures += 1;
        let _ = writeln!(std::io::stderr(), "cellar: {message}");
    }
}

/// Why a command of `cellar` that is no store command is not one of its
/// shell, and where to run it (clap would only call it unrecognized, with a
/// tip naming a store command that happens to look like it).
fn not_in_the_shell(name: &str, dir: &std::path::Path) -> String {
    match name {
        // It needs the store's lock, which this shell holds.
        "repair" => format!(
            "`repair` is not a shell command: it rebuilds a store that does not open; run \
             `cellar --dir {} repair` with this shell closed",
            dir.display()
        ),
        "shell" => "`shell` is not a shell command: this is the shell".to_string(),
        _ => format!("`{name}` is not a shell command: run `cellar {name}` outside the shell"),
    }
}

/// Splits a line into words: spaces separate, single or double quotes group
/// (`put t r c 'two words'`). Backslashes are left alone for `\xNN` escapes.
fn split_words(line: &str) -> Result<Vec<String>, Error> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".into());
    }
    words.extend(word);
    Ok(words)
}

/// Tab completion, read from the clap definitions so it never lags behind
/// them: the first word from the command names, a word starting with `-` from
/// the options of the command being typed, and a family name where the
/// command's first argument is a family or after `--family`.
struct Completion {
    families: Vec<String>,
}

impl Completion {
    /// The choices for the word after `previous` (the words typed before it).
    fn choices(&self, previous: &[&str], partial: &str) -> Vec<String> {
        let root = line_command();
        // Walk down the subcommands named so far (`explain slice ...`).
        let mut command = &root;
        let mut positionals = 0;
        for word in previous {
            match command.find_subcommand(word) {
                Some(sub) if positionals == 0 => command = sub,
                _ if word.starts_with('-') => {}
                _ => positionals += 1,
            }
        }
        if previous.last() == Some(&"--family") {
            return self.families.clone();
        }
        if partial.starts_with('-') {
            // The command's own options and the switches it does not hide.
            let own = |id: &clap::Id| command.get_arguments().any(|a| a.get_id() == id);
            let mut options: Vec<String> = command
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .chain(root.get_arguments().filter(|a| !own(a.get_id())))
                .filter_map(|a| a.get_long())
                .map(|l| format!("--{l}"))
                .collect();
            options.push("--help".into());
            options.sort();
            options.dedup();
            return options;
        }
        if previous.is_empty() {
            let mut names: Vec<String> = root.get_subcommands().map(|c| c.get_name().to_string()).collect();
            names.extend(["help", "exit", "quit"].map(String::from));
            return names;
        }
        if previous == ["help"] {
            return root.get_subcommands().map(|c| c.get_name().to_string()).collect();
        }
        let subcommands: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_string()).collect();
        if positionals == 0 && !subcommands.is_empty() {
            return subcommands;
        }
        let first_is_family = command.get_positionals().next().is_some_and(|a| a.get_id() == "family");
        if positionals == 0 && first_is_family {
            return self.families.clone();
        }
        Vec::new()
    }
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &rustyline::Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = line.get(..pos).unwrap_or(line);
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        let partial = before.get(start..).unwrap_or("");
        let previous: Vec<&str> = before.get(..start).unwrap_or("").split_whitespace().collect();
        let pairs = self
            .choices(&previous, partial)
            .into_iter()
            .filter(|o| o.starts_with(partial))
            .map(|o| Pair {
                display: o.clone(),
                replacement: o,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for Completion {
    type Hint = String;
}

impl Highlighter for Completion {}

impl Validator for Completion {}

impl Helper for Completion {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_group_words_and_backslashes_stay() -> Result<(), Error> {
        assert_eq!(
            split_words(r#"put t 'a b' c\x00 "" "#)?,
            ["put", "t", "a b", r"c\x00", ""]
        );
        Ok(())
    }

    fn completion() -> Completion {
        Completion {
            families: vec!["books".into(), "loans".into()],
        }
    }

    #[test]
    fn completion_offers_commands_then_families_then_nothing() {
        let c = completion();
        let commands = c.choices(&[], "");
        assert!(commands.iter().any(|x| x == "scan") && commands.iter().any(|x| x == "exit"));
        assert_eq!(c.choices(&["get"], ""), ["books", "loans"]);
        assert_eq!(c.choices(&["explain"], ""), ["get", "slice", "scan"]);
        assert_eq!(c.choices(&["explain", "slice"], ""), ["books", "loans"]);
        assert_eq!(c.choices(&["create", "--family"], ""), ["books", "loans"]);
        assert!(c.choices(&["get", "books"], "").is_empty());
        assert!(c.choices(&["flush"], "").is_empty());
    }

    #[test]
    fn completion_offers_the_options_of_the_command_being_typed() {
        let c = completion();
        let options = c.choices(&["scan", "books"], "--");
        for o in [
            "--columns",
            "--reverse",
            "--versions",
            "--time-range",
            "--json",
            "--help",
        ] {
            assert!(options.iter().any(|x| x == o), "{o} in {options:?}");
        }
        assert!(!options.iter().any(|x| x == "--ts"), "{options:?}");
        // put refuses --json and --human: not offered.
        let options = c.choices(&["put", "books"], "--");
        assert_eq!(options, ["--family", "--help", "--time", "--ts"]);
    }
}
