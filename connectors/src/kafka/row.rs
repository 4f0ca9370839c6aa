//! A Kafka message as one row of its topic's table, a JSON line:
//! `{"offset":N,"timestamp":"2026-12-07T12:00:00.000000","key":...,"headers":...,` and then the
//! value as [`ValueFormat`] says. Key and header values are JSON strings where they are UTF-8,
//! else `{"base64":"..."}`; `headers` is one JSON text value (an object, names in the order
//! sent) or `null`. A value that is not what its format says is kept whole in `_raw` (or
//! `_raw_base64`) with the reason in `_invalid`: flagged, never dropped.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use std::io::Write as _;

use crate::event::{fields_of, push_time};

/// How message values become columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueFormat {
    /// JSON objects, their keys shredded into columns as JSON lines are (the default).
    Json,
    /// Text, one `value` column.
    Lines,
    /// Opaque bytes, one `value_base64` column.
    Raw,
}

impl std::str::FromStr for ValueFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(ValueFormat::Json),
            "lines" => Ok(ValueFormat::Lines),
            "raw" => Ok(ValueFormat::Raw),
            _ => Err(format!("--value {s}: expected json, lines or raw")),
        }
    }
}

/// The columns a row's own metadata takes; a value's key of the same name is written with a
/// leading `_`.
const OWN: [&str; 4] = ["offset", "timestamp", "key", "headers"];

/// A message's headers: names and values, in the order sent.
pub type HeaderList<'a> = Vec<(&'a str, Option<&'a [u8]>)>;

/// What a row is made of: a message's parts, borrowed.
pub struct Message<'a> {
    pub offset: i64,
    /// Milliseconds since 1970 UTC, if the message has a time.
    pub timestamp_ms: Option<i64>,
    pub key: Option<&'a [u8]>,
    pub headers: Option<HeaderList<'a>>,
    pub value: Option<&'a [u8]>,
}

/// Appends bytes as a JSON string where they are UTF-8, else as `{"base64":"..."}`.
fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => push_str(out, text),
        Err(_) => {
            out.extend_from_slice(b"{\"base64\":\"");
            out.extend_from_slice(B64.encode(bytes).as_bytes());
            out.extend_from_slice(b"\"}");
        }
    }
}

fn push_str(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec");
}

/// Appends `m` as one row (see the module doc) to `out`. `max_value` is the largest value
/// shredded; a longer one is kept whole as `_raw`, flagged.
pub fn push_message(out: &mut Vec<u8>, m: &Message, format: ValueFormat, max_value: usize) {
    let _ = write!(out, "{{\"offset\":{},\"timestamp\":\"", m.offset);
    let timed = m
        .timestamp_ms
        .is_some_and(|ms| push_time(out, ms.saturating_mul(1000)));
    if timed {
        out.push(b'"');
    } else {
        out.pop();
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"key\":");
    match m.key {
        Some(k) => push_bytes(out, k),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"headers\":");
    match &m.headers {
        Some(h) => {
            let mut text = Vec::with_capacity(64);
            text.push(b'{');
            for (i, (name, value)) in h.iter().enumerate() {
                if i > 0 {
                    text.push(b',');
                }
                push_str(&mut text, name);
                text.push(b':');
                match value {
                    Some(v) => push_bytes(&mut text, v),
                    None => text.extend_from_slice(b"null"),
                }
            }
            text.push(b'}');
            push_str(out, std::str::from_utf8(&text).expect("JSON text is UTF-8"));
        }
        None => out.extend_from_slice(b"null"),
    }
    if let Some(value) = m.value {
        push_value(out, value, format, max_value);
    }
    out.extend_from_slice(b"}\n");
}

/// The value's columns, each after a `,`.
fn push_value(out: &mut Vec<u8>, value: &[u8], format: ValueFormat, max_value: usize) {
    let flag = |out: &mut Vec<u8>, why: &str| {
        match std::str::from_utf8(value) {
            Ok(text) => {
                out.extend_from_slice(b",\"_raw\":");
                push_str(out, text);
            }
            Err(_) => {
                out.extend_from_slice(b",\"_raw_base64\":\"");
                out.extend_from_slice(B64.encode(value).as_bytes());
                out.push(b'"');
            }
        }
        out.extend_from_slice(b",\"_invalid\":");
        push_str(out, why);
    };
    match format {
        ValueFormat::Raw => {
            out.extend_from_slice(b",\"value_base64\":\"");
            out.extend_from_slice(B64.encode(value).as_bytes());
            out.push(b'"');
        }
        ValueFormat::Lines => match std::str::from_utf8(value) {
            Ok(text) => {
                out.extend_from_slice(b",\"value\":");
                push_str(out, text);
            }
            Err(_) => flag(out, "not UTF-8 text"),
        },
        ValueFormat::Json if value.len() > max_value => flag(
            out,
            &format!("a value of {} bytes, over --max-record-size", value.len()),
        ),
        ValueFormat::Json => match fields_of(value) {
            Ok(fields) => {
                for (key, raw) in &fields.0 {
                    out.push(b',');
                    if OWN.contains(&key.as_ref()) {
                        push_str(out, &format!("_{key}"));
                    } else {
                        push_str(out, key);
                    }
                    out.push(b':');
                    // Line breaks in JSON text are whitespace between tokens (see push_pairs).
                    out.extend(raw.get().bytes().filter(|&b| b != b'\n' && b != b'\r'));
                }
            }
            Err(why) => flag(out, &why),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(value: &[u8], format: ValueFormat) -> String {
        let m = Message {
            offset: 7,
            timestamp_ms: Some(1_765_108_801_500),
            key: Some(b"k1"),
            headers: Some(vec![("trace", Some(b"ab")), ("bin", Some(&[0xff, 0]))]),
            value: Some(value),
        };
        let mut out = Vec::new();
        push_message(&mut out, &m, format, 64);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn messages_become_one_line_rows() {
        let head = r#"{"offset":7,"timestamp":"2025-12-07T12:00:01.500000","key":"k1","headers":"{\"trace\":\"ab\",\"bin\":{\"base64\":\"/wA=\"}}""#;
        assert_eq!(
            row(b"{\"a\":1,\n\"key\":\"x\"}", ValueFormat::Json),
            format!("{head},\"a\":1,\"_key\":\"x\"}}\n")
        );
        assert_eq!(
            row(b"plain\ntext", ValueFormat::Lines),
            format!("{head},\"value\":\"plain\\ntext\"}}\n")
        );
        assert_eq!(
            row(b"\x00\x01", ValueFormat::Raw),
            format!("{head},\"value_base64\":\"AAE=\"}}\n")
        );
    }

    #[test]
    fn values_not_as_their_format_says_are_flagged_and_kept() {
        let r = row(b"not json", ValueFormat::Json);
        assert!(
            r.ends_with(",\"_raw\":\"not json\",\"_invalid\":\"not a JSON object\"}\n"),
            "{r}"
        );
        let r = row(&[b'{', 0xff], ValueFormat::Json);
        assert!(r.contains(",\"_raw_base64\":\"e/8=\",\"_invalid\":"), "{r}");
        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(100));
        let r = row(big.as_bytes(), ValueFormat::Json);
        assert!(r.contains("over --max-record-size"), "{r}");
        assert!(r.contains(&"x".repeat(100)), "{r}");
        let r = row(&[0xff], ValueFormat::Lines);
        assert!(r.contains("\"_invalid\":\"not UTF-8 text\""), "{r}");
        for r in [
            row(b"not json", ValueFormat::Json),
            row(&[0xfe], ValueFormat::Json),
        ] {
            assert!(serde_json::from_str::<serde_json::Value>(&r).is_ok(), "{r}");
        }
    }

    #[test]
    fn missing_parts_are_null() {
        let m = Message {
            offset: 0,
            timestamp_ms: None,
            key: None,
            headers: None,
            value: None,
        };
        let mut out = Vec::new();
        push_message(&mut out, &m, ValueFormat::Json, 64);
        assert_eq!(
            out,
            b"{\"offset\":0,\"timestamp\":null,\"key\":null,\"headers\":null}\n"
        );
    }
}
