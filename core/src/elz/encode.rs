//! Writing an entropy LZ payload from a parse: literals as raw, RLE or Huffman; each code
//! stream as tANS or RLE; extra bits raw. Each choice is the smallest for this block.

use super::stats::Stats;
use super::{offset_code, Seq, LL_CODE, MIN_MATCH, ML_CODE, OF_ALPHABET, SECTION_BYTES};
use crate::entropy::bits::BitWriter;
use crate::entropy::{fse, histogram, huffman};
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
    codes: [Vec<u8>; 3],
    fse_bits: Vec<(u32, u8)>,
    stream: Vec<u8>,
}

/// Appends the payload for `literals` and `seqs` (a parse of one block) to `out`.
pub fn write_payload(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
    let cuts = plan_sections(literals, seqs);
    varint::put(out, cuts.len() as u64);
    let (mut q0, mut l0) = (0, 0);
    for (q1, l1) in cuts {
        write_section(&literals[l0..l1], &seqs[q0..q1], s, out);
        (q0, l0) = (q1, l1);
    }
}

/// Where sections end, as (sequence, literal) indexes: the block is cut into pieces of about
/// [`SECTION_BYTES`] / 4 decoded bytes, and a range of pieces is split in two (at the best
/// piece boundary, recursively) wherever the entropy of its streams, coded with one set of
/// tables per side, beats one set for both by more than a second set of tables costs.
fn plan_sections(literals: &[u8], seqs: &[Seq]) -> Vec<(usize, usize)> {
    let piece = SECTION_BYTES / 4;
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let (mut pos, mut lit) = (0usize, 0usize);
    let mut next = piece;
    for (i, q) in seqs.iter().enumerate() {
        pos += (q.ll + q.ml) as usize;
        lit += q.ll as usize;
        if pos >= next {
            pieces.push((i + 1, lit));
            next = pos + piece;
        }
    }
    match pieces.last_mut() {
        // The last section also carries the block's trailing literals.
        Some(c) if c.0 == seqs.len() => c.1 = literals.len(),
        _ => pieces.push((seqs.len(), literals.len())),
    }
    if pieces.len() == 1 {
        return pieces;
    }
    let stats: Vec<Stats> = {
        let (mut q0, mut l0) = (0, 0);
        pieces
            .iter()
            .map(|&(q1, l1)| {
                let st = Stats::of(&literals[l0..l1], &seqs[q0..q1]);
                (q0, l0) = (q1, l1);
                st
            })
            .collect()
    };
    let mut ends = Vec::new();
    split(&stats, 0, stats.len(), &mut ends);
    ends.into_iter().map(|k| pieces[k - 1]).collect()
}

/// Splits pieces `a..b` where it pays; pushes the end piece (exclusive) of each section.
fn split(stats: &[Stats], a: usize, b: usize, ends: &mut Vec<usize>) {
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
            left.add(&stats[m - 1], 1);
            right.add(&stats[m - 1], -1);
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

/// One section: its literals, then its sequences.
fn write_section(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
    write_literals(literals, out);
    varint::put(out, seqs.len() as u64);
    if seqs.is_empty() {
        return;
    }
    let mut extra = BitWriter::with_vec(std::mem::take(&mut s.stream));
    for c in s.codes.iter_mut() {
        c.clear();
    }
    for q in seqs {
        let (lc, lb, lx) = LL_CODE.code(q.ll);
        let (mc, mb, mx) = ML_CODE.code(q.ml - MIN_MATCH as u32);
        let (oc, ob, ox) = offset_code(q.ov);
        s.codes[0].push(lc);
        s.codes[1].push(mc);
        s.codes[2].push(oc);
        extra.put(u64::from(lx), lb);
        extra.put(u64::from(mx), mb);
        extra.put(u64::from(ox), ob);
    }
    let extra = extra.finish();
    let alphabets = [LL_CODE.alphabet(), ML_CODE.alphabet(), OF_ALPHABET];
    let logs = [LL_LOG, ML_LOG, OF_LOG];
    for k in 0..3 {
        write_codes(&s.codes[k], alphabets[k], logs[k], &mut s.fse_bits, out);
    }
    varint::put(out, extra.len() as u64);
    out.extend_from_slice(&extra);
    s.stream = extra;
}

fn write_literals(lits: &[u8], out: &mut Vec<u8>) {
    varint::put(out, lits.len() as u64);
    if lits.is_empty() {
        out.push(LIT_RAW);
        return;
    }
    let freq = histogram(lits);
    let present = freq.iter().filter(|&&f| f > 0).count();
    if present == 1 {
        out.push(LIT_RLE);
        out.push(lits[0]);
        return;
    }
    // Huffman only where it saves more than its table costs (and a little decode time).
    if lits.len() >= MIN_HUFFMAN_LITERALS {
        let lens = huffman::build_lengths(&freq);
        let estimate = huffman::coded_size(&freq, &lens) + 130;
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

fn write_codes(
    codes: &[u8],
    alphabet: usize,
    max_log: u32,
    scratch: &mut Vec<(u32, u8)>,
    out: &mut Vec<u8>,
) {
    let mut freq = vec![0u32; alphabet];
    for &c in codes {
        freq[c as usize] += 1;
    }
    if freq.iter().filter(|&&f| f > 0).count() == 1 {
        out.push(CODES_RLE);
        out.push(codes[0]);
        return;
    }
    out.push(CODES_TANS);
    let counts = fse::normalize(&freq, max_log);
    fse::write_counts(&counts, out);
    let mut stream = Vec::new();
    fse::Encoder::new(&counts).encode(codes, scratch, &mut stream);
    varint::put(out, stream.len() as u64);
    out.extend_from_slice(&stream);
}
