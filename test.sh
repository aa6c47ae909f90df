#!/usr/bin/env bash
# Install missing Debian packages, build Myelin Studio (Release) and run the whole ctest suite.
# Extra arguments go to ctest, e.g. ./test.sh -R cli
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
# shellcheck source=scripts/build.sh
source scripts/build.sh

myelin_ensure_deps
# shellcheck disable=SC2119 # myelin_build takes extra cmake --build arguments, none here
myelin_build

export QT_QPA_PLATFORM=offscreen
status=0
ctest --test-dir "$MYELIN_BUILD_DIR" --output-on-failure -j"$(nproc)" "$@" || status=$?
exit "$status"
