//! The archive's own structures as bytes: the header with its format descriptor, table
//! definitions, and the footer's row group index.

use glyd_core::Level;

use crate::error::{Error, Result};
use crate::model::{Dialect, Format, Layout, Table};
use crate::rowgroup::{TAG_END, TAG_TABLE};
use crate::shred::sql_dump::Segmenter;
use crate::wire::{put_prefixed, put_varint, Cursor};

/// First bytes of every record archive.
pub const MAGIC: [u8; 4] = [0x89, b'G', b'L', b'R'];

/// Last bytes of every record archive.
pub const END_MAGIC: [u8; 4] = [b'R', b'L', b'G', 0x89];

/// The format version this build writes, and the newest it reads: 5, whose log lines
/// dialects say how each leading field is read (a time pattern, a level between brackets...),
/// whose columns may be log times, and whose integers may be stored as a dictionary. Version
/// 4 JSON lines archives may define further tables of the same name, each with more columns
/// (keys that appeared after the first), which read as one table; version 3 added scaled
/// integer planes, Arrow tables and words. Each version only extends the one before.
pub const VERSION: u8 = 5;

/// The oldest format version this build reads (version 2 is version 3 without what it added).
pub const OLDEST_VERSION: u8 = 2;

/// Format tag of delimited text in the header.
const FORMAT_DELIMITED: u8 = 1;

/// Format tag of a SQL dump in the header.
const FORMAT_SQL: u8 = 2;

/// Format tag of an Arrow table (from Parquet) in the header.
const FORMAT_ARROW: u8 = 3;

/// Name of the one table of a delimited archive.
pub const RECORDS: &str = "records";

/// The table an archive of `format` starts with.
pub(crate) fn first_table(format: &Format) -> Table {
    match format {
        Format::Delimited(d) | Format::JsonLines(d) | Format::LogLines(d) => {
            Table::text(RECORDS, d.clone())
        }
        Format::SqlDump => Segmenter::default().tables.remove(0),
        Format::Arrow(schema) => Table {
            name: RECORDS.into(),
            layout: Layout::Arrow(schema.fields().iter().map(|f| f.name().clone()).collect()),
        },
    }
}

/// Whether `b` starts like a record archive.
pub fn is_archive(b: &[u8]) -> bool {
    b.starts_with(&MAGIC)
}

pub(crate) fn header_bytes(f: &Format, level: Level) -> Result<Vec<u8>> {
    let mut desc = Vec::new();
    match f {
        Format::Delimited(d) | Format::JsonLines(d) | Format::LogLines(d) => {
            desc.push(FORMAT_DELIMITED);
            d.encode(&mut desc);
        }
        Format::SqlDump => desc.push(FORMAT_SQL),
        Format::Arrow(schema) => {
            desc.push(FORMAT_ARROW);
            put_prefixed(&mut desc, &crate::codec::arrow_ipc::schema_to_ipc(schema)?);
        }
    }
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.push(level.number());
    put_prefixed(&mut out, &desc);
    let sum = glyd_core::checksum(&out[4..]);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The archive header, parsed: the level it was written at and the format.
pub(crate) struct Header {
    pub(crate) level: u8,
    pub(crate) format: Format,
    pub(crate) len: usize,
}

/// Parses the header at the start of `src`; `Ok(None)` when `src` may be too short to hold it.
pub(crate) fn parse_header(src: &[u8]) -> Result<Option<Header>> {
    if src.len() < 4 {
        return if MAGIC.starts_with(src) {
            Ok(None)
        } else {
            Err(bad_magic(src))
        };
    }
    if !is_archive(src) {
        return Err(bad_magic(src));
    }
    let mut c = Cursor::new(&src[4..], 4, "archive header");
    let parsed = (|| {
        let version = c.u8()?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                version,
                supported: VERSION,
            });
        }
        let level = c.u8()?;
        let desc = c.prefixed()?;
        let covered = &src[4..c.offset() as usize];
        let sum = u32::from_le_bytes(c.bytes(4)?.try_into().expect("4 bytes"));
        if glyd_core::checksum(covered) != sum {
            return Err(Error::corrupt(
                "archive header",
                6,
                "checksum mismatch (the header is damaged)",
            ));
        }
        let mut d = Cursor::new(desc, 7, "format descriptor");
        let format = match d.u8()? {
            FORMAT_DELIMITED => Format::from(Dialect::decode(&mut d)?),
            FORMAT_SQL => Format::SqlDump,
            FORMAT_ARROW => Format::Arrow(crate::codec::arrow_ipc::schema_from_ipc(d.prefixed()?)?),
            f => return Err(d.corrupt(format!("unknown record format {f}"))),
        };
        d.finish()?;
        Ok(Header {
            level,
            format,
            len: c.offset() as usize,
        })
    })();
    match parsed {
        Err(Error::Truncated { .. }) => Ok(None),
        r => r.map(Some),
    }
}

fn bad_magic(src: &[u8]) -> Error {
    Error::BadMagic {
        found: src
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A table definition item: tag, the definition's length and bytes (name, dialect), checksum.
pub(crate) fn table_bytes(name: &str, dialect: &Dialect) -> Vec<u8> {
    let mut body = Vec::new();
    put_prefixed(&mut body, name.as_bytes());
    dialect.encode(&mut body);
    let mut out = vec![TAG_TABLE];
    put_prefixed(&mut out, &body);
    out.extend_from_slice(&glyd_core::checksum(&body).to_le_bytes());
    out
}

/// Parses the table definition item at `src[0]` (archive offset `offset`); returns it and its
/// length.
pub(crate) fn parse_table(src: &[u8], offset: u64) -> Result<(Table, usize)> {
    let mut c = Cursor::new(src, offset, "table definition");
    if c.u8()? != TAG_TABLE {
        return Err(c.corrupt("expected a table definition"));
    }
    let body = c.prefixed()?;
    let at = c.offset() - body.len() as u64;
    let sum = u32::from_le_bytes(c.bytes(4)?.try_into().expect("4 bytes"));
    if glyd_core::checksum(body) != sum {
        return Err(Error::corrupt(
            "table definition",
            at,
            "checksum mismatch (the definition is damaged)",
        ));
    }
    let mut b = Cursor::new(body, at, "table definition");
    let name = String::from_utf8_lossy(b.prefixed()?).into_owned();
    let dialect = Dialect::decode(&mut b)?;
    b.finish()?;
    Ok((Table::text(name, dialect), (c.offset() - offset) as usize))
}

/// One row group's entry in the footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) offset: u64,
    pub(crate) table: usize,
    pub(crate) rows: u64,
    pub(crate) input_len: u64,
}

pub(crate) fn footer_bytes(entries: &[Entry], metadata: &[(String, String)]) -> Vec<u8> {
    let mut f = vec![TAG_END];
    put_varint(&mut f, entries.len() as u64);
    let mut prev = 0;
    for e in entries {
        put_varint(&mut f, e.offset - prev);
        prev = e.offset;
        put_varint(&mut f, e.table as u64);
        put_varint(&mut f, e.rows);
        put_varint(&mut f, e.input_len);
    }
    if !metadata.is_empty() {
        put_varint(&mut f, metadata.len() as u64);
        for (k, v) in metadata {
            put_prefixed(&mut f, k.as_bytes());
            put_prefixed(&mut f, v.as_bytes());
        }
    }
    let sum = glyd_core::checksum(&f);
    f.extend_from_slice(&sum.to_le_bytes());
    let len = f.len() as u32 + 8;
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&END_MAGIC);
    f
}

/// Most metadata pairs a footer may hold, and most bytes of them.
pub const MAX_METADATA: usize = 1024;
pub const MAX_METADATA_BYTES: usize = 1 << 20;

/// A footer's row group index and its metadata (key, value pairs).
pub(crate) type Footer = (Vec<Entry>, Vec<(String, String)>);

/// Parses a footer (from its tag byte to the end magic) that is exactly `f`, at `offset`.
pub(crate) fn parse_footer(f: &[u8], offset: u64) -> Result<Footer> {
    let n = f.len();
    if n < 13 || f[n - 4..] != END_MAGIC {
        return Err(Error::corrupt("footer", offset, "missing end magic"));
    }
    let len = u32::from_le_bytes(f[n - 8..n - 4].try_into().expect("4 bytes"));
    if len as usize != n {
        return Err(Error::corrupt(
            "footer",
            offset,
            format!("footer length {len} where the footer is {n} bytes"),
        ));
    }
    let body = &f[..n - 12];
    let sum = u32::from_le_bytes(f[n - 12..n - 8].try_into().expect("4 bytes"));
    if glyd_core::checksum(body) != sum {
        return Err(Error::corrupt(
            "footer",
            offset,
            "checksum mismatch (the footer is damaged)",
        ));
    }
    let mut c = Cursor::new(body, offset, "footer");
    if c.u8()? != TAG_END {
        return Err(c.corrupt("expected the end of the row groups"));
    }
    let count = c.bounded(c.remaining() as u64 / 4, "row group count")?;
    let mut entries = Vec::with_capacity(count);
    let mut at = 0u64;
    for _ in 0..count {
        at = at.saturating_add(c.varint()?);
        entries.push(Entry {
            offset: at,
            table: c.bounded(u64::from(u32::MAX), "table index")?,
            rows: c.varint()?,
            input_len: c.varint()?,
        });
    }
    let mut metadata: Vec<(String, String)> = Vec::new();
    if c.remaining() > 0 {
        let n = c.bounded(
            (c.remaining() / 2).min(MAX_METADATA) as u64,
            "metadata count",
        )?;
        for _ in 0..n {
            let key = c.prefixed()?;
            let value = c.prefixed()?;
            let (Ok(key), Ok(value)) = (std::str::from_utf8(key), std::str::from_utf8(value))
            else {
                return Err(c.corrupt("metadata that is not UTF-8"));
            };
            if metadata.iter().any(|(k, _)| k == key) {
                return Err(c.corrupt(format!("metadata key {key:?} twice")));
            }
            metadata.push((key.to_string(), value.to_string()));
        }
    }
    c.finish()?;
    Ok((entries, metadata))
}
