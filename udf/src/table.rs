//! [`GlydTable`], the DataFusion table provider over one table of a record archive. A scan
//! keeps the row groups whose statistics the query's filters do not rule out (the filters are
//! still applied after the scan: pushdown is inexact) and plans a [`GlydScanExec`] over them:
//! contiguous runs, one partition each, decoding only the projected columns, on a pool of as
//! many threads as the session's partitions (so a session of one partition uses one core, as
//! DataFusion's own scans do).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{FieldRef, SchemaRef};
use datafusion::catalog::Session;
use datafusion::catalog::TableProviderFactory;
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::CreateExternalTable;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use glyd_columnar::ArchiveReader;

use crate::merge::{column_map, merge_by_name};
use crate::prune;
use crate::scan::GlydScanExec;
use crate::source::{archive_paths, external, Source};

/// A table of one or more record archives (a folder of them, merged by name) as a DataFusion
/// table.
pub struct GlydTable {
    sources: Vec<Source>,
    schema: SchemaRef,
}

impl fmt::Debug for GlydTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlydTable")
            .field("files", &self.sources.len())
            .field("table", &self.table_name())
            .finish()
    }
}

/// How a table's archives are read.
#[derive(Copy, Clone, Debug)]
pub struct ReadOptions {
    /// The memory limit of each archive's decoding (see
    /// `glyd_columnar::ArchiveReader::with_memory_limit`).
    pub memory: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            memory: glyd_core::DEFAULT_MEMORY_LIMIT,
        }
    }
}

impl ReadOptions {
    fn open(&self, path: &Path) -> Result<ArchiveReader> {
        Ok(ArchiveReader::open(path)
            .map_err(|e| external(path, e))?
            .with_memory_limit(self.memory))
    }
}

impl GlydTable {
    /// The one table of the record archive at `path` (or of each archive in the folder
    /// `path`, their columns merged by name); an error that lists the tables when an
    /// archive holds several (a SQL dump: see [`GlydTable::open_table`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_table(path, None)
    }

    /// Table `name` of the archive(s) at `path` (a file or a folder), or their one table.
    pub fn open_table(path: impl AsRef<Path>, name: Option<&str>) -> Result<Self> {
        Self::open_table_with(path, name, &ReadOptions::default())
    }

    /// [`GlydTable::open_table`] with its archives read under `opts`.
    pub fn open_table_with(
        path: impl AsRef<Path>,
        name: Option<&str>,
        opts: &ReadOptions,
    ) -> Result<Self> {
        let mut sources = Vec::new();
        for p in archive_paths(path.as_ref())? {
            let archive = Arc::new(opts.open(&p)?);
            let table = match name {
                Some(n) => archive.table_index(n).map_err(|e| external(&p, e))?,
                None if archive.tables().len() == 1 => 0,
                None => {
                    let names: Vec<&str> =
                        archive.tables().iter().map(|t| t.name.as_str()).collect();
                    return Err(external(
                        &p,
                        format!(
                            "the archive holds {} tables ({}); name one, or register them \
                             all with register_glyd_tables",
                            names.len(),
                            names.join(", ")
                        ),
                    ));
                }
            };
            sources.push(Source {
                archive,
                path: p,
                table,
                columns: None,
            });
        }
        Self::from_sources(sources)
    }

    fn from_sources(mut sources: Vec<Source>) -> Result<Self> {
        // Strings as views, as DataFusion's Parquet scans read them: a dictionary column's
        // rows are then views of its entries, and grouping by them is cheaper.
        let schemas = sources
            .iter()
            .map(|s| {
                let own = s
                    .archive
                    .table_schema(s.table)
                    .map_err(|e| external(&s.path, e))?;
                Ok(glyd_columnar::with_string_views(&own))
            })
            .collect::<Result<Vec<_>>>()?;
        let schema = merge_by_name(schemas.iter());
        for (s, own) in sources.iter_mut().zip(&schemas) {
            let same = |(a, b): (&FieldRef, &FieldRef)| {
                a.name() == b.name() && a.data_type() == b.data_type()
            };
            let alike = own.fields().len() == schema.fields().len()
                && own.fields().iter().zip(schema.fields()).all(same);
            if !alike {
                s.columns = Some(column_map(&schema, own).into());
            }
        }
        Ok(GlydTable {
            sources,
            schema: Arc::new(schema),
        })
    }

    /// Every table of the record archive at `path`, sharing one reader.
    pub fn open_all(path: impl AsRef<Path>) -> Result<Vec<Self>> {
        Self::open_all_with(path, &ReadOptions::default())
    }

    /// [`GlydTable::open_all`] with the archive read under `opts`.
    pub fn open_all_with(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Vec<Self>> {
        let path = path.as_ref();
        let archive = Arc::new(opts.open(path)?);
        (0..archive.tables().len())
            .map(|t| {
                Self::from_sources(vec![Source {
                    archive: archive.clone(),
                    path: path.to_path_buf(),
                    table: t,
                    columns: None,
                }])
            })
            .collect()
    }

    /// Rows of the table that are verbatim records: input no shredder could represent as
    /// columns (a line with the wrong field count, broken quoting, invalid UTF-8), each a row
    /// whose columns are null and whose `_raw` column holds its text.
    pub fn verbatim_rows(&self) -> u64 {
        self.sources
            .iter()
            .map(|s| {
                s.archive
                    .groups_of(s.table)
                    .into_iter()
                    .map(|g| s.archive.verbatim_rows(g))
                    .sum::<u64>()
            })
            .sum()
    }

    /// The table's name in its archive (`records` for one-table archives).
    pub fn table_name(&self) -> &str {
        let s = &self.sources[0];
        &s.archive.tables()[s.table].name
    }

    /// Every row group of the table, as (source, row group).
    fn all_groups(&self) -> Vec<(usize, usize)> {
        self.sources
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.archive
                    .groups_of(s.table)
                    .into_iter()
                    .map(move |g| (i, g))
            })
            .collect()
    }

    /// The row groups that may hold rows matching every filter.
    fn groups_for(&self, filters: &[Expr]) -> Vec<(usize, usize)> {
        self.all_groups()
            .into_iter()
            .filter(|&(i, g)| {
                if self.sources[i].columns.is_some() {
                    // Its statistics are of its own columns: kept, the filters judge its rows.
                    return true;
                }
                let archive = &self.sources[i].archive;
                let meta = &archive.row_groups()[g];
                // Dictionaries are read once per chunk, and only for filters that get past
                // the statistics.
                let mut read: HashMap<usize, Option<Vec<Vec<u8>>>> = HashMap::new();
                let mut probe = |c: usize, test: &dyn Fn(&[u8]) -> bool| {
                    let d = read
                        .entry(c)
                        .or_insert_with(|| archive.dictionary(g, c).ok().flatten());
                    d.as_ref().map(|d| d.iter().any(|v| test(v)))
                };
                filters
                    .iter()
                    .all(|f| prune::may_match(f, &self.schema, meta, &mut probe))
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
            .all_groups()
            .iter()
            .map(|&(i, g)| self.sources[i].archive.row_groups()[g].rows)
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
        let tests = filters
            .iter()
            .filter_map(|f| prune::row_test(f, &self.schema))
            .collect();
        Ok(Arc::new(
            GlydScanExec::new(
                self.sources.clone(),
                groups,
                self.all_groups().len(),
                columns,
                schema,
                state.config_options().execution.target_partitions,
                limit,
            )
            .with_row_tests(tests),
        ))
    }
}

/// Makes `CREATE EXTERNAL TABLE name STORED AS GLYD LOCATION 'file or folder'` work, with
/// `OPTIONS ('table' 'public.payment')` to pick a table of a SQL dump's archives.
#[derive(Debug, Default)]
pub struct GlydTableFactory;

#[async_trait]
impl TableProviderFactory for GlydTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let table = cmd
            .options
            .iter()
            .find(|(k, _)| k.as_str() == "table" || k.ends_with(".table"))
            .map(|(_, v)| v.as_str());
        // Object stores go through the `FileFormat`; local archives keep row-group pruning.
        if cmd.locations.iter().any(|l| l.contains("://")) {
            if table.is_some() {
                return Err(DataFusionError::Plan(
                    "OPTIONS ('table' ...) needs local archives; object stores hold one-table archives".into(),
                ));
            }
            return Ok(Arc::new(
                crate::format::listing_table(state, &cmd.locations).await?,
            ));
        }
        let mut tables = Vec::new();
        for location in &cmd.locations {
            tables.push(GlydTable::open_table(location, table)?);
        }
        let mut sources = Vec::new();
        for t in tables {
            sources.extend(t.sources);
        }
        if sources.is_empty() {
            return Err(DataFusionError::Plan(format!(
                "CREATE EXTERNAL TABLE {}: no LOCATION given",
                cmd.name
            )));
        }
        Ok(Arc::new(GlydTable::from_sources(sources)?))
    }
}
