//! How a table's rows are spelled: the delimiter (or the marker of a shaped layout), the
//! style of its values (CSV quoting, COPY text, JSON, log fields, SQL literals), the column
//! count, header record and column names; and the row terminators.

use crate::error::Result;
use crate::wire::{put_prefixed, put_varint, Cursor};

/// How a table's values are spelled around their bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Style {
    /// RFC 4180: a quoted value has its inner quotes doubled; an empty field in a typed column
    /// is a null.
    Csv,
    /// PostgreSQL `COPY ... FROM stdin` text: no quoting (special characters are backslash
    /// escapes, kept as spelled), `\N` is a null, an empty field is an empty string.
    Copy,
    /// JSON: strings are quoted with their escapes kept as spelled, `null` is a null.
    Json,
    /// Log fields: bare values between whitespace that each row's shape keeps; no nulls.
    Fields,
    /// SQL `INSERT ... VALUES` literals: strings between single quotes with their escapes kept
    /// as spelled, `NULL` is a null.
    Sql,
}

impl Style {
    /// How a null is spelled.
    pub fn null(self) -> &'static [u8] {
        match self {
            Style::Csv => b"",
            Style::Copy => b"\\N",
            Style::Json => b"null",
            Style::Fields => b"",
            Style::Sql => b"NULL",
        }
    }

    /// The quote around a quoted value.
    pub fn quote(self) -> u8 {
        match self {
            Style::Sql => b'\'',
            _ => b'"',
        }
    }

    /// Whether rows are laid out by shapes (see [`super::Shapes`]) rather than delimiters.
    pub fn shaped(self) -> bool {
        matches!(self, Style::Json | Style::Fields | Style::Sql)
    }

    /// Whether an empty bare value in a typed column is a null (rather than making the
    /// column text).
    pub fn empty_is_null(self) -> bool {
        self == Style::Csv
    }
}

/// Delimiters tried by `sniff`, in order of preference on a tie.
pub const DELIMITERS: [u8; 4] = [b',', b'\t', b'|', b';'];

/// The delimiter of a *lines* dialect: each line is one record of one field, unquoted (logs
/// and other line-oriented text; the field is then coded as templates and variables).
pub const LINES: u8 = b'\n';

/// Row terminators: `\n`, `\r\n`, or none (the input's last line, unterminated).
pub const LF: u8 = 0;

pub const CRLF: u8 = 1;

pub const NONE: u8 = 2;

/// The delimiter byte of a log fields dialect (a marker: the separator is any run of spaces
/// and tabs, kept in each row's shape).
pub const LOG_FIELDS: u8 = b' ';

/// The delimiter byte of a JSON lines dialect (a marker: JSON has no single delimiter).
pub const JSON_LINES: u8 = b'{';

/// The delimiter byte of a SQL INSERT values dialect (a marker: each row is a tuple).
pub const INSERT_VALUES: u8 = b'(';

/// How a delimited file is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dialect {
    pub delimiter: u8,
    pub style: Style,
    pub columns: usize,
    /// The header record, verbatim with its terminator, when the file has one.
    pub header: Option<Vec<u8>>,
    /// Column names: the header's fields, or `c1`, `c2`, ...
    pub names: Vec<String>,
}

impl Dialect {
    /// The lines dialect: one record per line, one column named `line`.
    pub fn lines() -> Self {
        Dialect {
            delimiter: LINES,
            style: Style::Csv,
            columns: 1,
            header: None,
            names: vec!["line".into()],
        }
    }

    /// The dialect of log lines with `k` leading fields (columns `f1` .. `fk`) and a message.
    pub fn log_fields(k: usize) -> Self {
        let mut names: Vec<String> = (1..=k).map(|i| format!("f{i}")).collect();
        names.push("message".into());
        Dialect {
            delimiter: LOG_FIELDS,
            style: Style::Fields,
            columns: k + 1,
            header: None,
            names,
        }
    }

    /// This dialect with columns `added` after its own (keys new to a JSON lines table).
    pub fn with_added(&self, added: &[String]) -> Dialect {
        let mut d = self.clone();
        d.columns += added.len();
        d.names.extend(added.iter().cloned());
        d
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.delimiter);
        out.push(match self.style {
            Style::Csv => 0,
            Style::Copy => 1,
            Style::Json => 2,
            Style::Fields => 3,
            Style::Sql => 4,
        });
        put_varint(out, self.columns as u64);
        put_prefixed(out, self.header.as_deref().unwrap_or_default());
        for n in &self.names {
            put_prefixed(out, n.as_bytes());
        }
    }

    pub fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let delimiter = c.u8()?;
        let style = match c.u8()? {
            0 => Style::Csv,
            1 => Style::Copy,
            2 => Style::Json,
            3 => Style::Fields,
            4 => Style::Sql,
            s => return Err(c.corrupt(format!("unknown field style {s}"))),
        };
        // Each column name costs at least one byte of the descriptor.
        let columns = c.bounded(c.remaining() as u64, "column count")?;
        if columns == 0 {
            return Err(c.corrupt("a delimited dialect with no columns"));
        }
        let header = c.prefixed()?;
        let header = (!header.is_empty()).then(|| header.to_vec());
        let mut names = Vec::with_capacity(columns);
        for _ in 0..columns {
            names.push(String::from_utf8_lossy(c.prefixed()?).into_owned());
        }
        Ok(Self {
            delimiter,
            style,
            columns,
            header,
            names,
        })
    }
}
