//! Escapes undone for Arrow reads. Text values of JSON lines, COPY blocks and SQL literals are
//! stored as spelled, escapes and all, because a rebuild must reproduce the spelling; a query
//! wants the value: JSON `a\"b` is `a"b`, COPY `a\tb` holds a tab, SQL `'O''Neil'` is
//! `O'Neil`. CSV needs nothing here (its doubled quotes are undone when shredded).
//!
//! SQL literals undo doubled quotes; backslash escapes too in MySQL's tables, known by their
//! backquoted names (`` `film` ``): a backslash is an escape in a MySQL dump and a plain byte
//! in a PostgreSQL one, and a value alone cannot tell which. A value whose escapes do not
//! decode (or decode to bytes that are not UTF-8) is read as spelled.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, StringArray, StringViewArray};
use arrow_schema::DataType;
use memchr::{memchr, memchr2};

use crate::model::{Style, Table};

/// The escapes a table's text values carry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Escapes {
    /// CSV (undone when shredded) and log fields.
    None,
    /// JSON string escapes.
    Json,
    /// PostgreSQL `COPY` text escapes.
    Copy,
    /// SQL literals: a doubled quote.
    Sql,
    /// MySQL literals: a doubled quote, and backslash escapes.
    Mysql,
}

impl Escapes {
    /// The escapes of the values of a table of `style` named `name` (as its input spells it).
    pub fn of(style: Style, name: &str) -> Self {
        match style {
            Style::Json => Escapes::Json,
            Style::Copy => Escapes::Copy,
            // Backquoted identifiers are MySQL's alone.
            Style::Sql if name.starts_with('`') => Escapes::Mysql,
            Style::Sql => Escapes::Sql,
            Style::Csv | Style::Fields => Escapes::None,
        }
    }

    /// Whether `bytes` hold a byte that starts an escape.
    pub fn in_bytes(self, bytes: &[u8]) -> bool {
        match self {
            Escapes::None => false,
            Escapes::Json | Escapes::Copy => memchr(b'\\', bytes).is_some(),
            Escapes::Sql => memchr(b'\'', bytes).is_some(),
            Escapes::Mysql => memchr2(b'\\', b'\'', bytes).is_some(),
        }
    }
}

/// `v` with escapes `e` undone, appended to `out`; `false` (and `out` as it was) if an escape
/// does not decode.
pub fn unescape(e: Escapes, v: &[u8], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let ok = match e {
        Escapes::Json => unescape_json(v, out),
        Escapes::Copy => unescape_copy(v, out),
        Escapes::Sql => unescape_sql(v, out),
        Escapes::Mysql => unescape_mysql(v, out),
        Escapes::None => {
            out.extend_from_slice(v);
            true
        }
    };
    if !ok || std::str::from_utf8(&out[start..]).is_err() {
        out.truncate(start);
        return false;
    }
    true
}

/// Copies `v` to `out`, handing each backslash escape to `escape`: it gets the byte after the
/// backslash and the position after that, appends what the escape stands for and returns the
/// position after the escape, or `None` where it does not decode (then so does `v`).
fn backslash_escapes(
    v: &[u8],
    out: &mut Vec<u8>,
    mut escape: impl FnMut(u8, usize, &mut Vec<u8>) -> Option<usize>,
) -> bool {
    let mut i = 0;
    while let Some(k) = memchr(b'\\', &v[i..]) {
        out.extend_from_slice(&v[i..i + k]);
        let Some(&e) = v.get(i + k + 1) else {
            return false;
        };
        match escape(e, i + k + 2, out) {
            Some(next) => i = next,
            None => return false,
        }
    }
    out.extend_from_slice(&v[i..]);
    true
}

/// JSON string escapes (RFC 8259 §7), surrogate pairs included.
fn unescape_json(v: &[u8], out: &mut Vec<u8>) -> bool {
    backslash_escapes(v, out, |e, mut i, out| {
        let simple = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let hi = hex4(v, i)?;
                i += 4;
                let c = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate must be followed by `\u` and a low one.
                    let lo = match v.get(i..i + 2) {
                        Some(b"\\u") => hex4(v, i + 2),
                        _ => None,
                    };
                    let lo = lo.filter(|lo| (0xDC00..0xE000).contains(lo))?;
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                } else {
                    char::from_u32(hi)
                }?;
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                return Some(i);
            }
            _ => return None,
        };
        out.push(simple);
        Some(i)
    })
}

/// The four hex digits at `v[at..]` as a number.
fn hex4(v: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(v.get(at..at + 4)?).ok()?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// PostgreSQL `COPY` text escapes: `\b \f \n \r \t \v`, one to three octal digits, `\x` and
/// one or two hex digits; a backslash before any other byte stands for that byte.
fn unescape_copy(v: &[u8], out: &mut Vec<u8>) -> bool {
    backslash_escapes(v, out, |e, mut i, out| {
        let byte = match e {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'0'..=b'7' => {
                let mut n = u32::from(e - b'0');
                // Up to two more digits.
                let end = i + 2;
                while let Some(&d @ b'0'..=b'7') = v.get(i).filter(|_| i < end) {
                    n = n * 8 + u32::from(d - b'0');
                    i += 1;
                }
                // PostgreSQL keeps the low eight bits of `\777`.
                n as u8
            }
            b'x' if v.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let hex = |b: u8| (b as char).to_digit(16).map_or(0, |d| d as u8);
                let mut n = hex(v[i]);
                i += 1;
                if let Some(&d) = v.get(i).filter(|d| d.is_ascii_hexdigit()) {
                    n = n * 16 + hex(d);
                    i += 1;
                }
                n
            }
            other => other,
        };
        out.push(byte);
        Some(i)
    })
}

/// SQL string literals: a doubled quote is one quote.
fn unescape_sql(v: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    while let Some(k) = memchr(b'\'', &v[i..]) {
        out.extend_from_slice(&v[i..=i + k]);
        i += k + 1;
        if v.get(i) == Some(&b'\'') {
            i += 1;
        }
    }
    out.extend_from_slice(&v[i..]);
    true
}

/// MySQL string literals: a doubled quote, and `\0 \b \n \r \t \Z`; `\%` and `\_` keep their
/// backslash (they are `LIKE` escapes); a backslash before any other byte stands for it.
fn unescape_mysql(v: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    while let Some(k) = memchr2(b'\\', b'\'', &v[i..]) {
        out.extend_from_slice(&v[i..i + k]);
        let at = i + k;
        i = at + 2;
        match (v[at], v.get(at + 1)) {
            (b'\'', Some(b'\'')) => out.push(b'\''),
            (b'\'', _) => {
                out.push(b'\'');
                i = at + 1;
            }
            (_, None) => return false,
            (_, Some(&e)) => match e {
                b'0' => out.push(0),
                b'b' => out.push(0x08),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(0x1a),
                b'%' | b'_' => out.extend_from_slice(&[b'\\', e]),
                other => out.push(other),
            },
        }
    }
    out.extend_from_slice(&v[i..]);
    true
}

/// Value `v` (as stored) as a read presents it: with its escapes undone, or as spelled where
/// an escape does not decode or the result is not UTF-8. Borrowed where it has no escapes.
pub fn as_read(e: Escapes, v: &[u8]) -> Cow<'_, [u8]> {
    if !e.in_bytes(v) {
        return Cow::Borrowed(v);
    }
    let mut out = Vec::with_capacity(v.len());
    if !unescape(e, v, &mut out) || std::str::from_utf8(&out).is_err() {
        return Cow::Borrowed(v);
    }
    Cow::Owned(out)
}

/// `array` (Utf8 or Utf8View text of a column with escapes `e`) with each value's escapes
/// undone. Other arrays come back as they are.
pub fn unescape_array(array: ArrayRef, e: Escapes) -> ArrayRef {
    if e == Escapes::None {
        return array;
    }
    // A value with its escapes undone, or as spelled (borrowed: most values have none).
    fn undone(v: &str, e: Escapes) -> Cow<'_, str> {
        match as_read(e, v.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(v),
            Cow::Owned(b) => String::from_utf8(b).map_or(Cow::Borrowed(v), Cow::Owned),
        }
    }
    match array.data_type() {
        DataType::Utf8 => Arc::new(
            (array.as_string::<i32>().iter())
                .map(|v| v.map(|v| undone(v, e)))
                .collect::<StringArray>(),
        ),
        DataType::Utf8View => Arc::new(
            (array.as_string_view().iter())
                .map(|v| v.map(|v| undone(v, e)))
                .collect::<StringViewArray>(),
        ),
        _ => array,
    }
}

impl Table {
    /// The escapes its text values carry (undone when they are read as Arrow).
    pub fn escapes(&self) -> Escapes {
        match self.dialect() {
            Some(d) => Escapes::of(d.style, &self.name),
            None => Escapes::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn undo(e: Escapes, v: &str) -> Option<String> {
        let mut out = Vec::new();
        unescape(e, v.as_bytes(), &mut out).then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn json_escapes() {
        let j = |v| undo(Escapes::Json, v);
        assert_eq!(j(r#"a\"b\\c\/d"#).as_deref(), Some(r#"a"b\c/d"#));
        assert_eq!(j(r"\b\f\n\r\t").as_deref(), Some("\u{8}\u{c}\n\r\t"));
        assert_eq!(j(r"caf\u00e9 \ud83d\ude00").as_deref(), Some("café 😀"));
        assert_eq!(j("plain").as_deref(), Some("plain"));
        // Not JSON escapes: read as spelled.
        for bad in [
            r"\q",
            r"tail\",
            r"\u12",
            r"\ud83d",
            r"\ud83d\u0041",
            r"\uzzzz",
        ] {
            assert_eq!(j(bad), None, "{bad}");
        }
    }

    #[test]
    fn copy_escapes() {
        let c = |v| undo(Escapes::Copy, v);
        assert_eq!(c(r"a\tb\nc\\d").as_deref(), Some("a\tb\nc\\d"));
        assert_eq!(c(r"\101\x42\x4a\7").as_deref(), Some("ABJ\u{7}"));
        // Three octal digits at most.
        assert_eq!(c(r"\0123").as_deref(), Some("\n3"));
        assert_eq!(c(r"\q\,").as_deref(), Some("q,"));
        assert_eq!(c(r"\xz").as_deref(), Some("xz"));
        assert_eq!(c(r"end\"), None);
        // Bytes that are not UTF-8.
        assert_eq!(c(r"\377"), None);
    }

    #[test]
    fn sql_undoes_doubled_quotes_and_mysql_backslashes() {
        let s = |v| undo(Escapes::Sql, v);
        assert_eq!(s("O''Neil").as_deref(), Some("O'Neil"));
        assert_eq!(s("''''").as_deref(), Some("''"));
        assert_eq!(s(r"It\'s a\\b").as_deref(), Some(r"It\'s a\\b"));
        let m = |v| undo(Escapes::Mysql, v);
        assert_eq!(m(r"It\'s a\\b O''K").as_deref(), Some(r"It's a\b O'K"));
        assert_eq!(m(r"\n\t\0\Z\q").as_deref(), Some("\n\t\0\u{1a}q"));
        assert_eq!(m(r"50\% a\_b").as_deref(), Some(r"50\% a\_b"));
        assert_eq!(m(r"tail\"), None);
        assert_eq!(Escapes::of(Style::Sql, "`film`"), Escapes::Mysql);
        assert_eq!(Escapes::of(Style::Sql, "public.film"), Escapes::Sql);
        assert_eq!(Escapes::of(Style::Csv, "records"), Escapes::None);
    }

    #[test]
    fn arrays_keep_nulls_and_plain_values() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![
            Some(r#"say \"hi\""#),
            None,
            Some("plain"),
            Some(r"bad \q"),
        ]));
        let u = unescape_array(a, Escapes::Json);
        let u = u.as_string::<i32>();
        assert_eq!(u.value(0), r#"say "hi""#);
        assert!(u.is_null(1));
        assert_eq!((u.value(2), u.value(3)), ("plain", r"bad \q"));
        let v: ArrayRef = Arc::new(StringViewArray::from(vec![Some("a\\tb"), None]));
        let u = unescape_array(v, Escapes::Copy);
        assert_eq!(u.as_string_view().value(0), "a\tb");
        assert!(u.is_null(1));
        let csv: ArrayRef = Arc::new(StringArray::from(vec![r"a\tb"]));
        assert_eq!(
            unescape_array(csv, Escapes::None)
                .as_string::<i32>()
                .value(0),
            r"a\tb"
        );
    }
}
