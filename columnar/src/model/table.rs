//! A table of an archive: its name and how its rows are laid out.

use super::dialect::Dialect;

/// How a table's rows are held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Rows of text spelled in a dialect (which also names the columns): they rebuild byte
    /// for byte.
    Text(Dialect),
    /// Arrow values (a Parquet file's), columns named as in its schema: nothing is spelled.
    Arrow(Vec<String>),
}

/// One table of an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub layout: Layout,
}

impl Table {
    /// A table of text rows spelled in `dialect`.
    pub fn text(name: impl Into<String>, dialect: Dialect) -> Self {
        Table {
            name: name.into(),
            layout: Layout::Text(dialect),
        }
    }

    /// The columns' names, in order.
    pub fn names(&self) -> &[String] {
        match &self.layout {
            Layout::Text(d) => &d.names,
            Layout::Arrow(names) => names,
        }
    }

    /// How many columns the table has.
    pub fn columns(&self) -> usize {
        match &self.layout {
            Layout::Text(d) => d.columns,
            Layout::Arrow(names) => names.len(),
        }
    }

    /// The dialect of a text table (`None` for Arrow values).
    pub fn dialect(&self) -> Option<&Dialect> {
        match &self.layout {
            Layout::Text(d) => Some(d),
            Layout::Arrow(_) => None,
        }
    }
}
