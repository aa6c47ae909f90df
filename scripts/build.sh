# shellcheck shell=bash
# Configure and build Myelin Studio (Release, Ninja) into build/. Sourced by run.sh and test.sh.
#
#   myelin_build [cmake --build arguments...]   e.g. myelin_build --target myelin

MYELIN_BUILD_DIR=${MYELIN_BUILD_DIR:-build}

myelin_build() {
    local jobs
    jobs=$(nproc)

    if [[ -f "$MYELIN_BUILD_DIR/CMakeCache.txt" ]] &&
        ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$MYELIN_BUILD_DIR/CMakeCache.txt"; then
        echo "myelin: $MYELIN_BUILD_DIR/ was configured with another generator;" \
            "remove it (rm -rf $MYELIN_BUILD_DIR) and run again" >&2
        exit 1
    fi

    local configure=(cmake -S . -B "$MYELIN_BUILD_DIR" -G Ninja
        -DCMAKE_BUILD_TYPE=Release
        -DMYELIN_CUDA=AUTO)
    # Always pass it explicitly: a value left in the cache would otherwise outlive the check.
    if [[ -f bench/CMakeLists.txt ]]; then
        configure+=(-DMYELIN_BUILD_BENCH=ON)
    else
        configure+=(-DMYELIN_BUILD_BENCH=OFF)
    fi

    echo "myelin: configuring (${configure[*]})"
    "${configure[@]}"
    echo "myelin: building with $jobs jobs"
    cmake --build "$MYELIN_BUILD_DIR" -j"$jobs" "$@"
}
