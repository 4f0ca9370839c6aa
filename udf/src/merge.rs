//! Many archives as one table: their schemas merged by name, as DuckDB's `union_by_name` and
//! Parquet readers' schema evolution do. A column is in the table if any archive has it, in
//! the order names first appear (the verbatim-records column last); where archives disagree
//! on its type it reads as text. An archive's rows have NULL in the columns it lacks.

use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, ArrayRef};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::Result;

/// The schema of a table whose archives' schemas are `schemas`.
pub(crate) fn merge_by_name<'a>(schemas: impl IntoIterator<Item = &'a Schema>) -> Schema {
    let schemas: Vec<&Schema> = schemas.into_iter().collect();
    let mut fields: Vec<Field> = Vec::new();
    for s in &schemas {
        for f in s.fields() {
            match fields.iter_mut().find(|m| m.name() == f.name()) {
                Some(m) if m.data_type() != f.data_type() => {
                    let text = match (m.data_type(), f.data_type()) {
                        (DataType::Utf8View, _) | (_, DataType::Utf8View) => DataType::Utf8View,
                        _ => DataType::Utf8,
                    };
                    *m = Field::new(m.name(), text, true);
                }
                Some(_) => {}
                None => fields.push(f.as_ref().clone()),
            }
        }
    }
    for f in &mut fields {
        if !schemas.iter().all(|s| s.field_with_name(f.name()).is_ok()) {
            *f = f.clone().with_nullable(true);
        }
    }
    // Verbatim records' text after every column, whichever archive brought it first.
    let (mut columns, raw): (Vec<Field>, Vec<Field>) = fields
        .into_iter()
        .partition(|f| !f.name().starts_with(glyd_columnar::RAW));
    columns.extend(raw);
    Schema::new(columns)
}

/// For each column of `table`, the index of the column of that name in `own`, if it has one.
pub(crate) fn column_map(table: &Schema, own: &Schema) -> Vec<Option<usize>> {
    table
        .fields()
        .iter()
        .map(|f| own.index_of(f.name()).ok())
        .collect()
}

/// `batch` (columns of an archive: for each wanted column, `found` says whether the archive
/// has it, and those it has are the batch's columns in order) as a batch of `schema`: a
/// missing column NULL, one of another type cast.
pub(crate) fn widen(
    batch: &RecordBatch,
    found: &[bool],
    schema: &Arc<Schema>,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let mut next = batch.columns().iter();
    let columns = found
        .iter()
        .zip(schema.fields())
        .map(|(&has, field)| -> Result<ArrayRef> {
            match has.then(|| next.next()).flatten() {
                Some(a) if a.data_type() == field.data_type() => Ok(Arc::clone(a)),
                Some(a) => Ok(cast(a, field.data_type())?),
                None => Ok(new_null_array(field.data_type(), rows)),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(fields: &[(&str, DataType)]) -> Schema {
        Schema::new(
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), false))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn columns_join_by_name_in_first_order_and_disagreements_read_as_text() {
        let a = schema(&[
            ("ts", DataType::Int64),
            ("msg", DataType::Utf8),
            ("_raw", DataType::Utf8),
        ]);
        let b = schema(&[
            ("msg", DataType::Utf8),
            ("ts", DataType::Utf8),
            ("trace", DataType::Int64),
        ]);
        let m = merge_by_name([&a, &b]);
        let names: Vec<&str> = m.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["ts", "msg", "trace", "_raw"]);
        assert_eq!(m.field(0).data_type(), &DataType::Utf8);
        assert_eq!(m.field(2).data_type(), &DataType::Int64);
        // Nullable where some archive lacks the column or it was widened.
        let nullable: Vec<bool> = m.fields().iter().map(|f| f.is_nullable()).collect();
        assert_eq!(nullable, [true, false, true, true]);
        assert_eq!(column_map(&m, &b), [Some(1), Some(0), Some(2), None]);
    }

    #[test]
    fn a_batch_widens_to_the_table() {
        use datafusion::arrow::array::{Array, Int64Array, StringArray};
        let own = Arc::new(schema(&[("ts", DataType::Int64)]));
        let b = RecordBatch::try_new(own, vec![Arc::new(Int64Array::from(vec![7, 8]))]).unwrap();
        let table = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Utf8, true),
            Field::new("msg", DataType::Utf8, true),
        ]));
        let w = widen(&b, &[true, false], &table).unwrap();
        let ts = w.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((ts.value(0), ts.value(1)), ("7", "8"));
        assert_eq!(w.column(1).null_count(), 2);
    }
}
