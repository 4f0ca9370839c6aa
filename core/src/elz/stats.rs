//! Symbol statistics of a stretch of a parse, shared by the section planner (which splits
//! where an entropy estimate says it pays) and the optimal parser (which prices symbols by
//! them).

use super::{offset_code, Seq, LL_CODE, MIN_MATCH, ML_CODE, OF_ALPHABET};
use crate::entropy::histogram;

/// Histograms of the literal-length, match-length and offset codes, indexed by code masked to
/// [`CODE_COUNTS`] entries (every alphabet is smaller), so counting needs no bounds check.
pub(super) type CodeCounts = [[u32; CODE_COUNTS]; 3];
pub(super) const CODE_COUNTS: usize = 128;
const _: () = assert!(
    LL_CODE.alphabet() <= CODE_COUNTS
        && ML_CODE.alphabet() <= CODE_COUNTS
        && OF_ALPHABET <= CODE_COUNTS
);

/// Histograms of one stretch of a parse: literal bytes and the three code streams.
#[derive(Clone)]
pub(super) struct Stats {
    pub lit: Vec<u32>,
    pub ll: Vec<u32>,
    pub ml: Vec<u32>,
    pub of: Vec<u32>,
}

impl Stats {
    pub fn empty() -> Self {
        Stats {
            lit: vec![0; 256],
            ll: vec![0; LL_CODE.alphabet()],
            ml: vec![0; ML_CODE.alphabet()],
            of: vec![0; OF_ALPHABET],
        }
    }

    pub fn of(literals: &[u8], seqs: &[Seq]) -> Self {
        let mut st = Stats::empty();
        st.add_literals(literals);
        for q in seqs {
            st.add_seq(q);
        }
        st
    }

    /// The statistics of `literals` and of the sequences whose codes `counts` counted.
    pub fn of_counts(literals: &[u8], counts: &CodeCounts) -> Self {
        let mut st = Stats::empty();
        st.add_literals(literals);
        for (h, c) in [&mut st.ll, &mut st.ml, &mut st.of].into_iter().zip(counts) {
            let n = h.len();
            h.copy_from_slice(&c[..n]);
        }
        st
    }

    pub fn add_literals(&mut self, literals: &[u8]) {
        for (x, h) in self.lit.iter_mut().zip(histogram(literals)) {
            *x += h;
        }
    }

    pub fn add_seq(&mut self, q: &Seq) {
        self.ll[LL_CODE.code(q.ll).0 as usize] += 1;
        self.ml[ML_CODE.code(q.ml - MIN_MATCH as u32).0 as usize] += 1;
        self.of[offset_code(q.ov).0 as usize] += 1;
    }

    /// Adds (`sign` 1) or removes (`sign` −1) another stretch's counts.
    pub fn add(&mut self, o: &Stats, sign: i64) {
        for (a, b) in [
            (&mut self.lit, &o.lit),
            (&mut self.ll, &o.ll),
            (&mut self.ml, &o.ml),
            (&mut self.of, &o.of),
        ] {
            for (x, &y) in a.iter_mut().zip(b.iter()) {
                *x = (i64::from(*x) + sign * i64::from(y)) as u32;
            }
        }
    }

    /// Estimated coded bits: order-0 entropy of each stream plus its table description (a
    /// Huffman table, for literals and offset codes, spends 4 bits on every symbol up to the
    /// last present one; a tANS table, for the length codes, about 7).
    pub fn cost(&self) -> f64 {
        let t = c_log_c_table();
        stream(&self.lit, t, 4.0)
            + stream(&self.ll, t, 7.0)
            + stream(&self.ml, t, 7.0)
            + stream(&self.of, t, 4.0)
    }
}

/// The estimated bits of one stream whose histogram is `h`, its table included:
/// Σ c·log2(total / c) = total·log2(total) − Σ c·log2(c), with c·log2(c) from table `t`.
///
/// Every entry is taken, zero or not (a branch per symbol on whether it is present missed
/// often), into four running sums (one sum is a chain of dependent float additions): the
/// section planner prices thousands of candidate splits a block.
fn stream(h: &[u32], t: &CLogC, table_bits_per_symbol: f64) -> f64 {
    let mut total = 0u32;
    let mut sums = [0.0f64; 4];
    let mut last = 0;
    for (k, quad) in h.chunks(4).enumerate() {
        for (j, &c) in quad.iter().enumerate() {
            total += c;
            sums[j] += c_log_c(t, c);
            last = if c > 0 { 4 * k + j } else { last };
        }
    }
    if total == 0 {
        return 0.0;
    }
    let sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    c_log_c(t, total) - sum + (last + 1) as f64 * table_bits_per_symbol + 16.0
}

/// `c · log2(c)` for `c` below [`C_LOG_C_TABLE`].
type CLogC = [f64; C_LOG_C_TABLE];
const C_LOG_C_TABLE: usize = 1 << 12;

fn c_log_c_table() -> &'static CLogC {
    static TABLE: std::sync::OnceLock<Box<CLogC>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0.0; C_LOG_C_TABLE]);
        for (c, v) in t.iter_mut().enumerate().skip(1) {
            *v = c as f64 * (c as f64).log2();
        }
        t
    })
}

/// `c · log2(c)`, from the table for small counts.
#[inline(always)]
fn c_log_c(t: &CLogC, c: u32) -> f64 {
    match t.get(c as usize) {
        Some(&v) => v,
        None => {
            // From the top 12 bits of `c`: log2(c) = shift + log2(c >> shift), to within
            // log2(1 + 2^-11) bits, without a libm call (this runs for every candidate split).
            let shift = 32 - c.leading_zeros() - 12;
            let top = c >> shift;
            f64::from(c) * (f64::from(shift) + t[top as usize] / f64::from(top))
        }
    }
}
