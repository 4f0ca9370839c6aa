//! Where results go. A file output is written to a temporary file beside its destination and
//! renamed into place only when complete, so an interrupted run never leaves a truncated file
//! under the final name, and an existing file is replaced only with `-f`. A character device or
//! FIFO named as the output (`-o /dev/null`, a named pipe) is written in place and never
//! replaced, with or without `-f`. Standard output closed by its reader (`| head`) ends the run
//! quietly; any other failure to write it is an error.

use std::fs::{self, File};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

use glyd_connectors::store;

use crate::cleanup;

/// The reader of standard output has gone away (EPIPE): not a failure of the run, which stops
/// quietly, as `head` expects of what writes into it.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// Set once a write to standard output has found it closed: whatever error that causes, however
/// a library wraps it, ends the run quietly.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// An error writing standard output, with a closed pipe marked as [`StdoutClosed`].
fn stdout_io_error(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CLOSED.store(true, Ordering::Relaxed);
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        io::Error::new(e.kind(), format!("cannot write to standard output: {e}"))
    }
}

/// True when `e` (at any depth) is standard output closed by its reader.
pub fn is_stdout_closed(e: &anyhow::Error) -> bool {
    CLOSED.load(Ordering::Relaxed)
        || e.chain().any(|c| {
            c.is::<StdoutClosed>()
                || c.downcast_ref::<io::Error>()
                    .and_then(|io| io.get_ref())
                    .is_some_and(|inner| inner.is::<StdoutClosed>())
        })
}

/// Writes `text` to standard output and flushes it.
pub fn print(text: impl AsRef<[u8]>) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_ref())
        .and_then(|()| out.flush())
        .map_err(stdout_io_error)?;
    Ok(())
}

/// True when `a` and `b` name the same file (one inode), whatever the spelling or links.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// What an existing output path is, for the rules above.
enum Existing {
    None,
    Regular,
    /// A character device or FIFO: written in place.
    Stream,
}

fn existing(dest: &Path) -> Result<Existing> {
    // Follows links: `-o /dev/stdout` is a link to whatever standard output is.
    let meta = match fs::metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::None),
        Err(e) => return Err(e).with_context(|| format!("cannot examine {}", dest.display())),
    };
    let t = meta.file_type();
    if t.is_file() {
        Ok(Existing::Regular)
    } else if t.is_char_device() || t.is_fifo() {
        Ok(Existing::Stream)
    } else {
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        bail!(
            "{} is {what}: glyd writes regular files, character devices and FIFOs only",
            dest.display()
        )
    }
}

/// An output being written.
pub enum Output {
    Stdout(BufWriter<io::Stdout>),
    File {
        tmp: BufWriter<NamedTempFile>,
        dest: PathBuf,
        force: bool,
        pending: cleanup::Pending,
    },
    /// A character device or FIFO, written in place.
    Stream {
        w: BufWriter<File>,
        dest: PathBuf,
    },
    /// An object (`-o s3://...`), uploaded in parts and visible once complete.
    Object {
        upload: Box<BufWriter<store::Upload>>,
        url: String,
    },
    /// `-t`: decoded bytes are checked and dropped.
    Discard(io::Sink),
}

impl Output {
    pub fn stdout() -> Self {
        Output::Stdout(BufWriter::with_capacity(1 << 20, io::stdout()))
    }

    /// The output for `dest`: a temporary file beside it (failing early if `dest` exists and
    /// `force` is off), or `dest` itself opened for writing when it is a character device or
    /// FIFO. `like` gives its permissions to a new file.
    pub fn file(dest: &Path, force: bool, like: Option<&Path>) -> Result<Self> {
        if let Some(url) = dest.to_str().filter(|d| store::is_url(d)) {
            return Self::object(url, force);
        }
        match existing(dest)? {
            Existing::Stream => {
                let f = fs::OpenOptions::new()
                    .write(true)
                    .open(dest)
                    .with_context(|| format!("cannot open {} for writing", dest.display()))?;
                return Ok(Output::Stream {
                    w: BufWriter::with_capacity(1 << 20, f),
                    dest: dest.to_path_buf(),
                });
            }
            Existing::Regular if !force => {
                bail!("{} already exists; use -f to overwrite it", dest.display())
            }
            Existing::Regular | Existing::None => {}
        }
        let (dir, name) = temp_place(dest);
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        let pending = cleanup::Pending::new(tmp.path());
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
            pending,
        })
    }

    /// The object at `url`, refused where one exists and `force` is off.
    fn object(url: &str, force: bool) -> Result<Self> {
        let loc = store::locate(url)?;
        if !force && store::exists(&loc)? {
            bail!("{url} already exists; use -f to overwrite it");
        }
        Ok(Output::Object {
            upload: Box::new(BufWriter::with_capacity(
                1 << 20,
                store::Upload::start(&loc)?,
            )),
            url: url.to_string(),
        })
    }

    /// True when the output replaces or creates a regular file (not standard output, a
    /// device or a FIFO): only then may `--rm` remove the input.
    pub fn is_file(&self) -> bool {
        matches!(self, Output::File { .. })
    }

    /// Makes the output final: flushes, syncs and renames a file into place.
    pub fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut w) => Ok(w.flush().map_err(stdout_io_error)?),
            Output::Discard(_) => Ok(()),
            Output::Object { upload, url } => {
                let upload = (*upload)
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("cannot write {url}"))?;
                Ok(upload.complete()?)
            }
            Output::Stream { mut w, dest } => w
                .flush()
                .with_context(|| format!("cannot write {}", dest.display())),
            Output::File {
                tmp,
                dest,
                force,
                pending,
            } => {
                let tmp = tmp
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("cannot write {}", dest.display()))?;
                tmp.as_file()
                    .sync_all()
                    .with_context(|| format!("cannot sync {}", dest.display()))?;
                // Whatever appeared under the name meanwhile is checked again: never rename
                // over a device, FIFO or folder.
                if let Existing::Stream = existing(&dest)? {
                    bail!(
                        "{} became a device or FIFO while it was written; output not moved there",
                        dest.display()
                    );
                }
                let r = if force {
                    tmp.persist(&dest).map(drop)
                } else {
                    tmp.persist_noclobber(&dest).map(drop)
                };
                let r = r.map_err(|e| e.error).with_context(|| {
                    format!("cannot move the output into place as {}", dest.display())
                });
                drop(pending);
                r
            }
        }
    }
}

/// The folder a temporary file for `dest` goes in, and the name it is made from.
pub fn temp_place(dest: &Path) -> (&Path, String) {
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write(buf).map_err(stdout_io_error),
            Output::File { tmp, .. } => tmp.write(buf),
            Output::Stream { w, .. } => w.write(buf),
            Output::Object { upload, .. } => upload.write(buf),
            Output::Discard(s) => s.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(buf).map_err(stdout_io_error),
            Output::File { tmp, .. } => tmp.write_all(buf),
            Output::Stream { w, .. } => w.write_all(buf),
            Output::Object { upload, .. } => upload.write_all(buf),
            Output::Discard(s) => s.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush().map_err(stdout_io_error),
            Output::File { tmp, .. } => tmp.flush(),
            Output::Stream { w, .. } => w.flush(),
            Output::Object { upload, .. } => upload.flush(),
            Output::Discard(s) => s.flush(),
        }
    }
}

#[cfg(feature = "sql")]
/// A Parquet writer compressing with zstd level 3 (the level Parquet users commonly pick).
pub fn parquet_writer<W: io::Write + Send>(
    out: W,
    schema: datafusion::arrow::datatypes::SchemaRef,
) -> Result<datafusion::parquet::arrow::ArrowWriter<W>> {
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::basic::{Compression, ZstdLevel};
    use datafusion::parquet::file::properties::WriterProperties;

    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .build();
    Ok(ArrowWriter::try_new(out, schema, Some(props))?)
}

/// An input: a file, or standard input.
pub struct Input {
    /// The path, or `None` for standard input or an object.
    pub path: Option<PathBuf>,
    /// The object's URL, for an object.
    pub url: Option<String>,
    pub reader: Box<dyn io::Read + Send>,
    /// Size in bytes, where known (for the progress bar).
    pub len: Option<u64>,
}

impl Input {
    pub fn open(path: &Path) -> Result<Self> {
        if path == Path::new("-") {
            return Ok(Self::stdin());
        }
        if let Some(url) = path.to_str().filter(|p| store::is_url(p)) {
            let reader = store::ObjectReader::open(&store::locate(url)?)?;
            return Ok(Self {
                path: None,
                url: Some(url.to_string()),
                len: Some(reader.len),
                reader: Box::new(reader),
            });
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
            url: None,
            reader: Box::new(f),
            len: Some(meta.len()),
        })
    }

    pub fn stdin() -> Self {
        Self {
            path: None,
            url: None,
            reader: Box::new(io::stdin()),
            len: None,
        }
    }

    /// How messages name this input.
    pub fn name(&self) -> String {
        match (&self.path, &self.url) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(url)) => url.clone(),
            (None, None) => "(stdin)".to_string(),
        }
    }
}

/// True if writing compressed bytes to standard output would put them on a terminal.
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}
