//! Events as rows of a stream's table: a JSON object and its time become one JSON line,
//! `{"time":"2026-12-07T12:00:00.000000",...}` and then the object's other keys in their
//! order, values spelled as they came. The time comes from the source (a Fluent event time) or
//! from the event's `@timestamp`, `time` or `timestamp` key, else from when it arrived;
//! `log.level` becomes `level`, as file logs name it. Every line is one row of the table the
//! record engine shreds; nothing here writes a line that is not a JSON object on one line.

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Rows for one stream: JSON lines as [`push_pairs`] writes them.
#[derive(Debug, Default)]
pub struct Rows {
    pub stream: String,
    pub lines: Vec<u8>,
    pub events: u64,
}

/// Longest stream name.
pub const MAX_STREAM_NAME: usize = 200;

/// Whether `name` may name a stream (a folder of the lake): 1 to 200 ASCII letters, digits,
/// `_`, `-` and `.`, not starting with `.`, `_` or `-`; else why not.
pub fn check_stream(name: &str) -> Result<(), String> {
    let ok = (1..=MAX_STREAM_NAME).contains(&name.len())
        && !name.starts_with(['.', '_', '-'])
        && folder_chars(name);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "stream name {name:?} is not 1 to {MAX_STREAM_NAME} letters, digits, '_', '-' or \
             '.' (not starting with '.', '_' or '-')"
        ))
    }
}

/// Whether `name` is only ASCII letters, digits, `_`, `-` and `.` (what stream and topic names
/// may hold: a folder name anywhere).
pub fn folder_chars(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Keys an event's time is read from, first found that reads as a time; it is then dropped
/// from the row (its value is the row's `time`).
pub const TIME_KEYS: [&str; 3] = ["@timestamp", "time", "timestamp"];

/// A JSON object's keys and raw values, in the order written.
pub struct Fields<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Keys<'a> {
            type Value = Fields<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Fields<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some(kv) = m.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    out.push(kv);
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(Keys(std::marker::PhantomData))
    }
}

/// `text` (one JSON value) as an object's fields, or why it is not one.
pub fn fields_of(text: &[u8]) -> Result<Fields<'_>, String> {
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err("not a JSON object".into());
    }
    serde_json::from_slice::<Fields>(text).map_err(|e| format!("invalid JSON: {e}"))
}

/// Microseconds since 1970 UTC of a time spelled as JSON: RFC 3339 text (a missing zone is
/// UTC; a space may stand for the `T`), or a number of seconds (milliseconds past 10^11,
/// microseconds past 10^14, nanoseconds past 10^17). `None` for anything else or a time
/// outside years 0001..=9999.
pub fn time_of(raw: &str) -> Option<i64> {
    let raw = raw.trim();
    let us = if let Some(text) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        if let Ok(t) = DateTime::parse_from_rfc3339(text) {
            t.timestamp_micros()
        } else {
            let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())?;
            Utc.from_utc_datetime(&naive).timestamp_micros()
        }
    } else {
        let n: f64 = raw
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
        let scale = match n {
            n if n >= 1e17 => 1e-3,
            n if n >= 1e14 => 1.0,
            n if n >= 1e11 => 1e3,
            _ => 1e6,
        };
        (n * scale).round() as i64
    };
    spell_time(us).map(|_| us)
}

/// `us` microseconds since 1970 UTC as the table spells times: `2026-12-07T12:00:00.000000`.
pub fn spell_time(us: i64) -> Option<String> {
    let mut out = Vec::with_capacity(26);
    push_time(&mut out, us).then(|| String::from_utf8(out).expect("digits and punctuation"))
}

/// Appends `us` spelled as [`spell_time`] does to `out` (digits written by hand: chrono's
/// formatter was a tenth of the Kafka source's time per message); false, writing nothing,
/// outside years 1..=9999.
pub fn push_time(out: &mut Vec<u8>, us: i64) -> bool {
    use chrono::{Datelike, Timelike};
    let Some(t) = DateTime::<Utc>::from_timestamp_micros(us) else {
        return false;
    };
    if !(1..=9999).contains(&t.year()) {
        return false;
    }
    let fields = [
        (t.year() as u32, 4, b'-'),
        (t.month(), 2, b'-'),
        (t.day(), 2, b'T'),
        (t.hour(), 2, b':'),
        (t.minute(), 2, b':'),
        (t.second(), 2, b'.'),
        (us.rem_euclid(1_000_000) as u32, 6, 0),
    ];
    for (mut n, width, then) in fields {
        let at = out.len();
        out.resize(at + width, b'0');
        for d in out[at..].iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        if then != 0 {
            out.push(then);
        }
    }
    true
}

/// Appends `fields` as one row of the table to `out` (see [`push_pairs`]).
pub fn push_row(out: &mut Vec<u8>, fields: &Fields, time_us: Option<i64>, now_us: i64) {
    let pairs: Vec<(&str, &str)> = fields
        .0
        .iter()
        .map(|(k, v)| (k.as_ref(), v.get()))
        .collect();
    push_pairs(out, &pairs, time_us, now_us);
}

/// Appends an event's keys and values (each value JSON text) as one row of the table to
/// `out`: `time` first (`time_us`, or the first of [`TIME_KEYS`] that reads as a time, else
/// `now_us`), then the other keys; a `time` key that was not the time is kept as `_time`, and
/// `log.level` is named `level` where the event has no `level`. A value spread over lines is
/// written on one.
pub fn push_pairs(out: &mut Vec<u8>, fields: &[(&str, &str)], time_us: Option<i64>, now_us: i64) {
    let taken = match time_us {
        Some(_) => None,
        None => TIME_KEYS.iter().find_map(|key| {
            let (i, (_, v)) = fields.iter().enumerate().find(|(_, (k, _))| k == key)?;
            time_of(v).map(|t| (i, t))
        }),
    };
    let us = time_us.or(taken.map(|t| t.1)).unwrap_or(now_us);
    let time = spell_time(us).unwrap_or_else(|| spell_time(now_us).unwrap_or_default());
    out.extend_from_slice(b"{\"time\":\"");
    out.extend_from_slice(time.as_bytes());
    out.push(b'"');
    let has_level = fields.iter().any(|(k, _)| *k == "level");
    for (i, &(key, value)) in fields.iter().enumerate() {
        if taken.is_some_and(|t| t.0 == i) {
            continue;
        }
        let key: &str = match key {
            "time" => "_time",
            "log.level" if !has_level => "level",
            k => k,
        };
        out.push(b',');
        serde_json::to_writer(&mut *out, key).expect("writing to a Vec");
        out.push(b':');
        // JSON text holds a line break only as whitespace between tokens (a string spells
        // one escaped): dropping them puts the value on one line, as it is otherwise.
        out.extend(value.bytes().filter(|&b| b != b'\n' && b != b'\r'));
    }
    out.extend_from_slice(b"}\n");
}

/// Microseconds since 1970 UTC now.
pub fn now_us() -> i64 {
    Utc::now().timestamp_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(event: &str, time: Option<i64>) -> String {
        let mut out = Vec::new();
        push_row(&mut out, &fields_of(event.as_bytes()).unwrap(), time, 0);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn time_comes_first_from_the_source_or_the_event() {
        assert_eq!(
            row(r#"{"msg":"a","@timestamp":"2026-12-07T12:00:01.5Z"}"#, None),
            "{\"time\":\"2026-12-07T12:00:01.500000\",\"msg\":\"a\"}\n"
        );
        assert_eq!(
            row(r#"{"time":1765108801,"b":[1, 2]}"#, None),
            "{\"time\":\"2025-12-07T12:00:01.000000\",\"b\":[1, 2]}\n"
        );
        // A time from the source wins; the event's own `time` is kept as `_time`.
        assert_eq!(
            row(r#"{"time":"soon","log.level":"warn"}"#, Some(1_000_000)),
            "{\"time\":\"1970-01-01T00:00:01.000000\",\"_time\":\"soon\",\"level\":\"warn\"}\n"
        );
        // Nothing that reads as a time: when it arrived.
        assert_eq!(
            row(r#"{"timestamp":"yesterday"}"#, None),
            "{\"time\":\"1970-01-01T00:00:00.000000\",\"timestamp\":\"yesterday\"}\n"
        );
    }

    #[test]
    fn rows_are_one_line_objects() {
        assert_eq!(
            row("{\"a\":{\n\"b\": 1}}", Some(0)),
            "{\"time\":\"1970-01-01T00:00:00.000000\",\"a\":{\"b\": 1}}\n"
        );
        // A number past f64 on a second line (the `bulk` fuzz target found this panicking).
        assert_eq!(
            row("{\"a\":[\r\n1e999]}", Some(0)),
            "{\"time\":\"1970-01-01T00:00:00.000000\",\"a\":[1e999]}\n"
        );
        assert!(fields_of(b"[1]").is_err());
        assert!(fields_of(b"{\"a\":}").is_err());
        assert!(fields_of(b"").is_err());
    }

    #[test]
    fn times_are_spelled_as_chrono_formats_them() {
        let mut us: i64 = -62_135_596_800_000_000; // 0001-01-01
        while us < 253_402_300_799_000_000 {
            let t = DateTime::<Utc>::from_timestamp_micros(us).unwrap();
            let want = t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string();
            assert_eq!(spell_time(us).as_deref(), Some(want.as_str()), "{us}");
            us += 3_155_760_000_123_457; // some 100 years and an odd fraction
        }
        assert_eq!(spell_time(-1).unwrap(), "1969-12-31T23:59:59.999999");
        assert_eq!(spell_time(-62_135_596_800_000_001), None);
        assert_eq!(spell_time(253_402_300_800_000_000), None);
    }

    #[test]
    fn times_read_in_every_spelling_and_range() {
        let t = 1_765_108_801_000_000;
        for s in [
            "\"2025-12-07T12:00:01Z\"",
            "\"2025-12-07T13:00:01+01:00\"",
            "\"2025-12-07 12:00:01\"",
            "1765108801",
            "1765108801000",
            "1765108801000000",
            "1765108801000000000",
        ] {
            assert_eq!(time_of(s), Some(t), "{s}");
        }
        for s in [
            "\"\"",
            "-1",
            "1e300",
            "\"10000-01-01T00:00:00Z\"",
            "true",
            "null",
        ] {
            assert_eq!(time_of(s), None, "{s}");
        }
    }

    #[test]
    fn stream_names_are_folder_names() {
        for ok in ["app", "web.access-1", "A_b"] {
            assert!(check_stream(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "_bulk", "-x", "a/b", "a b", &"x".repeat(201)] {
            assert!(check_stream(bad).is_err(), "{bad}");
        }
    }
}
