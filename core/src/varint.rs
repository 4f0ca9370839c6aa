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

/// Reads a varint at `*pos`, advancing it. `None` if the input ends first or the value does not
/// fit in 64 bits (more than 10 bytes, or overflowing bits in the tenth).
#[inline]
pub fn get(src: &[u8], pos: &mut usize) -> Option<u64> {
    // One- and two-byte varints (most lengths, counts and deltas) without the loop.
    let p = *pos;
    if p + 1 < src.len() {
        let (b0, b1) = (src[p], src[p + 1]);
        if b0 < 0x80 {
            *pos = p + 1;
            return Some(u64::from(b0));
        }
        if b1 < 0x80 {
            *pos = p + 2;
            return Some(u64::from(b0 & 0x7f) | u64::from(b1) << 7);
        }
    }
    get_long(src, pos)
}

/// [`get`] for a varint of three bytes or more, or at the input's end.
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
            // The same varint followed by more bytes (the one- and two-byte fast path).
            b.extend_from_slice(&[0x81, 0x01]);
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Some(v));
            assert_eq!(get(&b, &mut p), Some(129));
            assert_eq!(p, b.len());
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
