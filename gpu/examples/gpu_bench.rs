//! GPU numbers for `gpu/check.sh` (feature `cuda`): decode GB/s of the tiered layout for the
//! float tensors of a safetensors file, and the fused decode + GEMV against cuBLAS bf16 GEMV on
//! the same shapes, batch 1, 4 and 16. Every decode is checked against the input first.
//!
//! `cargo run --release -p glyd-gpu --features cuda --example gpu_bench -- MODEL.safetensors`

use std::fs::File;

use glyd_gpu::cuda::{absent, Gpu};
use glyd_gpu::safetensors;
use glyd_gpu::tensor::{self, Layout};
use glyd_gpu::DType;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(why) = absent() {
        println!("SKIPPED: {why}");
        return Ok(());
    }
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: gpu_bench MODEL.safetensors (bf16)")?;
    let gpu = Gpu::open()?.ok_or("no GPU")?;
    let bytes = std::fs::read(&path)?;
    let h = safetensors::read_header(&mut File::open(&path)?, bytes.len() as u64)?;
    let data = &bytes[h.data_offset() as usize..];
    println!("device: {}", gpu.name);
    println!();
    println!("| tensor | dtype | values | bits/value | decode GB/s (kernel) |");
    println!("|---|---|---:|---:|---:|");
    let (mut total_bytes, mut total_secs) = (0f64, 0f64);
    let mut shapes = Vec::new();
    for t in h
        .tensors
        .iter()
        .filter(|t| t.dtype.float_bits().is_some() && t.elements() >= 1 << 16)
    {
        let raw = &data[t.start as usize..t.end as usize];
        let (_, p) = tensor::encode(t.dtype, raw, Layout::Gpu, None);
        let n = t.elements() as usize;
        let (out, _) = gpu.decode_tiered(t.dtype, &p, n)?;
        assert_eq!(out, raw, "{}: GPU decode differs from the input", t.name);
        let secs = median(
            (0..7)
                .map(|_| gpu.decode_tiered(t.dtype, &p, n).map(|r| r.1))
                .collect::<Result<_, _>>()?,
        );
        println!(
            "| {} | {} | {n} | {:.3} | {:.1} |",
            t.name,
            t.dtype.name(),
            p.len() as f64 * 8.0 / n as f64,
            raw.len() as f64 / secs / 1e9
        );
        total_bytes += raw.len() as f64;
        total_secs += secs;
        if t.dtype == DType::BF16
            && t.shape.len() == 2
            && shapes.len() < 3
            && !shapes.iter().any(|s: &(usize, usize, Vec<u8>, Vec<u8>)| {
                (s.0, s.1) == (t.shape[0] as usize, t.shape[1] as usize)
            })
        {
            shapes.push((t.shape[0] as usize, t.shape[1] as usize, raw.to_vec(), p));
        }
    }
    println!();
    println!(
        "all tensors above: {:.1} GB/s of decoded output",
        total_bytes / total_secs / 1e9
    );
    println!();
    println!("| shape | batch | fused decode+GEMV µs | cuBLAS bf16 GEMV µs | fused / cuBLAS |");
    println!("|---|---:|---:|---:|---:|");
    for (rows, cols, raw, p) in &shapes {
        let w: Vec<u16> = raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        for batch in [1usize, 4, 16] {
            let x: Vec<f32> = (0..batch * cols)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let (y, _) = gpu.gemv_tiered(p, *rows, *cols, &x, batch)?;
            let (yc, _) = gpu.gemv_cublas_bf16(&w, *rows, *cols, &x, batch)?;
            let max_diff = y
                .iter()
                .zip(&yc)
                .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
                .fold(0f32, f32::max);
            assert!(
                max_diff < 0.05,
                "fused GEMV and cuBLAS disagree by {max_diff}"
            );
            let fused = median(
                (0..11)
                    .map(|_| gpu.gemv_tiered(p, *rows, *cols, &x, batch).map(|r| r.1))
                    .collect::<Result<_, _>>()?,
            );
            let blas = median(
                (0..11)
                    .map(|_| {
                        gpu.gemv_cublas_bf16(&w, *rows, *cols, &x, batch)
                            .map(|r| r.1)
                    })
                    .collect::<Result<_, _>>()?,
            );
            println!(
                "| {rows}×{cols} | {batch} | {:.1} | {:.1} | {:.2} |",
                fused * 1e6,
                blas * 1e6,
                fused / blas
            );
        }
    }
    Ok(())
}
