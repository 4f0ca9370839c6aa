//! Writing an entropy LZ payload from a parse: literals as raw, RLE or Huffman; each code
//! stream as tANS or RLE; extra bits raw. Each choice is the smallest for this block.

use super::stats::{CodeCounts, Stats, CODE_COUNTS};
use super::{offset_code, Seq, LL_CODE, MIN_MATCH, ML_CODE, SECTION_BYTES};
use crate::entropy::bits::{self, BitWriter};
use crate::entropy::{fse, huffman};
use crate::varint;

/// Literal section modes.
pub(super) const LIT_RAW: u8 = 0;
pub(super) const LIT_RLE: u8 = 1;
pub(super) const LIT_HUFFMAN: u8 = 2;
/// Code stream modes.
pub(super) const CODES_TANS: u8 = 0;
pub(super) const CODES_RLE: u8 = 1;
pub(super) const CODES_HUFFMAN: u8 = 2;
/// Fewest symbols a Huffman-coded literal section or code stream may hold (its decode table is
/// a 2^11-entry fill).
pub(super) const MIN_HUFFMAN_SYMBOLS: usize = 64;

/// Largest tANS table log for the literal-length, match-length and offset codes.
const LL_LOG: u32 = 10;
const ML_LOG: u32 = 10;
const OF_LOG: u32 = 9;

/// Reusable encoder memory.
#[derive(Default)]
pub struct PayloadScratch {
    /// The literal-length, match-length and offset code of every sequence of the block.
    codes: [Vec<u8>; 3],
    /// The extra bits of every sequence of the block, as one stream that sections cut up.
    extra: Vec<u8>,
    fse_bits: Vec<u64>,
}

/// Appends the payload for `literals` and `seqs` (a parse of one block) to `out`.
pub fn write_payload(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
    // FAST PATH: BMI2 and LZCNT, with the code split, the Huffman and tANS coders and the
    // bit writers inlined into one function.
    crate::multiversion!(
        fn(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>)
            => write_payload_with(literals, seqs, s, out);
        "bmi2,lzcnt" if crate::cpu::has_bmi2()
    )
}

#[inline(always)]
fn write_payload_with(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
    let pieces = sequence_codes(literals, seqs, s);
    let sections = plan_sections(pieces);
    varint::put(out, sections.len() as u64);
    let mut start = Piece {
        seqs: 0,
        literals: 0,
        extra_bits: 0,
        stats: Stats::empty(),
    };
    for end in sections {
        write_section(literals, &start, &end, s, out);
        start = end;
    }
}

/// A stretch of the block: where it ends, as sequence, literal and extra-bit indexes, and its
/// statistics.
struct Piece {
    seqs: usize,
    literals: usize,
    extra_bits: usize,
    stats: Stats,
}

/// Fills the scratch's code arrays and extra-bit stream for `seqs` (the one place each
/// sequence's fields are split into codes and extra bits), and cuts the block into pieces of
/// about [`SECTION_BYTES`] / 4 decoded bytes, each with its statistics (its codes counted as
/// they are made). The last piece also carries the block's trailing literals.
#[inline(always)]
fn sequence_codes(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch) -> Vec<Piece> {
    let n = seqs.len();
    // Every entry below `n` is written here before it is read: the arrays only ever grow (a
    // clear and refill would zero 3 bytes a sequence for nothing).
    for c in &mut s.codes {
        if c.len() < n {
            c.resize(n, 0);
        }
    }
    let [llc, mlc, ofc] = &mut s.codes;
    let (llc, mlc, ofc) = (&mut llc[..n], &mut mlc[..n], &mut ofc[..n]);
    let mut extra = BitWriter::with_vec(std::mem::take(&mut s.extra));
    // At most 3 × 27 bits a sequence, so room for 11 bytes each (3 a sequence are typical; the
    // memory is kept at its length from block to block, and zeroed once).
    extra.reserve(n * 11);
    let piece = SECTION_BYTES / 4;
    let mut pieces = Vec::new();
    let (mut pos, mut lit, mut next) = (0usize, 0usize, piece);
    let mut l0 = 0;
    // The piece's code histograms, counted as the codes are made (not in a pass afterwards).
    let mut counts: CodeCounts = [[0; CODE_COUNTS]; 3];
    for (i, q) in seqs.iter().enumerate() {
        let (l, lb, lx) = LL_CODE.code(q.ll);
        let (m, mb, mx) = ML_CODE.code(q.ml - MIN_MATCH as u32);
        let (o, ob, ox) = offset_code(q.ov);
        (llc[i], mlc[i], ofc[i]) = (l, m, o);
        for (h, c) in counts.iter_mut().zip([l, m, o]) {
            h[usize::from(c) % CODE_COUNTS] += 1;
        }
        let bits = lb + mb + ob;
        if bits <= 56 {
            extra.put_reserved(
                u64::from(lx) | u64::from(mx) << lb | u64::from(ox) << (lb + mb),
                bits,
            );
        } else {
            // Lengths in the millions: the fields one by one.
            extra.put_reserved(u64::from(lx), lb);
            extra.put_reserved(u64::from(mx), mb);
            extra.put_reserved(u64::from(ox), ob);
        }
        pos += (q.ll + q.ml) as usize;
        lit += q.ll as usize;
        if pos >= next {
            pieces.push(Piece {
                seqs: i + 1,
                literals: lit,
                extra_bits: extra.bit_len(),
                stats: Stats::of_counts(&literals[l0..lit], &counts),
            });
            counts = [[0; CODE_COUNTS]; 3];
            l0 = lit;
            next = pos + piece;
        }
    }
    let extra_bits = extra.bit_len();
    s.extra = extra.into_scratch();
    match pieces.last_mut() {
        Some(last) if last.seqs == n => {
            last.stats.add_literals(&literals[last.literals..]);
            last.literals = literals.len();
        }
        _ => {
            pieces.push(Piece {
                seqs: n,
                literals: literals.len(),
                extra_bits,
                stats: Stats::of_counts(&literals[l0..], &counts),
            });
        }
    }
    pieces
}

/// The sections, as the pieces they end with, each carrying the section's statistics: a range
/// of `pieces` is split in two (at the best piece boundary, recursively) wherever the entropy
/// of its streams, coded with one set of tables per side (the tables' own bits counted),
/// beats one set for both by more than [`SECTION_PRICE_BITS`].
fn plan_sections(pieces: Vec<Piece>) -> Vec<Piece> {
    let stats: Vec<&Stats> = pieces.iter().map(|p| &p.stats).collect();
    let mut ends = Vec::new();
    split(&stats, 0, stats.len(), &mut ends);
    let mut first = 0;
    ends.into_iter()
        .map(|k| {
            let mut whole = Stats::empty();
            for st in &stats[first..k] {
                whole.add(st, 1);
            }
            first = k;
            Piece {
                stats: whole,
                ..pieces[k - 1]
            }
        })
        .collect()
}

/// What a section must save, beyond its own tables' bits, to be made: the decoder builds its
/// four lookup tables and restarts the sequence pass for each one.
const SECTION_PRICE_BITS: f64 = 2048.0;

/// Splits pieces `a..b` where it pays; pushes the end piece (exclusive) of each section.
fn split(stats: &[&Stats], a: usize, b: usize, ends: &mut Vec<usize>) {
    // Splits are tried every STRIDE pieces, then one by one around the best of those: costs
    // change smoothly from piece to piece, and an entropy estimate per candidate is costly.
    const STRIDE: usize = 4;
    if b - a >= 2 {
        let mut whole = Stats::empty();
        for st in &stats[a..b] {
            whole.add(st, 1);
        }
        let whole_cost = whole.cost();
        let (_, coarse) = best_split(stats, &whole, a, (a + 1..b).step_by(STRIDE));
        let near = coarse.saturating_sub(STRIDE - 1).max(a + 1)..(coarse + STRIDE).min(b);
        let (cost, at) = best_split(stats, &whole, a, near);
        if cost + SECTION_PRICE_BITS < whole_cost {
            split(stats, a, at, ends);
            split(stats, at, b, ends);
            return;
        }
    }
    ends.push(b);
}

/// The cheapest of the candidate splits `at` (increasing, after `a`) of the pieces from `a`
/// whose sum is `whole`: the estimated bits of both sides, and where.
fn best_split(
    stats: &[&Stats],
    whole: &Stats,
    a: usize,
    at: impl Iterator<Item = usize>,
) -> (f64, usize) {
    let mut left = Stats::empty();
    let mut right = whole.clone();
    let (mut moved, mut best) = (a, (f64::MAX, a));
    for m in at {
        for st in &stats[moved..m] {
            left.add(st, 1);
            right.add(st, -1);
        }
        moved = m;
        let c = left.cost() + right.cost();
        if c < best.0 {
            best = (c, m);
        }
    }
    best
}

/// One section: the block's pieces after `start` up to `end` (whose statistics are the
/// section's); `literals` are the block's, its codes and extra bits in the scratch.
#[inline(always)]
fn write_section(
    literals: &[u8],
    start: &Piece,
    end: &Piece,
    s: &mut PayloadScratch,
    out: &mut Vec<u8>,
) {
    let stats = &end.stats;
    write_literals(&literals[start.literals..end.literals], &stats.lit, out);
    let range = start.seqs..end.seqs;
    varint::put(out, range.len() as u64);
    if range.is_empty() {
        return;
    }
    let freqs = [&stats.ll, &stats.ml, &stats.of];
    let logs = [LL_LOG, ML_LOG, OF_LOG];
    for k in 0..3 {
        let codes = &s.codes[k][range.clone()];
        write_codes(
            codes,
            freqs[k],
            logs[k],
            k == OF_STREAM,
            &mut s.fse_bits,
            out,
        );
    }
    let (a, b) = (start.extra_bits, end.extra_bits);
    varint::put(out, (b - a).div_ceil(8) as u64);
    bits::append_bit_range(&s.extra, a, b, out);
}

/// Writes `lits`, whose byte histogram is `freq`.
#[inline(always)]
fn write_literals(lits: &[u8], freq: &[u32], out: &mut Vec<u8>) {
    varint::put(out, lits.len() as u64);
    if lits.is_empty() {
        out.push(LIT_RAW);
        return;
    }
    let freq: &[u32; 256] = freq.try_into().expect("a byte histogram");
    let present = freq.iter().filter(|&&f| f > 0).count();
    if present == 1 {
        out.push(LIT_RLE);
        out.push(lits[0]);
        return;
    }
    // Huffman only where it saves more than its table costs (and a little decode time).
    if lits.len() >= MIN_HUFFMAN_SYMBOLS {
        let lens = huffman::build_lengths(freq);
        let estimate = huffman::coded_size(freq, &lens) + 130;
        if estimate < lits.len() - lits.len() / 32 {
            out.push(LIT_HUFFMAN);
            huffman::write_section(lits, &lens, out);
            return;
        }
    }
    out.push(LIT_RAW);
    out.extend_from_slice(lits);
}

/// The offset codes' stream (after the literal-length and match-length codes').
const OF_STREAM: usize = 2;

/// Writes one code stream, whose histogram is `freq`: Huffman-coded where `by_huffman` is set
/// and there are enough codes, tANS-coded otherwise (or RLE).
///
/// Offset codes go by Huffman: they are spread thin over their alphabet, so whole-bit code
/// lengths cost little, and four independent Huffman streams decode faster than a lone tANS
/// stream, whose four lanes share one bit reader. The length codes' skewed
/// statistics keep tANS, and decode two streams side by side.
#[inline(always)]
fn write_codes(
    codes: &[u8],
    freq: &[u32],
    max_log: u32,
    by_huffman: bool,
    scratch: &mut Vec<u64>,
    out: &mut Vec<u8>,
) {
    if freq.iter().filter(|&&f| f > 0).count() == 1 {
        out.push(CODES_RLE);
        out.push(codes[0]);
        return;
    }
    if by_huffman && codes.len() >= MIN_HUFFMAN_SYMBOLS {
        let mut bytes = [0u32; 256];
        bytes[..freq.len()].copy_from_slice(freq);
        let lens = huffman::build_lengths(&bytes);
        out.push(CODES_HUFFMAN);
        huffman::write_section(codes, &lens, out);
        return;
    }
    out.push(CODES_TANS);
    let counts = fse::normalize(freq, max_log);
    fse::write_counts(&counts, out);
    let mut stream = Vec::new();
    fse::Encoder::new(&counts).encode(codes, scratch, &mut stream);
    varint::put(out, stream.len() as u64);
    out.extend_from_slice(&stream);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_and_bmi2_builds_write_alike() {
        // `write_payload` takes the BMI2 build where the CPU has it; `write_payload_with` is
        // the baseline. Long sequences too, whose extra bits go field by field.
        let literals: Vec<u8> = include_bytes!("encode.rs").repeat(4);
        let seqs: Vec<Seq> = (0..20_000u32)
            .map(|i| Seq {
                ll: u32::from(i % 7 == 0) * (i % 13),
                ml: 3 + (i * 7919) % 40 + if i % 5000 == 1 { 1 << 26 } else { 0 },
                ov: 1 + (i * 104_729) % (1 << (i % 22 + 1)),
            })
            .collect();
        let used: u32 = seqs.iter().map(|q| q.ll).sum();
        let literals = &literals[..(used as usize + 100).min(literals.len())];
        assert!(used as usize <= literals.len());
        let (mut fast, mut base) = (Vec::new(), Vec::new());
        write_payload(literals, &seqs, &mut PayloadScratch::default(), &mut fast);
        write_payload_with(literals, &seqs, &mut PayloadScratch::default(), &mut base);
        assert!(fast.len() > 1000);
        assert_eq!(fast, base);
    }
}
