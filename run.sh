#!/usr/bin/env bash
# Build Myelin Studio (installing missing Debian packages first) and start it.
#
#   ./run.sh                 open the studio on the bundled Fashion-MNIST example project
#   ./run.sh FILE.myelin     open the studio on FILE.myelin
#   ./run.sh --headless      build the command-line tool and train the example with it (no
#                            display needed); extra arguments go to `myelin train`
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
# shellcheck source=scripts/build.sh
source scripts/build.sh

headless=0
if [[ "${1:-}" == "--headless" ]]; then
    headless=1
    shift
fi

myelin_ensure_deps

if ((headless)); then
    myelin_build --target myelin
    "$MYELIN_BUILD_DIR/app/myelin" --version
    exec "$MYELIN_BUILD_DIR/app/myelin" train resources/examples/fashion_mlp.myelin "$@"
fi

# shellcheck disable=SC2119 # myelin_build takes extra cmake --build arguments, none here
myelin_build

# The example plugin (plugins/example: a SqueezeExcitation layer) is built with the studio; its
# folder goes first on the plugin path so the palette offers it and its example project opens.
plugin_dir="$MYELIN_BUILD_DIR/plugins"
[[ "$plugin_dir" == /* ]] || plugin_dir="$PWD/$plugin_dir"
export MYELIN_PLUGIN_PATH="$plugin_dir${MYELIN_PLUGIN_PATH:+:$MYELIN_PLUGIN_PATH}"

if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" && -z "${QT_QPA_PLATFORM:-}" ]]; then
    echo "myelin: no display found (DISPLAY and WAYLAND_DISPLAY are unset)." >&2
    echo "myelin: run it from a desktop session, wrap it as 'xvfb-run ./run.sh'," \
        "or use './run.sh --headless' for the command-line tool." >&2
    exit 1
fi

if (($# > 0)); then
    exec "$MYELIN_BUILD_DIR/app/myelin-studio" "$@"
fi
exec "$MYELIN_BUILD_DIR/app/myelin-studio" resources/examples/fashion_mlp.myelin
