#pragma once
// One option of a component's typed options, described once: its name (PyTorch's), the member of
// the typed options that holds it (whose initializer is the default), what it does, and its
// range. Optimizers (optim/optim.h) and schedules (optim/scheduler.h) list theirs in a static
// `fields` table; the kind's AttrDescs, the project file's options, the CLI's and the studio's
// descriptions (spec::described) and reading a project's options into the typed struct
// (spec::read_options) all follow from it.
#include <myelin/error.h>
#include <myelin/optim/optimizer.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace myelin::optim {

// An enum member with its names in the enum's order (names[size_t(value)]): a choice in the
// project file ("cos" / "linear"). Made by enum_member<&O::member>(names); the accessors are
// functions because each enum is a type of its own.
template <class O> struct EnumMember {
    std::span<const char* const> names; // static storage
    size_t (*get)(const O&);
    void (*set)(O&, size_t);
};

namespace field_detail {
template <class M> struct member_of;
template <class O, class V> struct member_of<V O::*> {
    using owner = O;
    using value = V;
};
} // namespace field_detail

template <auto member>
EnumMember<typename field_detail::member_of<decltype(member)>::owner>
enum_member(std::span<const char* const> names) {
    using O = typename field_detail::member_of<decltype(member)>::owner;
    using E = typename field_detail::member_of<decltype(member)>::value;
    static_assert(std::is_enum_v<E>, "enum_member: the member is not an enum");
    return {names, [](const O& o) { return static_cast<size_t>(o.*member); },
            [](O& o, size_t index) { o.*member = static_cast<E>(index); }};
}

// A number, a flag, an integer, a list of integers (MultiStepLR's milestones) or a choice.
template <class O>
using OptionMember =
    std::variant<double O::*, bool O::*, int64_t O::*, std::vector<int64_t> O::*, EnumMember<O>>;

template <class O> struct OptionField {
    const char* name;
    OptionMember<O> member;
    const char* doc;
    // Of a number, an integer or each element of a list.
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false; // lr > 0, not >= 0
    int min_items = 1;          // of a list
    int max_items = 2;
};

// The options as a param group holds them: every field by name, flags as 0 / 1. A param group
// holds numbers only, so lists and choices have no place in an optimizer's options.
template <class O> Options options_map(const O& options) {
    Options map;
    for (const auto& f : O::fields)
        std::visit(
            [&](auto member) {
                if constexpr (std::is_same_v<decltype(member), EnumMember<O>> ||
                              std::is_same_v<decltype(member), std::vector<int64_t> O::*>) {
                    throw Error(std::string("option '") + f.name +
                                "': a param group holds numbers and flags only");
                } else if constexpr (std::is_same_v<decltype(member), bool O::*>) {
                    map[f.name] = options.*member ? 1.0 : 0.0;
                } else {
                    map[f.name] = static_cast<double>(options.*member);
                }
            },
            f.member);
    return map;
}

} // namespace myelin::optim
