//! Canonical Huffman coding of byte streams, for literals (`docs/FORMAT.md` §5.2).
//!
//! Codes are limited to [`MAX_BITS`] bits so a decoder looks each symbol up in one table of
//! 2^11 entries; for big sections a second table maps 11 bits to the one or two symbols whose
//! codes they start with, two symbols a lookup where both codes fit. A coded stream is cut into
//! four segments, each its own bit stream, and the decoder runs the four side by side: four
//! independent dependency chains per loop turn.

use super::bits::{BitReader, BitWriter};
use super::EntropyError;

/// Longest code length.
pub const MAX_BITS: u32 = 11;
/// Independent bit streams per coded stream.
pub const STREAMS: usize = 4;

/// Code lengths of a byte alphabet (0 = symbol absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeLengths {
    pub lens: [u8; 256],
    /// Longest code (the decode table has 2^max_len entries).
    pub max_len: u32,
}

/// Optimal code lengths for `freq`, limited to [`MAX_BITS`]; the code is always complete (the
/// Kraft sum is exactly one). Needs at least two symbols with a non-zero count.
pub fn build_lengths(freq: &[u32; 256]) -> CodeLengths {
    // Symbols by ascending count (ties by symbol, so the result is deterministic).
    let mut syms: Vec<u8> = (0..=255u8).filter(|&s| freq[s as usize] > 0).collect();
    debug_assert!(syms.len() >= 2);
    syms.sort_by_key(|&s| (freq[s as usize], s));
    let n = syms.len();
    // Two-queue Huffman construction over leaves (sorted) and internal nodes (created sorted).
    let mut weight: Vec<u64> = syms.iter().map(|&s| u64::from(freq[s as usize])).collect();
    let mut parent = vec![0usize; 2 * n - 1];
    weight.reserve(n - 1);
    let (mut leaf, mut node) = (0usize, n);
    for next in n..2 * n - 1 {
        let mut pick = || {
            if leaf < n && (node >= next || weight[leaf] <= weight[node]) {
                leaf += 1;
                leaf - 1
            } else {
                node += 1;
                node - 1
            }
        };
        let (a, b) = (pick(), pick());
        weight.push(weight[a] + weight[b]);
        parent[a] = next;
        parent[b] = next;
    }
    // Depths: the root is the last node; parents come after children.
    let mut depth = vec![0u32; 2 * n - 1];
    for i in (0..2 * n - 2).rev() {
        depth[i] = depth[parent[i]] + 1;
    }
    let mut lens: Vec<u32> = depth[..n].to_vec();
    limit_lengths(&mut lens, MAX_BITS);
    let mut out = CodeLengths {
        lens: [0; 256],
        max_len: 0,
    };
    for (i, &s) in syms.iter().enumerate() {
        out.lens[s as usize] = lens[i] as u8;
        out.max_len = out.max_len.max(lens[i]);
    }
    out
}

/// Caps `lens` (ordered by ascending symbol count) at `limit` bits and restores a complete code:
/// first lengthen the rarest symbols until the Kraft sum fits, then shorten the commonest
/// while it leaves room. Every Kraft term is a power of two, so the second step ends exactly
/// at one.
fn limit_lengths(lens: &mut [u32], limit: u32) {
    if lens.iter().all(|&l| l <= limit) {
        return;
    }
    let one = 1u64 << limit;
    for l in lens.iter_mut() {
        *l = (*l).min(limit);
    }
    let mut kraft: u64 = lens.iter().map(|&l| one >> l).sum();
    while kraft > one {
        // The rarest symbol among the longest codes still below the limit.
        let longest = lens.iter().copied().filter(|&l| l < limit).max().unwrap();
        let i = lens.iter().position(|&l| l == longest).unwrap();
        lens[i] += 1;
        kraft -= one >> lens[i];
    }
    while kraft < one {
        let room = one - kraft;
        let i = (0..lens.len())
            .rev()
            .find(|&i| lens[i] > 1 && one >> lens[i] <= room)
            .expect("a complete code always has a code to shorten");
        kraft += one >> lens[i];
        lens[i] -= 1;
    }
}

/// Canonical codes from lengths: by length, then symbol; returned bit-reversed, since streams
/// are read least significant bit first and the code's first bit must come out first.
fn canonical_codes(lens: &[u8; 256]) -> [u16; 256] {
    let mut count = [0u16; MAX_BITS as usize + 2];
    for &l in lens.iter() {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u16; MAX_BITS as usize + 2];
    let mut code = 0u16;
    for l in 1..=MAX_BITS as usize {
        code = (code + count[l - 1]) << 1;
        next[l] = code;
    }
    let mut codes = [0u16; 256];
    for s in 0..256 {
        let l = lens[s] as u32;
        if l > 0 {
            let c = next[l as usize];
            next[l as usize] += 1;
            codes[s] = c.reverse_bits() >> (16 - l);
        }
    }
    codes
}

/// Writes the table description: the last symbol with a code, then one 4-bit length per symbol
/// up to it (low nibble first).
pub fn write_table(lens: &CodeLengths, out: &mut Vec<u8>) {
    let last = (0..256).rev().find(|&s| lens.lens[s] > 0).unwrap_or(0);
    out.push(last as u8);
    for pair in lens.lens[..=last].chunks(2) {
        out.push(pair[0] | pair.get(1).map_or(0, |&h| h << 4));
    }
}

/// Reads a table description at `*pos`; checks every length and that the code is complete.
pub fn read_table(src: &[u8], pos: &mut usize) -> Result<CodeLengths, EntropyError> {
    let bad = |m| EntropyError(m);
    let last = *src.get(*pos).ok_or(bad("Huffman table is truncated"))? as usize;
    let bytes = (last + 2) / 2;
    let body = src
        .get(*pos + 1..*pos + 1 + bytes)
        .ok_or(bad("Huffman table is truncated"))?;
    *pos += 1 + bytes;
    let mut lens = CodeLengths {
        lens: [0; 256],
        max_len: 0,
    };
    for s in 0..=last {
        let l = (body[s / 2] >> (4 * (s % 2))) & 15;
        if u32::from(l) > MAX_BITS {
            return Err(bad("Huffman code length above 11 bits"));
        }
        lens.lens[s] = l;
        lens.max_len = lens.max_len.max(u32::from(l));
    }
    if last.is_multiple_of(2) && body[last / 2] >> 4 != 0 {
        return Err(bad("Huffman table has a length past its last symbol"));
    }
    let kraft: u64 = lens
        .lens
        .iter()
        .filter(|&&l| l > 0)
        .map(|&l| 1u64 << (MAX_BITS - u32::from(l)))
        .sum();
    let symbols = lens.lens.iter().filter(|&&l| l > 0).count();
    if symbols < 2 || kraft != 1 << MAX_BITS {
        return Err(bad("Huffman code lengths do not form a complete code"));
    }
    Ok(lens)
}

/// Segment lengths of a stream of `n` symbols: three of `ceil(n / 4)`, the last the rest.
fn segments(n: usize) -> [usize; STREAMS] {
    let seg = n.div_ceil(STREAMS);
    let mut s = [0; STREAMS];
    let mut left = n;
    for x in s.iter_mut() {
        *x = seg.min(left);
        left -= *x;
    }
    s
}

/// Encodes `src` with `lens` as four bit streams: their byte sizes (varints of the first three;
/// the fourth is the rest of the section) and then the streams, appended to `out`.
pub fn encode(src: &[u8], lens: &CodeLengths, out: &mut Vec<u8>) {
    put_streams(&code_streams(src, lens), out);
}

/// Writes a whole Huffman section as the container formats store one: `lens`' table
/// description, the coded size as a varint, and [`encode`]'s output.
#[inline(always)]
pub fn write_section(src: &[u8], lens: &CodeLengths, out: &mut Vec<u8>) {
    write_table(lens, out);
    let streams = code_streams(src, lens);
    let size: usize = streams[..STREAMS - 1]
        .iter()
        .map(|s| crate::varint::len(s.len() as u64))
        .chain(streams.iter().map(Vec::len))
        .sum();
    crate::varint::put(out, size as u64);
    put_streams(&streams, out);
}

/// `src` cut into four segments, each coded into its own bit stream.
#[inline(always)]
fn code_streams(src: &[u8], lens: &CodeLengths) -> [Vec<u8>; STREAMS] {
    let codes = canonical_codes(&lens.lens);
    let mut streams: [Vec<u8>; STREAMS] = Default::default();
    let mut start = 0;
    for (len, stream) in segments(src.len()).into_iter().zip(&mut streams) {
        let mut w = BitWriter::new();
        w.reserve(len * 3 / 4);
        // Four symbols per put (≤ 44 bits): a quarter of the stores.
        let seg = &src[start..start + len];
        let mut quads = seg.chunks_exact(4);
        let code = |s: u8| {
            (
                u64::from(codes[s as usize]),
                u32::from(lens.lens[s as usize]),
            )
        };
        for q in &mut quads {
            let (c0, l0) = code(q[0]);
            let (c1, l1) = code(q[1]);
            let (c2, l2) = code(q[2]);
            let (c3, l3) = code(q[3]);
            w.put(
                c0 | c1 << l0 | c2 << (l0 + l1) | c3 << (l0 + l1 + l2),
                l0 + l1 + l2 + l3,
            );
        }
        for &s in quads.remainder() {
            let (c, l) = code(s);
            w.put(c, l);
        }
        *stream = w.finish();
        start += len;
    }
    streams
}

/// The first three streams' sizes, then the four streams.
fn put_streams(streams: &[Vec<u8>; STREAMS], out: &mut Vec<u8>) {
    for s in &streams[..STREAMS - 1] {
        crate::varint::put(out, s.len() as u64);
    }
    for s in streams {
        out.extend_from_slice(s);
    }
}

/// One decode table entry: symbol and code length.
#[derive(Copy, Clone, Default)]
pub struct Entry {
    sym: u8,
    len: u8,
}

/// Decodes `out.len()` symbols from `section` (the stream sizes and streams [`encode`] wrote).
pub fn decode(section: &[u8], lens: &CodeLengths, out: &mut [u8]) -> Result<(), EntropyError> {
    decode_with(section, lens, &mut DecodeTable::default(), out)
}

/// A decode table's memory, reused from section to section: one symbol per entry, and two
/// where both codes fit the entry's 11 bits.
pub struct DecodeTable {
    single: Box<[Entry; TABLE]>,
    pairs: Box<[Pair; TABLE]>,
}

impl Default for DecodeTable {
    fn default() -> Self {
        DecodeTable {
            single: Box::new([Entry::default(); TABLE]),
            pairs: Box::new([Pair::default(); TABLE]),
        }
    }
}

/// A two-symbol decode table entry: the next one or two symbols (the first in the low byte),
/// their codes' total length, and how many there are.
#[derive(Copy, Clone, Default)]
struct Pair {
    syms: u16,
    len: u8,
    count: u8,
}

/// Symbols from which a section decodes two symbols a lookup where it can, if its codes average
/// at most [`PAIR_DECODE_MAX_BITS`]: otherwise building the pair table (about as long as
/// decoding 5 K symbols) costs more than it saves, and with longer codes too few pairs fit in
/// a lookup's 11 bits. Measured on the `--max` parse's literals in sections of 8-32 K (ns a
/// literal, singles / pairs): TPC-H lineitem at 4.0 bits a literal 0.67 / 0.60 from 32 K on,
/// equal at 16 K; the SQL dump at 4.0 bits equal at 32 K; logs and CSV at 4.2 bits 0.65 / 0.73
/// at 32 K; the Linux tar at 5.8 bits 0.64 / 0.81 at 32 K.
const PAIR_DECODE_MIN: usize = 32 << 10;
const PAIR_DECODE_MAX_BITS: usize = 4;

/// [`decode`], building the lookup table in `table`.
pub fn decode_with(
    section: &[u8],
    lens: &CodeLengths,
    table: &mut DecodeTable,
    out: &mut [u8],
) -> Result<(), EntropyError> {
    #[cfg(target_arch = "x86_64")]
    let pairs =
        out.len() >= PAIR_DECODE_MIN && section.len() * 8 <= PAIR_DECODE_MAX_BITS * out.len();
    // FAST PATH: BMI2 and LZCNT shift by code lengths without `cl`, which leaves a register
    // to the four streams' state.
    crate::multiversion!(
        fn(section: &[u8], lens: &CodeLengths, table: &mut DecodeTable, out: &mut [u8], pairs: bool)
            -> Result<(), EntropyError> => decode_streams(section, lens, table, out, pairs);
        "bmi2,lzcnt" if crate::cpu::has_bmi2()
    )
}

/// [`decode_with`], two symbols a lookup where it can with `pairs`.
#[inline(always)]
fn decode_streams(
    section: &[u8],
    lens: &CodeLengths,
    table: &mut DecodeTable,
    out: &mut [u8],
    pairs: bool,
) -> Result<(), EntropyError> {
    let bad = |m| EntropyError(m);
    let mut pos = 0;
    let mut sizes = [0usize; STREAMS];
    for s in sizes.iter_mut().take(STREAMS - 1) {
        *s = crate::varint::get(section, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or(bad("Huffman stream size is not a valid varint"))?;
    }
    let mut rest = section.len() - pos;
    for s in sizes.iter().take(STREAMS - 1) {
        rest = rest
            .checked_sub(*s)
            .ok_or(bad("Huffman stream sizes exceed the section"))?;
    }
    sizes[STREAMS - 1] = rest;
    build_table(lens, &mut table.single);
    let mut r = [0; STREAMS].map(|_| BitReader::new(&[]));
    for (k, s) in sizes.into_iter().enumerate() {
        r[k] = BitReader::new(&section[pos..pos + s]);
        pos += s;
    }
    let seg = segments(out.len());
    let (o0, rest) = out.split_at_mut(seg[0]);
    let (o1, rest) = rest.split_at_mut(seg[1]);
    let (o2, o3) = rest.split_at_mut(seg[2]);
    let mut outs = [o0, o1, o2, o3];
    // Where each segment's symbols are decoded up to.
    let mut done = [0; STREAMS];
    if pairs {
        build_pairs(&table.single, &mut table.pairs);
        done = decode_pairs(&table.pairs, &mut r, &mut outs);
    }
    decode_singles(&table.single, r, outs, done).map_err(bad)
}

/// Decodes each segment of `outs` from `done` on with its stream, a symbol a lookup; checks
/// each stream ends with its segment.
#[inline(always)]
fn decode_singles(
    table: &[Entry; TABLE],
    r: [BitReader<'_>; STREAMS],
    [o0, o1, o2, o3]: [&mut [u8]; STREAMS],
    done: [usize; STREAMS],
) -> Result<(), &'static str> {
    let [mut r0, mut r1, mut r2, mut r3] = r;
    let (o0, o1, o2, o3) = (
        &mut o0[done[0]..],
        &mut o1[done[1]..],
        &mut o2[done[2]..],
        &mut o3[done[3]..],
    );
    // Hot loop: the four segments move in step, five symbols per stream per refill
    // (5 × 11 ≤ 56 bits), symbol by symbol across the streams so the four lookup chains
    // overlap. The shortest segment bounds the loop. Four chains keep every stream's state in
    // registers.
    let sym = |r: &mut BitReader| {
        let e = table[(r.peek(MAX_BITS) as usize) & (TABLE - 1)];
        r.consume(u32::from(e.len));
        e.sym
    };
    let lockstep = o0.len().min(o1.len()).min(o2.len()).min(o3.len()) / 5;
    let chunks = o0
        .chunks_exact_mut(5)
        .zip(o1.chunks_exact_mut(5))
        .zip(o2.chunks_exact_mut(5))
        .zip(o3.chunks_exact_mut(5))
        .take(lockstep);
    for (((c0, c1), c2), c3) in chunks {
        r0.refill();
        r1.refill();
        r2.refill();
        r3.refill();
        for k in 0..5 {
            c0[k] = sym(&mut r0);
            c1[k] = sym(&mut r1);
            c2[k] = sym(&mut r2);
            c3[k] = sym(&mut r3);
        }
    }
    for (r, o) in [(&mut r0, o0), (&mut r1, o1), (&mut r2, o2), (&mut r3, o3)] {
        for chunk in o[lockstep * 5..].chunks_mut(5) {
            r.refill();
            for x in chunk {
                *x = sym(r);
            }
        }
        r.finish()?;
    }
    Ok(())
}

/// The two-symbol table: the entry at `i` holds the symbol `single[i]` decodes and, where the
/// next code also fits in the 11 bits, the symbol after it.
#[inline(always)]
fn build_pairs(single: &[Entry; TABLE], pairs: &mut [Pair; TABLE]) {
    for (i, p) in pairs.iter_mut().enumerate() {
        let a = single[i];
        // The bits after the first code: only its low 11 − len bits are the stream's.
        let b = single[i >> a.len];
        *p = if a.len + b.len <= MAX_BITS as u8 {
            Pair {
                syms: u16::from(a.sym) | u16::from(b.sym) << 8,
                len: a.len + b.len,
                count: 2,
            }
        } else {
            Pair {
                syms: u16::from(a.sym),
                len: a.len,
                count: 1,
            }
        };
    }
}

/// FAST PATH: decodes the four segments two symbols a lookup where the table allows, in step,
/// while every segment has room for a round's symbols plus the byte a lookup may write past
/// its symbols; returns how far each segment got (the rest is [`decode_singles`]' work).
#[inline(always)]
fn decode_pairs(
    pairs: &[Pair; TABLE],
    r: &mut [BitReader<'_>; STREAMS],
    outs: &mut [&mut [u8]; STREAMS],
) -> [usize; STREAMS] {
    // A round: a refill, then five lookups per stream (5 × 11 ≤ 56 bits), each writing two
    // bytes and keeping one or both.
    const ROUND: usize = 5;
    let mut at = [0usize; STREAMS];
    let room = outs.iter().map(|o| o.len()).min().unwrap_or(0);
    let [r0, r1, r2, r3] = r;
    let ptrs = outs.each_mut().map(|o| o.as_mut_ptr());
    let pair = |r: &mut BitReader, k: usize, at: &mut usize| {
        let e = pairs[(r.peek(MAX_BITS) as usize) & (TABLE - 1)];
        r.consume(u32::from(e.len));
        // SAFETY: rounds run while every segment has `2 * ROUND + 1` bytes from where its
        // round started (the loop condition below); a round writes at most `2 * ROUND`
        // bytes from there.
        unsafe {
            ptrs[k]
                .add(*at)
                .cast::<[u8; 2]>()
                .write_unaligned(e.syms.to_le_bytes())
        };
        *at += usize::from(e.count);
    };
    while at.iter().all(|&a| a + 2 * ROUND < room) {
        let [a0, a1, a2, a3] = &mut at;
        r0.refill();
        r1.refill();
        r2.refill();
        r3.refill();
        for _ in 0..ROUND {
            pair(r0, 0, a0);
            pair(r1, 1, a1);
            pair(r2, 2, a2);
            pair(r3, 3, a3);
        }
    }
    at
}

/// Decode table entries: every table has [`TABLE`] entries, whatever the longest code, so
/// lookups take 11 bits and need no bounds check.
const TABLE: usize = 1 << MAX_BITS;

/// The decode table: every index whose low `len` bits are a symbol's reversed code maps to
/// that symbol. A complete code fills every entry.
///
/// Built a length at a time, as libdeflate does: once the first 2^l entries are right for
/// every code of up to l bits, a copy of them makes the first 2^(l+1) right for those codes
/// too, and each (l+1)-bit code then goes in its one entry there. That is ~300 stores and
/// eleven block copies in place of 2^11 stores in a loop per symbol, whose varying trip counts
/// cost a branch miss each.
#[inline(always)]
fn build_table(lens: &CodeLengths, table: &mut [Entry; TABLE]) {
    // The symbols in canonical order (by length, then symbol), absent ones (length 0) first:
    // a counting sort. Each quarter of the alphabet has its own counters, and the loops take
    // the quarters in turn: one set of counters made a chain of store-to-load forwards
    // wherever neighbouring symbols share a length (a quarter of the build's time).
    const QUARTERS: usize = 4;
    let quarter = |q: usize| &lens.lens[64 * q..64 * (q + 1)];
    // Indexed by a length masked to 4 bits: no bounds checks (lengths are at most 11).
    let mut counts = [[0usize; 16]; QUARTERS];
    for i in 0..64 {
        for (q, c) in counts.iter_mut().enumerate() {
            c[usize::from(quarter(q)[i] & 15)] += 1;
        }
    }
    let mut count = [0usize; 16];
    for c in &counts {
        for (all, &n) in count.iter_mut().zip(c) {
            *all += n;
        }
    }
    // Where each quarter's symbols of each length go.
    let mut next = [[0usize; 16]; QUARTERS];
    let mut at = 0;
    for l in 0..16 {
        for q in 0..QUARTERS {
            next[q][l] = at;
            at += counts[q][l];
        }
    }
    let mut sorted = [0u8; 256];
    for i in 0..64 {
        for (q, n) in next.iter_mut().enumerate() {
            let l = usize::from(quarter(q)[i] & 15);
            sorted[n[l] & 255] = (64 * q + i) as u8;
            n[l] += 1;
        }
    }
    let mut k = count[0];
    let mut code = 0u32;
    let mut filled = 1;
    for l in 1..=MAX_BITS {
        table.copy_within(..filled, filled);
        filled *= 2;
        for &s in &sorted[k..k + count[l as usize]] {
            let at = (code.reverse_bits() >> (32 - l)) as usize;
            table[at] = Entry {
                sym: s,
                len: l as u8,
            };
            code += 1;
        }
        k += count[l as usize];
        code <<= 1;
    }
}

/// Bytes the coded stream takes with `lens` (for choosing between representations).
pub fn coded_size(freq: &[u32; 256], lens: &CodeLengths) -> usize {
    let bits: u64 = (0..256)
        .map(|s| u64::from(freq[s]) * u64::from(lens.lens[s]))
        .sum();
    (bits / 8) as usize + 2 * STREAMS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(data: &[u8]) -> [u32; 256] {
        let mut f = [0u32; 256];
        for &b in data {
            f[b as usize] += 1;
        }
        f
    }

    fn round_trip(data: &[u8]) {
        let lens = build_lengths(&histogram(data));
        let mut table = Vec::new();
        write_table(&lens, &mut table);
        let mut p = 0;
        assert_eq!(read_table(&table, &mut p).unwrap(), lens);
        let mut coded = Vec::new();
        encode(data, &lens, &mut coded);
        let mut back = vec![0u8; data.len()];
        decode(&coded, &lens, &mut back).unwrap();
        assert_eq!(back, data);
        // A whole section: the table, the coded size, the streams.
        let mut section = Vec::new();
        write_section(data, &lens, &mut section);
        crate::varint::put(&mut table, coded.len() as u64);
        table.extend_from_slice(&coded);
        assert_eq!(section, table);
    }

    #[test]
    fn round_trips_text_and_skewed_data() {
        let text = include_bytes!("huffman.rs");
        for n in [4, 5, 7, 20, 21, 100, 1000, text.len()] {
            round_trip(&text[2..n.min(text.len())]);
        }
        // Fibonacci-like counts force codes past 11 bits before limiting.
        let mut skew = Vec::new();
        let (mut a, mut b) = (1usize, 1usize);
        for s in 0..24u8 {
            skew.extend(std::iter::repeat_n(s, a));
            (a, b) = (b, a + b);
        }
        round_trip(&skew);
        let all: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        round_trip(&all);
    }

    #[test]
    fn pair_and_single_lookups_decode_alike() {
        let text = include_bytes!("huffman.rs");
        let digits: Vec<u8> = (0..50_000u32).map(|i| b'0' + (i * 7 % 10) as u8).collect();
        for data in [&text[..], &text[..100], &digits[..], &digits[..7]] {
            let lens = build_lengths(&histogram(data));
            let mut coded = Vec::new();
            encode(data, &lens, &mut coded);
            let mut table = DecodeTable::default();
            for pairs in [false, true] {
                let mut back = vec![0u8; data.len()];
                decode_streams(&coded, &lens, &mut table, &mut back, pairs).unwrap();
                assert!(back == data, "pairs {pairs}, {} symbols", data.len());
                // Cut short or with bytes after it, a stream fails either way.
                let short = &coded[..coded.len() - 1];
                let r = decode_streams(short, &lens, &mut table, &mut back, pairs);
                assert!(r.is_err(), "pairs {pairs}: a truncated section decoded");
            }
        }
    }

    #[test]
    fn decode_table_maps_every_index_to_the_code_it_starts_with() {
        // Random complete codes, 2 to 256 symbols, skewed to reach 11-bit codes; each table
        // is built over the last one's entries, as sections reuse it.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut table = Box::new([Entry::default(); TABLE]);
        for round in 0..300 {
            let mut freq = [0u32; 256];
            for f in freq.iter_mut().take(2 + round % 255) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *f = (1u32 << (x % 20)) + (x >> 40) as u32 % 7;
            }
            let lens = build_lengths(&freq);
            build_table(&lens, &mut table);
            let codes = canonical_codes(&lens.lens);
            for (i, e) in table.iter().enumerate() {
                let (s, l) = (usize::from(e.sym), u32::from(e.len));
                assert_eq!(u32::from(lens.lens[s]), l, "round {round}, index {i}");
                assert_eq!(
                    i % (1 << l),
                    usize::from(codes[s]),
                    "round {round}, index {i}"
                );
            }
        }
    }

    #[test]
    fn rejects_incomplete_or_overlong_tables() {
        let mut p = 0;
        assert!(read_table(&[1, 0x11], &mut p).is_ok());
        let mut p = 0;
        assert!(read_table(&[1, 0x21], &mut p).is_err());
        let mut p = 0;
        assert!(read_table(&[1, 0xC1], &mut p).is_err());
        let mut p = 0;
        assert!(read_table(&[3], &mut p).is_err());
    }
}
