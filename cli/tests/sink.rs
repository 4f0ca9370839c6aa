//! `glyd sink` end to end, as a service: real clients (curl, and a plain HTTP/1.1 client here)
//! post events; the archives then answer SQL with exactly the events sent. The sink is killed
//! with SIGKILL at random moments while a client sends with acknowledgements, and restarted:
//! nothing acknowledged is lost, and every archive passes `glyd -t`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::{all_pass_test, glyd, sql_t};

/// A running `glyd sink`, its HTTP port (or its first listener's), its Fluent port if it
/// serves one, and its log so far.
struct Running {
    child: Child,
    port: u16,
    fluent: Option<u16>,
    log: Arc<Mutex<String>>,
}

impl Running {
    fn start(out: &Path, extra: &[&str]) -> Running {
        Running::start_with(out, &["--http", "127.0.0.1:0"], extra, &[])
    }

    /// `glyd sink LISTENERS --out OUT EXTRA` with `env` set; waits for every listener.
    fn start_with(out: &Path, listeners: &[&str], extra: &[&str], env: &[(&str, &str)]) -> Running {
        let mut cmd = glyd();
        cmd.arg("sink").args(listeners);
        if out != Path::new("-") {
            cmd.arg("--out").arg(out);
        }
        let mut child = cmd
            .args(extra)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink_log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(p) = line.split("listening on 127.0.0.1:").nth(1) {
                    let port: String = p.chars().take_while(char::is_ascii_digit).collect();
                    let kind = if line.contains("fluent") {
                        "fluent"
                    } else {
                        "http"
                    };
                    let _ = tx.send((kind, port.parse::<u16>().unwrap()));
                }
                let mut l = sink_log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let (mut port, mut fluent) = (None, None);
        let count = listeners
            .iter()
            .filter(|l| l.starts_with("--http") || l.starts_with("--fluent"))
            .count()
            .max(1);
        for _ in 0..count {
            let (kind, p) = rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("the sink did not start: {}", log.lock().unwrap()));
            match kind {
                "fluent" => fluent = Some(p),
                _ => port = Some(p),
            }
        }
        Running {
            child,
            port: port.or(fluent).unwrap(),
            fluent,
            log,
        }
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> (bool, String) {
        // SAFETY: signalling a child process this test started and has not waited for.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let ok = self.child.wait().unwrap().success();
        std::thread::sleep(Duration::from_millis(50));
        let log = self.log.lock().unwrap().clone();
        (ok, log)
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// POSTs `body` to `path` with `headers`; the status and body of the answer.
fn post(port: u16, path: &str, body: &[u8], headers: &[&str]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {text:?}")))?;
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    Ok((status, body))
}

/// curl posting `file` to the sink; the status code.
fn curl(port: u16, path: &str, file: &Path, headers: &[&str]) -> u16 {
    let mut c = Command::new("curl");
    c.args([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--data-binary",
    ])
    .arg(format!("@{}", file.display()));
    for h in headers {
        c.args(["-H", h]);
    }
    let o = c
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl is installed (.ci/run installs it)");
    String::from_utf8_lossy(&o.stdout).parse().unwrap()
}

/// `glyd sql` as CSV.
fn sql(query: &str, table: &Path) -> String {
    let o = glyd()
        .args(["sql", "--format", "csv", query])
        .arg(table)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn events_over_http_land_as_queryable_archives() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let sink = Running::start(&lake, &["--roll-age", "1", "--max-body", "64K"]);
    let port = sink.port;
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let ndjson = file(
        "a.ndjson",
        b"{\"@timestamp\":\"2026-12-07T10:15:00Z\",\"level\":\"INFO\",\"msg\":\"one\"}\n\
          {\"@timestamp\":\"2026-12-07T11:15:00Z\",\"log.level\":\"ERROR\",\"msg\":\"two\"}\n",
    );
    assert_eq!(curl(port, "/app", &ndjson, &[]), 200);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"{\"time\":1765102500,\"level\":\"WARN\",\"msg\":\"three\"}\n")
        .unwrap();
    let gz = file("b.ndjson.gz", &gz.finish().unwrap());
    assert_eq!(curl(port, "/app", &gz, &["Content-Encoding: gzip"]), 200);
    let zst = zstd::encode_all(
        &b"[{\"level\":\"INFO\",\"msg\":\"four\",\"user\":{\"id\":7}}]"[..],
        3,
    )
    .unwrap();
    let zst = file("c.json.zst", &zst);
    assert_eq!(curl(port, "/app", &zst, &["Content-Encoding: zstd"]), 200);
    let bulk = file(
        "d.bulk",
        b"{\"index\":{\"_index\":\"web\"}}\n{\"msg\":\"five\"}\n\
          {\"create\":{}}\n{\"msg\":\"six\",\"level\":\"INFO\"}\n",
    );
    assert_eq!(
        curl(
            port,
            "/app/_bulk",
            &bulk,
            &["Content-Type: application/x-ndjson"]
        ),
        200
    );
    // Refused whole, with the line and the reason; nothing of them is written.
    let (status, body) = post(port, "/app", b"{\"msg\":\"seven\"}\n{\"msg\":\n", &[]).unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"line\":2"), "{body}");
    let (status, _) = post(port, "/app", &vec![b' '; 70 << 10], &[]).unwrap();
    assert_eq!(status, 413);
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    bomb.write_all(&vec![b' '; 1 << 20]).unwrap();
    let (status, body) = post(
        port,
        "/app",
        &bomb.finish().unwrap(),
        &["Content-Encoding: gzip"],
    )
    .unwrap();
    assert_eq!(status, 413, "{body}");
    // Objects with stable keys become columns by path.
    let nested = (0..4)
        .map(|i| {
            format!(
                "{{\"http\":{{\"status\":{},\"path\":\"/p{i}\"}}}}\n",
                [200, 500][i % 2]
            )
        })
        .collect::<String>();
    let (status, body) = post(port, "/nested", nested.as_bytes(), &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, _) = post(port, "/no%20such", b"{}", &[]).unwrap();
    assert_eq!(status, 400);
    let metrics = {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut m = String::new();
        s.read_to_string(&mut m).unwrap();
        m
    };
    assert!(
        metrics.contains("glyd_sink_events_total{source=\"http\",stream=\"app\"} 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("glyd_sink_rejects_total{reason=\"too_large\"} 2"),
        "{metrics}"
    );
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    assert!(log.contains("archive finished"), "{log}");
    all_pass_test(&lake);
    let app = lake.join("app");
    assert_eq!(
        sql("SELECT msg, level FROM app ORDER BY msg", &app),
        "msg,level\nfour,INFO\none,INFO\nsix,INFO\nthree,WARN\ntwo,ERROR\n"
    );
    // Times from @timestamp and from epoch seconds; `log.level` is `level`.
    assert_eq!(
        sql(
            "SELECT msg, time FROM app WHERE time < '2026-12-07T11:00:00' ORDER BY time",
            &app
        ),
        "msg,time\nthree,2025-12-07T10:15:00\none,2026-12-07T10:15:00\n"
    );
    assert_eq!(sql("SELECT msg FROM web", &lake.join("web")), "msg\nfive\n");
    assert_eq!(
        sql_t(
            "SELECT \"http.status\" AS status, count(*) AS n FROM t GROUP BY 1 ORDER BY 1",
            &lake.join("nested")
        ),
        "status,n\n200,2\n500,2\n"
    );
    // Other nested values are JSON text, read with the JSON functions.
    assert_eq!(
        sql(
            "SELECT json_get_int(\"user\", 'id') AS id, \"user\"->>'id' AS text FROM app \
             WHERE \"user\" IS NOT NULL",
            &app
        ),
        "id,text\n7,7\n"
    );
    // Partitions are columns, and a filter on them reads one folder.
    assert_eq!(
        sql(
            "SELECT hour, count(*) AS n FROM app WHERE dt = '2026-12-07' GROUP BY hour ORDER BY hour",
            &lake.join("app")
        )
        .lines()
        .take(3)
        .collect::<Vec<_>>(),
        ["hour,n", "10,1", "11,1"]
    );
}

/// A client that sends numbered events in batches with acknowledgements, resending a batch
/// whose answer it did not get; what it knows.
#[derive(Default)]
struct Client {
    next: u64,
    acked: BTreeSet<u64>,
    /// Events sent more than once (their first answer never came).
    resent: BTreeSet<u64>,
    pending: Option<Vec<u64>>,
}

impl Client {
    fn batch(&mut self) -> Vec<u64> {
        if let Some(p) = &self.pending {
            self.resent.extend(p.iter().copied());
            return p.clone();
        }
        let ids: Vec<u64> = (self.next..self.next + 50).collect();
        self.next += 50;
        self.pending = Some(ids.clone());
        ids
    }

    fn send(&mut self, port: u16) -> bool {
        let ids = self.batch();
        let mut body = Vec::new();
        for id in &ids {
            writeln!(
                body,
                "{{\"id\":{id},\"level\":\"INFO\",\"msg\":\"event {id} from the crash test\"}}"
            )
            .unwrap();
        }
        match post(port, "/crash", &body, &[]) {
            Ok((200, _)) => {
                self.acked.extend(ids);
                self.pending = None;
                true
            }
            _ => false,
        }
    }
}

#[test]
fn sigkill_at_any_moment_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let mut client = Client::default();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let kills = 24;
    for round in 0..kills {
        // Small segments and quick rolls, so kills land while archives are being written too.
        let sink = Running::start(&lake, &["--roll-size", "8K", "--roll-age", "1"]);
        let client_port = sink.port;
        let deadline = Instant::now() + Duration::from_millis(50 + rand(400));
        while Instant::now() < deadline {
            client.send(client_port);
        }
        if round % 6 == 5 {
            // A torn frame at the log's end, as a write cut by the power going off.
            sink.kill();
            let wal = lake.join(".glyd-sink/wal/crash");
            let last = std::fs::read_dir(&wal)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "wal"))
                .max()
                .unwrap();
            // Only after the segment's magic: a kill between creating a segment and writing
            // its magic leaves it empty, and no power cut tears a frame nothing wrote.
            if std::fs::metadata(&last).unwrap().len() >= 8 {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&last)
                    .unwrap();
                f.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, b'{', b'"'])
                    .unwrap();
            }
        } else {
            sink.kill();
        }
    }
    // A last run takes the rest and stops cleanly.
    let sink = Running::start(&lake, &["--roll-size", "8K", "--roll-age", "1"]);
    while !client.send(sink.port) {}
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    all_pass_test(&lake);
    let ids = sql("SELECT id FROM crash", &lake.join("crash"));
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    for line in ids.lines().skip(1) {
        *seen.entry(line.parse().unwrap()).or_default() += 1;
    }
    let lost: Vec<&u64> = client
        .acked
        .iter()
        .filter(|i| !seen.contains_key(i))
        .collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    let twice: Vec<&u64> = seen
        .iter()
        .filter(|(_, &n)| n > 1)
        .map(|(i, _)| i)
        .collect();
    assert!(
        twice.iter().all(|i| client.resent.contains(i)),
        "duplicated without a resend: {twice:?}"
    );
    assert!(
        client.acked.len() > 1000,
        "{} acknowledged",
        client.acked.len()
    );
    eprintln!(
        "{kills} kills: {} events acknowledged, {} resent, {} duplicated",
        client.acked.len(),
        client.resent.len(),
        twice.len()
    );
}

/// The real Fluent clients of `cli/tests/clients` (installed by `.ci/run`).
fn clients() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        dir.join("node_modules/@fluent-org/logger").is_dir(),
        "the Fluent test clients are not installed: run `npm install --prefix cli/tests/clients` \
         and `pip install fluent-logger` (.ci/run does)"
    );
    dir
}

fn node_send(port: u16, mode: &str, count: usize, key: Option<&str>) -> std::process::Output {
    Command::new("node")
        .current_dir(clients())
        .args([
            "fluent_send.js",
            &port.to_string(),
            mode,
            &count.to_string(),
        ])
        .args(key)
        .output()
        .expect("node is installed (.ci/run installs it)")
}

#[test]
fn fluent_clients_land_events_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let sink = Running::start_with(
        &lake,
        &["--fluent", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        &["--roll-age", "1", "--fluent-route", "py.=python"],
        &[],
    );
    let port = sink.fluent.unwrap();
    // @fluent-org/logger, with acks in every mode (PackedForward and CompressedPackedForward
    // are what Fluent Bit and Fluentd send).
    for mode in [
        "Message",
        "Forward",
        "PackedForward",
        "CompressedPackedForward",
    ] {
        let o = node_send(port, mode, 400, None);
        assert!(
            o.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "acknowledged 400"
        );
    }
    // fluent-logger for Python: Message mode, no acks.
    let o = Command::new("python3")
        .current_dir(clients())
        .args(["fluent_send.py", &port.to_string(), "300"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A message that is not MessagePack closes its own connection only.
    let mut bad = TcpStream::connect(("127.0.0.1", port)).unwrap();
    bad.write_all(&[0x93, 0xa1, b't', 0xc1]).unwrap();
    let mut rest = Vec::new();
    let _ = bad.read_to_end(&mut rest);
    let o = node_send(port, "PackedForward", 10, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    assert!(log.contains("closed a Fluent connection"), "{log}");
    all_pass_test(&lake);
    for (stream, n) in [
        ("node.message", 400),
        ("node.forward", 400),
        ("node.packedforward", 410),
        ("node.compressedpackedforward", 400),
        ("python", 300),
    ] {
        let counts = sql_t(
            "SELECT count(*) AS rows, count(DISTINCT msg) AS messages FROM t",
            &lake.join(stream),
        );
        let distinct = if n == 410 { 400 } else { n };
        assert_eq!(
            counts,
            format!("rows,messages\n{n},{distinct}\n"),
            "{stream}"
        );
    }
    assert_eq!(
        sql_t(
            "SELECT level, count(*) AS n FROM t GROUP BY level ORDER BY level",
            &lake.join("node.forward")
        ),
        "level,n\nERROR,40\nINFO,360\n"
    );
}

#[test]
fn a_shared_key_keeps_other_fluent_clients_out() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let sink = Running::start_with(
        &lake,
        &["--fluent", "127.0.0.1:0"],
        &["--roll-age", "1"],
        &[("GLYD_FLUENT_SHARED_KEY", "s3cret")],
    );
    let port = sink.fluent.unwrap();
    let o = node_send(port, "PackedForward", 50, Some("s3cret"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "acknowledged 50");
    let mut wrong = Command::new("node")
        .current_dir(clients())
        .args(["fluent_send.js", &port.to_string(), "Forward", "5", "wrong"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let _ = wrong.kill();
    let out = wrong.wait_with_output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("acknowledged"));
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    assert!(log.contains("shared key mismatch"), "{log}");
    assert_eq!(
        sql_t(
            "SELECT count(*) AS n FROM t",
            &lake.join("node.packedforward")
        ),
        "n\n50\n"
    );
    assert!(!lake.join("node.forward").exists());
}

#[test]
fn a_config_file_sets_what_flags_would_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let config = dir.path().join("sink.toml");
    std::fs::write(
        &config,
        format!(
            "http = [\"127.0.0.1:0\"]\nout = {:?}\nroll_age = 1\nmax_body = \"1K\"\n\
             [[fluent_route]]\nprefix = \"x.\"\nstream = \"xs\"\n",
            lake.display().to_string()
        ),
    )
    .unwrap();
    let sink = Running::start_with(
        Path::new("-"),
        &["--config", config.to_str().unwrap()],
        &[],
        &[],
    );
    // max_body from the file: 1K.
    let (status, _) = post(sink.port, "/app", &vec![b' '; 2048], &[]).unwrap();
    assert_eq!(status, 413);
    let (status, _) = post(sink.port, "/app", b"{\"a\":1}\n", &[]).unwrap();
    assert_eq!(status, 200);
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    assert_eq!(sql("SELECT a FROM app", &lake.join("app")), "a\n1\n");
    // Unknown keys are refused, naming the file.
    std::fs::write(
        &config,
        "out = \"x\"\nhttp = [\"127.0.0.1:0\"]\nroll_sise = 5\n",
    )
    .unwrap();
    let o = glyd()
        .args(["sink", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sink.toml") && err.contains("roll_sise"),
        "{err}"
    );
    let o = glyd().args(["sink", "--out", "x"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs a source"));
}

#[test]
fn stalled_and_surplus_clients_are_cut_off_and_others_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let sink = Running::start_with(
        &lake,
        &["--fluent", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        &[
            "--read-timeout",
            "1",
            "--max-connections",
            "4",
            "--max-streams",
            "1",
        ],
        &[],
    );
    let (http, fluent) = (sink.port, sink.fluent.unwrap());
    // Half a Fluent message, then nothing: closed after the read timeout.
    let mut stalled = TcpStream::connect(("127.0.0.1", fluent)).unwrap();
    stalled.write_all(&[0x93, 0xa3, b'a', b'p']).unwrap();
    // Half an HTTP body, then nothing: 408.
    let mut slow = TcpStream::connect(("127.0.0.1", http)).unwrap();
    slow.write_all(b"POST /app HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":")
        .unwrap();
    let started = Instant::now();
    let mut answer = String::new();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let mut rest = Vec::new();
    stalled
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = stalled.read_to_end(&mut rest);
    assert!(started.elapsed() < Duration::from_secs(15));
    // Idle connections past the limit are closed at once; the others still work.
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(("127.0.0.1", http)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut surplus = TcpStream::connect(("127.0.0.1", http)).unwrap();
    surplus
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(
        surplus.read(&mut buf).unwrap_or(0),
        0,
        "a surplus connection is closed"
    );
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    let (status, body) = post(http, "/app", b"{\"a\":1}\n", &[]).unwrap();
    assert_eq!(status, 200, "{body}");
    // One stream at most: a second is refused, the first still taken.
    let (status, body) = post(http, "/other", b"{\"a\":2}\n", &[]).unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("--max-streams"), "{body}");
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    assert!(log.contains("stalled mid-message"), "{log}");
    assert!(log.contains("too many connections"), "{log}");
    assert_eq!(sql("SELECT a FROM app", &lake.join("app")), "a\n1\n");
}

#[test]
fn sigkill_loses_no_acknowledged_fluent_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let clients = clients();
    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let rounds = 8u64;
    for round in 0..rounds {
        let sink = Running::start_with(
            &lake,
            &["--fluent", "127.0.0.1:0"],
            &["--roll-size", "16K"],
            &[],
        );
        let port = sink.fluent.unwrap();
        let first = round * 1_000_000;
        let mut client = Command::new("node")
            .current_dir(&clients)
            .args([
                "fluent_acked.js",
                &port.to_string(),
                &first.to_string(),
                "1000000",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("node is installed (.ci/run installs it)");
        std::thread::sleep(Duration::from_millis(400 + 150 * round));
        sink.kill();
        // The client stops at its first failed chunk; one that hangs is ended.
        let deadline = Instant::now() + Duration::from_secs(2);
        while client.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = client.kill();
        let out = client.wait_with_output().unwrap();
        let ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert!(!ids.is_empty(), "round {round}: no chunk was acknowledged");
        acked.extend(ids);
    }
    let sink = Running::start_with(&lake, &["--fluent", "127.0.0.1:0"], &[], &[]);
    let (ok, log) = sink.stop();
    assert!(ok, "{log}");
    all_pass_test(&lake);
    let stream = lake.join("crash.events");
    let ids = sql_t("SELECT id FROM t", &stream);
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    for line in ids.lines().skip(1) {
        *seen.entry(line.parse().unwrap()).or_default() += 1;
    }
    let lost: Vec<&u64> = acked.iter().filter(|i| !seen.contains_key(i)).collect();
    assert!(
        lost.is_empty(),
        "acknowledged and lost: {} of {}",
        lost.len(),
        acked.len()
    );
    assert!(
        seen.values().all(|&n| n == 1),
        "an event landed twice without a resend"
    );
    eprintln!(
        "{rounds} kills: {} Fluent events acknowledged, {} in the lake",
        acked.len(),
        seen.len()
    );
}
