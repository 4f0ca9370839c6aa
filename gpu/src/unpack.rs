//! Restoring the files of a tensor archive safely. Each file is streamed to its writer an
//! entry at a time (a frame-coded entry block by block, so memory stays at the codec's blocks
//! whatever size the archive declares); a folder is written whole into a fresh staging folder
//! and only then moved into place, so a failed unpack leaves nothing under the final name.
//! Names were checked when the archive was opened (`archive::check_names`); moving into an
//! existing folder (`replace`) checks every destination first and never follows a link inside
//! it.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::archive::{Entry, EntryKind, TensorArchive};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::tensor::Method;

/// Pieces a streamed entry is written in.
const PIECE: usize = 1 << 20;

impl TensorArchive {
    /// Writes file `i` of the archive to `w`, entry by entry, checking each entry's size and
    /// checksum; `progress` gets the decoded bytes of each entry as it completes. On an error
    /// `w` may hold bytes that are not the file's: write to a temporary file and discard it.
    pub fn write_file(
        &self,
        i: usize,
        w: &mut dyn Write,
        base: Option<&Model>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let f = self.files.get(i).ok_or_else(|| {
            Error::Usage(format!("{}: no file number {i}", self.path().display()))
        })?;
        for e in &f.entries {
            if e.kind == EntryKind::Header {
                w.write_all(&e.raw_len.to_le_bytes())?;
            }
            self.write_entry(e, base, w)?;
            progress(e.raw_len);
        }
        Ok(())
    }

    /// Writes the decoded bytes of tensor `name` to `w`, streamed as [`Self::write_file`] does
    /// (the same caveat on errors).
    pub fn write_tensor(&self, name: &str, w: &mut dyn Write, base: Option<&Model>) -> Result<()> {
        let e = self.tensor(name).ok_or_else(|| {
            Error::Usage(format!(
                "no tensor named '{name}' in {}",
                self.path().display()
            ))
        })?;
        self.write_entry(e, base, w)
    }

    /// Writes one entry's decoded bytes to `w`.
    fn write_entry(&self, e: &Entry, base: Option<&Model>, w: &mut dyn Write) -> Result<()> {
        match e.method {
            Method::Stored | Method::Frame => self.stream_entry(e, None, w),
            Method::XorBase => {
                let base_bytes = self.base_tensor(e, base)?;
                self.stream_entry(e, Some(&base_bytes), w)
            }
            // The float layouts decode whole; their size is bounded by their payload's (the
            // index check), so this holds no more than a few times what the archive stores.
            Method::Dense | Method::Tiered => Ok(w.write_all(&self.read_entry(e, base)?)?),
        }
    }

    /// Streams a stored or frame-coded entry (XORed with `xor` for a base-coded one), checking
    /// its length against the index as it goes and its checksum at the end.
    fn stream_entry(&self, e: &Entry, xor: Option<&[u8]>, w: &mut dyn Write) -> Result<()> {
        let name = e.tensor_name();
        let bad = |detail: String| Error::corrupt(name, e.offset, detail);
        let mut file = File::open(self.path()).map_err(|err| Error::at(self.path(), err))?;
        file.seek(SeekFrom::Start(e.offset))?;
        let payload = file.take(e.len);
        let mut src: Box<dyn Read> = match e.method {
            Method::Stored => Box::new(payload),
            _ => Box::new(glyd_core::Decoder::new(payload).with_memory_limit(self.memory)),
        };
        let mut sum = glyd_core::Checksum::default();
        let mut buf = vec![0u8; PIECE];
        let mut done = 0u64;
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(bad(err.to_string())),
            };
            if done + n as u64 > e.raw_len {
                return Err(bad(format!(
                    "the payload holds more than the index's {} bytes",
                    e.raw_len
                )));
            }
            let piece = &mut buf[..n];
            if let Some(x) = xor {
                let at = done as usize;
                for (o, b) in piece.iter_mut().zip(&x[at..at + n]) {
                    *o ^= b;
                }
            }
            sum.update(piece);
            w.write_all(piece)?;
            done += n as u64;
        }
        if done != e.raw_len {
            return Err(bad(format!(
                "the payload holds {done} bytes, the index {}",
                e.raw_len
            )));
        }
        if sum.value() != e.checksum {
            let hint = if xor.is_some() {
                " (is --base the model this was packed against?)"
            } else {
                ""
            };
            return Err(bad(format!(
                "checksum mismatch: stored {:08x}, decoded {:08x}{hint}",
                e.checksum,
                sum.value()
            )));
        }
        Ok(())
    }

    /// Writes every file of a packed folder under `staging`, an empty folder the caller made
    /// (see [`install`] for moving it into place); `progress` gets the bytes done so far.
    pub fn unpack_into(
        &self,
        staging: &Path,
        base: Option<&Model>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let mut done = 0u64;
        for (i, f) in self.files.iter().enumerate() {
            let target = staging.join(relative(&f.name));
            if let Some(dir) = target.parent() {
                fs::create_dir_all(dir).map_err(|e| Error::at(dir, e))?;
            }
            let file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(|e| Error::at(&target, e))?;
            let mut w = BufWriter::with_capacity(PIECE, &file);
            self.write_file(i, &mut w, base, &mut |n| {
                done += n;
                progress(done);
            })?;
            w.flush().map_err(|e| Error::at(&target, e))?;
            drop(w);
            file.sync_all().map_err(|e| Error::at(&target, e))?;
            self.give_permissions(&target);
        }
        Ok(())
    }

    /// Writes the packed model back as `output` (the file itself, or a folder for a packed
    /// folder): into a temporary file or folder beside it, moved into place when complete. An
    /// existing `output` is an error unless `replace`; then a file is replaced, and a folder
    /// receives the archive's files (see [`install`]).
    pub fn unpack(
        &self,
        output: &Path,
        replace: bool,
        base: Option<&Model>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let dir = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !replace && fs::symlink_metadata(output).is_ok() {
            return Err(Error::Usage(format!(
                "{} already exists; use -f to overwrite",
                output.display()
            )));
        }
        if self.folder {
            let staging = tempfile::Builder::new()
                .prefix(".glyd-unpack-")
                .tempdir_in(dir)
                .map_err(|e| Error::at(dir, e))?;
            self.unpack_into(staging.path(), base, progress)?;
            return install(staging.path(), output, replace, self.path());
        }
        if output.is_dir() {
            return Err(Error::Usage(format!(
                "{} is a folder; the archive holds one file: name the file to write",
                output.display()
            )));
        }
        let tmp = tempfile::Builder::new()
            .prefix(".glyd-unpack-")
            .tempfile_in(dir)
            .map_err(|e| Error::at(dir, e))?;
        let mut w = BufWriter::with_capacity(PIECE, tmp.as_file());
        let mut done = 0u64;
        self.write_file(0, &mut w, base, &mut |n| {
            done += n;
            progress(done);
        })?;
        w.flush()?;
        drop(w);
        tmp.as_file().sync_all()?;
        self.give_permissions(tmp.path());
        tmp.persist(output)
            .map_err(|e| Error::at(output, e.error))?;
        Ok(())
    }

    /// Unpacked files take the archive's permissions, not a temporary file's private ones.
    fn give_permissions(&self, target: &Path) {
        if let Ok(meta) = fs::metadata(self.path()) {
            let _ = fs::set_permissions(target, meta.permissions());
        }
    }

    /// The base model's bytes for an XOR-coded entry.
    fn base_tensor<'m>(&self, e: &Entry, base: Option<&'m Model>) -> Result<Cow<'m, [u8]>> {
        let EntryKind::Tensor { name, dtype, shape } = &e.kind else {
            return Err(Error::corrupt(
                None,
                e.offset,
                "base coding on a non-tensor",
            ));
        };
        let missing = || {
            Error::Usage(format!(
                "tensor '{name}' was packed against a base model: pass --base (the model it was packed against)"
            ))
        };
        let info = crate::safetensors::TensorInfo {
            name: name.clone(),
            dtype: *dtype,
            shape: shape.clone(),
            start: 0,
            end: e.raw_len,
        };
        base.ok_or_else(missing)?
            .matching_tensor(&info)?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "the base model has no tensor '{name}' of this dtype and shape: is --base the model this was packed against?"
                ))
            })
    }
}

/// A stored name (`a/b/c`, checked) as a relative path.
fn relative(name: &str) -> PathBuf {
    name.split('/').collect()
}

/// Moves a staged folder into place as `output`. Where `output` does not exist the folder is
/// renamed to it. Where it is a folder and `replace` is set, each staged file is renamed into
/// it, replacing a file of the same name; first every destination is checked, so nothing moves
/// if any would replace a folder, pass through a link or a file where a folder is needed, or
/// overwrite `archive` itself. The staging folder is gone afterwards when this succeeds.
pub fn install(staging: &Path, output: &Path, replace: bool, archive: &Path) -> Result<()> {
    let meta = match fs::symlink_metadata(output) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::rename(staging, output).map_err(|e| Error::at(output, e))?;
            return sync_parent(output);
        }
        Err(e) => return Err(Error::at(output, e)),
        Ok(m) => m,
    };
    if !replace {
        return Err(Error::Usage(format!(
            "{} already exists; use -f to unpack into it",
            output.display()
        )));
    }
    // The output itself may be a link to a folder (the caller named it); links inside it are
    // never followed.
    if !(meta.is_dir() || (meta.file_type().is_symlink() && output.is_dir())) {
        return Err(Error::Usage(format!(
            "{} exists and is not a folder; the archive holds a folder",
            output.display()
        )));
    }
    let mut dirs = BTreeSet::new();
    let mut files = Vec::new();
    staged(staging, Path::new(""), &mut dirs, &mut files)?;
    for d in &dirs {
        let target = output.join(d);
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                let what = if m.file_type().is_symlink() {
                    "a link (not followed)"
                } else {
                    "not a folder"
                };
                return Err(Error::Usage(format!(
                    "{} is {what}, where the archive has a folder; nothing was unpacked",
                    target.display()
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::at(&target, e)),
        }
    }
    for f in &files {
        let target = output.join(f);
        match fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {
                return Err(Error::Usage(format!(
                    "{} is a folder, where the archive has a file; nothing was unpacked",
                    target.display()
                )))
            }
            Ok(m) if m.is_file() && same_inode(&target, archive) => {
                return Err(Error::Usage(format!(
                    "unpacking would overwrite the archive itself ({}); nothing was unpacked",
                    target.display()
                )))
            }
            _ => {}
        }
    }
    for d in &dirs {
        let target = output.join(d);
        if fs::symlink_metadata(&target).is_err() {
            fs::create_dir(&target).map_err(|e| Error::at(&target, e))?;
        }
    }
    // A rename replaces a link itself, never what it points to.
    for f in &files {
        let target = output.join(f);
        fs::rename(staging.join(f), &target).map_err(|e| Error::at(&target, e))?;
    }
    fs::remove_dir_all(staging).map_err(|e| Error::at(staging, e))?;
    sync_parent(&output.join("x"))
}

/// The folders (parents first) and files under `dir`, relative to the staging root.
fn staged(
    root: &Path,
    rel: &Path,
    dirs: &mut BTreeSet<PathBuf>,
    files: &mut Vec<PathBuf>,
) -> Result<()> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .map_err(|e| Error::at(&dir, e))?
        .collect::<io::Result<_>>()
        .map_err(|e| Error::at(&dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = rel.join(e.file_name());
        if e.file_type().map_err(|err| Error::at(&path, err))?.is_dir() {
            dirs.insert(path.clone());
            staged(root, &path, dirs, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Makes a rename of `path` durable: syncs the folder holding it.
fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::at(dir, e))
}
