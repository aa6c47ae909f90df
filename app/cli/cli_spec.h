#pragma once
// The one description of the `myelin` command line (issue 43): every command, its arguments and
// options with their help, as a CLI11 App tree. The parser, each command's --help, the man page
// and the bash completion are all made from it, so they cannot drift apart.
//
// Texts are plain, in a small markup the help, the man page and the completion all read: a
// command's description is its one-line summary, then paragraphs separated by blank lines; a
// footer's paragraph whose first line ends in ':' is a titled list of "TAG\tTEXT" lines. A value's
// metavariable says what the value is (cli_docs.cpp, value kinds): PROJECT, RUN, FILE, DIR, words
// like cpu|cuda, or a name for text and numbers (N, X, NAME).
#include "cli_common.h"

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace myelin::cli {

using Handler = int (*)(const Args&);

struct CommandLine {
    std::unique_ptr<CLI::App> app;               // "myelin", its commands and their options
    std::map<const CLI::App*, Handler> handlers; // what each command runs
};

// Every command, its arguments, options and help (cli_spec.cpp).
CommandLine describe_command_line();

// Made from the description (cli_docs.cpp).
std::shared_ptr<CLI::FormatterBase> help_formatter(); // --help of myelin and of each command
std::string man_page(const CLI::App& root);           // myelin(1) in roff
std::string bash_completion(const CLI::App& root);    // bash-completion/completions/myelin
std::string command_path(const CLI::App& app);        // "myelin runs list"

// The candidate closest to `typed` (a typo or two away, or the one it begins), if one is close.
std::optional<std::string> nearest(const std::string& typed,
                                   const std::vector<std::string>& candidates);

} // namespace myelin::cli
