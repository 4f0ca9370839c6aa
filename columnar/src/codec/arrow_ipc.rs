//! Arrow arrays and schemas as Arrow IPC streams (a column of an Arrow table that the record
//! engine does not code itself, and an Arrow table's schema in the archive header), read back
//! with malformed input turned into errors.

use std::io::Cursor as IoCursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};

pub(crate) fn arrow_error(what: &'static str) -> impl Fn(arrow_schema::ArrowError) -> Error {
    move |e| Error::corrupt(what, 0, e.to_string())
}

/// Bytes of Arrow data the array holds (its share of the row group's size, which bounds
/// what a reader decodes for it).
pub(crate) fn size_of(a: &dyn Array) -> u64 {
    a.to_data()
        .get_slice_memory_size()
        .unwrap_or_else(|_| a.get_array_memory_size()) as u64
}

/// `array` as an Arrow IPC stream: a one-column schema, the batch, the end marker.
pub(crate) fn array_to_ipc(array: &ArrayRef) -> Result<Vec<u8>> {
    let schema = Schema::new(vec![Field::new("c", array.data_type().clone(), true)]);
    let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![array.clone()])
        .map_err(arrow_error("Arrow column"))?;
    let mut w = StreamWriter::try_new(Vec::new(), &schema).map_err(arrow_error("Arrow column"))?;
    w.write(&batch).map_err(arrow_error("Arrow column"))?;
    w.into_inner().map_err(arrow_error("Arrow column"))
}

/// Runs an Arrow IPC decode, turning a panic on malformed input into an error: the reader
/// validates what it builds, but an archive is untrusted input and must never abort a reader.
fn guarded<T>(what: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Error::corrupt(what, 0, "malformed Arrow IPC")))
}

/// The array in the IPC stream `ipc`, checked to be `rows` values of type `target`.
pub(crate) fn array_from_ipc(ipc: &[u8], rows: usize, target: &DataType) -> Result<ArrayRef> {
    guarded("Arrow column chunk", || {
        let bad = arrow_error("Arrow column chunk");
        let mut r = StreamReader::try_new(IoCursor::new(ipc), None).map_err(&bad)?;
        let batch = r
            .next()
            .ok_or_else(|| Error::corrupt("Arrow column chunk", 0, "no batch"))?
            .map_err(&bad)?;
        if r.next().is_some() || batch.num_columns() != 1 {
            return Err(Error::corrupt(
                "Arrow column chunk",
                0,
                "more than one array",
            ));
        }
        let a = batch.column(0).clone();
        if a.data_type() != target || a.len() != rows {
            return Err(Error::corrupt(
                "Arrow column chunk",
                0,
                format!(
                    "{} values of {} where the schema says {rows} of {target}",
                    a.len(),
                    a.data_type()
                ),
            ));
        }
        Ok(a)
    })
}

/// `schema` as an Arrow IPC stream holding only the schema message.
pub(crate) fn schema_to_ipc(schema: &Schema) -> Result<Vec<u8>> {
    let w = StreamWriter::try_new(Vec::new(), schema).map_err(arrow_error("Arrow schema"))?;
    w.into_inner().map_err(arrow_error("Arrow schema"))
}

/// The schema in an IPC stream written by [`schema_to_ipc`].
pub(crate) fn schema_from_ipc(ipc: &[u8]) -> Result<SchemaRef> {
    guarded("Arrow schema", || {
        let r =
            StreamReader::try_new(IoCursor::new(ipc), None).map_err(arrow_error("Arrow schema"))?;
        Ok(r.schema())
    })
}
