use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let src = std::fs::read(&a[1]).unwrap();
    let n: usize = a.get(2).map_or(20, |s| s.parse().unwrap());
    let size = glyd_core::decompressed_size(&src).unwrap() as usize;
    let mut out = vec![0u8; size];
    let mut best = f64::MAX;
    for _ in 0..n {
        let t = Instant::now();
        glyd_core::decompress_into(&src, &mut out, 1).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("{:.0} MB/s best of {n}", size as f64 / best / 1e6);
}
