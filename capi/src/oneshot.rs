//! One-shot compression and decompression between callers' buffers.

use std::ffi::{c_char, c_int, c_uint};

use glyd_core::{Level, Options};

use crate::error::{self, fail, guard, GLYD_ERR_INPUT, GLYD_ERR_SPACE, GLYD_FLAG_RECORDS, GLYD_OK};

/// C: the library's version, e.g. "0.1.0" (static).
#[no_mangle]
pub extern "C" fn glyd_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// C: the most bytes `glyd_compress` writes for `src_len` bytes of input without
/// `GLYD_FLAG_RECORDS` (a record archive can, rarely, be larger: `GLYD_ERR_SPACE` then says
/// how much it needs).
#[no_mangle]
pub extern "C" fn glyd_compress_bound(src_len: usize) -> usize {
    glyd_core::compress_bound(src_len)
}

/// The level for the C `level` argument: 0 is the default (`--max`), 1..19 as the CLI's `-N`.
pub(crate) fn level_of(level: c_int) -> Result<Level, c_int> {
    if level == 0 {
        return Ok(Level::DEFAULT);
    }
    u32::try_from(level)
        .ok()
        .and_then(Level::from_number)
        .ok_or_else(|| {
            fail(
                GLYD_ERR_INPUT,
                format!("unknown level {level}: use 0 (default) or 1..19"),
            )
        })
}

/// `len` bytes at `ptr` (null is allowed for an empty slice).
///
/// # Safety
/// `ptr` must be null or valid for reads of `len` bytes for `'a`.
unsafe fn input<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], c_int> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(fail(
            GLYD_ERR_INPUT,
            "a null input pointer with a nonzero length",
        ));
    }
    // SAFETY: non-null and valid for `len` bytes, as the caller promises.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Copies `bytes` to `dst` (capacity `cap`) and sets `*written`.
///
/// # Safety
/// `dst` must be valid for writes of `cap` bytes (or null with `cap` 0) and `written` valid.
unsafe fn output(bytes: &[u8], dst: *mut u8, cap: usize, written: *mut usize) -> c_int {
    if bytes.len() > cap {
        return fail(
            GLYD_ERR_SPACE,
            format!(
                "the output needs {} bytes, the buffer holds {cap}",
                bytes.len()
            ),
        );
    }
    if !bytes.is_empty() {
        // SAFETY: `dst` is valid for `cap >= bytes.len()` bytes and, being the caller's output
        // buffer, does not overlap the Vec `bytes` lives in.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
    }
    // SAFETY: `written` is valid, as the caller promises (checked non-null by the caller).
    unsafe { *written = bytes.len() };
    GLYD_OK
}

/// C: compresses `src` (`src_len` bytes) into `dst` (`dst_cap` bytes; `glyd_compress_bound`
/// is always enough for a plain frame); the size goes to `*written`. `level`: 0 (default) or
/// 1..19; `threads`: 0 for every core; `flags`: 0, or `GLYD_FLAG_RECORDS` for record mode.
///
/// # Safety
/// `src` valid for `src_len` bytes (or null if 0), `dst` for `dst_cap` bytes, `written` for a
/// `size_t`; `dst` must not overlap `src`.
#[no_mangle]
pub unsafe extern "C" fn glyd_compress(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
    level: c_int,
    threads: c_uint,
    flags: c_uint,
) -> c_int {
    guard(|| {
        if dst.is_null() || written.is_null() {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_compress: dst and written must not be null",
            );
        }
        if flags & !GLYD_FLAG_RECORDS != 0 {
            return fail(GLYD_ERR_INPUT, format!("unknown flags {flags:#x}"));
        }
        let level = match level_of(level) {
            Ok(l) => l,
            Err(code) => return code,
        };
        // SAFETY: as this function's contract says.
        let data = match unsafe { input(src, src_len) } {
            Ok(d) => d,
            Err(code) => return code,
        };
        let threads = threads as usize;
        let coded = if flags & GLYD_FLAG_RECORDS != 0 {
            glyd_columnar::auto::compress_records(data, level, threads).map_err(error::columnar)
        } else {
            glyd_core::compress(data, &Options::new(level).with_threads(threads))
                .map_err(error::core)
        };
        match coded {
            // SAFETY: as this function's contract says; both checked non-null above.
            Ok(bytes) => unsafe { output(&bytes, dst, dst_cap, written) },
            Err(code) => code,
        }
    })
}

/// C: the bytes `src` decodes to (glyd frames, or a record archive's original input) into
/// `*size`, read from headers and footers; nothing is decoded.
///
/// # Safety
/// `src` valid for `src_len` bytes (or null if 0), `size` for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn glyd_decompressed_size(
    src: *const u8,
    src_len: usize,
    size: *mut u64,
) -> c_int {
    guard(|| {
        if size.is_null() {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_decompressed_size: size must not be null",
            );
        }
        // SAFETY: as this function's contract says.
        let data = match unsafe { input(src, src_len) } {
            Ok(d) => d,
            Err(code) => return code,
        };
        let n = if glyd_columnar::is_archive(data) {
            glyd_columnar::ArchiveReader::from_bytes(data.to_vec())
                .map(|r| r.input_len())
                .map_err(error::columnar)
        } else {
            glyd_core::decompressed_size(data).map_err(error::core)
        };
        match n {
            Ok(n) => {
                // SAFETY: `size` is valid and non-null (checked above).
                unsafe { *size = n };
                GLYD_OK
            }
            Err(code) => code,
        }
    })
}

/// C: decodes `src` (glyd frames, or a record archive, rebuilt byte for byte) into `dst`
/// (`dst_cap` bytes; `glyd_decompressed_size` says how many it needs); the decoded size goes
/// to `*written`. `threads`: 0 for every core.
///
/// # Safety
/// As `glyd_compress`.
#[no_mangle]
pub unsafe extern "C" fn glyd_decompress(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
    threads: c_uint,
) -> c_int {
    guard(|| {
        if written.is_null() || (dst.is_null() && dst_cap > 0) {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_decompress: dst and written must not be null",
            );
        }
        // SAFETY: as this function's contract says.
        let data = match unsafe { input(src, src_len) } {
            Ok(d) => d,
            Err(code) => return code,
        };
        if glyd_columnar::is_archive(data) {
            let mut out = Vec::new();
            return match glyd_columnar::rebuild(data, &mut out) {
                // SAFETY: as this function's contract says.
                Ok(_) => unsafe { output(&out, dst, dst_cap, written) },
                Err(e) => error::columnar(e),
            };
        }
        let out: &mut [u8] = if dst_cap == 0 {
            &mut []
        } else {
            // SAFETY: `dst` is non-null and valid for `dst_cap` bytes, and does not overlap
            // `src` (the contract).
            unsafe { std::slice::from_raw_parts_mut(dst, dst_cap) }
        };
        match glyd_core::decompress_into(data, out, threads as usize) {
            Ok(n) => {
                // SAFETY: `written` is valid and non-null (checked above).
                unsafe { *written = n };
                GLYD_OK
            }
            Err(e) => error::core(e),
        }
    })
}
