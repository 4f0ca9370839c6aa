//! `glyd sql`: a SQL query over record archives, through DataFusion and the glyd-udf table
//! providers, printed as it arrives: CSV, JSON lines or Parquet streamed a batch at a time, or
//! an aligned table (the default on a terminal) of the first rows.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use glyd_connectors::store;
use glyd_udf::{
    is_partitioned, listing_table, policy, register_glyd_tables_with, register_json_functions,
    register_log_functions, GlydContext, GlydTable, ReadOptions, SqlPolicy,
};

use crate::args::SqlFormat;
use crate::output::Output;

/// The table name a file gives: its name up to the first dot, lowercased, with anything but
/// letters, digits and `_` as `_` (`HDFS_2k.log_structured.csv.glyd` is `hdfs_2k`).
pub(crate) fn table_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    let stem = file.split('.').next().unwrap_or_default();
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Registers the tables: `files` (archives, or folders of archives alike) named after
/// themselves, `named` as `NAME=FILE`. Two tables
/// of one name are an error that says how to tell them apart.
fn register(
    rt: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    files: &[PathBuf],
    named: &[String],
    memory: u64,
) -> Result<()> {
    let opts = ReadOptions { memory };
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut add = |name: &str, path: &Path, explicit: bool| -> Result<()> {
        let names = if let Some(url) = path.to_str().filter(|p| store::is_url(p)) {
            // An object or a prefix (a lake) on an object store: read by ranges.
            let loc = store::locate(url)?;
            let base = ObjectStoreUrl::parse(loc.store_url()).map_err(flat)?;
            ctx.register_object_store(base.as_ref(), Arc::clone(&loc.store));
            let table = rt
                .block_on(listing_table(&ctx.state(), &[url.to_string()]))
                .map_err(flat)
                .with_context(|| format!("opening {url}"))?;
            ctx.register_table(name, Arc::new(table)).map_err(flat)?;
            vec![name.to_string()]
        } else if is_partitioned(path) {
            // A lake of `key=value` folders: its keys are columns that skip folders.
            let location = format!("{}/", std::path::absolute(path)?.display());
            let table = rt
                .block_on(listing_table(&ctx.state(), &[location]))
                .map_err(flat)?;
            ctx.register_table(name, Arc::new(table)).map_err(flat)?;
            vec![name.to_string()]
        } else if explicit || path.is_dir() {
            let table = GlydTable::open_table_with(path, None, &opts).map_err(flat)?;
            ctx.register_table(name, Arc::new(table)).map_err(flat)?;
            vec![name.to_string()]
        } else {
            register_glyd_tables_with(ctx, name, path, &opts).map_err(flat)?
        };
        for n in names {
            if let Some(other) = seen.insert(n.clone(), path.to_path_buf()) {
                bail!(
                    "two tables named {n} ({} and {}): name one with -t NAME=FILE",
                    other.display(),
                    path.display()
                );
            }
        }
        Ok(())
    };
    for f in files {
        add(&table_name(f), f, false)?;
    }
    for t in named {
        let Some((name, file)) = t.split_once('=') else {
            bail!("-t {t}: expected NAME=FILE");
        };
        add(name, Path::new(file), true)?;
    }
    Ok(())
}

/// How `glyd sql` runs and prints.
#[derive(Copy, Clone, Debug)]
pub struct Settings {
    /// `None`: an aligned table on a terminal, CSV otherwise.
    pub format: Option<SqlFormat>,
    /// Rows an aligned table shows (the rest are counted, not held).
    pub max_rows: usize,
    /// SQL may only query the tables given: no DDL, DML or file access.
    pub read_only: bool,
    /// The archives' decode memory limit.
    pub memory: u64,
}

impl Settings {
    fn format(&self) -> SqlFormat {
        self.format.unwrap_or(if io::stdout().is_terminal() {
            SqlFormat::Table
        } else {
            SqlFormat::Csv
        })
    }

    fn policy(&self) -> SqlPolicy {
        if self.read_only {
            SqlPolicy::default()
        } else {
            SqlPolicy::trusted()
        }
    }
}

/// A query session: the runtime, and a context with the tables of `files` (named after
/// themselves) and `named` (`NAME=FILE`) and the log functions, under `settings`' policy.
pub struct Session {
    pub rt: tokio::runtime::Runtime,
    pub ctx: SessionContext,
    /// Whether any table was given (a query that finds none then says how to give one).
    tables: bool,
}

impl Session {
    pub fn new(files: &[PathBuf], named: &[String], settings: Settings) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the query runtime")?;
        let mut ctx = SessionContext::new();
        register_json_functions(&mut ctx).map_err(flat)?;
        register_log_functions(&ctx, settings.policy());
        if !settings.read_only {
            ctx.enable_glyd_tables();
        }
        register(&rt, &ctx, files, named, settings.memory)?;
        note_verbatim(&rt, &ctx);
        Ok(Session {
            rt,
            ctx,
            tables: !(files.is_empty() && named.is_empty()),
        })
    }

    /// Runs one statement and prints its result as it arrives.
    pub fn query(&self, query: &str, settings: Settings) -> Result<()> {
        self.rt
            .block_on(run_one(&self.ctx, query, settings))
            .map_err(|e| {
                if !self.tables && e.to_string().contains("not found") {
                    e.context("no tables were given: add record archives (FILE...) or -t NAME=FILE")
                } else {
                    e
                }
            })
    }
}

/// Says on stderr which tables hold verbatim records (rows a query sees with null columns and
/// their text in `_raw`), so that a count of them is not a surprise.
fn note_verbatim(rt: &tokio::runtime::Runtime, ctx: &SessionContext) {
    let names = ctx
        .catalog("datafusion")
        .and_then(|c| c.schema("public"))
        .map(|s| s.table_names())
        .unwrap_or_default();
    for name in names {
        let Ok(Some(t)) = rt.block_on(ctx.table_provider(name.as_str())).map(Some) else {
            continue;
        };
        let Some(t) = t.downcast_ref::<GlydTable>() else {
            continue;
        };
        let n = t.verbatim_rows();
        if n > 0 {
            note!(
                "glyd sql: table {name} has {n} verbatim row(s) (input not read as columns): their columns are NULL, their text is in {}",
                glyd_columnar::RAW
            );
        }
    }
}

/// DataFusion's errors as one message: an archive's own error (wrapped as "External error")
/// as it is, since it already names the file, and no source chain repeating the message.
pub(crate) fn flat(e: DataFusionError) -> anyhow::Error {
    match e {
        DataFusionError::External(inner) => anyhow::Error::msg(inner.to_string()),
        e => anyhow::Error::msg(e.to_string()),
    }
}

/// Runs one statement and prints its result to standard output as it arrives.
pub(crate) async fn run_one(ctx: &SessionContext, query: &str, settings: Settings) -> Result<()> {
    let df = policy::sql(ctx, query, settings.policy())
        .await
        .map_err(flat)?;
    let stream = df.execute_stream().await.map_err(flat)?;
    let mut out = Output::stdout();
    write_stream(stream, settings.format(), settings.max_rows, &mut out).await?;
    out.commit()
}

/// Writes a result in `format` as its batches arrive, holding at most one batch (an aligned
/// table holds its first `max_rows` rows, and counts the rest).
async fn write_stream(
    mut stream: SendableRecordBatchStream,
    format: SqlFormat,
    max_rows: usize,
    out: &mut Output,
) -> Result<()> {
    let schema = stream.schema();
    match format {
        SqlFormat::Table => {
            let (mut shown, mut rows) = (Vec::new(), 0usize);
            while let Some(b) = stream.next().await {
                let b = b.map_err(flat)?;
                if rows < max_rows {
                    shown.push(b.slice(0, b.num_rows().min(max_rows - rows)));
                }
                rows += b.num_rows();
            }
            if shown.is_empty() {
                shown.push(RecordBatch::new_empty(schema));
            }
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&shown)?;
            out.write_all(format!("{text}\n").as_bytes())?;
            if rows > max_rows {
                out.flush()?;
                note!("({rows} rows; the first {max_rows} shown: --max-rows N shows more, --format csv all)");
            }
        }
        SqlFormat::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            let mut any = false;
            while let Some(b) = stream.next().await {
                w.write(&b.map_err(flat)?)?;
                any = true;
            }
            if !any {
                // The header alone, for a result with no rows.
                w.write(&RecordBatch::new_empty(schema))?;
            }
        }
        SqlFormat::Parquet => {
            if io::stdout().is_terminal() {
                bail!("--format parquet writes binary: redirect standard output to a file");
            }
            let mut w = crate::output::parquet_writer(&mut *out, schema)?;
            while let Some(b) = stream.next().await {
                w.write(&b.map_err(flat)?)?;
            }
            w.close()?;
        }
        SqlFormat::Jsonl => {
            let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut *out);
            while let Some(b) = stream.next().await {
                w.write(&b.map_err(flat)?)?;
            }
            w.finish()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_named_after_files() {
        assert_eq!(
            table_name(Path::new("dir/HDFS_2k.log_structured.csv.glyd")),
            "hdfs_2k"
        );
        assert_eq!(table_name(Path::new("my-logs.glyd")), "my_logs");
    }
}
