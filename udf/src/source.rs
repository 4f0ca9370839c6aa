//! Where a table's rows come from: one table of one record archive, the archives a path names,
//! and archive errors as DataFusion errors that name the file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use glyd_columnar::ArchiveReader;

/// One table of one record archive.
#[derive(Clone)]
pub(crate) struct Source {
    pub archive: Arc<ArchiveReader>,
    pub path: PathBuf,
    pub table: usize,
    /// Where the archive's table is not the whole table's (a folder of archives whose
    /// schemas differ): for each of the whole table's columns, this table's of that name.
    pub columns: Option<Arc<[Option<usize>]>>,
}

/// An archive error as a DataFusion error that names the file.
pub(crate) fn external(path: &Path, e: impl fmt::Display) -> DataFusionError {
    DataFusionError::External(format!("{}: {e}", path.display()).into())
}

/// Whether `path` is a hive-partitioned lake: a folder holding no archive itself and some
/// folder named `key=value` (as `glyd sink` writes `dt=2026-12-07/hour=12/`).
pub fn is_partitioned(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    let mut partitioned = false;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && e.file_name().to_string_lossy().contains('=') {
            partitioned = true;
        } else if p.extension().is_some_and(|x| x == "glyd") && p.is_file() {
            return false;
        }
    }
    partitioned
}

/// The record archives at `path`: the file, or the `*.glyd` files of the folder, by name.
pub(crate) fn archive_paths(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| external(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "glyd") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(external(path, "no .glyd files in this folder"));
    }
    Ok(files)
}
