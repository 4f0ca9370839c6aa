//! The C interface of glyd (`include/glyd.h`, generated from this crate by cbindgen; a test
//! keeps it current). Built as `libglyd.so` and `libglyd.a`.
//!
//! - One-shot: [`oneshot::glyd_compress`] (plain frames, or record mode with
//!   `GLYD_FLAG_RECORDS`), [`oneshot::glyd_decompress`] (frames and record archives alike),
//!   [`oneshot::glyd_decompressed_size`], [`oneshot::glyd_compress_bound`].
//! - Streaming through callbacks: an encoder context fed as data arrives
//!   ([`stream::glyd_encoder_new`]), a decoder context read as data is wanted
//!   ([`stream::glyd_decoder_new`]), and whole streams ([`stream::glyd_compress_stream`],
//!   [`stream::glyd_decompress_stream`], which rebuilds record archives too).
//! - KV-cache pages: [`kv::glyd_kv_encode_page`], [`kv::glyd_kv_decode_page`],
//!   [`kv::glyd_kv_page_bound`] (glyd-gpu's page coding).
//! - Errors: every call returns a `GLYD_*` status; [`error::glyd_error_message`] names a code
//!   and [`error::glyd_last_error`] gives the calling thread's last error in full.
//!
//! Every function may be called from any thread; a context is used by one thread at a time.
//! Nothing panics across the boundary: a bug is `GLYD_ERR_INTERNAL`.

pub mod error;
pub mod kv;
pub mod oneshot;
pub mod stream;
