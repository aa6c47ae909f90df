#pragma once
// Shared bits of the `myelin` subcommands: exit codes, a tiny option parser, messages.
#include <myelin/io/project.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace myelin::cli {

// Exit codes (documented in --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;   // invalid project, failed run, unreadable file
inline constexpr int kExitUsage = 2;   // bad command line
inline constexpr int kExitStopped = 3; // training stopped before the end (Ctrl-C, --max-steps)

// Thrown for a bad command line; main() prints it with a pointer to --help and exits 2.
struct UsageError {
    std::string message;
};

// "--name value" options and positional arguments. Flags listed in `flags` take no value.
class Args {
  public:
    Args(const std::vector<std::string_view>& args, const std::set<std::string>& options,
         const std::set<std::string>& flags = {});
    const std::vector<std::string>& positional() const { return positional_; }
    std::optional<std::string> get(const std::string& option) const;
    bool flag(const std::string& option) const { return flags_.count(option) > 0; }
    std::optional<int64_t> get_int(const std::string& option, int64_t min) const;

  private:
    std::vector<std::string> positional_;
    std::map<std::string, std::string> values_;
    std::set<std::string> flags_;
};

int cmd_check(const std::vector<std::string_view>& args);
int cmd_format(const std::vector<std::string_view>& args);
int cmd_train(const std::vector<std::string_view>& args);
int cmd_eval(const std::vector<std::string_view>& args);
int cmd_runs(const std::vector<std::string_view>& args);
int cmd_export(const std::vector<std::string_view>& args);
int cmd_import(const std::vector<std::string_view>& args);
int cmd_lr_find(const std::vector<std::string_view>& args);

// The project a checkpoint carries and the folder its data paths resolve in (recorded in the
// checkpoint; else the checkpoint's folder). Throws myelin::Error for an older checkpoint
// without a project.
std::pair<io::Project, std::filesystem::path>
checkpoint_project(const std::filesystem::path& checkpoint);

} // namespace myelin::cli
