//! The block checksum: the low 32 bits of XXH3-64 (seed 0) of a block's decoded bytes.
//!
//! The check runs over every decoded byte, so its speed bounds decode speed. Inputs longer than
//! 240 bytes take XXH3's "long" path, whose accumulate loop is written here for AVX-512 (FAST
//! PATH, chosen at run time); everything else, and every machine without AVX-512, uses the
//! `twox-hash` implementation (which itself picks AVX2 or SSE2 at run time). Tests hold the two
//! to the same value for every length.

/// Checksum of decoded bytes, as stored in block headers and the index.
#[inline]
pub fn checksum(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() > 240 && avx512::available() {
        // SAFETY: the CPU supports AVX-512F, checked just above.
        return unsafe { avx512::xxh3_64_long(data) } as u32;
    }
    twox_hash::XxHash3_64::oneshot(data) as u32
}

/// [`checksum`] of bytes that come in pieces: the same value as `checksum` of them all, for
/// output checked as it is passed on rather than once it is all in memory.
pub struct Checksum(twox_hash::XxHash3_64);

impl Default for Checksum {
    fn default() -> Self {
        Checksum(twox_hash::XxHash3_64::with_seed(0))
    }
}

impl Checksum {
    /// Takes in the next piece.
    pub fn update(&mut self, piece: &[u8]) {
        std::hash::Hasher::write(&mut self.0, piece);
    }

    /// The checksum of every piece so far, in order.
    pub fn value(&self) -> u32 {
        std::hash::Hasher::finish(&self.0) as u32
    }
}

/// [`checksum`] of a block of known length, taken in while the block is decoded: each
/// complete 1 KiB stretch of XXH3 input is hashed as soon as the decoder reports it written,
/// while it is still in cache (an 8 MiB block hashed once at the end is read back from
/// memory, 5-9% of decode time). Without AVX-512 it all happens in [`BlockChecksum::finish`].
pub struct BlockChecksum {
    #[cfg(target_arch = "x86_64")]
    long: Option<avx512::Long>,
}

impl BlockChecksum {
    /// For a block of `len` bytes.
    pub fn new(len: usize) -> Self {
        BlockChecksum {
            #[cfg(target_arch = "x86_64")]
            long: (len > 240 && avx512::available()).then(|| avx512::Long::new(len)),
        }
    }

    /// Takes in what of `written` (the block's first bytes, as decoded so far) is complete.
    #[inline]
    pub fn advance(&mut self, written: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(long) = &mut self.long {
            // SAFETY: `long` exists only where AVX-512F is available.
            unsafe { long.advance(written) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = written;
    }

    /// The checksum of `block`, the whole block (of which every piece passed to
    /// [`BlockChecksum::advance`] was the start).
    pub fn finish(self, block: &[u8]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if let Some(long) = self.long {
            // SAFETY: as in `advance`.
            return unsafe { long.finish(block) } as u32;
        }
        checksum(block)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// XXH3's default 192-byte secret (from the XXH3 specification).
    #[rustfmt::skip]
    const SECRET: [u8; 192] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
        0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
        0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
        0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
        0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
        0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
        0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
        0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
        0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
        0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
        0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
        0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
    ];
    const PRIME32_1: u64 = 0x9E37_79B1;
    const PRIME32_2: u64 = 0x85EB_CA77;
    const PRIME32_3: u64 = 0xC2B2_AE3D;
    const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
    const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
    const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
    const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;
    const PRIME_MX1: u64 = 0x1656_6791_9E37_79F9;
    const STRIPE: usize = 64;
    const STRIPES_PER_BLOCK: usize = (SECRET.len() - STRIPE) / 8;
    const BLOCK: usize = STRIPE * STRIPES_PER_BLOCK;

    /// Whether AVX-512F can be used (detected once).
    pub fn available() -> bool {
        static STATE: AtomicU8 = AtomicU8::new(0);
        match STATE.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let yes = std::arch::is_x86_feature_detected!("avx512f");
                STATE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
                yes
            }
        }
    }

    /// What one 64-byte stripe adds to the accumulators:
    /// lane `i` gets `d[i ^ 1] + lo32(d[i] ^ k[i]) * hi32(d[i] ^ k[i])`. Stripes only ever add
    /// to the accumulators, so partial sums over stripes can be formed in any order.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn stripe(stripe: *const u8, secret: *const u8) -> __m512i {
        // SAFETY: the caller keeps this function's contract (its `# Safety`).
        unsafe {
            let d = _mm512_loadu_si512(stripe as *const _);
            let k = _mm512_loadu_si512(secret as *const _);
            let dk = _mm512_xor_si512(d, k);
            let prod = _mm512_mul_epu32(dk, _mm512_srli_epi64::<32>(dk));
            // Swap the two u64 lanes of every 128-bit pair: lane i receives d[i ^ 1].
            let swapped = _mm512_shuffle_epi32::<0b01_00_11_10>(d);
            _mm512_add_epi64(prod, swapped)
        }
    }

    /// Adds stripes `0..n` starting at `base` (secret offsets `8 * s`) to `acc`, with four
    /// independent partial sums so the adds do not form one long dependency chain.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn accumulate(acc: __m512i, base: *const u8, secret: *const u8, n: usize) -> __m512i {
        // SAFETY: the caller keeps this function's contract (its `# Safety`).
        unsafe {
            let z = _mm512_setzero_si512();
            let (mut a, mut b, mut c, mut d) = (acc, z, z, z);
            let mut s = 0;
            while s + 4 <= n {
                a = _mm512_add_epi64(a, stripe(base.add(s * STRIPE), secret.add(s * 8)));
                b = _mm512_add_epi64(
                    b,
                    stripe(base.add((s + 1) * STRIPE), secret.add((s + 1) * 8)),
                );
                c = _mm512_add_epi64(
                    c,
                    stripe(base.add((s + 2) * STRIPE), secret.add((s + 2) * 8)),
                );
                d = _mm512_add_epi64(
                    d,
                    stripe(base.add((s + 3) * STRIPE), secret.add((s + 3) * 8)),
                );
                s += 4;
            }
            while s < n {
                a = _mm512_add_epi64(a, stripe(base.add(s * STRIPE), secret.add(s * 8)));
                s += 1;
            }
            _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d))
        }
    }

    /// `acc = (acc ^ (acc >> 47) ^ key) * PRIME32_1` on each u64 lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn scramble(acc: __m512i, secret: *const u8) -> __m512i {
        // SAFETY: the caller keeps this function's contract (its `# Safety`).
        unsafe {
            let k = _mm512_loadu_si512(secret as *const _);
            let a = _mm512_xor_si512(_mm512_xor_si512(acc, _mm512_srli_epi64::<47>(acc)), k);
            let p = _mm512_set1_epi64(PRIME32_1 as i64);
            let lo = _mm512_mul_epu32(a, p);
            let hi = _mm512_mul_epu32(_mm512_srli_epi64::<32>(a), p);
            _mm512_add_epi64(lo, _mm512_slli_epi64::<32>(hi))
        }
    }

    /// XXH3-64 with seed 0 of `data`, for `data.len() > 240`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn xxh3_64_long(data: &[u8]) -> u64 {
        // SAFETY: the caller keeps this function's contract (its `# Safety`).
        unsafe { Long::new(data.len()).finish(data) }
    }

    /// XXH3-64's long path over an input of known length taken in from its start: the
    /// accumulators after the blocks folded so far.
    pub struct Long {
        acc: [u64; 8],
        len: usize,
        blocks_done: usize,
    }

    impl Long {
        pub fn new(len: usize) -> Self {
            debug_assert!(len > 240);
            Long {
                acc: [
                    PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5,
                    PRIME32_1,
                ],
                len,
                blocks_done: 0,
            }
        }

        /// Folds in every complete block of `data` (the input's first bytes) not yet folded.
        /// XXH3 folds the blocks before the last byte: `(len - 1) / BLOCK` of them.
        ///
        /// # Safety
        /// The CPU must support AVX-512F.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn advance(&mut self, data: &[u8]) {
            // SAFETY: the caller keeps this function's contract (its `# Safety`).
            unsafe {
                let ready = (data.len() / BLOCK).min((self.len - 1) / BLOCK);
                if ready <= self.blocks_done {
                    return;
                }
                let (p, s) = (data.as_ptr(), SECRET.as_ptr());
                let mut acc = _mm512_loadu_si512(self.acc.as_ptr() as *const _);
                for b in self.blocks_done..ready {
                    acc = accumulate(acc, p.add(b * BLOCK), s, STRIPES_PER_BLOCK);
                    acc = scramble(acc, s.add(SECRET.len() - STRIPE));
                }
                _mm512_storeu_si512(self.acc.as_mut_ptr() as *mut _, acc);
                self.blocks_done = ready;
            }
        }

        /// The hash of `data`, the whole input.
        ///
        /// # Safety
        /// The CPU must support AVX-512F.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn finish(mut self, data: &[u8]) -> u64 {
            // SAFETY: the caller keeps this function's contract (its `# Safety`).
            unsafe {
                debug_assert_eq!(data.len(), self.len);
                self.advance(data);
                let (len, blocks) = (self.len, self.blocks_done);
                let (p, s) = (data.as_ptr(), SECRET.as_ptr());
                let mut acc = _mm512_loadu_si512(self.acc.as_ptr() as *const _);
                let stripes = ((len - 1) - BLOCK * blocks) / STRIPE;
                acc = accumulate(acc, p.add(blocks * BLOCK), s, stripes);
                acc = _mm512_add_epi64(
                    acc,
                    stripe(p.add(len - STRIPE), s.add(SECRET.len() - STRIPE - 7)),
                );
                let mut lanes = [0u64; 8];
                _mm512_storeu_si512(lanes.as_mut_ptr() as *mut _, acc);
                merge(&lanes, (len as u64).wrapping_mul(PRIME64_1))
            }
        }
    }

    fn secret_u64(at: usize) -> u64 {
        u64::from_le_bytes(SECRET[at..at + 8].try_into().unwrap())
    }

    fn merge(acc: &[u64; 8], start: u64) -> u64 {
        let mut h = start;
        for i in 0..4 {
            let a = u128::from(acc[2 * i] ^ secret_u64(11 + 16 * i));
            let b = u128::from(acc[2 * i + 1] ^ secret_u64(11 + 16 * i + 8));
            let m = a * b;
            h = h.wrapping_add((m as u64) ^ ((m >> 64) as u64));
        }
        h ^= h >> 37;
        h = h.wrapping_mul(PRIME_MX1);
        h ^ (h >> 32)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_the_low_half_of_xxh3_64() {
        // XXH3-64 of the empty input, seed 0, is 2D06800538D394C2 (xxHash test vectors).
        assert_eq!(super::checksum(b""), 0x38D3_94C2_u32);
        assert_eq!(twox_hash::XxHash3_64::oneshot(b""), 0x2D06_8005_38D3_94C2);
    }

    #[test]
    fn pieces_checksum_as_the_whole() {
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| ((i * 7) ^ (i >> 5)) as u8)
            .collect();
        for cuts in [&[][..], &[1, 240, 241][..], &[1000, 131_072, 200_000][..]] {
            let mut c = super::Checksum::default();
            let mut at = 0;
            for &cut in cuts.iter().chain([data.len()].iter()) {
                c.update(&data[at..cut]);
                at = cut;
            }
            assert_eq!(c.value(), super::checksum(&data), "{cuts:?}");
        }
        assert_eq!(super::Checksum::default().value(), super::checksum(b""));
    }

    #[test]
    fn a_block_taken_in_as_decoded_checksums_as_the_whole() {
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| ((i * 13) ^ (i >> 7)) as u8)
            .collect();
        for len in [0, 17, 240, 241, 1024, 1025, 2048, 2049, 131_072, 300_000] {
            let block = &data[..len];
            for step in [1000, 1024, 4096, 131_072] {
                let mut c = super::BlockChecksum::new(len);
                let mut at = 0;
                while at < len {
                    at = (at + step).min(len);
                    c.advance(&block[..at]);
                }
                assert_eq!(c.finish(block), super::checksum(block), "{len} by {step}");
            }
            // Nothing reported along the way.
            assert_eq!(
                super::BlockChecksum::new(len).finish(block),
                super::checksum(block)
            );
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn avx512_path_matches_the_reference_at_every_length() {
        if !super::avx512::available() {
            // Nothing else to compare: here the reference path is the only one in use.
            eprintln!("checksum paths tested: reference only (no AVX-512F here)");
            return;
        }
        eprintln!("checksum paths tested: AVX-512 against the reference");
        let data: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        for len in (241..4200).chain([8191, 8192, 8193, 20_000]) {
            let d = &data[..len];
            // SAFETY: AVX-512F is available (checked above).
            let fast = unsafe { super::avx512::xxh3_64_long(d) };
            assert_eq!(fast, twox_hash::XxHash3_64::oneshot(d), "length {len}");
        }
    }
}
