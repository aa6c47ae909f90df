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
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// Lower number: lower layer.
const std::map<std::string, int> kLayers = {
    {"tensor", 0}, {"autograd", 0}, {"backend", 0}, // the tensor core
    {"nn", 1},     {"optim", 2},    {"data", 3},    {"graph", 4},
    {"spec", 5},   {"io", 6},       {"store", 7},   {"train", 8},
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
    {"shell", {"document", "widgets", "editor", "pages", "training", "inspect"}},
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
        const std::regex include("^\\s*#\\s*include\\s*[<\"](?:myelin/)?([a-z_]+)/");
        const std::regex qt("^\\s*#\\s*include\\s*<Q");
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
                if (std::regex_search(line, qt)) violations << where + ": core includes Qt";
                std::smatch m;
                if (!std::regex_search(line, m, include)) continue;
                const auto to_layer = kLayers.find(m[1].str());
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
        const std::regex include("^\\s*#\\s*include\\s*\"([a-z_]+)/");
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
                    std::smatch m;
                    if (!std::regex_search(line, m, include)) continue;
                    const std::string to = m[1].str();
                    if (to == room || allowed->second.count(to)) continue;
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
