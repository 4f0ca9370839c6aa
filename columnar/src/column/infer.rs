//! Typing a column: the first of integer, decimal, date or timestamp that spells every non-null
//! value exactly (a `5` beside a `5.25` keeps it text), and each value read as that kind.
use crate::error::Result;
use crate::model::{has_value, Kind, RawColumn, ABSENT, BARE, NULL, QUOTED};
use crate::spelling::TimeFormat;

/// Chooses the column's kind from the values of its first `rows` rows: the first of int,
/// decimal, date, timestamp that spells every non-null value exactly (quoted or not); text
/// otherwise. Nulls are the values flagged [`NULL`] or [`ABSENT`] and, with `empty_is_null`,
/// empty bare ones.
pub(crate) fn infer(col: &RawColumn, empty_is_null: bool, rows: usize) -> Kind {
    let (mut int, mut date, mut time) = (true, true, true);
    let mut places: Option<u8> = None;
    let mut format: Option<TimeFormat> = None;
    let mut dec = true;
    let mut present = 0;
    for row in 0..rows {
        let Ok(v) = typed_value(col, row, empty_is_null) else {
            return Kind::Text;
        };
        let Some(v) = v else { continue };
        present += 1;
        int = int && crate::spelling::parse_int(v).is_some();
        date = date && crate::spelling::parse_date(v).is_some();
        if time {
            match crate::spelling::parse_timestamp(v) {
                Some((_, f)) if format.is_none_or(|g| g == f) => format = Some(f),
                _ => time = false,
            }
        }
        if dec {
            match crate::spelling::parse_decimal(v) {
                Some((_, p)) if places.is_none_or(|q| q == p) => places = Some(p),
                _ => dec = false,
            }
        }
        if !int && !dec && !date && !time {
            return Kind::Text;
        }
    }
    if present == 0 {
        Kind::Text
    } else if int {
        Kind::Int
    } else if let (true, Some(p)) = (dec, places) {
        // Integers (`5` beside `5.25`) fail parse_decimal, so `dec` holds only if every value
        // had exactly `p` places.
        Kind::Decimal(p)
    } else if date {
        Kind::Date
    } else if let (true, Some(f)) = (time, format) {
        Kind::Timestamp(f)
    } else {
        Kind::Text
    }
}

/// Row `row`'s value as a typed column sees it: `Ok(None)` for a null (or an empty field
/// where empty means null), `Err` for a value that only text can hold (an empty quoted
/// string, say).
#[inline]
fn typed_value(col: &RawColumn, row: usize, empty_is_null: bool) -> Result<Option<&[u8]>, ()> {
    let v = col.value(row);
    match col.flags[row] {
        NULL | ABSENT => Ok(None),
        BARE if v.is_empty() && empty_is_null => Ok(None),
        BARE | QUOTED if !v.is_empty() => Ok(Some(v)),
        _ => Err(()),
    }
}

/// Every row's stored flag and the present values of `col` as `kind`, or `None` if some value
/// is not of `kind` (for decimals and timestamps: not spelled alike).
pub(crate) fn typed_values(
    col: &RawColumn,
    kind: Kind,
    empty_is_null: bool,
) -> Option<(Vec<u8>, Vec<i64>)> {
    match kind {
        Kind::Int => values_as(col, kind, empty_is_null, crate::spelling::parse_int),
        Kind::Decimal(p) => values_as(col, kind, empty_is_null, |v| {
            crate::spelling::parse_decimal(v).and_then(|(x, q)| (q == p).then_some(x))
        }),
        Kind::Date => {
            let mut dates = crate::spelling::DateReader::default();
            values_as(col, kind, empty_is_null, |v| dates.read(v))
        }
        Kind::Timestamp(f) => values_as(col, kind, empty_is_null, |v| {
            crate::spelling::parse_timestamp(v).and_then(|(t, g)| (g == f).then_some(t))
        }),
        Kind::LogTime(p) => values_as(col, kind, empty_is_null, |v| {
            p.read(v).and_then(|(n, t)| (n == v.len()).then_some(t))
        }),
        Kind::Text | Kind::Arrow => None,
    }
}

/// [`typed_values`] with each present value read by `read` (one loop per kind).
#[inline(always)]
fn values_as(
    col: &RawColumn,
    kind: Kind,
    empty_is_null: bool,
    mut read: impl FnMut(&[u8]) -> Option<i64>,
) -> Option<(Vec<u8>, Vec<i64>)> {
    let mut flags = Vec::with_capacity(col.rows());
    let mut values = Vec::with_capacity(col.rows());
    for row in 0..col.rows() {
        let v = col.value(row);
        flags.push(stored_flag(kind, col.flags[row], v));
        if let Some(v) = typed_value(col, row, empty_is_null).ok()? {
            values.push(read(v)?);
        }
    }
    Some((flags, values))
}

/// The flag a column of `kind` stores for a value the shredder flagged `flag`: in a typed
/// column an empty value is an empty CSV field, a null (`infer` typed the column).
pub(crate) fn stored_flag(kind: Kind, flag: u8, v: &[u8]) -> u8 {
    match flag {
        ABSENT => ABSENT,
        _ if kind != Kind::Text && (!has_value(flag) || v.is_empty()) => NULL,
        f => f,
    }
}
