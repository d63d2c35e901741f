//! `--report FILE`: `lesson`, `explain` and `files` write one self-contained
//! HTML page that a strict parser reads, with the pictures of what the text
//! output prints.

mod common;

use common::{bin, ok, Result};

fn parse_page(html: &str) -> std::result::Result<roxmltree::Document<'_>, roxmltree::Error> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, options)
}

/// A store with three table files and a memtable, compaction off.
fn store(dir: &std::path::Path) -> Result {
    ok(dir, &["--family", "users", "create", "--compaction-trigger", "0"])?;
    let script = "put users alice name Alice\nput users carol name Carol\nflush\n\
                  put users dave name Dave\nput users erin name Erin\nflush\n\
                  put users bob name Bob\nflush\nput users zed name Zed\n\
                  explain get users carol name --report REPORT\nfiles --report FILES\n";
    let report = dir.join("explain.html");
    let files = dir.join("files.html");
    let script = script
        .replace("REPORT", report.to_str().ok_or("path")?)
        .replace("FILES", files.to_str().ok_or("path")?);
    let output = assert_cmd::Command::new(bin())
        .arg("--dir")
        .arg(dir)
        .arg("shell")
        .write_stdin(script)
        .output()?;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout)?;
    assert!(
        stdout.contains(&format!("report written to {}", report.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("report written to {}", files.display())),
        "{stdout}"
    );
    Ok(())
}

#[test]
fn explain_report_colours_each_source_as_the_read_settled_it() -> Result {
    let dir = tempfile::tempdir()?;
    store(dir.path())?;
    let html = std::fs::read_to_string(dir.path().join("explain.html"))?;
    let doc = parse_page(&html)?;
    let read = doc
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .nth(1)
        .ok_or("the read's picture")?;
    let settled: Vec<(&str, &str)> = read
        .descendants()
        .filter(|n| n.attribute("class") == Some("source"))
        .filter_map(|n| Some((n.attribute("data-source")?, n.attribute("data-settled")?)))
        .collect();
    // carol: the memtable (zed only) is ruled out by its row filter; the
    // newest file (bob) and the one of dave and erin do not span carol; the
    // oldest (alice, carol) is searched.
    assert_eq!(
        settled,
        [
            ("memtable", "bloom filter"),
            ("000012.sst", "key range"),
            ("000009.sst", "key range"),
            ("000006.sst", "searched"),
        ]
    );
    assert!(!html.contains("http") && !html.contains("<script"));
    Ok(())
}

#[test]
fn files_report_draws_one_bar_per_source() -> Result {
    let dir = tempfile::tempdir()?;
    store(dir.path())?;
    let html = std::fs::read_to_string(dir.path().join("files.html"))?;
    let doc = parse_page(&html)?;
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("source"))
        .filter_map(|n| n.attribute("data-source"))
        .collect();
    assert_eq!(names, ["memtable", "000012.sst", "000009.sst", "000006.sst"]);
    Ok(())
}

#[test]
fn lesson_report_writes_the_lessons_section_and_prints_where() -> Result {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("lesson.html");
    let output = assert_cmd::Command::new(bin())
        .args(["lesson", "layout", "--report"])
        .arg(&path)
        .output()?;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout)?;
    assert!(
        stdout.ends_with(&format!("\nreport written to {}\n", path.display())),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&path)?;
    let doc = parse_page(&html)?;
    let sections: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("section"))
        .filter_map(|n| n.attribute("id"))
        .collect();
    assert_eq!(sections, ["layout"]);
    let table = doc
        .descendants()
        .find(|n| n.has_tag_name("pre"))
        .and_then(|n| n.text())
        .ok_or("the table")?;
    assert!(
        stdout.starts_with(table),
        "the page holds the table the terminal printed"
    );
    Ok(())
}
