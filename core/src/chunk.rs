//! Chunks: one block with its 13-byte header and no frame around it, for containers built on
//! glyd-core (record archives store each column stream as a chunk). A chunk is self-describing
//! (representation, sizes, checksum of its decoded bytes) and decodes on its own.

use crate::block::{decode_block, encode_block_into};
use crate::error::{Error, Result};
use crate::frame::{BlockHeader, BLOCK_HEADER_LEN};
use crate::level::Level;

/// The largest decoded chunk: a block's decoded size is a 32-bit field.
pub const MAX_CHUNK: usize = u32::MAX as usize;

/// Appends `src` (1 ..= [`MAX_CHUNK`] bytes) to `out` as a chunk coded at `level`: the block
/// header, then the payload. Returns the bytes appended.
pub fn encode_chunk(src: &[u8], level: Level, out: &mut Vec<u8>) -> usize {
    assert!(
        !src.is_empty() && src.len() <= MAX_CHUNK,
        "chunk of {} bytes",
        src.len()
    );
    let mut payload = Vec::new();
    let header = encode_block_into(src, level, false, &mut payload);
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(&payload);
    BLOCK_HEADER_LEN + payload.len()
}

/// The decoded size the chunk starting `src` declares in its header, without decoding it (for
/// a reader that checks what a set of chunks will take before it decodes any).
pub fn declared_size(src: &[u8], offset: u64) -> Result<u64> {
    let head: &[u8; BLOCK_HEADER_LEN] = src
        .get(..BLOCK_HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(Error::Truncated {
            what: "chunk header",
            offset,
        })?;
    Ok(u64::from(
        BlockHeader::parse(head, MAX_CHUNK, 0, offset)?.decoded_size,
    ))
}

/// Decodes the chunk that is exactly `src`, found at byte `offset` of its container, into a new
/// buffer, refusing one that claims to decode to more than `max_decoded` bytes (so a hostile
/// header cannot make us allocate). Verifies the checksum.
pub fn decode_chunk(src: &[u8], max_decoded: usize, offset: u64) -> Result<Vec<u8>> {
    let head: &[u8; BLOCK_HEADER_LEN] = src
        .get(..BLOCK_HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(Error::Truncated {
            what: "chunk header",
            offset,
        })?;
    let header = BlockHeader::parse(head, max_decoded.min(MAX_CHUNK), 0, offset)?;
    let payload = &src[BLOCK_HEADER_LEN..];
    if payload.len() != header.stored_size as usize {
        return Err(Error::Corrupt {
            what: "chunk",
            block: None,
            offset,
            detail: format!(
                "header says {} stored bytes, the container gives it {}",
                header.stored_size,
                payload.len()
            ),
        });
    }
    let mut out = vec![0u8; header.decoded_size as usize];
    decode_block(&header, payload, &mut out, 0, offset)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_at_every_level() {
        let data = b"ts=1700000000 level=INFO msg=\"hello\"\n".repeat(500);
        for level in [Level::Fast, Level::Lz, Level::Max, Level::Ultra] {
            let mut out = vec![7u8];
            let n = encode_chunk(&data, level, &mut out);
            assert_eq!(n, out.len() - 1);
            assert!(n < data.len() / 10);
            assert_eq!(decode_chunk(&out[1..], data.len(), 1).unwrap(), data);
            // A tighter limit than the chunk's decoded size is refused before any work.
            assert!(decode_chunk(&out[1..], data.len() - 1, 1).is_err());
            // Every truncation is an error.
            for cut in 0..out.len() - 1 {
                assert!(decode_chunk(&out[1..1 + cut], data.len(), 1).is_err());
            }
        }
    }
}
