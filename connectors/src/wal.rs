//! The write-ahead log of one stream: numbered segment files of checksummed frames, each frame
//! the rows of one accepted request. Frames are appended and synced before their request is
//! acknowledged; a full or old segment is *sealed* and becomes archives; a segment is deleted
//! only once a checkpoint (written by rename) says its archives are durable. After a crash the
//! log is cut at its last whole frame.
//!
//! A segment file is `SEGMENT_MAGIC`, then frames: a little-endian `u32` payload length, the
//! payload's CRC-32 (`u32`, little-endian), the payload.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The first bytes of every segment file.
pub const SEGMENT_MAGIC: &[u8; 8] = b"GLYDWAL1";

/// Bytes before each frame's payload.
pub const FRAME_HEAD: usize = 8;

/// Largest payload a frame may hold; a longer length is a torn or corrupt frame.
pub const MAX_FRAME: usize = 1 << 30;

/// The checkpoint file: the number of the last segment whose archives are durable.
const CHECKPOINT: &str = "archived";

/// A sealed segment, waiting to become archives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub path: PathBuf,
    /// Payload bytes in it.
    pub bytes: u64,
}

/// What opening a log found: sealed segments to archive, and bytes cut from torn or corrupt
/// tails (with the file and offset of each cut, for the log).
#[derive(Debug, Default)]
pub struct Recovered {
    pub sealed: Vec<Segment>,
    pub cuts: Vec<(PathBuf, u64, u64)>,
}

/// A stream's log, appending to its open segment.
pub struct Wal {
    dir: PathBuf,
    file: File,
    seq: u64,
    /// Payload bytes and frames in the open segment.
    bytes: u64,
    frames: u64,
    /// When the open segment got its first frame.
    first_at: Option<Instant>,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:016}.wal"))
}

/// Syncs a folder, so that names created or renamed in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The whole frames of segment `path`, in order, passed to `frame`; returns the offset just
/// past the last whole frame and the file's length (equal where nothing is torn). Fails on
/// a file that is not a segment (a torn one shorter than its magic reads as empty).
pub fn read_frames(
    path: &Path,
    mut frame: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(u64, u64)> {
    scan_frames(path, 0, |_, p| frame(p).map(|()| true))
}

/// Like [`read_frames`], from the frame at byte `from` (0: the first; else an offset an
/// earlier scan passed), each frame passed with its offset, until `frame` returns false.
pub fn scan_frames(
    path: &Path,
    from: u64,
    mut frame: impl FnMut(u64, &[u8]) -> io::Result<bool>,
) -> io::Result<(u64, u64)> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut magic = [0u8; 8];
    if len < SEGMENT_MAGIC.len() as u64 {
        return Ok((0, len));
    }
    file.read_exact(&mut magic)?;
    if &magic != SEGMENT_MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a glyd write-ahead log segment (it does not start with {:?}); move \
                 it out of the log folder",
                path.display(),
                String::from_utf8_lossy(SEGMENT_MAGIC)
            ),
        ));
    }
    let mut at = (SEGMENT_MAGIC.len() as u64).max(from);
    if at > len {
        return Ok((at, len));
    }
    file.seek(SeekFrom::Start(at))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut payload = Vec::new();
    loop {
        let mut head = [0u8; FRAME_HEAD];
        if len - at < FRAME_HEAD as u64 {
            return Ok((at, len));
        }
        r.read_exact(&mut head)?;
        let n = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if n > MAX_FRAME || (n as u64) > len - at - FRAME_HEAD as u64 {
            return Ok((at, len));
        }
        payload.resize(n, 0);
        r.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            return Ok((at, len));
        }
        let go_on = frame(at, &payload)?;
        at += (FRAME_HEAD + n) as u64;
        if !go_on {
            return Ok((at, len));
        }
    }
}

/// The numbers of the segment files in `dir`, ascending.
fn segment_numbers(dir: &Path) -> io::Result<Vec<u64>> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(seq) = name.strip_suffix(".wal").and_then(|s| s.parse().ok()) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

fn read_checkpoint(dir: &Path) -> io::Result<Option<u64>> {
    match fs::read_to_string(dir.join(CHECKPOINT)) {
        Ok(s) => s.trim().parse().map(Some).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} does not hold a segment number; it is written by glyd sink only",
                    dir.join(CHECKPOINT).display()
                ),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Records that every segment up to `seq` is in durable archives (temporary file, sync,
/// rename, folder sync), then deletes those segments.
pub fn checkpoint(dir: &Path, seq: u64) -> io::Result<()> {
    let tmp = dir.join(format!(".{CHECKPOINT}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(format!("{seq}\n").as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(CHECKPOINT))?;
    sync_dir(dir)?;
    for s in segment_numbers(dir)?.into_iter().filter(|&s| s <= seq) {
        fs::remove_file(segment_path(dir, s))?;
    }
    Ok(())
}

impl Wal {
    /// Opens the log in `dir` (created if missing): deletes segments a checkpoint covers, cuts
    /// every other segment at its last whole frame and seals it (they are archived again,
    /// under the same names), and starts a new segment after them.
    pub fn open(dir: &Path) -> io::Result<(Wal, Recovered)> {
        fs::create_dir_all(dir)?;
        let done = read_checkpoint(dir)?;
        let mut rec = Recovered::default();
        let mut next = done.map_or(0, |d| d + 1);
        for seq in segment_numbers(dir)? {
            let path = segment_path(dir, seq);
            if done.is_some_and(|d| seq <= d) {
                fs::remove_file(&path)?;
                continue;
            }
            let mut bytes = 0u64;
            let (whole, len) = read_frames(&path, |p| {
                bytes += p.len() as u64;
                Ok(())
            })?;
            if whole < len {
                let f = OpenOptions::new().write(true).open(&path)?;
                f.set_len(whole)?;
                f.sync_all()?;
                rec.cuts.push((path.clone(), whole, len - whole));
            }
            next = next.max(seq + 1);
            if bytes == 0 {
                fs::remove_file(&path)?;
                continue;
            }
            rec.sealed.push(Segment { seq, path, bytes });
        }
        let wal = Wal::create(dir, next)?;
        Ok((wal, rec))
    }

    fn create(dir: &Path, seq: u64) -> io::Result<Wal> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(segment_path(dir, seq))?;
        file.write_all(SEGMENT_MAGIC)?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(Wal {
            dir: dir.to_path_buf(),
            file,
            seq,
            bytes: 0,
            frames: 0,
            first_at: None,
        })
    }

    /// Appends one frame per payload and syncs them: once this returns, they survive a crash.
    /// On an error the segment is cut back to where it was (nothing of these payloads stays).
    pub fn append(&mut self, payloads: &[&[u8]]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(payloads.iter().map(|p| p.len() + FRAME_HEAD).sum());
        for p in payloads {
            if p.len() > MAX_FRAME {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a frame of {} bytes is over the log's limit of {MAX_FRAME}",
                        p.len()
                    ),
                ));
            }
            buf.extend_from_slice(&(p.len() as u32).to_le_bytes());
            buf.extend_from_slice(&crc32fast::hash(p).to_le_bytes());
            buf.extend_from_slice(p);
        }
        let end = SEGMENT_MAGIC.len() as u64 + self.bytes_with_heads();
        let written = self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Best effort: a later append starts after the last whole frame either way,
            // because replay stops at the first bad one.
            let _ = self.file.set_len(end);
            let _ = self.file.seek(SeekFrom::Start(end));
            return Err(e);
        }
        self.bytes += payloads.iter().map(|p| p.len() as u64).sum::<u64>();
        self.frames += payloads.len() as u64;
        self.first_at.get_or_insert_with(Instant::now);
        Ok(())
    }

    fn bytes_with_heads(&self) -> u64 {
        self.bytes + self.frames * FRAME_HEAD as u64
    }

    /// Payload bytes in the open segment.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// When the open segment got its first frame (`None` while empty).
    pub fn first_at(&self) -> Option<Instant> {
        self.first_at
    }

    /// Seals the open segment and starts the next; `None` (and nothing done) while it is empty.
    pub fn seal(&mut self) -> io::Result<Option<Segment>> {
        if self.bytes == 0 {
            return Ok(None);
        }
        let next = Wal::create(&self.dir, self.seq + 1)?;
        let old = std::mem::replace(self, next);
        Ok(Some(Segment {
            seq: old.seq,
            path: segment_path(&old.dir, old.seq),
            bytes: old.bytes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(path: &Path) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        read_frames(path, |p| {
            out.push(p.to_vec());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn frames_come_back_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, rec) = Wal::open(dir.path()).unwrap();
        assert!(rec.sealed.is_empty());
        wal.append(&[b"one\n", b"two\n"]).unwrap();
        wal.append(&[b"three\n"]).unwrap();
        let path = segment_path(dir.path(), 0);
        drop(wal);
        // A torn frame: its head and half its payload.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&5u32.to_le_bytes()).unwrap();
        f.write_all(&crc32fast::hash(b"four\n").to_le_bytes())
            .unwrap();
        f.write_all(b"fo").unwrap();
        drop(f);
        let (mut wal, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.cuts.len(), 1);
        assert_eq!(rec.cuts[0].2, 10);
        assert_eq!(rec.sealed.len(), 1);
        assert_eq!(frames(&path), [&b"one\n"[..], b"two\n", b"three\n"]);
        // Appends go to a new segment; sealing hands it over; a checkpoint deletes both.
        wal.append(&[b"five\n"]).unwrap();
        let s = wal.seal().unwrap().unwrap();
        assert_eq!((s.seq, s.bytes), (1, 5));
        assert!(wal.seal().unwrap().is_none());
        checkpoint(dir.path(), 1).unwrap();
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert!(rec.sealed.is_empty() && rec.cuts.is_empty());
        // The empty segment 2 is dropped; writing goes on in 3.
        assert_eq!(segment_numbers(dir.path()).unwrap(), [3]);
    }

    #[test]
    fn a_corrupt_frame_ends_the_segment_and_a_stranger_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path()).unwrap();
        wal.append(&[b"good\n", b"flipped\n", b"after\n"]).unwrap();
        drop(wal);
        let path = segment_path(dir.path(), 0);
        let mut bytes = fs::read(&path).unwrap();
        let at = 8 + 8 + 5 + 8 + 2;
        bytes[at] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.cuts[0].1, 8 + 8 + 5);
        assert_eq!(frames(&path), [&b"good\n"[..]]);
        fs::write(segment_path(dir.path(), 9), b"not a segment at all").unwrap();
        let err = Wal::open(dir.path()).err().unwrap().to_string();
        assert!(err.contains("not a glyd write-ahead log segment"), "{err}");
    }
}
