//! A row group of records as the shredders leave it: raw columns, one terminator per row, the
//! records kept verbatim, and each row's shape where the layout has shapes.

use super::column::RawColumn;
use super::exceptions::Exceptions;

/// A row group of records, shredded.
#[derive(Clone, Debug, Default)]
pub struct Shredded {
    pub columns: Vec<RawColumn>,
    /// One terminator per row.
    pub terminators: Vec<u8>,
    pub exceptions: Exceptions,
    /// JSON lines: each row's shape (empty for delimited text).
    pub shapes: super::shapes::Shapes,
    /// Names of the columns past the dialect's (keys the dialect did not name, JSON lines
    /// only), in the order of `columns`.
    pub added: Vec<String>,
}

impl Shredded {
    pub fn rows(&self) -> usize {
        self.terminators.len()
    }
}

/// Rows shredded before the columns reserve room for the rest.
pub const RESERVE_AFTER: usize = 128;

/// Reserves room in `columns`, whose values came from the first `seen` of `total` input bytes,
/// for the values of the rest as they were so far (plus an eighth): the columns then grow
/// without copying themselves over and over.
pub fn reserve_like(columns: &mut [RawColumn], seen: usize, total: usize) {
    let scale = |n: usize| (n as u64 * total as u64 / seen.max(1) as u64) as usize * 9 / 8;
    for c in columns {
        let rows = scale(c.rows());
        c.data
            .reserve(scale(c.data.len()).saturating_sub(c.data.len()));
        c.ends.reserve(rows.saturating_sub(c.ends.len()));
        c.flags.reserve(rows.saturating_sub(c.flags.len()));
    }
}
