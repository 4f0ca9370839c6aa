//! One column of one row group: typed from its spellings ([`infer`]), coded into byte streams
//! by the codecs ([`mod@encode`]; each stream later compressed as its own core chunk), decoded back
//! ([`decoded`]), linked to other columns of its row group ([`links`]), spelled as text exactly
//! as it was ([`spell`]) and turned into Arrow arrays ([`arrow`], [`arrow_table`]).
//!
//! Kinds: integers, fixed-place decimals, ISO dates and timestamps are stored as i64; text is
//! stored plain, as a dictionary, as words or as templates. A per-row *flags* stream, present
//! only when some flag is not 0, says how each value was spelled: quoted (1), a null (2;
//! spelled as the style spells nulls), or absent (3; a key the row's object does not have).
mod arrow;
mod arrow_table;
mod coding;
mod decoded;
mod encode;
mod infer;
mod links;
mod spell;
#[cfg(test)]
mod tests;

pub use arrow::typed_array;
pub(crate) use arrow_table::encode_array;
pub use arrow_table::to_target;
pub use coding::Coding;
pub use decoded::{decode, Column, Follow, Link, RowCursor};
pub use encode::{encode, encode_as};
pub use links::{
    copy_candidate, follow_candidate, linked_candidates, linked_sequence, order_of, resolve_links,
};
pub use spell::{put_csv_quoted, Cells, ColumnWriter};
