//! Record mode as `glyd -r` applies it to bytes in memory: a record archive when the data
//! reads as records (Parquet, or what [`crate::detect`] recognizes), a plain frame otherwise;
//! for input within one sample, whichever of the two is smaller, so record mode never costs
//! more than plain compression. The CLI's benchmark and the C interface share it.

use std::io::Write;

use glyd_core::{Level, Options};

use crate::{detect, RecordWriter, Result, WriteOptions, DEFAULT_ROW_GROUP};

/// Bytes of input the format is detected from (the CLI's `-r` samples as much).
pub const SAMPLE: usize = 1 << 20;

/// `data` in record mode (see the module doc), at `level` on `threads` threads (0 = all).
pub fn compress_records(data: &[u8], level: Level, threads: usize) -> Result<Vec<u8>> {
    let whole = data.len() < SAMPLE;
    let plain = Options::new(level).with_threads(threads);
    let opts = WriteOptions {
        level,
        threads,
        row_group_size: DEFAULT_ROW_GROUP,
    };
    if crate::parquet::sniff(data) {
        let file = bytes::Bytes::copy_from_slice(data);
        return crate::parquet::archive(file, Vec::new(), &opts);
    }
    let Some(d) = detect(&data[..data.len().min(SAMPLE)], whole) else {
        return Ok(glyd_core::compress(data, &plain)?);
    };
    let mut w = RecordWriter::new(Vec::new(), d, &opts)?;
    w.write_all(data)?;
    let records = w.finish()?;
    if whole {
        let flat = glyd_core::compress(data, &plain)?;
        if flat.len() < records.len() {
            return Ok(flat);
        }
    }
    Ok(records)
}
