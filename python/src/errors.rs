//! The package's exceptions, and the crates' errors turned into them: bad or truncated input
//! is a [`CorruptError`], a request that cannot be met a `ValueError`, the operating system's
//! refusals an `OSError`, everything else a [`GlydError`]. Each carries the Rust error's text,
//! which names the offset and what to do.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::{PyErr, Python};

create_exception!(
    glyd,
    GlydError,
    PyException,
    "Base class of the errors glyd raises."
);
create_exception!(
    glyd,
    CorruptError,
    GlydError,
    "The input is not a glyd frame or archive, is truncated, or fails its checksums."
);

/// A codec error as Python sees it.
pub fn core(e: glyd_core::Error) -> PyErr {
    use glyd_core::Error as E;
    match e {
        E::Io(io) => os_error(io.to_string(), io.kind()),
        E::InvalidOption(_) => PyValueError::new_err(e.to_string()),
        E::BadMagic { .. }
        | E::UnsupportedVersion { .. }
        | E::Truncated { .. }
        | E::Corrupt { .. }
        | E::Checksum { .. } => CorruptError::new_err(e.to_string()),
        _ => GlydError::new_err(e.to_string()),
    }
}

/// A record archive error as Python sees it.
pub fn columnar(e: glyd_columnar::Error) -> PyErr {
    use glyd_columnar::Error as E;
    match e {
        E::Io(io) => os_error(io.to_string(), io.kind()),
        E::Codec(c) => core(c),
        E::Request(_) => PyValueError::new_err(e.to_string()),
        E::BadMagic { .. }
        | E::UnsupportedVersion { .. }
        | E::Truncated { .. }
        | E::Corrupt { .. } => CorruptError::new_err(e.to_string()),
        _ => GlydError::new_err(e.to_string()),
    }
}

/// A tensor archive error as Python sees it.
pub fn tensors(e: glyd_gpu::Error) -> PyErr {
    use glyd_gpu::Error as E;
    match e {
        E::Io(io) => os_error(io.to_string(), io.kind()),
        E::File { ref source, .. } => os_error(e.to_string(), source.kind()),
        E::Core(c) => core(c),
        E::Usage(_) => PyValueError::new_err(e.to_string()),
        E::Corrupt { .. } | E::Safetensors { .. } => CorruptError::new_err(e.to_string()),
    }
}

/// An I/O error on `what` (a path, or "the file object").
pub fn io(what: &str, e: std::io::Error) -> PyErr {
    // A Python file object's exception comes back inside the `io::Error`: raise it unchanged.
    let e = match e.downcast::<PyErr>() {
        Ok(py) => return py,
        Err(e) => e,
    };
    let e = match e.downcast::<glyd_core::Error>() {
        Ok(c) => return Python::attach(|py| in_file(py, what, core(c))),
        Err(e) => e,
    };
    os_error(format!("{what}: {e}"), e.kind())
}

/// The `OSError` subclass Python raises for `kind`.
fn os_error(text: String, kind: std::io::ErrorKind) -> PyErr {
    match kind {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
        std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
        _ => PyOSError::new_err(text),
    }
}

/// `err` (any exception) again, its message prefixed with `what` (the file it is about).
pub fn in_file(py: Python<'_>, what: &str, err: PyErr) -> PyErr {
    PyErr::from_type(err.get_type(py), format!("{what}: {}", err.value(py)))
}
