//! LEB128 unsigned varints (7 bits per byte, low group first, high bit = more follows), used
//! for lengths inside LZ block payloads and record archive structures.

/// Appends `v` as a LEB128 varint.
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes [`put`] writes for `v`.
#[inline]
pub fn len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a varint at `*pos`, advancing it. `None` if the input ends first or the value does not
/// fit in 64 bits (more than 10 bytes, or overflowing bits in the tenth).
#[inline]
pub fn get(src: &[u8], pos: &mut usize) -> Option<u64> {
    // FAST PATH: a varint of up to 8 bytes with 8 bytes readable, without a branch per byte
    // (varint lengths vary from value to value, so those branches mispredict): the first
    // byte without its high bit ends it, and the 7-bit groups are packed in three steps.
    let p = *pos;
    if let Some(bytes) = src.get(p..p + 8) {
        let w = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        let stops = !w & 0x8080_8080_8080_8080;
        if stops != 0 {
            // The stop bit is the last bit of the varint's last byte.
            let last_bit = stops.trailing_zeros();
            let mut x = w & (u64::MAX >> (63 - last_bit)) & 0x7f7f_7f7f_7f7f_7f7f;
            x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
            x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
            x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
            *pos = p + (last_bit as usize + 1) / 8;
            return Some(x);
        }
    }
    get_long(src, pos)
}

/// [`get`] for a varint of nine bytes or more, or near the input's end.
#[inline(never)]
fn get_long(src: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *src.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edge_values() {
        for v in [0, 1, 127, 128, 300, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, v);
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Some(v));
            assert_eq!(p, b.len());
            assert_eq!(len(v), b.len(), "{v}");
            // The same varint followed by more bytes (the fast path).
            b.extend_from_slice(&[0x81, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Some(v));
            assert_eq!(get(&b, &mut p), Some(129));
            assert_eq!(p, b.len() - 8);
        }
    }

    #[test]
    fn fast_path_agrees_with_the_byte_loop() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for bits in 0..=64u32 {
            for _ in 0..50 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = if bits == 64 {
                    x
                } else {
                    x & ((1u64 << bits) - 1)
                };
                let mut b = Vec::new();
                put(&mut b, v);
                let n = b.len();
                // Any bytes after it, high bits set or not.
                b.extend_from_slice(&x.to_le_bytes()[..(x % 9) as usize]);
                let (mut p, mut q) = (0, 0);
                assert_eq!(get(&b, &mut p), Some(v), "value {v:#x}");
                assert_eq!(p, n);
                assert_eq!(get_long(&b, &mut q), Some(v));
            }
        }
    }

    #[test]
    fn rejects_truncated_and_overlong() {
        let mut p = 0;
        assert_eq!(get(&[0x80], &mut p), None);
        let mut p = 0;
        assert_eq!(get(&[0xff; 11], &mut p), None);
        let mut p = 0;
        // ten bytes whose last carries more than the one remaining bit
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert_eq!(get(&b, &mut p), None);
    }
}
