//! The command line against a hostile user: devices and FIFOs as outputs, standard output that
//! fails, archives whose size fields lie (memory bombs), SQL that reaches for files, signals
//! mid-write, and model folders crafted to escape or half-fill their output. Every case must
//! end with a clean exit code and a one-line message, leave no temporary file behind, and stay
//! under the declared memory bound (the child's peak RSS, from `wait4`).
//!
//! The archives are written here byte by byte from `docs/FORMAT.md` (§2, §7, §8), so these
//! tests also hold the spec to what the decoders accept.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use glyd_core::{checksum, varint, Checksum};

const MIB: u64 = 1 << 20;

fn glyd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glyd"))
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log")
}

/// What a finished child left: its status, output and peak resident memory.
struct Finished {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
    peak_rss: u64,
}

/// Waits for `child`, watching its peak RSS (`VmHWM` in `/proc/PID/status`) every
/// millisecond meanwhile. `wait4`'s `ru_maxrss` would not do: a child started by
/// `posix_spawn` shares this test process's memory until it execs, and the kernel carries
/// that high-water mark (this process's, with every other test's data) into the child's.
fn finish(mut child: Child) -> Finished {
    let out = child.stdout.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = s.read_to_end(&mut b);
            b
        })
    });
    let err = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = s.read_to_end(&mut b);
            b
        })
    });
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(kb) = fs::read_to_string(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|s| {
                        let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
                        line.split_whitespace().nth(1)?.parse::<u64>().ok()
                    })
                {
                    peak = peak.max(kb * 1024);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            peak
        })
    };
    let status = child.wait().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    Finished {
        status,
        stdout: out.map(|t| t.join().unwrap()).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&err.map(|t| t.join().unwrap()).unwrap_or_default())
            .into_owned(),
        peak_rss: watcher.join().unwrap(),
    }
}

/// The peak RSS of glyd doing nothing (`--version`): its code and libraries, which a
/// `--memory` limit on decoding does not cover.
fn resting_rss(dir: &Path) -> u64 {
    let f = run(&["--version"], dir);
    assert!(f.status.success(), "{}", f.stderr);
    f.peak_rss
}

/// Runs glyd with `args` in `dir`, stdout and stderr captured.
fn run(args: &[&str], dir: &Path) -> Finished {
    finish(
        glyd()
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// A failure as a user should see it: exit status 1, one line naming the problem, no panic.
#[track_caller]
fn assert_clean_failure(f: &Finished, wants: &[&str]) {
    assert_eq!(f.status.code(), Some(1), "stderr: {}", f.stderr);
    assert!(!f.stderr.contains("panicked"), "{}", f.stderr);
    assert_eq!(f.stderr.trim_end().lines().count(), 1, "{}", f.stderr);
    assert!(f.stderr.starts_with("glyd: "), "{}", f.stderr);
    for w in wants {
        assert!(f.stderr.contains(w), "wanted {w:?} in: {}", f.stderr);
    }
}

/// Names in `dir` that look like temporary outputs.
#[track_caller]
fn assert_no_temporaries(dir: &Path) {
    let left: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.contains("glyd-unpack") || n.contains("glyd-pack"))
        .collect();
    assert!(left.is_empty(), "temporaries left behind: {left:?}");
}

// ---- archives written from docs/FORMAT.md ----

/// A frame (§2) of `blocks` RLE blocks of `size` zero bytes each: a few hundred bytes that
/// declare gigabytes, every field valid.
fn rle_frame(blocks: usize, size: u32) -> Vec<u8> {
    let mut sum = Checksum::default();
    let piece = vec![0u8; MIB as usize];
    for _ in 0..size as u64 / MIB {
        sum.update(&piece);
    }
    sum.update(&piece[..(size as u64 % MIB) as usize]);
    let mut header = vec![0u8; 13];
    header[0] = 1; // rle
    header[1..5].copy_from_slice(&size.to_le_bytes());
    header[5..9].copy_from_slice(&1u32.to_le_bytes());
    header[9..13].copy_from_slice(&sum.value().to_le_bytes());
    let mut f = vec![0x89, b'G', b'L', b'Y', 1, 3, 27, 0];
    f.push(checksum(&f) as u8);
    let mut index = Vec::new();
    for _ in 0..blocks {
        f.extend_from_slice(&header);
        f.push(0);
        index.extend_from_slice(&header);
    }
    f.push(255);
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(index.len() as u32).to_le_bytes());
    f.extend_from_slice(&checksum(&index).to_le_bytes());
    f.extend_from_slice(&index);
    f.extend_from_slice(&(blocks as u64 * u64::from(size)).to_le_bytes());
    f.extend_from_slice(&(blocks as u32).to_le_bytes());
    f.extend_from_slice(&[b'Y', b'L', b'G', 0x89]);
    f
}

fn prefixed(out: &mut Vec<u8>, b: &[u8]) {
    varint::put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A record archive (§7) of one lines table and one row group that declares `input` bytes and
/// holds one text column whose streams are RLE chunks of the sizes `chunks` (by role).
/// `stored` overrides the stored size the header lists for each chunk.
fn record_bomb(input: u64, chunks: &[(u8, u32)], stored: Option<u64>) -> Vec<u8> {
    let mut desc = vec![1, b'\n', 0];
    varint::put(&mut desc, 1);
    prefixed(&mut desc, b"");
    prefixed(&mut desc, b"line");
    let mut a = vec![0x89, b'G', b'L', b'R', 3, 3];
    prefixed(&mut a, &desc);
    let sum = checksum(&a[4..]);
    a.extend_from_slice(&sum.to_le_bytes());
    let offset = a.len() as u64;
    let mut h = Vec::new();
    varint::put(&mut h, 0); // table
    varint::put(&mut h, input);
    varint::put(&mut h, 1); // rows
    h.extend_from_slice(&0u32.to_le_bytes());
    varint::put(&mut h, 1); // columns
    h.push(3); // text
    varint::put(&mut h, 0); // raw size
    h.push(0); // no statistics
    varint::put(&mut h, 0); // nulls
    h.push(chunks.len() as u8);
    let mut body = Vec::new();
    for &(role, size) in chunks {
        let mut c = vec![1u8];
        c.extend_from_slice(&size.to_le_bytes());
        c.extend_from_slice(&1u32.to_le_bytes());
        c.extend_from_slice(&0u32.to_le_bytes());
        c.push(b'x');
        h.push(role);
        varint::put(&mut h, stored.unwrap_or(c.len() as u64));
        body.extend_from_slice(&c);
    }
    h.push(0); // no row-level streams
    a.push(1);
    prefixed(&mut a, &h);
    a.extend_from_slice(&checksum(&h).to_le_bytes());
    a.extend_from_slice(&body);
    let mut f = vec![0u8];
    varint::put(&mut f, 1);
    varint::put(&mut f, offset);
    varint::put(&mut f, 0);
    varint::put(&mut f, 1);
    varint::put(&mut f, input);
    let sum = checksum(&f);
    f.extend_from_slice(&sum.to_le_bytes());
    let len = f.len() as u32 + 8;
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&[b'R', b'L', b'G', 0x89]);
    a.extend_from_slice(&f);
    a
}

/// One file of a hand-made tensor archive: its name and its one whole-file entry's bytes,
/// stored (method 0) or as the given frame (method 1) of `raw_len` bytes.
struct Piece {
    name: &'static str,
    payload: Vec<u8>,
    frame_of: Option<u64>,
    checksum: u32,
}

impl Piece {
    fn stored(name: &'static str, bytes: &[u8]) -> Self {
        Piece {
            name,
            payload: bytes.to_vec(),
            frame_of: None,
            checksum: checksum(bytes),
        }
    }
}

/// A tensor archive (§8) of whole files: a folder when `folder`.
fn tensor_archive(folder: bool, files: &[Piece]) -> Vec<u8> {
    let mut a = vec![0x89, b'G', b'L', b'T', 1, 0, 0, 0];
    let mut index = vec![u8::from(folder)];
    varint::put(&mut index, files.len() as u64);
    for f in files {
        prefixed(&mut index, f.name.as_bytes());
        index.push(0);
        varint::put(&mut index, 1);
        index.push(3);
        varint::put(&mut index, f.frame_of.unwrap_or(f.payload.len() as u64));
        index.push(u8::from(f.frame_of.is_some()));
        varint::put(&mut index, a.len() as u64);
        varint::put(&mut index, f.payload.len() as u64);
        index.extend_from_slice(&f.checksum.to_le_bytes());
        a.extend_from_slice(&f.payload);
    }
    let at = a.len() as u64;
    a.extend_from_slice(&index);
    a.extend_from_slice(&at.to_le_bytes());
    a.extend_from_slice(&(index.len() as u32).to_le_bytes());
    a.extend_from_slice(&checksum(&index).to_le_bytes());
    a.extend_from_slice(&[b'T', b'L', b'G', 0x89]);
    a
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Reads the FIFO at `path` to its end on a thread; the bytes, when joined.
fn drain(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut b = Vec::new();
        fs::File::open(path).unwrap().read_to_end(&mut b).unwrap();
        b
    })
}

// ---- 1. devices and FIFOs as outputs ----

#[test]
fn devices_and_fifos_are_written_in_place_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = fs::read(sample()).unwrap();
    fs::write(d.join("a.log"), &data).unwrap();
    // Compress, decompress and -r into a FIFO, with and without -f.
    let fifo = d.join("p");
    mkfifo(&fifo);
    for args in [
        &["-f", "-o", "p", "a.log"][..],
        &["-o", "p", "a.log"],
        &["-r", "-f", "-o", "p", "a.log"],
    ] {
        let reader = drain(&fifo);
        let f = run(args, d);
        assert!(f.status.success(), "{args:?}: {}", f.stderr);
        let packed = reader.join().unwrap();
        assert!(
            fs::metadata(&fifo).unwrap().file_type().is_fifo(),
            "{args:?}"
        );
        fs::write(d.join("x.glyd"), &packed).unwrap();
        let back = run(&["-dc", "x.glyd"], d);
        assert_eq!(back.stdout, data, "{args:?}");
    }
    let reader = drain(&fifo);
    let f = run(&["-d", "-f", "-o", "p", "x.glyd"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert_eq!(reader.join().unwrap(), data);
    // A character device: /dev/null stays a device.
    let f = run(&["-d", "-f", "-o", "/dev/null", "x.glyd"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // --rm keeps an input whose output is a device, and says so.
    let f = run(&["-v", "--rm", "-o", "/dev/null", "a.log"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert!(d.join("a.log").exists());
    assert!(f.stderr.contains("a.log kept"), "{}", f.stderr);
    // A full device is a clean error, and stays a device.
    let f = run(&["-f", "-o", "/dev/full", "a.log"], d);
    assert_clean_failure(&f, &["/dev/full", "No space left"]);
    assert!(fs::metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
    // A folder is never an output.
    fs::create_dir(d.join("folder")).unwrap();
    let f = run(&["-f", "-o", "folder", "a.log"], d);
    assert_clean_failure(&f, &["folder is a directory"]);
    assert!(d.join("folder").is_dir());
    assert_no_temporaries(d);
}

#[test]
fn pack_and_unpack_write_fifos_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = br#"{"w":{"dtype":"BF16","shape":[64],"data_offsets":[0,128]}}"#;
    let mut original = (json.len() as u64).to_le_bytes().to_vec();
    original.extend_from_slice(json);
    original.extend((0..128u32).map(|i| (i * 37 % 251) as u8));
    fs::write(d.join("m.safetensors"), &original).unwrap();
    let fifo = d.join("p");
    mkfifo(&fifo);
    let reader = drain(&fifo);
    let f = run(&["pack", "-f", "m.safetensors", "p"], d);
    assert!(f.status.success(), "{}", f.stderr);
    let packed = reader.join().unwrap();
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    fs::write(d.join("m.glyd"), packed).unwrap();
    let reader = drain(&fifo);
    let f = run(&["unpack", "-f", "m.glyd", "p"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert_eq!(reader.join().unwrap(), original);
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_no_temporaries(d);
}

// ---- 2. standard output that fails ----

/// Runs glyd with its standard output a pipe whose reader is already gone.
fn run_into_closed_pipe(args: &[&str], dir: &Path) -> Finished {
    let mut child = glyd()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    finish(child)
}

/// Runs glyd with its standard output on /dev/full.
fn run_into_full_device(args: &[&str], dir: &Path) -> Finished {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    finish(
        glyd()
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(full)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn stdout_closed_is_a_quiet_exit_and_a_full_device_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::copy(sample(), d.join("a.log")).unwrap();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log_structured.csv"),
        d.join("h.csv"),
    )
    .unwrap();
    assert!(run(&["-q", "a.log"], d).status.success());
    assert!(run(&["-q", "-r", "h.csv"], d).status.success());
    let printing: [&[&str]; 9] = [
        &["-l", "a.log.glyd", "a.log.glyd", "a.log.glyd"],
        &["-dc", "a.log.glyd"],
        &["-dc", "h.csv.glyd"],
        &["-c", "a.log"],
        &["inspect", "h.csv.glyd"],
        &["cat", "h.csv.glyd"],
        &["cat", "--format", "parquet", "h.csv.glyd"],
        &["sql", "SELECT * FROM h", "h.csv.glyd"],
        &["-b", "--bench-runs", "1", "a.log"],
    ];
    for args in printing {
        let f = run_into_closed_pipe(args, d);
        assert_eq!(f.status.code(), Some(0), "{args:?}: {}", f.stderr);
        assert!(f.stderr.is_empty(), "{args:?}: {}", f.stderr);
        let f = run_into_full_device(args, d);
        assert_clean_failure(&f, &["standard output", "No space left"]);
    }
    // stderr that fails is no reason to fail (or panic) either.
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let f = finish(
        glyd()
            .args(["-v", "-f", "a.log"])
            .current_dir(d)
            .stderr(full)
            .spawn()
            .unwrap(),
    );
    assert!(f.status.success());
}

// ---- 3. unpack streams entries ----

#[test]
fn unpack_streams_a_huge_entry_within_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 768 MiB declared in 6 RLE blocks of 128 MiB: 700 bytes of archive.
    let blocks = 6;
    let frame = rle_frame(blocks, 128 << 20);
    let raw = blocks as u64 * (128 << 20);
    let mut sum = Checksum::default();
    let zeros = vec![0u8; MIB as usize];
    for _ in 0..raw / MIB {
        sum.update(&zeros);
    }
    let a = tensor_archive(
        false,
        &[Piece {
            name: "big.bin",
            payload: frame,
            frame_of: Some(raw),
            checksum: sum.value(),
        }],
    );
    assert!(a.len() < 1024);
    fs::write(d.join("big.glyd"), &a).unwrap();
    let fifo = d.join("p");
    mkfifo(&fifo);
    let counter = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = fs::File::open(fifo).unwrap();
            let (mut n, mut buf) = (0u64, vec![0u8; 1 << 20]);
            loop {
                let k = f.read(&mut buf).unwrap();
                if k == 0 {
                    return n;
                }
                assert!(buf[..k].iter().all(|&b| b == 0));
                n += k as u64;
            }
        })
    };
    // `--memory` bounds what decoding holds; the binary's own pages come on top of it.
    let limit = 300 * MIB + resting_rss(d);
    let f = run(&["unpack", "--memory", "300M", "big.glyd", "p"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert_eq!(counter.join().unwrap(), raw);
    assert!(
        f.peak_rss < limit,
        "peak RSS {} MiB over {} MiB",
        f.peak_rss / MIB,
        limit / MIB
    );
    // A limit below one block is refused before anything is allocated.
    let f = run(
        &["unpack", "-f", "--memory", "64M", "big.glyd", "out.bin"],
        d,
    );
    assert_clean_failure(&f, &["memory limit", "--memory"]);
    assert!(f.peak_rss < 64 * MIB, "peak RSS {} MiB", f.peak_rss / MIB);
    assert!(!d.join("out.bin").exists());
    assert_no_temporaries(d);
}

// ---- 4. plain and record archives that declare far more than they hold ----

#[test]
fn plain_frames_decode_within_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("z.glyd"), rle_frame(4, 128 << 20)).unwrap();
    for threads in ["-T1", "-T8"] {
        let f = run(&["-t", threads, "--memory", "200M", "z.glyd"], d);
        assert!(f.status.success(), "{}", f.stderr);
        assert!(
            f.peak_rss < 200 * MIB,
            "{threads}: peak RSS {} MiB",
            f.peak_rss / MIB
        );
    }
    let f = run(&["-dc", "--memory", "100M", "z.glyd"], d);
    assert_clean_failure(&f, &["block at byte 9", "memory limit of 100.0 MiB"]);
    assert!(f.stdout.is_empty());
}

#[test]
fn record_archives_that_declare_huge_row_groups_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two 640 MiB chunks (the most the format lets a 64 MiB row group declare, each) from a
    // ~150-byte file: over the default 1 GiB limit together, refused before decoding.
    let big = (640 << 20) + 64;
    let bomb = record_bomb(64 << 20, &[(2, big), (3, big)], None);
    assert!(bomb.len() < 200, "{}", bomb.len());
    fs::write(d.join("bomb.glyd"), &bomb).unwrap();
    for args in [
        &["-t", "-T8", "bomb.glyd"][..],
        &["-dc", "bomb.glyd"],
        &["cat", "bomb.glyd"],
        &["sql", "SELECT max(line) FROM bomb", "bomb.glyd"],
    ] {
        let f = run(args, d);
        assert_clean_failure(&f, &["row group at byte", "memory limit"]);
        assert!(
            f.peak_rss < 128 * MIB,
            "{args:?}: peak RSS {} MiB",
            f.peak_rss / MIB
        );
    }
    // From a pipe as well.
    let mut child = glyd()
        .args(["-dc"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bomb).unwrap();
    let f = finish(child);
    assert_clean_failure(&f, &["row group at byte", "memory limit"]);
    // One such chunk fits under the default limit: it decodes (and then fails, the chunk
    // being a lie) within the limit; under a lower one it is refused up front.
    fs::write(d.join("one.glyd"), record_bomb(64 << 20, &[(3, big)], None)).unwrap();
    let f = run(&["-t", "one.glyd"], d);
    assert_clean_failure(&f, &["one.glyd"]);
    assert!(f.peak_rss < 1 << 30, "peak RSS {} MiB", f.peak_rss / MIB);
    let f = run(&["-t", "--memory", "256M", "one.glyd"], d);
    assert_clean_failure(&f, &["memory limit of 256.0 MiB"]);
    assert!(f.peak_rss < 128 * MIB, "peak RSS {} MiB", f.peak_rss / MIB);
    // A chunk listed as 4 GiB long in a 150-byte archive: a file reader finds it past the
    // end; a pipe reader refuses to read that much.
    let liar = record_bomb(1 << 20, &[(3, 100)], Some(u64::from(u32::MAX)));
    fs::write(d.join("liar.glyd"), &liar).unwrap();
    let f = run(&["cat", "liar.glyd"], d);
    assert_clean_failure(&f, &["liar.glyd"]);
    let mut child = glyd()
        .args(["-t", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&liar).unwrap();
    let f = finish(child);
    assert_clean_failure(&f, &["memory limit"]);
    assert!(f.peak_rss < 128 * MIB, "peak RSS {} MiB", f.peak_rss / MIB);
}

// ---- 5. SQL results stream ----

#[test]
fn sql_streams_a_large_result_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // ~19 MB of CSV in row groups of 1 MiB.
    let mut csv = String::from("id,name,amount,note\n");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..300_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        csv.push_str(&format!(
            "{i},user{},{}.{:02},note {} for row {i} with some text\n",
            x % 5000,
            x % 100_000,
            x % 100,
            x % 977
        ));
    }
    fs::write(d.join("t.csv"), &csv).unwrap();
    let f = run(&["-r", "-q", "--row-group", "1M", "t.csv"], d);
    assert!(f.status.success(), "{}", f.stderr);
    let f = run(&["sql", "SELECT * FROM t", "t.csv.glyd"], d);
    assert!(f.status.success(), "{}", f.stderr);
    // Partitions finish in any order: the same lines, header first.
    let sorted = |b: &[u8]| {
        let mut lines: Vec<&[u8]> = b.split(|&c| c == b'\n').skip(1).collect();
        lines.sort_unstable();
        lines.concat()
    };
    assert!(f.stdout.starts_with(b"id,name,amount,note\n"));
    assert_eq!(f.stdout.len(), csv.len());
    assert!(sorted(&f.stdout) == sorted(csv.as_bytes()), "rows differ");
    // Four times the rows (a folder of four copies is one table) take about the same memory:
    // the result streams through, it is never held (holding it would take more than its
    // size again, as Arrow batches or as text).
    fs::create_dir(d.join("four")).unwrap();
    for i in 0..4 {
        fs::copy(d.join("t.csv.glyd"), d.join(format!("four/{i}.glyd"))).unwrap();
    }
    let four = run(&["sql", "SELECT * FROM four", "four"], d);
    assert!(four.status.success(), "{}", four.stderr);
    assert_eq!(
        four.stdout.len(),
        4 * csv.len() - 3 * "id,name,amount,note\n".len()
    );
    let result = four.stdout.len() as u64;
    assert!(
        four.peak_rss < f.peak_rss + result,
        "peak RSS {} MiB for a {} MiB result, {} MiB for a quarter of it",
        four.peak_rss / MIB,
        result / MIB,
        f.peak_rss / MIB
    );
}

// ---- 6. SQL from the command line may use files; --read-only may not ----

#[test]
fn sql_file_access_is_the_users_and_off_when_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/data/HDFS_2k.log_structured.csv"),
        d.join("h.csv"),
    )
    .unwrap();
    fs::write(d.join("secret.csv"), "a\n42\n").unwrap();
    assert!(run(&["-q", "-r", "h.csv"], d).status.success());
    let copy = format!("COPY (SELECT 1 AS a) TO '{}'", d.join("out.csv").display());
    let read = "CREATE EXTERNAL TABLE s STORED AS CSV LOCATION 'secret.csv' OPTIONS ('format.has_header' 'true'); SELECT a FROM s;";
    let templates = "SELECT count(*) AS n FROM glyd_templates('h.csv.glyd')";
    let f = run(&["sql", "--read-only", &copy, "h.csv.glyd"], d);
    assert_clean_failure(&f, &["not supported"]);
    assert!(!d.join("out.csv").exists());
    let f = run(&["sql", "--read-only", templates], d);
    assert_clean_failure(&f, &["file access"]);
    let mut child = glyd()
        .args(["sql", "--read-only", "h.csv.glyd"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(read.as_bytes())
        .unwrap();
    let f = finish(child);
    assert_eq!(f.status.code(), Some(1));
    assert!(f.stderr.contains("not supported"), "{}", f.stderr);
    assert!(!String::from_utf8_lossy(&f.stdout).contains("42"));
    // Without --read-only they are the user's to use.
    let f = run(&["sql", &copy, "h.csv.glyd"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert_eq!(fs::read_to_string(d.join("out.csv")).unwrap(), "a\n1\n");
    let f = run(&["sql", templates], d);
    assert!(f.status.success(), "{}", f.stderr);
    let mut child = glyd()
        .args(["sql", "h.csv.glyd"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(read.as_bytes())
        .unwrap();
    let f = finish(child);
    assert!(f.status.success(), "{}", f.stderr);
    assert!(String::from_utf8_lossy(&f.stdout).contains("42"));
    // A failing query says its error once.
    fs::write(
        d.join("cut.glyd"),
        &fs::read(d.join("h.csv.glyd")).unwrap()[..3000],
    )
    .unwrap();
    let f = run(&["sql", "SELECT count(*) FROM cut", "cut.glyd"], d);
    assert_clean_failure(&f, &["cut.glyd"]);
    assert_eq!(f.stderr.matches("cut.glyd").count(), 1, "{}", f.stderr);
    assert!(!f.stderr.contains("External error"), "{}", f.stderr);
}

// ---- 7. signals remove what was being written ----

/// Sends `signal` to a glyd that is mid-write (its input a FIFO we hold open) and checks it
/// ends by that signal leaving no temporary file.
fn interrupt_while_writing(args: &[&str], signal: i32) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.log");
    mkfifo(&input);
    let child = glyd()
        .args(args)
        .arg("in.log")
        .current_dir(d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut feed = fs::OpenOptions::new().write(true).open(&input).unwrap();
    let data = fs::read(sample()).unwrap();
    for _ in 0..40 {
        feed.write_all(&data).unwrap();
    }
    // Wait until the temporary output exists: glyd is then between reads.
    let start = Instant::now();
    while !fs::read_dir(d)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no temporary file appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
    let f = finish(child);
    drop(feed);
    assert_eq!(f.status.signal(), Some(signal), "{args:?}: {}", f.stderr);
    assert_no_temporaries(d);
    assert!(!d.join("out.glyd").exists());
}

#[test]
fn signals_remove_temporary_files() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        interrupt_while_writing(&["-f", "-o", "out.glyd"], signal);
        interrupt_while_writing(&["-r", "--format", "log", "-o", "out.glyd"], signal);
    }
}

#[test]
fn a_signal_during_unpack_removes_the_staging_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A folder whose one file is 2 GiB of zeros: long enough to be caught writing it.
    let frame = rle_frame(16, 128 << 20);
    let mut sum = Checksum::default();
    let zeros = vec![0u8; MIB as usize];
    for _ in 0..2048 {
        sum.update(&zeros);
    }
    let a = tensor_archive(
        true,
        &[Piece {
            name: "sub/big.bin",
            payload: frame,
            frame_of: Some(2 << 30),
            checksum: sum.value(),
        }],
    );
    fs::write(d.join("m.glyd"), a).unwrap();
    let child = glyd()
        .args(["unpack", "m.glyd", "model"])
        .current_dir(d)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let staged = || {
        fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().contains("glyd-unpack"))
            .is_some_and(|e| e.path().join("sub/big.bin").exists())
    };
    while !staged() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no staging folder appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let f = finish(child);
    assert_eq!(f.status.signal(), Some(libc::SIGTERM), "{}", f.stderr);
    assert_no_temporaries(d);
    assert!(!d.join("model").exists());
}

// ---- 8. model folders ----

#[test]
fn unpack_checks_every_name_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = Piece::stored("config.json", b"{}");
    let cases: [(&str, Vec<Piece>, &str); 6] = [
        (
            "dup",
            vec![good, Piece::stored("config.json", b"[]")],
            "appears twice",
        ),
        (
            "dot",
            vec![Piece::stored("./config.json", b"{}")],
            "plain relative path",
        ),
        (
            "up",
            vec![Piece::stored("a/../../x", b"{}")],
            "plain relative path",
        ),
        (
            "abs",
            vec![Piece::stored("/etc/x", b"{}")],
            "plain relative path",
        ),
        (
            "clash",
            vec![Piece::stored("a", b"1"), Piece::stored("a/b", b"2")],
            "both a file and a folder",
        ),
        (
            "empty",
            vec![Piece::stored("a//b", b"1")],
            "plain relative path",
        ),
    ];
    for (name, pieces, want) in cases {
        let archive = format!("{name}.glyd");
        fs::write(d.join(&archive), tensor_archive(true, &pieces)).unwrap();
        let f = run(&["unpack", &archive, "out"], d);
        assert_clean_failure(&f, &[&archive, want]);
        assert!(!d.join("out").exists(), "{name}");
        assert_no_temporaries(d);
    }
    // A damaged second file: the first is not left behind either.
    let mut second = Piece::stored("b.json", b"[1,2,3]");
    second.checksum ^= 1;
    fs::write(
        d.join("bad.glyd"),
        tensor_archive(true, &[Piece::stored("a.json", b"{}"), second]),
    )
    .unwrap();
    let f = run(&["unpack", "bad.glyd", "out"], d);
    assert_clean_failure(&f, &["bad.glyd", "checksum mismatch"]);
    assert!(!d.join("out").exists());
    assert_no_temporaries(d);
}

#[test]
fn unpack_into_an_existing_folder_never_follows_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let archive = tensor_archive(
        true,
        &[
            Piece::stored("config.json", b"{\"new\":1}"),
            Piece::stored("sub/w.bin", b"weights"),
        ],
    );
    fs::write(d.join("m.glyd"), &archive).unwrap();
    // `out/sub` is a link to a folder elsewhere: nothing may be written through it.
    fs::create_dir_all(d.join("out")).unwrap();
    fs::create_dir_all(d.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(d.join("elsewhere"), d.join("out/sub")).unwrap();
    fs::write(d.join("out/config.json"), "old").unwrap();
    let f = run(&["unpack", "m.glyd", "out"], d);
    assert_clean_failure(&f, &["already exists", "-f"]);
    let f = run(&["unpack", "-f", "m.glyd", "out"], d);
    assert_clean_failure(&f, &["out/sub", "link"]);
    assert_eq!(fs::read_dir(d.join("elsewhere")).unwrap().count(), 0);
    assert_eq!(
        fs::read_to_string(d.join("out/config.json")).unwrap(),
        "old"
    );
    assert_no_temporaries(d);
    // Without the link, -f replaces the archive's files and keeps the others.
    fs::remove_file(d.join("out/sub")).unwrap();
    fs::write(d.join("out/keep.txt"), "mine").unwrap();
    let f = run(&["unpack", "-f", "m.glyd", "out"], d);
    assert!(f.status.success(), "{}", f.stderr);
    assert_eq!(
        fs::read_to_string(d.join("out/config.json")).unwrap(),
        "{\"new\":1}"
    );
    assert_eq!(
        fs::read_to_string(d.join("out/sub/w.bin")).unwrap(),
        "weights"
    );
    assert_eq!(fs::read_to_string(d.join("out/keep.txt")).unwrap(), "mine");
    assert_no_temporaries(d);
}

// ---- 9. an output that is the input ----

#[test]
fn no_command_overwrites_its_own_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = fs::read(sample()).unwrap();
    fs::write(d.join("a.log"), &data).unwrap();
    fs::hard_link(d.join("a.log"), d.join("link.log")).unwrap();
    for args in [
        &["-f", "-o", "./a.log", "a.log"][..],
        &["-f", "-o", "link.log", "a.log"],
        &["-r", "-f", "-o", "./a.log", "a.log"],
    ] {
        let f = run(args, d);
        assert_clean_failure(&f, &["would overwrite the input"]);
        assert_eq!(fs::read(d.join("a.log")).unwrap(), data, "{args:?}");
    }
    assert!(run(&["-q", "a.log"], d).status.success());
    let packed = fs::read(d.join("a.log.glyd")).unwrap();
    let f = run(&["-d", "-f", "-o", "./a.log.glyd", "a.log.glyd"], d);
    assert_clean_failure(&f, &["would overwrite the input"]);
    assert_eq!(fs::read(d.join("a.log.glyd")).unwrap(), packed);
    // Tensor archives: unpack -f A A, pack -f M M.
    let t = tensor_archive(false, &[Piece::stored("a.json", b"{}")]);
    fs::write(d.join("t.glyd"), &t).unwrap();
    let f = run(&["unpack", "-f", "t.glyd", "t.glyd"], d);
    assert_clean_failure(&f, &["would overwrite the archive"]);
    assert_eq!(fs::read(d.join("t.glyd")).unwrap(), t);
    let json = br#"{"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}"#;
    let mut st = (json.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(json);
    st.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    fs::write(d.join("m.safetensors"), &st).unwrap();
    let f = run(&["pack", "-f", "m.safetensors", "./m.safetensors"], d);
    assert_clean_failure(&f, &["would overwrite the input"]);
    assert_eq!(fs::read(d.join("m.safetensors")).unwrap(), st);
    // A folder archive whose files would land on the archive itself.
    let over = tensor_archive(true, &[Piece::stored("m.glyd", b"x")]);
    fs::create_dir(d.join("f")).unwrap();
    fs::write(d.join("f/m.glyd"), &over).unwrap();
    let f = run(&["unpack", "-f", "f/m.glyd", "f"], d);
    assert_clean_failure(&f, &["overwrite the archive"]);
    assert_eq!(fs::read(d.join("f/m.glyd")).unwrap(), over);
    assert_no_temporaries(d);
    assert_no_temporaries(&d.join("f"));
}

// ---- minor: -l of a tensor archive, errors that name their file ----

#[test]
fn list_shows_tensor_archives_and_unpack_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(
        d.join("t.glyd"),
        tensor_archive(true, &[Piece::stored("a.json", b"{\"a\":1}")]),
    )
    .unwrap();
    fs::write(d.join("junk.glyd"), b"not an archive at all").unwrap();
    let f = run(&["-l", "junk.glyd"], d);
    assert_clean_failure(&f, &["junk.glyd"]);
    assert!(f.stdout.is_empty(), "a header with no rows");
    let f = run(&["-l", "t.glyd"], d);
    assert!(f.status.success(), "{}", f.stderr);
    let text = String::from_utf8(f.stdout).unwrap();
    assert!(text.contains("Frames") && text.contains("t.glyd"), "{text}");
    // The output's parent does not exist: the error names it.
    let f = run(&["unpack", "t.glyd", "no/such/dir/out"], d);
    assert_clean_failure(&f, &["no/such/dir"]);
}
