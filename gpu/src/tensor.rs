//! One tensor's bytes to a payload and back: the coding method is chosen per tensor from its
//! dtype, the layout asked for, and (when packing against a base model) whether the XOR with
//! the base tensor codes smaller.

use glyd_core::{Level, Options};

use crate::dtype::DType;
use crate::{dense, tiered};

/// Which float layout to write.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Closest to the entropy floor; decoded on the CPU.
    #[default]
    Dense,
    /// Fixed-width tiers that a GPU decodes in parallel (and the CPU too).
    Gpu,
}

/// How a payload is coded (`docs/FORMAT.md` §8.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// The tensor's bytes as they are.
    Stored = 0,
    /// A glyd frame (`--max`) of the bytes: integer, fp8, f64 and bool tensors.
    Frame = 1,
    /// The dense float layout.
    Dense = 2,
    /// The tiered (GPU) float layout.
    Tiered = 3,
    /// A glyd frame of the bytes XORed with the base model's tensor of the same name.
    XorBase = 4,
}

impl Method {
    /// Parses a stored method byte.
    pub fn from_code(c: u8) -> Option<Method> {
        Some(match c {
            0 => Method::Stored,
            1 => Method::Frame,
            2 => Method::Dense,
            3 => Method::Tiered,
            4 => Method::XorBase,
            _ => return None,
        })
    }

    /// A word for reports.
    pub fn label(self) -> &'static str {
        match self {
            Method::Stored => "stored",
            Method::Frame => "glyd --max",
            Method::Dense => "dense exponents",
            Method::Tiered => "gpu tiers",
            Method::XorBase => "xor base",
        }
    }
}

fn frame(bytes: &[u8]) -> Vec<u8> {
    // Tensors are encoded one after another with the pool busy inside; one thread per frame.
    glyd_core::compress(bytes, &Options::new(Level::Max).with_threads(1))
        .expect("compressing into memory cannot fail")
}

/// Codes a tensor of `dtype` (`bytes` a whole number of elements). `base` is the base
/// model's tensor of the same name, dtype and shape, when there is one.
pub fn encode(
    dtype: DType,
    bytes: &[u8],
    layout: Layout,
    base: Option<&[u8]>,
) -> (Method, Vec<u8>) {
    let (mut method, mut payload) = match dtype.float_bits() {
        Some(fb) if !bytes.is_empty() => {
            let mut p = Vec::with_capacity(bytes.len());
            match layout {
                Layout::Dense => {
                    dense::encode(fb, bytes, &mut p);
                    (Method::Dense, p)
                }
                Layout::Gpu => {
                    tiered::encode(fb, bytes, &mut p);
                    (Method::Tiered, p)
                }
            }
        }
        _ => (Method::Frame, frame(bytes)),
    };
    if let Some(base) = base.filter(|b| b.len() == bytes.len()) {
        let xor: Vec<u8> = bytes.iter().zip(base).map(|(a, b)| a ^ b).collect();
        let coded = frame(&xor);
        if coded.len() < payload.len() {
            (method, payload) = (Method::XorBase, coded);
        }
    }
    // The GPU layout stays tiered even where stored would be a few bytes smaller, so a GPU
    // decoder sees one layout; everything else falls back to the bytes as they are.
    if payload.len() >= bytes.len() && method != Method::Tiered {
        return (Method::Stored, bytes.to_vec());
    }
    (method, payload)
}

/// Decodes a payload into `out` (the tensor's byte length). `base` as for [`encode`].
pub fn decode(
    method: Method,
    dtype: DType,
    payload: &[u8],
    out: &mut [u8],
    base: Option<&[u8]>,
) -> Result<(), String> {
    let n = out.len() / dtype.size();
    let float = || {
        dtype
            .float_bits()
            .ok_or_else(|| format!("{} is not a float type this layout codes", dtype.name()))
    };
    match method {
        Method::Stored => {
            if payload.len() != out.len() {
                return Err(format!(
                    "stored payload is {} bytes, the tensor {}",
                    payload.len(),
                    out.len()
                ));
            }
            out.copy_from_slice(payload);
        }
        Method::Frame | Method::XorBase => {
            frame_into(payload, out)?;
            if method == Method::XorBase {
                let base = base.ok_or("tensor was packed against a base model: pass --base")?;
                if base.len() != out.len() {
                    return Err("base tensor has a different size".into());
                }
                for (o, b) in out.iter_mut().zip(base) {
                    *o ^= b;
                }
            }
        }
        Method::Dense => dense::decode(float()?, payload, n, out).map_err(str::to_owned)?,
        Method::Tiered => tiered::decode(float()?, payload, n, out).map_err(str::to_owned)?,
    }
    Ok(())
}

fn frame_into(payload: &[u8], out: &mut [u8]) -> Result<(), String> {
    let declared = glyd_core::decompressed_size(payload).map_err(|e| e.to_string())?;
    if declared != out.len() as u64 {
        return Err(format!(
            "frame declares {declared} bytes, the tensor holds {}",
            out.len()
        ));
    }
    glyd_core::decompress_into(payload, out, 1).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_and_layout_round_trips() {
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        for code in 0..15 {
            let d = DType::from_code(code).unwrap();
            for layout in [Layout::Dense, Layout::Gpu] {
                let (m, p) = encode(d, &bytes, layout, None);
                let mut out = vec![0u8; bytes.len()];
                decode(m, d, &p, &mut out, None).unwrap();
                assert_eq!(out, bytes, "{d:?} {layout:?} {m:?}");
            }
        }
    }

    #[test]
    fn a_fine_tune_codes_as_xor_with_its_base() {
        let base: Vec<u8> = (0..8192u32)
            .flat_map(|i| (i.wrapping_mul(2654435761) as u16).to_le_bytes())
            .collect();
        let mut tuned = base.clone();
        for i in (0..tuned.len()).step_by(97) {
            tuned[i] ^= 1;
        }
        let (m, p) = encode(DType::BF16, &tuned, Layout::Dense, Some(&base));
        assert_eq!(m, Method::XorBase);
        assert!(p.len() < tuned.len() / 10);
        let mut out = vec![0u8; tuned.len()];
        decode(m, DType::BF16, &p, &mut out, Some(&base)).unwrap();
        assert_eq!(out, tuned);
        assert!(decode(m, DType::BF16, &p, &mut out, None)
            .unwrap_err()
            .contains("--base"));
    }
}
