//! Decoding an entropy LZ payload in three passes: literals into a buffer, the three code
//! streams into arrays, then the sequence pass: batches of sequences whose fields are read
//! from their codes and extra bits a run at a time ([`super::sequence_fields`]), whose repeat offsets
//! resolve and whose matches' sources are asked of the cache a batch ahead of the copies
//! ([`crate::copy`]'s wide copies where the output has room, exact copies near its end).

use std::cell::RefCell;
use std::ops::Range;

use super::encode::{
    CODES_HUFFMAN, CODES_RLE, CODES_TANS, LIT_HUFFMAN, LIT_RAW, LIT_RLE, MIN_HUFFMAN_SYMBOLS,
};
#[cfg(target_arch = "x86_64")]
use super::resolve::{resolve16, RepLanes};
use super::sequence_fields::{Cursor, ExtraBits, Run, EXTRA_PAD, RUN};
use super::{Reps, LL_CODE, MIN_MATCH, ML_CODE, OF_ALPHABET};
use crate::copy as wide;
use crate::entropy::{fse, huffman, EntropyError};
use crate::lz::LzError;
use crate::varint;

/// Per-thread decoder memory, reused between blocks.
#[derive(Default)]
struct Scratch {
    literals: Vec<u8>,
    codes: [Vec<u8>; 3],
    /// A copy of the extra-bits stream with [`EXTRA_PAD`] zero bytes after it, where the
    /// payload has too few bytes after the stream.
    extra: Vec<u8>,
    huffman: huffman::DecodeTable,
    /// The literal-length, match-length and offset code tables.
    tans: [fse::Decoder; 3],
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

fn err(e: EntropyError) -> LzError {
    LzError(e.0)
}

/// A little reader over the payload's byte-aligned fields.
struct Fields<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn varint(&mut self, what: &'static str) -> Result<usize, LzError> {
        varint::get(self.src, &mut self.pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or(LzError(what))
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, LzError> {
        let b = *self.src.get(self.pos).ok_or(LzError(what))?;
        self.pos += 1;
        Ok(b)
    }

    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LzError> {
        let b = self
            .src
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or(LzError(what))?;
        self.pos += n;
        Ok(b)
    }
}

/// Decodes `payload` into `out`, whose length is the block's decoded size.
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<(), LzError> {
    decode_reporting(payload, out, |_| {})
}

/// [`decode`], calling `progress` with the output decoded so far (`out`'s first bytes, final)
/// after every [`SLICE`] sequences and every section: the block checksum takes it in while it
/// is in cache.
pub fn decode_reporting(
    payload: &[u8],
    out: &mut [u8],
    mut progress: impl FnMut(&[u8]),
) -> Result<(), LzError> {
    SCRATCH.with(|s| decode_with(payload, out, &mut progress, &mut s.borrow_mut()))
}

fn decode_with(
    payload: &[u8],
    out: &mut [u8],
    progress: &mut dyn FnMut(&[u8]),
    s: &mut Scratch,
) -> Result<(), LzError> {
    let mut f = Fields {
        src: payload,
        pos: 0,
    };
    let sections = f.varint("section count is not a valid varint")?;
    if sections == 0 {
        return Err(LzError("payload has no sections"));
    }
    // Matches reach back across sections, and repeat offsets carry over.
    let mut reps = Reps::default();
    let mut op = 0;
    for k in 0..sections {
        let last = k + 1 == sections;
        op = decode_section(&mut f, out, op, &mut reps, last, progress, s)?;
        progress(&out[..op]);
    }
    if f.pos != payload.len() {
        return Err(LzError("payload has bytes after its last section"));
    }
    Ok(())
}

/// Decodes one section into `out` from `op`; returns where the next section starts. The last
/// section's literals must fill the block exactly; every other section's must all be used by
/// its sequences.
fn decode_section(
    f: &mut Fields<'_>,
    out: &mut [u8],
    op: usize,
    reps: &mut Reps,
    last: bool,
    progress: &mut dyn FnMut(&[u8]),
    s: &mut Scratch,
) -> Result<usize, LzError> {
    let room = out.len() - op;
    let lit_count = f.varint("literal count is not a valid varint")?;
    if lit_count > room {
        return Err(LzError("more literals than the block's decoded size"));
    }
    // Literals get a margin so wide copies may read past the last one. The buffer only grows,
    // and is not cleared: every literal and code is written before it is read, and the stale
    // margin bytes a wide copy carries past a sequence's end are overwritten by what follows.
    let with_margin = lit_count + wide::MARGIN;
    if s.literals.len() < with_margin {
        s.literals.resize(with_margin, 0);
    }
    let lits = &mut s.literals[..lit_count];
    match f.byte("literal section is truncated")? {
        LIT_RAW => lits.copy_from_slice(f.bytes(lit_count, "raw literals are truncated")?),
        LIT_RLE => lits.fill(f.byte("RLE literal is missing")?),
        LIT_HUFFMAN => {
            // A Huffman table costs a 2^11-entry fill: only worth it, and only allowed, for
            // enough literals.
            if lit_count < MIN_HUFFMAN_SYMBOLS {
                return Err(LzError("Huffman-coded literal section below 64 literals"));
            }
            let lens = huffman::read_table(f.src, &mut f.pos).map_err(err)?;
            let size = f.varint("Huffman section size is not a valid varint")?;
            let section = f.bytes(size, "Huffman section is truncated")?;
            huffman::decode_with(section, &lens, &mut s.huffman, lits).map_err(err)?;
        }
        _ => return Err(LzError("unknown literal section mode")),
    }
    let count = f.varint("sequence count is not a valid varint")?;
    if count > room / MIN_MATCH {
        return Err(LzError(
            "more sequences than the block's decoded size allows",
        ));
    }
    let alphabets = [LL_CODE.alphabet(), ML_CODE.alphabet(), OF_ALPHABET];
    let mut extra_len = 0;
    // The extra bits are read where they lie when the payload goes on for EXTRA_PAD bytes past
    // them (every section but a block's last, as a rule), else from a zero-padded copy.
    let mut extra_in_place = None;
    if count == 0 {
        s.extra.clear();
        s.extra.resize(EXTRA_PAD, 0);
    }
    if count > 0 {
        // The three code streams: a Huffman-coded one is decoded as it is read; the tANS ones
        // are read first and decoded after, two of them in one loop (independent chains side
        // by side).
        let mut coded: [Option<&[u8]>; 3] = [None; 3];
        for (k, codes) in s.codes.iter_mut().enumerate() {
            if codes.len() < count {
                codes.resize(count, 0);
            }
            let codes = &mut codes[..count];
            match f.byte("code stream mode is missing")? {
                CODES_TANS => {
                    let counts = fse::read_counts(f.src, &mut f.pos, alphabets[k]).map_err(err)?;
                    // Table work stays proportional to the symbols it codes, so a payload of
                    // many tiny sections cannot make the decoder build big tables for each.
                    if counts.log > fse::MIN_LOG.max(usize::BITS - count.leading_zeros() + 1) {
                        return Err(LzError("tANS table larger than its symbol count allows"));
                    }
                    let size = f.varint("code stream size is not a valid varint")?;
                    coded[k] = Some(f.bytes(size, "code stream is truncated")?);
                    s.tans[k].rebuild(&counts);
                }
                CODES_HUFFMAN => {
                    // As for literals: the table fill is paid for by enough symbols.
                    if count < MIN_HUFFMAN_SYMBOLS {
                        return Err(LzError("Huffman-coded code stream below 64 codes"));
                    }
                    let lens = huffman::read_table(f.src, &mut f.pos).map_err(err)?;
                    if lens.lens[alphabets[k]..].iter().any(|&l| l > 0) {
                        return Err(LzError("Huffman code outside its alphabet"));
                    }
                    let size = f.varint("Huffman code stream size is not a valid varint")?;
                    let stream = f.bytes(size, "Huffman code stream is truncated")?;
                    huffman::decode_with(stream, &lens, &mut s.huffman, codes).map_err(err)?;
                }
                CODES_RLE => {
                    let c = f.byte("RLE code is missing")?;
                    if c as usize >= alphabets[k] {
                        return Err(LzError("RLE code outside its alphabet"));
                    }
                    codes.fill(c);
                }
                _ => return Err(LzError("unknown code stream mode")),
            }
        }
        let mut tans = (0..3).filter(|&k| coded[k].is_some());
        while let Some(a) = tans.next() {
            let (t, ca) = (&s.tans, coded[a].unwrap_or_default());
            match tans.next() {
                Some(b) => {
                    let cb = coded[b].unwrap_or_default();
                    let [oa, ob] = s.codes.get_disjoint_mut([a, b]).expect("two streams");
                    t[a].decode_two(ca, &mut oa[..count], &t[b], cb, &mut ob[..count])
                        .map_err(err)?;
                }
                None => t[a].decode(ca, &mut s.codes[a][..count]).map_err(err)?,
            }
        }
        let size = f.varint("extra bits size is not a valid varint")?;
        let start = f.pos;
        let stream = f.bytes(size, "extra bits stream is truncated")?;
        extra_in_place = f.src.get(start..start + size + EXTRA_PAD);
        if extra_in_place.is_none() {
            s.extra.clear();
            s.extra.extend_from_slice(stream);
            s.extra.resize(size + EXTRA_PAD, 0);
        }
        extra_len = size;
    }
    let [llc, mlc, ofc] = &s.codes;
    let pass = Pass {
        codes: [&llc[..count], &mlc[..count], &ofc[..count]],
        extra: extra_in_place.unwrap_or(&s.extra),
        extra_len,
        literals: &s.literals[..with_margin],
        lit_count,
        last,
    };
    execute(&pass, reps, out, op, progress)
}

/// Sequences read (and their matches' sources prefetched) a batch ahead of the copies: time
/// enough for sources in other caches or memory.
const BATCH: usize = 48;
const _: () = assert!(BATCH <= RUN, "a batch reads its fields as one run");

/// Sequences the pass takes between progress reports, so that the checksum reads each slice
/// of output back from the second-level cache (a section's whole output would have left it).
/// A multiple of [`BATCH`].
const SLICE: usize = 64 * BATCH;

/// Where the sequence pass has got to in a section: the output is final up to `op`, the
/// literals are used up to `lp`, the extra bits read up to `bit`.
#[derive(Copy, Clone)]
struct At {
    op: usize,
    lp: usize,
    bit: usize,
}

/// The arguments of the sequence pass ([`execute`]).
struct Pass<'a> {
    codes: [&'a [u8]; 3],
    /// The extra-bits stream followed by [`EXTRA_PAD`] bytes.
    extra: &'a [u8],
    extra_len: usize,
    /// The section's literals plus the wide-copy margin.
    literals: &'a [u8],
    lit_count: usize,
    last: bool,
}

/// The sequence pass, from `out[op]`: each sequence's codes plus its extra bits give its
/// literal length, match length and offset value; the repeat offsets resolve; its literals and
/// match are copied. Reports progress after every [`SLICE`] sequences; returns the output
/// position after the section.
fn execute(
    p: &Pass<'_>,
    reps: &mut Reps,
    out: &mut [u8],
    op: usize,
    progress: &mut dyn FnMut(&[u8]),
) -> Result<usize, LzError> {
    let mut at = At { op, lp: 0, bit: 0 };
    let count = p.codes[0].len();
    let mut start = 0;
    while start < count {
        let slice = start..count.min(start + SLICE);
        start = slice.end;
        at = execute_slice(p, slice, reps, out, at)?;
        if start < count {
            progress(&out[..at.op]);
        }
    }
    finish_section(p, at, out)
}

/// The sequence pass over the sequences `seqs` of the section, from `at`.
fn execute_slice(
    p: &Pass<'_>,
    seqs: Range<usize>,
    reps: &mut Reps,
    out: &mut [u8],
    at: At,
) -> Result<At, LzError> {
    #[cfg(test)]
    if tests::BASELINE.get() {
        return execute_seqs::<false>(p, seqs, reps, out, at);
    }
    // FAST PATH: with AVX-512 the sequence fields are read sixteen at a time
    // ([`super::sequence_fields`]); with BMI2 the extra-bit fields are cut with `shrx` and `bzhi`.
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx512() {
        return crate::multiversion!(
            fn(p: &Pass<'_>, seqs: Range<usize>, reps: &mut Reps, out: &mut [u8], at: At)
                -> Result<At, LzError> => execute_seqs::<true>(p, seqs, reps, out, at);
            "avx512f,avx512bw,avx512vbmi,bmi2" if true
        );
    }
    crate::multiversion!(
        fn(p: &Pass<'_>, seqs: Range<usize>, reps: &mut Reps, out: &mut [u8], at: At)
            -> Result<At, LzError> => execute_seqs::<false>(p, seqs, reps, out, at);
        "bmi2" if crate::cpu::has_bmi2()
    )
}

/// Checks a sequence of `ll` literals (`lits_left` remain) and a match of `ml` at `off`,
/// written at `op` with `room` bytes of output left.
#[inline(always)]
fn check_seq(
    ll: usize,
    ml: usize,
    off: usize,
    lits_left: usize,
    room: usize,
    op: usize,
) -> Result<(), LzError> {
    if ll > lits_left {
        return Err(LzError("literal run reads past the literals"));
    }
    if ll + ml > room {
        return Err(LzError("sequence writes past the block's decoded size"));
    }
    // One comparison for both a zero offset and one before the block's start.
    if off.wrapping_sub(1) >= op + ll {
        return Err(LzError(
            "match offset is zero or reaches before the start of the block",
        ));
    }
    Ok(())
}

/// Copies a sequence's literals from `literals[lp..]` and then its match to `out[op..]`:
/// with wide copies where the output has room after it, exactly near its end.
///
/// # Safety
///
/// The sequence must have passed [`check_seq`] at `op` with the literals left after `lp`, and
/// `literals` must carry [`wide::MARGIN`] bytes after its last literal.
#[inline(always)]
unsafe fn copy_seq(
    out: &mut [u8],
    literals: &[u8],
    op: usize,
    lp: usize,
    (ll, ml, off): (usize, usize, usize),
) {
    if ll + ml + wide::LONG_MARGIN <= out.len() - op {
        // SAFETY: the output has `ll + ml + LONG_MARGIN` bytes from `op` (just above); the
        // rest is the caller's.
        unsafe { copy_seq_wide::<false>(out, literals, op, lp, (ll, ml, off)) };
    } else {
        out[op..op + ll].copy_from_slice(&literals[lp..lp + ll]);
        wide::copy_match_exact(out, op + ll, off, ml);
    }
}

/// [`copy_seq`]'s wide copies, which may write up to [`wide::LONG_MARGIN`] bytes past the
/// sequence.
///
/// # Safety
///
/// As for [`copy_seq`], and `out` must hold `ll + ml + LONG_MARGIN` bytes from `op`.
#[inline(always)]
unsafe fn copy_seq_wide<const WIDE64: bool>(
    out: &mut [u8],
    literals: &[u8],
    op: usize,
    lp: usize,
    (ll, ml, off): (usize, usize, usize),
) {
    // SAFETY: the literals carry a MARGIN-byte tail and `ll` are left after `lp`; the output
    // has the room (the caller's promise); `1 <= off <= op + ll` (`check_seq`).
    unsafe {
        wide::copy_literals(literals.as_ptr().add(lp), out.as_mut_ptr().add(op), ll);
        #[cfg(target_arch = "x86_64")]
        if WIDE64 {
            // (`WIDE64` only in the AVX-512 build, on a CPU with it.)
            return wide::copy_long_match_64(out.as_mut_ptr().add(op + ll), off, ml);
        }
        wide::copy_long_match(out.as_mut_ptr().add(op + ll), off, ml);
    }
}

/// Copies a batch of sequences read ahead (lengths from `run`, offsets from `offs`), from
/// `out[op]` and `literals[lp]` (both advanced past it); the batch ends at `end` in the output.
///
/// # Safety
///
/// Every sequence must have passed [`check_seq`] at the position where it is copied, and
/// `literals` must carry [`wide::MARGIN`] bytes after its last literal.
#[inline(always)]
unsafe fn copy_batch<const WIDE64: bool>(
    out: &mut [u8],
    literals: &[u8],
    (op, lp): (&mut usize, &mut usize),
    (run, offs): (&Run, &[u32]),
    end: usize,
) {
    let wide = end + wide::LONG_MARGIN <= out.len();
    for ((&ll, &ml), &off) in run.ll.iter().zip(&run.ml).zip(offs) {
        let seq = (ll as usize, ml as usize, off as usize);
        if wide {
            // SAFETY: checked (the caller's promise); the batch ends LONG_MARGIN bytes or
            // more before the output's end (just above).
            unsafe { copy_seq_wide::<WIDE64>(out, literals, *op, *lp, seq) };
        } else {
            // SAFETY: checked (the caller's promise).
            unsafe { copy_seq(out, literals, *op, *lp, seq) };
        }
        *op += seq.0 + seq.1;
        *lp += seq.0;
    }
}

/// The sequence pass, in batches of [`BATCH`] sequences, each in two passes: the first reads
/// the batch's fields ([`super::sequence_fields`]), resolves each sequence's repeat offset, checks it
/// and asks the cache for its match's source (with `AVX512`, sixteen sequences at a time:
/// [`super::resolve`]); the second copies, one batch behind the first. Where matches reach
/// back past the cache, by the time the copy pass gets to one its source has had a whole
/// batch's time to arrive.
#[inline(always)]
fn execute_seqs<const AVX512: bool>(
    p: &Pass<'_>,
    seqs: Range<usize>,
    reps: &mut Reps,
    out: &mut [u8],
    At {
        mut op,
        mut lp,
        bit,
    }: At,
) -> Result<At, LzError> {
    let Pass {
        codes: [llc, mlc, ofc],
        extra,
        extra_len,
        literals,
        lit_count,
        ..
    } = *p;
    let (llc, mlc, ofc) = (&llc[seqs.clone()], &mlc[seqs.clone()], &ofc[seqs]);
    let mut bits = ExtraBits::new(extra, extra_len);
    bits.bit = bit;
    // Two batches in flight: one read, one being copied.
    let mut runs = [Run::new(), Run::new()];
    let mut offs = [[0u32; BATCH]; 2];
    // A local copy: the repeat offsets stay in registers through the loop (in the AVX-512
    // build, as vector lanes between groups; as three numbers where the scalar loop runs).
    let mut r = *reps;
    #[cfg(target_arch = "x86_64")]
    let mut lanes = RepLanes::from(r);
    let out_len = out.len();
    // Each batch's sequence count and the output position after it.
    let mut queued = [(0usize, op); 2];
    // Where the next sequence read goes.
    let mut cur = Cursor { rop: op, rlp: lp };
    let mut k = 0;
    for ((llc, mlc), ofc) in llc
        .chunks(BATCH)
        .zip(mlc.chunks(BATCH))
        .zip(ofc.chunks(BATCH))
    {
        let (run, offs_k) = (&mut runs[k], &mut offs[k]);
        bits.read_run::<AVX512>([llc, mlc, ofc], run)?;
        let n = llc.len();
        // With AVX-512, sixteen at a time while every group passes its checks ([`resolve16`]);
        // the scalar loop takes the rest, and fails where a sequence fails.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        if AVX512 {
            while i + 16 <= n {
                let group = (lit_count, &*out);
                let offs = &mut offs_k[i..i + 16];
                // SAFETY: `AVX512` is set only in builds compiled with AVX-512 and run where
                // the CPU has it; the run holds `n` sequences; the cursor is inside the output
                // and the literals (every sequence before it passed the checks).
                if !unsafe { resolve16(run, i, &mut lanes, &mut cur, group, offs) } {
                    break;
                }
                i += 16;
            }
            if i < n {
                r = Reps::from(lanes);
            }
        }
        #[allow(clippy::needless_range_loop)]
        for i in i..n {
            let (ll, ml) = (run.ll[i] as usize, run.ml[i] as usize);
            let off = r.decode(run.ov[i], ll as u32) as usize;
            let Cursor { rop, rlp } = cur;
            check_seq(ll, ml, off, lit_count - rlp, out_len - rop, rop)?;
            // Both lines the match's first 64 bytes may read (`copy_long_match` copies them
            // whatever its length).
            let src = out.as_ptr().wrapping_add(rop + ll - off);
            wide::prefetch(src);
            wide::prefetch(src.wrapping_add(63));
            // And the output it will be written to: in a big block's buffer that line is in no
            // cache either, and a store to it waits for it as a load would.
            wide::prefetch(out.as_ptr().wrapping_add(rop));
            // Blocks are smaller than 4 GiB, so are the offsets.
            offs_k[i] = off as u32;
            cur = Cursor {
                rop: rop + ll + ml,
                rlp: rlp + ll,
            };
        }
        // (The loop above ran from `i` where the groups stopped.)
        #[cfg(target_arch = "x86_64")]
        if AVX512 && i < n {
            lanes = RepLanes::from(r);
        }
        queued[k] = (n, cur.rop);
        k ^= 1;
        let (n, end) = std::mem::take(&mut queued[k]);
        let batch = (&runs[k], &offs[k][..n]);
        // SAFETY: the batch read before this one, checked where it is copied: its sequences
        // follow the output and literals copied so far.
        unsafe { copy_batch::<AVX512>(out, literals, (&mut op, &mut lp), batch, end) };
    }
    let (n, end) = queued[k ^ 1];
    let batch = (&runs[k ^ 1], &offs[k ^ 1][..n]);
    // SAFETY: the last batch read, as above.
    unsafe { copy_batch::<AVX512>(out, literals, (&mut op, &mut lp), batch, end) };
    #[cfg(target_arch = "x86_64")]
    if AVX512 {
        r = Reps::from(lanes);
    }
    *reps = r;
    Ok(At {
        op,
        lp,
        bit: bits.bit,
    })
}

/// Checks the end of a section's sequence pass, `at`: the extra bits and the literals all
/// used; in a block's last section, copies the trailing literals. Returns the output position
/// after the section.
fn finish_section(p: &Pass<'_>, At { op, lp, bit }: At, out: &mut [u8]) -> Result<usize, LzError> {
    let Pass {
        extra,
        extra_len,
        literals,
        lit_count,
        last,
        ..
    } = *p;
    let out_len = out.len();
    if bit > extra_len * 8 {
        return Err(LzError("extra bits stream read past its end"));
    }
    let pad = extra_len * 8 - bit;
    if pad >= 8 || (pad > 0 && extra[extra_len - 1] >> (8 - pad) != 0) {
        return Err(LzError(
            "extra bits stream has unread bytes or nonzero padding",
        ));
    }
    if !last {
        if lp != lit_count {
            return Err(LzError("section has literals its sequences do not use"));
        }
        return Ok(op);
    }
    if lit_count - lp != out_len - op {
        return Err(LzError(
            "trailing literals do not fill the block's decoded size",
        ));
    }
    out[op..].copy_from_slice(&literals[lp..lit_count]);
    Ok(out_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elz::{compress_into, dfast, optimal, Parser, Seq};
    use std::cell::Cell;

    thread_local! {
        /// Makes [`execute`] take the baseline build, whatever the CPU has.
        pub(super) static BASELINE: Cell<bool> = const { Cell::new(false) };
    }

    fn decode_both(payload: &[u8], len: usize) -> [Result<Vec<u8>, LzError>; 2] {
        [false, true].map(|baseline| {
            BASELINE.set(baseline);
            let mut out = vec![0u8; len];
            let r = decode(payload, &mut out).map(|()| out);
            BASELINE.set(false);
            r
        })
    }

    #[test]
    fn fast_and_baseline_sequence_passes_agree() {
        // Text, and text with a long run (a length with many extra bits).
        let text = include_bytes!("decode.rs");
        let mut runs = text.repeat(3);
        runs.extend(std::iter::repeat_n(b'x', 300_000));
        runs.extend_from_slice(text);
        let parsers = [
            Parser::Dfast(dfast::Params::MAX),
            Parser::Optimal(optimal::Params::QUICK),
        ];
        for (src, parser) in [
            (&text[..], &parsers[0]),
            (&runs, &parsers[0]),
            (&runs, &parsers[1]),
        ] {
            let mut payload = Vec::new();
            compress_into(src, parser, false, &mut payload);
            let [fast, base] = decode_both(&payload, src.len());
            assert!(fast.as_deref() == Ok(src), "fast build");
            assert!(base.as_deref() == Ok(src), "baseline build");
            // Corrupt copies fail (or not) alike.
            for k in (0..payload.len()).step_by(payload.len() / 97 + 1) {
                let mut bad = payload.clone();
                bad[k] ^= 0x5A;
                let [fast, base] = decode_both(&bad, src.len());
                assert_eq!(fast, base, "payload byte {k} changed");
            }
        }
    }

    #[test]
    fn sections_of_many_slices_decode_alike_and_report_progress_in_order() {
        // Words from a small vocabulary: a sequence every few bytes, so sections hold many
        // slices of the sequence pass.
        let words = ["alpha ", "beta ", "gamma\n", "delta ", "epsilon, ", "zeta "];
        let mut x = 0x0123_4567_89AB_CDEFu64;
        let mut text = Vec::new();
        while text.len() < 400_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.extend_from_slice(words[(x % 6) as usize].as_bytes());
            text.extend_from_slice(&(x % 1000).to_string().into_bytes());
        }
        let mut payload = Vec::new();
        compress_into(
            &text,
            &Parser::Dfast(dfast::Params::MAX),
            false,
            &mut payload,
        );
        let [fast, base] = decode_both(&payload, text.len());
        assert!(fast.as_deref() == Ok(&text[..]), "fast build");
        assert!(base.as_deref() == Ok(&text[..]), "baseline build");
        for k in (0..payload.len()).step_by(payload.len() / 41) {
            let mut bad = payload.clone();
            bad[k] ^= 0x21;
            let [fast, base] = decode_both(&bad, text.len());
            assert_eq!(fast, base, "payload byte {k} changed");
        }
        // Reports are prefixes that never shrink, many more than the sections, and the last
        // is the whole block.
        let mut out = vec![0u8; text.len()];
        let mut reports = Vec::new();
        decode_reporting(&payload, &mut out, |done| reports.push(done.len())).unwrap();
        let sections = varint::get(&payload, &mut 0).unwrap() as usize;
        assert!(reports.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(reports.last(), Some(&text.len()));
        assert!(
            reports.len() >= sections + 10,
            "{} reports, {sections} sections",
            reports.len()
        );
    }

    #[test]
    fn huffman_code_streams_keep_to_their_alphabet_and_size() {
        // One section of `count` sequences of no literals and 3-byte matches (RLE length codes),
        // its offset codes Huffman-coded with a table naming `symbol`.
        let payload = |count: usize, symbol: usize| {
            let mut freq = [0u32; 256];
            (freq[0], freq[symbol]) = (1, 1);
            let lens = huffman::build_lengths(&freq);
            let mut p = vec![1, 0, LIT_RAW];
            varint::put(&mut p, count as u64);
            p.extend([CODES_RLE, 0, CODES_RLE, 0, CODES_HUFFMAN]);
            huffman::write_section(&vec![0; count], &lens, &mut p);
            p.push(0);
            p
        };
        let decode_len = |p: &[u8], len: usize| decode(p, &mut vec![0u8; len]);
        // Within the alphabet the stream decodes, and the sequences run: offset value 1
        // (code 0) after no literals names repeat offset 1, 4 bytes back from byte 0.
        assert_eq!(
            decode_len(&payload(64, 5), 64 * 3),
            Err(LzError(
                "match offset is zero or reaches before the start of the block"
            ))
        );
        assert_eq!(
            decode_len(&payload(64, OF_ALPHABET), 64 * 3),
            Err(LzError("Huffman code outside its alphabet"))
        );
        assert_eq!(
            decode_len(&payload(63, 5), 63 * 3),
            Err(LzError("Huffman-coded code stream below 64 codes"))
        );
    }

    #[test]
    fn sequences_of_every_kind_decode_alike_in_both_builds() {
        // Random sequences over every offset kind (fresh, the three repeats, repeat 0 less
        // one), some with offsets or lengths the block cannot hold: both builds give the same
        // bytes or the same error. Groups of sixteen with a bad sequence anywhere in them
        // are where the fast pass must hand over to the scalar loop.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..300 {
            let (mut seqs, mut literals, mut len) = (Vec::new(), Vec::new(), 0u64);
            for _ in 0..next(200) + 1 {
                let ll = [0, 0, 1, 2, 5, 20][next(6) as usize] as u32;
                let ml = 3 + if next(8) == 0 { next(300) } else { next(30) } as u32;
                literals.extend((0..ll).map(|_| next(256) as u8));
                let ov = match next(10) {
                    0 => 1,
                    1 => 2,
                    2 => 3,
                    // A fresh offset within the output so far, and now and then past it.
                    _ => {
                        let room = len + u64::from(ll);
                        let past = case % 3 == 0 && next(100) == 0;
                        (if past {
                            room + 1 + next(9)
                        } else {
                            1 + next(room.max(1))
                        }) as u32
                            + 3
                    }
                };
                seqs.push(Seq { ll, ml, ov });
                len += u64::from(ll + ml);
            }
            let tail = next(40) as usize;
            literals.extend((0..tail).map(|_| next(256) as u8));
            let mut payload = Vec::new();
            crate::elz::write_payload(&literals, &seqs, &mut Default::default(), &mut payload);
            let size = len as usize + tail;
            for size in [size, size - size / 3] {
                let [fast, base] = decode_both(&payload, size);
                assert_eq!(fast, base, "case {case}, block of {size}");
            }
        }
    }
}
