//! Column codecs: how a column's values become byte streams and back, each depending only on
//! the model. Integers ([`ints`]: varints, deltas, byte planes, scaled planes), text
//! dictionaries ([`dict`]), prose as words ([`words`]), text with numbers in it as templates
//! and variables ([`template`]), and Arrow arrays as IPC streams ([`arrow_ipc`]).
pub mod arrow_ipc;
pub mod dict;
pub mod ints;
pub mod template;
pub mod words;
