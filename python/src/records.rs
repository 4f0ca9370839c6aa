//! Record archives from Python: text records (CSV, TSV, JSON lines, logs, SQL dumps) or a
//! Parquet file shredded into an archive, and an archive's table streamed out through the
//! Arrow C stream interface, which pyarrow (and pandas, polars, DuckDB) import without a copy.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use glyd_columnar::{
    detect, sniff_json_lines, sniff_with, ArchiveReader, Format, GroupBatches, RecordWriter,
    WriteOptions,
};
use glyd_core::Level;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::buffer::Borrowed;
use crate::codec::level_of;
use crate::errors::{self, GlydError};
use crate::files;

/// Bytes of input looked at to choose the format (as `glyd -r` does).
const SAMPLE: usize = 1 << 20;

/// Rows per Arrow batch handed to Python.
const BATCH_ROWS: usize = 64 * 1024;

/// The format named `name`, or the one the sample sniffs as.
fn format_of(name: Option<&str>, data: &[u8], level: Level, year: i16) -> PyResult<Format> {
    let whole = data.len() <= SAMPLE;
    let sample = &data[..data.len().min(SAMPLE)];
    let found = match name {
        None => detect(sample, whole),
        Some("csv") => sniff_with(sample, whole, b',').map(Format::Delimited),
        Some("tsv") => sniff_with(sample, whole, b'\t').map(Format::Delimited),
        Some("jsonl") => sniff_json_lines(sample, whole).map(Format::JsonLines),
        Some("sql") => Some(Format::SqlDump),
        Some("log") => {
            let lines = sample
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(sample, |end| &sample[..=end]);
            Some(Format::LogLines(glyd_columnar::choose_log_layout(
                lines, level, year,
            )))
        }
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "unknown format {other:?}: use \"csv\", \"tsv\", \"jsonl\", \"log\", \"sql\" or \"parquet\""
            )))
        }
    };
    let format = found.ok_or_else(|| {
        GlydError::new_err(match name {
            None => "the data is not records glyd recognizes (CSV, TSV, JSON lines, logs, a SQL dump, Parquet): store it with glyd.compress, or name the format".to_string(),
            Some(n) => format!("the data does not read as {n}"),
        })
    })?;
    Ok(match format {
        Format::LogLines(d) => Format::LogLines(d.with_log_year(year)),
        f => f,
    })
}

/// Writes `data` (records, or a Parquet file) as a record archive at `path`: to a temporary
/// file beside it, synced and renamed into place. Returns the archive's size.
#[pyfunction]
#[pyo3(signature = (path, data, format = None, level = None, threads = 0, year = None))]
pub fn write_records(
    py: Python<'_>,
    path: PathBuf,
    data: &Bound<'_, PyAny>,
    format: Option<String>,
    level: Option<&Bound<'_, PyAny>>,
    threads: usize,
    year: Option<i16>,
) -> PyResult<u64> {
    let level = level.map(level_of).transpose()?.unwrap_or(Level::DEFAULT);
    let src = Borrowed::read(data)?;
    let data = src.bytes();
    let opts = WriteOptions {
        level,
        threads,
        row_group_size: glyd_columnar::DEFAULT_ROW_GROUP,
    };
    let parquet = glyd_columnar::parquet::sniff(data);
    let format = match format.as_deref() {
        Some("parquet") if !parquet => {
            return Err(GlydError::new_err(
                "format=\"parquet\", but the data does not start with PAR1: not a Parquet file",
            ))
        }
        Some("parquet") => None,
        None if parquet => None,
        name => Some(format_of(
            name,
            data,
            level,
            year.unwrap_or_else(glyd_columnar::timepattern::this_year),
        )?),
    };
    let name = path.display().to_string();
    let tmp = files::beside(&path, &name)?;
    py.detach(|| -> PyResult<u64> {
        let file = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
        let file = match format {
            None => {
                let bytes = bytes::Bytes::copy_from_slice(data);
                glyd_columnar::parquet::archive(bytes, file, &opts).map_err(errors::columnar)?
            }
            Some(f) => {
                let mut w = RecordWriter::new(file, f, &opts).map_err(errors::columnar)?;
                w.write_all(data).map_err(|e| errors::io(&name, e))?;
                w.finish().map_err(errors::columnar)?
            }
        };
        file.into_inner()
            .map_err(|e| errors::io(&name, e.into_error()))?
            .sync_all()
            .map_err(|e| errors::io(&name, e))?;
        let len = tmp
            .as_file()
            .metadata()
            .map_err(|e| errors::io(&name, e))?
            .len();
        tmp.persist(&path).map_err(|e| errors::io(&name, e.error))?;
        Ok(len)
    })
}

/// The rows of one table of an archive, a row group at a time.
struct TableStream {
    archive: Arc<ArchiveReader>,
    groups: VecDeque<usize>,
    projection: Vec<usize>,
    current: Option<GroupBatches>,
    schema: SchemaRef,
    name: String,
}

impl Iterator for TableStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.current.as_mut().and_then(Iterator::next) {
                return Some(batch.map_err(|e| self.failed(e)));
            }
            let g = self.groups.pop_front()?;
            match self
                .archive
                .read_batches(Some(&self.projection), g, BATCH_ROWS, false)
            {
                Ok(batches) => self.current = Some(batches),
                Err(e) => {
                    self.groups.clear();
                    return Some(Err(self.failed(e)));
                }
            }
        }
    }
}

impl TableStream {
    fn failed(&self, e: glyd_columnar::Error) -> ArrowError {
        ArrowError::ExternalError(format!("{}: {e}", self.name).into())
    }
}

impl RecordBatchReader for TableStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// An open record archive.
#[pyclass(module = "glyd._glyd", frozen)]
pub struct Archive {
    archive: Arc<ArchiveReader>,
    name: String,
}

#[pymethods]
impl Archive {
    /// Opens (and validates the footer and index of) the archive at `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let name = path.display().to_string();
        let archive = py
            .detach(|| ArchiveReader::open(&path))
            .map_err(|e| errors::in_file(py, &name, errors::columnar(e)))?;
        Ok(Archive {
            archive: Arc::new(archive),
            name,
        })
    }

    /// The names of the archive's tables (one, except for SQL dumps).
    fn tables(&self) -> Vec<String> {
        self.archive
            .tables()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The column names of `table` (the only table when `None`).
    #[pyo3(signature = (table = None))]
    fn columns(&self, table: Option<&str>) -> PyResult<Vec<String>> {
        let t = self.table(table)?;
        let schema = self.archive.table_schema(t).map_err(errors::columnar)?;
        Ok(schema.fields().iter().map(|f| f.name().clone()).collect())
    }

    /// Rows of every table.
    #[getter]
    fn rows(&self) -> u64 {
        self.archive.rows()
    }

    /// The footer's key, value metadata.
    fn metadata(&self) -> Vec<(String, String)> {
        self.archive.metadata().to_vec()
    }

    /// An Arrow C stream (a PyCapsule) of `table`'s `columns` (all when `None`).
    #[pyo3(signature = (table = None, columns = None))]
    fn stream<'py>(
        &self,
        py: Python<'py>,
        table: Option<&str>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let t = self.table(table)?;
        let schema = self.archive.table_schema(t).map_err(errors::columnar)?;
        let projection: Vec<usize> = match &columns {
            None => (0..schema.fields().len()).collect(),
            Some(names) => names
                .iter()
                .map(|c| {
                    schema.index_of(c).map_err(|_| {
                        PyValueError::new_err(format!(
                            "{}: no column named {c:?}; it has {}",
                            self.name,
                            schema
                                .fields()
                                .iter()
                                .map(|f| f.name().as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                })
                .collect::<PyResult<_>>()?,
        };
        let schema = Arc::new(
            schema
                .project(&projection)
                .map_err(|e| GlydError::new_err(e.to_string()))?,
        );
        let stream = TableStream {
            archive: self.archive.clone(),
            groups: self.archive.groups_of(t).into(),
            projection,
            current: None,
            schema,
            name: self.name.clone(),
        };
        let ffi = FFI_ArrowArrayStream::new(Box::new(stream));
        // The consumer moves the stream out of the capsule (leaving it released); a capsule
        // dropped unconsumed releases it here.
        PyCapsule::new_with_value(py, ffi, c"arrow_array_stream")
    }
}

impl Archive {
    fn table(&self, table: Option<&str>) -> PyResult<usize> {
        let tables = self.archive.tables();
        match table {
            Some(name) => self
                .archive
                .table_index(name)
                .map_err(|e| PyValueError::new_err(format!("{}: {e}", self.name))),
            None if tables.len() == 1 => Ok(0),
            None => Err(PyValueError::new_err(format!(
                "{}: the archive holds {} tables ({}); choose one with table=NAME",
                self.name,
                tables.len(),
                tables
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}
