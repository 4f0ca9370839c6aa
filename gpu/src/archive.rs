//! Tensor archives (`docs/FORMAT.md` §8): a model's files packed into one `.glyd` file. Each
//! safetensors file is kept as its header JSON, its tensors (each coded on its own) and any
//! bytes between them; other files of a model folder are kept whole. An index at the end
//! locates every piece, so one tensor is read without touching the others, and unpacking
//! writes back every file byte for byte.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use glyd_core::varint;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::model::{read_range, Model};
use crate::safetensors::Part;
use crate::tensor::{self, Layout, Method};
use crate::{dense, tiered};

/// First bytes of a tensor archive: `\x89GLT`.
pub const MAGIC: [u8; 4] = [0x89, b'G', b'L', b'T'];
/// Last bytes: `TLG\x89`.
pub const END_MAGIC: [u8; 4] = [b'T', b'L', b'G', 0x89];
/// Format version this build writes and reads.
pub const VERSION: u8 = 1;
const HEADER_LEN: u64 = 8;
const FOOTER_LEN: u64 = 20;

/// What an index entry holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A safetensors file's header JSON.
    Header,
    /// A tensor's data.
    Tensor {
        name: String,
        dtype: DType,
        shape: Vec<u64>,
    },
    /// Data-section bytes no tensor claims.
    Gap,
    /// A whole non-safetensors file.
    File,
}

/// One coded piece of the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Decoded bytes.
    pub raw_len: u64,
    pub method: Method,
    /// Payload position in the archive.
    pub offset: u64,
    pub len: u64,
    /// Checksum of the decoded bytes (glyd-core's XXH3-based 32 bits).
    pub checksum: u32,
}

impl Entry {
    /// The tensor's name, for a tensor entry.
    pub fn tensor_name(&self) -> Option<&str> {
        match &self.kind {
            EntryKind::Tensor { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// What a packed file was (`docs/FORMAT.md` §8.2), which says how its entries make it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Any other file: one whole-file entry.
    Other = 0,
    /// A safetensors file: its header JSON, then tensors and gaps.
    Safetensors = 1,
    /// A `torch.save` checkpoint: storages (as tensors) and gaps, covering the file.
    TorchZip = 2,
}

/// One packed file: its entries in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRecord {
    pub name: String,
    pub kind: FileKind,
    pub entries: Vec<Entry>,
}

impl FileRecord {
    /// Bytes of the unpacked file.
    pub fn len(&self) -> u64 {
        let body: u64 = self.entries.iter().map(|e| e.raw_len).sum();
        body + if self.kind == FileKind::Safetensors {
            8
        } else {
            0
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Options for [`pack`].
#[derive(Clone, Debug, Default)]
pub struct PackOptions {
    pub layout: Layout,
    /// A base model: tensors that match it in name, dtype and shape may be coded as XOR.
    pub base: Option<PathBuf>,
    /// Measure each float tensor's exponent-entropy floor for the report
    /// ([`TensorReport::floor_bits`]): one more pass over every tensor.
    pub floors: bool,
}

/// One tensor's line of a pack report.
#[derive(Clone, Debug)]
pub struct TensorReport {
    pub name: String,
    pub dtype: DType,
    pub elements: u64,
    pub bytes: u64,
    pub packed: u64,
    pub method: Method,
    /// Order-0 entropy of the exponents plus the verbatim sign and mantissa bits, in bits per
    /// value: the floor for coding the exponent alone (float tensors, when
    /// [`PackOptions::floors`] asked for it).
    pub floor_bits: Option<f64>,
}

impl TensorReport {
    /// Bits per value achieved.
    pub fn bits_per_value(&self) -> f64 {
        self.packed as f64 * 8.0 / self.elements.max(1) as f64
    }
}

/// What [`pack`] did.
#[derive(Clone, Debug, Default)]
pub struct PackReport {
    pub tensors: Vec<TensorReport>,
    pub input_bytes: u64,
    pub archive_bytes: u64,
}

/// The exponent-entropy floor of a float tensor, in bits per value.
pub fn floor_bits(dtype: DType, bytes: &[u8]) -> Option<f64> {
    let fb = dtype.float_bits()?;
    let split = crate::float::Split { fb, k: 0 };
    let mut counts = [0u64; 256];
    let mut n = 0u64;
    for w in crate::float::words(fb, bytes) {
        counts[split.exponent(w) as usize] += 1;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let h: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64 / n as f64) * (c as f64 / n as f64).log2())
        .sum();
    Some(h + f64::from(fb.raw_bits()))
}

/// Packs the model at `input` (a safetensors file or a folder) into a tensor archive at
/// `output`, written to a temporary file beside it and renamed into place. `progress` is
/// called with the input bytes done so far.
pub fn pack(
    input: &Path,
    output: &Path,
    opts: &PackOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<PackReport> {
    let model = Model::open(input)?;
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".glyd-pack-")
        .tempfile_in(dir)
        .map_err(|e| Error::at(dir, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let report = pack_to(&model, &mut w, opts, progress)?;
    w.flush()?;
    drop(w);
    tmp.as_file().sync_all()?;
    // The archive takes the model's permissions (as gzip and zstd outputs do), not the
    // temporary file's private ones.
    if let Some(Ok(meta)) = model.files.first().map(|f| std::fs::metadata(&f.path)) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(output)
        .map_err(|e| Error::at(output, e.error))?;
    Ok(report)
}

/// Packs `model` into a tensor archive written to `w` from start to end (no seeking), so a
/// caller may write it anywhere. `progress` as for [`pack`].
pub fn pack_to(
    model: &Model,
    w: &mut dyn Write,
    opts: &PackOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<PackReport> {
    let base = opts.base.as_deref().map(Model::open).transpose()?;
    pack_model(model, base.as_ref(), opts.layout, opts.floors, w, progress)
}

/// Packs `model` into `w` as [`pack_to`] does, against `base` (tensors that match it in
/// name, dtype and shape may be coded as XOR), which the caller has open (or holds in memory);
/// `floors` as [`PackOptions::floors`].
pub fn pack_model(
    model: &Model,
    base: Option<&Model>,
    layout: Layout,
    floors: bool,
    w: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<PackReport> {
    w.write_all(&MAGIC)?;
    w.write_all(&[VERSION, 0, 0, 0])?;
    let mut at = HEADER_LEN;
    let mut done = 0u64;
    let mut report = PackReport {
        input_bytes: model.total_len(),
        ..Default::default()
    };
    let mut records = Vec::with_capacity(model.files.len());
    let mut put = |w: &mut dyn Write, kind, raw: &[u8], method, payload: &[u8]| -> Result<Entry> {
        w.write_all(payload)?;
        let e = Entry {
            kind,
            raw_len: raw.len() as u64,
            method,
            offset: at,
            len: payload.len() as u64,
            checksum: glyd_core::checksum(raw),
        };
        at += payload.len() as u64;
        Ok(e)
    };
    for file in &model.files {
        let mut entries = Vec::new();
        if let Some(parts) = &file.torch {
            for part in parts {
                let range = part.range();
                let bytes = file.read(range.start, range.end - range.start)?;
                let entry = match part.tensor() {
                    None => {
                        let (m, p) = tensor::encode(DType::U8, &bytes, layout, None);
                        put(w, EntryKind::Gap, &bytes, m, &p)?
                    }
                    Some((info, _)) => {
                        let base_bytes = match base {
                            Some(b) => b.matching_tensor(&info)?,
                            None => None,
                        };
                        let (m, p) =
                            tensor::encode(info.dtype, &bytes, layout, base_bytes.as_deref());
                        report.tensors.push(TensorReport {
                            name: info.name.clone(),
                            dtype: info.dtype,
                            elements: info.elements(),
                            bytes: info.len(),
                            packed: p.len() as u64,
                            method: m,
                            floor_bits: floors.then(|| floor_bits(info.dtype, &bytes)).flatten(),
                        });
                        let kind = EntryKind::Tensor {
                            name: info.name,
                            dtype: info.dtype,
                            shape: info.shape,
                        };
                        put(w, kind, &bytes, m, &p)?
                    }
                };
                entries.push(entry);
                done += range.end - range.start;
                progress(done);
            }
            records.push(FileRecord {
                name: file.name.clone(),
                kind: FileKind::TorchZip,
                entries,
            });
            continue;
        }
        let Some(h) = &file.header else {
            let bytes = file.read(0, file.len)?;
            let (m, p) = tensor::encode(DType::U8, &bytes, layout, None);
            entries.push(put(w, EntryKind::File, &bytes, m, &p)?);
            done += file.len;
            progress(done);
            records.push(FileRecord {
                name: file.name.clone(),
                kind: FileKind::Other,
                entries,
            });
            continue;
        };
        let (m, p) = tensor::encode(DType::U8, &h.json, layout, None);
        entries.push(put(w, EntryKind::Header, &h.json, m, &p)?);
        for part in h.parts() {
            let (start, end) = match part {
                Part::Tensor(i) => (h.tensors[i].start, h.tensors[i].end),
                Part::Gap { start, end } => (start, end),
            };
            let bytes = file.read(h.data_offset() + start, end - start)?;
            let entry = match part {
                Part::Tensor(i) => {
                    let t = &h.tensors[i];
                    let base_bytes = match base {
                        Some(b) => b.matching_tensor(t)?,
                        None => None,
                    };
                    let (m, p) = tensor::encode(t.dtype, &bytes, layout, base_bytes.as_deref());
                    report.tensors.push(TensorReport {
                        name: t.name.clone(),
                        dtype: t.dtype,
                        elements: t.elements(),
                        bytes: t.len(),
                        packed: p.len() as u64,
                        method: m,
                        floor_bits: floors.then(|| floor_bits(t.dtype, &bytes)).flatten(),
                    });
                    let kind = EntryKind::Tensor {
                        name: t.name.clone(),
                        dtype: t.dtype,
                        shape: t.shape.clone(),
                    };
                    put(w, kind, &bytes, m, &p)?
                }
                Part::Gap { .. } => {
                    let (m, p) = tensor::encode(DType::U8, &bytes, layout, None);
                    put(w, EntryKind::Gap, &bytes, m, &p)?
                }
            };
            entries.push(entry);
            done += end - start;
            progress(done);
        }
        done += h.data_offset();
        progress(done);
        records.push(FileRecord {
            name: file.name.clone(),
            kind: FileKind::Safetensors,
            entries,
        });
    }
    let index = write_index(model.folder, &records);
    w.write_all(&index)?;
    w.write_all(&at.to_le_bytes())?;
    w.write_all(&(index.len() as u32).to_le_bytes())?;
    w.write_all(&glyd_core::checksum(&index).to_le_bytes())?;
    w.write_all(&END_MAGIC)?;
    report.archive_bytes = at + index.len() as u64 + FOOTER_LEN;
    Ok(report)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    varint::put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn write_index(folder: bool, files: &[FileRecord]) -> Vec<u8> {
    let mut out = vec![u8::from(folder)];
    varint::put(&mut out, files.len() as u64);
    for f in files {
        put_str(&mut out, &f.name);
        out.push(f.kind as u8);
        varint::put(&mut out, f.entries.len() as u64);
        for e in &f.entries {
            match &e.kind {
                EntryKind::Header => out.push(0),
                EntryKind::Tensor { name, dtype, shape } => {
                    out.push(1);
                    put_str(&mut out, name);
                    out.push(dtype.code());
                    varint::put(&mut out, shape.len() as u64);
                    for &d in shape {
                        varint::put(&mut out, d);
                    }
                }
                EntryKind::Gap => out.push(2),
                EntryKind::File => out.push(3),
            }
            varint::put(&mut out, e.raw_len);
            out.push(e.method as u8);
            varint::put(&mut out, e.offset);
            varint::put(&mut out, e.len);
            out.extend_from_slice(&e.checksum.to_le_bytes());
        }
    }
    out
}

/// Reads fields of the index, erroring with the index offset of the problem.
struct IndexReader<'a> {
    src: &'a [u8],
    pos: usize,
    base: u64,
}

impl IndexReader<'_> {
    fn bad(&self, detail: impl Into<String>) -> Error {
        Error::corrupt(None, self.base + self.pos as u64, detail)
    }
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .src
            .get(self.pos)
            .ok_or_else(|| self.bad("index is truncated"))?;
        self.pos += 1;
        Ok(b)
    }
    fn varint(&mut self) -> Result<u64> {
        varint::get(self.src, &mut self.pos).ok_or_else(|| self.bad("index holds a bad varint"))
    }
    fn count(&mut self, what: &str) -> Result<usize> {
        // Every counted item takes at least a byte: a count past the bytes left is a lie.
        let n = self.varint()?;
        if n > (self.src.len() - self.pos) as u64 {
            return Err(self.bad(format!("{what} count {n} exceeds the index")));
        }
        Ok(n as usize)
    }
    fn string(&mut self) -> Result<String> {
        let n = self.count("string byte")?;
        let s = &self.src[self.pos..self.pos + n];
        self.pos += n;
        String::from_utf8(s.to_vec()).map_err(|_| self.bad("name is not UTF-8"))
    }
}

fn read_index(src: &[u8], base: u64, body_end: u64) -> Result<(bool, Vec<FileRecord>)> {
    let mut r = IndexReader { src, pos: 0, base };
    let folder = match r.byte()? {
        0 => false,
        1 => true,
        _ => return Err(r.bad("unknown archive kind")),
    };
    let n = r.count("file")?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        let file_kind = match r.byte()? {
            0 => FileKind::Other,
            1 => FileKind::Safetensors,
            2 => FileKind::TorchZip,
            k => return Err(r.bad(format!("file '{name}' has an unknown kind {k}"))),
        };
        let m = r.count("entry")?;
        let mut entries = Vec::with_capacity(m);
        for j in 0..m {
            let kind = match r.byte()? {
                0 => EntryKind::Header,
                1 => {
                    let name = r.string()?;
                    let dtype = DType::from_code(r.byte()?)
                        .ok_or_else(|| r.bad(format!("tensor '{name}' has an unknown dtype")))?;
                    let rank = r.count("dimension")?;
                    let shape = (0..rank).map(|_| r.varint()).collect::<Result<Vec<_>>>()?;
                    EntryKind::Tensor { name, dtype, shape }
                }
                2 => EntryKind::Gap,
                3 => EntryKind::File,
                k => return Err(r.bad(format!("unknown entry kind {k}"))),
            };
            let raw_len = r.varint()?;
            let method = Method::from_code(r.byte()?).ok_or_else(|| r.bad("unknown method"))?;
            let offset = r.varint()?;
            let len = r.varint()?;
            let mut c = [0u8; 4];
            for b in &mut c {
                *b = r.byte()?;
            }
            let e = Entry {
                kind,
                raw_len,
                method,
                offset,
                len,
                checksum: u32::from_le_bytes(c),
            };
            check_entry(&e, file_kind, j, body_end).map_err(|d| r.bad(d))?;
            entries.push(e);
        }
        files.push(FileRecord {
            name,
            kind: file_kind,
            entries,
        });
    }
    if r.pos != src.len() {
        return Err(r.bad("bytes after the last index entry"));
    }
    check_names(folder, &files).map_err(|d| Error::corrupt(None, base, d))?;
    Ok((folder, files))
}

/// Checks every file name before anything is written (FORMAT.md §8.2): a single file's name is
/// one component; a folder's are relative paths of components that are not empty, "." or
/// "..", none repeated and none both a file and a folder.
fn check_names(folder: bool, files: &[FileRecord]) -> Result<(), String> {
    if !folder && files.len() != 1 {
        return Err(format!("a single-file archive lists {} files", files.len()));
    }
    let mut names = std::collections::HashSet::new();
    let mut dirs = std::collections::HashSet::new();
    for f in files {
        let parts: Vec<&str> = f.name.split('/').collect();
        let bad = parts
            .iter()
            .any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains('\0'));
        if bad || (!folder && parts.len() > 1) {
            return Err(format!(
                "file name '{}' is not a plain relative path (empty, \".\" or \"..\" parts, or a folder in a single-file archive)",
                f.name
            ));
        }
        if !names.insert(f.name.as_str()) {
            return Err(format!("file name '{}' appears twice", f.name));
        }
        for k in 1..parts.len() {
            dirs.insert(parts[..k].join("/"));
        }
    }
    if let Some(clash) = files.iter().find(|f| dirs.contains(&f.name)) {
        return Err(format!(
            "'{}' is both a file and a folder of other files",
            clash.name
        ));
    }
    Ok(())
}

fn check_entry(e: &Entry, kind: FileKind, j: usize, body_end: u64) -> Result<(), String> {
    let label = entry_label(e);
    if e.offset < HEADER_LEN || e.offset.checked_add(e.len).is_none_or(|end| end > body_end) {
        return Err(format!(
            "{label}: payload {}+{} lies outside the archive body",
            e.offset, e.len
        ));
    }
    let expected_kind = match (&e.kind, kind, j) {
        (EntryKind::Header, FileKind::Safetensors, 0) | (EntryKind::File, FileKind::Other, 0) => {
            true
        }
        (EntryKind::Tensor { .. } | EntryKind::Gap, FileKind::Safetensors, j) => j > 0,
        (EntryKind::Tensor { .. } | EntryKind::Gap, FileKind::TorchZip, _) => true,
        _ => false,
    };
    if !expected_kind {
        return Err(format!("{label}: entry out of place"));
    }
    if let EntryKind::Tensor { dtype, shape, .. } = &e.kind {
        let bytes = shape
            .iter()
            .try_fold(dtype.size() as u64, |a, &d| a.checked_mul(d));
        if bytes != Some(e.raw_len) {
            return Err(format!(
                "{label}: shape {shape:?} does not match {} bytes",
                e.raw_len
            ));
        }
    }
    // Bound what a decoder allocates by what its payload can expand to.
    let float = match &e.kind {
        EntryKind::Tensor { dtype, .. } => dtype.float_bits(),
        _ => None,
    };
    let bound = match (e.method, float) {
        (Method::Stored, _) => e.len,
        (Method::Dense, Some(fb)) => dense::max_decoded_len(fb, e.len),
        (Method::Tiered, Some(fb)) => tiered::max_decoded_len(fb, e.len),
        (Method::Dense | Method::Tiered, None) => {
            return Err(format!(
                "{label}: float layout on a tensor that is not a float type"
            ))
        }
        (Method::Frame | Method::XorBase, _) => u64::MAX,
    };
    if e.raw_len > bound {
        return Err(format!(
            "{label}: {} bytes cannot come from a {}-byte payload",
            e.raw_len, e.len
        ));
    }
    Ok(())
}

fn entry_label(e: &Entry) -> String {
    match &e.kind {
        EntryKind::Header => "header entry".into(),
        EntryKind::Tensor { name, .. } => format!("tensor '{name}'"),
        EntryKind::Gap => "gap entry".into(),
        EntryKind::File => "file entry".into(),
    }
}

/// An open tensor archive.
pub struct TensorArchive {
    path: PathBuf,
    /// The most a streamed entry's decoder holds at once (see `glyd_core::Decoder`).
    pub(crate) memory: u64,
    /// True when the packed model was a folder.
    pub folder: bool,
    pub files: Vec<FileRecord>,
}

impl TensorArchive {
    /// Opens and validates the footer and index of the archive at `path`.
    pub fn open(path: &Path) -> Result<TensorArchive> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        let mut head = [0u8; 8];
        if len < HEADER_LEN + FOOTER_LEN {
            return Err(Error::corrupt(
                None,
                0,
                "file is too short for a tensor archive",
            ));
        }
        f.read_exact(&mut head)?;
        if head[..4] != MAGIC {
            return Err(Error::corrupt(
                None,
                0,
                "not a glyd tensor archive (bad magic)",
            ));
        }
        if head[4] != VERSION {
            return Err(Error::corrupt(
                None,
                4,
                format!(
                    "format version {} (this build reads {VERSION}; upgrade glyd)",
                    head[4]
                ),
            ));
        }
        f.seek(SeekFrom::Start(len - FOOTER_LEN))?;
        let mut foot = [0u8; FOOTER_LEN as usize];
        f.read_exact(&mut foot)?;
        let at = len - FOOTER_LEN;
        if foot[16..] != END_MAGIC {
            return Err(Error::corrupt(
                None,
                at + 16,
                "end magic missing (truncated archive?)",
            ));
        }
        let index_at = u64::from_le_bytes(foot[..8].try_into().expect("8 bytes"));
        let index_len = u64::from(u32::from_le_bytes(foot[8..12].try_into().expect("4 bytes")));
        let stored = u32::from_le_bytes(foot[12..16].try_into().expect("4 bytes"));
        if index_at < HEADER_LEN || index_at.checked_add(index_len) != Some(at) {
            return Err(Error::corrupt(
                None,
                at,
                "index position disagrees with the file length",
            ));
        }
        f.seek(SeekFrom::Start(index_at))?;
        let mut index = vec![0u8; index_len as usize];
        f.read_exact(&mut index)?;
        if glyd_core::checksum(&index) != stored {
            return Err(Error::corrupt(None, index_at, "index checksum mismatch"));
        }
        let (folder, files) = read_index(&index, index_at, index_at)?;
        Ok(TensorArchive {
            path: path.to_path_buf(),
            memory: glyd_core::DEFAULT_MEMORY_LIMIT,
            folder,
            files,
        })
    }

    /// Sets the memory limit of streamed entries' decoders (default
    /// [`glyd_core::DEFAULT_MEMORY_LIMIT`]).
    pub fn with_memory_limit(mut self, bytes: u64) -> Self {
        self.memory = bytes;
        self
    }

    /// Every tensor entry, in archive order.
    pub fn tensors(&self) -> impl Iterator<Item = &Entry> {
        self.files
            .iter()
            .flat_map(|f| &f.entries)
            .filter(|e| matches!(e.kind, EntryKind::Tensor { .. }))
    }

    /// The entry of tensor `name`.
    pub fn tensor(&self, name: &str) -> Option<&Entry> {
        self.tensors()
            .find(|e| matches!(&e.kind, EntryKind::Tensor { name: n, .. } if n == name))
    }

    /// Decodes one entry, checking its checksum. `base` is needed for XOR-coded tensors.
    pub fn read_entry(&self, e: &Entry, base: Option<&Model>) -> Result<Vec<u8>> {
        let len = usize::try_from(e.raw_len)
            .map_err(|_| Error::corrupt(e.tensor_name(), e.offset, "entry too large"))?;
        let mut out = vec![0u8; len];
        self.read_entry_into(e, base, &mut out)?;
        Ok(out)
    }

    /// [`TensorArchive::read_entry`] into `out`, which must be the entry's length (a caller's
    /// buffer: a tensor decoded where it will live).
    pub fn read_entry_into(&self, e: &Entry, base: Option<&Model>, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 != e.raw_len {
            return Err(Error::Usage(format!(
                "the output holds {} bytes, the entry {}",
                out.len(),
                e.raw_len
            )));
        }
        let payload = read_range(&self.path, e.offset, e.len)?;
        let name = match &e.kind {
            EntryKind::Tensor { name, .. } => Some(name.as_str()),
            _ => None,
        };
        let dtype = match &e.kind {
            EntryKind::Tensor { dtype, .. } => *dtype,
            _ => DType::U8,
        };
        let base_bytes = match (&e.kind, e.method, base) {
            (EntryKind::Tensor { name, dtype, shape }, Method::XorBase, Some(b)) => {
                let info = crate::safetensors::TensorInfo {
                    name: name.clone(),
                    dtype: *dtype,
                    shape: shape.clone(),
                    start: 0,
                    end: e.raw_len,
                };
                b.matching_tensor(&info)?
            }
            _ => None,
        };
        if e.method == Method::XorBase && base_bytes.is_none() {
            let why = match base {
                None => "pass the base it was packed against (--base; base= in Python)",
                Some(_) => "the base given has no tensor of this name, dtype and shape: is it the one it was packed against?",
            };
            return Err(Error::Usage(format!(
                "tensor '{}' was packed against a base model: {why}",
                name.unwrap_or("?")
            )));
        }
        if matches!(e.method, Method::Frame | Method::XorBase) {
            // A frame's own header bounds what it expands to; check it before allocating.
            let declared = glyd_core::decompressed_size(&payload)
                .map_err(|err| Error::corrupt(name, e.offset, err.to_string()))?;
            if declared != e.raw_len {
                return Err(Error::corrupt(
                    name,
                    e.offset,
                    format!("frame declares {declared} bytes, the index {}", e.raw_len),
                ));
            }
        }
        tensor::decode(e.method, dtype, &payload, out, base_bytes.as_deref())
            .map_err(|d| Error::corrupt(name, e.offset, d))?;
        let actual = glyd_core::checksum(out);
        if actual != e.checksum {
            let hint = if e.method == Method::XorBase {
                " (is --base the model this was packed against?)"
            } else {
                ""
            };
            return Err(Error::corrupt(
                name,
                e.offset,
                format!(
                    "checksum mismatch: stored {:08x}, decoded {actual:08x}{hint}",
                    e.checksum
                ),
            ));
        }
        Ok(())
    }

    /// The decoded bytes of tensor `name`.
    pub fn read_tensor(&self, name: &str, base: Option<&Model>) -> Result<Vec<u8>> {
        let e = self.tensor(name).ok_or_else(|| {
            Error::Usage(format!(
                "no tensor named '{name}' in {}",
                self.path.display()
            ))
        })?;
        self.read_entry(e, base)
    }

    /// Bytes the unpacked model takes.
    pub fn unpacked_len(&self) -> u64 {
        self.files.iter().map(FileRecord::len).sum()
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// True when `head` (the first bytes of a file) starts a tensor archive.
pub fn is_tensor_archive(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}
