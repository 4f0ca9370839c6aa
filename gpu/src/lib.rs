//! glyd-gpu: lossless coding of model tensors. A bf16 weight is 1 sign, 8 exponent and 7
//! mantissa bits; sign and mantissa are near-random, the exponent carries under 3 bits of
//! information. glyd codes the exponent (with the top mantissa bits where that pays) and
//! keeps the rest verbatim: about a third off every bf16 model, bit for bit.
//!
//! - [`safetensors`]: reading and validating safetensors headers (and writing small files).
//! - [`dense`] and [`tiered`]: the two float layouts (entropy-close on the CPU; fixed-width
//!   tiers a GPU decodes in parallel), [`tensor`] choosing between them and the core codec.
//! - [`archive`]: packing a model file or folder into a tensor archive and reading it;
//!   [`unpack`]: writing its files back, byte for byte, streamed and staged.
//! - [`kv`]: KV-cache pages (their C interface is in the capi crate).
//! - `cuda` (feature): NVRTC kernels that decode the GPU layout on the device.
//!
//! `docs/FORMAT.md` §8 specifies every byte.

pub mod archive;
#[cfg(target_arch = "x86_64")]
mod bf16_avx512;
pub mod bitpack;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dense;
#[cfg(target_arch = "x86_64")]
mod dense_avx512;
pub mod dtype;
pub mod error;
pub mod float;
pub mod kv;
pub mod model;
mod pickle;
pub mod safetensors;
pub mod tensor;
pub mod tiered;
pub mod torchzip;
pub mod unpack;

pub use archive::{pack, pack_model, pack_to, PackOptions, PackReport, TensorArchive};
pub use dtype::DType;
pub use error::{Error, Result};
pub use model::Model;
pub use tensor::{Layout, Method};
