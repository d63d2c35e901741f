//! The engine's one error type.
//!
//! Every failure a caller can act on has its own variant, so a program can match
//! on `Error::Corruption` or `Error::Locked` instead of parsing messages. Errors
//! from the table-file crate are folded into the same variants: a caller never
//! has to know which layer noticed the damage.

use std::path::PathBuf;

/// Everything that can go wrong in a cellar store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call failed on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or folder the call was about.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Bytes on disk do not decode or do not match their checksum.
    #[error("corruption in {} at offset {offset}: {what}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damaged record, block or field.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A table file written by a newer cellar.
    #[error("{}: format version {found} is newer than this build supports ({supported})", file.display())]
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// Version found in the file.
        found: u32,
        /// Highest version this build reads.
        supported: u32,
    },
    /// Another process (or another `Store` in this process) has the store open.
    #[error("store {} is locked by another process or handle", dir.display())]
    Locked {
        /// The store folder.
        dir: PathBuf,
    },
    /// The folder exists but holds no store, and creation was not asked for.
    #[error("{} is not a cellar store (no CURRENT file)", dir.display())]
    NotAStore {
        /// The folder.
        dir: PathBuf,
    },
    /// A family name that is not `[a-z0-9_]{1,64}`.
    #[error("invalid family name {0:?}: use 1 to 64 characters of a-z, 0-9 and _ (but not `lost`)")]
    InvalidFamilyName(String),
    /// A family that the store does not have.
    #[error("unknown column family {0:?}")]
    UnknownFamily(String),
    /// A family declared twice.
    #[error("column family {0:?} already exists")]
    FamilyExists(String),
    /// A row, column or value longer than the documented limit, or a write
    /// batch too large for one log record (256 MiB encoded).
    #[error("{what} is {len} bytes, over the limit of {limit}")]
    TooLarge {
        /// `"row"`, `"column"`, `"value"`, `"write batch"`, or `"sequence
        /// number"` (a store that numbered 2^56 writes: `len` is the last
        /// number the write would take).
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// An argument that makes no sense (an empty batch, a zero limit...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A write to the log or an fsync failed earlier; the store refuses writes
    /// until it is reopened, because the kernel may have dropped dirty pages.
    #[error("the store stopped accepting writes after an earlier failure: {0}")]
    WritesStopped(String),
}

/// Result with the engine's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A corruption report.
    pub(crate) fn corruption(file: impl Into<PathBuf>, offset: u64, what: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            what: what.into(),
        }
    }
}

impl From<cellar_sstable::Error> for Error {
    /// Table-file errors become the engine's own variants, so a caller matches
    /// one `Corruption` whichever layer found the damage.
    fn from(e: cellar_sstable::Error) -> Error {
        use cellar_sstable::Error as T;
        match e {
            T::Io { path, source } => Error::Io { path, source },
            T::Corruption { file, offset, what } => Error::Corruption { file, offset, what },
            T::UnsupportedVersion { file, found, supported } => Error::UnsupportedVersion { file, found, supported },
            other => Error::InvalidArgument(other.to_string()),
        }
    }
}
