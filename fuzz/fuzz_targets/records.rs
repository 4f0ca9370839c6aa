//! Fuzz record mode end to end: arbitrary bytes written in the detected format (a SQL dump,
//! delimited text, lines; a comma dialect when detection finds none) in small row groups must
//! rebuild to the very same bytes, and every row group read as Arrow.
#![no_main]

use std::io::Write;

use glyd_columnar::model::Style;
use glyd_columnar::{detect, ArchiveReader, Dialect, Format, RecordWriter, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let d = detect(input, true).unwrap_or(Format::Delimited(Dialect {
        delimiter: b',',
        style: Style::Csv,
        columns: 3,
        header: None,
        names: vec!["a".into(), "b".into(), "c".into()],
        log_fields: Vec::new(),
    }));
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
    for g in 0..r.row_groups().len() {
        r.read(None, g..g + 1).unwrap();
    }
});
