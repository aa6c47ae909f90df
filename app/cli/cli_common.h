#pragma once
// Shared bits of the `myelin` subcommands: exit codes, their parsed arguments, messages.
#include <myelin/io/project.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace myelin::cli {

// Exit codes (documented in --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;   // invalid project, failed run, unreadable file
inline constexpr int kExitUsage = 2;   // bad command line
inline constexpr int kExitStopped = 3; // training stopped before the end (Ctrl-C, --max-steps)

// Thrown for a bad command line; run_cli prints it with a pointer to the command's --help and
// exits 2.
struct UsageError {
    std::string message;
};

// A command's arguments as the command line gave them, read from the parsed description
// (cli_run.cpp): values by every name of their option ("-o" and "--output"), flags given.
class Args {
  public:
    Args() = default;
    Args(std::vector<std::string> positional, std::map<std::string, std::string> values,
         std::set<std::string> flags)
        : positional_(std::move(positional)), values_(std::move(values)), flags_(std::move(flags)) {
    }
    const std::vector<std::string>& positional() const { return positional_; }
    std::optional<std::string> get(const std::string& option) const;
    bool flag(const std::string& option) const { return flags_.count(option) > 0; }
    std::optional<int64_t> get_int(const std::string& option, int64_t min) const;
    // A finite number > 0 (a learning rate); a UsageError names the option otherwise.
    std::optional<double> get_positive(const std::string& option) const;

  private:
    std::vector<std::string> positional_;
    std::map<std::string, std::string> values_;
    std::set<std::string> flags_;
};

int cmd_check(const Args& args);
int cmd_format(const Args& args);
int cmd_plugins(const Args& args);
int cmd_train(const Args& args);
int cmd_eval(const Args& args);
int cmd_runs_list(const Args& args);
int cmd_runs_show(const Args& args);
int cmd_runs_layers(const Args& args);
int cmd_runs_export_csv(const Args& args);
int cmd_runs_delete(const Args& args);
int cmd_export(const Args& args);
int cmd_import(const Args& args);
int cmd_lr_find(const Args& args);
int cmd_quantize(const Args& args);

// Parses the command line against its one description (cli_spec.cpp), prints help, usage errors
// and the generated documents, and runs the command. Returns the exit code.
int run_cli(int argc, char** argv);

// The project a checkpoint carries and the folder its data paths resolve in (recorded in the
// checkpoint; else the checkpoint's folder). Throws myelin::Error for an older checkpoint
// without a project.
std::pair<io::Project, std::filesystem::path>
checkpoint_project(const std::filesystem::path& checkpoint);

} // namespace myelin::cli
