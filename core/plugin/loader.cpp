// Loading plugins: dlopen, check the entry points, the interface version and the C++ ABI, run
// the registration function into a Registry, then check every kind and register them all. A
// plugin's factories are wrapped so that anything they throw becomes a myelin::Error naming the
// plugin and the kind (the studio and the CLI report Errors; nothing else may escape).
#include <myelin/error.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optimizer.h>
#include <myelin/optim/scheduler.h>
#include <myelin/plugin/loader.h>
#include <myelin/plugin/plugin.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>

#ifndef MYELIN_INSTALL_PLUGIN_DIR
#define MYELIN_INSTALL_PLUGIN_DIR "lib/myelin/plugins"
#endif

namespace myelin::plugin {

namespace fs = std::filesystem;

// --- Registry (what the plugin's function calls) -------------------------------------------

namespace {
template <class Kind> void add_unique(std::vector<Kind>& kinds, Kind kind, const char* family) {
    for (const Kind& k : kinds)
        if (k.name == kind.name)
            throw Error(std::string(family) + " '" + kind.name + "' is added twice");
    kinds.push_back(std::move(kind));
}
} // namespace

void Registry::set_info(std::string plugin_name, std::string plugin_version,
                        std::string plugin_description) {
    name = std::move(plugin_name);
    version = std::move(plugin_version);
    description = std::move(plugin_description);
}
void Registry::add(graph::LayerKind kind) {
    add_unique(layers, std::move(kind), "layer kind");
}
void Registry::add(spec::LossKind kind) {
    add_unique(losses, std::move(kind), "loss");
}
void Registry::add(spec::OptimizerKind kind) {
    add_unique(optimizers, std::move(kind), "optimizer");
}
void Registry::add(spec::SchedulerKind kind) {
    add_unique(schedulers, std::move(kind), "scheduler");
}
void Registry::add(spec::DataSourceKind kind) {
    add_unique(data_sources, std::move(kind), "data source");
}
void Registry::add(spec::TransformKind kind) {
    add_unique(transforms, std::move(kind), "transform");
}
void Registry::add(spec::MetricKind kind) {
    add_unique(metrics, std::move(kind), "metric");
}

namespace {

// --- guarding a plugin's functions -----------------------------------------------------------

// Calls `f`; a myelin::Error passes unchanged (shape errors are shown on the node as they are),
// anything else becomes an Error saying which plugin's kind threw it.
template <class F> auto guarded(const std::string& who, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error(who + ": " + e.what());
    } catch (...) {
        throw Error(who + ": threw something that is not a std::exception");
    }
}

// Wraps a std::function so every call goes through guarded().
template <class R, class... Args>
std::function<R(Args...)> guard(std::function<R(Args...)> f, const std::string& who) {
    if (!f) return f;
    return [f = std::move(f), who](Args... args) -> R {
        return guarded(who, [&]() -> R { return f(std::forward<Args>(args)...); });
    };
}

void guard_kind(graph::LayerKind& k, const std::string& file) {
    const std::string who = "plugin " + file + ", layer kind " + k.name;
    k.infer = guard(std::move(k.infer), who);
    k.param_count = guard(std::move(k.param_count), who);
    k.flops = guard(std::move(k.flops), who);
    k.build = guard(std::move(k.build), who);
}
void guard_kind(spec::LossKind& k, const std::string& file) {
    k.build = guard(std::move(k.build), "plugin " + file + ", loss " + k.name);
}
void guard_kind(spec::OptimizerKind& k, const std::string& file) {
    k.build = guard(std::move(k.build), "plugin " + file + ", optimizer " + k.name);
}
void guard_kind(spec::SchedulerKind& k, const std::string& file) {
    const std::string who = "plugin " + file + ", scheduler " + k.name;
    k.build = guard(std::move(k.build), who);
    k.build_metric_driven = guard(std::move(k.build_metric_driven), who);
}
void guard_kind(spec::DataSourceKind& k, const std::string& file) {
    k.load = guard(std::move(k.load), "plugin " + file + ", data source " + k.name);
}
void guard_kind(spec::TransformKind& k, const std::string& file) {
    k.build = guard(std::move(k.build), "plugin " + file + ", transform " + k.name);
}
void guard_kind(spec::MetricKind& k, const std::string& file) {
    k.build = guard(std::move(k.build), "plugin " + file + ", metric " + k.name);
}

void check(const graph::LayerKind& k) {
    graph::check_layer_kind(k);
}
template <class Kind> void check(const Kind& k) {
    spec::check_kind(k);
}
void add(graph::LayerKind k) {
    graph::register_layer_kind(std::move(k));
}
template <class Kind> void add(Kind k) {
    spec::register_kind(std::move(k));
}

// Every kind of `registry` checked first (so a refusal registers nothing), then registered.
template <class Kind>
void prepare(std::vector<Kind>& kinds, const std::string& file, const char* family,
             std::vector<std::string>& names) {
    for (Kind& k : kinds) {
        k.origin = file;
        check(k);
        guard_kind(k, file);
        names.push_back(std::string(family) + " " + k.name);
    }
}
template <class Kind> void register_all(std::vector<Kind>& kinds) {
    for (Kind& k : kinds)
        add(std::move(k));
}

// --- the process's record ----------------------------------------------------------------------

std::mutex& report_mutex() {
    static std::mutex m;
    return m;
}
LoadReport& process_report() {
    static LoadReport report;
    return report;
}
std::set<std::string>& attempted_files() {
    static std::set<std::string> files;
    return files;
}

PluginProblem problem(const std::string& file, const std::string& what) {
    return {file, "plugin " + file + ": " + what};
}

// Loads `file` (canonical) into the registries; returns its info or throws PluginProblem.
PluginInfo load_file(const std::string& file) {
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        throw problem(file, std::string("cannot be loaded: ") + (why ? why : "unknown reason"));
    }
    // From here on the library stays loaded even when it is refused: a refused plugin's code is
    // never called again, and unloading code that may have left thread-locals or atexit handlers
    // behind is riskier than keeping a few pages mapped.
    auto version = reinterpret_cast<int (*)()>(dlsym(handle, "myelin_plugin_abi_version"));
    auto cxx_abi = reinterpret_cast<const char* (*)()>(dlsym(handle, "myelin_plugin_cxx_abi"));
    auto entry = reinterpret_cast<void (*)(Registry&)>(dlsym(handle, "myelin_plugin_register"));
    if (!version || !entry)
        throw problem(file,
                      std::string("is not a Myelin plugin: it has no ") +
                          (!version ? "myelin_plugin_abi_version" : "myelin_plugin_register") +
                          " entry point (a plugin ends with MYELIN_PLUGIN(its_function))");
    if (int v = version(); v != MYELIN_PLUGIN_ABI_VERSION)
        throw problem(file, "was built for plugin interface version " + std::to_string(v) +
                                "; this Myelin needs version " +
                                std::to_string(MYELIN_PLUGIN_ABI_VERSION) +
                                ": rebuild it against this version's headers");
    if (std::string abi = cxx_abi ? cxx_abi() : "unknown"; abi != MYELIN_PLUGIN_CXX_ABI)
        throw problem(file, "was built with another C++ ABI (" + abi + ", this Myelin: " +
                                MYELIN_PLUGIN_CXX_ABI + "): rebuild it with this compiler");

    Registry registry;
    try {
        entry(registry);
    } catch (const std::exception& e) {
        throw problem(file, std::string("failed while adding its kinds: ") + e.what());
    } catch (...) {
        throw problem(file, "failed while adding its kinds (threw something that is not a "
                            "std::exception)");
    }

    PluginInfo info;
    info.path = file;
    info.name = registry.name.empty() ? fs::path(file).stem().string() : registry.name;
    info.version = registry.version;
    info.description = registry.description;
    try {
        prepare(registry.layers, file, "layer", info.kinds);
        prepare(registry.losses, file, "loss", info.kinds);
        prepare(registry.optimizers, file, "optimizer", info.kinds);
        prepare(registry.schedulers, file, "scheduler", info.kinds);
        prepare(registry.data_sources, file, "data source", info.kinds);
        prepare(registry.transforms, file, "transform", info.kinds);
        prepare(registry.metrics, file, "metric", info.kinds);
    } catch (const Error& e) {
        throw problem(file, std::string(e.what()) + "; nothing of this plugin was loaded");
    }
    if (info.kinds.empty()) throw problem(file, "adds no kinds");
    register_all(registry.layers);
    register_all(registry.losses);
    register_all(registry.optimizers);
    register_all(registry.schedulers);
    register_all(registry.data_sources);
    register_all(registry.transforms);
    register_all(registry.metrics);
    return info;
}

void append(LoadReport& to, const LoadReport& from) {
    to.loaded.insert(to.loaded.end(), from.loaded.begin(), from.loaded.end());
    to.problems.insert(to.problems.end(), from.problems.begin(), from.problems.end());
}

} // namespace

LoadReport load_plugin(const fs::path& path) {
    std::error_code ec;
    fs::path canonical = fs::canonical(path, ec);
    const std::string file = ec ? path.string() : canonical.string();
    LoadReport report;
    std::lock_guard lock(report_mutex());
    if (!attempted_files().insert(file).second) return report; // already loaded or refused
    if (ec) {
        report.problems.push_back(problem(file, "cannot be read: " + ec.message()));
    } else {
        try {
            report.loaded.push_back(load_file(file));
        } catch (const PluginProblem& p) {
            report.problems.push_back(p);
        }
    }
    append(process_report(), report);
    return report;
}

LoadReport load_plugins(const std::vector<fs::path>& folders) {
    LoadReport report;
    std::set<std::string> seen_names;
    for (const fs::path& folder : folders) {
        std::error_code ec;
        if (!fs::is_directory(folder, ec)) continue;
        std::vector<fs::path> files;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
            if (it->path().extension() == ".so" && !it->is_directory(ec))
                files.push_back(it->path());
        std::sort(files.begin(), files.end());
        for (const fs::path& f : files)
            if (seen_names.insert(f.filename().string()).second) append(report, load_plugin(f));
    }
    return report;
}

LoadReport load_plugins() {
    return load_plugins(plugin_search_path());
}

std::vector<fs::path> plugin_search_path() {
    std::vector<fs::path> folders;
    if (const char* env = std::getenv("MYELIN_PLUGIN_PATH")) {
        std::string list = env;
        for (size_t start = 0; start <= list.size();) {
            size_t end = list.find(':', start);
            if (end == std::string::npos) end = list.size();
            if (end > start) folders.emplace_back(list.substr(start, end - start));
            start = end + 1;
        }
    }
    if (const char* home = std::getenv("HOME"); home && *home)
        folders.push_back(fs::path(home) / ".local/share/myelin/plugins");
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
        folders.push_back(
            (exe.parent_path() / ".." / MYELIN_INSTALL_PLUGIN_DIR).lexically_normal());
    return folders;
}

LoadReport plugin_report() {
    std::lock_guard lock(report_mutex());
    return process_report();
}

} // namespace myelin::plugin
