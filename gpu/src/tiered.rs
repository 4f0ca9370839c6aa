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
    decode_with(fb, payload, n, out, simd_available())
}

/// Whether bf16 tiles decode with AVX-512 here.
fn simd_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::bf16_avx512::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// [`decode`], with bf16 tiles through the AVX-512 path when `simd` (the CPU must have it).
fn decode_with(
    fb: FloatBits,
    payload: &[u8],
    n: usize,
    out: &mut [u8],
    simd: bool,
) -> Result<(), Refusal> {
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
    // Tier-2 codes unpacked once, with a tile of spare entries: a tile starts at i2 ≤ n2
    // and advances it at most a tile, so reads stay in bounds until the tile's check.
    let mut t2codes = vec![0u16; t.n2 + TILE];
    for (j, c) in t2codes[..t.n2].iter_mut().enumerate() {
        *c = bitpack::get(t.tier2, j, t.w2) as u16;
    }
    // Per rank: its exponent bits, and flags the bf16 path ORs together to check a tile
    // at once: a rank past the table, the tier-3 marker. Ranks are at most 15 + 63.
    let mut flagged = [PAST_TABLE; 128];
    for (r, f) in flagged.iter_mut().enumerate().take(marker + 1) {
        *f = match t.exponents.get(r) {
            _ if r == marker => TIER3,
            Some(&e) => split.coded_bits(u32::from(e), 0),
            None => PAST_TABLE,
        };
    }
    let mut bf16 = Bf16Tile {
        tier1: vec![0; TILE / 2 + 72],
        lut: [0; 256],
        exps: [0; 96],
    };
    for (x, &e) in bf16.exps.iter_mut().zip(t.exponents).take(marker) {
        *x = split.coded_bits(u32::from(e), 0) as u16;
    }
    let size = (fb.bits / 8) as usize;
    let raw_bits = fb.mantissa + 1;
    for (r, v) in bf16.lut.iter_mut().enumerate() {
        *v = split.assemble(0, r as u32) as u16;
    }
    let (mut i2, mut i3) = (0usize, 0usize);
    let mut c1s = vec![0u8; TILE];
    let mut ranks_seen = vec![0u16; TILE];
    for (tile, start) in (0..n).step_by(TILE).enumerate() {
        if tile > 0 && t.tiles[tile - 1] != (i2 as u32, i3 as u32) {
            return Err("tile index disagrees with the tier planes");
        }
        let len = TILE.min(n - start);
        let (mut max_rank, mut tier3) = (0usize, 0usize);
        let o = &mut out[start * size..(start + len) * size];
        if raw_bits == 8 {
            // bf16: one fused pass (tier 1, tier 2, output word), checked once per tile.
            let t1 = &t.tier1[start * t.w1 as usize / 8..];
            let t1 = &t1[..t1.len().min(len.div_ceil(8) * t.w1 as usize)];
            bf16.tier1[..t1.len()].copy_from_slice(t1);
            bf16.tier1[t1.len()..t1.len() + 4].fill(0);
            let tier2 = &t2codes[i2..i2 + len];
            let raw = &t.raw[start..start + len];
            let ranks_out = &mut ranks_seen[..len];
            let (mut from, mut used, mut flags) = (0, 0, 0);
            #[cfg(target_arch = "x86_64")]
            if simd {
                let tile = crate::bf16_avx512::Tile {
                    tier1: &bf16.tier1,
                    w1: t.w1,
                    esc1: esc1 as u16,
                    tier2,
                    exps: &bf16.exps,
                    known: t.exponents.len(),
                    marker: marker as u16,
                    raw,
                };
                let (done, taken, past, third) = crate::bf16_avx512::tile(&tile, ranks_out, o);
                (from, used) = (done, taken);
                flags = if past { PAST_TABLE } else { 0 } | if third { TIER3 } else { 0 };
            }
            let (taken, more) =
                bf16.decode(t.w1, esc1, &flagged, tier2, raw, ranks_out, o, from, used);
            (used, flags) = (taken, flags | more);
            i2 += used;
            if i2 > t.n2 {
                return Err("tier-2 plane ends early");
            }
            if flags & PAST_TABLE != 0 {
                return Err("tier code names a rank past the exponent table");
            }
            tier3 = usize::from(flags & TIER3 != 0);
        } else {
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
            // Runs of 32 ranks are tested whole first (a compare the compiler vectorizes).
            let marked = ranks_seen[..len]
                .chunks(32)
                .enumerate()
                .filter(|(_, run)| {
                    run.iter()
                        .fold(false, |m, &r| m | (usize::from(r) == marker))
                })
                .flat_map(|(c, run)| {
                    run.iter()
                        .enumerate()
                        .filter(|&(_, &r)| usize::from(r) == marker)
                        .map(move |(j, _)| c * 32 + j)
                });
            for j in marked {
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

/// Flag of a rank past the exponent table (above any exponent bits of a 16-bit word).
const PAST_TABLE: u32 = 1 << 16;
/// Flag of the tier-3 marker rank.
const TIER3: u32 = 1 << 17;

/// The bf16 fast path's per-tile buffers: the tile's tier-1 bytes (zero-padded, so every
/// group of eight codes is one 4-byte load, and the AVX-512 path may read past them), and
/// each sign and mantissa byte's bits in the output word.
struct Bf16Tile {
    tier1: Vec<u8>,
    lut: [u16; 256],
    /// Each rank's exponent bits (the AVX-512 path's table).
    exps: [u16; 96],
}

impl Bf16Tile {
    /// Decodes values `from..raw.len()` of a tile (`from` a multiple of 8; `k` of the tile's
    /// `tier2` codes taken before it, which has one per value) in one pass: each value's rank from tiers 1 and 2 (branch-free: the
    /// next tier-2 code is read for every value, taken by escapes) into `ranks`, its word
    /// into `out`. Returns the tier-2 codes taken in all and the OR of the ranks' `flagged`
    /// entries; a tier-3 value's word is left for the caller.
    #[allow(clippy::too_many_arguments)]
    fn decode(
        &self,
        w1: u32,
        esc1: u32,
        flagged: &[u32; 128],
        tier2: &[u16],
        raw: &[u8],
        ranks: &mut [u16],
        out: &mut [u8],
        from: usize,
        mut k: usize,
    ) -> (usize, u32) {
        let mask = (1u32 << w1) - 1;
        let (mut flags, mut word) = (0u32, 0u32);
        let t2 = &tier2[..raw.len().max(1)];
        for (j, ((&b, r), o)) in raw
            .iter()
            .zip(ranks.iter_mut())
            .zip(out.chunks_exact_mut(2))
            .enumerate()
            .skip(from)
        {
            if j % 8 == 0 {
                let at = j / 8 * w1 as usize;
                word = u32::from_le_bytes(self.tier1[at..at + 4].try_into().expect("4 bytes"));
            }
            let c1 = (word >> ((j % 8) as u32 * w1)) & mask;
            let escaped = u32::from(c1 == esc1);
            // Escapes before this value are fewer than its index, so `k` < `t2.len()`.
            let c2 = u32::from(t2[k.min(t2.len() - 1)]);
            k += escaped as usize;
            let rank = (c1 + escaped * c2) as usize & 127;
            *r = rank as u16;
            let e = flagged[rank];
            flags |= e;
            o.copy_from_slice(&((e as u16) | self.lut[usize::from(b)]).to_le_bytes());
        }
        (k, flags)
    }
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

    /// The bf16 scalar path and (where the CPU has it) the AVX-512 path decode alike: tiles
    /// cut anywhere, escapes to tiers 2 and 3 everywhere, and lying payloads refused by both.
    #[test]
    fn bf16_paths_agree() {
        let fb = DType::BF16.float_bits().unwrap();
        let paths = if simd_available() {
            vec![false, true]
        } else {
            eprintln!("no AVX-512 VBMI2 here: the scalar path alone is tested");
            vec![false]
        };
        for n in [1usize, 31, 32, 33, 100, TILE - 1, TILE + 37, 3 * TILE + 5] {
            // Skewed exponents with a long tail: every tier in use.
            let bytes: Vec<u8> = (0..n as u32)
                .flat_map(|i| {
                    let h = i.wrapping_mul(2654435761) ^ (i >> 3);
                    let e = if h % 53 == 0 {
                        (h >> 9) as u8 as u16 // rare exponents of any value: tier 3
                    } else {
                        127 - (h.leading_zeros() * 3).min(120) as u16
                    };
                    ((e << 7) | (h as u16 & 0x807f)).to_le_bytes()
                })
                .collect();
            let mut p = Vec::new();
            encode(fb, &bytes, &mut p);
            if n > TILE {
                let t = parse(fb, &p, n).unwrap();
                assert!(
                    t.n2 > 0 && !t.tier3.is_empty(),
                    "n {n}: tiers 2 and 3 in use"
                );
            }
            for &simd in &paths {
                let mut out = vec![0u8; bytes.len()];
                decode_with(fb, &p, n, &mut out, simd).unwrap();
                assert_eq!(out, bytes, "n {n}, simd {simd}");
            }
            // Every single-byte corruption is decoded or refused the same way by both paths.
            for at in (0..p.len()).step_by(p.len() / 50 + 1) {
                let mut bad = p.clone();
                bad[at] ^= 0x5a;
                let results: Vec<_> = paths
                    .iter()
                    .map(|&simd| {
                        let mut out = vec![0u8; bytes.len()];
                        decode_with(fb, &bad, n, &mut out, simd).map(|()| out)
                    })
                    .collect();
                assert!(results.windows(2).all(|w| w[0] == w[1]), "n {n}, byte {at}");
            }
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
