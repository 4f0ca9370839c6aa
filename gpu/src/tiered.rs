//! The GPU layout (`docs/FORMAT.md` §8.5): a tiered fixed-width code for exponents that a GPU
//! decodes with no serial dependency. Tier 1 holds one `w1`-bit code per value: ranks
//! 0..2^w1−1 of the tensor's exponent table, or the escape 2^w1−1. Each escaped value has a
//! `w2`-bit tier-2 code (the next 2^w2−1 ranks, or escape), and each value escaped twice has
//! its exponent byte in tier 3. Every plane is fixed width, so a warp finds a value's tier-2
//! and tier-3 slots with a ballot and a prefix count; per tile of [`TILE`] values the payload
//! stores where the tile's tier-2 and tier-3 entries start, so tiles decode independently.

use crate::bitpack;
use crate::dense::Ranks;
use crate::dtype::FloatBits;
use crate::float::{self, Split};

/// Values per tile.
pub const TILE: usize = 4096;

/// The most bytes of tensor a tiered payload of `payload_len` bytes can decode to: every value
/// keeps its sign and mantissa verbatim.
pub fn max_decoded_len(fb: FloatBits, payload_len: u64) -> u64 {
    (payload_len.saturating_mul(8) / u64::from(fb.raw_bits()) + 1)
        .saturating_mul(u64::from(fb.bits / 8))
}

/// Why a tiered payload is refused.
pub type Refusal = &'static str;

/// The parsed header and plane positions of a tiered payload.
#[derive(Clone, Debug)]
pub struct Tiered<'a> {
    pub w1: u32,
    pub w2: u32,
    pub exponents: &'a [u8],
    /// Tier-2 entries (values escaped from tier 1).
    pub n2: usize,
    /// Per tile after the first: (first tier-2 entry, first tier-3 entry).
    pub tiles: Vec<(u32, u32)>,
    pub tier1: &'a [u8],
    pub tier2: &'a [u8],
    pub tier3: &'a [u8],
    pub raw: &'a [u8],
}

/// Encodes float words `bytes` and appends the payload to `out`.
pub fn encode(fb: FloatBits, bytes: &[u8], out: &mut Vec<u8>) {
    let split = Split { fb, k: 0 };
    let mut counts = [0u64; 256];
    for w in float::words(fb, bytes) {
        counts[split.exponent(w) as usize] += 1;
    }
    let ranks = Ranks::from_counts(&counts);
    let by_rank: Vec<u64> = ranks
        .exponents
        .iter()
        .map(|&e| counts[e as usize])
        .collect();
    let (w1, w2) = best_widths(&by_rank);
    let (esc1, esc2) = ((1u32 << w1) - 1, (1u32 << w2) - 1);

    let mut t1 = Vec::new();
    let mut t2 = Vec::new();
    let mut t3 = Vec::new();
    let mut raw = Vec::new();
    let mut tiles = Vec::new();
    for (i, w) in float::words(fb, bytes).enumerate() {
        if i > 0 && i % TILE == 0 {
            tiles.push((t2.len() as u32, t3.len() as u32));
        }
        let e = split.exponent(w);
        let r = u32::from(ranks.rank_of[e as usize]);
        if r < esc1 {
            t1.push(r);
        } else {
            t1.push(esc1);
            let r2 = r - esc1;
            if r2 < esc2 {
                t2.push(r2);
            } else {
                t2.push(esc2);
                t3.push(e as u8);
            }
        }
        raw.push(split.raw(w));
    }
    out.push(w1 as u8);
    out.push(w2 as u8);
    // An empty tensor still has a one-entry table.
    let table: &[u8] = if ranks.exponents.is_empty() {
        &[0]
    } else {
        &ranks.exponents
    };
    out.push((table.len() - 1) as u8);
    out.extend_from_slice(table);
    glyd_core::varint::put(out, t2.len() as u64);
    glyd_core::varint::put(out, t3.len() as u64);
    for (a, b) in tiles {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    bitpack::pack(t1, w1, out);
    bitpack::pack(t2, w2, out);
    out.extend_from_slice(&t3);
    bitpack::pack(raw, split.raw_bits(), out);
}

/// Tier widths (w1 in 1..=4, w2 in 1..=6) that minimize the exponent bits.
fn best_widths(by_rank: &[u64]) -> (u32, u32) {
    let beyond = |r: usize| by_rank.iter().skip(r).sum::<u64>();
    let n = beyond(0);
    let mut best = (u64::MAX, 2, 3);
    for w1 in 1..=4u32 {
        let e1 = (1usize << w1) - 1;
        for w2 in 1..=6u32 {
            let e2 = e1 + (1usize << w2) - 1;
            let bits = n * u64::from(w1) + beyond(e1) * u64::from(w2) + beyond(e2) * 8;
            if bits < best.0 {
                best = (bits, w1, w2);
            }
        }
    }
    (best.1, best.2)
}

/// Parses a tiered payload of `n` values.
pub fn parse(fb: FloatBits, payload: &[u8], n: usize) -> Result<Tiered<'_>, Refusal> {
    let mut pos = 0;
    let head = payload.get(..3).ok_or("tiered header is truncated")?;
    let (w1, w2, ranks) = (
        u32::from(head[0]),
        u32::from(head[1]),
        usize::from(head[2]) + 1,
    );
    if !(1..=4).contains(&w1) || !(1..=6).contains(&w2) {
        return Err("tier widths out of range");
    }
    pos += 3;
    let exponents = payload
        .get(pos..pos + ranks)
        .ok_or("exponent table is truncated")?;
    if exponents.iter().any(|&e| u32::from(e) >= 1 << fb.exponent) {
        return Err("exponent table holds a value wider than the exponent field");
    }
    pos += ranks;
    let mut count = || {
        glyd_core::varint::get(payload, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v <= n)
            .ok_or("tier count is not a valid varint no larger than the value count")
    };
    let (n2, n3) = (count()?, count()?);
    if n3 > n2 {
        return Err("more tier-3 entries than tier-2 entries");
    }
    let tile_count = n.div_ceil(TILE).saturating_sub(1);
    let index = payload
        .get(pos..pos + 8 * tile_count)
        .ok_or("tile index is truncated")?;
    pos += 8 * tile_count;
    let tiles: Vec<(u32, u32)> = index
        .chunks_exact(8)
        .map(|c| {
            (
                u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                u32::from_le_bytes(c[4..].try_into().expect("4 bytes")),
            )
        })
        .collect();
    let mut prev = (0, 0);
    for &t in &tiles {
        if t.0 < prev.0 || t.1 < prev.1 || t.0 as usize > n2 || t.1 as usize > n3 {
            return Err("tile index is not ascending within the tier counts");
        }
        prev = t;
    }
    let mut plane = |len: usize| -> Result<&[u8], Refusal> {
        let p = payload.get(pos..pos + len).ok_or("plane is truncated")?;
        pos += len;
        Ok(p)
    };
    let tier1 = plane(bitpack::plane_len(n, w1))?;
    let tier2 = plane(bitpack::plane_len(n2, w2))?;
    let tier3 = plane(n3)?;
    let raw = plane(bitpack::plane_len(n, fb.mantissa + 1))?;
    if pos != payload.len() {
        return Err("bytes after the last plane");
    }
    Ok(Tiered {
        w1,
        w2,
        exponents,
        n2,
        tiles,
        tier1,
        tier2,
        tier3,
        raw,
    })
}

/// Decodes a tiered payload of `n` values into `out` (the CPU reference for the GPU kernel).
pub fn decode(fb: FloatBits, payload: &[u8], n: usize, out: &mut [u8]) -> Result<(), Refusal> {
    let t = parse(fb, payload, n)?;
    let split = Split { fb, k: 0 };
    let (esc1, esc2) = ((1u32 << t.w1) - 1, (1u32 << t.w2) - 1);
    // Ranks 0..esc1+esc2 name table entries; rank esc1+esc2 marks a tier-3 value.
    let marker = (esc1 + esc2) as usize;
    let mut coded = vec![0u32; marker + 1];
    for (c, &e) in coded.iter_mut().zip(t.exponents) {
        *c = split.coded_bits(u32::from(e), 0);
    }
    let ranks = t.exponents.len().min(marker);
    // Tier-2 codes unpacked once, with one spare entry so reads at i2 == n2 stay in bounds.
    let t2codes: Vec<u16> = (0..t.n2)
        .map(|j| bitpack::get(t.tier2, j, t.w2) as u16)
        .chain(std::iter::once(0))
        .collect();
    let size = (fb.bits / 8) as usize;
    let raw_bits = fb.mantissa + 1;
    let raw_lut: Vec<u32> = if raw_bits == 8 {
        (0..256).map(|r| split.assemble(0, r)).collect()
    } else {
        Vec::new()
    };
    let (mut i2, mut i3) = (0usize, 0usize);
    let mut c1s = vec![0u8; TILE];
    let mut ranks_seen = vec![0u16; TILE];
    for (tile, start) in (0..n).step_by(TILE).enumerate() {
        if tile > 0 && t.tiles[tile - 1] != (i2 as u32, i3 as u32) {
            return Err("tile index disagrees with the tier planes");
        }
        let len = TILE.min(n - start);
        unpack_tier1(t.tier1, start, t.w1, &mut c1s[..len]);
        i2 = tile_ranks(
            &c1s[..len],
            &t2codes,
            i2,
            t.n2,
            esc1,
            &mut ranks_seen[..len],
        );
        if i2 > t.n2 {
            return Err("tier-2 plane ends early");
        }
        let (mut max_rank, mut tier3) = (0usize, 0usize);
        let o = &mut out[start * size..(start + len) * size];
        if raw_bits == 8 {
            // bf16: one pass of two table lookups per value.
            let raw = &t.raw[start..start + len];
            for ((o, &r), &b) in o.chunks_exact_mut(2).zip(&ranks_seen[..len]).zip(raw) {
                let r = usize::from(r);
                max_rank = max_rank.max(r);
                tier3 += usize::from(r == marker);
                o.copy_from_slice(&((coded[r] | raw_lut[usize::from(b)]) as u16).to_le_bytes());
            }
        } else {
            for (j, &r) in ranks_seen[..len].iter().enumerate() {
                let r = usize::from(r);
                max_rank = max_rank.max(r);
                tier3 += usize::from(r == marker);
                let raw = bitpack::get(t.raw, start + j, raw_bits);
                float::put_word(fb, o, j, split.assemble(coded[r], raw));
            }
        }
        if max_rank >= ranks && max_rank != marker {
            return Err("tier code names a rank past the exponent table");
        }
        if tier3 > 0 {
            // Rare: values whose tier-2 code escaped again take the next exponent byte.
            for (j, &r) in ranks_seen[..len].iter().enumerate() {
                if usize::from(r) != marker {
                    continue;
                }
                let e = *t.tier3.get(i3).ok_or("tier-3 plane ends early")?;
                i3 += 1;
                if u32::from(e) >= 1 << fb.exponent {
                    return Err("tier-3 exponent wider than the exponent field");
                }
                let raw = bitpack::get(t.raw, start + j, raw_bits);
                float::put_word(
                    fb,
                    o,
                    j,
                    split.assemble(split.coded_bits(u32::from(e), 0), raw),
                );
            }
        }
    }
    if i3 != t.tier3.len() || i2 != t.n2 {
        return Err("tier planes hold entries no value uses");
    }
    Ok(())
}

/// Tier-1 codes of values `start..start + out.len()` (`start` a multiple of 8, so each group
/// of eight codes starts on a byte).
fn unpack_tier1(plane: &[u8], start: usize, w: u32, out: &mut [u8]) {
    let mask = (1u32 << w) - 1;
    let done = out.len() / 8 * 8;
    let mut groups = out.chunks_exact_mut(8);
    let mut at = start * w as usize / 8;
    for g in &mut groups {
        let mut b = [0u8; 4];
        let src = &plane[at..plane.len().min(at + 4)];
        b[..src.len()].copy_from_slice(src);
        let word = u32::from_le_bytes(b);
        for (v, x) in g.iter_mut().enumerate() {
            *x = ((word >> (v as u32 * w)) & mask) as u8;
        }
        at += w as usize;
    }
    for (j, x) in groups.into_remainder().iter_mut().enumerate() {
        *x = bitpack::get(plane, start + done + j, w) as u8;
    }
}

/// Each value's rank from tiers 1 and 2 of one tile, branch-free: the tier-2 code at `i2`
/// is read for every value and used (and `i2` advanced) only by escapes, which are too common
/// to predict. Returns the new `i2` (past `n2` when the plane ran out).
fn tile_ranks(
    c1s: &[u8],
    t2codes: &[u16],
    mut i2: usize,
    n2: usize,
    esc1: u32,
    ranks: &mut [u16],
) -> usize {
    for (&c1, r) in c1s.iter().zip(ranks.iter_mut()) {
        let escaped = u32::from(c1) == esc1;
        let c2 = u32::from(t2codes[i2.min(n2)]);
        i2 += usize::from(escaped);
        *r = (u32::from(c1) + u32::from(escaped) * c2) as u16;
    }
    i2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn round_trip(d: DType, bytes: &[u8]) -> usize {
        let fb = d.float_bits().unwrap();
        let mut p = Vec::new();
        encode(fb, bytes, &mut p);
        let mut out = vec![0u8; bytes.len()];
        decode(fb, &p, bytes.len() / d.size(), &mut out).unwrap();
        assert_eq!(out, bytes, "{d:?}");
        p.len()
    }

    #[test]
    fn every_exponent_in_every_tier_round_trips() {
        for d in [DType::BF16, DType::F16, DType::F32] {
            round_trip(d, &[]);
            let bytes: Vec<u8> = (0..(3 * TILE as u32 + 5))
                .flat_map(|i| {
                    let w = i.wrapping_mul(2654435761) ^ (i << 7);
                    if d.size() == 2 {
                        (w as u16).to_le_bytes().to_vec()
                    } else {
                        w.to_le_bytes().to_vec()
                    }
                })
                .collect();
            round_trip(d, &bytes);
        }
    }

    #[test]
    fn skewed_exponents_take_few_bits() {
        // Exponents 2^-k with probability 2^-k: about 2 bits each.
        let bytes: Vec<u8> = (0..20000u32)
            .flat_map(|i| {
                let h = i.wrapping_mul(2654435761);
                let e = 126 - h.leading_zeros().min(20) as u16;
                ((e << 7) | (h as u16 & 0x807f)).to_le_bytes()
            })
            .collect();
        let size = round_trip(DType::BF16, &bytes);
        assert!(size * 8 < 20000 * 11, "{size}");
    }

    #[test]
    fn truncations_are_refused() {
        let fb = DType::BF16.float_bits().unwrap();
        let bytes: Vec<u8> = (0..9000u32)
            .flat_map(|i| ((i * 7919) as u16).to_le_bytes())
            .collect();
        let mut p = Vec::new();
        encode(fb, &bytes, &mut p);
        let mut out = vec![0u8; bytes.len()];
        for cut in 0..p.len() {
            assert!(decode(fb, &p[..cut], 4500, &mut out).is_err());
        }
    }
}
