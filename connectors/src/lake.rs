//! Archives in a hive-partitioned lake, built from a sealed log segment: each row goes to the
//! archive of its hour (one archive written at a time, a pass over the segment each, so that
//! building archives holds one record writer's memory), `OUT/<stream>/dt=YYYY-MM-DD/hour=HH/<stream>-<first time>-<seq>-<k>.glyd`
//! (`seq` the segment's number, `k` the archive's among that segment's), written under a
//! temporary name, synced, renamed into place and its folder synced; or, for a lake on object
//! storage ([`Lake::Objects`]), uploaded in parts under its name and durable once the upload
//! completes. Building the same segment again writes the same names with the same rows, so a
//! segment archived twice (a crash between its archives and its checkpoint) leaves no
//! duplicates.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use glyd_columnar::{sniff_json_lines, Dialect, RecordWriter, WriteOptions};

use crate::store;
use crate::wal::{scan_frames, sync_dir, Segment};

/// Bytes of the first frames a segment's table layout is sniffed from.
const SNIFF_BYTES: usize = 1 << 20;

/// Where a lake's archives land: a local folder, or a prefix on an object store.
#[derive(Clone, Debug)]
pub enum Lake {
    Folder(PathBuf),
    Objects(store::Location),
}

impl Lake {
    /// The lake `s` names: a URL (`s3://bucket/lake/`) or a folder.
    pub fn parse(s: &str) -> io::Result<Lake> {
        if store::is_url(s) {
            let loc = store::locate(&format!("{}/", s.trim_end_matches('/')))?;
            return Ok(Lake::Objects(loc));
        }
        Ok(Lake::Folder(PathBuf::from(s)))
    }

    /// The local folder, for a lake on local disk.
    pub fn folder(&self) -> Option<&Path> {
        match self {
            Lake::Folder(p) => Some(p),
            Lake::Objects(_) => None,
        }
    }

    /// Makes the lake's folder (a prefix on a store needs none).
    pub fn create(&self) -> io::Result<()> {
        match self {
            Lake::Folder(p) => fs::create_dir_all(p),
            Lake::Objects(_) => Ok(()),
        }
    }

    /// Removes what killed writers left under `rel` (temporary files; on an object store,
    /// uploads never completed are invisible and expire: nothing to do).
    pub fn remove_temporaries(&self, rel: &str) -> io::Result<usize> {
        match self {
            Lake::Folder(p) => remove_temporaries(&p.join(rel)),
            Lake::Objects(_) => Ok(0),
        }
    }

    /// Starts writing the archive at `rel` (a `/`-separated path under the lake).
    fn start(&self, rel: &str) -> io::Result<Target> {
        match self {
            Lake::Folder(root) => {
                let path = root.join(rel);
                make_dirs(root, path.parent().expect("in a folder"))?;
                let tmp = temporary(&path);
                let file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
                Ok(Target::File { file, tmp, path })
            }
            Lake::Objects(prefix) => {
                let loc = prefix.join(rel)?;
                let upload = store::Upload::start(&loc)?;
                Ok(Target::Object {
                    upload: Box::new(BufWriter::with_capacity(1 << 20, upload)),
                    url: loc.url.to_string(),
                })
            }
        }
    }
}

impl fmt::Display for Lake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lake::Folder(p) => write!(f, "{}", p.display()),
            Lake::Objects(loc) => write!(f, "{}", loc.url),
        }
    }
}

/// An archive being written: a temporary file, or an upload.
enum Target {
    File {
        file: BufWriter<File>,
        tmp: PathBuf,
        path: PathBuf,
    },
    Object {
        upload: Box<BufWriter<store::Upload>>,
        url: String,
    },
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::File { file, .. } => file.write(buf),
            Target::Object { upload, .. } => upload.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::File { file, .. } => file.flush(),
            Target::Object { upload, .. } => upload.flush(),
        }
    }
}

impl Target {
    /// Makes the archive durable under its name: synced and renamed into place (its folder
    /// synced), or its upload completed. Its name, and its size.
    fn commit(self) -> io::Result<(String, u64)> {
        match self {
            Target::File { file, tmp, path } => {
                let done = (|| -> io::Result<u64> {
                    let file = file.into_inner().map_err(|e| e.into_error())?;
                    file.sync_all()?;
                    let len = file.metadata()?.len();
                    drop(file);
                    fs::rename(&tmp, &path)?;
                    sync_dir(path.parent().expect("in a folder"))?;
                    Ok(len)
                })();
                if done.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                Ok((path.display().to_string(), done?))
            }
            Target::Object { upload, url } => {
                let upload = (*upload).into_inner().map_err(|e| e.into_error())?;
                let len = upload.len();
                upload.complete()?;
                Ok((url, len))
            }
        }
    }
}

/// An archive written into the lake.
#[derive(Debug, Clone)]
pub struct Archived {
    /// Its path or URL.
    pub name: String,
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

/// The rows of a frame, each with its newline.
fn rows_of(payload: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', payload)
        .map(|i| i + 1)
        .chain(std::iter::once(payload.len()))
        .filter_map(move |end| {
            let row = &payload[start..end];
            start = end;
            (!row.is_empty()).then_some(row)
        })
}

/// A partition's date and hour as one fixed-size key.
fn hour_key(date: &str, hour: &str) -> [u8; 12] {
    let mut k = [0u8; 12];
    for (d, s) in k.iter_mut().zip(date.bytes().chain(hour.bytes())) {
        *d = s;
    }
    k
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

/// An archive being built.
struct Open {
    writer: RecordWriter<Target>,
    rows: u64,
    /// Its temporary file, in a lake on local disk.
    tmp: Option<PathBuf>,
}

impl Open {
    fn start(lake: &Lake, rel: &str, dialect: Dialect, opts: &WriteOptions) -> io::Result<Open> {
        let target = lake.start(rel)?;
        let tmp = match &target {
            Target::File { tmp, .. } => Some(tmp.clone()),
            Target::Object { .. } => None,
        };
        match RecordWriter::new(target, dialect, opts) {
            Ok(writer) => Ok(Open {
                writer,
                rows: 0,
                tmp,
            }),
            Err(e) => {
                if let Some(t) = tmp {
                    let _ = fs::remove_file(t);
                }
                Err(io::Error::other(e))
            }
        }
    }

    /// Finishes the archive and makes it durable; on an error, nothing is left under its name
    /// (a temporary file is removed, an upload aborted).
    fn finish(self) -> io::Result<Archived> {
        let bytes_in = self.writer.bytes_in();
        let (rows, tmp) = (self.rows, self.tmp);
        let done = self
            .writer
            .finish()
            .map_err(io::Error::other)
            .and_then(Target::commit);
        match done {
            Ok((name, bytes_out)) => Ok(Archived {
                name,
                rows,
                bytes_in,
                bytes_out,
            }),
            Err(e) => {
                if let Some(t) = tmp {
                    let _ = fs::remove_file(t);
                }
                Err(e)
            }
        }
    }

    /// Abandons the archive (an error while writing it).
    fn abandon(self) {
        drop(self.writer);
        if let Some(t) = self.tmp {
            let _ = fs::remove_file(t);
        }
    }
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

/// Writes `rows` (JSON lines, whole lines in each chunk) as the archive at `rel` in `lake`,
/// with footer `metadata`. Durable when this returns (see [`Target::commit`]).
#[cfg(feature = "kafka")]
pub(crate) fn write_archive(
    lake: &Lake,
    rel: &str,
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
            format!("{lake}/{rel}: its rows are not JSON lines"),
        )
    })?;
    let mut o = Open::start(lake, rel, dialect, opts)?;
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
        o.abandon();
        return Err(e);
    }
    o.rows = rows
        .iter()
        .map(|c| memchr::memchr_iter(b'\n', c).count() as u64)
        .sum();
    o.finish()
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

/// The hours of a segment's rows, from one scan of it: what each archive needs to find its
/// rows again without splitting the frames that hold none of them.
#[derive(Default)]
struct Hours {
    /// (date, hour) in order of first appearance, with the first row's [`stamp`].
    keys: Vec<((String, String), String)>,
    /// Per hour: the offsets of its first and last frames.
    frames: Vec<(u64, u64)>,
    /// Offsets of the frames holding rows of more than one hour.
    mixed: HashSet<u64>,
}

impl Hours {
    /// Reads `seg`, returning its hours and the first [`SNIFF_BYTES`] of its rows.
    fn scan(seg: &Segment) -> io::Result<(Hours, Vec<u8>)> {
        let mut h = Hours::default();
        let mut sample = Vec::new();
        let mut last: Option<usize> = None;
        let mut index: HashMap<[u8; 12], usize> = HashMap::new();
        scan_frames(&seg.path, 0, |at, payload| {
            if sample.len() < SNIFF_BYTES {
                sample.extend_from_slice(payload);
            }
            let mut in_frame: Option<usize> = None;
            for row in rows_of(payload) {
                let Some((date, hour)) = partition(row) else {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: a row without its time first", seg.path.display()),
                    ));
                };
                // Rows come mostly in time order: the previous row's hour first.
                let k = match last.filter(|&k| h.keys[k].0 .0 == date && h.keys[k].0 .1 == hour) {
                    Some(k) => k,
                    None => *index.entry(hour_key(date, hour)).or_insert_with(|| {
                        h.keys
                            .push(((date.to_string(), hour.to_string()), stamp(row)));
                        h.frames.push((at, at));
                        h.keys.len() - 1
                    }),
                };
                last = Some(k);
                h.frames[k].1 = at;
                match in_frame {
                    None => in_frame = Some(k),
                    Some(j) if j != k => {
                        h.mixed.insert(at);
                    }
                    Some(_) => {}
                }
            }
            Ok(true)
        })?;
        Ok((h, sample))
    }
}

/// Writes the rows of sealed segment `seg` of `stream` into archives under `<stream>/` of `lake`
/// (see the module doc) and returns them; every one is durable when this returns.
pub fn archive_segment(
    lake: &Lake,
    stream: &str,
    seg: &Segment,
    opts: &WriteOptions,
) -> io::Result<Vec<Archived>> {
    let (hours, sample) = Hours::scan(seg)?;
    let Some(dialect) = sniff_json_lines(&sample, true) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: its rows are not JSON lines", seg.path.display()),
        ));
    };
    let mut done = Vec::new();
    for (k, ((date, hour), first)) in hours.keys.iter().enumerate() {
        let rel = format!(
            "{stream}/dt={date}/hour={hour}/{stream}-{first}-{:016}-{k}.glyd",
            seg.seq
        );
        let (from, to) = hours.frames[k];
        let mut o = Open::start(lake, &rel, dialect.clone(), opts)?;
        let mut last_stamp = String::new();
        let written = scan_frames(&seg.path, from, |at, payload| {
            let mut last: &[u8] = &[];
            if hours.mixed.contains(&at) {
                for row in rows_of(payload) {
                    if partition(row) == Some((date.as_str(), hour.as_str())) {
                        o.writer.write_all(row)?;
                        o.rows += 1;
                        last = row;
                    }
                }
            } else if partition(payload) == Some((date.as_str(), hour.as_str())) {
                // A frame of this hour alone: written whole.
                o.writer.write_all(payload)?;
                o.rows += memchr::memchr_iter(b'\n', payload).count() as u64;
                let end = payload.len().saturating_sub(1);
                last = &payload[memchr::memrchr(b'\n', &payload[..end]).map_or(0, |i| i + 1)..];
            }
            if !last.is_empty() {
                last_stamp = stamp(last);
            }
            Ok(at < to)
        })
        .and_then(|_| {
            for (k, v) in [
                ("glyd.sink.stream", stream),
                ("glyd.sink.segment", &seg.seq.to_string()),
                ("glyd.sink.first_time", first),
                ("glyd.sink.last_time", &last_stamp),
            ] {
                o.writer.set_metadata(k, v).map_err(io::Error::other)?;
            }
            Ok(())
        });
        if let Err(e) = written {
            o.abandon();
            return Err(e);
        }
        done.push(o.finish()?);
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
    fn frames_of_one_hour_and_mixed_frames_land_like_rows_filtered_one_by_one() {
        let lake = tempfile::tempdir().unwrap();
        let log = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(log.path()).unwrap();
        let row = |h: u32, m: u32| {
            format!("{{\"time\":\"2026-12-07T{h:02}:{m:02}:00.000000\",\"m\":{m}}}\n")
        };
        // Whole frames of one hour, an hour coming back after another, a mixed frame.
        let frames: Vec<Vec<(u32, u32)>> = vec![
            vec![(12, 1), (12, 2)],
            vec![(13, 3)],
            vec![(12, 4), (12, 5)],
            vec![(14, 6), (12, 7), (13, 8)],
            vec![(14, 9)],
        ];
        for f in &frames {
            let bytes: String = f.iter().map(|&(h, m)| row(h, m)).collect();
            wal.append(&[bytes.as_bytes()]).unwrap();
        }
        let seg = wal.seal().unwrap().unwrap();
        let folder = Lake::Folder(lake.path().to_path_buf());
        let archived = archive_segment(&folder, "app", &seg, &WriteOptions::default()).unwrap();
        assert_eq!(archived.len(), 3);
        for (a, hour) in archived.iter().zip([12, 13, 14]) {
            let want: String = frames
                .iter()
                .flatten()
                .filter(|&&(h, _)| h == hour)
                .map(|&(h, m)| row(h, m))
                .collect();
            let mut rebuilt = Vec::new();
            glyd_columnar::rebuild(&fs::read(&a.name).unwrap()[..], &mut rebuilt).unwrap();
            assert_eq!(String::from_utf8(rebuilt).unwrap(), want, "hour {hour}");
            assert_eq!(a.rows, want.lines().count() as u64);
            let r = glyd_columnar::ArchiveReader::from_bytes(fs::read(&a.name).unwrap()).unwrap();
            let last = want.lines().last().unwrap();
            let stamp = format!("20261207T{}{}00Z", &last[20..22], &last[23..25]);
            assert!(r
                .metadata()
                .iter()
                .any(|(k, v)| k == "glyd.sink.last_time" && *v == stamp));
        }
    }

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
        let folder = Lake::Folder(lake.path().to_path_buf());
        let first = archive_segment(&folder, "app", &seg, &opts).unwrap();
        let names: Vec<&str> = first
            .iter()
            .map(|a| {
                a.name
                    .strip_prefix(&format!("{}/", lake.path().display()))
                    .unwrap()
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
        let bytes: Vec<Vec<u8>> = first.iter().map(|a| fs::read(&a.name).unwrap()).collect();
        let again = archive_segment(&folder, "app", &seg, &opts).unwrap();
        for (a, b) in again.iter().zip(&bytes) {
            assert_eq!(&fs::read(&a.name).unwrap(), b);
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
