#pragma once
// Options described once. An optimizer's typed options (optim/optim.h) list their `fields`: name,
// member (whose initializer is the default), doc and range. From them follow the kind's
// AttrDescs (what the project file, `myelin check` and the studio's forms show: described) and
// the typed options a project's values build (read_options). A plugin's optimizer does the same
// with its own struct. describe_options writes any component's options as one line, as
// `myelin check` prints them.
#include <myelin/graph/attributes.h>
#include <myelin/optim/optim.h>

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace myelin::spec {

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
    for (const auto& f : O::fields)
        std::visit(
            [&](auto member) {
                if constexpr (std::is_same_v<std::remove_cvref_t<decltype(defaults.*member)>,
                                             bool>) {
                    out.push_back(graph::attr::flag(f.name, defaults.*member, f.doc));
                } else {
                    graph::AttrDesc d = graph::attr::number(f.name, defaults.*member, f.doc,
                                                            bound(f.min), bound(f.max));
                    out.push_back(f.min_exclusive ? graph::attr::exclusive(std::move(d))
                                                  : std::move(d));
                }
            },
            f.member);
    return out;
}

// A project's options (with_defaults filled: every field present) as the typed options, the
// others left as in `typed`.
template <class O> O read_options(const graph::Attrs& options, O typed = {}) {
    for (const auto& f : O::fields)
        std::visit(
            [&](auto member) {
                if constexpr (std::is_same_v<std::remove_cvref_t<decltype(typed.*member)>, bool>)
                    typed.*member = options.get_bool(f.name);
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
