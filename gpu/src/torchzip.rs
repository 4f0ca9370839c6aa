//! `torch.save` checkpoints as glyd packs them: a zip archive (every member stored, not
//! deflated) of a pickle (`<prefix>/data.pkl`) and the raw bytes of each tensor storage
//! (`<prefix>/data/<key>`). The zip's central directory says where each member's bytes lie;
//! the pickle, read without running it (`pickle.rs`), says each storage's class and so its
//! dtype. A file is then a run of parts: storages, coded as tensors, and the bytes between
//! them (zip headers, the pickle, small records), coded as they are.

use crate::dtype::DType;
use crate::pickle;
use crate::safetensors::TensorInfo;

/// A piece of a checkpoint file, in file order; together they cover it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TorchPart {
    /// Bytes no storage holds.
    Gap { start: u64, end: u64 },
    /// A storage's bytes: `name` is `data/<key>` (its zip member less the prefix, which
    /// names the file it was saved as, so checkpoints match by storage), `dtype` from the
    /// pickle.
    Storage {
        start: u64,
        end: u64,
        name: String,
        dtype: DType,
    },
}

impl TorchPart {
    /// Where the part lies in the file.
    pub fn range(&self) -> std::ops::Range<u64> {
        match self {
            TorchPart::Gap { start, end } | TorchPart::Storage { start, end, .. } => *start..*end,
        }
    }

    /// A storage as a tensor (rank 1, its element count), and where its bytes start.
    pub fn tensor(&self) -> Option<(TensorInfo, u64)> {
        let TorchPart::Storage {
            start,
            end,
            name,
            dtype,
        } = self
        else {
            return None;
        };
        let info = TensorInfo {
            name: name.clone(),
            dtype: *dtype,
            shape: vec![(end - start) / dtype.size() as u64],
            start: 0,
            end: end - start,
        };
        Some((info, *start))
    }
}

/// Whether a file starting with `head` may be a `torch.save` zip (its first local header).
pub fn is_zip(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04")
}

/// The dtype of storage class `class` (`torch.<class>`), where little-endian bytes of it are
/// what a tensor of that dtype holds.
fn dtype_of(class: &str) -> Option<DType> {
    Some(match class {
        "FloatStorage" => DType::F32,
        "DoubleStorage" => DType::F64,
        "HalfStorage" => DType::F16,
        "BFloat16Storage" => DType::BF16,
        "LongStorage" => DType::I64,
        "IntStorage" => DType::I32,
        "ShortStorage" => DType::I16,
        "CharStorage" => DType::I8,
        "ByteStorage" => DType::U8,
        "BoolStorage" => DType::Bool,
        "Float8_e4m3fnStorage" => DType::F8E4M3,
        "Float8_e5m2Storage" => DType::F8E5M2,
        _ => return None,
    })
}

/// One member of the zip, from the central directory.
struct Member {
    name: String,
    method: u16,
    size: u64,
    local: u64,
}

fn le(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(n)?)?;
    Some(s.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
}

/// Reads `len` bytes at `offset` of the file (checked against its length by the caller).
pub type ReadAt<'a> = dyn FnMut(u64, u64) -> Result<Vec<u8>, String> + 'a;

/// The central directory's members; `len` is the file's length.
fn members(len: u64, read: &mut ReadAt) -> Result<Vec<Member>, String> {
    let tail_len = len.min(65_557);
    let tail = read(len - tail_len, tail_len)?;
    let eocd = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..].starts_with(b"PK\x05\x06"))
        .ok_or("no zip end-of-central-directory record")?;
    let at = len - tail_len + eocd as u64;
    let mut count = le(&tail, eocd + 10, 2).ok_or("short end record")?;
    let mut cd_size = le(&tail, eocd + 12, 4).ok_or("short end record")?;
    let mut cd_offset = le(&tail, eocd + 16, 4).ok_or("short end record")?;
    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        // Zip64: a locator just before the end record points at the zip64 end record.
        let loc = eocd.checked_sub(20).ok_or("zip64 locator missing")?;
        if !tail[loc..].starts_with(b"PK\x06\x07") {
            return Err("zip64 locator missing".into());
        }
        let z64 = le(&tail, loc + 8, 8).ok_or("short zip64 locator")?;
        if z64.checked_add(56).is_none_or(|e| e > at) {
            return Err("zip64 end record outside the file".into());
        }
        let rec = read(z64, 56)?;
        if !rec.starts_with(b"PK\x06\x06") {
            return Err("bad zip64 end record".into());
        }
        count = le(&rec, 32, 8).ok_or("short zip64 end record")?;
        cd_size = le(&rec, 40, 8).ok_or("short zip64 end record")?;
        cd_offset = le(&rec, 48, 8).ok_or("short zip64 end record")?;
    }
    if cd_offset.checked_add(cd_size).is_none_or(|e| e > at) || count > cd_size / 46 {
        return Err("central directory outside the file".into());
    }
    let cd = read(cd_offset, cd_size)?;
    let mut out = Vec::with_capacity(count as usize);
    let mut p = 0usize;
    for _ in 0..count {
        let field = |off: usize, n: usize| le(&cd, p + off, n).ok_or("central directory truncated");
        if !cd
            .get(p..)
            .is_some_and(|rest| rest.starts_with(b"PK\x01\x02"))
        {
            return Err(format!(
                "bad central directory entry at byte {}",
                cd_offset + p as u64
            ));
        }
        let method = field(10, 2)? as u16;
        let mut size = field(20, 4)?;
        let mut usize_ = field(24, 4)?;
        let name_len = field(28, 2)? as usize;
        let extra_len = field(30, 2)? as usize;
        let comment_len = field(32, 2)? as usize;
        let mut local = field(42, 4)?;
        let name = cd
            .get(p + 46..p + 46 + name_len)
            .ok_or("central directory truncated")?;
        let name = String::from_utf8_lossy(name).into_owned();
        let extra = cd
            .get(p + 46 + name_len..p + 46 + name_len + extra_len)
            .ok_or("central directory truncated")?;
        // Zip64 extra field: 8-byte values for those saturated above, in this order.
        let mut e = 0;
        while e + 4 <= extra.len() {
            let id = le(extra, e, 2).unwrap_or(0);
            let n = le(extra, e + 2, 2).unwrap_or(0) as usize;
            if id == 1 {
                let mut q = e + 4;
                for v in [&mut usize_, &mut size, &mut local] {
                    if *v == 0xFFFF_FFFF {
                        *v = le(extra, q, 8).ok_or("short zip64 extra field")?;
                        q += 8;
                    }
                }
            }
            e += 4 + n;
        }
        if method == 0 && usize_ != size {
            return Err(format!("{name}: stored member with two sizes"));
        }
        out.push(Member {
            name,
            method,
            size,
            local,
        });
        p += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// Where member `m`'s bytes start: after its local header, name and extra field.
fn data_start(m: &Member, len: u64, read: &mut ReadAt) -> Result<u64, String> {
    if m.local.checked_add(30).is_none_or(|e| e > len) {
        return Err(format!("{}: local header outside the file", m.name));
    }
    let h = read(m.local, 30)?;
    if !h.starts_with(b"PK\x03\x04") {
        return Err(format!("{}: bad local header at byte {}", m.name, m.local));
    }
    let n = le(&h, 26, 2).unwrap_or(0) + le(&h, 28, 2).unwrap_or(0);
    let start = m.local + 30 + n;
    if start.checked_add(m.size).is_none_or(|e| e > len) {
        return Err(format!("{}: data runs past the end of the file", m.name));
    }
    Ok(start)
}

/// The parts of a `torch.save` file of `len` bytes, read through `read`. Storages whose
/// class, size or place does not check out are left as gap bytes (coded as they are): only
/// an unreadable zip or pickle is an error.
pub fn parts(len: u64, read: &mut ReadAt) -> Result<Vec<TorchPart>, String> {
    let members = members(len, read)?;
    let pkl = members
        .iter()
        .find(|m| m.name.ends_with("/data.pkl") || m.name == "data.pkl")
        .ok_or("no data.pkl: not a torch.save checkpoint")?;
    if pkl.method != 0 {
        return Err("data.pkl is compressed: not a torch.save checkpoint".into());
    }
    let prefix = &pkl.name[..pkl.name.len() - "data.pkl".len()];
    let start = data_start(pkl, len, read)?;
    let refs = pickle::storages(&read(start, pkl.size)?)?;
    let little = members
        .iter()
        .find(|m| m.name == format!("{prefix}byteorder"))
        .map(|m| -> Result<bool, String> {
            let s = data_start(m, len, read)?;
            Ok(read(s, m.size.min(16))? == b"little")
        })
        .transpose()?
        .unwrap_or(true);
    let mut storages = Vec::new();
    for r in &refs {
        let member = format!("{prefix}data/{}", r.key);
        let Some(m) = members.iter().find(|m| m.name == member && m.method == 0) else {
            continue;
        };
        let name = format!("data/{}", r.key);
        let dtype = match dtype_of(&r.class) {
            Some(d) if little && r.numel.checked_mul(d.size() as u64) == Some(m.size) => d,
            _ => DType::U8,
        };
        if m.size == 0 {
            continue;
        }
        let s = data_start(m, len, read)?;
        storages.push((s, s + m.size, name, dtype));
    }
    storages.sort_by_key(|s| s.0);
    let mut out = Vec::with_capacity(2 * storages.len() + 1);
    let mut at = 0;
    for (s, e, name, dtype) in storages {
        if s < at {
            continue; // overlapping members: leave the second as gap bytes
        }
        if s > at {
            out.push(TorchPart::Gap { start: at, end: s });
        }
        out.push(TorchPart::Storage {
            start: s,
            end: e,
            name,
            dtype,
        });
        at = e;
    }
    if at < len {
        out.push(TorchPart::Gap {
            start: at,
            end: len,
        });
    }
    Ok(out)
}
