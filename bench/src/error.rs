//! The one error type of cellar-bench: the engine's errors, plus the few
//! things a measurement can find wrong before it starts.

use std::path::PathBuf;

/// What can go wrong while a lesson builds and reads its store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed (I/O, corruption, a refused write...).
    #[error(transparent)]
    Engine(#[from] cellar_engine::Error),
    /// A table file read directly (the `codecs` bench) could not be read.
    #[error(transparent)]
    TableFile(#[from] cellar_sstable::Error),
    /// A block codec failed or did not give back what it was given.
    #[error("{0}")]
    Codec(String),
    /// A file-system call made by the lesson itself failed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A lesson (or the space measurement) measures a store it builds from
    /// nothing, so it refuses a folder that already holds something (it
    /// would measure that too).
    #[error("{0} is not empty: a store built to be measured needs an empty folder")]
    NotEmpty(PathBuf),
    /// The folder a lesson would build its store in is a file.
    #[error("{0} is a file, not a folder: a store built to be measured needs an empty folder")]
    NotAFolder(PathBuf),
    /// The store's statistics do not list a family the lesson created.
    #[error("the store reports no statistics for family `{0}`")]
    MissingFamily(String),
    /// A query-first table refused or failed an operation.
    #[error(transparent)]
    Table(#[from] cellar_tables::Error),
    /// A lesson found something it cannot measure (two answers to one
    /// question that differ, a record that vanished): a bug to report.
    #[error("{0}")]
    Lesson(String),
    /// A peer engine of the `peers` benchmark failed, or its harness did.
    #[error("{0}")]
    Peer(String),
}

/// A result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
