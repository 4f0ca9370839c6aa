//! The codec from Python: one-shot `compress`/`decompress` on anything with the buffer
//! protocol, and the streaming reader and writer behind `glyd.open`. Coding runs with the GIL
//! released, so threads that compress at once use as many cores.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use glyd_core::{Decoder, Encoder, Level, Options};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use tempfile::NamedTempFile;

use crate::buffer::Borrowed;
use crate::errors::{self, GlydError};
use crate::files;

/// A level as Python passes it: a name (`"fast"`, `"lz"`, `"max"`, `"ultra"`) or a number
/// (1..19, as the CLI's `-N`).
pub fn level_of(level: &Bound<'_, PyAny>) -> PyResult<Level> {
    let found = if let Ok(n) = level.extract::<u32>() {
        Level::from_number(n)
    } else if let Ok(s) = level.extract::<String>() {
        Level::from_name(&s)
    } else {
        None
    };
    found.ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown level {level}: use \"fast\", \"lz\", \"max\", \"ultra\" or a number 1..19"
        ))
    })
}

/// Compresses `data` into one glyd frame.
#[pyfunction]
#[pyo3(signature = (data, level = None, threads = 0))]
pub fn compress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    level: Option<&Bound<'py, PyAny>>,
    threads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let level = level.map(level_of).transpose()?.unwrap_or(Level::DEFAULT);
    let src = Borrowed::read(data)?;
    let opts = Options::new(level).with_threads(threads);
    let frame = py
        .detach(|| glyd_core::compress(src.bytes(), &opts))
        .map_err(errors::core)?;
    Ok(PyBytes::new(py, &frame))
}

/// Decodes the glyd frames in `data`. `max_size` refuses (before allocating) output larger
/// than it, as a guard against hostile input that claims a huge size.
#[pyfunction]
#[pyo3(signature = (data, threads = 0, max_size = None))]
pub fn decompress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    threads: usize,
    max_size: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let src = Borrowed::read(data)?;
    let size = glyd_core::decompressed_size(src.bytes()).map_err(errors::core)?;
    if let Some(max) = max_size.filter(|&m| size > m) {
        return Err(GlydError::new_err(format!(
            "the input decodes to {size} bytes, more than max_size={max}"
        )));
    }
    let size = usize::try_from(size)
        .map_err(|_| GlydError::new_err(format!("the input decodes to {size} bytes: too large")))?;
    PyBytes::new_with(py, size, |out| {
        py.detach(|| glyd_core::decompress_into(src.bytes(), out, threads))
            .map(|_| ())
            .map_err(errors::core)
    })
}

/// Bytes the glyd frames in `data` decode to, read from their headers (nothing is decoded).
#[pyfunction]
pub fn decompressed_size(data: &Bound<'_, PyAny>) -> PyResult<u64> {
    let src = Borrowed::read(data)?;
    glyd_core::decompressed_size(src.bytes()).map_err(errors::core)
}

/// A path (`str` or `os.PathLike`), or `None` when `obj` is something else.
pub fn path_of(obj: &Bound<'_, PyAny>) -> Option<PathBuf> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__").unwrap_or(false) {
        obj.extract::<PathBuf>().ok()
    } else {
        None
    }
}

/// A Python binary file object read from Rust: each read takes the GIL for the call.
struct PyReader {
    file: Py<PyAny>,
}

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| -> PyResult<usize> {
            let chunk = self.file.bind(py).call_method1("read", (buf.len(),))?;
            let got = Borrowed::read(&chunk)?;
            let n = got.len();
            if n > buf.len() {
                return Err(PyValueError::new_err(format!(
                    "the file object's read({}) returned {n} bytes",
                    buf.len()
                )));
            }
            buf[..n].copy_from_slice(got.bytes());
            Ok(n)
        })
        .map_err(io::Error::other)
    }
}

/// A Python binary file object written from Rust.
struct PyWriter {
    file: Py<PyAny>,
}

impl Write for PyWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Python::attach(|py| -> PyResult<usize> {
            let view = PyBytes::new(py, buf);
            let n: Option<usize> = self
                .file
                .bind(py)
                .call_method1("write", (view,))?
                .extract()?;
            Ok(n.unwrap_or(buf.len()))
        })
        .map_err(io::Error::other)
    }

    fn flush(&mut self) -> io::Result<()> {
        Python::attach(|py| -> PyResult<()> {
            self.file.bind(py).call_method0("flush").map(|_| ())
        })
        .map_err(io::Error::other)
    }
}

enum Source {
    File(File),
    Py(PyReader),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Py(p) => p.read(buf),
        }
    }
}

/// The decoding half of `glyd.open(..., "rb")`: frames read from a path or a binary file
/// object, decoded a batch of blocks at a time on `threads` threads.
#[pyclass(module = "glyd._glyd")]
pub struct FrameReader {
    decoder: Option<Decoder<Source>>,
    name: String,
}

#[pymethods]
impl FrameReader {
    #[new]
    #[pyo3(signature = (source, threads = 0))]
    fn new(source: &Bound<'_, PyAny>, threads: usize) -> PyResult<Self> {
        let (src, name) = match path_of(source) {
            Some(p) => {
                let f = File::open(&p).map_err(|e| errors::io(&p.display().to_string(), e))?;
                (Source::File(f), p.display().to_string())
            }
            None if source.hasattr("read")? => (
                Source::Py(PyReader {
                    file: source.clone().unbind(),
                }),
                "the file object".to_string(),
            ),
            None => {
                return Err(PyTypeError::new_err(
                    "expected a path or a binary file object with read()",
                ))
            }
        };
        Ok(FrameReader {
            decoder: Some(Decoder::with_threads(src, threads)),
            name,
        })
    }

    /// Fills `buf` (a writable buffer) with decoded bytes; returns how many (0 at the end).
    fn readinto(&mut self, py: Python<'_>, buf: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut out = Borrowed::write(buf)?;
        let decoder = self.decoder.as_mut().ok_or_else(closed)?;
        let name = &self.name;
        py.detach(|| {
            let out = out.bytes_mut();
            let mut n = 0;
            // Fill the buffer: BufferedReader takes a short read for the end of the stream.
            while n < out.len() {
                match decoder.read(&mut out[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(n)
        })
        .map_err(|e| errors::io(name, e))
    }

    /// Stops reading (a later read raises `ValueError`).
    fn close(&mut self) {
        self.decoder = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.decoder.is_none()
    }
}

enum Target {
    /// A temporary file beside `path`, renamed onto it when the frame is complete.
    File {
        tmp: NamedTempFile,
        path: PathBuf,
    },
    Py(PyWriter),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::File { tmp, .. } => tmp.as_file_mut().write(buf),
            Target::Py(p) => p.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::File { tmp, .. } => tmp.as_file_mut().flush(),
            Target::Py(p) => p.flush(),
        }
    }
}

/// The encoding half of `glyd.open(..., "wb")`: one frame, written to a temporary file that
/// becomes `path` only when [`FrameWriter::close`] completes it (a crash or an exception
/// leaves no partial file under the name), or to a binary file object.
#[pyclass(module = "glyd._glyd")]
pub struct FrameWriter {
    encoder: Option<Encoder<Target>>,
    name: String,
}

#[pymethods]
impl FrameWriter {
    #[new]
    #[pyo3(signature = (target, level = None, threads = 0))]
    fn new(
        target: &Bound<'_, PyAny>,
        level: Option<&Bound<'_, PyAny>>,
        threads: usize,
    ) -> PyResult<Self> {
        let level = level.map(level_of).transpose()?.unwrap_or(Level::DEFAULT);
        let (out, name) = match path_of(target) {
            Some(path) => {
                let name = path.display().to_string();
                let tmp = files::beside(&path, &name)?;
                (Target::File { tmp, path }, name)
            }
            None if target.hasattr("write")? => (
                Target::Py(PyWriter {
                    file: target.clone().unbind(),
                }),
                "the file object".to_string(),
            ),
            None => {
                return Err(PyTypeError::new_err(
                    "expected a path or a binary file object with write()",
                ))
            }
        };
        let opts = Options::new(level).with_threads(threads);
        let encoder = Encoder::new(out, &opts).map_err(errors::core)?;
        Ok(FrameWriter {
            encoder: Some(encoder),
            name,
        })
    }

    /// Takes all of `data` (any buffer); returns its length.
    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let src = Borrowed::read(data)?;
        let encoder = self.encoder.as_mut().ok_or_else(closed)?;
        py.detach(|| encoder.write_all(src.bytes()))
            .map_err(|e| errors::io(&self.name, e))?;
        Ok(src.len())
    }

    /// Completes the frame: for a path, syncs it and renames it into place.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(encoder) = self.encoder.take() else {
            return Ok(());
        };
        let name = &self.name;
        py.detach(|| -> io::Result<Option<(NamedTempFile, PathBuf)>> {
            match encoder.finish().map_err(io::Error::from)? {
                Target::File { tmp, path } => Ok(Some((tmp, path))),
                Target::Py(_) => Ok(None),
            }
        })
        .map_err(|e| errors::io(name, e))
        .and_then(|done| match done {
            Some((tmp, path)) => files::commit(tmp, &path, name).map(drop),
            None => Ok(()),
        })
    }

    /// Drops the frame unwritten: a path is left as it was.
    fn abort(&mut self) {
        self.encoder = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.encoder.is_none()
    }
}

fn closed() -> PyErr {
    PyValueError::new_err("I/O operation on a closed glyd file")
}
