//! The `--max` parser: a double-fast match finder. Two hash tables, one keyed by 8 bytes (long
//! matches, checked first) and one by the first `short_len` bytes; the most recent offset is
//! probed at the next byte before either; one lazy step asks the long table one or two
//! positions on when the match found is short; after each match, a match at the second repeat
//! offset is taken at once.

use super::ldm::{self, LongMatch};
use super::{Reps, Seq, MIN_MATCH};
use crate::window::{common_len, read_u32, read_u64};

/// Settings of the parser.
#[derive(Copy, Clone, Debug)]
pub struct Params {
    pub long_log: u32,
    pub short_log: u32,
    /// Bytes hashed for the short table (4..=6); also the shortest match it takes.
    pub short_len: usize,
    /// Misses before the step grows: the step is `1 + (distance from last match >> this)`.
    pub search_shift: u32,
    /// Take the lazy step when the match found is shorter than this (0: never).
    pub lazy_below: usize,
    /// A match is taken only where its length, at the block's estimated bits per literal,
    /// pays for it: the offset's bit length plus this many bits for its codes.
    pub match_cost_bits: u32,
}

impl Params {
    /// The `--max` settings: 2^17 long and 2^16 short entries (bigger tables found little more
    /// for their cost in cache misses), 6-byte short matches (5-byte ones cost more to code
    /// than they save), one lazy step below 32 bytes, matches paying from 12 bits of codes (a
    /// short match far back can cost more than its literals).
    pub const MAX: Params = Params {
        long_log: 17,
        short_log: 16,
        short_len: 6,
        search_shift: 8,
        lazy_below: 32,
        match_cost_bits: 12,
    };
}

/// A parse: sequences and the literals they reference, including the block's trailing ones.
#[derive(Default)]
pub struct Parse {
    pub seqs: Vec<Seq>,
    pub literals: Vec<u8>,
}

impl Parse {
    pub fn clear(&mut self) {
        self.seqs.clear();
        self.literals.clear();
    }

    /// Adds `src[anchor..start]` as literals and a match of `len` at `off`.
    #[inline(always)]
    pub(crate) fn push(
        &mut self,
        src: &[u8],
        anchor: usize,
        start: usize,
        off: usize,
        len: usize,
        reps: &mut Reps,
    ) {
        let ll = (start - anchor) as u32;
        push_literals(&mut self.literals, src, anchor, start);
        let ov = reps.encode(off as u32, ll);
        self.seqs.push(Seq {
            ll,
            ml: len as u32,
            ov,
        });
    }
}

/// Appends `src[a..b]` to `lits`. Most runs are a few bytes: those go as one fixed 16-byte
/// copy (cut back after) rather than a call to `memcpy` sized at run time.
#[inline(always)]
fn push_literals(lits: &mut Vec<u8>, src: &[u8], a: usize, b: usize) {
    const WIDE: usize = 16;
    match src.get(a..a + WIDE) {
        Some(chunk) if b - a <= WIDE => {
            let len = lits.len();
            let chunk: &[u8; WIDE] = chunk.try_into().expect("16 bytes");
            lits.extend_from_slice(chunk);
            lits.truncate(len + (b - a));
        }
        _ => lits.extend_from_slice(&src[a..b]),
    }
}

/// Reusable hash tables of [`Entries`].
#[derive(Default)]
pub struct Tables {
    long: Vec<u32>,
    short: Vec<u32>,
}

/// How a table entry packs a position (low bits, as many as the block needs) and a tag (the
/// bits above: a hash of the first four bytes there). A candidate whose tag differs from the
/// bytes being matched is rejected without loading the input at the candidate, a cache miss
/// more often than not in an 8 MiB block; four-byte entries keep both tables in L2. Position
/// 0 doubles as "empty", which only costs matches at byte 0.
#[derive(Copy, Clone)]
struct Entries {
    pos_mask: u32,
}

impl Entries {
    fn for_block(n: usize) -> Self {
        let bits = usize::BITS - n.leading_zeros();
        Entries {
            pos_mask: u32::MAX
                .checked_shr(32u32.saturating_sub(bits))
                .unwrap_or(0),
        }
    }

    #[inline(always)]
    fn tag(v: u64) -> u32 {
        (v as u32).wrapping_mul(0x9E37_79B1)
    }

    /// The entry for position `at`, where the input reads `v`.
    #[inline(always)]
    fn make(self, at: usize, v: u64) -> u32 {
        at as u32 | Self::tag(v) & !self.pos_mask
    }

    /// The position of entry `e` if its tag agrees with input that reads `v`.
    #[inline(always)]
    fn position(self, e: u32, v: u64) -> Option<usize> {
        ((e ^ Self::tag(v)) & !self.pos_mask == 0).then_some((e & self.pos_mask) as usize)
    }
}

/// One block's search settings: the parameters fitted to the block, its table entry layout,
/// and the shortest match that pays at each offset bit length.
struct Search {
    p: Params,
    e: Entries,
    min_len: [u8; 32],
}

impl Search {
    fn new(n: usize, p: &Params, literal_bits: Option<f64>) -> Self {
        // Tables no larger than about two entries per input byte: clearing them is per-block
        // work.
        let fit = usize::BITS - n.leading_zeros() + 1;
        let p = Params {
            long_log: p.long_log.min(fit),
            short_log: p.short_log.min(fit),
            ..*p
        };
        // A match of `len` at an offset of bit length `k` costs about `k + match_cost_bits`
        // bits; its literals would cost `len * literal_bits`.
        let literal_bits = literal_bits.unwrap_or(8.0).max(0.5);
        let shortest = p.short_len.max(MIN_MATCH) as f64;
        let min_len = std::array::from_fn(|k| {
            ((k as f64 + f64::from(p.match_cost_bits)) / literal_bits)
                .ceil()
                .clamp(shortest, 255.0) as u8
        });
        Search {
            p,
            e: Entries::for_block(n),
            min_len,
        }
    }

    /// Whether a match of `len` at `off` pays.
    #[inline(always)]
    fn pays(&self, len: usize, off: usize) -> bool {
        len >= usize::from(self.min_len[off.ilog2() as usize & 31])
    }
}

#[inline(always)]
fn hash(v: u64, bytes: usize, log: u32) -> usize {
    const PRIME: u64 = 0x9E37_79B1_85EB_CA87;
    ((v << (64 - 8 * bytes)).wrapping_mul(PRIME) >> (64 - log)) as usize
}

/// Positions this close to the end are not searched (8-byte reads stay in bounds).
const TAIL: usize = 8;

/// Parses `src` (one block) into `out`, taking the long-distance matches `far` (in order, not
/// overlapping; empty without `--long`) where they start. `literal_bits` is the block's
/// [`sampled_bits_per_byte`](super::sampled_bits_per_byte): what a literal costs, about.
pub fn parse(
    src: &[u8],
    p: &Params,
    literal_bits: Option<f64>,
    t: &mut Tables,
    far: &[LongMatch],
    out: &mut Parse,
) {
    crate::multiversion!(
        fn(src: &[u8], p: &Params, literal_bits: Option<f64>, t: &mut Tables, far: &[LongMatch], out: &mut Parse)
            => parse_with(src, p, literal_bits, t, far, out);
        "bmi2,lzcnt" if crate::cpu::has_bmi2()
    )
}

#[inline(always)]
fn parse_with(
    src: &[u8],
    p: &Params,
    literal_bits: Option<f64>,
    t: &mut Tables,
    far: &[LongMatch],
    out: &mut Parse,
) {
    out.clear();
    let n = src.len();
    if n < 16 {
        out.literals.extend_from_slice(src);
        return;
    }
    let search = Search::new(n, p, literal_bits);
    let (p, e) = (&search.p, search.e);
    t.long.clear();
    t.long.resize(1 << p.long_log, 0);
    t.short.clear();
    t.short.resize(1 << p.short_log, 0);
    let (long, short) = (&mut t.long[..], &mut t.short[..]);
    let limit = n - TAIL;
    let mut reps = Reps::default();
    let mut anchor = 0;
    let mut ip = 1;
    let mut far = far.iter().peekable();
    // Where the next long-distance match starts (never, without one): one compare per step.
    let mut next_far = far.peek().map_or(usize::MAX, |m| m.start);
    // Table entries hold positions; 0 doubles as "empty", which only costs matches at byte 0.
    while ip < limit {
        // A long-distance match that starts here (or was stepped over) goes first, from where
        // the literals start if an earlier match ran into it.
        if next_far <= ip {
            let m = far.next().expect("a long-distance match starts here");
            next_far = far.peek().map_or(usize::MAX, |m| m.start);
            let start = m.start.max(anchor);
            if m.start + m.len >= start + ldm::MIN_LEN / 2 {
                let len = m.start + m.len - start;
                out.push(src, anchor, start, m.off, len, &mut reps);
                ip = start + len;
                anchor = ip;
                if ip >= limit {
                    break;
                }
            }
            continue;
        }
        let v = read_u64(src, ip);
        let hl = hash(v, 8, p.long_log);
        let hs = hash(v, p.short_len, p.short_log);
        let (el, es) = (long[hl], short[hs]);
        long[hl] = e.make(ip, v);
        short[hs] = e.make(ip, v);
        let r0 = reps.0[0] as usize;
        let match_start;
        // Repeat offset at the next byte.
        if r0 <= ip && ip + 1 < limit && read_u32(src, ip + 1) == read_u32(src, ip + 1 - r0) {
            let len = 4 + common_len(src, ip + 1 - r0 + 4, ip + 5);
            let start = ip + 1;
            match_start = start;
            out.push(src, anchor, start, r0, len, &mut reps);
            ip = start + len;
            anchor = ip;
        } else {
            let Some((mut start, mut off, mut len, probed_next)) =
                best_at(src, ip, v, [el, es], &search, long)
            else {
                ip += 1 + ((ip - anchor) >> p.search_shift);
                continue;
            };
            // The lazy step, in the long table only: at `ip + 1` after a long match at `ip`,
            // at `ip + 2` after a short one (where `best_at` has probed `ip + 1`). A later
            // match wins where it is longer by the bytes it starts later; each probe enters its
            // position in the long table.
            let at = if start > ip {
                0
            } else if probed_next {
                2
            } else {
                1
            };
            if at > 0 && len < p.lazy_below {
                if let Some((o1, l1)) = long_at(src, ip + at, &search, long) {
                    if l1 >= len + at {
                        (start, off, len) = (ip + at, o1, l1);
                    }
                }
            }
            // Extend backwards over literals.
            while start > anchor && start > off && src[start - 1] == src[start - 1 - off] {
                start -= 1;
                len += 1;
            }
            match_start = start;
            out.push(src, anchor, start, off, len, &mut reps);
            ip = start + len;
            anchor = ip;
        }
        if ip >= limit {
            break;
        }
        // Index positions inside the match for later searches: its third byte in both tables,
        // the one before its end in the long table and its last in the short one.
        let (q, w) = (match_start + 2, read_u64(src, match_start + 2));
        long[hash(w, 8, p.long_log)] = e.make(q, w);
        short[hash(w, p.short_len, p.short_log)] = e.make(q, w);
        let (q, w) = (ip - 2, read_u64(src, ip - 2));
        long[hash(w, 8, p.long_log)] = e.make(q, w);
        let (q, w) = (ip - 1, read_u64(src, ip - 1));
        short[hash(w, p.short_len, p.short_log)] = e.make(q, w);
        // Matches at the second repeat offset right away (swapping it to the front).
        while ip < limit {
            let r1 = reps.0[1] as usize;
            if r1 > ip || read_u32(src, ip) != read_u32(src, ip - r1) {
                break;
            }
            let len = 4 + common_len(src, ip - r1 + 4, ip + 4);
            out.push(src, anchor, ip, r1, len, &mut reps);
            ip += len;
            anchor = ip;
        }
    }
    out.literals.extend_from_slice(&src[anchor..]);
}

/// The better of the long and short candidates (entries `el`, `es`) at `ip`, where the input
/// reads `v`: (start, offset, length, whether the long table was probed (and updated) at
/// `ip + 1`). A short hit also looks for a long match at `ip + 1`, which usually wins.
#[inline(always)]
fn best_at(
    src: &[u8],
    ip: usize,
    v: u64,
    [el, es]: [u32; 2],
    s: &Search,
    long: &mut [u32],
) -> Option<(usize, usize, usize, bool)> {
    let e = s.e;
    if let Some(cl) = e.position(el, v) {
        if cl > 0 && cl < ip && read_u64(src, cl) == v {
            let len = 8 + common_len(src, cl + 8, ip + 8);
            if s.pays(len, ip - cl) {
                return Some((ip, ip - cl, len, false));
            }
        }
    }
    let cs = e
        .position(es, v)
        .filter(|&cs| cs > 0 && cs < ip && read_u32(src, cs) == v as u32)?;
    let len = 4 + common_len(src, cs + 4, ip + 4);
    // `pays` also holds matches to the short table's length.
    if !s.pays(len, ip - cs) {
        return None;
    }
    let next = ip + 1;
    if next + 8 <= src.len() {
        if let Some((o2, l2)) = long_at(src, next, s, long) {
            if l2 > len {
                return Some((next, o2, l2, true));
            }
        }
        return Some((ip, ip - cs, len, true));
    }
    Some((ip, ip - cs, len, false))
}

/// The long table's candidate at `at` (`at + 8 <= src.len()`), which is entered there in its
/// place: (offset, length) of a match that pays.
#[inline(always)]
fn long_at(src: &[u8], at: usize, s: &Search, long: &mut [u32]) -> Option<(usize, usize)> {
    if at + 8 > src.len() {
        return None;
    }
    let (p, e) = (&s.p, s.e);
    let w = read_u64(src, at);
    let h = hash(w, 8, p.long_log);
    let old = long[h];
    long[h] = e.make(at, w);
    let c = e
        .position(old, w)
        .filter(|&c| c > 0 && c < at && read_u64(src, c) == w)?;
    let len = 8 + common_len(src, c + 8, at + 8);
    s.pays(len, at - c).then_some((at - c, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_and_bmi2_builds_parse_alike() {
        // `parse` takes the BMI2 build where the CPU has it; `parse_with` is the baseline.
        let text: Vec<u8> = include_bytes!("dfast.rs").repeat(3);
        let bits = crate::elz::sampled_bits_per_byte(&text);
        let (mut fast, mut base) = (Parse::default(), Parse::default());
        parse(
            &text,
            &Params::MAX,
            bits,
            &mut Tables::default(),
            &[],
            &mut fast,
        );
        parse_with(
            &text,
            &Params::MAX,
            bits,
            &mut Tables::default(),
            &[],
            &mut base,
        );
        assert!(!fast.seqs.is_empty());
        assert_eq!(fast.seqs, base.seqs);
        assert_eq!(fast.literals, base.literals);
    }

    #[test]
    fn entries_keep_every_position_of_the_block() {
        for n in [16usize, 1000, 8 << 20, (8 << 20) + 1, 1 << 27] {
            let e = Entries::for_block(n);
            for at in [1, n / 2, n - 1] {
                let v = 0x0123_4567_89ab_cdef ^ at as u64;
                assert_eq!(e.position(e.make(at, v), v), Some(at), "block {n}, at {at}");
            }
        }
    }

    #[test]
    fn short_matches_far_back_do_not_pay_where_literals_are_cheap() {
        // Decimal digits: about 3.3 bits a literal.
        let digits: Vec<u8> = (0..100_000u32)
            .map(|i| b'0' + (i.wrapping_mul(2_654_435_761) >> 7) as u8 % 10)
            .collect();
        let bits = crate::elz::sampled_bits_per_byte(&digits);
        let s = Search::new(digits.len(), &Params::MAX, bits);
        assert!(s.pays(6, 100));
        assert!(!s.pays(6, 1 << 22));
        assert!(s.pays(12, 1 << 22));
        // Never below the short table's length, at any offset.
        assert!(!s.pays(5, 1));
        assert!(s.min_len.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn entries_reject_most_other_bytes() {
        let e = Entries::for_block(8 << 20);
        let entry = e.make(12345, 0x1111_2222);
        let rejected = (0..1000u64)
            .filter(|&k| e.position(entry, 0x1111_2222 + k + 1).is_none())
            .count();
        // A 9-bit tag: about one in 512 other values passes.
        assert!(rejected >= 990, "{rejected}");
    }
}
