//! Fuzz the `torch.save` checkpoint reader (zip directory and pickle, read without running
//! it): any bytes as a file; its parts either cover the file exactly, in order, or it is an
//! error. Panics are bugs.
#![no_main]

use glyd_gpu::torchzip::{parts, TorchPart};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|file: &[u8]| {
    let mut read = |o: u64, n: u64| -> Result<Vec<u8>, String> {
        file.get(o as usize..o.saturating_add(n) as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| "past the end".to_string())
    };
    let Ok(found) = parts(file.len() as u64, &mut read) else {
        return;
    };
    let mut at = 0;
    for p in found {
        let (start, end) = match p {
            TorchPart::Gap { start, end } | TorchPart::Storage { start, end, .. } => (start, end),
        };
        assert_eq!(start, at);
        assert!(end > start);
        at = end;
    }
    assert_eq!(at, file.len() as u64);
});
