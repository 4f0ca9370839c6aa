//! Casts every F32 tensor of a safetensors file to BF16 or F16 (round to nearest even),
//! keeping names, shapes, order and metadata: how the benchmarks make a bf16 model from the
//! fp32 all-MiniLM-L6-v2 that a pip package ships.
//!
//! `cargo run --release -p glyd-gpu --example cast -- bf16|f16 IN.safetensors OUT.safetensors`

use std::fs::File;

use glyd_gpu::safetensors::{self, NewTensor};
use glyd_gpu::DType;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, to, input, output] = &args[..] else {
        return Err("usage: cast bf16|f16 IN.safetensors OUT.safetensors".into());
    };
    let to = match to.as_str() {
        "bf16" => DType::BF16,
        "f16" => DType::F16,
        _ => return Err(format!("unknown target dtype {to}").into()),
    };
    let bytes = std::fs::read(input)?;
    let h = safetensors::read_header(&mut File::open(input)?, bytes.len() as u64)?;
    let meta: serde_json::Value = serde_json::from_slice(&h.json)?;
    let metadata: Vec<(String, String)> = meta
        .get("__metadata__")
        .and_then(|m| m.as_object())
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let data = &bytes[h.data_offset() as usize..];
    let cast: Vec<(DType, Vec<u8>)> = h
        .tensors
        .iter()
        .map(|t| {
            let src = &data[t.start as usize..t.end as usize];
            if t.dtype != DType::F32 {
                return (t.dtype, src.to_vec());
            }
            let out = src
                .chunks_exact(4)
                .flat_map(|c| {
                    let x = f32::from_le_bytes(c.try_into().expect("4 bytes"));
                    match to {
                        DType::BF16 => half::bf16::from_f32(x).to_bits().to_le_bytes(),
                        _ => half::f16::from_f32(x).to_bits().to_le_bytes(),
                    }
                })
                .collect();
            (to, out)
        })
        .collect();
    let tensors: Vec<NewTensor> = h
        .tensors
        .iter()
        .zip(&cast)
        .map(|(t, (d, b))| NewTensor {
            name: &t.name,
            dtype: *d,
            shape: t.shape.clone(),
            data: b,
        })
        .collect();
    let meta_refs: Vec<(&str, &str)> = metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    std::fs::write(output, safetensors::write(&tensors, &meta_refs)?)?;
    Ok(())
}
