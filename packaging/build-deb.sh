#!/bin/sh
# Builds the Debian package for other machines: portable code (MYELIN_NATIVE=OFF: x86-64
# baseline, the fast kernels chosen at run time), installed under /usr (the core as a private
# library in lib/<triplet>/myelin), then runs lintian on it when lintian is installed.
#   packaging/build-deb.sh [BUILD_DIR]      (default: build-deb; the .deb is left there)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-deb}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMYELIN_NATIVE=OFF \
  -DMYELIN_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr
cmake --build "$build" --target myelin myelin-studio myelin_example myelin_man_pages \
  myelin_completion
(cd "$build" && cpack -G DEB)
deb=$(ls "$build"/*.deb)
echo "package: $deb"
if command -v lintian >/dev/null; then
  lintian --fail-on error "$deb"
fi
