// myelin: the headless command-line tool. Links only myelin_core (no Qt), so it runs on a
// cluster node without a display. Each subcommand is a thin layer over core.
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/version.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Exit codes (documented in --help).
constexpr int kExitOk = 0;
constexpr int kExitError = 1; // invalid project, failed run, unreadable file
constexpr int kExitUsage = 2; // bad command line

const char* const kUsage =
    "Usage: myelin <command> [arguments]\n"
    "\n"
    "Headless tool of Myelin Studio.\n"
    "\n"
    "Commands:\n"
    "  check PROJECT [--batch-size N]   validate a project and print its model summary\n"
    "                                   (per layer: kind, output shape, params, FLOPs)\n"
    "  format PROJECT...                rewrite project files in canonical form\n"
    "\n"
    "Options:\n"
    "  --version    print the version and the compute backends found\n"
    "  -h, --help   print this help\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  the project is invalid or a file could not be read or written\n"
    "  2  bad command line\n";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "myelin: %s\nTry 'myelin --help' for the commands.\n", message.c_str());
    return kExitUsage;
}

bool parse_int(std::string_view text, int64_t& out) {
    if (text.empty()) return false;
    char* end = nullptr;
    std::string s(text);
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (*end != '\0') return false;
    out = v;
    return true;
}

int cmd_check(const std::vector<std::string_view>& args) {
    std::string path;
    int64_t batch = 1;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--batch-size") {
            if (i + 1 >= args.size() || !parse_int(args[i + 1], batch) || batch < 1)
                return usage_error("--batch-size needs a positive integer");
            ++i;
        } else if (path.empty() && !args[i].starts_with("-")) {
            path = args[i];
        } else {
            return usage_error("check: unexpected argument '" + std::string(args[i]) + "'");
        }
    }
    if (path.empty()) return usage_error("check: which project? (myelin check PROJECT)");
    myelin::io::Project project;
    try {
        project = myelin::io::load_project(path);
    } catch (const myelin::Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    auto analysis = myelin::graph::analyze(project.model, batch);
    std::printf("%s%s%s\n\n", path.c_str(), project.name.empty() ? "" : ": ", project.name.c_str());
    std::fputs(myelin::graph::format_summary(project.model, analysis).c_str(), stdout);
    if (!analysis.ok()) {
        std::fprintf(stderr, "myelin: %s is invalid (%zu error(s))\n", path.c_str(),
                     analysis.error_count());
        return kExitError;
    }
    std::printf("\nOK\n");
    return kExitOk;
}

int cmd_format(const std::vector<std::string_view>& args) {
    if (args.empty()) return usage_error("format: which project files?");
    int status = kExitOk;
    for (auto arg : args) {
        std::string path(arg);
        try {
            myelin::io::save_project(myelin::io::load_project(path), path);
        } catch (const myelin::Error& e) {
            std::fprintf(stderr, "myelin: error: %s\n", e.what());
            status = kExitError;
        }
    }
    return status;
}

int run(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    const std::string_view command = argv[1];
    std::vector<std::string_view> args(argv + 2, argv + argc);
    if (command == "--version") {
        if (!args.empty()) return usage_error("unexpected argument '" + std::string(args[0]) + "'");
        std::printf("myelin %s\n", myelin::version());
        std::printf("backends: %s\n", myelin::backends_summary().c_str());
        return kExitOk;
    }
    if (command == "--help" || command == "-h") {
        std::fputs(kUsage, stdout);
        return kExitOk;
    }
    if (command == "check") return cmd_check(args);
    if (command == "format") return cmd_format(args);
    return usage_error("unknown command '" + std::string(command) + "'");
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
