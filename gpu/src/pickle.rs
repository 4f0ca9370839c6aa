//! Reading a pickle without running it: a stack machine over the opcodes `torch.save` writes
//! that builds no object, imports nothing and calls nothing. It only follows values far enough
//! to see the persistent ids of tensor storages (`('storage', torch.<Type>Storage, key,
//! location, numel)`), which is all packing a checkpoint needs. Input is untrusted: every
//! length is checked against the bytes left, and the stack and memo are bounded by the input.

use std::collections::HashMap;

/// A value as far as this reader follows it.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    Int(i64),
    /// `module.name` as GLOBAL or STACK_GLOBAL named it (never imported).
    Global(String, String),
    Tuple(Vec<Value>),
    /// Anything else: lists, dicts, objects, floats, bytes, None.
    Other,
}

/// A storage a pickle refers to by persistent id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageRef {
    /// The key naming its zip member (`<prefix>/data/<key>`).
    pub key: String,
    /// The storage class, e.g. `BFloat16Storage`.
    pub class: String,
    /// Elements in the storage.
    pub numel: u64,
}

/// The storages `data` (a pickle) refers to, in first-reference order, each once.
pub fn storages(data: &[u8]) -> Result<Vec<StorageRef>, String> {
    let mut m = Machine {
        data,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        found: Vec::new(),
    };
    m.run()?;
    Ok(m.found)
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u64, Value>,
    found: Vec<StorageRef>,
}

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| format!("pickle truncated at byte {}", self.pos))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        let b = self.take(n)?;
        Ok(b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    fn len(&mut self, n: usize) -> Result<usize, String> {
        let v = self.uint(n)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= self.data.len() - self.pos)
            .ok_or_else(|| format!("pickle length {v} at byte {} runs past its end", self.pos))
    }

    fn line(&mut self) -> Result<String, String> {
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| format!("pickle line at byte {} has no end", self.pos))?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }

    fn push(&mut self, v: Value) -> Result<(), String> {
        // Each opcode is at least a byte: a stack deeper than the input is not a pickle.
        if self.stack.len() > self.data.len() {
            return Err("pickle stack deeper than the pickle".into());
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value, String> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(format!("pickle pops past a mark at byte {}", self.pos));
        }
        self.stack
            .pop()
            .ok_or_else(|| format!("pickle stack empty at byte {}", self.pos))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value>, String> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| format!("pickle has no mark at byte {}", self.pos))?;
        if m > self.stack.len() {
            return Err(format!("pickle mark past the stack at byte {}", self.pos));
        }
        Ok(self.stack.split_off(m))
    }

    fn top(&mut self) -> Result<&mut Value, String> {
        let pos = self.pos;
        self.stack
            .last_mut()
            .ok_or_else(|| format!("pickle stack empty at byte {pos}"))
    }

    fn memo_put(&mut self, key: u64) -> Result<(), String> {
        let v = self.top()?.clone();
        if self.memo.len() > self.data.len() {
            return Err("pickle memo larger than the pickle".into());
        }
        self.memo.insert(key, v);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<(), String> {
        let v = self
            .memo
            .get(&key)
            .cloned()
            .ok_or_else(|| format!("pickle refers to memo {key}, never stored"))?;
        self.push(v)
    }

    fn persistent(&mut self, pid: Value) {
        let Value::Tuple(t) = pid else { return };
        if let [Value::Str(tag), Value::Global(module, class), Value::Str(key), _, Value::Int(numel)] =
            t.as_slice()
        {
            if tag == "storage"
                && module == "torch"
                && *numel >= 0
                && !self.found.iter().any(|s| &s.key == key)
            {
                self.found.push(StorageRef {
                    key: key.clone(),
                    class: class.clone(),
                    numel: *numel as u64,
                });
            }
        }
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            let at = self.pos;
            let op = *self
                .data
                .get(self.pos)
                .ok_or_else(|| format!("pickle ends at byte {at} without STOP"))?;
            self.pos += 1;
            match op {
                b'.' => return Ok(()),
                0x80 => drop(self.take(1)?), // PROTO
                0x95 => drop(self.take(8)?), // FRAME
                b'(' => self.marks.push(self.stack.len()),
                b'}' | b']' | 0x8f => self.push(Value::Other)?,
                b')' => self.push(Value::Tuple(Vec::new()))?,
                b'd' | b'l' | 0x91 => {
                    self.pop_mark()?;
                    self.push(Value::Other)?;
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Value::Tuple(items))?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.push(Value::Tuple(items))?;
                }
                b's' => {
                    self.pop()?;
                    self.pop()?;
                    *self.top()? = Value::Other;
                }
                b'u' | b'e' | 0x90 => {
                    self.pop_mark()?;
                    *self.top()? = Value::Other;
                }
                b'a' => {
                    self.pop()?;
                    *self.top()? = Value::Other;
                }
                b'q' => {
                    let k = self.uint(1)?;
                    self.memo_put(k)?;
                }
                b'r' => {
                    let k = self.uint(4)?;
                    self.memo_put(k)?;
                }
                0x94 => {
                    let k = self.memo.len() as u64;
                    self.memo_put(k)?;
                }
                b'h' => {
                    let k = self.uint(1)?;
                    self.memo_get(k)?;
                }
                b'j' => {
                    let k = self.uint(4)?;
                    self.memo_get(k)?;
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.push(Value::Global(module, name))?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let v = match (module, name) {
                        (Value::Str(m), Value::Str(n)) => Value::Global(m, n),
                        _ => Value::Other,
                    };
                    self.push(v)?;
                }
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.uint(1)?;
                    self.push(Value::Int(v as i64))?;
                }
                b'M' => {
                    let v = self.uint(2)?;
                    self.push(Value::Int(v as i64))?;
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        self.len(1)?
                    } else {
                        self.len(4)?
                    };
                    let b = self.take(n)?;
                    let v = if n <= 8 && !b.is_empty() {
                        let mut x = [if b[n - 1] & 0x80 != 0 { 0xFF } else { 0 }; 8];
                        x[..n].copy_from_slice(b);
                        Value::Int(i64::from_le_bytes(x))
                    } else if n == 0 {
                        Value::Int(0)
                    } else {
                        Value::Other
                    };
                    self.push(v)?;
                }
                b'I' | b'L' => {
                    let text = self.line()?;
                    let v = text
                        .trim_end_matches('L')
                        .parse()
                        .map_or(Value::Other, Value::Int);
                    self.push(v)?;
                }
                b'G' => {
                    self.take(8)?;
                    self.push(Value::Other)?;
                }
                b'F' => {
                    self.line()?;
                    self.push(Value::Other)?;
                }
                b'N' | 0x88 | 0x89 => self.push(Value::Other)?,
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => self.len(4)?,
                        0x8c => self.len(1)?,
                        _ => self.len(8)?,
                    };
                    let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                    self.push(Value::Str(s))?;
                }
                b'T' | b'U' | b'B' | b'C' | 0x8e | 0x96 => {
                    let n = match op {
                        b'T' | b'B' => self.len(4)?,
                        b'U' | b'C' => self.len(1)?,
                        _ => self.len(8)?,
                    };
                    self.take(n)?;
                    self.push(Value::Other)?;
                }
                b'V' | b'S' => {
                    self.line()?;
                    self.push(Value::Other)?;
                }
                b'R' | 0x81 => {
                    self.pop()?;
                    *self.top()? = Value::Other;
                }
                0x92 => {
                    self.pop()?;
                    self.pop()?;
                    *self.top()? = Value::Other;
                }
                b'b' => {
                    self.pop()?;
                }
                b'o' => {
                    self.pop_mark()?;
                    self.push(Value::Other)?;
                }
                b'i' => {
                    self.line()?;
                    self.line()?;
                    self.pop_mark()?;
                    self.push(Value::Other)?;
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.persistent(pid);
                    self.push(Value::Other)?;
                }
                b'P' => {
                    self.line()?;
                    self.push(Value::Other)?;
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                0x82 => {
                    self.take(1)?;
                    self.push(Value::Other)?;
                }
                0x83 => {
                    self.take(2)?;
                    self.push(Value::Other)?;
                }
                0x84 => {
                    self.take(4)?;
                    self.push(Value::Other)?;
                }
                0x97 => self.push(Value::Other)?,
                0x98 => {}
                _ => return Err(format!("unsupported pickle opcode {op:#04x} at byte {at}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pickle `torch.save({"w": torch.zeros(3, dtype=torch.bfloat16), "b": torch.ones(2)})`
    /// writes (protocol 2), its storages' persistent ids memoized and fetched back as torch does.
    fn sample() -> Vec<u8> {
        let mut p = vec![0x80, 2];
        p.extend(b"}q\x00(X\x01\x00\x00\x00wq\x01ctorch._utils\n_rebuild_tensor_v2\nq\x02((X\x07\x00\x00\x00storageq\x03ctorch\nBFloat16Storage\nq\x04X\x01\x00\x00\x000q\x05X\x03\x00\x00\x00cpuq\x06K\x03tq\x07QK\x00K\x03\x85q\x08K\x01\x85q\x09\x89ccollections\nOrderedDict\nq\x0a)Rq\x0btq\x0cRq\x0d");
        p.extend(b"X\x01\x00\x00\x00bq\x0eh\x02((h\x03ctorch\nFloatStorage\nq\x0fX\x01\x00\x00\x001q\x10h\x06K\x02tq\x11QK\x00K\x02\x85q\x12K\x01\x85q\x13\x89h\x0a)Rq\x14tq\x15Rq\x16u.");
        p
    }

    #[test]
    fn finds_storages_without_running_anything() {
        let found = storages(&sample()).unwrap();
        assert_eq!(
            found,
            vec![
                StorageRef {
                    key: "0".into(),
                    class: "BFloat16Storage".into(),
                    numel: 3
                },
                StorageRef {
                    key: "1".into(),
                    class: "FloatStorage".into(),
                    numel: 2
                },
            ]
        );
    }

    #[test]
    fn damaged_pickles_are_errors_not_panics() {
        let good = sample();
        for cut in 0..good.len() {
            assert!(storages(&good[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..good.len() {
            for bit in [0x01, 0x10, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= bit;
                let _ = storages(&bad);
            }
        }
        assert!(storages(b"\x80\x02\xff.")
            .unwrap_err()
            .contains("opcode 0xff"));
    }
}
