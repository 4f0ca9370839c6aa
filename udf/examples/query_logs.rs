//! Writes the HDFS sample CSV shipped in `examples/data/` as a record archive, registers it
//! with DataFusion and runs a few queries over it; prints what each scan read.
//!
//!     cargo run -p glyd-udf --example query_logs

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::collect;
use datafusion::prelude::SessionContext;
use glyd_columnar::{sniff, RecordWriter, WriteOptions};
use glyd_udf::{scan_stats, GlydTable};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let csv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log_structured.csv");
    let src = std::fs::read(&csv)?;
    let opts = WriteOptions {
        row_group_size: 32 << 10,
        ..WriteOptions::default()
    };
    let mut w = RecordWriter::new(Vec::new(), sniff(&src, true).ok_or("not records")?, &opts)?;
    w.write_all(&src)?;
    let path = std::env::temp_dir().join("hdfs-example.glyd");
    std::fs::write(&path, w.finish()?)?;

    let ctx = SessionContext::new();
    ctx.register_table("logs", Arc::new(GlydTable::open(&path)?))?;
    for query in [
        "SELECT \"Level\", count(*) AS n FROM logs GROUP BY \"Level\" ORDER BY n DESC",
        "SELECT \"EventId\", count(*) AS n FROM logs GROUP BY \"EventId\" ORDER BY n DESC LIMIT 3",
        "SELECT \"LineId\", \"Content\" FROM logs WHERE \"LineId\" BETWEEN 1000 AND 1002",
    ] {
        println!("{query}");
        // Planned and run as two steps, so that the scan's metrics can be read after the run.
        let plan = ctx.sql(query).await?.create_physical_plan().await?;
        let batches = collect(plan.clone(), ctx.task_ctx()).await?;
        println!("{}", pretty_format_batches(&batches)?);
        let s = scan_stats(&plan);
        println!(
            "read {} of {} row groups, decoded {} of {} archive bytes\n",
            s.row_groups_kept, s.row_groups, s.bytes_decoded, s.archive_bytes
        );
    }
    Ok(())
}
