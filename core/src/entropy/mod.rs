//! Entropy coders: canonical Huffman for byte streams (literals, offset codes) and tANS for
//! small-alphabet symbol streams (length codes), over one forward bit-stream layout.
//! `docs/FORMAT.md` §5.

pub mod bits;
pub mod fse;
pub mod huffman;

/// Why an entropy-coded section could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntropyError(pub &'static str);

impl std::fmt::Display for EntropyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Byte histogram.
pub fn histogram(data: &[u8]) -> [u32; 256] {
    let mut h = Histogram::new();
    h.add(data);
    h.counts()
}

/// A byte histogram built from several slices. Four sub-histograms break the store-to-load
/// chain on runs of one byte (one table costs a store-forwarding wait per repeated byte).
pub struct Histogram([[u32; 256]; 4]);

impl Histogram {
    pub fn new() -> Self {
        Histogram([[0; 256]; 4])
    }

    pub fn add(&mut self, data: &[u8]) {
        let h = &mut self.0;
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            h[0][c[0] as usize] += 1;
            h[1][c[1] as usize] += 1;
            h[2][c[2] as usize] += 1;
            h[3][c[3] as usize] += 1;
        }
        for &b in chunks.remainder() {
            h[0][b as usize] += 1;
        }
    }

    pub fn counts(&self) -> [u32; 256] {
        let h = &self.0;
        std::array::from_fn(|s| h[0][s] + h[1][s] + h[2][s] + h[3][s])
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}
