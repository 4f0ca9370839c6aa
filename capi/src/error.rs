//! Status codes, and the calling thread's last error message.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const GLYD_OK: c_int = 0;
/// An invalid argument: a null pointer, an unknown level or flag, a wrong size.
pub const GLYD_ERR_INPUT: c_int = -1;
/// The output buffer is too small (`glyd_last_error` says how much is needed).
pub const GLYD_ERR_SPACE: c_int = -2;

/// The input is not a glyd frame or archive, is truncated, or fails a checksum.
pub const GLYD_ERR_CORRUPT: c_int = -3;
/// A callback or the operating system reported an error.
pub const GLYD_ERR_IO: c_int = -4;
/// Decoding would need more memory than the limit allows (hostile or unusually wide input).
pub const GLYD_ERR_MEMORY: c_int = -5;
/// A bug in glyd (a panic caught at the boundary); please report it with `glyd_last_error()`.
pub const GLYD_ERR_INTERNAL: c_int = -6;

/// Bit of `flags`: compress in record mode (as `glyd -r`): logs, CSV, JSON lines, SQL dumps
/// and Parquet become record archives; other data a plain frame.
pub const GLYD_FLAG_RECORDS: u32 = 1;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error; returns `code`.
pub(crate) fn fail(code: c_int, message: impl std::fmt::Display) -> c_int {
    let text = message.to_string().replace('\0', " ");
    LAST.with(|l| *l.borrow_mut() = CString::new(text).unwrap_or_default());
    code
}

/// The status for a codec error, its message recorded.
pub(crate) fn core(e: glyd_core::Error) -> c_int {
    use glyd_core::Error as E;
    let code = match &e {
        E::Io(_) => GLYD_ERR_IO,
        E::InvalidOption(_) => GLYD_ERR_INPUT,
        E::OutputTooSmall { .. } => GLYD_ERR_SPACE,
        E::MemoryLimit { .. } => GLYD_ERR_MEMORY,
        _ => GLYD_ERR_CORRUPT,
    };
    fail(code, e)
}

/// The status for a record archive error, its message recorded.
pub(crate) fn columnar(e: glyd_columnar::Error) -> c_int {
    use glyd_columnar::Error as E;
    match e {
        E::Codec(c) => core(c),
        E::Io(_) => fail(GLYD_ERR_IO, e),
        E::Request(_) => fail(GLYD_ERR_INPUT, e),
        _ => fail(GLYD_ERR_CORRUPT, e),
    }
}

/// Runs an entry point's body, turning a panic into `GLYD_ERR_INTERNAL`.
pub(crate) fn guard(body: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        fail(
            GLYD_ERR_INTERNAL,
            "internal error in glyd (a bug): please report it with the input that caused it",
        )
    })
}

/// C: a static description of status `code` (never null; never freed by the caller).
#[no_mangle]
pub extern "C" fn glyd_error_message(code: c_int) -> *const c_char {
    let text: &'static std::ffi::CStr = match code {
        GLYD_OK => c"no error",
        GLYD_ERR_INPUT => {
            c"invalid argument (a null pointer, an unknown level or flag, a wrong size)"
        }
        GLYD_ERR_SPACE => c"the output buffer is too small",
        GLYD_ERR_CORRUPT => c"the input is corrupt, truncated, or not glyd data",
        GLYD_ERR_IO => c"a callback or the operating system reported an error",
        GLYD_ERR_MEMORY => c"the input needs more memory than the decoding limit allows",
        GLYD_ERR_INTERNAL => c"internal error in glyd",
        _ => c"unknown status code",
    };
    text.as_ptr()
}

/// C: the calling thread's last error in full (what failed, where, what to do), or "" if none.
/// The pointer stays valid until this thread's next glyd call; copy it to keep it.
#[no_mangle]
pub extern "C" fn glyd_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}
