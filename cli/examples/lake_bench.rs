//! Queries over a lake on an S3 API server: the same tables as glyd record archives and as
//! Parquet zstd(3) (written from the archives' own batches, so the types and results are the
//! same), both read by DataFusion from the server through one counting wrapper of the store:
//! requests, bytes fetched and median wall time per query, first run (nothing cached) and
//! warm. Results of the two tables are compared before anything is reported.
//!
//!     AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_ALLOW_HTTP=true ... \
//!       cargo run --release -p glyd-cli --example lake_bench -- lineitem.csv logs.log [RUNS]
//!
//! The bucket `bench` must exist. `benches/lake.sh` starts moto, makes the data and commits
//! the output as docs/benchmarks/lake.md.

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result as StoreResult,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::stream::BoxStream;
use glyd_columnar::{detect, RecordWriter, WriteOptions};
use glyd_connectors::store;
use glyd_testkit::tpch;
use glyd_udf::{listing_table, GlydTable};

type Error = Box<dyn std::error::Error>;

/// The allocator `glyd sql` runs on (as `udf/examples/tpch_timing.rs`): both tables are read
/// under it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e`, as in `cli/src/main.rs`.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A store that counts the GET requests made through it and the bytes they returned.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ObjectStore>,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> StoreResult<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> StoreResult<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &ObjectPath, options: GetOptions) -> StoreResult<GetResult> {
        let head = options.head;
        let got = self.inner.get_opts(location, options).await?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !head {
            self.bytes
                .fetch_add(got.range.end - got.range.start, Ordering::Relaxed);
        }
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, StoreResult<ObjectPath>>,
    ) -> BoxStream<'static, StoreResult<ObjectPath>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&ObjectPath>) -> BoxStream<'static, StoreResult<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&ObjectPath>) -> StoreResult<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: CopyOptions,
    ) -> StoreResult<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// A TPC-H query (testkit's text) over the table `lineitem`.
fn lineitem_query(q: &str) -> String {
    tpch::named(q, str::to_string)
}

const LOG_QUERY: &str = "select count(*) as n, min(time) as first, max(time) as last \
    from logs where level = 'WARN'";

/// `src` as a record archive (default options), and as Parquet zstd(3) from its batches.
async fn both_forms(src: &[u8], dir: &Path, name: &str) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let format = detect(src, true).ok_or("an input glyd does not shred")?;
    let mut w = RecordWriter::new(Vec::new(), format, &WriteOptions::default())?;
    w.write_all(src)?;
    let archive = w.finish()?;
    let local = dir.join(format!("{name}.glyd"));
    std::fs::write(&local, &archive)?;
    let ctx = SessionContext::new();
    ctx.register_table("t", Arc::new(GlydTable::open(&local)?))?;
    let batches = ctx.sql("select * from t").await?.collect().await?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    let mut parquet = Vec::new();
    let mut pw = ArrowWriter::try_new(&mut parquet, batches[0].schema(), Some(props))?;
    for b in &batches {
        pw.write(b)?;
    }
    pw.close()?;
    Ok((archive, parquet))
}

fn upload(url: &str, bytes: &[u8]) -> Result<(), Error> {
    let mut up = store::Upload::start(&store::locate(url)?)?;
    up.write_all(bytes)?;
    up.complete()?;
    Ok(())
}

/// A session reading `s3://bench` through `counting`, with `table` at `url` as glyd or Parquet.
async fn session(
    counting: &Arc<Counting>,
    table: &str,
    url: &str,
    parquet: bool,
) -> Result<SessionContext, Error> {
    let ctx = SessionContext::new();
    let base = ObjectStoreUrl::parse("s3://bench")?;
    ctx.register_object_store(base.as_ref(), Arc::clone(counting) as Arc<dyn ObjectStore>);
    if parquet {
        ctx.register_parquet(table, url, ParquetReadOptions::default())
            .await?;
    } else {
        let t = listing_table(&ctx.state(), &[url.to_string()]).await?;
        ctx.register_table(table, Arc::new(t))?;
    }
    Ok(ctx)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One query over one form: (first-run requests, bytes, ms), warm median ms, the result.
async fn measure(
    counting: &Arc<Counting>,
    table: &str,
    url: &str,
    parquet: bool,
    sql: &str,
    runs: usize,
) -> Result<((u64, u64, f64), f64, String), Error> {
    // Both start cold: glyd's archive indexes and Parquet's footers (per session) uncached.
    glyd_udf::forget_archive_indexes();
    counting.requests.store(0, Ordering::Relaxed);
    counting.bytes.store(0, Ordering::Relaxed);
    let t = Instant::now();
    let ctx = session(counting, table, url, parquet).await?;
    let result: Vec<RecordBatch> = ctx.sql(sql).await?.collect().await?;
    let first = (
        counting.requests.load(Ordering::Relaxed),
        counting.bytes.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64() * 1e3,
    );
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        ctx.sql(sql).await?.collect().await?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok((
        first,
        median(times),
        pretty_format_batches(&result)?.to_string(),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // SAFETY: sets a plain integer option; mimalloc reads options with atomic loads.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: lake_bench lineitem.csv logs.log [RUNS] | --print-query q1|q6|logs";
    if args.get(1).map(String::as_str) == Some("--print-query") {
        let query = match args.get(2).map(String::as_str) {
            Some("q1") => lineitem_query(tpch::Q1),
            Some("q6") => lineitem_query(tpch::Q6),
            Some("logs") => LOG_QUERY.to_string(),
            _ => return Err(usage.into()),
        };
        println!("{query}");
        return Ok(());
    }
    let (lineitem, logs) = (args.get(1).ok_or(usage)?, args.get(2).ok_or(usage)?);
    let runs: usize = args.get(3).map_or(Ok(5), |r| r.parse())?;
    let dir = tempfile::tempdir()?;
    let mut objects = Vec::new();
    for (name, path) in [("lineitem", lineitem), ("logs", logs)] {
        let (archive, parquet) = both_forms(&std::fs::read(path)?, dir.path(), name).await?;
        let (g, p) = (
            format!("s3://bench/{name}.glyd"),
            format!("s3://bench/{name}.parquet"),
        );
        tokio::task::block_in_place(|| -> Result<(), Error> {
            upload(&g, &archive)?;
            upload(&p, &parquet)
        })?;
        objects.push((name, archive.len(), parquet.len()));
    }
    let loc = tokio::task::block_in_place(|| store::locate("s3://bench/"))?;
    let counting = Arc::new(Counting {
        inner: loc.store,
        requests: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    println!("| table | glyd object | Parquet zstd(3) object | glyd / Parquet |");
    println!("|---|---:|---:|---:|");
    for (name, g, p) in &objects {
        println!("| {name} | {g} | {p} | {:.3} |", *g as f64 / *p as f64);
    }
    println!();
    println!(
        "| query | table | first run: requests | bytes fetched | ms | warm ms (median of {runs}) |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for (label, table, sql) in [
        ("TPC-H Q1", "lineitem", lineitem_query(tpch::Q1)),
        ("TPC-H Q6", "lineitem", lineitem_query(tpch::Q6)),
        ("logs: level = 'WARN'", "logs", LOG_QUERY.to_string()),
    ] {
        let mut results = Vec::new();
        for (form, parquet) in [("glyd", false), ("Parquet", true)] {
            let ext = if parquet { "parquet" } else { "glyd" };
            let url = format!("s3://bench/{table}.{ext}");
            let ((requests, bytes, ms), warm, result) =
                measure(&counting, table, &url, parquet, &sql, runs).await?;
            println!("| {label} | {form} | {requests} | {bytes} | {ms:.1} | {warm:.1} |");
            results.push(result);
        }
        if results[0] != results[1] {
            return Err(format!("{label}: results differ:\n{}\n{}", results[0], results[1]).into());
        }
    }
    Ok(())
}
