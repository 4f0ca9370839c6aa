//! Errors as values: each names the file or tensor, the byte offset and what to do.

use std::io;

/// Result alias used throughout glyd-gpu.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading safetensors files or tensor archives.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),

    /// Reading or writing a named file or folder failed.
    #[error("{}: {source}", .path.display())]
    File {
        path: std::path::PathBuf,
        source: io::Error,
    },

    /// A safetensors file is malformed.
    #[error("bad safetensors file{}: {detail} (at byte {offset})", in_tensor(.tensor))]
    Safetensors {
        tensor: Option<String>,
        offset: u64,
        detail: String,
    },

    /// A tensor archive is malformed, truncated or fails a checksum.
    #[error("corrupt tensor archive{}: {detail} (at byte {offset})", in_tensor(.tensor))]
    Corrupt {
        tensor: Option<String>,
        offset: u64,
        detail: String,
    },

    /// The caller asked for something the archive cannot give (unknown tensor, missing base).
    #[error("{0}")]
    Usage(String),

    /// The codec core refused a stream.
    #[error("{0}")]
    Core(#[from] glyd_core::Error),
}

fn in_tensor(t: &Option<String>) -> String {
    t.as_ref()
        .map(|t| format!(" in tensor '{t}'"))
        .unwrap_or_default()
}

impl Error {
    /// An I/O error on `path`, naming it.
    pub fn at(path: &std::path::Path, source: io::Error) -> Self {
        Error::File {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(tensor: Option<&str>, offset: u64, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            tensor: tensor.map(str::to_owned),
            offset,
            detail: detail.into(),
        }
    }

    pub(crate) fn safetensors(
        tensor: Option<&str>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Safetensors {
            tensor: tensor.map(str::to_owned),
            offset,
            detail: detail.into(),
        }
    }
}
