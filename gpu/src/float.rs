//! Splitting float words into the part glyd codes (the exponent, optionally with the top `k`
//! mantissa bits) and the part it keeps verbatim (sign and the remaining mantissa bits).

use crate::dtype::FloatBits;

/// How one tensor's words are split.
#[derive(Copy, Clone, Debug)]
pub struct Split {
    pub fb: FloatBits,
    /// Top mantissa bits coded with the exponent (0..=3).
    pub k: u32,
}

impl Split {
    /// Width of the verbatim part: sign + the mantissa bits below the top `k`.
    pub fn raw_bits(self) -> u32 {
        self.fb.mantissa + 1 - self.k
    }

    fn low_bits(self) -> u32 {
        self.fb.mantissa - self.k
    }

    /// The exponent field.
    #[inline(always)]
    pub fn exponent(self, w: u32) -> u32 {
        (w >> self.fb.mantissa) & ((1 << self.fb.exponent) - 1)
    }

    /// The top `k` mantissa bits.
    #[inline(always)]
    pub fn mantissa_top(self, w: u32) -> u32 {
        (w >> self.low_bits()) & ((1 << self.k) - 1)
    }

    /// Sign above the low mantissa bits.
    #[inline(always)]
    pub fn raw(self, w: u32) -> u32 {
        let sign = w >> (self.fb.bits - 1);
        (sign << self.low_bits()) | (w & ((1 << self.low_bits()) - 1))
    }

    /// The coded part of a word, in place: exponent and top mantissa bits.
    #[inline(always)]
    pub fn coded_bits(self, exponent: u32, top: u32) -> u32 {
        (exponent << self.fb.mantissa) | (top << self.low_bits())
    }

    /// The word from its coded part ([`Split::coded_bits`]) and its verbatim part.
    #[inline(always)]
    pub fn assemble(self, coded: u32, raw: u32) -> u32 {
        let sign = raw >> self.low_bits();
        coded | (sign << (self.fb.bits - 1)) | (raw & ((1 << self.low_bits()) - 1))
    }
}

/// The little-endian words of a float tensor's bytes.
pub fn words(fb: FloatBits, bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let size = (fb.bits / 8) as usize;
    bytes.chunks_exact(size).map(move |c| match c.len() {
        2 => u32::from(u16::from_le_bytes([c[0], c[1]])),
        _ => u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
    })
}

/// Writes word `w` as element `i` of `out`.
#[inline(always)]
pub fn put_word(fb: FloatBits, out: &mut [u8], i: usize, w: u32) {
    if fb.bits == 16 {
        out[2 * i..2 * i + 2].copy_from_slice(&(w as u16).to_le_bytes());
    } else {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn split_and_assemble_are_inverse() {
        for d in [DType::BF16, DType::F16, DType::F32] {
            let fb = d.float_bits().unwrap();
            for k in 0..=3 {
                let s = Split { fb, k };
                for w in [
                    0u32,
                    1,
                    0x7f80,
                    0xffff,
                    0x8001,
                    0x3c00,
                    0x7fc0_0001,
                    0xffff_ffff,
                ] {
                    let w = if fb.bits == 16 { w & 0xffff } else { w };
                    let back = s.assemble(s.coded_bits(s.exponent(w), s.mantissa_top(w)), s.raw(w));
                    assert_eq!(back, w, "{d:?} k={k} {w:#x}");
                    assert!(s.raw(w) < 1 << s.raw_bits());
                }
            }
        }
    }
}
