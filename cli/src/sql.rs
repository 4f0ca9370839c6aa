//! `glyd sql`: a SQL query over record archives, through DataFusion and the glyd-udf table
//! providers, printed as an aligned table, CSV, JSON lines or Parquet.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::SessionContext;
use glyd_udf::{register_glyd_tables, register_log_functions, GlydTable};

use crate::args::SqlFormat;
use crate::records::write_or_quit;

/// The table name a file gives: its name up to the first dot, lowercased, with anything but
/// letters, digits and `_` as `_` (`HDFS_2k.log_structured.csv.glyd` is `hdfs_2k`).
fn table_name(path: &Path) -> String {
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
fn register(ctx: &SessionContext, files: &[PathBuf], named: &[String]) -> Result<()> {
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut add = |name: &str, path: &Path, explicit: bool| -> Result<()> {
        let names = if explicit || path.is_dir() {
            let table = GlydTable::open(path)?;
            ctx.register_table(name, Arc::new(table))?;
            vec![name.to_string()]
        } else {
            register_glyd_tables(ctx, name, path)?
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

/// Runs `query` over the archives and prints the result in `format`; with no query, opens
/// the shell (see [`crate::shell`]).
pub fn run(
    query: Option<&str>,
    files: &[PathBuf],
    named: &[String],
    format: SqlFormat,
) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the query runtime")?;
    let ctx = SessionContext::new();
    register_log_functions(&ctx);
    register(&ctx, files, named)?;
    let Some(query) = query else {
        return crate::shell::run(&rt, &ctx, format);
    };
    let batches = rt.block_on(execute(&ctx, query)).map_err(|e| {
        if files.is_empty() && named.is_empty() {
            // Table functions (`glyd_templates`) need no tables; anything else does.
            e.context("no tables were given: add record archives (FILE...) or -t NAME=FILE")
        } else {
            e
        }
    })?;
    write_or_quit(&mut io::stdout().lock(), &render(&batches, format)?)
}

/// A Parquet writer compressing with zstd level 3 (the level Parquet users commonly pick).
pub(crate) fn parquet_writer<W: io::Write + Send>(
    out: W,
    schema: SchemaRef,
) -> Result<ArrowWriter<W>> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    Ok(ArrowWriter::try_new(out, schema, Some(props))?)
}

/// Runs one statement to completion.
pub(crate) async fn execute(ctx: &SessionContext, query: &str) -> Result<Vec<RecordBatch>> {
    // DataFusion's errors repeat their message in their source chain: keep the message only.
    let flat = |e: datafusion::error::DataFusionError| anyhow::Error::msg(e.to_string());
    let df = ctx.sql(query).await.map_err(flat)?;
    df.collect().await.map_err(flat)
}

/// A result as bytes of `format`.
pub(crate) fn render(batches: &[RecordBatch], format: SqlFormat) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        SqlFormat::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            out.extend_from_slice(format!("{text}\n").as_bytes());
        }
        SqlFormat::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            for b in batches {
                w.write(b)?;
            }
        }
        SqlFormat::Parquet => {
            if io::stdout().is_terminal() {
                bail!("--format parquet writes binary: redirect standard output to a file");
            }
            let schema = match batches.first() {
                Some(b) => b.schema(),
                None => Arc::new(datafusion::arrow::datatypes::Schema::empty()),
            };
            let mut w = parquet_writer(&mut out, schema)?;
            for b in batches {
                w.write(b)?;
            }
            w.close()?;
        }
        SqlFormat::Jsonl => {
            let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
    }
    Ok(out)
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
