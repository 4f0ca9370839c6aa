//! Spelling values back: a decoded column's rows as the input spelled them, in the table's
//! style ([`ColumnWriter`]), and Arrow values as CSV or JSON text ([`Cells`], `spell`).

use arrow_schema::{DataType, TimeUnit};
use glyd_core::copy::{extend_from_padded, MARGIN};

use super::decoded::Column;
use crate::error::{Error, Result};
use crate::model::{has_value, Kind, Style, BARE, NULL, QUOTED};
use crate::spelling::TimeFormat;

impl Column {
    /// A cursor that writes the column's rows in order (typed values are consumed in order),
    /// spelled in CSV style.
    pub fn writer(&self) -> ColumnWriter<'_> {
        self.writer_for(Style::Csv)
    }

    /// A writer that spells values, quotes and nulls in `style`.
    pub fn writer_for(&self, style: Style) -> ColumnWriter<'_> {
        // A dictionary's entries with a margin after the last: each row's value is then one
        // or two wide copies (a copy of variable length is otherwise a call to memcpy).
        let padded = match self {
            Column::Text {
                data, ids: Some(_), ..
            } => {
                let mut p = Vec::with_capacity(data.len() + MARGIN);
                p.extend_from_slice(data);
                p.extend_from_slice(&[0; MARGIN]);
                p
            }
            _ => Vec::new(),
        };
        ColumnWriter {
            col: self,
            style,
            next_value: 0,
            next_present: 0,
            dates: crate::spelling::DateSpeller::default(),
            padded,
        }
    }
}

/// Appends `v` in CSV quotes, its own quotes doubled (RFC 4180).
pub fn put_csv_quoted(out: &mut Vec<u8>, v: &[u8]) {
    out.push(b'"');
    if memchr::memchr(b'"', v).is_none() {
        out.extend_from_slice(v);
    } else {
        for part in v.split_inclusive(|&c| c == b'"') {
            out.extend_from_slice(part);
            if part.last() == Some(&b'"') {
                out.push(b'"');
            }
        }
    }
    out.push(b'"');
}

/// Writes a column's rows one after another.
pub struct ColumnWriter<'a> {
    col: &'a Column,
    style: Style,
    next_value: usize,
    next_present: usize,
    dates: crate::spelling::DateSpeller,
    /// For a dictionary column, its entries followed by [`MARGIN`] bytes.
    padded: Vec<u8>,
}

impl ColumnWriter<'_> {
    /// Appends the next `n` rows' spellings to `data`, pushing the end of each to `ends`: the
    /// column's kind is looked at once, not per row.
    pub fn spell_rows(&mut self, n: usize, data: &mut Vec<u8>, ends: &mut Vec<usize>) {
        let row = self.next_value;
        match self.col {
            Column::Typed {
                kind,
                flags: None,
                values,
                ..
            } => {
                let values = &values[self.next_present..self.next_present + n];
                match kind {
                    Kind::Int => crate::spelling::put_ints(values, data, ends),
                    Kind::Decimal(p) => crate::spelling::put_decimals(values, *p, data, ends),
                    Kind::Date => values.iter().for_each(|&v| {
                        self.dates.put(data, v);
                        ends.push(data.len());
                    }),
                    Kind::Timestamp(f) => values.iter().for_each(|&v| {
                        self.dates.put_timestamp(data, v, *f);
                        ends.push(data.len());
                    }),
                    Kind::LogTime(p) => values.iter().for_each(|&v| {
                        p.spell(data, v);
                        ends.push(data.len());
                    }),
                    Kind::Text | Kind::Arrow => unreachable!("typed columns are not text"),
                }
                self.next_present += n;
                self.next_value += n;
            }
            Column::Text {
                flags,
                data: entries,
                offsets,
                ids,
                ..
            } if flags
                .as_ref()
                .is_none_or(|f| f[row..row + n].iter().all(|&x| x == BARE)) =>
            {
                match ids {
                    Some(ids) => ids[row..row + n].iter().for_each(|&e| {
                        let (a, b) = (offsets[e as usize] as usize, offsets[e as usize + 1]);
                        extend_from_padded(data, &self.padded, a, b as usize - a);
                        ends.push(data.len());
                    }),
                    None => {
                        // Plain text: the rows are one contiguous run of the column's bytes.
                        let base = offsets[row] as usize;
                        data.extend_from_slice(&entries[base..offsets[row + n] as usize]);
                        let shift = data.len() - (offsets[row + n] as usize - base);
                        ends.extend(
                            offsets[row + 1..=row + n]
                                .iter()
                                .map(|&o| shift + o as usize - base),
                        );
                    }
                }
                self.next_value += n;
            }
            // Text quoted in some rows, as CSV quotes free text (TPC-H comments): no nulls to
            // spell, so each row is its value, quoted or not.
            Column::Text {
                flags: Some(flags),
                data: entries,
                offsets,
                ids,
                ..
            } if self.style == Style::Csv
                && flags[row..row + n]
                    .iter()
                    .all(|&x| x == BARE || x == QUOTED) =>
            {
                for (k, &flag) in flags[row..row + n].iter().enumerate() {
                    let e = ids.as_ref().map_or(row + k, |ids| ids[row + k] as usize);
                    let v = &entries[offsets[e] as usize..offsets[e + 1] as usize];
                    if flag == QUOTED {
                        put_csv_quoted(data, v);
                    } else {
                        data.extend_from_slice(v);
                    }
                    ends.push(data.len());
                }
                self.next_value += n;
            }
            _ => {
                for _ in 0..n {
                    self.spelled(data);
                    ends.push(data.len());
                }
            }
        }
    }

    /// Appends the next row's value without its quoting (a null appends nothing).
    pub fn value(&mut self, out: &mut Vec<u8>) -> u8 {
        self.write(out, false)
    }

    /// Appends the next row's value spelled exactly as it was (quotes included, a null as the
    /// style spells it).
    pub fn spelled(&mut self, out: &mut Vec<u8>) {
        self.write(out, true);
    }

    fn write(&mut self, out: &mut Vec<u8>, spelled: bool) -> u8 {
        let row = self.next_value;
        self.next_value += 1;
        match self.col {
            // Arrow tables rebuild as Parquet, never as text: their columns spell nothing.
            Column::Arrow(_) => NULL,
            Column::Typed { kind, flags, .. } => {
                let flag = Column::flag(flags, row);
                if has_value(flag) {
                    let Column::Typed { values, .. } = self.col else {
                        unreachable!()
                    };
                    let quoted = spelled && flag == QUOTED;
                    if quoted {
                        out.push(self.style.quote());
                    }
                    // Values are stored for present rows only, in row order.
                    let v = values[self.next_present];
                    self.next_present += 1;
                    match kind {
                        Kind::Int => crate::spelling::put_int(out, v),
                        Kind::Decimal(p) => crate::spelling::put_decimal(out, v, *p),
                        Kind::Date => self.dates.put(out, v),
                        Kind::Timestamp(f) => self.dates.put_timestamp(out, v, *f),
                        Kind::LogTime(p) => p.spell(out, v),
                        Kind::Text | Kind::Arrow => unreachable!("typed columns are not text"),
                    }
                    if quoted {
                        out.push(self.style.quote());
                    }
                } else if spelled && flag == NULL {
                    out.extend_from_slice(self.style.null());
                }
                flag
            }
            Column::Text {
                flags,
                data,
                offsets,
                ids,
                ..
            } => {
                let e = ids.as_ref().map_or(row, |ids| ids[row] as usize);
                let v = &data[offsets[e] as usize..offsets[e + 1] as usize];
                let flag = Column::flag(flags, row);
                if spelled && flag == QUOTED && self.style == Style::Csv {
                    put_csv_quoted(out, v);
                } else if spelled && flag == QUOTED {
                    out.push(self.style.quote());
                    out.extend_from_slice(v);
                    out.push(self.style.quote());
                } else if spelled && flag == NULL {
                    out.extend_from_slice(self.style.null());
                } else {
                    out.extend_from_slice(v);
                }
                flag
            }
        }
    }
}

/// Spells the values of one array the reader produced, as `glyd cat` prints them: the record
/// engine's own types as they were spelled in the input (`spell`), any other Arrow type (an
/// Arrow table's) as Arrow displays it.
pub struct Cells<'a> {
    array: &'a dyn arrow_array::Array,
    display: Option<arrow_cast::display::ArrayFormatter<'a>>,
}

impl<'a> Cells<'a> {
    pub fn new(array: &'a dyn arrow_array::Array) -> Result<Self> {
        let own = matches!(
            array.data_type(),
            DataType::Int64
                | DataType::Decimal128(18, _)
                | DataType::Date32
                | DataType::Utf8
                | DataType::Timestamp(
                    TimeUnit::Second | TimeUnit::Millisecond | TimeUnit::Microsecond,
                    None
                )
        );
        let display = if own {
            None
        } else {
            let options = arrow_cast::display::FormatOptions::default();
            Some(
                arrow_cast::display::ArrayFormatter::try_new(array, &options)
                    .map_err(|e| Error::Request(e.to_string()))?,
            )
        };
        Ok(Self { array, display })
    }

    /// Appends the value at `row`; returns what `spell` does.
    pub fn spell(&self, row: usize, out: &mut Vec<u8>) -> Option<bool> {
        let Some(f) = &self.display else {
            return spell(self.array, row, out);
        };
        if self.array.is_null(row) {
            return None;
        }
        let start = out.len();
        let _ = std::io::Write::write_fmt(out, format_args!("{}", f.value(row)));
        let t = self.array.data_type();
        let written = &out[start..];
        // A number or a boolean is bare in JSON; NaN and infinities are not JSON numbers.
        let number = (t.is_numeric()
            && written
                .iter()
                .all(|c| c.is_ascii_digit() || b"+-.eE".contains(c)))
            || *t == DataType::Boolean;
        Some(number && !written.is_empty())
    }
}

/// Appends the value at `row` of an array the reader produced, spelled as in the input
/// (without quotes). Returns `None` for a null, `Some(true)` for a number (a JSON number as
/// spelled), `Some(false)` for text and dates.
pub fn spell(array: &dyn arrow_array::Array, row: usize, out: &mut Vec<u8>) -> Option<bool> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{
        Date32Type, Decimal128Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Int64 => {
            crate::spelling::put_int(out, array.as_primitive::<Int64Type>().value(row));
            Some(true)
        }
        DataType::Decimal128(_, s) => {
            let v = array.as_primitive::<Decimal128Type>().value(row);
            crate::spelling::put_decimal(out, v as i64, *s as u8);
            Some(true)
        }
        DataType::Date32 => {
            crate::spelling::put_date(
                out,
                i64::from(array.as_primitive::<Date32Type>().value(row)),
            );
            Some(false)
        }
        DataType::Timestamp(unit, _) => {
            let (v, places) = match unit {
                TimeUnit::Second => (array.as_primitive::<TimestampSecondType>().value(row), 0),
                TimeUnit::Millisecond => (
                    array.as_primitive::<TimestampMillisecondType>().value(row),
                    3,
                ),
                TimeUnit::Microsecond => (
                    array.as_primitive::<TimestampMicrosecondType>().value(row),
                    6,
                ),
                TimeUnit::Nanosecond => (
                    array.as_primitive::<TimestampNanosecondType>().value(row) / 1000,
                    6,
                ),
            };
            let f = TimeFormat { places, t: false };
            crate::spelling::DateSpeller::default().put_timestamp(out, v, f);
            Some(false)
        }
        _ => {
            out.extend_from_slice(array.as_string::<i32>().value(row).as_bytes());
            Some(false)
        }
    }
}
