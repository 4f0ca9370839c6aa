//! Fuzz the entropy LZ block decoder: an arbitrary payload and decoded size. It must return
//! an error or fill the output, never panic, hang or allocate from a hostile field.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let size = u16::from_le_bytes([input[0], input[1]]) as usize;
    let mut out = vec![0u8; size];
    let _ = glyd_core::elz::decode(&input[2..], &mut out);
});
