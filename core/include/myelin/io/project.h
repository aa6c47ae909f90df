#pragma once
// The project file (*.myelin): one JSON document holding the model graph, the data spec, the
// training spec and a free "ui" object the studio owns. Loading checks every field and reports
// the file with line:column (malformed JSON) or the JSON path of the bad field (e.g.
// "model.nodes[3].attrs.kernel_size") and what was expected. Saving is deterministic, so
// save -> load -> save gives the same bytes.
#include <myelin/error.h>
#include <myelin/graph/attributes.h>
#include <myelin/graph/model_spec.h>
#include <myelin/spec/training.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::io {

// The newest version this build reads; files with a larger format_version are refused.
// Version 2 adds edges from an output port other than 0 ("from_port"): a file is written with
// the lowest version that holds it (required_format_version), so files without such edges stay
// version 1, byte for byte, and a reader of version 1 refuses a version-2 file by its version
// instead of meeting an unknown field.
// Version 3 adds training.device other than "cpu" and training.precision "float16".
// Version 4 adds training.flush_denormal.
// Version 5 adds training.deterministic and training.allow_tf32.
// Version 6 adds training.init_weights.
inline constexpr int kProjectFormatVersion = 6;

struct Project {
    int format_version = kProjectFormatVersion;
    std::string name;
    std::string description;
    graph::ModelSpec model;
    spec::DataSpec data; // spec/training.h
    spec::TrainSpec train;
    std::string ui_json = "{}"; // the studio's object, kept verbatim (compact JSON text)
    bool operator==(const Project& other) const = default;
};

// Every load error: where (file, line/column or JSON path) and what was expected.
class ProjectError : public Error {
  public:
    ProjectError(std::string file, std::string location, std::string message);
    const std::string& file() const { return file_; }
    const std::string& location() const { return location_; } // "12:5" or "model.nodes[3].kind"
    const std::string& reason() const { return reason_; }

  private:
    std::string file_, location_, reason_;
};

// Parse and check a project. `source_name` names the text in messages (usually its path).
Project parse_project(std::string_view json_text, const std::string& source_name = "<project>");
Project load_project(const std::filesystem::path& path);
std::string serialize_project(const Project& project);
// The format_version serialize_project writes for `model`: 2 when an edge leaves from an output
// port other than 0, else 1.
inline int required_format_version(const graph::ModelSpec& model) {
    for (const auto& e : model.edges)
        if (e.from_port != 0) return 2;
    return 1;
}
// The format_version serialize_project writes for `project`: 6 when it names initial weights,
// 5 when its training asks for
// deterministic GPU kernels or TF32, 4 when it flushes denormals, 3 when it asks for a device
// other than the CPU or for float16, else the model's.
inline int required_format_version(const Project& project) {
    if (!project.train.init_weights.empty()) return 6;
    if (project.train.deterministic || project.train.allow_tf32) return 5;
    if (project.train.flush_denormal) return 4;
    if (project.train.device != "cpu" || project.train.precision == spec::Precision::Float16)
        return 3;
    return required_format_version(project.model);
}
// Writes to a temporary file in the same folder, then renames it over `path`: a failed save
// leaves the previous file intact.
void save_project(const Project& project, const std::filesystem::path& path);

// One difference between two projects: the JSON path of the value ("training.optimizer.lr",
// "model.nodes[3].kind") and its compact JSON text before and after ("(none)" where absent).
struct ProjectChange {
    std::string path;
    std::string before;
    std::string after;
    bool operator==(const ProjectChange& other) const = default;
};

// What differs between two projects as saved, value by value: objects member by member (in
// name order), arrays of objects element by element, arrays of scalars ("shape": [4]) as one value.
// What does not change training is left out: the studio's "ui" object and node positions.
// Texts longer than 200 characters are cut with "...".
std::vector<ProjectChange> project_changes(const Project& before, const Project& after);

} // namespace myelin::io
