//! `glyd -l`: what a compressed file holds, read from its headers and index without decoding.

use std::fs::File;
use std::io::{Read, Seek};

use anyhow::{Context, Result};
use glyd_connectors::store;
use glyd_core::{level_label, summarize, FrameSummary};

use crate::args::Args;
use crate::output::print;
use crate::progress::{human_bytes, Ui};

/// The column header, printed before the first row (not before an error).
fn header() -> String {
    format!(
        "{:>6} {:>7} {:>12} {:>13} {:>7} {:>6} {:>8}  Filename\n",
        "Frames", "Blocks", "Compressed", "Uncompressed", "Ratio", "Level", "Block"
    )
}

/// Lists every file; `Ok(false)` if any could not be read (each reported on stderr).
pub fn run(args: &Args, ui: Ui) -> Result<bool> {
    if args.files.is_empty() || args.files.iter().any(|f| f.as_os_str() == "-") {
        note!("glyd: -l needs files: it reads the index at the end, which a pipe cannot seek to");
        return Ok(false);
    }
    let mut ok = true;
    let mut header_shown = false;
    let mut total = FrameSummary::default();
    let mut frames_total = 0;
    for path in &args.files {
        let frames = match list_one(path) {
            Ok(frames) => frames,
            Err(e) => {
                note!("glyd: {e:#}");
                ok = false;
                continue;
            }
        };
        let mut text = String::new();
        if !header_shown {
            text.push_str(&header());
            header_shown = true;
        }
        let s = combine(&frames);
        text.push_str(&row(frames.len(), &s, &path.display().to_string()));
        if ui.detail || args.verbose > 0 {
            for (i, f) in frames.iter().enumerate() {
                text.push_str(&format!(
                    "    frame {i}: level {}, block size {}, {} blocks ({} elz, {} lz, {} raw, {} rle), {} => {}\n",
                    level_label(f.level),
                    human_bytes(f.block_size as u64),
                    f.blocks,
                    f.kinds[3],
                    f.kinds[2],
                    f.kinds[0],
                    f.kinds[1],
                    human_bytes(f.compressed_size),
                    human_bytes(f.content_size)
                ));
            }
        }
        print(text)?;
        frames_total += frames.len();
        total.blocks += s.blocks;
        total.compressed_size += s.compressed_size;
        total.content_size += s.content_size;
    }
    if args.files.len() > 1 && header_shown {
        total.level = u8::MAX;
        print(row(
            frames_total,
            &total,
            &format!("{} files", args.files.len()),
        ))?;
    }
    Ok(ok)
}

fn list_one(path: &std::path::Path) -> Result<Vec<FrameSummary>> {
    if let Some(url) = path.to_str().filter(|p| store::is_url(p)) {
        // An object is listed from a local copy: listing seeks to the index at its end.
        let mut copy = tempfile::NamedTempFile::new()?;
        let mut reader = store::ObjectReader::open(&store::locate(url)?)?;
        std::io::copy(&mut reader, copy.as_file_mut()).with_context(|| url.to_string())?;
        return list_one(copy.path()).with_context(|| url.to_string());
    }
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut head = Vec::new();
    (&mut f).take(4).read_to_end(&mut head)?;
    if glyd_gpu::archive::is_tensor_archive(&head) {
        // A tensor archive lists as one "frame" whose blocks are its coded pieces (`glyd
        // inspect` shows its tensors).
        let a =
            glyd_gpu::TensorArchive::open(path).with_context(|| format!("{}", path.display()))?;
        return Ok(vec![FrameSummary {
            level: glyd_core::Level::Max.number(),
            block_size: 0,
            blocks: a.files.iter().map(|f| f.entries.len() as u64).sum(),
            kinds: [0; 4],
            compressed_size: f.metadata()?.len(),
            content_size: a.unpacked_len(),
        }]);
    }
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

fn row(frames: usize, s: &FrameSummary, name: &str) -> String {
    let ratio = if s.compressed_size == 0 {
        0.0
    } else {
        s.content_size as f64 / s.compressed_size as f64
    };
    let (level, block) = match (s.level, s.block_size) {
        (u8::MAX, _) => (String::new(), String::new()),
        // Tensor archives code each piece on its own, in no fixed block size.
        (l, 0) => (level_label(l), "-".to_string()),
        (l, b) => (level_label(l), human_bytes(b as u64)),
    };
    format!(
        "{:>6} {:>7} {:>12} {:>13} {:>7.3} {:>6} {:>8}  {}\n",
        frames,
        s.blocks,
        human_bytes(s.compressed_size),
        human_bytes(s.content_size),
        ratio,
        level,
        block,
        name
    )
}
