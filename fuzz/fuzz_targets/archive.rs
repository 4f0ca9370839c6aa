//! Fuzz both record archive readers on arbitrary bytes: the indexed reader (footer, row group
//! headers, every column as Arrow, rebuild) and the streaming one. Neither may panic, hang or
//! allocate from a hostile field, and where both succeed they must agree.
#![no_main]

use glyd_columnar::{rebuild_with_limit, ArchiveReader};
use libfuzzer_sys::fuzz_target;

/// Row groups may declare up to 640 MiB a chunk: the readers' memory limit is what keeps a
/// few hostile bytes from taking that (and what this target holds them to).
const MEMORY: u64 = 64 << 20;

fuzz_target!(|input: &[u8]| {
    let indexed = ArchiveReader::from_bytes(input.to_vec()).and_then(|r| {
        let r = r.with_memory_limit(MEMORY);
        r.read(None, 0..r.row_groups().len())?;
        let mut out = Vec::new();
        r.rebuild_to(&mut out)?;
        Ok(out)
    });
    let mut out = Vec::new();
    let streamed = rebuild_with_limit(input, &mut out, MEMORY).map(|_| out);
    if let (Ok(a), Ok(b)) = (&indexed, &streamed) {
        assert_eq!(a, b, "the readers disagree");
    }
});
