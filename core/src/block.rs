//! One block, both ways: choosing the cheapest representation (LZ or entropy LZ, RLE or raw) when encoding,
//! and decoding plus checksum verification with errors that name the block.

use crate::checksum::{checksum, BlockChecksum};
use crate::error::{Error, Result};
use crate::frame::{BlockHeader, BlockKind};
use crate::level::{Level, Method};
use crate::lz;

/// A block ready to be written: its header and payload.
pub struct EncodedBlock {
    pub header: BlockHeader,
    pub payload: Vec<u8>,
}

/// Encodes one block of at most the frame's block size (and at least one byte); `long` turns on
/// long-distance matching (entropy levels only).
pub fn encode_block(src: &[u8], level: Level, long: bool) -> EncodedBlock {
    let mut payload = Vec::with_capacity(src.len() / 2);
    let header = encode_block_into(src, level, long, &mut payload);
    EncodedBlock { header, payload }
}

/// Encodes one block into `payload` (cleared first, its memory reused); returns the header.
pub fn encode_block_into(
    src: &[u8],
    level: Level,
    long: bool,
    payload: &mut Vec<u8>,
) -> BlockHeader {
    debug_assert!(!src.is_empty() && src.len() <= u32::MAX as usize);
    let header = |kind, stored: usize| BlockHeader {
        kind,
        decoded_size: src.len() as u32,
        stored_size: stored as u32,
        checksum: checksum(src),
    };
    payload.clear();
    let kind = match level.method() {
        Method::Elz(p) => {
            crate::elz::compress_into(src, &p, long, payload);
            BlockKind::Elz
        }
        Method::Lz(p) => {
            lz::compress_into(src, &p, payload);
            BlockKind::Lz
        }
    };
    // A run of one byte compresses to a few bytes of LZ; RLE says the same in one.
    if payload.len() < 16 && src.iter().all(|&b| b == src[0]) {
        payload.clear();
        payload.push(src[0]);
        return header(BlockKind::Rle, 1);
    }
    if payload.len() >= src.len() {
        payload.clear();
        payload.extend_from_slice(src);
        return header(BlockKind::Raw, src.len());
    }
    header(kind, payload.len())
}

/// Decodes block number `block` (header at stream byte `offset`) into `out`, whose length is the
/// header's decoded size, and verifies its checksum.
pub fn decode_block(
    header: &BlockHeader,
    payload: &[u8],
    out: &mut [u8],
    block: u64,
    offset: u64,
) -> Result<()> {
    debug_assert_eq!(out.len(), header.decoded_size as usize);
    debug_assert_eq!(payload.len(), header.stored_size as usize);
    match header.kind {
        BlockKind::Raw => out.copy_from_slice(payload),
        BlockKind::Rle => out.fill(payload[0]),
        BlockKind::Lz => lz::decode(payload, out)
            .map_err(|e| Error::corrupt("LZ block", Some(block), offset, e.0))?,
        BlockKind::Elz => {
            let mut sum = BlockChecksum::new(out.len());
            crate::elz::decode_reporting(payload, out, |done| sum.advance(done))
                .map_err(|e| Error::corrupt("entropy LZ block", Some(block), offset, e.0))?;
            return verify(header, sum.finish(out), block, offset);
        }
        BlockKind::End => {
            return Err(Error::corrupt(
                "block",
                Some(block),
                offset,
                "end marker where a data block was expected",
            ))
        }
    }
    verify(header, checksum(out), block, offset)
}

/// Compares a block's checksum, `actual`, with the one its header stores.
fn verify(header: &BlockHeader, actual: u32, block: u64, offset: u64) -> Result<()> {
    if actual != header.checksum {
        return Err(Error::Checksum {
            block,
            offset,
            stored: header.checksum,
            actual,
        });
    }
    Ok(())
}
