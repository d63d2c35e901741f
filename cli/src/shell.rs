//! `cellar shell`: an interactive prompt over one open store, like the HBase
//! shell or `cqlsh`.
//!
//! The store is opened once, so writes stay in the memtable until `flush` and
//! a learner can watch a memtable fill, flush and compact. Each line is parsed
//! by the same clap definitions as the command line (`put books b1 title Dune`,
//! `explain slice books b1 --from a --to m`); `help`, `exit` and `quit` are the
//! shell's own. On a terminal the prompt has history (kept in
//! `~/.cellar_history`) and tab completion of command and family names; when
//! stdin is not a terminal, the shell reads commands line by line without a
//! prompt, so a script can be piped in. An error prints one line and the shell
//! goes on; the exit status says whether any command failed.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::{CommandFactory, Parser};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Editor, Helper};

use crate::store_cmds::{self, Context, StoreCommand};
use crate::Error;

/// One line of the shell: a store command and the printing switches.
#[derive(Debug, Parser)]
#[command(name = "", no_binary_name = true, disable_version_flag = true)]
struct Line {
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Print timestamps as dates.
    #[arg(long, global = true)]
    human: bool,
    #[command(subcommand)]
    command: StoreCommand,
}

/// Runs the shell until end of input, `exit` or `quit`.
pub fn run(ctx: &Context) -> Result<(), Error> {
    let store = store_cmds::open(ctx)?;
    let mut session = Session {
        ctx: ctx.clone(),
        store,
        failures: 0,
    };
    if std::io::stdin().is_terminal() {
        session.interactive()?;
    } else {
        for line in std::io::stdin().lock().lines() {
            if !session.execute(&line?) {
                break;
            }
        }
    }
    match session.failures {
        0 => Ok(()),
        n => Err(format!("{n} command(s) failed").into()),
    }
}

struct Session {
    ctx: Context,
    store: cellar::Store,
    failures: usize,
}

impl Session {
    fn interactive(&mut self) -> Result<(), Error> {
        let mut editor: Editor<Completion, DefaultHistory> = Editor::new()?;
        editor.set_helper(Some(Completion {
            families: self.store.families(),
        }));
        let history = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cellar_history"));
        if let Some(path) = &history {
            // No history yet is not an error.
            let _ = editor.load_history(path);
        }
        println!(
            "cellar shell on {}: type `help`, `exit` to leave",
            self.ctx.dir.display()
        );
        loop {
            match editor.readline("cellar> ") {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    if !self.execute(&line) {
                        break;
                    }
                    // A `create` may have added families: complete them too.
                    editor.set_helper(Some(Completion {
                        families: self.store.families(),
                    }));
                }
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(path) = &history {
            let _ = editor.save_history(path);
        }
        Ok(())
    }

    /// Runs one line; false when the shell should stop.
    fn execute(&mut self, line: &str) -> bool {
        let words = match split_words(line) {
            Ok(words) => words,
            Err(e) => {
                self.fail(&e);
                return true;
            }
        };
        match words.first().map(String::as_str) {
            None => return true,
            Some(w) if w.starts_with('#') => return true,
            Some("exit" | "quit") => return false,
            Some("help") => {
                let mut help = Line::command().help_template("{subcommands}");
                println!("{}", help.render_help());
                return true;
            }
            Some(_) => {}
        }
        let parsed = match Line::try_parse_from(&words) {
            Ok(parsed) => parsed,
            Err(e) => {
                // clap's message spans lines; the first says what was wrong.
                let text = e.to_string();
                let first = text
                    .lines()
                    .next()
                    .unwrap_or("bad command")
                    .trim_start_matches("error: ");
                self.fail(&first.to_string().into());
                return true;
            }
        };
        let ctx = Context {
            json: self.ctx.json || parsed.json,
            human: self.ctx.human || parsed.human,
            ..self.ctx.clone()
        };
        if let StoreCommand::Create = parsed.command {
            for family in &ctx.families {
                if !self.store.families().contains(family) {
                    if let Err(e) = self.store.create_family(family, cellar::FamilyOptions::default()) {
                        self.fail(&e.into());
                        return true;
                    }
                }
            }
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        if let Err(e) = store_cmds::run(&ctx, Some(&self.store), &parsed.command, &mut out) {
            self.fail(&e);
        }
        let _ = out.flush();
        true
    }

    fn fail(&mut self, e: &Error) {
        self.failures += 1;
        eprintln!("cellar: {e}");
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

/// Tab completion: the first word from the command names, the second (for
/// commands that take a family first) from the store's families.
struct Completion {
    families: Vec<String>,
}

impl Completion {
    fn commands() -> Vec<String> {
        let mut names: Vec<String> = Line::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        names.extend(["help", "exit", "quit"].map(String::from));
        names
    }
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &rustyline::Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = line.get(..pos).unwrap_or(line);
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        let partial = before.get(start..).unwrap_or("");
        let previous: Vec<&str> = before.get(..start).unwrap_or("").split_whitespace().collect();
        let options = match previous.as_slice() {
            [] => Completion::commands(),
            ["compact" | "put" | "get" | "slice" | "scan" | "delete" | "delete-row" | "load"]
            | ["explain", "get" | "slice" | "scan"] => self.families.clone(),
            ["explain"] => ["get", "slice", "scan"].map(String::from).to_vec(),
            _ => Vec::new(),
        };
        let pairs = options
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
}
