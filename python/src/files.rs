//! Files written the durable way: into a temporary file beside the destination, synced and
//! renamed onto it, so a crash or an exception never leaves a partial file under its name.

use std::path::Path;

use pyo3::PyResult;
use tempfile::NamedTempFile;

use crate::errors;

/// A temporary file in the folder of `path` (`name` is how errors call it).
pub fn beside(path: &Path, name: &str) -> PyResult<NamedTempFile> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".glyd-")
        .tempfile_in(dir)
        .map_err(|e| errors::io(name, e))
}

/// Syncs `tmp` and renames it onto `path`; returns its size.
pub fn commit(tmp: NamedTempFile, path: &Path, name: &str) -> PyResult<u64> {
    tmp.as_file().sync_all().map_err(|e| errors::io(name, e))?;
    let len = tmp
        .as_file()
        .metadata()
        .map_err(|e| errors::io(name, e))?
        .len();
    tmp.persist(path).map_err(|e| errors::io(name, e.error))?;
    Ok(len)
}
