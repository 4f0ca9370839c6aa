//! What an input is, as record mode sees it: the kind of records and how they are laid out.

use arrow_schema::SchemaRef;

use super::dialect::{Dialect, Style, LINES};

/// What an input holds, and so how a writer splits it into tables and rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// One table of delimited records: CSV, TSV, `|`- or `;`-separated.
    Delimited(Dialect),
    /// One table of JSON objects, one a line.
    JsonLines(Dialect),
    /// One table of log lines: leading fields and a message, or whole lines.
    LogLines(Dialect),
    /// A SQL dump: its statements, and a table per COPY block's or INSERT statements' table.
    SqlDump,
    /// One table of Arrow data with this schema (a Parquet file's); it rebuilds as Parquet.
    Arrow(SchemaRef),
}

impl From<Dialect> for Format {
    /// The format of one table laid out as `d`.
    fn from(d: Dialect) -> Self {
        match d.style {
            Style::Json => Format::JsonLines(d),
            Style::Fields => Format::LogLines(d),
            _ if d.delimiter == LINES => Format::LogLines(d),
            _ => Format::Delimited(d),
        }
    }
}

impl Format {
    /// The dialect of the one table a text format holds (`None` for a SQL dump, whose tables
    /// each have their own, and for Arrow data).
    pub fn dialect(&self) -> Option<&Dialect> {
        match self {
            Format::Delimited(d) | Format::JsonLines(d) | Format::LogLines(d) => Some(d),
            Format::SqlDump | Format::Arrow(_) => None,
        }
    }
}
