//! tANS (finite state entropy) coding of small-alphabet symbol streams: the literal-length,
//! match-length and offset codes of entropy LZ blocks (`docs/FORMAT.md` §5.3).
//!
//! A table of 2^`log` states is described by normalized counts that sum to 2^`log`. Symbols
//! are coded in four interleaved lanes (position mod 4), each with its own state, so a decoder
//! has four independent chains. The encoder runs backwards over the symbols and records
//! each symbol's output bits; it then writes the two final states and the bits in decode order,
//! so that the stream reads forwards like every other glyd bit stream.

use super::bits::{BitReader, BitWriter};
use super::EntropyError;

/// Smallest and largest table log.
pub const MIN_LOG: u32 = 5;
pub const MAX_LOG: u32 = 11;
/// Interleaved lanes.
const LANES: usize = 4;

/// A table's normalized counts: every present symbol has at least 1, and they sum to 2^log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    pub log: u32,
    pub counts: Vec<u32>,
}

/// Normalizes a histogram (at least two symbols present) to a table of about
/// `log2(symbols)` − 2 bits, within [`MIN_LOG`]..=`max_log`.
pub fn normalize(freq: &[u32], max_log: u32) -> Counts {
    let total: u64 = freq.iter().map(|&f| u64::from(f)).sum();
    let present = freq.iter().filter(|&&f| f > 0).count();
    debug_assert!(present >= 2 && max_log <= MAX_LOG);
    let want = (64 - total.leading_zeros()).saturating_sub(2);
    let min_for_symbols = (usize::BITS - (present - 1).leading_zeros()) + 1;
    let log = want
        .clamp(MIN_LOG, max_log)
        .max(min_for_symbols)
        .min(MAX_LOG);
    let size = 1u64 << log;
    let mut counts: Vec<u32> = freq
        .iter()
        .map(|&f| {
            if f == 0 {
                0
            } else {
                ((u64::from(f) * size + total / 2) / total).max(1) as u32
            }
        })
        .collect();
    // Rounding leaves the sum a little off; take from or give to the symbols where it costs
    // least, largest counts first.
    let mut sum: i64 = counts.iter().map(|&c| i64::from(c)).sum();
    let mut order: Vec<usize> = (0..counts.len()).filter(|&s| freq[s] > 0).collect();
    order.sort_by_key(|&s| std::cmp::Reverse(counts[s]));
    while sum != size as i64 {
        let mut moved = false;
        for &s in &order {
            if sum > size as i64 && counts[s] > 1 {
                counts[s] -= 1;
                sum -= 1;
                moved = true;
            } else if sum < size as i64 {
                counts[s] += 1;
                sum += 1;
                moved = true;
            }
            if sum == size as i64 {
                break;
            }
        }
        debug_assert!(moved);
    }
    Counts { log, counts }
}

/// Writes a table description: `log` − 5 and the last symbol in a byte pair, then each count
/// but the last as an Elias gamma code of count + 1 (the last is what remains), as a bit
/// stream padded to a byte.
pub fn write_counts(c: &Counts, out: &mut Vec<u8>) {
    let last = c.counts.iter().rposition(|&x| x > 0).unwrap_or(0);
    out.push((c.log - MIN_LOG) as u8);
    out.push(last as u8);
    let mut w = BitWriter::new();
    for &x in &c.counts[..last] {
        // Elias gamma of count + 1, as `n` zero bits, a one, then the `n` bits below the top.
        let v = x + 1;
        let n = 31 - v.leading_zeros();
        w.put(1 << n, n + 1);
        w.put(u64::from(v) & ((1 << n) - 1), n);
    }
    out.extend_from_slice(&w.finish());
}

/// Reads a table description at `*pos` for an alphabet of `alphabet` symbols.
pub fn read_counts(src: &[u8], pos: &mut usize, alphabet: usize) -> Result<Counts, EntropyError> {
    let bad = |m| EntropyError(m);
    let head = src
        .get(*pos..*pos + 2)
        .ok_or(bad("tANS table is truncated"))?;
    let log = u32::from(head[0]) + MIN_LOG;
    let last = head[1] as usize;
    if log > MAX_LOG {
        return Err(bad("tANS table log above 11"));
    }
    if last >= alphabet {
        return Err(bad("tANS table names a symbol outside the alphabet"));
    }
    *pos += 2;
    let mut r = BitReader::new(&src[*pos..]);
    let mut remaining = 1u32 << log;
    let mut counts = vec![0u32; last + 1];
    for x in counts.iter_mut().take(last) {
        r.refill();
        let n = (r.peek(16) as u32 | 1 << 16).trailing_zeros();
        if n > MAX_LOG {
            return Err(bad("tANS count is not a valid gamma code"));
        }
        r.consume(n + 1);
        let v = ((1u32 << n) | r.get(n) as u32) - 1;
        if v > remaining {
            return Err(bad("tANS counts exceed the table size"));
        }
        *x = v;
        remaining -= v;
    }
    if remaining == 0 {
        return Err(bad("tANS table leaves no state for its last symbol"));
    }
    counts[last] = remaining;
    let used = r
        .finish_padded()
        .map_err(|_| bad("tANS table is truncated or badly padded"))?;
    *pos += used;
    if counts.iter().filter(|&&x| x > 0).count() < 2 {
        return Err(bad("tANS table with fewer than two symbols"));
    }
    Ok(Counts { log, counts })
}

/// The state order of the table: symbol of each state, spread so that each symbol's states
/// are scattered across the table. The step is odd, so it visits every state once.
fn spread(c: &Counts) -> Vec<u8> {
    let mut table = Vec::new();
    spread_into(c, &mut table);
    table
}

fn spread_into(c: &Counts, table: &mut Vec<u8>) {
    let size = 1usize << c.log;
    let mask = size - 1;
    let step = (size >> 1) + (size >> 3) + 3;
    // The symbols in order, each as many times as its count; the k-th of them goes to state
    // k * step (mod size). Filled runs, then one loop of stores at independent positions:
    // a running position inside a loop per symbol mispredicts each symbol's last turn (a
    // table is rebuilt for every section of a block, so this is decode time).
    let mut order = [0u8; 1 << MAX_LOG];
    let mut k = 0;
    for (s, &n) in c.counts.iter().enumerate() {
        let end = (k + n as usize).min(size);
        order[k..end].fill(s as u8);
        k = end;
    }
    table.clear();
    table.resize(size, 0);
    for (i, &s) in order[..size].iter().enumerate() {
        table[i.wrapping_mul(step) & mask] = s;
    }
}

/// Encoder tables.
pub struct Encoder {
    log: u32,
    /// Next state (plus table size) by `offset[s] + (x >> bits)`. Always 2^[`MAX_LOG`] entries,
    /// so an index masked with 2^MAX_LOG − 1 needs no bounds check.
    next: Box<[u16; 1 << MAX_LOG]>,
    /// Per symbol (indexed by the byte, so without bounds checks): see [`SymbolCode`].
    sym: Box<[SymbolCode; 256]>,
}

/// How a symbol moves a state: the bits it outputs are
/// `(x + delta_bits) >> 16`, and `offset` places `x >> bits` among its `next` entries.
#[derive(Copy, Clone, Default)]
struct SymbolCode {
    delta_bits: u32,
    offset: i32,
    /// A state that decodes to this symbol: starts a lane without output bits.
    first_state: u32,
}

/// Bits of a chunk entry in [`Encoder::encode`]'s scratch that hold its bit count.
const CHUNK_BITS_SHIFT: u32 = 56;

impl Encoder {
    pub fn new(c: &Counts) -> Self {
        let size = 1u32 << c.log;
        let spread = spread(c);
        let n = c.counts.len();
        let mut cumulative = vec![0u32; n + 1];
        for s in 0..n {
            cumulative[s + 1] = cumulative[s] + c.counts[s];
        }
        let mut next = Box::new([0u16; 1 << MAX_LOG]);
        let mut fill = cumulative.clone();
        let mut sym = Box::new([SymbolCode::default(); 256]);
        for (u, &s) in spread.iter().enumerate() {
            let s = s as usize;
            if fill[s] == cumulative[s] {
                sym[s].first_state = size + u as u32;
            }
            next[fill[s] as usize] = (size + u as u32) as u16;
            fill[s] += 1;
        }
        for s in 0..n {
            let cnt = c.counts[s];
            if cnt == 0 {
                continue;
            }
            // Bits out for state X: the `b` with X >> b in [cnt, 2 cnt). With
            // max = log - floor(log2(cnt - 1 or 1)), `b` is max when X >= cnt << max, else max - 1.
            let max_bits = if cnt == 1 {
                c.log
            } else {
                c.log - (31 - (cnt - 1).leading_zeros())
            };
            let min_state_plus = cnt << max_bits;
            sym[s].offset = cumulative[s] as i32 - cnt as i32;
            sym[s].delta_bits = (max_bits << 16).wrapping_sub(min_state_plus);
        }
        Self {
            log: c.log,
            next,
            sym,
        }
    }

    /// Codes symbol `s` from state `*x`: returns its output bits and their count.
    #[inline(always)]
    fn step(&self, x: &mut u32, s: u8) -> (u64, u32) {
        let code = self.sym[s as usize];
        let nb = x.wrapping_add(code.delta_bits) >> 16;
        let bits = *x & ((1 << nb) - 1);
        let idx = ((*x >> nb) as i32).wrapping_add(code.offset) as usize;
        *x = u32::from(self.next[idx & ((1 << MAX_LOG) - 1)]);
        (u64::from(bits), nb)
    }

    /// Appends the coded stream of `symbols` (every one present in the table) to `out`.
    ///
    /// Runs backwards over the symbols in chunks of four (one per lane, the lanes' states in
    /// registers), packing each chunk's bits in decode order into one scratch word (at most
    /// 4 × 11 bits, with the count in the top byte); a forward pass then writes one word per
    /// chunk.
    #[inline(always)]
    pub fn encode(&self, symbols: &[u8], scratch: &mut Vec<u64>, out: &mut Vec<u8>) {
        let n = symbols.len();
        // The last symbol of each lane starts it; symbols before `coded` output bits.
        let coded = n.saturating_sub(LANES);
        let mut state = [0u32; LANES];
        for (i, &s) in symbols.iter().enumerate().skip(coded) {
            state[i % LANES] = self.sym[s as usize].first_state;
        }
        let full = coded / LANES;
        // The part chunk after the full ones (symbols `LANES * full..coded`), coded first.
        let (mut tail, mut tail_bits) = (0u64, 0u32);
        for i in (LANES * full..coded).rev() {
            let (b, nb) = self.step(&mut state[i % LANES], symbols[i]);
            tail = tail << nb | b;
            tail_bits += nb;
        }
        scratch.clear();
        scratch.resize(full, 0);
        let [mut x0, mut x1, mut x2, mut x3] = state;
        let chunks = symbols[..LANES * full].chunks_exact(LANES);
        for (q, word) in chunks.zip(scratch.iter_mut()).rev() {
            let (b3, n3) = self.step(&mut x3, q[3]);
            let (b2, n2) = self.step(&mut x2, q[2]);
            let (b1, n1) = self.step(&mut x1, q[1]);
            let (b0, n0) = self.step(&mut x0, q[0]);
            let v = ((b3 << n2 | b2) << n1 | b1) << n0 | b0;
            *word = v | u64::from(n0 + n1 + n2 + n3) << CHUNK_BITS_SHIFT;
        }
        let state = [x0, x1, x2, x3];
        let mut w = BitWriter::with_vec(std::mem::take(out));
        w.reserve(n * self.log as usize / 8 + 8);
        let size = 1u32 << self.log;
        for s in state.iter().take(n.min(LANES)) {
            w.put(u64::from(s - size), self.log);
        }
        for &word in scratch.iter() {
            let bits = (word >> CHUNK_BITS_SHIFT) as u32;
            w.put(word & ((1 << CHUNK_BITS_SHIFT) - 1), bits);
        }
        w.put(tail, tail_bits);
        *out = w.finish();
    }
}

/// One decode table entry, packed in one word that a transition loads once: bits 0..8 are
/// the bits the transition reads, 8..16 the symbol, 16..32 the next state's base.
#[derive(Copy, Clone, Default)]
struct Entry(u32);

impl Entry {
    fn new(base: u32, sym: u8, bits: u32) -> Self {
        Entry(base << 16 | u32::from(sym) << 8 | bits)
    }

    #[inline(always)]
    fn bits(self) -> u32 {
        self.0 & 0xFF
    }

    #[inline(always)]
    fn sym(self) -> u8 {
        (self.0 >> 8) as u8
    }

    #[inline(always)]
    fn base(self) -> usize {
        (self.0 >> 16) as usize
    }
}

/// Decoder tables; [`Decoder::rebuild`] reuses their memory for the next table.
pub struct Decoder {
    log: u32,
    /// Always 2^[`MAX_LOG`] entries, of which the first 2^`log` are the table: a state is
    /// below 2^`log`, so masking it with the constant 2^MAX_LOG − 1 indexes without a bounds
    /// check or a register for the mask.
    table: Box<[Entry; 1 << MAX_LOG]>,
    spread: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            log: MIN_LOG,
            table: Box::new([Entry::default(); 1 << MAX_LOG]),
            spread: Vec::new(),
        }
    }
}

impl Decoder {
    pub fn new(c: &Counts) -> Self {
        let mut d = Decoder::default();
        d.rebuild(c);
        d
    }

    /// Replaces the tables with those of `c`.
    pub fn rebuild(&mut self, c: &Counts) {
        let size = 1u32 << c.log;
        spread_into(c, &mut self.spread);
        // Indexed by a byte: no bounds checks in the loops below (a table is rebuilt for
        // every dense tensor chunk, so this is decode time).
        let mut next = [0u32; 256];
        next[..c.counts.len()].copy_from_slice(&c.counts);
        for (entry, &s) in self.table.iter_mut().zip(&self.spread) {
            let x = next[s as usize];
            next[s as usize] += 1;
            let bits = c.log - (31 - x.leading_zeros());
            *entry = Entry::new((x << bits) - size, s, bits);
        }
        self.log = c.log;
    }

    /// Where the encoder starts a lane that ends on `sym`: the symbol's first state in the
    /// spread. Looked up for the four final states only, rather than tabulated on every
    /// rebuild (a dense tensor chunk rebuilds its table every 32 K symbols).
    fn first_state(&self, sym: u8) -> usize {
        self.spread
            .iter()
            .position(|&s| s == sym)
            .unwrap_or(usize::MAX)
    }

    /// Decodes `out.len()` symbols from `src`, which must be consumed exactly.
    pub fn decode(&self, src: &[u8], out: &mut [u8]) -> Result<(), EntropyError> {
        let this = self;
        // FAST PATH: BMI2's shifts by a register (`shrx`, `bzhi`) need neither `cl` nor a
        // mask built per symbol: fewer instructions and registers in the four-lane chain.
        crate::multiversion!(
            fn(this: &Decoder, src: &[u8], out: &mut [u8]) -> Result<(), EntropyError>
                => this.decode_lanes(src, out);
            "bmi2" if crate::cpu::has_bmi2()
        )
    }

    /// Decodes two streams, `a` (coded with this table) into `out_a` and `b` (coded with
    /// `b_table`, which may be this one) into `out_b`, in one loop: the streams' eight lanes
    /// and two bit readers are independent chains, where one stream's four lanes share a bit
    /// reader whose every read waits on the one before. Each stream must be consumed exactly,
    /// as in [`Decoder::decode`].
    pub fn decode_two(
        &self,
        a: &[u8],
        out_a: &mut [u8],
        b_table: &Decoder,
        b: &[u8],
        out_b: &mut [u8],
    ) -> Result<(), EntropyError> {
        let this = self;
        crate::multiversion!(
            fn(this: &Decoder, a: &[u8], out_a: &mut [u8], b_table: &Decoder, b: &[u8], out_b: &mut [u8])
                -> Result<(), EntropyError> => this.decode_two_lanes(a, out_a, b_table, b, out_b);
            "bmi2" if crate::cpu::has_bmi2()
        )
    }

    #[inline(always)]
    fn decode_lanes(&self, src: &[u8], out: &mut [u8]) -> Result<(), EntropyError> {
        let mut lanes = Lanes::start(self, src, out.len());
        let t = &*self.table;
        let mut done = 0;
        while done < lanes.rounds() {
            let batch = lanes.safe_rounds().min(lanes.rounds() - done);
            if batch == 0 {
                break;
            }
            let (base, mut bit) = (lanes.data.as_ptr(), lanes.bit);
            let [mut s0, mut s1, mut s2, mut s3] = lanes.state;
            for c in out[4 * done..4 * (done + batch)].chunks_exact_mut(4) {
                // SAFETY: `safe_rounds` bounds every load of the batch inside the data.
                let mut acc = unsafe { load_bits(base, bit) };
                c[0] = transition(t, &mut s0, &mut acc, &mut bit);
                c[1] = transition(t, &mut s1, &mut acc, &mut bit);
                c[2] = transition(t, &mut s2, &mut acc, &mut bit);
                c[3] = transition(t, &mut s3, &mut acc, &mut bit);
            }
            (lanes.state, lanes.bit) = ([s0, s1, s2, s3], bit);
            done += batch;
        }
        lanes.finish(self, out, 4 * done)
    }

    #[inline(always)]
    fn decode_two_lanes(
        &self,
        a: &[u8],
        out_a: &mut [u8],
        b_table: &Decoder,
        b: &[u8],
        out_b: &mut [u8],
    ) -> Result<(), EntropyError> {
        let mut la = Lanes::start(self, a, out_a.len());
        let mut lb = Lanes::start(b_table, b, out_b.len());
        let (ta, tb) = (&*self.table, &*b_table.table);
        let both = la.rounds().min(lb.rounds());
        let mut done = 0;
        while done < both {
            let batch = la.safe_rounds().min(lb.safe_rounds()).min(both - done);
            if batch == 0 {
                break;
            }
            let (base_a, mut bit_a) = (la.data.as_ptr(), la.bit);
            let (base_b, mut bit_b) = (lb.data.as_ptr(), lb.bit);
            let [mut a0, mut a1, mut a2, mut a3] = la.state;
            let [mut b0, mut b1, mut b2, mut b3] = lb.state;
            let span = 4 * done..4 * (done + batch);
            let rounds = out_a[span.clone()]
                .chunks_exact_mut(4)
                .zip(out_b[span].chunks_exact_mut(4));
            for (ca, cb) in rounds {
                // SAFETY: `safe_rounds` bounds every load of the batch inside the data.
                let (mut x, mut y) =
                    unsafe { (load_bits(base_a, bit_a), load_bits(base_b, bit_b)) };
                ca[0] = transition(ta, &mut a0, &mut x, &mut bit_a);
                cb[0] = transition(tb, &mut b0, &mut y, &mut bit_b);
                ca[1] = transition(ta, &mut a1, &mut x, &mut bit_a);
                cb[1] = transition(tb, &mut b1, &mut y, &mut bit_b);
                ca[2] = transition(ta, &mut a2, &mut x, &mut bit_a);
                cb[2] = transition(tb, &mut b2, &mut y, &mut bit_b);
                ca[3] = transition(ta, &mut a3, &mut x, &mut bit_a);
                cb[3] = transition(tb, &mut b3, &mut y, &mut bit_b);
            }
            (la.state, la.bit) = ([a0, a1, a2, a3], bit_a);
            (lb.state, lb.bit) = ([b0, b1, b2, b3], bit_b);
            done += batch;
        }
        la.finish(self, out_a, 4 * done)?;
        lb.finish(b_table, out_b, 4 * done)
    }
}

/// States are below 2^log ≤ 2^[`MAX_LOG`] and the table always has 2^MAX_LOG entries, so
/// masking a state with this constant indexes without a bounds check or a register for it.
const STATE_MASK: usize = (1 << MAX_LOG) - 1;

/// Most bits one round (a transition of each lane) reads.
const ROUND_BITS: usize = LANES * MAX_LOG as usize;

/// One state transition: the state's symbol; the lane moves to its next state, taking its
/// bits from `acc`, which holds the stream from bit `*bit` on.
#[inline(always)]
fn transition(t: &[Entry; 1 << MAX_LOG], s: &mut usize, acc: &mut u64, bit: &mut usize) -> u8 {
    let e = t[*s & STATE_MASK];
    let n = e.bits();
    *s = e.base() + (*acc & ((1u64 << n) - 1)) as usize;
    *acc >>= n;
    *bit += n as usize;
    e.sym()
}

/// FAST PATH: the stream from bit `bit` on, at least 57 bits of it, with one unaligned load.
/// A stream position is one number (the bits consumed), rather than a buffer, a fill level
/// and a byte position: fewer registers, so two streams' loops fit in them.
///
/// # Safety
///
/// The eight bytes from byte `bit / 8` must be inside the stream.
#[inline(always)]
unsafe fn load_bits(base: *const u8, bit: usize) -> u64 {
    // SAFETY: the caller keeps the eight bytes inside the stream.
    let word = unsafe { std::ptr::read_unaligned(base.add(bit >> 3).cast::<u64>()) };
    u64::from_le(word) >> (bit & 7)
}

/// One stream being decoded: its bits consumed so far and its lanes' states.
struct Lanes<'a> {
    data: &'a [u8],
    bit: usize,
    state: [usize; LANES],
    /// Symbols in the stream.
    n: usize,
}

impl<'a> Lanes<'a> {
    /// Reads the initial states of a stream of `n` symbols.
    #[inline(always)]
    fn start(d: &Decoder, data: &'a [u8], n: usize) -> Self {
        let mut r = BitReader::new(data);
        let mut state = [0usize; LANES];
        for s in state.iter_mut().take(n.min(LANES)) {
            *s = r.get(d.log) as usize;
        }
        let bit = r.consumed_bits() as usize;
        Lanes {
            data,
            bit,
            state,
            n,
        }
    }

    /// Whole rounds before the lanes' last symbols.
    #[inline(always)]
    fn rounds(&self) -> usize {
        self.n.saturating_sub(LANES) / LANES
    }

    /// Rounds from here whose loads (eight bytes at the round's first bit) all lie inside the
    /// stream, however many bits each round takes.
    #[inline(always)]
    fn safe_rounds(&self) -> usize {
        (8 * self.data.len())
            .checked_sub(64 + self.bit)
            .map_or(0, |room| room / ROUND_BITS + 1)
    }

    /// Decodes the symbols from `done` on with a checked reader (the rounds near the end of the
    /// stream, then each lane's last symbol), and checks the final states and the stream's end.
    fn finish(mut self, d: &Decoder, out: &mut [u8], done: usize) -> Result<(), EntropyError> {
        let t = &*d.table;
        let mut r = BitReader::at(self.data, self.bit);
        let body = self.n.saturating_sub(LANES);
        for (i, x) in out.iter_mut().enumerate().skip(done) {
            let s = &mut self.state[i % LANES];
            let e = t[*s & STATE_MASK];
            *x = e.sym();
            if i < body {
                r.refill();
                *s = e.base() + r.get(e.bits()) as usize;
            } else if *s != d.first_state(e.sym()) {
                // Each lane ends where the encoder started it: a canonical state, which
                // catches corrupt bits that would otherwise decode to the same symbols.
                return Err(EntropyError(
                    "tANS stream ends in a state its encoder never starts from",
                ));
            }
        }
        r.finish().map_err(EntropyError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(symbols: &[u8], alphabet: usize) {
        let mut freq = vec![0u32; alphabet];
        for &s in symbols {
            freq[s as usize] += 1;
        }
        let c = normalize(&freq, MAX_LOG);
        assert_eq!(c.counts.iter().sum::<u32>(), 1 << c.log);
        let mut desc = Vec::new();
        write_counts(&c, &mut desc);
        let mut p = 0;
        let back = read_counts(&desc, &mut p, alphabet).unwrap();
        assert_eq!(p, desc.len());
        assert_eq!(back.counts[..], c.counts[..back.counts.len()]);
        let mut coded = Vec::new();
        Encoder::new(&c).encode(symbols, &mut Vec::new(), &mut coded);
        let mut out = vec![0u8; symbols.len()];
        let decoder = Decoder::new(&back);
        decoder.decode(&coded, &mut out).unwrap();
        assert_eq!(out, symbols);
        // The same symbols as two streams of every split, decoded together.
        for cut in [0, 1, 4, symbols.len() / 3, symbols.len() / 2, symbols.len()] {
            let (a, b) = symbols.split_at(cut.min(symbols.len()));
            let (mut ca, mut cb) = (Vec::new(), Vec::new());
            Encoder::new(&c).encode(a, &mut Vec::new(), &mut ca);
            Encoder::new(&c).encode(b, &mut Vec::new(), &mut cb);
            let (mut oa, mut ob) = (vec![0u8; a.len()], vec![0u8; b.len()]);
            decoder
                .decode_two(&ca, &mut oa, &decoder, &cb, &mut ob)
                .unwrap();
            assert_eq!((&oa[..], &ob[..]), (a, b), "cut {cut}");
            if !cb.is_empty() {
                let last = cb.len() - 1;
                cb[last] ^= 0x10;
                let _ = decoder.decode_two(&ca, &mut oa, &decoder, &cb, &mut ob);
                assert!(decoder
                    .decode_two(&ca, &mut oa, &decoder, &cb[..last], &mut ob)
                    .is_err());
            }
        }
    }

    #[test]
    fn round_trips_skewed_and_flat_streams() {
        let mut x = 12345u64;
        let mut skew = Vec::new();
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) as u32;
            skew.push(if r % 10 < 8 { 0 } else { (r % 40) as u8 });
        }
        for n in [2, 3, 4, 5, 6, 7, 9, 100, 10_000] {
            let mut s = skew[..n].to_vec();
            s[0] = 1;
            s[1] = 0;
            round_trip(&s, 40);
        }
        let flat: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 72) as u8).collect();
        round_trip(&flat, 72);
    }

    /// The spread is the format's (FORMAT.md, "State spread"): symbols in order, each count
    /// times, at positions 0, step, 2 step, ... mod the table size.
    #[test]
    fn spread_walks_the_table_by_step() {
        let mut x = 11u64;
        for log in MIN_LOG..=MAX_LOG {
            for symbols in [2usize, 3, 7, 28, 52] {
                let size = 1u32 << log;
                if symbols > size as usize {
                    continue;
                }
                // Random counts of at least 1 each, summing to the table size.
                let mut counts = vec![1u32; symbols];
                for _ in symbols as u32..size {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    counts[(x >> 33) as usize % symbols] += 1;
                }
                let c = Counts { log, counts };
                let (size, step) = (
                    size as usize,
                    (size >> 1) as usize + (size >> 3) as usize + 3,
                );
                let mut want = vec![0u8; size];
                let mut p = 0;
                for (s, &n) in c.counts.iter().enumerate() {
                    for _ in 0..n {
                        want[p] = s as u8;
                        p = (p + step) % size;
                    }
                }
                assert_eq!(spread(&c), want, "log {log}, {symbols} symbols");
            }
        }
    }

    #[test]
    fn rejects_bad_descriptions() {
        let mut p = 0;
        assert!(read_counts(&[7, 1, 0], &mut p, 40).is_err()); // log 12
        let mut p = 0;
        assert!(read_counts(&[0, 50, 0], &mut p, 40).is_err()); // symbol 50
        let mut p = 0;
        assert!(read_counts(&[0, 1, 32], &mut p, 40).is_err()); // first takes all 32
        let mut p = 0;
        assert!(read_counts(&[0, 1], &mut p, 40).is_err()); // truncated
    }
}
