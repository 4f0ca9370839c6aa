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
    /// The extra-bits stream with 8 zero bytes after it.
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
    SCRATCH.with(|s| decode_with(payload, out, &mut s.borrow_mut()))
}

fn decode_with(payload: &[u8], out: &mut [u8], s: &mut Scratch) -> Result<(), LzError> {
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
        s.extra.resize(8, 0);
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
        s.extra.resize(size + 8, 0);
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

/// The arguments of the sequence pass ([`execute`]).
struct Pass<'a> {
    codes: [&'a [u8]; 3],
    /// The extra-bits stream followed by at least 8 zero bytes.
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
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("bmi2") {
        // SAFETY: the CPU has BMI2, checked on the line above.
        return unsafe { execute_bmi2(p, reps, out, op) };
    }
    execute_seqs(p, reps, out, op)
}

/// FAST PATH: [`execute`] compiled with BMI2: the extra-bit fields are cut with `shrx` and
/// `bzhi`, without building masks or moving counts through `cl`.
///
/// # Safety
///
/// The CPU must support BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn execute_bmi2(
    p: &Pass<'_>,
    reps: &mut Reps,
    out: &mut [u8],
    op: usize,
) -> Result<usize, LzError> {
    execute_seqs(p, reps, out, op)
}

#[inline(always)]
fn execute_seqs(
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
    let t = tables();
    debug_assert!(extra.len() >= extra_len + 8);
    // The extra bits are read at a bit position with one unaligned load each: the position is
    // the only serial chain through the stream. A position past the stream (a corrupt
    // payload) is clamped for the load and caught after the loop.
    let last_load = extra.len() - 8;
    let load = |bit: usize| {
        let at = (bit >> 3).min(last_load);
        // SAFETY: `at + 8 <= extra.len()` by the clamp above (LLVM keeps a slice check here).
        let w = unsafe { std::ptr::read_unaligned(extra.as_ptr().add(at).cast::<u64>()) };
        u64::from_le(w) >> (bit & 7)
    };
    let out_len = out.len();
    let mut lp = 0usize;
    let mut bit = 0usize;
    // A local copy: the repeat offsets stay in registers through the loop.
    let mut r = *reps;
    for ((&lc, &mc), &oc) in llc.iter().zip(mlc).zip(ofc) {
        let (lbase, lbits) = t.ll[lc as usize & 127];
        let (mbase, mbits) = t.ml[mc as usize & 127];
        let ob = u32::from(oc) & 31;
        // All three fields from one load where they fit in 56 bits (nearly always).
        let total = lbits + mbits + ob;
        let (lx, mx, ox) = if total <= 56 {
            let v = load(bit);
            bit += total as usize;
            (
                v & ((1 << lbits) - 1),
                (v >> lbits) & ((1 << mbits) - 1),
                (v >> (lbits + mbits)) & ((1 << ob) - 1),
            )
        } else {
            let lx = load(bit) & ((1 << lbits) - 1);
            bit += lbits as usize;
            let mx = load(bit) & ((1 << mbits) - 1);
            bit += mbits as usize;
            let ox = load(bit) & ((1 << ob) - 1);
            bit += ob as usize;
            (lx, mx, ox)
        };
        let ll = (lbase + lx as u32) as usize;
        let ml = (mbase + mx as u32) as usize + MIN_MATCH;
        let ov = (1u32 << ob) + ox as u32;
        let off = r.decode(ov, ll as u32) as usize;
        if ll > lit_count - lp {
            return Err(LzError("literal run reads past the literals"));
        }
        if ll + ml > out_len - op {
            return Err(LzError("sequence writes past the block's decoded size"));
        }
        // One comparison for both a zero offset and one before the block's start.
        if off.wrapping_sub(1) >= op + ll {
            return Err(LzError(
                "match offset is zero or reaches before the start of the block",
            ));
        }
        if ll + ml + wide::LONG_MARGIN <= out_len - op {
            // SAFETY: the literals carry a MARGIN-byte tail and `ll <= lit_count - lp`; the
            // output has `ll + ml + LONG_MARGIN` bytes from `op`; `1 <= off <= op + ll`.
            unsafe {
                wide::copy_literals(literals.as_ptr().add(lp), out.as_mut_ptr().add(op), ll);
                wide::copy_long_match(out.as_mut_ptr().add(op + ll), off, ml);
            }
        } else {
            out[op..op + ll].copy_from_slice(&literals[lp..lp + ll]);
            wide::copy_match_exact(out, op + ll, off, ml);
        }
        op += ll + ml;
        lp += ll;
    }
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
