// The core's folders form layers, and dependencies point down only (docs/architecture.md):
// every #include in core/<folder> (sources and public headers) names its own folder or one in a
// lower layer. The tensor core (tensor, autograd, backend) is one layer: a tensor records its
// autograd node and runs on a backend. Core never includes Qt. This test fails on any upward or
// circular dependency, naming the file, the line and the layers. The studio's rooms (ui/<room>/)
// are checked the same way against the table in docs/architecture.md, "Studio (ui/)".
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// Lower number: lower layer.
const std::map<std::string, int> kLayers = {
    {"tensor", 0}, {"autograd", 0}, {"backend", 0}, // the tensor core
    {"nn", 1},     {"optim", 2},    {"data", 3},    {"graph", 4}, {"spec", 5},
    {"io", 6},     {"store", 7},    {"dist", 8},    {"quant", 9}, {"train", 10},
    {"plugin", 11},
};

const fs::path kCore = fs::path(MYELIN_SOURCE_DIR) / "core";
const fs::path kStudio = fs::path(MYELIN_SOURCE_DIR) / "ui";

// Which other rooms a studio room may include ("room/header.h"); core is open to every room.
const std::map<std::string, std::set<std::string>> kRooms = {
    {"document", {}},
    {"widgets", {}},
    {"editor", {"document", "widgets"}},
    {"pages", {"document", "widgets"}},
    {"training", {"document", "widgets"}},
    {"inspect", {"widgets"}},
    {"eval", {"widgets", "inspect"}}, // the feature-map grid of inspect/
    {"runs", {"widgets", "inspect"}}, // inspect/'s read-only store connection
    {"shell", {"document", "widgets", "editor", "pages", "training", "inspect", "runs", "eval"}},
};

// The core folder a file belongs to: core/<folder>/... or core/include/myelin/<folder>/...;
// the top-level public headers (myelin/tensor.h, ...) are the tensor core's.
std::string folder_of(const fs::path& file) {
    const fs::path relative = fs::relative(file, kCore);
    auto it = relative.begin();
    if (*it == "include") {
        std::advance(it, 2); // include/myelin/
        const fs::path rest = fs::relative(file, kCore / "include" / "myelin");
        return std::distance(rest.begin(), rest.end()) == 1 ? "tensor" : it->string();
    }
    return it->string();
}

// An #include line: its delimiter ('<' or '"') and path; nullopt for any other line. (A
// hand-written scan: std::regex trips gcc 12's -Wmaybe-uninitialized under the ASan preset.)
struct Include {
    char delimiter;
    std::string path;
};
std::optional<Include> parse_include(const std::string& line) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') return std::nullopt;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) return std::nullopt;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || (line[i] != '<' && line[i] != '"')) return std::nullopt;
    const char close = line[i] == '<' ? '>' : '"';
    const size_t end = line.find(close, i + 1);
    if (end == std::string::npos) return std::nullopt;
    return Include{line[i], line.substr(i + 1, end - i - 1)};
}

// The first folder of an include path ("train/x.h" -> "train"; <myelin/io/x.h> -> "io" when
// `skip_myelin`); empty when the path has no folder or the folder is not [a-z_]+.
std::string first_folder(std::string path, bool skip_myelin) {
    if (skip_myelin && path.rfind("myelin/", 0) == 0) path = path.substr(7);
    const size_t slash = path.find('/');
    if (slash == std::string::npos || slash == 0) return {};
    const std::string folder = path.substr(0, slash);
    for (char c : folder)
        if (!((c >= 'a' && c <= 'z') || c == '_')) return {};
    return folder;
}

} // namespace

class TestLayering : public QObject {
    Q_OBJECT

  private slots:
    void everyFolderHasALayer() {
        for (const auto& entry : fs::directory_iterator(kCore)) {
            const std::string name = entry.path().filename().string();
            if (!entry.is_directory() || name == "include") continue;
            QVERIFY2(kLayers.count(name),
                     qPrintable("core/" + QString::fromStdString(name) +
                                " has no layer in test_layering.cpp (and docs/architecture.md)"));
        }
        for (const auto& entry : fs::directory_iterator(kCore / "include" / "myelin"))
            if (entry.is_directory())
                QVERIFY2(kLayers.count(entry.path().filename().string()),
                         qPrintable(QString::fromStdString(entry.path().string())));
    }

    void dependenciesPointDown() {
        // <myelin/X/...> and "X/..." (core's private include root) name folder X.
        QStringList violations;
        int files = 0;
        for (const auto& entry : fs::recursive_directory_iterator(kCore)) {
            const std::string ext = entry.path().extension().string();
            if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu"))
                continue;
            ++files;
            const std::string from = folder_of(entry.path());
            const auto from_layer = kLayers.find(from);
            if (from_layer == kLayers.end()) continue; // everyFolderHasALayer reports it
            std::ifstream in(entry.path());
            std::string line;
            for (int number = 1; std::getline(in, line); ++number) {
                const QString where = QString::fromStdString(
                    fs::relative(entry.path(), kCore.parent_path()).string() + ":" +
                    std::to_string(number));
                const auto include = parse_include(line);
                if (!include) continue;
                if (include->delimiter == '<' && include->path.rfind('Q', 0) == 0)
                    violations << where + ": core includes Qt";
                const auto to_layer = kLayers.find(first_folder(include->path, true));
                if (to_layer == kLayers.end() || to_layer->first == from) continue;
                if (to_layer->second > from_layer->second ||
                    (to_layer->second == from_layer->second && from_layer->second != 0))
                    violations << where + ": " + QString::fromStdString(from) + " (layer " +
                                      QString::number(from_layer->second) + ") includes " +
                                      QString::fromStdString(to_layer->first) + " (layer " +
                                      QString::number(to_layer->second) + ")";
            }
        }
        QVERIFY(files > 100);
        QVERIFY2(violations.isEmpty(), qPrintable(violations.join('\n')));
    }

    void studioRoomsIncludeOnlyTheirNeighbours() {
        QStringList violations;
        int files = 0;
        for (const auto& entry : fs::directory_iterator(kStudio)) {
            if (!entry.is_directory()) continue;
            const std::string room = entry.path().filename().string();
            const auto allowed = kRooms.find(room);
            if (allowed == kRooms.end()) {
                violations << QString::fromStdString("ui/" + room +
                                                     " is not a room in test_layering.cpp");
                continue;
            }
            for (const auto& file : fs::recursive_directory_iterator(entry.path())) {
                if (!file.is_regular_file()) continue;
                ++files;
                std::ifstream in(file.path());
                std::string line;
                for (int number = 1; std::getline(in, line); ++number) {
                    const auto include = parse_include(line);
                    if (!include || include->delimiter != '"') continue;
                    const std::string to = first_folder(include->path, false);
                    if (to.empty() || to == room || allowed->second.count(to)) continue;
                    violations << QString::fromStdString(
                        fs::relative(file.path(), kStudio.parent_path()).string() + ":" +
                        std::to_string(number) + ": " + room + " includes " + to);
                }
            }
        }
        QVERIFY(files > 40);
        QVERIFY2(violations.isEmpty(), qPrintable(violations.join('\n')));
    }
};

QTEST_GUILESS_MAIN(TestLayering)
#include "test_layering.moc"
