//! `examples/c/roundtrip.c` built with the system's C compiler against the library cargo built
//! (through `glyd.pc`, as a user would with pkg-config) and run on the example data and the
//! shared corpus: every round trip in it compares bytes and it exits 0 only if all matched.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder cargo put libglyd.so in (this test binary's `deps/`'s parent).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// Builds libglyd.so where this test runs from: `cargo test` builds the crate only as the
/// rlib its tests link.
fn build_library(lib: &Path) {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--quiet", "-p", "glyd-capi", "--lib"]);
    if lib.file_name().is_some_and(|n| n == "release") {
        cargo.arg("--release");
    }
    let built = cargo.status().expect("cargo runs");
    assert!(built.success(), "cargo build -p glyd-capi failed");
}

#[test]
fn the_c_example_round_trips_every_file() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = lib_dir();
    build_library(&lib);
    assert!(
        lib.join("libglyd.so").is_file(),
        "{}: no libglyd.so (cargo builds it with this crate)",
        lib.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    // glyd.pc for the library where cargo left it, as capi/install.sh writes it for a prefix.
    let pc = std::fs::read_to_string(repo.join("capi/glyd.pc.in"))
        .unwrap()
        .replace("@PREFIX@", &repo.display().to_string())
        .replace("@LIBDIR@", &lib.display().to_string())
        .replace(
            "@INCLUDEDIR@",
            &repo.join("capi/include").display().to_string(),
        )
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    std::fs::write(tmp.path().join("glyd.pc"), pc).unwrap();
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "glyd"])
        .env("PKG_CONFIG_PATH", tmp.path())
        .output()
        .expect("pkg-config runs");
    assert!(
        flags.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags = String::from_utf8(flags.stdout).unwrap();
    let exe = tmp.path().join("roundtrip");
    let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(repo.join("examples/c/roundtrip.c"))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );

    let mut files: Vec<PathBuf> = ["HDFS_2k.log", "HDFS_2k.log_structured.csv", "Apache_2k.log"]
        .iter()
        .map(|f| repo.join("examples/data").join(f))
        .collect();
    files.extend(
        glyd_testkit::corpus("loghub")
            .unwrap_or_default()
            .into_iter()
            .take(6),
    );
    let run = Command::new(&exe)
        .args(&files)
        .output()
        .expect("the example runs");
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the C example failed:\n{out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        out.contains(&format!("glyd {}", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
    assert!(out.contains("all round trips matched"), "{out}");
    assert_eq!(out.matches("record stream").count(), files.len(), "{out}");
    assert!(out.contains("truncated: the input is corrupt"), "{out}");
}
