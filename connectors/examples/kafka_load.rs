//! The Kafka source's benchmark parts (what `benches/kafka_sink.sh` drives beside
//! `glyd sink --kafka`), each a subcommand so the script can pin them to cores:
//!
//! - `broker PARTITIONS`: hosts a mock Kafka cluster (librdkafka's, one broker) with topics
//!   `plain`, `zstd` and `lz4` of that many partitions; prints its bootstrap address and
//!   serves until its standard input closes.
//! - `produce BROKERS FILE`: produces each line of FILE to the three topics, each with its
//!   `compression.type` (none, zstd, lz4; `linger.ms=50`, `batch.size=1000000`), and prints
//!   the bytes of the Produce requests that carried each topic's batches, read from
//!   librdkafka's statistics (`txbytes`; request framing is under 0.1% at these batch sizes).
//! - `consume BROKERS TOPIC GROUP`: a bare consume loop, a member of GROUP, that reads every
//!   message the topic holds and discards it (summing key and value lengths); prints its rate.
//!
//! The mock broker keeps 5 MiB of batches per partition (older ones are dropped), so the
//! script spreads the events over enough partitions to keep them all.
//!
//! ```sh
//! cargo run --release -p glyd-connectors --example kafka_load -- broker 4
//! ```

use std::io::Read;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use glyd_testkit::kafka::MockKafka;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Statistics};

const TOPICS: [(&str, &str); 3] = [("plain", "none"), ("zstd", "zstd"), ("lz4", "lz4")];

fn broker(partitions: i32) {
    let kafka = MockKafka::start(1);
    for (t, _) in TOPICS {
        kafka.create_topic(t, partitions);
    }
    println!("{}", kafka.bootstrap());
    // Serve until the script closes our standard input.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Keeps the latest bytes sent to the brokers, from librdkafka's statistics.
#[derive(Default)]
struct Sent(AtomicI64);

impl ClientContext for Sent {
    fn stats(&self, stats: Statistics) {
        let tx: i64 = stats.brokers.values().map(|b| b.txbytes as i64).sum();
        self.0.store(tx, Relaxed);
    }
}

impl ProducerContext for Sent {
    type DeliveryOpaque = ();
    fn delivery(&self, r: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = r {
            panic!("a message was not delivered: {e}");
        }
    }
}

fn produce(brokers: &str, file: &str) {
    let data = std::fs::read(file).expect("the events file");
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    println!(
        "messages={} bytes={}",
        lines.len(),
        lines.iter().map(|l| l.len()).sum::<usize>()
    );
    for (topic, compression) in TOPICS {
        let p: BaseProducer<Sent> = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("compression.type", compression)
            .set("linger.ms", "50")
            .set("batch.size", "1000000")
            .set("queue.buffering.max.kbytes", "1048576")
            .set("statistics.interval.ms", "100")
            .create_with_context(Sent::default())
            .expect("a producer");
        let before = {
            std::thread::sleep(Duration::from_millis(300));
            p.poll(Duration::from_millis(10));
            p.context().0.load(Relaxed)
        };
        for (i, line) in lines.iter().enumerate() {
            let key = (i % 1000).to_string();
            let mut record = BaseRecord::to(topic).payload(*line).key(key.as_bytes());
            loop {
                match p.send(record) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        record = r;
                        p.poll(Duration::from_millis(10));
                    }
                }
            }
            p.poll(Duration::ZERO);
        }
        p.flush(Duration::from_secs(600))
            .expect("every message delivered");
        let at = Instant::now();
        while at.elapsed() < Duration::from_millis(500) {
            p.poll(Duration::from_millis(50));
        }
        println!(
            "topic={topic} produce_request_bytes={} held={}",
            p.context().0.load(Relaxed) - before,
            held(brokers, topic)
        );
    }
}

/// Messages the topic holds: its partitions' watermarks apart.
fn held(brokers: &str, topic: &str) -> u64 {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("a client");
    let meta = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("the topic's metadata");
    let partitions = meta.topics()[0].partitions().len() as i32;
    (0..partitions)
        .map(|p| {
            let (low, high) = c
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .expect("watermarks");
            (high - low) as u64
        })
        .sum()
}

fn consume(brokers: &str, topic: &str, group: &str) {
    let count = held(brokers, topic);
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("partition.assignment.strategy", "cooperative-sticky")
        .create()
        .expect("a consumer");
    c.subscribe(&[topic]).expect("subscribed");
    let (mut n, mut bytes, mut started) = (0u64, 0u64, None);
    while n < count {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            started.get_or_insert_with(Instant::now);
            n += 1;
            bytes +=
                m.payload().map_or(0, |p| p.len()) as u64 + m.key().map_or(0, |k| k.len()) as u64;
        }
    }
    let s = started.expect("a message").elapsed().as_secs_f64();
    println!(
        "consume messages={n} bytes={bytes} seconds={s:.3} mb_s={:.1}",
        bytes as f64 / s / 1e6
    );
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    match a.as_slice() {
        ["broker", p] => broker(p.parse().expect("partitions")),
        ["produce", b, f] => produce(b, f),
        ["consume", b, t, g] => consume(b, t, g),
        _ => {
            eprintln!(
                "usage: kafka_load broker P | produce BROKERS FILE | consume BROKERS TOPIC GROUP"
            );
            std::process::exit(2);
        }
    }
}
