//! A power loss, simulated: what a disk would keep if power failed now.
//!
//! [`watch`] a folder, run a store in it, then call
//! [`Watch::power_loss`] at any moment: it copies the folder as a disk
//! would hold it after a power cut, while the store keeps running in the
//! original. Open the copy and check it holds exactly what was made
//! durable. The rules, applied to the copy (LevelDB's fault-injection
//! test applies the same ones in place):
//!
//! - every file is cut to its length at its last sync: bytes written
//!   after it are lost;
//! - a file or folder whose name was created (or renamed into place) after
//!   the last sync of its folder is gone;
//! - a file removed, or replaced by a rename, after the last sync of its
//!   folder comes back, with what it held at its last sync.
//!
//! How it hooks the engine: `watch` [installs](cellar_fs::install) this
//! module's [`PowerLossFs`] as the process's file system, so every create,
//! sync, rename and removal of cellar comes here; calls on paths outside the
//! watched folders go straight to [`Os`]. The journal lives in one
//! process-wide mutex. Every call on a watched path holds it while it runs,
//! and so does the copy, so the copy never sees half of a sync, rename or
//! removal. Files are compared by path as spelled: watch the folder the
//! store is given (or one above it).
//!
//! [`Watch::crash_after_every_call`] makes such a copy after every call an
//! operation makes, so a test can open the store as a crash at each step of
//! it would leave it; [`Crash::Kill`] copies what a killed process leaves
//! instead (every byte written, synced or not).
//!
//! Files under the folder when `watch` is called count as durable. A file
//! not created through `cellar_fs` (the `LOCK` file, say) counts as durable
//! at whatever length it has.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use cellar_fs::{FileSystem, Os};

/// What the journal knows of one file or folder under a watched folder.
#[derive(Debug, Clone, Copy)]
struct FileState {
    /// Length at the last sync: a power loss cuts the file back to it.
    synced_len: u64,
    /// Whether the folder holding the name was synced since the name appeared.
    durable_name: bool,
    is_dir: bool,
}

/// The process-wide record of what is durable under the watched folders.
#[derive(Debug, Default)]
struct Journal {
    watched: Vec<PathBuf>,
    files: BTreeMap<PathBuf, FileState>,
    /// Durable names removed or renamed over since their folder was last
    /// synced, with what they held at their last sync: a power loss
    /// brings them back.
    ghosts: BTreeMap<PathBuf, Vec<u8>>,
    /// Watched folders imaged after every call (see [`Watch::crash_after_every_call`]).
    recordings: Vec<Recording>,
}

/// A watched folder imaged after every call on a path under it.
#[derive(Debug)]
struct Recording {
    watched: PathBuf,
    into: PathBuf,
    crash: Crash,
    images: usize,
}

/// What a crash leaves of a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// Power fails: the disk keeps what was synced (the module's rules).
    PowerLoss,
    /// The process is killed: the kernel keeps every byte written and every
    /// name made, synced or not.
    Kill,
}

static JOURNAL: Mutex<Journal> = Mutex::new(Journal {
    watched: Vec::new(),
    files: BTreeMap::new(),
    ghosts: BTreeMap::new(),
    recordings: Vec::new(),
});

fn lock() -> MutexGuard<'static, Journal> {
    // A test that panicked while holding the lock leaves a usable journal.
    JOURNAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The journal, locked, if `path` lies under a watched folder.
fn journal_for(path: &Path) -> Option<MutexGuard<'static, Journal>> {
    let journal = lock();
    journal.watched.iter().any(|w| path.starts_with(w)).then_some(journal)
}

/// Starts recording what is durable under `dir`, which must exist. What it
/// holds now counts as durable. Recording stops when the `Watch` is dropped.
pub fn watch(dir: &Path) -> io::Result<Watch> {
    cellar_fs::install(&POWER_LOSS_FS)?;
    let mut journal = lock();
    if journal.watched.iter().any(|w| w.starts_with(dir) || dir.starts_with(w)) {
        return Err(io::Error::other(format!("{} is already watched", dir.display())));
    }
    let mut existing = Vec::new();
    list_tree(dir, &mut existing)?;
    for path in existing {
        let meta = std::fs::metadata(&path)?;
        journal.files.insert(
            path,
            FileState {
                synced_len: meta.len(),
                durable_name: true,
                is_dir: meta.is_dir(),
            },
        );
    }
    journal.watched.push(dir.to_path_buf());
    Ok(Watch { dir: dir.to_path_buf() })
}

/// A watched folder; see [`watch`].
#[derive(Debug)]
pub struct Watch {
    dir: PathBuf,
}

impl Watch {
    /// Copies the watched folder to `into` (which must not exist) as a
    /// disk would hold it if power failed now. The original is untouched.
    pub fn power_loss(&self, into: &Path) -> io::Result<()> {
        self.crash(into, Crash::PowerLoss)
    }

    /// Copies the watched folder to `into` (which must not exist) as `crash`
    /// would leave it now. The original is untouched.
    pub fn crash(&self, into: &Path, crash: Crash) -> io::Result<()> {
        lock().image(&self.dir, into, crash)
    }

    /// From now on, after every create, sync, rename and removal under the
    /// watched folder, copies the folder as `crash` would leave it at that
    /// instant into `into/000000`, `into/000001`, ... (`into` must exist).
    /// Between two such calls the disk's durable state does not change, so
    /// with [`Crash::PowerLoss`] the images are every state a power cut
    /// during the run could leave. Returns nothing until
    /// [`Watch::stop_crashing`].
    pub fn crash_after_every_call(&self, into: &Path, crash: Crash) {
        lock().recordings.push(Recording {
            watched: self.dir.clone(),
            into: into.to_path_buf(),
            crash,
            images: 0,
        });
    }

    /// Stops [`Watch::crash_after_every_call`]; returns the images made, in
    /// order, or the first error making one.
    pub fn stop_crashing(&self) -> io::Result<Vec<PathBuf>> {
        let mut journal = lock();
        let mut images = Vec::new();
        let mut kept = Vec::new();
        for recording in journal.recordings.drain(..) {
            if recording.watched == self.dir {
                images.extend((0..recording.images).map(|n| recording.into.join(format!("{n:06}"))));
            } else {
                kept.push(recording);
            }
        }
        journal.recordings = kept;
        if let Some(failed) = images.iter().find(|p| !p.is_dir()) {
            return Err(io::Error::other(format!("image {} was not made", failed.display())));
        }
        Ok(images)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut journal = lock();
        let dir = &self.dir;
        journal.watched.retain(|w| w != dir);
        journal.files.retain(|path, _| !path.starts_with(dir));
        journal.ghosts.retain(|path, _| !path.starts_with(dir));
    }
}

impl Journal {
    /// Copies `watched` to `into` as `crash` would leave it now.
    fn image(&self, watched: &Path, into: &Path, crash: Crash) -> io::Result<()> {
        copy_tree(watched, into)?;
        if crash == Crash::Kill {
            return Ok(());
        }
        let in_copy = |path: &Path| path.strip_prefix(watched).ok().map(|rel| into.join(rel));
        // Names first: a lost folder takes what it holds with it.
        for (path, state) in &self.files {
            let Some(target) = in_copy(path) else { continue };
            let result = if !state.durable_name {
                if state.is_dir {
                    std::fs::remove_dir_all(&target)
                } else {
                    std::fs::remove_file(&target)
                }
            } else if !state.is_dir {
                cut_to(&target, state.synced_len)
            } else {
                Ok(())
            };
            ignore_not_found(result)?;
        }
        for (path, contents) in &self.ghosts {
            let Some(target) = in_copy(path) else { continue };
            if target.parent().is_some_and(Path::is_dir) {
                std::fs::write(&target, contents)?;
            }
        }
        Ok(())
    }

    /// Makes the images the recordings of `path`'s folder ask for. A failure
    /// leaves a gap in the numbering, which `stop_crashing` reports: the
    /// call that was recorded must not fail for it.
    fn after_call(&mut self, path: &Path) {
        let mut recordings = std::mem::take(&mut self.recordings);
        for recording in &mut recordings {
            if path.starts_with(&recording.watched) {
                let into = recording.into.join(format!("{:06}", recording.images));
                recording.images += 1;
                let _ = self.image(&recording.watched, &into, recording.crash);
            }
        }
        self.recordings = recordings;
    }

    /// Whether `path`'s name would survive a power loss now.
    fn durable_name(&self, path: &Path) -> bool {
        match self.files.get(path) {
            Some(state) => state.durable_name,
            None => path.exists(), // made by a call that bypassed this module
        }
    }

    /// What a power loss would leave in `path`: its bytes up to its last sync.
    fn synced_contents(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut bytes = std::fs::read(path)?;
        if let Some(state) = self.files.get(path) {
            bytes.truncate(usize::try_from(state.synced_len).unwrap_or(usize::MAX));
        }
        Ok(bytes)
    }

    /// Remembers `path` as it is durably, before its name goes away.
    fn keep_ghost(&mut self, path: &Path) -> io::Result<()> {
        if self.durable_name(path) && !self.ghosts.contains_key(path) {
            let contents = self.synced_contents(path)?;
            self.ghosts.insert(path.to_path_buf(), contents);
        }
        Ok(())
    }

    fn create(&mut self, path: &Path, new: bool) -> io::Result<File> {
        let existed = self.durable_name(path);
        let file = if new { Os.create_new(path)? } else { Os.create(path)? };
        let state = FileState {
            synced_len: 0,
            durable_name: existed,
            is_dir: false,
        };
        self.files.insert(path.to_path_buf(), state);
        Ok(file)
    }

    fn create_dir(&mut self, path: &Path) -> io::Result<()> {
        Os.create_dir(path)?;
        let state = FileState {
            synced_len: 0,
            durable_name: false,
            is_dir: true,
        };
        self.files.insert(path.to_path_buf(), state);
        Ok(())
    }

    /// Runs `sync` (a data or full sync of `file`), then records the length it made durable.
    fn sync(&mut self, file: &File, path: &Path, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        sync()?;
        let synced_len = file.metadata()?.len();
        let state = self.files.entry(path.to_path_buf()).or_insert(FileState {
            synced_len,
            durable_name: true, // not created through this module: it was there
            is_dir: false,
        });
        state.synced_len = synced_len;
        Ok(())
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        Os.sync_dir(dir)?;
        for (path, state) in &mut self.files {
            if path.parent() == Some(dir) {
                state.durable_name = true;
            }
        }
        self.ghosts.retain(|path, _| path.parent() != Some(dir));
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.keep_ghost(to)?;
        self.keep_ghost(from)?;
        Os.rename(from, to)?;
        let synced_len = match self.files.remove(from) {
            Some(state) => state.synced_len,
            None => std::fs::metadata(to)?.len(),
        };
        let state = FileState {
            synced_len,
            durable_name: false,
            is_dir: false,
        };
        self.files.insert(to.to_path_buf(), state);
        Ok(())
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.keep_ghost(path)?;
        Os.remove(path)?;
        self.files.remove(path);
        Ok(())
    }
}

/// The file system `watch` installs: calls on a watched path go through the
/// journal, every other call straight to [`Os`].
#[derive(Debug)]
pub struct PowerLossFs;

static POWER_LOSS_FS: PowerLossFs = PowerLossFs;

impl FileSystem for PowerLossFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.create(path, true);
                journal.after_call(path);
                result
            }
            None => Os.create_new(path),
        }
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.create(path, false);
                journal.after_call(path);
                result
            }
            None => Os.create(path),
        }
    }

    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.sync(file, path, || Os.sync_data(file, path));
                journal.after_call(path);
                result
            }
            None => Os.sync_data(file, path),
        }
    }

    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.sync(file, path, || Os.sync_all(file, path));
                journal.after_call(path);
                result
            }
            None => Os.sync_all(file, path),
        }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        match journal_for(dir) {
            Some(mut journal) => {
                let result = journal.sync_dir(dir);
                journal.after_call(dir);
                result
            }
            None => Os.sync_dir(dir),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        match journal_for(to) {
            Some(mut journal) => {
                let result = journal.rename(from, to);
                journal.after_call(to);
                result
            }
            None => Os.rename(from, to),
        }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.remove(path);
                journal.after_call(path);
                result
            }
            None => Os.remove(path),
        }
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        match journal_for(path) {
            Some(mut journal) => {
                let result = journal.create_dir(path);
                journal.after_call(path);
                result
            }
            None => Os.create_dir(path),
        }
    }
}

/// Every file and folder under `dir` (not `dir` itself).
fn list_tree(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            list_tree(&path, out)?;
        }
        out.push(path);
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn cut_to(path: &Path, len: u64) -> io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    if file.metadata()?.len() > len {
        file.set_len(len)?;
    }
    Ok(())
}

fn ignore_not_found(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn write(file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }

    #[test]
    fn unsynced_bytes_are_cut_and_unsynced_names_are_lost() -> TestResult {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("watched");
        std::fs::create_dir(&dir)?;
        let watch = watch(&dir)?;
        let durable = dir.join("durable");
        let mut file = cellar_fs::create_new(&durable)?;
        write(&mut file, b"synced")?;
        cellar_fs::sync_data(&file, &durable)?;
        cellar_fs::sync_dir(&dir)?;
        write(&mut file, b" and not")?;
        let fresh = dir.join("fresh");
        let mut other = cellar_fs::create_new(&fresh)?;
        write(&mut other, b"x")?;
        cellar_fs::sync_data(&other, &fresh)?; // data synced, name not

        let copy = root.path().join("copy");
        watch.power_loss(&copy)?;
        assert_eq!(std::fs::read(copy.join("durable"))?, b"synced");
        assert!(!copy.join("fresh").exists());
        assert_eq!(std::fs::read(&durable)?, b"synced and not"); // the original is untouched
        Ok(())
    }

    #[test]
    fn a_rename_or_removal_is_undone_until_the_folder_is_synced() -> TestResult {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("watched");
        std::fs::create_dir(&dir)?;
        std::fs::write(dir.join("CURRENT"), b"old")?;
        std::fs::write(dir.join("obsolete"), b"gone?")?;
        let watch = watch(&dir)?;
        let temp = dir.join("CURRENT.tmp");
        let mut file = cellar_fs::create(&temp)?;
        write(&mut file, b"new")?;
        cellar_fs::sync_all(&file, &temp)?;
        cellar_fs::rename(&temp, &dir.join("CURRENT"))?;
        cellar_fs::remove(&dir.join("obsolete"))?;

        watch.power_loss(&root.path().join("before"))?;
        assert_eq!(std::fs::read(root.path().join("before/CURRENT"))?, b"old");
        assert_eq!(std::fs::read(root.path().join("before/obsolete"))?, b"gone?");

        cellar_fs::sync_dir(&dir)?;
        watch.power_loss(&root.path().join("after"))?;
        assert_eq!(std::fs::read(root.path().join("after/CURRENT"))?, b"new");
        assert!(!root.path().join("after/obsolete").exists());
        assert!(!root.path().join("after/CURRENT.tmp").exists());
        Ok(())
    }

    #[test]
    fn crashing_after_every_call_images_each_durable_state_in_order() -> TestResult {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("watched");
        std::fs::create_dir(&dir)?;
        let images = root.path().join("images");
        std::fs::create_dir(&images)?;
        let watch = watch(&dir)?;
        watch.crash_after_every_call(&images, Crash::PowerLoss);
        let path = dir.join("file");
        let mut file = cellar_fs::create_new(&path)?; // image 0: the name is not durable
        write(&mut file, b"data")?;
        cellar_fs::sync_data(&file, &path)?; // image 1: nor is it now
        cellar_fs::sync_dir(&dir)?; // image 2: name and data durable
        cellar_fs::remove(&path)?; // image 3: the removal is not durable
        cellar_fs::sync_dir(&dir)?; // image 4: it is
        let made = watch.stop_crashing()?;
        cellar_fs::sync_dir(&dir)?; // no longer recorded
        let names: Vec<String> = made
            .iter()
            .map(|p| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(names, ["000000", "000001", "000002", "000003", "000004"]);
        let held = |n: usize| std::fs::read(made[n].join("file")).ok();
        assert_eq!(held(0), None);
        assert_eq!(held(1), None);
        assert_eq!(held(2).as_deref(), Some(&b"data"[..]));
        assert_eq!(held(3).as_deref(), Some(&b"data"[..]));
        assert_eq!(held(4), None);
        Ok(())
    }

    #[test]
    fn a_new_folder_survives_only_once_its_parent_is_synced() -> TestResult {
        let root = tempfile::tempdir()?;
        let dir = root.path().join("watched");
        std::fs::create_dir(&dir)?;
        let watch = watch(&dir)?;
        std::fs::create_dir(dir.join("bypassed"))?; // not through cellar_fs: counts as durable
        cellar_fs::create_dir_all(&dir.join("synced/inner"))?;
        lock().create_dir(&dir.join("unsynced"))?; // created, parent not synced since
        std::fs::write(dir.join("unsynced/file"), b"lost with its folder")?;

        let copy = root.path().join("copy");
        watch.power_loss(&copy)?;
        assert!(!copy.join("unsynced").exists());
        assert!(copy.join("synced/inner").is_dir());
        assert!(copy.join("bypassed").is_dir());
        Ok(())
    }
}
