//! [`GlydScanExec`], the physical plan node of a scan of a [`GlydTable`](crate::GlydTable):
//! each partition is a run of row groups, decoded one row group at a time as the stream is
//! polled, only the projected columns. Filters that a dictionary answers (`=`, `IN`, `LIKE
//! 'prefix%'` on text) drop rows by their codes before batches are made. Its metrics say
//! what the scan cost: row groups pruned and kept, stored bytes decoded beside the archives'
//! size, rows skipped on codes, and decode time; `EXPLAIN ANALYZE` shows them, and
//! [`scan_stats`] reads them from an executed plan.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::limit::LimitStream;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream,
};

use glyd_columnar::predicate::TextTest;

use crate::merge::widen;
use crate::source::{external, Source};

/// Metric names.
const ROW_GROUPS: &str = "row_groups";
const ROW_GROUPS_KEPT: &str = "row_groups_kept";
const BYTES_DECODED: &str = "bytes_decoded";
const ARCHIVE_BYTES: &str = "archive_bytes";
const DECODE_TIME: &str = "decode_time";
const ROWS_SKIPPED: &str = "rows_skipped_on_codes";

/// What a scan read, summed over the scans of a plan (see [`scan_stats`]): the row groups of
/// its tables and how many the filters kept, the stored bytes of the column chunks it decoded,
/// and the size of its archives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub row_groups: usize,
    pub row_groups_kept: usize,
    pub bytes_decoded: u64,
    pub archive_bytes: u64,
    /// Rows of the kept row groups that filters ruled out on dictionary or template codes,
    /// never made into batches.
    pub rows_skipped_on_codes: u64,
}

/// The scans' statistics of an executed `plan` (every [`GlydScanExec`] in it, summed).
pub fn scan_stats(plan: &Arc<dyn ExecutionPlan>) -> ScanStats {
    let mut total = ScanStats::default();
    let mut stack = vec![plan];
    while let Some(p) = stack.pop() {
        if let Some(scan) = p.downcast_ref::<GlydScanExec>() {
            let s = scan.stats();
            total.row_groups += s.row_groups;
            total.row_groups_kept += s.row_groups_kept;
            total.bytes_decoded += s.bytes_decoded;
            total.archive_bytes += s.archive_bytes;
            total.rows_skipped_on_codes += s.rows_skipped_on_codes;
        }
        stack.extend(p.children());
    }
    total
}

/// A scan of the projected columns of some row groups of a table's archives.
pub struct GlydScanExec {
    sources: Vec<Source>,
    /// Each partition's row groups, as (source, row group).
    runs: Vec<Vec<(usize, usize)>>,
    columns: Vec<usize>,
    schema: SchemaRef,
    /// Filters judged on dictionary or template codes: (position in `columns`, the test).
    row_tests: Vec<(usize, TextTest)>,
    /// Where row groups decode; `None` (the OS gave no threads): rayon's global pool.
    pool: Option<Arc<rayon::ThreadPool>>,
    limit: Option<usize>,
    /// Row groups of the table, kept or not.
    row_groups: usize,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GlydScanExec {
    /// A scan of `columns` (whose schema is `schema`) of the row groups `groups` of
    /// `sources`, which hold `row_groups` in all, in at most `partitions` partitions. Row
    /// groups decode on a pool of `partitions` threads (a row group's columns in parallel):
    /// a one-partition session uses one core, as DataFusion's own scans do.
    pub(crate) fn new(
        sources: Vec<Source>,
        groups: Vec<(usize, usize)>,
        row_groups: usize,
        columns: Vec<usize>,
        schema: SchemaRef,
        partitions: usize,
        limit: Option<usize>,
    ) -> Self {
        let pool = glyd_core::pool(partitions.max(1));
        let per = groups.len().div_ceil(partitions.max(1)).max(1);
        let mut runs: Vec<Vec<(usize, usize)>> = groups.chunks(per).map(<[_]>::to_vec).collect();
        if runs.is_empty() {
            // Nothing kept: one partition that yields nothing.
            runs.push(Vec::new());
        }
        let metrics = ExecutionPlanMetricsSet::new();
        let kept = groups.len();
        MetricBuilder::new(&metrics)
            .global_counter(ROW_GROUPS)
            .add(row_groups);
        MetricBuilder::new(&metrics)
            .global_counter(ROW_GROUPS_KEPT)
            .add(kept);
        MetricBuilder::new(&metrics)
            .global_counter(ARCHIVE_BYTES)
            .add(sources.iter().map(|s| s.archive.len()).sum());
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(runs.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        GlydScanExec {
            sources,
            runs,
            columns,
            schema,
            row_tests: Vec::new(),
            pool,
            limit,
            row_groups,
            properties,
            metrics,
        }
    }

    /// The scan with rows dropped where a filter rules them out on a chunk's dictionary or
    /// template codes (`tests`: table column and test of its values; see
    /// [`crate::prune::row_test`]). Filters on columns the scan does not read are left out.
    pub(crate) fn with_row_tests(mut self, tests: Vec<(usize, TextTest)>) -> Self {
        self.row_tests = tests
            .into_iter()
            .filter_map(|(c, t)| Some((self.columns.iter().position(|&p| p == c)?, t)))
            .collect();
        self
    }

    /// What this scan has read so far (all of it, once every partition has run).
    pub fn stats(&self) -> ScanStats {
        let m = self.metrics.clone_inner();
        let sum = |name| m.sum_by_name(name).map_or(0, |v| v.as_usize());
        ScanStats {
            row_groups: sum(ROW_GROUPS),
            row_groups_kept: sum(ROW_GROUPS_KEPT),
            bytes_decoded: sum(BYTES_DECODED) as u64,
            archive_bytes: sum(ARCHIVE_BYTES) as u64,
            rows_skipped_on_codes: sum(ROWS_SKIPPED) as u64,
        }
    }
}

impl fmt::Debug for GlydScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlydScanExec")
            .field("files", &self.sources.len())
            .field("runs", &self.runs)
            .field("columns", &self.columns)
            .field("limit", &self.limit)
            .finish()
    }
}

impl DisplayAs for GlydScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let kept: usize = self.runs.iter().map(Vec::len).sum();
        let names: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|c| c.name().as_str())
            .collect();
        match t {
            DisplayFormatType::TreeRender => {
                writeln!(f, "files={}", self.sources.len())?;
                writeln!(f, "row_groups={kept} of {}", self.row_groups)?;
                write!(f, "projection=[{}]", names.join(", "))
            }
            _ => {
                write!(
                    f,
                    "GlydScanExec: files={}, row_groups={kept} of {}, partitions={}, projection=[{}]",
                    self.sources.len(),
                    self.row_groups,
                    self.runs.len(),
                    names.join(", ")
                )?;
                if let Some(n) = self.limit {
                    write!(f, ", fetch={n}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for GlydScanExec {
    fn name(&self) -> &str {
        "GlydScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "GlydScanExec has no children to replace".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let groups = self.runs.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "GlydScanExec has {} partitions, not {}",
                self.runs.len(),
                partition + 1
            ))
        })?;
        let run = GroupRun {
            sources: self.sources.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
            row_tests: self.row_tests.clone(),
            pool: self.pool.clone(),
            bytes_decoded: MetricBuilder::new(&self.metrics).counter(BYTES_DECODED, partition),
            rows_skipped: MetricBuilder::new(&self.metrics).counter(ROWS_SKIPPED, partition),
            decode_time: MetricBuilder::new(&self.metrics).subset_time(DECODE_TIME, partition),
        };
        // A row group's chunks decode once; its batches, of the session's size, are made as
        // they are polled: the operators above work best on batches that fit in cache.
        let size = ctx.session_config().batch_size().max(1);
        let batches = groups.into_iter().flat_map(move |g| run.batches(g, size));
        let stream = make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(batches),
        )));
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        // Without a limit the stream passes through with its rows counted; with one, it stops
        // polling (and so decoding) once the limit is reached.
        Ok(Box::pin(LimitStream::new(stream, 0, self.limit, baseline)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn fetch(&self) -> Option<usize> {
        self.limit
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        Some(Arc::new(GlydScanExec {
            sources: self.sources.clone(),
            runs: self.runs.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
            row_tests: self.row_tests.clone(),
            pool: self.pool.clone(),
            limit,
            row_groups: self.row_groups,
            properties: self.properties.clone(),
            metrics: self.metrics.clone(),
        }))
    }
}

/// One partition of a scan while it runs: decodes row groups into batches, counting the
/// stored bytes it decodes and the time it takes (chunks to values, values to batches).
struct GroupRun {
    sources: Vec<Source>,
    columns: Vec<usize>,
    schema: SchemaRef,
    row_tests: Vec<(usize, TextTest)>,
    pool: Option<Arc<rayon::ThreadPool>>,
    bytes_decoded: Count,
    rows_skipped: Count,
    decode_time: Time,
}

impl GroupRun {
    /// The batches of row group `g` of source `i`, of at most `size` rows.
    fn batches(
        &self,
        (i, g): (usize, usize),
        size: usize,
    ) -> Box<dyn Iterator<Item = Result<RecordBatch>> + Send> {
        let s = &self.sources[i];
        let meta = &s.archive.row_groups()[g];
        if self.columns.is_empty() {
            // No columns wanted (`count(*)`): only the row count, from the header.
            let opts = RecordBatchOptions::new().with_row_count(Some(meta.rows as usize));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), vec![], &opts)
                .map_err(Into::into);
            return Box::new(std::iter::once(batch));
        }
        // In an archive whose columns are not the table's, the wanted columns it has; the
        // batches are widened to the table's afterwards.
        let (columns, found) = match &s.columns {
            None => (self.columns.clone(), None),
            Some(map) => {
                let own: Vec<Option<usize>> = self.columns.iter().map(|&c| map[c]).collect();
                let found: Vec<bool> = own.iter().map(Option::is_some).collect();
                (own.into_iter().flatten().collect(), Some(found))
            }
        };
        // (The verbatim-records column has no chunks of its own.)
        let stored: u64 = columns
            .iter()
            .map(|&c| meta.columns.get(c).map_or(0, |m| m.stored()))
            .sum();
        self.bytes_decoded.add(stored as usize);
        if columns.is_empty() {
            // None of the wanted columns is in this archive: its rows, all NULL.
            let rows = meta.rows as usize;
            let schema = self.schema.clone();
            let batches = (0..rows).step_by(size).map(move |at| {
                let n = size.min(rows - at);
                let empty = RecordBatch::try_new_with_options(
                    Arc::new(datafusion::arrow::datatypes::Schema::empty()),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(n)),
                )?;
                widen(&empty, &vec![false; schema.fields().len()], &schema)
            });
            return Box::new(batches);
        }
        let timer = self.decode_time.timer();
        let read = || s.archive.read_batches(Some(&columns), g, size, true);
        let batches = match &self.pool {
            // One core: decoded here, where the batches are made and the query runs.
            Some(pool) if pool.current_num_threads() == 1 => {
                s.archive.read_batches_here(Some(&columns), g, size, true)
            }
            Some(pool) => pool.install(read),
            None => read(),
        };
        timer.done();
        match batches {
            Ok(mut batches) => {
                // (Code tests are in the table's column positions; a widened archive's rows
                // are judged by the filters above the scan alone.)
                if found.is_none() {
                    for (c, test) in &self.row_tests {
                        batches.keep_only(*c, test);
                    }
                }
                self.rows_skipped
                    .add(meta.rows as usize - batches.rows_kept());
                let path = s.path.clone();
                // Making each batch from the decoded chunks is decode time too.
                let time = self.decode_time.clone();
                let timed = std::iter::from_fn(move || {
                    let _timer = time.timer();
                    batches.next()
                });
                let schema = self.schema.clone();
                Box::new(timed.map(move |b| {
                    let b = b.map_err(|e| external(&path, e))?;
                    match &found {
                        Some(found) => widen(&b, found, &schema),
                        None => Ok(b),
                    }
                }))
            }
            Err(e) => Box::new(std::iter::once(Err(external(&s.path, e)))),
        }
    }
}
