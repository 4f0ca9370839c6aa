//! FAST PATH: the wide copies both LZ decoders (and the record engine's rebuild) run, and the
//! only unsafe code in them. Copies move whole 16-byte chunks and may read and write up to
//! [`MARGIN`] bytes past the bytes they are asked for; callers check once per sequence (or
//! row) that the room is there.

use std::ptr;

/// Bytes that a copy may read or write beyond its length.
pub const MARGIN: usize = 32;

#[inline(always)]
unsafe fn copy16(src: *const u8, dst: *mut u8) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        ptr::copy_nonoverlapping(src, dst, 16);
    }
}

/// Copies `len` literal bytes from `src` to `dst` (distinct buffers).
///
/// # Safety
/// `src[.. len + MARGIN]` must be readable and `dst[.. len + MARGIN]` writable.
#[inline(always)]
pub unsafe fn copy_literals(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        copy16(src, dst);
        let mut k = 16;
        while k < len {
            copy16(src.add(k), dst.add(k));
            k += 16;
        }
    }
}

/// Copies `len` bytes from `off` bytes back to `dst`, with LZ overlap semantics.
///
/// # Safety
/// `dst[.. len + MARGIN]` must be writable, and the `off >= 1` bytes before `dst` must be
/// initialised bytes of the same buffer.
#[inline(always)]
pub unsafe fn copy_match(dst: *mut u8, off: usize, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe { copy_match_head::<MARGIN>(dst, off, len) }
}

/// Bytes that [`copy_long_match`] may write beyond its length.
pub const LONG_MARGIN: usize = 64;

/// [`copy_match`] with 64 bytes copied before the first loop test, for the entropy LZ
/// decoder: its matches run 20 to 40 bytes on typical text, and a loop exit taken half the
/// time costs more than the two extra stores.
///
/// # Safety
/// `dst[.. len + LONG_MARGIN]` must be writable, and the `off >= 1` bytes before `dst` must be
/// initialised bytes of the same buffer.
#[inline(always)]
pub unsafe fn copy_long_match(dst: *mut u8, off: usize, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe { copy_match_head::<LONG_MARGIN>(dst, off, len) }
}

/// [`copy_long_match`] in 64-byte chunks, one load and one store each where the offset is
/// 64 or more; below, the pattern is built in a register ([`short_offset_chunks`]). For
/// callers compiled with AVX-512 (F, BW, VBMI).
///
/// # Safety
/// As for [`copy_long_match`], and the CPU must have AVX-512 F, BW and VBMI.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn copy_long_match_64(dst: *mut u8, off: usize, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        if off < 64 {
            return short_offset_chunks(dst, off, len);
        }
        // Each chunk's source ends at or before its destination's start (`off` >= 64), so later
        // chunks read only bytes earlier ones have finished writing.
        let src = dst.sub(off) as *const u8;
        let mut k = 0;
        loop {
            ptr::copy_nonoverlapping(src.add(k), dst.add(k), 64);
            k += 64;
            if k >= len {
                return;
            }
        }
    }
}

/// Byte permutes that spread a match's first `off` < 64 bytes of source over 64 bytes: row
/// `off` of `FIRST` picks `i mod off` for byte `i`; row `off` of `NEXT` picks `(64 + i) mod
/// off`, which turns one 64-byte chunk of the pattern into the next.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Spreads([[u8; 64]; 64]);

#[cfg(target_arch = "x86_64")]
const fn spreads(shift: usize) -> Spreads {
    let mut rows = [[0u8; 64]; 64];
    let mut off = 1;
    while off < 64 {
        let mut i = 0;
        while i < 64 {
            rows[off][i] = ((shift + i) % off) as u8;
            i += 1;
        }
        off += 1;
    }
    Spreads(rows)
}

#[cfg(target_arch = "x86_64")]
static FIRST: Spreads = spreads(0);
#[cfg(target_arch = "x86_64")]
static NEXT: Spreads = spreads(64);

/// FAST PATH: a match at an offset below 64, whose source overlaps what it writes: the
/// pattern is built from one 64-byte load by a byte permute and each further 64 bytes from
/// the last by another, so no load waits for the match's own stores (16-byte chunks read
/// what the chunk before just wrote, and each such load stalls until that store lands).
///
/// # Safety
/// As for [`copy_long_match`], with `1 <= off < 64`; the CPU must have AVX-512 F, BW and
/// VBMI.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn short_offset_chunks(dst: *mut u8, off: usize, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        use std::arch::x86_64::*;
        debug_assert!((1..64).contains(&off));
        // The source's `off` bytes and whatever follows them (inside the caller's margin: `dst +
        // 64 - off` is before `dst + LONG_MARGIN`); only the first `off` are used.
        let src = _mm512_loadu_si512(dst.sub(off).cast());
        let mut chunk =
            _mm512_permutexvar_epi8(_mm512_load_si512(FIRST.0[off & 63].as_ptr().cast()), src);
        let next = _mm512_load_si512(NEXT.0[off & 63].as_ptr().cast());
        let mut k = 0;
        loop {
            _mm512_storeu_si512(dst.add(k).cast(), chunk);
            k += 64;
            if k >= len {
                return;
            }
            chunk = _mm512_permutexvar_epi8(next, chunk);
        }
    }
}

/// The match copy with `HEAD` (a multiple of 16, at least 32) bytes copied unconditionally
/// where the offset allows whole chunks.
///
/// # Safety
/// `dst[.. len + HEAD]` must be writable, and the `off >= 1` bytes before `dst` must be
/// initialised bytes of the same buffer.
#[inline(always)]
unsafe fn copy_match_head<const HEAD: usize>(dst: *mut u8, off: usize, len: usize) {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        let mut src = dst.sub(off) as *const u8;
        if off >= 16 {
            // Each chunk's source ends at least 16 bytes before its destination starts... or
            // at the destination's start, so chunks never overlap, and later chunks read only
            // bytes earlier chunks have finished writing.
            let mut k = 0;
            while k < HEAD {
                copy16(src.add(k), dst.add(k));
                k += 16;
            }
            while k < len {
                copy16(src.add(k), dst.add(k));
                k += 16;
            }
            return;
        }
        // Period `off` < 16: the pattern also has period `dist = off * ceil(16 / off)` (16..=30).
        // Write the first `dist` bytes one at a time, then chunks from `dist` back.
        let dist = off * 16usize.div_ceil(off);
        let head = len.min(dist);
        for k in 0..head {
            *dst.add(k) = *src.add(k);
        }
        src = dst.sub(dist);
        let mut k = head;
        while k < len {
            copy16(src.add(k), dst.add(k));
            k += 16;
        }
    }
}

/// Asks the cache for the line holding `at` ahead of a read (a hint: any address is allowed,
/// nothing is read).
#[inline(always)]
pub fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint never faults and reads nothing into the program (SSE, part of
    // every x86_64 target).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Copies `len` bytes from `off` bytes before `out[op]` to `out[op..]`, one at a time (the exact
/// path for the last sequences of a block; `1 <= off <= op`, `op + len <= out.len()`).
#[inline]
pub fn copy_match_exact(out: &mut [u8], op: usize, off: usize, len: usize) {
    for d in op..op + len {
        out[d] = out[d - off];
    }
}

/// Appends `src[at..at + len]` to `out` with wide copies: the safe form of
/// [`copy_literals`] for runs taken from a buffer that keeps [`MARGIN`] spare bytes after its
/// last run (checked here; a run without them panics).
#[inline(always)]
pub fn extend_from_padded(out: &mut Vec<u8>, src: &[u8], at: usize, len: usize) {
    assert!(at <= src.len() && len + MARGIN <= src.len() - at);
    out.reserve(len + MARGIN);
    let n = out.len();
    // SAFETY: `src[at .. at + len + MARGIN]` is in bounds (asserted) and `out` has room for
    // `len + MARGIN` bytes after `n` (reserved); the first `len` of them are then written.
    unsafe {
        copy_literals(src.as_ptr().add(at), out.as_mut_ptr().add(n), len);
        out.set_len(n + len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer with history before byte 200, after a match of `len` there is copied by
    /// `copy`, cut after the match.
    fn copied(len: usize, copy: impl Fn(&mut [u8], usize)) -> Vec<u8> {
        let at = 200;
        let mut buf: Vec<u8> = (0..at + len + LONG_MARGIN)
            .map(|i| (i * 37 % 251) as u8)
            .collect();
        copy(&mut buf, at);
        buf.truncate(at + len);
        buf
    }

    #[test]
    fn wide_match_copies_equal_byte_copies_at_every_short_offset() {
        #[cfg(target_arch = "x86_64")]
        let avx512 = crate::cpu::has_avx512();
        #[cfg(not(target_arch = "x86_64"))]
        let avx512 = false;
        for off in 1..=140 {
            for len in (1..=200).chain([255, 256, 257, 300]) {
                let exact = copied(len, |b, at| copy_match_exact(b, at, off, len));
                // SAFETY: the buffer has 200 bytes before the match and LONG_MARGIN after it.
                let wide = copied(len, |b, at| unsafe {
                    copy_long_match(b.as_mut_ptr().add(at), off, len)
                });
                assert_eq!(wide, exact, "16-byte copies: offset {off}, length {len}");
                #[cfg(target_arch = "x86_64")]
                if avx512 {
                    // SAFETY: as above, and the CPU has AVX-512 F, BW and VBMI.
                    let wide = copied(len, |b, at| unsafe {
                        copy_long_match_64(b.as_mut_ptr().add(at), off, len)
                    });
                    assert_eq!(wide, exact, "64-byte copies: offset {off}, length {len}");
                }
            }
        }
        // Say which builds this machine could test: a CPU without AVX-512 tests the others.
        let ran = if avx512 {
            "16- and 64-byte"
        } else {
            "16-byte (no AVX-512 VBMI here)"
        };
        eprintln!("match copies tested: {ran}");
    }
}
