//! The consumer-group member itself (librdkafka through `rdkafka`, behind the `kafka`
//! feature): the poll loop, the rebalance callbacks, the archive writer thread and the
//! offset commits, as [`super`] describes them.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use glyd_columnar::WriteOptions;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::{Headers, Message as _};
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use rustc_hash::FxHashMap;

use super::partition::{Cut, Cutting, Partition};
use super::row::{self, push_message, Message};
use super::{check_topic, KafkaConfig};
use crate::lake::{write_archive, Archived, Lake};
use crate::metrics::Metrics;
use crate::SinkConfig;

/// An archive to write, and what came of writing it.
struct Job {
    /// The archive's path under the lake.
    rel: String,
    topic: String,
    partition: i32,
    cut: Cut,
}

struct Done {
    topic: String,
    partition: i32,
    first: i64,
    last: i64,
    /// Bytes of the job's rows.
    bytes: usize,
    /// The archive, or why not and the rows to try again.
    result: Result<Archived, (String, Cut)>,
}

/// What the poll loop and the rebalance callbacks share (both run on the polling thread).
struct State {
    partitions: FxHashMap<(String, i32), Partition>,
    jobs: Sender<Job>,
    done: Receiver<Done>,
    /// Jobs sent and not yet answered.
    in_flight: usize,
    bytes_in_flight: usize,
    out: Lake,
    metrics: Arc<Metrics>,
    /// When a failed write or commit may be tried again.
    retry_at: Option<Instant>,
}

struct Context {
    state: Arc<Mutex<State>>,
    metrics: Arc<Metrics>,
}

impl ClientContext for Context {
    /// librdkafka's statistics (every `statistics.interval.ms`) carry each partition's lag.
    fn stats(&self, stats: rdkafka::Statistics) {
        for (topic, t) in &stats.topics {
            for (&partition, p) in &t.partitions {
                if partition >= 0 && p.consumer_lag >= 0 {
                    self.metrics.kafka_lag(topic, partition, p.consumer_lag);
                }
            }
        }
    }

    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        use rdkafka::config::RDKafkaLogLevel as L;
        match level {
            L::Emerg | L::Alert | L::Critical | L::Error => {
                tracing::error!(facility = fac, "kafka: {log_message}")
            }
            L::Warning => tracing::warn!(facility = fac, "kafka: {log_message}"),
            L::Notice | L::Info => tracing::info!(facility = fac, "kafka: {log_message}"),
            L::Debug => tracing::debug!(facility = fac, "kafka: {log_message}"),
        }
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        tracing::warn!(%error, "kafka: {reason}");
    }
}

impl ConsumerContext for Context {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Context>, rebalance: &Rebalance<'_>) {
        let mut state = lock(&self.state);
        match rebalance {
            Rebalance::Assign(tpl) => {
                for e in tpl.elements() {
                    let p = Partition::new(e.topic(), e.partition());
                    // A killed writer's temporaries; the partition's earlier owner is done.
                    let _ = state.out.remove_temporaries(&p.folder());
                    tracing::info!(topic = e.topic(), partition = e.partition(), "assigned");
                    state
                        .partitions
                        .insert((e.topic().to_string(), e.partition()), p);
                }
            }
            Rebalance::Revoke(tpl) => {
                for e in tpl.elements() {
                    let key = (e.topic().to_string(), e.partition());
                    // Finish the archive in flight and commit it; leave the rest.
                    while state
                        .partitions
                        .get(&key)
                        .is_some_and(|p| p.in_flight.is_some())
                    {
                        if !state.settle_one(consumer, Duration::from_secs(600)) {
                            break;
                        }
                    }
                    if let Some(mut p) = state.partitions.remove(&key) {
                        if let Some(next) = p.uncommitted.take() {
                            let _ = state.commit(consumer, &p.topic, p.partition, next);
                        }
                        tracing::info!(
                            topic = e.topic(),
                            partition = e.partition(),
                            left_bytes = p.bytes(),
                            "revoked; rows not yet archived are left to the next owner"
                        );
                    }
                    state.metrics.kafka_forget(e.topic(), e.partition());
                }
            }
            Rebalance::Error(e) => tracing::error!(error = %e, "kafka rebalance failed"),
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    /// Commits `next` (the offset after the last archived) for the partition, synchronously.
    fn commit(
        &mut self,
        consumer: &BaseConsumer<Context>,
        topic: &str,
        partition: i32,
        next: i64,
    ) -> Result<(), String> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition, Offset::Offset(next))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let r = consumer
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| e.to_string());
        self.metrics.kafka_commit.observe(started.elapsed());
        if r.is_ok() {
            self.metrics.kafka_committed(topic, partition, next);
        }
        r
    }

    /// Takes one written archive's answer (waiting up to `wait`) and commits its offsets;
    /// false if none came.
    fn settle_one(&mut self, consumer: &BaseConsumer<Context>, wait: Duration) -> bool {
        let Ok(d) = self.done.recv_timeout(wait) else {
            return false;
        };
        self.in_flight -= 1;
        self.bytes_in_flight -= d.bytes;
        let key = (d.topic.clone(), d.partition);
        let Some(p) = self.partitions.get_mut(&key) else {
            return true;
        };
        match d.result {
            Ok(a) => {
                p.in_flight = None;
                p.uncommitted = Some(d.last + 1);
                self.metrics.output(&d.topic, a.bytes_in, a.bytes_out);
                self.metrics.kafka_archive(&d.topic, d.partition);
                tracing::info!(
                    archive = %a.name,
                    rows = a.rows,
                    first = d.first,
                    last = d.last,
                    bytes_in = a.bytes_in,
                    bytes = a.bytes_out,
                    "archive finished"
                );
                let next = d.last + 1;
                let (topic, partition) = (d.topic, d.partition);
                match self.commit(consumer, &topic, partition, next) {
                    Ok(()) => {
                        if let Some(p) = self.partitions.get_mut(&key) {
                            p.uncommitted = None;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(topic, partition, offset = next, error = %e,
                            "could not commit an archived offset; trying again");
                        self.retry_at = Some(Instant::now() + Duration::from_secs(1));
                    }
                }
            }
            Err((e, cut)) => {
                tracing::error!(topic = d.topic, partition = d.partition, first = d.first,
                    error = %e, "could not write an archive; trying again in 5 s");
                self.retry_at = Some(Instant::now() + Duration::from_secs(5));
                p.in_flight = None;
                p.ready.push_front(cut);
            }
        }
        true
    }

    /// Sends each partition's next cut archive to be written, where none is in flight and
    /// its predecessor is committed.
    fn dispatch(&mut self, consumer: &BaseConsumer<Context>) {
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return;
        }
        self.retry_at = None;
        let keys: Vec<(String, i32)> = self.partitions.keys().cloned().collect();
        for key in keys {
            let p = self.partitions.get_mut(&key).expect("a key just listed");
            if let Some(next) = p.uncommitted {
                let (topic, partition) = (p.topic.clone(), p.partition);
                if let Err(e) = self.commit(consumer, &topic, partition, next) {
                    tracing::warn!(topic, partition, error = %e, "commit failed again");
                    self.retry_at = Some(Instant::now() + Duration::from_secs(1));
                    continue;
                }
                self.partitions
                    .get_mut(&key)
                    .expect("still assigned")
                    .uncommitted = None;
            }
            let p = self.partitions.get_mut(&key).expect("still assigned");
            if p.in_flight.is_some() {
                continue;
            }
            if let Some(cut) = p.ready.pop_front() {
                p.in_flight = Some(cut.first);
                let job = Job {
                    rel: p.archive_path(cut.first),
                    topic: p.topic.clone(),
                    partition: p.partition,
                    cut,
                };
                self.in_flight += 1;
                self.bytes_in_flight += job.cut.bytes;
                self.jobs.send(job).expect("the archive writer lives");
            }
        }
    }

    fn bytes(&self) -> usize {
        self.bytes_in_flight + self.partitions.values().map(|p| p.bytes()).sum::<usize>()
    }
}

/// Writes archives as the poll loop cuts them, one at a time.
fn write_archives(jobs: Receiver<Job>, done: Sender<Done>, out: Lake, opts: WriteOptions) {
    for job in jobs {
        let Job {
            rel,
            topic,
            partition,
            cut,
        } = job;
        let (first, last, bytes) = (cut.first, cut.last, cut.bytes);
        let texts = [partition as i64, first, last, cut.records as i64].map(|n| n.to_string());
        let meta = [
            ("glyd.kafka.topic", topic.as_str()),
            ("glyd.kafka.partition", &texts[0]),
            ("glyd.kafka.first_offset", &texts[1]),
            ("glyd.kafka.last_offset", &texts[2]),
            ("glyd.kafka.records", &texts[3]),
            ("glyd.kafka.cut", cut.reason),
        ];
        // A panic in the record writer fails this archive (kept, tried again), not the member.
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_archive(&out, &rel, &cut.rows, &meta, &opts)
        }))
        .unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(std::io::Error::other(format!(
                "the record writer panicked ({why}); please report it"
            )))
        });
        let result = written.map_err(|e| (format!("{out}/{rel}: {e}"), cut));
        let sent = done.send(Done {
            topic,
            partition,
            first,
            last,
            bytes,
            result,
        });
        if sent.is_err() {
            return;
        }
    }
}

/// Messages handled between two rounds of housekeeping.
const BATCH: usize = 4096;

/// What the poll loop does between batches: answers written archives (commits), cuts runs
/// that are old or past the memory budget, sends cut runs to be written, pauses or resumes the
/// partitions, and reports what was read.
struct Housekeeper {
    budget: usize,
    roll_age: Duration,
    paused: bool,
    /// Pausing again now and then pauses partitions assigned since.
    paused_at: Instant,
}

impl Housekeeper {
    fn run(&mut self, s: &mut State, consumer: &BaseConsumer<Context>) {
        while s.in_flight > 0 && s.settle_one(consumer, Duration::ZERO) {}
        let now = Instant::now();
        for p in s.partitions.values_mut() {
            if p.opened_at()
                .is_some_and(|t| now.duration_since(t) >= self.roll_age)
            {
                p.cut("age");
            }
            if p.unreported.0 > 0 {
                let (events, bytes) = std::mem::take(&mut p.unreported);
                s.metrics.input("kafka", &p.topic, events, bytes);
            }
        }
        let held = s.bytes();
        if held > self.budget && s.in_flight == 0 {
            if let Some(p) = s.partitions.values_mut().max_by_key(|p| p.open_bytes()) {
                p.cut("memory");
            }
        }
        s.dispatch(consumer);
        let over = held > self.budget;
        if over != self.paused || (over && self.paused_at.elapsed() > Duration::from_secs(1)) {
            self.paused_at = now;
            if let Ok(assigned) = consumer.assignment() {
                let r = if over {
                    consumer.pause(&assigned)
                } else {
                    consumer.resume(&assigned)
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e, "could not pause or resume partitions");
                } else if over != self.paused {
                    tracing::info!(held, budget = self.budget, paused = over, "memory budget");
                    self.paused = over;
                }
            }
        }
    }
}

/// Runs the Kafka source until `stop`: then every run gathered is archived and committed, and
/// the member leaves its group. Errors only if it cannot start.
pub fn run(
    kafka: KafkaConfig,
    sink: &SinkConfig,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    for t in &kafka.topics {
        check_topic(t)?;
    }
    let (jobs_tx, jobs_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let writer = {
        let (out, opts) = (sink.out.clone(), sink.write_options());
        std::thread::Builder::new()
            .name("kafka archives".into())
            .spawn(move || write_archives(jobs_rx, done_tx, out, opts))
            .map_err(|e| e.to_string())?
    };
    let state = Arc::new(Mutex::new(State {
        partitions: FxHashMap::default(),
        jobs: jobs_tx,
        done: done_rx,
        in_flight: 0,
        bytes_in_flight: 0,
        out: sink.out.clone(),
        metrics: metrics.clone(),
        retry_at: None,
    }));
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &kafka.brokers)
        .set("group.id", &kafka.group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("client.id", "glyd-sink")
        // Prefetch by bytes (queued.max.messages.kbytes, 64 MiB) rather than by the default
        // 100,000 messages a partition, which left a one-core member waiting on fetches
        // more than half the time.
        .set("queued.min.messages", "10000000")
        .set("statistics.interval.ms", "5000");
    for (k, v) in &kafka.options {
        config.set(k, v);
    }
    let consumer: BaseConsumer<Context> = config
        .create_with_context(Context {
            state: state.clone(),
            metrics: metrics.clone(),
        })
        .map_err(|e| format!("--kafka {}: {e}", kafka.brokers))?;
    let topics: Vec<&str> = kafka.topics.iter().map(|s| s.as_str()).collect();
    consumer
        .subscribe(&topics)
        .map_err(|e| format!("subscribing to {topics:?}: {e}"))?;
    tracing::info!(brokers = kafka.brokers, group = kafka.group, topics = ?topics, lake = %sink.out, "kafka consumer started");
    let cutting = Cutting {
        roll_records: kafka.roll_records.max(1),
        roll_bytes: sink.roll_bytes.max(1),
    };
    let mut keeper = Housekeeper {
        budget: (sink.memory / 2) as usize,
        roll_age: sink.roll_age,
        paused: false,
        paused_at: Instant::now(),
    };
    let mut last_error: Option<(String, Instant)> = None;
    let mut key = (String::new(), 0);
    while !stop.load(Relaxed) {
        keeper.run(&mut lock(&state), &consumer);
        // A batch: the first message waited for, then those already fetched.
        let mut wait = Duration::from_millis(100);
        for _ in 0..BATCH {
            let m = match consumer.poll(wait) {
                None => break,
                Some(Err(e)) => {
                    let text = e.to_string();
                    let repeated = last_error.as_ref().is_some_and(|(t, at)| {
                        *t == text && at.elapsed() < Duration::from_secs(10)
                    });
                    if !repeated {
                        tracing::warn!(error = %text, "kafka consumer error; retrying");
                        last_error = Some((text, Instant::now()));
                    }
                    metrics.reject("kafka_error");
                    break;
                }
                Some(Ok(m)) => m,
            };
            wait = Duration::ZERO;
            let mut s = lock(&state);
            key.0.clear();
            key.0.push_str(m.topic());
            key.1 = m.partition();
            let Some(p) = s.partitions.get_mut(&key) else {
                continue;
            };
            // A message already gathered (librdkafka may fetch a range again).
            if p.next.is_some_and(|n| m.offset() < n) {
                continue;
            }
            let headers = m.headers().map(|h| {
                h.iter()
                    .map(|h| (h.key, h.value))
                    .collect::<row::HeaderList>()
            });
            let message = Message {
                offset: m.offset(),
                timestamp_ms: m.timestamp().to_millis(),
                key: m.key(),
                headers,
                value: m.payload(),
            };
            p.unreported.0 += 1;
            p.unreported.1 +=
                (m.payload().map_or(0, |v| v.len()) + m.key().map_or(0, |k| k.len())) as u64;
            p.push(m.offset(), &cutting, |rows| {
                push_message(rows, &message, kafka.value, sink.max_record)
            });
        }
    }
    // Stopping: archive and commit every run gathered, then leave the group. Past a minute of
    // failures the rest is left: the next owner reads it again and rewrites it by name.
    {
        let mut s = lock(&state);
        keeper.run(&mut s, &consumer);
        for p in s.partitions.values_mut() {
            p.cut("stop");
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if Instant::now() > deadline {
                tracing::error!(
                    "could not archive and commit everything gathered in a minute; \
                    the rest is read again from the committed offsets"
                );
                break;
            }
            s.dispatch(&consumer);
            if s.in_flight == 0 {
                if s.partitions
                    .values()
                    .all(|p| p.ready.is_empty() && p.uncommitted.is_none())
                {
                    break;
                }
                if let Some(t) = s.retry_at {
                    std::thread::sleep(t.saturating_duration_since(Instant::now()));
                }
                continue;
            }
            s.settle_one(&consumer, Duration::from_secs(600));
        }
    }
    consumer.unsubscribe();
    let leave = Instant::now();
    while leave.elapsed() < Duration::from_secs(2) && !lock(&state).partitions.is_empty() {
        let _ = consumer.poll(Duration::from_millis(50));
    }
    drop(consumer);
    {
        // The writer ends when its queue closes.
        let mut s = lock(&state);
        let (dead, _) = mpsc::channel();
        s.jobs = dead;
    }
    let _ = writer.join();
    tracing::info!("kafka consumer stopped: every offset read is archived and committed");
    Ok(())
}
