//! glyd-udf: SQL over glyd record archives. A [`GlydTable`] is a DataFusion table provider over
//! one table of a record archive: it reads the archive's footer and row group headers, keeps
//! only the row groups whose column statistics a query's filters do not rule out, and decodes
//! only the columns the query names, a row group at a time, in parallel partitions.
//!
//! ```no_run
//! # async fn run() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! use glyd_udf::GlydContext;
//!
//! let ctx = SessionContext::new();
//! ctx.register_glyd("logs", "HDFS_2k.log_structured.csv.glyd")?;
//! let df = ctx.sql("SELECT Level, count(*) FROM logs GROUP BY Level").await?;
//! df.show().await?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod codec;
mod fetch;
mod format;
mod lake;
mod logs;
mod merge;
pub mod policy;
mod prune;
mod scan;
mod source;
mod statistics;
mod table;

use std::path::Path;
use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

pub use codec::{GlydLogicalCodec, GlydPhysicalCodec};
pub use fetch::forget_archive_indexes;
pub use format::{listing_table, GlydFormat, GlydFormatFactory, GlydSource, EXTENSION};
pub use lake::LakeTable;
pub use logs::register_log_functions;
pub use policy::SqlPolicy;
pub use scan::{scan_stats, GlydScanExec, ScanStats};
pub use source::is_partitioned;
pub use table::{GlydTable, GlydTableFactory, ReadOptions};

/// Registers the JSON functions of `datafusion-functions-json` with `ctx`: `json_get`,
/// `json_get_str`, `json_get_int`, `json_get_float`, `json_get_bool`, `json_get_json`,
/// `json_as_text`, `json_contains`, `json_length`, `json_object_keys`, and the `->` and `->>`
/// operators. Nested values of JSON lines (and of the sink's events) are JSON text columns;
/// these read into them.
pub fn register_json_functions(ctx: &mut SessionContext) -> Result<()> {
    datafusion_functions_json::register_all(ctx)
}

/// Registering record archives with a DataFusion session.
pub trait GlydContext {
    /// Registers the one table of the record archive at `path` (a file, or a folder of
    /// archives alike) as `name`. An archive of a SQL dump holds many tables: see
    /// [`register_glyd_tables`].
    fn register_glyd(&self, name: &str, path: impl AsRef<Path>) -> Result<()>;

    /// Lets SQL create tables of archives: `CREATE EXTERNAL TABLE logs STORED AS GLYD
    /// LOCATION 'dir/'`.
    fn enable_glyd_tables(&self);
}

impl GlydContext for SessionContext {
    fn register_glyd(&self, name: &str, path: impl AsRef<Path>) -> Result<()> {
        self.register_table(name, Arc::new(GlydTable::open(path)?))?;
        Ok(())
    }

    fn enable_glyd_tables(&self) {
        self.state_ref()
            .write()
            .table_factories_mut()
            .insert("GLYD".into(), Arc::new(GlydTableFactory));
    }
}

/// Registers every table of the record archive at `path`: a one-table archive as `name`, the
/// tables of a SQL dump each under its own name without schema (`public.payment` as
/// `payment`), lowercased. Returns the names registered.
pub fn register_glyd_tables(
    ctx: &SessionContext,
    name: &str,
    path: impl AsRef<Path>,
) -> Result<Vec<String>> {
    register_glyd_tables_with(ctx, name, path, &ReadOptions::default())
}

/// [`register_glyd_tables`] with the archive read under `opts`.
pub fn register_glyd_tables_with(
    ctx: &SessionContext,
    name: &str,
    path: impl AsRef<Path>,
    opts: &ReadOptions,
) -> Result<Vec<String>> {
    let tables = GlydTable::open_all_with(path, opts)?;
    let many = tables.len() > 1;
    let mut names = Vec::with_capacity(tables.len());
    for t in tables {
        let n = if many {
            let own = t.table_name();
            own.rsplit('.')
                .next()
                .unwrap_or(own)
                .trim_matches(['"', '`'])
                .to_lowercase()
        } else {
            name.to_string()
        };
        ctx.register_table(n.as_str(), Arc::new(t))?;
        names.push(n);
    }
    Ok(names)
}
