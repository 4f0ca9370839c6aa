//! [`GlydTable`], the DataFusion table provider over one table of a record archive. A scan
//! keeps the row groups whose statistics the query's filters do not rule out (the filters are
//! still applied after the scan: pushdown is inexact), splits them into contiguous runs, one
//! partition each, and decodes only the projected columns of one row group at a time.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use glyd_columnar::ArchiveReader;

use crate::prune;

/// What the last scan of a table planned to read: how many row groups it kept of how many,
/// and the stored bytes of the projected columns' chunks in those row groups beside the
/// archive's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub row_groups: usize,
    pub row_groups_kept: usize,
    pub chunk_bytes: u64,
    pub archive_bytes: u64,
}

/// One table of a record archive as a DataFusion table.
pub struct GlydTable {
    archive: Arc<ArchiveReader>,
    path: PathBuf,
    table: usize,
    schema: SchemaRef,
    last_scan: Arc<Mutex<ScanStats>>,
}

impl fmt::Debug for GlydTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlydTable")
            .field("path", &self.path)
            .field("table", &self.table_name())
            .finish()
    }
}

/// An archive error as a DataFusion error that names the file.
fn external(path: &Path, e: impl fmt::Display) -> DataFusionError {
    DataFusionError::External(format!("{}: {e}", path.display()).into())
}

impl GlydTable {
    /// The one table of the record archive at `path`; an error that lists the tables when it
    /// holds several (a SQL dump: see [`GlydTable::open_all`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let mut all = Self::open_all(path.as_ref())?;
        if all.len() != 1 {
            let names: Vec<&str> = all.iter().map(|t| t.table_name()).collect();
            return Err(external(
                path.as_ref(),
                format!(
                    "the archive holds {} tables ({}); register them with register_glyd_tables",
                    names.len(),
                    names.join(", ")
                ),
            ));
        }
        Ok(all.remove(0))
    }

    /// Every table of the record archive at `path`, sharing one reader.
    pub fn open_all(path: impl AsRef<Path>) -> Result<Vec<Self>> {
        let path = path.as_ref();
        let archive = Arc::new(ArchiveReader::open(path).map_err(|e| external(path, e))?);
        (0..archive.tables().len())
            .map(|t| {
                Ok(GlydTable {
                    schema: archive.table_schema(t).map_err(|e| external(path, e))?,
                    archive: archive.clone(),
                    path: path.to_path_buf(),
                    table: t,
                    last_scan: Default::default(),
                })
            })
            .collect()
    }

    /// The table's name in its archive (`records` for one-table archives).
    pub fn table_name(&self) -> &str {
        &self.archive.tables()[self.table].name
    }

    /// What the last scan planned to read.
    pub fn last_scan(&self) -> ScanStats {
        *self.last_scan.lock().expect("scan stats lock")
    }

    /// The row groups of this table that may hold rows matching every filter.
    fn groups_for(&self, filters: &[Expr]) -> Vec<usize> {
        self.archive
            .groups_of(self.table)
            .into_iter()
            .filter(|&g| {
                let meta = &self.archive.row_groups()[g];
                filters
                    .iter()
                    .all(|f| prune::may_match(f, &self.schema, meta))
            })
            .collect()
    }
}

#[async_trait]
impl TableProvider for GlydTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if prune::understands(f, &self.schema) {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        let rows: u64 = self
            .archive
            .groups_of(self.table)
            .iter()
            .map(|&g| self.archive.row_groups()[g].rows)
            .sum();
        let mut s = Statistics::new_unknown(&self.schema);
        s.num_rows = Precision::Exact(rows as usize);
        Some(s)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let groups = self.groups_for(filters);
        let metas = self.archive.row_groups();
        *self.last_scan.lock().expect("scan stats lock") = ScanStats {
            row_groups: self.archive.groups_of(self.table).len(),
            row_groups_kept: groups.len(),
            chunk_bytes: groups
                .iter()
                .flat_map(|&g| columns.iter().map(move |&c| metas[g].columns[c].stored()))
                .sum(),
            archive_bytes: self.archive.len() as u64,
        };
        let parts = state
            .config_options()
            .execution
            .target_partitions
            .clamp(1, groups.len().max(1));
        let per = groups.len().div_ceil(parts).max(1);
        let partitions: Vec<Arc<dyn PartitionStream>> = groups
            .chunks(per)
            .map(|run| {
                Arc::new(GroupRun {
                    archive: self.archive.clone(),
                    path: self.path.clone(),
                    groups: run.to_vec(),
                    columns: columns.clone(),
                    schema: schema.clone(),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        Ok(Arc::new(StreamingTableExec::try_new(
            schema,
            partitions,
            None,
            [],
            false,
            limit,
        )?))
    }
}

/// One partition of a scan: a run of row groups, decoded one at a time when polled.
struct GroupRun {
    archive: Arc<ArchiveReader>,
    path: PathBuf,
    groups: Vec<usize>,
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl fmt::Debug for GroupRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GroupRun({} row groups)", self.groups.len())
    }
}

impl GroupRun {
    fn batch(&self, g: usize) -> Result<RecordBatch> {
        if self.columns.is_empty() {
            // No columns wanted (`count(*)`): only the row count, from the header.
            let rows = self.archive.row_groups()[g].rows as usize;
            let opts = RecordBatchOptions::new().with_row_count(Some(rows));
            return Ok(RecordBatch::try_new_with_options(
                self.schema.clone(),
                vec![],
                &opts,
            )?);
        }
        let mut batches = self
            .archive
            .read(Some(&self.columns), g..g + 1)
            .map_err(|e| external(&self.path, e))?;
        Ok(batches.remove(0))
    }
}

impl PartitionStream for GroupRun {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let run = GroupRun {
            archive: self.archive.clone(),
            path: self.path.clone(),
            groups: self.groups.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
        };
        let batches = (0..run.groups.len()).map(move |i| run.batch(run.groups[i]));
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(batches),
        ))
    }
}
