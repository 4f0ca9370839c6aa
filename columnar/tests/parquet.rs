//! Parquet in and out, on every file of the parquet-testing corpus (66 files from many writers:
//! every physical type, nested lists, maps and structs, every encoding and page codec, and
//! deliberately malformed files). A file arrow-rs reads becomes an archive that reads back as
//! the same Arrow data, in one row group or many, and rebuilds (indexed or streamed) as a
//! Parquet file of that same data. A file arrow-rs cannot read is a clean error.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use glyd_columnar::parquet::archive;
use glyd_columnar::{rebuild, ArchiveReader, Error, WriteOptions};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The corpus's Parquet files: empty where the corpus is missing and not required (the testkit
/// has said why on stderr).
fn corpus() -> Vec<PathBuf> {
    let files = glyd_testkit::corpus("parquet-testing").unwrap_or_default();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect()
}

/// The file's data as arrow-rs reads it, or why it cannot.
fn read_parquet(bytes: Bytes) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let b = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| e.to_string())?;
    let schema = b.schema().clone();
    let r = b.build().map_err(|e| e.to_string())?;
    let batches = r
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok((schema, batches))
}

/// Every column of `got` holds the same Arrow data as `want` (same types, values and nulls).
fn assert_same(
    name: &str,
    what: &str,
    want: &[RecordBatch],
    got: &[RecordBatch],
    schema: &SchemaRef,
) {
    let want = arrow_select::concat::concat_batches(schema, want).unwrap();
    let got = arrow_select::concat::concat_batches(schema, got).unwrap();
    assert_eq!(want.num_rows(), got.num_rows(), "{name}: {what}: rows");
    for (i, f) in schema.fields().iter().enumerate() {
        assert_eq!(
            want.column(i).to_data(),
            got.column(i).to_data(),
            "{name}: {what}: column {}",
            f.name()
        );
    }
}

#[test]
fn every_readable_parquet_file_round_trips_as_arrow_data() {
    let (mut read, mut refused) = (0, 0);
    let mut sizes = Vec::new();
    for path in corpus() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = Bytes::from(std::fs::read(&path).unwrap());
        // Rows too big for an archive are refused from the footer, before arrow-rs would
        // inflate them (large_string_map.brotli.parquet: 2 GiB of strings in 4 KiB).
        if let Err(Error::Parquet(msg)) =
            archive(bytes.clone(), Vec::new(), &WriteOptions::default())
        {
            if msg.contains("a row of a record archive is at most") {
                eprintln!("{name}: {msg}");
                refused += 1;
                continue;
            }
        }
        let expected = read_parquet(bytes.clone());
        // Many row groups: 1 KiB ones for small files, 64 KiB ones for the larger.
        let small = if bytes.len() < 64 << 10 {
            1 << 10
        } else {
            64 << 10
        };
        for row_group_size in [small, glyd_columnar::DEFAULT_ROW_GROUP] {
            let opts = WriteOptions {
                row_group_size,
                threads: 2,
                ..WriteOptions::default()
            };
            let got = archive(bytes.clone(), Vec::new(), &opts);
            let (schema, want, a) = match (&expected, got) {
                (Err(_), Err(Error::Parquet(msg))) => {
                    assert!(!msg.is_empty(), "{name}: empty error");
                    continue;
                }
                (Err(e), Ok(_)) => panic!("{name}: arrow-rs refuses it ({e}) but it was archived"),
                (_, Err(e)) => panic!("{name}: {e}"),
                (Ok((schema, want)), Ok(a)) => {
                    if row_group_size == glyd_columnar::DEFAULT_ROW_GROUP {
                        sizes.push((name.clone(), bytes.len(), a.len()));
                    }
                    let r = ArchiveReader::from_bytes(a.clone()).unwrap();
                    assert!(r.is_arrow());
                    assert_eq!(r.schema().fields(), schema.fields(), "{name}: schema");
                    let got = r.read(None, 0..r.row_groups().len()).unwrap();
                    assert_same(&name, "archive", want, &got, schema);
                    // Rebuilt as Parquet, indexed and streamed alike.
                    let mut rebuilt = Vec::new();
                    r.rebuild_to(&mut rebuilt).unwrap();
                    let mut streamed = Vec::new();
                    rebuild(&a[..], &mut streamed).unwrap();
                    assert_eq!(rebuilt, streamed, "{name}: two rebuilds");
                    let (s2, back) = read_parquet(Bytes::from(rebuilt)).unwrap();
                    assert_eq!(s2.fields(), schema.fields(), "{name}: rebuilt schema");
                    assert_same(&name, "rebuilt Parquet", want, &back, schema);
                    (schema.clone(), want.clone(), a)
                }
            };
            // A projection of the last column alone reads the same.
            if let Some(last) = schema.fields().len().checked_sub(1) {
                let r = ArchiveReader::from_bytes(a).unwrap();
                let got = r.read(Some(&[last]), 0..r.row_groups().len()).unwrap();
                let want: Vec<RecordBatch> =
                    want.iter().map(|b| b.project(&[last]).unwrap()).collect();
                let projected = SchemaRef::new(schema.project(&[last]).unwrap());
                assert_same(&name, "projection", &want, &got, &projected);
            }
        }
        match expected {
            Ok(_) => read += 1,
            Err(_) => refused += 1,
        }
    }
    eprintln!("{read} files round-tripped, {refused} refused cleanly");
    for (name, parquet, glyd) in &sizes {
        eprintln!("{name}: Parquet {parquet} B, archive {glyd} B");
    }
    assert!(read >= 40 && refused >= 1, "{read} read, {refused} refused");
}
