//! Fuzz the safetensors header reader: any bytes as a file; the header either validates
//! (and then its parts cover the data section exactly) or is an error. Panics are bugs.
#![no_main]

use glyd_gpu::safetensors::{read_header, Part};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|file: &[u8]| {
    let Ok(h) = read_header(&mut &file[..], file.len() as u64) else {
        return;
    };
    let mut at = 0;
    for p in h.parts() {
        let (start, end) = match p {
            Part::Tensor(i) => (h.tensors[i].start, h.tensors[i].end),
            Part::Gap { start, end } => (start, end),
        };
        assert_eq!(start, at);
        at = end;
    }
    assert_eq!(at, h.data_len);
});
