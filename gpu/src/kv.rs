//! KV-cache pages: fixed-size blocks of keys or values (tokens × heads × head_dim, bf16 or
//! fp16) coded losslessly one page at a time, so a serving engine can evict a page to coded
//! form and bring back exactly that page. A page is a small header and a tensor payload in
//! either layout (`docs/FORMAT.md` §8.6); the tiered layout decodes on the GPU in batches
//! (`cuda::Gpu::decode_pages`).
//!
//! The C interface (`glyd_kv_*`, in the capi crate) is what an engine written in C or C++
//! links against.

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
