//! Errors as values: every failure to read an archive names what was wrong and the byte offset
//! in the archive where it was found.

/// Result alias used throughout glyd-columnar.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong writing or reading a record archive.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// A column chunk failed to decode (the core codec says what and where).
    #[error(transparent)]
    Codec(#[from] glyd_core::Error),

    /// The input is not a record archive.
    #[error("not a glyd record archive: expected magic 89 47 4c 52 at byte 0, found {found}")]
    BadMagic { found: String },

    /// The archive was written by a newer format version.
    #[error("unsupported record archive version {version}: this build reads versions up to {supported}; upgrade glyd")]
    UnsupportedVersion { version: u8, supported: u8 },

    /// The archive ends in the middle of a structure.
    #[error("truncated record archive: the {what} at byte {offset} is incomplete (was the file cut short?)")]
    Truncated { what: &'static str, offset: u64 },

    /// A structure is malformed.
    #[error("corrupt record archive: {what} at byte {offset}: {detail}")]
    Corrupt {
        what: &'static str,
        offset: u64,
        detail: String,
    },

    /// A Parquet file could not be read or written (arrow-rs says why).
    #[error("Parquet: {0}")]
    Parquet(String),

    /// Bytes a ranged reader ([`crate::Fetched`]) does not hold yet: fetch these archive
    /// ranges and try again.
    #[error("archive bytes {ranges:?} are not fetched yet")]
    Missing { ranges: Vec<std::ops::Range<u64>> },

    /// A request the archive cannot answer (unknown column, row group out of range).
    #[error("{0}")]
    Request(String),
}

impl Error {
    pub(crate) fn corrupt(what: &'static str, offset: u64, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            what,
            offset,
            detail: detail.into(),
        }
    }
}
