//! Folders for tests: scratch space, and copies of a store to damage.
//!
//! A damage test works on a copy, so each case starts from the same bytes.
//! These helpers panic with the path on failure, as a test would.

use std::path::Path;

/// A scratch folder in `/dev/shm` when the machine has one (a test that
/// opens a store thousands of times then waits on no disk), else in the
/// system's temporary folder.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary folder: {e}"))
}

/// Copies the store in `from` to `to`, folders included, every file but
/// `LOCK` (a copy is a store nobody holds).
pub fn copy_store(from: &Path, to: &Path) {
    let fail = |what: &str, path: &Path, e: std::io::Error| -> ! { panic!("{what} {}: {e}", path.display()) };
    std::fs::create_dir_all(to).unwrap_or_else(|e| fail("create", to, e));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| fail("list", from, e));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| fail("list", from, e));
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let is_dir = entry
            .file_type()
            .unwrap_or_else(|e| fail("inspect", &source, e))
            .is_dir();
        if is_dir {
            copy_store(&source, &target);
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(&source, &target).unwrap_or_else(|e| fail("copy", &source, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_holds_every_file_and_folder_but_the_lock() {
        let from = scratch();
        std::fs::create_dir(from.path().join("books")).unwrap_or_else(|e| panic!("{e}"));
        for (name, bytes) in [("LOCK", "l"), ("CURRENT", "c"), ("books/000004.sst", "t")] {
            std::fs::write(from.path().join(name), bytes).unwrap_or_else(|e| panic!("{e}"));
        }
        let to = scratch();
        copy_store(from.path(), &to.path().join("copy"));
        let copy = to.path().join("copy");
        assert!(!copy.join("LOCK").exists());
        assert_eq!(std::fs::read_to_string(copy.join("CURRENT")).ok().as_deref(), Some("c"));
        assert_eq!(
            std::fs::read_to_string(copy.join("books/000004.sst")).ok().as_deref(),
            Some("t")
        );
    }
}
