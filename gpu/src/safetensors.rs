//! The safetensors file format: an 8-byte little-endian header length, a JSON header naming
//! each tensor's dtype, shape and byte range, then the data. Reading validates every field
//! before anything is sized from it; the header bytes are kept verbatim so that unpacking
//! writes back the identical file.

use std::io::Read;

use serde_json::{Map, Value};

use crate::dtype::DType;
use crate::error::{Error, Result};

/// The largest header glyd accepts (the reference implementation's limit).
pub const MAX_HEADER: u64 = 100 << 20;

/// One tensor as the header describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    /// Byte range within the data section.
    pub start: u64,
    pub end: u64,
}

impl TensorInfo {
    /// Number of elements.
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Byte length of the tensor's data.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// True for a tensor with no elements.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// A piece of the data section, in file order: a tensor, or bytes no tensor claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Index into [`Header::tensors`].
    Tensor(usize),
    /// Unclaimed bytes `start..end` of the data section (kept verbatim).
    Gap { start: u64, end: u64 },
}

/// A parsed and validated safetensors header.
#[derive(Clone, Debug)]
pub struct Header {
    /// The JSON header exactly as stored (padding included).
    pub json: Vec<u8>,
    /// Tensors in data-offset order.
    pub tensors: Vec<TensorInfo>,
    /// Bytes in the data section (file length − 8 − header length).
    pub data_len: u64,
}

impl Header {
    /// Byte offset of the data section in the file.
    pub fn data_offset(&self) -> u64 {
        8 + self.json.len() as u64
    }

    /// The data section as tensors and gaps, in order, covering every byte.
    pub fn parts(&self) -> Vec<Part> {
        let mut parts = Vec::with_capacity(self.tensors.len() + 1);
        let mut at = 0;
        for (i, t) in self.tensors.iter().enumerate() {
            if t.start > at {
                parts.push(Part::Gap {
                    start: at,
                    end: t.start,
                });
            }
            parts.push(Part::Tensor(i));
            at = at.max(t.end);
        }
        if at < self.data_len {
            parts.push(Part::Gap {
                start: at,
                end: self.data_len,
            });
        }
        parts
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// Reads and validates the header of a safetensors file of `file_len` bytes from `r`
/// (positioned at the start of the file).
pub fn read_header(r: &mut impl Read, file_len: u64) -> Result<Header> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).map_err(|_| {
        Error::safetensors(None, 0, "file is shorter than the 8-byte header length")
    })?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER {
        return Err(Error::safetensors(
            None,
            0,
            format!("header length {n} is over the {MAX_HEADER}-byte limit"),
        ));
    }
    if n > file_len - 8 {
        return Err(Error::safetensors(
            None,
            0,
            format!(
                "header length {n} runs past the end of the file ({} bytes after the length)",
                file_len - 8
            ),
        ));
    }
    let mut json = vec![0u8; n as usize];
    r.read_exact(&mut json)?;
    parse_header(json, file_len - 8 - n)
}

/// Validates header bytes `json` for a data section of `data_len` bytes.
pub fn parse_header(json: Vec<u8>, data_len: u64) -> Result<Header> {
    let value: Value = serde_json::from_slice(&json).map_err(|e| {
        Error::safetensors(
            None,
            8 + e.column() as u64,
            format!("header is not JSON: {e}"),
        )
    })?;
    let Value::Object(map) = value else {
        return Err(Error::safetensors(None, 8, "header is not a JSON object"));
    };
    let mut tensors = Vec::with_capacity(map.len());
    for (name, v) in &map {
        if name == "__metadata__" {
            continue;
        }
        tensors.push(tensor_info(name, v, data_len)?);
    }
    tensors.sort_by_key(|t| (t.start, t.end));
    for w in tensors.windows(2) {
        if w[1].start < w[0].end {
            return Err(Error::safetensors(
                Some(&w[1].name),
                8 + json.len() as u64 + w[1].start,
                format!(
                    "data {}..{} overlaps tensor '{}' ({}..{})",
                    w[1].start, w[1].end, w[0].name, w[0].start, w[0].end
                ),
            ));
        }
    }
    Ok(Header {
        json,
        tensors,
        data_len,
    })
}

fn tensor_info(name: &str, v: &Value, data_len: u64) -> Result<TensorInfo> {
    let bad = |detail: String| Error::safetensors(Some(name), 8, detail);
    let obj: &Map<String, Value> = v
        .as_object()
        .ok_or_else(|| bad("entry is not a JSON object".into()))?;
    let dtype_name = obj
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no \"dtype\" string".into()))?;
    let dtype = DType::from_name(dtype_name)
        .ok_or_else(|| bad(format!("unknown dtype \"{dtype_name}\"")))?;
    let shape = obj
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no \"shape\" array".into()))?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| bad("shape holds something other than non-negative integers".into()))?;
    let offsets = obj
        .get("data_offsets")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
        .ok_or_else(|| bad("no \"data_offsets\" pair of integers".into()))?;
    let (start, end) = offsets;
    if start > end || end > data_len {
        return Err(bad(format!(
            "data_offsets {start}..{end} lie outside the {data_len}-byte data section"
        )));
    }
    let bytes = shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
    if bytes != end - start {
        return Err(bad(format!(
            "shape {shape:?} of {} needs {bytes} bytes but data_offsets hold {}",
            dtype.name(),
            end - start
        )));
    }
    Ok(TensorInfo {
        name: name.to_owned(),
        dtype,
        shape,
        start,
        end,
    })
}

/// One tensor to write with [`write`].
pub struct NewTensor<'a> {
    pub name: &'a str,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: &'a [u8],
}

/// A safetensors file holding `tensors` in the given order, with optional string metadata;
/// the header is padded with spaces to a multiple of 8 bytes, as the reference writer does.
pub fn write(tensors: &[NewTensor], metadata: &[(&str, &str)]) -> Result<Vec<u8>> {
    let mut map = Map::new();
    if !metadata.is_empty() {
        let m: Map<String, Value> = metadata
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        map.insert("__metadata__".into(), Value::Object(m));
    }
    let mut at = 0u64;
    for t in tensors {
        let want = t.shape.iter().product::<u64>() * t.dtype.size() as u64;
        if want != t.data.len() as u64 {
            return Err(Error::Usage(format!(
                "tensor '{}': shape {:?} needs {want} bytes, {} given",
                t.name,
                t.shape,
                t.data.len()
            )));
        }
        let end = at + t.data.len() as u64;
        map.insert(
            t.name.to_owned(),
            serde_json::json!({"dtype": t.dtype.name(), "shape": t.shape, "data_offsets": [at, end]}),
        );
        at = end;
    }
    let mut json = serde_json::to_vec(&Value::Object(map)).expect("JSON of plain values");
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + json.len() + at as usize);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    for t in tensors {
        out.extend_from_slice(t.data);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(file: &[u8]) -> Result<Header> {
        read_header(&mut &file[..], file.len() as u64)
    }

    #[test]
    fn written_files_parse_back() {
        let a = [1u8, 2, 3, 4];
        let b = [9u8; 12];
        let file = write(
            &[
                NewTensor {
                    name: "a",
                    dtype: DType::BF16,
                    shape: vec![2],
                    data: &a,
                },
                NewTensor {
                    name: "b",
                    dtype: DType::F32,
                    shape: vec![3, 1],
                    data: &b,
                },
            ],
            &[("format", "pt")],
        )
        .unwrap();
        let h = header_of(&file).unwrap();
        assert_eq!(h.json.len() % 8, 0);
        assert_eq!(h.tensors.len(), 2);
        assert_eq!(h.tensor("b").unwrap().start, 4);
        assert_eq!(h.parts(), vec![Part::Tensor(0), Part::Tensor(1)]);
    }

    fn file_with(json: &str, data: usize) -> Vec<u8> {
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend_from_slice(json.as_bytes());
        f.extend(std::iter::repeat_n(0u8, data));
        f
    }

    #[test]
    fn malformed_headers_are_errors_naming_the_tensor() {
        let cases = [
            (
                r#"{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                4,
                "outside",
            ),
            (
                r#"{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                8,
                "needs 12 bytes",
            ),
            (
                r#"{"t":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}"#,
                2,
                "unknown dtype",
            ),
            (
                r#"{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"u":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#,
                4,
                "overlaps",
            ),
            (
                r#"{"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,4]}}"#,
                4,
                "non-negative",
            ),
            (
                r#"{"t":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}}"#,
                4,
                "overflows",
            ),
            (r#"{"t":"#, 4, "not JSON"),
            (r#"[1,2]"#, 4, "not a JSON object"),
        ];
        for (json, data, want) in cases {
            let err = header_of(&file_with(json, data)).unwrap_err().to_string();
            assert!(err.contains(want), "{json}: {err}");
        }
        let mut f = file_with("{}", 0);
        f[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(header_of(&f)
            .unwrap_err()
            .to_string()
            .contains("past the end"));
        assert!(header_of(&f[..5]).is_err());
    }

    #[test]
    fn gaps_are_parts() {
        let json = r#"{"t":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}"#;
        let h = header_of(&file_with(json, 8)).unwrap();
        assert_eq!(
            h.parts(),
            vec![
                Part::Gap { start: 0, end: 3 },
                Part::Tensor(0),
                Part::Gap { start: 5, end: 8 }
            ]
        );
    }
}
