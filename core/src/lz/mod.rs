//! The fast LZ block format (block type 2): LZ77 sequences with no entropy stage, split into
//! four homogeneous streams so the decoder reads each with a simple cursor.
//!
//! A payload is three varints (`sequence count`, `literal bytes`, `extra bytes`) followed by
//! the token stream (one byte per sequence), the offset stream (two bytes per sequence, u16 LE),
//! the extra stream (varint length overflows) and the literal stream. Every sequence is
//! "copy `ll` literals, then copy `ml` bytes from `offset` back"; literals left over after the
//! last sequence are the block's tail. `docs/FORMAT.md` §4 is the full specification.

mod decode;
mod encode;

pub use decode::{decode, decode_reference, LzError};
pub use encode::{compress, Finder, Params, Scratch};

/// Shortest match the format can express; the match nibble stores `ml - MIN_MATCH`.
pub const MIN_MATCH: usize = 4;
/// Largest match offset (the window is the previous 64 KiB minus one byte of the block).
pub const MAX_OFFSET: usize = 65_535;
/// A nibble value of 15 means "15 plus a varint from the extra stream".
pub(crate) const NIBBLE_ESCAPE: usize = 15;

thread_local! {
    /// Each thread's encoder memory, kept between blocks.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

/// Compresses `src` as one LZ payload with `params`, appended to `out`, with this thread's
/// reusable scratch memory.
pub fn compress_into(src: &[u8], params: &Params, out: &mut Vec<u8>) {
    SCRATCH.with(|s| compress(src, params, &mut s.borrow_mut(), out));
}

/// Compresses `src` as one LZ payload with `params`.
pub fn compress_block(src: &[u8], params: &Params) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() / 2);
    compress_into(src, params, &mut out);
    out
}
