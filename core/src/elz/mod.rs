//! `elz`, entropy-coded LZ: the block format (block type 3) behind `--max` and `--ultra`. LZ77
//! sequences with repeat offsets, literals coded with Huffman, and the sequences'
//! literal-length, match-length and offset *codes* coded with tANS or Huffman, their low bits
//! in a raw stream.
//! `docs/FORMAT.md` §6 is the full specification.
//!
//! A parser ([`dfast`] for `--max`, [`optimal`] for `--ultra`) turns a block into
//! [`Seq`]uences and literals; [`encode`] writes them; [`decode`] reads them back in three
//! passes: literals into a buffer, the three code streams into arrays, then the sequence pass,
//! which reads each sequence's fields from its codes and extra bits ([`sequence_fields`]), resolves its
//! repeat offset and copies.

mod decode;
pub mod dfast;
mod encode;
pub mod ldm;
pub mod optimal;
#[cfg(target_arch = "x86_64")]
mod resolve;
mod sequence_fields;
mod stats;

pub use decode::{decode, decode_reporting};
pub use encode::{write_payload, PayloadScratch};

use std::cell::RefCell;

/// Each thread's encoder memory, kept between blocks.
#[derive(Default)]
struct Scratch {
    tables: dfast::Tables,
    optimal: optimal::Scratch,
    parse: dfast::Parse,
    payload: PayloadScratch,
    ldm: ldm::Scratch,
    long: Vec<ldm::LongMatch>,
    /// A block's payload as literals alone, to compare with its LZ payload.
    literal_only: Vec<u8>,
}

/// Which parser an entropy level runs, with its settings.
#[derive(Copy, Clone, Debug)]
pub enum Parser {
    /// `--max`: double-fast.
    Dfast(dfast::Params),
    /// `--ultra`: binary tree + optimal parse.
    Optimal(optimal::Params),
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Compresses `src` (one block) as an entropy LZ payload with `parser`, appended to `out`;
/// with `long`, the long-distance matcher ([`ldm`]) runs first and the parser takes its matches.
pub fn compress_into(src: &[u8], parser: &Parser, long: bool, out: &mut Vec<u8>) {
    SCRATCH.with(|s| {
        let s = &mut *s.borrow_mut();
        s.long.clear();
        if long {
            ldm::find(src, &mut s.ldm, &mut s.long);
        }
        let literal_bits = sampled_bits_per_byte(src);
        match parser {
            Parser::Dfast(p) => {
                dfast::parse(src, p, literal_bits, &mut s.tables, &s.long, &mut s.parse)
            }
            Parser::Optimal(p) => optimal::parse(src, p, &mut s.optimal, &s.long, &mut s.parse),
        }
        let start = out.len();
        write_payload(&s.parse.literals, &s.parse.seqs, &mut s.payload, out);
        // Low-entropy data (integer byte planes, small dictionary ids) is full of short
        // matches that cost more than the literals they replace, and slow the decoder: where
        // a sample says the block's bytes alone might code smaller, try that, and keep it if
        // so. (A parse without matches is that payload already.)
        let lz = out.len() - start;
        if !s.parse.seqs.is_empty() && literals_may_pay(literal_bits, src.len(), lz) {
            s.literal_only.clear();
            write_payload(src, &[], &mut s.payload, &mut s.literal_only);
            if s.literal_only.len() < lz {
                out.truncate(start);
                out.extend_from_slice(&s.literal_only);
            }
        }
    });
}

/// Whether a block of `len` bytes whose sample has `literal_bits` bits per byte
/// ([`sampled_bits_per_byte`]) might take fewer than `lz` bytes coded as literals alone, one
/// Huffman code for the block, with a margin of a tenth for the sample's error.
fn literals_may_pay(literal_bits: Option<f64>, len: usize, lz: usize) -> bool {
    // One byte value throughout the sample: literals alone are an RLE section, if the rest
    // agrees; the LZ parse already codes such a block in a few bytes.
    literal_bits.is_some_and(|bits| bits / 8.0 * len as f64 * 0.9 < lz as f64)
}

/// The order-0 entropy of `src` in bits per byte, estimated from a sample (one 64-byte line in
/// 16, or 64 KiB of lines spread over a bigger block); `None` where the sample holds one byte
/// value.
pub(crate) fn sampled_bits_per_byte(src: &[u8]) -> Option<f64> {
    const LINE: usize = 64;
    let every = (src.len() >> 16).max(16);
    let mut histogram = crate::entropy::Histogram::new();
    let mut sampled = 0usize;
    for line in src.chunks(LINE).step_by(every) {
        histogram.add(line);
        sampled += line.len();
    }
    let freq = histogram.counts();
    if sampled == 0 || freq.iter().filter(|&&f| f > 0).count() < 2 {
        return None;
    }
    let bits: f64 = freq
        .iter()
        .filter(|&&f| f > 0)
        .map(|&f| f64::from(f) * (sampled as f64 / f64::from(f)).log2())
        .sum();
    Some(bits / sampled as f64)
}

/// Shortest match the format expresses; match-length values count from here.
pub const MIN_MATCH: usize = 3;

/// Decoded bytes per section (the writer's choice; the format allows any): each section has its
/// own literal and code tables, so coding follows statistics that change across a block.
pub(crate) const SECTION_BYTES: usize = 128 << 10;

/// One sequence: `ll` literals, then `ml` bytes from the offset that `ov` names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Seq {
    pub ll: u32,
    pub ml: u32,
    /// Offset value: 1..=3 name a repeat offset ([`Reps`]), larger values are offset + 3.
    pub ov: u32,
}

/// The three repeat offsets, with zstd's update rules, shared by parsers and the decoder so
/// both sides stay in step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reps(pub [u32; 3]);

impl Default for Reps {
    fn default() -> Self {
        Reps([1, 4, 8])
    }
}

impl Reps {
    /// The offset value for a match at `off` after `ll` literals; updates the state.
    #[inline(always)]
    pub fn encode(&mut self, off: u32, ll: u32) -> u32 {
        let [r0, r1, r2] = self.0;
        let k = if ll > 0 && off == r0 {
            return 1;
        } else if off == r1 {
            1
        } else if off == r2 {
            2
        } else if ll == 0 && off + 1 == r0 {
            3
        } else {
            self.0 = [off, r0, r1];
            return off + 3;
        };
        self.0 = match k {
            1 => [r1, r0, r2],
            2 => [r2, r0, r1],
            _ => [off, r0, r1],
        };
        // With literals before it, value k + 1 means rep[k]; without, value k does.
        k + u32::from(ll > 0)
    }

    /// The offset an offset value names after `ll` literals (0 where it names a zero offset,
    /// which is invalid); updates the state. Selects, not branches: whether a sequence repeats
    /// an offset is as good as random, and the decoder's sequence loop runs this for every
    /// sequence.
    #[inline(always)]
    pub fn decode(&mut self, ov: u32, ll: u32) -> u32 {
        let [r0, r1, r2] = self.0;
        let fresh = ov > 3;
        // Value k + 1 names rep[k] after literals, value k without; k = 3 is rep[0] − 1.
        let k = ov.wrapping_sub(u32::from(ll > 0));
        // Masks, not a `match`: LLVM turns a four-way match into branches.
        let pick = |j: u32| 0u32.wrapping_sub(u32::from(k == j));
        let named =
            (r0 & pick(0)) | (r1 & pick(1)) | (r2 & pick(2)) | (r0.wrapping_sub(1) & pick(3));
        let off = if fresh { ov - 3 } else { named };
        // rep[0] named: no change; rep[1]: swapped to the front; otherwise pushed in front.
        let keep = !fresh && k == 0;
        let second = !fresh && k == 1;
        self.0 = [
            off,
            if keep { r1 } else { r0 },
            if keep || second { r2 } else { r1 },
        ];
        off
    }
}

/// A length code scheme: values below 2^`direct_log` are their own code; above, two codes per
/// power of two (the bit below the top one picks), with the rest as extra bits.
#[derive(Copy, Clone)]
pub(crate) struct LengthCode {
    direct_log: u32,
}

/// Literal lengths: 16 direct codes. Match lengths (minus [`MIN_MATCH`]): 32.
pub(crate) const LL_CODE: LengthCode = LengthCode { direct_log: 4 };
pub(crate) const ML_CODE: LengthCode = LengthCode { direct_log: 5 };
/// Largest value a length code can carry (a block holds at most 2^27 bytes).
const MAX_VALUE_LOG: u32 = 28;
/// Offset codes: the offset value's bit length minus one, for values below 2^28.
pub(crate) const OF_ALPHABET: usize = MAX_VALUE_LOG as usize;

impl LengthCode {
    /// Values below 2^this are their own code.
    pub(crate) const fn direct_log(self) -> u32 {
        self.direct_log
    }

    pub(crate) const fn alphabet(self) -> usize {
        (1 << self.direct_log) + 2 * (MAX_VALUE_LOG - self.direct_log) as usize
    }

    /// (code, extra bit count, extra bits) of `v`.
    #[inline(always)]
    pub(crate) fn code(self, v: u32) -> (u8, u32, u32) {
        let d = self.direct_log;
        if v < 1 << d {
            return (v as u8, 0, 0);
        }
        let h = 31 - v.leading_zeros();
        let m = (v >> (h - 1)) & 1;
        let code = (1 << d) + 2 * (h - d) + m;
        (code as u8, h - 1, v & ((1 << (h - 1)) - 1))
    }

    /// (base, extra bit count) of each code, indexed by code.
    pub(crate) fn table(self) -> Vec<(u32, u32)> {
        (0..self.alphabet() as u32)
            .map(|c| {
                let d = self.direct_log;
                if c < 1 << d {
                    (c, 0)
                } else {
                    let h = (c - (1 << d)) / 2 + d;
                    let m = (c - (1 << d)) % 2;
                    ((2 + m) << (h - 1), h - 1)
                }
            })
            .collect()
    }
}

/// (code, extra bit count = code, extra bits) of an offset value (≥ 1).
#[inline(always)]
pub(crate) fn offset_code(ov: u32) -> (u8, u32, u32) {
    let h = 31 - ov.leading_zeros();
    (h as u8, h, ov & ((1 << h) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::varint;

    #[test]
    fn length_codes_cover_every_value() {
        for lc in [LL_CODE, ML_CODE] {
            let t = lc.table();
            for v in (0..5000).chain([1 << 20, (1 << 27) + 12345, (1 << 28) - 1]) {
                let (c, n, x) = lc.code(v);
                assert!((c as usize) < lc.alphabet());
                assert_eq!(t[c as usize], (v - x, n), "value {v}");
                assert!(x < 1 << n.max(1) || n == 0 && x == 0);
            }
        }
    }

    #[test]
    fn rejects_tables_too_big_for_their_section() {
        // One section of 2 literals, Huffman-coded: below the 64-literal minimum.
        let mut out = [0u8; 2];
        let e = decode(&[1, 2, 2, 1, 0x11, 0], &mut out).unwrap_err();
        assert!(e.0.contains("64 literals"), "{e}");
        // One sequence whose literal-length codes come with a 2^11-state table.
        let counts = crate::entropy::fse::Counts {
            log: 11,
            counts: vec![1024, 1024],
        };
        let mut p = vec![1, 0, 0, 1, 0];
        crate::entropy::fse::write_counts(&counts, &mut p);
        p.extend_from_slice(&[1, 0]);
        let mut out = [0u8; 16];
        let e = decode(&p, &mut out).unwrap_err();
        assert!(e.0.contains("symbol count"), "{e}");
    }

    #[test]
    fn repeat_offsets_agree_both_ways() {
        let mut x = 7u64;
        let (mut enc, mut dec) = (Reps::default(), Reps::default());
        let mut recent = [1u32, 4, 8];
        for i in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let r = (x >> 33) as u32;
            let ll = if r.is_multiple_of(3) { 0 } else { r % 7 };
            let off = match r % 5 {
                0..=2 => recent[(r as usize / 5) % 3]
                    .saturating_sub((r / 15) % 2)
                    .max(1),
                _ => 1 + (r >> 8) % 100_000,
            };
            let ov = enc.encode(off, ll);
            assert_eq!(dec.decode(ov, ll), off, "step {i}");
            assert_eq!(enc, dec);
            recent = enc.0;
        }
        // Value 3 without literals names rep[0] − 1: zero when rep[0] is 1.
        assert_eq!(Reps([1, 4, 8]).decode(3, 0), 0);
        assert_eq!(Reps([2, 4, 8]).decode(3, 0), 1);
    }

    /// A block whose matches nearly all reach back over a mebibyte decodes through the
    /// batched, prefetching sequence loop (to its last byte, with and without trailing
    /// literals), and damage to it gives errors, not panics.
    #[test]
    fn far_matches_decode_in_batches() {
        let mut x = 5u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        for trailing in [0, 7] {
            let prefix = (1 << 20) + (1 << 18);
            let mut block: Vec<u8> = (0..prefix).map(|_| next() as u8).collect();
            let mut literals = block.clone();
            let (mut seqs, mut reps) = (Vec::new(), Reps::default());
            for k in 0..3000 {
                // A few literals (the whole prefix before the first), then a match from the
                // first 256 KiB, at least a mebibyte back: offset codes of 20 and up.
                let new = if k == 0 { 0 } else { k % 3 };
                for _ in 0..new {
                    let b = next() as u8;
                    block.push(b);
                    literals.push(b);
                }
                let ll = if k == 0 { prefix } else { new };
                let len = MIN_MATCH + next() % 60;
                let from = next() % (1 << 18);
                let off = block.len() - from;
                for i in 0..len {
                    block.push(block[from + i]);
                }
                seqs.push(Seq {
                    ll: ll as u32,
                    ml: len as u32,
                    ov: reps.encode(off as u32, ll as u32),
                });
            }
            for _ in 0..trailing {
                let b = next() as u8;
                block.push(b);
                literals.push(b);
            }
            let mut payload = Vec::new();
            write_payload(
                &literals,
                &seqs,
                &mut PayloadScratch::default(),
                &mut payload,
            );
            let mut out = vec![0u8; block.len()];
            decode(&payload, &mut out).unwrap();
            assert!(out == block, "trailing {trailing}");
            assert!(decode(&payload, &mut out[1..]).is_err());
            for k in 0..200 {
                let mut bad = payload.clone();
                let at = payload.len() - 1 - k * (payload.len() / 200);
                bad[at] ^= 0x5a;
                let _ = decode(&bad, &mut out);
                assert!(decode(&bad[..at], &mut out).is_err());
            }
        }
    }

    /// Sequences whose codes ask for more extra bits than the stream holds stop with an error
    /// within a chunk of sequences, however many more the section claims (the reader never
    /// loads past the stream's padding).
    #[test]
    fn extra_bits_past_the_stream_are_an_error() {
        use encode::{CODES_RLE, LIT_RAW};
        let (ml_base, ml_bits) = ML_CODE.table()[40];
        assert_eq!(ml_bits, 8);
        let ml = ml_base as usize + MIN_MATCH;
        let n = 5000;
        let mut payload = vec![2];
        // Section 1: eight raw literals and a match of 3 at offset 5 (offset code 3, its three
        // extra bits zero).
        payload.extend_from_slice(&[8, LIT_RAW]);
        payload.extend_from_slice(b"abcdefgh");
        payload.extend_from_slice(&[1, CODES_RLE, 8, CODES_RLE, 0, CODES_RLE, 3, 1, 0]);
        // Section 2: n matches at repeat offset 1 with 8 extra bits of length each, and an
        // empty extra-bits stream.
        payload.extend_from_slice(&[0, LIT_RAW]);
        varint::put(&mut payload, n as u64);
        payload.extend_from_slice(&[CODES_RLE, 0, CODES_RLE, 40, CODES_RLE, 0, 0]);
        let mut out = vec![0u8; 11 + n * ml];
        let e = decode(&payload, &mut out).unwrap_err();
        assert_eq!(e.0, "extra bits stream read past its end");
        // The same section with its n bytes of extra bits decodes.
        let at = payload.len() - 1;
        payload.truncate(at);
        varint::put(&mut payload, n as u64);
        payload.extend(std::iter::repeat_n(0, n));
        decode(&payload, &mut out).unwrap();
        assert_eq!(&out[..11], b"abcdefghdef");
        assert!(out[11..].iter().all(|&b| b == b'f'));
    }

    #[test]
    fn low_entropy_blocks_code_as_their_literals() {
        // Random symbols of two bits: every match an LZ parse finds is a coincidence that
        // costs more than the literals it covers. Coded as literals alone, a block takes its
        // entropy (a quarter of its size) and a table.
        let mut x = 99u64;
        let src: Vec<u8> = (0..1 << 18)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 62) as u8
            })
            .collect();
        for parser in [
            Parser::Dfast(dfast::Params::MAX),
            Parser::Optimal(optimal::Params::QUICK),
        ] {
            let mut out = Vec::new();
            compress_into(&src, &parser, false, &mut out);
            assert!(
                out.len() <= src.len() / 4 + 64,
                "{parser:?}: {} bytes",
                out.len()
            );
            let mut back = vec![0u8; src.len()];
            decode(&out, &mut back).unwrap();
            assert!(back == src);
        }
        // Text is not: its LZ payload stands.
        let text = include_bytes!("mod.rs");
        let (mut lz, mut plain) = (Vec::new(), Vec::new());
        compress_into(text, &Parser::Dfast(dfast::Params::MAX), false, &mut lz);
        write_payload(text, &[], &mut PayloadScratch::default(), &mut plain);
        assert!(lz.len() < plain.len(), "{} vs {}", lz.len(), plain.len());
    }
}
