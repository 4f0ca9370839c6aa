//! Errors as values: every decode failure says what was wrong, where (byte offset in the
//! compressed stream, and the block number when there is one), and, where it helps, what to do.

use std::io;

/// Result alias used throughout glyd-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing a glyd stream.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),

    /// The stream does not start with the glyd magic number.
    #[error("not a glyd stream: expected magic 89 47 4c 59 at byte {offset}, found {found}")]
    BadMagic { offset: u64, found: String },

    /// The frame was written by a newer (or unknown) format version.
    #[error("unsupported glyd format version {version} at byte {offset}: this build reads version {supported}; upgrade glyd")]
    UnsupportedVersion {
        version: u8,
        supported: u8,
        offset: u64,
    },

    /// The input ends in the middle of a structure.
    #[error(
        "truncated input: the {what} at byte {offset} is incomplete (was the file cut short?)"
    )]
    Truncated { what: &'static str, offset: u64 },

    /// A structure is malformed: bad field, impossible size, invalid LZ sequence, ...
    #[error("corrupt {what}{} at byte {offset}: {detail}", block_label(*.block))]
    Corrupt {
        what: &'static str,
        block: Option<u64>,
        offset: u64,
        detail: String,
    },

    /// A block decoded cleanly but its bytes do not match the stored checksum.
    #[error("checksum mismatch in block {block} at byte {offset}: stored {stored:08x}, decoded data hashes to {actual:08x}")]
    Checksum {
        block: u64,
        offset: u64,
        stored: u32,
        actual: u32,
    },

    /// The caller's output buffer is smaller than the decoded content.
    #[error("output buffer too small: need {needed} bytes, have {available}")]
    OutputTooSmall { needed: u64, available: usize },

    /// Decoding a piece of the stream would take more memory than the limit allows.
    #[error("{what} at byte {offset} needs {} to decode, more than the memory limit of {}: if the input is trusted, raise the limit (glyd --memory=SIZE)", mib(*.needed), mib(*.limit))]
    MemoryLimit {
        what: &'static str,
        offset: u64,
        needed: u64,
        limit: u64,
    },

    /// A caller-supplied setting is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

/// Bytes in MiB for messages (at least 0.1 MiB shown, so a limit never reads as 0).
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", (bytes as f64 / f64::from(1 << 20)).max(0.1))
}

fn block_label(block: Option<u64>) -> String {
    match block {
        Some(b) => format!(" in block {b}"),
        None => String::new(),
    }
}

impl Error {
    pub(crate) fn corrupt(
        what: &'static str,
        block: Option<u64>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corrupt {
            what,
            block,
            offset,
            detail: detail.into(),
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}
