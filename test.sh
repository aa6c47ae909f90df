#!/usr/bin/env bash
# Install missing Debian packages, build Myelin Studio (Release) and run the whole ctest suite.
# Extra arguments go to ctest, e.g. ./test.sh -R cli
#
#   ./test.sh --asan [ctest args]   the same suite built with AddressSanitizer + UBSan (leak
#                                   detection on) into build-asan/ (the CMake preset "asan")
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
# shellcheck source=scripts/build.sh
source scripts/build.sh

myelin_ensure_deps
export QT_QPA_PLATFORM=offscreen

if [[ "${1:-}" == "--asan" ]]; then
    shift
    cmake --preset asan
    cmake --build --preset asan -j"$(nproc)"
    status=0
    # The preset's environment: leaks reported, the first sanitizer finding ends the test.
    ctest --preset asan -j"$(nproc)" "$@" || status=$?
    exit "$status"
fi

# shellcheck disable=SC2119 # myelin_build takes extra cmake --build arguments, none here
myelin_build

status=0
ctest --test-dir "$MYELIN_BUILD_DIR" --output-on-failure -j"$(nproc)" "$@" || status=$?
exit "$status"
