#!/usr/bin/env bash
# Builds the C library (release) and installs libglyd.so, libglyd.a, glyd.h and glyd.pc under
# PREFIX (default /usr/local), so `cc app.c $(pkg-config --cflags --libs glyd)` works.
#
#     bash capi/install.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
cargo build --release -p glyd-capi
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 target/release/libglyd.a "$prefix/lib/"
install -m 755 target/release/libglyd.so "$prefix/lib/"
install -m 644 capi/include/glyd.h "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$prefix/lib|" -e "s|@INCLUDEDIR@|$prefix/include|" \
  -e "s|@VERSION@|$version|" capi/glyd.pc.in > "$prefix/lib/pkgconfig/glyd.pc"
echo "installed glyd $version under $prefix (pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
