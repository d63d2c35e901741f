//! Bad input a store meets outside its own API: a folder that is not a store,
//! a table file from a newer cellar, stray and empty files in its folders, a
//! folder it may not write, a full disk. Each gets a clear error (or, for
//! harmless strays, no error at all), and nothing acknowledged is lost.
//!
//! (Bad family names, oversized keys and values, unknown families and a
//! second open of the same store are in `recovery.rs`.)
#![expect(
    clippy::unwrap_used,
    reason = "a test may panic on a broken invariant: that is a failed test"
)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use cellar_engine::{Error, FamilyOptions, RowRange, Store, StoreOptions, SyncPolicy};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn options() -> StoreOptions {
    StoreOptions::default()
        .sync(SyncPolicy::Always)
        .family_with("f", FamilyOptions::default().compaction_trigger(0))
}

fn value_of(store: &Store, row: &str) -> Option<String> {
    store
        .get("f", row, "c")
        .unwrap()
        .map(|c| String::from_utf8_lossy(&c.value).into_owned())
}

/// Writes rows `from..to` (`row{i}` = `value{i}`).
fn write_rows(store: &Store, from: usize, to: usize) {
    for i in from..to {
        store.put("f", format!("row{i:05}"), "c", format!("value{i}")).unwrap();
    }
}

/// Rows `0..n` are all there, with their values, and nothing else.
fn assert_rows(store: &Store, n: usize) {
    for i in 0..n {
        assert_eq!(
            value_of(store, &format!("row{i:05}")),
            Some(format!("value{i}")),
            "row {i}"
        );
    }
    let rows = store.scan("f", &RowRange::all()).unwrap().count();
    assert_eq!(rows, n);
}

#[test]
fn a_folder_without_a_store_is_not_a_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), "not a store")?;
    let refused = Store::open(dir.path(), options().create_if_missing(false));
    assert!(
        matches!(&refused, Err(Error::NotAStore { dir: d }) if d == dir.path()),
        "{:?}",
        refused.err()
    );
    let missing = dir.path().join("missing");
    let refused = Store::open(&missing, options().create_if_missing(false));
    assert!(
        matches!(&refused, Err(Error::NotAStore { dir: d }) if *d == missing),
        "{:?}",
        refused.err()
    );
    assert!(!missing.exists(), "a refused open creates nothing");
    // A file where the store folder should be is not a store either.
    let file = dir.path().join("notes.txt");
    let refused = Store::open(&file, options());
    assert!(matches!(&refused, Err(Error::NotAStore { .. })), "{:?}", refused.err());
    Ok(())
}

#[test]
fn a_table_of_a_future_format_version_is_unsupported_on_open() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), options())?;
        write_rows(&store, 0, 10);
        store.flush()?;
    }
    let table = std::fs::read_dir(dir.path().join("f"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .expect("a table file");
    // The format version is the u32 at 12 bytes from the end (footer: ... version u32 | magic u64).
    let mut bytes = std::fs::read(&table)?;
    let at = bytes.len() - 12;
    bytes[at..at + 4].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&table, &bytes)?;
    match Store::open(dir.path(), options()) {
        Err(Error::UnsupportedVersion { file, found, supported }) => {
            assert_eq!((file, found, supported), (table, 7, cellar_sstable::FORMAT_VERSION));
        }
        other => panic!("expected UnsupportedVersion, got {:?}", other.err()),
    }
    Ok(())
}

#[test]
fn stray_and_empty_files_in_the_store_folders_are_left_alone() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), options())?;
        write_rows(&store, 0, 50);
        store.flush()?;
        write_rows(&store, 50, 80); // still in the log
    }
    let family = dir.path().join("f");
    // Strays the engine does not name: a note, a non-numbered table, a folder.
    std::fs::write(dir.path().join("notes.txt"), "hello")?;
    std::fs::write(dir.path().join("junk.sst"), "garbage")?;
    std::fs::write(dir.path().join("MANIFEST-notes"), "garbage")?;
    std::fs::create_dir(dir.path().join("backup"))?;
    std::fs::write(family.join("notes.txt"), "hello")?;
    std::fs::write(family.join("junk.sst"), "garbage")?;
    std::fs::write(family.join("000001.sst.bak"), "garbage")?;
    // An empty log segment is a valid log with no records (a crash right
    // after a rotation created it). Numbered above every file, it must also
    // keep the next file numbers from reusing its number.
    std::fs::write(dir.path().join("000999.log"), "")?;
    for round in 0..2 {
        let store = Store::open(dir.path(), options())?;
        assert_rows(&store, 80 + round * 20);
        write_rows(&store, 80 + round * 20, 100 + round * 20);
        store.flush()?;
        assert_rows(&store, 100 + round * 20);
        store.verify()?;
    }
    let store = Store::open(dir.path(), options())?;
    assert_rows(&store, 120);
    // The strays are still there: the engine deletes only files it names.
    for stray in [
        "notes.txt",
        "junk.sst",
        "MANIFEST-notes",
        "f/notes.txt",
        "f/junk.sst",
        "f/000001.sst.bak",
    ] {
        assert!(dir.path().join(stray).exists(), "{stray} was deleted");
    }
    Ok(())
}

#[test]
fn a_read_only_store_folder_refuses_to_open_and_loses_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let store = Store::open(dir.path(), options())?;
        write_rows(&store, 0, 30);
    }
    let set_mode = |mode: u32| std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode));
    set_mode(0o555)?;
    // Root (as in CI containers) ignores the mode bits. Then the folder is made
    // immutable instead (`chattr +i`), which binds root too; without chattr
    // (or on a file system without the flag) the test is skipped.
    let probe = dir.path().join("probe");
    let mut _immutable = None;
    if std::fs::write(&probe, "x").is_ok() {
        let _ = std::fs::remove_file(&probe);
        set_mode(0o755)?;
        match Immutable::set(dir.path()) {
            Some(guard) => _immutable = Some(guard),
            None => {
                println!("skipped: this process can write a 0o555 folder and chattr +i is unavailable");
                return Ok(());
            }
        }
    }
    let refused = Store::open(dir.path(), options());
    drop(_immutable);
    set_mode(0o755)?;
    assert!(matches!(&refused, Err(Error::Io { .. })), "{:?}", refused.err());
    let store = Store::open(dir.path(), options())?;
    assert_rows(&store, 30);
    Ok(())
}

/// `chattr +i` on a folder for as long as the guard lives: no entry can be
/// created, removed or renamed in it, even by root.
struct Immutable(std::path::PathBuf);

impl Immutable {
    fn set(dir: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        let guard = Immutable(dir.to_path_buf());
        // The flag must really bind this process, or the test proves nothing.
        let probe = dir.join("probe");
        if !ok || std::fs::write(&probe, "x").is_ok() {
            let _ = std::fs::remove_file(&probe);
            return None; // the guard's drop clears the flag if it was set
        }
        Some(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

// ----------------------------------------------------------------- full disk

const FULL_DISK_CHILD_DIR: &str = "CELLAR_FULL_DISK_CHILD_DIR";
const FULL_DISK_TEST: &str = "a_full_disk_fails_the_write_cleanly_and_keeps_what_was_acknowledged";
/// The child's file size limit: the log segment reaches it after ~200 writes.
const FILE_SIZE_LIMIT: u64 = 200 * 1024;

/// The child: a file size limit (as a full disk would), SIGXFSZ ignored so
/// the write returns `EFBIG` instead of killing the process, then writes of
/// 1 KiB until one fails. Prints `ACK i` after each write, then the error.
fn full_disk_child(dir: &Path) -> TestResult {
    // SAFETY: plain libc calls with valid arguments, in a process of one thread
    // of ours (the test harness runs only this test in the child).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: FILE_SIZE_LIMIT as libc::rlim_t,
            rlim_max: FILE_SIZE_LIMIT as libc::rlim_t,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let store = Store::open(dir, options())?;
    let stdout = std::io::stdout();
    for i in 0..10_000 {
        let written = store.put("f", format!("row{i:05}"), "c", format!("value{i}-{}", "x".repeat(1024)));
        let mut out = stdout.lock();
        match written {
            Ok(()) => writeln!(out, "ACK {i}")?,
            Err(e) => {
                writeln!(out, "ERROR {e:?}")?;
                // The store stays refused after a failed write.
                let again = store.put("f", "after", "c", "x");
                writeln!(out, "AGAIN {:?}", again.err())?;
                out.flush()?;
                return Ok(());
            }
        }
        out.flush()?;
    }
    writeln!(stdout.lock(), "NO ERROR")?;
    Ok(())
}

#[test]
fn a_full_disk_fails_the_write_cleanly_and_keeps_what_was_acknowledged() -> TestResult {
    if let Some(dir) = std::env::var_os(FULL_DISK_CHILD_DIR) {
        return full_disk_child(Path::new(&dir));
    }
    let dir = tempfile::tempdir()?;
    let output = Command::new(std::env::current_exe()?)
        .args(["--exact", FULL_DISK_TEST, "--nocapture", "--test-threads", "1"])
        .env(FULL_DISK_CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the child failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut acked = Vec::new();
    let mut error = None;
    let mut again = None;
    for line in BufReader::new(stdout.as_bytes()).lines() {
        let line = line?;
        // The test harness prints "test <name> ... " before the child's first line.
        if let Some((_, i)) = line.rsplit_once("ACK ") {
            acked.push(i.parse::<usize>()?);
        } else if let Some((_, e)) = line.split_once("ERROR ") {
            error = Some(e.to_string());
        } else if let Some((_, e)) = line.split_once("AGAIN ") {
            again = Some(e.to_string());
        }
    }
    let error = error.unwrap_or_else(|| panic!("no write failed:\n{stdout}"));
    assert!(error.contains("Io") || error.contains("WritesStopped"), "{error}");
    let again = again.expect("the child tried once more");
    assert!(
        again.contains("WritesStopped"),
        "a write after the failure gave {again}"
    );
    assert!(acked.len() > 50, "only {} writes before the disk was full", acked.len());
    assert_eq!(acked, (0..acked.len()).collect::<Vec<_>>());

    // Reopened without the limit: every acknowledged write, and nothing else.
    let store = Store::open(dir.path(), options())?;
    for &i in &acked {
        let value = store.get("f", format!("row{i:05}"), "c")?.map(|c| c.value);
        assert_eq!(value, Some(format!("value{i}-{}", "x".repeat(1024)).into()), "row {i}");
    }
    let rows = store.scan("f", &RowRange::all())?.collect::<Result<Vec<_>, Error>>()?;
    assert_eq!(rows.len(), acked.len(), "a row that failed to write appeared");
    // And the store takes writes again.
    store.put("f", "after", "c", "x")?;
    store.flush()?;
    Ok(())
}
