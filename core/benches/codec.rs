//! Criterion benches of the codec's parts, on a loghub log from the shared corpus (or a
//! generated log-like text when the corpus is absent): LZ compress and decode per level, the
//! block checksum alone, and whole-frame compress/decompress on 1 thread.
//!
//! Run: `cargo bench -p glyd-core` (fat LTO, the `bench` profile). Side-by-side numbers
//! against zstd and lz4 come from `glyd -b` (see `benches/run.sh`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use glyd_core::{lz, Level, Method, Options};

fn sample() -> Vec<u8> {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/loghub/HDFS_2k.log"
    );
    std::fs::read(p).unwrap_or_else(|_| {
        (0..20_000u32)
            .map(|i| {
                format!(
                    "081109 2035{:02} {} INFO dfs.DataNode: block blk_{} of size {}\n",
                    i % 60,
                    i % 97,
                    i * 7919,
                    i % 1000
                )
            })
            .collect::<String>()
            .into_bytes()
    })
}

fn bench(c: &mut Criterion) {
    let data = sample();
    let mut g = c.benchmark_group("lz");
    g.throughput(Throughput::Bytes(data.len() as u64));
    for level in Level::ALL {
        let Method::Lz(params) = level.method() else {
            continue;
        };
        let payload = lz::compress_block(&data, &params);
        g.bench_with_input(BenchmarkId::new("compress", level.name()), &data, |b, d| {
            b.iter(|| lz::compress_block(d, &params))
        });
        let mut out = vec![0u8; data.len()];
        g.bench_with_input(
            BenchmarkId::new("decode", level.name()),
            &payload,
            |b, p| b.iter(|| lz::decode(p, &mut out).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("decode_reference", level.name()),
            &payload,
            |b, p| b.iter(|| lz::decode_reference(p, &mut out).unwrap()),
        );
    }
    g.bench_function("checksum", |b| b.iter(|| glyd_core::checksum(&data)));
    for level in Level::ALL {
        let opts = Options::new(level).with_threads(1);
        let packed = glyd_core::compress(&data, &opts).unwrap();
        let mut out = vec![0u8; data.len()];
        g.bench_with_input(
            BenchmarkId::new("frame_decompress", level.name()),
            &packed,
            |b, p| b.iter(|| glyd_core::decompress_into(p, &mut out, 1).unwrap()),
        );
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
