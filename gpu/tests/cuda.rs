//! The CUDA kernels against the CPU reference (feature `cuda`). Without a CUDA driver every
//! test prints why it skipped; on a GPU machine `gpu/check.sh` runs them.
#![cfg(feature = "cuda")]

use glyd_gpu::cuda::{absent, Gpu};
use glyd_gpu::tensor::{self, Layout};
use glyd_gpu::tiered;
use glyd_gpu::DType;

fn gpu() -> Option<Gpu> {
    if let Some(why) = absent() {
        // Straight to stderr (not eprintln!, which the test harness captures): a skip is shown.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {why}; the CUDA kernels were not run"
        );
        return None;
    }
    Some(
        Gpu::open()
            .expect("a CUDA driver is present, so the device must open")
            .expect("driver present"),
    )
}

/// Weight-like words with every tier used: a narrow band of exponents plus rare outliers.
fn words(n: usize, d: DType, seed: u32) -> Vec<u8> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(n * d.size());
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        let x = match i % 1013 {
            7 => f32::NAN,
            8 => -0.0,
            9 => 1e30,
            10 => f32::from_bits(5),
            _ => {
                ((s >> 8) as f32 / (1 << 24) as f32 - 0.5)
                    * ((s & 0xff) as f32 / 32.0).exp2()
                    * 1e-3
            }
        };
        match d {
            DType::BF16 => out.extend_from_slice(&half::bf16::from_f32(x).to_bits().to_le_bytes()),
            DType::F16 => out.extend_from_slice(&half::f16::from_f32(x).to_bits().to_le_bytes()),
            _ => out.extend_from_slice(&x.to_le_bytes()),
        }
    }
    out
}

#[test]
fn tiered_decode_matches_the_cpu_bit_for_bit() {
    let Some(gpu) = gpu() else { return };
    for d in [DType::BF16, DType::F16, DType::F32] {
        for n in [0usize, 1, 4095, 4096, 4097, 100_000] {
            let bytes = words(n, d, n as u32 + 7);
            // Straight to the tiered coder: `tensor::encode` stores an empty tensor as is,
            // and the kernel must also handle a tensor with no tiles.
            let mut p = Vec::new();
            tiered::encode(d.float_bits().unwrap(), &bytes, &mut p);
            let mut cpu = vec![0u8; bytes.len()];
            tiered::decode(d.float_bits().unwrap(), &p, n, &mut cpu).unwrap();
            assert_eq!(cpu, bytes, "CPU reference {d:?} n={n}");
            let (out, _) = gpu.decode_tiered(d, &p, n).unwrap();
            assert_eq!(out, bytes, "{d:?} n={n}");
        }
    }
}

#[test]
fn fused_gemv_matches_the_cpu_product() {
    let Some(gpu) = gpu() else { return };
    for (rows, cols) in [(384usize, 1536usize), (1536, 384), (7, 5000), (3000, 3)] {
        let w = words(rows * cols, DType::BF16, 99);
        let wf: Vec<f32> = w
            .chunks_exact(2)
            .map(|c| {
                let v = half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
                if v.is_finite() && v.abs() < 1e20 {
                    v
                } else {
                    0.0
                }
            })
            .collect();
        // Non-finite and huge weights would swamp the sums: the product check zeroes them.
        let clean: Vec<u8> = wf
            .iter()
            .flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes())
            .collect();
        let (_, p_clean) = tensor::encode(DType::BF16, &clean, Layout::Gpu, None);
        for batch in [1usize, 4, 16] {
            let x: Vec<f32> = (0..batch * cols)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let (y, _) = gpu.gemv_tiered(&p_clean, rows, cols, &x, batch).unwrap();
            for b in 0..batch {
                for r in 0..rows {
                    let want: f64 = (0..cols)
                        .map(|c| f64::from(wf[r * cols + c]) * f64::from(x[b * cols + c]))
                        .sum();
                    let got = f64::from(y[b * rows + r]);
                    assert!(
                        (got - want).abs() <= 1e-3 * (1.0 + want.abs()),
                        "{rows}x{cols} b={b} r={r}: {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn kv_pages_decode_together() {
    let Some(gpu) = gpu() else { return };
    let pages: Vec<Vec<u8>> = (0..5)
        .map(|k| words(64 * 12 * 32 + k * 100, DType::BF16, k as u32 + 1))
        .collect();
    let coded: Vec<Vec<u8>> = pages
        .iter()
        .map(|b| tensor::encode(DType::BF16, b, Layout::Gpu, None).1)
        .collect();
    let refs: Vec<(&[u8], usize)> = coded
        .iter()
        .zip(&pages)
        .map(|(c, b)| (&c[..], b.len() / 2))
        .collect();
    let (out, _) = gpu.decode_pages(DType::BF16, &refs).unwrap();
    assert_eq!(out, pages.concat());
}

#[test]
fn hostile_payloads_fail_cleanly_on_the_device() {
    let Some(gpu) = gpu() else { return };
    let bytes = words(10_000, DType::BF16, 3);
    let (_, p) = tensor::encode(DType::BF16, &bytes, Layout::Gpu, None);
    for i in (0..p.len()).step_by(53) {
        let mut q = p.clone();
        q[i] ^= 0xff;
        if let Ok((out, _)) = gpu.decode_tiered(DType::BF16, &q, 10_000) {
            // A flip the structure cannot see (a verbatim bit) decodes to different bytes
            // that the archive checksum catches; it must never read outside the planes.
            assert_eq!(out.len(), bytes.len());
        }
    }
}
