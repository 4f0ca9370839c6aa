//! A load generator for `glyd sink` (what `benches/sink.sh` drives): posts the events of an
//! NDJSON file to `POST /<stream>` over keep-alive HTTP/1.1 connections, each request a body
//! of whole lines, and reports events and bytes per second acknowledged and the latency of
//! each acknowledgement (a 200 means durable). With `--rate`, it paces itself to that many
//! bytes per second in all.
//!
//! ```sh
//! cargo run --release -p glyd-connectors --example sink_load -- \
//!     --addr 127.0.0.1:8080 --stream app --file events.ndjson --bytes 200M --connections 4
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    addr: String,
    stream: String,
    file: String,
    bytes: u64,
    connections: usize,
    body: usize,
    rate: Option<u64>,
}

fn size(s: &str) -> u64 {
    let (n, m) = match s.strip_suffix(['M', 'm']) {
        Some(n) => (n, 1 << 20),
        None => match s.strip_suffix(['K', 'k']) {
            Some(n) => (n, 1 << 10),
            None => (s, 1),
        },
    };
    n.parse::<u64>().expect("a size like 200M") * m
}

fn args() -> Args {
    let mut a = Args {
        addr: "127.0.0.1:8080".into(),
        stream: "app".into(),
        file: String::new(),
        bytes: 100 << 20,
        connections: 4,
        body: 1 << 20,
        rate: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--addr" => a.addr = v,
            "--stream" => a.stream = v,
            "--file" => a.file = v,
            "--bytes" => a.bytes = size(&v),
            "--connections" => a.connections = v.parse().expect("a count"),
            "--body" => a.body = size(&v) as usize,
            "--rate" => a.rate = Some(size(&v)),
            _ => panic!("unknown option {k}"),
        }
    }
    assert!(!a.file.is_empty(), "--file EVENTS.ndjson is needed");
    a
}

/// Bodies of whole lines of about `body` bytes each, and their event counts.
fn bodies(path: &str, body: usize) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    let (mut cur, mut n) = (Vec::new(), 0);
    for line in BufReader::new(std::fs::File::open(path).expect("the events file")).split(b'\n') {
        let line = line.unwrap();
        if line.is_empty() {
            continue;
        }
        cur.extend_from_slice(&line);
        cur.push(b'\n');
        n += 1;
        if cur.len() >= body {
            out.push((std::mem::take(&mut cur), n));
            n = 0;
        }
    }
    if !cur.is_empty() {
        out.push((cur, n));
    }
    out
}

/// Sends one request on `s` and reads its answer; the status.
fn request(s: &mut TcpStream, path: &str, body: &[u8], answer: &mut Vec<u8>) -> u16 {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: sink\r\nContent-Type: application/x-ndjson\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    answer.clear();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the sink closed the connection");
        answer.extend_from_slice(&buf[..n]);
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if answer.len() >= end + 4 + len {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

fn main() {
    let a = args();
    let bodies = Arc::new(bodies(&a.file, a.body));
    let sent = Arc::new(AtomicU64::new(0));
    let events = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let path = format!("/{}", a.stream);
    let threads: Vec<_> = (0..a.connections)
        .map(|c| {
            let (bodies, sent, events, refused, latencies, path) = (
                bodies.clone(),
                sent.clone(),
                events.clone(),
                refused.clone(),
                latencies.clone(),
                path.clone(),
            );
            let (addr, total, rate, conns) = (a.addr.clone(), a.bytes, a.rate, a.connections);
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_nodelay(true).unwrap();
                let mut answer = Vec::new();
                let mut mine = Vec::new();
                let mut i = c;
                loop {
                    let (body, n) = &bodies[i % bodies.len()];
                    i += conns;
                    let done = sent.fetch_add(body.len() as u64, Relaxed);
                    if done >= total {
                        break;
                    }
                    if let Some(rate) = rate {
                        let due = Duration::from_secs_f64(done as f64 / rate as f64);
                        if let Some(wait) = due.checked_sub(start.elapsed()) {
                            std::thread::sleep(wait);
                        }
                    }
                    let t = Instant::now();
                    loop {
                        match request(&mut s, &path, body, &mut answer) {
                            200 => break,
                            _ => {
                                refused.fetch_add(1, Relaxed);
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                    }
                    mine.push(t.elapsed());
                    events.fetch_add(*n, Relaxed);
                }
                latencies.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let bytes = sent.load(Relaxed).min(a.bytes);
    let mut l = latencies.lock().unwrap().clone();
    l.sort();
    let pct = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "events={} bytes={} seconds={secs:.3} events_per_s={:.0} mb_per_s={:.1} requests={} \
         p50_ms={:.1} p99_ms={:.1} refused={}",
        events.load(Relaxed),
        bytes,
        events.load(Relaxed) as f64 / secs,
        bytes as f64 / secs / 1e6,
        l.len(),
        pct(0.5),
        pct(0.99),
        refused.load(Relaxed)
    );
}
