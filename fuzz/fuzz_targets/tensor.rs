//! Fuzz every tensor decoder (and KV pages): a method, a dtype and an element count from the first bytes,
//! the rest as the payload. Errors are fine; panics and huge allocations are not. Every
//! fourth input is also encoded and must decode to itself.
#![no_main]

use glyd_gpu::tensor::{decode, encode, Layout, Method};
use glyd_gpu::DType;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let Some(dtype) = DType::from_code(input[1] % 15) else {
        return;
    };
    let payload = &input[4..];
    if input[0] % 4 == 0 {
        let n = payload.len() / dtype.size() * dtype.size();
        let layout = if input[2] & 1 == 0 { Layout::Dense } else { Layout::Gpu };
        let (m, p) = encode(dtype, &payload[..n], layout, None);
        let mut out = vec![0u8; n];
        decode(m, dtype, &p, &mut out, None).expect("own payloads decode");
        assert_eq!(out, &payload[..n]);
        return;
    }
    if input[0] % 4 == 1 {
        // A KV page: its header declares the shape; decode only pages of sane size.
        if let Ok(shape) = glyd_gpu::kv::page_shape(payload) {
            if let Some(bytes) = shape.bytes().filter(|&b| b <= 1 << 20) {
                let mut out = vec![0u8; bytes];
                let _ = glyd_gpu::kv::decode_page(payload, &mut out);
            }
        }
    }
    let Some(method) = Method::from_code(input[0] % 5) else {
        return;
    };
    // Element counts up to 4 × the payload (the archive index bounds them the same way).
    let n = (usize::from(input[2]) << 8 | usize::from(input[3])) % (4 * payload.len() + 64);
    let mut out = vec![0u8; n * dtype.size()];
    let base = vec![0u8; out.len()];
    let _ = decode(method, dtype, payload, &mut out, Some(&base));
});
