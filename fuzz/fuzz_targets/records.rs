//! Fuzz record mode end to end: arbitrary bytes written as delimited text (the sniffed
//! dialect, or a comma dialect when sniffing finds none) in small row groups must rebuild to
//! the very same bytes.
#![no_main]

use std::io::Write;

use glyd_columnar::{sniff, ArchiveReader, Dialect, RecordWriter, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let d = sniff(input, true).unwrap_or(Dialect {
        delimiter: b',',
        columns: 3,
        header: None,
        names: vec!["a".into(), "b".into(), "c".into()],
    });
    let opts = WriteOptions {
        level: glyd_core::Level::Fast,
        threads: 1,
        row_group_size: 1 << 10,
    };
    let mut w = RecordWriter::new(Vec::new(), d, &opts).unwrap();
    w.write_all(input).unwrap();
    let archive = w.finish().unwrap();
    let r = ArchiveReader::from_bytes(archive).unwrap();
    let mut out = Vec::new();
    r.rebuild_to(&mut out).unwrap();
    assert!(out == input, "record archive did not rebuild its input");
    r.read(None, 0..r.row_groups().len()).unwrap();
});
