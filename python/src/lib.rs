//! `glyd._glyd`, the native half of the `glyd` Python package (`python/glyd/` is the other):
//! thin bindings over glyd-core (the codec), glyd-columnar (record archives, out as Arrow),
//! glyd-udf (SQL over them, on DataFusion) and glyd-gpu (tensor archives, KV pages). Logic stays in those crates; this crate turns Python
//! objects into their inputs and their errors into Python exceptions.

mod buffer;
mod codec;
mod errors;
mod files;
mod records;
mod sql;
mod tensors;

use pyo3::prelude::*;

#[pymodule]
fn _glyd(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GlydError", py.get_type::<errors::GlydError>())?;
    m.add("CorruptError", py.get_type::<errors::CorruptError>())?;
    m.add_function(wrap_pyfunction!(codec::compress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompress, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decompressed_size, m)?)?;
    m.add_class::<codec::FrameReader>()?;
    m.add_class::<codec::FrameWriter>()?;
    m.add_function(wrap_pyfunction!(records::write_records, m)?)?;
    m.add_class::<records::Archive>()?;
    m.add_function(wrap_pyfunction!(sql::sql, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::save_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::pack_bytes, m)?)?;
    m.add_class::<tensors::TensorFile>()?;
    m.add_function(wrap_pyfunction!(tensors::kv_encode_page, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::kv_page_shape, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::kv_decode_page_into, m)?)?;
    Ok(())
}
