//! Every CLI path takes an object URL, against a real S3 API server (moto) on loopback:
//! archives written there by `glyd -o s3://` (multipart uploads), read back byte for byte by
//! `glyd -dc`, `-d -o`, `-l`, `inspect`, `cat` and `glyd sql` (a prefix or `-t NAME=URL`); a
//! selective query fetches a small part of its object; a killed upload leaves no object; a
//! store that resets connections, stalls or fails requests is retried, one that keeps failing is
//! named; the sink lands acknowledged events on the store across a kill.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use glyd_testkit::s3::S3Server;

// Not every helper is used here.
#[allow(dead_code)]
mod common;
use common::glyd;

/// `glyd` with the server's credentials and endpoint.
fn glyd_on(s3: &S3Server) -> Command {
    let mut c = glyd();
    c.envs(s3.env());
    c
}

fn ok(o: Output, what: &str) -> Vec<u8> {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// A log the repository ships (`examples/data/`).
fn example(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/data")
            .join(name),
    )
    .unwrap()
}

/// A server with bucket `lake`, and a folder holding `HDFS_2k.log`.
fn server_and_log() -> (S3Server, tempfile::TempDir, std::path::PathBuf) {
    let s3 = S3Server::start();
    s3.create_bucket("lake");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("HDFS_2k.log");
    std::fs::write(&log, example("HDFS_2k.log")).unwrap();
    (s3, dir, log)
}

#[test]
fn every_cli_path_takes_an_s3_url() {
    let (s3, dir, log) = server_and_log();
    let url = "s3://lake/logs/hdfs.glyd";
    // Records and plain frames, uploaded.
    ok(
        glyd_on(&s3)
            .args(["-q", "-r", "-o", url])
            .arg(&log)
            .output()
            .unwrap(),
        "-r -o",
    );
    ok(
        glyd_on(&s3)
            .args(["-q", "-o", "s3://lake/raw/hdfs.log.glyd"])
            .arg(&log)
            .output()
            .unwrap(),
        "-o",
    );
    let original = std::fs::read(&log).unwrap();
    for u in [url, "s3://lake/raw/hdfs.log.glyd"] {
        let back = ok(glyd_on(&s3).args(["-dc", u]).output().unwrap(), "-dc");
        assert!(back == original, "{u} did not decode to the input");
    }
    let out = dir.path().join("back.log");
    ok(
        glyd_on(&s3)
            .args(["-q", "-d", url, "-o"])
            .arg(&out)
            .output()
            .unwrap(),
        "-d -o",
    );
    assert!(std::fs::read(&out).unwrap() == original);
    // An object already there is kept without -f, replaced with it.
    let o = glyd_on(&s3)
        .args(["-q", "-r", "-o", url])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    ok(
        glyd_on(&s3)
            .args(["-q", "-f", "-r", "-o", url])
            .arg(&log)
            .output()
            .unwrap(),
        "-f",
    );
    // inspect, cat and sql over the object say what they say over the local archive.
    let local = dir.path().join("hdfs.glyd");
    ok(
        glyd()
            .args(["-q", "-r", "-o"])
            .arg(&local)
            .arg(&log)
            .output()
            .unwrap(),
        "local",
    );
    let inspect = String::from_utf8(ok(
        glyd_on(&s3).args(["inspect", url]).output().unwrap(),
        "inspect",
    ))
    .unwrap();
    let local_inspect = String::from_utf8(ok(
        glyd().arg("inspect").arg(&local).output().unwrap(),
        "inspect",
    ))
    .unwrap();
    assert_eq!(
        inspect.replace(url, "X"),
        local_inspect.replace(local.to_str().unwrap(), "X")
    );
    let list =
        String::from_utf8(ok(glyd_on(&s3).args(["-l", url]).output().unwrap(), "-l")).unwrap();
    let local_list =
        String::from_utf8(ok(glyd().arg("-l").arg(&local).output().unwrap(), "-l")).unwrap();
    assert_eq!(
        list.replace(url, "X"),
        local_list.replace(local.to_str().unwrap(), "X")
    );
    let cat = ok(glyd_on(&s3).args(["cat", url]).output().unwrap(), "cat");
    assert_eq!(
        cat,
        ok(glyd().arg("cat").arg(&local).output().unwrap(), "cat")
    );
    let query =
        "SELECT level, count(*) AS n, min(time) AS first FROM {t} GROUP BY level ORDER BY level";
    let want = ok(
        glyd()
            .args(["sql", "--format", "csv", &query.replace("{t}", "hdfs")])
            .arg(&local)
            .output()
            .unwrap(),
        "sql local",
    );
    assert!(String::from_utf8_lossy(&want).contains("INFO"));
    let prefix = ok(
        glyd_on(&s3)
            .args([
                "sql",
                "--format",
                "csv",
                &query.replace("{t}", "logs"),
                "s3://lake/logs/",
            ])
            .output()
            .unwrap(),
        "sql prefix",
    );
    assert_eq!(prefix, want);
    let named = ok(
        glyd_on(&s3)
            .args([
                "sql",
                "--format",
                "csv",
                &query.replace("{t}", "h"),
                "-t",
                &format!("h={url}"),
            ])
            .output()
            .unwrap(),
        "sql -t",
    );
    assert_eq!(named, want);
    // A missing object is an error that names it.
    let o = glyd_on(&s3)
        .args(["-dc", "s3://lake/logs/none.glyd"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("s3://lake/logs/none.glyd"), "{e}");
}

/// A CSV of `rows` rows whose values do not compress away.
fn random_csv(rows: u64) -> String {
    let mut csv = String::from("id,amount,note,day\n");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..rows {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        csv.push_str(&format!(
            "{i},{}.{:02},note {:x},2024-03-{:02}\n",
            seed >> 44,
            (seed >> 20) % 100,
            seed >> 8,
            1 + i * 28 / rows
        ));
    }
    csv
}

#[test]
fn a_selective_query_fetches_a_small_part_of_its_object() {
    let s3 = S3Server::start();
    s3.create_bucket("lake");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, random_csv(200_000)).unwrap();
    let url = "s3://lake/t/t.glyd";
    ok(
        glyd_on(&s3)
            .args(["-q", "-r", "--row-group", "256K", "-o", url])
            .arg(&csv)
            .output()
            .unwrap(),
        "upload",
    );
    let before = s3.requests().len();
    let explain = String::from_utf8(ok(
        glyd_on(&s3)
            .args([
                "sql",
                "--format",
                "csv",
                "EXPLAIN ANALYZE SELECT sum(id) FROM t WHERE id BETWEEN 100000 AND 101000",
                "s3://lake/t/",
            ])
            .output()
            .unwrap(),
        "explain",
    ))
    .unwrap();
    let metric = |name: &str| -> f64 {
        let at = explain
            .find(&format!("{name}="))
            .unwrap_or_else(|| panic!("{name}: {explain}"));
        let rest = &explain[at + name.len() + 1..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let scale = match rest[number.len()..].trim_start().chars().next() {
            Some('K') => 1e3,
            Some('M') => 1e6,
            _ => 1.0,
        };
        number.parse::<f64>().unwrap() * scale
    };
    let (fetched, size) = (metric("bytes_fetched"), metric("object_bytes"));
    assert!(size > 1e6, "{explain}");
    assert!(
        fetched > 0.0 && fetched < size / 20.0,
        "{fetched} of {size}\n{explain}"
    );
    // The server saw ranged GETs, a few of them: not the object over and over.
    let gets: Vec<String> = s3.requests()[before..]
        .iter()
        .filter(|l| l.contains("\"GET /lake/t/t.glyd"))
        .cloned()
        .collect();
    assert!(!gets.is_empty() && gets.len() < 40, "{gets:#?}");
}

#[test]
fn a_killed_upload_leaves_no_object() {
    let s3 = S3Server::start();
    s3.create_bucket("lake");
    let url = "s3://lake/big.glyd";
    let mut child = glyd_on(&s3)
        .args(["-q", "-1", "-o", url, "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Bytes that do not compress until a part (8 MiB) has been uploaded, then a kill before
    // the end.
    let mut stdin = child.stdin.take().unwrap();
    let noise: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let parts = |s3: &S3Server| {
        s3.requests()
            .iter()
            .filter(|l| l.contains("partNumber="))
            .count()
    };
    for _ in 0..64 {
        if parts(&s3) > 0 {
            break;
        }
        stdin.write_all(&noise).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(parts(&s3) > 0, "no part was uploaded: {:#?}", s3.requests());
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let o = glyd_on(&s3).args(["-dc", url]).output().unwrap();
    assert!(!o.status.success(), "a killed upload's object is visible");
    assert!(String::from_utf8_lossy(&o.stderr).contains(url));
}

/// What the flaky proxy does to a connection.
#[derive(Clone, Copy)]
enum Fault {
    /// Answers its request 503 and closes.
    Unavailable,
    /// Reads its request and closes without an answer (a reset, to the client).
    Close,
    /// Reads its request and never answers (a stalled server), holding the connection.
    Stall,
}

/// A proxy to `to` that serves its first connections with `faults` (one each, in order; the
/// last repeated when `forever`) and passes the rest through: how many it faulted.
fn flaky_proxy(to: u16, faults: Vec<Fault>, forever: bool) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let failed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&failed);
    std::thread::spawn(move || {
        for mut client in listener.incoming().flatten() {
            let k = count.load(Ordering::SeqCst);
            let fault = match faults.get(k) {
                Some(f) => Some(*f),
                None if forever => faults.last().copied(),
                None => None,
            };
            if let Some(fault) = fault {
                count.fetch_add(1, Ordering::SeqCst);
                let mut head = [0u8; 4096];
                let _ = client.read(&mut head);
                match fault {
                    Fault::Unavailable => {
                        let _ = client.write_all(
                            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                    Fault::Stall => {
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_secs(120));
                            drop(client);
                        });
                    }
                    Fault::Close => {}
                }
                continue;
            }
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                continue;
            };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c, mut s) = (client, server);
            std::thread::spawn(move || std::io::copy(&mut c2, &mut s2));
            std::thread::spawn(move || std::io::copy(&mut s, &mut c));
        }
    });
    (port, failed)
}

#[test]
fn a_store_failing_some_requests_is_retried_and_one_failing_all_is_named() {
    let (s3, _dir, log) = server_and_log();
    let url = "s3://lake/x.glyd";
    ok(
        glyd_on(&s3)
            .args(["-q", "-r", "-o", url])
            .arg(&log)
            .output()
            .unwrap(),
        "upload",
    );
    // Connections reset, 503s and a stall, then the server: read through them.
    let faults = vec![
        Fault::Close,
        Fault::Unavailable,
        Fault::Stall,
        Fault::Close,
        Fault::Unavailable,
    ];
    let (port, failed) = flaky_proxy(s3.port, faults, false);
    let back = ok(
        glyd_on(&s3)
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .env("GLYD_STORE_TIMEOUT", "1s")
            .args(["-dc", url])
            .output()
            .unwrap(),
        "through 5 failures",
    );
    assert_eq!(failed.load(Ordering::SeqCst), 5);
    assert!(back == std::fs::read(&log).unwrap());
    // A store that fails everything: retried, then an error naming the object and status.
    let (port, _) = flaky_proxy(s3.port, vec![Fault::Unavailable], true);
    let o = glyd_on(&s3)
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .env("GLYD_STORE_RETRIES", "2")
        .args(["-dc", url])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(url) && e.contains("503"), "{e}");
}

/// Starts `glyd sink --http` into `out` with the log in `wal`; its port, once it listens.
fn start_sink(s3: &S3Server, out: &str, wal: &Path) -> (std::process::Child, u16) {
    let mut child = glyd_on(s3)
        .args([
            "sink",
            "--http",
            "127.0.0.1:0",
            "--roll-age",
            "1",
            "--out",
            out,
            "--wal",
        ])
        .arg(wal)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(p) = line.split("listening on 127.0.0.1:").nth(1) {
                let port: String = p.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port.parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the sink listens");
    (child, port)
}

/// POSTs `body` to the sink's `/app`: its status code.
fn post(port: u16, body: &str) -> u16 {
    let o = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--data-binary",
            body,
        ])
        .arg(format!("http://127.0.0.1:{port}/app"))
        .output()
        .expect("curl is installed (.ci/run installs it)");
    String::from_utf8_lossy(&o.stdout).parse().unwrap_or(0)
}

#[test]
fn the_sink_lands_acknowledged_events_on_s3_across_a_kill() {
    let s3 = S3Server::start();
    s3.create_bucket("lake");
    let wal = tempfile::tempdir().unwrap();
    let out = "s3://lake/sink/";
    // A lake on a store without a local log is refused, saying what to give.
    let o = glyd_on(&s3)
        .args(["sink", "--http", "127.0.0.1:0", "--out", out])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--wal"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Acknowledged, then killed before any archive could be written: the log has them.
    let (mut sink, port) = start_sink(&s3, out, wal.path());
    for i in 0..3 {
        let body = format!("{{\"level\":\"INFO\",\"n\":{i}}}\n{{\"level\":\"WARN\",\"n\":{i}}}\n");
        assert_eq!(post(port, &body), 200);
    }
    sink.kill().unwrap();
    sink.wait().unwrap();
    // Restarted: replayed into archives on the store, and more events on top.
    let (sink, port) = start_sink(&s3, out, wal.path());
    assert_eq!(post(port, "{\"level\":\"ERROR\",\"n\":9}\n"), 200);
    // SAFETY: signalling a child process this test started and has not waited for.
    unsafe { libc::kill(sink.id() as i32, libc::SIGTERM) };
    let o = sink.wait_with_output().unwrap();
    assert!(o.status.success());
    let got = ok(
        glyd_on(&s3)
            .args([
                "sql",
                "--format",
                "csv",
                "SELECT level, count(*) AS n, count(DISTINCT n) AS d FROM app GROUP BY level ORDER BY level",
                "s3://lake/sink/app/",
            ])
            .output()
            .unwrap(),
        "sql",
    );
    assert_eq!(
        String::from_utf8_lossy(&got),
        "level,n,d\nERROR,1,1\nINFO,3,3\nWARN,3,3\n"
    );
}
