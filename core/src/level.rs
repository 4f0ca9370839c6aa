//! The speed/ratio ladder: named levels, their numeric spellings (`-1`..`-19`), and the match
//! finder settings each one uses.

use crate::elz::{dfast, optimal, Parser};
use crate::lz::{Finder, Params};

/// A compression level. The level that wrote a frame is recorded in its header for `glyd -l`;
/// decoders never need it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// LZ4-class compress speed: greedy single-probe hash table, LZ only.
    Fast,
    /// Best ratio that still decodes at least as fast as LZ4: hash chains with a lazy step.
    Lz,
    /// The zstd -3 slot: double-fast parse, Huffman literals and offset codes, tANS length codes.
    Max,
    /// The zstd -19 slot: binary-tree match finder and an optimal parse priced in bits.
    Ultra,
}

impl Level {
    /// The level used when none is given: `--max`, a zstd -3 class ratio (README says why).
    pub const DEFAULT: Level = Level::Max;

    /// Every level, fastest first.
    pub const ALL: [Level; 4] = [Level::Fast, Level::Lz, Level::Max, Level::Ultra];

    /// Maps a numeric level (`-1`..`-19`) onto the ladder: `-1` is `--fast`, `-2` is `--lz`,
    /// `-3`..`-9` are `--max` and `-10`..`-19` are `--ultra`.
    pub fn from_number(n: u32) -> Option<Level> {
        match n {
            1 => Some(Level::Fast),
            2 => Some(Level::Lz),
            3..=9 => Some(Level::Max),
            10..=19 => Some(Level::Ultra),
            _ => None,
        }
    }

    /// Parses a level name as the CLI spells it (`fast`, `lz`) or a number.
    pub fn from_name(s: &str) -> Option<Level> {
        match s {
            "fast" => Some(Level::Fast),
            "lz" => Some(Level::Lz),
            "max" => Some(Level::Max),
            "ultra" => Some(Level::Ultra),
            n => n.parse().ok().and_then(Level::from_number),
        }
    }

    /// The number stored in the frame header.
    pub fn number(self) -> u8 {
        match self {
            Level::Fast => 1,
            Level::Lz => 2,
            Level::Max => 3,
            Level::Ultra => 19,
        }
    }

    /// The level's name, as `--NAME` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Fast => "fast",
            Level::Lz => "lz",
            Level::Max => "max",
            Level::Ultra => "ultra",
        }
    }

    /// Default block size (bytes of input per independent block).
    pub fn default_block_size(self) -> usize {
        match self {
            Level::Fast | Level::Lz => 1 << 20,
            // Entropy levels: the block is the match window, and 8 MiB still leaves a 64 MB
            // input eight blocks to decode in parallel.
            Level::Max => 8 << 20,
            // The archive level: a 32 MiB window (zstd -19 slides one of 8 MiB). On 24 MB of
            // TPC-H lineitem, 5.3% fewer bytes than 8 MiB blocks; the finder's tree takes
            // 8 bytes per position (256 MiB per thread at this size).
            Level::Ultra => 32 << 20,
        }
    }

    /// The block method and match finder settings this level uses.
    pub fn method(self) -> Method {
        match self {
            Level::Fast => Method::Lz(Params {
                finder: Finder::Greedy,
            }),
            Level::Lz => Method::Lz(Params {
                finder: Finder::Chain {
                    hash_log: 16,
                    depth: 24,
                    lazy: true,
                },
            }),
            Level::Max => Method::Elz(Parser::Dfast(dfast::Params::MAX)),
            Level::Ultra => Method::Elz(Parser::Optimal(optimal::Params {
                hash_log: 20,
                depth: 64,
                sufficient_len: 256,
                passes: 8,
            })),
        }
    }
}

/// How a level codes a block.
pub enum Method {
    /// Fast LZ (block type 2).
    Lz(Params),
    /// Entropy LZ (block type 3) with one of its parsers.
    Elz(Parser),
}

impl Default for Level {
    fn default() -> Self {
        Level::DEFAULT
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Name of the level a frame header records, for listings (`-l`). Numbers this build does not
/// know are shown as numbers: a newer writer may use them.
pub fn level_label(number: u8) -> String {
    match Level::from_number(u32::from(number)) {
        Some(l) if l.number() == number => l.name().to_string(),
        _ => format!("{number}"),
    }
}
