//! The `cellar` command driven as a process, the way a learner or a script
//! uses it: every subcommand, its exact output, its `--json`, and its errors.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use serde_json::Value;

mod common;
use common::{book_store, cellar, fails, ok, switches_listed, Result};

#[test]
fn create_makes_the_store_and_its_families() -> Result {
    let tmp = tempfile::tempdir()?;
    let out = ok(tmp.path(), &["create", "--family", "a", "--family", "b"])?;
    assert_eq!(out, format!("store {} has families: a, b\n", tmp.path().display()));
    Ok(())
}

#[test]
fn get_prints_cells_like_the_hbase_shell() -> Result {
    let tmp = book_store()?;
    assert_eq!(
        ok(tmp.path(), &["get", "books", "book:1"])?,
        "ROW      COLUMN+CELL\n\
         \x20book:1  column=books:author, timestamp=1000, value=Herbert\n\
         \x20book:1  column=books:isbn, timestamp=1000, value=0441013597\n\
         \x20book:1  column=books:title, timestamp=1000, value=Dune\n\
         \x20book:1  column=books:year, timestamp=1000, value=1965\n\
         4 cell(s)\n"
    );
    assert_eq!(
        ok(tmp.path(), &["get", "books", "book:1", "title"])?,
        "ROW      COLUMN+CELL\n book:1  column=books:title, timestamp=1000, value=Dune\n1 cell(s)\n"
    );
    assert_eq!(
        ok(tmp.path(), &["get", "books", "book:2", "title"])?,
        "ROW  COLUMN+CELL\n0 cell(s)\n"
    );
    Ok(())
}

#[test]
fn get_json_is_an_array_of_cells() -> Result {
    let tmp = book_store()?;
    let cells: Value = serde_json::from_str(&ok(tmp.path(), &["get", "books", "book:1", "title", "--json"])?)?;
    assert_eq!(
        cells,
        serde_json::json!([{"row": "book:1", "column": "title", "timestamp": 1000, "value": "Dune"}])
    );
    Ok(())
}

#[test]
fn human_prints_timestamps_as_dates() -> Result {
    let tmp = tempfile::tempdir()?;
    ok(
        tmp.path(),
        &["--family", "t", "put", "t", "r", "c", "v", "--ts", "1709374500123"],
    )?;
    let out = ok(tmp.path(), &["get", "t", "r", "--human"])?;
    assert!(out.contains("timestamp=2024-03-02T10:15:00.123Z, value=v"), "{out}");
    Ok(())
}

#[test]
fn slice_reads_a_column_range_with_limit_and_reverse() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let columns = |out: String| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split("column=books:").nth(1))
            .filter_map(|rest| rest.split(',').next())
            .map(String::from)
            .collect()
    };
    assert_eq!(
        columns(ok(dir, &["slice", "books", "book:1", "--from", "i", "--to", "y"])?),
        ["isbn", "title"]
    );
    assert_eq!(
        columns(ok(dir, &["slice", "books", "book:1", "--limit", "2", "--reverse"])?),
        ["year", "title"]
    );
    let json: Value = serde_json::from_str(&ok(dir, &["slice", "books", "book:1", "--from", "t", "--json"])?)?;
    assert_eq!(json.as_array().map(Vec::len), Some(2));
    assert_eq!(json[1]["value"], "1965");
    Ok(())
}

#[test]
fn scan_walks_rows_by_range_prefix_and_limit() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    for row in ["a1", "a2", "b1", "b2"] {
        ok(dir, &["put", "t", row, "c", row, "--ts", "7"])?;
    }
    assert_eq!(
        ok(dir, &["scan", "t", "--prefix", "b"])?,
        "ROW  COLUMN+CELL\n b1  column=t:c, timestamp=7, value=b1\n b2  column=t:c, timestamp=7, value=b2\n2 row(s)\n"
    );
    let json: Value = serde_json::from_str(&ok(dir, &["scan", "t", "--from", "a2", "--to", "b2", "--json"])?)?;
    assert_eq!(
        json,
        serde_json::json!([
            {"row": "a2", "cells": [{"row": "a2", "column": "c", "timestamp": 7, "value": "a2"}]},
            {"row": "b1", "cells": [{"row": "b1", "column": "c", "timestamp": 7, "value": "b1"}]},
        ])
    );
    let limited = ok(dir, &["scan", "t", "--limit", "3"])?;
    assert!(limited.ends_with("3 row(s)\n"), "{limited}");
    Ok(())
}

#[test]
fn delete_hides_a_column_and_delete_row_hides_the_row() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["delete", "books", "book:1", "isbn"])?;
    let out = ok(dir, &["get", "books", "book:1"])?;
    assert!(out.ends_with("3 cell(s)\n") && !out.contains("isbn"), "{out}");
    ok(dir, &["delete-row", "books", "book:1"])?;
    assert_eq!(ok(dir, &["get", "books", "book:1"])?, "ROW  COLUMN+CELL\n0 cell(s)\n");
    Ok(())
}

#[test]
fn escaped_bytes_round_trip_through_arguments_and_output() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(
        dir,
        &[
            "--family",
            "t",
            "put",
            "t",
            r"a\x00b",
            r"c\xff",
            r"tab\x09\x5C",
            "--ts",
            "1",
        ],
    )?;
    assert_eq!(
        ok(dir, &["get", "t", r"a\x00b"])?,
        "ROW      COLUMN+CELL\n a\\x00b  column=t:c\\xFF, timestamp=1, value=tab\\x09\\x5C\n1 cell(s)\n"
    );
    Ok(())
}

#[test]
fn flush_writes_the_memtable_and_files_lists_the_table() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let script = "put t r1 a x --ts 5\nput t r1 b y --ts 5\nflush\nfiles\n";
    let out = cellar(dir)
        .args(["--family", "t", "shell"])
        .write_stdin(script)
        .output()?;
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout)?,
        "flushed: 1 new table file(s), 1 in all\n\
         family  file        run  bytes  entries  tombstones  blocks  compression  first key  last key\n\
         t       000005.sst    4    250        2           0       1  none         r1/a@5     r1/b@5\n\
         1 file(s)\n"
    );
    let files: Value = serde_json::from_str(&ok(dir, &["files", "--json"])?)?;
    assert_eq!(files[0]["family"], "t");
    assert_eq!(files[0]["entries"], 2);
    assert_eq!(files[0]["first_key"], "r1/a@5");
    Ok(())
}

#[test]
fn compact_reports_what_it_reclaimed_and_space_amplification() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    // One process, so that each flush makes exactly one file.
    let script = "put t r a 1 --ts 1\nput t r b 2 --ts 1\nflush\nput t r a 3 --ts 2\ndelete t r b --ts 2\nflush\n";
    cellar(dir)
        .args(["--family", "t", "shell"])
        .write_stdin(script)
        .assert()
        .success();
    let out = ok(dir, &["compact", "t"])?;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"compacted t:"));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  read     2 file(s),") && l.ends_with(", 4 entries")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  wrote    1 file(s),") && l.ends_with(", 1 entries")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("bytes, 3 entries") && l.starts_with("  reclaimed")),
        "{out}"
    );
    assert_eq!(lines.last(), Some(&"  space amplification 4.00 -> 1.00"));
    Ok(())
}

#[test]
fn stats_counts_entries_live_and_stored() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["delete", "books", "book:1", "isbn", "--ts", "2000"])?;
    let text = ok(dir, &["stats"])?;
    assert!(text.contains("entries stored              5\n"), "{text}");
    assert!(text.contains("entries live                3\n"), "{text}");
    let stats: Value = serde_json::from_str(&ok(dir, &["stats", "--json"])?)?;
    let books = &stats["families"][0];
    assert_eq!(books["name"], "books");
    assert_eq!(books["stored_entries"], 5);
    assert_eq!(books["live_entries"], 3);
    assert_eq!(books["tombstones"], 1);
    Ok(())
}

#[test]
fn explain_prints_each_source_and_what_it_cost() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let out = ok(
        dir,
        &["explain", "slice", "books", "book:1", "--from", "i", "--to", "u"],
    )?;
    assert!(out.contains("source "), "{out}");
    assert!(
        out.contains("memtable          search      -            0      0         0\n"),
        "{out}"
    );
    assert!(out.ends_with("entries examined, 2 returned\n"), "{out}");
    let json: Value = serde_json::from_str(&ok(dir, &["explain", "get", "books", "book:1", "title", "--json"])?)?;
    assert_eq!(json["entries_returned"], 1);
    assert_eq!(json["sources"][0]["source"], "memtable");
    assert_eq!(json["files_visited"], 1);
    assert_eq!(json["data_blocks"], 1);
    let scan: Value = serde_json::from_str(&ok(dir, &["explain", "scan", "books", "--json"])?)?;
    assert_eq!(scan["entries_returned"], 1);
    Ok(())
}

/// Flips one byte inside the first data block of the family's only table.
fn damage_first_table(dir: &Path, family: &str) -> Result<std::path::PathBuf> {
    let table = std::fs::read_dir(dir.join(family))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .ok_or("no table file")?;
    let mut bytes = std::fs::read(&table)?;
    let byte = bytes.get_mut(10).ok_or("table too short")?;
    *byte ^= 0xFF;
    std::fs::write(&table, bytes)?;
    Ok(table)
}

#[test]
fn check_passes_on_a_sound_store_and_fails_on_a_damaged_one() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["flush"])?;
    let out = ok(dir, &["check"])?;
    assert!(out.ends_with("1 table file(s) checked, no damage\n"), "{out}");
    damage_first_table(dir, "books")?;
    let output = cellar(dir).arg("check").output()?;
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout)?;
    assert!(
        stdout.starts_with("DAMAGED  books/") && stdout.contains("checksum mismatch"),
        "{stdout}"
    );
    assert_eq!(
        String::from_utf8(output.stderr)?,
        format!(
            "cellar: 1 of 1 table file(s) damaged; `cellar --dir {} repair` keeps the sound ones and moves the \
             damaged ones to its lost/ folder\n",
            dir.display()
        )
    );
    Ok(())
}

#[test]
fn dump_decodes_a_table_block_by_block() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["flush"])?;
    let files: Value = serde_json::from_str(&ok(dir, &["files", "--json"])?)?;
    let path = files[0]["path"].as_str().ok_or("no path")?.to_string();
    // `dump` reads one file: it takes no --dir.
    let dump = || {
        let mut cmd = assert_cmd::Command::new(common::bin());
        cmd.args(["dump", &path]);
        cmd
    };
    let output = dump().output()?;
    assert!(output.status.success(), "{output:?}");
    let out = String::from_utf8(output.stdout)?;
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines
            .get(1)
            .is_some_and(|l| l.starts_with("block 0 data: offset 0,") && l.contains("4 entries, checksum ok")),
        "{out}"
    );
    // Each one-shot `put` left a small file; minor compaction merged them, and
    // a bottommost compaction writes every sequence number as 0.
    assert_eq!(
        lines.get(2),
        Some(&"  row=book:1 column=author timestamp=1000 seq=0 put value=Herbert")
    );
    assert!(out.contains("block 3 index:"), "{out}");
    assert!(
        out.contains("properties: 4 entries, 0 tombstones, 1 data blocks"),
        "{out}"
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("verified: 4 blocks, 4 entries")),
        "{out}"
    );

    damage_first_table(dir, "books")?;
    let output = dump().output()?;
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8(output.stdout)?.contains("checksum MISMATCH"));
    assert_eq!(
        String::from_utf8(output.stderr)?,
        format!("cellar: {path}: 1 block(s) fail their checksum\n")
    );
    Ok(())
}

#[test]
fn load_reads_csv_and_json_lines() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let csv = dir.join("cells.csv");
    std::fs::write(&csv, "row,column,value,ts\nr1,a,\"x, y\",5\nr1,b,z\n")?;
    assert_eq!(
        ok(dir, &["load", "t", &csv.display().to_string()])?,
        format!("loaded 2 cell(s) into t from {}\n", csv.display())
    );
    let jsonl = dir.join("rows.jsonl");
    std::fs::write(
        &jsonl,
        "{\"row\": \"r2\", \"column\": \"a\", \"value\": \"v\", \"timestamp\": 9}\n\
         {\"row\": \"r3\", \"columns\": {\"title\": \"Dune\", \"year\": \"1965\"}, \"timestamp\": 3}\n",
    )?;
    assert_eq!(
        ok(dir, &["load", "t", &jsonl.display().to_string()])?,
        format!("loaded 3 cell(s) into t from {}\n", jsonl.display())
    );
    assert_eq!(
        ok(dir, &["get", "t", "r1", "a"])?,
        "ROW  COLUMN+CELL\n r1  column=t:a, timestamp=5, value=x, y\n1 cell(s)\n"
    );
    let r3: Value = serde_json::from_str(&ok(dir, &["get", "t", "r3", "--json"])?)?;
    assert_eq!(
        r3,
        serde_json::json!([
            {"row": "r3", "column": "title", "timestamp": 3, "value": "Dune"},
            {"row": "r3", "column": "year", "timestamp": 3, "value": "1965"},
        ])
    );
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "r1,a\n")?;
    let err = fails(dir, &["load", "t", &bad.display().to_string()])?;
    assert!(
        err.contains("line 1: expected row,column,value[,timestamp], found 2 field(s)"),
        "{err}"
    );
    Ok(())
}

#[test]
fn shell_runs_a_script_from_stdin() -> Result {
    let tmp = tempfile::tempdir()?;
    let script = "\
# comments and blank lines are skipped

put t r c 'two words' --ts 4
get t r
get t r --json
nonsense
get nope r
stats --json
exit
put t r c never
";
    let out = cellar(tmp.path())
        .args(["--family", "t", "shell"])
        .write_stdin(script)
        .output()?;
    assert_eq!(out.status.code(), Some(1), "a failed line makes the exit status fail");
    let stdout = String::from_utf8(out.stdout)?;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.get(..4),
        Some(
            &[
                "ROW  COLUMN+CELL",
                " r   column=t:c, timestamp=4, value=two words",
                "1 cell(s)",
                r#"[{"column":"c","row":"r","timestamp":4,"value":"two words"}]"#,
            ][..]
        )
    );
    let stats: Value = serde_json::from_str(lines.get(4).ok_or("no stats line")?)?;
    assert_eq!(stats["families"][0]["memtable_entries"], 1);
    assert_eq!(
        String::from_utf8(out.stderr)?,
        "cellar: unrecognized subcommand 'nonsense'\n\
         \n\
         Usage: [OPTIONS] <COMMAND>\n\
         \n\
         For more information, try '--help'.\n\
         cellar: unknown column family \"nope\" (families: t)\n\
         cellar: 2 command(s) failed\n"
    );
    // `exit` stopped the script: the last put never ran.
    assert!(ok(tmp.path(), &["get", "t", "r"])?.contains("value=two words"));
    Ok(())
}

#[test]
fn shell_help_lists_the_commands() -> Result {
    let tmp = tempfile::tempdir()?;
    let out = ok_with_stdin(tmp.path(), &["--family", "t", "shell"], "help\n")?;
    for command in [
        "put", "get", "slice", "scan", "explain", "compact", "files", "dump", "load", "check",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} in {out}"
        );
    }
    Ok(())
}

fn ok_with_stdin(dir: &Path, args: &[&str], stdin: &str) -> Result<String> {
    let output = cellar(dir).args(args).write_stdin(stdin).output()?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned().into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn errors_are_one_line_with_a_failing_exit_code() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    assert_eq!(
        fails(dir, &["get", "nope", "r"])?,
        "cellar: unknown column family \"nope\" (families: books)\n"
    );
    assert_eq!(
        fails(dir, &["get", "books", r"a\q"])?,
        "cellar: bad escape '\\q' in 'a\\q': write a byte as \\xNN (two hex digits)\n"
    );
    let missing = dir.join("missing");
    assert_eq!(
        fails(&missing, &["stats"])?,
        format!(
            "cellar: {} is not a cellar store: create one with `cellar --dir {} create --family NAME`\n",
            missing.display(),
            missing.display()
        )
    );
    Ok(())
}

#[test]
fn a_store_held_by_another_process_is_reported_as_locked() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    // A shell waiting on its stdin holds the store open; once it has
    // answered a command, it surely has the store.
    let mut holder = StdCommand::new(common::bin())
        .arg("--dir")
        .arg(dir)
        .arg("shell")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = holder.stdin.take().ok_or("no stdin")?;
    writeln!(stdin, "families")?;
    // The reader stays open: a shell whose output is gone stops, as any
    // filter does when its reader leaves.
    let mut answer = String::new();
    let mut reader = BufReader::new(holder.stdout.take().ok_or("no stdout")?);
    reader.read_line(&mut answer)?;
    assert!(answer.starts_with("family "), "{answer}");
    let output = cellar(dir).arg("stats").output()?;
    drop(stdin);
    holder.wait()?;
    drop(reader);
    assert_eq!(output.status.code(), Some(1));
    let locked = String::from_utf8(output.stderr).ok();
    assert_eq!(
        locked.ok_or("the store never looked locked")?,
        format!(
            "cellar: store {} is locked by another process or handle\n",
            dir.display()
        )
    );
    Ok(())
}

/// A family `t` of 3,000 rows `r0000`.. with one cell each, flushed.
fn long_store() -> Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let file = dir.join("rows.csv");
    let rows: String = (0..3000).map(|i| format!("r{i:04},c,value number {i},1\n")).collect();
    std::fs::write(&file, rows)?;
    ok(dir, &["load", "t", &file.display().to_string()])?;
    Ok(tmp)
}

#[test]
fn a_reader_that_stops_early_gets_no_error_and_no_panic() -> Result {
    let tmp = long_store()?;
    let dir = tmp.path().display().to_string();
    let bin = common::bin().display().to_string();
    // `| head -1`, with stderr apart and with stderr in the same pipe.
    for redirect in ["2>stderr.txt", "2>&1"] {
        let script = format!("set -o pipefail; '{bin}' --dir '{dir}' scan t {redirect} | head -1");
        let output = StdCommand::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(tmp.path())
            .output()?;
        assert_eq!(String::from_utf8(output.stdout)?, "ROW     COLUMN+CELL\n", "{redirect}");
        assert_eq!(output.status.code(), Some(0), "{redirect}");
    }
    assert_eq!(std::fs::read_to_string(tmp.path().join("stderr.txt"))?, "");
    Ok(())
}

#[test]
fn dir_naming_a_file_and_dump_naming_a_folder_are_said_plainly() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "mine")?;
    assert_eq!(
        fails(&file, &["--family", "t", "create"])?,
        format!(
            "cellar: {} is a file, not a folder: --dir names the folder of a store\n",
            file.display()
        )
    );
    let output = assert_cmd::Command::new(common::bin())
        .args(["dump", &tmp.path().display().to_string()])
        .output()?;
    assert_eq!(
        String::from_utf8(output.stderr)?,
        format!(
            "cellar: {} is a folder: give the path of a table file (<store>/<family>/<number>.sst)\n",
            tmp.path().display()
        )
    );
    Ok(())
}

#[test]
fn family_on_a_foreign_folder_is_refused_and_leaves_it_untouched() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::write(dir.join("thesis.tex"), "mine")?;
    assert_eq!(
        fails(dir, &["--family", "t", "create"])?,
        format!(
            "cellar: {} is not empty and holds no cellar store (no CURRENT file): give --dir a new or empty folder\n",
            dir.display()
        )
    );
    let names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    assert_eq!(names, ["thesis.tex"]);
    Ok(())
}

#[test]
fn stats_show_no_ratio_without_writes_and_the_store_write_amplification() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    let text = ok(dir, &["stats"])?;
    assert!(text.contains("write amplification*       -\n"), "{text}");
    assert!(
        text.ends_with(
            "log bytes written*: 0; store write amplification* (log + flushed + compacted) / user: -\n\
             * since this process opened the store; - where nothing was written\n"
        ),
        "{text}"
    );
    let json: Value = serde_json::from_str(&ok(dir, &["stats", "--json"])?)?;
    assert_eq!(json["write_amplification"], Value::Null);
    assert_eq!(json["families"][0]["write_amplification"], Value::Null);

    // A put in one process is flushed by the next open: one flush, counted.
    ok(dir, &["put", "t", "r", "c", "v", "--ts", "1"])?;
    let json: Value = serde_json::from_str(&ok(dir, &["stats", "--json"])?)?;
    let t = &json["families"][0];
    assert!(t["flush_bytes_written"].as_u64() > Some(0), "{t}");
    assert_eq!(t["flushes"], 1, "{t}");

    // In one process: 2 puts of 3 user bytes each, then a flush.
    let script = "put t r a 1 --ts 1\nput t r b 2 --ts 1\nflush\nstats --json\n";
    let out = common::shell(dir, &[], script)?.1;
    let json: Value = serde_json::from_str(out.lines().last().ok_or("no stats")?)?;
    let t = &json["families"][0];
    assert_eq!(t["user_bytes_written"], 6);
    let flushed = t["flush_bytes_written"].as_u64().ok_or("no flush bytes")?;
    assert!(flushed > 0);
    assert_eq!(t["write_amplification"].as_f64(), Some(flushed as f64 / 6.0));
    let log = json["log_bytes_written"].as_u64().ok_or("no log bytes")?;
    assert_eq!(json["write_amplification"].as_f64(), Some((log + flushed) as f64 / 6.0));
    Ok(())
}

#[test]
fn files_tell_a_slash_in_the_row_from_one_in_the_column() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["--family", "t", "put", "t", "a/b", "c", "v", "--ts", "1"])?;
    ok(dir, &["--family", "u", "put", "u", "a", "b/c", "v", "--ts", "1"])?;
    ok(dir, &["flush"])?;
    let files: Value = serde_json::from_str(&ok(dir, &["files", "--json"])?)?;
    assert_eq!(files[0]["first_key"], "a\\x2Fb/c@1");
    assert_eq!(files[1]["first_key"], "a/b/c@1");
    Ok(())
}

#[test]
fn a_switch_the_command_would_ignore_is_an_error() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    assert_eq!(
        fails(dir, &["flush", "--json"])?,
        "cellar: --json does not apply to `flush`\n"
    );
    assert_eq!(
        fails(dir, &["stats", "--human"])?,
        "cellar: --human does not apply to `stats`\n"
    );
    assert_eq!(
        fails(dir, &["keys", "--key", "field(order_id)"])?,
        "cellar: --dir does not apply to `keys`\n"
    );
    assert_eq!(
        common::cellar(dir)
            .args(["lesson", "layout", "--json"])
            .output()?
            .stderr,
        b"cellar: --json does not apply to `lesson layout`\n"
    );
    Ok(())
}

/// The global switches a help may list, as `--name`.
const GLOBAL_SWITCHES: &[&str] = &["--dir", "--family", "--json", "--human", "--time", "--read-only"];

#[test]
fn help_lists_only_the_switches_the_command_accepts() -> Result {
    let tmp = tempfile::tempdir()?;
    let help =
        |args: &[&str]| -> Result<Vec<&'static str>> { Ok(switches_listed(&ok(tmp.path(), args)?, GLOBAL_SWITCHES)) };
    // put refuses --json and --human (a switch it would ignore is an error): its help does not offer them.
    assert_eq!(
        help(&["put", "--help"])?,
        ["--dir", "--family", "--time", "--read-only"]
    );
    assert_eq!(
        help(&["get", "--help"])?,
        ["--dir", "--family", "--json", "--human", "--time", "--read-only"]
    );
    // The dumps read files, not a store; dump-manifest reads --dir's manifest without a FILE.
    assert_eq!(help(&["dump", "--help"])?, ["--human", "--time"]);
    assert_eq!(help(&["dump-manifest", "--help"])?, ["--dir", "--time"]);
    assert_eq!(help(&["keys", "--help"])?, ["--time"]);
    assert_eq!(help(&["repair", "--help"])?, ["--dir", "--time"]);
    assert_eq!(help(&["lesson", "--help"])?, ["--dir", "--json", "--time"]);
    assert_eq!(
        help(&["shell", "--help"])?,
        ["--dir", "--family", "--json", "--human", "--time", "--read-only"]
    );
    // cellar's own help lists every switch.
    assert_eq!(
        help(&["--help"])?,
        ["--dir", "--family", "--json", "--human", "--time", "--read-only"]
    );
    // Typed anyway, a switch is still refused by name.
    assert_eq!(
        fails(tmp.path(), &["put", "books", "b1", "title", "Dune", "--json"])?,
        "cellar: --json does not apply to `put`\n"
    );
    Ok(())
}

#[test]
fn get_versions_shows_the_versions_a_family_keeps_newest_first() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "m", "--max-versions", "3"])?;
    ok(dir, &["put", "m", "r", "c", "first", "--ts", "2024-06-01"])?;
    ok(
        dir,
        &["put", "m", "r", "c", "second", "--ts", "2024-06-01T00:00:00.001Z"],
    )?;
    assert_eq!(
        ok(dir, &["get", "m", "r", "c", "--versions", "2"])?,
        "ROW  COLUMN+CELL\n\
         \x20r   column=m:c, timestamp=1717200000001, value=second\n\
         \x20r   column=m:c, timestamp=1717200000000, value=first\n\
         2 cell(s)\n"
    );
    // Without --versions, the newest only; --versions 1 the same.
    assert_eq!(
        ok(dir, &["get", "m", "r", "c"])?,
        ok(dir, &["get", "m", "r", "c", "--versions", "1"])?
    );
    // A family that keeps one version has one to show.
    ok(dir, &["--family", "one", "put", "one", "r", "c", "first", "--ts", "1"])?;
    ok(dir, &["put", "one", "r", "c", "second", "--ts", "2"])?;
    assert!(ok(dir, &["get", "one", "r", "c", "--versions", "2"])?.ends_with("1 cell(s)\n"));
    Ok(())
}

#[test]
fn time_range_keeps_the_newest_versions_in_it() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "m", "--max-versions", "3"])?;
    for (row, column, ts) in [
        ("r1", "a", "10"),
        ("r1", "a", "20"),
        ("r1", "a", "30"),
        ("r1", "b", "15"),
        ("r2", "a", "25"),
    ] {
        ok(dir, &["put", "m", row, column, &format!("v{ts}"), "--ts", ts])?;
    }
    let values = |out: String| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split("value=").nth(1).map(String::from))
            .collect()
    };
    assert_eq!(
        values(ok(dir, &["get", "m", "r1", "--time-range", "10", "21"])?),
        ["v20", "v15"]
    );
    assert_eq!(
        values(ok(
            dir,
            &["get", "m", "r1", "a", "--time-range", "10", "31", "--versions", "3"]
        )?),
        ["v30", "v20", "v10"]
    );
    assert_eq!(
        values(ok(dir, &["slice", "m", "r1", "--time-range", "0", "12"])?),
        ["v10"]
    );
    assert_eq!(
        values(ok(dir, &["scan", "m", "--time-range", "20", "26"])?),
        ["v20", "v25"]
    );
    assert_eq!(
        fails(dir, &["get", "m", "r1", "--time-range", "5", "5"])?,
        "cellar: --time-range 5 5 is empty: FROM must be before TO\n"
    );
    Ok(())
}

#[test]
fn timestamps_are_milliseconds_or_iso_dates() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(
        dir,
        &[
            "--family",
            "t",
            "put",
            "t",
            "r",
            "c",
            "v",
            "--ts",
            "2024-03-02T11:15:00.123+01:00",
        ],
    )?;
    let json: Value = serde_json::from_str(&ok(dir, &["get", "t", "r", "--json"])?)?;
    assert_eq!(json[0]["timestamp"], 1_709_374_500_123u64);
    let output = cellar(dir)
        .args(["put", "t", "r", "c", "v", "--ts", "yesterday"])
        .output()?;
    assert_eq!(output.status.code(), Some(2), "a usage error, as clap reports them");
    let err = String::from_utf8(output.stderr)?;
    assert!(
        err.contains("is neither milliseconds since 1970 nor an ISO 8601 date"),
        "{err}"
    );
    Ok(())
}

#[test]
fn scan_keeps_the_named_columns_and_walks_backwards() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "t"])?;
    for (row, column) in [("a", "x"), ("a", "y"), ("b", "y"), ("c", "z"), ("d", "x")] {
        ok(dir, &["put", "t", row, column, &format!("{row}{column}"), "--ts", "1"])?;
    }
    let cells = |out: String| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split("value=").nth(1).map(String::from))
            .collect()
    };
    assert_eq!(cells(ok(dir, &["scan", "t", "--columns", "x,z"])?), ["ax", "cz", "dx"]);
    assert_eq!(
        cells(ok(dir, &["scan", "t", "--columns", "y", "--columns", "z"])?),
        ["ay", "by", "cz"]
    );
    assert_eq!(
        cells(ok(dir, &["scan", "t", "--reverse"])?),
        ["dx", "cz", "by", "ax", "ay"]
    );
    assert_eq!(
        cells(ok(dir, &["scan", "t", "--reverse", "--limit", "2"])?),
        ["dx", "cz"]
    );
    assert_eq!(
        cells(ok(dir, &["scan", "t", "--reverse", "--columns", "x", "--limit", "1"])?),
        ["dx"]
    );
    assert!(ok(dir, &["scan", "t", "--columns", "x", "--limit", "1"])?.ends_with("1 row(s)\n"));
    let err = fails(dir, &["explain", "scan", "t", "--reverse"])?;
    assert!(
        err.starts_with("cellar: explain traces one read of the engine"),
        "{err}"
    );
    Ok(())
}

#[test]
fn count_counts_rows_and_cells_in_a_range() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["put", "books", "book:2", "title", "Emma", "--ts", "1000"])?;
    ok(dir, &["put", "books", "magazine:1", "title", "Byte", "--ts", "1000"])?;
    assert_eq!(ok(dir, &["count", "books"])?, "3 row(s), 6 cell(s)\n");
    assert_eq!(
        ok(dir, &["count", "books", "--prefix", "book:"])?,
        "2 row(s), 5 cell(s)\n"
    );
    assert_eq!(
        ok(dir, &["count", "books", "--from", "book:2", "--json"])?,
        "{\"cells\":2,\"rows\":2}\n"
    );
    Ok(())
}

#[test]
fn create_with_options_and_families_lists_them() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "plain"])?;
    let events = "create --family events --max-versions 3 --ttl 7d --bloom-bits 0 --block-size 8192 --tail-copies \
                  --compression zstd:5 --compaction-trigger 0";
    let events: Vec<&str> = events.split_whitespace().collect();
    ok(dir, &events)?;
    assert_eq!(
        ok(dir, &["families"])?,
        "family  max versions  ttl  bloom bits  block size  tail copies  compression  compaction       settle at rest\n\
         plain              1  -            10        4096  off          none         leveled, 4 runs  1s idle, 256 MiB, 3%\n\
         events             3  7d            0        8192  on           zstd:5       leveled, off     1s idle, 256 MiB, 3%\n\
         2 families\n"
    );
    ok(dir, &["create", "--family", "sorted", "--compaction", "tiered"])?;
    assert!(
        ok(dir, &["families"])?
            .contains("sorted             1  -            10        4096  off          none         tiered, 4 runs   1s idle, 256 MiB, 3%\n"),
        "a size-tiered family says so"
    );
    let json: Value = serde_json::from_str(&ok(dir, &["families", "--json"])?)?;
    assert_eq!(json[1]["ttl_ms"], 7 * 86_400_000u64);
    assert_eq!(json[1]["compression"], "zstd:5");
    assert_eq!(
        (json[0]["compaction"].as_str(), json[2]["compaction"].as_str()),
        (Some("leveled"), Some("tiered"))
    );
    assert_eq!(
        json[2]["settle_when_idle"],
        serde_json::json!({"idle_ms": 1000, "min_bytes": 268_435_456u64, "min_above_percent": 3}),
        "the settle at rest, on by default for either strategy"
    );
    // A codec this build does not have is a usage error, as clap reports them.
    let output = cellar(dir)
        .args(["create", "--family", "x", "--compression", "snappy"])
        .output()?;
    let err = String::from_utf8(output.stderr)?;
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"snappy\" is not none, lz4, zstd or zstd:LEVEL (1 to 22)"),
        "{err}"
    );
    // The same options again are fine; other options are for `alter`.
    ok(dir, &events)?;
    let err = fails(dir, &["create", "--family", "events", "--max-versions", "2"])?;
    assert!(err.contains("already exists with other options"), "{err}");
    assert_eq!(
        fails(dir, &["create"])?,
        "cellar: create needs --family NAME (repeat it for several)\n"
    );
    Ok(())
}

#[test]
fn dump_narrows_to_a_range_of_rows_and_prints_bytes() -> Result {
    let tmp = long_store()?;
    let files: Value = serde_json::from_str(&ok(tmp.path(), &["files", "--json"])?)?;
    let path = files[0]["path"].as_str().ok_or("no path")?.to_string();
    let dump = |args: &[&str]| -> Result<String> {
        let output = assert_cmd::Command::new(common::bin())
            .arg("dump")
            .arg(&path)
            .args(args)
            .output()?;
        assert!(output.status.success(), "{output:?}");
        Ok(String::from_utf8(output.stdout)?)
    };
    let out = dump(&["--from", "r1000", "--to", "r1003"])?;
    let entries: Vec<&str> = out.lines().filter(|l| l.starts_with("  row=")).collect();
    assert_eq!(
        entries,
        [
            "  row=r1000 column=c timestamp=1 seq=1001 put value=value number 1000",
            "  row=r1001 column=c timestamp=1 seq=1002 put value=value number 1001",
            "  row=r1002 column=c timestamp=1 seq=1003 put value=value number 1002",
        ]
    );
    // Only the data block holding those rows is listed, then the others.
    assert_eq!(out.lines().filter(|l| l.contains(" data: offset")).count(), 1, "{out}");

    let out = dump(&["--limit", "1", "--hex"])?;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.get(2),
        Some(&"  row=r0000 column=c timestamp=1 seq=1 put value=value number 0")
    );
    // r0000 00 01 | c 00 01 | !1 (8 bytes) | !(1 << 8 | put = 1) (8 bytes)
    assert_eq!(
        lines.get(3),
        Some(&"    key 72303030300001630001FFFFFFFFFFFFFFFEFFFFFFFFFFFFFEFE value 76616C7565206E756D6265722030")
    );
    assert_eq!(lines.get(4), Some(&"  (--limit 1 reached)"));
    Ok(())
}

#[test]
fn time_prints_how_long_a_command_took_on_stderr() -> Result {
    let tmp = book_store()?;
    let output = cellar(tmp.path())
        .args(["get", "books", "book:1", "title", "--time"])
        .output()?;
    let stderr = String::from_utf8(output.stderr)?;
    assert!(
        stderr.starts_with("took ") && stderr.contains(" ms, plus ") && stderr.ends_with(" to open the store\n"),
        "{stderr}"
    );
    assert!(String::from_utf8(output.stdout)?.ends_with("1 cell(s)\n"));
    Ok(())
}

#[test]
fn lesson_query_first_json_lists_each_path_beside_its_filtering_scan() -> Result {
    let tmp = tempfile::tempdir()?;
    let out = common::cellar(tmp.path())
        .args(["--json", "lesson", "query-first"])
        .output()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(v["write_amplification"], 3.0);
    let paths = v["paths"].as_array().ok_or("no paths")?;
    assert_eq!(paths.len(), 6);
    for p in paths {
        let (layout, scan, returned) = (
            p["layout_entries_examined"].as_u64().ok_or("layout_entries_examined")?,
            p["scan_entries_examined"].as_u64().ok_or("scan_entries_examined")?,
            p["returned"].as_u64().ok_or("returned")?,
        );
        assert!(p["path"].is_string() && p["layout"].is_string(), "{p}");
        assert!(layout <= returned + 1, "{p}");
        assert!(scan >= 20_000, "{p}");
    }
    Ok(())
}

#[test]
fn lesson_query_first_exports_its_design_for_cassandra_and_hbase() -> Result {
    let tmp = tempfile::tempdir()?;
    let cql = ok(&tmp.path().join("cql"), &["lesson", "query-first", "--export", "cql"])?;
    assert!(
        cql.contains("PRIMARY KEY ((warehouse, day), shipped_at, order_id)"),
        "{cql}"
    );
    assert!(
        cql.contains("DELETE FROM orders_by_warehouse_day WHERE warehouse = 4 AND day = 20240401"),
        "{cql}"
    );
    assert_eq!(cql.matches("BEGIN BATCH").count(), 2);
    let hbase = ok(
        &tmp.path().join("hbase"),
        &["lesson", "query-first", "--export", "hbase"],
    )?;
    assert_eq!(hbase.matches("create '").count(), 5, "{hbase}");
    assert!(
        hbase.contains("delete 'orders_by_warehouse_day', \"00420240401\""),
        "{hbase}"
    );
    assert_eq!(
        fails(tmp.path(), &["lesson", "layout", "--export", "cql"])?,
        "cellar: --export does not apply to `lesson layout`\n"
    );
    Ok(())
}

#[test]
fn a_compressed_family_shows_its_codec_in_files_dump_and_explain() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "loans", "--compression", "lz4"])?;
    let file = dir.join("loans.csv");
    let rows: String = (0..40)
        .map(|i| format!("book:{i:02},member,member number {i} of the library,5\n"))
        .collect();
    std::fs::write(&file, rows)?;
    ok(dir, &["load", "loans", &file.display().to_string()])?;
    let files: Value = serde_json::from_str(&ok(dir, &["files", "--json"])?)?;
    assert_eq!(files[0]["compression"], "lz4");
    assert_eq!(files[0]["compressed_blocks"], 1);
    let (stored, raw) = (
        files[0]["data_bytes"].as_u64(),
        files[0]["uncompressed_data_bytes"].as_u64(),
    );
    assert!(stored < raw, "{stored:?} bytes stored for {raw:?} raw");

    let path = files[0]["path"].as_str().ok_or("no path")?.to_string();
    let output = assert_cmd::Command::new(common::bin())
        .args(["dump", &path, "--blocks-only"])
        .output()?;
    assert!(output.status.success());
    let dump = String::from_utf8(output.stdout)?;
    assert!(dump.contains("(lz4, "), "{dump}");
    assert!(
        dump.contains("compression: lz4, 1 of 1 data blocks stored compressed"),
        "{dump}"
    );

    let explain = ok(dir, &["explain", "get", "loans", "book:07", "member"])?;
    assert!(
        explain.contains("compression  cache hit/miss  decompressed"),
        "{explain}"
    );
    assert!(explain.contains("block cache: 0 hit(s), 1 miss(es)"), "{explain}");
    let json: Value = serde_json::from_str(&ok(dir, &["explain", "get", "loans", "book:07", "member", "--json"])?)?;
    assert_eq!(
        (json["cache_misses"].as_u64(), json["cache_hits"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(json["decompressed_bytes"], raw.map(|r| r - 5).ok_or("no size")?);
    Ok(())
}

/// A store whose log holds writes the tables do not: a shell's session,
/// flushed halfway. Returns the folder and the path of its log segment.
fn store_with_a_log() -> Result<(tempfile::TempDir, std::path::PathBuf)> {
    let tmp = tempfile::tempdir()?;
    let script = "put books book:1 title Dune --ts 1000\n\
                  delete books book:1 isbn --ts 1001\n\
                  flush\n\
                  put books book:3 title Emma --ts 1003\n\
                  delete-row books book:2 --ts 1004\n";
    cellar(tmp.path())
        .args(["--family", "books", "shell"])
        .write_stdin(script)
        .assert()
        .success();
    let log = std::fs::read_dir(tmp.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .ok_or("no log segment")?;
    Ok((tmp, log))
}

fn dump_file(command: &str, file: &Path) -> Result<(Option<i32>, String, String)> {
    let output = assert_cmd::Command::new(common::bin())
        .arg(command)
        .arg(file)
        .output()?;
    Ok((
        output.status.code(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
}

#[test]
fn dump_log_shows_each_batch_of_the_segment() -> Result {
    let (_tmp, log) = store_with_a_log()?;
    let (code, out, _) = dump_file("dump-log", &log)?;
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "record at 0 (31 bytes): 1 write(s) from sequence 3",
            "  books: row=book:3 column=title timestamp=1003 seq=3 put value=Emma",
            "record at 39 (22 bytes): 1 write(s) from sequence 4",
            "  books: row=book:2 column=* timestamp=1004 seq=4 delete-row",
        ]
    );
    // A flipped byte in the first record: reported, and the second still read.
    let mut bytes = std::fs::read(&log)?;
    *bytes.get_mut(20).ok_or("short log")? ^= 0xFF;
    std::fs::write(&log, bytes)?;
    let (code, out, err) = dump_file("dump-log", &log)?;
    assert_eq!(code, Some(1));
    assert!(out.contains("DAMAGED at 0 (39 bytes): checksum mismatch"), "{out}");
    assert!(
        out.contains("  books: row=book:2 column=* timestamp=1004 seq=4 delete-row"),
        "{out}"
    );
    assert_eq!(err, format!("cellar: {}: 1 damaged range(s)\n", log.display()));
    Ok(())
}

/// A record whose checksum is good but whose payload is not a write batch
/// (a format byte no cellar writes) is shown with the reason opening the
/// store refuses it for, and fails the command like any other damage.
#[test]
fn dump_log_shows_why_a_record_is_not_a_write_batch() -> Result {
    let (_tmp, log) = store_with_a_log()?;
    let mut bytes = std::fs::read(&log)?;
    let length = usize::try_from(u32::from_le_bytes(bytes[4..8].try_into()?))?;
    bytes[8 + 7] = 3; // the top byte of the first 8 payload bytes: the format
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[4..8 + length]);
    let crc = hasher.finalize().rotate_right(15).wrapping_add(0xa282_ead8);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&log, bytes)?;
    let (code, out, err) = dump_file("dump-log", &log)?;
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "DAMAGED record at 0 (31 bytes): not a write batch: unknown batch format (top byte of the first \
             sequence number)",
            "record at 39 (22 bytes): 1 write(s) from sequence 4",
            "  books: row=book:2 column=* timestamp=1004 seq=4 delete-row",
        ]
    );
    assert_eq!(err, format!("cellar: {}: 1 damaged range(s)\n", log.display()));
    Ok(())
}

#[test]
fn dump_manifest_shows_each_edit_group_and_the_state_they_build() -> Result {
    let (tmp, _) = store_with_a_log()?;
    let out = ok(tmp.path(), &["dump-manifest"])?;
    assert!(
        out.contains(
            "  add family 1 \"books\": max versions 1, ttl -, bloom bits 10, block size 4096, tail copies off, \
             compaction leveled, 4 runs, settle 1s idle, 256 MiB, 3%\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("  add to books: table 000005.sst, run 4, ") && out.contains("2 entries (1 tombstones)"),
        "{out}"
    );
    assert!(
        out.ends_with("  books (id 1): 1 table file(s), 286 bytes [000005.sst]; log from 000003.log\n"),
        "{out}"
    );
    Ok(())
}

#[test]
fn read_only_commands_work_beside_a_running_shell_and_write_nothing() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["flush"])?;
    // A shell holds the store, with a write only its log and memtable have.
    let mut holder = StdCommand::new(common::bin())
        .arg("--dir")
        .arg(dir)
        .arg("shell")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = holder.stdin.take().ok_or("no stdin")?;
    writeln!(stdin, "put books book:2 title Emma --ts 1000\nfamilies")?;
    let mut reader = BufReader::new(holder.stdout.take().ok_or("no stdout")?);
    let mut answer = String::new();
    reader.read_line(&mut answer)?;
    let listing = |dir: &Path| -> Result<Vec<(String, u64)>> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)?.chain(std::fs::read_dir(dir.join("books"))?) {
            let entry = entry?;
            files.push((entry.path().display().to_string(), entry.metadata()?.len()));
        }
        files.sort();
        Ok(files)
    };
    let before = listing(dir)?;
    let read = |args: &[&str]| -> Result<String> {
        let mut all = vec!["--read-only"];
        all.extend_from_slice(args);
        ok(dir, &all)
    };
    assert!(read(&["get", "books", "book:2"])?.contains("value=Emma"));
    assert!(read(&["scan", "books"])?.ends_with("2 row(s)\n"));
    assert!(read(&["explain", "get", "books", "book:1", "title"])?.contains("1 returned"));
    let stats = read(&["stats"])?;
    let memtable_entries = stats
        .lines()
        .find_map(|l| l.strip_prefix("memtable entries"))
        .map(str::trim);
    assert_eq!(memtable_entries, Some("1"), "{stats}");
    assert!(read(&["files"])?.ends_with("1 file(s)\n"));
    assert!(read(&["check"])?.ends_with("1 table file(s) checked, no damage\n"));
    assert_eq!(read(&["count", "books"])?, "2 row(s), 5 cell(s)\n");
    assert_eq!(
        fails(dir, &["--read-only", "put", "books", "book:3", "title", "Ulysses"])?,
        "cellar: `put` writes, and the store is open read-only\n"
    );
    // Opening for writing still finds the shell's lock.
    let locked = fails(dir, &["scan", "books"])?;
    assert!(locked.contains("is locked by another process"), "{locked}");
    assert_eq!(listing(dir)?, before, "the read-only commands wrote nothing");
    drop(stdin);
    holder.wait()?;
    drop(reader);
    Ok(())
}

#[test]
fn alter_changes_options_and_reads_see_them_at_once() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(
        dir,
        &["--family", "books", "put", "books", "b1", "title", "first", "--ts", "1"],
    )?;
    ok(dir, &["put", "books", "b1", "title", "second", "--ts", "2"])?;
    assert!(ok(dir, &["get", "books", "b1", "title", "--versions", "2"])?.ends_with("1 cell(s)\n"));
    assert_eq!(
        ok(dir, &["alter", "books", "--max-versions", "2", "--bloom-bits", "12"])?,
        "books: max versions 2, ttl -, bloom bits 12, block size 4096, tail copies off, compaction leveled, 4 runs, \
         settle 1s idle, 256 MiB, 3%\n"
    );
    // The older version was never compacted away: with 2 kept, it shows.
    assert!(ok(dir, &["get", "books", "b1", "title", "--versions", "2"])?.ends_with("2 cell(s)\n"));
    // The settle at rest: its own idle time, floor and percentage, then off;
    // the manifest keeps what was set.
    assert!(ok(dir, &["alter", "books", "--settle", "5s,64MiB,5%"])?.ends_with("settle 5s idle, 64 MiB, 5%\n"));
    assert!(ok(dir, &["families"])?.contains("5s idle, 64 MiB, 5%"));
    assert!(ok(dir, &["alter", "books", "--settle", "off"])?.ends_with("settle off\n"));
    let json: Value = serde_json::from_str(&ok(dir, &["families", "--json"])?)?;
    assert!(json[0]["settle_when_idle"].is_null(), "{json}");
    let refused = cellar(dir)
        .args(["alter", "books", "--settle", "5s,64MiB,0%"])
        .output()?;
    assert!(!refused.status.success(), "a settle at 0% is refused");
    // In a shell, on the open store.
    let (code, out, _) = common::shell(
        dir,
        &[],
        "alter books --max-versions 1\nget books b1 title --versions 2\n",
    )?;
    assert_eq!(code, Some(0));
    assert!(out.ends_with("1 cell(s)\n"), "{out}");
    Ok(())
}

#[test]
fn drop_family_and_truncate_ask_for_yes_then_delete() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    ok(dir, &["--family", "loans", "create", "--max-versions", "3"])?;
    ok(dir, &["put", "loans", "l1", "member", "m7", "--ts", "1"])?;
    ok(dir, &["flush"])?;
    assert_eq!(
        fails(dir, &["truncate", "loans"])?,
        "cellar: truncate loans deletes every cell of the family (its options stay), for good: add --yes to go ahead\n"
    );
    assert!(
        ok(dir, &["count", "loans"])?.starts_with("1 row(s)"),
        "nothing deleted without --yes"
    );
    assert_eq!(
        ok(dir, &["truncate", "loans", "--yes"])?,
        "truncated loans: 1 table file(s), 261 bytes, and its memtable deleted\n"
    );
    assert_eq!(ok(dir, &["count", "loans"])?, "0 row(s), 0 cell(s)\n");
    assert!(ok(dir, &["families"])?.contains("\nloans              3"));
    assert_eq!(
        fails(dir, &["drop-family", "books"])?,
        "cellar: drop-family books deletes the family and every cell in it, for good: add --yes to go ahead\n"
    );
    ok(dir, &["drop-family", "books", "--yes"])?;
    assert!(!dir.join("books").exists());
    assert_eq!(
        fails(dir, &["get", "books", "book:1"])?,
        "cellar: unknown column family \"books\" (families: loans)\n"
    );
    Ok(())
}

/// The `[default: ...]` that `cellar help create` prints beside `--OPTION`,
/// up to its first comma (`10, about 1% false positives` is `10`).
fn help_default<'a>(help: &'a str, option: &str) -> Option<&'a str> {
    let rest = help.get(help.find(&format!("{option} "))?..)?;
    let at = rest.find("[default: ")? + "[default: ".len();
    let value = rest.get(at..)?;
    value.split([',', ']']).next()
}

/// The help's defaults are written by hand beside each option: they must say
/// what a family created without options gets (the engine's
/// `FamilyOptions::default()`, as `families --json` prints it).
#[test]
fn create_help_states_the_defaults_a_new_family_gets() -> Result {
    let tmp = tempfile::tempdir()?;
    let help = ok(tmp.path(), &["help", "create"])?;
    ok(tmp.path(), &["--family", "plain", "create"])?;
    let families: Value = serde_json::from_str(&ok(tmp.path(), &["--json", "families"])?)?;
    let plain = &families[0];
    let number = |field: &str| plain[field].as_u64().map(|n| n.to_string());
    let expected = [
        ("--max-versions", number("max_versions")),
        ("--bloom-bits", number("bloom_bits_per_key")),
        ("--block-size", number("block_size")),
        ("--compaction-trigger", number("compaction_trigger")),
        ("--compaction", plain["compaction"].as_str().map(String::from)),
        ("--compression", plain["compression"].as_str().map(String::from)),
        ("--ttl", plain["ttl_ms"].is_null().then(|| "none".to_string())),
        (
            "--tail-copies",
            (plain["tail_copies"] == false).then(|| "off".to_string()),
        ),
    ];
    for (option, value) in expected {
        assert_eq!(
            help_default(&help, option),
            value.as_deref(),
            "`cellar help create`: the default of {option}"
        );
    }
    // The settle's default, written IDLE,FLOOR,PERCENT% as `--settle` takes it.
    let settle = &plain["settle_when_idle"];
    let (idle_ms, floor, percent) = (
        settle["idle_ms"].as_u64(),
        settle["min_bytes"].as_u64(),
        settle["min_above_percent"].as_u64(),
    );
    assert_eq!((idle_ms, floor, percent), (Some(1000), Some(256 << 20), Some(3)));
    assert!(help.contains("[default: 1s,256MiB,3%]"), "{help}");
    Ok(())
}

/// `alter` keeps every option it is not given, so its help must not print
/// the create defaults beside them (`--max-versions <N> ... [default: 1]`
/// reads as "not given: 1").
#[test]
fn alter_help_gives_no_default_for_the_options_it_leaves_alone() -> Result {
    let tmp = tempfile::tempdir()?;
    let help = ok(tmp.path(), &["help", "alter"])?;
    let with_default: Vec<&str> = help.lines().filter(|l| l.contains("[default: ")).collect();
    // --dir's default is real: the store folder.
    assert_eq!(with_default.len(), 1, "{with_default:#?}");
    Ok(())
}
