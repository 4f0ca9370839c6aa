//! The sink's engine, which knows nothing of where rows come from: [`Sink::write`] appends a
//! source's rows to their stream's write-ahead log and returns once they are synced (group
//! commit: one sync covers every write waiting on it); each stream's log is sealed at a size or
//! an age and its segments become archives in the lake, after which they are deleted. Memory
//! for requests in flight is reserved from a budget; past it, or while archives fall behind the
//! log, writes are refused with a reason to retry.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use glyd_columnar::WriteOptions;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::event::{check_stream, Rows};
use crate::lake::{archive_segment, Lake};
use crate::metrics::Metrics;
use crate::wal::{checkpoint, Segment, Wal};

/// How the sink runs.
#[derive(Clone, Debug)]
pub struct SinkConfig {
    /// The lake: `OUT/<stream>/dt=.../hour=.../*.glyd`.
    pub out: Lake,
    /// The write-ahead logs, one folder per stream (default `OUT/.glyd-sink/wal`).
    pub wal: Option<PathBuf>,
    /// A log segment is sealed into archives at this many bytes of rows ...
    pub roll_bytes: u64,
    /// ... or this long after its first row.
    pub roll_age: Duration,
    /// Memory for requests in flight and for building archives, half each (the process
    /// itself takes some 50 MiB more).
    pub memory: u64,
    /// Largest event (bytes as it arrives).
    pub max_record: usize,
    /// Largest request body, before and after decompression.
    pub max_body: usize,
    /// Streams at most (each has a log writer and an archiver thread); a write to one more
    /// is refused. Streams whose logs are found at start count too.
    pub max_streams: usize,
    /// Level and threads of the archives.
    pub level: glyd_core::Level,
    pub threads: usize,
}

impl Default for SinkConfig {
    fn default() -> Self {
        Self {
            out: Lake::Folder(PathBuf::from("lake")),
            wal: None,
            roll_bytes: 128 << 20,
            roll_age: Duration::from_secs(60),
            memory: 512 << 20,
            max_record: 1 << 20,
            max_body: 64 << 20,
            max_streams: 256,
            level: glyd_core::Level::Max,
            threads: 0,
        }
    }
}

impl SinkConfig {
    /// The folder of the logs.
    pub fn wal_dir(&self) -> PathBuf {
        self.wal.clone().unwrap_or_else(|| match &self.out {
            Lake::Folder(out) => out.join(".glyd-sink").join("wal"),
            // Checked when the sink opens: a lake on a store names its log's folder.
            Lake::Objects(_) => PathBuf::from(".glyd-sink").join("wal"),
        })
    }

    /// Archive options: row groups as large as half the memory budget allows the one record
    /// writer building archives (it holds about twelve times a row group per thread, measured,
    /// and some 64 MiB besides), 1 to 16 MiB.
    pub(crate) fn write_options(&self) -> WriteOptions {
        let threads = match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        } as u64;
        let room = (self.memory / 2).saturating_sub(64 << 20);
        let per = (room / (12 * threads)).clamp(1 << 20, 16 << 20);
        WriteOptions {
            level: self.level,
            threads: self.threads,
            row_group_size: per as usize,
        }
    }
}

/// Why a write was not taken; each says what a client should do.
#[derive(Debug)]
pub enum Refusal {
    /// The memory budget is spent: retry after a moment (HTTP 503).
    Memory,
    /// Archives are behind the log: retry later (HTTP 429).
    Behind,
    /// The log could not be written: nothing of the write is kept (HTTP 503).
    Log(String),
    /// The sink is shutting down.
    Closing,
    /// A new stream past `--max-streams` (HTTP 400).
    Streams(usize),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Refusal::Memory => write!(f, "the sink's memory budget is in use; retry shortly"),
            Refusal::Behind => write!(f, "archives are behind the log; retry later"),
            Refusal::Log(e) => write!(f, "the write-ahead log failed ({e}); nothing was kept"),
            Refusal::Closing => write!(f, "the sink is shutting down; retry on its restart"),
            Refusal::Streams(n) => write!(
                f,
                "a new stream past the limit of {n} (--max-streams); send to an existing one"
            ),
        }
    }
}

impl Refusal {
    /// The name `/metrics` counts it under.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Memory => "memory",
            Refusal::Behind => "behind",
            Refusal::Log(_) => "log_error",
            Refusal::Closing => "closing",
            Refusal::Streams(_) => "streams",
        }
    }
}

enum Command {
    Append {
        rows: Vec<u8>,
        done: oneshot::Sender<Result<(), String>>,
    },
}

struct Stream {
    tx: Mutex<Option<Sender<Command>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The engine: streams by name, each a log and its archiver.
pub struct Sink {
    cfg: SinkConfig,
    streams: Mutex<HashMap<String, Arc<Stream>>>,
    memory: Arc<Semaphore>,
    /// Set by [`Sink::close`]: an archiver that fails then leaves its segment for the next
    /// start instead of trying again.
    closing: Arc<AtomicBool>,
    pub metrics: Arc<Metrics>,
}

/// Memory reserved for one request, returned when dropped.
pub struct Reservation(#[allow(dead_code)] OwnedSemaphorePermit);

impl Sink {
    /// Opens the sink: removes temporary archives a killed run left in its streams' folders,
    /// and replays every stream's log (torn tails cut, sealed segments archived again).
    pub fn open(cfg: SinkConfig) -> io::Result<Sink> {
        if let (Lake::Objects(_), None) = (&cfg.out, &cfg.wal) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the lake {} is on an object store: give the write-ahead log a local folder with --wal DIR",
                    cfg.out
                ),
            ));
        }
        cfg.out.create()?;
        let wal_dir = cfg.wal_dir();
        std::fs::create_dir_all(&wal_dir)?;
        // Only the folders of this sink's streams: Kafka members sharing the lake write theirs.
        let mut removed = 0;
        for entry in std::fs::read_dir(&wal_dir)? {
            let name = entry?.file_name();
            if check_stream(&name.to_string_lossy()).is_ok() {
                removed += cfg.out.remove_temporaries(&name.to_string_lossy())?;
            }
        }
        if removed > 0 {
            tracing::info!(removed, "removed temporary archives of an earlier run");
        }
        let permits = (cfg.memory / 2 / 1024).clamp(1, Semaphore::MAX_PERMITS as u64) as usize;
        let sink = Sink {
            memory: Arc::new(Semaphore::new(permits)),
            cfg,
            streams: Mutex::new(HashMap::new()),
            closing: Arc::new(AtomicBool::new(false)),
            metrics: Arc::new(Metrics::default()),
        };
        for entry in std::fs::read_dir(&wal_dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() && check_stream(&name).is_ok() {
                sink.stream(&name, true)?;
            }
        }
        Ok(sink)
    }

    pub fn config(&self) -> &SinkConfig {
        &self.cfg
    }

    /// Reserves `bytes` of the request budget, or refuses at once when it is spent.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation, Refusal> {
        let budget = (self.cfg.memory / 2).max(1024);
        let units = (bytes.min(budget) / 1024 + 1) as u32;
        self.memory
            .clone()
            .try_acquire_many_owned(units)
            .map(Reservation)
            .map_err(|_| Refusal::Memory)
    }

    /// Reserves `bytes` of the request budget, waiting while it is spent (a connection
    /// whose reads wait here pushes back on its client).
    pub async fn reserve_wait(&self, bytes: u64) -> Reservation {
        let budget = (self.cfg.memory / 2).max(1024);
        let units = (bytes.min(budget) / 1024 + 1) as u32;
        Reservation(
            self.memory
                .clone()
                .acquire_many_owned(units)
                .await
                .expect("the budget is never closed"),
        )
    }

    /// Whether archives are so far behind the log that writes should wait.
    pub fn behind(&self) -> bool {
        self.metrics.log_pending.load(Relaxed) > 4 * self.cfg.roll_bytes as i64
    }

    /// The stream `name`, started if new; `None` past `max_streams` (which never holds back a
    /// log found at start: `recovering`).
    fn stream(&self, name: &str, recovering: bool) -> io::Result<Option<Arc<Stream>>> {
        let mut streams = self.streams.lock().expect("streams lock");
        if let Some(s) = streams.get(name) {
            return Ok(Some(s.clone()));
        }
        if streams.len() >= self.cfg.max_streams && !recovering {
            return Ok(None);
        }
        let dir = self.cfg.wal_dir().join(name);
        let (wal, recovered) = Wal::open(&dir)?;
        for (path, at, cut) in &recovered.cuts {
            tracing::warn!(
                file = %path.display(),
                offset = at,
                bytes = cut,
                "cut a torn or corrupt log tail (unacknowledged writes of a killed run)"
            );
            self.metrics.log_cut.fetch_add(*cut, Relaxed);
        }
        let (tx, rx) = mpsc::channel();
        let (seal_tx, seal_rx) = mpsc::channel();
        for seg in recovered.sealed {
            self.metrics
                .log_pending
                .fetch_add(seg.bytes as i64, Relaxed);
            seal_tx.send(seg).expect("the archiver is not started yet");
        }
        let committer = {
            let (cfg, metrics) = (self.cfg.clone(), self.metrics.clone());
            std::thread::Builder::new()
                .name(format!("log {name}"))
                .spawn(move || commit(wal, rx, seal_tx, &cfg, &metrics))?
        };
        let archiver = {
            let (cfg, metrics, name) = (self.cfg.clone(), self.metrics.clone(), name.to_string());
            let closing = self.closing.clone();
            std::thread::Builder::new()
                .name(format!("archive {name}"))
                .spawn(move || archive(&name, &dir, seal_rx, &cfg, &metrics, &closing))?
        };
        let s = Arc::new(Stream {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(vec![committer, archiver]),
        });
        streams.insert(name.to_string(), s.clone());
        Ok(Some(s))
    }

    /// Appends `rows` to their stream's log; returns once they are durable. `source` names
    /// where they came from, for `/metrics`.
    pub async fn write(&self, source: &str, rows: Rows) -> Result<(), Refusal> {
        if rows.events == 0 {
            return Ok(());
        }
        let stream = self
            .stream(&rows.stream, false)
            .map_err(|e| Refusal::Log(e.to_string()))?
            .ok_or(Refusal::Streams(self.cfg.max_streams))?;
        let (done, wait) = oneshot::channel();
        let bytes = rows.lines.len() as u64;
        {
            let tx = stream.tx.lock().expect("stream lock");
            let tx = tx.as_ref().ok_or(Refusal::Closing)?;
            tx.send(Command::Append {
                rows: rows.lines,
                done,
            })
            .map_err(|_| Refusal::Closing)?;
        }
        match wait.await {
            Ok(Ok(())) => {
                self.metrics.input(source, &rows.stream, rows.events, bytes);
                Ok(())
            }
            Ok(Err(e)) => Err(Refusal::Log(e)),
            Err(_) => Err(Refusal::Closing),
        }
    }

    /// Seals every stream's log and waits until all of it is in durable archives.
    pub fn close(&self) {
        self.closing.store(true, Relaxed);
        let streams: Vec<Arc<Stream>> = self
            .streams
            .lock()
            .expect("streams lock")
            .values()
            .cloned()
            .collect();
        for s in &streams {
            s.tx.lock().expect("stream lock").take();
        }
        for s in streams {
            for t in s.threads.lock().expect("stream lock").drain(..) {
                let _ = t.join();
            }
        }
    }
}

/// Most bytes of rows one log batch takes before it is written and synced.
const MAX_BATCH: usize = 64 << 20;

/// A stream's log writer: takes every write waiting, appends them as frames with one sync,
/// answers them, and seals the segment when it is full or old (or the sink closes).
fn commit(
    mut wal: Wal,
    rx: Receiver<Command>,
    sealed: Sender<Segment>,
    cfg: &SinkConfig,
    metrics: &Metrics,
) {
    let mut closing = false;
    while !closing {
        let wait = wal.first_at().map_or(Duration::from_secs(3600), |t| {
            cfg.roll_age.saturating_sub(t.elapsed())
        });
        let mut batch = Vec::new();
        match rx.recv_timeout(wait) {
            Ok(c) => batch.push(c),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => closing = true,
        }
        let mut size: usize = batch
            .iter()
            .map(|Command::Append { rows, .. }| rows.len())
            .sum();
        while size < MAX_BATCH {
            match rx.try_recv() {
                Ok(c) => {
                    let Command::Append { rows, .. } = &c;
                    size += rows.len();
                    batch.push(c);
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    closing = true;
                    break;
                }
            }
        }
        if !batch.is_empty() {
            let started = Instant::now();
            let payloads: Vec<&[u8]> = batch
                .iter()
                .map(|Command::Append { rows, .. }| &rows[..])
                .collect();
            let result = wal.append(&payloads).map_err(|e| e.to_string());
            metrics.log_sync.observe(started.elapsed());
            if result.is_ok() {
                metrics.log_pending.fetch_add(size as i64, Relaxed);
            }
            for Command::Append { done, .. } in batch {
                let _ = done.send(result.clone());
            }
        }
        let old = wal.first_at().is_some_and(|t| t.elapsed() >= cfg.roll_age);
        if closing || old || wal.bytes() >= cfg.roll_bytes {
            match wal.seal() {
                Ok(Some(seg)) => {
                    let _ = sealed.send(seg);
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "could not start a new log segment"),
            }
        }
    }
}

/// A stream's archiver: turns each sealed segment into archives, then checkpoints and deletes
/// it; on an error it keeps the segment and tries again (once the sink is closing, it leaves
/// the segment to the next start).
fn archive(
    name: &str,
    wal_dir: &Path,
    rx: Receiver<Segment>,
    cfg: &SinkConfig,
    metrics: &Metrics,
    closing: &AtomicBool,
) {
    let opts = cfg.write_options();
    for seg in rx {
        loop {
            let started = Instant::now();
            match archive_segment(&cfg.out, name, &seg, &opts).and_then(|done| {
                checkpoint(wal_dir, seg.seq)?;
                Ok(done)
            }) {
                Ok(done) => {
                    metrics.flush.observe(started.elapsed());
                    metrics.log_pending.fetch_sub(seg.bytes as i64, Relaxed);
                    for a in done {
                        metrics.output(name, a.bytes_in, a.bytes_out);
                        tracing::info!(
                            archive = %a.name,
                            rows = a.rows,
                            bytes_in = a.bytes_in,
                            bytes = a.bytes_out,
                            "archive finished"
                        );
                    }
                    break;
                }
                Err(e) if closing.load(Relaxed) => {
                    tracing::error!(
                        stream = name,
                        segment = %seg.path.display(),
                        error = %e,
                        "could not archive a log segment; it stays in the log for the next start"
                    );
                    break;
                }
                Err(e) => {
                    tracing::error!(
                        stream = name,
                        segment = %seg.path.display(),
                        error = %e,
                        "could not archive a log segment; it is kept and tried again in 5 s"
                    );
                    std::thread::sleep(Duration::from_secs(5));
                }
            }
        }
    }
}

/// Returns once a source's `stop` turns true (or its sender is gone): how sources learn the
/// sink is stopping.
pub async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_removes_temporaries_of_its_own_streams_only() {
        let lake = tempfile::tempdir().unwrap();
        let ours = lake.path().join("app/dt=2026-12-07/hour=12");
        let kafka = lake.path().join("topic/partition=0");
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::create_dir_all(&kafka).unwrap();
        std::fs::create_dir_all(lake.path().join(".glyd-sink/wal/app")).unwrap();
        std::fs::write(ours.join(".app-1.glyd.7.tmp"), b"half").unwrap();
        std::fs::write(kafka.join(".topic+0+1.glyd.8.tmp"), b"being written").unwrap();
        let sink = Sink::open(SinkConfig {
            out: Lake::Folder(lake.path().to_path_buf()),
            ..SinkConfig::default()
        })
        .unwrap();
        sink.close();
        assert!(!ours.join(".app-1.glyd.7.tmp").exists());
        assert!(kafka.join(".topic+0+1.glyd.8.tmp").exists());
    }
}
