//! Decoded columns as Arrow arrays: typed values as Int64, Decimal128, Date32 or timestamps,
//! text as Utf8 or as views of a dictionary's entries, a batch of rows at a time, skipping rows
//! a filter rules out on its dictionary or templates.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::make_view;
use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Int64Array, StringArray, StringViewArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampSecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};
use glyd_core::copy::{extend_from_padded, MARGIN};

use super::decoded::{char_boundary, Column, RowCursor, TextViews, INLINE_VIEW};
use crate::error::{Error, Result};
use crate::model::{arrow_unit, has_value, Kind};
use crate::predicate::TextTest;

/// A typed chunk's values, one per row, converted to an Arrow buffer's type: rows without a
/// value (nulls, by `flags`) get a zero. One pass straight from the decoded values where the
/// chunk has no flags (every row has a value).
fn spread_values<T: Default>(
    values: &[i64],
    flags: Option<&[u8]>,
    rows: usize,
    convert: impl Fn(i64) -> T,
) -> Result<Vec<T>> {
    let present = flags.map_or(rows, |f| f.iter().filter(|&&x| has_value(x)).count());
    if present != values.len() || flags.is_some_and(|f| f.len() != rows) {
        return Err(Error::corrupt(
            "column chunk",
            0,
            format!("{} values for {present} present rows", values.len()),
        ));
    }
    let Some(flags) = flags else {
        return Ok(values.iter().map(|&v| convert(v)).collect());
    };
    let mut it = values.iter();
    Ok(flags
        .iter()
        .map(|&f| match has_value(f) {
            true => it.next().map_or_else(T::default, |&v| convert(v)),
            false => T::default(),
        })
        .collect())
}

impl Column {
    /// Rows `range` of a text column as a `Utf8View` array: a dictionary column's rows are
    /// views of its entries (made once per row group, gathered per row), other text columns'
    /// rows are views of their bytes. No bytes are copied per batch: every batch shares one
    /// buffer of the column's bytes, made (and checked as UTF-8) at the first batch.
    fn text_views(&self, range: Range<usize>, cursor: &mut RowCursor) -> Result<ArrayRef> {
        let Column::Text {
            flags,
            data,
            offsets,
            ids,
            ..
        } = self
        else {
            unreachable!("called on text columns")
        };
        let corrupt = |what: &str| Error::corrupt("column chunk", 0, what.to_string());
        let nulls = match flags {
            Some(f) => f
                .get(range.clone())
                .ok_or_else(|| corrupt("flags end early"))?
                .iter()
                .any(|&x| !has_value(x))
                .then(|| NullBuffer::from_iter(f[range.clone()].iter().map(|&x| has_value(x)))),
            None => None,
        };
        if cursor.views.is_none() {
            let entries = match ids {
                Some(_) => offsets
                    .windows(2)
                    .map(|w| {
                        let e = data
                            .get(w[0] as usize..w[1] as usize)
                            .ok_or_else(|| corrupt("dictionary entry past its bytes"))?;
                        Ok(make_view(e, 0, w[0]))
                    })
                    .collect::<Result<Vec<u128>>>()?,
                None => Vec::new(),
            };
            // A dictionary's entries are checked here, once; other rows' ends per batch.
            let utf8 = std::str::from_utf8(data).is_ok()
                && (ids.is_none() || offsets.iter().all(|&o| char_boundary(data, o)));
            let short_entries = ids.is_some()
                && offsets
                    .windows(2)
                    .all(|w| w[1].wrapping_sub(w[0]) <= INLINE_VIEW);
            cursor.views = Some(TextViews {
                buffer: arrow_buffer::Buffer::from_slice_ref(data),
                entries,
                utf8,
                short_entries,
            });
        }
        let Some(tv) = &cursor.views else {
            unreachable!("made above")
        };
        let data = tv.buffer.as_slice();
        // Views whose ends all fall on character boundaries of valid UTF-8 are valid.
        let (views, checked, short) = match ids {
            Some(ids) => {
                let ids = ids.get(range).ok_or_else(|| corrupt("ids end early"))?;
                // Ids were checked against the entries when the chunk was decoded; checked
                // again here, once per batch (a vectorized max), so that the gather below
                // is one load per row.
                if ids
                    .iter()
                    .copied()
                    .max()
                    .is_some_and(|m| m as usize >= tv.entries.len())
                {
                    return Err(corrupt("dictionary id past its entries"));
                }
                let views: Vec<u128> = ids.iter().map(|&e| tv.entries[e as usize]).collect();
                (views, tv.utf8, tv.short_entries)
            }
            None => {
                let ends = offsets
                    .get(range.start..=range.end)
                    .ok_or_else(|| corrupt("text ends end early"))?;
                let views = ends
                    .windows(2)
                    .map(|w| {
                        let v = data
                            .get(w[0] as usize..w[1] as usize)
                            .ok_or_else(|| corrupt("text ends past its bytes"))?;
                        Ok(make_view(v, 0, w[0]))
                    })
                    .collect::<Result<Vec<u128>>>()?;
                let ok = tv.utf8 && ends.iter().all(|&o| char_boundary(data, o));
                let short = ends.windows(2).all(|w| w[1] - w[0] <= INLINE_VIEW);
                (views, ok, short)
            }
        };
        // Views of at most 12 bytes hold their bytes themselves: an array of only such views
        // goes without the buffer, as Arrow's own readers make them (a buffer no view uses
        // makes every kernel that copies views, such as DataFusion's batch coalescing after a
        // filter, first add up the bytes the views point to).
        let buffers = if short {
            Vec::new()
        } else {
            vec![tv.buffer.clone()]
        };
        let views = ScalarBuffer::from(views);
        Ok(Arc::new(if checked {
            // SAFETY: each view was made by `make_view` from bytes of buffer 0 at their
            // offset there; those bytes are valid UTF-8 and begin and end on character
            // boundaries (checked above).
            unsafe { StringViewArray::new_unchecked(views, buffers, nulls) }
        } else {
            StringViewArray::try_new(views, buffers, nulls)
                .map_err(|e| Error::corrupt("text column", 0, e.to_string()))?
        }))
    }

    /// Moves `cursor` past rows `range` without making them (see [`Column::to_arrow_rows`]):
    /// a range no row of which a query keeps.
    pub fn skip_rows(&self, range: Range<usize>, cursor: &mut RowCursor) {
        if let Column::Typed { flags, .. } = self {
            cursor.next_value += match flags {
                Some(f) => f
                    .get(range)
                    .map_or(0, |f| f.iter().filter(|&&x| has_value(x)).count()),
                None => range.len(),
            };
        }
    }

    /// For each row of a text column coded on codes, whether its value (as `read` presents
    /// it) passes `test`, and is not null; `None` for a column coded another way. A dictionary
    /// is tested once per distinct value, not once per row. A templated column is judged once
    /// per template where the template's literal text settles it, and by the row's value
    /// elsewhere; not at all (`None`) where `escaped`, since `read` may then change the text a
    /// template holds.
    pub fn rows_passing(
        &self,
        read: impl Fn(&[u8]) -> std::borrow::Cow<'_, [u8]>,
        escaped: bool,
        test: &TextTest,
    ) -> Option<Vec<bool>> {
        let Column::Text {
            flags,
            data,
            offsets,
            ids,
            templates,
            ..
        } = self
        else {
            return None;
        };
        let entry = |data: &'_ [u8], offsets: &[u32], e: usize| -> Option<std::ops::Range<usize>> {
            let (&start, &end) = (offsets.get(e)?, offsets.get(e + 1)?);
            (start <= end && end as usize <= data.len()).then_some(start as usize..end as usize)
        };
        let mut rows: Vec<bool> = match (ids, templates) {
            (Some(ids), _) => {
                let entries = (0..offsets.len().saturating_sub(1))
                    .map(|e| Some(test.passes(&read(&data[entry(data, offsets, e)?]))))
                    .collect::<Option<Vec<bool>>>()?;
                // An id past the entries (refused when the chunk decoded) keeps its row.
                ids.iter()
                    .map(|&id| entries.get(id as usize).copied().unwrap_or(true))
                    .collect()
            }
            (None, Some(t)) if !escaped => {
                let settled: Vec<Option<bool>> = (0..t.offsets.len().saturating_sub(1))
                    .map(|e| {
                        entry(&t.data, &t.offsets, e).and_then(|r| test.on_template(&t.data[r]))
                    })
                    .collect();
                if settled.iter().all(Option::is_none) {
                    return None;
                }
                // Rows whose template leaves it open, or whose value cannot be found (a
                // corrupt chunk), are judged by their value, or kept.
                t.ids
                    .iter()
                    .enumerate()
                    .map(|(row, &id)| match settled.get(id as usize) {
                        Some(&Some(answer)) => answer,
                        _ => entry(data, offsets, row).is_none_or(|r| test.passes(&read(&data[r]))),
                    })
                    .collect()
            }
            _ => return None,
        };
        if let Some(f) = flags {
            for (r, &flag) in rows.iter_mut().zip(f) {
                *r &= has_value(flag);
            }
        }
        Some(rows)
    }

    /// The column (of `rows` rows) as an Arrow array of type `target`: the archive schema's
    /// type for the column, which is this chunk's kind's type or, for a column whose kind
    /// differs between row groups, Utf8 (the values' spellings).
    pub fn to_arrow(&self, rows: usize, target: &DataType) -> Result<ArrayRef> {
        self.to_arrow_rows(rows, 0..rows, &mut RowCursor::default(), target)
    }

    /// Rows `range` of the column (of `rows` rows) as an Arrow array of type `target`, as
    /// [`Column::to_arrow`]. `cursor` starts as `RowCursor::default()` for the first range
    /// and each call moves it past the range, so consecutive ranges read the column once in
    /// all. Made a range at a time, a
    /// query's batch is still in cache when the query reads it.
    pub fn to_arrow_rows(
        &self,
        rows: usize,
        range: Range<usize>,
        cursor: &mut RowCursor,
        target: &DataType,
    ) -> Result<ArrayRef> {
        if range.end > rows || range.start > range.end {
            return Err(Error::Request(format!(
                "rows {range:?} of a column of {rows} rows"
            )));
        }
        if range.is_empty() {
            return Ok(arrow_array::new_empty_array(target));
        }
        if *target == DataType::Utf8View {
            if let Column::Text { .. } = self {
                return self.text_views(range, cursor);
            }
            let a = self.to_arrow_rows(rows, range, cursor, &DataType::Utf8)?;
            return arrow_cast::cast(&a, target)
                .map_err(|e| Error::corrupt("column chunk", 0, e.to_string()));
        }
        let as_text = *target == DataType::Utf8;
        let whole = range == (0..rows);
        if let Column::Arrow(ipc) = self {
            let a = crate::codec::arrow_ipc::array_from_ipc(ipc, rows, target)?;
            return Ok(if whole {
                a
            } else {
                a.slice(range.start, range.len())
            });
        }
        if as_text {
            if let Column::Typed {
                planes: Some(_), ..
            } = self
            {
                // Spelled from values: not a reader's path (it decodes such columns first).
                let mut decoded = self.clone();
                decoded.decode_planes()?;
                return decoded.to_arrow_rows(rows, range, cursor, target);
            }
        }
        if as_text && !whole && matches!(self, Column::Typed { .. }) {
            // Spelled values come from a writer that starts at the first row: spell them all
            // at the first range, and slice.
            if cursor.spelled.is_none() {
                let all = self.to_arrow_rows(rows, 0..rows, &mut RowCursor::default(), target)?;
                cursor.spelled = Some(all);
            }
            let Some(all) = &cursor.spelled else {
                unreachable!("made above")
            };
            return Ok(all.slice(range.start, range.len()));
        }
        let corrupt = |what: &str| Error::corrupt("column chunk", 0, what.to_string());
        let len = range.len();
        if let Column::Typed { kind, .. } = self {
            if !as_text && kind.data_type() != *target {
                return Err(Error::corrupt(
                    "column chunk",
                    0,
                    format!("{} values where the schema says {target}", kind.name()),
                ));
            }
        } else if !as_text {
            return Err(Error::corrupt(
                "column chunk",
                0,
                format!("text values where the schema says {target}"),
            ));
        }
        match self {
            Column::Typed {
                kind,
                planes: Some(planes),
                ..
            } if !as_text => {
                // No flags (a chunk keeps its planes only without them): a value every row.
                let rows = cursor.next_value..cursor.next_value + len;
                cursor.next_value += len;
                Ok(match kind {
                    Kind::Int => Arc::new(Int64Array::new(
                        ScalarBuffer::from(planes.values(rows, |v| v)?),
                        None,
                    )),
                    Kind::Decimal(p) => Arc::new(
                        Decimal128Array::new(
                            ScalarBuffer::from(planes.values(rows, i128::from)?),
                            None,
                        )
                        .with_precision_and_scale(18, *p as i8)
                        .map_err(|e| Error::corrupt("column chunk", 0, e.to_string()))?,
                    ),
                    _ => unreachable!("only integer and decimal chunks keep their planes"),
                })
            }
            Column::Typed {
                kind,
                flags,
                values,
                ..
            } if !as_text => {
                let flags = match flags {
                    Some(f) => Some(
                        f.get(range.clone())
                            .ok_or_else(|| corrupt("flags end early"))?,
                    ),
                    None => None,
                };
                let present = flags.map_or(len, |f| f.iter().filter(|&&x| has_value(x)).count());
                let values = values
                    .get(cursor.next_value..cursor.next_value + present)
                    .ok_or_else(|| corrupt("fewer values than present rows"))?;
                cursor.next_value += present;
                // No null buffer where every row has a value: kernels take their no-null paths.
                let nulls = flags
                    .map(|f| NullBuffer::from_iter(f.iter().map(|&x| has_value(x))))
                    .filter(|n| n.null_count() > 0);
                let rows = len;
                Ok(match kind {
                    Kind::Int => Arc::new(Int64Array::new(
                        ScalarBuffer::from(spread_values(values, flags, rows, |v| v)?),
                        nulls,
                    )),
                    Kind::Decimal(p) => Arc::new(
                        Decimal128Array::new(
                            ScalarBuffer::from(spread_values(values, flags, rows, i128::from)?),
                            nulls,
                        )
                        .with_precision_and_scale(18, *p as i8)
                        .map_err(|e| Error::corrupt("column chunk", 0, e.to_string()))?,
                    ),
                    Kind::Date => Arc::new(Date32Array::new(
                        ScalarBuffer::from(spread_values(values, flags, rows, |d| d as i32)?),
                        nulls,
                    )),
                    Kind::Timestamp(_) | Kind::LogTime(_) => {
                        let places = kind.time_places().expect("a time kind");
                        let (unit, factor) = arrow_unit(places);
                        // A stored time times the unit's factor fits unless the chunk lies.
                        if values.iter().any(|v| v.checked_mul(factor).is_none()) {
                            return Err(Error::corrupt(
                                "column chunk",
                                0,
                                "a time value out of range for its unit",
                            ));
                        }
                        let values = spread_values(values, flags, rows, |v| v * factor)?;
                        match unit {
                            TimeUnit::Second => Arc::new(TimestampSecondArray::new(
                                ScalarBuffer::from(values),
                                nulls,
                            )),
                            TimeUnit::Millisecond => Arc::new(TimestampMillisecondArray::new(
                                ScalarBuffer::from(values),
                                nulls,
                            )),
                            _ => Arc::new(TimestampMicrosecondArray::new(
                                ScalarBuffer::from(values),
                                nulls,
                            )),
                        }
                    }
                    Kind::Text | Kind::Arrow => unreachable!("typed columns are not text"),
                })
            }
            Column::Text {
                flags,
                data,
                offsets,
                ids,
                ..
            } => {
                // Text straight from its entries: a copy per row, no spelling.
                let too_big = || Error::Request("text column over 2 GiB".into());
                let rows = len;
                let (bytes, ends) = match ids {
                    None => {
                        let ends = offsets
                            .get(range.start..=range.end)
                            .ok_or_else(|| corrupt("text ends end early"))?;
                        let (first, last) = (ends[0] as usize, ends[rows] as usize);
                        let ends = ends
                            .iter()
                            .map(|&o| i32::try_from(o as usize - first).map_err(|_| too_big()))
                            .collect::<Result<Vec<i32>>>()?;
                        let bytes = data
                            .get(first..last)
                            .ok_or_else(|| corrupt("text ends past its bytes"))?;
                        (bytes.to_vec(), ends)
                    }
                    Some(ids)
                        if offsets.len() > 1 && offsets.windows(2).all(|w| w[1] == w[0] + 1) =>
                    {
                        // One-byte entries (flags, codes): the bytes are a lookup per row and
                        // the ends count up by one.
                        if rows > i32::MAX as usize {
                            return Err(too_big());
                        }
                        let entries: Vec<u8> = offsets[..offsets.len() - 1]
                            .iter()
                            .map(|&o| data[o as usize])
                            .collect();
                        let ids = ids
                            .get(range.clone())
                            .ok_or_else(|| corrupt("ids end early"))?;
                        let bytes = ids.iter().map(|&e| entries[e as usize]).collect();
                        (bytes, (0..=rows as i32).collect())
                    }
                    Some(ids) => {
                        // Ends first, so the bytes are allocated once at their size. Entry
                        // lengths once; the running total is checked once at the end (the
                        // ends rise, so the last is the largest).
                        let ids = ids
                            .get(range.clone())
                            .ok_or_else(|| corrupt("ids end early"))?;
                        let lens: Vec<i64> = offsets
                            .windows(2)
                            .map(|w| i64::from(w[1]) - i64::from(w[0]))
                            .collect();
                        let mut ends = Vec::with_capacity(rows + 1);
                        ends.push(0i32);
                        let mut total = 0i64;
                        for &e in ids {
                            total += lens[e as usize];
                            ends.push(total as i32);
                        }
                        if total > i64::from(i32::MAX) {
                            return Err(too_big());
                        }
                        // Entries are short (often a byte or two): wide copies from a padded
                        // copy of the dictionary, not a memcpy call per row.
                        let mut padded = Vec::with_capacity(data.len() + MARGIN);
                        padded.extend_from_slice(data);
                        padded.extend_from_slice(&[0; MARGIN]);
                        let mut bytes = Vec::with_capacity(total as usize + MARGIN);
                        for &e in ids {
                            let e = e as usize;
                            let at = offsets[e] as usize;
                            extend_from_padded(
                                &mut bytes,
                                &padded,
                                at,
                                offsets[e + 1] as usize - at,
                            );
                        }
                        (bytes, ends)
                    }
                };
                let flags = match flags {
                    Some(f) => Some(
                        f.get(range.clone())
                            .ok_or_else(|| corrupt("flags end early"))?,
                    ),
                    None => None,
                };
                let nulls = flags
                    .filter(|f| f.iter().any(|&x| !has_value(x)))
                    .map(|f| NullBuffer::from_iter(f.iter().map(|&x| has_value(x))));
                // Rows copied from a dictionary whose every entry is valid UTF-8 are valid
                // UTF-8 with every end on a character boundary: checked once per entry here
                // rather than over every row's bytes.
                let entries_valid = ids.is_some()
                    && offsets
                        .windows(2)
                        .all(|w| std::str::from_utf8(&data[w[0] as usize..w[1] as usize]).is_ok());
                let ends = OffsetBuffer::new(ScalarBuffer::from(ends));
                let arr = if entries_valid {
                    // SAFETY: `ends` start at zero and add each row's entry length in row
                    // order, so they rise and the last is `bytes.len()`; each row's bytes are
                    // one whole entry, valid UTF-8 (checked above).
                    unsafe { StringArray::new_unchecked(ends, bytes.into(), nulls) }
                } else {
                    StringArray::try_new(ends, bytes.into(), nulls)
                        .map_err(|e| Error::corrupt("text column", 0, e.to_string()))?
                };
                Ok(Arc::new(arr))
            }
            Column::Typed { .. } => {
                let mut w = self.writer();
                let mut data = Vec::new();
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0i32);
                let mut valid = Vec::with_capacity(rows);
                for _ in 0..rows {
                    valid.push(has_value(w.value(&mut data)));
                    let end = i32::try_from(data.len())
                        .map_err(|_| Error::Request("text column over 2 GiB".into()))?;
                    offsets.push(end);
                }
                let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
                let arr = StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    data.into(),
                    nulls,
                )
                .map_err(|e| Error::corrupt("text column", 0, e.to_string()))?;
                Ok(Arc::new(arr))
            }
            Column::Arrow(_) => unreachable!("Arrow columns returned above"),
        }
    }
}

/// Values stored for a typed `kind` (integers, scaled decimals, days, timestamp units), none
/// null, as an Arrow array of `target` (the kind's own type, or one it converts to exactly):
/// how a reader turns a chunk's statistics into Arrow scalars.
pub fn typed_array(kind: Kind, values: Vec<i64>, target: &DataType) -> Result<ArrayRef> {
    let rows = values.len();
    Column::Typed {
        kind,
        flags: None,
        values,
        link: None,
        planes: None,
    }
    .to_arrow(rows, target)
}
