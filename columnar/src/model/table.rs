//! A table of an archive: its name and how its rows are spelled.

use super::dialect::Dialect;

/// One table of an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub dialect: Dialect,
}
