//! Installing a file system sends every call of the crate to it, for the whole
//! process (this test binary is a process of its own).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use cellar_fs::{FileSystem, Os};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Counts the calls it passes on to [`Os`].
struct Counting {
    calls: AtomicUsize,
}

impl Counting {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl FileSystem for Counting {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        self.count();
        Os.create_new(path)
    }
    fn create(&self, path: &Path) -> io::Result<File> {
        self.count();
        Os.create(path)
    }
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        self.count();
        Os.sync_data(file, path)
    }
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        self.count();
        Os.sync_all(file, path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.count();
        Os.sync_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.count();
        Os.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.count();
        Os.remove(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.count();
        Os.create_dir(path)
    }
}

static COUNTING: Counting = Counting {
    calls: AtomicUsize::new(0),
};
static OTHER: Counting = Counting {
    calls: AtomicUsize::new(0),
};

#[test]
fn every_call_goes_to_the_installed_file_system_and_only_one_can_be_installed() -> TestResult {
    let dir = tempfile::tempdir()?;
    cellar_fs::install(&COUNTING)?;
    cellar_fs::install(&COUNTING)?; // the same one again: fine

    let path = dir.path().join("a");
    let file = cellar_fs::create_new(&path)?;
    cellar_fs::sync_data(&file, &path)?;
    cellar_fs::sync_all(&file, &path)?;
    cellar_fs::rename(&path, &dir.path().join("b"))?;
    cellar_fs::remove(&dir.path().join("b"))?;
    cellar_fs::create_dir_all(&dir.path().join("x/y"))?; // 2 folders, 2 parent syncs
    cellar_fs::sync_dir(dir.path())?;
    drop(cellar_fs::create(&dir.path().join("c"))?);
    assert_eq!(COUNTING.calls.load(Ordering::SeqCst), 11);
    assert!(dir.path().join("x/y").is_dir() && dir.path().join("c").is_file());

    let refused = cellar_fs::install(&OTHER);
    assert_eq!(refused.map_err(|e| e.kind()), Err(io::ErrorKind::Other));
    assert_eq!(OTHER.calls.load(Ordering::SeqCst), 0);
    Ok(())
}
