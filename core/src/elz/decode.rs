//! Decoding an entropy LZ payload in three passes: literals into a buffer, the three code
//! streams into arrays, then one pass that reads the extra bits, resolves repeat offsets and
//! copies ([`crate::copy`]'s wide copies where the output has room, exact copies near its end).

use std::cell::RefCell;

use super::encode::{CODES_RLE, CODES_TANS, LIT_HUFFMAN, LIT_RAW, LIT_RLE, MIN_HUFFMAN_LITERALS};
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
    /// The extra-bits stream with [`EXTRA_PAD`] zero bytes after it.
    extra: Vec<u8>,
    huffman: huffman::DecodeTable,
    /// The literal-length, match-length and offset code tables.
    tans: [fse::Decoder; 3],
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Length code tables, (base, extra bits) by code, in fixed arrays: a code masked to the
/// array size indexes them without a bounds check (codes were range-checked at table read).
struct Tables {
    ll: [(u32, u32); 128],
    ml: [(u32, u32); 128],
}

fn tables() -> &'static Tables {
    static T: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = Tables {
            ll: [(0, 0); 128],
            ml: [(0, 0); 128],
        };
        for (c, e) in LL_CODE.table().into_iter().enumerate() {
            t.ll[c] = e;
        }
        for (c, e) in ML_CODE.table().into_iter().enumerate() {
            t.ml[c] = e;
        }
        t
    })
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

/// [`decode`], calling `section_done` with the output decoded so far (`out`'s first bytes,
/// final) after each section: the block checksum takes it in while it is in cache.
pub fn decode_reporting(
    payload: &[u8],
    out: &mut [u8],
    section_done: impl FnMut(&[u8]),
) -> Result<(), LzError> {
    SCRATCH.with(|s| decode_with(payload, out, section_done, &mut s.borrow_mut()))
}

fn decode_with(
    payload: &[u8],
    out: &mut [u8],
    mut section_done: impl FnMut(&[u8]),
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
        op = decode_section(&mut f, out, op, &mut reps, last, s)?;
        section_done(&out[..op]);
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
    s: &mut Scratch,
) -> Result<usize, LzError> {
    let room = out.len() - op;
    let lit_count = f.varint("literal count is not a valid varint")?;
    if lit_count > room {
        return Err(LzError("more literals than the block's decoded size"));
    }
    // Literals get a zeroed margin so wide copies may read past the last one.
    s.literals.clear();
    s.literals.resize(lit_count + wide::MARGIN, 0);
    let lits = &mut s.literals[..lit_count];
    match f.byte("literal section is truncated")? {
        LIT_RAW => lits.copy_from_slice(f.bytes(lit_count, "raw literals are truncated")?),
        LIT_RLE => lits.fill(f.byte("RLE literal is missing")?),
        LIT_HUFFMAN => {
            // A Huffman table costs a 2^11-entry fill: only worth it, and only allowed, for
            // enough literals.
            if lit_count < MIN_HUFFMAN_LITERALS {
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
    if count == 0 {
        s.extra.clear();
        s.extra.resize(EXTRA_PAD, 0);
    }
    if count > 0 {
        // The three code streams: the tANS ones are read first and decoded after, two of them
        // in one loop (independent chains side by side).
        let mut coded: [Option<&[u8]>; 3] = [None; 3];
        for (k, codes) in s.codes.iter_mut().enumerate() {
            codes.clear();
            codes.resize(count, 0);
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
                    t[a].decode_two(ca, oa, &t[b], cb, ob).map_err(err)?;
                }
                None => t[a].decode(ca, &mut s.codes[a]).map_err(err)?,
            }
        }
        let size = f.varint("extra bits size is not a valid varint")?;
        let stream = f.bytes(size, "extra bits stream is truncated")?;
        s.extra.clear();
        s.extra.extend_from_slice(stream);
        s.extra.resize(size + EXTRA_PAD, 0);
        extra_len = size;
    }
    let [llc, mlc, ofc] = &s.codes;
    let pass = Pass {
        codes: [&llc[..count], &mlc[..count], &ofc[..count]],
        extra: &s.extra,
        extra_len,
        literals: &s.literals,
        lit_count,
        last,
    };
    execute(&pass, reps, out, op)
}

/// How many of `codes` are [`FAR_CODE`] or above, counted in byte lanes 255 codes at a time
/// (a `usize` count per code cost the decoder 2-3%).
fn far_codes(codes: &[u8]) -> usize {
    codes
        .chunks(255)
        .map(|c| usize::from(c.iter().map(|&x| u8::from(x >= FAR_CODE)).sum::<u8>()))
        .sum()
}

/// Sequences read (and their matches' sources prefetched) a batch ahead of the copies: 48
/// gave the copies time enough for sources in other caches or memory (16 and 32 less; 64 no
/// more).
const BATCH: usize = 48;
const _: () = assert!(BATCH <= CHUNK, "a batch reads its extra bits as one chunk");

/// Offset codes from this one up name offsets of a mebibyte or more, past the L2 cache of
/// most cores. A section with one sequence in [`FAR_SHARE`] or more this far back is decoded
/// in batches, prefetching match sources; others in one pass. Such sections' other matches
/// mostly reach back hundreds of kilobytes, which big blocks have often pushed out of L2 as
/// well (--max on TPC-H lineitem: one pass 710-740 MB/s, batches 860-880); sections of
/// small inputs rarely qualify, and batches cost them 1-4%.
const FAR_CODE: u8 = 20;
const FAR_SHARE: usize = 100;

/// The arguments of the sequence pass ([`execute`]).
struct Pass<'a> {
    codes: [&'a [u8]; 3],
    /// The extra-bits stream followed by [`EXTRA_PAD`] zero bytes.
    extra: &'a [u8],
    extra_len: usize,
    /// The section's literals plus the wide-copy margin.
    literals: &'a [u8],
    lit_count: usize,
    last: bool,
}

/// The sequence pass, from `out[op]`: each sequence's codes plus its extra bits give its
/// literal length, match length and offset value; the repeat offsets resolve; its literals and
/// match are copied. Returns the output position after the section.
fn execute(p: &Pass<'_>, reps: &mut Reps, out: &mut [u8], op: usize) -> Result<usize, LzError> {
    let [_, _, ofc] = p.codes;
    let far = far_codes(ofc) * FAR_SHARE >= ofc.len();
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_bmi2() {
        // SAFETY: the CPU has BMI2, checked on the line above.
        return unsafe {
            if far {
                execute_bmi2::<true>(p, reps, out, op)
            } else {
                execute_bmi2::<false>(p, reps, out, op)
            }
        };
    }
    if far {
        execute_seqs::<true>(p, reps, out, op)
    } else {
        execute_seqs::<false>(p, reps, out, op)
    }
}

/// FAST PATH: [`execute`] compiled with BMI2: the extra-bit fields are cut with `shrx` and
/// `bzhi`, without building masks or moving counts through `cl`.
///
/// # Safety
///
/// The CPU must support BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn execute_bmi2<const FAR: bool>(
    p: &Pass<'_>,
    reps: &mut Reps,
    out: &mut [u8],
    op: usize,
) -> Result<usize, LzError> {
    execute_seqs::<FAR>(p, reps, out, op)
}

/// Sequences read between checks of the extra-bits position ([`SeqFields::check_bounds`]).
const CHUNK: usize = 64;

/// Most extra bits one sequence takes: 26 each for its lengths, 27 for its offset value.
const MAX_SEQ_EXTRA_BITS: usize = 79;

/// Zero bytes after the extra-bits stream: a [`CHUNK`] of sequences that starts inside the
/// stream cannot load past them, however many bits each takes (a corrupt payload's may run
/// off the stream's end; they are caught by the next check).
const EXTRA_PAD: usize = CHUNK * MAX_SEQ_EXTRA_BITS / 8 + 16;

/// Reads each sequence's literal length, match length and offset from its codes, the
/// extra-bits stream and the repeat offsets.
struct SeqFields<'a> {
    t: &'static Tables,
    /// The extra-bits stream followed by [`EXTRA_PAD`] zero bytes.
    extra: &'a [u8],
    /// Bits in the stream (without its padding).
    extra_bits: usize,
    /// Bits of `extra` read so far: the only serial chain through the stream.
    bit: usize,
    reps: Reps,
}

impl SeqFields<'_> {
    /// Checks, before each [`CHUNK`] of sequences, that the reader is still inside the stream:
    /// what keeps [`SeqFields::load`] inside the padding.
    #[inline(always)]
    fn check_bounds(&self) -> Result<(), LzError> {
        if self.bit > self.extra_bits {
            return Err(LzError("extra bits stream read past its end"));
        }
        Ok(())
    }

    /// The extra bits from bit `bit` on, with one unaligned load.
    #[inline(always)]
    fn load(&self, bit: usize) -> u64 {
        // SAFETY: the chunk being read started inside the stream (`check_bounds`) and reads at
        // most `CHUNK * MAX_SEQ_EXTRA_BITS` bits, so `bit / 8 + 8 <= extra.len()`, the stream
        // being followed by EXTRA_PAD bytes.
        let w =
            unsafe { std::ptr::read_unaligned(self.extra.as_ptr().add(bit >> 3).cast::<u64>()) };
        u64::from_le(w) >> (bit & 7)
    }

    /// The next sequence's (literal length, match length, offset), from its three codes; the
    /// offset is 0 where the payload names a zero offset.
    #[inline(always)]
    fn next(&mut self, lc: u8, mc: u8, oc: u8) -> (usize, usize, usize) {
        let (lbase, lbits) = self.t.ll[lc as usize & 127];
        let (mbase, mbits) = self.t.ml[mc as usize & 127];
        let ob = u32::from(oc) & 31;
        // All three fields from one load where they fit in 56 bits (nearly always).
        let total = lbits + mbits + ob;
        let (lx, mx, ox) = if total <= 56 {
            let v = self.load(self.bit);
            self.bit += total as usize;
            (
                v & ((1 << lbits) - 1),
                (v >> lbits) & ((1 << mbits) - 1),
                (v >> (lbits + mbits)) & ((1 << ob) - 1),
            )
        } else {
            let lx = self.load(self.bit) & ((1 << lbits) - 1);
            self.bit += lbits as usize;
            let mx = self.load(self.bit) & ((1 << mbits) - 1);
            self.bit += mbits as usize;
            let ox = self.load(self.bit) & ((1 << ob) - 1);
            self.bit += ob as usize;
            (lx, mx, ox)
        };
        let ll = (lbase + lx as u32) as usize;
        let ml = (mbase + mx as u32) as usize + MIN_MATCH;
        let ov = (1u32 << ob) + ox as u32;
        let off = self.reps.decode(ov, ll as u32) as usize;
        (ll, ml, off)
    }
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
        unsafe { copy_seq_wide(out, literals, op, lp, (ll, ml, off)) };
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
unsafe fn copy_seq_wide(
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
        wide::copy_long_match(out.as_mut_ptr().add(op + ll), off, ml);
    }
}

/// Copies a batch of sequences read ahead, from `out[op]` and `literals[lp]` (both advanced
/// past it); the batch ends at `end` in the output.
///
/// # Safety
///
/// Every sequence must have passed [`check_seq`] at the position where it is copied, and
/// `literals` must carry [`wide::MARGIN`] bytes after its last literal.
#[inline(always)]
unsafe fn copy_batch(
    out: &mut [u8],
    literals: &[u8],
    (op, lp): (&mut usize, &mut usize),
    batch: &[(u32, u32, u32)],
    end: usize,
) {
    let wide = end + wide::LONG_MARGIN <= out.len();
    for &(ll, ml, off) in batch {
        let seq = (ll as usize, ml as usize, off as usize);
        if wide {
            // SAFETY: checked (the caller's promise); the batch ends LONG_MARGIN bytes or
            // more before the output's end (just above).
            unsafe { copy_seq_wide(out, literals, *op, *lp, seq) };
        } else {
            // SAFETY: checked (the caller's promise).
            unsafe { copy_seq(out, literals, *op, *lp, seq) };
        }
        *op += seq.0 + seq.1;
        *lp += seq.0;
    }
}

#[inline(always)]
fn execute_seqs<const FAR: bool>(
    p: &Pass<'_>,
    reps: &mut Reps,
    out: &mut [u8],
    mut op: usize,
) -> Result<usize, LzError> {
    let Pass {
        codes: [llc, mlc, ofc],
        extra,
        extra_len,
        literals,
        lit_count,
        last,
    } = *p;
    assert!(
        extra.len() >= extra_len + EXTRA_PAD,
        "extra bits stream without its padding"
    );
    let mut fields = SeqFields {
        t: tables(),
        extra,
        extra_bits: extra_len * 8,
        bit: 0,
        // A local copy: the repeat offsets stay in registers through the loop.
        reps: *reps,
    };
    let out_len = out.len();
    let mut lp = 0usize;
    if !FAR {
        for ((llc, mlc), ofc) in llc
            .chunks(CHUNK)
            .zip(mlc.chunks(CHUNK))
            .zip(ofc.chunks(CHUNK))
        {
            fields.check_bounds()?;
            for ((&lc, &mc), &oc) in llc.iter().zip(mlc).zip(ofc) {
                let (ll, ml, off) = fields.next(lc, mc, oc);
                check_seq(ll, ml, off, lit_count - lp, out_len - op, op)?;
                // SAFETY: checked just above.
                unsafe { copy_seq(out, literals, op, lp, (ll, ml, off)) };
                op += ll + ml;
                lp += ll;
            }
        }
    } else {
        // Sequences go in batches, each in two passes: the first reads every sequence's
        // fields, checks them and asks the cache for its match's source; the second copies,
        // one batch behind the first. Where many matches reach back past the cache, by the
        // time the copy pass gets to one its source has had a whole batch's time to arrive.
        // (Where few do, the extra pass costs more than it saves.)
        let mut batches = [[(0u32, 0u32, 0u32); BATCH]; 2];
        // Each batch's sequence count and the output position after it.
        let mut queued = [(0usize, op); 2];
        // Where the next sequence read goes.
        let (mut rop, mut rlp) = (op, lp);
        let mut k = 0;
        for ((llc, mlc), ofc) in llc
            .chunks(BATCH)
            .zip(mlc.chunks(BATCH))
            .zip(ofc.chunks(BATCH))
        {
            fields.check_bounds()?;
            let batch = &mut batches[k];
            for (((&lc, &mc), &oc), seq) in llc.iter().zip(mlc).zip(ofc).zip(batch.iter_mut()) {
                let (ll, ml, off) = fields.next(lc, mc, oc);
                check_seq(ll, ml, off, lit_count - rlp, out_len - rop, rop)?;
                // Both lines the match's first 64 bytes may read (`copy_long_match` copies
                // them whatever its length).
                let src = out.as_ptr().wrapping_add(rop + ll - off);
                wide::prefetch(src);
                wide::prefetch(src.wrapping_add(63));
                // And the output it will be written to: in a big block's buffer that line is
                // in no cache either, and a store to it waits for it as a load would.
                wide::prefetch(out.as_ptr().wrapping_add(rop));
                // Blocks are smaller than 4 GiB, so are the fields.
                *seq = (ll as u32, ml as u32, off as u32);
                rop += ll + ml;
                rlp += ll;
            }
            queued[k] = (llc.len(), rop);
            k ^= 1;
            let (n, end) = std::mem::take(&mut queued[k]);
            // SAFETY: the batch read before this one, checked where it is copied: its
            // sequences follow the output and literals copied so far.
            unsafe { copy_batch(out, literals, (&mut op, &mut lp), &batches[k][..n], end) };
        }
        let (n, end) = queued[k ^ 1];
        // SAFETY: the last batch read, as above.
        unsafe { copy_batch(out, literals, (&mut op, &mut lp), &batches[k ^ 1][..n], end) };
    }
    let SeqFields { bit, reps: r, .. } = fields;
    *reps = r;
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
