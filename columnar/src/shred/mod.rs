//! Shredders: records of each input format into a [`Shredded`] row group, depending only on
//! the model. Delimited text ([`delimited`]), JSON lines ([`json`]), log lines
//! ([`log_lines`]), SQL dumps ([`sql_dump`]); [`lines`] holds what the shaped ones share.
pub mod delimited;
pub mod json;
pub mod lines;
pub mod log_lines;
pub mod sql_dump;

use crate::model::{Dialect, Shredded, Style};

/// Shreds `src` (whole records; the header, if any, already taken off) by `d`.
pub fn shred(src: &[u8], d: &Dialect) -> Shredded {
    match d.style {
        Style::Json => json::shred(src, d),
        Style::Fields => log_lines::shred(src, d),
        Style::Sql => sql_dump::shred_inserts(src, d),
        Style::Csv | Style::Copy => delimited::shred(src, d),
    }
}
