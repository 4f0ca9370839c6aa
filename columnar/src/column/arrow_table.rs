//! Columns of Arrow tables (what `glyd -r` makes of a Parquet file): integer-like types coded
//! as the record engine's integers (`Date32` as dates, so that date predicates prune), strings
//! as its text, everything else (floats, booleans, binary, wide decimals, nested types) as the
//! array's Arrow IPC stream; and each chunk read back as the schema's exact type
//! ([`to_target`]), so a table reads back as the arrays that went in.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    make_array, Array, ArrayRef, ArrowPrimitiveType, Decimal128Array, LargeStringArray,
    PrimitiveArray, StringArray, StringViewArray,
};
use arrow_buffer::ArrowNativeType;
use arrow_schema::{DataType, IntervalUnit};

use super::decoded::Column;
use crate::codec::arrow_ipc::{array_to_ipc, arrow_error, size_of};
use crate::error::{Error, Result};
use crate::model::{EncodedColumn, Kind, RawColumn, Role, Stats, BARE, NULL};

/// How a column of an Arrow type is stored.
enum Storage {
    /// As integers, read through the integer type of the same width.
    Int(DataType),
    /// As the date kind (days since 1970), when every value is one it can spell.
    Date,
    Decimal(u8, i8),
    Text,
    Ipc,
}

fn storage(t: &DataType) -> Storage {
    use DataType::*;
    match t {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => Storage::Int(t.clone()),
        Date32 => Storage::Date,
        Time32(_) | Interval(IntervalUnit::YearMonth) => Storage::Int(Int32),
        Date64 | Time64(_) | Timestamp(..) | Duration(_) => Storage::Int(Int64),
        Decimal128(p, s) => Storage::Decimal(*p, *s),
        Utf8 | LargeUtf8 | Utf8View => Storage::Text,
        _ => Storage::Ipc,
    }
}

/// The array `a` relabelled as type `t` of the same layout (a `Date32` as `Int32`, or back).
fn relabel(a: &dyn Array, t: &DataType) -> Result<ArrayRef> {
    let data = a
        .to_data()
        .into_builder()
        .data_type(t.clone())
        .build()
        .map_err(arrow_error("column chunk"))?;
    Ok(make_array(data))
}

/// The present values of a primitive array as i64, `None` if one does not fit.
fn present<T: ArrowPrimitiveType>(a: &dyn Array) -> Option<Vec<i64>> {
    let p = a.as_primitive::<T>();
    let mut out = Vec::with_capacity(p.len() - p.null_count());
    for (i, v) in p.values().iter().enumerate() {
        if p.is_valid(i) {
            out.push(v.to_i64()?);
        }
    }
    Some(out)
}

/// The present values of an integer array (of any integer type), `None` if one does not fit.
fn integers(a: &dyn Array) -> Option<Vec<i64>> {
    match a.data_type() {
        DataType::Int8 => present::<Int8Type>(a),
        DataType::Int16 => present::<Int16Type>(a),
        DataType::Int32 => present::<Int32Type>(a),
        DataType::Int64 => present::<Int64Type>(a),
        DataType::UInt8 => present::<UInt8Type>(a),
        DataType::UInt16 => present::<UInt16Type>(a),
        DataType::UInt32 => present::<UInt32Type>(a),
        DataType::UInt64 => present::<UInt64Type>(a),
        DataType::Decimal128(..) => present::<Decimal128Type>(a),
        _ => None,
    }
}

/// Each row's flag: a value or a null.
fn flags_of(a: &dyn Array) -> Vec<u8> {
    (0..a.len())
        .map(|i| if a.is_valid(i) { BARE } else { NULL })
        .collect()
}

/// Candidate codings of one column of an Arrow table, and its values spelled as text for
/// columns the record engine codes (what links between columns compare; empty for IPC).
pub(crate) fn encode_array(a: &ArrayRef) -> Result<(RawColumn, Vec<EncodedColumn>)> {
    let raw_bytes = size_of(a.as_ref());
    let typed = |kind: Kind, values: Vec<i64>| {
        let flags = flags_of(a.as_ref());
        // The spellings, as a decoded column writes them (what a following column keys on).
        let col = Column::Typed {
            kind,
            flags: Some(flags.clone()),
            values: values.clone(),
            link: None,
            planes: None,
        };
        let mut w = col.writer();
        let mut raw = RawColumn::default();
        let mut v = Vec::new();
        for _ in 0..a.len() {
            v.clear();
            let flag = w.value(&mut v);
            raw.push(&v, flag);
        }
        (
            raw,
            super::encode::encode_typed(kind, flags, values, raw_bytes),
        )
    };
    let ints = match storage(a.data_type()) {
        Storage::Text => {
            let mut raw = RawColumn::default();
            let flags = flags_of(a.as_ref());
            for (i, &flag) in flags.iter().enumerate() {
                let v = match a.data_type() {
                    _ if flag == NULL => "",
                    DataType::Utf8 => a.as_string::<i32>().value(i),
                    DataType::LargeUtf8 => a.as_string::<i64>().value(i),
                    _ => a.as_string_view().value(i),
                };
                raw.push(v.as_bytes(), flag);
            }
            let cands = super::encode::encode_text(&raw);
            return Ok((raw, cands));
        }
        Storage::Date => {
            let days = present::<Date32Type>(a.as_ref()).unwrap_or_default();
            if days.iter().all(|&d| crate::spelling::date_in_range(d)) {
                return Ok(typed(Kind::Date, days));
            }
            integers(relabel(a.as_ref(), &DataType::Int32)?.as_ref())
        }
        Storage::Int(t) => integers(relabel(a.as_ref(), &t)?.as_ref()),
        Storage::Decimal(..) => integers(a.as_ref()),
        Storage::Ipc => None,
    };
    if let Some(values) = ints {
        return Ok(typed(Kind::Int, values));
    }
    let ipc = array_to_ipc(a)?;
    let stats = Stats {
        nulls: a.null_count() as u64,
        ..Stats::default()
    };
    let chunk = EncodedColumn {
        kind: Kind::Arrow,
        values: Vec::new(),
        // The IPC stream's own size: the reader bounds a chunk's decoded size by its group's.
        raw_bytes: ipc.len() as u64,
        stats,
        streams: vec![(Role::Bytes, ipc)],
    };
    Ok((RawColumn::default(), vec![chunk]))
}

/// Int64 values narrowed to `T` (the storage type of the column), nulls kept.
fn narrow<T: ArrowPrimitiveType>(a: &PrimitiveArray<Int64Type>) -> Result<ArrayRef>
where
    T::Native: TryFrom<i64>,
{
    let values = a
        .values()
        .iter()
        .map(|&v| T::Native::try_from(v))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| {
            Error::corrupt(
                "column chunk",
                0,
                format!("a value out of the range of {}", T::DATA_TYPE),
            )
        })?;
    Ok(Arc::new(PrimitiveArray::<T>::new(
        values.into(),
        a.nulls().cloned(),
    )))
}

/// A decoded column chunk of `rows` rows as an array of the table schema's type `target`.
pub fn to_target(col: &Column, rows: usize, target: &DataType) -> Result<ArrayRef> {
    if rows == 0 {
        return Ok(arrow_array::new_empty_array(target));
    }
    let natural = match col {
        Column::Arrow(_) => return col.to_arrow(rows, target),
        Column::Text { .. } => DataType::Utf8,
        Column::Typed { kind, .. } => kind.data_type(),
    };
    let mismatch = || {
        Error::corrupt(
            "column chunk",
            0,
            format!("{natural} values where the schema says {target}"),
        )
    };
    let a = col.to_arrow(rows, &natural)?;
    match (storage(target), &natural) {
        (Storage::Text, DataType::Utf8) => {
            let s: &StringArray = a.as_string::<i32>();
            Ok(match target {
                DataType::Utf8 => a,
                DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(s.iter())),
                _ => Arc::new(StringViewArray::from_iter(s.iter())),
            })
        }
        (Storage::Date, DataType::Date32) => Ok(a),
        (Storage::Date, DataType::Int64) => {
            relabel(narrow::<Int32Type>(a.as_primitive())?.as_ref(), target)
        }
        (Storage::Int(t), DataType::Int64) => {
            let a = a.as_primitive::<Int64Type>();
            let stored = match t {
                DataType::Int8 => narrow::<Int8Type>(a)?,
                DataType::Int16 => narrow::<Int16Type>(a)?,
                DataType::Int32 => narrow::<Int32Type>(a)?,
                DataType::Int64 => Arc::new(a.clone()),
                DataType::UInt8 => narrow::<UInt8Type>(a)?,
                DataType::UInt16 => narrow::<UInt16Type>(a)?,
                DataType::UInt32 => narrow::<UInt32Type>(a)?,
                _ => narrow::<UInt64Type>(a)?,
            };
            relabel(stored.as_ref(), target)
        }
        (Storage::Decimal(p, s), DataType::Int64) => {
            let a = a.as_primitive::<Int64Type>();
            let values: Vec<i128> = a.values().iter().map(|&v| i128::from(v)).collect();
            Ok(Arc::new(
                Decimal128Array::new(values.into(), a.nulls().cloned())
                    .with_precision_and_scale(p, s)
                    .map_err(arrow_error("column chunk"))?,
            ))
        }
        _ => Err(mismatch()),
    }
}
