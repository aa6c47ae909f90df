// `myelin`'s command line parsed against its description (cli_spec.cpp, CLI11): help, usage
// errors that name the nearest option or command, the generated documents, then the command.
#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/plugin/loader.h>
#include <myelin/version.h>

#include "cli_spec.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace myelin::cli {

namespace {

// The command the command line chose: the last one parsed, e.g. `runs list`.
const CLI::App* chosen(const CLI::App& root) {
    const CLI::App* app = &root;
    for (;;) {
        const auto parsed = app->get_subcommands();
        if (parsed.empty()) return app;
        app = parsed.front();
    }
}

bool looks_like_option(const std::string& word) {
    return word.size() > 1 && word[0] == '-' && !(word[1] >= '0' && word[1] <= '9');
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_positional() || o->get_group().empty()) continue;
        for (const auto& n : o->get_lnames())
            names.push_back("--" + n);
        for (const auto& n : o->get_snames())
            names.push_back("-" + n);
    }
    return names;
}

std::vector<std::string> command_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    return names;
}

// "train: " before a command's messages ("" before myelin's own).
std::string prefix_of(const CLI::App& app) {
    return app.get_parent() ? command_path(app).substr(7) + ": " : "";
}

std::string with_suggestion(std::string message, const std::string& typed,
                            const std::vector<std::string>& candidates) {
    if (auto near = nearest(typed, candidates)) message += "; did you mean '" + *near + "'?";
    return message;
}

// What is wrong with a word `app` did not take: an unknown option (with the nearest one), an
// unknown command or action (with the nearest one), or an argument too many.
std::optional<std::string> unexpected(const CLI::App& root, const CLI::App& app) {
    const std::string prefix = prefix_of(app);
    const std::vector<std::string> left = app.remaining();
    for (const std::string& word : left)
        if (looks_like_option(word) && word != "--") {
            const std::string name = word.substr(0, word.find('='));
            if (&app == &root && app.get_subcommands().empty()) {
                std::vector<std::string> candidates = option_names(app);
                for (const auto& c : command_names(app))
                    candidates.push_back(c);
                return with_suggestion("unknown command '" + word + "'", name, candidates);
            }
            return with_suggestion(prefix + "unknown option '" + name + "'", name,
                                   option_names(app));
        }
    for (const std::string& word : left) {
        if (word == "--") continue;
        if (&app == &root && app.count("--version") == 0)
            return with_suggestion("unknown command '" + word + "'", word, command_names(app));
        if (&app != &root && !command_names(app).empty() && app.get_subcommands().empty())
            return with_suggestion(prefix + "unknown action '" + word + "'", word,
                                   command_names(app));
        return prefix + "unexpected argument '" + word + "'";
    }
    return std::nullopt;
}

// What was wrong with the command line, said for a person: what a command did not take first,
// else CLI11's own message (a missing argument or value). `blamed` is set to the command whose
// --help the message points to.
std::string usage_message(const CLI::App& root, const CLI::Error& error, const CLI::App*& blamed) {
    const CLI::App* app = chosen(root);
    std::vector<const CLI::App*> chain;
    for (const CLI::App* a = app; a; a = a->get_parent())
        chain.insert(chain.begin(), a);
    blamed = app;
    for (const CLI::App* a : chain)
        if (auto message = unexpected(root, *a)) {
            blamed = a;
            return *message;
        }
    const std::string prefix = prefix_of(*app);
    if (app != &root && app->get_subcommands().empty() && !command_names(*app).empty()) {
        std::string list;
        for (const auto& name : command_names(*app))
            list += (list.empty() ? "" : ", ") + name;
        return prefix + "which action? (" + list + ")";
    }
    std::string text = error.what();
    // "--epochs: 1 required TEXT missing" as the hand-written parser said it.
    if (error.get_name() == "ArgumentMismatch" && text.find(" missing") != std::string::npos)
        return prefix + text.substr(0, text.find(':')) + " needs a value";
    return prefix + text;
}

int usage_error(const std::string& message, const CLI::App& app) {
    const std::string path = command_path(app);
    std::fprintf(stderr, "myelin: %s\nTry '%s --help' for %s.\n", message.c_str(), path.c_str(),
                 path == "myelin" ? "the commands" : "its options");
    return kExitUsage;
}

// The chosen command's arguments: its options' values under every name of the option, with an
// outer command's (`runs --store FILE list`) unless the command gives its own.
Args arguments_of(const CLI::App& root, const CLI::App& command) {
    std::vector<const CLI::App*> chain;
    for (const CLI::App* a = &command; a && a != &root; a = a->get_parent())
        chain.insert(chain.begin(), a);
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;
    std::set<std::string> flags;
    for (const CLI::App* a : chain)
        for (const CLI::Option* o : a->get_options()) {
            if (o->count() == 0) continue;
            if (o->get_positional()) {
                for (const auto& v : o->results())
                    positional.push_back(v);
                continue;
            }
            std::vector<std::string> names;
            for (const auto& n : o->get_lnames())
                names.push_back("--" + n);
            for (const auto& n : o->get_snames())
                names.push_back("-" + n);
            for (const auto& n : names) {
                if (o->get_items_expected_max() == 0) // a flag
                    flags.insert(n);
                else if (!o->results().empty())
                    values[n] = o->results().back();
            }
        }
    return Args(std::move(positional), std::move(values), std::move(flags));
}

int print_version(const CLI::App& root) {
    if (chosen(root) != &root)
        throw UsageError{"unexpected argument '" + chosen(root)->get_name() + "'"};
    std::printf("myelin %s\n", version());
    std::printf("backends: %s\n", backends_summary().c_str());
    for (const std::string& line : describe_devices())
        std::printf("%s\n", line.c_str());
    return kExitOk;
}

} // namespace

std::optional<std::string> Args::get(const std::string& option) const {
    auto it = values_.find(option);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::optional<int64_t> Args::get_int(const std::string& option, int64_t min) const {
    auto v = get(option);
    if (!v) return std::nullopt;
    char* end = nullptr;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || x < min)
        throw UsageError{option + " needs an integer >= " + std::to_string(min) + ", got '" + *v +
                         "'"};
    return x;
}

std::optional<double> Args::get_positive(const std::string& option) const {
    auto v = get(option);
    if (!v) return std::nullopt;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(x) || x <= 0)
        throw UsageError{option + " needs a number > 0, got '" + *v + "'"};
    return x;
}

int run_cli(int argc, char** argv) {
    const CommandLine line = describe_command_line();
    CLI::App& root = *line.app;
    if (argc < 2) {
        std::fputs(root.help().c_str(), stderr);
        return kExitUsage;
    }
    try {
        root.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(root.help().c_str(), stdout); // the chosen command's own
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        const CLI::App* blamed = &root;
        const std::string message = usage_message(root, e, blamed);
        return usage_error(message, *blamed);
    }
    const CLI::App& command = *chosen(root);
    try {
        if (root.count("--generate-man")) {
            std::fputs(man_page(root).c_str(), stdout);
            return kExitOk;
        }
        if (root.count("--generate-bash-completion")) {
            std::fputs(bash_completion(root).c_str(), stdout);
            return kExitOk;
        }
        if (root.count("--version")) return print_version(root);
        const auto handler = line.handlers.find(&command);
        if (handler == line.handlers.end()) { // `myelin` or `myelin --` alone
            std::fputs(root.help().c_str(), stderr);
            return kExitUsage;
        }
        // Plugins first: project files may name their kinds. A refused plugin is a warning
        // here; `myelin plugins` lists it.
        const plugin::LoadReport plugins = plugin::load_plugins();
        if (handler->second != cmd_plugins)
            for (const auto& problem : plugins.problems)
                std::fprintf(stderr, "myelin: warning: %s\n", problem.message.c_str());
        return handler->second(arguments_of(root, command));
    } catch (const UsageError& e) {
        return usage_error(e.message, command);
    }
}

} // namespace myelin::cli
