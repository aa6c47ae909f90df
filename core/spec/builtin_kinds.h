#pragma once
// The built-in component kinds, one table per family (private to core/spec). Defaults are
// PyTorch's, so an option left out of a project means what it means in a PyTorch script.
#include <myelin/spec/components.h>

#include <vector>

namespace myelin::spec::builtin {

std::vector<LossKind> losses();
std::vector<OptimizerKind> optimizers();
std::vector<SchedulerKind> schedulers();
std::vector<DataSourceKind> data_sources();
std::vector<TransformKind> transforms();

// The options every step-driven schedule gets: a linear warmup before it.
std::vector<graph::AttrDesc> warmup_options();

} // namespace myelin::spec::builtin
