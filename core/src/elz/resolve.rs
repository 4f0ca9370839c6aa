//! FAST PATH: the sequence pass's per-sequence work before its copies, sixteen sequences at a
//! time with AVX-512: each one's repeat offset resolved, its fields checked against the block,
//! and its match's source and its output asked of the cache.
//!
//! The repeat offsets are the one chain from sequence to sequence. Here they live in a vector
//! register, and each sequence moves them with one two-source permute (`vpermt2d`, three
//! cycles): which of the three offsets, or which lane of the run's fresh offsets, goes where is
//! a row of a small table picked by the sequence's kind. Everything else is lane arithmetic:
//! each sequence's output position is a prefix sum of the lengths, and its checks are lane
//! compares. Where a check fails the group is left to the scalar loop, which finds the exact
//! sequence and error, so both builds report alike.

use std::arch::x86_64::*;

use super::sequence_fields::{avx512::prefix_sum, Cursor, Run};
use super::Reps;
use crate::copy as wide;

/// Table rows: lanes 0..3 of a row say where the new repeat offsets come from (0..16: the old
/// ones' lanes; 16 + i: lane i of the fresh offsets).
const REP0: usize = 0;
const REP1: usize = 1;
const REP2: usize = 2;
/// Repeat offset 0 minus one: the permute moves it to the front; a subtraction follows.
const REP0_LESS_ONE: usize = 3;
/// Rows 4.. move fresh offset `row - 4` to the front.
const FRESH: usize = 4;

#[repr(C, align(64))]
struct Rows([[u32; 16]; FRESH + 16]);

static ROWS: Rows = {
    let mut rows = [[0u32; 16]; FRESH + 16];
    rows[REP0] = row([0, 1, 2]);
    rows[REP1] = row([1, 0, 2]);
    rows[REP2] = row([2, 0, 1]);
    rows[REP0_LESS_ONE] = row([0, 0, 1]);
    let mut i = 0;
    while i < 16 {
        rows[FRESH + i] = row([16 + i as u32, 0, 1]);
        i += 1;
    }
    Rows(rows)
};

const fn row(first: [u32; 3]) -> [u32; 16] {
    let mut r = [0u32; 16];
    r[0] = first[0];
    r[1] = first[1];
    r[2] = first[2];
    r
}

/// The repeat offsets as the vector pass keeps them from group to group: lanes 0..3 of a
/// 64-byte vector (the other lanes are don't-cares). Stored and loaded whole, so each group's
/// load of them is forwarded from the last group's store (a masked store and masked load,
/// which the CPU does not forward, would put a wait for the cache on the pass's one chain).
#[derive(Copy, Clone)]
#[repr(C, align(64))]
pub(super) struct RepLanes([u32; 16]);

impl From<Reps> for RepLanes {
    fn from(r: Reps) -> Self {
        let mut lanes = [0; 16];
        lanes[..3].copy_from_slice(&r.0);
        RepLanes(lanes)
    }
}

impl From<RepLanes> for Reps {
    fn from(l: RepLanes) -> Self {
        Reps([l.0[0], l.0[1], l.0[2]])
    }
}

/// Resolves the repeat offsets of the sixteen sequences `run[at..at + 16]` into `offs`,
/// checks them (as `check_seq` does each one) and prefetches their sources and outputs; moves
/// `reps` and `cur` past them. Returns false, having changed nothing, where the scalar loop
/// must take the group: a check fails, or a length is too big for lane arithmetic.
///
/// # Safety
///
/// The CPU must have AVX-512F; `run` must hold sixteen sequences from `at`; `cur.rop <=
/// out_len` and `cur.rlp <= lit_count`.
#[target_feature(enable = "avx512f,bmi2")]
pub(super) unsafe fn resolve16(
    run: &Run,
    at: usize,
    reps: &mut RepLanes,
    cur: &mut Cursor,
    (lit_count, out): (usize, &[u8]),
    offs: &mut [u32],
) -> bool {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe {
        assert!(at + 16 <= run.ll.len() && offs.len() == 16);
        let out_len = out.len();
        // Positions are 32-bit lanes: blocks are at most 2^27 bytes.
        if out_len >= 1 << 31 {
            return false;
        }
        let load = |v: &[u32]| _mm512_loadu_si512(v[at..at + 16].as_ptr().cast());
        let (ll, ml, ov) = (load(&run.ll), load(&run.ml), load(&run.ov));
        let one = _mm512_set1_epi32(1);
        let three = _mm512_set1_epi32(3);

        // Each sequence's kind ([`Reps::decode`]): offset values above 3 are fresh; below, value
        // k + 1 names repeat k after literals, value k without.
        let fresh = _mm512_cmpgt_epu32_mask(ov, three);
        let k = _mm512_mask_sub_epi32(ov, _mm512_test_epi32_mask(ll, ll), ov, one);
        // A zero offset value after literals names no offset: the scalar loop reports it.
        if _mm512_mask_cmpgt_epu32_mask(!fresh, k, three) != 0 {
            return false;
        }
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let row = _mm512_mask_blend_epi32(
            fresh,
            k,
            _mm512_add_epi32(lane, _mm512_set1_epi32(FRESH as i32)),
        );
        let mut rows = [0u32; 16];
        _mm512_storeu_si512(rows.as_mut_ptr().cast(), row);
        let fresh_offs = _mm512_sub_epi32(ov, three);

        // The chain: one permute per sequence; each sequence's offset is lane 0 after it,
        // gathered into `off` by shifting it in at the top.
        let mut state = _mm512_load_si512(reps.0.as_ptr().cast());
        let mut off = _mm512_setzero_si512();
        for &r in &rows {
            // Rows are kinds 0..=3 (checked above) or FRESH plus a lane.
            let idx = _mm512_load_si512(ROWS.0.get_unchecked(r as usize).as_ptr().cast());
            state = _mm512_permutex2var_epi32(state, idx, fresh_offs);
            if r as usize == REP0_LESS_ONE {
                state = _mm512_mask_sub_epi32(state, 1, state, one);
            }
            off = _mm512_alignr_epi32::<1>(state, off);
        }

        // Checks, with every sum inside 32 bits: each sequence's length within the room left
        // (at most 2^27), so sixteen of them sum below 2^31.
        let len = _mm512_add_epi32(ll, ml);
        let room = (out_len - cur.rop).min(1 << 27);
        if _mm512_cmpgt_epu32_mask(len, _mm512_set1_epi32(room as i32)) != 0 {
            return false;
        }
        let end = _mm512_add_epi32(prefix_sum(len), _mm512_set1_epi32(cur.rop as i32));
        let lits_end = _mm512_add_epi32(prefix_sum(ll), _mm512_set1_epi32(cur.rlp as i32));
        let last = |v: __m512i| _mm_extract_epi32::<3>(_mm512_extracti32x4_epi32::<3>(v)) as u32;
        let (end_last, lits_last) = (last(end) as usize, last(lits_end) as usize);
        // Both grow from sequence to sequence: the last lanes bound them all.
        if end_last > out_len || lits_last > lit_count {
            return false;
        }
        let start = _mm512_sub_epi32(end, len);
        let match_at = _mm512_add_epi32(start, ll);
        // One comparison for both a zero offset and one before the block's start.
        if _mm512_cmpge_epu32_mask(_mm512_sub_epi32(off, one), match_at) != 0 {
            return false;
        }

        // The prefetches: both lines the match's first 64 bytes may read, and its output line.
        let mut src = [0u32; 16];
        let mut dst = [0u32; 16];
        _mm512_storeu_si512(src.as_mut_ptr().cast(), _mm512_sub_epi32(match_at, off));
        _mm512_storeu_si512(dst.as_mut_ptr().cast(), start);
        for (&s, &d) in src.iter().zip(&dst) {
            let s = out.as_ptr().wrapping_add(s as usize);
            wide::prefetch(s);
            wide::prefetch(s.wrapping_add(63));
            wide::prefetch(out.as_ptr().wrapping_add(d as usize));
        }

        _mm512_storeu_si512(offs.as_mut_ptr().cast(), off);
        _mm512_store_si512(reps.0.as_mut_ptr().cast(), state);
        cur.rop = end_last;
        cur.rlp = lits_last;
        true
    }
}
