//! Fuzz the column decoder (see `glyd_columnar::fuzzing::decode_column`): a kind, a row count
//! and streams cut from the input, decoded, resolved, turned into Arrow and spelled. Errors are
//! fine; panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| glyd_columnar::fuzzing::decode_column(input));
