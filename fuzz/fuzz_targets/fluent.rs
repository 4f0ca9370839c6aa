//! Fuzz the Fluent forward decoder: any bytes as a message give rows or an error, never a
//! panic; and wherever a whole message parses, the stream framer, fed the bytes in pieces,
//! finds the same end.
#![no_main]

use glyd_connectors::fluent::{message_rows, FluentConfig};
use glyd_connectors::msgpack::{parse, Framer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let cfg = FluentConfig::default();
    if let Ok((rows, _)) = message_rows(input, &cfg, 1 << 16, 1 << 20) {
        for line in rows.lines.split_inclusive(|&b| b == b'\n') {
            assert!(line.starts_with(b"{\"time\":\"") && line.ends_with(b"}\n"));
        }
    }
    if let Ok((_, n)) = parse(input) {
        let mut f = Framer::default();
        let mut end = None;
        for cut in (7..=n).step_by(7).chain([n]) {
            if let Some(e) = f.advance(&input[..cut]).unwrap() {
                end = Some(e);
                break;
            }
        }
        assert_eq!(end, Some(n), "the framer and the parser disagree");
    }
});
