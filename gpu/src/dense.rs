//! The dense layout (`docs/FORMAT.md` §8.4): values are cut into chunks of [`CHUNK`]; in each
//! chunk every value's exponent (as a rank in the chunk's exponent table) is joined with the
//! top `k` mantissa bits into one byte symbol, coded with the core's 4-lane tANS; sign and the
//! other mantissa bits are kept verbatim in a bit plane. `k` (0..=3) is chosen per chunk: the
//! top mantissa bits of a Gaussian-like weight are not uniform within an exponent's octave,
//! and coding them with the exponent takes the last few hundredths of a bit per value. Tables
//! per chunk follow the statistics as they drift along a tensor (embedding rows, layers), and
//! chunks decode independently, in parallel.

use glyd_core::entropy::fse::{self, Counts};
use glyd_core::entropy::huffman;
use glyd_core::varint;
use rayon::prelude::*;

use crate::bitpack;
use crate::dtype::FloatBits;
use crate::float::{self, Split};

/// Values per independently decodable chunk.
pub const CHUNK: usize = 1 << 15;

/// Most mantissa bits a chunk codes with its exponent.
const MAX_K: u32 = 3;

/// The most bytes of tensor a dense payload of `payload_len` bytes can decode to: every value
/// keeps at least `raw_bits − MAX_K` bits verbatim (fp32 minus its two Huffman-coded bytes),
/// so a reader can refuse a lying size before allocating it.
pub fn max_decoded_len(fb: FloatBits, payload_len: u64) -> u64 {
    let huffman = if fb.bits == 32 { 16 } else { 0 };
    let verbatim = u64::from(fb.raw_bits() - MAX_K - huffman);
    (payload_len.saturating_mul(8) / verbatim + 1).saturating_mul(u64::from(fb.bits / 8))
}

/// Why a dense payload is refused.
pub type Refusal = &'static str;

/// Exponents ranked by count (commonest first), and each exponent's rank.
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

/// Encodes float words `bytes` (element layout `fb`) and appends the payload to `out`: each
/// chunk as its byte length (varint) and its body.
pub fn encode(fb: FloatBits, bytes: &[u8], out: &mut Vec<u8>) {
    encode_with(fb, bytes, out, SymbolCoding::TwoStreams);
}

/// How a chunk codes its symbols when they take more than one value (`docs/FORMAT.md` §8.4).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum SymbolCoding {
    /// Mode 1: one tANS stream. Earlier writers wrote it and readers still accept it; only
    /// the tests write it now.
    #[cfg_attr(not(test), allow(dead_code))]
    OneStream,
    /// Mode 2: two tANS streams, the chunk's first and second half, decoded together.
    TwoStreams,
}

fn encode_with(fb: FloatBits, bytes: &[u8], out: &mut Vec<u8>, coding: SymbolCoding) {
    let size = (fb.bits / 8) as usize;
    let chunks: Vec<Vec<u8>> = bytes
        .par_chunks(CHUNK * size)
        .map_init(Vec::new, |scratch, chunk| {
            encode_chunk(fb, chunk, scratch, coding)
        })
        .collect();
    for c in chunks {
        varint::put(out, c.len() as u64);
        out.extend_from_slice(&c);
    }
}

fn encode_chunk(
    fb: FloatBits,
    chunk: &[u8],
    scratch: &mut Vec<u64>,
    coding: SymbolCoding,
) -> Vec<u8> {
    // One pass for the joint histogram of (exponent, top three mantissa bits).
    let top3 = Split { fb, k: 3 };
    let mut joint = [[0u32; 8]; 256];
    for w in float::words(fb, chunk) {
        joint[top3.exponent(w) as usize][top3.mantissa_top(w) as usize] += 1;
    }
    let mut exp_counts = [0u64; 256];
    for (e, row) in joint.iter().enumerate() {
        exp_counts[e] = row.iter().map(|&c| u64::from(c)).sum();
    }
    let ranks = Ranks::from_counts(&exp_counts);
    let (k, freq) = best_split(fb, &joint, &ranks);
    let split = Split { fb, k };

    let mut body = Vec::with_capacity(chunk.len());
    body.push(k as u8);
    body.push((ranks.exponents.len() - 1) as u8);
    body.extend_from_slice(&ranks.exponents);
    let symbols: Vec<u8> = float::words(fb, chunk)
        .map(|w| {
            let rank = u32::from(ranks.rank_of[split.exponent(w) as usize]);
            ((rank << k) | split.mantissa_top(w)) as u8
        })
        .collect();
    if freq.iter().filter(|&&f| f > 0).count() >= 2 {
        let counts = fse::normalize(&freq, fse::MAX_LOG);
        let encoder = fse::Encoder::new(&counts);
        let mut coded = Vec::with_capacity(chunk.len() / 2);
        let (mode, first, second) = match coding {
            SymbolCoding::OneStream => (1, &symbols[..], None),
            // Two streams decode in one loop as independent chains: a third faster.
            SymbolCoding::TwoStreams => {
                let (a, b) = symbols.split_at(first_stream_len(symbols.len()));
                (2, a, Some(b))
            }
        };
        body.push(mode);
        fse::write_counts(&counts, &mut body);
        for stream in std::iter::once(first).chain(second) {
            encoder.encode(stream, scratch, &mut coded);
            varint::put(&mut body, coded.len() as u64);
            body.extend_from_slice(&coded);
        }
    } else {
        body.push(0);
        body.push(symbols[0]);
    }
    if fb.bits == 32 {
        // fp32: sign and the top mantissa bits in a plane, the two low mantissa bytes as byte
        // planes, each Huffman-coded where that pays (weights that passed through a 16-bit
        // format, or were rounded, leave those bytes far from uniform).
        let raws: Vec<u32> = float::words(fb, chunk).map(|w| split.raw(w)).collect();
        bitpack::pack(
            raws.iter().map(|r| r >> 16),
            split.raw_bits() - 16,
            &mut body,
        );
        for shift in [8, 0] {
            let plane: Vec<u8> = raws.iter().map(|r| (r >> shift) as u8).collect();
            put_byte_plane(&plane, &mut body);
        }
    } else {
        bitpack::pack(
            float::words(fb, chunk).map(|w| split.raw(w)),
            split.raw_bits(),
            &mut body,
        );
    }
    body
}

/// Appends a byte plane: mode 0 and the bytes; 1, a Huffman table, a varint section length
/// and the section; or 2 and the one byte every entry has.
fn put_byte_plane(plane: &[u8], out: &mut Vec<u8>) {
    let hist = glyd_core::entropy::histogram(plane);
    let present = hist.iter().filter(|&&c| c > 0).count();
    if present == 1 {
        out.push(2);
        out.push(plane[0]);
        return;
    }
    if present >= 2 {
        let lens = huffman::build_lengths(&hist);
        if huffman::coded_size(&hist, &lens) + 140 < plane.len() {
            let mut coded = vec![1];
            huffman::write_section(plane, &lens, &mut coded);
            if coded.len() < plane.len() + 1 {
                out.extend_from_slice(&coded);
                return;
            }
        }
    }
    out.push(0);
    out.extend_from_slice(plane);
}

/// Reads a byte plane of `n` entries at `*pos` into `out`.
fn get_byte_plane(
    body: &[u8],
    pos: &mut usize,
    out: &mut Vec<u8>,
    n: usize,
) -> Result<(), Refusal> {
    out.clear();
    out.resize(n, 0);
    let mode = *body.get(*pos).ok_or("byte plane is truncated")?;
    *pos += 1;
    match mode {
        0 => {
            let b = body.get(*pos..*pos + n).ok_or("byte plane is truncated")?;
            out.copy_from_slice(b);
            *pos += n;
        }
        1 => {
            let lens = huffman::read_table(body, pos).map_err(|e| e.0)?;
            let section = length_prefixed(
                body,
                pos,
                "byte plane length is not a valid varint",
                "byte plane runs past the chunk",
            )?;
            huffman::decode(section, &lens, out).map_err(|e| e.0)?;
        }
        2 => {
            let b = *body.get(*pos).ok_or("byte plane is truncated")?;
            out.fill(b);
            *pos += 1;
        }
        _ => return Err("unknown byte plane mode"),
    }
    Ok(())
}

/// The `k` whose symbols code smallest, and the symbol histogram for it.
fn best_split(fb: FloatBits, joint: &[[u32; 8]; 256], ranks: &Ranks) -> (u32, Vec<u32>) {
    let mut best: Option<(f64, u32, Vec<u32>)> = None;
    let n: u64 = joint.iter().flatten().map(|&c| u64::from(c)).sum();
    for k in 0..=MAX_K {
        if (ranks.exponents.len() << k) > 256 {
            break;
        }
        let mut freq = vec![0u32; ranks.exponents.len() << k];
        for (r, &e) in ranks.exponents.iter().enumerate() {
            for (t, &c) in joint[e as usize].iter().enumerate() {
                freq[(r << k) | (t >> (3 - k))] += c;
            }
        }
        // The size tANS will take: each symbol costs log − log2(normalized count) bits, plus
        // the table description and the verbatim bits.
        let present = freq.iter().filter(|&&c| c > 0).count();
        let coded = if present >= 2 {
            let counts = fse::normalize(&freq, fse::MAX_LOG);
            let mut table = Vec::new();
            fse::write_counts(&counts, &mut table);
            let log = f64::from(counts.log);
            let symbol_bits: f64 = freq
                .iter()
                .zip(&counts.counts)
                .filter(|(&f, _)| f > 0)
                .map(|(&f, &c)| f64::from(f) * (log - f64::from(c).log2()))
                .sum();
            symbol_bits + 8.0 * table.len() as f64
        } else {
            0.0
        };
        let bits = coded + n as f64 * f64::from(fb.mantissa + 1 - k);
        if best.as_ref().is_none_or(|b| bits < b.0) {
            best = Some((bits, k, freq));
        }
    }
    let (_, k, freq) = best.expect("k = 0 always fits");
    (k, freq)
}

/// Decodes a dense payload of `n` values into `out` (`n` × element size bytes).
pub fn decode(fb: FloatBits, payload: &[u8], n: usize, out: &mut [u8]) -> Result<(), Refusal> {
    if out.len() != n * (fb.bits / 8) as usize {
        return Err("output buffer does not match the value count");
    }
    // Locate the chunks, then decode them in parallel.
    let mut spans = Vec::with_capacity(n.div_ceil(CHUNK));
    let mut pos = 0;
    for _ in 0..n.div_ceil(CHUNK) {
        let len = varint::get(payload, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or("chunk length is not a valid varint")?;
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= payload.len())
            .ok_or("chunk runs past the end of the payload")?;
        spans.push((pos, end));
        pos = end;
    }
    if pos != payload.len() {
        return Err("bytes after the last chunk");
    }
    let size = (fb.bits / 8) as usize;
    out.par_chunks_mut(CHUNK * size)
        .zip(spans.par_iter())
        .try_for_each_init(
            || (fse::Decoder::default(), Vec::new()),
            |(table, syms), (chunk_out, &(a, b))| {
                decode_chunk(fb, &payload[a..b], table, syms, chunk_out)
            },
        )
}

fn decode_chunk(
    fb: FloatBits,
    body: &[u8],
    table: &mut fse::Decoder,
    syms: &mut Vec<u8>,
    out: &mut [u8],
) -> Result<(), Refusal> {
    let n = out.len() / (fb.bits / 8) as usize;
    let mut pos = 0;
    let byte = |pos: &mut usize| -> Result<u8, Refusal> {
        let b = *body.get(*pos).ok_or("chunk header is truncated")?;
        *pos += 1;
        Ok(b)
    };
    let k = u32::from(byte(&mut pos)?);
    if k > MAX_K {
        return Err("mantissa split above 3 bits");
    }
    let ranks = usize::from(byte(&mut pos)?) + 1;
    if ranks << k > 256 {
        return Err("exponent table too large for its mantissa split");
    }
    let exponents = body
        .get(pos..pos + ranks)
        .ok_or("exponent table is truncated")?;
    pos += ranks;
    if exponents.iter().any(|&e| u32::from(e) >= 1 << fb.exponent) {
        return Err("exponent table holds a value wider than the exponent field");
    }
    let split = Split { fb, k };
    let alphabet = ranks << k;
    let mut lut = [0u32; 256];
    for (s, v) in lut.iter_mut().enumerate().take(alphabet) {
        *v = split.coded_bits(u32::from(exponents[s >> k]), (s as u32) & ((1 << k) - 1));
    }
    // Every symbol is written below (by the tANS decoder or the constant fill), so a buffer
    // of the right length from the previous chunk needs no clearing.
    if syms.len() != n {
        syms.clear();
        syms.resize(n, 0);
    }
    match byte(&mut pos)? {
        0 => {
            let s = usize::from(byte(&mut pos)?);
            if s >= alphabet {
                return Err("constant symbol outside the exponent table");
            }
            syms.fill(s as u8);
        }
        1 => {
            let counts: Counts = fse::read_counts(body, &mut pos, alphabet).map_err(|e| e.0)?;
            let coded = tans_stream(body, &mut pos)?;
            table.rebuild(&counts);
            table.decode(coded, syms).map_err(|e| e.0)?;
        }
        2 => {
            let counts: Counts = fse::read_counts(body, &mut pos, alphabet).map_err(|e| e.0)?;
            let a = tans_stream(body, &mut pos)?;
            let b = tans_stream(body, &mut pos)?;
            table.rebuild(&counts);
            let (sa, sb) = syms.split_at_mut(first_stream_len(n));
            table.decode_two(a, sa, table, b, sb).map_err(|e| e.0)?;
        }
        _ => return Err("unknown symbol coding"),
    }
    if fb.bits == 32 {
        let top_bits = split.raw_bits() - 16;
        let top_len = bitpack::plane_len(n, top_bits);
        let top = body
            .get(pos..pos + top_len)
            .ok_or("verbatim plane is truncated")?;
        pos += top_len;
        let (mut mid, mut low) = (Vec::new(), Vec::new());
        get_byte_plane(body, &mut pos, &mut mid, n)?;
        get_byte_plane(body, &mut pos, &mut low, n)?;
        if pos != body.len() {
            return Err("bytes after the last plane of the chunk");
        }
        for (i, &s) in syms.iter().enumerate() {
            let raw =
                bitpack::get(top, i, top_bits) << 16 | u32::from(mid[i]) << 8 | u32::from(low[i]);
            float::put_word(fb, out, i, split.assemble(lut[s as usize], raw));
        }
        return Ok(());
    }
    let raw = &body[pos..];
    if raw.len() != bitpack::plane_len(n, split.raw_bits()) {
        return Err("verbatim plane size does not match the chunk");
    }
    assemble(split, &lut, syms, raw, out, simd_available());
    Ok(())
}

/// Symbols in the first of a chunk's two tANS streams: half of `n` rounded up to a multiple
/// of four (the lanes), or all of them when `n` is four or fewer.
fn first_stream_len(n: usize) -> usize {
    (n.div_ceil(8) * 4).min(n)
}

/// A varint stream length at `*pos` and the tANS stream it introduces.
fn tans_stream<'a>(body: &'a [u8], pos: &mut usize) -> Result<&'a [u8], Refusal> {
    length_prefixed(
        body,
        pos,
        "tANS stream length is not a valid varint",
        "tANS stream runs past the chunk",
    )
}

/// A varint length at `*pos` and the section of that many bytes after it; `*pos` moves past
/// both. `bad_len` and `past_end` say which section was refused.
fn length_prefixed<'a>(
    body: &'a [u8],
    pos: &mut usize,
    bad_len: Refusal,
    past_end: Refusal,
) -> Result<&'a [u8], Refusal> {
    let len = varint::get(body, pos)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or(bad_len)?;
    let section = body
        .get(*pos..)
        .and_then(|b| b.get(..len))
        .ok_or(past_end)?;
    *pos += len;
    Ok(section)
}

/// Whether bf16 chunks assemble with AVX-512 here.
fn simd_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::dense_avx512::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Joins decoded symbols with the verbatim plane into output words; bf16 through the AVX-512
/// path when `simd` (the CPU must have it).
fn assemble(split: Split, lut: &[u32; 256], syms: &[u8], raw: &[u8], out: &mut [u8], simd: bool) {
    let fb = split.fb;
    let w = split.raw_bits();
    if fb.bits == 16 {
        // Fast path (bf16, fp16): a table turns each verbatim part into its sign and mantissa
        // bits in place.
        let mut raw_lut = [0u16; 1 << 11]; // verbatim parts are at most 11 bits (fp16)
        for (r, v) in raw_lut.iter_mut().enumerate().take(1 << w) {
            *v = split.assemble(0, r as u32) as u16;
        }
        let lut16: [u16; 256] = lut.map(|v| v as u16);
        let simd = match () {
            #[cfg(target_arch = "x86_64")]
            () if simd && fb.mantissa == 7 => {
                crate::dense_avx512::assemble_bf16(&lut16, w - 1, syms, raw, out)
            }
            () => 0,
        };
        // `simd` is a multiple of 32 values, so the plane resumes on a whole byte.
        let (syms_rest, raw_rest, out_rest) = (
            &syms[simd..],
            &raw[simd * w as usize / 8..],
            &mut out[2 * simd..],
        );
        let done = simd
            + match w {
                5 => groups16::<5>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                6 => groups16::<6>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                7 => groups16::<7>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                8 => groups16::<8>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                9 => groups16::<9>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                10 => groups16::<10>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
                _ => groups16::<11>(&lut16, &raw_lut, syms_rest, raw_rest, out_rest),
            };
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

/// The 16-bit fast path of [`assemble`] for verbatim parts of `W` bits: eight values lie in
/// `W` ≤ 11 bytes, so one wide load yields eight of them with constant shifts. Returns how
/// many values it wrote (whole groups with a full load inside `raw`); the caller does the rest.
fn groups16<const W: u32>(
    lut16: &[u16; 256],
    raw_lut: &[u16],
    syms: &[u8],
    raw: &[u8],
    out: &mut [u8],
) -> usize {
    let mut done = 0;
    if W <= 8 {
        let mask = (1u64 << W) - 1;
        for ((o, s), g) in out
            .chunks_exact_mut(16)
            .zip(syms.chunks_exact(8))
            .zip(raw.windows(8).step_by(W as usize))
        {
            let word = u64::from_le_bytes(g.try_into().expect("8 bytes"));
            for v in 0..8 {
                let r = ((word >> (v as u32 * W)) & mask) as usize;
                let x = lut16[s[v] as usize] | raw_lut[r];
                o[2 * v..2 * v + 2].copy_from_slice(&x.to_le_bytes());
            }
            done += 8;
        }
    } else {
        let mask = (1u128 << W) - 1;
        for ((o, s), g) in out
            .chunks_exact_mut(16)
            .zip(syms.chunks_exact(8))
            .zip(raw.windows(16).step_by(W as usize))
        {
            let word = u128::from_le_bytes(g.try_into().expect("16 bytes"));
            for v in 0..8 {
                let r = ((word >> (v as u32 * W)) & mask) as usize;
                let x = lut16[s[v] as usize] | raw_lut[r];
                o[2 * v..2 * v + 2].copy_from_slice(&x.to_le_bytes());
            }
            done += 8;
        }
    }
    done
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

    /// The bf16 scalar assembly and (where the CPU has it) the AVX-512 one agree for every
    /// split, on lengths around their step sizes.
    #[test]
    fn bf16_assembly_paths_agree() {
        let split = |k| Split {
            fb: DType::BF16.float_bits().unwrap(),
            k,
        };
        let mut x = 0x2545_f491u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let lut: [u32; 256] = std::array::from_fn(|_| next() & 0x7f80);
        for k in 0..=MAX_K {
            let w = split(k).raw_bits();
            for n in [0usize, 7, 8, 33, 64, 200, 1000, 5000] {
                let syms: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                let raw: Vec<u8> = (0..bitpack::plane_len(n, w))
                    .map(|_| next() as u8)
                    .collect();
                let mut scalar = vec![0u8; 2 * n];
                assemble(split(k), &lut, &syms, &raw, &mut scalar, false);
                for (i, &s) in syms.iter().enumerate() {
                    let want = split(k).assemble(lut[s as usize], bitpack::get(&raw, i, w));
                    assert_eq!(
                        u32::from(u16::from_le_bytes([scalar[2 * i], scalar[2 * i + 1]])),
                        want,
                        "k {k} n {n} value {i}"
                    );
                }
                if simd_available() {
                    let mut simd = vec![0u8; 2 * n];
                    assemble(split(k), &lut, &syms, &raw, &mut simd, true);
                    assert_eq!(simd, scalar, "k {k} n {n}");
                } else {
                    eprintln!("no AVX-512 VBMI here: the scalar path alone is tested");
                }
            }
        }
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
        let bytes: Vec<u8> = (0..(CHUNK * 3 + 77) as u32)
            .flat_map(|i| {
                let e = 120 + (i.wrapping_mul(2654435761) >> 29) as u16;
                ((e << 7) | (i as u16 & 0x807f)).to_le_bytes()
            })
            .collect();
        let size = round_trip(DType::BF16, &bytes);
        assert!(size < bytes.len() * 3 / 4, "{size}");
    }

    /// Both symbol codings round-trip on lengths around the lanes and the stream split.
    #[test]
    fn one_and_two_stream_chunks_round_trip() {
        let fb = DType::BF16.float_bits().unwrap();
        let mut x = 0x9e37_79b9u32;
        let words: Vec<u8> = (0..5000)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let e = 118 + (x >> 29) as u16 + (x >> 28 & x >> 27 & 1) as u16 * 3;
                ((e << 7) | (x as u16 & 0x807f)).to_le_bytes()
            })
            .collect();
        for coding in [SymbolCoding::OneStream, SymbolCoding::TwoStreams] {
            for n in (2..=40).chain([999, 5000]) {
                let bytes = &words[..2 * n];
                let mut p = Vec::new();
                encode_with(fb, bytes, &mut p, coding);
                let mut out = vec![0u8; bytes.len()];
                decode(fb, &p, n, &mut out).unwrap();
                assert_eq!(out, bytes, "{coding:?} n {n}");
            }
        }
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
            assert!(decode(fb, &p[..cut], 4000, &mut out).is_err());
        }
        for i in 0..p.len().min(400) {
            let mut q = p.clone();
            q[i] ^= 0x5a;
            let _ = decode(fb, &q, 4000, &mut out);
        }
    }
}
