//! Fuzz the Kafka source's rows: any key, header and value bytes, in every value format, give
//! one JSON object on one line, offset first, never a panic; a value the format cannot take is
//! kept whole and flagged.
#![no_main]

use glyd_connectors::kafka::row::{push_message, Message, ValueFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // The input split in three at its first two 0xFF bytes: key, header value, value.
    let mut parts = input.splitn(3, |&b| b == 0xff);
    let key = parts.next();
    let header = parts.next();
    let value = parts.next().or(Some(input));
    for format in [ValueFormat::Json, ValueFormat::Lines, ValueFormat::Raw] {
        let m = Message {
            offset: input.len() as i64,
            timestamp_ms: Some(i64::from(input.first().copied().unwrap_or(0)) << 40),
            key,
            headers: header.map(|h| vec![("h", Some(h)), ("none", None)]),
            value,
        };
        let mut out = Vec::new();
        push_message(&mut out, &m, format, 1 << 12);
        assert!(out.starts_with(b"{\"offset\":") && out.ends_with(b"}\n"));
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: Box<serde_json::value::RawValue> =
            serde_json::from_slice(&out).expect("a row is JSON");
        assert!(v.get().starts_with('{'));
    }
});
