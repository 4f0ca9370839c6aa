//! Lakes queried on a Ballista cluster: a `glyd cluster scheduler` and two `glyd cluster
//! executor` processes, archives on a real S3 API server (moto), and `glyd sql --cluster`
//! answering exactly as `glyd sql` does on one machine: TPC-H Q1, Q3 and Q6 (which
//! `udf/tests/tpch.rs` checks against CSV and Parquet of the same tables), and log queries
//! (aggregates, a filter pruned by level, a time range, glyd's log functions, a join with a
//! shuffle between the executors).

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use glyd_testkit::s3::S3Server;
use glyd_testkit::tpch;

#[allow(dead_code)]
mod common;
use common::glyd;

/// A port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on `port` (or fails after 60 s, saying what).
fn wait_for(port: u16, what: &str, child: &mut Child) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what} exited ({status}) before listening on {port}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} never listened on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Child processes killed when the test ends, pass or fail.
struct Cluster {
    children: Vec<Child>,
    scheduler: u16,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scheduler and `executors` executors, each with the store's environment.
fn start_cluster(s3: &S3Server, executors: usize, work: &Path) -> Cluster {
    let scheduler = free_port();
    let mut cluster = Cluster {
        children: Vec::new(),
        scheduler,
    };
    let mut child = glyd()
        .envs(s3.env())
        .args(["cluster", "scheduler", "--bind"])
        .arg(format!("127.0.0.1:{scheduler}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(scheduler, "the scheduler", &mut child);
    cluster.children.push(child);
    for e in 0..executors {
        let (flight, grpc) = (free_port(), free_port());
        let dir = work.join(format!("executor-{e}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = glyd()
            .envs(s3.env())
            .args(["cluster", "executor", "--tasks", "2", "--scheduler"])
            .arg(format!("127.0.0.1:{scheduler}"))
            .args(["--flight-port", &flight.to_string()])
            .args(["--grpc-port", &grpc.to_string()])
            .arg("--work-dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(flight, "an executor", &mut child);
        cluster.children.push(child);
    }
    cluster
}

/// The files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `query` over `tables` (`NAME=URL`), on one machine or on the cluster.
fn sql(s3: &S3Server, cluster: Option<&Cluster>, query: &str, tables: &[&str]) -> String {
    let mut c = glyd();
    c.envs(s3.env()).args(["sql", "--format", "csv"]);
    if let Some(cl) = cluster {
        c.arg("--cluster")
            .arg(format!("df://127.0.0.1:{}", cl.scheduler));
    }
    c.arg(query);
    for t in tables {
        c.args(["-t", t]);
    }
    ok(c.output().unwrap(), query)
}

#[test]
fn a_cluster_answers_as_one_machine_does() {
    let s3 = S3Server::start();
    s3.create_bucket("lake");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data");
    // Two archives under one prefix (a lake of one log cut in two) and a CSV beside them.
    let log = std::fs::read_to_string(data.join("HDFS_2k.log")).unwrap();
    let lines: Vec<&str> = log.split_inclusive('\n').collect();
    let work = tempfile::tempdir().unwrap();
    for (k, half) in lines.chunks(lines.len() / 2 + 1).enumerate() {
        let part = work.path().join(format!("hdfs-{k}.log"));
        std::fs::write(&part, half.concat()).unwrap();
        ok(
            glyd()
                .envs(s3.env())
                .args(["-q", "-r", "-o", &format!("s3://lake/logs/hdfs-{k}.glyd")])
                .arg(&part)
                .output()
                .unwrap(),
            "-r -o",
        );
    }
    ok(
        glyd()
            .envs(s3.env())
            .args(["-q", "-r", "-o", "s3://lake/csv/hdfs.glyd"])
            .arg(data.join("HDFS_2k.log_structured.csv"))
            .output()
            .unwrap(),
        "-r -o csv",
    );
    // TPC-H's customer, orders and lineitem, each a lake of two archives.
    for (name, csv) in tpch::tables() {
        let (header, rows) = csv.split_once('\n').unwrap();
        let rows: Vec<&str> = rows.split_inclusive('\n').collect();
        for (k, part) in rows.chunks(rows.len() / 2 + 1).enumerate() {
            let path = work.path().join(format!("{name}-{k}.csv"));
            std::fs::write(&path, format!("{header}\n{}", part.concat())).unwrap();
            ok(
                glyd()
                    .envs(s3.env())
                    .args(["-q", "-r", "-o", &format!("s3://lake/tpch/{name}/{k}.glyd")])
                    .arg(&path)
                    .output()
                    .unwrap(),
                "-r -o tpch",
            );
        }
    }
    let cluster = start_cluster(&s3, 2, work.path());
    let tpch_tables = [
        "customer=s3://lake/tpch/customer/",
        "orders=s3://lake/tpch/orders/",
        "lineitem=s3://lake/tpch/lineitem/",
    ];
    for q in [tpch::Q1, tpch::Q3, tpch::Q6] {
        let q = tpch::named(q, str::to_string);
        let here = sql(&s3, None, &q, &tpch_tables);
        assert!(here.lines().count() > 1, "{q}: {here}");
        assert_eq!(sql(&s3, Some(&cluster), &q, &tpch_tables), here, "{q}");
    }
    let tables = ["logs=s3://lake/logs/", "csv=s3://lake/csv/"];
    let queries = [
        "SELECT count(*) AS n, min(time) AS first, max(time) AS last, sum(pid) AS pids FROM logs",
        "SELECT level, count(*) AS n FROM logs GROUP BY level ORDER BY level",
        "SELECT pid, count(*) AS n FROM logs WHERE level = 'WARN' GROUP BY pid ORDER BY n DESC, pid",
        "SELECT count(*) AS n FROM logs \
         WHERE time BETWEEN '2008-11-09T21:00:00' AND '2008-11-10T03:00:00'",
        "SELECT log_template(message) AS t, count(*) AS n FROM logs GROUP BY 1 ORDER BY n DESC, t",
        "SELECT c.\"EventId\", count(*) AS n, sum(h.pid) AS pids FROM csv c JOIN logs h \
         ON h.message = concat(c.\"Component\", ': ', c.\"Content\") AND h.pid = c.\"Pid\" \
         GROUP BY 1 ORDER BY 1",
    ];
    for q in queries {
        let here = sql(&s3, None, q, &tables);
        let there = sql(&s3, Some(&cluster), q, &tables);
        assert!(here.lines().count() > 1, "{q}: {here}");
        assert_eq!(there, here, "{q}");
    }
    // Both executors ran tasks: each wrote shuffle files under its work folder.
    for e in 0..2 {
        let dir = work.path().join(format!("executor-{e}"));
        assert!(
            !walk(&dir).is_empty(),
            "executor {e} ran no stage with a shuffle"
        );
    }
    // The first query's count is every line of the log.
    let first = sql(&s3, Some(&cluster), queries[0], &tables);
    assert!(first
        .lines()
        .nth(1)
        .unwrap()
        .starts_with(&format!("{},", lines.len())));
    // A lake that is not there is an error naming it, and the cluster serves on.
    let o = glyd()
        .envs(s3.env())
        .args([
            "sql",
            "--cluster",
            &format!("df://127.0.0.1:{}", cluster.scheduler),
        ])
        .args(["SELECT count(*) FROM t", "-t", "t=s3://nobucket/x/"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("s3://nobucket/x/"));
    assert_eq!(
        sql(&s3, Some(&cluster), queries[1], &tables),
        sql(&s3, None, queries[1], &tables)
    );
    // No scheduler at the URL: said so, with what to do.
    let o = glyd()
        .envs(s3.env())
        .args([
            "sql",
            "--cluster",
            &format!("df://127.0.0.1:{}", free_port()),
        ])
        .args([queries[1], "-t", tables[0]])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no scheduler answers at df://127.0.0.1:"),
        "{err}"
    );
    assert!(err.contains("glyd cluster scheduler"), "{err}");
}
