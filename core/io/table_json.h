#pragma once
// A graph::NumberTable as JSON, for the project and checkpoint writers: an object by name (in
// the order given), an array by position; and how a table's problem reads. Internal to io
// (nlohmann never reaches a public header).
#include <myelin/graph/attributes.h>

#include <string>

namespace myelin::io {

template <class Json> Json table_json(const graph::NumberTable& table) {
    if (!table.by_position.empty()) return Json(table.by_position);
    Json out = Json::object();
    for (const auto& [name, v] : table.by_name)
        out[name] = v;
    return out;
}

// A table's problem names its owner and option ("CrossEntropyLoss weight: 'Coat': must be a
// finite number >= 0, got -1"): the path alone does not say which loss it is. Other options'
// problems are returned as they are.
inline std::string table_problem(const graph::AttrDesc& desc, const std::string& owner,
                                 const std::string& why) {
    if (desc.type != graph::AttrType::NumberTable) return why;
    return owner + " " + desc.name + ": " + why;
}

} // namespace myelin::io
