//! Fuzz both record archive readers on arbitrary bytes: the indexed reader (footer, row group
//! headers, every column as Arrow, rebuild) and the streaming one. Neither may panic, hang or
//! allocate from a hostile field, and where both succeed they must agree.
#![no_main]

use glyd_columnar::{rebuild, ArchiveReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let indexed = ArchiveReader::from_bytes(input.to_vec()).and_then(|r| {
        r.read(None, 0..r.row_groups().len())?;
        let mut out = Vec::new();
        r.rebuild_to(&mut out)?;
        Ok(out)
    });
    let mut out = Vec::new();
    let streamed = rebuild(input, &mut out).map(|_| out);
    if let (Ok(a), Ok(b)) = (&indexed, &streamed) {
        assert_eq!(a, b, "the readers disagree");
    }
});
