//! glyd-columnar: the record engine. It recognizes records in text (delimited text — CSV/TSV
//! and kin —, JSON lines, log lines, and SQL dumps whose COPY blocks become tables), shreds
//! them into typed columns (integers, decimals, dates, text), codes each column with what suits
//! it, and writes a record archive: row groups of checksummed column chunks with statistics,
//! which reads back as Arrow `RecordBatch`es or rebuilds the original bytes exactly. Parquet
//! files become archives of their Arrow data ([`parquet`]), which rebuild as Parquet of the
//! same data. `docs/FORMAT.md` §7 specifies the archive.
//!
//! ```
//! use std::io::Write;
//! use glyd_columnar::{sniff, ArchiveReader, RecordWriter, WriteOptions};
//!
//! let mut csv = b"id,name,price\n".to_vec();
//! csv.extend(b"1,apple,0.50\n2,\"pear, green\",1.25\n".repeat(3));
//! let dialect = sniff(&csv, true).unwrap();
//! let mut w = RecordWriter::new(Vec::new(), dialect, &WriteOptions::default()).unwrap();
//! w.write_all(&csv).unwrap();
//! let archive = w.finish().unwrap();
//!
//! let reader = ArchiveReader::from_bytes(archive).unwrap();
//! let mut back = Vec::new();
//! reader.rebuild_to(&mut back).unwrap();
//! assert_eq!(back, csv);
//! let batches = reader.read(Some(&[2]), 0..reader.row_groups().len()).unwrap();
//! assert_eq!(batches[0].num_rows(), 6);
//! ```

mod archive;
pub mod auto;
mod codec;
mod column;
mod detect;
mod error;
mod escapes;
mod fetched;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod logtime;
pub mod model;
pub mod parquet;
pub mod predicate;
mod rebuilt;
mod restore;
mod rowgroup;
mod rows;
mod shred;
mod spelling;
pub mod timepattern;
mod wire;

pub use archive::{
    is_archive, with_string_views, ArchiveReader, BatchWriter, GroupBatches, OpenStep, RangedOpen,
    RecordWriter, WriteOptions, DEFAULT_ROW_GROUP, RAW, RECORDS,
};
pub use codec::template::readable as template_of;
pub use column::{put_csv_quoted, typed_array, Cells, Coding, Follow, Link};
pub use detect::{choose_log_layout, detect, sniff, sniff_json_lines, sniff_with};
pub use error::{Error, Result};
pub use fetched::Fetched;
pub use model::{Dialect, Format};
pub use restore::{rebuild, rebuild_with_limit};
pub use rowgroup::{ColumnMeta, RowGroupMeta, RowRole, StreamMeta};
