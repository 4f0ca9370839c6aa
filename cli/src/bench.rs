//! `glyd -b`: every glyd level beside zstd and lz4, in one process, on the same bytes. Each
//! codec's output is decoded and compared with the input before anything is timed. Speeds are
//! medians over `--bench-runs` timed runs; MB/s is 10^6 bytes of *uncompressed* data per second.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use glyd_core::{Level, Options};

use crate::args::Args;
use crate::output::print;
use crate::progress::{human_bytes, Ui};

type CompressFn = Box<dyn Fn(&[u8]) -> Vec<u8>>;
type DecompressFn = Box<dyn Fn(&[u8], &mut [u8]) -> Result<usize>>;

/// A codec under test.
struct Codec {
    name: String,
    threads: usize,
    compress: CompressFn,
    decompress: DecompressFn,
}

/// One codec's numbers on one input (or summed over several).
#[derive(Clone, Copy, Default)]
struct Measured {
    input: u64,
    output: u64,
    compress_s: f64,
    decompress_s: f64,
}

impl Measured {
    fn ratio(&self) -> f64 {
        self.input as f64 / self.output as f64
    }
    fn compress_mbs(&self) -> f64 {
        self.input as f64 / self.compress_s / 1e6
    }
    fn decompress_mbs(&self) -> f64 {
        self.input as f64 / self.decompress_s / 1e6
    }
    fn add(&mut self, o: &Measured) {
        self.input += o.input;
        self.output += o.output;
        self.compress_s += o.compress_s;
        self.decompress_s += o.decompress_s;
    }
}

fn glyd_codec(level: Level, threads: usize, block_size: Option<usize>, long: bool) -> Codec {
    let opts = Options {
        level,
        threads,
        block_size,
        long,
    };
    Codec {
        name: format!(
            "glyd --{}{}",
            level.name(),
            if long { " --long" } else { "" }
        ),
        threads,
        compress: Box::new(move |d| glyd_core::compress(d, &opts).expect("valid options")),
        decompress: Box::new(move |c, out| Ok(glyd_core::decompress_into(c, out, threads)?)),
    }
}

/// zstd at `level` with `--long` (a 128 MiB window, as glyd's), in the same process.
fn zstd_long(level: i32) -> Codec {
    use zstd::stream::raw::{CParameter, DParameter};
    Codec {
        name: format!("zstd -{level} --long"),
        threads: 1,
        compress: Box::new(move |d| {
            let mut z = zstd::bulk::Compressor::new(level).expect("zstd compressor");
            z.set_parameter(CParameter::EnableLongDistanceMatching(true))
                .and_then(|_| z.set_parameter(CParameter::WindowLog(27)))
                .expect("zstd long-distance parameters");
            z.compress(d).expect("zstd compress")
        }),
        decompress: Box::new(|c, out| {
            let mut z = zstd::bulk::Decompressor::new()?;
            z.set_parameter(DParameter::WindowLogMax(27))?;
            Ok(z.decompress_to_buffer(c, out)?)
        }),
    }
}

fn peers(long: bool) -> Vec<Codec> {
    let mut v = vec![
        Codec {
            name: "lz4 (C)".into(),
            threads: 1,
            compress: Box::new(|d| {
                lz4::block::compress(d, Some(lz4::block::CompressionMode::DEFAULT), false)
                    .expect("lz4 compress")
            }),
            decompress: Box::new(|c, out| {
                let n = out.len() as i32;
                Ok(lz4::block::decompress_to_buffer(c, Some(n), out)?)
            }),
        },
        Codec {
            name: "lz4 -9 (C, HC)".into(),
            threads: 1,
            compress: Box::new(|d| {
                lz4::block::compress(
                    d,
                    Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9)),
                    false,
                )
                .expect("lz4 compress")
            }),
            decompress: Box::new(|c, out| {
                let n = out.len() as i32;
                Ok(lz4::block::decompress_to_buffer(c, Some(n), out)?)
            }),
        },
        Codec {
            name: "lz4_flex".into(),
            threads: 1,
            compress: Box::new(lz4_flex::block::compress),
            decompress: Box::new(|c, out| Ok(lz4_flex::block::decompress_into(c, out)?)),
        },
    ];
    for level in [1, 3, 19] {
        v.push(Codec {
            name: format!("zstd -{level}"),
            threads: 1,
            compress: Box::new(move |d| zstd::bulk::compress(d, level).expect("zstd compress")),
            decompress: Box::new(|c, out| {
                let mut z = zstd::bulk::Decompressor::new()?;
                Ok(z.decompress_to_buffer(c, out)?)
            }),
        });
    }
    if long {
        v.extend([3, 19].map(zstd_long));
    }
    v
}

/// `glyd -r` at `level` on `threads` threads: records where the input sniffs as records.
fn record_codec(level: Level, threads: usize) -> Codec {
    let pool = std::sync::Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool"),
    );
    Codec {
        name: "glyd -r".into(),
        threads,
        compress: Box::new(move |d| {
            crate::records::compress_in_memory(d, level, threads).expect("record mode")
        }),
        decompress: Box::new(move |c, mut out| {
            if !glyd_columnar::is_archive(c) {
                return Ok(glyd_core::decompress_into(c, out, threads)?);
            }
            let reader = glyd_columnar::ArchiveReader::from_bytes(c.to_vec())?;
            Ok(pool.install(|| reader.rebuild_to(&mut out))? as usize)
        }),
    }
}

/// Codecs of `glyd -b -r`: record mode beside plain glyd at the same level and zstd.
fn record_codecs(level: Level, cores: usize) -> Vec<Codec> {
    let mut v = vec![record_codec(level, 1)];
    if cores > 1 {
        v.push(record_codec(level, cores));
    }
    v.push(glyd_codec(level, 1, None, false));
    v.extend(
        peers(false)
            .into_iter()
            .filter(|c| c.name.starts_with("zstd")),
    );
    v
}

/// Reading a record archive as a table: median seconds, on one thread, to rebuild the whole
/// input and to decode its first two columns as Arrow arrays.
fn measure_columns(data: &[u8], level: Level, runs: u32) -> Result<Option<(f64, f64)>> {
    let packed = crate::records::compress_in_memory(data, level, 1)?;
    if !glyd_columnar::is_archive(&packed) {
        return Ok(None);
    }
    let reader = glyd_columnar::ArchiveReader::from_bytes(packed)?;
    if reader.schema().fields().len() < 2 {
        return Ok(None);
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let groups = 0..reader.row_groups().len();
    let mut out = Vec::with_capacity(data.len());
    let (mut rebuild, mut columns) = (Vec::new(), Vec::new());
    let min = Duration::from_millis(50);
    for _ in 0..runs {
        rebuild.push(sample(min, || {
            out.clear();
            pool.install(|| reader.rebuild_to(&mut out))
                .expect("rebuild");
        }));
        columns.push(sample(min, || {
            black_box(
                pool.install(|| reader.read(Some(&[0, 1]), groups.clone()))
                    .expect("read"),
            );
        }));
    }
    if out != data {
        bail!("the record archive did not rebuild its input");
    }
    Ok(Some((median(rebuild), median(columns))))
}

/// With `long`, the entropy levels and zstd also run with long-distance matching.
fn codecs(cores: usize, block_size: Option<usize>, long: bool) -> Vec<Codec> {
    let mut v: Vec<Codec> = Level::ALL
        .iter()
        .map(|&l| glyd_codec(l, 1, block_size, false))
        .collect();
    if long {
        v.extend([Level::Max, Level::Ultra].map(|l| glyd_codec(l, 1, block_size, true)));
    }
    if cores > 1 {
        v.extend(
            Level::ALL
                .iter()
                .map(|&l| glyd_codec(l, cores, block_size, false)),
        );
    }
    v.extend(peers(long));
    v
}

/// Seconds per call of `f`, repeating it for at least `min` (once if `min` is zero).
fn sample(min: Duration, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    let mut n = 0u32;
    loop {
        f();
        n += 1;
        if t.elapsed() >= min {
            return t.elapsed().as_secs_f64() / f64::from(n);
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Each glyd level (1 thread) and the peer it is held against. In each round of samples the
/// peer is measured right after it: this shared machine's load moves over seconds to minutes,
/// and with the slow codecs between them a pair's samples were minutes apart (the same build
/// read 0.83x and 1.06x zstd -3's decode speed in two runs).
const PAIRS: [(&str, &str); 5] = [
    ("glyd --fast", "lz4 (C)"),
    ("glyd --lz", "lz4 (C)"),
    ("glyd --max", "zstd -3"),
    ("glyd --ultra", "zstd -19"),
    ("glyd -r", "zstd -19"),
];

/// The order codecs are measured in within a round: the table's, except that a codec in
/// [`PAIRS`] is followed by its peer (where that is not measured already).
fn measurement_order(codecs: &[Codec]) -> Vec<usize> {
    let one_thread = |name: &str| codecs.iter().position(|c| c.name == name && c.threads == 1);
    let mut order: Vec<usize> = Vec::with_capacity(codecs.len());
    for (i, c) in codecs.iter().enumerate() {
        let peer = PAIRS
            .iter()
            .find(|p| p.0 == c.name && c.threads == 1)
            .and_then(|p| one_thread(p.1));
        for k in std::iter::once(i).chain(peer) {
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    order
}

/// One codec's state during a measurement.
struct Trial {
    packed: Vec<u8>,
    out: Vec<u8>,
    /// Codecs whose single call takes over a second get 3 single-call samples.
    slow: bool,
    compress: Vec<f64>,
    decompress: Vec<f64>,
}

/// Measures every codec on `data`. Samples are taken in rounds, each round timing every codec
/// once, so that load from elsewhere on a shared machine falls on all codecs alike; each
/// codec's speed is the median of its samples.
fn measure_all(codecs: &[Codec], data: &[u8], runs: u32) -> Result<Vec<Measured>> {
    let mut trials = Vec::with_capacity(codecs.len());
    for c in codecs {
        let t = Instant::now();
        let packed = (c.compress)(data);
        let slow = t.elapsed() > Duration::from_secs(1);
        let mut out = vec![0u8; data.len()];
        let n = (c.decompress)(&packed, &mut out)
            .with_context(|| format!("{} failed to decode its own output", c.name))?;
        if n != data.len() || out != data {
            bail!("{} did not round-trip the input exactly", c.name);
        }
        trials.push(Trial {
            packed,
            out,
            slow,
            compress: Vec::new(),
            decompress: Vec::new(),
        });
    }
    let min = Duration::from_millis(50);
    let order = measurement_order(codecs);
    for round in 0..runs {
        for &i in &order {
            let (c, t) = (&codecs[i], &mut trials[i]);
            if t.slow && round >= 3 {
                continue;
            }
            let m = if t.slow { Duration::ZERO } else { min };
            t.compress.push(sample(m, || {
                black_box((c.compress)(black_box(data)));
            }));
            let (packed, out) = (&t.packed, &mut t.out);
            t.decompress.push(sample(m, || {
                black_box((c.decompress)(black_box(packed), out).ok());
            }));
        }
    }
    Ok(trials
        .into_iter()
        .map(|t| Measured {
            input: data.len() as u64,
            output: t.packed.len() as u64,
            compress_s: median(t.compress),
            decompress_s: median(t.decompress),
        })
        .collect())
}

pub fn run(args: &Args, ui: Ui) -> Result<()> {
    if args.files.is_empty() {
        bail!("-b needs one or more files to benchmark");
    }
    let cores = glyd_core::resolve_threads(args.threads);
    let codecs = if args.records {
        record_codecs(args.level(), cores)
    } else {
        codecs(cores, args.block_size, args.long)
    };
    let mut totals = vec![Measured::default(); codecs.len()];
    let many = args.files.len() > 1;
    for path in &args.files {
        let data =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if ui.bars {
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[2K{}: measuring {} codecs ...",
                path.display(),
                codecs.len()
            );
        }
        let rows = measure_all(&codecs, &data, args.bench_runs)
            .with_context(|| format!("{}", path.display()))?;
        for (t, m) in totals.iter_mut().zip(&rows) {
            t.add(m);
        }
        if ui.bars {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
        if !many || args.verbose > 0 {
            let title = format!("{} ({})", path.display(), human_bytes(data.len() as u64));
            print(table(&title, &codecs, &rows, args.markdown))?;
        }
        if args.records {
            if let Some((rebuild, columns)) = measure_columns(&data, args.level(), args.bench_runs)?
            {
                let mbs = |s: f64| data.len() as f64 / s / 1e6;
                print(format!(
                    "  {}: glyd -r, 1 thread: rebuild {:.0} MB/s; first two columns as Arrow {:.0} MB/s ({:.1}x rebuild)\n\n",
                    path.display(),
                    mbs(rebuild),
                    mbs(columns),
                    rebuild / columns
                ))?;
            }
        }
    }
    if many {
        let bytes: u64 = totals[0].input;
        let title = format!("all {} files ({})", args.files.len(), human_bytes(bytes));
        print(table(&title, &codecs, &totals, args.markdown))?;
    }
    Ok(())
}

fn find(codecs: &[Codec], rows: &[Measured], name: &str, threads: usize) -> Option<Measured> {
    codecs
        .iter()
        .position(|c| c.name == name && c.threads == threads)
        .map(|i| rows[i])
}

fn table(title: &str, codecs: &[Codec], rows: &[Measured], markdown: bool) -> String {
    let mut o = String::new();
    if markdown {
        let _ = writeln!(o, "### {title}\n");
        let _ = writeln!(
            o,
            "| codec | threads | ratio | compress MB/s | decompress MB/s |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|");
        for (c, m) in codecs.iter().zip(rows) {
            let _ = writeln!(
                o,
                "| {} | {} | {:.3} | {:.0} | {:.0} |",
                c.name,
                c.threads,
                m.ratio(),
                m.compress_mbs(),
                m.decompress_mbs()
            );
        }
    } else {
        let _ = writeln!(o, "{title}");
        let _ = writeln!(
            o,
            "  {:<16} {:>7} {:>8} {:>14} {:>16}",
            "codec", "threads", "ratio", "compress MB/s", "decompress MB/s"
        );
        for (c, m) in codecs.iter().zip(rows) {
            let _ = writeln!(
                o,
                "  {:<16} {:>7} {:>8.3} {:>14.0} {:>16.0}",
                c.name,
                c.threads,
                m.ratio(),
                m.compress_mbs(),
                m.decompress_mbs()
            );
        }
    }
    // The bars the fast levels are held to, from the same numbers.
    if let (Some(lz), Some(fast), Some(lz4)) = (
        find(codecs, rows, "glyd --lz", 1),
        find(codecs, rows, "glyd --fast", 1),
        find(codecs, rows, "lz4 (C)", 1),
    ) {
        let nl = if markdown { "\n" } else { "" };
        let _ = writeln!(
            o,
            "{nl}  vs lz4 (C), 1 thread: --lz ratio {:.3}x, decode {:.2}x; --fast compress {:.2}x",
            lz.ratio() / lz4.ratio(),
            lz.decompress_mbs() / lz4.decompress_mbs(),
            fast.compress_mbs() / lz4.compress_mbs()
        );
        let cores = codecs.iter().map(|c| c.threads).max().unwrap_or(1);
        if let Some(lz_mt) = find(codecs, rows, "glyd --lz", cores).filter(|_| cores > 1) {
            let _ = writeln!(
                o,
                "  --lz decode with {cores} threads: {:.2}x its 1-thread speed",
                lz_mt.decompress_mbs() / lz.decompress_mbs()
            );
        }
    }
    // Record mode beside plain glyd at its level and zstd -19.
    if let (Some(r), Some(z)) = (
        find(codecs, rows, "glyd -r", 1),
        find(codecs, rows, "zstd -19", 1),
    ) {
        let _ = writeln!(
            o,
            "  glyd -r vs zstd -19, 1 thread: ratio {:.3}x, decode {:.2}x, compress {:.2}x",
            r.ratio() / z.ratio(),
            r.decompress_mbs() / z.decompress_mbs(),
            r.compress_mbs() / z.compress_mbs()
        );
    }
    // The entropy levels beside the zstd levels whose slots they take.
    for (ours, theirs) in [("glyd --max", "zstd -3"), ("glyd --ultra", "zstd -19")] {
        if let (Some(a), Some(b)) = (find(codecs, rows, ours, 1), find(codecs, rows, theirs, 1)) {
            let _ = writeln!(
                o,
                "  {} vs {theirs}, 1 thread: ratio {:.3}x, decode {:.2}x, compress {:.2}x",
                &ours[5..],
                a.ratio() / b.ratio(),
                a.decompress_mbs() / b.decompress_mbs(),
                a.compress_mbs() / b.compress_mbs()
            );
        }
    }
    let _ = writeln!(o);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_measured_right_after_the_level_held_against_them() {
        let codecs = codecs(2, None, false);
        let order = measurement_order(&codecs);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..codecs.len()).collect::<Vec<_>>());
        let names: Vec<(&str, usize)> = order
            .iter()
            .map(|&i| (codecs[i].name.as_str(), codecs[i].threads))
            .collect();
        for run in [
            ["glyd --fast", "lz4 (C)", "glyd --lz"].as_slice(),
            &["glyd --max", "zstd -3"],
            &["glyd --ultra", "zstd -19"],
        ] {
            let at = names
                .iter()
                .position(|&n| n == (run[0], 1))
                .expect("the level is measured");
            let next: Vec<&str> = names[at..at + run.len()].iter().map(|n| n.0).collect();
            assert_eq!(next, run, "{names:?}");
            assert!(names[at..at + run.len()].iter().all(|n| n.1 == 1));
        }
    }
}
