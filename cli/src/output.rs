//! Where results go. A file output is written to a temporary file beside its destination and
//! renamed into place only when complete, so an interrupted run never leaves a truncated file
//! under the final name, and an existing file is replaced only with `-f`.

use std::fs::{self, File};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// An output being written.
pub enum Output {
    Stdout(BufWriter<io::StdoutLock<'static>>),
    File {
        tmp: BufWriter<NamedTempFile>,
        dest: PathBuf,
        force: bool,
    },
    /// `-t`: decoded bytes are checked and dropped.
    Discard(io::Sink),
}

impl Output {
    pub fn stdout() -> Self {
        Output::Stdout(BufWriter::with_capacity(1 << 20, io::stdout().lock()))
    }

    /// A temporary file beside `dest`. Fails early if `dest` exists and `force` is off.
    pub fn file(dest: &Path, force: bool, like: Option<&Path>) -> Result<Self> {
        if !force && dest.exists() {
            bail!("{} already exists; use -f to overwrite it", dest.display());
        }
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        // The output takes the input's permissions, as gzip and zstd do.
        if let Some(src) = like {
            if let Ok(meta) = fs::metadata(src) {
                let _ = fs::set_permissions(tmp.path(), meta.permissions());
            }
        }
        Ok(Output::File {
            tmp: BufWriter::with_capacity(1 << 20, tmp),
            dest: dest.to_path_buf(),
            force,
        })
    }

    /// Makes the output final: flushes, syncs and renames a file into place.
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush().context("cannot write to standard output"),
            Output::Discard(_) => Ok(()),
            Output::File { tmp, dest, force } => {
                let tmp = tmp
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("cannot write {}", dest.display()))?;
                tmp.as_file()
                    .sync_all()
                    .with_context(|| format!("cannot sync {}", dest.display()))?;
                let r = if force {
                    tmp.persist(&dest).map(drop)
                } else {
                    tmp.persist_noclobber(&dest).map(drop)
                };
                r.map_err(|e| e.error).with_context(|| {
                    format!("cannot move the output into place as {}", dest.display())
                })
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write(buf),
            Output::File { tmp, .. } => tmp.write(buf),
            Output::Discard(s) => s.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(buf),
            Output::File { tmp, .. } => tmp.write_all(buf),
            Output::Discard(s) => s.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush(),
            Output::File { tmp, .. } => tmp.flush(),
            Output::Discard(s) => s.flush(),
        }
    }
}

/// An input: a file, or standard input.
pub struct Input {
    /// The path, or `None` for standard input.
    pub path: Option<PathBuf>,
    pub reader: Box<dyn io::Read + Send>,
    /// Size in bytes, where known (for the progress bar).
    pub len: Option<u64>,
}

impl Input {
    pub fn open(path: &Path) -> Result<Self> {
        if path == Path::new("-") {
            return Ok(Self::stdin());
        }
        let meta = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        if meta.is_dir() {
            bail!(
                "{} is a directory; glyd compresses files (use tar for folders)",
                path.display()
            );
        }
        let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Self {
            path: Some(path.to_path_buf()),
            reader: Box::new(f),
            len: Some(meta.len()),
        })
    }

    pub fn stdin() -> Self {
        Self {
            path: None,
            reader: Box::new(io::stdin()),
            len: None,
        }
    }

    /// How messages name this input.
    pub fn name(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "(stdin)".to_string(),
        }
    }
}

/// True if writing compressed bytes to standard output would put them on a terminal.
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}
