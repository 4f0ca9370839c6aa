//! The block checksum: the low 32 bits of XXH3-64 (seed 0) of a block's decoded bytes.
//! `twox-hash` picks its AVX2 or SSE2 code at run time, so the check stays a small fraction of
//! decode time on every x86-64 machine.

/// Checksum of decoded bytes, as stored in block headers and the index.
#[inline]
pub fn checksum(data: &[u8]) -> u32 {
    twox_hash::XxHash3_64::oneshot(data) as u32
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_the_low_half_of_xxh3_64() {
        // Reference values of XXH3-64 with seed 0 (from the xxHash test vectors).
        assert_eq!(super::checksum(b""), 0x38D3_94C2_u32);
        assert_eq!(twox_hash::XxHash3_64::oneshot(b""), 0x2D06_8005_38D3_94C2);
    }
}
