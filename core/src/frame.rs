//! The container's fixed structures: frame header, block headers, the end marker, the block
//! index and the footer (`docs/FORMAT.md` §2–3). Parsing here validates every field against
//! the limits the format sets, so the drivers (`decode`, `stream`, `index`) can trust them.

use crate::checksum::checksum;
use crate::error::{Error, Result};

/// First four bytes of every frame.
pub const MAGIC: [u8; 4] = [0x89, b'G', b'L', b'Y'];
/// Last four bytes of every frame.
pub const FOOTER_MAGIC: [u8; 4] = [b'Y', b'L', b'G', 0x89];
/// The format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Bytes in the frame header.
pub const FRAME_HEADER_LEN: usize = 9;
/// Bytes in a block header, an end marker, and an index entry.
pub const BLOCK_HEADER_LEN: usize = 13;
/// Bytes in the footer.
pub const FOOTER_LEN: usize = 16;
/// Smallest and largest `block_log` (maximum decoded block size = 2^block_log).
pub const MIN_BLOCK_LOG: u8 = 10;
pub const MAX_BLOCK_LOG: u8 = 27;

/// The most bytes one frame of `len` input bytes can take, at any level and block size: every
/// block falls back to its raw bytes, and each costs a header and an index entry (blocks are
/// at least 2^[`MIN_BLOCK_LOG`] bytes).
pub fn compress_bound(len: usize) -> usize {
    let blocks = len.div_ceil(1 << MIN_BLOCK_LOG);
    len.saturating_add(blocks.saturating_mul(2 * BLOCK_HEADER_LEN))
        .saturating_add(FRAME_HEADER_LEN + BLOCK_HEADER_LEN + FOOTER_LEN)
}

/// The 9-byte frame header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Level number that wrote the frame (informational).
    pub level: u8,
    /// log2 of the largest decoded block size in the frame.
    pub block_log: u8,
}

impl FrameHeader {
    /// A header for blocks of at most `block_size` bytes.
    pub fn new(level: u8, block_size: usize) -> Result<Self> {
        let block_log = block_size.next_power_of_two().trailing_zeros();
        if !(u32::from(MIN_BLOCK_LOG)..=u32::from(MAX_BLOCK_LOG)).contains(&block_log) {
            return Err(Error::InvalidOption(format!(
                "block size {block_size} is outside {} ..= {} bytes",
                1u64 << MIN_BLOCK_LOG,
                1u64 << MAX_BLOCK_LOG
            )));
        }
        Ok(Self {
            level,
            block_log: block_log as u8,
        })
    }

    /// Largest decoded size of one block.
    pub fn block_max(&self) -> usize {
        1 << self.block_log
    }

    pub fn to_bytes(&self) -> [u8; FRAME_HEADER_LEN] {
        let m = MAGIC;
        let mut b = [
            m[0],
            m[1],
            m[2],
            m[3],
            VERSION,
            self.level,
            self.block_log,
            0,
            0,
        ];
        b[8] = header_check(&b);
        b
    }

    /// Parses and validates a frame header that starts at stream byte `offset`.
    pub fn parse(b: &[u8; FRAME_HEADER_LEN], offset: u64) -> Result<Self> {
        if b[..4] != MAGIC {
            return Err(Error::BadMagic {
                offset,
                found: hex(&b[..4]),
            });
        }
        if b[4] != VERSION {
            return Err(Error::UnsupportedVersion {
                version: b[4],
                supported: VERSION,
                offset: offset + 4,
            });
        }
        if !(MIN_BLOCK_LOG..=MAX_BLOCK_LOG).contains(&b[6]) {
            return Err(Error::corrupt(
                "frame header",
                None,
                offset + 6,
                format!(
                    "block size log {} is outside {MIN_BLOCK_LOG}..={MAX_BLOCK_LOG}",
                    b[6]
                ),
            ));
        }
        if b[7] != 0 {
            return Err(Error::corrupt(
                "frame header",
                None,
                offset + 7,
                format!(
                    "flags {:#04x} set that format version 1 does not define; upgrade glyd",
                    b[7]
                ),
            ));
        }
        let check = header_check(b);
        if b[8] != check {
            return Err(Error::corrupt(
                "frame header",
                None,
                offset + 8,
                format!(
                    "header check byte {:#04x} does not match {check:#04x}",
                    b[8]
                ),
            ));
        }
        Ok(Self {
            level: b[5],
            block_log: b[6],
        })
    }
}

/// The frame header's last byte: the low byte of the checksum of the eight before it.
fn header_check(b: &[u8; FRAME_HEADER_LEN]) -> u8 {
    checksum(&b[..FRAME_HEADER_LEN - 1]) as u8
}

/// What a block's payload holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlockKind {
    /// The decoded bytes, stored as they are.
    Raw = 0,
    /// One byte, repeated `decoded_size` times.
    Rle = 1,
    /// A fast LZ payload (§4).
    Lz = 2,
    /// An entropy LZ payload (§6).
    Elz = 3,
    /// Not a block: the end marker, followed by the index and the footer.
    End = 0xFF,
}

impl BlockKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Raw => "raw",
            BlockKind::Rle => "rle",
            BlockKind::Lz => "lz",
            BlockKind::Elz => "elz",
            BlockKind::End => "end",
        }
    }
}

/// A 13-byte block header; the same bytes appear as the block's index entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub kind: BlockKind,
    pub decoded_size: u32,
    pub stored_size: u32,
    pub checksum: u32,
}

impl BlockHeader {
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[0] = self.kind as u8;
        b[1..5].copy_from_slice(&self.decoded_size.to_le_bytes());
        b[5..9].copy_from_slice(&self.stored_size.to_le_bytes());
        b[9..13].copy_from_slice(&self.checksum.to_le_bytes());
        b
    }

    /// Parses and validates the header of block `block` (or the end marker) at stream byte
    /// `offset` of a frame whose blocks decode to at most `block_max` bytes.
    pub fn parse(
        b: &[u8; BLOCK_HEADER_LEN],
        block_max: usize,
        block: u64,
        offset: u64,
    ) -> Result<Self> {
        let le = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (decoded_size, stored_size, checksum) = (le(1), le(5), le(9));
        let bad = |detail: String| Err(Error::corrupt("block header", Some(block), offset, detail));
        let kind = match b[0] {
            0 => BlockKind::Raw,
            1 => BlockKind::Rle,
            2 => BlockKind::Lz,
            3 => BlockKind::Elz,
            0xFF => BlockKind::End,
            k => return bad(format!("unknown block type {k}")),
        };
        let h = Self {
            kind,
            decoded_size,
            stored_size,
            checksum,
        };
        if kind == BlockKind::End {
            if decoded_size != 0 || !(stored_size as usize).is_multiple_of(BLOCK_HEADER_LEN) {
                return bad(format!(
                    "end marker with decoded size {decoded_size} and index size {stored_size}"
                ));
            }
            return Ok(h);
        }
        if decoded_size == 0 || decoded_size as usize > block_max {
            return bad(format!(
                "decoded size {decoded_size} is outside 1..={block_max} (the frame's block size)"
            ));
        }
        let stored_ok = match kind {
            BlockKind::Raw => stored_size == decoded_size,
            BlockKind::Rle => stored_size == 1,
            _ => stored_size as usize <= block_max,
        };
        if !stored_ok {
            return bad(format!(
                "stored size {stored_size} is impossible for a {} block of {decoded_size} bytes",
                kind.name()
            ));
        }
        Ok(h)
    }
}

/// The 16-byte footer that closes a frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Footer {
    pub content_size: u64,
    pub block_count: u32,
}

impl Footer {
    pub fn to_bytes(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[..8].copy_from_slice(&self.content_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.block_count.to_le_bytes());
        b[12..].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    pub fn parse(b: &[u8; FOOTER_LEN], offset: u64) -> Result<Self> {
        if b[12..] != FOOTER_MAGIC {
            return Err(Error::corrupt(
                "footer",
                None,
                offset + 12,
                format!("expected footer magic 59 4c 47 89, found {}", hex(&b[12..])),
            ));
        }
        Ok(Self {
            content_size: u64::from_le_bytes(b[..8].try_into().unwrap()),
            block_count: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        })
    }
}

/// The end marker that announces an index of `index` bytes.
pub fn end_marker(index: &[u8]) -> BlockHeader {
    BlockHeader {
        kind: BlockKind::End,
        decoded_size: 0,
        stored_size: index.len() as u32,
        checksum: checksum(index),
    }
}

/// Checks that the end marker at stream byte `offset` announces an index exactly as long as the
/// `seen_len` bytes of block headers read. Streaming readers call it before reading the index,
/// so a hostile index size never drives an allocation.
pub fn check_index_size(end: &BlockHeader, seen_len: usize, offset: u64) -> Result<()> {
    if end.stored_size as usize != seen_len {
        return Err(Error::corrupt(
            "block index",
            None,
            offset,
            format!(
                "end marker announces {} index bytes, the frame has {} blocks",
                end.stored_size,
                seen_len / BLOCK_HEADER_LEN
            ),
        ));
    }
    Ok(())
}

/// Checks a frame's trailer against what the reader saw: the index (at stream byte
/// `index_offset`) must equal the block headers read, byte for byte, and the footer must count
/// the same blocks and decoded bytes.
pub fn check_trailer(
    end: &BlockHeader,
    index: &[u8],
    footer: &Footer,
    seen_headers: &[u8],
    content_size: u64,
    index_offset: u64,
) -> Result<()> {
    let actual = checksum(index);
    if actual != end.checksum {
        return Err(Error::corrupt(
            "block index",
            None,
            index_offset,
            format!(
                "index checksum {actual:08x} does not match the stored {:08x}",
                end.checksum
            ),
        ));
    }
    if index.len() != seen_headers.len() {
        return Err(Error::corrupt(
            "block index",
            None,
            index_offset,
            format!(
                "index lists {} blocks but the frame holds {}",
                index.len() / BLOCK_HEADER_LEN,
                seen_headers.len() / BLOCK_HEADER_LEN
            ),
        ));
    }
    if let Some(k) = index
        .chunks_exact(BLOCK_HEADER_LEN)
        .zip(seen_headers.chunks_exact(BLOCK_HEADER_LEN))
        .position(|(a, b)| a != b)
    {
        return Err(Error::corrupt(
            "block index",
            Some(k as u64),
            index_offset + (k * BLOCK_HEADER_LEN) as u64,
            "index entry differs from the block's header (blocks spliced or reordered?)",
        ));
    }
    let footer_offset = index_offset + index.len() as u64;
    if footer.block_count as usize != index.len() / BLOCK_HEADER_LEN {
        return Err(Error::corrupt(
            "footer",
            None,
            footer_offset + 8,
            format!(
                "footer counts {} blocks, the index {}",
                footer.block_count,
                index.len() / BLOCK_HEADER_LEN
            ),
        ));
    }
    if footer.content_size != content_size {
        return Err(Error::corrupt(
            "footer",
            None,
            footer_offset,
            format!(
                "footer says {} decoded bytes, the blocks hold {content_size}",
                footer.content_size
            ),
        ));
    }
    Ok(())
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}
