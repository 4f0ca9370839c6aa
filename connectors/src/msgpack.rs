//! MessagePack as the Fluent forward protocol sends it: [`Framer`] finds where each message
//! ends in a byte stream as it arrives (resuming where it stopped, so a large message costs
//! one pass); [`parse`] reads a whole message into [`Value`]s that borrow its bytes, every
//! length checked against the bytes there and nesting bounded, so hostile input cannot make
//! it allocate more than it sent; [`write_json`] spells a value as JSON; and the few
//! messages the server sends are encoded by hand.

use std::fmt::Write as _;

/// Deepest nesting taken.
pub const MAX_DEPTH: usize = 64;

/// A MessagePack value, borrowing its bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Array(Vec<Value<'a>>),
    Map(Vec<(Value<'a>, Value<'a>)>),
    Ext(i8, &'a [u8]),
}

impl<'a> Value<'a> {
    /// Text of a `str` (or `bin`, which older clients send for text).
    pub fn text(&self) -> Option<&'a [u8]> {
        match self {
            Value::Str(s) | Value::Bin(s) => Some(s),
            _ => None,
        }
    }

    /// The value of `key` in a map with text keys.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Map(m) => m
                .iter()
                .find(|(k, _)| k.text() == Some(key.as_bytes()))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// What a marker byte says: bytes of header after the marker, and then either a payload of
/// a size the header gives (or `fixed`), or a container of items.
enum Head {
    /// `n` payload bytes follow the header.
    Payload(usize),
    /// A container of `n` values follows.
    Items(u64),
}

/// Reads the head of the value at `buf[at..]`: header length (marker included) and what
/// follows; `Ok(None)` where the header is not all there yet.
fn head(buf: &[u8], at: usize) -> Result<Option<(usize, Head)>, String> {
    let Some(&m) = buf.get(at) else {
        return Ok(None);
    };
    let be = |n: usize| -> Option<u64> {
        let b = buf.get(at + 1..at + 1 + n)?;
        Some(b.iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
    };
    let sized = |n: usize, items: bool, extra: usize| -> Option<(usize, Head)> {
        let len = be(n)?;
        Some(if items {
            (1 + n, Head::Items(len))
        } else {
            (1 + n, Head::Payload(len as usize + extra))
        })
    };
    Ok(match m {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => Some((1, Head::Payload(0))),
        0x80..=0x8f => Some((1, Head::Items(2 * u64::from(m & 0x0f)))),
        0x90..=0x9f => Some((1, Head::Items(u64::from(m & 0x0f)))),
        0xa0..=0xbf => Some((1, Head::Payload(usize::from(m & 0x1f)))),
        0xc4 | 0xd9 => sized(1, false, 0),
        0xc5 | 0xda => sized(2, false, 0),
        0xc6 | 0xdb => sized(4, false, 0),
        // ext 8/16/32: a length, then a type byte and the data.
        0xc7 => sized(1, false, 1),
        0xc8 => sized(2, false, 1),
        0xc9 => sized(4, false, 1),
        0xca => Some((1, Head::Payload(4))),
        0xcb => Some((1, Head::Payload(8))),
        0xcc | 0xd0 => Some((1, Head::Payload(1))),
        0xcd | 0xd1 => Some((1, Head::Payload(2))),
        0xce | 0xd2 => Some((1, Head::Payload(4))),
        0xcf | 0xd3 => Some((1, Head::Payload(8))),
        // fixext 1, 2, 4, 8, 16: a type byte and the data.
        0xd4 => Some((1, Head::Payload(2))),
        0xd5 => Some((1, Head::Payload(3))),
        0xd6 => Some((1, Head::Payload(5))),
        0xd7 => Some((1, Head::Payload(9))),
        0xd8 => Some((1, Head::Payload(17))),
        0xdc => be(2).map(|n| (3, Head::Items(n))),
        0xdd => be(4).map(|n| (5, Head::Items(n))),
        0xde => be(2).map(|n| (3, Head::Items(2 * n))),
        0xdf => be(4).map(|n| (5, Head::Items(2 * n))),
        0xc1 => return Err(format!("byte 0xc1 at offset {at} is not MessagePack")),
    })
}

/// Finds where each message of a stream ends, resuming where it stopped as bytes arrive.
#[derive(Default, Debug)]
pub struct Framer {
    at: usize,
    /// Values still to come in each open container, outermost first.
    open: Vec<u64>,
}

impl Framer {
    /// Continues through `buf` (the stream's bytes from the message's start): `Ok(Some(n))`
    /// once the message is the first `n` bytes (and the framer is ready for the next, from
    /// `buf[n..]` at offset 0); `Ok(None)` while it is incomplete.
    pub fn advance(&mut self, buf: &[u8]) -> Result<Option<usize>, String> {
        loop {
            let Some((h, what)) = head(buf, self.at)? else {
                return Ok(None);
            };
            let done = match what {
                Head::Payload(n) => {
                    if buf.len() - self.at < h + n {
                        return Ok(None);
                    }
                    self.at += h + n;
                    true
                }
                Head::Items(n) => {
                    self.at += h;
                    if n > 0 {
                        if self.open.len() >= MAX_DEPTH {
                            return Err(format!("nesting deeper than {MAX_DEPTH}"));
                        }
                        self.open.push(n);
                    }
                    n == 0
                }
            };
            if done {
                // A value ended: it is one item of each container it ends.
                loop {
                    match self.open.last_mut() {
                        None => {
                            let n = self.at;
                            *self = Framer::default();
                            return Ok(Some(n));
                        }
                        Some(left) => {
                            *left -= 1;
                            if *left > 0 {
                                break;
                            }
                            self.open.pop();
                        }
                    }
                }
            }
        }
    }

    /// Bytes of the current message looked at so far.
    pub fn seen(&self) -> usize {
        self.at
    }
}

/// Reads one whole value from the start of `buf`: the value and the bytes it took.
pub fn parse(buf: &[u8]) -> Result<(Value<'_>, usize), String> {
    let mut at = 0;
    let v = value(buf, &mut at, 0)?;
    Ok((v, at))
}

fn value<'a>(buf: &'a [u8], at: &mut usize, depth: usize) -> Result<Value<'a>, String> {
    let start = *at;
    let short = || format!("a value at offset {start} runs past the message's end");
    let (h, what) = head(buf, start)?.ok_or_else(short)?;
    let m = buf[start];
    *at += h;
    match what {
        Head::Payload(n) => {
            let body = buf.get(*at..*at + n).ok_or_else(short)?;
            *at += n;
            let be = |b: &[u8]| b.iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
            Ok(match m {
                0x00..=0x7f => Value::UInt(u64::from(m)),
                0xe0..=0xff => Value::Int(i64::from(m as i8)),
                0xc0 => Value::Nil,
                0xc2 => Value::Bool(false),
                0xc3 => Value::Bool(true),
                0xa0..=0xbf | 0xd9..=0xdb => Value::Str(body),
                0xc4..=0xc6 => Value::Bin(body),
                0xc7..=0xc9 | 0xd4..=0xd8 => Value::Ext(body[0] as i8, &body[1..]),
                0xca => Value::Float(f64::from(f32::from_bits(be(body) as u32))),
                0xcb => Value::Float(f64::from_bits(be(body))),
                0xcc..=0xcf => Value::UInt(be(body)),
                0xd0 => Value::Int(i64::from(body[0] as i8)),
                0xd1 => Value::Int(i64::from(be(body) as u16 as i16)),
                0xd2 => Value::Int(i64::from(be(body) as u32 as i32)),
                _ => Value::Int(be(body) as i64),
            })
        }
        Head::Items(n) => {
            if depth >= MAX_DEPTH {
                return Err(format!("nesting deeper than {MAX_DEPTH}"));
            }
            // Each value takes a byte at least: a count past the bytes left is a lie.
            if n > (buf.len() - *at) as u64 {
                return Err(short());
            }
            if matches!(m, 0x80..=0x8f | 0xde | 0xdf) {
                let mut map = Vec::with_capacity(n as usize / 2);
                for _ in 0..n / 2 {
                    let k = value(buf, at, depth + 1)?;
                    let v = value(buf, at, depth + 1)?;
                    map.push((k, v));
                }
                Ok(Value::Map(map))
            } else {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(value(buf, at, depth + 1)?);
                }
                Ok(Value::Array(items))
            }
        }
    }
}

/// Appends `s` as a JSON string (invalid UTF-8 replaced).
pub fn write_json_string(out: &mut Vec<u8>, s: &[u8]) {
    let text = String::from_utf8_lossy(s);
    serde_json::to_writer(&mut *out, text.as_ref()).expect("writing to a Vec");
}

/// A map key as JSON text: text as it is, a number, boolean or nil as its JSON spelling;
/// `None` for an array, map or extension value (spelling one inside a key would escape it
/// again at every level of nesting, which grows without bound).
pub fn key_text(k: &Value) -> Option<Vec<u8>> {
    match k {
        Value::Str(t) | Value::Bin(t) => Some(t.to_vec()),
        Value::Nil | Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_) => {
            let mut out = Vec::new();
            write_json(&mut out, k).ok()?;
            Some(out)
        }
        Value::Array(_) | Value::Map(_) | Value::Ext(..) => None,
    }
}

/// Appends `v` as JSON: binary as text, NaN and infinities as null, map keys that are
/// numbers, booleans or nil as their spelling, extension values as `"ext:<type>:<hex>"`.
/// A map key that is an array, a map or an extension value is refused.
pub fn write_json(out: &mut Vec<u8>, v: &Value) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::UInt(u) => out.extend_from_slice(u.to_string().as_bytes()),
        Value::Float(f) if f.is_finite() => {
            serde_json::to_writer(&mut *out, f).expect("writing to a Vec")
        }
        Value::Float(_) => out.extend_from_slice(b"null"),
        Value::Str(s) | Value::Bin(s) => write_json_string(out, s),
        Value::Ext(t, data) => {
            let mut s = format!("ext:{t}:");
            for b in *data {
                let _ = write!(s, "{b:02x}");
            }
            write_json_string(out, s.as_bytes());
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(out, item)?;
            }
            out.push(b']');
        }
        Value::Map(map) => {
            out.push(b'{');
            for (i, (k, val)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let key = key_text(k).ok_or("a map key that is an array, a map or an extension")?;
                write_json_string(out, &key);
                out.push(b':');
                write_json(out, val)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Encoders of the values the server sends.
pub mod encode {
    pub fn array(out: &mut Vec<u8>, n: usize) {
        debug_assert!(n < 16);
        out.push(0x90 | n as u8);
    }

    pub fn map(out: &mut Vec<u8>, n: usize) {
        debug_assert!(n < 16);
        out.push(0x80 | n as u8);
    }

    pub fn str(out: &mut Vec<u8>, s: &[u8]) {
        match s.len() {
            n if n < 32 => out.push(0xa0 | n as u8),
            n if n < 256 => out.extend_from_slice(&[0xd9, n as u8]),
            n if n < 65_536 => {
                out.push(0xda);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0xdb);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
        }
        out.extend_from_slice(s);
    }

    pub fn bin(out: &mut Vec<u8>, b: &[u8]) {
        debug_assert!(b.len() < 256);
        out.extend_from_slice(&[0xc4, b.len() as u8]);
        out.extend_from_slice(b);
    }

    pub fn bool(out: &mut Vec<u8>, b: bool) {
        out.push(if b { 0xc3 } else { 0xc2 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ["tag", 5, {"a": [1, -2, 1.5, nil, true], "b": bin"xy"}] by hand.
    const MESSAGE: &[u8] = &[
        0x93, 0xa3, b't', b'a', b'g', 0x05, 0x82, 0xa1, b'a', 0x95, 0x01, 0xfe, 0xcb, 0x3f, 0xf8,
        0, 0, 0, 0, 0, 0, 0xc0, 0xc3, 0xa1, b'b', 0xc4, 0x02, b'x', b'y',
    ];

    #[test]
    fn messages_frame_byte_by_byte_and_parse() {
        let mut stream = MESSAGE.to_vec();
        stream.extend_from_slice(MESSAGE);
        let mut f = Framer::default();
        let mut ends = Vec::new();
        let mut start = 0;
        for end in 1..=stream.len() {
            if let Some(n) = f.advance(&stream[start..end]).unwrap() {
                ends.push(start + n);
                start += n;
            }
        }
        assert_eq!(ends, [MESSAGE.len(), 2 * MESSAGE.len()]);
        let (v, n) = parse(MESSAGE).unwrap();
        assert_eq!(n, MESSAGE.len());
        let mut json = Vec::new();
        write_json(&mut json, &v).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"["tag",5,{"a":[1,-2,1.5,null,true],"b":"xy"}]"#
        );
    }

    #[test]
    fn hostile_lengths_and_depths_are_errors() {
        // An array that claims 4 billion items in 5 bytes.
        assert!(parse(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        // A string longer than the message.
        assert!(parse(&[0xdb, 0, 0, 1, 0, b'x']).is_err());
        assert!(parse(&[0xc1]).is_err());
        let deep = vec![0x91; MAX_DEPTH + 2];
        assert!(parse(&deep).is_err());
        assert!(Framer::default().advance(&deep).is_err());
        // Every truncation of a message is incomplete, never an error or a panic.
        for end in 0..MESSAGE.len() {
            assert_eq!(Framer::default().advance(&MESSAGE[..end]), Ok(None));
            assert!(parse(&MESSAGE[..end]).is_err());
        }
    }
}
