//! A store opened to read only (`ReadOnlyStore`): it reads beside a writer
//! that holds the lock, sees the writes only the log holds, writes nothing,
//! and opens a copy that cannot be written at all.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::path::{Path, PathBuf};

use cellar_engine::{ReadOnlyStore, RowRange, Store, StoreOptions};

type TestResult = Result<(), Box<dyn StdError>>;

/// Held by a test that starts child processes, and by one that closes stores
/// and opens them again. The `LOCK` file's lock (`flock`) belongs to the open
/// file, and a child started while a store is open holds a copy of the
/// descriptor until it executes its program: if the store is closed and
/// opened again in that gap, the open finds the store locked (one run in
/// three failed so).
static CHILDREN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn no_children() -> std::sync::MutexGuard<'static, ()> {
    CHILDREN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn options() -> StoreOptions {
    StoreOptions::default().family("f")
}

/// A closed store with rows r00..r09 in a table file and r10..r19 only in
/// its log (written after the last flush).
fn store_with_a_log() -> Result<tempfile::TempDir, Box<dyn StdError>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), options())?;
    for i in 0..20 {
        store.put_at("f", format!("r{i:02}"), "c", 1, format!("v{i}"))?;
        if i == 9 {
            store.flush()?;
        }
    }
    drop(store);
    Ok(dir)
}

fn rows(store: &ReadOnlyStore) -> Result<Vec<String>, Box<dyn StdError>> {
    let mut keys = Vec::new();
    for row in store.snapshot().scan("f", &RowRange::all())? {
        keys.push(String::from_utf8(row?.key.to_vec())?);
    }
    Ok(keys)
}

/// Every file and folder under a folder, with its bytes and modification time.
type Files = BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>;

fn files(dir: &Path) -> Result<Files, Box<dyn StdError>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path.clone());
                let modified = std::fs::metadata(&path)?.modified()?;
                out.insert(path, (Vec::new(), modified));
            } else {
                let meta = std::fs::metadata(&path)?;
                out.insert(path.clone(), (std::fs::read(&path)?, meta.modified()?));
            }
        }
    }
    Ok(out)
}

#[test]
fn a_read_only_open_sees_the_tables_and_the_log_and_changes_no_file() -> TestResult {
    let dir = store_with_a_log()?;
    let before = files(dir.path())?;
    let reader = ReadOnlyStore::open(dir.path())?;
    assert_eq!(rows(&reader)?.len(), 20);
    assert_eq!(reader.tables().len(), 1, "the log's rows were not flushed");
    assert_eq!(reader.stats()?.families[0].memtable_entries, 10);
    drop(reader);
    assert_eq!(files(dir.path())?, before);
    Ok(())
}

#[test]
fn a_read_only_open_reads_beside_a_writer_that_holds_the_lock() -> TestResult {
    let _no_children = no_children();
    let dir = store_with_a_log()?;
    let writer = Store::open(dir.path(), options())?;
    writer.put_at("f", "r20", "c", 1, "v20")?;
    let reader = ReadOnlyStore::open(dir.path())?;
    assert_eq!(rows(&reader)?.len(), 21);
    // The reader is one moment of the store: later writes are not in it.
    writer.put_at("f", "r21", "c", 1, "v21")?;
    writer.flush()?;
    writer.compact("f")?;
    assert_eq!(rows(&reader)?.len(), 21);
    assert_eq!(
        reader.snapshot().get("f", "r05", "c")?.map(|c| c.value),
        Some("v5".into()),
        "a table the compaction deleted stays readable"
    );
    // And a writer can open while a reader is open: the reader holds no lock.
    drop(writer);
    let writer = Store::open(dir.path(), options())?;
    assert_eq!(writer.scan_traced("f", &RowRange::all())?.0.len(), 22);
    Ok(())
}

/// The reads that walk whole table files (statistics, the deletions `cellar
/// export` writes) read a table the writer has deleted since the open as
/// every other read does: from the reader's map of it, which outlives the
/// unlink. They used to open the file again by its name, and failed with
/// "No such file or directory" once the writer had compacted (or renamed a
/// table the open had found under its pending name).
#[test]
fn whole_file_reads_of_a_read_only_open_survive_the_writer_deleting_its_tables() -> TestResult {
    let _no_children = no_children();
    let dir = store_with_a_log()?;
    let writer = Store::open(dir.path(), options())?;
    writer.delete_at("f", "r03", "c", 2)?;
    writer.delete_row_at("f", "r04", 2)?;
    writer.flush()?;
    let reader = ReadOnlyStore::open(dir.path())?;
    let snapshot = reader.snapshot();
    let tables = reader.tables().len();
    assert!(tables >= 2, "{tables} tables");
    let live = reader.stats()?.families[0].live_entries;
    // Each deletion as `row column timestamp` (`*` for the whole row).
    let deletions = |snapshot: &cellar_engine::Snapshot| -> Result<Vec<String>, cellar_engine::Error> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(cellar_engine::inspect::deletions(snapshot, "f")?
            .iter()
            .map(|d| {
                let column = d.column.as_deref().map_or("*".to_string(), text);
                format!("{} {column} {}", text(&d.row), d.timestamp)
            })
            .collect())
    };
    let expected = ["r03 c 2", "r04 * 2"];
    assert_eq!(deletions(&snapshot)?, expected);
    // The writer merges every table into one and deletes the others.
    writer.compact("f")?;
    writer.wait_for_background_work()?;
    assert_eq!(writer.tables().len(), 1);
    assert_eq!(reader.stats()?.families[0].live_entries, live);
    assert_eq!(reader.stats()?.families[0].table_files, tables as u64);
    assert_eq!(deletions(&snapshot)?, expected);
    Ok(())
}

#[test]
fn a_read_only_open_reads_a_copy_that_cannot_be_written() -> TestResult {
    let _children = no_children();
    let dir = store_with_a_log()?;
    let copy = tempfile::tempdir()?;
    let mut paths = Vec::new();
    for (path, (bytes, _)) in files(dir.path())? {
        let to = copy.path().join(path.strip_prefix(dir.path())?);
        if path.is_dir() {
            std::fs::create_dir_all(&to)?;
        } else {
            std::fs::create_dir_all(to.parent().ok_or("no parent")?)?;
            std::fs::write(&to, bytes)?;
        }
        paths.push(to);
    }
    paths.push(copy.path().to_path_buf());
    let Some(_locked) = Unwritable::set(&paths) else {
        println!("skipped: chattr +i is unavailable, and mode bits do not bind this process");
        return Ok(());
    };
    assert!(
        Store::open(copy.path(), options()).is_err(),
        "a store opened for writing needs to write"
    );
    let reader = ReadOnlyStore::open(copy.path())?;
    assert_eq!(rows(&reader)?.len(), 20);
    assert_eq!(
        reader.snapshot().get("f", "r15", "c")?.map(|c| c.value),
        Some("v15".into())
    );
    Ok(())
}

#[test]
fn a_folder_without_a_store_is_not_a_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    let err = ReadOnlyStore::open(dir.path()).err().ok_or("an empty folder opened")?;
    assert!(matches!(err, cellar_engine::Error::NotAStore { .. }), "{err}");
    assert_eq!(std::fs::read_dir(dir.path())?.count(), 0, "nothing was created");
    Ok(())
}

/// Every path read-only (mode bits) and immutable (`chattr +i`, which binds
/// root too) for as long as the guard lives; `None` if writing is still
/// possible, so that the test proves nothing.
struct Unwritable(Vec<PathBuf>);

impl Unwritable {
    fn set(paths: &[PathBuf]) -> Option<Unwritable> {
        use std::os::unix::fs::PermissionsExt;
        let guard = Unwritable(paths.to_vec());
        for path in paths {
            let mode = if path.is_dir() { 0o555 } else { 0o444 };
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
            let _ = std::process::Command::new("chattr").arg("+i").arg(path).status();
        }
        let folder = paths.last()?;
        let probe = folder.join("probe");
        if std::fs::write(&probe, "x").is_ok() {
            let _ = std::fs::remove_file(&probe);
            return None;
        }
        Some(guard)
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        for path in &self.0 {
            let _ = std::process::Command::new("chattr").arg("-i").arg(path).status();
            let mode = if path.is_dir() { 0o755 } else { 0o644 };
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        }
    }
}
