//! Fuzz the HTTP sink's body parsers (JSON lines, JSON arrays, Elasticsearch `_bulk`): any
//! bytes give rows or a refusal naming a line, never a panic; every row is one JSON object
//! on one line, time first.
#![no_main]

use glyd_connectors::body::{bulk_rows, json_rows};
use libfuzzer_sys::fuzz_target;

fn check(lines: &[u8]) {
    for line in lines.split_inclusive(|&b| b == b'\n') {
        assert!(line.starts_with(b"{\"time\":\"") && line.ends_with(b"}\n"));
        // Checked as raw JSON: a number past f64 (1e999) is JSON all the same.
        let v: Box<serde_json::value::RawValue> =
            serde_json::from_slice(line).expect("a row is JSON");
        assert!(v.get().starts_with('{'));
    }
}

fuzz_target!(|input: &[u8]| {
    match json_rows("app", input, 1 << 16, 0) {
        Ok(rows) => check(&rows.lines),
        Err(e) => assert!(e.line >= 1),
    }
    match bulk_rows(Some("app"), input, 1 << 16, 0) {
        Ok((streams, _)) => streams.iter().for_each(|s| check(&s.lines)),
        Err(e) => assert!(e.line >= 1),
    }
});
