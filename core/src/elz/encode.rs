//! Writing an entropy LZ payload from a parse: literals as raw, RLE or Huffman; each code
//! stream as tANS or RLE; extra bits raw. Each choice is the smallest for this block.

use super::{offset_code, Seq, LL_CODE, MIN_MATCH, ML_CODE, OF_ALPHABET};
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

/// Appends the payload for `literals` and `seqs` to `out`.
pub fn write_payload(literals: &[u8], seqs: &[Seq], s: &mut PayloadScratch, out: &mut Vec<u8>) {
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
    if lits.len() >= 64 {
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
