//! The codecs carry glyd tables and scans whole: a logical plan over a [`LakeTable`] and the
//! physical plan of a pruned, projected, byte-range-split scan come back from their bytes
//! equal (as DataFusion displays them) and answer the same; bytes not written by them are
//! errors, never panics.

use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use datafusion::prelude::SessionConfig;
use datafusion::prelude::SessionContext;
use datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
use glyd_columnar::{sniff, RecordWriter, WriteOptions};
use glyd_udf::{
    register_log_functions, GlydLogicalCodec, GlydPhysicalCodec, GlydSource, LakeTable, SqlPolicy,
};

/// A folder holding the repository's HDFS log as two archives of small row groups.
fn lake() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log"),
    )
    .unwrap();
    let cut = log.len() / 2 + memchr(&log[log.len() / 2..]) + 1;
    for (k, part) in [&log[..cut], &log[cut..]].iter().enumerate() {
        let opts = WriteOptions {
            row_group_size: 16 << 10,
            ..WriteOptions::default()
        };
        let mut w = RecordWriter::new(Vec::new(), sniff(part, true).unwrap(), &opts).unwrap();
        w.write_all(part).unwrap();
        std::fs::write(
            dir.path().join(format!("hdfs-{k}.glyd")),
            w.finish().unwrap(),
        )
        .unwrap();
    }
    dir
}

fn memchr(b: &[u8]) -> usize {
    b.iter().position(|&c| c == b'\n').unwrap()
}

async fn context(dir: &std::path::Path) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    register_log_functions(&ctx, SqlPolicy::default());
    let table = LakeTable::open(&ctx.state(), &[format!("{}/", dir.display())])
        .await
        .unwrap();
    ctx.register_table("logs", Arc::new(table)).unwrap();
    ctx
}

/// The row-group pruning predicate of the plan's glyd scan, as text.
fn predicate(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
    if let Some(exec) = plan.downcast_ref::<DataSourceExec>() {
        let conf = exec.data_source().downcast_ref::<FileScanConfig>()?;
        let source = conf.file_source().downcast_ref::<GlydSource>()?;
        return source.filter().map(|p| p.to_string());
    }
    plan.children().into_iter().find_map(predicate)
}

async fn text(ctx: &SessionContext, plan: Arc<dyn ExecutionPlan>) -> String {
    pretty_format_batches(&collect(plan, ctx.task_ctx()).await.unwrap())
        .unwrap()
        .to_string()
}

const QUERY: &str = "SELECT pid, count(*) AS n, min(time) AS first FROM logs \
                     WHERE level = 'WARN' AND time >= '2008-11-09T21:00:00' \
                     GROUP BY pid ORDER BY n DESC, pid";

#[tokio::test]
async fn plans_come_back_from_their_bytes_and_answer_the_same() {
    let dir = lake();
    let ctx = context(dir.path()).await;
    let df = ctx.sql(QUERY).await.unwrap();
    // The logical plan, as a client sends it to the scheduler.
    let logical = df.logical_plan().clone();
    let bytes =
        logical_plan_to_bytes_with_extension_codec(&logical, &GlydLogicalCodec::default()).unwrap();
    let back = logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &ctx.task_ctx(),
        &GlydLogicalCodec::default(),
    )
    .unwrap();
    assert_eq!(
        format!("{}", back.display_indent()),
        format!("{}", logical.display_indent())
    );
    // The physical plan, as the scheduler sends it to executors.
    let plan = df.create_physical_plan().await.unwrap();
    let shown = displayable(plan.as_ref()).indent(true).to_string();
    assert!(shown.contains("file_type=glyd"), "{shown}");
    let pruning = predicate(&plan).expect("the scan prunes row groups");
    let bytes = physical_plan_to_bytes_with_extension_codec(
        Arc::clone(&plan),
        &GlydPhysicalCodec::default(),
    )
    .unwrap();
    let back = physical_plan_from_bytes_with_extension_codec(
        &bytes,
        &ctx.task_ctx(),
        &GlydPhysicalCodec::default(),
    )
    .unwrap();
    assert_eq!(displayable(back.as_ref()).indent(true).to_string(), shown);
    assert_eq!(predicate(&back).as_deref(), Some(pruning.as_str()));
    let want = text(&ctx, plan).await;
    assert!(want.lines().count() > 4, "{want}");
    assert_eq!(text(&ctx, back).await, want);
}

#[tokio::test]
async fn bytes_not_written_by_the_codecs_are_errors() {
    let dir = lake();
    let ctx = context(dir.path()).await;
    let task = ctx.task_ctx();
    let schema = ctx.table_provider("logs").await.unwrap().schema();
    let logical = GlydLogicalCodec::default();
    let physical = GlydPhysicalCodec::default();
    let converter = DefaultPhysicalProtoConverter {};
    for junk in [
        &b""[..],
        b"\x07",
        b"\x01",
        b"\x01glyd lake table 1\nlocation",
        b"\x01glyd lake table 1\nlocation /x/\npartition nope",
        b"\x01\xff\xff\xff\xff\x0f",
        b"\x01glyd format 2",
    ] {
        let table_ref = "t".into();
        assert!(logical
            .try_decode_table_provider(junk, &table_ref, Arc::clone(&schema), &task)
            .is_err());
        assert!(logical.try_decode_file_format(junk, &task).is_err());
        assert!(physical.try_decode(junk, &[], &task, &converter).is_err());
    }
    assert!(LakeTable::decode(b"glyd lake table 9", schema).is_err());
}
