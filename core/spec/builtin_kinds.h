#pragma once
// The built-in component kinds, one table per family (private to core/spec). Defaults are
// PyTorch's, so an option left out of a project means what it means in a PyTorch script.
#include <myelin/spec/components.h>

#include <type_traits>
#include <vector>

namespace myelin::spec::builtin {

std::vector<LossKind> losses();
std::vector<OptimizerKind> optimizers();
std::vector<SchedulerKind> schedulers();
std::vector<DataSourceKind> data_sources();
std::vector<DataSourceKind> text_data_sources(); // text-lines, csv-text (in data_sources())
std::vector<TransformKind> transforms();

// A record of the family `Kind`: its description, options and factory (`load` for data
// sources, `build` for the others).
template <class Kind, class Factory>
Kind kind(std::string name, std::string doc, std::vector<graph::AttrDesc> options,
          Factory factory) {
    Kind k;
    k.name = std::move(name);
    k.doc = std::move(doc);
    k.options = std::move(options);
    if constexpr (std::is_same_v<Kind, DataSourceKind>)
        k.load = std::move(factory);
    else
        k.build = std::move(factory);
    return k;
}

// The options every step-driven schedule gets: a linear warmup before it.
std::vector<graph::AttrDesc> warmup_options();

} // namespace myelin::spec::builtin
