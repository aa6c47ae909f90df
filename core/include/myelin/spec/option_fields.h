#pragma once
// Options described once. An optimizer's or a schedule's typed options (optim/optim.h,
// optim/scheduler.h) list their `fields` (optim/option_field.h): name, member (whose initializer
// is the default), doc and range. From them follow the kind's AttrDescs (what the project file,
// `myelin check` and the studio's forms show: described) and the typed options a project's
// values build (read_options). A plugin's optimizer or schedule does the same with its own
// struct. describe_options writes any component's options as one line, as
// `myelin check` prints them.
#include <myelin/graph/attributes.h>
#include <myelin/optim/option_field.h>

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace myelin::spec {

// The position of the choice `options` give for `option` among `names`; throws myelin::Error
// naming the option when it is none of them.
size_t choice_index(std::span<const char* const> names, const char* option,
                    const graph::Attrs& options);

// An integer list's AttrDesc and reading one, out of line: GCC 12 compiles every kind of field
// for every struct and then warns (-Warray-bounds) that the never taken list branch of a struct
// without lists reads past its end.
graph::AttrDesc described_list(const char* name, const std::vector<int64_t>& def, const char* doc,
                               int min_items, int max_items, std::optional<double> min,
                               std::optional<double> max);
void read_list(const graph::Attrs& options, const char* name, std::vector<int64_t>& list);

// GCC 12 instantiates the flag branch for a struct without flags too, and then warns that the
// (never taken) read of a bool member may be uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// `O::fields` as AttrDescs, with `defaults`' values as the defaults.
template <class O> std::vector<graph::AttrDesc> described(const O& defaults = {}) {
    const auto bound = [](double v) {
        return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
    };
    std::vector<graph::AttrDesc> out;
    for (const auto& f : O::fields) {
        graph::AttrDesc d = std::visit(
            [&](auto member) {
                using M = decltype(member);
                if constexpr (std::is_same_v<M, optim::EnumMember<O>>)
                    return graph::attr::choice(
                        f.name, member.names[member.get(defaults)],
                        std::vector<std::string>(member.names.begin(), member.names.end()), f.doc);
                else if constexpr (std::is_same_v<M, bool O::*>)
                    return graph::attr::flag(f.name, defaults.*member, f.doc);
                else if constexpr (std::is_same_v<M, int64_t O::*>)
                    return graph::attr::integer(f.name, defaults.*member, f.doc, bound(f.min),
                                                bound(f.max));
                else if constexpr (std::is_same_v<M, std::vector<int64_t> O::*>)
                    return described_list(f.name, defaults.*member, f.doc, f.min_items, f.max_items,
                                          bound(f.min), bound(f.max));
                else
                    return graph::attr::number(f.name, defaults.*member, f.doc, bound(f.min),
                                               bound(f.max));
            },
            f.member);
        out.push_back(f.min_exclusive ? graph::attr::exclusive(std::move(d)) : std::move(d));
    }
    return out;
}

// A project's options (with_defaults filled: every field present) as the typed options, the
// others left as in `typed`.
template <class O> O read_options(const graph::Attrs& options, O typed = {}) {
    for (const auto& f : O::fields)
        std::visit(
            [&](auto member) {
                using M = decltype(member);
                if constexpr (std::is_same_v<M, optim::EnumMember<O>>)
                    member.set(typed, choice_index(member.names, f.name, options));
                else if constexpr (std::is_same_v<M, bool O::*>)
                    typed.*member = options.get_bool(f.name);
                else if constexpr (std::is_same_v<M, int64_t O::*>)
                    typed.*member = options.get_int(f.name);
                else if constexpr (std::is_same_v<M, std::vector<int64_t> O::*>)
                    read_list(options, f.name, typed.*member);
                else
                    typed.*member = options.get_float(f.name);
            },
            f.member);
    return typed;
}

#pragma GCC diagnostic pop

// "lr 0.001, beta1 0.9, amsgrad false": every option of `descs`, given or default, in order.
std::string describe_options(const std::vector<graph::AttrDesc>& descs, const graph::Attrs& given);

} // namespace myelin::spec
