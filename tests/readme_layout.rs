//! README's "How it is built" names every package of the workspace and every
//! example of the `cellar` package, so a package or an example added later
//! cannot go unmentioned in the map a newcomer reads first.

use std::path::Path;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The text of the first code block after the heading "## How it is built".
fn layout_block(readme: &str) -> Result<&str, String> {
    let after = readme
        .split_once("\n## How it is built\n")
        .map(|(_, rest)| rest)
        .ok_or("README has no section \"How it is built\"")?;
    after
        .split("```")
        .nth(1)
        .ok_or_else(|| "README's \"How it is built\" holds no code block".to_string())
}

/// The folders of the workspace's `members = [...]` line.
fn members(manifest: &str) -> Result<Vec<&str>, String> {
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .ok_or("Cargo.toml has no `members = [` line")?;
    Ok(line
        .trim_start_matches("members = [")
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect())
}

#[test]
fn how_it_is_built_names_every_package_and_every_example() -> TestResult {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md"))?;
    let block = layout_block(&readme)?;
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml"))?;
    let mut missing = Vec::new();
    for member in members(&manifest)? {
        let folder = format!("{member}/");
        if !block.lines().any(|l| l.starts_with(&folder)) {
            missing.push(folder);
        }
    }
    for entry in std::fs::read_dir(repo.join("examples"))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") && !block.contains(&name) {
            missing.push(format!("examples/{name}"));
        }
    }
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "README's \"How it is built\" does not name these"
    );
    Ok(())
}
