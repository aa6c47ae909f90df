#!/usr/bin/env bash
# Builds the .deb with CPack from a configured build folder, unpacks it into a scratch root
# (dpkg -x), runs the installed `myelin --version` and `myelin check` on an installed example,
# and fails on lintian errors (warnings are printed). Usage: packaging/check.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
if grep -q '^MYELIN_NATIVE:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "check.sh: note: $build is built with MYELIN_NATIVE=ON (this CPU only); release" \
        "packages use -DMYELIN_NATIVE=OFF"
fi
cmake --build "$build" --target myelin myelin_man_page
(cd "$build" && cpack --config CPackConfig.cmake >/dev/null)
deb=$(ls -t "$build"/*.deb | head -1)
echo "package: $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --field "$deb" Package Version Depends
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
myelin=$(find "$root" -path '*/bin/myelin' -type f | head -1)
examples=$(find "$root" -path '*/share/myelin/examples' -type d | head -1)
"$myelin" --version
"$myelin" check "$examples/fashion_cnn.myelin" | tail -1
find "$root" -name 'myelin.1.gz' -printf 'man page: %P\n'
find "$root" -path '*myelin/plugins/*.so' -printf 'plugin: %P\n'
if command -v lintian >/dev/null; then
    report=$(lintian "$deb" 2>&1 || true)
    printf '%s\n' "$report" | grep -E '^[WE]:' | head -40 || true
    if printf '%s\n' "$report" | grep -q '^E:'; then
        echo "check.sh: lintian reports errors" >&2
        exit 1
    fi
    echo "lintian: no errors"
fi
