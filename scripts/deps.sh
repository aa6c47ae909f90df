# shellcheck shell=bash
# Debian packages Myelin Studio needs to build, test and run. Sourced by run.sh and test.sh.
#
#   myelin_ensure_deps   installs whatever is missing (as root), or prints the apt-get command
#                        and exits 1 when run as another user.

MYELIN_DEBIAN_PACKAGES=(
    build-essential
    cmake
    ninja-build
    ccache
    pkg-config
    qt6-base-dev
    libqcustomplot-dev
    libsqlite3-dev
    nlohmann-json3-dev
    libcli11-dev      # the myelin CLI's options, help, man page and completion (header-only)
    libopenblas-openmp-dev
    libdnnl-dev
    ocl-icd-opencl-dev # oneDNN's CMake package config looks for OpenCL (only Recommended)
    libbenchmark-dev
    zlib1g-dev
    libpng-dev
    libjpeg62-turbo-dev
    libgl-dev
    dataset-fashion-mnist
    libonnx-dev       # myelin_export: ONNX's protobuf classes, checker and shape inference
    libprotobuf-dev   # the headers ONNX's generated classes include (libonnx-dev lacks the dependency)
    libopencv-dnn-dev # tests/export run the exported ONNX models with OpenCV's DNN module
    libopenmpi-dev openmpi-bin # data-parallel training over MPI (core/dist, tests/dist)
    # Word lists under /usr/share/dict: the word-language example (resources/examples)
    wamerican wngerman wfrench witalian wspanish wportuguese wdutch wswedish
)

# Prints the packages from MYELIN_DEBIAN_PACKAGES that dpkg does not report as installed.
myelin_missing_packages() {
    local pkg status
    for pkg in "${MYELIN_DEBIAN_PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
        if [[ "$status" != "installed" ]]; then
            echo "$pkg"
        fi
    done
}

myelin_ensure_deps() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "myelin: dpkg-query not found; this script expects Debian 12 (or a derivative)." >&2
        echo "myelin: install these packages by other means: ${MYELIN_DEBIAN_PACKAGES[*]}" >&2
        return 1
    fi

    local missing
    mapfile -t missing < <(myelin_missing_packages)
    if ((${#missing[@]} == 0)); then
        echo "myelin: all ${#MYELIN_DEBIAN_PACKAGES[@]} required Debian packages are installed"
        return 0
    fi

    if [[ $(id -u) -ne 0 ]]; then
        echo "myelin: missing Debian packages: ${missing[*]}" >&2
        echo "myelin: run this as root, then try again:" >&2
        echo "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi

    echo "myelin: installing missing Debian packages: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}
