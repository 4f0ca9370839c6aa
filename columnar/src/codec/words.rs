//! Words: a text column coded as a vocabulary of tokens and, per row, the ids of its tokens.
//! Prose-like text (comments, descriptions, messages that templates do not fit) repeats a
//! few thousand words in ever new orders: an LZ coder finds few long matches in it, but each
//! word as a one- or two-byte id, commonest first, leaves the entropy stage little to do.
//!
//! A token is a maximal run of *word bytes* (ASCII letters and digits, and every byte of
//! 0x80 and above, so UTF-8 letters stay whole) or of other bytes. Tokens alternate, so the
//! ids go to two streams: the first token of a row and every token after a separator to the
//! words stream, every token after a word to the separators stream (mostly `" "`), each
//! stream then compressing on its own statistics.

use glyd_core::copy::{copy_literals, extend_from_padded, MARGIN};

use crate::model::{FastMap, RawColumn, SAMPLE_ROWS};
use crate::wire::{put_varint, Cursor};

/// Most vocabulary entries: ids are at most two bytes.
pub const MAX_VOCABULARY: usize = 1 << 15;

/// Whether `b` belongs in a word.
const fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// Whether a vocabulary entry is a word (its first byte is); an empty one is not.
fn is_word(entry: &[u8]) -> bool {
    entry.first().is_some_and(|&b| is_word_byte(b))
}

/// The tokens of `v`, in order.
fn tokens(v: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at;
        at = token_end(v, start)?;
        Some(&v[start..at])
    })
}

/// Where the token starting at `at` in `v` ends: a maximal run of word bytes, or of other
/// bytes. `None` at the end of `v`.
#[inline(always)]
fn token_end(v: &[u8], at: usize) -> Option<usize> {
    let word = WORD_BYTE[usize::from(*v.get(at)?)];
    let rest = &v[at + 1..];
    let len = rest
        .iter()
        .position(|&b| WORD_BYTE[usize::from(b)] != word)
        .unwrap_or(rest.len());
    Some(at + 1 + len)
}

/// Where the tokens of a column's bytes start, found for all of them in one pass: bit
/// `i % 64` of `bits[i / 64]` is set where byte `i` is of another class (word or not) than the
/// byte before it, or is the first. A row's tokens then end at the next set bit or the row's
/// end, a count of trailing zeros rather than a look at every byte.
struct TokenStarts {
    bits: Vec<u64>,
}

impl TokenStarts {
    fn new(data: &[u8]) -> Self {
        let mut bits = Vec::with_capacity(data.len().div_ceil(64));
        // Whether the byte before the current window is a word byte.
        let mut before = false;
        let mut windows = data.chunks_exact(64);
        for w in &mut windows {
            let word = word_mask(w.try_into().expect("64 bytes"));
            bits.push(word ^ (word << 1 | u64::from(before)));
            before = word >> 63 != 0;
        }
        let tail = windows.remainder();
        if !tail.is_empty() {
            let word = tail.iter().enumerate().fold(0u64, |m, (i, &b)| {
                m | u64::from(WORD_BYTE[usize::from(b)]) << i
            });
            bits.push(word ^ (word << 1 | u64::from(before)));
        }
        // The first byte starts a token whatever its class.
        if let Some(first) = bits.first_mut() {
            *first |= 1;
        }
        TokenStarts { bits }
    }

    /// Where the token starting at `at` ends: the next token start, or `limit` if that comes
    /// first (`at < limit <= ` the data's length).
    #[inline(always)]
    fn end(&self, at: usize, limit: usize) -> usize {
        let from = at + 1;
        let mut k = from / 64;
        let mut m = match self.bits.get(k) {
            Some(&b) => b & (u64::MAX << (from % 64)),
            None => return limit,
        };
        while m == 0 {
            k += 1;
            if k * 64 >= limit {
                return limit;
            }
            m = self.bits[k];
        }
        (k * 64 + m.trailing_zeros() as usize).min(limit)
    }
}

/// Bit `i` set where `w[i]` is a word byte ([`is_word_byte`]).
#[inline(always)]
fn word_mask(w: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        let mut mask = 0u64;
        // FAST PATH. As signed bytes, 0x80 and above are negative: their sign bits are the
        // movemask of the bytes themselves, and they fall outside both ranges below.
        // SAFETY: SSE2 is part of every x86_64 target; each load reads 16 of `w`'s 64 bytes.
        unsafe {
            let in_range = |v, lo: u8, hi: u8| {
                _mm_and_si128(
                    _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(hi as i8 + 1)),
                )
            };
            for k in 0..4 {
                let v = _mm_loadu_si128(w.as_ptr().add(16 * k).cast());
                let digit = in_range(v, b'0', b'9');
                let letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z');
                let hits = _mm_movemask_epi8(_mm_or_si128(digit, letter)) | _mm_movemask_epi8(v);
                mask |= u64::from(hits as u16) << (16 * k);
            }
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        w.iter().enumerate().fold(0u64, |m, (i, &b)| {
            m | u64::from(WORD_BYTE[usize::from(b)]) << i
        })
    }
}

/// Appends id `id` (< [`MAX_VOCABULARY`]): one byte below 128, else two, high bits first.
fn put_id(out: &mut Vec<u8>, id: u32) {
    if id < 0x80 {
        out.push(id as u8);
    } else {
        out.push(0x80 | (id >> 8) as u8);
        out.push(id as u8);
    }
}

/// The streams of a column coded as words.
pub struct Streams {
    /// Vocabulary entries, commonest first: their lengths (varints) and bytes.
    pub lengths: Vec<u8>,
    pub bytes: Vec<u8>,
    /// Tokens per row (varints).
    pub counts: Vec<u8>,
    pub words: Vec<u8>,
    pub separators: Vec<u8>,
}

/// Whether coding as words may pay: the first rows hold at least two tokens each on average,
/// a quarter of them or fewer distinct.
pub fn pays(col: &RawColumn) -> bool {
    let sample = SAMPLE_ROWS.min(col.rows());
    let mut seen: FastMap<&[u8], ()> = FastMap::default();
    let mut total = 0usize;
    for row in 0..sample {
        for t in tokens(col.value(row)) {
            total += 1;
            seen.insert(t, ());
        }
    }
    total >= 2 * sample.max(1) && seen.len() * 4 <= total
}

/// Token ids by content while a column is coded. One-byte tokens are looked up by their byte;
/// tokens of up to 7 bytes (nearly all the rest) are keyed by their bytes and length packed in
/// one integer, which hashes and compares in a few instructions; longer ones by their bytes.
struct Vocabulary<'a> {
    /// One-byte tokens (most separators: a space) by their byte; `u32::MAX` for none yet.
    single: [u32; 256],
    short: FastMap<u64, u32>,
    long: FastMap<&'a [u8], u32>,
    /// Each token in order of first appearance, and how often it occurs (apart: the counts,
    /// touched per token, stay in fewer cache lines).
    found: Vec<&'a [u8]>,
    counts: Vec<u32>,
}

impl Default for Vocabulary<'_> {
    fn default() -> Self {
        Vocabulary {
            single: [u32::MAX; 256],
            short: FastMap::default(),
            long: FastMap::default(),
            found: Vec::new(),
            counts: Vec::new(),
        }
    }
}

impl<'a> Vocabulary<'a> {
    /// The id of `data[at..end]` (numbered on first appearance), counting the occurrence;
    /// `None` once the vocabulary exceeds [`MAX_VOCABULARY`].
    #[inline(always)]
    fn id(&mut self, data: &'a [u8], at: usize, end: usize) -> Option<u32> {
        let t = &data[at..end];
        let (found, counts) = (&mut self.found, &mut self.counts);
        let mut new = || {
            found.push(t);
            counts.push(0);
            found.len() as u32 - 1
        };
        let id = if let [b] = t {
            let slot = &mut self.single[usize::from(*b)];
            if *slot == u32::MAX {
                *slot = new();
            }
            *slot
        } else if t.len() <= 7 {
            // The token's bytes, little-endian, over its length in the top byte.
            let key = match data.get(at..at + 8) {
                Some(w) => {
                    let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                    w & (u64::MAX >> (64 - 8 * t.len()))
                }
                None => t.iter().rev().fold(0, |k, &b| k << 8 | u64::from(b)),
            } | (t.len() as u64) << 56;
            *self.short.entry(key).or_insert_with(new)
        } else {
            *self.long.entry(t).or_insert_with(new)
        };
        if self.found.len() > MAX_VOCABULARY {
            return None;
        }
        self.counts[id as usize] += 1;
        Some(id)
    }
}

/// [`is_word_byte`] of every byte value.
const WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = is_word_byte(b as u8);
        b += 1;
    }
    t
};

/// Codes `col`'s values as words; `None` when its vocabulary exceeds [`MAX_VOCABULARY`].
pub fn encode(col: &RawColumn) -> Option<Streams> {
    // One pass numbers the tokens in order of first appearance and counts them; the
    // vocabulary is then renumbered commonest first.
    let data = &col.data[..];
    let mut vocabulary = Vocabulary::default();
    let mut rows: Vec<u32> = Vec::with_capacity(col.rows() + 1);
    let mut seq: Vec<u32> = Vec::with_capacity(col.data.len() / 4);
    rows.push(0);
    let starts = TokenStarts::new(data);
    let mut at = 0;
    for &row_end in &col.ends {
        // The row's tokens, found in the column's bytes directly (positions in `data`).
        let row_end = row_end as usize;
        while at < row_end {
            let end = starts.end(at, row_end);
            seq.push(vocabulary.id(data, at, end)?);
            at = end;
        }
        rows.push(seq.len() as u32);
    }
    let Vocabulary { found, counts, .. } = vocabulary;
    let mut order: Vec<u32> = (0..found.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        counts[b].cmp(&counts[a]).then(found[a].cmp(found[b]))
    });
    let mut rank = vec![0u32; found.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let mut s = Streams {
        lengths: Vec::new(),
        bytes: Vec::new(),
        counts: Vec::new(),
        words: Vec::new(),
        separators: Vec::new(),
    };
    for &i in &order {
        let t = found[i as usize];
        put_varint(&mut s.lengths, t.len() as u64);
        s.bytes.extend_from_slice(t);
    }
    let word: Vec<bool> = found.iter().map(|t| is_word(t)).collect();
    for r in rows.windows(2) {
        let ids = &seq[r[0] as usize..r[1] as usize];
        put_varint(&mut s.counts, ids.len() as u64);
        let mut after_word = false;
        for &id in ids {
            let out = if after_word {
                &mut s.separators
            } else {
                &mut s.words
            };
            put_id(out, rank[id as usize]);
            after_word = word[id as usize];
        }
    }
    Some(s)
}

/// Decodes `rows` values from the streams of a words-coded column whose vocabulary entries are
/// `entries[offsets[i]..offsets[i + 1]]`: the values back to back and the end of each (after a
/// leading 0). Every stream must be used up; the values may come to at most `max_text` bytes.
pub fn decode(
    entries: &[u8],
    offsets: &[u32],
    counts: &[u8],
    words: &[u8],
    separators: &[u8],
    rows: usize,
    max_text: usize,
) -> Result<(Vec<u8>, Vec<u32>), String> {
    let vocabulary = offsets.len().saturating_sub(1);
    if vocabulary > MAX_VOCABULARY {
        return Err(format!("{vocabulary} words, more than {MAX_VOCABULARY}"));
    }
    // Each entry's span and class, looked up once per token.
    let spans: Vec<(u32, u32, bool)> = offsets
        .windows(2)
        .map(|w| (w[0], w[1], is_word(&entries[w[0] as usize..w[1] as usize])))
        .collect();
    let mut c = Cursor::new(counts, 0, "token counts");
    let (mut w, mut g) = (0usize, 0usize);
    let id_at = |stream: &[u8], at: &mut usize| -> Result<usize, String> {
        let b = *stream.get(*at).ok_or("word ids end early")?;
        if b < 0x80 {
            *at += 1;
            return Ok(usize::from(b));
        }
        let lo = *stream.get(*at + 1).ok_or("word ids end early")?;
        *at += 2;
        Ok(usize::from(b & 0x7f) << 8 | usize::from(lo))
    };
    // The vocabulary with room after its last entry, so every token is one wide copy.
    let mut padded = Vec::with_capacity(entries.len() + MARGIN);
    padded.extend_from_slice(entries);
    padded.resize(entries.len() + MARGIN, 0);
    let mut data: Vec<u8> = Vec::with_capacity(max_text.min(16 * (words.len() + separators.len())));
    let mut ends = Vec::with_capacity(rows + 1);
    ends.push(0u32);
    let longest = spans
        .iter()
        .map(|&(a, b, _)| (b - a) as usize)
        .max()
        .unwrap_or(0);
    for _ in 0..rows {
        let n = c.varint().map_err(|e| e.to_string())?;
        let mut after_word = false;
        // FAST PATH: a row whose tokens, however long, stay within `max_text` (every token
        // takes an id byte, so `n` is at most the ids left) is copied with one reservation
        // and no check per token.
        let ids_left = (words.len() - w) + (separators.len() - g);
        let most = (n as usize).saturating_mul(longest);
        if n as usize <= ids_left && data.len().saturating_add(most) <= max_text {
            data.reserve(most + MARGIN);
            let mut at = data.len();
            for _ in 0..n {
                let id = if after_word {
                    id_at(separators, &mut g)?
                } else {
                    id_at(words, &mut w)?
                };
                let &(a, b, word) = spans
                    .get(id)
                    .ok_or_else(|| format!("word {id} past the {vocabulary}-word vocabulary"))?;
                let (a, len) = (a as usize, (b - a) as usize);
                // SAFETY: `padded` holds MARGIN bytes past every entry; `data` has room for
                // `n` of the longest entry and MARGIN past them (reserved above), and `at`
                // has grown by at most `longest` per token.
                unsafe { copy_literals(padded.as_ptr().add(a), data.as_mut_ptr().add(at), len) };
                at += len;
                after_word = word;
            }
            // SAFETY: the bytes up to `at` were all written above.
            unsafe { data.set_len(at) };
            ends.push(data.len() as u32);
            continue;
        }
        // The same, each token checked against the limit (kept apart from the fast path:
        // sharing the token reading through a closure cost the fast path 2-5%).
        for _ in 0..n {
            let id = if after_word {
                id_at(separators, &mut g)?
            } else {
                id_at(words, &mut w)?
            };
            let &(a, b, word) = spans
                .get(id)
                .ok_or_else(|| format!("word {id} past the {vocabulary}-word vocabulary"))?;
            if data.len() + (b - a) as usize > max_text {
                return Err(format!("words come to more than {max_text} bytes"));
            }
            extend_from_padded(&mut data, &padded, a as usize, (b - a) as usize);
            after_word = word;
        }
        ends.push(data.len() as u32);
    }
    if !(c.is_empty() && w == words.len() && g == separators.len()) {
        return Err("words streams longer than their rows".into());
    }
    Ok((data, ends))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn column(values: &[Vec<u8>]) -> RawColumn {
        let mut c = RawColumn::default();
        for v in values {
            c.push(v, crate::model::BARE);
        }
        c
    }

    fn offsets(lengths: &[u8]) -> Vec<u32> {
        let mut c = Cursor::new(lengths, 0, "lengths");
        let mut out = vec![0u32];
        while !c.is_empty() {
            out.push(out.last().unwrap() + c.varint().unwrap() as u32);
        }
        out
    }

    #[test]
    fn tokens_alternate_between_words_and_the_rest() {
        let t: Vec<&[u8]> = tokens(b" ironic, final\xc3\xa9 packages.").collect();
        assert_eq!(
            t,
            [
                &b" "[..],
                b"ironic",
                b", ",
                b"final\xc3\xa9",
                b" ",
                b"packages",
                b"."
            ]
        );
    }

    proptest! {
        /// Token ends from the one-pass bitmask are those of a look at every byte, from any
        /// position to any limit, across and within 64-byte windows.
        #[test]
        fn token_starts_find_every_token_end(
            data in proptest::collection::vec(prop_oneof![
                Just(b' '), Just(b'a'), Just(b'Z'), Just(b'0'), Just(b'9'), Just(b'/'), Just(b':'),
                Just(b'@'), Just(b'['), Just(b'`'), Just(b'{'), Just(0x7fu8), Just(0x80u8),
                any::<u8>()
            ], 0..300),
            cuts in proptest::collection::vec((any::<usize>(), any::<usize>()), 1..20),
        ) {
            let starts = TokenStarts::new(&data);
            for (a, b) in cuts {
                if data.is_empty() {
                    break;
                }
                let at = a % data.len();
                let limit = at + 1 + b % (data.len() - at);
                let expected = token_end(&data[..limit], at).unwrap();
                prop_assert_eq!(starts.end(at, limit), expected, "at {} limit {}", at, limit);
            }
        }

        /// Any text, prose-like or not, decodes to its values.
        #[test]
        fn words_decode_to_their_values(
            values in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![
                    Just(b' '), Just(b'a'), Just(b'b'), Just(b'.'), Just(0xc3u8), any::<u8>()
                ], 0..40),
                0..60,
            ),
        ) {
            let col = column(&values);
            let s = encode(&col).unwrap();
            let (data, ends) = decode(
                &s.bytes, &offsets(&s.lengths), &s.counts, &s.words, &s.separators,
                values.len(), col.data.len(),
            ).unwrap();
            for (i, v) in values.iter().enumerate() {
                prop_assert_eq!(&data[ends[i] as usize..ends[i + 1] as usize], &v[..]);
            }
            // One byte short of the values' size is refused.
            if !col.data.is_empty() {
                prop_assert!(decode(
                    &s.bytes, &offsets(&s.lengths), &s.counts, &s.words, &s.separators,
                    values.len(), col.data.len() - 1,
                ).is_err());
            }
        }
    }
}
