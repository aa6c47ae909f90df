#include <myelin/error.h>
#include <myelin/spec/option_fields.h>

namespace myelin::spec {

size_t choice_index(std::span<const char* const> names, const char* option,
                    const graph::Attrs& options) {
    const std::string& given = options.get_string(option);
    for (size_t i = 0; i < names.size(); ++i)
        if (given == names[i]) return i;
    throw Error(std::string("option '") + option + "': unknown choice '" + given + "'");
}

graph::AttrDesc described_list(const char* name, const std::vector<int64_t>& def, const char* doc,
                               int min_items, int max_items, std::optional<double> min,
                               std::optional<double> max) {
    graph::AttrDesc d = graph::attr::int_list(name, def, doc, min_items, max_items, min);
    d.max = max;
    return d;
}

void read_list(const graph::Attrs& options, const char* name, std::vector<int64_t>& list) {
    list = options.get_ints(name);
}

std::string describe_options(const std::vector<graph::AttrDesc>& descs, const graph::Attrs& given) {
    const graph::Attrs all = graph::with_defaults(descs, given);
    std::string text;
    for (const graph::AttrDesc& d : descs) {
        const graph::AttrValue* value = all.find(d.name);
        text += (text.empty() ? "" : ", ") + d.name + " " +
                (value ? graph::format_value(*value) : std::string("-"));
    }
    return text;
}

} // namespace myelin::spec
