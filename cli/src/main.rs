//! The `glyd` command. Flags follow gzip and zstd habits (see `glyd --help`); this file routes
//! each input to compress, decompress or test, and turns failures into messages and exit codes.

/// `eprintln!` that never panics: a message stderr cannot take (closed, or a full device) is
/// dropped, where `eprintln!` would abort the run.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod args;
mod bench;
mod cleanup;
#[cfg(feature = "cluster")]
mod cluster;
mod list;
mod output;
mod progress;
mod records;
#[cfg(feature = "sql")]
mod shell;
mod sink;
#[cfg(feature = "sql")]
mod sql;
mod tensors;

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use glyd_core::{Decoder, Encoder, Options};

use args::Args;
use output::{Input, Output};
use progress::{human_bytes, Tracked, Ui};

/// File-name suffix of compressed files.
pub const SUFFIX: &str = ".glyd";

/// mimalloc keeps freed memory for reuse: each row group and block allocates large buffers,
/// which the system allocator hands back to the kernel and then faults in afresh.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (the same in mimalloc 2 and 3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory is kept for reuse until the process exits (mimalloc's default hands it back
/// to the kernel after 10 ms): record mode frees and reallocates tens of MiB per row group,
/// and each fresh page costs a kernel fault and zeroing. glyd is a short-lived process whose
/// peak memory is bounded (`--memory`, row group size times threads), so keeping it costs
/// nothing the run did not already use. `MIMALLOC_PURGE_DELAY` in the environment overrides
/// this.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets a plain integer option; mimalloc reads options with atomic loads.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

fn main() -> ExitCode {
    tune_allocator();
    let args = Args::from_env();
    // The sink stops cleanly on these signals itself; everything else removes its temporary
    // outputs and ends.
    if !matches!(args.command, Some(args::Command::Sink(_))) {
        cleanup::watch_signals();
    }
    let ui = Ui::new(args.quiet(), args.verbose);
    match run(&args, ui) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        // `glyd ... | head`: the reader has what it wanted.
        Err(e) if output::is_stdout_closed(&e) => ExitCode::SUCCESS,
        Err(e) => {
            note!("glyd: {e:#}");
            ExitCode::from(1)
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Mode {
    Compress,
    Decompress,
    Test,
}

/// Runs the command; `Ok(false)` when some input failed (each failure already reported).
fn run(args: &Args, ui: Ui) -> Result<bool> {
    match &args.command {
        Some(args::Command::Inspect { file }) if tensors::is_tensor_archive(file) => {
            return tensors::inspect(file).map(|()| true)
        }
        Some(args::Command::Inspect { file }) => {
            return records::inspect(file, args.memory()).map(|()| true)
        }
        Some(args::Command::Pack {
            input,
            output,
            layout,
            base,
            force,
            report,
        }) => {
            return tensors::pack(
                input,
                output.as_deref(),
                *layout,
                base.as_deref(),
                *force,
                *report,
                ui,
            )
            .map(|()| true)
        }
        Some(args::Command::Unpack {
            archive,
            output,
            base,
            tensor,
            force,
        }) => {
            return tensors::unpack(
                archive,
                output.as_deref(),
                base.as_deref(),
                tensor.as_deref(),
                *force,
                args.memory(),
                ui,
            )
            .map(|()| true)
        }
        Some(args::Command::Cat {
            file,
            columns,
            table,
            format,
        }) => {
            return records::cat(file, table.as_deref(), columns, *format, args.memory())
                .map(|()| true)
        }
        Some(args::Command::Sink(sink_args)) => {
            let opts = sink::SinkOptions::new(sink_args, args.memory)?;
            return sink::run(opts).map(|()| true);
        }
        Some(args::Command::Sql {
            query,
            files,
            tables,
            format,
            max_rows,
            read_only,
            cluster,
        }) => {
            #[cfg(feature = "sql")]
            {
                let settings = sql::Settings {
                    format: *format,
                    max_rows: *max_rows,
                    read_only: *read_only,
                    memory: args.memory(),
                };
                if let Some(url) = cluster {
                    #[cfg(feature = "cluster")]
                    return cluster::query(url, query.as_deref(), files, tables, settings)
                        .map(|()| true);
                    #[cfg(not(feature = "cluster"))]
                    bail!("{url}: this glyd was built without the cluster feature (cargo build -p glyd-cli --features cluster)");
                }
                // `glyd sql FILE...`: no query, so the first argument is a file (or object).
                let (query, files) = match query {
                    Some(q) if Path::new(q).exists() || glyd_connectors::store::is_url(q) => (
                        None,
                        [PathBuf::from(q)]
                            .into_iter()
                            .chain(files.clone())
                            .collect(),
                    ),
                    q => (q.as_deref(), files.clone()),
                };
                let session = sql::Session::new(&files, tables, settings)?;
                return match query {
                    Some(q) => session.query(q, settings),
                    None => shell::run(&session, settings),
                }
                .map(|()| true);
            }
            #[cfg(not(feature = "sql"))]
            {
                let _ = (query, files, tables, format, max_rows, read_only, cluster);
                bail!("this glyd was built without the sql feature (cargo build -p glyd-cli --features sql)");
            }
        }
        Some(args::Command::Cluster(process)) => {
            #[cfg(feature = "cluster")]
            return cluster::run(process).map(|()| true);
            #[cfg(not(feature = "cluster"))]
            {
                let _ = process;
                bail!("this glyd was built without the cluster feature (cargo build -p glyd-cli --features cluster)");
            }
        }
        None => {}
    }
    if args.bench {
        return bench::run(args, ui).map(|()| true);
    }
    if args.list {
        return list::run(args, ui);
    }
    let mode = if args.test {
        Mode::Test
    } else if args.decompress {
        Mode::Decompress
    } else {
        Mode::Compress
    };
    let inputs: Vec<PathBuf> = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    };
    if args.output.is_some() && inputs.len() > 1 {
        usage_error("-o takes a single input file; use -c to concatenate several");
    }
    let mut ok = true;
    for path in &inputs {
        match process(path, mode, args, ui) {
            Ok(()) => {}
            Err(e) if output::is_stdout_closed(&e) => return Err(e),
            Err(e) => {
                note!("glyd: {e:#}");
                ok = false;
            }
        }
    }
    Ok(ok)
}

fn usage_error(msg: &str) -> ! {
    note!("glyd: {msg}\n\nFor more information, try '--help'.");
    std::process::exit(2)
}

/// Where the output of `input` goes, by the zstd rules: `-c` or standard input → stdout, `-o`
/// → that file, otherwise the input's name with `.glyd` added (compress) or removed.
fn destination(input: &Input, mode: Mode, args: &Args) -> Result<Option<PathBuf>> {
    if mode == Mode::Test {
        return Ok(None);
    }
    if let Some(o) = &args.output {
        if o == Path::new("-") {
            return Ok(None);
        }
        return Ok(Some(o.clone()));
    }
    if let (Some(url), false) = (&input.url, args.stdout) {
        bail!("{url}: name the output of an object with -o FILE (or -c for standard output)");
    }
    let Some(path) = input.path.as_ref().filter(|_| !args.stdout) else {
        return Ok(None);
    };
    let name = path.to_string_lossy();
    match mode {
        Mode::Compress => {
            if name.ends_with(SUFFIX) && !args.force {
                bail!("{name} already has the {SUFFIX} suffix -- ignored (use -f to compress it again)");
            }
            Ok(Some(PathBuf::from(format!("{name}{SUFFIX}"))))
        }
        Mode::Decompress => match name.strip_suffix(SUFFIX) {
            Some(stem) if !stem.is_empty() => Ok(Some(PathBuf::from(stem))),
            _ => bail!("{name}: unknown suffix, expected {SUFFIX} -- ignored (use -o FILE or -c)"),
        },
        Mode::Test => unreachable!(),
    }
}

/// Counts the bytes written through it.
struct Counting<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Counts the bytes read through it.
struct CountingReader<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

/// Copies `r` to `w` in pieces of `chunk` bytes; returns the bytes copied.
fn pump(r: &mut dyn Read, w: &mut dyn Write, chunk: usize) -> io::Result<u64> {
    let mut buf = vec![0u8; chunk];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
}

fn process(path: &Path, mode: Mode, args: &Args, ui: Ui) -> Result<()> {
    let input = Input::open(path)?;
    let name = input.name();
    let dest = destination(&input, mode, args)?;
    if let (Some(d), Some(p)) = (&dest, &input.path) {
        if d == p || output::same_file(d, p) {
            bail!("{name}: the output would overwrite the input");
        }
    }
    let out = match (&dest, mode) {
        (_, Mode::Test) => Output::Discard(io::sink()),
        (Some(d), _) => Output::file(d, args.force, input.path.as_deref())?,
        (None, Mode::Compress) if output::stdout_is_terminal() && !args.force => {
            bail!("not writing compressed data to a terminal; redirect it, or use -f to force");
        }
        (None, _) => Output::stdout(),
    };
    let shown = dest
        .as_ref()
        .map_or_else(|| "(stdout)".to_string(), |d| d.display().to_string());
    let bar = ui.bar(input.len, &name);
    let mut reader = Tracked {
        inner: input.reader,
        bar: bar.clone(),
    };
    let mut stored_as = None;
    let (bytes_in, bytes_out, out) = match mode {
        Mode::Compress if args.records => {
            let chunk = 16 << 20;
            let year = args.log_year.unwrap_or_else(|| {
                let modified = input
                    .path
                    .as_ref()
                    .and_then(|p| p.metadata().ok()?.modified().ok());
                modified
                    .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or_else(glyd_columnar::timepattern::this_year, |d| {
                        glyd_columnar::timepattern::year_of(d.as_secs() as i64)
                    })
            });
            let (n, counted, how) = records::compress(
                &mut reader,
                Counting { inner: out, n: 0 },
                args,
                year,
                |r, w| pump(r, w, chunk),
            )
            .with_context(|| format!("{name}: compressing records to {shown}"))?;
            stored_as = Some(how);
            (n, counted.n, counted.inner)
        }
        Mode::Compress => {
            let opts = Options {
                level: args.level(),
                threads: args.threads,
                block_size: args.block_size,
                long: args.long,
            };
            let chunk = opts.block_size() * glyd_core::resolve_threads(args.threads);
            let mut enc = Encoder::new(Counting { inner: out, n: 0 }, &opts)?;
            let n = pump(&mut reader, &mut enc, chunk.min(64 << 20))
                .with_context(|| format!("{name}: compressing to {shown}"))?;
            let counted = enc
                .finish()
                .with_context(|| format!("{name}: writing {shown}"))?;
            (n, counted.n, counted.inner)
        }
        Mode::Decompress | Mode::Test => {
            // The first bytes say which kind of stream this is: a frame or a record archive.
            let mut head = Vec::with_capacity(4);
            (&mut reader).take(4).read_to_end(&mut head)?;
            let mut src = CountingReader {
                inner: io::Cursor::new(head.clone()).chain(&mut reader),
                n: 0,
            };
            let mut w = Counting { inner: out, n: 0 };
            if glyd_gpu::archive::is_tensor_archive(&head) {
                bail!("{name} is a tensor archive: restore it with glyd unpack {name} OUT");
            } else if records::is_archive(&head) {
                // Row groups decode their columns on rayon's global pool: size it by -T (the
                // first archive of a run sets it; it cannot change after).
                let _ = rayon::ThreadPoolBuilder::new()
                    .num_threads(glyd_core::resolve_threads(args.threads))
                    .build_global();
                glyd_columnar::rebuild_with_limit(&mut src, &mut w, args.memory())
                    .with_context(|| name.clone())?;
            } else {
                let mut dec =
                    Decoder::with_threads(&mut src, args.threads).with_memory_limit(args.memory());
                pump(&mut dec, &mut w, 1 << 20).with_context(|| name.clone())?;
            }
            (src.n, w.n, w.inner)
        }
    };
    bar.finish_and_clear();
    let wrote_file = out.is_file();
    out.commit()?;
    if ui.summaries {
        match mode {
            Mode::Compress => note!(
                "{name} : {:6.2}%   ({} => {}, {shown}){}",
                percent(bytes_out, bytes_in),
                human_bytes(bytes_in),
                human_bytes(bytes_out),
                match stored_as {
                    Some(records::Stored::Records { shape }) => format!(" as records, {shape}"),
                    Some(records::Stored::Plain) => " (not records: compressed plain)".into(),
                    None => String::new(),
                }
            ),
            Mode::Decompress => note!(
                "{name} : {} => {}, {shown}",
                human_bytes(bytes_in),
                human_bytes(bytes_out)
            ),
            Mode::Test => note!("{name} : OK ({} decoded)", human_bytes(bytes_out)),
        }
    }
    if args.rm && mode != Mode::Test {
        match (&input.path, &dest) {
            (Some(p), Some(_)) if wrote_file => std::fs::remove_file(p)
                .with_context(|| format!("output complete, but cannot remove {}", p.display()))?,
            (Some(p), Some(d)) => note!(
                "glyd: {} kept: --rm removes inputs only once a file replaces them ({} is a device or FIFO)",
                p.display(),
                d.display()
            ),
            (Some(p), None) if ui.summaries => {
                note!(
                    "glyd: {} kept: --rm does not remove inputs written to standard output",
                    p.display()
                )
            }
            _ => {}
        }
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
