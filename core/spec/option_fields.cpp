#include <myelin/spec/option_fields.h>

namespace myelin::spec {

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
