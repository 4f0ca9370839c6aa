//! Restoring an archive's input: a text archive byte for byte (from a file, or from a pipe read
//! front to back with each row group bounded before it is read), an Arrow table as a Parquet
//! file of the same data.

use std::io::{self, Read, Write};

use crate::archive::{
    parse_footer, parse_header, parse_table, ArchiveReader, Entry, MAX_METADATA_BYTES,
};
use crate::error::{Error, Result};
use crate::model::{Format, Table};
use crate::rowgroup::{GroupBytes, TAG_END, TAG_ROW_GROUP, TAG_TABLE};

impl ArchiveReader {
    /// Writes the original input to `out` (for an Arrow table, a Parquet file of its data);
    /// returns its length. Each row group is checked against its stored size and checksum;
    /// on one thread its bytes go out as they are rebuilt, so after an error `out` may hold
    /// part of the row group that failed (the command line's `glyd -d` checks each row group
    /// before writing it: see [`rebuild`]).
    pub fn rebuild_to(&self, out: impl Write) -> Result<u64> {
        if self.is_arrow() {
            return crate::parquet::write_table(self, out);
        }
        self.rebuild_text_to(out)
    }
}

/// Reads a record archive from `src` (a pipe will do: it is read front to back) and writes the
/// original input to `out` (for an Arrow table, read whole, a Parquet file of its data);
/// returns its length. Memory is limited to [`glyd_core::DEFAULT_MEMORY_LIMIT`] (see
/// [`rebuild_with_limit`]).
pub fn rebuild(src: impl Read, out: impl Write) -> Result<u64> {
    rebuild_with_limit(src, out, glyd_core::DEFAULT_MEMORY_LIMIT)
}

/// [`rebuild`] holding at most `memory` bytes for a row group (its stored bytes, then what
/// decoding it needs, see `rowgroup::decode_need`): a row group that needs more is refused
/// with an error naming it before its bytes are read.
pub fn rebuild_with_limit(mut src: impl Read, mut out: impl Write, memory: u64) -> Result<u64> {
    let mut buf = Vec::new();
    let header = loop {
        if let Some(h) = parse_header(&buf)? {
            break h;
        }
        if read_more(&mut src, &mut buf, 64)? == 0 {
            return Err(Error::Truncated {
                what: "archive header",
                offset: 0,
            });
        }
    };
    if let Format::Arrow(_) = header.format {
        // Parquet is written from the footer back: the archive is read whole first.
        src.read_to_end(&mut buf)?;
        return ArchiveReader::from_bytes(buf)?
            .with_memory_limit(memory)
            .rebuild_to(out);
    }
    let mut tables = vec![crate::archive::first_table(&header.format)];
    let mut total = 0u64;
    if let Some(h) = tables[0].dialect().and_then(|d| d.header.as_ref()) {
        out.write_all(h)?;
        total += h.len() as u64;
    }
    let mut offset = header.len as u64;
    buf.drain(..header.len);
    let mut entries = Vec::new();
    // One output buffer for every row group: a fresh one would be faulted in page by page.
    let mut part = Vec::new();
    loop {
        // Enough bytes for the tag, header length and header, then the chunks it lists.
        if buf.is_empty() && read_more(&mut src, &mut buf, 1)? == 0 {
            return Err(Error::Truncated {
                what: "footer",
                offset,
            });
        }
        if buf[0] == TAG_END {
            // A footer holds four varints per row group, a few fields and its metadata:
            // anything much longer is not one, and a pipe that keeps sending must not fill
            // memory.
            let most = 64 + 48 * entries.len() + MAX_METADATA_BYTES;
            while read_more(&mut src, &mut buf, 1 << 16)? > 0 {
                if buf.len() > most {
                    return Err(Error::corrupt(
                        "footer",
                        offset,
                        format!(
                            "longer than a footer of {} row groups can be",
                            entries.len()
                        ),
                    ));
                }
            }
            let (got, _) = parse_footer(&buf, offset)?;
            if got != entries {
                return Err(Error::corrupt(
                    "footer",
                    offset,
                    "its row group index disagrees with the row groups read",
                ));
            }
            return Ok(total);
        }
        if buf[0] == TAG_TABLE {
            let (t, len) = loop {
                match parse_table(&buf, offset) {
                    Err(Error::Truncated { .. }) => {
                        if read_more(&mut src, &mut buf, 1 << 10)? == 0 {
                            return Err(Error::Truncated {
                                what: "table definition",
                                offset,
                            });
                        }
                    }
                    r => break r?,
                }
            };
            tables.push(t);
            buf.drain(..len);
            offset += len as u64;
            continue;
        }
        if buf[0] != TAG_ROW_GROUP {
            return Err(Error::corrupt(
                "archive",
                offset,
                format!("unknown item tag {}", buf[0]),
            ));
        }
        let columns: Vec<usize> = tables.iter().map(Table::columns).collect();
        let meta = loop {
            match crate::rowgroup::parse_header(&buf, offset, &columns) {
                Err(Error::Truncated { .. }) => {
                    if read_more(&mut src, &mut buf, 1 << 12)? == 0 {
                        return Err(Error::Truncated {
                            what: "row group header",
                            offset,
                        });
                    }
                }
                r => break r?,
            }
        };
        let len = meta.end - offset;
        if len > memory {
            return Err(glyd_core::Error::MemoryLimit {
                what: "row group",
                offset,
                needed: len,
                limit: memory,
            }
            .into());
        }
        let len = len as usize;
        while buf.len() < len {
            let want = len - buf.len();
            if read_more(&mut src, &mut buf, want)? == 0 {
                return Err(Error::Truncated {
                    what: "row group",
                    offset,
                });
            }
        }
        part.clear();
        let group = GroupBytes::Slice {
            base: meta.offset,
            bytes: &buf[..len],
        };
        crate::rowgroup::check_need(group, &meta, memory)?;
        let dialect = tables[meta.table]
            .dialect()
            .ok_or_else(|| Error::Request("an Arrow table has no text to rebuild".into()))?;
        crate::rowgroup::rebuild(group, &meta, dialect, &mut part)?;
        out.write_all(&part)?;
        total += part.len() as u64;
        entries.push(Entry {
            offset,
            table: meta.table,
            rows: meta.rows,
            input_len: meta.input_len,
        });
        buf.drain(..len);
        offset = meta.end;
    }
}

/// Appends up to `n` more bytes from `src` to `buf`; returns how many (0 at the end). At most
/// 1 MiB is asked for at a time, so the buffer grows with what arrives, never ahead of it.
fn read_more(src: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> Result<usize> {
    let n = n.min(1 << 20);
    let start = buf.len();
    buf.resize(start + n, 0);
    let got = loop {
        match src.read(&mut buf[start..]) {
            Ok(k) => break k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(start);
                return Err(e.into());
            }
        }
    };
    buf.truncate(start + got);
    Ok(got)
}
