#!/usr/bin/env bash
# Random input over the studio for longer than ctest's short run (issue 41): the test_monkey
# executable, in a real X window under Xvfb (QT_QPA_PLATFORM=xcb), for SECONDS with SEED.
#
#   scripts/monkey.sh SECONDS SEED [BUILD_DIR]    BUILD_DIR defaults to build/; an ASan build
#                                                 (build-asan/ with the UI on) works too
#
# Builds only the test_monkey target of BUILD_DIR. Prints the seed (to replay a failure: the same
# SECONDS and SEED) and, when the run fails or crashes, the last events of its log. Everything
# the studio writes stays in a temporary folder; the log is kept when the run fails.
set -euo pipefail

usage() {
    echo "usage: scripts/monkey.sh SECONDS SEED [BUILD_DIR]" >&2
    exit 2
}
(($# >= 2 && $# <= 3)) || usage
duration=$1
seed=$2
if ! [[ "$duration" =~ ^[1-9][0-9]{0,5}$ ]]; then
    echo "monkey.sh: SECONDS must be a whole number from 1 to 999999, got '$duration'" >&2
    exit 2
fi
if ! [[ "$seed" =~ ^[0-9]{1,10}$ ]] || ((10#$seed > 4294967295)); then
    echo "monkey.sh: SEED must be a whole number from 0 to 4294967295, got '$seed'" >&2
    exit 2
fi
seed=$((10#$seed))

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${3:-$source_dir/build}
[[ -f "$build_dir/CMakeCache.txt" ]] || {
    echo "monkey.sh: $build_dir is not a configured build directory" >&2
    exit 2
}
build_dir=$(cd "$build_dir" && pwd)
grep -q '^MYELIN_BUILD_UI:BOOL=ON$' "$build_dir/CMakeCache.txt" || {
    echo "monkey.sh: $build_dir is built without the studio (configure it with -DMYELIN_BUILD_UI=ON)" >&2
    exit 2
}
command -v xvfb-run >/dev/null || {
    echo "monkey.sh: xvfb-run is not installed (Debian: apt-get install xvfb)" >&2
    exit 2
}

cmake --build "$build_dir" --target test_monkey
executable=$build_dir/tests/ui/test_monkey
[[ -x "$executable" ]] || {
    echo "monkey.sh: $executable was not built" >&2
    exit 1
}

log_dir=$(mktemp -d "${TMPDIR:-/tmp}/myelin-monkey.XXXXXX")
log=$log_dir/events.log
echo "monkey.sh: seed $seed, $duration s, $executable under Xvfb; events in $log"

status=0
# The test's own timeout (Qt Test's watchdog, 5 min by default) must outlast the run.
QT_QPA_PLATFORM=xcb \
    QTEST_FUNCTION_TIMEOUT=$(((duration + 240) * 1000)) \
    MYELIN_MONKEY_SECONDS=$duration \
    MYELIN_MONKEY_SEED=$seed \
    MYELIN_MONKEY_LOG=$log \
    MYELIN_SOURCE_DIR=$source_dir \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    xvfb-run --auto-servernum --server-args="-screen 0 1600x1000x24" \
    "$executable" || status=$?

if ((status == 0)); then
    rm -rf "$log_dir"
    echo "monkey.sh: passed (seed $seed, $duration s)"
else
    echo "monkey.sh: FAILED with exit status $status (seed $seed, $duration s); the last events:"
    tail -n 30 "$log" || true
    echo "monkey.sh: replay: scripts/monkey.sh $duration $seed $build_dir   (whole log: $log)"
fi
exit "$status"
