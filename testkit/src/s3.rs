//! An S3 API server that is not ours, for tests of lakes on object storage: `moto` in server
//! mode (`pip install 'moto[server]'`; `.ci/run` installs it) on a free port of 127.0.0.1,
//! stopped when dropped. Its log says every request it served.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `moto_server`.
pub struct S3Server {
    child: Child,
    pub port: u16,
    /// The request lines it has logged (`GET /bucket/key HTTP/1.1" 206`), in order.
    log: Arc<Mutex<Vec<String>>>,
}

impl S3Server {
    /// Starts one and waits until it answers.
    pub fn start() -> S3Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("moto_server runs (pip install 'moto[server]'; .ci/run installs it)");
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stderr.take().expect("piped"));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                if line.contains("HTTP/1.1\"") {
                    kept.lock().expect("no panic holds it").push(line);
                }
            }
        });
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "moto_server did not listen on {port} in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        S3Server { child, port, log }
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a client of this server runs with (as the AWS CLI reads it).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Creates bucket `name` (`PUT /name`, which moto takes unsigned).
    pub fn create_bucket(&self, name: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("moto listens");
        use std::io::{Read, Write};
        write!(
            s,
            "PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .expect("request sent");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("an answer");
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "creating bucket {name}: {answer}"
        );
    }

    /// The request lines logged so far.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().expect("no panic holds it").clone()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
