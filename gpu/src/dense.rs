//! The dense layout (`docs/FORMAT.md` §9.4): per tensor, each value's exponent (as a rank in
//! the tensor's exponent table) joined with the top `k` mantissa bits into one byte symbol,
//! Huffman-coded with the core's 4-stream coder; sign and the other mantissa bits kept
//! verbatim in a bit plane. `k` (0..=3) is chosen per tensor: the top mantissa bits of a
//! Gaussian-like weight are not uniform within an exponent's octave, and coding them with the
//! exponent takes the last few hundredths of a bit per value.
//!
//! Values are cut into chunks of [`CHUNK`] that decode independently, in parallel.

use glyd_core::entropy::huffman::{self, CodeLengths, DecodeTable};
use glyd_core::varint;
use rayon::prelude::*;

use crate::bitpack;
use crate::dtype::FloatBits;
use crate::float::{self, Split};

/// Values per independently decodable chunk.
pub const CHUNK: usize = 1 << 18;

/// Why a dense payload is refused.
pub type Refusal = &'static str;

/// Exponents of a tensor ranked by count (commonest first), and each exponent's rank.
pub struct Ranks {
    pub exponents: Vec<u8>,
    pub rank_of: [u8; 256],
}

impl Ranks {
    /// Ranks from an exponent histogram (ties by exponent, so encoding is deterministic).
    pub fn from_counts(counts: &[u64; 256]) -> Ranks {
        let mut exponents: Vec<u8> = (0..=255u8).filter(|&e| counts[e as usize] > 0).collect();
        exponents.sort_by_key(|&e| (std::cmp::Reverse(counts[e as usize]), e));
        let mut rank_of = [0u8; 256];
        for (r, &e) in exponents.iter().enumerate() {
            rank_of[e as usize] = r as u8;
        }
        Ranks { exponents, rank_of }
    }
}

/// Encodes float words `bytes` (element layout `fb`) and appends the payload to `out`.
pub fn encode(fb: FloatBits, bytes: &[u8], out: &mut Vec<u8>) {
    // One pass for the joint histogram of (exponent, top three mantissa bits).
    let top3 = Split { fb, k: 3 };
    let mut joint = vec![[0u64; 8]; 256];
    for w in float::words(fb, bytes) {
        joint[top3.exponent(w) as usize][top3.mantissa_top(w) as usize] += 1;
    }
    let mut exp_counts = [0u64; 256];
    for (e, row) in joint.iter().enumerate() {
        exp_counts[e] = row.iter().sum();
    }
    let ranks = Ranks::from_counts(&exp_counts);
    let n = bytes.len() / (fb.bits / 8) as usize;
    let (k, freq) = best_split(fb, &joint, &ranks, n);
    let split = Split { fb, k };

    out.push(k as u8);
    // An empty tensor still has a one-entry table.
    let table: &[u8] = if ranks.exponents.is_empty() {
        &[0]
    } else {
        &ranks.exponents
    };
    out.push((table.len() - 1) as u8);
    out.extend_from_slice(table);
    let symbols = freq.iter().filter(|&&f| f > 0).count();
    let lens = (symbols >= 2).then(|| huffman::build_lengths(&freq));
    match &lens {
        Some(l) => {
            out.push(1);
            huffman::write_table(l, out);
        }
        None => {
            out.push(0);
            out.push(freq.iter().position(|&f| f > 0).unwrap_or(0) as u8);
        }
    }
    let size = (fb.bits / 8) as usize;
    let chunks: Vec<Vec<u8>> = bytes
        .par_chunks(CHUNK * size)
        .map(|chunk| {
            let mut syms = Vec::with_capacity(chunk.len() / size);
            let mut raw = Vec::with_capacity(chunk.len() / size);
            for w in float::words(fb, chunk) {
                let rank = u32::from(ranks.rank_of[split.exponent(w) as usize]);
                syms.push(((rank << k) | split.mantissa_top(w)) as u8);
                raw.push(split.raw(w));
            }
            let mut c = Vec::with_capacity(chunk.len());
            if let Some(l) = &lens {
                huffman::encode(&syms, l, &mut c);
            }
            let coded = c.len();
            bitpack::pack(raw, split.raw_bits(), &mut c);
            let mut framed = Vec::with_capacity(c.len() + 5);
            varint::put(&mut framed, coded as u64);
            framed.extend_from_slice(&c);
            framed
        })
        .collect();
    for c in chunks {
        out.extend_from_slice(&c);
    }
}

/// The `k` whose symbols code smallest (Huffman bits estimated from the entropy), and the
/// symbol histogram for it.
fn best_split(fb: FloatBits, joint: &[[u64; 8]], ranks: &Ranks, n: usize) -> (u32, [u32; 256]) {
    let mut best: Option<(f64, u32, [u32; 256])> = None;
    for k in 0..=3u32 {
        if (ranks.exponents.len() << k) > 256 {
            break;
        }
        let mut freq = [0u64; 256];
        for (r, &e) in ranks.exponents.iter().enumerate() {
            for (t, &c) in joint[e as usize].iter().enumerate() {
                freq[(r << k) | (t >> (3 - k))] += c;
            }
        }
        let total = n.max(1) as f64;
        let entropy: f64 = freq
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| -(c as f64) * (c as f64 / total).log2())
            .sum();
        // Each extra joint symbol costs about a nibble of table.
        let bits = entropy + n as f64 * f64::from(fb.mantissa + 1 - k) + 4.0 * (1 << k) as f64;
        if best.as_ref().is_none_or(|b| bits < b.0) {
            // Huffman counts are u32: scale down tensors over 4 G values (never in practice).
            let max = freq.iter().copied().max().unwrap_or(0);
            let shift = (64 - max.leading_zeros()).saturating_sub(32);
            let f32s = freq.map(|c| {
                if c == 0 {
                    0
                } else {
                    ((c >> shift) as u32).max(1)
                }
            });
            best = Some((bits, k, f32s));
        }
    }
    let (_, k, freq) = best.expect("k = 0 always fits");
    (k, freq)
}

/// Decodes a dense payload of `n` values into `out` (`n` × element size bytes).
pub fn decode(fb: FloatBits, payload: &[u8], n: usize, out: &mut [u8]) -> Result<(), Refusal> {
    let mut pos = 0;
    let byte = |pos: &mut usize| -> Result<u8, Refusal> {
        let b = *payload.get(*pos).ok_or("dense header is truncated")?;
        *pos += 1;
        Ok(b)
    };
    let k = u32::from(byte(&mut pos)?);
    if k > 3 {
        return Err("mantissa split above 3 bits");
    }
    let ranks = usize::from(byte(&mut pos)?) + 1;
    if ranks << k > 256 {
        return Err("exponent table too large for its mantissa split");
    }
    let exponents = payload
        .get(pos..pos + ranks)
        .ok_or("exponent table is truncated")?;
    pos += ranks;
    if exponents.iter().any(|&e| u32::from(e) >= 1 << fb.exponent) {
        return Err("exponent table holds a value wider than the exponent field");
    }
    let split = Split { fb, k };
    let mut lut = [0u32; 256];
    for (s, v) in lut.iter_mut().enumerate().take(ranks << k) {
        let e = u32::from(exponents[s >> k]);
        *v = split.coded_bits(e, (s as u32) & ((1 << k) - 1));
    }
    let lens: Option<CodeLengths> = match byte(&mut pos)? {
        0 => {
            let s = usize::from(byte(&mut pos)?);
            if s >= ranks << k {
                return Err("constant symbol outside the exponent table");
            }
            let v = lut[s];
            lut.fill(v);
            None
        }
        1 => {
            let l = huffman::read_table(payload, &mut pos).map_err(|e| e.0)?;
            if l.lens
                .iter()
                .enumerate()
                .any(|(s, &len)| len > 0 && s >= ranks << k)
            {
                return Err("Huffman table codes a symbol outside the exponent table");
            }
            Some(l)
        }
        _ => return Err("unknown symbol coding"),
    };
    // Locate the chunks (sizes are implied by n, except each Huffman section's).
    let raw_bits = split.raw_bits();
    let mut spans = Vec::with_capacity(n.div_ceil(CHUNK));
    let mut start = 0;
    while start < n {
        let len = CHUNK.min(n - start);
        let coded = varint::get(payload, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or("chunk size is not a valid varint")?;
        if lens.is_none() && coded != 0 {
            return Err("constant chunk with coded symbols");
        }
        let end = pos
            .checked_add(coded)
            .and_then(|p| p.checked_add(bitpack::plane_len(len, raw_bits)))
            .filter(|&e| e <= payload.len())
            .ok_or("chunk runs past the end of the payload")?;
        spans.push((start, len, pos, pos + coded, end));
        pos = end;
        start += len;
    }
    if pos != payload.len() {
        return Err("bytes after the last chunk");
    }
    let size = (fb.bits / 8) as usize;
    out.par_chunks_mut(CHUNK * size)
        .zip(spans.par_iter())
        .try_for_each_init(
            || (DecodeTable::default(), Vec::new()),
            |(table, syms), (chunk_out, &(_, len, a, b, e))| {
                syms.clear();
                syms.resize(len, 0u8);
                if let Some(l) = &lens {
                    huffman::decode_with(&payload[a..b], l, table, syms).map_err(|e| e.0)?;
                }
                assemble(split, &lut, syms, &payload[b..e], chunk_out);
                Ok(())
            },
        )
}

/// Joins decoded symbols with the verbatim plane into output words.
fn assemble(split: Split, lut: &[u32; 256], syms: &[u8], raw: &[u8], out: &mut [u8]) {
    let fb = split.fb;
    let w = split.raw_bits();
    if fb.bits == 16 {
        // Fast path (bf16, fp16): the verbatim part of a value is ≤ 11 bits, so eight values
        // lie in ≤ 11 bytes: one 16-byte load yields eight of them with constant shifts, and a
        // table turns each into its sign and mantissa bits in place.
        let mut raw_lut = vec![0u16; 1 << w];
        for (r, v) in raw_lut.iter_mut().enumerate() {
            *v = split.assemble(0, r as u32) as u16;
        }
        let lut16: [u16; 256] = lut.map(|v| v as u16);
        let mask = (1u128 << w) - 1;
        let group_bytes = w as usize; // 8 values × w bits
        let mut done = 0;
        for ((o, s), g) in out
            .chunks_exact_mut(16)
            .zip(syms.chunks_exact(8))
            .zip(raw.windows(16).step_by(group_bytes))
        {
            let word = u128::from_le_bytes(g.try_into().expect("16 bytes"));
            for v in 0..8 {
                let r = ((word >> (v as u32 * w)) & mask) as usize;
                let x = lut16[s[v] as usize] | raw_lut[r];
                o[2 * v..2 * v + 2].copy_from_slice(&x.to_le_bytes());
            }
            done += 8;
        }
        for i in done..syms.len() {
            let x = lut16[syms[i] as usize] | raw_lut[bitpack::get(raw, i, w) as usize];
            out[2 * i..2 * i + 2].copy_from_slice(&x.to_le_bytes());
        }
        return;
    }
    for (i, &s) in syms.iter().enumerate() {
        let v = split.assemble(lut[s as usize], bitpack::get(raw, i, w));
        float::put_word(fb, out, i, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn round_trip(d: DType, bytes: &[u8]) -> usize {
        let fb = d.float_bits().unwrap();
        let mut p = Vec::new();
        encode(fb, bytes, &mut p);
        let n = bytes.len() / d.size();
        let mut out = vec![0u8; bytes.len()];
        decode(fb, &p, n, &mut out).unwrap();
        assert_eq!(out, bytes, "{d:?}");
        p.len()
    }

    #[test]
    fn constant_and_tiny_tensors_round_trip() {
        for d in [DType::BF16, DType::F16, DType::F32] {
            round_trip(d, &[]);
            round_trip(d, &vec![0u8; d.size()]);
            round_trip(d, &vec![0x3fu8; d.size() * 1000]);
        }
    }

    #[test]
    fn spans_several_chunks() {
        let bytes: Vec<u8> = (0..(CHUNK * 2 + 77) as u32)
            .flat_map(|i| {
                let e = 120 + (i.wrapping_mul(2654435761) >> 29) as u16;
                ((e << 7) | (i as u16 & 0x807f)).to_le_bytes()
            })
            .collect();
        let size = round_trip(DType::BF16, &bytes);
        assert!(size < bytes.len() * 3 / 4, "{size}");
    }

    #[test]
    fn hostile_payloads_are_refused() {
        let fb = DType::BF16.float_bits().unwrap();
        let bytes: Vec<u8> = (0..4000u32)
            .flat_map(|i| ((i * 7919) as u16).to_le_bytes())
            .collect();
        let mut p = Vec::new();
        encode(fb, &bytes, &mut p);
        let mut out = vec![0u8; bytes.len()];
        for cut in 0..p.len() {
            assert!(decode(fb, &p[..cut], 2000, &mut out).is_err());
        }
        for i in 0..p.len().min(400) {
            let mut q = p.clone();
            q[i] ^= 0x5a;
            let _ = decode(fb, &q, 2000, &mut out);
        }
    }
}
