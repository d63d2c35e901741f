//! The crate's one error type.
//!
//! A table file is data on a disk, and disks lie: bits flip, files get cut
//! short, an older program meets a newer file. Each of those has its own
//! variant, so a caller can `match` on `Error::Corruption` (and, say, quarantine
//! the file) instead of parsing a message. Nothing in this crate panics on bad
//! bytes: every decoder reports where the damage is.

use std::path::PathBuf;

/// Everything that can go wrong while writing or reading a table file.
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
    /// Bytes in a table file do not decode or do not match their checksum.
    #[error("corruption in {} at offset {offset}: {what}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset in the file of the bad block or field.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// The footer names a format version newer than this build can read.
    #[error("{}: format version {found} is newer than this build supports ({supported})", file.display())]
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// Version found in the footer.
        found: u32,
        /// Highest version this build reads ([`crate::FORMAT_VERSION`]).
        supported: u32,
    },
    /// [`crate::TableBuilder::add`] was given a key that is not strictly greater
    /// than the previous one. A table is sorted and has no duplicate keys.
    #[error("keys out of order: {key:?} is not greater than the previous key {previous:?}")]
    KeyOrder {
        /// The key added before.
        previous: Vec<u8>,
        /// The offending key.
        key: Vec<u8>,
    },
    /// A key or value is longer than the format can hold
    /// ([`crate::MAX_KEY_LEN`], [`crate::MAX_VALUE_LEN`]).
    #[error("{what} of {len} bytes is longer than the limit of {max} bytes")]
    TooLarge {
        /// `"key"` or `"value"`.
        what: &'static str,
        /// Its length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A key is shorter than the key trailer the table was built with
    /// ([`crate::TableOptions::key_trailer_words`]).
    #[error("key of {len} bytes is shorter than the {min}-byte key trailer")]
    TooShort {
        /// Its length.
        len: u64,
        /// The trailer's length.
        min: u64,
    },
    /// A [`crate::TableOptions`] value that cannot be used (a Zstandard
    /// level out of range, say).
    #[error("invalid table option: {0}")]
    InvalidOption(String),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Builds the closure that turns an `io::Error` into [`Error::Io`] for `path`,
/// for use with `map_err`.
pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
