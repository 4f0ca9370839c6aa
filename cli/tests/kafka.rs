//! `glyd sink --kafka` end to end against a real Kafka protocol (librdkafka's mock cluster,
//! hosted by this test process): producers that are not ours (`kcat`, Python's
//! `confluent-kafka`) write a topic of several partitions while two sink members of one group
//! archive it and are killed with SIGKILL at random moments; afterwards every offset of every
//! partition is in exactly one archive, and the archives answer SQL with what was produced.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glyd_testkit::kafka::MockKafka;

mod common;
use common::{all_pass_test, archives, glyd, sql_t as sql};

/// A running `glyd sink --kafka` member, its HTTP port (`/metrics`) and its log so far.
struct Member {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Member {
    /// Starts a member and waits until it serves HTTP (its `/metrics`).
    fn start(kafka: &MockKafka, lake: &Path, extra: &[&str]) -> Member {
        Member::start_with(kafka, lake, extra, &[])
    }

    /// [`Member::start`] with environment variables `env` (an object store's, say).
    fn start_with(
        kafka: &MockKafka,
        lake: &Path,
        extra: &[&str],
        env: &[(&str, String)],
    ) -> Member {
        let mut child = glyd()
            .args([
                "sink",
                "--http",
                "127.0.0.1:0",
                "--kafka",
                kafka.bootstrap(),
            ])
            .arg("--out")
            .arg(lake)
            .args([
                "-X",
                "session.timeout.ms=6000",
                "-X",
                "heartbeat.interval.ms=500",
            ])
            .args(extra)
            .envs(env.iter().cloned())
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let member_log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(p) = line.split("listening on 127.0.0.1:").nth(1) {
                    let port: String = p.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(port.parse::<u16>().unwrap());
                }
                let mut l = member_log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the member did not start: {}", log.lock().unwrap()));
        Member { child, port, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM; whether it exited cleanly, and its log.
    fn stop(mut self) -> (bool, String) {
        // SAFETY: signalling a child process this test started and has not waited for.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let ok = self.child.wait().unwrap().success();
        std::thread::sleep(Duration::from_millis(50));
        (ok, self.log())
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// The Python producer of `cli/tests/clients` (confluent-kafka, installed by `.ci/run`).
fn python_produce(kafka: &MockKafka, topic: &str, count: usize, start: usize, secs: f64) -> Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/kafka_produce.py");
    Command::new("python3")
        .arg(script)
        .args([kafka.bootstrap(), topic])
        .args([count.to_string(), start.to_string(), secs.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3")
}

fn wait_ok(child: Child, what: &str) -> String {
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `kcat -P` producing `lines` (`key:value` each) to `topic`, in zstd batches.
fn kcat_produce(kafka: &MockKafka, topic: &str, lines: &str) {
    let mut c = Command::new("kcat")
        .args([
            "-P",
            "-b",
            kafka.bootstrap(),
            "-t",
            topic,
            "-K",
            ":",
            "-z",
            "zstd",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat (the Debian package kcat, installed by .ci/run)");
    c.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    wait_ok(c, "kcat");
}

/// Per partition: rows, distinct offsets, lowest and highest offset, as the lake says.
fn lake_offsets(topic_dir: &Path) -> BTreeMap<i32, (i64, i64, i64, i64)> {
    let csv = sql(
        "SELECT partition, count(*), count(DISTINCT \"offset\"), min(\"offset\"), \
         max(\"offset\") FROM t GROUP BY partition ORDER BY partition",
        topic_dir,
    );
    csv.lines()
        .skip(1)
        .map(|l| {
            let v: Vec<i64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (v[0] as i32, (v[1], v[2], v[3], v[4]))
        })
        .collect()
}

/// Asserts every offset of every partition is in the lake under `topic_dir` exactly once;
/// the messages the partitions hold in all.
fn assert_every_offset_once(
    kafka: &MockKafka,
    topic: &str,
    parts: i32,
    topic_dir: &Path,
    logs: &str,
) -> i64 {
    let offsets = lake_offsets(topic_dir);
    let mut total = 0;
    for p in 0..parts {
        let (low, high) = kafka.watermarks(topic, p);
        assert_eq!(low, 0);
        assert_eq!(
            offsets[&p],
            (high, high, 0, high - 1),
            "partition {p}: rows, distinct offsets, first and last\n{logs}"
        );
        total += high;
    }
    total
}

/// Waits until the lake holds every offset the partitions took (or panics with `logs`).
fn wait_archived(
    kafka: &MockKafka,
    topic: &str,
    parts: i32,
    lake: &Path,
    logs: impl Fn() -> String,
) {
    let want: BTreeMap<i32, i64> = (0..parts)
        .map(|p| (p, kafka.watermarks(topic, p).1))
        .collect();
    let started = Instant::now();
    loop {
        let dir = lake.join(topic);
        let have: BTreeMap<i32, i64> = if dir.is_dir() && !archives(&dir).is_empty() {
            lake_offsets(&dir)
                .into_iter()
                .map(|(p, v)| (p, v.0))
                .collect()
        } else {
            BTreeMap::new()
        };
        if (0..parts).all(|p| have.get(&p).copied().unwrap_or(0) >= want[&p]) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the lake has {have:?} of {want:?} after 2 minutes:\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn every_offset_lands_exactly_once_across_sigkills_and_rebalances() {
    let kafka = MockKafka::start(3);
    let (topic, parts) = ("events", 4);
    kafka.create_topic(topic, parts);
    let lake = tempfile::tempdir().unwrap();
    // kcat first: 2,000 events with keys, in zstd batches (the sink's librdkafka reads them).
    let lines: String = (0..2000)
        .map(|i| {
            format!(
                "k{}:{{\"n\":{},\"level\":\"INFO\",\"msg\":\"kcat event {i}\"}}\n",
                i % 7,
                1_000_000 + i
            )
        })
        .collect();
    kcat_produce(&kafka, topic, &lines);
    let args = [
        "--topic",
        topic,
        "--group",
        "lake",
        "--roll-records",
        "300",
        "--roll-age",
        "1",
        "--max-record-size",
        "2K",
    ];
    let mut members = vec![
        Member::start(&kafka, lake.path(), &args),
        Member::start(&kafka, lake.path(), &args),
    ];
    // Python produces 12,000 more over the kills.
    let producer = python_produce(&kafka, topic, 12_000, 0, 14.0);
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let kills = 12;
    for _ in 0..kills {
        std::thread::sleep(Duration::from_millis(400 + rand(1600)));
        let victim = rand(2) as usize;
        members.remove(victim).kill();
        members.insert(victim, Member::start(&kafka, lake.path(), &args));
    }
    let took = wait_ok(producer, "kafka_produce.py");
    assert!(took.starts_with('{'), "{took}");
    let logs = || {
        members
            .iter()
            .map(Member::log)
            .collect::<Vec<_>>()
            .join("\n----\n")
    };
    wait_archived(&kafka, topic, parts, lake.path(), logs);
    let mut logs = String::new();
    for m in members {
        let (ok, log) = m.stop();
        assert!(ok, "{log}");
        logs.push_str(&log);
    }
    let dir = lake.path().join(topic);
    let total = assert_every_offset_once(&kafka, topic, parts, &dir, &logs);
    assert_eq!(total, 14_000);
    // What was produced, by value: each event once, poison and oversize kept and flagged.
    let csv = sql(
        "SELECT count(DISTINCT n), sum(n), count(_invalid), \
         count(*) FILTER (WHERE _invalid LIKE '%over --max-record-size%'), \
         count(headers), count(DISTINCT key) FROM t",
        &dir,
    );
    let poison = (0..12_000).filter(|n| n % 97 == 96).count() as i64;
    let oversize = (0..12_000)
        .filter(|n| n % 101 == 100 && n % 97 != 96)
        .count() as i64;
    let sum: i64 = (1_000_000..1_002_000).sum::<i64>()
        + (0..12_000)
            .filter(|n| n % 97 != 96 && n % 101 != 100)
            .sum::<i64>();
    let with_headers = (0..12_000).filter(|n| n % 3 == 0).count();
    assert_eq!(
        csv.lines().nth(1).unwrap(),
        format!(
            "{},{sum},{},{oversize},{with_headers},50",
            14_000 - poison - oversize,
            poison + oversize
        )
    );
    // Archives pass `glyd -t` and say what they hold.
    all_pass_test(&dir);
    let names = archives(&dir);
    assert!(names.len() >= 14_000 / 300, "{}", names.len());
    for a in &names {
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        let (_, first) = name.trim_end_matches(".glyd").rsplit_once('+').unwrap();
        let o = glyd().arg("inspect").arg(a).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let first: i64 = first.parse().unwrap();
        assert!(
            text.contains(&format!("glyd.kafka.first_offset: {first}\n")),
            "{}: {text}",
            a.display()
        );
    }
    assert!(
        logs.contains("revoked"),
        "no rebalance revoked a partition:\n{logs}"
    );
}

#[test]
fn a_broker_that_goes_away_or_a_topic_that_vanishes_is_waited_out() {
    let kafka = MockKafka::start(1);
    let (topic, parts) = ("orders", 2);
    kafka.create_topic(topic, parts);
    let lake = tempfile::tempdir().unwrap();
    let args = ["--topic", topic, "--roll-age", "1"];
    let member = Member::start(&kafka, lake.path(), &args);
    wait_ok(python_produce(&kafka, topic, 1000, 0, 0.0), "producer");
    wait_archived(&kafka, topic, parts, lake.path(), || member.log());

    // The broker goes away: the member says so, keeps running, and carries on when it is back.
    kafka.broker(1, false);
    std::thread::sleep(Duration::from_secs(4));
    let mut member = member;
    assert!(
        member.child.try_wait().unwrap().is_none(),
        "{}",
        member.log()
    );
    kafka.broker(1, true);
    wait_ok(python_produce(&kafka, topic, 1000, 1000, 0.0), "producer");
    wait_archived(&kafka, topic, parts, lake.path(), || member.log());

    // The topic looks deleted for a while: the same.
    kafka.hide_topic(topic, true);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        member.child.try_wait().unwrap().is_none(),
        "{}",
        member.log()
    );
    kafka.hide_topic(topic, false);
    wait_ok(python_produce(&kafka, topic, 500, 2000, 0.0), "producer");
    wait_archived(&kafka, topic, parts, lake.path(), || member.log());

    // /metrics: archives, the committed offset and lag per partition, commit latency. An
    // archive is renamed into place before its offsets are committed, so the lake can be
    // complete a moment before the committed offsets say so.
    let committed: Vec<String> = (0..parts)
        .map(|p| {
            let high = kafka.watermarks(topic, p).1;
            format!(
                "glyd_sink_kafka_committed_offset{{topic=\"{topic}\",partition=\"{p}\"}} {high}\n"
            )
        })
        .collect();
    let started = Instant::now();
    let metrics = loop {
        let o = Command::new("curl")
            .args(["-s", &format!("http://127.0.0.1:{}/metrics", member.port)])
            .output()
            .unwrap();
        let metrics = String::from_utf8_lossy(&o.stdout).into_owned();
        if committed.iter().all(|c| metrics.contains(c)) {
            break metrics;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{committed:?} not committed after a minute:\n{metrics}\n{}",
            member.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for p in 0..parts {
        let lag = format!("glyd_sink_kafka_lag{{topic=\"{topic}\",partition=\"{p}\"}}");
        assert!(metrics.contains(&lag), "{lag}\n{metrics}");
    }
    assert!(
        metrics.contains("glyd_sink_kafka_archives_total{"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("glyd_sink_kafka_commit_seconds_count 0\n"),
        "{metrics}"
    );
    let (ok, log) = member.stop();
    assert!(ok, "{log}");
    assert!(
        log.contains("WARN") || log.contains("ERROR"),
        "the outage went unsaid:\n{log}"
    );
    let total = assert_every_offset_once(&kafka, topic, parts, &lake.path().join(topic), &log);
    let offsets = lake_offsets(&lake.path().join(topic));
    assert_eq!(total, 2500);
    // A clean stop flushed and committed everything: a new member of the group archives nothing.
    let again = Member::start(&kafka, lake.path(), &args);
    std::thread::sleep(Duration::from_secs(3));
    let (ok, log) = again.stop();
    assert!(ok, "{log}");
    assert!(!log.contains("archive finished"), "{log}");
    assert_eq!(lake_offsets(&lake.path().join(topic)), offsets);
}

#[test]
fn a_member_past_its_memory_budget_pauses_and_catches_up() {
    let kafka = MockKafka::start(1);
    let (topic, parts) = ("burst", 3);
    kafka.create_topic(topic, parts);
    let lake = tempfile::tempdir().unwrap();
    // 6,000 events of some 100 bytes (and every 101st of 4 KiB; some 1.3 MB of rows) against
    // a budget of 512 KiB (half of --memory).
    wait_ok(python_produce(&kafka, topic, 6000, 0, 0.0), "producer");
    // Settings from a file, as examples/sink/kafka.toml gives them.
    let config = lake.path().join("kafka.toml");
    std::fs::write(
        &config,
        format!("topic = [\"{topic}\"]\nmemory = \"1M\"\nvalue = \"lines\"\nroll_records = 1000\nroll_age = 1\n"),
    )
    .unwrap();
    let member = Member::start(&kafka, lake.path(), &["--config", config.to_str().unwrap()]);
    wait_archived(&kafka, topic, parts, lake.path(), || member.log());
    let (ok, log) = member.stop();
    assert!(ok, "{log}");
    assert!(
        log.contains("paused=true"),
        "the budget never paused:\n{log}"
    );
    assert!(
        log.contains("paused=false"),
        "the member never resumed:\n{log}"
    );
    assert_every_offset_once(&kafka, topic, parts, &lake.path().join(topic), &log);
    // --value lines: each value one text column, poison (text) included, nothing flagged.
    let csv = sql(
        "SELECT count(*) FILTER (WHERE value LIKE 'poison%'), count(value), count(*) FROM t",
        &lake.path().join(topic),
    );
    let poison = (0..6000).filter(|n| n % 97 == 96).count();
    assert_eq!(csv.lines().nth(1).unwrap(), format!("{poison},6000,6000"));
    let columns = sql("SELECT * FROM t LIMIT 1", &lake.path().join(topic));
    assert!(!columns.contains("_invalid"), "{columns}");
}

#[test]
fn a_member_lands_a_topic_on_s3_exactly_once_across_a_kill() {
    let s3 = glyd_testkit::s3::S3Server::start();
    s3.create_bucket("lake");
    let kafka = MockKafka::start(1);
    let (topic, parts) = ("s3events", 2);
    kafka.create_topic(topic, parts);
    let lake = Path::new("s3://lake/kafka/");
    // A lake on a store keeps the log of its HTTP and Fluent sources in a local folder.
    let wal = tempfile::tempdir().unwrap();
    let wal = wal.path().to_str().unwrap();
    let args = [
        "--topic",
        topic,
        "--roll-records",
        "200",
        "--roll-age",
        "1",
        "--wal",
        wal,
    ];
    // What glyd sql over the topic's prefix says: rows, and distinct (partition, offset)s.
    let counted = || {
        let o = glyd()
            .envs(s3.env())
            .args([
                "sql",
                "--format",
                "csv",
                "SELECT count(*), count(DISTINCT (partition, \"offset\")) FROM t",
                "-t",
                "t=s3://lake/kafka/s3events/",
            ])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let nums: Vec<i64> = out
            .lines()
            .nth(1)
            .map(|l| l.split(',').filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        (
            nums.first().copied().unwrap_or(0),
            nums.get(1).copied().unwrap_or(0),
        )
    };
    let wait_rows = |n: i64, log: &dyn Fn() -> String| {
        let started = Instant::now();
        while counted().0 < n {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "{:?} of {n} rows on S3:\n{}",
                counted(),
                log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    };
    let member = Member::start_with(&kafka, lake, &args, &s3.env());
    wait_ok(python_produce(&kafka, topic, 600, 0, 0.0), "producer");
    wait_rows(600, &|| member.log());
    // Killed: what it had committed stays; the next member resumes from there.
    member.kill();
    wait_ok(python_produce(&kafka, topic, 400, 600, 0.0), "producer");
    let member = Member::start_with(&kafka, lake, &args, &s3.env());
    wait_rows(1000, &|| member.log());
    let (ok, log) = member.stop();
    assert!(ok, "{log}");
    assert_eq!(counted(), (1000, 1000), "{log}");
}
