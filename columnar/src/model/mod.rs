//! The record engine's model: what every other layer of the crate speaks, and imports nothing
//! of it but its leaves (`error`, `wire`, `spelling`). How an input is laid out
//! ([`Format`], [`Dialect`], [`Style`]), what shredding it gives ([`Shredded`]: raw columns,
//! row terminators, verbatim exceptions, row shapes), and what a column chunk is ([`Kind`],
//! [`Role`], flags, [`Stats`], [`EncodedColumn`]).
mod column;
mod dialect;
pub mod exceptions;
mod format;
mod shapes;
mod shredded;
mod table;

pub(crate) use column::{all_in_range, arrow_unit, SAMPLE_ROWS};
pub use column::{
    has_value, text_range, EncodedColumn, FastMap, FastSet, Kind, RawColumn, Role, Stats, ABSENT,
    BARE, MAX_STAT_TEXT, NULL, QUOTED,
};
pub use dialect::{
    Dialect, FieldEnd, LogField, Style, CRLF, DELIMITERS, INSERT_VALUES, JSON_LINES, LF, LINES,
    LOG_FIELDS, NONE,
};
pub use exceptions::Exceptions;
pub use format::Format;
pub use shapes::{Shape, ShapeIndex, Shapes, MAX_SHAPES};
pub use shredded::{reserve_like, Shredded, RESERVE_AFTER};
pub use table::{Layout, Table};
