//! LZ block decoding. [`decode`] is the fast path: wide copies that may write up to 16 bytes
//! past the current sequence (never past the output slice), with bounds checked once per
//! sequence rather than per byte. [`decode_reference`] is the plain byte-by-byte definition of
//! the format; tests and the fuzz target hold the two to the same output on every input.

use super::{MIN_MATCH, NIBBLE_ESCAPE};
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
        return Err(LzError("more sequences than the block's decoded size allows"));
    }
    if lit_len > out_len {
        return Err(LzError("more literal bytes than the block's decoded size"));
    }
    let body = &payload[pos..];
    let need = (count as u64) * 3 + extra_len as u64 + lit_len as u64;
    if need != body.len() as u64 {
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

#[inline(always)]
fn length(nibble: usize, extra: &[u8], ep: &mut usize) -> Result<usize, LzError> {
    if nibble < NIBBLE_ESCAPE {
        return Ok(nibble);
    }
    let v = varint::get(extra, ep).ok_or(LzError("extra stream ends inside a length"))?;
    // Anything past u32 cannot fit a block; rejecting it here keeps the sums below from wrapping.
    if v > u64::from(u32::MAX) {
        return Err(LzError("length overflow value too large"));
    }
    Ok(NIBBLE_ESCAPE + v as usize)
}

/// Decodes `payload` into `out`, whose length must be the block's decoded size.
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<(), LzError> {
    let s = split(payload, out.len())?;
    let lits = s.literals;
    let out_len = out.len();
    let (mut op, mut lp, mut ep) = (0usize, 0usize, 0usize);
    for (&tok, off) in s.tokens.iter().zip(s.offsets.chunks_exact(2)) {
        // Literals.
        let ll = length((tok >> 4) as usize, s.extra, &mut ep)?;
        if ll <= 16 && lp + 16 <= lits.len() && op + 16 <= out_len {
            // Wide copy: 16 bytes, of which the first `ll` count.
            out[op..op + 16].copy_from_slice(&lits[lp..lp + 16]);
        } else {
            if ll > lits.len() - lp {
                return Err(LzError("literal run reads past the literal stream"));
            }
            if ll > out_len - op {
                return Err(LzError("literal run writes past the block's decoded size"));
            }
            out[op..op + ll].copy_from_slice(&lits[lp..lp + ll]);
        }
        op += ll;
        lp += ll;

        // Match.
        let ml = MIN_MATCH + length((tok & 15) as usize, s.extra, &mut ep)?;
        let off = u16::from_le_bytes([off[0], off[1]]) as usize;
        if off == 0 || off > op {
            return Err(LzError(
                "match offset reaches before the start of the block",
            ));
        }
        if ml > out_len - op {
            return Err(LzError("match writes past the block's decoded size"));
        }
        copy_match(out, op, off, ml);
        op += ml;
    }
    if ep != s.extra.len() {
        return Err(LzError("extra stream has unused bytes"));
    }
    let rest = lits.len() - lp;
    if rest != out_len - op {
        return Err(LzError(
            "trailing literals do not fill the block's decoded size",
        ));
    }
    out[op..].copy_from_slice(&lits[lp..]);
    Ok(())
}

/// Copies `len` bytes from `op - off` to `op` with LZ semantics (the source may overlap the
/// destination, repeating a pattern of period `off`). The caller has checked `off <= op` and
/// `op + len <= out.len()`.
#[inline(always)]
fn copy_match(out: &mut [u8], op: usize, off: usize, len: usize) {
    let end = op + len;
    if end + 16 > out.len() {
        // Near the end of the block: exact copy, byte by byte.
        for d in op..end {
            out[d] = out[d - off];
        }
        return;
    }
    let mut d = op;
    let mut dist = off;
    if off < 16 {
        // A pattern of period `off` also has period `dist = k * off >= 16`: write the first
        // `dist` bytes one at a time, then copy 16-byte chunks from `dist` back, each of which
        // reads only bytes already final.
        dist = off * 16usize.div_ceil(off);
        let stop = end.min(op + dist);
        while d < stop {
            out[d] = out[d - off];
            d += 1;
        }
    }
    while d < end {
        out.copy_within(d - dist..d - dist + 16, d);
        d += 16;
    }
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
            *out
                .get_mut(op)
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
