//! Archives in a hive-partitioned lake, built from a sealed log segment: each row goes to the
//! archive of its hour (one archive written at a time, a pass over the segment each, so that
//! building archives holds one record writer's memory), `OUT/<stream>/dt=YYYY-MM-DD/hour=HH/<stream>-<first time>-<seq>-<k>.glyd`
//! (`seq` the segment's number, `k` the archive's among that segment's), written under a
//! temporary name, synced, renamed into place and its folder synced. Building the same segment
//! again writes the same names with the same rows, so a segment archived twice (a crash
//! between its archives and its checkpoint) leaves no duplicates.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use glyd_columnar::{sniff_json_lines, RecordWriter, WriteOptions};

use crate::wal::{read_frames, sync_dir, Segment};

/// Bytes of the first frames a segment's table layout is sniffed from.
const SNIFF_BYTES: usize = 1 << 20;

/// An archive written into the lake.
#[derive(Debug, Clone)]
pub struct Archived {
    pub path: PathBuf,
    pub rows: u64,
    /// Input bytes (the rows as JSON lines) and archive bytes.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// The partition of a row (as [`crate::event::push_row`] writes them): its date and hour.
fn partition(row: &[u8]) -> Option<(&str, &str)> {
    let t = row.strip_prefix(b"{\"time\":\"")?;
    let date = std::str::from_utf8(t.get(..10)?).ok()?;
    let hour = std::str::from_utf8(t.get(11..13)?).ok()?;
    Some((date, hour))
}

/// `2026-12-07T12:00:01.5...` as `20261207T120001Z`.
fn stamp(row: &[u8]) -> String {
    let t = &row[9..28];
    t.iter()
        .filter(|b| b.is_ascii_digit() || **b == b'T')
        .map(|&b| b as char)
        .chain(std::iter::once('Z'))
        .collect()
}

struct Open {
    writer: RecordWriter<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    rows: u64,
}

/// Temporary name of an archive being written at `path`: hidden, and unique to this process
/// so that two writers of one name (a partition's old and new owner) never share one.
fn temporary(path: &Path) -> PathBuf {
    let name = path.file_name().expect("a file name").to_string_lossy();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Whether `name` is a temporary archive's file name (see [`temporary`]).
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp") && name.contains(".glyd.")
}

/// Writes `rows` (JSON lines, whole lines in each chunk) as the archive at `path`, with
/// footer `metadata`: under a temporary name, synced, renamed into place, its folder (made if
/// missing, under `root`) synced. Durable when this returns.
#[cfg(feature = "kafka")]
pub(crate) fn write_archive(
    root: &Path,
    path: &Path,
    rows: &[Vec<u8>],
    metadata: &[(&str, &str)],
    opts: &WriteOptions,
) -> io::Result<Archived> {
    let mut sample = Vec::new();
    for chunk in rows {
        if sample.len() >= SNIFF_BYTES {
            break;
        }
        sample.extend_from_slice(chunk);
    }
    let whole = sample.len() == rows.iter().map(Vec::len).sum::<usize>();
    let dialect = sniff_json_lines(&sample, whole).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: its rows are not JSON lines", path.display()),
        )
    })?;
    make_dirs(root, path.parent().expect("in a folder"))?;
    let tmp = temporary(path);
    let file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let writer = RecordWriter::new(file, dialect, opts).map_err(io::Error::other)?;
    let mut o = Open {
        writer,
        tmp,
        path: path.to_path_buf(),
        rows: 0,
    };
    let written = rows
        .iter()
        .try_for_each(|c| o.writer.write_all(c))
        .and_then(|()| {
            for (k, v) in metadata {
                o.writer.set_metadata(k, v).map_err(io::Error::other)?;
            }
            Ok(())
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&o.tmp);
        return Err(e);
    }
    o.rows = rows
        .iter()
        .map(|c| memchr::memchr_iter(b'\n', c).count() as u64)
        .sum();
    let tmp = o.tmp.clone();
    let mut done = Vec::new();
    finish(o, &mut done).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })?;
    Ok(done.pop().expect("one archive"))
}

fn finish(o: Open, done: &mut Vec<Archived>) -> io::Result<()> {
    let bytes_in = o.writer.bytes_in();
    let file = o
        .writer
        .finish()
        .map_err(io::Error::other)?
        .into_inner()
        .map_err(|e| e.into_error())?;
    file.sync_all()?;
    let bytes_out = file.metadata()?.len();
    drop(file);
    fs::rename(&o.tmp, &o.path)?;
    sync_dir(o.path.parent().expect("in a folder"))?;
    done.push(Archived {
        path: o.path,
        rows: o.rows,
        bytes_in,
        bytes_out,
    });
    Ok(())
}

/// Creates `dir` and its missing parents under `root`, syncing each parent a folder was
/// made in.
fn make_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().expect("under the root");
    if parent != root {
        make_dirs(root, parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => sync_dir(parent),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes the rows of sealed segment `seg` of `stream` into archives under `root/<stream>/`
/// (see the module doc) and returns them; every one is durable when this returns.
pub fn archive_segment(
    root: &Path,
    stream: &str,
    seg: &Segment,
    opts: &WriteOptions,
) -> io::Result<Vec<Archived>> {
    let mut sample = Vec::new();
    read_frames(&seg.path, |p| {
        if sample.len() < SNIFF_BYTES {
            sample.extend_from_slice(p);
        }
        Ok(())
    })?;
    let Some(dialect) = sniff_json_lines(&sample, true) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: its rows are not JSON lines", seg.path.display()),
        ));
    };
    // The hours of the segment's rows, in order of first appearance, with their first row's
    // time: one archive each.
    let mut hours: Vec<((String, String), String)> = Vec::new();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    read_frames(&seg.path, |payload| {
        for row in payload.split_inclusive(|&b| b == b'\n') {
            let Some((date, hour)) = partition(row) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: a row without its time first", seg.path.display()),
                ));
            };
            if !seen.contains_key(&(date.to_string(), hour.to_string())) {
                let key = (date.to_string(), hour.to_string());
                seen.insert(key.clone(), hours.len());
                hours.push((key, stamp(row)));
            }
        }
        Ok(())
    })?;
    let base = root.join(stream);
    let mut done = Vec::new();
    for (k, ((date, hour), first)) in hours.iter().enumerate() {
        let dir = base.join(format!("dt={date}")).join(format!("hour={hour}"));
        make_dirs(root, &dir)?;
        let path = dir.join(format!("{stream}-{first}-{:016}-{k}.glyd", seg.seq));
        let tmp = temporary(&path);
        let file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let writer = RecordWriter::new(file, dialect.clone(), opts).map_err(io::Error::other)?;
        let mut last = String::new();
        let mut o = Open {
            writer,
            tmp,
            path,
            rows: 0,
        };
        read_frames(&seg.path, |payload| {
            for row in payload.split_inclusive(|&b| b == b'\n') {
                if partition(row) == Some((date.as_str(), hour.as_str())) {
                    o.writer.write_all(row)?;
                    o.rows += 1;
                    last = stamp(row);
                }
            }
            Ok(())
        })?;
        for (k, v) in [
            ("glyd.sink.stream", stream),
            ("glyd.sink.segment", &seg.seq.to_string()),
            ("glyd.sink.first_time", first),
            ("glyd.sink.last_time", &last),
        ] {
            o.writer.set_metadata(k, v).map_err(io::Error::other)?;
        }
        finish(o, &mut done)?;
    }
    Ok(done)
}

/// Removes the temporary files a killed writer left under `dir` (any depth).
pub fn remove_temporaries(dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            removed += remove_temporaries(&entry.path())?;
        } else if is_temporary(&name) {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::Wal;

    #[test]
    fn rows_land_by_hour_and_again_under_the_same_names() {
        let lake = tempfile::tempdir().unwrap();
        let log = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(log.path()).unwrap();
        let rows = b"{\"time\":\"2026-12-07T12:00:01.000000\",\"a\":1}\n\
                     {\"time\":\"2026-12-07T13:59:59.000000\",\"a\":2}\n\
                     {\"time\":\"2026-12-07T12:30:00.000000\",\"a\":3}\n";
        wal.append(&[rows]).unwrap();
        let seg = wal.seal().unwrap().unwrap();
        let opts = WriteOptions::default();
        let first = archive_segment(lake.path(), "app", &seg, &opts).unwrap();
        let names: Vec<String> = first
            .iter()
            .map(|a| {
                a.path
                    .strip_prefix(lake.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "app/dt=2026-12-07/hour=12/app-20261207T120001Z-0000000000000000-0.glyd",
                "app/dt=2026-12-07/hour=13/app-20261207T135959Z-0000000000000000-1.glyd",
            ]
        );
        assert_eq!(first.iter().map(|a| a.rows).sum::<u64>(), 3);
        let bytes: Vec<Vec<u8>> = first.iter().map(|a| fs::read(&a.path).unwrap()).collect();
        let again = archive_segment(lake.path(), "app", &seg, &opts).unwrap();
        for (a, b) in again.iter().zip(&bytes) {
            assert_eq!(&fs::read(&a.path).unwrap(), b);
        }
        let r = glyd_columnar::ArchiveReader::from_bytes(bytes[0].clone()).unwrap();
        let meta: Vec<(&str, &str)> = r
            .metadata()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            meta,
            [
                ("glyd.sink.stream", "app"),
                ("glyd.sink.segment", "0"),
                ("glyd.sink.first_time", "20261207T120001Z"),
                ("glyd.sink.last_time", "20261207T123000Z"),
            ]
        );
        let mut rebuilt = Vec::new();
        glyd_columnar::rebuild(&bytes[0][..], &mut rebuilt).unwrap();
        assert_eq!(
            rebuilt,
            b"{\"time\":\"2026-12-07T12:00:01.000000\",\"a\":1}\n\
              {\"time\":\"2026-12-07T12:30:00.000000\",\"a\":3}\n"
        );
        fs::write(lake.path().join("app/dt=2026-12-07/.x.glyd.7.tmp"), b"half").unwrap();
        assert_eq!(remove_temporaries(lake.path()).unwrap(), 1);
    }
}
