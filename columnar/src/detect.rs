//! Telling what an input is from its first bytes: a SQL dump, JSON lines, delimited records,
//! or log lines (whose layout is chosen by trying each on the sample).

use glyd_core::Level;

use crate::escapes::Escapes;
use crate::model::{Dialect, Format};
use crate::shred::{delimited, json, log_lines, sql_dump};

/// Guesses the format of `sample` (the start of an input; `whole` when it is all of it): a
/// SQL dump, JSON lines, delimited records, or log lines; `None` for input that is not
/// records.
pub fn detect(sample: &[u8], whole: bool) -> Option<Format> {
    if sql_dump::sniff(sample) {
        return Some(Format::SqlDump);
    }
    json::sniff(sample, whole)
        .or_else(|| sniff(sample, whole))
        .map(Format::from)
}

/// The dialect of delimited text or log lines in `sample` (if it is not the whole input, its
/// last, possibly cut, line is ignored): delimited when a delimiter gives at least two fields
/// on at least 90% of the sample's records; otherwise, for line-oriented text, the log layout
/// that codes it smallest (see [`choose_log_layout`]); otherwise `None`.
pub fn sniff(sample: &[u8], whole: bool) -> Option<Dialect> {
    delimited::sniff(sample, whole).or_else(|| {
        delimited::text_lines(sample, whole)
            .map(|lines| choose_log_layout(lines, Level::Max, crate::timepattern::this_year()))
    })
}

/// The dialect of `sample` with `delimiter` imposed: its commonest field count, whatever
/// share of the records have it (records of other widths become exceptions). `None` only for
/// a sample with no complete record.
pub fn sniff_with(sample: &[u8], whole: bool, delimiter: u8) -> Option<Dialect> {
    delimited::sniff_with(sample, whole, delimiter)
}

/// The JSON lines dialect of `sample`, if at least 90% of its lines are JSON objects.
pub fn sniff_json_lines(sample: &[u8], whole: bool) -> Option<Dialect> {
    json::sniff(sample, whole)
}

/// The layout for log lines like `lines` (whole lines): the time, level and other fields its
/// lines lead with, named, and a message (or, with no time, perhaps whole lines), laid out to
/// make the smallest row group of the sample's start at `level`. A time spelled without a
/// year is in `year` (see [`Dialect::with_log_year`] to change it).
pub fn choose_log_layout(lines: &[u8], level: Level, year: i16) -> Dialect {
    log_lines::choose(lines, year, &mut |trial, d| {
        crate::rowgroup::encode(trial, 0, d, Escapes::None, level)
            .bytes
            .len()
    })
}
