//! [`RangedOpen`]: opening an archive that lives behind ranged reads (an object store) the
//! way Parquet readers open theirs: the head and the tail first (the footer), then every row
//! group's header at the offsets the footer lists, then whatever else indexing finds it
//! lacks (a long header, table definitions, exception indexes). The caller fetches; this
//! says what, and coalescing the ranges into requests is the caller's (it knows the store).

use std::ops::Range;

use super::format::parse_footer;
use super::reader::ArchiveReader;
use crate::error::{Error, Result};
use crate::fetched::Fetched;
use crate::wire::Cursor;

/// Archives up to this size are fetched whole: one request, where ranges would take two.
pub const WHOLE_BELOW: u64 = 256 << 10;
/// Bytes fetched at each end first: the header and the footer of most archives.
pub const END_GUESS: u64 = 64 << 10;
/// Bytes fetched from the start of each row group: its header in most archives.
pub const HEADER_GUESS: u64 = 8 << 10;
/// Rounds of fetching after which an archive that still lacks bytes is refused.
const MAX_ROUNDS: usize = 16;

/// The state of opening one archive by ranges.
#[derive(Debug)]
pub struct RangedOpen {
    data: Fetched,
    rounds: usize,
    whole_below: u64,
    end_guess: u64,
}

/// What [`RangedOpen::step`] found.
pub enum OpenStep {
    /// The archive is indexed.
    Open(Box<ArchiveReader>),
    /// Fetch these ranges (sorted, none held), [`RangedOpen::add`] them and step again.
    Fetch(Vec<Range<u64>>),
}

impl RangedOpen {
    /// Opening an archive of `len` bytes.
    pub fn new(len: u64) -> Self {
        Self {
            data: Fetched::new(len),
            rounds: 0,
            whole_below: WHOLE_BELOW,
            end_guess: END_GUESS,
        }
    }

    /// Fetches `bytes` of each end first ([`END_GUESS`] unless set; at least 16).
    pub fn end_guess(mut self, bytes: u64) -> Self {
        self.end_guess = bytes.max(16);
        self
    }

    /// Fetches archives up to `bytes` whole ([`WHOLE_BELOW`] unless set).
    pub fn whole_below(mut self, bytes: u64) -> Self {
        self.whole_below = bytes;
        self
    }

    /// Adds bytes fetched at archive offset `offset`.
    pub fn add(&mut self, offset: u64, bytes: Vec<u8>) {
        self.data.insert(offset, bytes);
    }

    /// Bytes fetched so far.
    pub fn held(&self) -> u64 {
        self.data.held()
    }

    /// Indexes the archive if what was fetched allows, else says what to fetch next. An
    /// archive that keeps lacking bytes (a damaged footer pointing nowhere) is an error.
    pub fn step(&mut self) -> Result<OpenStep> {
        let len = self.data.len();
        if self.data.held() == 0 {
            return Ok(OpenStep::Fetch(match len {
                0 => {
                    return Err(Error::Truncated {
                        what: "archive header",
                        offset: 0,
                    })
                }
                n if n <= self.whole_below || n <= 2 * self.end_guess => {
                    std::iter::once(0..n).collect()
                }
                n => vec![0..self.end_guess, n - self.end_guess..n],
            }));
        }
        let lacking = match ArchiveReader::index(&self.data) {
            Ok(reader) => {
                // A reader keeps an archive fetched whole (nothing more to fetch to read it);
                // of one fetched in part it keeps only the index, not the ranges it came from.
                let data = match self.data.held() == self.data.len() {
                    true => std::mem::take(&mut self.data),
                    false => Fetched::new(self.data.len()),
                };
                return Ok(OpenStep::Open(Box::new(reader.holding(data))));
            }
            Err(Error::Missing { ranges }) => ranges,
            Err(e) => return Err(e),
        };
        self.rounds += 1;
        if self.rounds > MAX_ROUNDS {
            return Err(Error::corrupt(
                "archive",
                lacking.first().map_or(0, |r| r.start),
                format!("still lacking bytes after {MAX_ROUNDS} rounds of fetching"),
            ));
        }
        // What indexing lacks, and (once the footer is held) every row group's header.
        let mut want = lacking;
        if let Some((offsets, guess)) = self.group_offsets() {
            want.extend(offsets.into_iter().map(|at| at..at + guess));
        }
        let mut fetch: Vec<Range<u64>> = want
            .into_iter()
            .map(|r| r.start.min(len)..r.end.min(len))
            .flat_map(|r| self.data.missing(r))
            .collect();
        fetch.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(fetch.len());
        for r in fetch {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        if merged.is_empty() {
            return Err(Error::corrupt(
                "archive",
                0,
                "indexing lacks bytes it already holds",
            ));
        }
        Ok(OpenStep::Fetch(merged))
    }

    /// The offsets of the row groups the footer lists whose first byte is not held, and how
    /// much to fetch at each: twice the longest header held (one archive's headers describe
    /// the same columns), else [`HEADER_GUESS`]; `None` until the footer is held.
    fn group_offsets(&self) -> Option<(Vec<u64>, u64)> {
        let n = self.data.len();
        let trailer = self.data.get(n.checked_sub(8)?..n - 4)?;
        let footer_len = u64::from(u32::from_le_bytes(trailer.try_into().ok()?));
        let footer_at = n.checked_sub(footer_len)?;
        let (entries, _) = parse_footer(self.data.get(footer_at..n)?, footer_at).ok()?;
        let longest = entries
            .iter()
            .filter_map(|e| {
                let mut c = Cursor::new(self.data.from(e.offset), e.offset, "row group header");
                c.u8().ok()?;
                let len = c.varint().ok()?;
                Some(c.offset() - e.offset + len + 4)
            })
            .max();
        let guess = longest.map_or(HEADER_GUESS, |l| (2 * l).clamp(256, HEADER_GUESS));
        let offsets = entries
            .iter()
            .map(|e| e.offset)
            .filter(|&at| at < footer_at && self.data.from(at).is_empty())
            .collect();
        Some((offsets, guess))
    }
}
