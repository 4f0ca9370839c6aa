//! Long-distance matching (`--long`): repeats far back in a big block, which the parsers' hash
//! tables have long since forgotten (a file stored twice in a tar, a table dumped again).
//!
//! A gear hash rolls over the input; wherever its top bits are zero the position is an
//! *anchor*. Anchors depend only on the 64 bytes before them, so a repeat has its anchors at
//! the same places as the original. Each anchor is remembered in a bucketed table keyed by the
//! hash; at a new anchor the bucket's earlier anchors are checked byte for byte and the longest
//! match, extended both ways, is kept if it is at least [`MIN_LEN`] long. The parsers take
//! these matches as given and parse the bytes between them as usual.

use crate::window::common_len;

/// Shortest long-distance match kept: shorter repeats are the parsers' business.
pub const MIN_LEN: usize = 64;
/// Bytes the gear hash depends on (a 64-bit hash shifted once per byte).
const SPAN: usize = 64;
/// One position in 2^ANCHOR_LOG is an anchor, on average.
const ANCHOR_LOG: u32 = 5;
/// Anchors remembered per bucket (the most recent ones).
const BUCKET: usize = 4;

/// A match the parsers must take: `len` bytes at `start` repeat those `off` bytes before.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LongMatch {
    pub start: usize,
    pub off: usize,
    pub len: usize,
}

/// The gear table: one pseudo-random word per byte value (splitmix64 of the byte).
const GEAR: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut z = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        t[i] = z ^ (z >> 31);
        i += 1;
    }
    t
};

/// Reusable table memory.
#[derive(Default)]
pub struct Scratch {
    /// Buckets of anchor positions + 1 (0 is empty).
    table: Vec<u32>,
}

/// Finds the long-distance matches of `src` (one block), in order and not overlapping, into
/// `out`.
pub fn find(src: &[u8], s: &mut Scratch, out: &mut Vec<LongMatch>) {
    out.clear();
    let n = src.len();
    if n < 2 * MIN_LEN || n > u32::MAX as usize - 1 {
        return;
    }
    // About one bucket per expected anchor, 2^10 ..= 2^22 buckets.
    let bucket_log = (usize::BITS - (n >> ANCHOR_LOG).leading_zeros()).clamp(10, 22);
    s.table.clear();
    s.table.resize(BUCKET << bucket_log, 0);
    let table = &mut s.table[..];
    let anchor_mask = !0u64 << (64 - ANCHOR_LOG);
    let mut h = 0u64;
    // Bytes before `covered` belong to a match already found: no search there.
    let mut covered = 0usize;
    for (i, &b) in src.iter().enumerate() {
        h = (h << 1).wrapping_add(GEAR[b as usize]);
        if i + 1 < SPAN || h & anchor_mask != 0 {
            continue;
        }
        let key = ((h >> (64 - ANCHOR_LOG - bucket_log)) as usize) & ((1 << bucket_log) - 1);
        let bucket = &mut table[key * BUCKET..key * BUCKET + BUCKET];
        if i >= covered {
            // The window that made this hash: src[i + 1 - SPAN ..= i].
            let at = i + 1 - SPAN;
            let mut best: Option<LongMatch> = None;
            for &c in bucket.iter() {
                let Some(c_at) = (c as usize).checked_sub(SPAN) else {
                    continue; // empty slot (0) or an anchor at the very start
                };
                let fwd = common_len(src, c_at, at);
                if fwd < SPAN {
                    continue; // a hash collision
                }
                let off = at - c_at;
                let mut start = at;
                while start > covered && start > off && src[start - 1] == src[start - 1 - off] {
                    start -= 1;
                }
                let len = at - start + fwd;
                if len >= MIN_LEN && best.is_none_or(|m| len > m.len) {
                    best = Some(LongMatch { start, off, len });
                }
            }
            if let Some(m) = best {
                out.push(m);
                covered = m.start + m.len;
            }
        }
        // Remember this anchor (as its end position + 1), dropping the bucket's oldest.
        bucket.copy_within(..BUCKET - 1, 1);
        bucket[0] = (i + 1) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn finds_a_repeat_far_back() {
        let a = noise(300_000, 1);
        let mut src = a.clone();
        src.extend_from_slice(&noise(1_000_000, 2));
        src.extend_from_slice(&a);
        let mut out = Vec::new();
        find(&src, &mut Scratch::default(), &mut out);
        let covered: usize = out.iter().map(|m| m.len).sum();
        assert!(covered > 290_000, "{covered} bytes matched");
        let mut end = 0;
        for m in &out {
            assert!(m.start >= end && m.len >= MIN_LEN && m.off <= m.start);
            assert_eq!(
                src[m.start..m.start + m.len],
                src[m.start - m.off..m.start - m.off + m.len]
            );
            end = m.start + m.len;
        }
    }

    #[test]
    fn noise_has_no_long_matches() {
        let mut out = Vec::new();
        find(&noise(500_000, 3), &mut Scratch::default(), &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
