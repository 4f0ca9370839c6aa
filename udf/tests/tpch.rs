//! TPC-H Q1, Q3 and Q6 over record archives give exactly what they give over the same tables
//! as CSV, read by DataFusion's CSV reader with the same column types, and as Parquet written
//! from those; and so do archives made from those Parquet files. The tables are made here (a TPC-H-like generator: the columns and value
//! spellings of `tpchgen-cli`, random values from a fixed seed), small enough for a debug test.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{CsvReadOptions, SessionContext};
use glyd_columnar::{sniff, RecordWriter, WriteOptions};
use glyd_udf::GlydTable;

mod common;
use common::table_text_and_scan;

/// xorshift64*: the same tables on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// `YYYY-MM-DD` of day `z` after 1970-01-01 (the civil-from-days algorithm of Howard
/// Hinnant's date library).
fn date(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn cents(c: u64) -> String {
    format!("{}.{:02}", c / 100, c % 100)
}

/// customer, orders and lineitem as CSV text, with the columns the queries use (and a few
/// more, so projection matters).
fn tables() -> [(&'static str, String, Vec<Field>); 3] {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let segments = [
        "AUTOMOBILE",
        "BUILDING",
        "FURNITURE",
        "HOUSEHOLD",
        "MACHINERY",
    ];
    let mut customer = String::from("c_custkey,c_name,c_mktsegment\n");
    for c in 1..=300 {
        let seg = segments[r.below(5) as usize];
        writeln!(customer, "{c},Customer#{c:09},{seg}").unwrap();
    }
    let mut orders =
        String::from("o_orderkey,o_custkey,o_orderstatus,o_orderdate,o_shippriority\n");
    let mut lineitem = String::from(
        "l_orderkey,l_linenumber,l_quantity,l_extendedprice,l_discount,l_tax,l_returnflag,l_linestatus,l_shipdate,l_comment\n",
    );
    let first = 8035; // 1992-01-01
    for o in 1..=6000u64 {
        let key = o * 4 - r.below(3); // sparse keys, like TPC-H's
        let day = first + r.below(2400) as i64;
        let status = ["O", "F", "P"][r.below(3) as usize];
        writeln!(
            orders,
            "{key},{},{status},{},0",
            1 + r.below(300),
            date(day)
        )
        .unwrap();
        for line in 1..=1 + r.below(7) {
            let qty = 1 + r.below(50);
            let price = qty * (90_000 + r.below(1_000_000)) / 10;
            let ship = day + 1 + r.below(120) as i64;
            let flag = if ship > 9298 {
                "N"
            } else {
                ["R", "A"][r.below(2) as usize]
            };
            let ls = if ship > 9298 { "O" } else { "F" };
            writeln!(
                lineitem,
                "{key},{line},{qty},{},{},{},{flag},{ls},{},\"note {}\"",
                cents(price),
                cents(r.below(11)),
                cents(r.below(9)),
                date(ship),
                r.below(1000)
            )
            .unwrap();
        }
    }
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

const Q1: &str = "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
    sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty, \
    avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order \
    from {lineitem} where l_shipdate <= date '1998-12-01' - interval '90' day \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

const Q3: &str =
    "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, \
    o_shippriority from {customer}, {orders}, {lineitem} where c_mktsegment = 'BUILDING' \
    and c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' \
    and l_shipdate > date '1995-03-15' group by l_orderkey, o_orderdate, o_shippriority \
    order by revenue desc, o_orderdate, l_orderkey limit 10";

const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from {lineitem} \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
    and l_discount between 0.05 and 0.07 and l_quantity < 24";

async fn run(ctx: &SessionContext, q: &str, suffix: &str) -> String {
    let sql = ["customer", "orders", "lineitem"]
        .iter()
        .fold(q.to_string(), |q, t| {
            q.replace(&format!("{{{t}}}"), &format!("{t}_{suffix}"))
        });
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
