#pragma once
// Typed attributes of a graph node (and of the loss / optimizer / scheduler choices of a training
// spec). Each kind describes its attributes once (AttrDesc: type, default, range, choices,
// documentation); the studio builds its inspector from these descriptions and the project loader
// checks values against them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace myelin::graph {

enum class AttrType {
    Bool,
    Int,
    Float,
    String,      // free text
    Enum,        // one of AttrDesc::choices
    IntList,     // e.g. kernel_size: 3 or [3, 5]; a one-element list is written as a plain int
    NumberTable, // a number per name {"cat": 2.0} (or per position [2.0, 0.5]): class weights
};
const char* to_string(AttrType type);

// Numbers given by name ({"Coat": 2.0, "Bag": 0.5}, in the order written) or by position
// ([2.0, 0.5]); at most one of the two is filled. Empty: nothing given (e.g. no class weights).
// What the names are (classes, outputs) is the owner's business: the table only holds them.
struct NumberTable {
    std::vector<std::pair<std::string, double>> by_name;
    std::vector<double> by_position;
    bool empty() const { return by_name.empty() && by_position.empty(); }
    const double* find(std::string_view name) const; // nullptr: not named
    bool operator==(const NumberTable& other) const = default;
};

// std::monostate is "None" (only for attributes with AttrDesc::nullable, e.g. padding_idx).
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string,
                               std::vector<int64_t>, NumberTable>;

// "3", "[3, 5]", "0.5", "true", "\"same\"", "None", "{\"Coat\": 2}": how values appear in
// messages and summaries.
std::string format_value(const AttrValue& value);

struct AttrDesc {
    std::string name;
    AttrType type = AttrType::Int;
    AttrValue default_value;
    std::string doc;
    std::optional<double> min; // inclusive bounds of Int / Float / each IntList element
    std::optional<double> max;
    bool min_exclusive = false; // e.g. dropout p in [0, 1), lr > 0
    bool max_exclusive = false;
    std::vector<std::string> choices; // Enum
    int list_min_size = 1;            // IntList
    int list_max_size = 2;
    bool table_by_position = false; // NumberTable: a list by position is accepted too
    bool nullable = false;
    // A String option that names a file or a folder (relative to the project's folder): the
    // studio offers a Browse button for it.
    enum class Path { None, File, Folder };
    Path path = Path::None;

    // Empty when `value` fits this description; otherwise what is wrong, e.g.
    // "must be an integer >= 1, got 0". Ints are accepted where a Float is expected.
    std::string check(const AttrValue& value) const;
};

// One vocabulary for describing attributes and options, used by the layer registry, the
// component kinds and plugins. A bound is inclusive and absent unless given; exclusive() makes
// the given bounds strict (lr > 0, dropout p < 1).
namespace attr {
AttrDesc integer(std::string name, int64_t def, std::string doc,
                 std::optional<double> min = std::nullopt,
                 std::optional<double> max = std::nullopt);
AttrDesc number(std::string name, double def, std::string doc,
                std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
AttrDesc flag(std::string name, bool def, std::string doc);
AttrDesc choice(std::string name, std::string def, std::vector<std::string> choices,
                std::string doc);
AttrDesc text(std::string name, std::string def, std::string doc);
AttrDesc file(std::string name, std::string doc);                    // a path to a file
AttrDesc folder(std::string name, std::string def, std::string doc); // a path to a folder
AttrDesc int_or_pair(std::string name, int64_t def, std::string doc, double min = 1); // 3 or [3, 5]
AttrDesc int_list(std::string name, std::vector<int64_t> def, std::string doc, int min_size,
                  int max_size, std::optional<double> min = std::nullopt);
// A number per name, {"Coat": 2.0} (with `by_position_too`, also a list [2.0, 0.5]); empty by
// default. `min` bounds every number (every number must be finite).
AttrDesc number_table(std::string name, std::string doc, bool by_position_too = false,
                      std::optional<double> min = std::nullopt);
AttrDesc nullable(AttrDesc desc); // None allowed, and the default
AttrDesc exclusive(AttrDesc desc, bool min = true, bool max = false);
} // namespace attr

// Ordered name -> value pairs (a handful per node: a vector beats a map).
class Attrs {
  public:
    Attrs() = default;
    Attrs(std::initializer_list<std::pair<std::string, AttrValue>> values);

    bool contains(std::string_view name) const { return find(name) != nullptr; }
    const AttrValue* find(std::string_view name) const;
    // Typed access; throws myelin::Error naming the attribute when absent or of another type.
    const AttrValue& at(std::string_view name) const;
    bool get_bool(std::string_view name) const;
    int64_t get_int(std::string_view name) const;
    double get_float(std::string_view name) const; // Int values convert
    const std::string& get_string(std::string_view name) const;
    const std::vector<int64_t>& get_ints(std::string_view name) const;
    const NumberTable& get_table(std::string_view name) const;
    // Nullable int: nullopt for None.
    std::optional<int64_t> get_optional_int(std::string_view name) const;
    bool is_none(std::string_view name) const;

    void set(std::string_view name, AttrValue value); // replaces or appends
    bool erase(std::string_view name);

    const std::vector<std::pair<std::string, AttrValue>>& items() const { return values_; }
    size_t size() const { return values_.size(); }
    bool operator==(const Attrs& other) const = default;

  private:
    std::vector<std::pair<std::string, AttrValue>> values_;
};

// Every described attribute, in description order: the value from `given` or the default.
// Unknown names in `given` are dropped (validation reports them separately). An int given for a
// Float becomes a float and for an IntList a one-element list.
Attrs with_defaults(const std::vector<AttrDesc>& descs, const Attrs& given);

// Problems of `attrs` against `descs`, one message each ("kernel_size: must be ...",
// "foo: unknown attribute (known: a, b)").
std::vector<std::string> check_attrs(const std::vector<AttrDesc>& descs, const Attrs& attrs);

} // namespace myelin::graph
