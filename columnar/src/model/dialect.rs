//! How a table's rows are spelled: the delimiter (or the marker of a shaped layout), the
//! style of its values (CSV quoting, COPY text, JSON, log fields, SQL literals), the column
//! count, header record and column names; and the row terminators.

use crate::error::Result;
use crate::timepattern::TimePattern;
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
    /// A log fields dialect's leading fields, how each is read (one per column but the
    /// message); empty when each is a whitespace-separated token (as before version 5).
    pub log_fields: Vec<LogField>,
}

/// How a log line's leading field is read, from where the field before it ended: that
/// field's closing bytes, whitespace and `open` are the text before it (kept in the row's
/// shape); then the value, up to where `end` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogField {
    pub open: Vec<u8>,
    pub end: FieldEnd,
}

/// Where a log line's leading field ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldEnd {
    /// At whitespace or the line's end (a token).
    Gap,
    /// A token ending in these bytes: the value is the token without them.
    Suffix(Vec<u8>),
    /// Before the first of this byte in the token (`sshd` of `sshd[42]:`).
    At(u8),
    /// Where the timestamp the pattern reads ends.
    Time(TimePattern),
    /// At the end of this many tokens (at least 1; the whitespace between them is part of
    /// the value).
    Tokens(usize),
}

impl LogField {
    /// A whitespace-separated token.
    pub fn token() -> Self {
        LogField {
            open: Vec::new(),
            end: FieldEnd::Gap,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_prefixed(out, &self.open);
        match &self.end {
            FieldEnd::Gap => out.push(0),
            FieldEnd::Suffix(s) => {
                out.push(1);
                put_prefixed(out, s);
            }
            FieldEnd::At(b) => out.extend_from_slice(&[2, *b]),
            FieldEnd::Time(p) => {
                out.push(3);
                p.encode(out);
            }
            FieldEnd::Tokens(n) => {
                out.push(4);
                put_varint(out, *n as u64);
            }
        }
    }

    fn decode(c: &mut Cursor<'_>) -> Result<Self> {
        let open = c.prefixed()?.to_vec();
        let end = match c.u8()? {
            0 => FieldEnd::Gap,
            1 => FieldEnd::Suffix(c.prefixed()?.to_vec()),
            2 => FieldEnd::At(c.u8()?),
            3 => FieldEnd::Time(TimePattern::decode(c)?),
            4 => match c.varint()? {
                n @ 1..=255 => FieldEnd::Tokens(n as usize),
                n => return Err(c.corrupt(format!("a log field of {n} tokens"))),
            },
            e => return Err(c.corrupt(format!("unknown log field end {e}"))),
        };
        Ok(LogField { open, end })
    }
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
            log_fields: Vec::new(),
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
            log_fields: Vec::new(),
        }
    }

    /// The dialect of log lines whose leading fields are read as `fields` say (all tokens
    /// when empty), named `names` (one more than fields: the message's).
    pub fn log_layout(fields: Vec<LogField>, names: Vec<String>) -> Self {
        debug_assert!(fields.is_empty() || fields.len() + 1 == names.len());
        Dialect {
            delimiter: LOG_FIELDS,
            style: Style::Fields,
            columns: names.len(),
            header: None,
            names,
            log_fields: fields,
        }
    }

    /// The time pattern of a log fields dialect's `time` field, if it has one.
    pub fn log_time(&self) -> Option<(usize, TimePattern)> {
        self.log_fields
            .iter()
            .enumerate()
            .find_map(|(i, f)| match f.end {
                FieldEnd::Time(p) => Some((i, p)),
                _ => None,
            })
    }

    /// This dialect with `year` assumed for a log time spelled without one.
    pub fn with_log_year(mut self, year: i16) -> Self {
        for f in &mut self.log_fields {
            if let FieldEnd::Time(p) = &mut f.end {
                if !p.has_year() {
                    *p = p.with_year(year);
                }
            }
        }
        self
    }

    /// The kind each column is read as regardless of its values (a log time's pattern), or
    /// `None` where values decide.
    pub fn kind_of(&self, column: usize) -> Option<crate::model::Kind> {
        match self.log_fields.get(column)?.end {
            FieldEnd::Time(p) => Some(crate::model::Kind::LogTime(p)),
            _ => None,
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
        // Version 5: a log fields dialect's fields, when not all tokens.
        if !self.log_fields.is_empty() {
            put_varint(out, self.log_fields.len() as u64);
            for f in &self.log_fields {
                f.encode(out);
            }
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
        let mut log_fields = Vec::new();
        if style == Style::Fields && c.remaining() > 0 {
            let n = c.bounded(c.remaining() as u64, "log field count")?;
            if n + 1 != columns {
                return Err(c.corrupt(format!("{n} log fields for {columns} columns")));
            }
            for _ in 0..n {
                log_fields.push(LogField::decode(c)?);
            }
        }
        Ok(Self {
            delimiter,
            style,
            columns,
            header,
            names,
            log_fields,
        })
    }
}
