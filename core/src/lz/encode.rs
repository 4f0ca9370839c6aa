//! LZ match finding and sequence writing. Two finders: a greedy single-probe hash table
//! (`--fast`) and hash chains with a lazy step (`--lz`). Both fill the same [`Sequences`].

use super::{MAX_OFFSET, MIN_MATCH, NIBBLE_ESCAPE};
use crate::varint;
use crate::window::{common_len, read_u32, read_u64};

/// Match finder settings of one level.
#[derive(Copy, Clone, Debug)]
pub struct Params {
    pub finder: Finder,
}

/// Which match finder to run, and how hard.
#[derive(Copy, Clone, Debug)]
pub enum Finder {
    /// One hash-table probe per position; after `2^GREEDY_SKIP_SHIFT` misses in a row the
    /// step grows, so incompressible data is skipped quickly. The table has
    /// `2^GREEDY_HASH_LOG` entries, as lz4's.
    Greedy,
    /// Hash chains walked `depth` candidates deep; with `lazy`, a match is deferred one byte when
    /// the next position has a longer one.
    Chain {
        hash_log: u32,
        depth: u32,
        lazy: bool,
    },
}

/// Reusable encoder memory: hash tables and the four output streams. One per thread.
#[derive(Default)]
pub struct Scratch {
    head: Vec<u32>,
    chain: Vec<u32>,
    seqs: Sequences,
}

impl Scratch {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Inputs shorter than this are stored as literals only: the finders read 8 bytes at a time.
const MIN_INPUT: usize = 16;
/// Positions this close to the end are never searched (8-byte reads stay in bounds).
const TAIL: usize = 8;

/// Compresses `src` as one LZ block payload, appended to `out`.
pub fn compress(src: &[u8], params: &Params, scratch: &mut Scratch, out: &mut Vec<u8>) {
    scratch.seqs.reset(src.len());
    let anchor = if src.len() < MIN_INPUT {
        0
    } else {
        match params.finder {
            Finder::Greedy => greedy(src, scratch),
            Finder::Chain {
                hash_log,
                depth,
                lazy,
            } => chain(src, hash_log, depth, lazy, scratch),
        }
    };
    scratch.seqs.finish(&src[anchor..], out);
}

/// Hash of the low 5 bytes of `v` into `hash_log` bits.
#[inline(always)]
fn hash5(v: u64, hash_log: u32) -> usize {
    ((v << 24).wrapping_mul(889_523_592_379) >> (64 - hash_log)) as usize
}

/// Unaligned little-endian load of 8 bytes at `base + i`.
///
/// # Safety
/// `base + i .. base + i + 8` must lie in one readable allocation.
#[inline(always)]
unsafe fn load_u64(base: *const u8, i: usize) -> u64 {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe { u64::from_le(std::ptr::read_unaligned(base.add(i) as *const u64)) }
}

/// Unaligned little-endian load of 4 bytes at `base + i` (same contract as [`load_u64`]).
#[inline(always)]
unsafe fn load_u32(base: *const u8, i: usize) -> u32 {
    // SAFETY: the caller keeps this function's contract (its `# Safety`).
    unsafe { u32::from_le(std::ptr::read_unaligned(base.add(i) as *const u32)) }
}

/// Entries in the greedy finder's hash table: 4,096 (16 KiB) stays in L1 beside the input.
const GREEDY_HASH_LOG: u32 = 12;

/// The greedy finder's step grows by one every `2^GREEDY_SKIP_SHIFT` bytes since the last match.
const GREEDY_SKIP_SHIFT: u32 = 6;

/// Greedy parse with one probe per position. Returns where the trailing literals start.
fn greedy(src: &[u8], s: &mut Scratch) -> usize {
    s.head.clear();
    s.head.resize(1 << GREEDY_HASH_LOG, 0);
    // A fixed-size table: every hash is below its length, so indexing needs no check.
    let table: &mut [u32; 1 << GREEDY_HASH_LOG] = (&mut s.head[..])
        .try_into()
        .expect("table of 2^GREEDY_HASH_LOG entries");
    let seqs = &mut s.seqs;
    let limit = src.len() - TAIL;
    let mut anchor = 0;
    let mut i = 1;
    'parse: while i < limit {
        // FAST PATH: the search loop, one probe per step, with unchecked loads. Every `i` and
        // `next` loaded below is under `limit = len - TAIL`, so 8 bytes from it are in `src`;
        // a candidate is loaded only after the compare has shown `cand < i`.
        let base = src.as_ptr();
        // SAFETY: `i < limit` (loop condition).
        let mut cur = unsafe { load_u64(base, i) };
        let cand = loop {
            let h = hash5(cur, GREEDY_HASH_LOG);
            let cand = table[h] as usize;
            table[h] = i as u32;
            let next = i + 1 + ((i - anchor) >> GREEDY_SKIP_SHIFT);
            // One unsigned compare for "cand < i and within the window".
            if i.wrapping_sub(cand).wrapping_sub(1) < MAX_OFFSET
                // SAFETY: `cand < i < limit` once the first compare holds.
                && unsafe { load_u32(base, cand) } == cur as u32
            {
                break cand;
            }
            i = next;
            if i >= limit {
                break 'parse;
            }
            // SAFETY: `i < limit`, just checked.
            cur = unsafe { load_u64(base, i) };
        };
        i = take_match(src, anchor, i, cand, seqs);
        anchor = i;
        if i < limit {
            table[hash5(read_u64(src, i - 2), GREEDY_HASH_LOG)] = (i - 2) as u32;
        }
    }
    anchor
}

/// Extends the match of `src[i..]` with `src[cand..]` backwards (not past `anchor`) and
/// forwards, records it after the literals from `anchor`, and returns where it ends. Kept out
/// of line: the greedy search loop then has the registers to itself.
#[inline(never)]
fn take_match(src: &[u8], anchor: usize, i: usize, cand: usize, seqs: &mut Sequences) -> usize {
    let (mut start, mut from) = (i, cand);
    while start > anchor && from > 0 && src[start - 1] == src[from - 1] {
        start -= 1;
        from -= 1;
    }
    let len = (i - start) + MIN_MATCH + common_len(src, cand + MIN_MATCH, i + MIN_MATCH);
    seqs.push(src, anchor, start - anchor, i - cand, len);
    start + len
}

/// Hash-chain state for one block: `head[h]` and `chain[pos & MASK]` hold `pos + 1` (0 = none).
struct Chains<'a> {
    src: &'a [u8],
    head: &'a mut [u32],
    chain: &'a mut [u32],
    hash_log: u32,
    depth: u32,
}

const CHAIN_MASK: usize = (1 << 16) - 1;

impl Chains<'_> {
    #[inline(always)]
    fn insert(&mut self, p: usize) {
        let h = hash5(read_u64(self.src, p), self.hash_log);
        self.chain[p & CHAIN_MASK] = self.head[h];
        self.head[h] = (p + 1) as u32;
    }

    /// Longest match for position `p` (already inserted or not), as (length, offset); length
    /// below `MIN_MATCH` means none. Chain entries are valid for every candidate within
    /// `MAX_OFFSET`: the ring holds 65,536 positions, and only positions below `p` are inserted.
    #[inline(always)]
    fn find(&self, p: usize) -> (usize, usize) {
        let src = self.src;
        let h = hash5(read_u64(src, p), self.hash_log);
        let mut c = self.head[h] as usize;
        let (mut best_len, mut best_off) = (MIN_MATCH - 1, 0);
        let mut tries = self.depth;
        let first = read_u32(src, p);
        while c != 0 && tries > 0 {
            let cand = c - 1;
            if cand >= p {
                c = self.chain[cand & CHAIN_MASK] as usize;
                tries -= 1;
                continue;
            }
            if p - cand > MAX_OFFSET {
                break;
            }
            if p + best_len < src.len()
                && src[cand + best_len] == src[p + best_len]
                && read_u32(src, cand) == first
            {
                let len = MIN_MATCH + common_len(src, cand + MIN_MATCH, p + MIN_MATCH);
                if len > best_len {
                    best_len = len;
                    best_off = p - cand;
                    if p + len >= src.len() {
                        break;
                    }
                }
            }
            let next = self.chain[cand & CHAIN_MASK] as usize;
            if next >= c {
                break;
            }
            c = next;
            tries -= 1;
        }
        (best_len, best_off)
    }
}

/// Shortest match the chain parse takes. A 4- or 5-byte match saves a byte or two but costs a
/// whole sequence to decode.
const MIN_LZ: usize = 6;
/// Hash-chain parse with an optional one-step lazy evaluation.
fn chain(src: &[u8], hash_log: u32, depth: u32, lazy: bool, s: &mut Scratch) -> usize {
    s.head.clear();
    s.head.resize(1 << hash_log, 0);
    s.chain.clear();
    s.chain.resize(CHAIN_MASK + 1, 0);
    let mut ch = Chains {
        src,
        head: &mut s.head,
        chain: &mut s.chain,
        hash_log,
        depth,
    };
    let seqs = &mut s.seqs;
    let limit = src.len() - TAIL;
    let mut anchor = 0;
    let mut i = 0;
    while i < limit {
        let (mut len, mut off) = ch.find(i);
        ch.insert(i);
        if len < MIN_LZ {
            i += 1 + ((i - anchor) >> 7);
            continue;
        }
        // Lazy step: a literal now and a longer match at the next byte covers more for one
        // byte of literal.
        while lazy && i + 1 < limit {
            let (len2, off2) = ch.find(i + 1);
            if len2 > len {
                ch.insert(i + 1);
                i += 1;
                len = len2;
                off = off2;
            } else {
                break;
            }
        }
        let (mut start, mut from) = (i, i - off);
        while start > anchor && from > 0 && src[start - 1] == src[from - 1] {
            start -= 1;
            from -= 1;
        }
        let len = len + (i - start);
        seqs.push(src, anchor, start - anchor, off, len);
        let end = start + len;
        for p in (i + 1)..end.min(limit) {
            ch.insert(p);
        }
        i = end;
        anchor = end;
    }
    anchor
}

/// A length extension: one byte below 255, else 255 and a varint of the rest.
#[inline(always)]
fn put_extension(extra: &mut Vec<u8>, v: usize) {
    if v < 255 {
        extra.push(v as u8);
    } else {
        extra.push(255);
        varint::put(extra, (v - 255) as u64);
    }
}

/// The four output streams of an LZ block, filled sequence by sequence. Tokens, offsets and
/// literals live in buffers sized for the block up front ([`Sequences::reset`]), so appending
/// is a store, not a capacity check; the extra stream is rare and stays a `Vec`.
#[derive(Default)]
struct Sequences {
    count: usize,
    lit_len: usize,
    tokens: Vec<u8>,
    offsets: Vec<u8>,
    extra: Vec<u8>,
    literals: Vec<u8>,
}

/// Slack after the literal buffer, so short literal runs are copied as one 16-byte chunk.
const LIT_SLACK: usize = 16;

impl Sequences {
    /// Empties the streams and sizes them for a block of `n` bytes (at most `n / MIN_MATCH`
    /// sequences, at most `n` literals).
    fn reset(&mut self, n: usize) {
        self.count = 0;
        self.lit_len = 0;
        self.extra.clear();
        let seqs = n / MIN_MATCH + 1;
        if self.tokens.len() < seqs {
            self.tokens.resize(seqs, 0);
            self.offsets.resize(2 * seqs, 0);
        }
        if self.literals.len() < n + LIT_SLACK {
            self.literals.resize(n + LIT_SLACK, 0);
        }
    }

    #[inline(always)]
    fn push_literals(&mut self, lits: &[u8], src: &[u8], start: usize) {
        let ll = lits.len();
        let at = self.lit_len;
        if ll <= 16 && start + 16 <= src.len() {
            self.literals[at..at + 16].copy_from_slice(&src[start..start + 16]);
        } else {
            self.literals[at..at + ll].copy_from_slice(lits);
        }
        self.lit_len += ll;
    }

    /// Appends the sequence "literals `src[start..start + ll]`, then `len` bytes from `offset`
    /// back".
    #[inline(always)]
    fn push(&mut self, src: &[u8], start: usize, ll: usize, offset: usize, len: usize) {
        debug_assert!((1..=MAX_OFFSET).contains(&offset) && len >= MIN_MATCH);
        let ml = len - MIN_MATCH;
        let k = self.count;
        self.tokens[k] = ((ll.min(NIBBLE_ESCAPE) << 4) | ml.min(NIBBLE_ESCAPE)) as u8;
        if ll >= NIBBLE_ESCAPE {
            put_extension(&mut self.extra, ll - NIBBLE_ESCAPE);
        }
        if ml >= NIBBLE_ESCAPE {
            put_extension(&mut self.extra, ml - NIBBLE_ESCAPE);
        }
        self.offsets[2 * k..2 * k + 2].copy_from_slice(&(offset as u16).to_le_bytes());
        self.push_literals(&src[start..start + ll], src, start);
        self.count += 1;
    }

    /// Adds the trailing literals and writes the payload.
    fn finish(&mut self, tail: &[u8], out: &mut Vec<u8>) {
        let at = self.lit_len;
        self.literals[at..at + tail.len()].copy_from_slice(tail);
        self.lit_len += tail.len();
        let n = self.count;
        varint::put(out, n as u64);
        varint::put(out, self.lit_len as u64);
        varint::put(out, self.extra.len() as u64);
        out.reserve(3 * n + self.extra.len() + self.lit_len);
        out.extend_from_slice(&self.tokens[..n]);
        out.extend_from_slice(&self.offsets[..2 * n]);
        out.extend_from_slice(&self.extra);
        out.extend_from_slice(&self.literals[..self.lit_len]);
    }
}
