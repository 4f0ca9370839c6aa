//! Every record of the input is a row of the table. Generated JSON lines whose key sets, key
//! orders, spacing and value types change at random points (before and after the sample the
//! dialect is sniffed from), with broken lines among them; CSV with broken lines; logs of
//! several layouts. For each: the archive rebuilds byte for byte, and `count(*)`, `count(col)`
//! and a `GROUP BY` over it equal the same queries run by DataFusion over the input's good
//! records read by arrow-json or DataFusion's CSV reader, with the broken ones in `_raw`.

use std::io::Cursor;
use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::json::reader::{infer_json_schema, ReaderBuilder};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::prelude::{CsvReadOptions, SessionContext};
use glyd_columnar::{ArchiveReader, Format, RecordWriter, WriteOptions};
use glyd_core::Level;
use glyd_udf::GlydContext;
use proptest::prelude::*;

mod common;
use common::table_text;

/// A small deterministic generator (xorshift), so that proptest shrinks seeds and sizes.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const KEYS: [&str; 8] = [
    "ts", "level", "msg", "user", "code", "trace_id", "dur", "ok",
];
const LEVELS: [&str; 4] = ["INFO", "WARN", "ERROR", "DEBUG"];

/// How one stretch of generated JSON lines is spelled.
struct Stretch {
    /// Keys in the order written (a subset of [`KEYS`]).
    keys: Vec<&'static str>,
    /// Per key: 0 integer, 1 decimal, 2 string, 3 boolean.
    types: Vec<usize>,
    spaced: bool,
}

fn stretch(g: &mut Gen) -> Stretch {
    let mut keys: Vec<&str> = KEYS.iter().copied().filter(|_| g.chance(60)).collect();
    if keys.is_empty() {
        keys.push("msg");
    }
    for i in (1..keys.len()).rev() {
        keys.swap(i, g.below(i + 1));
    }
    let types = keys
        .iter()
        .map(|&k| if k == "level" { 2 } else { g.below(4) })
        .collect();
    Stretch {
        keys,
        types,
        spaced: g.chance(30),
    }
}

fn json_value(g: &mut Gen, key: &str, t: usize, row: usize) -> String {
    if key == "level" {
        return format!("\"{}\"", LEVELS[g.below(4)]);
    }
    match t {
        0 => format!("{}", row as i64 * 7 - 500 + g.below(50) as i64),
        1 => format!("{}.{:02}", g.below(10_000), g.below(100)),
        2 => match g.below(5) {
            0 => format!("\"quote \\\" and \\u00e9 {}\"", g.below(100)),
            _ => format!("\"{key} value {}\"", g.below(300)),
        },
        _ => ["true", "false"][g.below(2)].to_string(),
    }
}

/// A line that is not one JSON object of distinct keys: the shredder keeps it verbatim.
fn broken_json(g: &mut Gen) -> Vec<u8> {
    match g.below(4) {
        0 => b"{\"level\":\"INFO\",\"msg\":\"cut off".to_vec(),
        1 => b"plain text in a JSON stream".to_vec(),
        2 => b"{\"msg\":\"bad \xff\xfe bytes\"}".to_vec(),
        _ => b"{\"level\":\"INFO\",\"level\":\"WARN\"}".to_vec(),
    }
}

/// Generated JSON lines: `lines` records in stretches of different keys, types and spacing,
/// about `broken` percent of them broken. Returns the input, its good lines and how many are
/// broken.
fn json_lines(seed: u64, lines: usize, stretches: usize, broken: u64) -> (Vec<u8>, Vec<u8>, usize) {
    let mut g = Gen(seed | 1);
    let cuts: Vec<usize> = {
        let mut c: Vec<usize> = (1..stretches).map(|_| g.below(lines)).collect();
        c.sort_unstable();
        c
    };
    let mut s = stretch(&mut g);
    let (mut src, mut good, mut bad) = (Vec::new(), Vec::new(), 0);
    for row in 0..lines {
        if cuts.contains(&row) {
            s = stretch(&mut g);
        }
        if g.chance(broken) {
            src.extend_from_slice(&broken_json(&mut g));
            src.push(b'\n');
            bad += 1;
            continue;
        }
        let (colon, comma) = if s.spaced { (": ", ", ") } else { (":", ",") };
        let mut line = String::from("{");
        let mut first = true;
        for (k, &t) in s.keys.iter().zip(&s.types) {
            if g.chance(10) {
                continue; // an optional key, absent
            }
            if !first {
                line.push_str(comma);
            }
            first = false;
            let v = match g.chance(5) {
                true => "null".to_string(),
                false => json_value(&mut g, k, t, row),
            };
            line.push_str(&format!("\"{k}\"{colon}{v}"));
        }
        line.push_str("}\n");
        src.extend_from_slice(line.as_bytes());
        good.extend_from_slice(line.as_bytes());
    }
    (src, good, bad)
}

/// `src` archived as `format` (sniffed from its first `sample` bytes when `None`) with row
/// groups of `row_group` bytes; checks that it rebuilds exactly and returns its path.
fn archived(
    dir: &std::path::Path,
    src: &[u8],
    sample: usize,
    format: Option<Format>,
    row_group: usize,
) -> std::path::PathBuf {
    let format = format.unwrap_or_else(|| {
        let sample = &src[..sample.min(src.len())];
        glyd_columnar::detect(sample, sample.len() == src.len()).expect("sniffs as records")
    });
    let opts = WriteOptions {
        level: Level::Fast,
        threads: 2,
        row_group_size: row_group,
    };
    let mut w = RecordWriter::new(Vec::new(), format, &opts).unwrap();
    // In pieces, as a pipe delivers it.
    for piece in src.chunks(7_919) {
        std::io::Write::write_all(&mut w, piece).unwrap();
    }
    let archive = w.finish().unwrap();
    let mut back = Vec::new();
    ArchiveReader::from_bytes(archive.clone())
        .unwrap()
        .rebuild_to(&mut back)
        .unwrap();
    assert!(back == src, "rebuild differs");
    let path = dir.join("t.glyd");
    std::fs::write(&path, archive).unwrap();
    path
}

/// The one number a `SELECT count...` returns.
async fn number(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let a = batches[0].column(0);
    datafusion::arrow::array::cast::as_primitive_array::<datafusion::arrow::datatypes::Int64Type>(a)
        .value(0)
}

/// Whether table `t` has column `name`.
async fn has_column(ctx: &SessionContext, t: &str, name: &str) -> bool {
    let table = ctx.table(t).await.unwrap();
    table.schema().field_with_unqualified_name(name).is_ok()
}

/// Checks the archive `a` against the reference table `r` (the good records): every record
/// is a row, `broken` of them in `_raw`; each of `columns` counts alike; the `GROUP BY group`
/// counts alike over the good rows.
async fn agree(ctx: &SessionContext, columns: &[String], group: &str, broken: usize) {
    let good = number(ctx, "SELECT count(*) FROM r").await;
    assert_eq!(
        number(ctx, "SELECT count(*) FROM a").await,
        good + broken as i64,
        "every record is a row"
    );
    assert_eq!(has_column(ctx, "a", "_raw").await, broken > 0);
    if broken > 0 {
        assert_eq!(
            number(ctx, "SELECT count(*) FROM a WHERE _raw IS NOT NULL").await,
            broken as i64
        );
    }
    for c in columns {
        let q = format!("SELECT count(\"{c}\") FROM {{}}");
        assert_eq!(
            number(ctx, &q.replace("{}", "a")).await,
            number(ctx, &q.replace("{}", "r")).await,
            "count({c})"
        );
    }
    if columns.iter().any(|c| c == group) {
        let q =
            format!("SELECT \"{group}\" AS g, count(*) AS n FROM {{}} {{}} GROUP BY 1 ORDER BY 1");
        let only_good = if broken > 0 { "WHERE _raw IS NULL" } else { "" };
        let got = table_text(ctx, &q.replacen("{}", "a", 1).replacen("{}", only_good, 1)).await;
        let want = table_text(ctx, &q.replacen("{}", "r", 1).replacen("{}", "", 1)).await;
        assert_eq!(got, want, "GROUP BY {group}");
    }
}

/// The reference for JSON lines: `good` read by arrow-json (schema inferred from every line,
/// values of mixed types read as text).
fn json_reference(good: &[u8]) -> Option<MemTable> {
    if good.is_empty() {
        return None;
    }
    let (schema, _) = infer_json_schema(Cursor::new(good), None).unwrap();
    let schema = Arc::new(schema);
    let batches = ReaderBuilder::new(schema.clone())
        .with_coerce_primitive(true)
        .build(Cursor::new(good))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Some(MemTable::try_new(schema, vec![batches]).unwrap())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// CSV of `lines` records, about `broken` percent of them broken, archived with row groups of
/// `row_group` KiB, against DataFusion's CSV reader over the good ones.
fn csv_with_broken_lines(seed: u64, lines: usize, broken: u64, row_group: usize) {
    let mut g = Gen(seed | 1);
    let mut src = b"id,name,amount,note\n".to_vec();
    let mut good = src.clone();
    let mut bad = 0;
    for i in 0..lines {
        let line: Vec<u8> = if g.chance(broken) {
            bad += 1;
            match g.below(4) {
                0 => format!("{i},\"unclosed,{i},x").into_bytes(),
                1 => format!("{i},too,many,fields,here").into_bytes(),
                2 => format!("{i},short").into_bytes(),
                _ => format!("{i},bad \u{0}\u{1}x,1.00,")
                    .into_bytes()
                    .into_iter()
                    .chain(*b"\xff\xfe")
                    .collect(),
            }
        } else {
            let amount = match g.chance(10) {
                true => String::new(),
                false => format!("{}.{:02}", g.below(5000), g.below(100)),
            };
            let note = match g.below(4) {
                0 => "\"quoted, with comma\"".to_string(),
                1 => format!("note {}", g.below(40)),
                // An empty field: NULL, in a text column as in a typed one.
                2 => String::new(),
                _ => "plain".to_string(),
            };
            format!("{i},user{},{amount},{note}", g.below(9)).into_bytes()
        };
        let row: Vec<u8> = line.into_iter().chain(*b"\n").collect();
        if row.starts_with(format!("{i},user").as_bytes()) {
            good.extend_from_slice(&row);
        }
        src.extend_from_slice(&row);
    }
    let dir = tempfile::tempdir().unwrap();
    // As `glyd -r --format csv` sniffs it (the 90% rule may not hold at 11% broken).
    let dialect = glyd_columnar::sniff_with(&src[..4096.min(src.len())], false, b',').unwrap();
    let path = archived(
        dir.path(),
        &src,
        4096,
        Some(Format::Delimited(dialect)),
        row_group << 10,
    );
    let good_csv = dir.path().join("good.csv");
    std::fs::write(&good_csv, &good).unwrap();
    runtime().block_on(async {
        let ctx = SessionContext::new();
        ctx.register_glyd("a", &path).unwrap();
        ctx.register_csv("r", good_csv.to_str().unwrap(), CsvReadOptions::new())
            .await
            .unwrap();
        let columns: Vec<String> = ["id", "name", "amount", "note"].map(String::from).to_vec();
        agree(&ctx, &columns, "name", bad).await;
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn json_lines_whose_keys_and_types_change_keep_every_row(
        seed in any::<u64>(),
        lines in 50usize..1500,
        stretches in 1usize..6,
        broken in prop_oneof![Just(0u64), 1u64..8],
        sample in 200usize..20_000,
        row_group in 1usize..64,
    ) {
        let (src, good, bad) = json_lines(seed, lines, stretches, broken);
        // The sniffer needs a sample that is mostly JSON objects; broken lines may start it.
        let Some(format) = glyd_columnar::sniff_json_lines(&src[..sample.min(src.len())], false)
            .or_else(|| glyd_columnar::sniff_json_lines(&src, true))
        else {
            // Generated input is at least 90% objects unless very short and unlucky.
            prop_assert!(src.len() < 4096, "generated JSON lines did not sniff as JSON lines");
            return Ok(());
        };
        let Some(reference) = json_reference(&good) else { return Ok(()) };
        let dir = tempfile::tempdir().unwrap();
        let path = archived(dir.path(), &src, sample, Some(Format::JsonLines(format)), row_group << 10);
        runtime().block_on(async {
            let ctx = SessionContext::new();
            ctx.register_glyd("a", &path).unwrap();
            let columns: Vec<String> = reference.schema().fields().iter().map(|f| f.name().clone()).collect();
            ctx.register_table("r", Arc::new(reference)).unwrap();
            // Every key of the input is a column of the archive's table.
            for c in &columns {
                assert!(has_column(&ctx, "a", c).await, "no column {c}");
            }
            agree(&ctx, &columns, "level", bad).await;
        });
    }

    #[test]
    fn csv_with_broken_lines_keeps_every_row(
        seed in any::<u64>(),
        lines in 50usize..1500,
        broken in 1u64..12,
        row_group in 1usize..64,
    ) {
        csv_with_broken_lines(seed, lines, broken, row_group);
    }

    #[test]
    fn logs_of_several_layouts_keep_every_row(
        seed in any::<u64>(),
        lines in 50usize..2000,
        odd in 0u64..40,
        row_group in 1usize..64,
    ) {
        let mut g = Gen(seed | 1);
        let mut src = Vec::new();
        for i in 0..lines {
            let line = match (g.chance(odd), g.below(3)) {
                (false, _) => format!(
                    "2024-01-02 03:{:02}:{:02},{:03} {} [worker-{}] handled request {i} in {}ms",
                    i / 60 % 60, i % 60, g.below(1000), LEVELS[g.below(4)], g.below(8), g.below(900)
                ),
                (true, 0) => format!("\tat com.example.Service.call(Service.java:{})", g.below(500)),
                (true, 1) => format!("[Tue Jan 02 03:04:05 2024] [error] client 10.0.0.{} denied", g.below(255)),
                (true, _) => String::new(),
            };
            src.extend_from_slice(line.as_bytes());
            src.push(b'\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let path = archived(dir.path(), &src, 1 << 20, None, row_group << 10);
        let input: std::collections::HashSet<&[u8]> = src.split(|&b| b == b'\n').collect();
        runtime().block_on(async {
            let ctx = SessionContext::new();
            ctx.register_glyd("a", &path).unwrap();
            let n = number(&ctx, "SELECT count(*) FROM a").await;
            assert_eq!(n, lines as i64, "every line is a row");
            // Each verbatim row's text is a line of the input, whole.
            if has_column(&ctx, "a", "_raw").await {
                let batches = ctx.sql("SELECT _raw FROM a WHERE _raw IS NOT NULL").await.unwrap()
                    .collect().await.unwrap();
                for b in &batches {
                    let texts = b.column(0).as_string_view();
                    for t in texts.iter().flatten() {
                        assert!(input.contains(t.as_bytes()), "_raw {t:?} is no input line");
                    }
                }
            }
        });
    }
}

/// `src` archived at the default level from a one-MiB sample, as `glyd -r` does.
fn archive_as_cli(src: &[u8]) -> Vec<u8> {
    let sample = &src[..src.len().min(1 << 20)];
    let format = glyd_columnar::detect(sample, sample.len() == src.len()).unwrap();
    let mut w = RecordWriter::new(Vec::new(), format, &WriteOptions::default()).unwrap();
    std::io::Write::write_all(&mut w, src).unwrap();
    w.finish().unwrap()
}

#[test]
fn a_key_that_appears_past_the_sample_is_a_column_and_costs_what_the_halves_cost() {
    // 60,000 events; a trace_id from event 40,000 on (several MiB past the sample).
    let mut g = Gen(35);
    let mut lines = Vec::new();
    for i in 0..60_000u64 {
        let mut line = format!(
            "{{\"ts\":\"2024-12-10T{:02}:{:02}:{:02}.{:03}Z\",\"level\":\"{}\",\"msg\":\"worker {} finished batch {} in {}ms\"",
            i / 3600 % 24,
            i / 60 % 60,
            i % 60,
            g.below(1000),
            LEVELS[g.below(4)],
            g.below(16),
            i / 100,
            g.below(5000)
        );
        if i >= 40_000 {
            line += &format!(",\"trace_id\":\"{:016x}{:016x}\"", g.next(), g.next());
        }
        line += "}\n";
        lines.push(line);
    }
    let whole = lines.concat();
    let before = lines[..40_000].concat();
    let after = lines[40_000..].concat();
    let archive = archive_as_cli(whole.as_bytes());
    let apart = archive_as_cli(before.as_bytes()).len() + archive_as_cli(after.as_bytes()).len();
    assert!(
        archive.len() * 10 <= apart * 11,
        "{} bytes, the halves apart {apart}",
        archive.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drift.glyd");
    std::fs::write(&path, &archive).unwrap();
    let mut back = Vec::new();
    ArchiveReader::from_bytes(archive)
        .unwrap()
        .rebuild_to(&mut back)
        .unwrap();
    assert!(back == whole.as_bytes());
    runtime().block_on(async {
        let ctx = SessionContext::new();
        ctx.register_glyd("a", &path).unwrap();
        assert_eq!(number(&ctx, "SELECT count(*) FROM a").await, 60_000);
        assert_eq!(number(&ctx, "SELECT count(trace_id) FROM a").await, 20_000);
        assert!(!has_column(&ctx, "a", "_raw").await);
    });
}
