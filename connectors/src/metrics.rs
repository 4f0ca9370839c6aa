//! The sink's counters, gauges and histograms, rendered in the Prometheus text format for
//! `GET /metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the histograms' buckets.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A histogram of durations, as Prometheus keeps them: cumulative buckets, sum and count.
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|&b| s <= b) {
            self.counts[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(d.as_micros() as u64, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (b, c) in BUCKETS.iter().zip(&self.counts) {
            cumulative += c.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// Everything `/metrics` reports.
#[derive(Default)]
pub struct Metrics {
    /// Events and bytes in, by (source, stream).
    inputs: Mutex<BTreeMap<(String, String), (u64, u64)>>,
    /// Archives, their input bytes and their bytes, by stream.
    outputs: Mutex<BTreeMap<String, (u64, u64, u64)>>,
    /// Requests or frames refused, by reason.
    rejects: Mutex<BTreeMap<String, u64>>,
    /// Bytes in the log not yet in durable archives.
    pub log_pending: AtomicI64,
    /// Bytes cut from torn or corrupt log tails at start.
    pub log_cut: AtomicU64,
    pub connections: AtomicI64,
    /// From a request's arrival to its acknowledgement (records durable in the log).
    pub ack: Histogram,
    /// Writing one log batch and syncing it.
    pub log_sync: Histogram,
    /// Building the archives of one sealed log segment.
    pub flush: Histogram,
    /// Kafka partitions assigned: (topic, partition) to lag, archives, committed offset.
    kafka: Mutex<BTreeMap<(String, i32), KafkaPartition>>,
    /// One synchronous offset commit.
    pub kafka_commit: Histogram,
}

#[derive(Clone, Copy, Default)]
struct KafkaPartition {
    lag: i64,
    archives: u64,
    committed: i64,
}

impl Metrics {
    pub fn input(&self, source: &str, stream: &str, events: u64, bytes: u64) {
        let mut m = self.inputs.lock().expect("metrics lock");
        let e = m.entry((source.into(), stream.into())).or_default();
        e.0 += events;
        e.1 += bytes;
    }

    pub fn output(&self, stream: &str, bytes_in: u64, bytes_out: u64) {
        let mut m = self.outputs.lock().expect("metrics lock");
        let e = m.entry(stream.into()).or_default();
        e.0 += 1;
        e.1 += bytes_in;
        e.2 += bytes_out;
    }

    pub fn reject(&self, reason: &str) {
        *self
            .rejects
            .lock()
            .expect("metrics lock")
            .entry(reason.into())
            .or_default() += 1;
    }

    fn kafka_partition(&self, topic: &str, partition: i32, f: impl FnOnce(&mut KafkaPartition)) {
        let mut m = self.kafka.lock().expect("metrics lock");
        f(m.entry((topic.into(), partition)).or_default());
    }

    /// Messages in the partition past the last one read.
    pub fn kafka_lag(&self, topic: &str, partition: i32, lag: i64) {
        self.kafka_partition(topic, partition, |p| p.lag = lag);
    }

    pub fn kafka_archive(&self, topic: &str, partition: i32) {
        self.kafka_partition(topic, partition, |p| p.archives += 1);
    }

    pub fn kafka_committed(&self, topic: &str, partition: i32, offset: i64) {
        self.kafka_partition(topic, partition, |p| p.committed = offset);
    }

    /// A partition no longer assigned: its gauges go.
    pub fn kafka_forget(&self, topic: &str, partition: i32) {
        let mut m = self.kafka.lock().expect("metrics lock");
        m.remove(&(topic.to_string(), partition));
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let labels = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let inputs = self.inputs.lock().expect("metrics lock").clone();
        out.push_str("# HELP glyd_sink_events_total Events accepted (durable in the log).\n");
        out.push_str("# TYPE glyd_sink_events_total counter\n");
        for ((src, stream), (events, _)) in &inputs {
            let _ = writeln!(
                out,
                "glyd_sink_events_total{{source=\"{src}\",stream=\"{}\"}} {events}",
                labels(stream)
            );
        }
        out.push_str("# HELP glyd_sink_bytes_in_total Bytes of accepted events as rows.\n");
        out.push_str("# TYPE glyd_sink_bytes_in_total counter\n");
        for ((src, stream), (_, bytes)) in &inputs {
            let _ = writeln!(
                out,
                "glyd_sink_bytes_in_total{{source=\"{src}\",stream=\"{}\"}} {bytes}",
                labels(stream)
            );
        }
        let outputs = self.outputs.lock().expect("metrics lock").clone();
        for (name, help, pick) in [
            ("glyd_sink_archives_total", "Archives finished.", 0usize),
            (
                "glyd_sink_archive_input_bytes_total",
                "Row bytes in finished archives.",
                1,
            ),
            (
                "glyd_sink_archive_bytes_total",
                "Bytes of finished archives.",
                2,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (stream, v) in &outputs {
                let v = [v.0, v.1, v.2][pick];
                let _ = writeln!(out, "{name}{{stream=\"{}\"}} {v}", labels(stream));
            }
        }
        out.push_str("# HELP glyd_sink_ratio Row bytes over archive bytes, all archives.\n");
        out.push_str("# TYPE glyd_sink_ratio gauge\n");
        let (bi, bo) = outputs
            .values()
            .fold((0, 0), |(i, o), v| (i + v.1, o + v.2));
        let _ = writeln!(out, "glyd_sink_ratio {}", bi as f64 / bo.max(1) as f64);
        out.push_str("# HELP glyd_sink_rejects_total Requests or frames refused, by reason.\n");
        out.push_str("# TYPE glyd_sink_rejects_total counter\n");
        for (reason, n) in self.rejects.lock().expect("metrics lock").iter() {
            let _ = writeln!(out, "glyd_sink_rejects_total{{reason=\"{reason}\"}} {n}");
        }
        for (name, help, v) in [
            (
                "glyd_sink_log_pending_bytes",
                "Bytes in the write-ahead log not yet in durable archives.",
                self.log_pending.load(Relaxed),
            ),
            (
                "glyd_sink_connections",
                "Open client connections.",
                self.connections.load(Relaxed),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(
            out,
            "# HELP glyd_sink_log_cut_bytes_total Bytes cut from torn or corrupt log tails.\n\
             # TYPE glyd_sink_log_cut_bytes_total counter\nglyd_sink_log_cut_bytes_total {}",
            self.log_cut.load(Relaxed)
        );
        self.ack.render(
            &mut out,
            "glyd_sink_ack_seconds",
            "From a request's arrival to its acknowledgement.",
        );
        self.log_sync.render(
            &mut out,
            "glyd_sink_log_sync_seconds",
            "Writing and syncing one batch of the log.",
        );
        self.flush.render(
            &mut out,
            "glyd_sink_flush_seconds",
            "Building the archives of one sealed log segment.",
        );
        let kafka = self.kafka.lock().expect("metrics lock").clone();
        if !kafka.is_empty() {
            for (name, kind, help, get) in [
                (
                    "glyd_sink_kafka_lag",
                    "gauge",
                    "Messages in an assigned partition past the last one read.",
                    (|p: &KafkaPartition| p.lag) as fn(&KafkaPartition) -> i64,
                ),
                (
                    "glyd_sink_kafka_archives_total",
                    "counter",
                    "Archives written for an assigned partition.",
                    |p: &KafkaPartition| p.archives as i64,
                ),
                (
                    "glyd_sink_kafka_committed_offset",
                    "gauge",
                    "The offset committed after an assigned partition's last archive.",
                    |p: &KafkaPartition| p.committed,
                ),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                for ((topic, partition), p) in &kafka {
                    let _ = writeln!(
                        out,
                        "{name}{{topic=\"{}\",partition=\"{partition}\"}} {}",
                        labels(topic),
                        get(p)
                    );
                }
            }
            self.kafka_commit.render(
                &mut out,
                "glyd_sink_kafka_commit_seconds",
                "One synchronous commit of an archived partition's offset.",
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.input("http", "app", 3, 300);
        m.output("app", 300, 30);
        m.reject("bad_request");
        m.ack.observe(Duration::from_millis(3));
        let text = m.render();
        assert!(text.contains("glyd_sink_events_total{source=\"http\",stream=\"app\"} 3\n"));
        assert!(text.contains("glyd_sink_ratio 10\n"));
        assert!(text.contains("glyd_sink_ack_seconds_bucket{le=\"0.0025\"} 0\n"));
        assert!(text.contains("glyd_sink_ack_seconds_bucket{le=\"0.005\"} 1\n"));
        assert!(text.contains("glyd_sink_ack_seconds_count 1\n"));
        assert!(text.contains("glyd_sink_rejects_total{reason=\"bad_request\"} 1\n"));
        assert!(!text.contains("kafka"));
        m.kafka_lag("t", 2, 40);
        m.kafka_archive("t", 2);
        m.kafka_committed("t", 2, 1000);
        m.kafka_commit.observe(Duration::from_millis(3));
        let text = m.render();
        assert!(text.contains("glyd_sink_kafka_lag{topic=\"t\",partition=\"2\"} 40\n"));
        assert!(text.contains("glyd_sink_kafka_archives_total{topic=\"t\",partition=\"2\"} 1\n"));
        assert!(
            text.contains("glyd_sink_kafka_committed_offset{topic=\"t\",partition=\"2\"} 1000\n")
        );
        assert!(text.contains("glyd_sink_kafka_commit_seconds_count 1\n"));
        m.kafka_forget("t", 2);
        assert!(!m.render().contains("glyd_sink_kafka_lag{"));
    }
}
