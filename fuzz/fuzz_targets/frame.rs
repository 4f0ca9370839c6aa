//! Fuzz the frame parser and every decoder over arbitrary bytes: in-memory (1 and 2 threads),
//! streaming, listing and the block index. None may panic; the in-memory and streaming
//! decoders must agree.
#![no_main]

use std::io::{Cursor, Read};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let one = glyd_core::decompress_with(data, 1);
    let two = glyd_core::decompress_with(data, 2);
    let mut streamed = Vec::new();
    let s = glyd_core::Decoder::with_threads(data, 2).read_to_end(&mut streamed);
    match (&one, &two, &s) {
        (Ok(a), Ok(b), Ok(_)) => {
            assert_eq!(a, b);
            assert_eq!(a, &streamed);
        }
        (Err(_), Err(_), Err(_)) => {}
        _ => panic!("decoders disagree on whether the input is valid"),
    }
    let _ = glyd_core::summarize(&mut Cursor::new(data));
    if let Ok(ix) = glyd_core::BlockIndex::read(&mut Cursor::new(data)) {
        for k in 0..ix.blocks.len() {
            let _ = ix.read_block(&mut Cursor::new(data), k);
        }
    }
});
