// A shared library that is not a plugin: no entry points.
extern "C" __attribute__((visibility("default"))) int some_other_library_function() {
    return 42;
}
