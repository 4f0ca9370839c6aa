//! `glyd -l`: what a compressed file holds, read from its headers and index without decoding.

use std::fs::File;
use std::io::{Read, Seek};

use anyhow::{Context, Result};
use glyd_core::{level_label, summarize, FrameSummary};

use crate::args::Args;
use crate::progress::{human_bytes, Ui};

/// Lists every file; returns false if any could not be read.
pub fn run(args: &Args, ui: Ui) -> bool {
    if args.files.is_empty() || args.files.iter().any(|f| f.as_os_str() == "-") {
        eprintln!(
            "glyd: -l needs files: it reads the index at the end, which a pipe cannot seek to"
        );
        return false;
    }
    println!(
        "{:>6} {:>7} {:>12} {:>13} {:>7} {:>6} {:>8}  Filename",
        "Frames", "Blocks", "Compressed", "Uncompressed", "Ratio", "Level", "Block"
    );
    let mut ok = true;
    let mut total = FrameSummary::default();
    let mut frames_total = 0;
    for path in &args.files {
        match list_one(path) {
            Ok(frames) => {
                let s = combine(&frames);
                print_row(frames.len(), &s, &path.display().to_string());
                if ui.detail || args.verbose > 0 {
                    for (i, f) in frames.iter().enumerate() {
                        println!(
                            "    frame {i}: level {}, block size {}, {} blocks ({} elz, {} lz, {} raw, {} rle), {} => {}",
                            level_label(f.level),
                            human_bytes(f.block_size as u64),
                            f.blocks,
                            f.kinds[3],
                            f.kinds[2],
                            f.kinds[0],
                            f.kinds[1],
                            human_bytes(f.compressed_size),
                            human_bytes(f.content_size)
                        );
                    }
                }
                frames_total += frames.len();
                total.blocks += s.blocks;
                total.compressed_size += s.compressed_size;
                total.content_size += s.content_size;
            }
            Err(e) => {
                eprintln!("glyd: {e:#}");
                ok = false;
            }
        }
    }
    if args.files.len() > 1 {
        total.level = u8::MAX;
        print_row(frames_total, &total, &format!("{} files", args.files.len()));
    }
    ok
}

fn list_one(path: &std::path::Path) -> Result<Vec<FrameSummary>> {
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut head = Vec::new();
    (&mut f).take(4).read_to_end(&mut head)?;
    if glyd_columnar::is_archive(&head) {
        // A record archive lists as one "frame" whose blocks are its row groups (`glyd
        // inspect` shows its columns).
        let r = glyd_columnar::ArchiveReader::open(path)
            .with_context(|| format!("{}", path.display()))?;
        let groups = r.row_groups();
        return Ok(vec![FrameSummary {
            level: r.level(),
            block_size: groups
                .iter()
                .map(|g| g.input_len as usize)
                .max()
                .unwrap_or(0),
            blocks: groups.len() as u64,
            kinds: [0; 4],
            compressed_size: r.len() as u64,
            content_size: r.input_len(),
        }]);
    }
    f.rewind()?;
    summarize(&mut f).with_context(|| format!("{}", path.display()))
}

/// One row for a file of several frames: sums, and the first frame's level and block size.
fn combine(frames: &[FrameSummary]) -> FrameSummary {
    let mut s = frames[0].clone();
    for f in &frames[1..] {
        s.blocks += f.blocks;
        s.compressed_size += f.compressed_size;
        s.content_size += f.content_size;
    }
    s
}

fn print_row(frames: usize, s: &FrameSummary, name: &str) {
    let ratio = if s.compressed_size == 0 {
        0.0
    } else {
        s.content_size as f64 / s.compressed_size as f64
    };
    let (level, block) = if s.level == u8::MAX {
        (String::new(), String::new())
    } else {
        (level_label(s.level), human_bytes(s.block_size as u64))
    };
    println!(
        "{:>6} {:>7} {:>12} {:>13} {:>7.3} {:>6} {:>8}  {}",
        frames,
        s.blocks,
        human_bytes(s.compressed_size),
        human_bytes(s.content_size),
        ratio,
        level,
        block,
        name
    );
}
