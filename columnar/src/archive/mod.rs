//! The record archive file: a header (magic, version, level, the input's format and its first
//! table), row groups one after another (each a run of rows of one table; a SQL dump defines
//! further tables along the way), and a footer indexing them. [`RecordWriter`] streams an input
//! into an archive with memory bounded by row group size × threads; [`ArchiveReader`] opens
//! one for random access (tables, schemas, statistics, Arrow batches of some columns and row
//! groups).
mod format;
mod ranged;
mod reader;
mod tables;
mod writer;

pub(crate) use format::first_table;
pub use format::{is_archive, RECORDS};
pub(crate) use format::{parse_footer, parse_header, parse_table, Entry, MAX_METADATA_BYTES};
pub use ranged::{OpenStep, RangedOpen};
pub use reader::{with_string_views, ArchiveReader, GroupBatches};
pub use tables::RAW;
pub use writer::{BatchWriter, RecordWriter, WriteOptions, DEFAULT_ROW_GROUP};
