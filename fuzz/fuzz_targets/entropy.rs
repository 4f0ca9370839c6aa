//! Fuzz the entropy decoders on arbitrary bytes: Huffman table descriptions and coded streams,
//! tANS table descriptions and coded streams, alone and in pairs. The first byte picks the coder and the symbol
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
        let (decoder, encoder) = (fse::Decoder::new(&counts), fse::Encoder::new(&counts));
        let stream = &body[pos..];
        let mut out = vec![0u8; n];
        if decoder.decode(stream, &mut out).is_ok() {
            let mut again = Vec::new();
            encoder.encode(&out, &mut Vec::new(), &mut again);
            assert_eq!(again, stream, "a valid tANS stream has one encoding");
        }
        // The same bytes as two streams (split at the middle) decoded together.
        let (a, b) = stream.split_at(stream.len() / 2);
        let (out_a, out_b) = out.split_at_mut(n / 2);
        if decoder.decode_two(a, out_a, &decoder, b, out_b).is_ok() {
            for (symbols, coded) in [(&*out_a, a), (&*out_b, b)] {
                let mut again = Vec::new();
                encoder.encode(symbols, &mut Vec::new(), &mut again);
                assert_eq!(again, coded, "a valid tANS stream has one encoding");
            }
        }
    }
});
