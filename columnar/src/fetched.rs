//! [`Fetched`]: the bytes of an archive a reader holds, by archive offset: all of them (a
//! file read whole), or the ranges fetched so far from an object store, so that an archive
//! is indexed from its header, footer and row group headers and a query then fetches only
//! the chunks it decodes. A read that reaches a range not held fails with
//! [`Error::Missing`](crate::Error::Missing) naming the ranges to fetch.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{Error, Result};

/// Byte ranges of an archive of a known length. Ranges added that touch or overlap are kept
/// as one piece, so any range within what was added together is one slice.
#[derive(Clone, Debug, Default)]
pub struct Fetched {
    len: u64,
    /// Pieces by archive offset; none touches or overlaps another.
    pieces: BTreeMap<u64, Vec<u8>>,
}

impl Fetched {
    /// Nothing yet of an archive of `len` bytes.
    pub fn new(len: u64) -> Self {
        Self {
            len,
            pieces: BTreeMap::new(),
        }
    }

    /// All of an archive.
    pub fn whole(data: Vec<u8>) -> Self {
        let mut f = Self::new(data.len() as u64);
        if !data.is_empty() {
            f.pieces.insert(0, data);
        }
        f
    }

    /// The archive's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held, over all pieces.
    pub fn held(&self) -> u64 {
        self.pieces.values().map(|p| p.len() as u64).sum()
    }

    /// Adds `bytes` found at archive offset `offset` (any part past the archive's length is
    /// dropped); a piece it touches or overlaps is merged with it.
    pub fn insert(&mut self, offset: u64, mut bytes: Vec<u8>) {
        let end = offset.saturating_add(bytes.len() as u64).min(self.len);
        if offset >= end {
            return;
        }
        bytes.truncate((end - offset) as usize);
        let (mut start, mut merged) = (offset, bytes);
        // Pieces that start at or before `end` and end at or after `start` touch it.
        let touching: Vec<u64> = self
            .pieces
            .range(..=end)
            .filter(|(&at, p)| at + p.len() as u64 >= start)
            .map(|(&at, _)| at)
            .collect();
        for at in touching {
            let piece = self.pieces.remove(&at).expect("listed above");
            let piece_end = at + piece.len() as u64;
            let new_start = start.min(at);
            let new_end = (start + merged.len() as u64).max(piece_end);
            let mut joined = vec![0u8; (new_end - new_start) as usize];
            let put = |dst: &mut [u8], from: u64, src: &[u8]| {
                let i = (from - new_start) as usize;
                dst[i..i + src.len()].copy_from_slice(src);
            };
            put(&mut joined, at, &piece);
            put(&mut joined, start, &merged);
            (start, merged) = (new_start, joined);
        }
        self.pieces.insert(start, merged);
    }

    /// The bytes of `range` when one piece holds them all.
    pub fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        let (&at, piece) = self.pieces.range(..=range.start).next_back()?;
        let end = at + piece.len() as u64;
        (range.end <= end && range.start <= range.end)
            .then(|| &piece[(range.start - at) as usize..(range.end - at) as usize])
    }

    /// The bytes from `at` to the end of the piece that holds `at`; empty when none does.
    pub fn from(&self, at: u64) -> &[u8] {
        match self.pieces.range(..=at).next_back() {
            Some((&start, piece)) if at < start + piece.len() as u64 => {
                &piece[(at - start) as usize..]
            }
            _ => &[],
        }
    }

    /// The bytes of `range`, or why not: past the archive's end (it is truncated, and
    /// `what` was cut short), or not fetched yet.
    pub(crate) fn need(&self, range: Range<u64>, what: &'static str) -> Result<&[u8]> {
        if range.end > self.len {
            return Err(Error::Truncated {
                what,
                offset: range.start,
            });
        }
        self.get(range.clone()).ok_or(Error::Missing {
            ranges: std::iter::once(range).collect(),
        })
    }

    /// The parts of `range` no piece holds.
    pub fn missing(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut at = range.start;
        while at < range.end {
            let held = self.from(at).len() as u64;
            if held > 0 {
                at += held;
                continue;
            }
            let next = self
                .pieces
                .range(at..range.end)
                .next()
                .map_or(range.end, |(&s, _)| s);
            out.push(at..next);
            at = next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_merge_and_slices_span_them() {
        let whole: Vec<u8> = (0..100u8).collect();
        let mut f = Fetched::new(100);
        f.insert(10, whole[10..20].to_vec());
        f.insert(30, whole[30..40].to_vec());
        assert_eq!(f.get(12..18), Some(&whole[12..18]));
        assert_eq!(f.get(15..35), None);
        assert_eq!(f.missing(0..50), vec![0..10, 20..30, 40..50]);
        // Touching and overlapping pieces become one.
        f.insert(20, whole[20..30].to_vec());
        assert_eq!(f.get(15..35), Some(&whole[15..35]));
        f.insert(5, whole[5..45].to_vec());
        assert_eq!(f.get(5..45), Some(&whole[5..45]));
        assert_eq!(f.pieces.len(), 1);
        assert_eq!(f.from(40), &whole[40..45]);
        assert_eq!(f.from(45), &[] as &[u8]);
        // Past the end is dropped, and a need past it is a truncation.
        f.insert(90, vec![9; 20]);
        assert_eq!(f.get(90..100).map(<[u8]>::len), Some(10));
        assert!(matches!(f.need(95..105, "x"), Err(Error::Truncated { .. })));
        assert!(matches!(f.need(50..60, "x"), Err(Error::Missing { .. })));
        assert_eq!(Fetched::whole(whole.clone()).get(0..100), Some(&whole[..]));
    }
}
