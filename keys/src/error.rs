//! The one error type of the key designer.
//!
//! A key design comes from a person typing it, so most failures are about
//! input: a syntax mistake (with the byte offset where it happened), a part
//! that names a field the workload does not have, a value an encoding cannot
//! represent. Failures of the real store the plans run on are wrapped as
//! [`Error::Store`].

/// Everything that can go wrong while designing, simulating or planning a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key syntax did not parse.
    #[error("key syntax error at offset {offset}: {what}")]
    Syntax {
        /// Byte offset in the text where the problem starts.
        offset: usize,
        /// What was expected or found.
        what: String,
    },
    /// A key part names a field the workload's records do not carry.
    #[error("unknown field {field:?}: the {workload} workload has {known}")]
    UnknownField {
        /// The field named by the key.
        field: String,
        /// The workload.
        workload: String,
        /// The fields it does have, comma separated.
        known: String,
    },
    /// A value cannot be written with the chosen encoding (a negative number
    /// as unsigned bytes, a number wider than its padding, text as a number).
    #[error("cannot encode {value} as {encoding}: {why}")]
    Encode {
        /// The value, as text.
        value: String,
        /// The encoding, in key syntax.
        encoding: String,
        /// Why not.
        why: String,
    },
    /// A setting out of its range (zero buckets, zero servers, an unknown name).
    #[error("invalid setting: {0}")]
    InvalidSetting(String),
    /// The real cellar store the plans run on failed.
    #[error("store: {0}")]
    Store(#[from] cellar_engine::Error),
    /// The temporary folder for that store could not be made.
    #[error("temporary store folder: {0}")]
    Io(#[from] std::io::Error),
}

/// The key designer's result type.
pub type Result<T> = std::result::Result<T, Error>;
