//! Writing an entropy LZ payload from a parse: literals as raw, RLE or Huffman; each code
//! stream as tANS or RLE; extra bits raw. Each choice is the smallest for this block.

use super::stats::Stats;
use super::{offset_code, Seq, LL_CODE, MIN_MATCH, ML_CODE, SECTION_BYTES};
use crate::entropy::bits::BitWriter;
use crate::entropy::{fse, huffman};
use crate::varint;

/// Literal section modes.
pub(super) const LIT_RAW: u8 = 0;
pub(super) const LIT_RLE: u8 = 1;
pub(super) const LIT_HUFFMAN: u8 = 2;
/// Code stream modes.
pub(super) const CODES_TANS: u8 = 0;
pub(super) const CODES_RLE: u8 = 1;
/// Fewest literals a Huffman-coded literal section may hold.
pub(super) const MIN_HUFFMAN_LITERALS: usize = 64;

/// Largest tANS table log for the literal-length, match-length and offset codes.
const LL_LOG: u32 = 10;
const ML_LOG: u32 = 10;
const OF_LOG: u32 = 9;

/// Reusable encoder memory.
#[derive(Default)]
pub struct PayloadScratch {
    /// The literal-length, match-length and offset code of every sequence of the block.
    codes: [Vec<u8>; 3],
    /// Every sequence's three extra-bit fields packed low to high, and their bit count
    /// ([`SPLIT_FIELDS`] where they do not fit one put).
    extra: Vec<u64>,
    extra_bits: Vec<u8>,
    fse_bits: Vec<u64>,
    stream: Vec<u8>,
}

/// An `extra_bits` entry whose fields are put one by one (over 56 bits: lengths in the
/// millions).
const SPLIT_FIELDS: u8 = u8::MAX;

/// Appends the payload for `literals` and `seqs` (a parse of one block) to `out`.
pub fn write_payload(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
    let pieces = sequence_codes(literals, seqs, s);
    let sections = plan_sections(pieces);
    varint::put(out, sections.len() as u64);
    let (mut q0, mut l0) = (0, 0);
    for (q1, l1, stats) in sections {
        write_section(&literals[l0..l1], seqs, q0..q1, &stats, s, out);
        (q0, l0) = (q1, l1);
    }
}

/// A stretch of the block: where it ends, as (sequence, literal) indexes, and its statistics.
type Piece = (usize, usize, Stats);

/// Fills the scratch's code and extra-bit arrays for `seqs` (the one place each sequence's
/// fields are split into codes and extra bits), and cuts the block into pieces of about
/// [`SECTION_BYTES`] / 4 decoded bytes, each with its statistics, taken while its codes are in
/// cache. The last piece also carries the block's trailing literals.
fn sequence_codes(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch) -> Vec<Piece> {
    let n = seqs.len();
    // Every entry below `n` is written here before it is read: the arrays only ever grow (a
    // clear and refill would zero 12 bytes a sequence for nothing).
    fn at_least(v: &mut Vec<impl Copy + Default>, n: usize) {
        if v.len() < n {
            v.resize(n, Default::default());
        }
    }
    s.codes.iter_mut().for_each(|c| at_least(c, n));
    at_least(&mut s.extra, n);
    at_least(&mut s.extra_bits, n);
    let [llc, mlc, ofc] = &mut s.codes;
    let (extra, extra_bits) = (&mut s.extra[..n], &mut s.extra_bits[..n]);
    let (llc, mlc, ofc) = (&mut llc[..n], &mut mlc[..n], &mut ofc[..n]);
    let piece = SECTION_BYTES / 4;
    let mut pieces = Vec::new();
    let (mut pos, mut lit, mut next) = (0usize, 0usize, piece);
    let (mut q0, mut l0) = (0, 0);
    for (i, q) in seqs.iter().enumerate() {
        let (l, lb, lx) = LL_CODE.code(q.ll);
        let (m, mb, mx) = ML_CODE.code(q.ml - MIN_MATCH as u32);
        let (o, ob, ox) = offset_code(q.ov);
        (llc[i], mlc[i], ofc[i]) = (l, m, o);
        let bits = lb + mb + ob;
        if bits <= 56 {
            extra[i] = u64::from(lx) | u64::from(mx) << lb | u64::from(ox) << (lb + mb);
            extra_bits[i] = bits as u8;
        } else {
            extra_bits[i] = SPLIT_FIELDS;
        }
        pos += (q.ll + q.ml) as usize;
        lit += q.ll as usize;
        if pos >= next {
            let codes = [&llc[q0..=i], &mlc[q0..=i], &ofc[q0..=i]];
            let stats = Stats::of_codes(&literals[l0..lit], codes);
            pieces.push((i + 1, lit, stats));
            (q0, l0) = (i + 1, lit);
            next = pos + piece;
        }
    }
    match pieces.last_mut() {
        Some((end, lits, stats)) if *end == n => {
            stats.add_literals(&literals[*lits..]);
            *lits = literals.len();
        }
        _ => {
            let codes = [&llc[q0..], &mlc[q0..], &ofc[q0..]];
            let stats = Stats::of_codes(&literals[l0..], codes);
            pieces.push((n, literals.len(), stats));
        }
    }
    pieces
}

/// Where sections end, as (sequence, literal) indexes, with each section's statistics: a range
/// of `pieces` is split in two (at the best piece boundary, recursively) wherever the entropy
/// of its streams, coded with one set of tables per side, beats one set for both by more than
/// a second set of tables costs.
fn plan_sections(pieces: Vec<Piece>) -> Vec<Piece> {
    let stats: Vec<&Stats> = pieces.iter().map(|p| &p.2).collect();
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
            (pieces[k - 1].0, pieces[k - 1].1, whole)
        })
        .collect()
}

/// Splits pieces `a..b` where it pays; pushes the end piece (exclusive) of each section.
fn split(stats: &[&Stats], a: usize, b: usize, ends: &mut Vec<usize>) {
    const SECTION_OVERHEAD_BITS: f64 = 64.0;
    if b - a >= 2 {
        let mut whole = Stats::empty();
        for st in &stats[a..b] {
            whole.add(st, 1);
        }
        let whole_cost = whole.cost();
        let mut left = Stats::empty();
        let mut right = whole.clone();
        let mut best = (f64::MAX, a);
        for m in a + 1..b {
            left.add(stats[m - 1], 1);
            right.add(stats[m - 1], -1);
            let c = left.cost() + right.cost();
            if c < best.0 {
                best = (c, m);
            }
        }
        if best.0 + SECTION_OVERHEAD_BITS < whole_cost {
            split(stats, a, best.1, ends);
            split(stats, best.1, b, ends);
            return;
        }
    }
    ends.push(b);
}

/// One section: its literals, then the sequences `range` of the block (`seqs`, whose codes
/// and extra bits the scratch holds); `stats` are the section's histograms.
fn write_section(
    literals: &[u8],
    seqs: &[Seq],
    range: std::ops::Range<usize>,
    stats: &Stats,
    s: &mut PayloadScratch,
    out: &mut Vec<u8>,
) {
    write_literals(literals, &stats.lit, out);
    varint::put(out, range.len() as u64);
    if range.is_empty() {
        return;
    }
    let freqs = [&stats.ll, &stats.ml, &stats.of];
    let logs = [LL_LOG, ML_LOG, OF_LOG];
    for k in 0..3 {
        let codes = &s.codes[k][range.clone()];
        write_codes(codes, freqs[k], logs[k], &mut s.fse_bits, out);
    }
    let mut extra = BitWriter::with_vec(std::mem::take(&mut s.stream));
    // Typically under 3 bytes of extra bits per sequence.
    extra.reserve(range.len() * 3);
    let fields = s.extra[range.clone()]
        .iter()
        .zip(&s.extra_bits[range.clone()]);
    for (i, (&x, &bits)) in fields.enumerate() {
        if bits != SPLIT_FIELDS {
            extra.put(x, u32::from(bits));
        } else {
            let q = &seqs[range.start + i];
            for (_, n, v) in [
                LL_CODE.code(q.ll),
                ML_CODE.code(q.ml - MIN_MATCH as u32),
                offset_code(q.ov),
            ] {
                extra.put(u64::from(v), n);
            }
        }
    }
    let extra = extra.finish();
    varint::put(out, extra.len() as u64);
    out.extend_from_slice(&extra);
    s.stream = extra;
}

/// Writes `lits`, whose byte histogram is `freq`.
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
    if lits.len() >= MIN_HUFFMAN_LITERALS {
        let lens = huffman::build_lengths(freq);
        let estimate = huffman::coded_size(freq, &lens) + 130;
        if estimate < lits.len() - lits.len() / 32 {
            out.push(LIT_HUFFMAN);
            huffman::write_table(&lens, out);
            let mut section = Vec::with_capacity(estimate);
            huffman::encode(lits, &lens, &mut section);
            varint::put(out, section.len() as u64);
            out.extend_from_slice(&section);
            return;
        }
    }
    out.push(LIT_RAW);
    out.extend_from_slice(lits);
}

/// Writes one code stream, whose histogram is `freq`.
fn write_codes(
    codes: &[u8],
    freq: &[u32],
    max_log: u32,
    scratch: &mut Vec<u64>,
    out: &mut Vec<u8>,
) {
    if freq.iter().filter(|&&f| f > 0).count() == 1 {
        out.push(CODES_RLE);
        out.push(codes[0]);
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
