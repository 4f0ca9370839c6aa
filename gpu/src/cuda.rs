//! CUDA decode of the tiered (GPU) layout, behind the `cuda` feature: kernels in
//! `kernels.cu`, compiled at run time with NVRTC so that building needs no CUDA toolkit.
//! [`Gpu::open`] probes for a driver first; without one it returns `Ok(None)` and callers
//! skip with a message. Every kernel's output is compared with the CPU reference in tests.
//!
//! This is the one place in the crate with `unsafe`: kernel launches and the `#[repr(C)]`
//! struct the kernels read.

use std::sync::Arc;

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg,
};

use crate::dtype::DType;
use crate::tiered::{self, TILE};

const SOURCE: &str = include_str!("kernels.cu");
const THREADS: u32 = 128;

/// Errors from the device: driver, NVRTC, cuBLAS, or a payload the kernel found out of bounds.
pub type GpuResult<T> = Result<T, String>;

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

/// The kernels' view of one tiered payload (layout shared with `struct Planes` in kernels.cu).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct Planes {
    tier1: u64,
    tier2: u64,
    tier3: u64,
    raw: u64,
    tiles: u64,
    exponents: u64,
    ranks: u32,
    w1: u32,
    w2: u32,
    n2: u32,
    n3: u32,
    mantissa: u32,
    word_bits: u32,
    n: u64,
}

// SAFETY: plain data of the layout the kernels declare (u64 device pointers, u32, u64).
unsafe impl DeviceRepr for Planes {}

/// A payload laid out for the device: one byte buffer holding the planes (each followed by
/// 8 zero bytes, since the kernels read up to five bytes past a value's first), the tile
/// starts (with the first tile's (0, 0)) and a 256-entry exponent table.
struct Staged {
    bytes: Vec<u8>,
    /// Offsets of tier1, tier2, tier3, raw, tiles, exponents in `bytes`.
    at: [usize; 6],
    head: Planes,
}

fn stage(dtype: DType, payload: &[u8], n: usize) -> GpuResult<Staged> {
    let fb = dtype
        .float_bits()
        .ok_or_else(|| format!("{} has no tiered layout", dtype.name()))?;
    let t = tiered::parse(fb, payload, n).map_err(str::to_owned)?;
    let mut bytes = Vec::with_capacity(payload.len() + 4096);
    let mut at = [0usize; 6];
    let tiles: Vec<u8> = std::iter::once((0u32, 0u32))
        .chain(t.tiles.iter().copied())
        .flat_map(|(a, b)| [a.to_le_bytes(), b.to_le_bytes()].concat())
        .collect();
    let mut exps = t.exponents.to_vec();
    exps.resize(256, 0);
    for (k, part) in [t.tier1, t.tier2, t.tier3, t.raw, &tiles[..], &exps[..]]
        .into_iter()
        .enumerate()
    {
        // Align each part to 8 bytes (the tile starts are read as u32).
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        at[k] = bytes.len();
        bytes.extend_from_slice(part);
        bytes.extend_from_slice(&[0u8; 8]);
    }
    let head = Planes {
        ranks: t.exponents.len() as u32,
        w1: t.w1,
        w2: t.w2,
        n2: t.n2 as u32,
        n3: t.tier3.len() as u32,
        mantissa: fb.mantissa,
        word_bits: fb.bits,
        n: n as u64,
        ..Planes::default()
    };
    Ok(Staged { bytes, at, head })
}

impl Staged {
    fn planes_at(&self, base: u64) -> Planes {
        let p = |k: usize| base + self.at[k] as u64;
        Planes {
            tier1: p(0),
            tier2: p(1),
            tier3: p(2),
            raw: p(3),
            tiles: p(4),
            exponents: p(5),
            ..self.head
        }
    }
}

/// A CUDA device with the glyd kernels loaded.
pub struct Gpu {
    stream: Arc<CudaStream>,
    decode: CudaFunction,
    gemv: CudaFunction,
    pages: CudaFunction,
    blas: CudaBlas,
    /// The device's name, for reports.
    pub name: String,
}

/// Why there is no GPU to use, when there is none (for the skip message).
pub fn absent() -> Option<String> {
    // SAFETY: only checks whether the driver library can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("no CUDA driver library on this machine".into());
    }
    None
}

impl Gpu {
    /// Opens device 0 and compiles the kernels; `Ok(None)` when this machine has no CUDA
    /// driver (callers print a skip message).
    pub fn open() -> GpuResult<Option<Gpu>> {
        if absent().is_some() {
            return Ok(None);
        }
        let ctx = CudaContext::new(0).map_err(err)?;
        let name = ctx.name().map_err(err)?;
        let stream = ctx.default_stream();
        let ptx = cudarc::nvrtc::compile_ptx(SOURCE).map_err(err)?;
        let module = ctx.load_module(ptx).map_err(err)?;
        let f = |n: &str| module.load_function(n).map_err(err);
        Ok(Some(Gpu {
            decode: f("tiered_decode")?,
            gemv: f("tiered_gemv_bf16")?,
            pages: f("tiered_decode_pages")?,
            blas: CudaBlas::new(stream.clone()).map_err(err)?,
            stream,
            name,
        }))
    }

    /// Records an event on the stream: the start of a timed span.
    fn mark(&self) -> GpuResult<CudaEvent> {
        self.stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)
    }

    /// Seconds of device time from `start` to now, measured with CUDA events, so that launch
    /// and synchronisation overhead on the host is not counted (for the kernels and cuBLAS
    /// alike); waits for the stream.
    fn seconds_since(&self, start: &CudaEvent) -> GpuResult<f64> {
        let end = self.mark()?;
        self.stream.synchronize().map_err(err)?;
        Ok(f64::from(start.elapsed_ms(&end).map_err(err)?) / 1e3)
    }

    fn check_bad(&self, bad: &CudaSlice<i32>) -> GpuResult<()> {
        if self.stream.clone_dtoh(bad).map_err(err)?[0] != 0 {
            return Err("tiered payload names an entry outside its planes".into());
        }
        Ok(())
    }

    /// Decodes a tiered payload of `n` values of `dtype` on the device; returns the bytes and
    /// the kernel time in seconds (upload and download excluded).
    pub fn decode_tiered(
        &self,
        dtype: DType,
        payload: &[u8],
        n: usize,
    ) -> GpuResult<(Vec<u8>, f64)> {
        let s = stage(dtype, payload, n)?;
        let dev = self.stream.clone_htod(&s.bytes).map_err(err)?;
        let base = dev.device_ptr(&self.stream).0;
        let planes = s.planes_at(base);
        let mut out = self
            .stream
            .alloc_zeros::<u8>((n * dtype.size()).max(1))
            .map_err(err)?;
        let mut bad = self.stream.alloc_zeros::<i32>(1).map_err(err)?;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(TILE).max(1) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let start = self.mark()?;
        let mut launch = self.stream.launch_builder(&self.decode);
        launch.arg(&planes).arg(&mut out).arg(&mut bad);
        // SAFETY: the planes lie in `dev` (kept alive), padded so every read stays inside;
        // `out` holds n words; indices past the tier counts are clamped and reported in `bad`.
        unsafe { launch.launch(cfg) }.map_err(err)?;
        let secs = self.seconds_since(&start)?;
        self.check_bad(&bad)?;
        let mut bytes = self.stream.clone_dtoh(&out).map_err(err)?;
        bytes.truncate(n * dtype.size());
        drop(dev);
        Ok((bytes, secs))
    }

    /// y = W·x for a tiered bf16 matrix W of `rows` × `cols` and `batch` vectors x (row-major,
    /// batch × cols), decoding W on the fly; returns y (batch × rows) and the kernel time.
    pub fn gemv_tiered(
        &self,
        payload: &[u8],
        rows: usize,
        cols: usize,
        x: &[f32],
        batch: usize,
    ) -> GpuResult<(Vec<f32>, f64)> {
        let n = rows * cols;
        if cols == 0 || x.len() != batch * cols || !(1..=16).contains(&batch) {
            return Err("gemv: x must be batch × cols with batch in 1..=16".into());
        }
        let s = stage(DType::BF16, payload, n)?;
        let dev = self.stream.clone_htod(&s.bytes).map_err(err)?;
        let planes = s.planes_at(dev.device_ptr(&self.stream).0);
        let xd = self.stream.clone_htod(x).map_err(err)?;
        let mut y = self.stream.alloc_zeros::<f32>(batch * rows).map_err(err)?;
        let mut bad = self.stream.alloc_zeros::<i32>(1).map_err(err)?;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(TILE).max(1) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (cols32, batch32) = (cols as u32, batch as u32);
        let start = self.mark()?;
        let mut launch = self.stream.launch_builder(&self.gemv);
        launch
            .arg(&planes)
            .arg(&cols32)
            .arg(&batch32)
            .arg(&xd)
            .arg(&mut y)
            .arg(&mut bad);
        // SAFETY: as for decode_tiered; x holds batch × cols floats and y batch × rows.
        unsafe { launch.launch(cfg) }.map_err(err)?;
        let secs = self.seconds_since(&start)?;
        self.check_bad(&bad)?;
        let y = self.stream.clone_dtoh(&y).map_err(err)?;
        drop(dev);
        Ok((y, secs))
    }

    /// The same product through cuBLAS on the plain bf16 matrix (`w`: rows × cols words):
    /// the baseline for the fused kernel. Returns y (batch × rows, rounded to bf16 by cuBLAS)
    /// and the time.
    pub fn gemv_cublas_bf16(
        &self,
        w: &[u16],
        rows: usize,
        cols: usize,
        x: &[f32],
        batch: usize,
    ) -> GpuResult<(Vec<f32>, f64)> {
        let to_bf16 = |v: &[f32]| {
            v.iter()
                .map(|&f| half::bf16::from_f32(f))
                .collect::<Vec<_>>()
        };
        let wd = self
            .stream
            .clone_htod(
                &w.iter()
                    .map(|&b| half::bf16::from_bits(b))
                    .collect::<Vec<_>>(),
            )
            .map_err(err)?;
        let xd = self.stream.clone_htod(&to_bf16(x)).map_err(err)?;
        let mut yd = self
            .stream
            .alloc_zeros::<half::bf16>(batch * rows)
            .map_err(err)?;
        // Column-major view: W (row-major rows × cols) is Wᵀ (cols × rows); y = Wᵀᵀ·x.
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: rows as i32,
            n: batch as i32,
            k: cols as i32,
            alpha: half::bf16::ONE,
            lda: cols as i32,
            ldb: cols as i32,
            beta: half::bf16::ZERO,
            ldc: rows as i32,
        };
        let start = self.mark()?;
        // SAFETY: buffers sized rows × cols, batch × cols and batch × rows as cfg says.
        unsafe { self.blas.gemm(cfg, &wd, &xd, &mut yd) }.map_err(err)?;
        let secs = self.seconds_since(&start)?;
        let y = self.stream.clone_dtoh(&yd).map_err(err)?;
        Ok((y.iter().map(|v| v.to_f32()).collect(), secs))
    }

    /// Decodes many tiered KV pages (each `(payload, values)`, all of `dtype`) in one launch;
    /// returns the pages' bytes back to back and the kernel time.
    pub fn decode_pages(
        &self,
        dtype: DType,
        pages: &[(&[u8], usize)],
    ) -> GpuResult<(Vec<u8>, f64)> {
        let mut all = Vec::new();
        let mut heads = Vec::with_capacity(pages.len());
        let mut out_offsets = Vec::with_capacity(pages.len());
        let mut out_len = 0u64;
        let mut max_tiles = 1;
        for &(payload, n) in pages {
            let s = stage(dtype, payload, n)?;
            let at = all.len().next_multiple_of(8);
            all.resize(at, 0);
            all.extend_from_slice(&s.bytes);
            heads.push((s, at));
            out_offsets.push(out_len);
            out_len += (n * dtype.size()) as u64;
            max_tiles = max_tiles.max(n.div_ceil(TILE));
        }
        let dev = self.stream.clone_htod(&all).map_err(err)?;
        let base = dev.device_ptr(&self.stream).0;
        let planes: Vec<Planes> = heads
            .iter()
            .map(|(s, at)| s.planes_at(base + *at as u64))
            .collect();
        // Planes is plain data; upload it as bytes.
        let plane_bytes: Vec<u8> = planes
            .iter()
            .flat_map(|p| {
                let mut b = Vec::with_capacity(88);
                for v in [p.tier1, p.tier2, p.tier3, p.raw, p.tiles, p.exponents] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
                for v in [p.ranks, p.w1, p.w2, p.n2, p.n3, p.mantissa, p.word_bits, 0] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
                b.extend_from_slice(&p.n.to_le_bytes());
                b
            })
            .collect();
        debug_assert_eq!(
            plane_bytes.len(),
            planes.len() * std::mem::size_of::<Planes>()
        );
        let pd = self.stream.clone_htod(&plane_bytes).map_err(err)?;
        let od = self.stream.clone_htod(&out_offsets).map_err(err)?;
        let mut out = self
            .stream
            .alloc_zeros::<u8>((out_len as usize).max(1))
            .map_err(err)?;
        let mut bad = self.stream.alloc_zeros::<i32>(1).map_err(err)?;
        let cfg = LaunchConfig {
            grid_dim: (max_tiles as u32, pages.len().max(1) as u32, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let start = self.mark()?;
        let mut launch = self.stream.launch_builder(&self.pages);
        launch.arg(&pd).arg(&od).arg(&mut out).arg(&mut bad);
        // SAFETY: each page's planes lie in `dev`; blocks past a page's tiles return at once.
        unsafe { launch.launch(cfg) }.map_err(err)?;
        let secs = self.seconds_since(&start)?;
        self.check_bad(&bad)?;
        let mut bytes = self.stream.clone_dtoh(&out).map_err(err)?;
        bytes.truncate(out_len as usize);
        drop(dev);
        Ok((bytes, secs))
    }
}
