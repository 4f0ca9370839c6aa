//! Measures tensor coding on a safetensors file: per layout, bits per value over the float
//! tensors and decode speed in GB/s of output on one thread (median of runs), every decode
//! checked against the input. `benches/tensors.sh` runs it beside ZipNN and the published Glyd.
//!
//! `cargo run --release -p glyd-gpu --example bench -- FILE.safetensors [RUNS [dense|gpu]]`

use std::fs::File;
use std::time::Instant;

use glyd_gpu::safetensors;
use glyd_gpu::tensor::{self, Layout};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: bench FILE.safetensors [RUNS]")?;
    let runs: usize = args.get(2).map(|r| r.parse()).transpose()?.unwrap_or(5);
    let bytes = std::fs::read(path)?;
    let h = safetensors::read_header(&mut File::open(path)?, bytes.len() as u64)?;
    let data = &bytes[h.data_offset() as usize..];
    let floats: Vec<_> = h
        .tensors
        .iter()
        .filter(|t| t.dtype.float_bits().is_some())
        .collect();
    let values: u64 = floats.iter().map(|t| t.elements()).sum();
    let raw: u64 = floats.iter().map(|t| t.len()).sum();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    println!("| layout | float values | bits/value | ratio | decode GB/s (1 thread) | encode GB/s (1 thread) |");
    println!("|---|---:|---:|---:|---:|---:|");
    let only = args.get(3).map(String::as_str);
    for (label, layout) in [("dense", Layout::Dense), ("gpu", Layout::Gpu)] {
        if only.is_some_and(|o| o != label) {
            continue;
        }
        let mut enc_times = Vec::new();
        let mut coded = Vec::new();
        for _ in 0..runs {
            let t0 = Instant::now();
            coded = pool.install(|| {
                floats
                    .iter()
                    .map(|t| {
                        tensor::encode(
                            t.dtype,
                            &data[t.start as usize..t.end as usize],
                            layout,
                            None,
                        )
                    })
                    .collect::<Vec<_>>()
            });
            enc_times.push(t0.elapsed().as_secs_f64());
        }
        let packed: u64 = coded.iter().map(|(_, p)| p.len() as u64).sum();
        let mut outs: Vec<Vec<u8>> = floats.iter().map(|t| vec![0u8; t.len() as usize]).collect();
        let mut dec_times = Vec::new();
        for _ in 0..runs {
            let t0 = Instant::now();
            pool.install(|| {
                for ((t, (m, p)), out) in floats.iter().zip(&coded).zip(outs.iter_mut()) {
                    tensor::decode(*m, t.dtype, p, out, None).expect("decodes");
                }
            });
            dec_times.push(t0.elapsed().as_secs_f64());
        }
        for (t, out) in floats.iter().zip(&outs) {
            assert_eq!(
                &out[..],
                &data[t.start as usize..t.end as usize],
                "{}",
                t.name
            );
        }
        println!(
            "| glyd {label} | {values} | {:.3} | {:.3} | {:.2} | {:.2} |",
            packed as f64 * 8.0 / values as f64,
            raw as f64 / packed as f64,
            raw as f64 / median(&mut dec_times) / 1e9,
            raw as f64 / median(&mut enc_times) / 1e9,
        );
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
