// project_changes: what a fork changed from its parent's project, value by value.
#include <myelin/io/project.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace myelin::io {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxText = 200;

std::string text_of(const json* value) {
    if (!value) return "(none)";
    std::string text = value->dump();
    if (text.size() > kMaxText) text = text.substr(0, kMaxText - 3) + "...";
    return text;
}

bool scalar_array(const json& value) {
    return value.is_array() && std::none_of(value.begin(), value.end(), [](const json& v) {
               return v.is_object() || v.is_array();
           });
}

// Node positions and the studio's own object move nothing in training.
bool ignored(const std::string& path, const std::string& key) {
    if (path.empty()) return key == "ui";
    return key == "position" && path.starts_with("model.nodes[");
}

void compare(const std::string& path, const json* a, const json* b,
             std::vector<ProjectChange>& out) {
    if (a && b && *a == *b) return;
    if (a && b && a->is_object() && b->is_object()) {
        for (const auto& [key, value] : a->items()) {
            if (ignored(path, key)) continue;
            auto other = b->find(key);
            compare(path.empty() ? key : path + "." + key, &value,
                    other == b->end() ? nullptr : &*other, out);
        }
        for (const auto& [key, value] : b->items())
            if (!a->contains(key) && !ignored(path, key))
                compare(path.empty() ? key : path + "." + key, nullptr, &value, out);
        return;
    }
    if (a && b && a->is_array() && b->is_array() && !(scalar_array(*a) && scalar_array(*b))) {
        const size_t n = std::max(a->size(), b->size());
        for (size_t i = 0; i < n; ++i)
            compare(path + "[" + std::to_string(i) + "]", i < a->size() ? &(*a)[i] : nullptr,
                    i < b->size() ? &(*b)[i] : nullptr, out);
        return;
    }
    out.push_back({path, text_of(a), text_of(b)});
}

} // namespace

std::vector<ProjectChange> project_changes(const Project& before, const Project& after) {
    // The saved form is the one users read and the one paths in error messages name.
    const json a = json::parse(serialize_project(before));
    const json b = json::parse(serialize_project(after));
    std::vector<ProjectChange> out;
    compare("", &a, &b, out);
    return out;
}

} // namespace myelin::io
