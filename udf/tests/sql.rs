//! Queries over record archives give what the same queries give over the source CSV (read by
//! DataFusion's own CSV reader), and selective filters read only the row groups they need.

use std::path::{Path, PathBuf};

use datafusion::prelude::{CsvReadOptions, SessionContext};
use glyd_columnar::{sniff, Format};
use glyd_udf::{register_glyd_tables, GlydContext, GlydTable};

mod common;
use common::{table_text, table_text_and_scan};

fn hdfs_csv() -> PathBuf {
    common::example("HDFS_2k.log_structured.csv")
}

/// Writes `src` as a record archive of `format` with row groups of `row_group_size` bytes.
fn archive(src: &[u8], format: Format, row_group_size: usize, out: &Path) {
    std::fs::write(out, common::archive(src, format, row_group_size)).unwrap();
}

/// The HDFS CSV as `csv` (DataFusion's reader), as `pq` (Parquet written from it) and as
/// `logs` (a record archive of row groups of about 16 KiB); returns the table provider's
/// handle too.
async fn hdfs(dir: &Path) -> (SessionContext, std::sync::Arc<GlydTable>) {
    let src = std::fs::read(hdfs_csv()).unwrap();
    let path = dir.join("hdfs.csv.glyd");
    archive(&src, sniff(&src, true).unwrap().into(), 16 << 10, &path);
    let ctx = SessionContext::new();
    ctx.register_csv("csv", hdfs_csv().to_str().unwrap(), CsvReadOptions::new())
        .await
        .unwrap();
    common::parquet_copy(&ctx, "csv", &dir.join("hdfs.parquet"), "pq").await;
    let table = std::sync::Arc::new(GlydTable::open(&path).unwrap());
    ctx.register_table("logs", table.clone()).unwrap();
    (ctx, table)
}

#[tokio::test]
async fn log_queries_match_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = hdfs(dir.path()).await;
    for query in [
        "SELECT \"Level\", count(*) AS n FROM {t} GROUP BY \"Level\" ORDER BY \"Level\"",
        "SELECT \"EventId\", count(*) AS n FROM {t} GROUP BY \"EventId\" ORDER BY n DESC, \"EventId\" LIMIT 5",
        "SELECT count(*) AS n FROM {t} WHERE \"Content\" LIKE 'Receiving block%'",
        // HHMMSS: text in the archive (some have leading zeros), integers to CSV's inference.
        "SELECT CAST(\"Time\" AS BIGINT) / 10000 AS hour, count(*) AS n FROM {t} GROUP BY hour ORDER BY hour",
        "SELECT \"LineId\", \"Pid\", \"Component\" FROM {t} WHERE \"Pid\" > 30000 ORDER BY \"LineId\" LIMIT 7",
        "SELECT \"Component\", count(*) AS n, min(\"LineId\") AS first FROM {t} GROUP BY \"Component\" ORDER BY n DESC, \"Component\"",
        "SELECT count(*) AS n, max(\"LineId\") AS last FROM {t}",
        "SELECT \"LineId\", \"Content\" FROM {t} ORDER BY length(\"Content\") DESC, \"LineId\" LIMIT 3",
    ] {
        let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
        let got = table_text(&ctx, &query.replace("{t}", "logs")).await;
        assert_eq!(got, want, "{query}");
        let parquet = table_text(&ctx, &query.replace("{t}", "pq")).await;
        assert_eq!(got, parquet, "{query} over Parquet");
    }
}

#[tokio::test]
async fn selective_filters_skip_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = hdfs(dir.path()).await;
    let query = "SELECT \"LineId\", \"Level\" FROM {t} WHERE \"LineId\" BETWEEN 1500 AND 1510 ORDER BY \"LineId\"";
    let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
    let (got, scan) = table_text_and_scan(&ctx, &query.replace("{t}", "logs")).await;
    assert_eq!(got, want);
    assert!(scan.row_groups > 20, "{scan:?}");
    assert!(scan.row_groups_kept <= 2, "{scan:?}");
    assert!(scan.bytes_decoded > 0, "{scan:?}");
    assert!(scan.bytes_decoded * 20 < scan.archive_bytes, "{scan:?}");

    // A text prefix and an equality prune too; an impossible range reads nothing.
    let query = "SELECT count(*) FROM {t} WHERE \"EventId\" = 'E5' AND \"LineId\" < 50";
    let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
    let (got, scan) = table_text_and_scan(&ctx, &query.replace("{t}", "logs")).await;
    assert_eq!(got, want);
    assert!(scan.row_groups_kept <= 1, "{scan:?}");
    let (_, scan) =
        table_text_and_scan(&ctx, "SELECT count(*) FROM logs WHERE \"LineId\" > 5000").await;
    assert_eq!(
        (scan.row_groups_kept, scan.bytes_decoded),
        (0, 0),
        "{scan:?}"
    );
}

/// The bar, read from the scan's metrics: a filter that matches under 1% of the row
/// groups decodes under 5% of the archive's bytes.
#[tokio::test]
async fn a_selective_query_decodes_under_5_percent_of_the_archive() {
    let mut csv = String::from("id,level,message\n");
    let rows = 200_000;
    for i in 0..rows {
        let level = ["INFO", "WARN", "ERROR"][(i * 7 % 10 / 4) as usize];
        csv.push_str(&format!(
            "{i},{level},request {} took {} ms\n",
            i * 31 % 977,
            i % 89
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.glyd");
    archive(
        csv.as_bytes(),
        sniff(csv.as_bytes(), true).unwrap().into(),
        16 << 10,
        &path,
    );
    let ctx = SessionContext::new();
    ctx.register_glyd("events", &path).unwrap();
    let (got, scan) = table_text_and_scan(
        &ctx,
        "SELECT id, message FROM events WHERE id BETWEEN 123456 AND 123460 ORDER BY id",
    )
    .await;
    for i in 123456..=123460 {
        let line = format!("| {i:<6} | request {} took {} ms", i * 31 % 977, i % 89);
        assert!(got.contains(&line), "{line} missing:\n{got}");
    }
    assert_eq!(got.lines().count(), 5 + 4, "{got}");
    assert!(scan.row_groups > 200, "{scan:?}");
    assert!(scan.row_groups_kept * 100 < scan.row_groups, "{scan:?}");
    assert!(scan.bytes_decoded > 0, "{scan:?}");
    assert!(scan.bytes_decoded * 20 < scan.archive_bytes, "{scan:?}");
}

#[tokio::test]
async fn explain_analyze_shows_what_the_scan_read() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = hdfs(dir.path()).await;
    let plan = table_text(
        &ctx,
        "EXPLAIN ANALYZE SELECT count(*) FROM logs WHERE \"LineId\" BETWEEN 10 AND 20",
    )
    .await;
    assert!(
        plan.contains("GlydScanExec: files=1, row_groups=1 of "),
        "{plan}"
    );
    for metric in [
        "bytes_decoded=",
        "archive_bytes=",
        "row_groups_kept=1",
        "decode_time=",
    ] {
        assert!(plan.contains(metric), "{metric} missing:\n{plan}");
    }
}

#[tokio::test]
async fn a_limit_stops_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = hdfs(dir.path()).await;
    let (all, whole) = table_text_and_scan(&ctx, "SELECT \"Content\" FROM logs").await;
    let (some, limited) = table_text_and_scan(&ctx, "SELECT \"Content\" FROM logs LIMIT 3").await;
    assert_eq!(some.lines().count(), 3 + 4, "{some}");
    let first = some.lines().nth(3).unwrap().trim_matches(['|', ' ']);
    assert!(all.contains(first), "{first}");
    assert!(
        limited.bytes_decoded * 10 < whole.bytes_decoded,
        "{limited:?} vs {whole:?}"
    );
}

#[tokio::test]
async fn dictionaries_prune_what_min_and_max_cannot() {
    // Every row group holds kinds `alpha` and `gamma`; only the last holds `beta`, which lies
    // between them, so statistics keep every row group and dictionaries keep one.
    let mut csv = String::from("id,kind,note\n");
    let rows = 20_000;
    for i in 0..rows {
        let kind = match i % 2 {
            _ if i == rows - 3 => "beta",
            0 => "alpha",
            _ => "gamma",
        };
        csv.push_str(&format!("{i},{kind},n{}\n", i % 7));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.glyd");
    archive(
        csv.as_bytes(),
        sniff(csv.as_bytes(), true).unwrap().into(),
        16 << 10,
        &path,
    );
    let table = std::sync::Arc::new(GlydTable::open(&path).unwrap());
    let ctx = SessionContext::new();
    ctx.register_table("k", table).unwrap();
    let groups = table_text_and_scan(&ctx, "SELECT count(*) FROM k")
        .await
        .1
        .row_groups;
    assert!(groups > 5, "{groups} row groups");
    for (query, count) in [
        ("SELECT count(*) AS n FROM k WHERE kind = 'beta'", 1),
        ("SELECT count(*) AS n FROM k WHERE kind LIKE 'bet%'", 1),
        (
            "SELECT count(*) AS n FROM k WHERE kind IN ('beta', 'delta')",
            1,
        ),
        ("SELECT count(*) AS n FROM k WHERE kind = 'delta'", 0),
    ] {
        let (got, scan) = table_text_and_scan(&ctx, query).await;
        assert!(got.contains(&format!("| {count} |")), "{query}: {got}");
        assert_eq!(scan.row_groups_kept, count, "{query}: {scan:?}");
    }
    // Values every row group holds keep them all.
    let (_, scan) = table_text_and_scan(
        &ctx,
        "SELECT count(*) FROM k WHERE kind IN ('alpha', 'beta')",
    )
    .await;
    assert_eq!(scan.row_groups_kept, groups);
}

#[tokio::test]
async fn filters_compare_with_values_as_read() {
    // Values stored with escapes (SQL's doubled quote, JSON's \u00e9) are compared as read:
    // pruning by statistics and dictionaries must not skip the row groups that hold them.
    let dir = tempfile::tempdir().unwrap();
    let (mut sql, mut jsonl) = (String::new(), String::new());
    for i in 0..6000 {
        let (town, name) = match i < 3000 {
            true => ("O''Town", "caf\\u00e9"),
            false => ("Bree", "zed"),
        };
        sql.push_str(&format!(
            "INSERT INTO public.towns VALUES ({i}, '{town}');\n"
        ));
        jsonl.push_str(&format!("{{\"id\": {i}, \"name\": \"{name}\"}}\n"));
    }
    let ctx = SessionContext::new();
    let path = dir.path().join("towns.glyd");
    archive(sql.as_bytes(), Format::SqlDump, 16 << 10, &path);
    register_glyd_tables(&ctx, "towns", &path).unwrap();
    let path = dir.path().join("j.glyd");
    let f = glyd_columnar::detect(jsonl.as_bytes(), true).unwrap();
    archive(jsonl.as_bytes(), f, 16 << 10, &path);
    ctx.register_glyd("j", &path).unwrap();
    for (query, count) in [
        ("SELECT count(*) AS n FROM towns WHERE c2 = 'O''Town'", 3000),
        (
            "SELECT count(*) AS n FROM towns WHERE c2 LIKE 'O''T%'",
            3000,
        ),
        (
            "SELECT count(*) AS n FROM towns WHERE c2 IN ('O''Town', 'Bag End')",
            3000,
        ),
        (
            "SELECT count(*) AS n FROM towns WHERE c2 >= 'O''' AND c2 < 'P'",
            3000,
        ),
        ("SELECT count(*) AS n FROM j WHERE name = 'café'", 3000),
        (
            "SELECT count(*) AS n FROM j WHERE name > 'cafe' AND name < 'cag'",
            3000,
        ),
    ] {
        let (got, scan) = table_text_and_scan(&ctx, query).await;
        assert!(got.contains(&format!("| {count} ")), "{query}: {got}");
        // The row groups of the other half are skipped.
        assert!(scan.row_groups_kept < scan.row_groups, "{query}: {scan:?}");
    }
}

#[tokio::test]
async fn dictionary_filters_skip_rows_on_codes() {
    // One row group of 20,000 rows: `kind` is a dictionary of three values.
    let mut csv = String::from("id,kind,note\n");
    for i in 0..20_000 {
        let kind = match i % 4 {
            _ if i == 12_345 => "beta",
            0 | 1 => "alpha",
            _ => "gamma",
        };
        csv.push_str(&format!("{i},{kind},n{}\n", i % 7));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.glyd");
    let format = sniff(csv.as_bytes(), true).unwrap().into();
    archive(csv.as_bytes(), format, 16 << 20, &path);
    let csv_path = dir.path().join("kinds.csv");
    std::fs::write(&csv_path, &csv).unwrap();
    let ctx = SessionContext::new();
    ctx.register_glyd("k", &path).unwrap();
    ctx.register_csv("csv", csv_path.to_str().unwrap(), CsvReadOptions::new())
        .await
        .unwrap();
    for (query, skipped) in [
        (
            "SELECT count(*) AS n, min(id) AS lo, max(note) AS m FROM {t} WHERE kind = 'beta'",
            19_999,
        ),
        (
            "SELECT count(*) AS n, sum(id) AS s FROM {t} WHERE kind IN ('beta', 'gamma')",
            10_000 - 1,
        ),
        (
            "SELECT count(*) AS n, sum(id) AS s FROM {t} WHERE kind LIKE 'al%' AND id > 100",
            10_001,
        ),
        // Ruled out by the dictionary before any row is decoded.
        ("SELECT count(*) AS n FROM {t} WHERE kind = 'delta'", 0),
        (
            "SELECT id, kind FROM {t} WHERE kind = 'beta' OR id < 3 ORDER BY id",
            0,
        ),
    ] {
        let (got, scan) = table_text_and_scan(&ctx, &query.replace("{t}", "k")).await;
        let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
        assert_eq!(got, want, "{query}");
        assert_eq!(scan.rows_skipped_on_codes, skipped, "{query}: {scan:?}");
    }
}

#[tokio::test]
async fn sql_dump_tables_register_by_name() {
    let Some(dump) = glyd_testkit::corpus_file("sakila/postgres-sakila-insert-data-using-copy.sql")
    else {
        return;
    };
    let src = std::fs::read(&dump).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sakila.glyd");
    archive(&src, Format::SqlDump, 16 << 20, &path);
    let ctx = SessionContext::new();
    let names = register_glyd_tables(&ctx, "sakila", &path).unwrap();
    assert!(names.contains(&"payment".to_string()), "{names:?}");
    let text = table_text(
        &ctx,
        "SELECT staff_id, count(*) AS n, sum(amount) AS total FROM payment GROUP BY staff_id ORDER BY staff_id",
    )
    .await;
    assert!(text.contains("| 1        | 8057 | 33489.47 |"), "{text}");
    assert!(text.contains("| 2        | 7992 | 33927.04 |"), "{text}");
    // One table per registration: the archive's many tables are named in the error.
    let err = ctx.register_glyd("one", &path).unwrap_err().to_string();
    assert!(err.contains("public.payment"), "{err}");
}

#[tokio::test]
async fn external_tables_over_a_folder_of_archives() {
    // The HDFS CSV cut in two, each half its own archive in one folder.
    let src = std::fs::read(hdfs_csv()).unwrap();
    let d = sniff(&src, true).unwrap();
    let header = d.header.clone().unwrap();
    let body = &src[header.len()..];
    let cut = body[..body.len() / 2]
        .iter()
        .rposition(|&c| c == b'\n')
        .unwrap()
        + 1;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("logs");
    std::fs::create_dir(&folder).unwrap();
    for (i, part) in [&body[..cut], &body[cut..]].into_iter().enumerate() {
        let mut half = header.clone();
        half.extend_from_slice(part);
        archive(
            &half,
            d.clone().into(),
            16 << 10,
            &folder.join(format!("part{i}.glyd")),
        );
    }
    std::fs::write(folder.join("notes.txt"), "not an archive").unwrap();
    let ctx = SessionContext::new();
    ctx.enable_glyd_tables();
    ctx.register_csv("csv", hdfs_csv().to_str().unwrap(), CsvReadOptions::new())
        .await
        .unwrap();
    let create = format!(
        "CREATE EXTERNAL TABLE logs STORED AS GLYD LOCATION '{}'",
        folder.display()
    );
    ctx.sql(&create).await.unwrap().collect().await.unwrap();
    let query = "SELECT \"Level\", count(*) AS n, max(\"LineId\") AS last FROM {t} GROUP BY \"Level\" ORDER BY \"Level\"";
    let want = table_text(&ctx, &query.replace("{t}", "csv")).await;
    let got = table_text(&ctx, &query.replace("{t}", "logs")).await;
    assert_eq!(got, want);
    // Archives that disagree on columns merge by name: each lacks the other's columns.
    archive(
        b"a,b\n1,2\n3,4\n",
        sniff(b"a,b\n1,2\n3,4\n", true).unwrap().into(),
        16 << 10,
        &folder.join("zz.glyd"),
    );
    let table = GlydTable::open(&folder).unwrap();
    ctx.register_table("merged", std::sync::Arc::new(table))
        .unwrap();
    let got = table_text(
        &ctx,
        "SELECT count(*) AS n, count(a) AS a, count(\"Level\") AS level FROM merged",
    )
    .await;
    assert!(got.contains("| 2002 | 2 | 2000  |"), "{got}");
}
