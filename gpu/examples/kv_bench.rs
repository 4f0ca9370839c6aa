//! KV-cache pages on real keys and values (`gpu/tests/data/minilm-kv.safetensors` by default):
//! per layout, bits per value and one-thread encode / decode GB/s of pages of 64 tokens, every
//! decode compared with its page. `benches/tensors.sh` runs it.
//!
//! `cargo run --release -p glyd-gpu --example kv_bench -- [KV.safetensors] [RUNS]`

use std::time::Instant;

use glyd_gpu::kv::{decode_page, encode_page, GlydKvPageShape};
use glyd_gpu::safetensors;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/minilm-kv.safetensors"
        )
        .into()
    });
    let runs: usize = args.get(2).map(|r| r.parse()).transpose()?.unwrap_or(5);
    let bytes = std::fs::read(&path)?;
    let h = safetensors::read_header(&mut &bytes[..], bytes.len() as u64)?;
    let data = &bytes[h.data_offset() as usize..];
    let mut pages = Vec::new();
    for t in &h.tensors {
        let (heads, head_dim) = (t.shape[1] as u32, t.shape[2] as u32);
        let page_bytes = 64 * (heads * head_dim) as usize * 2;
        for p in data[t.start as usize..t.end as usize].chunks_exact(page_bytes) {
            pages.push((heads, head_dim, p));
        }
    }
    let raw: usize = pages.iter().map(|p| p.2.len()).sum();
    println!("{} pages of 64 tokens ({} values)", pages.len(), raw / 2);
    println!();
    println!("| layout | bits/value | encode GB/s (1 thread) | decode GB/s (1 thread) |");
    println!("|---|---:|---:|---:|");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    for (label, layout) in [("dense", 0), ("gpu", 1)] {
        let encode = || -> Vec<Vec<u8>> {
            pages
                .iter()
                .map(|&(heads, head_dim, p)| {
                    let shape = GlydKvPageShape {
                        tokens: 64,
                        heads,
                        head_dim,
                        dtype: 0,
                        layout,
                    };
                    encode_page(&shape, p).expect("page encodes")
                })
                .collect()
        };
        let coded = pool.install(encode);
        let mut outs: Vec<Vec<u8>> = pages.iter().map(|p| vec![0u8; p.2.len()]).collect();
        let enc = median(
            (0..runs)
                .map(|_| {
                    let t0 = Instant::now();
                    pool.install(encode);
                    t0.elapsed().as_secs_f64()
                })
                .collect(),
        );
        let dec = median(
            (0..runs)
                .map(|_| {
                    let t0 = Instant::now();
                    pool.install(|| {
                        for (c, o) in coded.iter().zip(outs.iter_mut()) {
                            decode_page(c, o).expect("page decodes");
                        }
                    });
                    t0.elapsed().as_secs_f64()
                })
                .collect(),
        );
        for (p, o) in pages.iter().zip(&outs) {
            assert_eq!(p.2, &o[..]);
        }
        let size: usize = coded.iter().map(Vec::len).sum();
        println!(
            "| glyd {label} pages | {:.3} | {:.2} | {:.2} |",
            size as f64 * 16.0 / raw as f64,
            raw as f64 / enc / 1e9,
            raw as f64 / dec / 1e9
        );
    }
    Ok(())
}
