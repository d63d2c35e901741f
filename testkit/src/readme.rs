//! What README.md quotes of a test: the lines it prints, and its code.
//!
//! The README's Reliability table shows, beside each command, the line that
//! command prints ("manifest damage matrix: 1416 cases ..."). A test that
//! prints such a line also checks that the README still quotes it, so a
//! change that moves a figure fails the test that printed it, not a reader
//! who trusted the table. That comparison ignores line breaks, runs of
//! spaces and backticks (a quote inside a Markdown code span cannot hold one).
//!
//! The README's `rust` blocks are compiled the same way: a test file holds
//! each block's lines between a `// README begin` and a `// README end` line,
//! inside a function that the compiler checks, and [`assert_rust_block`] that
//! the README shows exactly those lines.

use std::path::Path;

/// The repository's README.md, read from beside this crate's folder.
fn readme() -> Result<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `text` with backticks removed and every run of whitespace one space.
fn flattened(text: &str) -> String {
    text.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Panics unless README.md quotes `printed` (whitespace and backticks
/// aside), showing the line to put in the README.
pub fn assert_quoted(printed: &str) {
    if let Err(e) = check_quoted(printed) {
        panic!("{e}");
    }
}

/// Panics unless README.md has a `rust` block of exactly the lines `source`
/// (a test file's text) marks between `// README begin` and `// README end`,
/// showing the lines the README should hold.
pub fn assert_rust_block(source: &str) {
    if let Err(e) = check_rust_block(source) {
        panic!("{e}");
    }
}

/// `Ok` if README.md quotes `printed`; otherwise the message of [`assert_quoted`].
fn check_quoted(printed: &str) -> Result<(), String> {
    if flattened(&readme()?).contains(&flattened(printed)) {
        Ok(())
    } else {
        Err(format!(
            "README.md no longer quotes what this test prints; its Reliability table should say:\n{}",
            printed.trim()
        ))
    }
}

/// The lines of `source` between its `// README begin` and `// README end`
/// lines, each without the four spaces of the function body it sits in.
fn marked_lines(source: &str) -> Result<Vec<&str>, String> {
    let mut lines = source.lines().skip_while(|l| l.trim() != "// README begin");
    if lines.next().is_none() {
        return Err("the source has no `// README begin` line".into());
    }
    let mut marked = Vec::new();
    for line in lines {
        if line.trim() == "// README end" {
            return Ok(marked);
        }
        marked.push(line.strip_prefix("    ").unwrap_or(line));
    }
    Err("the source has no `// README end` line".into())
}

/// The lines of each `rust` block of `readme`.
fn rust_blocks(readme: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == "```rust" {
            blocks.push(lines.by_ref().take_while(|l| !l.starts_with("```")).collect());
        }
    }
    blocks
}

/// `Ok` if README.md has the `rust` block `source` marks; otherwise the
/// message of [`assert_rust_block`].
fn check_rust_block(source: &str) -> Result<(), String> {
    let marked = marked_lines(source)?;
    let readme = readme()?;
    if rust_blocks(&readme).contains(&marked) {
        Ok(())
    } else {
        Err(format!(
            "README.md has no rust block of the lines this test compiles; it should show:\n{}",
            marked.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_spaces_and_backticks_do_not_count() {
        assert_eq!(flattened("a  `b`\n c"), "a b c");
    }

    #[test]
    fn a_line_the_readme_does_not_hold_is_refused_with_the_line_to_quote() {
        let err = check_quoted("no README says this: 4 8 15 16 23 42").err();
        assert!(err.is_some_and(|e| e.ends_with("no README says this: 4 8 15 16 23 42")));
        assert_eq!(check_quoted("# cellar"), Ok(()));
    }

    #[test]
    fn a_marked_block_is_compared_line_by_line_without_its_function_indent() {
        let source = "fn f() {\n    // README begin\n    let a = 1;\n        .b()\n\n    // README end\n}\n";
        assert_eq!(marked_lines(source), Ok(vec!["let a = 1;", "    .b()", ""]));
        let readme = "text\n```rust\nlet a = 1;\n    .b()\n\n```\n```sh\nls\n```\n";
        assert_eq!(rust_blocks(readme), vec![vec!["let a = 1;", "    .b()", ""]]);
        assert!(marked_lines("no markers").is_err());
    }
}
