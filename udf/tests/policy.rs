//! SQL that comes from someone else runs under `SqlPolicy::default()`: it may query the
//! tables it was given and nothing more (no DDL or DML, so no `CREATE EXTERNAL TABLE ...
//! LOCATION` reading a file, no `COPY ... TO` writing one, no `SET`, and no table function
//! opening a path). `SqlPolicy::trusted()` allows each of them.

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use glyd_udf::{policy, register_log_functions, GlydContext, SqlPolicy};

mod common;

/// A session over the HDFS example as `logs`, with the log functions under `policy`.
fn session(dir: &std::path::Path, policy: SqlPolicy) -> SessionContext {
    let src = std::fs::read(common::example("HDFS_2k.log_structured.csv")).unwrap();
    let path = dir.join("hdfs.glyd");
    let format = glyd_columnar::sniff(&src, true).unwrap();
    std::fs::write(&path, common::archive(&src, format, 1 << 20)).unwrap();
    let ctx = SessionContext::new();
    ctx.register_glyd("logs", &path).unwrap();
    ctx.enable_glyd_tables();
    register_log_functions(&ctx, policy);
    ctx
}

/// Runs `query` under `p`; its printed result, or the error text.
async fn run(ctx: &SessionContext, query: &str, p: SqlPolicy) -> Result<String, String> {
    let df = policy::sql(ctx, query, p)
        .await
        .map_err(|e| e.to_string())?;
    let batches = df.collect().await.map_err(|e| e.to_string())?;
    Ok(pretty_format_batches(&batches).unwrap().to_string())
}

#[tokio::test]
async fn the_default_policy_queries_the_tables_given_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("secret.csv"), "a\n42\n").unwrap();
    let locked = SqlPolicy::default();
    let ctx = session(d, locked);
    let n = run(&ctx, "SELECT count(*) AS n FROM logs", locked)
        .await
        .unwrap();
    assert!(n.contains("2000"), "{n}");
    let out = d.join("out.csv");
    let refused = [
        (
            format!(
                "CREATE EXTERNAL TABLE s STORED AS CSV LOCATION '{}'",
                d.join("secret.csv").display()
            ),
            "DDL not supported",
        ),
        (
            format!(
                "CREATE EXTERNAL TABLE g STORED AS GLYD LOCATION '{}'",
                d.join("hdfs.glyd").display()
            ),
            "DDL not supported",
        ),
        (
            format!("COPY (SELECT 1 AS a) TO '{}'", out.display()),
            "DML not supported",
        ),
        ("CREATE VIEW v AS SELECT 1".to_string(), "DDL not supported"),
        ("DROP TABLE logs".to_string(), "DDL not supported"),
        (
            "SET datafusion.execution.batch_size = 1".to_string(),
            "not supported",
        ),
        (
            format!(
                "SELECT * FROM glyd_templates('{}')",
                d.join("hdfs.glyd").display()
            ),
            "no file access",
        ),
    ];
    for (query, want) in &refused {
        let err = run(&ctx, query, locked).await.unwrap_err();
        assert!(err.contains(want), "{query}: {err}");
    }
    assert!(!out.exists());
    // The table is still there and still answers.
    let n = run(&ctx, "SELECT count(*) AS n FROM logs", locked)
        .await
        .unwrap();
    assert!(n.contains("2000"), "{n}");
}

#[tokio::test]
async fn the_trusted_policy_allows_files_and_statements() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("secret.csv"), "a\n42\n").unwrap();
    let trusted = SqlPolicy::trusted();
    let ctx = session(d, trusted);
    let query = format!(
        "CREATE EXTERNAL TABLE s STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
        d.join("secret.csv").display()
    );
    run(&ctx, &query, trusted).await.unwrap();
    assert!(run(&ctx, "SELECT a FROM s", trusted)
        .await
        .unwrap()
        .contains("42"));
    let out = d.join("out.csv");
    run(
        &ctx,
        &format!("COPY (SELECT 1 AS a) TO '{}'", out.display()),
        trusted,
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a\n1\n");
    let templates = format!(
        "SELECT count(*) AS n FROM glyd_templates('{}')",
        d.join("hdfs.glyd").display()
    );
    run(&ctx, &templates, trusted).await.unwrap();
    run(&ctx, "SET datafusion.execution.batch_size = 1", trusted)
        .await
        .unwrap();
}
