//! LZ block decoding. [`decode`] is the fast path: wide copies ([`crate::copy`]) that may write up to 16 bytes
//! past the current sequence (never past the output slice), with bounds checked once per
//! sequence rather than per byte. [`decode_reference`] is the plain byte-by-byte definition of
//! the format; tests and the fuzz target hold the two to the same output on every input.

use super::{MIN_MATCH, NIBBLE_ESCAPE};
use crate::copy as wide;
use crate::varint;

/// Why an LZ payload could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LzError(pub &'static str);

impl std::fmt::Display for LzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// The four streams of a payload, split and size-checked.
struct Streams<'a> {
    count: usize,
    tokens: &'a [u8],
    offsets: &'a [u8],
    extra: &'a [u8],
    literals: &'a [u8],
}

fn split(payload: &[u8], out_len: usize) -> Result<Streams<'_>, LzError> {
    let mut pos = 0;
    let mut field = |what| -> Result<usize, LzError> {
        let v = varint::get(payload, &mut pos).ok_or(LzError(what))?;
        usize::try_from(v).map_err(|_| LzError(what))
    };
    let count = field("sequence count is not a valid varint")?;
    let lit_len = field("literal length is not a valid varint")?;
    let extra_len = field("extra length is not a valid varint")?;
    // Every sequence writes at least MIN_MATCH bytes, so the count is bounded by the output.
    if count > out_len / MIN_MATCH {
        return Err(LzError(
            "more sequences than the block's decoded size allows",
        ));
    }
    if lit_len > out_len {
        return Err(LzError("more literal bytes than the block's decoded size"));
    }
    let body = &payload[pos..];
    // count and lit_len are bounded by the block size above, extra_len here: no overflow.
    if extra_len > body.len() || count * 3 + extra_len + lit_len != body.len() {
        return Err(LzError("stream sizes do not add up to the payload size"));
    }
    let (tokens, rest) = body.split_at(count);
    let (offsets, rest) = rest.split_at(count * 2);
    let (extra, literals) = rest.split_at(extra_len);
    Ok(Streams {
        count,
        tokens,
        offsets,
        extra,
        literals,
    })
}

/// A length from its 4-bit token field: below 15 the value itself; 15 means "plus an extension
/// from the extra stream", which is one byte (0..=254), or 255 followed by a varint. The common
/// cases run without a data-dependent branch: the extension byte is read whether or not it is
/// needed and the cursor advances by 0 or 1.
#[inline(always)]
fn length(nibble: usize, extra: &[u8], ep: &mut usize) -> Result<usize, LzError> {
    if nibble < NIBBLE_ESCAPE {
        return Ok(nibble);
    }
    match extra.get(*ep) {
        Some(&e) if e < 255 => {
            *ep += 1;
            Ok(NIBBLE_ESCAPE + e as usize)
        }
        _ => {
            *ep += 1;
            long_length(extra, ep)
        }
    }
}

/// The rare tail of [`length`]: a 255 extension byte (already consumed) and its varint.
#[cold]
#[inline(never)]
fn long_length(extra: &[u8], ep: &mut usize) -> Result<usize, LzError> {
    if *ep > extra.len() {
        return Err(LzError("extra stream ends inside a length"));
    }
    let v = varint::get(extra, ep).ok_or(LzError("extra stream ends inside a length"))?;
    // Anything past u32 cannot fit a block; rejecting it here keeps the sums below from wrapping.
    if v > u64::from(u32::MAX) {
        return Err(LzError("length overflow value too large"));
    }
    Ok(NIBBLE_ESCAPE + 255 + v as usize)
}

/// Decoding position: next sequence, output, literal and extra cursors.
#[derive(Clone, Copy)]
struct Cursor {
    seq: usize,
    op: usize,
    lp: usize,
    ep: usize,
}

/// Decodes `payload` into `out`, whose length must be the block's decoded size.
///
/// Sequences are decoded by [`fast_sequences`] while each leaves a 32-byte margin in both the
/// literal stream and the output; the last few of a block, where it does not, by
/// [`exact_sequences`], which copies exactly. Both check every sequence exactly.
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<(), LzError> {
    let s = split(payload, out.len())?;
    let mut c = Cursor {
        seq: 0,
        op: 0,
        lp: 0,
        ep: 0,
    };
    fast_sequences(&s, out, &mut c)?;
    exact_sequences(&s, out, &mut c)?;
    finish(&s, out, c)
}

/// Checks the cursors at the end of the sequences and copies the trailing literals.
fn finish(s: &Streams<'_>, out: &mut [u8], c: Cursor) -> Result<(), LzError> {
    if c.ep != s.extra.len() {
        return Err(LzError("extra stream has unused bytes"));
    }
    if s.literals.len() - c.lp != out.len() - c.op {
        return Err(LzError(
            "trailing literals do not fill the block's decoded size",
        ));
    }
    out[c.op..].copy_from_slice(&s.literals[c.lp..]);
    Ok(())
}

/// The hot loop. Stops (leaving `c` at the first sequence it did not decode) at the end of the
/// sequences or at the first sequence without the wide-copy margin.
///
/// FAST PATH: the streams are sliced to their lengths and the room for wide copies is worked
/// out once, so that the loop keeps its state in registers; every sequence is still checked
/// against that room before anything is copied.
#[inline(always)]
fn fast_sequences(s: &Streams<'_>, out: &mut [u8], c: &mut Cursor) -> Result<(), LzError> {
    let lits = s.literals;
    // Sequences may start here only while the margin is left in both buffers.
    let (Some(lit_room), Some(out_room)) = (
        lits.len().checked_sub(wide::MARGIN),
        out.len().checked_sub(wide::MARGIN),
    ) else {
        return Ok(());
    };
    let (mut op, mut lp, mut ep) = (c.op, c.lp, c.ep);
    let mut seq = c.seq;
    let tokens = &s.tokens[..s.count];
    let offsets = &s.offsets[..2 * s.count];
    let out_ptr = out.as_mut_ptr();
    let lit_ptr = lits.as_ptr();
    while seq < tokens.len() {
        let tok = tokens[seq] as usize;
        let ep0 = ep;
        let ll = length(tok >> 4, s.extra, &mut ep)?;
        let ml = MIN_MATCH + length(tok & 15, s.extra, &mut ep)?;
        // Lengths fit in a u32 (`long_length`) and the cursors in the buffers: no overflow.
        if lp + ll > lit_room || op + ll + ml > out_room {
            ep = ep0;
            break;
        }
        let off = u16::from_le_bytes([offsets[2 * seq], offsets[2 * seq + 1]]) as usize;
        if off == 0 || off > op + ll {
            return Err(LzError(
                "match offset reaches before the start of the block",
            ));
        }
        // SAFETY: the checks above put `lits[lp .. lp + ll + MARGIN]` and
        // `out[op .. op + ll + ml + MARGIN]` in bounds, and `1 <= off <= op + ll`.
        unsafe {
            wide::copy_literals(lit_ptr.add(lp), out_ptr.add(op), ll);
            wide::copy_match(out_ptr.add(op + ll), off, ml);
        }
        op += ll + ml;
        lp += ll;
        seq += 1;
    }
    *c = Cursor { seq, op, lp, ep };
    Ok(())
}

/// Sequences decoded with exact copies and no margin, from `c` to the end.
fn exact_sequences(s: &Streams<'_>, out: &mut [u8], c: &mut Cursor) -> Result<(), LzError> {
    let lits = s.literals;
    while c.seq < s.count {
        let tok = s.tokens[c.seq] as usize;
        let ll = length(tok >> 4, s.extra, &mut c.ep)?;
        let ml = MIN_MATCH + length(tok & 15, s.extra, &mut c.ep)?;
        let off = u16::from_le_bytes([s.offsets[2 * c.seq], s.offsets[2 * c.seq + 1]]) as usize;
        if ll > lits.len() - c.lp {
            return Err(LzError("literal run reads past the literal stream"));
        }
        if ll > out.len() - c.op {
            return Err(LzError("literal run writes past the block's decoded size"));
        }
        out[c.op..c.op + ll].copy_from_slice(&lits[c.lp..c.lp + ll]);
        c.op += ll;
        c.lp += ll;
        if off == 0 || off > c.op {
            return Err(LzError(
                "match offset reaches before the start of the block",
            ));
        }
        if ml > out.len() - c.op {
            return Err(LzError("match writes past the block's decoded size"));
        }
        wide::copy_match_exact(out, c.op, off, ml);
        c.op += ml;
        c.seq += 1;
    }
    Ok(())
}

/// The format's definition, byte by byte: the slow, obviously correct decoder.
pub fn decode_reference(payload: &[u8], out: &mut [u8]) -> Result<(), LzError> {
    let s = split(payload, out.len())?;
    let mut op = 0usize;
    let mut lp = 0usize;
    let mut ep = 0usize;
    for i in 0..s.count {
        let tok = s.tokens[i] as usize;
        let ll = length(tok >> 4, s.extra, &mut ep)?;
        for _ in 0..ll {
            let b = *s
                .literals
                .get(lp)
                .ok_or(LzError("literal run reads past the literal stream"))?;
            *out.get_mut(op)
                .ok_or(LzError("literal run writes past the block's decoded size"))? = b;
            op += 1;
            lp += 1;
        }
        let ml = MIN_MATCH + length(tok & 15, s.extra, &mut ep)?;
        let off = u16::from_le_bytes([s.offsets[2 * i], s.offsets[2 * i + 1]]) as usize;
        if off == 0 || off > op {
            return Err(LzError(
                "match offset reaches before the start of the block",
            ));
        }
        if ml > out.len() - op {
            return Err(LzError("match writes past the block's decoded size"));
        }
        for _ in 0..ml {
            out[op] = out[op - off];
            op += 1;
        }
    }
    if ep != s.extra.len() {
        return Err(LzError("extra stream has unused bytes"));
    }
    if s.literals.len() - lp != out.len() - op {
        return Err(LzError(
            "trailing literals do not fill the block's decoded size",
        ));
    }
    out[op..].copy_from_slice(&s.literals[lp..]);
    Ok(())
}
