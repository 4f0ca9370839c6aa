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

/// One file of a model.
pub struct ModelFile {
    pub path: PathBuf,
    /// Path relative to the model folder with `/` separators (the file name for a single file).
    pub name: String,
    pub len: u64,
    /// The validated header, for safetensors files.
    pub header: Option<Header>,
    /// The file's bytes, for a model held in memory ([`Model::from_bytes`]); read from `path`
    /// otherwise.
    pub bytes: Option<Vec<u8>>,
}

impl ModelFile {
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
    by_name: HashMap<String, (usize, usize)>,
}

fn is_safetensors(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "safetensors")
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
            let header = if is_safetensors(&p) || !folder {
                let mut f = File::open(&p)?;
                let h = safetensors::read_header(&mut f, len).map_err(|e| in_file(&p, e))?;
                for (i, t) in h.tensors.iter().enumerate() {
                    by_name.entry(t.name.clone()).or_insert((files.len(), i));
                }
                Some(h)
            } else {
                None
            };
            files.push(ModelFile {
                path: p,
                name,
                len,
                header,
                bytes: None,
            });
        }
        Ok(Model {
            folder,
            files,
            by_name,
        })
    }

    /// A model of one safetensors file held in `bytes` (as a caller that built it in memory
    /// has it), called `name`; its header is validated as [`Model::open`] validates a file's.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Model> {
        let len = bytes.len() as u64;
        let header = safetensors::read_header(&mut Cursor::new(&bytes), len)?;
        let by_name = header
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), (0, i)))
            .collect();
        Ok(Model {
            folder: false,
            files: vec![ModelFile {
                path: PathBuf::from(name),
                name: name.to_string(),
                len,
                header: Some(header),
                bytes: Some(bytes),
            }],
            by_name,
        })
    }

    /// The tensor called `name`: its file and header entry.
    pub fn tensor(&self, name: &str) -> Option<(&ModelFile, &TensorInfo)> {
        let &(f, t) = self.by_name.get(name)?;
        let file = &self.files[f];
        Some((file, &file.header.as_ref()?.tensors[t]))
    }

    /// The bytes of tensor `name`, when this model has it with `dtype` and `shape`.
    pub fn matching_tensor(&self, want: &TensorInfo) -> Result<Option<Cow<'_, [u8]>>> {
        let Some((file, t)) = self.tensor(&want.name) else {
            return Ok(None);
        };
        if t.dtype != want.dtype || t.shape != want.shape {
            return Ok(None);
        }
        let h = file.header.as_ref().expect("tensors come from headers");
        file.read(h.data_offset() + t.start, t.len()).map(Some)
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
