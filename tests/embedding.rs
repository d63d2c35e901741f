//! A program that embeds cellar compiles the engine and the table format, and
//! nothing of the command line, the lesson, the key designer or the peer
//! benchmarks. Checked the way an embedder would see it: a fresh crate that
//! depends on `cellar` with default features off, and its `cargo tree`.

use std::path::Path;
use std::process::Command;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// What the `cellar` binary, the lesson, the benchmarks and the tests need,
/// and an embedder does not.
const NOT_FOR_EMBEDDERS: [&str; 10] = [
    "clap",
    "rustyline",
    "indicatif",
    "serde_json",
    "cellar-bench",
    "cellar-keys",
    "fjall",
    "rocksdb",
    "criterion",
    "cellar-testkit",
];

#[test]
fn a_crate_that_embeds_cellar_builds_only_the_engine_and_the_table_format() -> TestResult {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir()?;
    let app = tmp.path().join("app");
    std::fs::create_dir_all(app.join("src"))?;
    std::fs::write(
        app.join("Cargo.toml"),
        format!(
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ncellar = {{ path = {:?}, default-features = false }}\n\n\
             [workspace]\n",
            repo.display().to_string()
        ),
    )?;
    std::fs::write(app.join("src/main.rs"), "fn main() {}\n")?;
    // The repository's lock file pins the same versions the workspace builds,
    // so the tree resolves without the network.
    std::fs::copy(repo.join("Cargo.lock"), app.join("Cargo.lock"))?;

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        // The workspace's own target folder holds cargo's answer to its
        // `rustc -` target probe, taken when this test was built. A fresh
        // folder would run the probe again, and the probe reads its source
        // from /dev/null: on a machine where /dev/null is a regular file that
        // build scripts have written into, it fails.
        .env("CARGO_TARGET_DIR", workspace_target()?)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "depth",
            "--format",
            "{p}",
        ])
        .current_dir(&app)
        .output()?;
    let stderr = String::from_utf8(output.stderr)?;
    assert!(output.status.success(), "cargo tree failed: {stderr}");
    let stdout = String::from_utf8(output.stdout)?;
    let tree = parse_tree(&stdout)?;
    let mut names: Vec<&str> = tree.iter().map(|&(_, name, _)| name).collect();
    names.sort_unstable();
    names.dedup();

    for wanted in ["cellar", "cellar-engine", "cellar-sstable", "cellar-fs"] {
        assert!(names.contains(&wanted), "{wanted} missing from the tree: {names:?}");
    }
    let unwanted: Vec<&str> = NOT_FOR_EMBEDDERS
        .into_iter()
        .filter(|name| names.contains(name))
        .collect();
    assert_eq!(unwanted, Vec::<&str>::new(), "an embedder would compile these");

    // README "On a fresh machine" names the dependencies of the engine, the
    // table format and the file layer: the crates directly under them.
    let mut direct: Vec<&str> = tree
        .iter()
        .filter(|&&(_, name, parent)| {
            ["cellar-engine", "cellar-sstable", "cellar-fs"].contains(&parent) && !name.starts_with("cellar")
        })
        .map(|&(_, name, _)| name)
        .collect();
    direct.sort_unstable();
    direct.dedup();
    let readme = std::fs::read_to_string(repo.join("README.md"))?;
    assert_eq!(
        readme_dependencies(&readme)?,
        direct,
        "README's list of an embedder's dependencies"
    );
    Ok(())
}

/// One line of the tree: its depth, the crate, and the crate it hangs under
/// ("" for the root).
type TreeLine<'a> = (usize, &'a str, &'a str);

/// The lines of `cargo tree --prefix depth --format {p}`.
fn parse_tree(out: &str) -> Result<Vec<TreeLine<'_>>, Box<dyn std::error::Error>> {
    let mut path: Vec<&str> = Vec::new();
    let mut tree = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        let depth: usize = line.get(..digits).unwrap_or_default().parse()?;
        let name = line
            .get(digits..)
            .and_then(|rest| rest.split_whitespace().next())
            .ok_or_else(|| format!("a tree line with no crate: {line:?}"))?;
        path.truncate(depth);
        let parent = path.last().copied().unwrap_or("");
        path.push(name);
        tree.push((depth, name, parent));
    }
    Ok(tree)
}

/// The crates README lists in "their few dependencies (a, b, ...)", sorted
/// (the sentence may be wrapped anywhere).
fn readme_dependencies(readme: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let marker = "their few dependencies (";
    let at = flat
        .find(marker)
        .ok_or("README no longer says \"their few dependencies (\"")?;
    let list = flat
        .get(at + marker.len()..)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_default();
    let mut names: Vec<String> = list.split(',').map(|name| name.trim().to_string()).collect();
    names.sort_unstable();
    Ok(names)
}

/// The workspace's target folder: the parent of the folder cargo gives
/// integration tests for scratch files.
fn workspace_target() -> Result<&'static Path, Box<dyn std::error::Error>> {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .ok_or_else(|| "CARGO_TARGET_TMPDIR has no parent folder".into())
}
