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
/// least `max`: the count stops at the first multiple of 8 at or past `max`.
#[inline(always)]
pub(crate) fn common_len_upto(src: &[u8], a: usize, b: usize, max: usize) -> usize {
    let n = src.len();
    let mut len = 0;
    while b + len + 8 <= n {
        let x = read_u64(src, a + len) ^ read_u64(src, b + len);
        if x != 0 {
            return len + (x.trailing_zeros() / 8) as usize;
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
