//! `include/glyd.h` is what cbindgen makes of this crate today: a changed signature without a
//! regenerated header fails here. `GLYD_BLESS=1` rewrites the header instead.

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut made = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut made);
    let path = dir.join("include/glyd.h");
    if std::env::var_os("GLYD_BLESS").is_some() {
        std::fs::write(&path, &made).expect("write glyd.h");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == made,
        "{} is stale: regenerate it with GLYD_BLESS=1 cargo test -p glyd-capi --test header",
        path.display()
    );
}
