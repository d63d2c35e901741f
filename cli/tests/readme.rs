//! Every `console` block of README.md, run and compared: the README's
//! terminal sessions are tested output, so they cannot drift from what the
//! commands print (what `trycmd` does for Rust CLIs, in a page of code).
//!
//! A block is a terminal session: a line `$ COMMAND` runs COMMAND with bash,
//! lines `> ...` right after it continue it (a here-document, as a terminal
//! shows one), and the lines up to the next `$` are what it must print,
//! stdout and stderr together. Each block runs in a new empty folder, with the
//! `cellar` under test first on the PATH; its commands run in order, so a
//! block can build a store and then look at it. In the expected output, a
//! line `...` stands for any number of lines and `[..]` for any text within a
//! line (for what changes from run to run, such as a time).
//!
//! When the output changes on purpose, `CELLAR_README=overwrite cargo test -p
//! cellar-cli --test readme` writes what the commands print now into
//! README.md; review the diff before committing it.

use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One `$` command of a block, with the line it starts on.
#[derive(Debug)]
struct Step {
    /// 0-based index of the `$` line in the README.
    line: usize,
    command: String,
    expected: Vec<String>,
    /// 0-based index of the first output line, and the count of output lines.
    output_at: usize,
}

/// The `console` blocks: each a list of steps.
fn blocks(readme: &str) -> Vec<Vec<Step>> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines.get(i).is_some_and(|l| l.trim_end() == "```console") {
            let mut steps: Vec<Step> = Vec::new();
            i += 1;
            while let Some(line) = lines.get(i) {
                if line.starts_with("```") {
                    break;
                }
                if let Some(command) = line.strip_prefix("$ ") {
                    let mut command = command.to_string();
                    let start = i;
                    while let Some(more) = lines
                        .get(i + 1)
                        .and_then(|l| l.strip_prefix("> ").or(l.strip_prefix(">").filter(|r| r.is_empty())))
                    {
                        command.push('\n');
                        command.push_str(more);
                        i += 1;
                    }
                    steps.push(Step {
                        line: start,
                        command,
                        expected: Vec::new(),
                        output_at: i + 1,
                    });
                } else if let Some(step) = steps.last_mut() {
                    step.expected.push((*line).to_string());
                }
                i += 1;
            }
            blocks.push(steps);
        }
        i += 1;
    }
    blocks
}

/// Whether `actual` matches `expected`, where a line `...` matches any number
/// of lines and `[..]` any text within a line.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, actual.get(skip..).unwrap_or(&[])))
        }
        Some((e, rest)) => match actual.split_first() {
            Some((a, more)) => line_matches(e, a) && matches(rest, more),
            None => false,
        },
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let mut pieces = expected.split("[..]");
    let Some(first) = pieces.next() else {
        return expected == actual;
    };
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    for (n, piece) in pieces.iter().enumerate() {
        if n + 1 == pieces.len() {
            return rest.ends_with(piece);
        }
        match rest.find(piece) {
            Some(at) => rest = rest.get(at + piece.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.is_empty()
}

/// Runs a command with bash in `dir`, stdout and stderr in one stream.
fn run(dir: &Path, command: &str, path: &str) -> Result<String> {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env_remove("CELLAR_README")
        .output()?;
    Ok(String::from_utf8(output.stdout)?)
}

fn cellar_bin() -> PathBuf {
    match std::env::var_os("CELLAR_BIN") {
        Some(path) => PathBuf::from(path),
        None => assert_cmd::cargo::cargo_bin!("cellar").to_path_buf(),
    }
}

#[test]
fn every_console_block_of_the_readme_prints_what_it_shows() -> Result {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&readme_path)?;
    let bin = cellar_bin();
    let bin_dir = bin.parent().ok_or("the cellar binary has no folder")?;
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let overwrite = std::env::var("CELLAR_README").is_ok_and(|v| v == "overwrite");
    let blocks = blocks(&readme);
    assert!(blocks.len() >= 2, "the README has console blocks");
    let mut failures = Vec::new();
    // (first output line, count, new lines) to write back, in README order.
    let mut rewrites: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for steps in &blocks {
        let folder = tempfile::tempdir()?;
        for step in steps {
            let actual = run(folder.path(), &step.command, &path)?;
            let actual_lines: Vec<&str> = actual.lines().collect();
            if !matches(&step.expected, &actual_lines) {
                failures.push(format!(
                    "README.md line {}: $ {}\n--- expected\n{}\n--- printed\n{}",
                    step.line + 1,
                    step.command,
                    step.expected.join("\n"),
                    actual.trim_end()
                ));
                rewrites.push((
                    step.output_at,
                    step.expected.len(),
                    actual_lines.iter().map(|l| l.to_string()).collect(),
                ));
            }
        }
    }
    if overwrite && !rewrites.is_empty() {
        let mut lines: Vec<String> = readme.lines().map(String::from).collect();
        for (at, count, new) in rewrites.into_iter().rev() {
            lines.splice(at..at + count, new);
        }
        std::fs::write(&readme_path, lines.join("\n") + "\n")?;
        return Ok(());
    }
    assert!(
        failures.is_empty(),
        "{}\n\n(CELLAR_README=overwrite cargo test -p cellar-cli --test readme writes the printed output \
         into README.md)",
        failures.join("\n\n")
    );
    Ok(())
}

#[test]
fn the_matcher_takes_ellipses_for_lines_and_brackets_for_text() {
    let e = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(matches(&e(&["a", "...", "d"]), &["a", "d"]));
    assert!(!matches(&e(&["a", "...", "d"]), &["a", "b"]));
    assert!(matches(&e(&["took [..] ms"]), &["took 0.42 ms"]));
    assert!(!matches(&e(&["took [..] ms"]), &["took 0.42 s"]));
    assert!(matches(&e(&["[..]x[..]"]), &["axb"]));
    assert!(!matches(&e(&["a"]), &["a", "b"]));
}

#[test]
fn blocks_are_split_into_commands_with_their_output() {
    let readme = "text\n```console\n$ one\nout 1\n$ cat > f <<EOF\n> a\n>\n> EOF\n$ two\n```\n```sh\n$ not this\n```\n";
    let blocks = blocks(readme);
    assert_eq!(blocks.len(), 1);
    let steps = blocks.first().map(Vec::as_slice).unwrap_or_default();
    let commands: Vec<&str> = steps.iter().map(|s| s.command.as_str()).collect();
    assert_eq!(commands, ["one", "cat > f <<EOF\na\n\nEOF", "two"]);
    assert_eq!(
        steps.first().map(|s| s.expected.clone()),
        Some(vec!["out 1".to_string()])
    );
    assert_eq!(steps.get(1).map(|s| (s.line, s.output_at)), Some((4, 8)));
}
