//! Fuzz compress → decompress at every level and a small block size: the bytes must come back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for level in glyd_core::Level::ALL {
        let opts = glyd_core::Options::new(level).with_block_size(1024).with_threads(1);
        let packed = glyd_core::compress(data, &opts).unwrap();
        assert_eq!(glyd_core::decompress_with(&packed, 1).unwrap(), data);
        if let glyd_core::Method::Lz(params) = level.method() {
            let payload = glyd_core::lz::compress_block(data, &params);
            let mut out = vec![0u8; data.len()];
            glyd_core::lz::decode(&payload, &mut out).unwrap();
            assert_eq!(out, data);
        }
    }
});
