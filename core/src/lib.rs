//! glyd-core: the codec every other glyd crate encodes through.
//!
//! A glyd stream is one or more *frames*; a frame is a header, a sequence of independently
//! decodable, checksummed *blocks*, and a trailer (end marker, block index, footer). Blocks are
//! compressed and decompressed on all cores; [`Encoder`] and [`Decoder`] stream through
//! `std::io` with memory bounded by block size × threads. `docs/FORMAT.md` specifies every byte.
//!
//! ```
//! let data = b"the same words, the same words, the same words".repeat(100);
//! let packed = glyd_core::compress(&data, &glyd_core::Options::default()).unwrap();
//! assert_eq!(glyd_core::decompress(&packed).unwrap(), data);
//! ```

mod block;
mod checksum;
pub mod chunk;
pub mod copy;
mod cpu;
mod decode;
pub mod elz;
mod encode;
pub mod entropy;
mod error;
pub mod frame;
mod index;
mod level;
pub mod lz;
mod parallel;
pub mod varint;
mod window;

pub use checksum::{checksum, Checksum};
pub use decode::{decompress, decompress_into, decompress_with, decompressed_size, Decoder};
pub use encode::Encoder;
pub use error::{Error, Result};
pub use frame::compress_bound;
pub use index::{summarize, BlockEntry, BlockIndex, FrameSummary};
pub use level::{level_label, Level, Method};
pub use parallel::{pool, resolve_threads};

/// How to compress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Speed/ratio level.
    pub level: Level,
    /// Worker threads; 0 means every core.
    pub threads: usize,
    /// Bytes of input per block; `None` means the level's default ([`LONG_BLOCK_SIZE`] with
    /// `long`). Must be within 1 KiB ..= 128 MiB; frames record it rounded up to a power of two.
    pub block_size: Option<usize>,
    /// Long-distance matching (`--long`, entropy levels only): a matcher that finds repeats
    /// anywhere in the block runs before the parser, and blocks default to 128 MiB, so repeats
    /// up to 128 MiB apart are found. Decoding needs nothing new (and a block's worth of memory
    /// per thread).
    pub long: bool,
}

/// Memory a decoder may use for the data it holds (compressed and decoded blocks, record
/// archive row groups and their columns) unless told otherwise: enough for the largest blocks
/// and row groups glyd writes (`--long`'s 128 MiB blocks, 64 MiB row groups), so only a hostile
/// or unusually wide archive meets it. Parallel decoding is trimmed to stay under it.
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;

/// The default block size with [`Options::long`]: the largest the format allows, 128 MiB.
pub const LONG_BLOCK_SIZE: usize = 1 << frame::MAX_BLOCK_LOG;

impl Options {
    /// Options for `level`, on all cores, with its default block size.
    pub fn new(level: Level) -> Self {
        Self {
            level,
            ..Self::default()
        }
    }

    /// The same options on `threads` threads (0 = all cores).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The same options with `block_size` bytes per block.
    pub fn with_block_size(mut self, block_size: usize) -> Self {
        self.block_size = Some(block_size);
        self
    }

    /// The same options with long-distance matching on or off.
    pub fn with_long(mut self, long: bool) -> Self {
        self.long = long;
        self
    }

    /// Bytes of input per block.
    pub fn block_size(&self) -> usize {
        self.block_size.unwrap_or_else(|| {
            if self.long {
                LONG_BLOCK_SIZE
            } else {
                self.level.default_block_size()
            }
        })
    }
}

/// Compresses `src` into one frame.
pub fn compress(src: &[u8], opts: &Options) -> Result<Vec<u8>> {
    Encoder::new(Vec::with_capacity(src.len() / 2 + 64), opts)?.finish_with(src)
}
