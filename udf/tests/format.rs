//! Record archives as a DataFusion `FileFormat`: `CREATE EXTERNAL TABLE ... STORED AS GLYD`
//! over an object-store prefix (DataFusion's in-memory object store, the same trait every
//! store implements) gives what `GlydTable` gives over the same rows; files of different
//! columns merge; a damaged object is an error that names it.

use std::sync::Arc;

use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::memory::InMemory;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::prelude::SessionContext;
use glyd_columnar::sniff;
use glyd_udf::GlydContext;

mod common;
use common::{example, table_text};

fn archive(src: &[u8]) -> Vec<u8> {
    common::archive(src, sniff(src, true).unwrap(), 16 << 10)
}

/// A session with an in-memory object store at `memory://` holding `objects`.
async fn with_store(objects: &[(&str, Vec<u8>)]) -> SessionContext {
    let store = Arc::new(InMemory::new());
    for (name, bytes) in objects {
        store
            .put(&ObjectPath::from(*name), bytes.clone().into())
            .await
            .unwrap();
    }
    let ctx = SessionContext::new();
    ctx.enable_glyd_tables();
    let url = ObjectStoreUrl::parse("memory://").unwrap();
    ctx.register_object_store(url.as_ref(), store as Arc<dyn ObjectStore>);
    ctx
}

/// `CREATE EXTERNAL TABLE name STORED AS GLYD LOCATION 'location'`.
async fn create_table(ctx: &SessionContext, name: &str, location: &str) {
    let sql = format!("CREATE EXTERNAL TABLE {name} STORED AS GLYD LOCATION '{location}'");
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
}

#[tokio::test]
async fn an_object_store_prefix_reads_like_glyd_table() {
    let csv = std::fs::read(example("HDFS_2k.log_structured.csv")).unwrap();
    // The CSV as two archives (each with the header) under one prefix, beside a stray file.
    let text = String::from_utf8(csv.clone()).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    let half = |r: &[&str]| archive(format!("{header}\n{}\n", r.join("\n")).as_bytes());
    let ctx = with_store(&[
        ("logs/a.glyd", half(&rows[..1000])),
        ("logs/b.glyd", half(&rows[1000..])),
        ("logs/notes.txt", b"not an archive".to_vec()),
    ])
    .await;
    create_table(&ctx, "remote", "memory:///logs/").await;
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("hdfs.glyd");
    std::fs::write(&local, archive(&csv)).unwrap();
    ctx.register_glyd("local", &local).unwrap();
    for q in [
        "SELECT \"Level\", count(*) AS n FROM {t} GROUP BY \"Level\" ORDER BY \"Level\"",
        "SELECT \"LineId\", \"Component\" FROM {t} WHERE \"Pid\" > 30000 ORDER BY \"LineId\" LIMIT 5",
        "SELECT count(*) AS n, sum(\"LineId\") AS s, max(\"Content\") AS m FROM {t}",
    ] {
        let remote = table_text(&ctx, &q.replace("{t}", "remote")).await;
        let local = table_text(&ctx, &q.replace("{t}", "local")).await;
        assert_eq!(remote, local, "{q}");
    }
    let n = table_text(&ctx, "SELECT count(*) AS n FROM remote").await;
    assert!(n.contains("| 2000 |"), "{n}");
}

#[tokio::test]
async fn files_of_different_columns_merge() {
    let ctx = with_store(&[
        ("t/a.glyd", archive(b"id,name\n1,x\n3,z\n")),
        ("t/b.glyd", archive(b"id,score\n2,5\n")),
    ])
    .await;
    create_table(&ctx, "t", "memory:///t/").await;
    let got = table_text(&ctx, "SELECT id, name, score FROM t ORDER BY id").await;
    let want = "\
+----+------+-------+
| id | name | score |
+----+------+-------+
| 1  | x    |       |
| 2  |      | 5     |
| 3  | z    |       |
+----+------+-------+";
    assert_eq!(got, want);
}

#[tokio::test]
async fn archives_whose_keys_types_and_verbatim_rows_differ_merge_by_name() {
    let json = |src: &str| {
        // Sniffed from the first two lines, as from a sample.
        let two = src.match_indices('\n').nth(1).unwrap().0 + 1;
        let d = glyd_columnar::sniff_json_lines(&src.as_bytes()[..two], false).unwrap();
        common::archive(
            src.as_bytes(),
            glyd_columnar::Format::JsonLines(d),
            16 << 10,
        )
    };
    let files = [
        ("a.glyd", json("{\"ts\":1,\"msg\":\"start\"}\n{\"ts\":2,\"msg\":\"go\"}\n")),
        // ts is text here: the table reads it as text; trace is new.
        (
            "b.glyd",
            json("{\"ts\":\"t3\",\"msg\":\"x\",\"trace\":\"ab\"}\n{\"ts\":\"t4\",\"msg\":\"y\",\"trace\":\"cd\"}\n"),
        ),
        // One line that is not JSON: a row of its own, in _raw.
        ("c.glyd", json("{\"msg\":\"end\",\"ts\":5}\n{\"msg\":\"z\",\"ts\":6}\nnot json\n")),
    ];
    let ctx = with_store(
        &files
            .iter()
            .map(|(n, b)| (format!("t/{n}"), b.clone()))
            .collect::<Vec<_>>()
            .iter()
            .map(|(n, b)| (n.as_str(), b.clone()))
            .collect::<Vec<_>>(),
    )
    .await;
    create_table(&ctx, "remote", "memory:///t/").await;
    let dir = tempfile::tempdir().unwrap();
    for (n, b) in &files {
        std::fs::write(dir.path().join(n), b).unwrap();
    }
    ctx.register_glyd("local", dir.path()).unwrap();
    let want = "\
+----+-------+-------+----------+
| ts | msg   | trace | _raw     |
+----+-------+-------+----------+
| 1  | start |       |          |
| 2  | go    |       |          |
| 5  | end   |       |          |
| 6  | z     |       |          |
| t3 | x     | ab    |          |
| t4 | y     | cd    |          |
|    |       |       | not json |
+----+-------+-------+----------+";
    for t in ["remote", "local"] {
        let got = table_text(&ctx, &format!("SELECT * FROM {t} ORDER BY ts, _raw")).await;
        assert_eq!(got, want, "{t}");
        let n = table_text(
            &ctx,
            &format!("SELECT count(*) AS n, count(trace) AS traced, count(_raw) AS raw FROM {t}"),
        )
        .await;
        assert!(n.contains("| 7 | 2      | 1   |"), "{t}: {n}");
        // A filter on a column some archives lack reads them too (as NULL there).
        let n = table_text(
            &ctx,
            &format!("SELECT count(*) AS n FROM {t} WHERE trace = 'cd'"),
        )
        .await;
        assert!(n.contains("| 1 |"), "{t}: {n}");
    }
}

#[tokio::test]
async fn a_damaged_object_is_an_error_that_names_it() {
    let mut bytes = archive(b"id,name\n1,x\n2,y\n");
    bytes.truncate(bytes.len() - 7);
    let ctx = with_store(&[("bad/broken.glyd", bytes)]).await;
    let result = match ctx
        .sql("CREATE EXTERNAL TABLE b STORED AS GLYD LOCATION 'memory:///bad/'")
        .await
    {
        Ok(df) => df.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let e = result.unwrap_err().to_string();
    assert!(e.contains("broken.glyd"), "{e}");
}

/// The value of metric `name` in an `EXPLAIN ANALYZE` text (summed over partitions); counts
/// print rounded past a thousand (`732.0 K`), so those are to about three digits.
fn metric(explain: &str, name: &str) -> usize {
    let key = format!("{name}=");
    explain
        .match_indices(&key)
        .map(|(at, _)| {
            let rest = &explain[at + key.len()..];
            let number: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let scale = match rest[number.len()..].trim_start().chars().next() {
                Some('K') => 1e3,
                Some('M') => 1e6,
                Some('B') => 1e9,
                _ => 1.0,
            };
            (number.parse::<f64>().unwrap() * scale) as usize
        })
        .sum()
}

#[tokio::test]
async fn filters_skip_row_groups_by_their_statistics() {
    // Ids rise, days rise, amounts rise: a range on any of them rules out most row groups. One
    // row of kind `beta` lies between `alpha` and `gamma`, which every row group holds: only a
    // dictionary can tell which row group has it.
    let mut csv = String::from("id,kind,amount,day\n");
    let rows = 20_000;
    for i in 0..rows {
        let kind = match i % 2 {
            _ if i == 12_345 => "beta",
            0 => "alpha",
            _ => "gamma",
        };
        let day = 1 + i / 1000;
        csv.push_str(&format!(
            "{i},{kind},{}.{:02},2024-03-{day:02}\n",
            i / 100,
            i % 100
        ));
    }
    let ctx = with_store(&[("t/a.glyd", archive(csv.as_bytes()))]).await;
    create_table(&ctx, "t", "memory:///t/").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, &csv).unwrap();
    ctx.register_csv("csv", path.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    let all = metric(
        &table_text(&ctx, "EXPLAIN ANALYZE SELECT sum(id) FROM t").await,
        "row_groups",
    );
    assert!(all > 20, "{all} row groups");
    for (query, rows) in [
        (
            "SELECT count(*) AS n, min(id) AS lo FROM {t} WHERE id >= 19990",
            10,
        ),
        (
            "SELECT count(*) AS n, max(id) AS hi FROM {t} WHERE id < 15",
            15,
        ),
        (
            "SELECT count(*) AS n, min(id) AS lo FROM {t} WHERE kind = 'beta'",
            1,
        ),
        (
            "SELECT count(*) AS n, min(id) AS lo FROM {t} WHERE kind IN ('beta', 'delta')",
            1,
        ),
        (
            "SELECT count(*) AS n, max(amount) AS hi FROM {t} WHERE amount > 199.5",
            49,
        ),
        (
            "SELECT count(*) AS n, min(id) AS lo FROM {t} WHERE day = DATE '2024-03-07'",
            1000,
        ),
        (
            "SELECT count(*) AS n FROM {t} WHERE id < 15 OR id > 19994",
            20,
        ),
    ] {
        let got = table_text(&ctx, &query.replace("{t}", "t")).await;
        let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
        assert_eq!(got, want, "{query}");
        assert!(got.contains(&format!("| {rows} ")), "{query}: {got}");
        let explain = table_text(
            &ctx,
            &format!("EXPLAIN ANALYZE {}", query.replace("{t}", "t")),
        )
        .await;
        let pruned = metric(&explain, "row_groups_pruned_statistics");
        assert!(
            pruned >= all - 3,
            "{query}: {pruned} of {all} row groups pruned\n{explain}"
        );
    }
    // Filters the statistics cannot judge keep every row group, and still give the rows.
    let query = "SELECT count(*) AS n FROM {t} WHERE id % 1000 = 7";
    let got = table_text(&ctx, &query.replace("{t}", "t")).await;
    assert_eq!(got, table_text(&ctx, &query.replace("{t}", "csv")).await);
    let explain = table_text(
        &ctx,
        &format!("EXPLAIN ANALYZE {}", query.replace("{t}", "t")),
    )
    .await;
    assert_eq!(
        metric(&explain, "row_groups_pruned_statistics"),
        0,
        "{explain}"
    );
}

#[tokio::test]
async fn file_statistics_come_from_chunk_statistics() {
    let ctx = with_store(&[("t/a.glyd", archive(b"id,day\n3,2024-01-05\n1,2024-01-02\n"))]).await;
    create_table(&ctx, "t", "memory:///t/").await;
    table_text(&ctx, "SET datafusion.explain.show_statistics = true").await;
    let plan = table_text(&ctx, "EXPLAIN SELECT id, day FROM t").await;
    assert!(plan.contains("Rows=Exact(2)"), "{plan}");
    assert!(
        plan.contains("Min=Inexact(Int64(1)) Max=Inexact(Int64(3))"),
        "{plan}"
    );
    assert!(plan.contains("Null=Exact(0)"), "{plan}");
}

#[tokio::test]
async fn a_scan_fetches_only_the_chunks_of_the_row_groups_it_keeps() {
    // Values that do not compress away: an object of most of a megabyte, many row groups.
    let mut csv = String::from("id,amount,note,day\n");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..60_000u64 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let day = 1 + i / 2000;
        csv.push_str(&format!(
            "{i},{}.{:02},note {:x},2024-03-{day:02}\n",
            seed >> 44,
            (seed >> 20) % 100,
            seed >> 8
        ));
    }
    let bytes = archive(csv.as_bytes());
    let size = bytes.len();
    assert!(size > 512 << 10, "{size}");
    let ctx = with_store(&[("big/a.glyd", bytes)]).await;
    create_table(&ctx, "t", "memory:///big/").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, &csv).unwrap();
    ctx.register_csv("csv", path.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    // Every query answers as over the CSV; its fetched bytes are counted beside the object's.
    let fetched = |explain: &str| {
        let object = metric(explain, "object_bytes");
        assert!(
            object.abs_diff(size) < size / 500,
            "{object} of {size}\n{explain}"
        );
        assert!(metric(explain, "fetch_requests") > 0, "{explain}");
        metric(explain, "bytes_fetched")
    };
    for (query, most) in [
        // Every row group, all columns: about the object.
        (
            "SELECT count(*) AS n, CAST(sum(amount) AS BIGINT) AS s, max(note) AS m, max(day) AS d FROM {t}",
            size,
        ),
        // One column of every row group: well under half.
        ("SELECT CAST(sum(amount) AS BIGINT) AS s FROM {t}", size / 2),
        // Two columns of the row groups a range keeps: a small part.
        (
            "SELECT CAST(sum(amount) AS BIGINT) AS s FROM {t} WHERE id BETWEEN 30000 AND 31000",
            size / 10,
        ),
        (
            "SELECT count(*) AS n FROM {t} WHERE day = DATE '2024-03-29'",
            size / 10,
        ),
    ] {
        let got = table_text(&ctx, &query.replace("{t}", "t")).await;
        assert_eq!(
            got,
            table_text(&ctx, &query.replace("{t}", "csv")).await,
            "{query}"
        );
        let explain = table_text(
            &ctx,
            &format!("EXPLAIN ANALYZE {}", query.replace("{t}", "t")),
        )
        .await;
        let n = fetched(&explain);
        assert!(
            n > 0 && n <= most,
            "{query}: {n} bytes of {size} fetched\n{explain}"
        );
    }
    // Split into byte ranges over four partitions, the archive reads each row group once.
    for set in [
        "SET datafusion.execution.target_partitions = 4",
        "SET datafusion.optimizer.repartition_file_min_size = 1",
    ] {
        table_text(&ctx, set).await;
    }
    for query in [
        "SELECT count(*) AS n, CAST(sum(amount) AS BIGINT) AS s, max(note) AS m FROM {t}",
        "SELECT id, note FROM {t} WHERE id % 9973 = 1 ORDER BY id",
    ] {
        let got = table_text(&ctx, &query.replace("{t}", "t")).await;
        assert_eq!(
            got,
            table_text(&ctx, &query.replace("{t}", "csv")).await,
            "{query}"
        );
    }
    let explain = table_text(&ctx, "EXPLAIN ANALYZE SELECT max(note) FROM t").await;
    assert!(explain.contains("file_groups={4 groups"), "{explain}");
    let (split, groups) = (fetched(&explain), metric(&explain, "row_groups"));
    table_text(&ctx, "SET datafusion.execution.target_partitions = 1").await;
    let explain = table_text(&ctx, "EXPLAIN ANALYZE SELECT max(note) FROM t").await;
    assert!(groups > 100, "{explain}");
    assert_eq!(metric(&explain, "row_groups"), groups, "{explain}");
    assert!(
        split.abs_diff(fetched(&explain)) < split / 100,
        "{split} split"
    );
    // A LIMIT stops fetching: far less than a scan of the same column.
    let explain = table_text(&ctx, "EXPLAIN ANALYZE SELECT note FROM t LIMIT 3").await;
    let limited = fetched(&explain);
    let explain = table_text(&ctx, "EXPLAIN ANALYZE SELECT max(note) FROM t").await;
    let scanned = fetched(&explain);
    assert!(
        limited * 4 < scanned,
        "LIMIT fetched {limited}, a scan {scanned}"
    );
}
