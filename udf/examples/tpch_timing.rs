//! TPC-H Q1 and Q6 over lineitem as a glyd record archive beside the same rows as a Parquet
//! file (zstd level 3), in one process on the same machine: sizes, and median wall times on 1
//! and 2 threads. The Parquet file is written from the archive's own Arrow batches, so both
//! tables have the same column types and every query's results are compared before timing.
//!
//!     cargo run --release -p glyd-udf --example tpch_timing -- lineitem.csv [RUNS]
//!
//! With `EXPLAIN=1` in the environment it also prints each query's `EXPLAIN ANALYZE` on both
//! tables (per-operator times: where the two sides differ; the archive scan's own metrics say
//! what it decoded and how long decoding took). `ROW_GROUP_MB=N` writes the archive with row
//! groups of N MiB of CSV instead of the default 16.
//!
//! `benches/sql.sh` makes lineitem with tpchgen-cli and commits the output.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::{ArrowWriter, ProjectionMask};
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use glyd_columnar::{sniff, ArchiveReader, RecordWriter, WriteOptions};
use glyd_testkit::tpch;
use glyd_udf::GlydTable;

type Error = Box<dyn std::error::Error>;

/// The allocator `glyd sql` runs on (and DataFusion's own CLI): mimalloc, keeping freed memory
/// for reuse as the glyd CLI configures it. Both tables are read under it. With the system
/// allocator each row group's large buffers go back to the kernel and fault in afresh.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e`, as in `cli/src/main.rs`.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A session on `threads` threads with lineitem from `glyd` or `parquet`.
async fn session(
    threads: usize,
    archive: &Path,
    parquet: Option<&Path>,
) -> Result<SessionContext, Error> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(threads));
    match parquet {
        Some(p) => {
            ctx.register_parquet(
                "lineitem",
                p.to_str().ok_or("path")?,
                ParquetReadOptions::default(),
            )
            .await?
        }
        None => {
            ctx.register_table("lineitem", Arc::new(GlydTable::open(archive)?))?;
        }
    }
    Ok(ctx)
}

async fn query(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, Error> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

/// The columns Q1 reads.
const Q1_COLUMNS: [&str; 7] = [
    "l_returnflag",
    "l_linestatus",
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_shipdate",
];

/// Milliseconds to decode Q1's columns as Arrow on this thread, in batches of 8192 rows: the
/// archive's row groups one by one, and the Parquet file through parquet's own reader.
fn decode_only(archive: &Path, parquet: &Path) -> Result<(f64, f64), Error> {
    let reader = ArchiveReader::open(archive)?;
    let cols = Q1_COLUMNS
        .iter()
        .map(|c| reader.column_index(c))
        .collect::<Result<Vec<_>, _>>()?;
    // As a one-core scan reads them: decoded on this thread, in batches of DataFusion's size.
    let t = Instant::now();
    for g in 0..reader.row_groups().len() {
        for b in reader.read_batches_here(Some(&cols), g, 8192, true)? {
            b?;
        }
    }
    let glyd = t.elapsed().as_secs_f64() * 1e3;
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(parquet)?)?;
    let schema = builder.schema().clone();
    let roots = Q1_COLUMNS
        .iter()
        .map(|c| schema.index_of(c))
        .collect::<Result<Vec<_>, _>>()?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let t = Instant::now();
    for b in builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()?
    {
        b?;
    }
    Ok((glyd, t.elapsed().as_secs_f64() * 1e3))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Error> {
    // SAFETY: sets a plain integer option; mimalloc reads options with atomic loads.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let args: Vec<String> = std::env::args().collect();
    let csv = args
        .get(1)
        .ok_or("usage: tpch_timing lineitem.csv [RUNS]")?;
    let runs: usize = args.get(2).map_or(Ok(5), |r| r.parse())?;
    let dir = tempfile::tempdir()?;
    let src = std::fs::read(csv)?;

    let archive = dir.path().join("lineitem.glyd");
    let mut w = RecordWriter::new(
        Vec::new(),
        sniff(&src, true).ok_or("not CSV")?,
        &WriteOptions {
            row_group_size: std::env::var("ROW_GROUP_MB").map_or(Ok(16), |v| v.parse())? << 20,
            ..WriteOptions::default()
        },
    )?;
    w.write_all(&src)?;
    std::fs::write(&archive, w.finish()?)?;
    let row_groups = glyd_columnar::ArchiveReader::open(&archive)?
        .row_groups()
        .len();

    // Parquet from the archive's batches: the same types, so the same results. Row groups of
    // Parquet's usual size (pyarrow and DataFusion write up to 1 Mi rows).
    let setup = tokio::runtime::Runtime::new()?;
    let batches = setup.block_on(async {
        let ctx = session(2, &archive, None).await?;
        query(&ctx, "select * from lineitem").await
    })?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let parquet = dir.path().join("lineitem.parquet");
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    let mut pw = ArrowWriter::try_new(
        std::fs::File::create(&parquet)?,
        batches[0].schema(),
        Some(props),
    )?;
    for b in &batches {
        pw.write(b)?;
    }
    pw.close()?;
    drop(batches);
    // And that Parquet file made an archive in turn (`glyd -r lineitem.parquet`).
    let from_parquet = dir.path().join("lineitem.parquet.glyd");
    let a = glyd_columnar::parquet::archive(
        std::fs::File::open(&parquet)?,
        Vec::new(),
        &WriteOptions {
            row_group_size: std::env::var("ROW_GROUP_MB").map_or(Ok(16), |v| v.parse())? << 20,
            ..WriteOptions::default()
        },
    )?;
    std::fs::write(&from_parquet, a)?;

    let (glyd_bytes, parquet_bytes, from_parquet_bytes) = (
        std::fs::metadata(&archive)?.len(),
        std::fs::metadata(&parquet)?.len(),
        std::fs::metadata(&from_parquet)?.len(),
    );
    println!(
        "## TPC-H lineitem: {} ({} bytes, {rows} rows)\n",
        Path::new(csv).display(),
        src.len()
    );
    println!("| table | bytes | row groups |");
    println!("|---|---|---|");
    println!("| glyd record archive (default level) | {glyd_bytes} | {row_groups} |");
    println!("| Parquet zstd(3), arrow-rs writer | {parquet_bytes} | - |");
    println!("| glyd archive of that Parquet file (`glyd -r`) | {from_parquet_bytes} | - |");
    println!(
        "\narchive / Parquet bytes: **{:.3}** (from CSV), **{:.3}** (from the Parquet file)\n",
        glyd_bytes as f64 / parquet_bytes as f64,
        from_parquet_bytes as f64 / parquet_bytes as f64
    );
    let (mut g, mut p) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (a, b) = decode_only(&archive, &parquet)?;
        g.push(a);
        p.push(b);
    }
    let (g, p) = (median(g), median(p));
    println!("Decoding Q1's 7 columns to Arrow on one thread, no query (median of {runs}):");
    println!(
        "glyd {g:.1} ms, Parquet (arrow-rs reader) {p:.1} ms, glyd / Parquet **{:.2}**.\n",
        g / p
    );
    println!(
        "Median of {runs} runs, each side on the same runtime, alternating. `threads` is the \
         runtime's workers and the session's partitions, and so the size of the pool glyd's \
         scan decodes on: each side uses that many cores.\n"
    );
    println!("| query | threads | glyd ms | Parquet ms | glyd / Parquet |");
    println!("|---|---|---|---|---|");
    for threads in [1, 2] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?;
        for (name, q) in [("Q1", tpch::Q1), ("Q6", tpch::Q6)] {
            let sql = &tpch::named(q, str::to_string);
            let (g, p) = rt.block_on(async {
                let g_ctx = session(threads, &archive, None).await?;
                let p_ctx = session(threads, &archive, Some(&parquet)).await?;
                let same = pretty_format_batches(&query(&g_ctx, sql).await?)?.to_string()
                    == pretty_format_batches(&query(&p_ctx, sql).await?)?.to_string();
                if !same {
                    return Err(format!("{name}: results differ between glyd and Parquet").into());
                }
                if std::env::var_os("EXPLAIN").is_some() {
                    for ctx in [&g_ctx, &p_ctx] {
                        let b = query(ctx, &format!("explain analyze {sql}")).await?;
                        println!("{}", pretty_format_batches(&b)?);
                    }
                }
                let (mut g, mut p) = (Vec::new(), Vec::new());
                for _ in 0..runs {
                    for (ctx, times) in [(&g_ctx, &mut g), (&p_ctx, &mut p)] {
                        let t = Instant::now();
                        query(ctx, sql).await?;
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                }
                Ok::<_, Error>((median(g), median(p)))
            })?;
            println!("| {name} | {threads} | {g:.1} | {p:.1} | {:.2} |", g / p);
        }
    }
    Ok(())
}
