//! What the workspace's tests share: the shared corpus (`../shared/corpus` beside the
//! checkout: real data nobody here wrote), found under one policy. Where the corpus is missing,
//! a test that needs it prints why it skipped and passes; with `GLYD_REQUIRE_CORPUS` set (CI
//! sets it) a missing corpus fails the test instead, so CI never passes by skipping.

#![deny(unsafe_code)]

use std::path::{Path, PathBuf};

/// The environment variable that turns a missing corpus into a failure.
pub const REQUIRE: &str = "GLYD_REQUIRE_CORPUS";

/// The shared corpus folder (it may not exist).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
}

/// What a test does when data it needs is missing: fail under [`REQUIRE`], else say so.
fn missing(what: &Path, why: &str) -> Option<Vec<PathBuf>> {
    let msg = format!("{}: {why}", what.display());
    if std::env::var_os(REQUIRE).is_some() {
        panic!("{msg} ({REQUIRE} is set: the shared corpus is required)");
    }
    eprintln!("skipped: {msg} (the shared corpus belongs beside the checkout)");
    None
}

/// The files of corpus folder `sub` (e.g. `"loghub"`), sorted, licences left out; `None` (said
/// on stderr) where the folder is missing and the corpus not required.
pub fn corpus(sub: &str) -> Option<Vec<PathBuf>> {
    let dir = corpus_dir().join(sub);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) => return missing(&dir, &e.to_string()),
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("LICENSE"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return missing(&dir, "no files");
    }
    Some(files)
}

/// Every file of every corpus folder.
pub fn corpus_all() -> Option<Vec<PathBuf>> {
    let dir = corpus_dir();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) => return missing(&dir, &e.to_string()),
    };
    let mut subs: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    subs.sort();
    let mut files = Vec::new();
    for s in subs {
        files.extend(corpus(&s)?);
    }
    Some(files)
}

/// One corpus file by its path under the corpus (e.g. `"loghub/HDFS_2k.log"`).
pub fn corpus_file(rel: &str) -> Option<PathBuf> {
    let p = corpus_dir().join(rel);
    if p.is_file() {
        Some(p)
    } else {
        missing(&p, "not found").map(|_| p)
    }
}

#[cfg(feature = "kafka")]
#[allow(unsafe_code)]
pub mod kafka;
pub mod s3;
pub mod tpch;
