//! What the sink's end-to-end tests share: the `glyd` binary, `glyd sql` over a lake folder,
//! and the archives under a folder, each passing `glyd -t`.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn glyd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glyd"))
}

/// `glyd sql` as CSV over the lake folder `table` named `t`.
pub fn sql_t(query: &str, table: &Path) -> String {
    let o = glyd()
        .args(["sql", "--format", "csv", query, "-t"])
        .arg(format!("t={}", table.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Every archive under `dir`.
pub fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(archives(&p));
        } else if p.extension().is_some_and(|x| x == "glyd") {
            out.push(p);
        }
    }
    out
}

/// Every archive under `lake` passes `glyd -t`.
pub fn all_pass_test(lake: &Path) {
    for a in archives(lake) {
        let o = glyd().arg("-t").arg(&a).output().unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            a.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
