//! The `cellar` command given what its users get wrong, or what a crash
//! leaves: each input gets a clear error and a failing exit, or the answer
//! those users expect, never a silent empty answer or a misleading "damaged".

use std::path::{Path, PathBuf};

mod common;
use common::{book_store, cellar, fails, fails_without_dir, ok, shell, Result};

/// Runs a command that reads a file, not a store (no `--dir`); it must succeed.
fn ok_on_file(args: &[&str]) -> Result<String> {
    let output = assert_cmd::Command::new(common::bin()).args(args).output()?;
    if !output.status.success() {
        return Err(format!("cellar {args:?} failed: {}", String::from_utf8(output.stderr)?).into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// Every file under `dir` with its bytes, to check a command changed nothing.
fn contents(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(contents(&path)?);
        } else {
            files.push((path.clone(), std::fs::read(&path)?));
        }
    }
    files.sort();
    Ok(files)
}

#[test]
fn a_range_whose_from_is_not_before_its_to_is_refused() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let empty = "cellar: --from b --to a is empty: --from (inclusive) must sort before --to (exclusive), \
                 with --reverse too\n";
    // An HBase user gives a reversed scan its larger row first.
    assert_eq!(
        fails(dir, &["scan", "books", "--from", "b", "--to", "a", "--reverse"])?,
        empty
    );
    assert_eq!(fails(dir, &["scan", "books", "--from", "b", "--to", "a"])?, empty);
    assert_eq!(fails(dir, &["count", "books", "--from", "b", "--to", "a"])?, empty);
    assert_eq!(fails(dir, &["export", "books", "--from", "b", "--to", "a"])?, empty);
    assert_eq!(
        fails(dir, &["explain", "scan", "books", "--from", "b", "--to", "a"])?,
        empty
    );
    assert_eq!(
        fails(dir, &["slice", "books", "book:1", "--from", "b", "--to", "a"])?,
        empty
    );
    // `--from r --to r` is not "row r".
    assert!(fails(dir, &["scan", "books", "--from", "book:1", "--to", "book:1"])?
        .starts_with("cellar: --from book:1 --to book:1 is empty"));
    // In order, the same bounds read.
    assert_eq!(
        ok(dir, &["count", "books", "--from", "a", "--to", "c"])?,
        "1 row(s), 4 cell(s)\n"
    );
    Ok(())
}

#[test]
fn load_keeps_each_write_batch_small_in_bytes_too() -> Result {
    // Three cells of 3 MiB: one log record each. A batch counted in cells
    // only would hold all three, and a thousand such cells would be a batch
    // over the log's 256 MiB record limit, refused after every line checked.
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    ok(dir, &["create", "--family", "f"])?;
    let value = "v".repeat(3 << 20);
    let csv: String = (0..3).map(|i| format!("r{i},c,{value},5\n")).collect();
    let file = dir.join("big.csv");
    std::fs::write(&file, csv)?;
    let file_arg = file.to_str().ok_or("path")?;
    assert!(ok(dir, &["load", "f", file_arg])?.starts_with("loaded 3 cell(s) into f"));
    let log = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "log") && p.metadata().is_ok_and(|m| m.len() > 0))
        .ok_or("no log segment with the load")?;
    let dump = ok_on_file(&["dump-log", log.to_str().ok_or("path")?])?;
    let batches: Vec<&str> = dump.lines().filter(|l| l.starts_with("record at ")).collect();
    assert_eq!(batches.len(), 3, "{batches:?}");
    assert!(
        batches.iter().all(|b| b.contains(" 1 write(s) from sequence ")),
        "{batches:?}"
    );
    Ok(())
}

/// A store whose newest log segment holds two writes; the segment's path.
fn store_with_two_logged_writes() -> Result<(tempfile::TempDir, PathBuf)> {
    let tmp = tempfile::tempdir()?;
    let (code, _, stderr) = shell(
        tmp.path(),
        &["--family", "books"],
        "put books b1 title Dune --ts 1\nput books b2 title Emma --ts 2\n",
    )?;
    assert_eq!(code, Some(0), "{stderr}");
    let log = std::fs::read_dir(tmp.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "log") && p.metadata().is_ok_and(|m| m.len() > 0))
        .ok_or("no log segment")?;
    Ok((tmp, log))
}

#[test]
fn dump_log_calls_a_cut_last_record_of_the_newest_segment_a_torn_tail() -> Result {
    let (tmp, log) = store_with_two_logged_writes()?;
    let bytes = std::fs::read(&log)?;
    // A crash in the middle of the second write.
    std::fs::write(&log, bytes.get(..bytes.len() - 5).ok_or("short log")?)?;
    let dump = ok_on_file(&["dump-log", log.to_str().ok_or("path")?])?;
    assert!(
        dump.ends_with(
            "torn tail at 34 (29 bytes): record of 26 bytes cut short: 21 bytes left in the file: \
             the end of an interrupted write, which opening drops\n"
        ),
        "{dump}"
    );
    // As opening judges it: the store opens without the unacknowledged write.
    let rows = ok(tmp.path(), &["--read-only", "count", "books"])?;
    assert_eq!(rows, "1 row(s), 1 cell(s)\n");
    Ok(())
}

#[test]
fn dump_manifest_calls_a_cut_last_record_a_torn_tail() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let manifest = dir.join(std::fs::read_to_string(dir.join("CURRENT"))?.trim_end());
    // A crash while appending an edit: the first bytes of its header.
    let mut bytes = std::fs::read(&manifest)?;
    let end = bytes.len();
    bytes.extend_from_slice(&[0x11, 0x22, 0x33, 0x44, 0x55]);
    std::fs::write(&manifest, bytes)?;
    let dump = ok(dir, &["dump-manifest"])?;
    assert!(
        dump.contains(&format!(
            "\ntorn tail at {end} (5 bytes): header cut short: 5 of 8 bytes: \
             the end of an interrupted write, which opening drops\n"
        )),
        "{dump}"
    );
    // As opening judges it.
    assert_eq!(ok(dir, &["--read-only", "count", "books"])?, "1 row(s), 4 cell(s)\n");
    Ok(())
}

#[test]
fn repair_of_a_folder_without_a_store_leaves_it_as_it_was() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::write(dir.join("notes.txt"), "not a store")?;
    let before = contents(dir)?;
    assert_eq!(
        fails(dir, &["repair"])?,
        format!("cellar: {} is not a cellar store (no CURRENT file)\n", dir.display())
    );
    assert_eq!(contents(dir)?, before, "no LOCK file left behind");
    Ok(())
}

#[test]
fn a_script_line_that_is_not_utf8_fails_alone() -> Result {
    let tmp = book_store()?;
    let mut script = b"get books \xFF\n".to_vec();
    script.extend_from_slice(b"get books book:1 title\r\n");
    let output = cellar(tmp.path()).arg("shell").write_stdin(script).output()?;
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr)?,
        "cellar: line 1 is not UTF-8 text: write such bytes as \\xNN escapes\n\
         cellar: 1 command(s) failed\n"
    );
    // The next line still ran (its CR LF ending read as a line end).
    assert_eq!(
        String::from_utf8(output.stdout)?,
        "ROW      COLUMN+CELL\n book:1  column=books:title, timestamp=1000, value=Dune\n1 cell(s)\n"
    );
    Ok(())
}

#[test]
fn human_with_json_is_refused_rather_than_ignored() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let refused = "cellar: --human does not apply with --json: JSON timestamps are milliseconds, for scripts\n";
    assert_eq!(fails(dir, &["get", "books", "book:1", "--json", "--human"])?, refused);
    assert_eq!(fails(dir, &["--json", "--human", "scan", "books"])?, refused);
    let (code, stdout, stderr) = shell(dir, &["--json"], "get books book:1 title --human\n")?;
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert_eq!(stderr, format!("{refused}cellar: 1 command(s) failed\n"));
    Ok(())
}

#[test]
fn a_negative_number_is_a_value_not_a_switch() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    // As the HBase shell's put 'books', 'book:1', 'stock', '-5'.
    ok(dir, &["put", "books", "book:1", "stock", "-5", "--ts", "1000"])?;
    ok(dir, &["put", "books", "-1", "-2", "-3.5", "--ts", "1000"])?;
    assert_eq!(
        ok(dir, &["get", "books", "book:1", "stock"])?,
        "ROW      COLUMN+CELL\n book:1  column=books:stock, timestamp=1000, value=-5\n1 cell(s)\n"
    );
    assert_eq!(
        ok(dir, &["scan", "books", "--from", "-1", "--to", "-2"])?,
        "ROW  COLUMN+CELL\n -1  column=books:-2, timestamp=1000, value=-3.5\n1 row(s)\n"
    );
    // A negative number where a count or a timestamp goes says what is wrong with it.
    let output = cellar(dir).args(["scan", "books", "--limit", "-1"]).output()?;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr)?;
    assert!(
        stderr.starts_with("error: invalid value '-1' for '--limit <LIMIT>'"),
        "{stderr}"
    );
    let output = cellar(dir)
        .args(["put", "books", "r", "c", "v", "--ts", "-1"])
        .output()?;
    let stderr = String::from_utf8(output.stderr)?;
    assert!(
        stderr.starts_with("error: invalid value '-1' for '--ts <TS>': timestamp \"-1\" is neither"),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn an_unknown_family_is_named_with_the_families_there_are() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let unknown = "cellar: unknown column family \"loans\" (families: books)\n";
    assert_eq!(fails(dir, &["load", "loans", "cells.csv"])?, unknown);
    assert_eq!(fails(dir, &["alter", "loans", "--max-versions", "2"])?, unknown);
    assert_eq!(fails(dir, &["drop-family", "loans", "--yes"])?, unknown);
    assert_eq!(fails(dir, &["truncate", "loans", "--yes"])?, unknown);
    Ok(())
}

/// The interactive prompt on a pseudo-terminal: each line is typed after the
/// prompt before it has appeared, as a person types.
#[cfg(unix)]
mod terminal {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::common::{self, book_store, Result};

    /// A new pseudo-terminal: (the side a test reads and writes, the side the shell gets).
    fn open_pty() -> Result<(OwnedFd, OwnedFd)> {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two descriptors into the integers it is
        // given; the name, termios and window size are optional (null).
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: both descriptors were just opened and are owned by no one else.
        Ok(unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) })
    }

    /// What the shell printed until its `n`-th prompt (or it ended).
    fn until_prompt(output: &mpsc::Receiver<Vec<u8>>, seen: &mut String, n: usize) -> Result<()> {
        while seen.matches("cellar> ").count() < n {
            let chunk = output
                .recv_timeout(Duration::from_secs(20))
                .map_err(|_| format!("no prompt {n}; the shell printed: {seen:?}"))?;
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        Ok(())
    }

    #[test]
    fn on_a_terminal_a_line_that_is_not_utf8_fails_alone() -> Result {
        let tmp = book_store()?;
        let (master, slave) = open_pty()?;
        let mut shell = std::process::Command::new(common::bin())
            .arg("--dir")
            .arg(tmp.path())
            .arg("shell")
            .env("HOME", tmp.path()) // the history file goes there
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave))
            .spawn()?;
        let mut typing = std::fs::File::from(master);
        let mut reading = typing.try_clone()?;
        let (send, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0; 4096];
            // Ends with an error (EIO) once the shell has exited.
            while let Ok(n @ 1..) = reading.read(&mut buf) {
                if send.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut seen = String::new();
        until_prompt(&output, &mut seen, 1)?;
        typing.write_all(b"get books \xFF\r")?;
        until_prompt(&output, &mut seen, 2)?;
        assert!(
            seen.contains("cellar: the line is not UTF-8 text: write such bytes as \\xNN escapes\r\n"),
            "{seen:?}"
        );
        typing.write_all(b"get books book:1 title\r")?;
        until_prompt(&output, &mut seen, 3)?;
        assert!(
            seen.contains(" book:1  column=books:title, timestamp=1000, value=Dune\r\n1 cell(s)\r\n"),
            "{seen:?}"
        );
        typing.write_all(b"\x04")?; // Ctrl-D: end of input
        assert_eq!(shell.wait()?.code(), Some(1), "one line failed");
        Ok(())
    }
}

#[test]
fn a_report_that_cannot_be_written_is_refused_before_the_work() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let nowhere = dir.join("no-such-folder").join("page.html");
    let nowhere = nowhere.to_str().ok_or("path")?;
    let refused = format!(
        "cellar: {nowhere}: folder {} does not exist: --report writes a file, not its folder\n",
        dir.join("no-such-folder").display()
    );
    // Nothing printed first: the answer and the failure never mix.
    assert_eq!(fails(dir, &["files", "--report", nowhere])?, refused);
    assert_eq!(
        fails(dir, &["explain", "get", "books", "book:1", "--report", nowhere])?,
        refused
    );
    // The lesson does not run for nothing (it takes seconds).
    let output = cellar(dir)
        .args(["lesson", "append-only", "--report", nowhere])
        .output()?;
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8(output.stdout)?, "");
    assert_eq!(String::from_utf8(output.stderr)?, refused);
    // Nor does the row-key simulation.
    let output = assert_cmd::Command::new(common::bin())
        .args(["keys", "--key", "field(customer)", "--report", nowhere])
        .output()?;
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8(output.stdout)?, "");
    assert_eq!(String::from_utf8(output.stderr)?, refused);
    let folder = dir.to_str().ok_or("path")?;
    assert_eq!(
        fails(dir, &["files", "--report", folder])?,
        format!("cellar: {folder} is a folder: --report names the HTML file to write\n")
    );
    Ok(())
}

#[test]
fn a_missing_table_file_is_named_alike_by_a_read_only_open() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let table = std::fs::read_dir(dir.join("books"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .ok_or("no table file")?;
    std::fs::remove_file(&table)?;
    let missing = format!(
        "cellar: corruption in {} at offset 0: table file listed in the manifest is missing; the store does \
         not open: `cellar --dir {} repair` rebuilds it from its table files and log, keeping what it cannot \
         read in its lost/ folder\n",
        table.display(),
        dir.display()
    );
    // Was an I/O error on a `.sst.pending` file that never existed, without the way out.
    assert_eq!(fails(dir, &["--read-only", "check"])?, missing);
    assert_eq!(fails(dir, &["check"])?, missing);
    Ok(())
}

#[test]
fn a_read_in_a_folder_without_a_store_says_so_without_advice_to_create() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::write(dir.join("thesis.tex"), "mine")?;
    let not_a_store = format!("cellar: {} is not a cellar store (no CURRENT file)\n", dir.display());
    // Was "... give --dir a new or empty folder", advice for creating a store.
    assert_eq!(fails(dir, &["get", "books", "book:1"])?, not_a_store);
    assert_eq!(fails(dir, &["--read-only", "scan", "books"])?, not_a_store);
    assert_eq!(fails(dir, &["stats"])?, not_a_store);
    Ok(())
}

#[test]
fn load_from_a_pipe_writes_what_it_checked() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let output = cellar(dir)
        .args(["load", "books", "/dev/stdin"])
        .write_stdin("book:2,title,Emma,2000\nbook:3,title,Kim,2000\n")
        .output()?;
    assert_eq!(
        String::from_utf8(output.stdout)?,
        "loaded 2 cell(s) into books from /dev/stdin\n"
    );
    // Was "loaded 2 cell(s)" and nothing written: the second pass found the pipe empty.
    assert_eq!(ok(dir, &["count", "books"])?, "3 row(s), 6 cell(s)\n");
    assert_eq!(
        fails(dir, &["load", "books", "-"])?,
        "cellar: -: No such file or directory (os error 2) (for stdin, give /dev/stdin)\n"
    );
    Ok(())
}

#[test]
fn keys_refuses_a_pad_wider_than_it_designs_rather_than_cutting_it() -> Result {
    let tmp = tempfile::tempdir()?;
    let output = assert_cmd::Command::new(common::bin())
        .args(["keys", "--key", "pad(customer,100)", "--writes", "10"])
        .current_dir(tmp.path())
        .output()?;
    // Was a report on pad(customer,64), the key the user did not write.
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8(output.stdout)?, "");
    assert_eq!(
        String::from_utf8(output.stderr)?,
        "cellar: key syntax error at offset 0: pad width 100 is over 64\n"
    );
    let widest = ok_on_file(&["keys", "--key", "pad(customer,64)", "--writes", "10"])?;
    assert!(widest.starts_with("key: pad(customer,64)\n"), "{widest}");
    Ok(())
}

#[test]
fn keys_says_why_a_span_is_refused() -> Result {
    let refused = |span: &str| fails_without_dir(&["keys", "--key", "field(customer)", "--span", span]);
    // `--span` is read as every duration argument is (`--ttl`'s rules and
    // words): the first two were a bare `invalid --span "0s"`, the third
    // was told to "use 90s, 30m, 1h or 2d" (its number is past 64 bits),
    // the last was taken as milliseconds where `--ttl` refuses it.
    for (span, said) in [
        ("0s", "is zero"),
        ("99999999999999999d", "is over 64 bits of milliseconds"),
        ("99999999999999999999s", "is over 64 bits of milliseconds"),
        ("3600000", ": write a number and a unit, as 90s, 30m, 12h or 7d"),
    ] {
        let space = if said.starts_with(':') { "" } else { " " };
        assert_eq!(
            refused(span)?,
            format!("cellar: invalid --span: duration {span:?}{space}{said}\n")
        );
    }
    Ok(())
}

#[cfg(target_os = "linux")]
#[test]
fn help_that_cannot_be_written_is_a_failure() -> Result {
    for args in [
        &["--help"][..],
        &["--version"],
        &["scan", "--help"],
        &["--dir", "x", "files"],
    ] {
        let output = std::process::Command::new(common::bin())
            .args(args)
            .current_dir(std::env::temp_dir())
            .stdout(std::fs::File::create("/dev/full")?)
            .output()?;
        // --help and --version exited 0 having written nothing.
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(output.stderr)?;
        assert!(
            stderr == "cellar: No space left on device (os error 28)\n"
                || stderr.starts_with("cellar: x is not a cellar store"),
            "{args:?}: {stderr}"
        );
    }
    Ok(())
}

/// A `--dir` below a file: it was "I/O error on F/store: File exists (os
/// error 17)", naming the folder to make and the wrong error (the file is
/// what exists, and it is not a folder).
#[test]
fn a_store_folder_below_a_file_names_the_file() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "not a folder")?;
    let dir = file.join("store");
    assert_eq!(
        fails(&dir, &["create", "--family", "books"])?,
        format!(
            "cellar: I/O error on {}: {} is a file, not a folder\n",
            dir.display(),
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file)?, "not a folder");
    Ok(())
}

/// A manifest with no record does not open (the first record is the
/// snapshot a store starts it with); `dump-manifest` said it was fine, with
/// an empty state.
#[test]
fn dump_manifest_of_a_manifest_without_records_fails_as_opening_does() -> Result {
    let tmp = book_store()?;
    let dir = tmp.path();
    let manifest = dir.join(std::fs::read_to_string(dir.join("CURRENT"))?.trim_end());
    let refused = format!(
        "cellar: {}: the manifest holds no records: it starts with a snapshot of the store, so a store \
         does not open without one\n",
        manifest.display()
    );
    // Emptied, and cut inside its first record (a torn tail and nothing else).
    let bytes = std::fs::read(&manifest)?;
    for cut in [0, 5] {
        std::fs::write(&manifest, bytes.get(..cut).ok_or("short manifest")?)?;
        assert_eq!(fails(dir, &["dump-manifest"])?, refused, "cut at {cut}");
        assert!(fails(dir, &["--read-only", "count", "books"])?.contains("the manifest holds no records"));
    }
    Ok(())
}

/// A table file given to the log or manifest dump: each read it as one
/// record cut short, "the end of an interrupted write, which opening drops",
/// and succeeded.
#[test]
fn dump_log_and_dump_manifest_refuse_a_table_file_and_name_the_dump_for_it() -> Result {
    let tmp = book_store()?;
    ok(tmp.path(), &["flush"])?;
    let table = std::fs::read_dir(tmp.path().join("books"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .ok_or("no table file")?;
    let path = table.to_str().ok_or("path")?;
    for (command, what) in [("dump-log", "a log segment"), ("dump-manifest", "a manifest")] {
        assert_eq!(
            fails_without_dir(&[command, path])?,
            format!("cellar: {path} is a cellar table file, not {what}: `cellar dump {path}` decodes it\n")
        );
    }
    Ok(())
}

/// `--flush-rows 0` and `--max-rows 0` were taken as 1, and the report
/// said "flush 1 rows": a setting the user did not give.
#[test]
fn keys_refuses_a_region_size_of_zero_rows_rather_than_taking_one() -> Result {
    for (switch, policy) in [
        ("--flush-rows", "stepping"),
        ("--max-rows", "constant"),
        ("--max-rows", "bigtable"),
    ] {
        let args = [
            "keys",
            "--key",
            "field(customer)",
            "--writes",
            "10",
            "--policy",
            policy,
            switch,
            "0",
        ];
        assert_eq!(
            fails_without_dir(&args)?,
            "cellar: invalid setting: flush and split sizes must be at least 1 row\n",
            "{switch} {policy}"
        );
    }
    Ok(())
}

/// `--partition-parts` past the key's value parts was taken as "the whole
/// key", and the report went on with a partition key the user did not give.
#[test]
fn keys_refuses_more_partition_parts_than_the_key_has() -> Result {
    let key = "field(customer) \"#\" field(order_id)";
    let hashed = [
        "keys",
        "--key",
        key,
        "--writes",
        "10",
        "--store",
        "hashed",
        "--partition-parts",
    ];
    assert_eq!(
        fails_without_dir(&[&hashed[..], &["3"]].concat())?,
        "cellar: invalid setting: the partition key is the first 3 value parts, and the key has 2\n"
    );
    let whole = ok_on_file(&[&hashed[..], &["2"]].concat())?;
    assert!(whole.starts_with(&format!("key: {key} |\n")), "{whole}");
    Ok(())
}

/// `--dir` naming a file: the store commands said "FILE is a file, not a
/// folder"; `dump-manifest` said "I/O error on FILE/CURRENT: Not a
/// directory (os error 20)" and `repair` "FILE is not a cellar store (no
/// CURRENT file)".
#[test]
fn every_command_that_takes_dir_says_alike_that_it_names_a_file() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "not a store")?;
    let said = format!(
        "cellar: {} is a file, not a folder: --dir names the folder of a store\n",
        file.display()
    );
    for args in [&["get", "books", "r"][..], &["dump-manifest"], &["repair"]] {
        assert_eq!(fails(&file, args)?, said, "{args:?}");
    }
    assert_eq!(std::fs::read_to_string(&file)?, "not a store");
    Ok(())
}

/// `lesson --dir` naming a file said "F/append-only: Not a directory (os
/// error 20)"; and `lesson all` whose third lesson's folder was not empty
/// ran the first two lessons (and left their stores) before refusing.
#[test]
fn lesson_checks_every_folder_it_will_build_in_before_it_starts() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "not a folder")?;
    assert_eq!(
        fails(&file, &["lesson", "append-only"])?,
        format!(
            "cellar: {} is a file, not a folder: --dir names the folder the lesson stores are kept in\n",
            file.display()
        )
    );
    let kept = tmp.path().join("kept");
    std::fs::create_dir_all(kept.join("layout"))?;
    std::fs::write(kept.join("layout").join("old.txt"), "an earlier run")?;
    assert_eq!(
        fails(&kept, &["lesson", "all"])?,
        format!(
            "cellar: {} is not empty: a store built to be measured needs an empty folder\n",
            kept.join("layout").display()
        )
    );
    let mut left: Vec<String> = std::fs::read_dir(&kept)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    left.sort();
    assert_eq!(left, ["layout"], "no lesson ran");
    Ok(())
}

/// A byte argument that is not UTF-8 (a shell's `$'\xff'`) was clap's
/// "invalid UTF-8 was detected in one or more arguments", which does not
/// say how to write the byte; the shell's lines already did.
#[cfg(unix)]
#[test]
fn an_argument_that_is_not_utf8_says_how_to_write_its_bytes() -> Result {
    use std::os::unix::ffi::OsStrExt;
    let tmp = book_store()?;
    let row = std::ffi::OsStr::from_bytes(b"book\xFF");
    let output = cellar(tmp.path()).args(["get", "books"]).arg(row).output()?;
    assert_eq!(output.status.code(), Some(2), "a usage error");
    assert_eq!(String::from_utf8(output.stdout)?, "");
    assert_eq!(
        String::from_utf8(output.stderr)?,
        "cellar: an argument is not UTF-8 text: write such bytes as \\xNN escapes (book\\xFF)\n"
    );
    Ok(())
}

/// A lesson's folder that is a file, not a folder holding something: the
/// check before the lessons called it "not empty", which sends the reader
/// looking for files inside it.
#[test]
fn lesson_names_a_lesson_folder_that_is_a_file() -> Result {
    let tmp = tempfile::tempdir()?;
    let kept = tmp.path().join("kept");
    std::fs::create_dir(&kept)?;
    let layout = kept.join("layout");
    std::fs::write(&layout, "a file")?;
    assert_eq!(
        fails(&kept, &["lesson", "layout"])?,
        format!(
            "cellar: {} is a file, not a folder: a store built to be measured needs an empty folder\n",
            layout.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&layout)?, "a file");
    Ok(())
}
