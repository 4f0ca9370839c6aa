//! The dense layout's bf16 assembly on AVX-512 (F, BW, VBMI), 32 values a step: each value's
//! coded part (exponent and top mantissa bits) from its tANS symbol by a 256-entry table held
//! in eight registers (four two-register permutes, two blends), its verbatim part pulled out
//! of the bit plane with a byte permute and per-lane shifts, then the sign moved to bit 15.
//! The scalar loop in `dense.rs` is the reference; tests run both.
//!
//! FAST PATH: [`assemble_bf16`] checks every buffer length it relies on before its loop, so
//! its loads and stores stay inside the slices.

use std::arch::x86_64::*;

/// Whether this CPU has the instructions [`assemble_bf16`] uses.
pub fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vbmi")
}

/// Writes the bf16 words of the leading values that whole 32-value steps cover: value `i` is
/// `coded[syms[i]]` OR its verbatim part (`raw`, a plane of `low_bits + 1` bits per value: the
/// low mantissa bits, then the sign). Returns the values written, a multiple of 32; the caller
/// finishes the rest. A step loads 64 bytes of `raw`, so the plane's last bytes are left to
/// the caller too.
pub fn assemble_bf16(
    coded: &[u16; 256],
    low_bits: u32,
    syms: &[u8],
    raw: &[u8],
    out: &mut [u8],
) -> usize {
    assert!(available(), "assemble_bf16 needs AVX-512 F, BW and VBMI");
    assert!(
        (4..=7).contains(&low_bits),
        "bf16 keeps 4..=7 low mantissa bits"
    );
    let step_bytes = 4 * (low_bits as usize + 1); // 32 values of low_bits + 1 bits
    let by_raw = if raw.len() >= 64 {
        (raw.len() - 64) / step_bytes + 1
    } else {
        0
    };
    let steps = by_raw.min(syms.len() / 32).min(out.len() / 64);
    // SAFETY: the CPU has the features (checked above); step g reads syms[32g..32g + 32],
    // raw[g·step_bytes..g·step_bytes + 64] and writes out[64g..64g + 64], all inside their
    // slices for g < steps by the three bounds above.
    unsafe { assemble_avx512(coded, low_bits, syms, raw, out, steps) };
    steps * 32
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn assemble_avx512(
    coded: &[u16; 256],
    low_bits: u32,
    syms: &[u8],
    raw: &[u8],
    out: &mut [u8],
    steps: usize,
) {
    let w = low_bits + 1;
    // Lane i's verbatim part starts at bit i·w of the step.
    let (idx, shifts) = crate::bf16_avx512::lane_fields(w);
    // SAFETY: (whole body) the caller checked the CPU features and the slice lengths.
    unsafe {
        let idx = _mm512_loadu_si512(idx.as_ptr().cast());
        let shifts = _mm512_loadu_si512(shifts.as_ptr().cast());
        let field = _mm512_set1_epi16(((1u32 << w) - 1) as i16);
        let low_mask = _mm512_set1_epi16(((1u32 << low_bits) - 1) as i16);
        let to_sign = _mm512_set1_epi16(low_bits as i16);
        let t: [__m512i; 8] =
            std::array::from_fn(|j| _mm512_loadu_si512(coded.as_ptr().add(32 * j).cast()));
        let bit6 = _mm512_set1_epi16(64);
        let bit7 = _mm512_set1_epi16(128);
        let step_bytes = 4 * w as usize;
        for g in 0..steps {
            let s = _mm512_cvtepu8_epi16(_mm256_loadu_si256(syms.as_ptr().add(32 * g).cast()));
            // Each permute looks up the low six bits of s in 64 entries; bits 6 and 7 pick.
            let q0 = _mm512_permutex2var_epi16(t[0], s, t[1]);
            let q1 = _mm512_permutex2var_epi16(t[2], s, t[3]);
            let q2 = _mm512_permutex2var_epi16(t[4], s, t[5]);
            let q3 = _mm512_permutex2var_epi16(t[6], s, t[7]);
            let hi6 = _mm512_test_epi16_mask(s, bit6);
            let lo_half = _mm512_mask_blend_epi16(hi6, q0, q1);
            let hi_half = _mm512_mask_blend_epi16(hi6, q2, q3);
            let c = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(s, bit7), lo_half, hi_half);
            let bytes = _mm512_loadu_si512(raw.as_ptr().add(g * step_bytes).cast());
            let pairs = _mm512_permutexvar_epi8(idx, bytes);
            let r = _mm512_and_si512(_mm512_srlv_epi16(pairs, shifts), field);
            let sign = _mm512_slli_epi16::<15>(_mm512_srlv_epi16(r, to_sign));
            let word = _mm512_or_si512(c, _mm512_or_si512(sign, _mm512_and_si512(r, low_mask)));
            _mm512_storeu_si512(out.as_mut_ptr().add(64 * g).cast(), word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the scalar definition, for every bf16 split and lengths around the step and
    /// slack boundaries.
    #[test]
    fn matches_the_scalar_assembly() {
        if !available() {
            eprintln!("no AVX-512 VBMI here: the scalar path alone is tested");
            return;
        }
        let mut x = 0x9e37_79b9u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let coded: [u16; 256] = std::array::from_fn(|_| (next() as u16) & 0x7fff);
        for low_bits in 4..=7u32 {
            let w = low_bits as usize + 1;
            for n in [0usize, 31, 32, 64, 65, 300, 1000] {
                let syms: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                let raw: Vec<u8> = (0..(n * w).div_ceil(8)).map(|_| next() as u8).collect();
                let mut out = vec![0u8; 2 * n];
                let done = assemble_bf16(&coded, low_bits, &syms, &raw, &mut out);
                assert!(done <= n && done.is_multiple_of(32));
                assert!(n < 96 || done > 0, "n {n}: some steps taken");
                for i in 0..done {
                    let r = crate::bitpack::get(&raw, i, w as u32);
                    let want = coded[syms[i] as usize]
                        | ((r >> low_bits) << 15) as u16
                        | (r & ((1 << low_bits) - 1)) as u16;
                    assert_eq!(
                        u16::from_le_bytes([out[2 * i], out[2 * i + 1]]),
                        want,
                        "low_bits {low_bits} n {n} value {i}"
                    );
                }
            }
        }
    }
}
