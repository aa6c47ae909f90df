#pragma once
// Finding and loading plugins (myelin/plugin/plugin.h). A bad plugin never takes the program
// down: it is reported with its file and what is wrong, and nothing of it is registered.
#include <filesystem>
#include <string>
#include <vector>

namespace myelin::plugin {

struct PluginInfo {
    std::string path; // the shared library
    std::string name, version, description;
    std::vector<std::string> kinds; // "layer SqueezeExcitation", "loss FocalLoss", ...
};

struct PluginProblem {
    std::string path;
    std::string message; // names the file and what is wrong
};

struct LoadReport {
    std::vector<PluginInfo> loaded;
    std::vector<PluginProblem> problems;
};

// The folders searched, in order: each entry of $MYELIN_PLUGIN_PATH (':'-separated), then
// ~/.local/share/myelin/plugins, then the install's plugin folder
// (<prefix>/<libdir>/myelin/plugins, found from the running executable's location).
std::vector<std::filesystem::path> plugin_search_path();

// Loads every "*.so" file in `folders` (sorted by name within a folder; a file name found in an
// earlier folder hides the same name in later ones). Folders that do not exist are skipped. A
// file already loaded by this process is not loaded again.
LoadReport load_plugins(const std::vector<std::filesystem::path>& folders);
// load_plugins(plugin_search_path()).
LoadReport load_plugins();

// Loads one file; the report holds either its info or its problem.
LoadReport load_plugin(const std::filesystem::path& file);

// Everything this process has loaded or refused so far.
LoadReport plugin_report();

} // namespace myelin::plugin
