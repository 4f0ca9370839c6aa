//! Fixed-width bit planes: `n` values of `w` bits (1..=32) packed LSB-first, value `i` at bit
//! `i × w`. The tensor layouts keep sign + mantissa and the tier codes in such planes.

/// Bytes a plane of `n` values of `w` bits takes.
pub fn plane_len(n: usize, w: u32) -> usize {
    (n * w as usize).div_ceil(8)
}

/// Appends `values` (each < 2^w) as a plane of width `w`.
pub fn pack(values: impl IntoIterator<Item = u32>, w: u32, out: &mut Vec<u8>) {
    debug_assert!((1..=32).contains(&w));
    let mut acc = 0u64;
    let mut bits = 0u32;
    for v in values {
        acc |= u64::from(v) << bits;
        bits += w;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// Value `i` of a plane of width `w` (`plane` at least [`plane_len`] long for `i + 1` values).
#[inline(always)]
pub fn get(plane: &[u8], i: usize, w: u32) -> u32 {
    let bit = i * w as usize;
    let byte = bit / 8;
    let shift = (bit % 8) as u32;
    let mask = (1u64 << w) - 1;
    // Fast path: one unaligned 8-byte load covers any value of ≤ 32 bits at any shift < 8.
    if let Some(b) = plane.get(byte..byte + 8) {
        let word = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        return ((word >> shift) & mask) as u32;
    }
    let mut word = [0u8; 8];
    let tail = &plane[byte.min(plane.len())..];
    word[..tail.len()].copy_from_slice(tail);
    ((u64::from_le_bytes(word) >> shift) & mask) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn planes_round_trip(w in 1u32..=32, seed in any::<u64>(), n in 0usize..200) {
            let mask = if w == 32 { u32::MAX } else { (1u32 << w) - 1 };
            let values: Vec<u32> = (0..n as u64)
                .map(|i| (seed.wrapping_mul(i + 1).rotate_left(17) as u32) & mask)
                .collect();
            let mut plane = Vec::new();
            pack(values.iter().copied(), w, &mut plane);
            prop_assert_eq!(plane.len(), plane_len(n, w));
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(get(&plane, i, w), v);
            }
        }
    }
}
