//! The block checksum: the low 32 bits of XXH3-64 (seed 0) of a block's decoded bytes.

/// Checksum of decoded bytes, as stored in block headers and the index.
#[inline]
pub fn checksum(data: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(data) as u32
}
