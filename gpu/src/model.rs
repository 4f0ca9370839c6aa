//! A model on disk as glyd packs it: one safetensors file, or a folder of them (shards with
//! their index JSON, config and tokenizer files beside). Headers are read and validated up
//! front; tensor bytes are read one tensor at a time, so memory stays at one tensor.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::Cursor;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::safetensors::{self, Header, TensorInfo};
use crate::torchzip::{self, TorchPart};

/// One file of a model.
pub struct ModelFile {
    pub path: PathBuf,
    /// Path relative to the model folder with `/` separators (the file name for a single file).
    pub name: String,
    pub len: u64,
    /// The validated header, for safetensors files.
    pub header: Option<Header>,
    /// A `torch.save` checkpoint's parts: its storages and the bytes between them.
    pub torch: Option<Vec<TorchPart>>,
    /// The file's bytes, for a model held in memory ([`Model::from_bytes`]); read from `path`
    /// otherwise.
    pub bytes: Option<Vec<u8>>,
}

impl ModelFile {
    fn safetensors(
        path: PathBuf,
        name: String,
        len: u64,
        h: Header,
        bytes: Option<Vec<u8>>,
    ) -> Self {
        ModelFile {
            path,
            name,
            len,
            header: Some(h),
            torch: None,
            bytes,
        }
    }

    fn torch(
        path: PathBuf,
        name: String,
        len: u64,
        parts: Vec<TorchPart>,
        bytes: Option<Vec<u8>>,
    ) -> Self {
        ModelFile {
            path,
            name,
            len,
            header: None,
            torch: Some(parts),
            bytes,
        }
    }

    /// Adds this file's tensors (file number `f`) to `by_name`; a name already there keeps
    /// its first file.
    fn index(&self, f: usize, by_name: &mut HashMap<String, (usize, TensorInfo, u64)>) {
        if let Some(h) = &self.header {
            for t in &h.tensors {
                let at = h.data_offset() + t.start;
                by_name.entry(t.name.clone()).or_insert((f, t.clone(), at));
            }
        }
        for (info, at) in self.torch.iter().flatten().filter_map(TorchPart::tensor) {
            by_name.entry(info.name.clone()).or_insert((f, info, at));
        }
    }

    /// `len` bytes at `offset` of the file (checked against it by the caller, as the header
    /// was validated against the file's length).
    pub fn read(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        match &self.bytes {
            Some(b) => usize::try_from(offset)
                .ok()
                .zip(usize::try_from(offset + len).ok())
                .and_then(|(s, e)| b.get(s..e))
                .map(Cow::Borrowed)
                .ok_or_else(|| Error::Usage(format!("{}: range past the end", self.name))),
            None => read_range(&self.path, offset, len).map(Cow::Owned),
        }
    }
}

/// A model: its files, and where each tensor lives.
pub struct Model {
    /// True when the model is a folder (unpacking then writes a folder).
    pub folder: bool,
    pub files: Vec<ModelFile>,
    /// Each tensor's file, description and first byte in that file.
    by_name: HashMap<String, (usize, TensorInfo, u64)>,
}

fn is_safetensors(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "safetensors")
}

/// In a folder, the files whose name says `torch.save` wrote them.
fn is_checkpoint(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e == "pt" || e == "pth" || e == "bin" || e == "ckpt")
}

impl Model {
    /// Opens a safetensors file or a folder (every regular file under it, in name order).
    pub fn open(path: &Path) -> Result<Model> {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        let (folder, mut paths) = if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            if !found.iter().any(|p| is_safetensors(p)) {
                return Err(Error::Usage(format!(
                    "{}: no .safetensors files in this folder",
                    path.display()
                )));
            }
            (true, found)
        } else {
            (false, vec![path.to_path_buf()])
        };
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        let mut by_name = HashMap::new();
        for p in paths {
            let name = if folder {
                let rel = p.strip_prefix(path).expect("walked under the folder");
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            } else {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            let len = std::fs::metadata(&p)?.len();
            let mut head = [0u8; 4];
            let got = File::open(&p)?.read(&mut head)?;
            let file = if torchzip::is_zip(&head[..got]) && (!folder || is_checkpoint(&p)) {
                let mut read = |o, n| read_range(&p, o, n).map_err(|e| e.to_string());
                let parts = torchzip::parts(len, &mut read).map_err(|d| {
                    Error::Usage(format!(
                        "{}: not a safetensors file or a torch.save checkpoint ({d})",
                        p.display()
                    ))
                })?;
                ModelFile::torch(p, name, len, parts, None)
            } else if is_safetensors(&p) || !folder {
                let mut f = File::open(&p)?;
                let h = safetensors::read_header(&mut f, len).map_err(|e| in_file(&p, e))?;
                ModelFile::safetensors(p, name, len, h, None)
            } else {
                ModelFile {
                    path: p,
                    name,
                    len,
                    header: None,
                    torch: None,
                    bytes: None,
                }
            };
            file.index(files.len(), &mut by_name);
            files.push(file);
        }
        Ok(Model {
            folder,
            files,
            by_name,
        })
    }

    /// A model of one file held in `bytes` (as a caller that built it in memory has it), called
    /// `name`: a safetensors file, or a `torch.save` checkpoint (a zip); validated as
    /// [`Model::open`] validates a file.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Model> {
        let len = bytes.len() as u64;
        let file = if torchzip::is_zip(&bytes) {
            let mut read = |o: u64, n: u64| -> std::result::Result<Vec<u8>, String> {
                usize::try_from(o)
                    .ok()
                    .zip(o.checked_add(n).and_then(|e| usize::try_from(e).ok()))
                    .and_then(|(s, e)| bytes.get(s..e))
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| format!("range {o}+{n} past the end"))
            };
            let parts = torchzip::parts(len, &mut read)
                .map_err(|d| Error::Usage(format!("{name}: not a torch.save checkpoint ({d})")))?;
            ModelFile::torch(PathBuf::from(name), name.to_string(), len, parts, None)
        } else {
            let header = safetensors::read_header(&mut Cursor::new(&bytes), len)?;
            ModelFile::safetensors(PathBuf::from(name), name.to_string(), len, header, None)
        };
        let mut by_name = HashMap::new();
        file.index(0, &mut by_name);
        Ok(Model {
            folder: false,
            files: vec![ModelFile {
                bytes: Some(bytes),
                ..file
            }],
            by_name,
        })
    }

    /// The tensor called `name`: its file and description.
    pub fn tensor(&self, name: &str) -> Option<(&ModelFile, &TensorInfo)> {
        let (f, t, _) = self.by_name.get(name)?;
        Some((&self.files[*f], t))
    }

    /// The bytes of tensor `name`, when this model has it with `dtype` and `shape`.
    pub fn matching_tensor(&self, want: &TensorInfo) -> Result<Option<Cow<'_, [u8]>>> {
        let Some((f, t, at)) = self.by_name.get(&want.name) else {
            return Ok(None);
        };
        if t.dtype != want.dtype || t.shape != want.shape {
            return Ok(None);
        }
        self.files[*f].read(*at, t.len()).map(Some)
    }

    /// Total bytes of all files.
    pub fn total_len(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }
}

/// Reads `len` bytes at `offset` of `path` (`len` checked against the file by the caller).
pub fn read_range(path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut buf =
        vec![0u8; usize::try_from(len).map_err(|_| Error::Usage("tensor too large".into()))?];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

fn in_file(p: &Path, e: Error) -> Error {
    match e {
        Error::Safetensors {
            tensor,
            offset,
            detail,
        } => Error::Safetensors {
            tensor,
            offset,
            detail: format!("{}: {detail}", p.display()),
        },
        e => e,
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            walk(&e.path(), out)?;
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}
