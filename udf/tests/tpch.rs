//! TPC-H Q1, Q3 and Q6 over record archives give exactly what they give over the same tables
//! as CSV, read by DataFusion's CSV reader with the same column types, and as Parquet written
//! from those; and so do archives made from those Parquet files. The tables come from
//! testkit's TPC-H-like generator.

use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{CsvReadOptions, SessionContext};
use glyd_columnar::{sniff, RecordWriter, WriteOptions};
use glyd_testkit::tpch::{self, Q1, Q3, Q6};
use glyd_udf::GlydTable;

mod common;
use common::table_text_and_scan;

/// customer, orders and lineitem as CSV text (testkit's generator) with their columns' types.
fn tables() -> [(&'static str, String, Vec<Field>); 3] {
    let [(_, customer), (_, orders), (_, lineitem)] = tpch::tables();
    let dec = |n: &str| Field::new(n, DataType::Decimal128(18, 2), true);
    let int = |n: &str| Field::new(n, DataType::Int64, true);
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    let day = |n: &str| Field::new(n, DataType::Date32, true);
    [
        (
            "customer",
            customer,
            vec![int("c_custkey"), text("c_name"), text("c_mktsegment")],
        ),
        (
            "orders",
            orders,
            vec![
                int("o_orderkey"),
                int("o_custkey"),
                text("o_orderstatus"),
                day("o_orderdate"),
                int("o_shippriority"),
            ],
        ),
        (
            "lineitem",
            lineitem,
            vec![
                int("l_orderkey"),
                int("l_linenumber"),
                int("l_quantity"),
                dec("l_extendedprice"),
                dec("l_discount"),
                dec("l_tax"),
                text("l_returnflag"),
                text("l_linestatus"),
                day("l_shipdate"),
                text("l_comment"),
            ],
        ),
    ]
}

async fn run(ctx: &SessionContext, q: &str, suffix: &str) -> String {
    let sql = tpch::named(q, |t| format!("{t}_{suffix}"));
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn tpch_queries_match_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new();
    for (name, csv, fields) in tables() {
        let csv_path = dir.path().join(format!("{name}.csv"));
        std::fs::write(&csv_path, &csv).unwrap();
        let schema = Schema::new(fields);
        let opts = CsvReadOptions::new().schema(&schema);
        ctx.register_csv(format!("{name}_csv"), csv_path.to_str().unwrap(), opts)
            .await
            .unwrap();
        let parquet_path = dir.path().join(format!("{name}.parquet"));
        let (from, to) = (format!("{name}_csv"), format!("{name}_parquet"));
        common::parquet_copy(&ctx, &from, &parquet_path, &to).await;
        let glyd_path = dir.path().join(format!("{name}.glyd"));
        let wopts = WriteOptions {
            row_group_size: 64 << 10,
            ..WriteOptions::default()
        };
        let mut w =
            RecordWriter::new(Vec::new(), sniff(csv.as_bytes(), true).unwrap(), &wopts).unwrap();
        w.write_all(csv.as_bytes()).unwrap();
        std::fs::write(&glyd_path, w.finish().unwrap()).unwrap();
        let table = Arc::new(GlydTable::open(&glyd_path).unwrap());
        // The archive types its columns as the CSV schema says (strings as views, as
        // DataFusion's Parquet scans read them).
        assert_eq!(
            datafusion::catalog::TableProvider::schema(table.as_ref())
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect::<Vec<_>>(),
            glyd_columnar::with_string_views(&schema)
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect::<Vec<_>>(),
            "{name}"
        );
        ctx.register_table(format!("{name}_glyd"), table).unwrap();
        // The Parquet copy made an archive in turn (`glyd -r table.parquet`).
        let from_parquet = dir.path().join(format!("{name}.parquet.glyd"));
        let file = std::fs::File::open(&parquet_path).unwrap();
        let a = glyd_columnar::parquet::archive(file, Vec::new(), &wopts).unwrap();
        std::fs::write(&from_parquet, a).unwrap();
        let table = Arc::new(GlydTable::open(&from_parquet).unwrap());
        ctx.register_table(format!("{name}_pq"), table).unwrap();
    }
    for (name, q) in [("Q1", Q1), ("Q3", Q3), ("Q6", Q6)] {
        let want = run(&ctx, q, "csv").await;
        let got = run(&ctx, q, "glyd").await;
        assert_eq!(got, want, "{name}");
        assert_eq!(got, run(&ctx, q, "parquet").await, "{name} over Parquet");
        assert_eq!(
            got,
            run(&ctx, q, "pq").await,
            "{name} over Parquet as an archive"
        );
        assert!(want.lines().count() > 4, "{name} found rows:\n{want}");
    }
    // Q6 decodes 4 of lineitem's 10 columns, the largest ones.
    let (_, s) = table_text_and_scan(&ctx, &Q6.replace("{lineitem}", "lineitem_glyd")).await;
    assert!(s.bytes_decoded > 0, "{s:?}");
    assert!(s.bytes_decoded * 4 < s.archive_bytes * 3, "{s:?}");
}
