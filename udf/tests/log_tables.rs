//! Logs as typed tables: every loghub log of the shared corpus gets a `time` column (a
//! timestamp, however the layout spells it) and a `level` wherever the layout has one, named
//! fields where their role is clear, and a byte-exact rebuild; per level, the earliest and
//! latest time and the line count equal what an independent Python parser written from each
//! layout's documentation (`logref.py`) computes from the raw lines. A time range skips the
//! row groups outside it.

use std::path::Path;
use std::process::Command;

use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::prelude::SessionContext;
use glyd_columnar::{detect, Format};
use glyd_udf::GlydTable;

mod common;
use common::{archive, table_text_and_scan};

/// Year assumed by both sides for layouts that spell none.
const YEAR: i16 = 2016;

/// Each log's leading columns and the time's unit.
const EXPECTED: [(&str, &[&str], TimeUnit); 10] = [
    (
        "Android",
        &["time", "pid", "thread", "level"],
        TimeUnit::Millisecond,
    ),
    ("Apache", &["time", "level"], TimeUnit::Second),
    (
        "BGL",
        &["f1", "f2", "f3", "f4", "time", "f6", "f7", "f8", "level"],
        TimeUnit::Microsecond,
    ),
    ("HDFS", &["time", "pid", "level"], TimeUnit::Second),
    // The tokens before a time in mid-line are one field where that codes smaller.
    ("HPC", &["f1", "f2", "time", "f4"], TimeUnit::Second),
    ("Hadoop", &["time", "level"], TimeUnit::Millisecond),
    ("Linux", &["time"], TimeUnit::Second),
    (
        "OpenSSH",
        &["time", "host", "process", "pid"],
        TimeUnit::Second,
    ),
    ("Spark", &["time", "level"], TimeUnit::Second),
    ("Zookeeper", &["time", "f2", "level"], TimeUnit::Millisecond),
];

/// `path` (a log) as a record archive, laid out as detection chooses with [`YEAR`] assumed.
fn log_archive(src: &[u8], row_group_size: usize) -> Vec<u8> {
    let Some(Format::LogLines(d)) = detect(src, src.len() < 1 << 20) else {
        panic!("not detected as log lines");
    };
    archive(src, Format::LogLines(d.with_log_year(YEAR)), row_group_size)
}

/// The one string column of `sql`'s result, row by row.
async fn strings(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let mut out = Vec::new();
    for b in batches {
        let col = datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap();
        let col = col.as_any().downcast_ref::<StringArray>().unwrap();
        out.extend((0..col.len()).map(|i| col.value(i).to_string()));
    }
    out
}

fn reference(path: &Path) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/logref.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .arg(YEAR.to_string())
        .output()
        .expect("python3 runs the reference parser");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn corpus_logs_are_typed_tables_that_agree_with_a_reference_parser() {
    let Some(files) = glyd_testkit::corpus("loghub") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), EXPECTED.len());
    for path in logs {
        let system = path.file_name().unwrap().to_string_lossy();
        let system = system.split('_').next().unwrap().to_string();
        let (_, names, unit) = EXPECTED
            .iter()
            .find(|e| e.0 == system)
            .expect("a known log");
        let src = std::fs::read(path).unwrap();
        let bytes = log_archive(&src, 64 << 10);
        let mut rebuilt = Vec::new();
        glyd_columnar::rebuild(&bytes[..], &mut rebuilt).unwrap();
        assert!(rebuilt == src, "{system}: rebuild differs");

        let file = dir.path().join(format!("{system}.glyd"));
        std::fs::write(&file, &bytes).unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", std::sync::Arc::new(GlydTable::open(&file).unwrap()))
            .unwrap();
        let schema = ctx.table("t").await.unwrap().schema().as_arrow().clone();
        let got: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(&got[..names.len()], *names, "{system}: {got:?}");
        assert_eq!(got.last(), Some(&"message"), "{system}");
        let time = schema.field_with_name("time").unwrap();
        assert_eq!(
            time.data_type(),
            &DataType::Timestamp(*unit, None),
            "{system}"
        );

        let level = match names.contains(&"level") {
            true => "coalesce(level, '')",
            false => "''",
        };
        let us = |f: &str| {
            format!(
                "coalesce(CAST(CAST(arrow_cast({f}(time), 'Timestamp(Microsecond, None)') AS BIGINT) AS VARCHAR), '')"
            )
        };
        let sql = format!(
            "SELECT concat_ws(chr(9), lv, lo, hi, CAST(n AS VARCHAR)) FROM \
             (SELECT {level} AS lv, {} AS lo, {} AS hi, count(*) AS n FROM t GROUP BY 1) \
             ORDER BY lv",
            us("min"),
            us("max")
        );
        assert_eq!(strings(&ctx, &sql).await, reference(path), "{system}");
    }
}

#[tokio::test]
async fn time_ranges_skip_row_groups() {
    // Syslog lines a second apart over most of a day, in row groups of about 16 KiB.
    let mut log = String::new();
    let levels = ["INFO", "WARN", "ERROR", "DEBUG"];
    for i in 0..60_000u32 {
        log.push_str(&format!(
            "2024-03-0{} {:02}:{:02}:{:02}.{:03} {} worker-{}: request {} served in {} ms\n",
            1 + i / 86_400,
            i / 3600 % 24,
            i / 60 % 60,
            i % 60,
            i * 7 % 1000,
            levels[(i % 7 % 4) as usize],
            i % 5,
            i * 13,
            i % 97
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("day.glyd");
    std::fs::write(&file, log_archive(log.as_bytes(), 16 << 10)).unwrap();
    let ctx = SessionContext::new();
    ctx.register_table("logs", std::sync::Arc::new(GlydTable::open(&file).unwrap()))
        .unwrap();
    let (_, all) = table_text_and_scan(&ctx, "SELECT count(*) FROM logs").await;
    assert!(all.row_groups > 50, "{all:?}");
    // 10:00:00 ..= 10:59:59 holds 3600 lines.
    let range =
        "time >= TIMESTAMP '2024-03-01 10:00:00' AND time < TIMESTAMP '2024-03-01 11:00:00'";
    let (got, scan) = table_text_and_scan(
        &ctx,
        &format!("SELECT count(*) AS n FROM logs WHERE {range}"),
    )
    .await;
    assert!(got.contains("| 3600 |"), "{got}");
    assert!(
        scan.row_groups_kept * 10 < all.row_groups,
        "{scan:?} of {all:?}"
    );
    let (got, _) = table_text_and_scan(
        &ctx,
        &format!("SELECT count(*) AS n FROM logs WHERE {range} AND level = 'ERROR'"),
    )
    .await;
    let want = (36_000..39_600u32).filter(|i| i % 7 % 4 == 2).count();
    assert!(got.contains(&format!("| {want} |")), "{got}");
    // EXPLAIN ANALYZE says how many row groups the statistics left to read.
    let explain = common::table_text(
        &ctx,
        &format!("EXPLAIN ANALYZE SELECT count(*) FROM logs WHERE {range}"),
    )
    .await;
    let kept = format!("row_groups={} of {}", scan.row_groups_kept, all.row_groups);
    assert!(explain.contains(&kept), "{kept}: {explain}");
}
