//! Text dictionaries: distinct values as a lengths stream and a bytes stream, and one id per
//! row; and the check that ids name entries and do not expand past the row group's input.

use crate::error::{Error, Result};
use crate::wire::put_varint;

/// Refuses entries picked by `ids` (ends in `offsets`) that come to more than `max_text`
/// bytes in all: a hostile column cannot expand past its row group's input.
/// Every id must name an entry (an id past them is an error, not a panic).
pub(crate) fn check_text_size(
    ids: &[u32],
    offsets: &[u32],
    max_text: usize,
    what: &str,
) -> Result<()> {
    let entries = offsets.len().saturating_sub(1);
    if ids
        .iter()
        .copied()
        .max()
        .is_some_and(|m| m as usize >= entries)
    {
        return Err(Error::corrupt(
            "column chunk",
            0,
            format!("{what} name an entry past the {entries} entries"),
        ));
    }
    // Each entry's length once; when every id naming the longest entry would still fit, there
    // is nothing to add up (short dictionaries: flags, codes, names).
    let lens: Vec<u32> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
    let longest = lens.iter().copied().max().unwrap_or(0);
    if u64::from(longest) * ids.len() as u64 <= max_text as u64 {
        return Ok(());
    }
    let text: u64 = ids.iter().map(|&i| u64::from(lens[i as usize])).sum();
    if text > max_text as u64 {
        return Err(Error::corrupt(
            "column chunk",
            0,
            format!("{what} come to {text} bytes, more than the {max_text} input bytes"),
        ));
    }
    Ok(())
}

/// The most distinct values a dictionary holds (ids are at most 2 bytes).
pub(crate) const MAX_DICT: usize = 1 << 16;

/// Writes entries as a lengths stream and a bytes stream.
pub(crate) fn entries_streams<'a>(entries: impl Iterator<Item = &'a [u8]>) -> (Vec<u8>, Vec<u8>) {
    let (mut lengths, mut bytes) = (Vec::new(), Vec::new());
    for v in entries {
        put_varint(&mut lengths, v.len() as u64);
        bytes.extend_from_slice(v);
    }
    (lengths, bytes)
}

/// One id per row, 1 or 2 bytes wide after a width byte.
pub(crate) fn ids_stream(ids: impl ExactSizeIterator<Item = u32>, entries: usize) -> Vec<u8> {
    let wide = entries > 256;
    let mut out = Vec::with_capacity(1 + ids.len() * (1 + usize::from(wide)));
    out.push(if wide { 2 } else { 1 });
    for id in ids {
        if wide {
            out.extend_from_slice(&(id as u16).to_le_bytes());
        } else {
            out.push(id as u8);
        }
    }
    out
}
