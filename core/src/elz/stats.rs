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
        // Σ c·log2(total / c) = total·log2(total) − Σ c·log2(c), with c·log2(c) from a table.
        fn stream(h: &[u32], table_bits_per_symbol: f64) -> f64 {
            let mut total = 0u32;
            let mut sum = 0.0;
            let mut last = 0;
            for (s, &c) in h.iter().enumerate().filter(|(_, &c)| c > 0) {
                total += c;
                sum += c_log_c(c);
                last = s;
            }
            if total == 0 {
                return 0.0;
            }
            c_log_c(total) - sum + (last + 1) as f64 * table_bits_per_symbol + 16.0
        }
        stream(&self.lit, 4.0)
            + stream(&self.ll, 7.0)
            + stream(&self.ml, 7.0)
            + stream(&self.of, 4.0)
    }
}

/// `c · log2(c)`, from a table for small counts.
fn c_log_c(c: u32) -> f64 {
    const N: usize = 1 << 12;
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        (0..N)
            .map(|c| {
                if c == 0 {
                    0.0
                } else {
                    c as f64 * (c as f64).log2()
                }
            })
            .collect()
    });
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
