//! Parquet in and out. [`archive`] makes an Arrow table archive of a Parquet file's data:
//! every column, with the Arrow types the file's schema gives (nested included), as arrow-rs
//! reads them. [`write_table`] (what rebuilding such an archive does) writes a Parquet file of
//! the same Arrow data: the same schema, metadata and values, but not the same bytes, since
//! page layout and encodings are the writer's choice.

use std::io::Write;
use std::sync::{Arc, Mutex};

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;

use crate::archive::{ArchiveReader, BatchWriter, WriteOptions};
use crate::error::{Error, Result};

/// First (and last) bytes of every Parquet file.
pub const MAGIC: [u8; 4] = *b"PAR1";

/// Most rows per batch read from Parquet (row groups are gathered from these).
const BATCH_ROWS: usize = 8192;
/// Bytes of Arrow data a batch read from Parquet aims at.
const BATCH_BYTES: u64 = 16 << 20;

/// Whether an input starting with `sample` is a Parquet file.
pub fn sniff(sample: &[u8]) -> bool {
    sample.starts_with(&MAGIC)
}

fn parquet_error(e: impl std::fmt::Display) -> Error {
    let msg = e.to_string();
    Error::Parquet(
        msg.strip_prefix("Parquet error: ")
            .unwrap_or(&msg)
            .to_string(),
    )
}

/// Reads the Parquet file `file` and writes its data to `out` as an Arrow table archive;
/// returns `out`. A file arrow-rs cannot read is an [`Error::Parquet`] saying why.
pub fn archive<R: ChunkReader + 'static, W: Write>(
    file: R,
    out: W,
    opts: &WriteOptions,
) -> Result<W> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet_error)?;
    let schema = builder.schema().clone();
    // The footer says how big the rows are before any page is read: rows past a row group's
    // limit are refused now (a 4 KiB file can hold gigabytes), and batches hold ~16 MiB.
    let mut widest = 0u64;
    for (i, g) in builder.metadata().row_groups().iter().enumerate() {
        let size = u64::try_from(g.total_byte_size()).unwrap_or(0);
        let rows = u64::try_from(g.num_rows()).unwrap_or(0).max(1);
        let per_row = size.div_ceil(rows);
        if per_row > crate::rowgroup::MAX_INPUT {
            return Err(Error::Parquet(format!(
                "row group {i} holds rows of {} MiB each on average ({size} bytes in {rows} \
                 rows); a row of a record archive is at most {} MiB",
                per_row >> 20,
                crate::rowgroup::MAX_INPUT >> 20
            )));
        }
        widest = widest.max(per_row);
    }
    let batch_rows = (BATCH_BYTES / widest.max(1)).clamp(1, BATCH_ROWS as u64) as usize;
    let reader = builder
        .with_batch_size(batch_rows)
        .build()
        .map_err(parquet_error)?;
    let mut w = BatchWriter::new(out, schema, opts)?;
    for batch in reader {
        w.write(&batch.map_err(parquet_error)?)?;
    }
    w.finish()
}

/// A buffer the Parquet writer fills and [`write_table`] empties after each row group, so the
/// file streams out a row group at a time.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("Parquet buffer poisoned"))?
            .extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// Moves what the writer has written so far to `out`; returns how many bytes.
    fn drain_to(&self, out: &mut impl Write) -> Result<u64> {
        let mut b = self
            .0
            .lock()
            .map_err(|_| Error::Request("Parquet buffer poisoned".into()))?;
        out.write_all(&b)?;
        let n = b.len() as u64;
        b.clear();
        Ok(n)
    }
}

/// Writes the Arrow table in `r` as a Parquet file to `out` (zstd level 3, one Parquet row
/// group per archive row group); returns its length.
pub fn write_table(r: &ArchiveReader, mut out: impl Write) -> Result<u64> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).map_err(parquet_error)?,
        ))
        .build();
    let sink = Shared::default();
    let mut w =
        ArrowWriter::try_new(sink.clone(), r.schema(), Some(props)).map_err(parquet_error)?;
    let mut total = 0;
    for g in 0..r.row_groups().len() {
        for b in r.read(None, g..g + 1)? {
            w.write(&b).map_err(parquet_error)?;
        }
        w.flush().map_err(parquet_error)?;
        total += sink.drain_to(&mut out)?;
    }
    w.close().map_err(parquet_error)?;
    total += sink.drain_to(&mut out)?;
    Ok(total)
}
