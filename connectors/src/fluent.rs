//! The Fluent forward protocol (v1) source, over TCP: Message, Forward, PackedForward and
//! CompressedPackedForward (gzip) modes; event times as integers, floats or EventTime (ext
//! type 0); the `size` option checked against the events sent; the `chunk` option answered
//! with `{"ack": chunk}` only once the events are durable; and, with a shared key, the
//! HELO / PING / PONG handshake before anything is taken. A message is taken whole or not at
//! all: anything malformed closes its connection with the reason logged, and no other
//! connection notices. While the memory budget is spent, connections are not read.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha512};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::event::{check_stream, now_us, push_pairs, spell_time, Rows};
use crate::listener::serve_connections;
use crate::msgpack::{encode, key_text, parse, write_json, Framer, Value};
use crate::sink::{stopped, Sink};

/// How the Fluent source runs.
#[derive(Clone, Debug)]
pub struct FluentConfig {
    /// With a shared key, clients must pass the handshake first.
    pub shared_key: Option<String>,
    /// The name the server gives in the handshake.
    pub hostname: String,
    /// Tag prefixes and the stream their events go to, first match wins; other tags are
    /// their own stream (characters a folder name may not hold become `_`).
    pub routes: Vec<(String, String)>,
    /// Open connections at most; more are closed at once.
    pub connections: usize,
    /// Time a client may take to finish a message it started (or the handshake).
    pub read_timeout: Duration,
}

impl Default for FluentConfig {
    fn default() -> Self {
        Self {
            shared_key: None,
            hostname: "glyd".into(),
            routes: Vec::new(),
            connections: 1024,
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// The stream of `tag`.
pub fn stream_of(tag: &str, routes: &[(String, String)]) -> Result<String, String> {
    if let Some((_, s)) = routes.iter().find(|(p, _)| tag.starts_with(p.as_str())) {
        return Ok(s.clone());
    }
    let name: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches(['.', '_', '-']).to_string();
    check_stream(&name)
        .map(|()| name)
        .map_err(|e| format!("tag {tag:?}: {e}"))
}

/// Microseconds since 1970 of an event time: seconds as an integer or float, or EventTime
/// (ext type 0: big-endian seconds and nanoseconds, 32 bits each).
fn event_time(v: &Value) -> Result<i64, String> {
    match v {
        Value::UInt(s) => i64::try_from(*s)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000))
            .ok_or_else(|| format!("event time {s} is out of range")),
        Value::Int(s) => s
            .checked_mul(1_000_000)
            .ok_or_else(|| format!("event time {s} is out of range")),
        Value::Float(f) if f.is_finite() && f.abs() < 1e12 => Ok((f * 1e6).round() as i64),
        Value::Ext(0, b) if b.len() == 8 => {
            let secs = u32::from_be_bytes(b[..4].try_into().expect("4 bytes"));
            let nanos = u32::from_be_bytes(b[4..].try_into().expect("4 bytes"));
            Ok(i64::from(secs) * 1_000_000 + i64::from(nanos) / 1000)
        }
        other => Err(format!(
            "an event time is not a number or EventTime: {other:?}"
        )),
    }
}

/// Appends the event `[time, record]` to `rows`.
fn push_event(
    rows: &mut Rows,
    time: &Value,
    record: &Value,
    max_record: usize,
) -> Result<(), String> {
    let us = event_time(time)?;
    let Value::Map(map) = record else {
        return Err("a record is not a map".into());
    };
    let mut keys: Vec<String> = Vec::with_capacity(map.len());
    let mut values: Vec<Vec<u8>> = Vec::with_capacity(map.len());
    let mut size = 0;
    for (k, v) in map {
        let key = key_text(k).ok_or("a record key that is an array, a map or an extension")?;
        keys.push(String::from_utf8_lossy(&key).into_owned());
        let mut json = Vec::new();
        write_json(&mut json, v)?;
        size += json.len() + keys.last().map_or(0, |k| k.len());
        values.push(json);
    }
    if size > max_record {
        return Err(format!(
            "an event of about {size} bytes is over the record size limit of {max_record} \
             (--max-record-size)"
        ));
    }
    let pairs: Vec<(&str, &str)> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (k.as_ref(), std::str::from_utf8(v).expect("JSON is UTF-8")))
        .collect();
    spell_time(us).ok_or_else(|| format!("event time {us} µs is outside years 1..9999"))?;
    push_pairs(&mut rows.lines, &pairs, Some(us), now_us());
    rows.events += 1;
    Ok(())
}

/// Reads the entries `[time, record]` packed back to back in `bytes`.
fn push_packed(rows: &mut Rows, bytes: &[u8], max_record: usize) -> Result<(), String> {
    let mut at = 0;
    while at < bytes.len() {
        let (entry, n) = parse(&bytes[at..]).map_err(|e| format!("packed entries: {e}"))?;
        at += n;
        match entry {
            Value::Array(e) if e.len() == 2 => push_event(rows, &e[0], &e[1], max_record)?,
            _ => return Err("a packed entry is not [time, record]".into()),
        }
    }
    Ok(())
}

/// One message's events (for the stream its tag maps to) and its `chunk`, if any.
pub fn message_rows(
    msg: &[u8],
    cfg: &FluentConfig,
    max_record: usize,
    max_body: usize,
) -> Result<(Rows, Option<Vec<u8>>), String> {
    let (v, _) = parse(msg)?;
    let Value::Array(items) = v else {
        return Err("a message is not an array".into());
    };
    if !(2..=4).contains(&items.len()) {
        return Err(format!(
            "a message of {} items (2 to 4 expected)",
            items.len()
        ));
    }
    let tag = items[0].text().ok_or("a message's tag is not a string")?;
    let tag = std::str::from_utf8(tag).map_err(|_| "a tag is not UTF-8".to_string())?;
    let mut rows = Rows {
        stream: stream_of(tag, &cfg.routes)?,
        ..Rows::default()
    };
    let option_at = match &items[1] {
        Value::Array(entries) => {
            for e in entries {
                match e {
                    Value::Array(e) if e.len() == 2 => {
                        push_event(&mut rows, &e[0], &e[1], max_record)?
                    }
                    _ => return Err("a forward entry is not [time, record]".into()),
                }
            }
            2
        }
        Value::Str(packed) | Value::Bin(packed) => {
            let compressed = items
                .get(2)
                .and_then(|o| o.get("compressed"))
                .and_then(Value::text);
            match compressed {
                None | Some(b"text") => push_packed(&mut rows, packed, max_record)?,
                Some(b"gzip") => {
                    let mut plain = Vec::new();
                    flate2::read::MultiGzDecoder::new(*packed)
                        .take(max_body as u64 + 1)
                        .read_to_end(&mut plain)
                        .map_err(|e| format!("compressed entries do not decode: {e}"))?;
                    if plain.len() > max_body {
                        return Err(format!(
                            "compressed entries decode to more than {max_body} bytes (--max-body)"
                        ));
                    }
                    push_packed(&mut rows, &plain, max_record)?;
                }
                Some(other) => {
                    return Err(format!(
                        "compression {:?} is not taken (gzip is)",
                        String::from_utf8_lossy(other)
                    ))
                }
            }
            2
        }
        time => {
            let record = items.get(2).ok_or("a message without its record")?;
            push_event(&mut rows, time, record, max_record)?;
            3
        }
    };
    let option = items.get(option_at);
    if items.len() > option_at + 1 {
        return Err("a message with items after its option".into());
    }
    let chunk = match option {
        None | Some(Value::Nil) => None,
        Some(o @ Value::Map(_)) => {
            if let Some(size) = o.get("size") {
                let ok = matches!(size, Value::UInt(n) if *n == rows.events);
                if !ok {
                    return Err(format!(
                        "the size option says {size:?} events, the message holds {}",
                        rows.events
                    ));
                }
            }
            match o.get("chunk") {
                Some(c) => Some(c.text().ok_or("a chunk id is not a string")?.to_vec()),
                None => None,
            }
        }
        Some(_) => return Err("a message's option is not a map".into()),
    };
    Ok((rows, chunk))
}

fn hex_sha512(parts: &[&[u8]]) -> String {
    let mut h = Sha512::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A connection's incoming bytes: the message being read, where its framing stands, and
/// the memory reserved for it.
#[derive(Default)]
struct Incoming {
    buf: Vec<u8>,
    framer: Framer,
    reserved: Vec<crate::sink::Reservation>,
    held: u64,
}

impl Incoming {
    /// Reads until `buf` starts with one whole message; its length. `Ok(None)` when the
    /// client closed between messages.
    /// With `stop`, a stop while no message has begun ends the connection too (`Ok(None)`).
    async fn message(
        &mut self,
        tcp: &mut TcpStream,
        limit: usize,
        timeout: Duration,
        sink: &Sink,
        mut stop: Option<&mut watch::Receiver<bool>>,
    ) -> Result<Option<usize>, String> {
        let mut started: Option<Instant> = (!self.buf.is_empty()).then(Instant::now);
        loop {
            if let Some(n) = self.framer.advance(&self.buf)? {
                return Ok(Some(n));
            }
            if self.buf.len() > limit {
                return Err(format!("a message over {limit} bytes (--max-body)"));
            }
            // What is held in memory is reserved first: past the budget, the client waits.
            let want = self.buf.len() as u64 + (64 << 10);
            if want > self.held {
                let more = want - self.held + (1 << 20);
                self.reserved.push(sink.reserve_wait(more).await);
                self.held += more;
            }
            let at = self.buf.len();
            self.buf.resize(at + (64 << 10), 0);
            let read = match started {
                // Between messages a connection may idle (until a stop); within one it
                // must keep coming.
                None => match stop.as_deref_mut() {
                    Some(stop) => tokio::select! {
                        r = tcp.read(&mut self.buf[at..]) => r.map_err(|e| e.to_string()),
                        _ = stopped(stop) => {
                            self.buf.truncate(at);
                            return Ok(None);
                        }
                    },
                    None => tcp
                        .read(&mut self.buf[at..])
                        .await
                        .map_err(|e| e.to_string()),
                },
                Some(t) => {
                    let left = timeout.saturating_sub(t.elapsed());
                    match tokio::time::timeout(left, tcp.read(&mut self.buf[at..])).await {
                        Ok(r) => r.map_err(|e| e.to_string()),
                        Err(_) => Err(format!(
                            "the client stalled mid-message ({at} bytes in {timeout:?})"
                        )),
                    }
                }
            };
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(at);
                    return Err(e);
                }
            };
            self.buf.truncate(at + n);
            if n == 0 {
                return if at == 0 {
                    Ok(None)
                } else {
                    Err(format!("the client closed mid-message ({at} bytes)"))
                };
            }
            started.get_or_insert_with(Instant::now);
        }
    }

    /// Drops the first `n` bytes (a message read); returns the memory held for it, to be
    /// dropped once its rows are written.
    fn consume(&mut self, n: usize) -> Vec<crate::sink::Reservation> {
        self.buf.drain(..n);
        self.held = 0;
        std::mem::take(&mut self.reserved)
    }
}

/// The server's side of the handshake: HELO, the client's PING checked, PONG.
async fn handshake(
    tcp: &mut TcpStream,
    key: &str,
    cfg: &FluentConfig,
    sink: &Sink,
) -> Result<Incoming, String> {
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| format!("no random nonce: {e}"))?;
    let mut helo = Vec::new();
    encode::array(&mut helo, 2);
    encode::str(&mut helo, b"HELO");
    encode::map(&mut helo, 3);
    encode::str(&mut helo, b"nonce");
    encode::bin(&mut helo, &nonce);
    encode::str(&mut helo, b"auth");
    encode::str(&mut helo, b"");
    encode::str(&mut helo, b"keepalive");
    encode::bool(&mut helo, true);
    tcp.write_all(&helo).await.map_err(|e| e.to_string())?;
    let mut incoming = Incoming::default();
    let read = incoming.message(tcp, 64 << 10, cfg.read_timeout, sink, None);
    let n = tokio::time::timeout(cfg.read_timeout, read)
        .await
        .map_err(|_| "no PING in time".to_string())??
        .ok_or("closed before its PING")?;
    let buf = &incoming.buf;
    let (ping, _) = parse(&buf[..n])?;
    let field = |i: usize| match &ping {
        Value::Array(a) => a.get(i).and_then(Value::text),
        _ => None,
    };
    let (Some(b"PING"), Some(host), Some(salt), Some(digest)) =
        (field(0), field(1), field(2), field(3))
    else {
        return Err("the first message is not a PING".into());
    };
    let expected = hex_sha512(&[salt, host, &nonce, key.as_bytes()]);
    let ok = digest == expected.as_bytes();
    let mut pong = Vec::new();
    encode::array(&mut pong, 5);
    encode::str(&mut pong, b"PONG");
    encode::bool(&mut pong, ok);
    if ok {
        encode::str(&mut pong, b"");
        encode::str(&mut pong, cfg.hostname.as_bytes());
        let ours = hex_sha512(&[salt, cfg.hostname.as_bytes(), &nonce, key.as_bytes()]);
        encode::str(&mut pong, ours.as_bytes());
    } else {
        encode::str(&mut pong, b"shared key mismatch");
        encode::str(&mut pong, b"");
        encode::str(&mut pong, b"");
    }
    tcp.write_all(&pong).await.map_err(|e| e.to_string())?;
    if !ok {
        return Err(format!(
            "client {:?} failed the handshake: shared key mismatch",
            String::from_utf8_lossy(host)
        ));
    }
    drop(incoming.consume(n));
    Ok(incoming)
}

/// Serves one client until it closes, sends something that is refused, or the sink stops
/// (between messages: one being read or written is finished, its ack sent).
async fn connection(
    mut tcp: TcpStream,
    sink: Arc<Sink>,
    cfg: FluentConfig,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut incoming = match &cfg.shared_key {
        Some(key) => handshake(&mut tcp, key, &cfg, &sink).await?,
        None => Incoming::default(),
    };
    let (max_record, max_body) = (sink.config().max_record, sink.config().max_body);
    loop {
        let arrived = Instant::now();
        let Some(n) = incoming
            .message(&mut tcp, max_body, cfg.read_timeout, &sink, Some(&mut stop))
            .await?
        else {
            return Ok(());
        };
        let (rows, chunk) = message_rows(&incoming.buf[..n], &cfg, max_record, max_body)?;
        let held = incoming.consume(n);
        if sink.behind() {
            // Rows are kept only once durable: wait for the archives rather than refuse.
            while sink.behind() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        sink.write("fluent", rows)
            .await
            .map_err(|e| e.to_string())?;
        drop(held);
        sink.metrics.ack.observe(arrived.elapsed());
        if let Some(chunk) = chunk {
            let mut ack = Vec::new();
            encode::map(&mut ack, 1);
            encode::str(&mut ack, b"ack");
            encode::str(&mut ack, &chunk);
            tcp.write_all(&ack).await.map_err(|e| e.to_string())?;
        }
    }
}

/// Serves the Fluent forward protocol on `listener` until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    sink: Arc<Sink>,
    cfg: FluentConfig,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let limit = cfg.connections;
    serve_connections(
        listener,
        sink.clone(),
        limit,
        stop,
        move |tcp, peer, stop| {
            let (sink, cfg) = (sink.clone(), cfg.clone());
            async move {
                if let Err(reason) = connection(tcp, sink.clone(), cfg, stop).await {
                    sink.metrics.reject("fluent_protocol");
                    tracing::warn!(%peer, reason, "closed a Fluent connection");
                }
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(mode: &str) -> Vec<u8> {
        let mut entry = Vec::new();
        encode::array(&mut entry, 2);
        // EventTime 2025-12-07T12:00:00.5Z.
        entry.extend_from_slice(&[0xd7, 0x00]);
        entry.extend_from_slice(&1_765_108_800u32.to_be_bytes());
        entry.extend_from_slice(&500_000_000u32.to_be_bytes());
        encode::map(&mut entry, 1);
        encode::str(&mut entry, b"log");
        encode::str(&mut entry, b"hello");
        let mut m = Vec::new();
        match mode {
            "message" => {
                encode::array(&mut m, 4);
                encode::str(&mut m, b"app.web");
                m.extend_from_slice(&entry[1..]);
            }
            "forward" => {
                encode::array(&mut m, 3);
                encode::str(&mut m, b"app.web");
                encode::array(&mut m, 2);
                m.extend_from_slice(&entry);
                m.extend_from_slice(&entry);
            }
            _ => {
                encode::array(&mut m, 3);
                encode::str(&mut m, b"app.web");
                let mut packed = entry.clone();
                packed.extend_from_slice(&entry);
                encode::str(&mut m, &packed);
            }
        }
        encode::map(&mut m, 2);
        encode::str(&mut m, b"chunk");
        encode::str(&mut m, b"c1");
        encode::str(&mut m, b"size");
        m.push(if mode == "message" { 1 } else { 2 });
        m
    }

    #[test]
    fn every_mode_becomes_rows_with_its_chunk() {
        let cfg = FluentConfig::default();
        let row = "{\"time\":\"2025-12-07T12:00:00.500000\",\"log\":\"hello\"}\n";
        for (mode, events) in [("message", 1), ("forward", 2), ("packed", 2)] {
            let (rows, chunk) = message_rows(&message(mode), &cfg, 1 << 20, 1 << 20).unwrap();
            assert_eq!(rows.stream, "app.web");
            assert_eq!(rows.events, events, "{mode}");
            assert_eq!(
                String::from_utf8(rows.lines).unwrap(),
                row.repeat(events as usize)
            );
            assert_eq!(chunk.as_deref(), Some(&b"c1"[..]));
        }
    }

    #[test]
    fn bad_messages_say_why() {
        let cfg = FluentConfig::default();
        let mut wrong_size = message("forward");
        *wrong_size.last_mut().unwrap() = 3;
        let e = message_rows(&wrong_size, &cfg, 1 << 20, 1 << 20).unwrap_err();
        assert!(e.contains("size option"), "{e}");
        let e = message_rows(&message("forward"), &cfg, 5, 1 << 20).unwrap_err();
        assert!(e.contains("record size limit"), "{e}");
        let e = message_rows(&[0x93, 0xa1, b't', 0xc3, 0x80], &cfg, 100, 100).unwrap_err();
        assert!(e.contains("event time"), "{e}");
        for end in 0..message("packed").len() {
            assert!(message_rows(&message("packed")[..end], &cfg, 100, 100).is_err());
        }
    }

    /// Maps as keys of maps, nested: spelled as JSON text inside keys, each level escaped
    /// the one below again and a 224-byte message grew past any memory (found by the
    /// `fluent` fuzz target). Such keys are refused.
    #[test]
    fn nested_maps_as_keys_are_refused_not_grown() {
        let msg = include_bytes!("../tests/data/fluent-nested-keys.msgpack");
        let cfg = FluentConfig::default();
        let e = message_rows(msg, &cfg, 1 << 20, 1 << 20).unwrap_err();
        assert!(
            e.contains("key that is an array, a map or an extension"),
            "{e}"
        );
    }

    #[test]
    fn tags_map_to_streams() {
        let routes = vec![("kube.".to_string(), "k8s".to_string())];
        assert_eq!(stream_of("kube.var.log", &routes).unwrap(), "k8s");
        assert_eq!(stream_of("app.web", &routes).unwrap(), "app.web");
        assert_eq!(stream_of("_a b/c", &routes).unwrap(), "a_b_c");
        assert!(stream_of("...", &routes).is_err());
    }
}
