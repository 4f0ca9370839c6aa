//! Row groups: a run of whole records shredded into columns, each column's streams compressed
//! as core chunks, and a checksummed header that says where every chunk is, what kind each
//! column is and its statistics ([`meta`]). Encoding verifies itself ([`mod@encode`]); decoding
//! checks what a row group will need before it decodes anything ([`decode`]).
mod decode;
mod encode;
mod meta;

pub use decode::{
    check_need, chunk_dictionary, column_coding, decode_columns, rebuild, rebuild_passing,
    verbatim, verbatim_count, GroupBytes,
};
pub use encode::{encode, encode_batch, with_table, Encoded};
pub use meta::{
    parse_header, ColumnMeta, RowGroupMeta, RowRole, StreamMeta, MAX_INPUT, TAG_END, TAG_ROW_GROUP,
    TAG_TABLE,
};
