//! One assigned partition's rows on their way into archives, and where archives are cut.
//!
//! An archive holds a contiguous run of a partition's offsets and is named after its first
//! (`<topic>+<partition>+<first offset, 20 digits>.glyd`). Where it ends is a function of where
//! it starts and of the messages alone, never of when they arrived:
//!
//! - offsets are grouped in *chunks* of `roll_records` (`offset / roll_records`): an archive
//!   never spans two, so one that reaches the end of its chunk is cut there;
//! - an archive whose rows reach `roll_bytes` is cut after that row.
//!
//! A timer (`roll_age` after an archive's first row arrived) or the memory budget may cut an
//! archive early, a *partial* one; the next archive starts at the offset after it and ends
//! where the partial one would have, so partial archives continue by name.
//!
//! Exactly once in the lake follows from three rules: an archive is written only from the
//! partition's committed offset (a member resumes there; each archive's offsets are committed,
//! synchronously, once it is durable, and the next archive is written only after that commit);
//! a partition's archives are written one at a time; and a rewrite of the one archive past the
//! committed offset, by a restarted member or the partition's next owner, has the same name,
//! so the rename replaces it. With no early cut the rewrite has the same rows too.

use std::collections::VecDeque;
use std::time::Instant;

/// Rows are gathered in chunks of about this many bytes, so that a run never moves as it
/// grows and its memory is reused once archived (under mimalloc's huge-object size).
const CHUNK: usize = 256 << 10;

/// A run of rows cut for one archive.
#[derive(Debug)]
pub struct Cut {
    pub first: i64,
    pub last: i64,
    pub records: u64,
    /// Whole rows, in chunks.
    pub rows: Vec<Vec<u8>>,
    pub bytes: usize,
    /// Why it ends where it does: "chunk", "size", "age", "memory" or "stop".
    pub reason: &'static str,
}

/// Where the archives of one partition go, and how they are cut.
#[derive(Clone, Debug)]
pub struct Cutting {
    pub roll_records: u64,
    pub roll_bytes: u64,
}

/// One assigned partition.
#[derive(Debug)]
pub struct Partition {
    pub topic: String,
    pub partition: i32,
    /// The rows of the archive being gathered (in chunks, and their bytes), its first offset
    /// and when its first row came.
    open: Vec<Vec<u8>>,
    open_bytes: usize,
    first: Option<(i64, Instant)>,
    last: i64,
    records: u64,
    /// Archives cut and waiting for the one before them to be committed.
    pub ready: VecDeque<Cut>,
    /// The offset of the archive being written, or written and not yet committed.
    pub in_flight: Option<i64>,
    /// The offset to commit once a failed commit is retried.
    pub uncommitted: Option<i64>,
    /// Offset after the last row seen.
    pub next: Option<i64>,
    /// Messages and their bytes read since the last report to `/metrics`.
    pub unreported: (u64, u64),
}

impl Partition {
    pub fn new(topic: &str, partition: i32) -> Partition {
        Partition {
            topic: topic.into(),
            partition,
            open: Vec::new(),
            open_bytes: 0,
            first: None,
            last: -1,
            records: 0,
            ready: VecDeque::new(),
            in_flight: None,
            uncommitted: None,
            next: None,
            unreported: (0, 0),
        }
    }

    /// The folder of the partition's archives, under the lake.
    pub fn folder(&self) -> String {
        format!("{}/partition={}", self.topic, self.partition)
    }

    /// The path under the lake of the archive of `first` offset.
    pub fn archive_path(&self, first: i64) -> String {
        format!(
            "{}/{}+{}+{first:020}.glyd",
            self.folder(),
            self.topic,
            self.partition
        )
    }

    /// Bytes held: rows gathered and cut.
    pub fn bytes(&self) -> usize {
        self.open_bytes + self.ready.iter().map(|c| c.bytes).sum::<usize>()
    }

    /// Bytes gathered for the open archive.
    pub fn open_bytes(&self) -> usize {
        self.open_bytes
    }

    /// When the open archive's first row came.
    pub fn opened_at(&self) -> Option<Instant> {
        self.first.map(|f| f.1)
    }

    /// Adds the row of `offset` (one JSON line, written by `row` onto the open rows), cutting
    /// before or after it where the rules above say.
    pub fn push(&mut self, offset: i64, cut: &Cutting, row: impl FnOnce(&mut Vec<u8>)) {
        let chunk = |o: i64| o.max(0) as u64 / cut.roll_records.max(1);
        if self.first.is_some_and(|(f, _)| chunk(f) != chunk(offset)) {
            self.cut("chunk");
        }
        if self.first.is_none() {
            self.first = Some((offset, Instant::now()));
        }
        if self.open.last().is_none_or(|c| c.len() >= CHUNK) {
            self.open.push(Vec::with_capacity(CHUNK + (16 << 10)));
        }
        let chunk_rows = self.open.last_mut().expect("a chunk");
        let before = chunk_rows.len();
        row(chunk_rows);
        self.open_bytes += chunk_rows.len() - before;
        self.last = offset;
        self.records += 1;
        self.next = Some(offset + 1);
        let chunk_end = (chunk(offset) + 1) * cut.roll_records.max(1);
        if (offset + 1) as u64 >= chunk_end {
            self.cut("chunk");
        } else if self.open_bytes as u64 >= cut.roll_bytes {
            self.cut("size");
        }
    }

    /// Cuts the open rows (if any) into an archive waiting to be written.
    pub fn cut(&mut self, reason: &'static str) {
        let Some((first, _)) = self.first.take() else {
            return;
        };
        self.ready.push_back(Cut {
            first,
            last: self.last,
            records: std::mem::take(&mut self.records),
            rows: std::mem::take(&mut self.open),
            bytes: std::mem::take(&mut self.open_bytes),
            reason,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut Partition, offsets: impl IntoIterator<Item = i64>, cut: &Cutting) {
        for o in offsets {
            p.push(o, cut, |rows| rows.extend_from_slice(b"{\"a\":1}\n"));
        }
    }

    fn ranges(p: &Partition) -> Vec<(i64, i64, &'static str)> {
        p.ready
            .iter()
            .map(|c| (c.first, c.last, c.reason))
            .collect()
    }

    #[test]
    fn archives_end_at_chunks_wherever_they_start() {
        let cut = Cutting {
            roll_records: 10,
            roll_bytes: 1 << 20,
        };
        let mut p = Partition::new("t", 0);
        feed(&mut p, 3..25, &cut);
        assert_eq!(ranges(&p), [(3, 9, "chunk"), (10, 19, "chunk")]);
        // A gap over a chunk's end (compaction) cuts before the next row.
        let mut p = Partition::new("t", 0);
        feed(&mut p, [5, 8, 12, 13], &cut);
        assert_eq!(ranges(&p), [(5, 8, "chunk")]);
        // A partial archive continues by name: the next one ends where it would have.
        let mut p = Partition::new("t", 0);
        feed(&mut p, 0..4, &cut);
        p.cut("age");
        feed(&mut p, 4..10, &cut);
        assert_eq!(ranges(&p), [(0, 3, "age"), (4, 9, "chunk")]);
        assert_eq!(
            p.archive_path(4),
            "t/partition=0/t+0+00000000000000000004.glyd"
        );
    }

    #[test]
    fn a_size_cut_depends_only_on_the_start() {
        let cut = Cutting {
            roll_records: 1000,
            roll_bytes: 24,
        };
        let mut p = Partition::new("t", 0);
        feed(&mut p, 0..7, &cut);
        assert_eq!(ranges(&p), [(0, 2, "size"), (3, 5, "size")]);
        assert_eq!(p.open_bytes(), 8);
    }
}
