//! SQL over record archives from Python: DataFusion with glyd's tables (an archive, or a
//! folder of them, each read by row groups and pruned by their statistics), the log and JSON
//! functions, and the safe policy a library caller's SQL gets (no DDL, no files named in the
//! query). The result comes back as an Arrow C stream.

use std::path::PathBuf;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::RecordBatchIterator;
use datafusion::prelude::SessionContext;
use glyd_udf::{register_glyd_tables, register_json_functions, register_log_functions, SqlPolicy};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::GlydError;

/// Runs `query` over `tables` (name, path of an archive or a folder of archives); returns the
/// result as an Arrow C stream (a PyCapsule).
#[pyfunction]
pub fn sql<'py>(
    py: Python<'py>,
    query: &str,
    tables: Vec<(String, PathBuf)>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let (schema, batches) = py.detach(|| -> PyResult<_> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| GlydError::new_err(format!("starting the query runtime: {e}")))?;
        let mut ctx = SessionContext::new();
        let policy = SqlPolicy::default();
        register_json_functions(&mut ctx).map_err(query_error)?;
        register_log_functions(&ctx, policy);
        for (name, path) in &tables {
            register_glyd_tables(&ctx, name, path).map_err(|e| {
                PyValueError::new_err(format!("table {name} ({}): {e}", path.display()))
            })?;
        }
        rt.block_on(async {
            let df = glyd_udf::policy::sql(&ctx, query, policy)
                .await
                .map_err(query_error)?;
            let schema = df.schema().as_arrow().clone();
            let batches = df.collect().await.map_err(query_error)?;
            Ok((schema, batches))
        })
    })?;
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema.into());
    let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, ffi, c"arrow_array_stream")
}

fn query_error(e: datafusion::error::DataFusionError) -> PyErr {
    PyValueError::new_err(format!("SQL: {e}"))
}
