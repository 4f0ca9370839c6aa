//! Helpers the SQL integration tests share: archives made in memory, query results as the
//! aligned text DataFusion prints, and a failing query's error text.

#![allow(dead_code)] // Each test file uses some of these.

use std::io::Write;
use std::path::{Path, PathBuf};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::collect;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use glyd_columnar::{Format, RecordWriter, WriteOptions};
use glyd_udf::{scan_stats, ScanStats};

/// A file of `examples/data/`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/data")
        .join(name)
}

/// `src` as a record archive of `format` with row groups of about `row_group_size` bytes.
pub fn archive(src: &[u8], format: impl Into<Format>, row_group_size: usize) -> Vec<u8> {
    let opts = WriteOptions {
        row_group_size,
        ..WriteOptions::default()
    };
    let mut w = RecordWriter::new(Vec::new(), format, &opts).unwrap();
    w.write_all(src).unwrap();
    w.finish().unwrap()
}

/// The result of `sql` as an aligned table; panics naming the query if it fails.
pub async fn table_text(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The result of `sql` as an aligned table, and what its archive scans read (from their
/// metrics, after the run).
pub async fn table_text_and_scan(ctx: &SessionContext, sql: &str) -> (String, ScanStats) {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let plan = df
        .create_physical_plan()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let batches = collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let text = pretty_format_batches(&batches).unwrap().to_string();
    (text, scan_stats(&plan))
}

/// The error `sql` fails with, planning or running; panics if it succeeds.
pub async fn error_text(ctx: &SessionContext, sql: &str) -> String {
    let result = match ctx.sql(sql).await {
        Ok(df) => df.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    result.expect_err(sql).to_string()
}

/// Writes table `from` as a Parquet file at `path` (DataFusion's writer, its default zstd
/// compression) and registers that file as table `name`.
pub async fn parquet_copy(ctx: &SessionContext, from: &str, path: &Path, name: &str) {
    let copy = format!(
        "COPY (SELECT * FROM {from}) TO '{}' STORED AS PARQUET",
        path.display()
    );
    table_text(ctx, &copy).await;
    ctx.register_parquet(name, path.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
}
