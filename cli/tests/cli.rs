//! The `glyd` binary end to end: naming, keep/remove, overwrite rules, pipes, -t, -l, -b,
//! exit codes, and that a failed run leaves no output under the final name.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn glyd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glyd"))
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log")
}

fn run(args: &[&str], dir: &Path) -> Output {
    glyd().args(args).current_dir(dir).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A temp dir holding a copy of the sample log as `app.log`.
fn workdir() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let data = std::fs::read(sample()).unwrap();
    std::fs::write(dir.path().join("app.log"), &data).unwrap();
    (dir, data)
}

#[test]
fn compress_then_decompress_restores_the_file() {
    let (dir, data) = workdir();
    let d = dir.path();
    let o = run(&["app.log"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(d.join("app.log").exists(), "inputs are kept by default");
    let packed = std::fs::read(d.join("app.log.glyd")).unwrap();
    assert!(packed.len() < data.len() / 2);
    std::fs::remove_file(d.join("app.log")).unwrap();
    let o = run(&["-d", "app.log.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.join("app.log")).unwrap(), data);
    // No temporary files left behind.
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// `--long`: the log stored twice with 9 MiB of other bytes between (past an 8 MiB `--max`
/// block) packs to about one copy, in one 128 MiB block, and comes back byte for byte; the fast
/// levels refuse it with a message that says what to use.
#[test]
fn long_distance_matching_finds_a_far_copy() {
    let (dir, data) = workdir();
    let d = dir.path();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let filler: Vec<u8> = (0..9 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    let twice = [&data[..], &filler, &data[..]].concat();
    std::fs::write(d.join("twice.bin"), &twice).unwrap();
    let o = run(&["-k", "twice.bin", "-o", "plain.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["-k", "--long", "twice.bin", "-o", "long.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let plain = std::fs::metadata(d.join("plain.glyd")).unwrap().len();
    let long = std::fs::metadata(d.join("long.glyd")).unwrap().len();
    // Noise stays as it is: what `plain` holds beyond it is the two packed copies of the log.
    let copies = plain - filler.len() as u64;
    assert!(
        long + copies / 3 < plain,
        "--long {long} bytes, without {plain}"
    );
    let o = run(&["-l", "long.glyd"], d);
    assert!(String::from_utf8_lossy(&o.stdout).contains("128.0 MiB"));
    let o = run(&["-d", "-c", "long.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout == twice, "--long did not round-trip");
    let o = run(&["--fast", "--long", "-c", "twice.bin"], d);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--max or --ultra"), "{}", stderr(&o));
}

#[test]
fn refuses_to_overwrite_without_force() {
    let (dir, _) = workdir();
    let d = dir.path();
    assert!(run(&["app.log"], d).status.success());
    let o = run(&["app.log"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert!(run(&["-f", "app.log"], d).status.success());
}

#[test]
fn rm_removes_the_input_only_after_success() {
    let (dir, data) = workdir();
    let d = dir.path();
    assert!(run(&["--rm", "-1", "app.log"], d).status.success());
    assert!(!d.join("app.log").exists());
    assert!(run(&["-d", "--rm", "app.log.glyd"], d).status.success());
    assert!(!d.join("app.log.glyd").exists());
    assert_eq!(std::fs::read(d.join("app.log")).unwrap(), data);
}

#[test]
fn pipes_stdin_to_stdout_both_ways() {
    let data = std::fs::read(sample()).unwrap();
    let pipe = |args: &[&str], input: &[u8]| -> Vec<u8> {
        let mut child = glyd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stderr.is_empty(), "quiet in pipes: {}", stderr(&out));
        out.stdout
    };
    for level in ["--fast", "--lz", "--max", "-19"] {
        let packed = pipe(&[level, "-B", "16K", "-T", "2"], &data);
        assert_eq!(pipe(&["-d"], &packed), data);
        assert_eq!(pipe(&["-dc", "-"], &packed), data);
    }
}

#[test]
fn test_mode_accepts_good_and_names_the_bad_block() {
    let (dir, _) = workdir();
    let d = dir.path();
    assert!(run(&["-B", "16K", "app.log"], d).status.success());
    let o = run(&["-t", "app.log.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut bad = std::fs::read(d.join("app.log.glyd")).unwrap();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    std::fs::write(d.join("bad.glyd"), &bad).unwrap();
    let o = run(&["-t", "bad.glyd"], d);
    assert_eq!(o.status.code(), Some(1));
    let msg = stderr(&o);
    assert!(
        msg.contains("bad.glyd") && msg.contains("block") && msg.contains("byte"),
        "{msg}"
    );
}

#[test]
fn failed_decompression_leaves_no_output_file() {
    let (dir, _) = workdir();
    let d = dir.path();
    assert!(run(&["-B", "16K", "app.log"], d).status.success());
    let mut bad = std::fs::read(d.join("app.log.glyd")).unwrap();
    let at = bad.len() - 200;
    bad[at] ^= 0x01;
    std::fs::write(d.join("broken.log.glyd"), &bad).unwrap();
    let o = run(&["-d", "broken.log.glyd"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !d.join("broken.log").exists(),
        "a failed run must not leave a partial output"
    );
}

#[test]
fn list_shows_sizes_level_and_blocks() {
    let (dir, data) = workdir();
    let d = dir.path();
    assert!(run(&["-1", "-B", "64K", "app.log"], d).status.success());
    let o = run(&["-l", "app.log.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let row = out.lines().nth(1).unwrap();
    let blocks = data.len().div_ceil(64 << 10);
    assert!(row.contains(" fast ") && row.contains("64.0 KiB"), "{out}");
    assert_eq!(
        row.split_whitespace().nth(1).unwrap(),
        blocks.to_string(),
        "{out}"
    );
}

#[test]
fn suffix_and_usage_errors() {
    let (dir, _) = workdir();
    let d = dir.path();
    let o = run(&["-d", "app.log"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown suffix"), "{}", stderr(&o));
    let o = run(&["-o", "x", "a", "b"], d);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--no-such-flag"], d);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["missing.log"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing.log"));
}

#[test]
fn output_flag_and_concatenated_stdout() {
    let (dir, data) = workdir();
    let d = dir.path();
    assert!(run(&["-o", "custom.bin", "app.log"], d).status.success());
    assert!(run(&["-d", "-o", "back.log", "custom.bin"], d)
        .status
        .success());
    assert_eq!(std::fs::read(d.join("back.log")).unwrap(), data);
    // Two inputs to stdout make two frames, which decode as their concatenation.
    std::fs::write(d.join("b.log"), b"second file\n").unwrap();
    let o = run(&["-c", "app.log", "b.log"], d);
    assert!(o.status.success());
    std::fs::write(d.join("both.glyd"), &o.stdout).unwrap();
    let o = run(&["-dc", "both.glyd"], d);
    assert_eq!(o.stdout, [data, b"second file\n".to_vec()].concat());
}

#[test]
fn help_is_complete() {
    let o = glyd().arg("--help").output().unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    for flag in [
        "--decompress",
        "--stdout",
        "--output",
        "--keep",
        "--rm",
        "--force",
        "--quiet",
        "--verbose",
        "--threads",
        "--test",
        "--list",
        "--bench",
        "--fast",
        "--lz",
        "--max",
        "--ultra",
        "--records",
        "--format",
        "inspect",
        "cat",
        "Examples:",
        "Exit status",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn bench_reports_every_level_beside_peers() {
    let dir = tempfile::tempdir().unwrap();
    let small: Vec<u8> = std::fs::read(sample()).unwrap()[..50_000].to_vec();
    std::fs::write(dir.path().join("s.log"), small).unwrap();
    let o = run(&["-b", "--bench-runs", "1", "-T", "2", "s.log"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    for name in [
        "glyd --fast",
        "glyd --lz",
        "glyd --max",
        "glyd --ultra",
        "lz4 (C)",
        "lz4_flex",
        "zstd -1",
        "zstd -3",
        "zstd -19",
    ] {
        assert!(out.contains(name), "bench output lacks {name}:\n{out}");
    }
}

fn sample_csv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log_structured.csv")
}

#[test]
fn record_mode_round_trips_and_reads_as_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = std::fs::read(sample_csv()).unwrap();
    std::fs::write(d.join("hdfs.csv"), &data).unwrap();
    let o = run(&["-r", "-v", "hdfs.csv"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("as records, 9 columns"),
        "{}",
        stderr(&o)
    );
    let plain = run(&["-c", "hdfs.csv"], d).stdout;
    let archive = std::fs::read(d.join("hdfs.csv.glyd")).unwrap();
    assert!(
        archive.len() < plain.len(),
        "{} vs plain {}",
        archive.len(),
        plain.len()
    );
    // -d and -t know a record archive by its magic; no flags needed.
    let o = run(&["-t", "hdfs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["-dc", "hdfs.csv.glyd"], d);
    assert!(o.stdout == data, "record archive did not rebuild the input");

    let o = run(&["inspect", "hdfs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "2000 rows",
        "LineId",
        "Int64",
        "dictionary",
        "EventTemplate",
    ] {
        assert!(text.contains(want), "inspect lacks {want}:\n{text}");
    }

    let o = run(&["cat", "--columns", "LineId,Level", "hdfs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2001);
    assert_eq!(lines[0], "LineId,Level");
    assert_eq!(lines[1], "1,INFO");
    let o = run(
        &[
            "cat",
            "--columns",
            "Pid,Content",
            "--format",
            "jsonl",
            "hdfs.csv.glyd",
        ],
        d,
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with(
        "{\"Pid\":148,\"Content\":\"PacketResponder 1 for block blk_38865049064139660 terminating\"}\n"
    ), "{}", &text[..200]);
    let o = run(&["cat", "--columns", "nope", "hdfs.csv.glyd"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no column named \"nope\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn record_mode_in_pipes_and_on_input_that_is_not_records() {
    let (dir, log) = workdir();
    let d = dir.path();
    // A log is coded line by line as templates: smaller than plain.
    let o = run(&["-r", "-v", "app.log"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("as records"), "{}", stderr(&o));
    let plain = run(&["-c", "app.log"], d).stdout;
    let records = std::fs::read(d.join("app.log.glyd")).unwrap();
    assert!(
        records.len() < plain.len(),
        "{} vs plain {}",
        records.len(),
        plain.len()
    );
    assert_eq!(run(&["-dc", "app.log.glyd"], d).stdout, log);
    // Binary input is not records: -r falls back to a plain frame, and says so.
    std::fs::write(d.join("bin"), &plain).unwrap();
    let o = run(&["-r", "-v", "bin"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("not records"), "{}", stderr(&o));
    assert_eq!(run(&["-dc", "bin.glyd"], d).stdout, plain);

    let data = std::fs::read(sample_csv()).unwrap();
    let mut child = glyd()
        .args(["-r", "--format", "csv", "--row-group", "16K"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = data.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&feed).unwrap());
    let packed = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(packed.status.success(), "{}", stderr(&packed));
    let mut child = glyd()
        .arg("-d")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = packed.stdout.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&feed).unwrap());
    let back = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(back.status.success(), "{}", stderr(&back));
    assert!(
        back.stdout == data,
        "piped record archive did not rebuild the input"
    );

    // A damaged archive is an error naming the file.
    let mut bad = packed.stdout;
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    std::fs::write(d.join("bad.csv.glyd"), bad).unwrap();
    let o = run(&["-t", "bad.csv.glyd"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.csv.glyd"), "{}", stderr(&o));
}

#[test]
fn bench_with_records_reports_record_mode_beside_zstd() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        &[
            "-b",
            "-r",
            "--bench-runs",
            "1",
            "-T",
            "2",
            sample_csv().to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    for want in [
        "glyd -r",
        "glyd --max",
        "zstd -19",
        "glyd -r vs zstd -19",
        "as Arrow",
    ] {
        assert!(out.contains(want), "bench -r output lacks {want}:\n{out}");
    }
}

#[test]
fn sql_dump_tables_inspect_and_cat() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(dump) = glyd_testkit::corpus_file("sakila/postgres-sakila-insert-data-using-copy.sql")
    else {
        return;
    };
    let data = std::fs::read(dump).unwrap();
    std::fs::write(d.join("sakila.sql"), &data).unwrap();
    let o = run(&["-r", "-v", "sakila.sql"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("as records, SQL dump"),
        "{}",
        stderr(&o)
    );
    assert_eq!(run(&["-dc", "sakila.sql.glyd"], d).stdout, data);

    let o = run(&["inspect", "sakila.sql.glyd"], d);
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "table public.payment: 16049 rows",
        "PostgreSQL COPY text",
        "payment_date",
        "Timestamp(s)",
        "table statements",
    ] {
        assert!(text.contains(want), "inspect lacks {want}:\n{text}");
    }

    // Many tables: cat needs --table, and says which there are.
    let o = run(&["cat", "sakila.sql.glyd"], d);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("public.actor"), "{}", stderr(&o));
    let o = run(
        &[
            "cat",
            "--table",
            "public.staff",
            "--columns",
            "staff_id,picture,last_update",
            "--format",
            "jsonl",
            "sakila.sql.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "{\"staff_id\":1,\"picture\":null,\"last_update\":\"2006-02-15 04:57:16\"}\n\
         {\"staff_id\":2,\"picture\":null,\"last_update\":\"2006-02-15 04:57:16\"}\n"
    );

    // INSERT statements make tables too, one row per tuple.
    let mut inserts = b"SET x = 1;\n".to_vec();
    for i in 0..300 {
        inserts.extend_from_slice(
            format!(
                "INSERT INTO public.city (city_id, city, note) VALUES ({i}, 'City {}', NULL), ({}, 'O''Town', '2006-02-15 04:45:25');\n",
                i % 7,
                i + 1000
            )
            .as_bytes(),
        );
    }
    std::fs::write(d.join("inserts.sql"), &inserts).unwrap();
    let o = run(&["-r", "--format", "sql", "inserts.sql"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(run(&["-dc", "inserts.sql.glyd"], d).stdout, inserts);
    let text = String::from_utf8(run(&["inspect", "inserts.sql.glyd"], d).stdout).unwrap();
    for want in ["table public.city: 600 rows", "INSERT statements: 3 values"] {
        assert!(text.contains(want), "inspect lacks {want}:\n{text}");
    }
    let o = run(
        &[
            "cat",
            "--table",
            "public.city",
            "--columns",
            "city",
            "inserts.sql.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // Values, not spellings: the doubled quote is one quote.
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        text.lines().take(3).collect::<Vec<_>>(),
        ["city", "City 0", "O'Town"]
    );
}

#[test]
fn log_lines_become_leading_fields_and_a_message() {
    let (dir, data) = workdir();
    let d = dir.path();
    let o = run(&["-r", "-v", "app.log"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("leading fields"), "{}", stderr(&o));
    assert_eq!(run(&["-dc", "app.log.glyd"], d).stdout, data);
    // inspect reads the archive from standard input too.
    let archive = std::fs::read(d.join("app.log.glyd")).unwrap();
    let mut child = glyd()
        .args(["inspect", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&archive).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "leading fields and a message",
        "spelled '%y%m%d %H%M%S'",
        "time ",
        "level ",
        "message ",
        "templates",
    ] {
        assert!(text.contains(want), "inspect lacks {want}:\n{text}");
    }
    // HDFS lines start `081109 203615 148 INFO`: a time, a pid and a level.
    let o = run(&["cat", "--columns", "time,pid,level", "app.log.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        text.lines().nth(1),
        Some("2008-11-09 20:36:15,148,INFO"),
        "{}",
        &text[..100]
    );
}

#[test]
fn log_times_without_a_year_take_the_one_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut log = String::new();
    for i in 0..3000 {
        log.push_str(&format!(
            "Feb {:2} {:02}:{:02}:{:02} web{} sshd[{}]: session {} opened for user u{}\n",
            28 + i / 1500,
            i / 60 % 24,
            i % 60,
            i * 7 % 60,
            i % 3,
            1000 + i % 50,
            i,
            i % 9
        ));
    }
    std::fs::write(d.join("auth.log"), &log).unwrap();
    let o = run(&["-r", "-f", "--log-year", "2016", "auth.log"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["inspect", "auth.log.glyd"], d);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("2016 assumed"), "{text}");
    // 2016 is a leap year: the second half of the lines is on February 29th.
    let o = run(
        &["sql", "SELECT CAST(min(time) AS VARCHAR) AS a, CAST(max(time) AS VARCHAR) AS b, count(*) AS n FROM auth", "auth.log.glyd"],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "a,b,n\n2016-02-28T00:00:00,2016-02-29T23:59:53,3000\n"
    );
    assert_eq!(run(&["-dc", "auth.log.glyd"], d).stdout, log.as_bytes());
}

#[test]
fn sql_queries_record_archives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("hdfs.csv"), std::fs::read(sample_csv()).unwrap()).unwrap();
    assert!(run(&["-r", "hdfs.csv"], d).status.success());
    let query = "SELECT \"Level\", count(*) AS n FROM hdfs GROUP BY \"Level\" ORDER BY n DESC";
    // In a pipe, CSV; an aligned table when asked for.
    let o = run(&["sql", query, "hdfs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "Level,n\nINFO,1920\nWARN,80\n"
    );
    let o = run(&["sql", "--format", "table", query, "hdfs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("| Level | n    |"), "{text}");
    assert!(text.contains("| INFO  | 1920 |"), "{text}");
    // A table shows its first rows and says how many there were.
    let all = "SELECT \"LineId\" FROM hdfs ORDER BY 1";
    let o = run(
        &[
            "sql",
            "--format",
            "table",
            "--max-rows",
            "2",
            all,
            "hdfs.csv.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(
        stderr(&o).contains("2000 rows; the first 2 shown"),
        "{}",
        stderr(&o)
    );
    let o = run(
        &[
            "sql",
            "--format",
            "csv",
            "-t",
            "logs=hdfs.csv.glyd",
            "SELECT max(\"LineId\") AS last FROM logs",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "last\n2000\n");
    // A folder of archives alike is one table.
    std::fs::create_dir(d.join("parts")).unwrap();
    for part in ["a.glyd", "b.glyd"] {
        std::fs::copy(d.join("hdfs.csv.glyd"), d.join("parts").join(part)).unwrap();
    }
    let o = run(
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n FROM parts",
            "parts",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "n\n4000\n");
    // Parquet out, to a pipe.
    let o = run(
        &[
            "sql",
            "--format",
            "parquet",
            "SELECT * FROM hdfs",
            "hdfs.csv.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.starts_with(b"PAR1") && o.stdout.ends_with(b"PAR1"));
    // Errors name what is wrong.
    let o = run(&["sql", "SELECT nope FROM hdfs", "hdfs.csv.glyd"], d);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    let o = run(&["sql", "SELECT 1", "missing.glyd"], d);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("missing.glyd"), "{}", stderr(&o));
}

#[test]
fn sql_reads_statements_from_a_pipe_and_has_log_functions() {
    let (dir, _) = workdir();
    let d = dir.path();
    assert!(run(&["-r", "app.log"], d).status.success());
    // No query: the statements come from standard input, each result in turn.
    let mut child = glyd()
        .args(["sql", "--format", "csv", "app.log.glyd"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"SELECT count(*) AS n FROM app; -- every line\n\
              SELECT count(*) AS m FROM app\n  WHERE log_template(message) LIKE '%PacketResponder <*> for block <*> terminating%';\n",
        )
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "n\n2000\nm\n311\n");
    // The templates table function needs no table.
    let o = run(
        &[
            "sql",
            "--format",
            "csv",
            "SELECT template, lines FROM glyd_templates('app.log.glyd') LIMIT 1",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("template,lines\n"), "{text}");
    // A query naming a table with no archives given says what is missing.
    let o = run(&["sql", "SELECT * FROM app"], d);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no tables were given"),
        "{}",
        stderr(&o)
    );
    // A failing statement in a pipe stops the run and is named.
    let o = glyd()
        .args(["sql", "app.log.glyd"])
        .current_dir(d)
        .stdin(std::fs::File::open(d.join("app.log")).unwrap())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("in statement: 081109"),
        "{}",
        stderr(&o)
    );
}

#[cfg(feature = "sql")]
#[test]
fn cat_writes_parquet_with_the_archives_types() {
    use datafusion::arrow::array::{AsArray, Int64Array};
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("hdfs.csv"), std::fs::read(sample_csv()).unwrap()).unwrap();
    assert!(run(&["-r", "hdfs.csv"], d).status.success());
    let args = [
        "cat",
        "--format",
        "parquet",
        "--columns",
        "LineId,Level",
        "hdfs.csv.glyd",
    ];
    let o = run(&args, d);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(d.join("cat.parquet"), &o.stdout).unwrap();
    let file = std::fs::File::open(d.join("cat.parquet")).unwrap();
    let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["LineId", "Level"]);
    let ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect();
    assert_eq!(ids, (1..=2000).collect::<Vec<i64>>());
    let info = batches
        .iter()
        .flat_map(|b| {
            b.column(1)
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|l| l == "INFO")
        .count();
    assert_eq!(info, 1920);
}

#[test]
fn pack_unpack_and_inspect_a_model() {
    let dir = tempfile::tempdir().unwrap();
    // The real keys and values glyd-gpu's tests use: a safetensors file of bf16 tensors.
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpu/tests/data/minilm-kv.safetensors");
    let original = std::fs::read(&model).unwrap();
    std::fs::write(dir.path().join("kv.safetensors"), &original).unwrap();
    for layout in ["dense", "gpu"] {
        let o = run(
            &[
                "pack",
                "-f",
                "--layout",
                layout,
                "--report",
                "kv.safetensors",
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let report = String::from_utf8_lossy(&o.stdout);
        assert!(
            report.contains("layer.0.key") && report.contains("bits/value"),
            "{report}"
        );
        // Refuses to overwrite without -f.
        let o = run(
            &["unpack", "kv.safetensors.glyd", "kv.safetensors"],
            dir.path(),
        );
        assert!(!o.status.success() && stderr(&o).contains("already exists"));
        let o = run(
            &["unpack", "-f", "kv.safetensors.glyd", "out.safetensors"],
            dir.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            std::fs::read(dir.path().join("out.safetensors")).unwrap() == original,
            "{layout}"
        );
        let o = run(&["inspect", "kv.safetensors.glyd"], dir.path());
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && text.contains("tensor archive") && text.contains("[192, 12, 32]"),
            "{text}"
        );
    }
    // One tensor by name.
    let o = run(
        &[
            "unpack",
            "--tensor",
            "layer.3.value",
            "kv.safetensors.glyd",
            "v3.bin",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::metadata(dir.path().join("v3.bin")).unwrap().len(),
        192 * 12 * 32 * 2
    );
    // glyd -d points at unpack.
    let o = run(&["-d", "-c", "kv.safetensors.glyd"], dir.path());
    assert!(
        !o.status.success() && stderr(&o).contains("glyd unpack"),
        "{}",
        stderr(&o)
    );
}

/// A Parquet file of the parquet-testing corpus, read back as Arrow batches.
fn parquet_batches(path: &Path) -> Vec<datafusion::arrow::record_batch::RecordBatch> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A file of the parquet-testing corpus; `None` (said on stderr) where the corpus is missing and
/// not required.
fn parquet_testing(name: &str) -> Option<PathBuf> {
    glyd_testkit::corpus_file(&format!("parquet-testing/{name}"))
}

#[test]
fn parquet_in_and_out_keeps_the_arrow_data() {
    use datafusion::arrow::compute::concat_batches;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["alltypes_plain.parquet", "nested_structs.rust.parquet"] {
        let Some(src) = parquet_testing(name) else {
            return;
        };
        std::fs::copy(src, d.join(name)).unwrap();
        let o = run(&["-r", "-v", name], d);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("as records, Parquet data"),
            "{}",
            stderr(&o)
        );
        let back = format!("back-{name}");
        let o = run(&["-d", &format!("{name}.glyd"), "-o", &back], d);
        assert!(o.status.success(), "{}", stderr(&o));
        let (want, got) = (
            parquet_batches(&d.join(name)),
            parquet_batches(&d.join(&back)),
        );
        let schema = want[0].schema();
        assert_eq!(got[0].schema().fields(), schema.fields(), "{name}");
        let (want, got) = (
            concat_batches(&schema, &want).unwrap(),
            concat_batches(&schema, &got).unwrap(),
        );
        for i in 0..schema.fields().len() {
            assert_eq!(
                want.column(i).to_data(),
                got.column(i).to_data(),
                "{name} column {i}"
            );
        }
    }
    // SQL reads the archive with the Parquet file's types.
    let o = run(
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n, sum(id) AS ids, max(timestamp_col) AS last FROM alltypes_plain",
            "alltypes_plain.parquet.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "n,ids,last\n8,28,2009-04-01T00:01:00\n"
    );
    // Through pipes: archived from standard input, rebuilt to standard output.
    let src = std::fs::read(d.join("alltypes_plain.parquet")).unwrap();
    let mut child = glyd()
        .args(["-r"])
        .current_dir(d)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&src).unwrap();
    let archived = child.wait_with_output().unwrap();
    assert!(archived.status.success());
    std::fs::write(d.join("piped.glyd"), &archived.stdout).unwrap();
    let o = run(&["-d", "-c", "piped.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(d.join("piped.parquet"), &o.stdout).unwrap();
    assert_eq!(
        parquet_batches(&d.join("piped.parquet")),
        parquet_batches(&d.join("back-alltypes_plain.parquet"))
    );
}

#[test]
fn a_damaged_parquet_file_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(file) = parquet_testing("alltypes_plain.parquet") else {
        return;
    };
    let src = std::fs::read(file).unwrap();
    std::fs::write(d.join("cut.parquet"), &src[..src.len() / 2]).unwrap();
    let o = run(&["-r", "cut.parquet"], d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("cut.parquet") && e.contains("Parquet"), "{e}");
    assert!(
        !d.join("cut.parquet.glyd").exists(),
        "no output under the final name"
    );
    let o = run(&["-r", "--format", "parquet", "-c", "-"], d);
    assert!(!o.status.success());
}

#[test]
fn record_archives_rebuild_alike_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = std::fs::read(sample_csv()).unwrap();
    std::fs::write(d.join("t.csv"), &data).unwrap();
    let o = run(&["-r", "--row-group", "4K", "t.csv"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    for threads in ["1", "2", "0"] {
        let o = run(&["-d", "-c", "-T", threads, "t.csv.glyd"], d);
        assert!(o.status.success(), "-T {threads}: {}", stderr(&o));
        assert!(o.stdout == data, "-T {threads}: rebuilt bytes differ");
    }
}

/// The worked examples of docs/FORMAT.md (Appendix A) decode to what the text says: the spec's
/// hex dumps are checked against the decoder.
#[test]
fn the_format_docs_worked_examples_decode() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/FORMAT.md"))
            .unwrap();
    let appendix = &doc[doc.find("## Appendix A").expect("the appendix")..];
    // Each example's dump: the first fenced block after its heading, `OFFSET  HH HH ...` lines.
    let dump = |heading: &str| -> Vec<u8> {
        let at = appendix.find(heading).expect(heading);
        let block = appendix[at..].split("```").nth(1).expect("a dump");
        block
            .lines()
            .flat_map(|l| l.split_whitespace().skip(1))
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (heading, want) in [("### A.1", &b"glyd\n"[..]), ("### A.2", &b"ab\ncd\n"[..])] {
        let bytes = dump(heading);
        std::fs::write(d.join("x.glyd"), &bytes).unwrap();
        let o = run(&["-dc", "x.glyd"], d);
        assert!(o.status.success(), "{heading}: {}", stderr(&o));
        assert_eq!(o.stdout, want, "{heading}");
    }
}

#[test]
fn verbatim_rows_are_counted_by_inspect_and_sql_says_so_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The sample CSV with every tenth record broken (a field too many).
    let data = std::fs::read_to_string(sample_csv()).unwrap();
    let mut csv = String::new();
    let mut broken = 0;
    for (i, line) in data.lines().enumerate() {
        csv.push_str(line);
        if i > 0 && i % 10 == 0 {
            csv.push_str(",extra");
            broken += 1;
        }
        csv.push('\n');
    }
    std::fs::write(d.join("logs.csv"), &csv).unwrap();
    let o = run(&["-r", "-q", "--format", "csv", "logs.csv"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["inspect", "logs.csv.glyd"], d);
    let text = String::from_utf8_lossy(&o.stdout);
    let records = data.lines().count() - 1;
    assert!(
        text.contains(&format!("verbatim rows: {broken} of {records}")),
        "{text}"
    );
    let o = run(
        &[
            "sql",
            "SELECT count(*) AS n, count(_raw) AS raw FROM logs",
            "logs.csv.glyd",
        ],
        d,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("n,raw\n{records},{broken}\n")
    );
    assert!(
        stderr(&o).contains(&format!("table logs has {broken} verbatim row(s)")),
        "{}",
        stderr(&o)
    );
    // `glyd cat` gives the same rows: the broken records' text in the last column.
    let o = run(&["cat", "--columns", "_raw", "logs.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), records + 1);
    assert_eq!(
        text.lines().filter(|l| l.ends_with(",extra\"")).count(),
        broken
    );
    // A clean table has no _raw column and no note.
    std::fs::write(d.join("clean.csv"), data.as_bytes()).unwrap();
    let o = run(&["-r", "-q", "-f", "clean.csv"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["sql", "SELECT * FROM clean LIMIT 1", "clean.csv.glyd"], d);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("_raw"));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}
