//! `load` and `export` driven as processes: what one writes the other reads
//! back exactly, and a bad file changes nothing.

use std::path::Path;

mod common;
use common::{fails, ok, Result};

/// The last line `scan` prints: how many rows family `t` has.
fn rows(dir: &Path) -> Result<String> {
    let scan = ok(dir, &["scan", "t"])?;
    Ok(scan.lines().last().unwrap_or_default().to_string())
}

/// A store with family `t` keeping 3 versions: awkward bytes in every part,
/// a cell written twice, a deleted column and a deleted row.
fn awkward_store() -> Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t", "--max-versions", "3"])?;
    let script = r#"put t r1 a 'x, "y"' --ts 5
put t r1 a second --ts 6
put t r1 b\x00\xFF 'tab\x09 back\x5C' --ts 7
put t 'r 2' c '  padded  ' --ts 8
put t r3 gone v --ts 1
delete-row t r3 --ts 2
put t r4 c v --ts 3
delete t r4 c --ts 4
put t r5 c '' --ts 9
"#;
    common::cellar(dir).arg("shell").write_stdin(script).assert().success();
    Ok(tmp)
}

/// `scan --json` with every kept version, the form compared below.
fn all_versions(dir: &Path) -> Result<String> {
    ok(dir, &["scan", "t", "--versions", "3", "--json"])
}

fn load_into_new_store(file: &Path) -> Result<tempfile::TempDir> {
    let copy = tempfile::tempdir()?;
    ok(copy.path(), &["create", "--family", "t", "--max-versions", "3"])?;
    ok(copy.path(), &["load", "t", &file.display().to_string()])?;
    Ok(copy)
}

#[test]
fn export_then_load_reads_back_byte_for_byte_in_both_formats() -> Result {
    let tmp = awkward_store()?;
    let dir = tmp.path();
    let expected = all_versions(dir)?;
    assert!(expected.contains(r#""value":"second""#), "{expected}");
    for format in ["jsonl", "csv"] {
        let file = dir.join(format!("export.{format}"));
        std::fs::write(&file, ok(dir, &["export", "t", "--format", format])?)?;
        let copy = load_into_new_store(&file)?;
        assert_eq!(all_versions(copy.path())?, expected, "{format}");
        assert_eq!(ok(copy.path(), &["scan", "t"])?, ok(dir, &["scan", "t"])?, "{format}");
    }
    Ok(())
}

#[test]
fn export_writes_every_kept_version_with_its_timestamp() -> Result {
    let tmp = awkward_store()?;
    let csv = ok(tmp.path(), &["export", "t", "--format", "csv"])?;
    assert_eq!(
        csv,
        "row,column,value,timestamp\n\
         r 2,c,\"  padded  \",8\n\
         r1,a,second,6\n\
         r1,a,\"x, \"\"y\"\"\",5\n\
         r1,b\\x00\\xFF,tab\\x09 back\\x5C,7\n\
         r5,c,,9\n"
    );
    Ok(())
}

#[test]
fn a_cell_as_json_output_writes_it_loads_with_its_timestamp() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["--family", "t", "put", "t", "r", "c", "v", "--ts", "4"])?;
    let printed = ok(dir, &["get", "t", "r", "c", "--json"])?;
    assert_eq!(
        printed,
        "[{\"column\":\"c\",\"row\":\"r\",\"timestamp\":4,\"value\":\"v\"}]\n"
    );
    // The cell as one JSON line, the way a script turns that array into lines.
    let file = dir.join("cell.jsonl");
    std::fs::write(&file, printed.trim_start_matches('[').trim_end().trim_end_matches(']'))?;
    let copy = tempfile::tempdir()?;
    ok(
        copy.path(),
        &["--family", "t", "load", "t", &file.display().to_string()],
    )?;
    assert_eq!(ok(copy.path(), &["get", "t", "r", "c", "--json"])?, printed);
    Ok(())
}

#[test]
fn load_reads_back_the_timestamps_that_json_output_writes() -> Result {
    let tmp = awkward_store()?;
    let dir = tmp.path();
    // What `scan --json` and `get --json` print, as files for `load`.
    let scan = dir.join("scan.json");
    std::fs::write(&scan, ok(dir, &["scan", "t", "--json"])?)?;
    let copy = load_into_new_store(&scan)?;
    assert_eq!(
        ok(copy.path(), &["scan", "t", "--json"])?,
        ok(dir, &["scan", "t", "--json"])?
    );

    let get = dir.join("get.json");
    std::fs::write(&get, ok(dir, &["get", "t", "r1", "--versions", "3", "--json"])?)?;
    let copy = load_into_new_store(&get)?;
    assert_eq!(
        ok(copy.path(), &["get", "t", "r1", "--versions", "3", "--json"])?,
        ok(dir, &["get", "t", "r1", "--versions", "3", "--json"])?
    );
    Ok(())
}

#[test]
fn a_json_lines_export_carries_the_deletions_the_store_holds() -> Result {
    let tmp = awkward_store()?;
    let dir = tmp.path();
    let jsonl = ok(dir, &["export", "t"])?;
    let lines: Vec<&str> = jsonl.lines().collect();
    // Row r3 deleted whole at 2, column c of r4 at 4: each before the cells
    // of its row (here there are none left).
    assert_eq!(
        lines.get(4..),
        Some(
            &[
                r#"{"kind":"delete-row","row":"r3","timestamp":2}"#,
                r#"{"column":"c","kind":"delete","row":"r4","timestamp":4}"#,
                r#"{"column":"c","row":"r5","timestamp":9,"value":""}"#,
            ][..]
        )
    );
    // Loaded into a store holding older cells, the deletions hide them too.
    let other = tempfile::tempdir()?;
    ok(other.path(), &["create", "--family", "t", "--max-versions", "3"])?;
    ok(other.path(), &["put", "t", "r3", "old", "v", "--ts", "1"])?;
    ok(other.path(), &["put", "t", "r4", "c", "old", "--ts", "3"])?;
    ok(other.path(), &["put", "t", "r4", "d", "kept", "--ts", "3"])?;
    let file = dir.join("export.jsonl");
    std::fs::write(&file, &jsonl)?;
    ok(other.path(), &["load", "t", &file.display().to_string()])?;
    assert_eq!(ok(other.path(), &["get", "t", "r3"])?, "ROW  COLUMN+CELL\n0 cell(s)\n");
    assert_eq!(
        ok(other.path(), &["get", "t", "r4"])?,
        "ROW  COLUMN+CELL\n r4  column=t:d, timestamp=3, value=kept\n1 cell(s)\n"
    );
    // CSV has no place for them: left out, and said so.
    let output = common::cellar(dir).args(["export", "t", "--format", "csv"]).output()?;
    assert_eq!(
        String::from_utf8(output.stderr)?,
        "cellar: 2 deletion(s) left out: CSV carries cells only (--format jsonl keeps them)\n"
    );
    Ok(())
}

#[test]
fn json_lines_carry_deletions() -> Result {
    let tmp = awkward_store()?;
    let dir = tmp.path();
    let file = dir.join("deletions.jsonl");
    std::fs::write(
        &file,
        "{\"kind\": \"delete\", \"row\": \"r1\", \"column\": \"a\", \"timestamp\": 5}\n\
         {\"kind\": \"delete-row\", \"row\": \"r 2\", \"timestamp\": 8}\n",
    )?;
    assert_eq!(
        ok(dir, &["load", "t", &file.display().to_string()])?,
        format!("loaded 0 cell(s) and 2 deletion(s) into t from {}\n", file.display())
    );
    // The version at 6 is newer than the deletion at 5: it stays, alone.
    let r1 = ok(dir, &["get", "t", "r1", "a", "--versions", "3"])?;
    assert_eq!(
        r1,
        "ROW  COLUMN+CELL\n r1  column=t:a, timestamp=6, value=second\n1 cell(s)\n"
    );
    assert_eq!(ok(dir, &["get", "t", "r 2"])?, "ROW  COLUMN+CELL\n0 cell(s)\n");
    Ok(())
}

#[test]
fn a_json_line_without_a_value_is_an_error() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let file = dir.join("j.jsonl");
    std::fs::write(&file, "{\"row\":\"j4\",\"column\":\"c\"}\n")?;
    let err = fails(dir, &["load", "t", &file.display().to_string()])?;
    assert_eq!(
        err,
        format!("cellar: {} line 1: missing \"value\" field\n", file.display())
    );
    assert_eq!(rows(dir)?, "0 row(s)");
    Ok(())
}

#[test]
fn a_bad_line_anywhere_leaves_the_store_unchanged() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    // 5,000 good lines (five write batches' worth), then a bad one.
    let mut text: String = (0..5000).map(|i| format!("r{i},c,v,7\n")).collect();
    text.push_str("r5000,c\n");
    let file = dir.join("bad.csv");
    std::fs::write(&file, text)?;
    let err = fails(dir, &["load", "t", &file.display().to_string()])?;
    assert_eq!(rows(dir)?, "0 row(s)", "nothing written");
    assert_eq!(
        err,
        format!(
            "cellar: {} line 5001: expected row,column,value[,timestamp], found 2 field(s)\n",
            file.display()
        )
    );
    Ok(())
}

#[test]
fn a_value_over_the_limit_names_the_file_and_line() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let big = "x".repeat(cellar::MAX_VALUE_BYTES + 1);
    let file = dir.join("big.csv");
    std::fs::write(&file, format!("r1,c,small\nr2,c,{big}\n"))?;
    let err = fails(dir, &["load", "t", &file.display().to_string()])?;
    assert_eq!(
        err,
        format!(
            "cellar: {} line 2: the value is {} bytes, over the limit of {}\n",
            file.display(),
            cellar::MAX_VALUE_BYTES + 1,
            cellar::MAX_VALUE_BYTES
        )
    );
    assert_eq!(rows(dir)?, "0 row(s)");
    Ok(())
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_row() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let file = dir.join("excel.csv");
    std::fs::write(&file, "\u{feff}row,column,value\r\nr1,c,v\r\n")?;
    ok(dir, &["load", "t", &file.display().to_string()])?;
    let scan = ok(dir, &["scan", "t", "--json"])?;
    assert!(scan.ends_with("\"row\":\"r1\"}]\n"), "{scan}");
    assert_eq!(rows(dir)?, "1 row(s)");
    Ok(())
}

#[test]
fn an_empty_row_key_is_refused() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    assert_eq!(
        fails(dir, &["put", "t", "", "c", "v"])?,
        "cellar: the row key is empty\n"
    );
    let file = dir.join("empty.csv");
    std::fs::write(&file, "r1,c,v\n,c,v\n")?;
    assert_eq!(
        fails(dir, &["load", "t", &file.display().to_string()])?,
        format!("cellar: {} line 2: the row key is empty\n", file.display())
    );
    assert_eq!(rows(dir)?, "0 row(s)");
    Ok(())
}

/// A JSON document spread over lines (`scan --json | jq .`, or any pretty
/// printer) is not JSON lines: its first line said only "not JSON: EOF while
/// parsing a list at line 1 column 1".
#[test]
fn a_json_document_spread_over_lines_is_named_as_such() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let file = dir.join("pretty.json");
    std::fs::write(&file, "[\n  {\"row\": \"r\", \"column\": \"c\", \"value\": \"v\"}\n]\n")?;
    assert_eq!(
        fails(dir, &["load", "t", file.to_str().ok_or("path")?])?,
        format!(
            "cellar: {} line 1: a JSON value that does not end on its line: load reads JSON lines, \
             one cell, row or array of them per line (`jq -c` writes them)\n",
            file.display()
        )
    );
    assert_eq!(rows(dir)?, "0 row(s)");
    Ok(())
}

/// A file that is not text (a table file, a compressed export) said
/// "line 1: stream did not contain valid UTF-8", the reader's words.
#[test]
fn a_file_that_is_not_text_is_named_as_such() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let file = dir.join("cells.csv.gz");
    std::fs::write(&file, b"r,c,v\n\x1f\x8b\x08\x00\xff\n")?;
    assert_eq!(
        fails(dir, &["load", "t", file.to_str().ok_or("path")?])?,
        format!(
            "cellar: {} line 2 is not UTF-8 text: write such bytes as \\xNN escapes \
             (load reads CSV or JSON lines)\n",
            file.display()
        )
    );
    assert_eq!(rows(dir)?, "0 row(s)");
    Ok(())
}
