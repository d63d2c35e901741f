//! `cellar repair` and the hint that leads to it, driven as a process: the
//! damaged-manifest session of issue 11, run as a new user would.

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use assert_cmd::Command;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn cellar(dir: &Path) -> Command {
    let mut cmd = cargo_bin_cmd!("cellar");
    cmd.arg("--dir").arg(dir);
    cmd
}

/// Runs a command; returns its exit code, stdout and stderr.
fn run(dir: &Path, args: &[&str]) -> Result<(Option<i32>, String, String)> {
    let output = cellar(dir).args(args).output()?;
    Ok((
        output.status.code(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
}

fn ok(dir: &Path, args: &[&str]) -> Result<String> {
    let (code, stdout, stderr) = run(dir, args)?;
    if code != Some(0) {
        return Err(format!("cellar {args:?} failed: {stderr}").into());
    }
    Ok(stdout)
}

fn manifest_of(dir: &Path) -> Result<PathBuf> {
    Ok(dir.join(std::fs::read_to_string(dir.join("CURRENT"))?.trim_end()))
}

/// Offsets of the manifest's records whose first edit is an `AddTable` (tag 3).
fn add_table_records(manifest: &Path) -> Result<Vec<(usize, usize)>> {
    let bytes = std::fs::read(manifest)?;
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into()?) as usize;
        if bytes.get(at + 9) == Some(&3) {
            out.push((at, length));
        }
        at += 8 + length;
    }
    Ok(out)
}

fn copy_dir(from: &Path, to: &Path) -> Result {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Three rows, one `cellar put` each (each run's open flushes the row the run
/// before logged), then `flush`. A middle record of the manifest gets a
/// length that runs past the end of the file. `scan` used to print fewer rows
/// and exit 0, deleting the table files it no longer saw. Now every command
/// refuses to open the store, naming the manifest and the record's offset
/// and pointing to `repair`; `check` too; `repair` then brings back all three
/// rows.
#[test]
fn a_damaged_manifest_is_reported_and_repair_brings_back_every_row() -> Result {
    let tmp = tempfile::tempdir()?;
    let pristine = tmp.path().join("pristine");
    ok(&pristine, &["create", "--family", "f"])?;
    for i in 0..3 {
        ok(
            &pristine,
            &["put", "f", &format!("row{i}"), "c", &format!("v{i}"), "--ts", "5"],
        )?;
    }
    ok(&pristine, &["flush"])?;
    let records = add_table_records(&manifest_of(&pristine)?)?;
    let middle = &records[..records.len() - 1];
    assert!(middle.len() >= 2, "{records:?}");
    for &(offset, _) in middle {
        let dir = tmp.path().join(format!("damaged-{offset}"));
        copy_dir(&pristine, &dir)?;
        let manifest = manifest_of(&dir)?;
        let mut bytes = std::fs::read(&manifest)?;
        let past_end = (bytes.len() - offset - 8 + 1) as u32;
        bytes[offset + 4..offset + 8].copy_from_slice(&past_end.to_le_bytes());
        std::fs::write(&manifest, &bytes)?;
        let tables_before: Vec<_> = std::fs::read_dir(dir.join("f"))?.collect::<std::io::Result<_>>()?;

        for command in [&["scan", "f"][..], &["check"]] {
            let (code, stdout, stderr) = run(&dir, command)?;
            assert_eq!(code, Some(1), "{command:?}: {stdout}");
            assert_eq!(stdout, "");
            assert!(
                stderr.starts_with(&format!(
                    "cellar: corruption in {} at offset {offset}: ",
                    manifest.display()
                )),
                "{stderr}"
            );
            assert!(
                stderr.ends_with(&format!(
                    "the store does not open: `cellar --dir {} repair` rebuilds it from its table files and \
                     log, keeping what it cannot read in its lost/ folder\n",
                    dir.display()
                )),
                "{stderr}"
            );
        }
        let tables_after: Vec<_> = std::fs::read_dir(dir.join("f"))?.collect::<std::io::Result<_>>()?;
        assert_eq!(tables_after.len(), tables_before.len(), "no table file deleted");

        let report = ok(&dir, &["repair"])?;
        assert!(report.starts_with(&format!("repaired {}\n", dir.display())), "{report}");
        assert!(
            report.contains("  family f: 3 table file(s), 3 entries; 0 entries from the log\n"),
            "{report}"
        );
        assert!(report.contains(" kept aside as lost/MANIFEST-"), "{report}");
        assert_eq!(
            ok(&dir, &["scan", "f"])?,
            "ROW    COLUMN+CELL\n \
             row0  column=f:c, timestamp=5, value=v0\n \
             row1  column=f:c, timestamp=5, value=v1\n \
             row2  column=f:c, timestamp=5, value=v2\n\
             3 row(s)\n"
        );
        assert!(ok(&dir, &["check"])?.ends_with("3 table file(s) checked, no damage\n"));
    }
    // README's Reliability table quotes this line.
    let line = format!(
        "cellar, for each of the {} middle AddTable records of the manifest: `scan` and `check` exit 1 naming the \
         manifest and the record's offset and saying to run `cellar repair`, no table file deleted; `repair` \
         brings back 3 of 3 rows",
        middle.len()
    );
    println!("{line}");
    cellar_testkit::readme::assert_quoted(&line);
    Ok(())
}

#[test]
fn repair_prints_what_it_could_not_use() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "f"])?;
    ok(dir, &["put", "f", "kept", "c", "v", "--ts", "5"])?;
    ok(dir, &["flush"])?;
    ok(dir, &["put", "f", "damaged", "c", "v", "--ts", "5"])?;
    ok(dir, &["flush"])?;
    // The second table's first data block.
    let mut tables: Vec<PathBuf> = std::fs::read_dir(dir.join("f"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    tables.sort();
    let mut bytes = std::fs::read(&tables[1])?;
    bytes[10] ^= 0xFF;
    std::fs::write(&tables[1], &bytes)?;
    let name = tables[1].file_name().ok_or("name")?.to_string_lossy().into_owned();
    let (code, _, stderr) = run(dir, &["check"])?;
    assert_eq!(code, Some(1));
    assert!(stderr.contains("repair` keeps the sound ones"), "{stderr}");

    let report = ok(dir, &["repair"])?;
    assert!(
        report.contains("  family f: 1 table file(s), 1 entries; 0 entries from the log\n"),
        "{report}"
    );
    assert!(report.contains("not recovered:\n"), "{report}");
    assert!(
        report.contains(&format!("  f/{name} kept aside as lost/f-{name}: ")),
        "{report}"
    );
    assert!(ok(dir, &["scan", "f"])?.ends_with("1 row(s)\n"));
    Ok(())
}
