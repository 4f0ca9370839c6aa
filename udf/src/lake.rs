//! [`LakeTable`]: a table of glyd archives that a plan can carry to another process (a
//! Ballista client's to its scheduler).
//!
//! DataFusion's plan serialization knows `ListingTable`s of its own formats only; a table of
//! archives travels as this provider instead, as its locations and partition column names
//! (the schema travels beside it in the plan), and is rebuilt as the same `ListingTable` on
//! the scheduler without listing or opening anything.

use std::sync::Arc;

use crate::format::{listing_table, GlydFormat, EXTENSION};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Constraints, Statistics};
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

/// Archives at some locations (URLs or absolute `file://` paths; a location ending in `/` is
/// a prefix or folder), read as one table: a `ListingTable` of [`GlydFormat`].
#[derive(Debug)]
pub struct LakeTable {
    inner: ListingTable,
    locations: Vec<String>,
}

impl LakeTable {
    /// Lists and opens the archives at `locations` (as [`listing_table`] does).
    pub async fn open(state: &dyn Session, locations: &[String]) -> Result<LakeTable> {
        Ok(LakeTable {
            inner: listing_table(state, locations).await?,
            locations: locations.to_vec(),
        })
    }

    /// The table [`Self::encode`] wrote, with `schema` (files' columns, then the partition
    /// columns): nothing is read.
    pub fn decode(buf: &[u8], schema: SchemaRef) -> Result<LakeTable> {
        let bad =
            |what: &str| DataFusionError::Internal(format!("a glyd lake table in a plan: {what}"));
        let text = std::str::from_utf8(buf).map_err(|_| bad("not UTF-8"))?;
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(bad("not written by this version of glyd"));
        }
        let (mut locations, mut partitions) = (Vec::new(), Vec::new());
        for line in lines {
            match line.split_once(' ') {
                Some(("location", l)) => locations.push(l.to_string()),
                Some(("partition", p)) => partitions.push(p.to_string()),
                _ => return Err(bad(&format!("unknown line {line:?}"))),
            }
        }
        let mut cols = Vec::new();
        for p in &partitions {
            let f = schema
                .field_with_name(p)
                .map_err(|_| bad("a partition column is missing"))?;
            cols.push((p.clone(), f.data_type().clone()));
        }
        let files = Schema::new(
            schema
                .fields()
                .iter()
                .filter(|f| !partitions.contains(f.name()))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let urls = locations
            .iter()
            .map(ListingTableUrl::parse)
            .collect::<Result<Vec<_>>>()?;
        let options = ListingOptions::new(Arc::new(GlydFormat))
            .with_file_extension(format!(".{EXTENSION}"))
            .with_table_partition_cols(cols);
        let config = ListingTableConfig::new_with_multi_paths(urls)
            .with_listing_options(options)
            .with_schema(Arc::new(files));
        Ok(LakeTable {
            inner: ListingTable::try_new(config)?,
            locations,
        })
    }

    /// The table as bytes for [`Self::decode`]: a line-based text, so a plan is readable.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(MAGIC.as_bytes());
        for l in &self.locations {
            buf.extend_from_slice(format!("\nlocation {l}").as_bytes());
        }
        for (p, _) in &self.inner.options().table_partition_cols {
            buf.extend_from_slice(format!("\npartition {p}").as_bytes());
        }
    }
}

/// The first line of an encoded [`LakeTable`].
const MAGIC: &str = "glyd lake table 1";

#[async_trait::async_trait]
impl TableProvider for LakeTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.scan(state, projection, filters, limit).await
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        _input: Arc<dyn ExecutionPlan>,
        _op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Plan(
            "glyd lakes are written by glyd sink and glyd -r, not by INSERT".into(),
        ))
    }
}
