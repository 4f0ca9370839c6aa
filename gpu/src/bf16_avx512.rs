//! The tiered layout's bf16 decode on AVX-512 (F, BW, VBMI, VBMI2), 32 values a step: tier-1
//! codes pulled out of their bit plane with a byte permute and per-lane shifts, escapes
//! filled with their tier-2 codes by one expand-load (the escapes' codes lie in order in the
//! tier-2 plane), exponent bits from a 96-entry table by permutes, sign and mantissa from the
//! verbatim byte. The scalar loop in `tiered.rs` is the reference; tests run both.
//!
//! FAST PATH: the crate's one use of `unsafe` for speed. [`tile`] checks every buffer length
//! it relies on before its loop, so its loads and stores stay inside the slices.

use std::arch::x86_64::*;

/// Whether this CPU has the instructions [`tile`] uses.
pub fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vbmi")
        && is_x86_feature_detected!("avx512vbmi2")
}

/// Extra bytes [`tile`] may read past the tier-1 codes it decodes.
pub const TIER1_SLACK: usize = 64;

/// One tile's coded planes, as [`tile`] reads them.
#[derive(Clone, Copy)]
pub struct Tile<'a> {
    /// The tile's tier-1 plane bytes, then at least [`TIER1_SLACK`] more.
    pub tier1: &'a [u8],
    /// Tier-1 code width, 1..=4, and its escape code.
    pub w1: u32,
    pub esc1: u16,
    /// The tile's tier-2 codes in order, at least one per value.
    pub tier2: &'a [u16],
    /// The output bits of each rank below `known`.
    pub exps: &'a [u16; 96],
    pub known: usize,
    /// The rank that marks a tier-3 value.
    pub marker: u16,
    /// Each value's sign and mantissa byte.
    pub raw: &'a [u8],
}

/// Decodes the first `raw.len() / 32 × 32` values of tile `t`: writes each value's rank to
/// `ranks` and its word to `out` (tier-3 values' words are the caller's). Returns the values
/// decoded, the tier-2 codes taken, and whether a rank was past the table (not the marker)
/// or was the marker.
pub fn tile(t: &Tile<'_>, ranks: &mut [u16], out: &mut [u8]) -> (usize, usize, bool, bool) {
    let (tier1, w1, tier2, exps, marker) = (t.tier1, t.w1, t.tier2, t.exps, t.marker);
    let groups = t.raw.len() / 32;
    assert!(available(), "tile needs AVX-512 F, BW, VBMI and VBMI2");
    assert!((1..=4).contains(&w1) && usize::from(marker) < exps.len());
    assert!(tier1.len() >= groups * 4 * w1 as usize + TIER1_SLACK);
    assert!(tier2.len() >= groups * 32 && ranks.len() >= groups * 32);
    assert!(out.len() >= groups * 64);
    // SAFETY: the CPU has the features (checked above); every pointer the loop forms is
    // inside its slice by the length checks above: tier-1 loads of 64 bytes at 4·w1 bytes a
    // group, at most 32 tier-2 codes a group and never more than one per value so far,
    // 32 ranks, 32 raw bytes and 64 output bytes a group.
    unsafe { tile_avx512(t, ranks, out) }
}

/// Where each of 32 lanes finds its `w`-bit field (w ≤ 9) in a plane of 32 such fields: the
/// byte-permute indices of the field's two bytes (per 16-bit lane) and the right shift within
/// them. Shared by the AVX-512 paths that pull fixed-width fields out of bit planes.
pub fn lane_fields(w: u32) -> ([u8; 64], [u16; 32]) {
    let (mut idx, mut shifts) = ([0u8; 64], [0u16; 32]);
    for i in 0..32 {
        let bit = i * w as usize;
        idx[2 * i] = (bit / 8) as u8;
        idx[2 * i + 1] = (bit / 8 + 1) as u8;
        shifts[i] = (bit % 8) as u16;
    }
    (idx, shifts)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
unsafe fn tile_avx512(
    t: &Tile<'_>,
    ranks: &mut [u16],
    out: &mut [u8],
) -> (usize, usize, bool, bool) {
    let Tile {
        tier1,
        w1,
        esc1,
        tier2,
        exps,
        known,
        marker,
        raw,
    } = *t;
    let groups = raw.len() / 32;
    let (idx, shifts) = lane_fields(w1);
    // SAFETY: (whole body) the caller checked the CPU features and the slice lengths
    // (see `tile`).
    unsafe {
        let idx = _mm512_loadu_si512(idx.as_ptr().cast());
        let shifts = _mm512_loadu_si512(shifts.as_ptr().cast());
        let mask = _mm512_set1_epi16(((1u32 << w1) - 1) as i16);
        let esc = _mm512_set1_epi16(esc1 as i16);
        let marker_v = _mm512_set1_epi16(marker as i16);
        let known_v = _mm512_set1_epi16(known.min(96) as i16);
        let sixty_four = _mm512_set1_epi16(64);
        let t0 = _mm512_loadu_si512(exps.as_ptr().cast());
        let t1 = _mm512_loadu_si512(exps.as_ptr().add(32).cast());
        let t2 = _mm512_loadu_si512(exps.as_ptr().add(64).cast());
        let sign_bit = _mm512_set1_epi16(0x80);
        let low7 = _mm512_set1_epi16(0x7f);
        let (mut k, mut past, mut third) = (0usize, 0u32, 0u32);
        for g in 0..groups {
            let bytes = _mm512_loadu_si512(tier1.as_ptr().add(g * 4 * w1 as usize).cast());
            let pairs = _mm512_permutexvar_epi8(idx, bytes);
            let c1 = _mm512_and_si512(_mm512_srlv_epi16(pairs, shifts), mask);
            let escaped = _mm512_cmpeq_epi16_mask(c1, esc);
            let c2 = _mm512_maskz_expandloadu_epi16(escaped, tier2.as_ptr().add(k).cast());
            k += escaped.count_ones() as usize;
            let rank = _mm512_add_epi16(c1, c2);
            _mm512_storeu_si512(ranks.as_mut_ptr().add(g * 32).cast(), rank);
            let low = _mm512_permutex2var_epi16(t0, rank, t1);
            let high = _mm512_permutexvar_epi16(rank, t2);
            let bits =
                _mm512_mask_blend_epi16(_mm512_cmpge_epu16_mask(rank, sixty_four), low, high);
            let is_marker = _mm512_cmpeq_epi16_mask(rank, marker_v);
            third |= is_marker;
            past |= _mm512_cmpge_epu16_mask(rank, known_v) & !is_marker;
            let r = _mm512_cvtepu8_epi16(_mm256_loadu_si256(raw.as_ptr().add(g * 32).cast()));
            let sign = _mm512_slli_epi16::<8>(_mm512_and_si512(r, sign_bit));
            let word = _mm512_or_si512(bits, _mm512_or_si512(sign, _mm512_and_si512(r, low7)));
            _mm512_storeu_si512(out.as_mut_ptr().add(g * 64).cast(), word);
        }
        (groups * 32, k, past != 0, third != 0)
    }
}
