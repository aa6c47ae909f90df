#include <myelin/error.h>
#include <myelin/graph/attributes.h>

#include <cmath>
#include <sstream>

namespace myelin::graph {

const char* to_string(AttrType type) {
    switch (type) {
    case AttrType::Bool:
        return "bool";
    case AttrType::Int:
        return "int";
    case AttrType::Float:
        return "float";
    case AttrType::String:
        return "string";
    case AttrType::Enum:
        return "enum";
    case AttrType::IntList:
        return "int list";
    case AttrType::NumberTable:
        return "number table";
    }
    return "?";
}

const double* NumberTable::find(std::string_view name) const {
    for (const auto& [n, v] : by_name)
        if (n == name) return &v;
    return nullptr;
}

namespace {
std::string format_number(double v) {
    std::ostringstream out;
    out.precision(10);
    out << v;
    return out.str();
}
} // namespace

std::string format_value(const AttrValue& value) {
    struct Visitor {
        std::string operator()(std::monostate) const { return "None"; }
        std::string operator()(bool b) const { return b ? "true" : "false"; }
        std::string operator()(int64_t v) const { return std::to_string(v); }
        std::string operator()(double v) const { return format_number(v); }
        std::string operator()(const std::string& s) const { return '"' + s + '"'; }
        std::string operator()(const std::vector<int64_t>& list) const {
            if (list.size() == 1) return std::to_string(list[0]);
            std::string out = "[";
            for (size_t i = 0; i < list.size(); ++i)
                out += (i ? ", " : "") + std::to_string(list[i]);
            return out + "]";
        }
        std::string operator()(const NumberTable& table) const {
            std::string out;
            if (!table.by_position.empty()) {
                for (size_t i = 0; i < table.by_position.size(); ++i)
                    out += (i ? ", " : "") + format_number(table.by_position[i]);
                return "[" + out + "]";
            }
            for (size_t i = 0; i < table.by_name.size(); ++i)
                out += (i ? ", \"" : "\"") + table.by_name[i].first +
                       "\": " + format_number(table.by_name[i].second);
            return "{" + out + "}";
        }
    };
    return std::visit(Visitor{}, value);
}

namespace {

std::string range_text(const AttrDesc& d) {
    std::string out;
    auto num = [](double v) {
        return format_value(v == std::floor(v) ? AttrValue(int64_t(v)) : AttrValue(v));
    };
    if (d.min) out += (d.min_exclusive ? " > " : " >= ") + num(*d.min);
    if (d.min && d.max) out += " and";
    if (d.max) out += (d.max_exclusive ? " < " : " <= ") + num(*d.max);
    return out;
}

bool in_range(const AttrDesc& d, double v) {
    if (!std::isfinite(v)) return false;
    if (d.min && (d.min_exclusive ? v <= *d.min : v < *d.min)) return false;
    if (d.max && (d.max_exclusive ? v >= *d.max : v > *d.max)) return false;
    return true;
}

} // namespace

std::string AttrDesc::check(const AttrValue& value) const {
    if (std::holds_alternative<std::monostate>(value))
        return nullable ? std::string() : "must not be None";
    switch (type) {
    case AttrType::Bool:
        if (!std::holds_alternative<bool>(value))
            return "must be true or false, got " + format_value(value);
        return {};
    case AttrType::Int:
        if (!std::holds_alternative<int64_t>(value))
            return "must be an integer" + range_text(*this) + ", got " + format_value(value);
        if (!in_range(*this, double(std::get<int64_t>(value))))
            return "must be an integer" + range_text(*this) + ", got " + format_value(value);
        return {};
    case AttrType::Float: {
        double v;
        if (auto* i = std::get_if<int64_t>(&value))
            v = double(*i);
        else if (auto* f = std::get_if<double>(&value))
            v = *f;
        else
            return "must be a number" + range_text(*this) + ", got " + format_value(value);
        if (!in_range(*this, v))
            return "must be a number" + range_text(*this) + ", got " + format_value(value);
        return {};
    }
    case AttrType::String:
        if (!std::holds_alternative<std::string>(value))
            return "must be a string, got " + format_value(value);
        return {};
    case AttrType::Enum: {
        auto* s = std::get_if<std::string>(&value);
        bool ok = s != nullptr;
        if (ok) {
            ok = false;
            for (const auto& c : choices)
                ok = ok || c == *s;
        }
        if (!ok) {
            std::string list;
            for (size_t i = 0; i < choices.size(); ++i)
                list += (i ? ", " : "") + choices[i];
            return "must be one of " + list + ", got " + format_value(value);
        }
        return {};
    }
    case AttrType::IntList: {
        auto* list = std::get_if<std::vector<int64_t>>(&value);
        std::string what = list_min_size == list_max_size
                               ? std::to_string(list_min_size) + " integer(s)"
                               : "an integer or a list of " + std::to_string(list_min_size) +
                                     " to " + std::to_string(list_max_size) + " integers";
        if (list_min_size == 1 && list_max_size == 2) what = "an integer or a pair of integers";
        if (!list || int(list->size()) < list_min_size || int(list->size()) > list_max_size)
            return "must be " + what + range_text(*this) + ", got " + format_value(value);
        for (int64_t v : *list)
            if (!in_range(*this, double(v)))
                return "must be " + what + range_text(*this) + ", got " + format_value(value);
        return {};
    }
    case AttrType::NumberTable: {
        auto* table = std::get_if<NumberTable>(&value);
        if (!table)
            return std::string("must be an object of numbers by name ({\"name\": 2.0})") +
                   (table_by_position ? " or a list of numbers" : "") + ", got " +
                   format_value(value);
        if (!table->by_position.empty() && !table_by_position)
            return "must give numbers by name ({\"name\": 2.0}), not by position, got " +
                   format_value(value);
        const std::string bound = "must be a finite number" + range_text(*this);
        for (size_t i = 0; i < table->by_name.size(); ++i) {
            const auto& [name, v] = table->by_name[i];
            if (name.empty()) return "a name is empty";
            for (size_t j = 0; j < i; ++j)
                if (table->by_name[j].first == name) return "'" + name + "' is given twice";
            if (!in_range(*this, v))
                return "'" + name + "': " + bound + ", got " + format_number(v);
        }
        for (size_t i = 0; i < table->by_position.size(); ++i)
            if (!in_range(*this, table->by_position[i]))
                return "[" + std::to_string(i) + "]: " + bound + ", got " +
                       format_number(table->by_position[i]);
        return {};
    }
    }
    return {};
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> values) {
    for (const auto& [name, value] : values)
        set(name, value);
}

const AttrValue* Attrs::find(std::string_view name) const {
    for (const auto& [n, v] : values_)
        if (n == name) return &v;
    return nullptr;
}

const AttrValue& Attrs::at(std::string_view name) const {
    if (const AttrValue* v = find(name)) return *v;
    throw Error("attribute '" + std::string(name) + "' is not set");
}

namespace {
template <typename T>
const T& typed(const Attrs& attrs, std::string_view name, const char* expected) {
    const AttrValue& v = attrs.at(name);
    if (auto* p = std::get_if<T>(&v)) return *p;
    throw Error("attribute '" + std::string(name) + "' must be " + expected + ", got " +
                format_value(v));
}
} // namespace

bool Attrs::get_bool(std::string_view name) const {
    return typed<bool>(*this, name, "a bool");
}
int64_t Attrs::get_int(std::string_view name) const {
    return typed<int64_t>(*this, name, "an integer");
}
double Attrs::get_float(std::string_view name) const {
    const AttrValue& v = at(name);
    if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
    return typed<double>(*this, name, "a number");
}
const std::string& Attrs::get_string(std::string_view name) const {
    return typed<std::string>(*this, name, "a string");
}
const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
    return typed<std::vector<int64_t>>(*this, name, "a list of integers");
}
const NumberTable& Attrs::get_table(std::string_view name) const {
    return typed<NumberTable>(*this, name, "a table of numbers");
}
std::optional<int64_t> Attrs::get_optional_int(std::string_view name) const {
    if (is_none(name)) return std::nullopt;
    return get_int(name);
}
bool Attrs::is_none(std::string_view name) const {
    return std::holds_alternative<std::monostate>(at(name));
}

void Attrs::set(std::string_view name, AttrValue value) {
    for (auto& [n, v] : values_)
        if (n == name) {
            v = std::move(value);
            return;
        }
    values_.emplace_back(std::string(name), std::move(value));
}

bool Attrs::erase(std::string_view name) {
    for (auto it = values_.begin(); it != values_.end(); ++it)
        if (it->first == name) {
            values_.erase(it);
            return true;
        }
    return false;
}

Attrs with_defaults(const std::vector<AttrDesc>& descs, const Attrs& given) {
    Attrs out;
    for (const auto& d : descs) {
        const AttrValue* v = given.find(d.name);
        AttrValue value = v ? *v : d.default_value;
        // A Float attribute given as an integer is stored as a float.
        if (d.type == AttrType::Float)
            if (auto* i = std::get_if<int64_t>(&value)) value = double(*i);
        // ... and an IntList given as one int (kernel_size = 3) as a one-element list.
        if (d.type == AttrType::IntList)
            if (auto* i = std::get_if<int64_t>(&value)) value = std::vector<int64_t>{*i};
        out.set(d.name, std::move(value));
    }
    return out;
}

std::vector<std::string> check_attrs(const std::vector<AttrDesc>& descs, const Attrs& attrs) {
    std::vector<std::string> problems;
    for (const auto& [name, value] : attrs.items()) {
        const AttrDesc* desc = nullptr;
        for (const auto& d : descs)
            if (d.name == name) desc = &d;
        if (!desc) {
            std::string known;
            for (size_t i = 0; i < descs.size(); ++i)
                known += (i ? ", " : "") + descs[i].name;
            problems.push_back(
                name + ": unknown attribute" +
                (known.empty() ? std::string(" (this kind has none)") : " (known: " + known + ")"));
            continue;
        }
        if (std::string why = desc->check(value); !why.empty())
            problems.push_back(name + ": " + why);
    }
    return problems;
}

namespace attr {

namespace {
AttrDesc described(std::string name, AttrType type, AttrValue def, std::string doc) {
    AttrDesc d;
    d.name = std::move(name);
    d.type = type;
    d.default_value = std::move(def);
    d.doc = std::move(doc);
    return d;
}
} // namespace

AttrDesc integer(std::string name, int64_t def, std::string doc, std::optional<double> min,
                 std::optional<double> max) {
    AttrDesc d = described(std::move(name), AttrType::Int, def, std::move(doc));
    d.min = min;
    d.max = max;
    return d;
}
AttrDesc number(std::string name, double def, std::string doc, std::optional<double> min,
                std::optional<double> max) {
    AttrDesc d = described(std::move(name), AttrType::Float, def, std::move(doc));
    d.min = min;
    d.max = max;
    return d;
}
AttrDesc flag(std::string name, bool def, std::string doc) {
    return described(std::move(name), AttrType::Bool, def, std::move(doc));
}
AttrDesc choice(std::string name, std::string def, std::vector<std::string> choices,
                std::string doc) {
    AttrDesc d = described(std::move(name), AttrType::Enum, std::move(def), std::move(doc));
    d.choices = std::move(choices);
    return d;
}
AttrDesc text(std::string name, std::string def, std::string doc) {
    return described(std::move(name), AttrType::String, std::move(def), std::move(doc));
}
AttrDesc file(std::string name, std::string doc) {
    AttrDesc d = text(std::move(name), "", std::move(doc));
    d.path = AttrDesc::Path::File;
    return d;
}
AttrDesc folder(std::string name, std::string def, std::string doc) {
    AttrDesc d = text(std::move(name), std::move(def), std::move(doc));
    d.path = AttrDesc::Path::Folder;
    return d;
}
AttrDesc int_or_pair(std::string name, int64_t def, std::string doc, double min) {
    AttrDesc d =
        described(std::move(name), AttrType::IntList, std::vector<int64_t>{def}, std::move(doc));
    d.min = min;
    return d;
}
AttrDesc int_list(std::string name, std::vector<int64_t> def, std::string doc, int min_size,
                  int max_size, std::optional<double> min) {
    AttrDesc d = described(std::move(name), AttrType::IntList, std::move(def), std::move(doc));
    d.min = min;
    d.list_min_size = min_size;
    d.list_max_size = max_size;
    return d;
}
AttrDesc number_table(std::string name, std::string doc, bool by_position_too,
                      std::optional<double> min) {
    AttrDesc d = described(std::move(name), AttrType::NumberTable, NumberTable{}, std::move(doc));
    d.table_by_position = by_position_too;
    d.min = min;
    return d;
}
AttrDesc nullable(AttrDesc desc) {
    desc.nullable = true;
    desc.default_value = std::monostate{};
    return desc;
}
AttrDesc exclusive(AttrDesc desc, bool min, bool max) {
    desc.min_exclusive = min;
    desc.max_exclusive = max;
    return desc;
}

} // namespace attr

} // namespace myelin::graph
