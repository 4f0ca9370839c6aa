//! The log functions over a real log archive (HDFS_2k.log as record mode shreds it): counts
//! by template agree with `glyd_templates`, counts by hour from `log_time` agree with the
//! times loghub's structured CSV of the same lines gives, and the scalar functions give what
//! their docs say.

use std::path::{Path, PathBuf};

use datafusion::prelude::{CsvReadOptions, SessionContext};
use glyd_columnar::{detect, DEFAULT_ROW_GROUP};
use glyd_udf::{register_log_functions, GlydContext, SqlPolicy};

mod common;
use common::{archive, error_text, example, table_text, table_text_and_scan};

/// HDFS_2k.log as a record archive (`logs`, its path returned) and loghub's structured CSV of
/// the same lines (`csv`), with the log functions registered.
async fn hdfs(dir: &Path) -> (SessionContext, PathBuf) {
    let src = std::fs::read(example("HDFS_2k.log")).unwrap();
    let path = dir.join("hdfs.log.glyd");
    let bytes = archive(&src, detect(&src, true).unwrap(), DEFAULT_ROW_GROUP);
    std::fs::write(&path, bytes).unwrap();
    let ctx = SessionContext::new();
    register_log_functions(&ctx, SqlPolicy::trusted());
    ctx.register_glyd("logs", &path).unwrap();
    let csv = example("HDFS_2k.log_structured.csv");
    ctx.register_csv("csv", csv.to_str().unwrap(), CsvReadOptions::new())
        .await
        .unwrap();
    (ctx, path)
}

#[tokio::test]
async fn counts_by_template_match_glyd_templates() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, path) = hdfs(dir.path()).await;
    let by_sql = table_text(
        &ctx,
        "SELECT log_template(message) AS template, count(*) AS lines FROM logs \
         GROUP BY template ORDER BY lines DESC, template",
    )
    .await;
    let listed = table_text(
        &ctx,
        &format!(
            "SELECT template, lines FROM glyd_templates('{}') ORDER BY lines DESC, template",
            path.display()
        ),
    )
    .await;
    assert_eq!(by_sql, listed);
    // HDFS_2k has a few dozen kinds of line, not one per line.
    let kinds = by_sql.lines().count() - 4;
    assert!((5..100).contains(&kinds), "{kinds} templates\n{by_sql}");
    // 311 lines of HDFS_2k are loghub's E10, `PacketResponder <*> for block blk_<*> terminating`.
    assert!(
        by_sql.lines().any(
            |l| l.contains("PacketResponder <*> for block <*> terminating")
                && l.ends_with("| 311   |")
        ),
        "{by_sql}"
    );
    // Each template's example line has that template.
    let mismatched = table_text(
        &ctx,
        &format!(
            "SELECT count(*) AS n FROM glyd_templates('{}') WHERE log_template(example) <> template",
            path.display()
        ),
    )
    .await;
    assert!(mismatched.contains("| 0 |"), "{mismatched}");
}

#[tokio::test]
async fn filters_on_messages_are_judged_on_template_codes() {
    let (Some(log), Some(csv)) = (
        glyd_testkit::corpus_file("loghub/OpenSSH_2k.log"),
        glyd_testkit::corpus_file("loghub/OpenSSH_2k.log_structured.csv"),
    ) else {
        return;
    };
    let src = std::fs::read(log).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ssh.glyd");
    std::fs::write(
        &path,
        archive(&src, detect(&src, true).unwrap(), DEFAULT_ROW_GROUP),
    )
    .unwrap();
    let ctx = SessionContext::new();
    ctx.register_glyd("logs", &path).unwrap();
    ctx.register_csv("csv", csv.to_str().unwrap(), CsvReadOptions::new())
        .await
        .unwrap();
    // `message` (loghub's `Content`) is templated: a filter is settled once per template where
    // the template's text settles it, row by row where a variable decides, and the rows ruled
    // out never reach a batch.
    for (filter, matching) in [
        ("LIKE 'Failed password%'", 518),
        // Past the first hole: the user name decides.
        ("LIKE 'Failed password for invalid user a%'", 48),
        ("LIKE 'Received disconnect from 1%'", 410),
        ("= 'pam_unix(sshd:auth): check pass; user unknown'", 135),
        (
            "IN ('Invalid user webmaster from 173.234.31.186', 'no such line')",
            2,
        ),
        ("LIKE 'no such line%'", 0),
    ] {
        let (got, scan) = table_text_and_scan(
            &ctx,
            &format!(
                "SELECT count(*) AS n, min(to_char(time, '%H:%M:%S')) AS t FROM logs \
                 WHERE message {filter}"
            ),
        )
        .await;
        let want = table_text(
            &ctx,
            &format!(
                "SELECT count(*) AS n, min(CAST(\"Time\" AS VARCHAR)) AS t FROM csv \
                 WHERE \"Content\" {filter}"
            ),
        )
        .await;
        assert_eq!(got, want, "{filter}");
        assert!(got.contains(&format!("| {matching} ")), "{filter}: {got}");
        assert_eq!(
            scan.rows_skipped_on_codes,
            2000 - matching,
            "{filter}: {scan:?}"
        );
    }
}

#[tokio::test]
async fn counts_by_hour_match_the_structured_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = hdfs(dir.path()).await;
    // An HDFS line starts with its date and time (`081109 203615`): the `time` column.
    let from_archive = table_text(
        &ctx,
        "SELECT CAST(date_part('hour', time) AS BIGINT) AS hour, \
         count(*) AS lines FROM logs GROUP BY hour ORDER BY hour",
    )
    .await;
    let from_csv = table_text(
        &ctx,
        "SELECT CAST(\"Time\" / 10000 AS BIGINT) AS hour, count(*) AS lines FROM csv \
         GROUP BY hour ORDER BY hour",
    )
    .await;
    assert_eq!(from_archive, from_csv);
    let unparsed = table_text(&ctx, "SELECT count(*) AS n FROM logs WHERE time IS NULL").await;
    assert!(unparsed.contains("| 0 |"), "{unparsed}");
}

#[tokio::test]
async fn scalar_functions_do_what_their_docs_say() {
    let ctx = SessionContext::new();
    register_log_functions(&ctx, SqlPolicy::trusted());
    let line = "Receiving block blk_-1608999687919862906 src: /10.250.19.102:54106 dest: /10.250.19.102:50010";
    let got = table_text(
        &ctx,
        &format!(
            "SELECT log_template('{line}') AS t, log_var('{line}', 1) AS v1, \
             log_var('{line}', 3) AS v3, log_var('{line}', 4) AS v4, log_var('{line}', 0) AS v0"
        ),
    )
    .await;
    assert!(
        got.contains("| Receiving block <*> src: <*> dest: <*> | blk_-1608999687919862906 | /10.250.19.102:50010 |    |    |"),
        "{got}"
    );
    let got = table_text(
        &ctx,
        "SELECT log_time('Jun 14 15:16:01 combo sshd[19939]: check pass') AS a, \
         log_time('Jun 14 15:16:01 combo', 2005) AS b, \
         log_time('2015-10-18 18:01:47,978 INFO [main]') AS c, \
         log_time('[Sun Dec 04 04:47:44 2005] [error] mod_jk') AS d, \
         log_time('no time here') AS e",
    )
    .await;
    assert!(
        got.contains("| 1970-06-14T15:16:01 | 2005-06-14T15:16:01 | 2015-10-18T18:01:47.978 | 2005-12-04T04:47:44 |   |"),
        "{got}"
    );
}

#[tokio::test]
async fn glyd_templates_errors_name_the_file_and_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, path) = hdfs(dir.path()).await;
    let e = error_text(
        &ctx,
        &format!("SELECT * FROM glyd_templates('{}', 'nope')", path.display()),
    )
    .await;
    assert!(
        e.contains("hdfs.log.glyd") && e.contains("'nope'") && e.contains("message"),
        "{e}"
    );
    let e = error_text(&ctx, "SELECT * FROM glyd_templates(42)").await;
    assert!(e.contains("archive path"), "{e}");
    let missing = dir.path().join("missing.glyd");
    let e = error_text(
        &ctx,
        &format!("SELECT * FROM glyd_templates('{}')", missing.display()),
    )
    .await;
    assert!(e.contains("missing.glyd"), "{e}");
}
