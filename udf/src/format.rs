//! [`GlydFormat`]: record archives as a DataFusion `FileFormat`, so that a `ListingTable`
//! over a folder or an object-store prefix of `.glyd` files works like one over Parquet
//! files: the schema is inferred from the archives' footers and merged by name, each file's
//! statistics come from its chunks' (rows, null counts, min and max), and a scan decodes only
//! the projected columns of the row groups the query's filters do not rule out (judged by
//! DataFusion's `PruningPredicate` on [`crate::statistics::GroupStatistics`]), a row group at
//! a time.
//!
//! [`crate::GlydTable`] is the richer path for local archives (row groups of one file spread
//! over partitions, `LIKE 'prefix%'` judged on dictionaries); this one reaches any object
//! store DataFusion has registered, one file per partition.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl, PartitionedFile,
};
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::physical_expr::conjunction;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::{apply_expression_roots, ExecutionPlan, PhysicalExpr};
use futures::{StreamExt, TryStreamExt};
use glyd_columnar::ArchiveReader;

use crate::fetch::{self, object_error, FetchCounts};
use crate::merge::{column_map, merge_by_name, widen};
use crate::statistics::{self, GroupStatistics};

/// The file extension, without its dot.
pub const EXTENSION: &str = "glyd";

/// Record archives as a `FileFormat`.
#[derive(Debug, Default)]
pub struct GlydFormat;

/// Makes [`GlydFormat`]s: register it (`SessionStateBuilder::with_file_formats` or
/// `register_file_format`) for `ListingTable`s of archives.
#[derive(Debug, Default)]
pub struct GlydFormatFactory;

impl GetExt for GlydFormatFactory {
    fn get_ext(&self) -> String {
        EXTENSION.into()
    }
}

impl FileFormatFactory for GlydFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        _options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(GlydFormat))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(GlydFormat)
    }
}

/// A `ListingTable` of the archives at `locations` (URLs of any object store the session has
/// registered, or local paths; a location ending in `/` is a folder or prefix). Folders named
/// `key=value` under the first location (a hive-partitioned lake, as `glyd sink` writes) are
/// partition columns, and a filter on them skips whole folders.
pub async fn listing_table(state: &dyn Session, locations: &[String]) -> Result<ListingTable> {
    let urls = locations
        .iter()
        .map(ListingTableUrl::parse)
        .collect::<Result<Vec<_>>>()?;
    let options =
        ListingOptions::new(Arc::new(GlydFormat)).with_file_extension(format!(".{EXTENSION}"));
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .infer_partitions_from_path(state)
        .await?
        .infer_schema(state)
        .await?;
    ListingTable::try_new(config)
}

/// The one table's schema of an archive; archives of SQL dumps hold many.
fn table_schema_of(archive: &ArchiveReader, meta: &ObjectMeta) -> Result<SchemaRef> {
    match archive.tables().len() {
        1 => Ok(archive.schema()),
        n => Err(object_error(
            &meta.location,
            format!(
                "an archive of {n} tables (a SQL dump): open one table with GlydTable::open_table"
            ),
        )),
    }
}

#[async_trait]
impl FileFormat for GlydFormat {
    fn get_ext(&self) -> String {
        EXTENSION.into()
    }

    fn get_ext_with_compression(&self, c: &FileCompressionType) -> Result<String> {
        if c.is_compressed() {
            return Err(DataFusionError::Plan(
                "glyd archives are compressed already: read them uncompressed".into(),
            ));
        }
        Ok(self.get_ext())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        let mut schemas = Vec::with_capacity(objects.len());
        for meta in objects {
            let archive = fetch::open(store, meta, &FetchCounts::default()).await?;
            schemas.push(table_schema_of(&archive, meta)?);
        }
        Ok(Arc::new(merge_by_name(schemas.iter().map(|s| s.as_ref()))))
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let archive = fetch::open(store, object, &FetchCounts::default()).await?;
        let own = table_schema_of(&archive, object)?;
        Ok(statistics::file_statistics(&archive, &table_schema, &own))
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(GlydSource::new(table_schema, None, 8192))
    }
}

/// The scan side of [`GlydFormat`].
#[derive(Clone)]
pub struct GlydSource {
    table_schema: TableSchema,
    projection: SplitProjection,
    /// The query's filters, for skipping row groups (DataFusion still applies them).
    predicate: Option<Arc<dyn PhysicalExpr>>,
    metrics: ExecutionPlanMetricsSet,
    /// Rows per batch (DataFusion's `batch_size`).
    batch_rows: usize,
}

impl GlydSource {
    /// The scan of `table_schema` that [`GlydFormat`] plans, reading `batch_rows` rows per
    /// batch and skipping the row groups `predicate` rules out: how a plan serialized for
    /// another process (a Ballista executor) is rebuilt there.
    pub fn new(
        table_schema: TableSchema,
        predicate: Option<Arc<dyn PhysicalExpr>>,
        batch_rows: usize,
    ) -> Self {
        GlydSource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            predicate,
            metrics: ExecutionPlanMetricsSet::new(),
            batch_rows: batch_rows.max(1),
        }
    }

    /// Rows per batch.
    pub fn batch_rows(&self) -> usize {
        self.batch_rows
    }
}

impl FileSource for GlydSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        _config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let pruning = self.predicate.as_ref().and_then(|p| {
            PruningPredicateBuilder::new()
                .with_file_schema(Arc::clone(file_schema))
                .build(Arc::clone(p))
        });
        let metric =
            |name: &'static str| MetricBuilder::new(&self.metrics).counter(name, partition);
        let opener = Arc::new(GlydOpener {
            store,
            schema: Arc::new(file_schema.project(&self.projection.file_indices)?),
            table_schema: Arc::clone(file_schema),
            pruning,
            row_groups: metric("row_groups"),
            row_groups_pruned: metric("row_groups_pruned_statistics"),
            counts: FetchCounts {
                requests: metric("fetch_requests"),
                bytes: metric("bytes_fetched"),
            },
            object_bytes: metric("object_bytes"),
            batch_rows: self.batch_rows,
        });
        ProjectionOpener::try_new(self.projection.clone(), opener, file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        let mut source = self.clone();
        source.batch_rows = batch_size.max(1);
        Arc::new(source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        EXTENSION
    }

    fn supports_repartitioning(&self) -> bool {
        // A file split into byte ranges is read as the row groups that start in each (as
        // Parquet's row groups are): one large archive spreads over partitions.
        true
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &self.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        // Filters prune row groups by their statistics; rows are still filtered above the
        // scan (a row group kept may hold rows that do not match): none is pushed down whole.
        let kept = vec![PushedDown::No; filters.len()];
        if filters.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(kept));
        }
        let mut source = self.clone();
        source.predicate = Some(conjunction(self.predicate.iter().cloned().chain(filters)));
        Ok(FilterPushdownPropagation::with_parent_pushdown_result(kept)
            .with_updated_node(Arc::new(source) as Arc<dyn FileSource>))
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.predicate.clone()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        apply_expression_roots(self.projection.source.iter(), f)
    }
}

/// Opens one archive and yields a batch per row group that `pruning` keeps, holding the
/// columns of `schema` (the table's columns this scan reads): a column the archive lacks is
/// null, and one of another type is cast (the table's schema merges those of all its files).
struct GlydOpener {
    store: Arc<dyn ObjectStore>,
    schema: SchemaRef,
    /// The table's schema (of its files' columns), which `pruning` was planned on.
    table_schema: SchemaRef,
    pruning: Option<Arc<PruningPredicate>>,
    row_groups: Count,
    row_groups_pruned: Count,
    /// Requests and bytes fetched from the store, beside the sizes of the objects opened.
    counts: FetchCounts,
    object_bytes: Count,
    batch_rows: usize,
}

impl FileOpener for GlydOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let store = Arc::clone(&self.store);
        let schema = Arc::clone(&self.schema);
        let table_schema = Arc::clone(&self.table_schema);
        let pruning = self.pruning.clone();
        let (counted, pruned) = (self.row_groups.clone(), self.row_groups_pruned.clone());
        let (counts, object_bytes) = (self.counts.clone(), self.object_bytes.clone());
        let batch_rows = self.batch_rows;
        Ok(Box::pin(async move {
            let meta = file.object_meta.clone();
            // Counted once, by the range (or whole file) starting at its first byte.
            if file.range.as_ref().is_none_or(|r| r.start == 0) {
                object_bytes.add(meta.size as usize);
            }
            let archive = fetch::open(&store, &meta, &counts).await?;
            let own = table_schema_of(&archive, &meta)?;
            // For each wanted column, its index in this archive, if it has it.
            let found = column_map(&schema, &own);
            let read: Vec<usize> = found.iter().flatten().copied().collect();
            let found: Vec<bool> = found.iter().map(Option::is_some).collect();
            let groups = archive.row_groups().len();
            // A predicate that cannot be evaluated on the statistics keeps every row group.
            let keep = match &pruning {
                Some(p) => p
                    .prune(&GroupStatistics::new(&archive, &table_schema, &own))
                    .unwrap_or_else(|_| vec![true; groups]),
                None => vec![true; groups],
            };
            // A range of the file: the row groups that start in it.
            let in_range = |g: usize| {
                file.range.as_ref().is_none_or(|r| {
                    let at = archive.row_groups()[g].offset as i64;
                    r.start <= at && at < r.end
                })
            };
            let kept: Vec<usize> = (0..groups)
                .filter(|&g| in_range(g) && keep.get(g) != Some(&false))
                .collect();
            let ranged: usize = (0..groups).filter(|&g| in_range(g)).count();
            counted.add(ranged);
            pruned.add(ranged - kept.len());
            // Row groups are fetched and decoded as the query pulls them (a LIMIT stops
            // fetching), the next ones in flight meanwhile; each one's batches are made as
            // they are read, while their arrays are in cache.
            let batches = futures::stream::iter(kept)
                .map(move |g| {
                    let (store, meta, archive) = (store.clone(), meta.clone(), archive.clone());
                    let (read, counts) = (read.clone(), counts.clone());
                    async move {
                        let batches = fetch::read_group(
                            &store, &meta, &archive, &read, g, batch_rows, &counts,
                        )
                        .await?;
                        let location = meta.location.clone();
                        let batches =
                            batches.map(move |b| b.map_err(|e| object_error(&location, e)));
                        Ok::<_, DataFusionError>(futures::stream::iter(batches))
                    }
                })
                .buffered(2)
                .try_flatten()
                .map(move |batch: Result<RecordBatch>| widen(&batch?, &found, &schema));
            Ok(batches.boxed())
        }))
    }
}
