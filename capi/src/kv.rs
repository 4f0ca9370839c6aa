//! KV-cache pages coded and decoded from C (glyd-gpu's `kv`). Every function takes raw
//! pointers from its caller and checks them for null; the lengths it is given are trusted, as
//! C's are, and each `unsafe` block says which of the caller's promises it relies on.

use std::ffi::c_int;

pub use glyd_gpu::kv::GlydKvPageShape;
use glyd_gpu::kv::{decode_page, encode_page, page_bound};

use crate::error::{fail, GLYD_ERR_CORRUPT, GLYD_ERR_INPUT, GLYD_ERR_SPACE, GLYD_OK};

/// C: the most bytes `glyd_kv_encode_page` writes for `shape` (0 if the shape overflows).
///
/// # Safety
/// `shape` must be null or point to a valid `GlydKvPageShape`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_page_bound(shape: *const GlydKvPageShape) -> usize {
    // SAFETY: `shape` is null (then `None`) or valid, as the caller promises.
    let Some(shape) = (unsafe { shape.as_ref() }) else {
        return 0;
    };
    page_bound(shape).unwrap_or(0)
}

/// C: codes the page at `src` (`src_len` bytes: tokens × heads × head_dim 16-bit values) into
/// `dst` (`dst_cap` bytes; `glyd_kv_page_bound` is enough); the coded size goes to `*written`.
/// Returns `GLYD_OK`, `GLYD_ERR_INPUT` or `GLYD_ERR_SPACE`.
///
/// # Safety
/// `shape` must be null or valid; `src` valid for `src_len` bytes, `dst` for `dst_cap` bytes
/// and `written` for a `usize`, where not null; `dst` must not overlap `src`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_encode_page(
    shape: *const GlydKvPageShape,
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
) -> c_int {
    if src.is_null() || dst.is_null() || written.is_null() {
        return fail(GLYD_ERR_INPUT, "glyd_kv_encode_page: a null pointer");
    }
    // SAFETY: `shape` is null (then `None`) or valid, as the caller promises.
    let Some(shape) = (unsafe { shape.as_ref() }) else {
        return fail(GLYD_ERR_INPUT, "glyd_kv_encode_page: the shape is null");
    };
    // SAFETY: `src` is not null and valid for `src_len` bytes, as the caller promises.
    let src = unsafe { std::slice::from_raw_parts(src, src_len) };
    let page = match encode_page(shape, src) {
        Ok(page) => page,
        Err(e) => return fail(GLYD_ERR_INPUT, format!("glyd_kv_encode_page: {e}")),
    };
    if page.len() > dst_cap {
        return fail(
            GLYD_ERR_SPACE,
            format!("the page needs {} bytes, dst holds {dst_cap}", page.len()),
        );
    }
    // SAFETY: `dst` is not null, valid for `dst_cap` bytes and apart from `src`.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, dst_cap) };
    dst[..page.len()].copy_from_slice(&page);
    // SAFETY: `written` is not null and valid for a `usize`.
    unsafe { *written = page.len() };
    GLYD_OK
}

/// C: decodes the coded page at `src` into `dst` (exactly the page's decoded size:
/// `GLYD_ERR_SPACE` otherwise); a damaged page is `GLYD_ERR_CORRUPT`.
///
/// # Safety
/// `src` must be valid for `src_len` bytes and `dst` for `dst_len` bytes, where not null;
/// `dst` must not overlap `src`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_decode_page(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_len: usize,
) -> c_int {
    if src.is_null() || dst.is_null() {
        return fail(GLYD_ERR_INPUT, "glyd_kv_decode_page: a null pointer");
    }
    // SAFETY: `src` is not null and valid for `src_len` bytes, as the caller promises.
    let src = unsafe { std::slice::from_raw_parts(src, src_len) };
    // SAFETY: `dst` is not null, valid for `dst_len` bytes and apart from `src`.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, dst_len) };
    match decode_page(src, dst) {
        Ok(()) => GLYD_OK,
        Err(e) if e.contains("buffer") => fail(GLYD_ERR_SPACE, format!("glyd_kv_decode_page: {e}")),
        Err(e) => fail(GLYD_ERR_CORRUPT, format!("glyd_kv_decode_page: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glyd_gpu::kv::page_shape;

    fn page(shape: &GlydKvPageShape, seed: u32) -> Vec<u8> {
        let mut s = seed | 1;
        (0..shape.values().unwrap())
            .flat_map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                // Channels of different scale, as keys have.
                let scale = 1.0 + (i % shape.head_dim as usize) as f32 / 8.0;
                let x = ((s >> 8) as f32 / (1 << 24) as f32 - 0.5) * scale;
                ((x.to_bits() >> 16) as u16).to_le_bytes()
            })
            .collect()
    }

    #[test]
    fn pages_round_trip_through_the_c_interface() {
        for layout in [0, 1] {
            let shape = GlydKvPageShape {
                tokens: 64,
                heads: 12,
                head_dim: 32,
                dtype: 0,
                layout,
            };
            let values = page(&shape, 5);
            // SAFETY: `shape` is a live shape.
            let mut coded = vec![0u8; unsafe { glyd_kv_page_bound(&shape) }];
            let mut written = 0usize;
            // SAFETY: live buffers of the lengths passed, apart from each other.
            let rc = unsafe {
                glyd_kv_encode_page(
                    &shape,
                    values.as_ptr(),
                    values.len(),
                    coded.as_mut_ptr(),
                    coded.len(),
                    &mut written,
                )
            };
            assert_eq!(rc, GLYD_OK);
            assert!(written < values.len(), "{written}");
            assert_eq!(page_shape(&coded[..written]).unwrap(), shape);
            let mut back = vec![0u8; values.len()];
            // SAFETY: live buffers of the lengths passed, apart from each other.
            let rc = unsafe {
                glyd_kv_decode_page(coded.as_ptr(), written, back.as_mut_ptr(), back.len())
            };
            assert_eq!(rc, GLYD_OK);
            assert_eq!(back, values);
            // Damage is an error code, never a panic.
            for i in (0..written).step_by(61) {
                let mut bad = coded[..written].to_vec();
                bad[i] ^= 0x10;
                // SAFETY: live buffers of the lengths passed, apart from each other.
                let rc = unsafe {
                    glyd_kv_decode_page(bad.as_ptr(), bad.len(), back.as_mut_ptr(), back.len())
                };
                assert!(rc == GLYD_ERR_CORRUPT || back == values);
            }
            // SAFETY: live buffers of the lengths passed, apart from each other.
            let rc = unsafe {
                glyd_kv_decode_page(coded.as_ptr(), written, back.as_mut_ptr(), back.len() - 2)
            };
            assert_eq!(rc, GLYD_ERR_SPACE);
        }
    }
}
