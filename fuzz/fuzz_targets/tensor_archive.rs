//! Fuzz the tensor-archive reader: any bytes as an archive file, opened and unpacked into a
//! scratch folder. Errors are fine; panics, huge allocations and writes outside the folder
//! are not.
#![no_main]

use glyd_gpu::TensorArchive;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|file: &[u8]| {
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = dir.path().join("in.glyd");
    std::fs::write(&path, file).expect("scratch file");
    if let Ok(a) = TensorArchive::open(&path) {
        // A small memory limit: a lying frame is refused rather than decoded at size.
        let a = a.with_memory_limit(64 << 20);
        let _ = a.unpack(&dir.path().join("out"), false, None, &mut |_| {});
    }
});
