//! Fuzz the entropy decoders on arbitrary bytes: Huffman table descriptions and coded streams,
//! tANS table descriptions and coded streams. The first byte picks the coder and the symbol
//! count; none may panic, read out of bounds or allocate from a hostile field. What decodes
//! must re-encode to the same symbols.
#![no_main]

use glyd_core::entropy::{fse, huffman};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let n = u16::from_le_bytes([input[1], input[2]]) as usize;
    let body = &input[3..];
    let mut pos = 0;
    if input[0] & 1 == 0 {
        let Ok(lens) = huffman::read_table(body, &mut pos) else {
            return;
        };
        let mut out = vec![0u8; n];
        if huffman::decode(&body[pos..], &lens, &mut out).is_ok() {
            // Every decoded symbol has a code, so it re-encodes and decodes the same.
            let mut again = Vec::new();
            huffman::encode(&out, &lens, &mut again);
            let mut back = vec![0u8; n];
            huffman::decode(&again, &lens, &mut back).unwrap();
            assert_eq!(back, out);
        }
    } else {
        let alphabet = 1 + (input[0] >> 1) as usize;
        let Ok(counts) = fse::read_counts(body, &mut pos, alphabet) else {
            return;
        };
        let mut out = vec![0u8; n];
        if fse::Decoder::new(&counts).decode(&body[pos..], &mut out).is_ok() {
            let mut again = Vec::new();
            fse::Encoder::new(&counts).encode(&out, &mut Vec::new(), &mut again);
            assert_eq!(again, &body[pos..], "a valid tANS stream has one encoding");
        }
    }
});
