//! Fuzz the LZ block decoder: an arbitrary payload and decoded size. The fast decoder and the
//! byte-by-byte reference decoder must accept the same payloads and produce the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let size = u16::from_le_bytes([input[0], input[1]]) as usize;
    let payload = &input[2..];
    let mut fast = vec![0u8; size];
    let mut reference = vec![0u8; size];
    let a = glyd_core::lz::decode(payload, &mut fast);
    let b = glyd_core::lz::decode_reference(payload, &mut reference);
    assert_eq!(a.is_ok(), b.is_ok(), "fast: {a:?}, reference: {b:?}");
    if a.is_ok() {
        assert_eq!(fast, reference);
    }
});
