//! What the tests of the `cellar` command share: running it as a process on
//! a store folder, and checking its output and exit status.
//!
//! `CELLAR_BIN=/path/to/cellar` runs the tests against another build of the
//! command, which is how a test written for a bug is shown to fail on the
//! build before the fix.

#![allow(dead_code, reason = "each test file uses some of the helpers")]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The `cellar` binary under test.
pub fn bin() -> PathBuf {
    match std::env::var_os("CELLAR_BIN") {
        Some(path) => PathBuf::from(path),
        None => assert_cmd::cargo::cargo_bin!("cellar").to_path_buf(),
    }
}

/// `cellar --dir DIR` ready for arguments.
pub fn cellar(dir: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--dir").arg(dir);
    cmd
}

/// Runs a command that must succeed and returns its stdout.
pub fn ok(dir: &Path, args: &[&str]) -> Result<String> {
    let output = cellar(dir).args(args).output()?;
    let stderr = String::from_utf8(output.stderr)?;
    if !output.status.success() {
        return Err(format!("cellar {args:?} failed: {stderr}").into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// Runs a command that must fail; returns its stderr, checked to be one line
/// without a panic.
pub fn fails(dir: &Path, args: &[&str]) -> Result<String> {
    let output = cellar(dir).args(args).output()?;
    failed(output.status.code(), String::from_utf8(output.stderr)?, args)
}

/// Runs a command without `--dir` (one that reads a file, or `keys`) that
/// must fail: its stderr, checked as [`fails`] checks it, and nothing on
/// stdout.
pub fn fails_without_dir(args: &[&str]) -> Result<String> {
    let output = Command::new(bin()).args(args).output()?;
    assert_eq!(
        String::from_utf8(output.stdout)?,
        "",
        "cellar {args:?} printed an answer"
    );
    failed(output.status.code(), String::from_utf8(output.stderr)?, args)
}

/// A failure's exit status 1 and its one line of error, without a panic.
fn failed(code: Option<i32>, stderr: String, args: &[&str]) -> Result<String> {
    assert_eq!(code, Some(1), "cellar {args:?} should exit 1: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line of error: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ok(stderr)
}

/// Runs a shell script; returns (exit code, stdout, stderr).
pub fn shell(dir: &Path, args: &[&str], script: &str) -> Result<(Option<i32>, String, String)> {
    let output = cellar(dir).args(args).arg("shell").write_stdin(script).output()?;
    Ok((
        output.status.code(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
}

/// A store with family `books` and one row of four columns.
pub fn book_store() -> Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "books"])?;
    for (column, value) in [
        ("author", "Herbert"),
        ("isbn", "0441013597"),
        ("title", "Dune"),
        ("year", "1965"),
    ] {
        ok(dir, &["put", "books", "book:1", column, value, "--ts", "1000"])?;
    }
    Ok(tmp)
}

/// Which of `switches` a help text lists, each as `--name` at the start of a
/// line (alone or followed by its value or description).
pub fn switches_listed(help: &str, switches: &[&'static str]) -> Vec<&'static str> {
    switches
        .iter()
        .copied()
        .filter(|switch| {
            help.lines().any(|line| {
                let line = line.trim_start();
                line == *switch || line.starts_with(&format!("{switch} "))
            })
        })
        .collect()
}
