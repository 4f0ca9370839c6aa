//! Extension codecs (`datafusion-proto`) that carry glyd tables and scans between processes,
//! as a distributed engine such as Ballista sends plans: a client's logical plan names a
//! [`LakeTable`], which a scheduler plans into a `DataSourceExec` of [`GlydSource`], which
//! each executor rebuilds from its bytes. Every other node goes to the codec they wrap (the
//! engine's own), behind a one-byte tag saying which codec wrote it.

use std::sync::Arc;

use crate::format::{GlydFormatFactory, GlydSource};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::{DefaultLogicalExtensionCodec, LogicalExtensionCodec};
use datafusion_proto::physical_plan::from_proto::parse_protobuf_file_scan_config;
use datafusion_proto::physical_plan::to_proto::serialize_file_scan_config;
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, PhysicalExtensionCodec, PhysicalPlanDecodeContext,
    PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use prost::Message;

use crate::lake::LakeTable;

/// Tags: the node is the wrapped codec's, or glyd's.
const INNER: u8 = 0;
const GLYD: u8 = 1;

/// What a glyd file format encodes as (it has no options).
const FORMAT: &[u8] = b"glyd format 1";

fn unknown_tag(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!(
        "a {what} in a plan was not written by glyd's codec: do the processes that exchange \
         plans run the same version of glyd?"
    ))
}

/// Splits a node's bytes into its tag and body.
fn tagged<'a>(buf: &'a [u8], what: &str) -> Result<(u8, &'a [u8])> {
    match buf.split_first() {
        Some((&t, rest)) if t == INNER || t == GLYD => Ok((t, rest)),
        _ => Err(unknown_tag(what)),
    }
}

/// A logical codec for [`LakeTable`]s and the glyd file format, wrapping another for the rest.
#[derive(Debug)]
pub struct GlydLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl GlydLogicalCodec {
    /// Glyd's nodes, and `inner`'s (an engine's own codec) for every other.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        GlydLogicalCodec { inner }
    }
}

impl Default for GlydLogicalCodec {
    /// Wrapping DataFusion's default codec.
    fn default() -> Self {
        Self::new(Arc::new(DefaultLogicalExtensionCodec {}))
    }
}

impl LogicalExtensionCodec for GlydLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match tagged(buf, "table")? {
            (GLYD, body) => Ok(Arc::new(LakeTable::decode(body, schema)?)),
            (_, body) => self
                .inner
                .try_decode_table_provider(body, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(lake) = node.downcast_ref::<LakeTable>() {
            buf.push(GLYD);
            lake.encode(buf);
            return Ok(());
        }
        buf.push(INNER);
        self.inner.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        match tagged(buf, "file format")? {
            (GLYD, FORMAT) => Ok(Arc::new(GlydFormatFactory)),
            (GLYD, _) => Err(unknown_tag("glyd file format")),
            (_, body) => self.inner.try_decode_file_format(body, ctx),
        }
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        if node.downcast_ref::<GlydFormatFactory>().is_some() {
            buf.push(GLYD);
            buf.extend_from_slice(FORMAT);
            return Ok(());
        }
        buf.push(INNER);
        self.inner.try_encode_file_format(buf, node)
    }
}

/// A `DataSourceExec` of [`GlydSource`] on the wire: the shared file scan configuration
/// (files, byte ranges, projection, statistics), the row-group pruning predicate, and the
/// batch size.
#[derive(Clone, PartialEq, prost::Message)]
struct GlydScanNode {
    #[prost(message, optional, tag = "1")]
    base: Option<protobuf::FileScanExecConf>,
    #[prost(message, optional, tag = "2")]
    predicate: Option<protobuf::PhysicalExprNode>,
    #[prost(uint64, tag = "3")]
    batch_rows: u64,
}

/// A physical codec for scans of glyd archives, wrapping another for the rest.
#[derive(Debug)]
pub struct GlydPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl Default for GlydPhysicalCodec {
    /// Wrapping DataFusion's default codec.
    fn default() -> Self {
        Self::new(Arc::new(DefaultPhysicalExtensionCodec {}))
    }
}

impl GlydPhysicalCodec {
    /// Glyd's scans, and `inner`'s (an engine's own codec) for every other node.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        GlydPhysicalCodec { inner }
    }

    /// The scan `node` is, if it reads glyd archives.
    fn glyd_scan(node: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, &GlydSource)> {
        let exec = node.downcast_ref::<DataSourceExec>()?;
        let conf = exec.data_source().downcast_ref::<FileScanConfig>()?;
        let source = conf.file_source().downcast_ref::<GlydSource>()?;
        Some((conf, source))
    }
}

impl PhysicalExtensionCodec for GlydPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let body = match tagged(buf, "plan node")? {
            (GLYD, body) => body,
            (_, body) => return self.inner.try_decode(body, inputs, ctx, converter),
        };
        let node = GlydScanNode::decode(body)
            .map_err(|e| DataFusionError::Internal(format!("a glyd scan in a plan: {e}")))?;
        let base = node.base.as_ref().ok_or_else(|| {
            DataFusionError::Internal("a glyd scan in a plan without its files".into())
        })?;
        let decode = PhysicalPlanDecodeContext::new(ctx, self);
        let table_schema = FileScanConfig::parse_table_schema_from_proto(base)?;
        let predicate = node
            .predicate
            .as_ref()
            .map(|p| converter.proto_to_physical_expr(p, table_schema.table_schema(), &decode))
            .transpose()?;
        let source: Arc<dyn FileSource> = Arc::new(GlydSource::new(
            table_schema,
            predicate,
            node.batch_rows as usize,
        ));
        let conf = parse_protobuf_file_scan_config(base, &decode, converter, source)?;
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some((conf, source)) = Self::glyd_scan(&node) else {
            buf.push(INNER);
            return self.inner.try_encode(node, buf, converter);
        };
        let predicate = source
            .filter()
            .map(|p| converter.physical_expr_to_proto(&p, self))
            .transpose()?;
        let scan = GlydScanNode {
            base: Some(serialize_file_scan_config(conf, self, converter)?),
            predicate,
            batch_rows: source.batch_rows() as u64,
        };
        buf.push(GLYD);
        scan.encode(buf)
            .map_err(|e| DataFusionError::Internal(format!("encoding a glyd scan: {e}")))
    }
}
