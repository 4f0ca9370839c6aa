//! Reads over an input window that the match finders share: little-endian loads and the
//! length of a common prefix, eight bytes per compare.

#[inline(always)]
pub(crate) fn read_u64(src: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(src[i..i + 8].try_into().unwrap())
}

#[inline(always)]
pub(crate) fn read_u32(src: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(src[i..i + 4].try_into().unwrap())
}

/// Length of the common prefix of `src[a..]` and `src[b..]`, `a < b`.
#[inline(always)]
pub(crate) fn common_len(src: &[u8], a: usize, b: usize) -> usize {
    common_len_upto(src, a, b, usize::MAX)
}

/// Length of the common prefix of `src[a..]` and `src[b..]` (`a < b`), counted up to at
/// least `max`: the count may stop at any length from `max` to `max + 31`.
#[inline(always)]
pub(crate) fn common_len_upto(src: &[u8], a: usize, b: usize, max: usize) -> usize {
    assert!(a < b);
    let n = src.len();
    let p = src.as_ptr();
    let mut len = 0;
    // FAST PATH: 32 bytes a step (two SSE2 compares), then 8, with unchecked loads; every match of every finder is
    // measured here (long log-line repeats run hundreds of bytes), and slice-checked 8-byte
    // compares cost a fifth of `--fast`. In both loops `a + len < b + len` and `b + len` plus
    // the load width is at most `n`, so every load lies inside `src`.
    #[cfg(target_arch = "x86_64")]
    while b + len + 32 <= n {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64; the loads are in bounds (above).
        let same = unsafe {
            let eq = |at: usize| {
                let x = _mm_loadu_si128(p.add(a + at).cast::<__m128i>());
                let y = _mm_loadu_si128(p.add(b + at).cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) as u32
            };
            eq(len) | eq(len + 16) << 16
        };
        if same != u32::MAX {
            return len + (!same).trailing_zeros() as usize;
        }
        len += 32;
        if len >= max {
            return len;
        }
    }
    while b + len + 8 <= n {
        // SAFETY: the loads are in bounds (above).
        let x = unsafe {
            std::ptr::read_unaligned(p.add(a + len).cast::<u64>())
                ^ std::ptr::read_unaligned(p.add(b + len).cast::<u64>())
        };
        if x != 0 {
            return len + (u64::from_le(x).trailing_zeros() / 8) as usize;
        }
        len += 8;
        if len >= max {
            return len;
        }
    }
    while b + len < n && src[a + len] == src[b + len] {
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a byte-by-byte count: every offset and start around the 32-, 8- and 1-byte
    /// steps and the end of the input, with a mismatch planted at every distance.
    #[test]
    fn common_len_counts_what_a_byte_loop_counts() {
        let naive = |src: &[u8], a: usize, b: usize| {
            (0..src.len() - b)
                .take_while(|&k| src[a + k] == src[b + k])
                .count()
        };
        let base: Vec<u8> = (0..200u32).map(|i| (i % 7) as u8).collect();
        for len in [0usize, 1, 7, 8, 9, 31, 32, 33, 47, 64, 100, 200] {
            for plant in [
                None,
                Some(0),
                Some(1),
                Some(8),
                Some(16),
                Some(31),
                Some(40),
            ] {
                let mut src = base[..len].to_vec();
                for (a, b) in [(0, 7), (1, 8), (3, 17), (0, 35), (7, 70)] {
                    if b > len {
                        continue;
                    }
                    if let Some(k) = plant.filter(|&k| b + k < len) {
                        src[b + k] ^= 0x80;
                    }
                    let want = naive(&src, a, b);
                    assert_eq!(common_len(&src, a, b), want, "len {len} a {a} b {b}");
                    for max in [1, 8, 16, 40] {
                        let got = common_len_upto(&src, a, b, max);
                        assert!(got <= want && got >= want.min(max), "max {max}: {got}");
                    }
                    src.copy_from_slice(&base[..len]);
                }
            }
        }
    }
}
