//! `glyd pack`, `glyd unpack` and `glyd inspect` of tensor archives: safetensors models in and
//! out, with a progress bar on a terminal and a per-tensor report on request.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use glyd_gpu::archive::EntryKind;
use glyd_gpu::{Layout, Model, PackOptions, TensorArchive};

use crate::args::TensorLayout;
use crate::cleanup;
use crate::output::{print, same_file, temp_place, Output};
use crate::progress::{human_bytes, Ui};
use crate::SUFFIX;

/// True when `path` starts with the tensor-archive magic.
pub fn is_tensor_archive(path: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && glyd_gpu::archive::is_tensor_archive(&head)
}

pub fn pack(
    input: &Path,
    output: Option<&Path>,
    layout: TensorLayout,
    base: Option<&Path>,
    force: bool,
    report: bool,
    ui: Ui,
) -> Result<()> {
    let output = output.map(Path::to_path_buf).unwrap_or_else(|| {
        let mut s = input.as_os_str().to_owned();
        s.push(SUFFIX);
        PathBuf::from(s)
    });
    if output == input || same_file(&output, input) {
        bail!("{}: the output would overwrite the input", input.display());
    }
    let opts = PackOptions {
        layout: match layout {
            TensorLayout::Dense => Layout::Dense,
            TensorLayout::Gpu => Layout::Gpu,
        },
        base: base.map(Path::to_path_buf),
        floors: report,
    };
    // Model errors name the file themselves.
    let model = Model::open(input)?;
    let like = model.files.first().map(|f| f.path.clone());
    let mut out = Output::file(&output, force, like.as_deref())?;
    let bar = ui.bar(Some(model.total_len()), "pack");
    let r = glyd_gpu::pack_to(&model, &mut out, &opts, &mut |done| bar.set_position(done))
        .with_context(|| format!("packing {}", input.display()))?;
    out.commit()?;
    bar.finish_and_clear();
    if report {
        print(report_table(&r))?;
    }
    if ui.summaries || report {
        note!(
            "{}: {} => {} ({:.3}x), {} tensors -> {}",
            input.display(),
            human_bytes(r.input_bytes),
            human_bytes(r.archive_bytes),
            r.input_bytes as f64 / r.archive_bytes.max(1) as f64,
            r.tensors.len(),
            output.display()
        );
    }
    Ok(())
}

fn report_table(r: &glyd_gpu::PackReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<48} {:>6} {:>12} {:>16} {:>10} {:>10}",
        "tensor", "dtype", "values", "coding", "floor b/v", "bits/val"
    );
    let (mut floor, mut floored, mut packed, mut values) = (0.0, 0u64, 0u64, 0u64);
    for t in &r.tensors {
        let f = t.floor_bits.map_or("-".to_string(), |f| format!("{f:.3}"));
        let _ = writeln!(
            o,
            "{:<48} {:>6} {:>12} {:>16} {:>10} {:>10.3}",
            t.name,
            t.dtype.name(),
            t.elements,
            t.method.label(),
            f,
            t.bits_per_value()
        );
        if let Some(f) = t.floor_bits {
            floor += f * t.elements as f64;
            floored += t.elements;
            packed += t.packed;
            values += t.elements;
        }
    }
    if floored > 0 {
        let _ = writeln!(
            o,
            "float tensors: {} values, exponent floor {:.3} bits/value, achieved {:.3} bits/value",
            floored,
            floor / floored as f64,
            packed as f64 * 8.0 / values as f64
        );
    }
    o
}

pub fn unpack(
    archive: &Path,
    output: Option<&Path>,
    base: Option<&Path>,
    tensor: Option<&str>,
    force: bool,
    memory: u64,
    ui: Ui,
) -> Result<()> {
    let a = TensorArchive::open(archive)
        .with_context(|| format!("{}", archive.display()))?
        .with_memory_limit(memory);
    let base = base
        .map(|b| Model::open(b).with_context(|| format!("base model {}", b.display())))
        .transpose()?;
    let output = match output {
        Some(o) => o.to_path_buf(),
        None => {
            let s = archive.to_string_lossy();
            match s.strip_suffix(SUFFIX) {
                Some(stem) if tensor.is_none() && !stem.is_empty() => PathBuf::from(stem),
                _ => bail!("name the output: glyd unpack {} OUT", archive.display()),
            }
        }
    };
    if output == archive || same_file(&output, archive) {
        bail!(
            "{}: the output would overwrite the archive",
            archive.display()
        );
    }
    let named = || format!("unpacking {}", archive.display());
    if let Some(name) = tensor {
        let mut out = Output::file(&output, force, Some(archive))?;
        a.write_tensor(name, &mut out, base.as_ref())
            .with_context(named)?;
        return out.commit();
    }
    let bar = ui.bar(Some(a.unpacked_len()), "unpack");
    if a.folder {
        if !force && std::fs::symlink_metadata(&output).is_ok() {
            bail!(
                "{} already exists; use -f to unpack into it",
                output.display()
            );
        }
        let (dir, name) = temp_place(&output);
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{name}.glyd-unpack-"))
            .tempdir_in(dir)
            .with_context(|| format!("cannot create a folder in {}", dir.display()))?;
        let _pending = cleanup::Pending::new(staging.path());
        a.unpack_into(staging.path(), base.as_ref(), &mut |done| {
            bar.set_position(done)
        })
        .with_context(named)?;
        glyd_gpu::unpack::install(staging.path(), &output, force, archive).with_context(named)?;
    } else {
        let mut out = Output::file(&output, force, Some(archive))?;
        let mut done = 0;
        a.write_file(0, &mut out, base.as_ref(), &mut |n| {
            done += n;
            bar.set_position(done)
        })
        .with_context(named)?;
        out.commit()?;
    }
    bar.finish_and_clear();
    if ui.summaries {
        note!(
            "{}: {} -> {}",
            archive.display(),
            human_bytes(a.unpacked_len()),
            output.display()
        );
    }
    Ok(())
}

pub fn inspect(path: &Path) -> Result<()> {
    let a = TensorArchive::open(path).with_context(|| format!("{}", path.display()))?;
    let stored = std::fs::metadata(path)?.len();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: tensor archive of {} file(s), {} => {} ({:.3}x)",
        path.display(),
        a.files.len(),
        human_bytes(a.unpacked_len()),
        human_bytes(stored),
        a.unpacked_len() as f64 / stored.max(1) as f64
    );
    for f in &a.files {
        let _ = writeln!(o, "  {} ({})", f.name, human_bytes(f.len()));
        for e in &f.entries {
            if let EntryKind::Tensor { name, dtype, shape } = &e.kind {
                let n: u64 = shape.iter().product();
                let _ = writeln!(
                    o,
                    "    {:<48} {:>7} {:<16} {:<16} {:>10} {:>8.3} bits/value",
                    name,
                    dtype.name(),
                    format!("{shape:?}"),
                    e.method.label(),
                    human_bytes(e.len),
                    e.len as f64 * 8.0 / n.max(1) as f64
                );
            }
        }
    }
    print(o)
}
