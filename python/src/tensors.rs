//! Tensor files from Python: named tensors (as dtype, shape and bytes; the Python side speaks
//! NumPy and PyTorch) saved as a glyd tensor archive, optionally coded against a base
//! checkpoint, and read back one tensor at a time; KV-cache pages coded and decoded.

use std::io::Write;
use std::path::{Path, PathBuf};

use glyd_gpu::archive::EntryKind;
use glyd_gpu::kv::{self, GlydKvPageShape};
use glyd_gpu::safetensors::{self, NewTensor};
use glyd_gpu::{DType, Layout, Model, TensorArchive};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::buffer::Borrowed;
use crate::errors::{self, CorruptError};
use crate::files;

/// A tensor as the Python side hands it over: name, safetensors dtype name, shape, bytes.
type PyTensor<'py> = (String, String, Vec<u64>, Bound<'py, PyAny>);

/// Borrowed tensors, ready to lay out as a safetensors file.
struct Tensors {
    names: Vec<String>,
    dtypes: Vec<DType>,
    shapes: Vec<Vec<u64>>,
    data: Vec<Borrowed>,
}

impl Tensors {
    fn borrow(tensors: Vec<PyTensor<'_>>) -> PyResult<Tensors> {
        let mut out = Tensors {
            names: Vec::with_capacity(tensors.len()),
            dtypes: Vec::with_capacity(tensors.len()),
            shapes: Vec::with_capacity(tensors.len()),
            data: Vec::with_capacity(tensors.len()),
        };
        for (name, dtype, shape, data) in tensors {
            let d = DType::from_name(&dtype).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "tensor {name:?}: unknown dtype {dtype:?} (safetensors names: BF16, F16, F32, F64, F8_E4M3, F8_E5M2, I8..I64, U8..U64, BOOL)"
                ))
            })?;
            out.data.push(Borrowed::read(&data)?);
            out.names.push(name);
            out.dtypes.push(d);
            out.shapes.push(shape);
        }
        Ok(out)
    }

    /// The tensors as one safetensors file in memory (the model `pack_model` codes).
    fn model(&self, metadata: &[(String, String)]) -> glyd_gpu::Result<Model> {
        let list: Vec<NewTensor> = (0..self.names.len())
            .map(|i| NewTensor {
                name: &self.names[i],
                dtype: self.dtypes[i],
                shape: self.shapes[i].clone(),
                data: self.data[i].bytes(),
            })
            .collect();
        let meta: Vec<(&str, &str)> = metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Model::from_bytes("model.safetensors", safetensors::write(&list, &meta)?)
    }
}

/// Saves `tensors` as a tensor archive at `path` (a temporary file beside it, synced and
/// renamed into place), coded against `base` where a tensor matches one of it in name, dtype
/// and shape. Returns the archive's size.
#[pyfunction]
#[pyo3(signature = (path, tensors, metadata = None, base = None, gpu_layout = false))]
pub fn save_tensors(
    py: Python<'_>,
    path: PathBuf,
    tensors: Vec<PyTensor<'_>>,
    metadata: Option<Vec<(String, String)>>,
    base: Option<Vec<PyTensor<'_>>>,
    gpu_layout: bool,
) -> PyResult<u64> {
    let tensors = Tensors::borrow(tensors)?;
    let base = base.map(Tensors::borrow).transpose()?;
    let metadata = metadata.unwrap_or_default();
    let layout = if gpu_layout {
        Layout::Gpu
    } else {
        Layout::Dense
    };
    let name = path.display().to_string();
    py.detach(|| -> PyResult<u64> {
        let model = tensors.model(&metadata).map_err(errors::tensors)?;
        let base = base
            .as_ref()
            .map(|b| b.model(&[]))
            .transpose()
            .map_err(errors::tensors)?;
        write_archive(&path, &name, &model, base.as_ref(), layout)
    })
}

/// An open tensor archive (saved by `save_tensors`, or packed by `glyd pack` from a
/// safetensors file or folder).
#[pyclass(module = "glyd._glyd", frozen)]
pub struct TensorFile {
    archive: TensorArchive,
    name: String,
}

#[pymethods]
impl TensorFile {
    /// Opens the archive at `path`, validating its footer and index.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let name = path.display().to_string();
        let archive = py
            .detach(|| TensorArchive::open(&path))
            .map_err(|e| errors::in_file(py, &name, errors::tensors(e)))?;
        Ok(TensorFile { archive, name })
    }

    /// Every tensor as (name, dtype, shape), in archive order.
    fn tensors(&self) -> Vec<(String, String, Vec<u64>)> {
        self.archive
            .tensors()
            .filter_map(|e| match &e.kind {
                EntryKind::Tensor { name, dtype, shape } => {
                    Some((name.clone(), dtype.name().to_string(), shape.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The safetensors header JSON of the first file (where `__metadata__` lives).
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let entry = self
            .archive
            .files
            .first()
            .and_then(|f| f.entries.iter().find(|e| e.kind == EntryKind::Header))
            .ok_or_else(|| {
                CorruptError::new_err(format!("{}: no safetensors header", self.name))
            })?;
        let json = py
            .detach(|| self.archive.read_entry(entry, None))
            .map_err(|e| errors::in_file(py, &self.name, errors::tensors(e)))?;
        Ok(PyBytes::new(py, &json))
    }

    /// The archive's one file written back whole (a `torch.save` checkpoint or safetensors
    /// file, byte for byte), into a new bytearray; `base` (the file it was packed against, as
    /// bytes) when it was packed against one.
    #[pyo3(signature = (base = None))]
    fn unpack<'py>(
        &self,
        py: Python<'py>,
        base: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        if self.archive.files.len() != 1 {
            return Err(PyValueError::new_err(format!(
                "{}: a folder of {} files; unpack it with `glyd unpack`",
                self.name,
                self.archive.files.len()
            )));
        }
        let base = base.map(Borrowed::read).transpose()?;
        let len = usize::try_from(self.archive.files[0].len())
            .map_err(|_| CorruptError::new_err(format!("{}: file too large", self.name)))?;
        PyByteArray::new_with(py, len, |out| {
            py.detach(|| -> glyd_gpu::Result<()> {
                let base = base
                    .as_ref()
                    .map(|b| Model::from_bytes("base", b.bytes().to_vec()))
                    .transpose()?;
                let mut w = &mut out[..];
                self.archive
                    .write_file(0, &mut w, base.as_ref(), &mut |_| {})?;
                if !w.is_empty() {
                    return Err(glyd_gpu::Error::Usage("the file came back short".into()));
                }
                Ok(())
            })
            .map_err(|e| errors::in_file(py, &self.name, errors::tensors(e)))
        })
    }

    /// Tensor `name`'s bytes, in a new (writable) bytearray. `base` (tensors in the form
    /// `save_tensors` takes) is needed when it was saved against one.
    #[pyo3(signature = (name, base = None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        base: Option<Vec<PyTensor<'py>>>,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        let entry = self.archive.tensor(name).ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!(
                "no tensor named {name:?} in {}",
                self.name
            ))
        })?;
        let base = base.map(Tensors::borrow).transpose()?;
        let len = usize::try_from(entry.raw_len)
            .map_err(|_| CorruptError::new_err(format!("{}: tensor too large", self.name)))?;
        PyByteArray::new_with(py, len, |out| {
            py.detach(|| -> glyd_gpu::Result<()> {
                let base = base.as_ref().map(|b| b.model(&[])).transpose()?;
                self.archive.read_entry_into(entry, base.as_ref(), out)
            })
            .map_err(|e| errors::in_file(py, &self.name, errors::tensors(e)))
        })
    }
}

/// Packs one file held in `data` (a `torch.save` checkpoint or a safetensors file) as a
/// tensor archive at `path`, named `name` inside it, coded against `base` (the same kind of
/// file) where storages match. Returns the archive's size.
#[pyfunction]
#[pyo3(signature = (path, data, name, base = None))]
pub fn pack_bytes(
    py: Python<'_>,
    path: PathBuf,
    data: &Bound<'_, PyAny>,
    name: &str,
    base: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let data = Borrowed::read(data)?;
    let base = base.map(Borrowed::read).transpose()?;
    let shown = path.display().to_string();
    py.detach(|| -> PyResult<u64> {
        let model = Model::from_bytes(name, data.bytes().to_vec()).map_err(errors::tensors)?;
        let base = base
            .as_ref()
            .map(|b| Model::from_bytes("base", b.bytes().to_vec()))
            .transpose()
            .map_err(errors::tensors)?;
        write_archive(&path, &shown, &model, base.as_ref(), Layout::Dense)
    })
}

/// Writes `model` as a tensor archive at `path` (a temporary file beside it, synced and
/// renamed into place); returns its size.
fn write_archive(
    path: &Path,
    name: &str,
    model: &Model,
    base: Option<&Model>,
    layout: Layout,
) -> PyResult<u64> {
    let tmp = files::beside(path, name)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
    glyd_gpu::pack_model(model, base, layout, false, &mut w, &mut |_| {})
        .map_err(errors::tensors)?;
    w.flush().map_err(|e| errors::io(name, e))?;
    drop(w);
    files::commit(tmp, path, name)
}

fn kv_shape(
    tokens: u32,
    heads: u32,
    head_dim: u32,
    dtype: &str,
    gpu_layout: bool,
) -> PyResult<GlydKvPageShape> {
    let dtype = match dtype {
        "BF16" => 0,
        "F16" => 1,
        d => {
            return Err(PyValueError::new_err(format!(
                "KV pages are BF16 or F16, not {d}"
            )))
        }
    };
    Ok(GlydKvPageShape {
        tokens,
        heads,
        head_dim,
        dtype,
        layout: u32::from(gpu_layout),
    })
}

/// Codes one KV-cache page of `tokens` × `heads` × `head_dim` 16-bit values.
#[pyfunction]
#[pyo3(signature = (data, tokens, heads, head_dim, dtype, gpu_layout = false))]
pub fn kv_encode_page<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    tokens: u32,
    heads: u32,
    head_dim: u32,
    dtype: &str,
    gpu_layout: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let shape = kv_shape(tokens, heads, head_dim, dtype, gpu_layout)?;
    let src = Borrowed::read(data)?;
    let page = py
        .detach(|| kv::encode_page(&shape, src.bytes()))
        .map_err(PyValueError::new_err)?;
    Ok(PyBytes::new(py, &page))
}

/// The (tokens, heads, head_dim, dtype) a coded page declares.
#[pyfunction]
pub fn kv_page_shape(page: &Bound<'_, PyAny>) -> PyResult<(u32, u32, u32, &'static str)> {
    let src = Borrowed::read(page)?;
    let s =
        kv::page_shape(src.bytes()).map_err(|e| CorruptError::new_err(format!("KV page: {e}")))?;
    Ok((
        s.tokens,
        s.heads,
        s.head_dim,
        if s.dtype == 0 { "BF16" } else { "F16" },
    ))
}

/// Decodes a coded page into `out` (a writable buffer of exactly the page's size).
#[pyfunction]
pub fn kv_decode_page_into(
    py: Python<'_>,
    page: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let src = Borrowed::read(page)?;
    let mut dst = Borrowed::write(out)?;
    py.detach(|| kv::decode_page(src.bytes(), dst.bytes_mut()))
        .map_err(|e| CorruptError::new_err(format!("KV page: {e}")))
}
