// myelin: the headless command-line tool. Links only myelin_core (no Qt), so it runs on a
// cluster node without a display. Training from the command line arrives with the training
// engine; today the tool reports its version and the compute backends it finds.
#include <myelin/device.h>
#include <myelin/version.h>

#include <cstdio>
#include <exception>
#include <string_view>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

void print_usage(std::FILE* out) {
    std::fprintf(out, "Usage: myelin <option>\n"
                      "\n"
                      "Headless tool of Myelin Studio.\n"
                      "\n"
                      "Options:\n"
                      "  --version    print the version and the compute backends found\n"
                      "  -h, --help   print this help\n");
}

void print_version() {
    std::printf("myelin %s\n", myelin::version());
    std::printf("backends: %s\n", myelin::backends_summary().c_str());
}

int usage_error(const char* message, std::string_view argument) {
    std::fprintf(stderr, "myelin: %s '%.*s'\n", message, static_cast<int>(argument.size()),
                 argument.data());
    std::fprintf(stderr, "Try 'myelin --help' for the options.\n");
    return kExitUsage;
}

int run(int argc, char** argv) {
    if (argc < 2) {
        print_usage(stderr);
        return kExitUsage;
    }
    if (argc > 2) return usage_error("unexpected argument", argv[2]);

    const std::string_view arg = argv[1];
    if (arg == "--version") {
        print_version();
        return kExitOk;
    }
    if (arg == "--help" || arg == "-h") {
        print_usage(stdout);
        return kExitOk;
    }
    return usage_error("unknown argument", arg);
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
}
