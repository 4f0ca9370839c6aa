//! Callers' bytes without a copy: any object with the buffer protocol (`bytes`, `bytearray`,
//! `memoryview`, NumPy arrays, `array.array`, mmap) borrowed as a byte slice. This is the
//! crate's one `unsafe` module: PyO3 hands buffers out as cells, and coding wants slices it can
//! read (or fill) with the GIL released.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A held view of a caller's buffer: contiguous bytes, kept alive (and, for exporters that
/// lock, unresizable) until this is dropped.
pub struct Borrowed {
    view: PyUntypedBuffer,
}

impl Borrowed {
    /// Borrows `obj`'s bytes for reading. Non-contiguous views are refused: a copy is the
    /// caller's choice to make (`bytes(view)`), not one to make behind their back.
    pub fn read(obj: &Bound<'_, PyAny>) -> PyResult<Borrowed> {
        let view = PyUntypedBuffer::get(obj).map_err(|_| {
            PyTypeError::new_err(format!(
                "expected bytes or an object with the buffer protocol (bytearray, memoryview, a NumPy array), got {}",
                type_name(obj)
            ))
        })?;
        if !view.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "the buffer is not contiguous: pass a contiguous copy (e.g. numpy.ascontiguousarray)",
            ));
        }
        Ok(Borrowed { view })
    }

    /// Borrows `obj`'s bytes for writing (`readinto`, `decode_page(out=...)`).
    pub fn write(obj: &Bound<'_, PyAny>) -> PyResult<Borrowed> {
        let b = Borrowed::read(obj)?;
        if b.view.readonly() {
            return Err(PyTypeError::new_err(format!(
                "the output buffer ({}) is read-only: pass a bytearray, a writable memoryview or array",
                type_name(obj)
            )));
        }
        Ok(b)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.view.len_bytes()
    }

    /// The bytes. Readers with the GIL released rely on the caller not resizing or writing the
    /// object meanwhile, as with every C extension that releases the GIL over a buffer
    /// (`zstandard`, `hashlib`).
    pub fn bytes(&self) -> &[u8] {
        if self.len() == 0 {
            return &[];
        }
        // SAFETY: the view is C-contiguous (checked when borrowed) and `len_bytes` long from
        // `buf_ptr`; holding the view keeps the exporter's memory alive and in place until
        // `self` (and so this borrow) ends.
        unsafe { std::slice::from_raw_parts(self.view.buf_ptr() as *const u8, self.len()) }
    }

    /// The bytes, to fill. Only for views borrowed with [`Borrowed::write`].
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        debug_assert!(!self.view.readonly());
        if self.len() == 0 {
            return &mut [];
        }
        // SAFETY: as in `bytes`, and the exporter granted a writable view; `&mut self` keeps
        // this the only slice of it made here.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf_ptr() as *mut u8, self.len()) }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}
