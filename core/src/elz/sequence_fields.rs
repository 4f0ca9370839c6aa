//! Sequence fields: each sequence's literal length, match length and offset value, from its
//! three codes and its bits of the extra-bits stream (`docs/FORMAT.md` §6.4), read a run of
//! up to [`RUN`] sequences at a time ahead of the sequence pass.
//!
//! Within a run the sequences are independent once each one's bit position is known, a prefix
//! sum of their extra-bit counts; what chains one sequence to the next, the repeat offsets,
//! resolves afterwards in the sequence pass. The scalar reader takes a sequence at a time.
//! The FAST PATH takes sixteen at a time with AVX-512: codes to bases and bit counts in lanes,
//! the bit positions by a prefix sum across lanes, the extra bits by two gathers.

use super::{LL_CODE, MIN_MATCH, ML_CODE};
use crate::lz::LzError;

/// Where the sequence pass's reading has got to: the output its sequences fill ends at `rop`,
/// the literals they take at `rlp`.
pub(super) struct Cursor {
    pub rop: usize,
    pub rlp: usize,
}

/// Most sequences in a run. The reader checks its position in the stream once a run.
pub(super) const RUN: usize = 64;

/// Most extra bits one sequence takes: 26 each for its lengths, 27 for its offset value.
const MAX_SEQ_EXTRA_BITS: usize = 79;

/// Bytes the extra-bits stream must have after its end (zeros, or the payload that follows it:
/// no valid field takes bits from them): a run that starts inside the stream cannot load past
/// them, however many bits each of its sequences takes (a corrupt payload's may run off the
/// stream's end; the next run's check catches them).
pub(super) const EXTRA_PAD: usize = RUN * MAX_SEQ_EXTRA_BITS / 8 + 16;

/// A run's fields, by sequence: literal length, match length (from [`MIN_MATCH`] up), and
/// offset value (repeat offsets unresolved).
pub(super) struct Run {
    pub ll: [u32; RUN],
    pub ml: [u32; RUN],
    pub ov: [u32; RUN],
}

impl Run {
    pub fn new() -> Self {
        Run {
            ll: [0; RUN],
            ml: [0; RUN],
            ov: [0; RUN],
        }
    }
}

/// Length code tables, (base, extra bits) by code, in fixed arrays: a code masked to the
/// array size indexes them without a bounds check (codes were range-checked at table read).
struct Tables {
    ll: [(u32, u32); 128],
    ml: [(u32, u32); 128],
}

fn tables() -> &'static Tables {
    static T: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = Tables {
            ll: [(0, 0); 128],
            ml: [(0, 0); 128],
        };
        for (c, e) in LL_CODE.table().into_iter().enumerate() {
            t.ll[c] = e;
        }
        for (c, e) in ML_CODE.table().into_iter().enumerate() {
            t.ml[c] = e;
        }
        t
    })
}

/// The reader over a section's extra-bits stream.
pub(super) struct ExtraBits<'a> {
    t: &'static Tables,
    /// The stream followed by [`EXTRA_PAD`] bytes.
    extra: &'a [u8],
    /// Bits in the stream (without its padding).
    bits: usize,
    /// Bits read so far: the only serial chain through the stream.
    pub bit: usize,
}

impl<'a> ExtraBits<'a> {
    /// A reader over `extra`, a stream of `len` bytes followed by [`EXTRA_PAD`] bytes.
    pub fn new(extra: &'a [u8], len: usize) -> Self {
        assert!(
            extra.len() >= len + EXTRA_PAD,
            "extra bits stream without its padding"
        );
        ExtraBits {
            t: tables(),
            extra,
            bits: len * 8,
            bit: 0,
        }
    }

    /// Reads the fields of the sequences whose codes are `llc`, `mlc` and `ofc` (one length,
    /// at most [`RUN`]) into `run`; with `AVX512` (callers compiled with it, on a CPU that
    /// has it), sixteen at a time.
    #[inline(always)]
    pub fn read_run<const AVX512: bool>(
        &mut self,
        [llc, mlc, ofc]: [&[u8]; 3],
        run: &mut Run,
    ) -> Result<(), LzError> {
        let n = llc.len();
        assert!(n <= RUN && mlc.len() == n && ofc.len() == n);
        // What keeps every load of the run inside the padding.
        if self.bit > self.bits {
            return Err(LzError("extra bits stream read past its end"));
        }
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if AVX512 {
            while done + 16 <= n {
                let at = done..done + 16;
                let codes = [&llc[at.clone()], &mlc[at.clone()], &ofc[at.clone()]];
                let outs = [
                    &mut run.ll[at.clone()],
                    &mut run.ml[at.clone()],
                    &mut run.ov[at],
                ];
                // SAFETY: `AVX512` is set only in builds compiled with AVX-512 and run where
                // the CPU has it ([`crate::cpu::has_avx512`]); the run started inside the
                // stream and a run reads at most RUN * MAX_SEQ_EXTRA_BITS bits, so every
                // 8-byte gather ends inside the padding.
                match unsafe { avx512::read16(codes, self.extra, self.bit, outs) } {
                    Some(bit) => self.bit = bit,
                    // Lengths in the millions: the scalar reader takes the rest.
                    None => break,
                }
                done += 16;
            }
        }
        for i in done..n {
            (run.ll[i], run.ml[i], run.ov[i]) = self.one(llc[i], mlc[i], ofc[i]);
        }
        Ok(())
    }

    /// The extra bits from bit `bit` on, with one unaligned load.
    #[inline(always)]
    fn load(&self, bit: usize) -> u64 {
        // SAFETY: the run being read started inside the stream (`read_run`) and reads at most
        // `RUN * MAX_SEQ_EXTRA_BITS` bits, so `bit / 8 + 8 <= extra.len()`, the stream being
        // followed by EXTRA_PAD bytes.
        let w =
            unsafe { std::ptr::read_unaligned(self.extra.as_ptr().add(bit >> 3).cast::<u64>()) };
        u64::from_le(w) >> (bit & 7)
    }

    /// One sequence's (literal length, match length, offset value).
    #[inline(always)]
    fn one(&mut self, lc: u8, mc: u8, oc: u8) -> (u32, u32, u32) {
        let (lbase, lbits) = self.t.ll[lc as usize & 127];
        let (mbase, mbits) = self.t.ml[mc as usize & 127];
        let ob = u32::from(oc) & 31;
        // All three fields from one load where they fit in 56 bits (nearly always).
        let total = lbits + mbits + ob;
        let (lx, mx, ox) = if total <= 56 {
            let v = self.load(self.bit);
            self.bit += total as usize;
            (
                v & ((1 << lbits) - 1),
                (v >> lbits) & ((1 << mbits) - 1),
                (v >> (lbits + mbits)) & ((1 << ob) - 1),
            )
        } else {
            let lx = self.load(self.bit) & ((1 << lbits) - 1);
            self.bit += lbits as usize;
            let mx = self.load(self.bit) & ((1 << mbits) - 1);
            self.bit += mbits as usize;
            let ox = self.load(self.bit) & ((1 << ob) - 1);
            self.bit += ob as usize;
            (lx, mx, ox)
        };
        (
            lbase + lx as u32,
            mbase + mx as u32 + MIN_MATCH as u32,
            (1u32 << ob) + ox as u32,
        )
    }
}

/// FAST PATH: sixteen sequences' fields at a time in AVX-512 lanes.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use super::super::{LL_CODE, MIN_MATCH, ML_CODE};
    use std::arch::x86_64::*;

    /// Reads the fields of the sixteen sequences whose codes are `codes` (literal-length,
    /// match-length, offset) from bit `bit` of `extra` into `outs` (literal lengths, match
    /// lengths, offset values); returns the bit after them, or `None` (nothing read) where one
    /// of them takes more than 56 bits.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F and BMI2, and `extra` must hold 8 bytes from byte
    /// `(bit + 15 * 56) / 8`.
    #[target_feature(enable = "avx512f,bmi2")]
    pub(super) unsafe fn read16(
        codes: [&[u8]; 3],
        extra: &[u8],
        bit: usize,
        outs: [&mut [u32]; 3],
    ) -> Option<usize> {
        // SAFETY: the caller keeps this function's contract (its `# Safety`).
        unsafe {
            assert!(codes.iter().all(|c| c.len() == 16) && outs.iter().all(|o| o.len() == 16));
            let widen = |c: &[u8]| _mm512_cvtepu8_epi32(_mm_loadu_si128(c.as_ptr().cast()));
            let (lc, mc, oc) = (widen(codes[0]), widen(codes[1]), widen(codes[2]));
            let (lbase, lbits) = length_fields(lc, LL_CODE.direct_log());
            let (mbase, mbits) = length_fields(mc, ML_CODE.direct_log());
            let one = _mm512_set1_epi32(1);
            let obase = _mm512_sllv_epi32(one, oc);
            let total = _mm512_add_epi32(_mm512_add_epi32(lbits, mbits), oc);
            if _mm512_cmpgt_epu32_mask(total, _mm512_set1_epi32(56)) != 0 {
                return None;
            }
            // Each sequence's first bit: an exclusive prefix sum of the counts across the lanes.
            let end = prefix_sum(total);
            let start = _mm512_sub_epi32(end, total);
            let used = _mm_extract_epi32::<3>(_mm512_extracti32x4_epi32::<3>(end)) as u32;
            // Eight lanes of 64 bits at a time from here: the extra bits by gathers of 8 bytes.
            let halves =
                |v: __m512i| [_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v)];
            let wide = |v: __m256i| _mm512_cvtepu32_epi64(v);
            let mask = |n: __m512i| {
                let one = _mm512_set1_epi64(1);
                _mm512_sub_epi64(_mm512_sllv_epi64(one, n), one)
            };
            let (lbits, mbits, obits) = (halves(lbits), halves(mbits), halves(oc));
            let (lbase, mbase, obase) = (halves(lbase), halves(mbase), halves(obase));
            let mut fields = [[_mm256_setzero_si256(); 2]; 3];
            for (h, start) in halves(start).into_iter().enumerate() {
                let pos = _mm512_add_epi64(wide(start), _mm512_set1_epi64(bit as i64));
                let bytes = _mm512_srli_epi64::<3>(pos);
                let w = _mm512_i64gather_epi64::<1>(bytes, extra.as_ptr().cast::<i64>());
                let w = _mm512_srlv_epi64(w, _mm512_and_si512(pos, _mm512_set1_epi64(7)));
                let (lb, mb, ob) = (wide(lbits[h]), wide(mbits[h]), wide(obits[h]));
                let lx = _mm512_and_si512(w, mask(lb));
                let w = _mm512_srlv_epi64(w, lb);
                let mx = _mm512_and_si512(w, mask(mb));
                let ox = _mm512_and_si512(_mm512_srlv_epi64(w, mb), mask(ob));
                let min_match = _mm256_set1_epi32(MIN_MATCH as i32);
                let ml = _mm256_add_epi32(_mm512_cvtepi64_epi32(mx), mbase[h]);
                fields[0][h] = _mm256_add_epi32(_mm512_cvtepi64_epi32(lx), lbase[h]);
                fields[1][h] = _mm256_add_epi32(ml, min_match);
                fields[2][h] = _mm256_add_epi32(_mm512_cvtepi64_epi32(ox), obase[h]);
            }
            // Stored whole: the sequence pass loads them sixteen lanes at a time, and a load that
            // spans two stores waits for both to reach the cache.
            for (out, [lo, hi]) in outs.into_iter().zip(fields) {
                let v = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                _mm512_storeu_si512(out.as_mut_ptr().cast(), v);
            }
            Some(bit + used as usize)
        }
    }

    /// Inclusive prefix sums across the lanes: lane i gets the sum of lanes 0..=i (lane i plus
    /// lane i - k, for k = 1, 2, 4, 8).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(in crate::elz) fn prefix_sum(v: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        let v = _mm512_add_epi32(v, _mm512_alignr_epi32::<15>(v, zero));
        let v = _mm512_add_epi32(v, _mm512_alignr_epi32::<14>(v, zero));
        let v = _mm512_add_epi32(v, _mm512_alignr_epi32::<12>(v, zero));
        _mm512_add_epi32(v, _mm512_alignr_epi32::<8>(v, zero))
    }

    /// (base, extra bit count) of sixteen length codes of a scheme with `direct_log`
    /// ([`super::super::LengthCode`]): below 2^d a code is its value, without extra bits;
    /// above, code 2^d + 2 (h − d) + m has h − 1 extra bits over a base of 2^h + m 2^(h−1).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn length_fields(c: __m512i, d: u32) -> (__m512i, __m512i) {
        let one = _mm512_set1_epi32(1);
        let direct = _mm512_cmplt_epu32_mask(c, _mm512_set1_epi32(1 << d));
        let j = _mm512_sub_epi32(c, _mm512_set1_epi32(1 << d));
        let h = _mm512_add_epi32(_mm512_srli_epi32::<1>(j), _mm512_set1_epi32(d as i32));
        let bits = _mm512_sub_epi32(h, one);
        let m = _mm512_and_si512(j, one);
        // (Lanes with direct codes compute garbage here; the blends drop it.)
        let base = _mm512_or_si512(_mm512_sllv_epi32(one, h), _mm512_sllv_epi32(m, bits));
        (
            _mm512_mask_blend_epi32(direct, base, c),
            _mm512_maskz_mov_epi32(!direct, bits),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elz::OF_ALPHABET;

    /// Runs of codes over the whole alphabets, with random extra bits; some runs have lengths
    /// whose fields pass 56 bits together.
    fn runs() -> Vec<([Vec<u8>; 3], Vec<u8>)> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..400)
            .map(|k| {
                let n = [RUN, 16, 17, 47, 1, 0][k % 6];
                let long = k % 5 == 0;
                let code = |next: &mut dyn FnMut() -> u64, alphabet: usize| {
                    let a = if long { alphabet } else { alphabet.min(24) };
                    (next() % a as u64) as u8
                };
                let llc = (0..n)
                    .map(|_| code(&mut next, LL_CODE.alphabet()))
                    .collect();
                let mlc = (0..n)
                    .map(|_| code(&mut next, ML_CODE.alphabet()))
                    .collect();
                let ofc = (0..n).map(|_| code(&mut next, OF_ALPHABET)).collect();
                let bytes = (n * MAX_SEQ_EXTRA_BITS).div_ceil(8);
                let mut extra: Vec<u8> = (0..bytes).map(|_| next() as u8).collect();
                extra.resize(bytes + EXTRA_PAD, 0);
                ([llc, mlc, ofc], extra)
            })
            .collect()
    }

    fn read<const AVX512: bool>(codes: &[Vec<u8>; 3], extra: &[u8]) -> (Vec<u32>, usize) {
        let mut r = ExtraBits::new(extra, extra.len() - EXTRA_PAD);
        let mut run = Run::new();
        r.read_run::<AVX512>([&codes[0], &codes[1], &codes[2]], &mut run)
            .unwrap();
        let n = codes[0].len();
        let fields = [&run.ll[..n], &run.ml[..n], &run.ov[..n]].concat();
        (fields, r.bit)
    }

    #[test]
    fn scalar_fields_follow_the_length_codes() {
        let (codes, extra) = ([vec![3, 17], vec![0, 40], vec![0, 5]], {
            // Sequence 1 takes no bits; sequence 2: ll code 17 (base 24, 3 bits), ml code 40
            // (base 512, 8 bits), offset code 5 (base 32, 5 bits).
            let v: u64 = 0b101 | 0b1000_0001 << 3 | 0b10011 << 11;
            let mut e = v.to_le_bytes().to_vec();
            e.resize(8 + EXTRA_PAD, 0);
            e
        });
        let (fields, bit) = read::<false>(&codes, &extra);
        assert_eq!(fields, [3, 24 + 5, 3, 512 + 129 + 3, 1, 32 + 19]);
        assert_eq!(bit, 16);
    }

    #[test]
    fn avx512_fields_equal_scalar_fields() {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::has_avx512() {
            for (codes, extra) in runs() {
                assert_eq!(read::<true>(&codes, &extra), read::<false>(&codes, &extra));
            }
            eprintln!("sequence field readers tested: AVX-512 against scalar");
            return;
        }
        eprintln!("sequence field readers tested: scalar only (no AVX-512 here)");
        for (codes, extra) in runs() {
            read::<false>(&codes, &extra);
        }
    }

    #[test]
    fn runs_past_the_stream_are_errors() {
        let extra = vec![0xFFu8; 1 + EXTRA_PAD];
        let mut r = ExtraBits::new(&extra, 1);
        let mut run = Run::new();
        let codes = [&[30u8][..], &[30][..], &[20][..]];
        r.read_run::<false>(codes, &mut run).unwrap();
        assert!(r.bit > 8);
        assert!(r.read_run::<false>(codes, &mut run).is_err());
    }
}
