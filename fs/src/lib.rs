//! # cellar-fs: the file-system calls that decide what survives a power loss
//!
//! Writing bytes to a file hands them to the operating system; only an fsync
//! makes them survive a power loss. The same holds for names: creating,
//! renaming or removing a file changes its folder, and only an fsync of the
//! folder makes that change durable. Every call of cellar that creates,
//! fsyncs, renames or removes a file goes through this crate (the table
//! builder, the write-ahead log, the manifest, recovery), so the rules a
//! storage engine lives by are visible in one place:
//!
//! - data is durable once its file is synced ([`sync_data`], [`sync_all`]);
//! - a new, renamed or removed name is durable once its folder is synced
//!   ([`sync_dir`]);
//! - a folder is durable once the folder holding it is synced
//!   ([`create_dir_all`] does that for each folder it creates).
//!
//! Reads are not here: they change nothing on disk, so they use `std::fs`
//! (and a memory map) directly.
//!
//! Each function hands its call to the process's [`FileSystem`]: [`Os`], the
//! plain `std` calls, unless a test [`install`]ed another one. That is
//! LevelDB's `Env` and Pebble's `vfs.FS`, kept to the calls that matter for
//! durability; LevelDB passes its `Env` in the options of each database,
//! cellar keeps one per process (as LevelDB's `Env::Default()` is) so that
//! the table builder and the log need no extra parameter. A power-loss
//! simulator that records what each call made durable lives with the tests
//! (`cellar-testkit`), not here.

#![deny(missing_docs)]

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::OnceLock;

/// The calls whose order decides what a power loss keeps. Every method does
/// one thing to the disk; the free functions of this crate are how the rest
/// of cellar calls them.
pub trait FileSystem: Send + Sync {
    /// Creates `path` for writing; fails if it exists.
    fn create_new(&self, path: &Path) -> io::Result<File>;
    /// Creates `path` for writing, or truncates it if it exists.
    fn create(&self, path: &Path) -> io::Result<File>;
    /// `fdatasync`: the bytes written to `file` (found at `path`), with the
    /// metadata needed to read them back.
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;
    /// `fsync`: the bytes written to `file` (found at `path`) and all its metadata.
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()>;
    /// Fsyncs the folder `dir` (never empty: [`sync_dir`] turns `""` into `"."`).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes the file `path`.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Creates one folder; its parent must exist.
    fn create_dir(&self, path: &Path) -> io::Result<()>;
}

/// The operating system's file system: each method is the plain `std` call.
#[derive(Clone, Copy, Debug, Default)]
pub struct Os;

impl FileSystem for Os {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().write(true).create_new(true).open(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().write(true).create(true).truncate(true).open(path)
    }

    fn sync_data(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir).and_then(|handle| handle.sync_all())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }
}

/// The file system installed for this process, if any.
static INSTALLED: OnceLock<&'static dyn FileSystem> = OnceLock::new();

/// The file system every call goes to: the installed one, or [`Os`].
fn current() -> &'static dyn FileSystem {
    INSTALLED.get().copied().unwrap_or(&Os)
}

/// Sends every call of this crate, for the rest of the process, to `fs`
/// instead of [`Os`]. Install before the first store is opened (a file
/// created before would be unknown to `fs`). Only one file system can be
/// installed per process: installing the same one again is `Ok`, another one
/// is an error.
pub fn install(fs: &'static dyn FileSystem) -> io::Result<()> {
    let installed = *INSTALLED.get_or_init(|| fs);
    if std::ptr::addr_eq(installed, fs) {
        Ok(())
    } else {
        Err(io::Error::other(
            "another file system is already installed in this process",
        ))
    }
}

/// Creates `path` for writing; fails if it exists.
pub fn create_new(path: &Path) -> io::Result<File> {
    current().create_new(path)
}

/// Creates `path` for writing, or truncates it if it exists.
pub fn create(path: &Path) -> io::Result<File> {
    current().create(path)
}

/// Makes the bytes written to `file` (found at `path`) durable, with the
/// metadata needed to read them back (`fdatasync`).
pub fn sync_data(file: &File, path: &Path) -> io::Result<()> {
    current().sync_data(file, path)
}

/// Makes the bytes written to `file` (found at `path`) durable, with all its
/// metadata (`fsync`).
pub fn sync_all(file: &File, path: &Path) -> io::Result<()> {
    current().sync_all(file, path)
}

/// Fsyncs a folder, which makes the creation, renaming and removal of the
/// names in it durable. (Fsyncing a file persists its bytes, not its name.)
/// The empty path is the current folder.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    current().sync_dir(dir)
}

/// Renames `from` to `to`, replacing `to` atomically. Durable only once the
/// folder is synced.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    current().rename(from, to)
}

/// Removes the file `path`. Durable only once the folder is synced: until
/// then a power loss can bring the file back, so whoever reads the folder
/// after a crash must tolerate it.
pub fn remove(path: &Path) -> io::Result<()> {
    current().remove(path)
}

/// Creates `path` and any missing folder above it, fsyncing the parent of
/// each folder it creates, so that the new folders survive a power loss
/// before anything in them is relied on. Does nothing if `path` is a
/// folder already.
///
/// A file where a folder should be is an error that names the file:
/// `mkdir` on a path below it would only say "File exists" or "Not a
/// directory", naming the folder that was asked for.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() || path.is_dir() {
        return Ok(());
    }
    if path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is a file, not a folder", path.display()),
        ));
    }
    if let Some(parent) = path.parent() {
        create_dir_all(parent)?;
    }
    match current().create_dir(path) {
        Ok(()) => sync_dir(path.parent().unwrap_or(Path::new(""))),
        // Another thread or process made it first; its creator syncs the parent.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}
