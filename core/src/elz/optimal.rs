//! The `--ultra` parser: a binary-tree match finder and a forward optimal parse priced in coder
//! bits, with the repeat-offset state carried per position.
//!
//! The finder keeps, for every position of the block, a node in a binary search tree of the
//! suffixes that share its hash, so one walk down the tree finds the longest match at every
//! length it passes (a match list of increasing lengths) and inserts the position at the same
//! time. The parser runs a shortest-path search over segments of the block: a node per
//! position holds the cheapest known way to reach it (bits so far, the last sequence, the
//! literals since the last match, the repeat offsets); literals, matches of every length the
//! finder reports, and repeat-offset matches relax the nodes ahead. Prices are bits under the
//! statistics of an earlier parse of the same stretch: the search runs several passes over
//! each region of the block, each priced by the one before; the first pass of a region is
//! priced by the previous region's result (the first region's by a quick double-fast parse).

use super::dfast::{self, Parse};
use super::ldm::LongMatch;
use super::stats::Stats;
use super::{offset_code, Reps, Seq, LL_CODE, MIN_MATCH, ML_CODE, SECTION_BYTES};
use crate::window::{common_len, common_len_upto, read_u32};

/// Settings of the parser.
#[derive(Copy, Clone, Debug)]
pub struct Params {
    /// Hash table bits for the tree heads.
    pub hash_log: u32,
    /// Tree nodes visited per position.
    pub depth: u32,
    /// A match this long is taken at once, ending the segment (it is near-certainly optimal and
    /// keeps long repeats from costing quadratic work).
    pub sufficient_len: usize,
    /// Shortest-path passes over each region, each priced by the one before.
    pub passes: u32,
}

#[cfg(test)]
impl Params {
    /// A small, quick setting for tests that need an optimal parse, not a good one.
    pub(crate) const QUICK: Params = Params {
        hash_log: 16,
        depth: 8,
        sufficient_len: 64,
        passes: 1,
    };
}

/// Positions per segment of the shortest-path search.
const SEGMENT: usize = 4096;
/// Longest match the finder reports (longer ones are cut; the parser then continues them).
const MAX_MATCH: usize = 1 << 16;
/// Price unit: 1/256 bit.
const BIT: u32 = 256;
const NIL: u32 = u32::MAX;
/// 3-byte matches: table bits, and the farthest offset worth a 3-byte match.
const HASH3_LOG: u32 = 14;
const MAX_OFFSET3: usize = 1 << 14;

/// Reusable memory: the tree, the node array and match lists.
#[derive(Default)]
pub struct Scratch {
    head: Vec<u32>,
    head3: Vec<u32>,
    son: Vec<u32>,
    nodes: Vec<Node>,
    /// Matches of every position of the current region, and where each position's start.
    cache: Vec<(u32, u32)>,
    starts: Vec<u32>,
    first: Parse,
    region: Parse,
    dfast: dfast::Tables,
}

#[derive(Copy, Clone, Debug)]
struct Node {
    price: u32,
    /// Length of the match that ends here (0: reached by a literal).
    len: u32,
    /// The match's offset (not offset value).
    off: u32,
    /// Literals since the last match, on the best path here.
    litlen: u32,
    reps: [u32; 3],
}

const UNREACHED: Node = Node {
    price: u32::MAX,
    len: 0,
    off: 0,
    litlen: 0,
    reps: [0; 3],
};

/// Parses `src` (one block) into `out`.
///
/// The block is parsed region by region ([`SECTION_BYTES`] each): the tree finds the matches
/// of every position of a region once, then the shortest-path search runs `passes` times over
/// the region, each pass priced by the one before (the first by the previous region's result,
/// or for the first region by a quick double-fast parse of the block).
///
/// Long-distance matches (`long`: in order, not overlapping; empty without `--long`) join the
/// tree's candidates at every position they cover, so the search takes them where they pay.
pub fn parse(src: &[u8], p: &Params, s: &mut Scratch, mut long: &[LongMatch], out: &mut Parse) {
    out.clear();
    let n = src.len();
    if n < 16 {
        out.literals.extend_from_slice(src);
        return;
    }
    // The quick parse that prices the first region also takes 5-byte matches.
    let quick = dfast::Params {
        short_len: 5,
        ..dfast::Params::MAX
    };
    let literal_bits = super::sampled_bits_per_byte(src);
    dfast::parse(src, &quick, literal_bits, &mut s.dfast, long, &mut s.first);
    let first_prices = Prices::per_section(&s.first, n);
    s.head.clear();
    s.head.resize(1 << p.hash_log, NIL);
    s.son.clear();
    s.son.resize(2 * n, NIL);
    s.head3.clear();
    s.head3.resize(1 << HASH3_LOG, NIL);
    let mut tree = Tree {
        src,
        head: &mut s.head,
        head3: &mut s.head3,
        son: &mut s.son,
        hash_log: p.hash_log,
        depth: p.depth,
    };
    // Positions from `limit` on are never searched (4-byte reads stay in bounds).
    let limit = n - 8;
    let mut st = State {
        reps: Reps::default(),
        anchor: 0,
        pos: 0,
    };
    // The next position to insert into the tree.
    let mut inserted = 0usize;
    let mut warm: Option<Prices> = None;
    while st.pos < limit {
        let region = st.pos..(st.pos + SECTION_BYTES).min(limit);
        while inserted < region.start {
            tree.insert(inserted, None);
            inserted += 1;
        }
        s.cache.clear();
        s.starts.clear();
        let mut at = region.start;
        while at < region.end {
            s.starts.push(s.cache.len() as u32);
            let from = s.cache.len();
            tree.insert(at, Some(&mut s.cache));
            while long.first().is_some_and(|m| m.start + m.len <= at) {
                long = &long[1..];
            }
            if let Some(m) = long.first().filter(|m| m.start <= at) {
                // Candidates are in increasing length: the long match goes last, if longest.
                let rest = (m.start + m.len - at) as u32;
                if s.cache[from..].last().is_none_or(|&(len, _)| rest > len) {
                    s.cache.push((rest, m.off as u32));
                }
            }
            // A length can use any match at least that long: keep the nearest for each.
            let mut nearest = u32::MAX;
            for m in s.cache[from..].iter_mut().rev() {
                nearest = nearest.min(m.1);
                m.1 = nearest;
            }
            at += 1;
            // The parser takes a long match whole, so the positions inside it are neither
            // searched nor inserted (runs would otherwise cost a full-length compare each).
            if let Some(&(len, _)) = s.cache[from..].last() {
                if len as usize >= p.sufficient_len {
                    let skip_to = (at - 1 + len as usize).min(region.end);
                    while at < skip_to {
                        s.starts.push(s.cache.len() as u32);
                        at += 1;
                    }
                }
            }
        }
        s.starts.push(s.cache.len() as u32);
        inserted = at;
        // Start from the previous region's final prices where there is one: neighbouring
        // regions are alike, and an optimal parse's statistics price the next one better than
        // the quick parse's do.
        let mut prices = match warm.take() {
            Some(p) => p,
            None => {
                first_prices[(region.start / SECTION_BYTES).min(first_prices.len() - 1)].clone()
            }
        };
        let mut end_state = st;
        for pass in 0..p.passes.max(1) {
            s.region.clear();
            end_state = st;
            let cached = Cached {
                start: region.start,
                cache: &s.cache,
                starts: &s.starts,
            };
            parse_region(
                src,
                p,
                &prices,
                &cached,
                region.end,
                &mut end_state,
                &mut s.nodes,
                &mut s.region,
            );
            if pass + 1 < p.passes {
                prices = Prices::of_run(
                    &s.region.literals,
                    &src[end_state.anchor..end_state.pos],
                    &s.region.seqs,
                );
            }
        }
        out.seqs.extend_from_slice(&s.region.seqs);
        out.literals.extend_from_slice(&s.region.literals);
        warm = Some(Prices::of_run(
            &s.region.literals,
            &src[end_state.anchor..end_state.pos],
            &s.region.seqs,
        ));
        st = end_state;
    }
    out.literals.extend_from_slice(&src[st.anchor..]);
}

/// Where a parse stands: repeat offsets, the start of the pending literals, the next position.
#[derive(Copy, Clone)]
struct State {
    reps: Reps,
    anchor: usize,
    pos: usize,
}

/// The matches the tree found for each position of a region.
struct Cached<'a> {
    start: usize,
    cache: &'a [(u32, u32)],
    starts: &'a [u32],
}

impl Cached<'_> {
    #[inline(always)]
    fn at(&self, pos: usize) -> &[(u32, u32)] {
        let k = pos - self.start;
        &self.cache[self.starts[k] as usize..self.starts[k + 1] as usize]
    }
}

/// Bit prices of every symbol, from a parse's statistics.
#[derive(Clone)]
struct Prices {
    literal: [u32; 256],
    ll: Vec<u32>,
    ml: Vec<u32>,
    of: Vec<u32>,
}

/// −log2(count / total) in price units, with a floor count so unseen symbols stay possible.
fn price_table(counts: &[u32]) -> Vec<u32> {
    let total: f64 = counts.iter().map(|&c| f64::from(c) + 0.5).sum();
    counts
        .iter()
        .map(|&c| ((total / (f64::from(c) + 0.5)).log2() * f64::from(BIT)) as u32)
        .collect()
}

impl Prices {
    fn of_stats(st: &Stats) -> Prices {
        Prices {
            literal: price_table(&st.lit).try_into().unwrap(),
            ll: price_table(&st.ll),
            ml: price_table(&st.ml),
            of: price_table(&st.of),
        }
    }

    /// Prices from one stretch of a parse: its sequences, their literals, and literals pending
    /// after the last sequence.
    fn of_run(literals: &[u8], pending: &[u8], seqs: &[Seq]) -> Prices {
        let mut st = Stats::of(literals, seqs);
        st.add_literals(pending);
        Prices::of_stats(&st)
    }

    /// Prices for each [`SECTION_BYTES`] of a block of `n` bytes, from the statistics of
    /// `parse` there.
    fn per_section(parse: &Parse, n: usize) -> Vec<Prices> {
        let sections = n.div_ceil(SECTION_BYTES).max(1);
        let mut st = vec![Stats::empty(); sections];
        let (mut pos, mut lp) = (0usize, 0usize);
        let section = |pos: usize| (pos / SECTION_BYTES).min(sections - 1);
        for q in &parse.seqs {
            let k = section(pos);
            st[k].add_literals(&parse.literals[lp..lp + q.ll as usize]);
            st[k].add_seq(q);
            pos += (q.ll + q.ml) as usize;
            lp += q.ll as usize;
        }
        st[section(pos)].add_literals(&parse.literals[lp..]);
        st.iter().map(Prices::of_stats).collect()
    }

    #[inline(always)]
    fn lit_len(&self, ll: u32) -> u32 {
        let (c, bits, _) = LL_CODE.code(ll);
        self.ll[c as usize] + bits * BIT
    }

    /// Match length and offset value, without the literal length.
    #[inline(always)]
    fn matched(&self, ml: u32, ov: u32) -> u32 {
        let (mc, mbits, _) = ML_CODE.code(ml - MIN_MATCH as u32);
        let (oc, obits, _) = offset_code(ov);
        self.ml[mc as usize] + mbits * BIT + self.of[oc as usize] + obits * BIT
    }
}

/// The binary-tree match finder over one block.
struct Tree<'a> {
    src: &'a [u8],
    head: &'a mut [u32],
    /// Most recent position of each 3-byte hash, for matches of exactly 3 bytes nearby.
    head3: &'a mut [u32],
    son: &'a mut [u32],
    hash_log: u32,
    depth: u32,
}

impl Tree<'_> {
    #[inline(always)]
    fn hash(&self, pos: usize) -> usize {
        (read_u32(self.src, pos).wrapping_mul(0x9E37_79B1) >> (32 - self.hash_log)) as usize
    }

    /// Inserts `pos` and, when `found` is given, appends its matches in increasing length.
    /// Needs `pos + 4 <= src.len()`.
    fn insert(&mut self, pos: usize, mut found: Option<&mut Vec<(u32, u32)>>) {
        let src = self.src;
        let v3 = read_u32(src, pos) & 0xFF_FFFF;
        let h3 = (v3.wrapping_mul(0x9E37_79B1) >> (32 - HASH3_LOG)) as usize;
        let c3 = self.head3[h3];
        self.head3[h3] = pos as u32;
        if let Some(f) = found.as_deref_mut() {
            if c3 != NIL
                && pos - (c3 as usize) <= MAX_OFFSET3
                && read_u32(src, c3 as usize) & 0xFF_FFFF == v3
            {
                f.push((3, (pos - c3 as usize) as u32));
            }
        }
        let limit = (src.len() - pos).min(MAX_MATCH);
        let h = self.hash(pos);
        let mut cand = self.head[h];
        self.head[h] = pos as u32;
        // Slots still to fill: the subtree of suffixes smaller / larger than ours.
        let (mut smaller, mut larger) = (2 * pos, 2 * pos + 1);
        let (mut len_smaller, mut len_larger) = (0usize, 0usize);
        let mut best = 3usize;
        let mut depth = self.depth;
        while cand != NIL && depth > 0 {
            depth -= 1;
            let c = cand as usize;
            let mut len = len_smaller.min(len_larger);
            if len < limit && src[c + len] == src[pos + len] {
                // Bounded: inside a long repeat (a --long match taken whole, then inserted
                // position by position) an unbounded count would cost the whole repeat each time.
                len += 1 + common_len_upto(src, c + len + 1, pos + len + 1, limit - len - 1)
                    .min(limit - len - 1);
                if len > best {
                    best = len;
                    if let Some(f) = found.as_deref_mut() {
                        f.push((len as u32, (pos - c) as u32));
                    }
                }
                if len >= limit {
                    // Equal as far as we look: the candidate's subtrees become ours.
                    self.son[smaller] = self.son[2 * c];
                    self.son[larger] = self.son[2 * c + 1];
                    return;
                }
            }
            if src[c + len] < src[pos + len] {
                self.son[smaller] = cand;
                smaller = 2 * c + 1;
                cand = self.son[smaller];
                len_smaller = len;
            } else {
                self.son[larger] = cand;
                larger = 2 * c;
                cand = self.son[larger];
                len_larger = len;
            }
        }
        self.son[smaller] = NIL;
        self.son[larger] = NIL;
    }
}

/// One shortest-path pass from `st.pos` up to `end` (or past it, when a long match ends the
/// last segment), appending the sequences to `out` and advancing `st`.
#[allow(clippy::too_many_arguments)]
fn parse_region(
    src: &[u8],
    p: &Params,
    prices: &Prices,
    cached: &Cached<'_>,
    end: usize,
    st: &mut State,
    nodes: &mut Vec<Node>,
    out: &mut Parse,
) {
    while st.pos < end {
        let pos = st.pos;
        let seg_end = (pos + SEGMENT).min(end);
        let width = seg_end - pos;
        nodes.clear();
        nodes.resize(width + 1, UNREACHED);
        let litlen0 = (pos - st.anchor) as u32;
        nodes[0] = Node {
            price: prices.lit_len(litlen0),
            len: 0,
            off: 0,
            litlen: litlen0,
            reps: st.reps.0,
        };
        // Where the backtrack starts: the segment's end, unless a long match ends it early.
        let mut last = Some(width);
        for i in 0..width {
            let at = pos + i;
            let node = nodes[i];
            // Literal (the literal-length price may fall as the run grows: signed step).
            let step = i64::from(prices.literal[src[at] as usize])
                + i64::from(prices.lit_len(node.litlen + 1))
                - i64::from(prices.lit_len(node.litlen));
            let lit_price = (i64::from(node.price) + step).max(0) as u32;
            if lit_price < nodes[i + 1].price {
                nodes[i + 1] = Node {
                    price: lit_price,
                    len: 0,
                    off: 0,
                    litlen: node.litlen + 1,
                    reps: node.reps,
                };
            }
            let matches = cached.at(at);
            let base = node.price + prices.lit_len(0);
            let room = width - i;
            // Repeat offsets.
            let mut long_rep = None;
            for k in 0..3 {
                let off = match (node.litlen > 0, k) {
                    (true, k) => node.reps[k],
                    (false, 2) => node.reps[0].wrapping_sub(1),
                    (false, k) => node.reps[k + 1],
                } as usize;
                if off == 0 || off > at {
                    continue;
                }
                let len = common_len_upto(src, at - off, at, p.sufficient_len);
                if len < MIN_MATCH {
                    continue;
                }
                if len >= p.sufficient_len {
                    long_rep = Some(off);
                    break;
                }
                let ov = Reps(node.reps).encode(off as u32, node.litlen);
                for l in MIN_MATCH..=len.min(room) {
                    relax(
                        nodes,
                        i,
                        l,
                        off as u32,
                        base + prices.matched(l as u32, ov),
                        &node,
                    );
                }
            }
            if let Some(off) = long_rep {
                backtrack(src, nodes, i, pos, st, out);
                let len = common_len(src, at - off, at);
                out.push(src, st.anchor, at, off, len, &mut st.reps);
                st.pos = at + len;
                st.anchor = st.pos;
                last = None;
                break;
            }
            // A long match is taken at once, ending the segment (it may reach past `end`).
            if let Some(&(len, off)) = matches.last().filter(|m| m.0 as usize >= p.sufficient_len) {
                backtrack(src, nodes, i, pos, st, out);
                out.push(src, st.anchor, at, off as usize, len as usize, &mut st.reps);
                st.pos = at + len as usize;
                st.anchor = st.pos;
                last = None;
                break;
            }
            // Tree matches, every length up to each one's own.
            let mut from = MIN_MATCH;
            for &(len, off) in matches {
                let len = (len as usize).min(room);
                let ov = off + 3;
                for l in from..=len {
                    relax(nodes, i, l, off, base + prices.matched(l as u32, ov), &node);
                }
                from = from.max(len + 1);
            }
        }
        if let Some(last) = last {
            backtrack(src, nodes, last, pos, st, out);
            st.pos = seg_end;
        }
    }
}

/// Offers node `i + l` the path "node `i`, then a match of `l` at `off`" for `price`.
#[inline(always)]
fn relax(nodes: &mut [Node], i: usize, l: usize, off: u32, price: u32, from: &Node) {
    let t = &mut nodes[i + l];
    if price < t.price {
        let mut r = Reps(from.reps);
        r.encode(off, from.litlen);
        *t = Node {
            price,
            len: l as u32,
            off,
            litlen: 0,
            reps: r.0,
        };
    }
}

/// Emits the best path to node `last` of the segment starting at `pos` as sequences.
fn backtrack(src: &[u8], nodes: &[Node], last: usize, pos: usize, st: &mut State, out: &mut Parse) {
    // Collect the matches on the path, then emit them in order.
    let mut path: Vec<(usize, usize, usize)> = Vec::new();
    let mut i = last;
    while i > 0 {
        let nd = &nodes[i];
        if nd.len == 0 {
            i -= 1;
        } else {
            let l = nd.len as usize;
            path.push((pos + i - l, nd.off as usize, l));
            i -= l;
        }
    }
    for &(start, off, len) in path.iter().rev() {
        out.push(src, st.anchor, start, off, len, &mut st.reps);
        st.anchor = start + len;
    }
}
