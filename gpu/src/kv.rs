//! KV-cache pages: fixed-size blocks of keys or values (tokens × heads × head_dim, bf16 or
//! fp16) coded losslessly one page at a time, so a serving engine can evict a page to coded
//! form and bring back exactly that page. A page is a small header and a tensor payload in
//! either layout (`docs/FORMAT.md` §8.6); the tiered layout decodes on the GPU in batches
//! (`cuda::Gpu::decode_pages`).
//!
//! The C interface at the bottom (`glyd_kv_*`) is what an engine written in C or C++ links
//! against; it and the AVX-512 decode path (`bf16_avx512.rs`) are the only `unsafe` outside the CUDA module.

use crate::dtype::DType;
use crate::tensor::{self, Layout, Method};

/// A page's shape, as C code passes it.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlydKvPageShape {
    pub tokens: u32,
    pub heads: u32,
    pub head_dim: u32,
    /// 0 = bf16, 1 = fp16.
    pub dtype: u32,
    /// 0 = dense (smallest), 1 = tiered (GPU-decodable).
    pub layout: u32,
}

/// Bytes of a page header.
pub const PAGE_HEADER: usize = 20;

impl GlydKvPageShape {
    fn dtype(&self) -> Result<DType, String> {
        match self.dtype {
            0 => Ok(DType::BF16),
            1 => Ok(DType::F16),
            d => Err(format!("unknown KV dtype {d} (0 = bf16, 1 = fp16)")),
        }
    }

    /// Values in the page.
    pub fn values(&self) -> Option<usize> {
        (self.tokens as usize)
            .checked_mul(self.heads as usize)?
            .checked_mul(self.head_dim as usize)
    }

    /// Bytes of the decoded page.
    pub fn bytes(&self) -> Option<usize> {
        self.values()?.checked_mul(2)
    }
}

/// The most bytes a coded page of `shape` can take (stored fallback plus header).
pub fn page_bound(shape: &GlydKvPageShape) -> Option<usize> {
    shape.bytes()?.checked_add(PAGE_HEADER + 64)
}

/// Codes one page: `values` holds tokens × heads × head_dim little-endian 16-bit words.
pub fn encode_page(shape: &GlydKvPageShape, values: &[u8]) -> Result<Vec<u8>, String> {
    let dtype = shape.dtype()?;
    if shape.bytes() != Some(values.len()) {
        return Err(format!(
            "page of {shape:?} needs {:?} bytes, {} given",
            shape.bytes(),
            values.len()
        ));
    }
    let layout = if shape.layout == 1 {
        Layout::Gpu
    } else {
        Layout::Dense
    };
    let (method, payload) = tensor::encode(dtype, values, layout, None);
    let mut out = Vec::with_capacity(PAGE_HEADER + payload.len());
    out.push(1); // page format version
    out.push(dtype.code());
    out.push(method as u8);
    out.push(0);
    for v in [shape.tokens, shape.heads, shape.head_dim] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&glyd_core::checksum(values).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// The shape a coded page declares.
pub fn page_shape(page: &[u8]) -> Result<GlydKvPageShape, String> {
    let h = page
        .get(..PAGE_HEADER)
        .ok_or("page is shorter than its header")?;
    if h[0] != 1 {
        return Err(format!("unknown page format version {}", h[0]));
    }
    let dtype = match DType::from_code(h[1]) {
        Some(DType::BF16) => 0,
        Some(DType::F16) => 1,
        _ => return Err("page dtype is not bf16 or fp16".into()),
    };
    let u = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
    Ok(GlydKvPageShape {
        tokens: u(4),
        heads: u(8),
        head_dim: u(12),
        dtype,
        layout: u32::from(h[2] == Method::Tiered as u8),
    })
}

/// Decodes a coded page into `out` (the page's decoded size), checking its checksum.
pub fn decode_page(page: &[u8], out: &mut [u8]) -> Result<(), String> {
    let shape = page_shape(page)?;
    let dtype = shape.dtype()?;
    if shape.bytes() != Some(out.len()) {
        return Err(format!(
            "page holds {:?} bytes, the buffer {}",
            shape.bytes(),
            out.len()
        ));
    }
    let method = Method::from_code(page[2]).ok_or("unknown page method")?;
    if method == Method::XorBase {
        return Err("pages are never coded against a base".into());
    }
    tensor::decode(method, dtype, &page[PAGE_HEADER..], out, None)?;
    let stored = u32::from_le_bytes(page[16..20].try_into().expect("4 bytes"));
    if glyd_core::checksum(out) != stored {
        return Err("page checksum mismatch".into());
    }
    Ok(())
}

/// The tensor payload of a coded page and its value count (for batched GPU decode).
pub fn page_payload(page: &[u8]) -> Result<(&[u8], usize), String> {
    let shape = page_shape(page)?;
    let n = shape.values().ok_or("page shape overflows")?;
    Ok((&page[PAGE_HEADER..], n))
}

/// Status codes of the C interface.
pub const GLYD_OK: i32 = 0;
pub const GLYD_ERR_INPUT: i32 = -1;
pub const GLYD_ERR_SPACE: i32 = -2;

/// C: the most bytes `glyd_kv_encode_page` writes for `shape` (0 if the shape overflows).
///
/// # Safety
/// `shape` must point to a valid `GlydKvPageShape`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_page_bound(shape: *const GlydKvPageShape) -> usize {
    // SAFETY: the caller passes a valid shape pointer.
    let Some(shape) = (unsafe { shape.as_ref() }) else {
        return 0;
    };
    page_bound(shape).unwrap_or(0)
}

/// C: codes the page at `src` (`src_len` bytes) into `dst` (`dst_cap` bytes); the coded size
/// goes to `*written`. Returns `GLYD_OK`, `GLYD_ERR_INPUT` or `GLYD_ERR_SPACE`.
///
/// # Safety
/// Pointers must be valid for the lengths given; `dst` must not overlap `src`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_encode_page(
    shape: *const GlydKvPageShape,
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
) -> i32 {
    // SAFETY: the caller guarantees the pointers and lengths.
    let (Some(shape), false, false, false) = (
        unsafe { shape.as_ref() },
        src.is_null(),
        dst.is_null(),
        written.is_null(),
    ) else {
        return GLYD_ERR_INPUT;
    };
    let src = unsafe { std::slice::from_raw_parts(src, src_len) };
    let Ok(page) = encode_page(shape, src) else {
        return GLYD_ERR_INPUT;
    };
    if page.len() > dst_cap {
        return GLYD_ERR_SPACE;
    }
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, dst_cap) };
    dst[..page.len()].copy_from_slice(&page);
    unsafe { *written = page.len() };
    GLYD_OK
}

/// C: decodes the coded page at `src` into `dst` (exactly the page's decoded size).
///
/// # Safety
/// Pointers must be valid for the lengths given; `dst` must not overlap `src`.
#[no_mangle]
pub unsafe extern "C" fn glyd_kv_decode_page(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_len: usize,
) -> i32 {
    if src.is_null() || dst.is_null() {
        return GLYD_ERR_INPUT;
    }
    // SAFETY: the caller guarantees the pointers and lengths.
    let src = unsafe { std::slice::from_raw_parts(src, src_len) };
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, dst_len) };
    match decode_page(src, dst) {
        Ok(()) => GLYD_OK,
        Err(_) => GLYD_ERR_INPUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                half::bf16::from_f32(x).to_bits().to_le_bytes()
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
            let mut coded = vec![0u8; unsafe { glyd_kv_page_bound(&shape) }];
            let mut written = 0usize;
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
            let rc = unsafe {
                glyd_kv_decode_page(coded.as_ptr(), written, back.as_mut_ptr(), back.len())
            };
            assert_eq!(rc, GLYD_OK);
            assert_eq!(back, values);
            // Damage is an error code, never a panic.
            for i in (0..written).step_by(61) {
                let mut bad = coded[..written].to_vec();
                bad[i] ^= 0x10;
                let rc = unsafe {
                    glyd_kv_decode_page(bad.as_ptr(), bad.len(), back.as_mut_ptr(), back.len())
                };
                assert!(rc == GLYD_ERR_INPUT || back == values);
            }
            let rc = unsafe {
                glyd_kv_decode_page(coded.as_ptr(), written, back.as_mut_ptr(), back.len() - 2)
            };
            assert_eq!(rc, GLYD_ERR_INPUT);
        }
    }
}
