#pragma once
// The choosable parts of a project besides its layers — losses, optimizers, LR schedules, data
// sources and transforms — each described once: name, documentation and typed options with
// PyTorch's defaults. The project reader checks options against these descriptions, the studio
// builds its Training and Data pages from them, and train/components.h builds each kind.
#include <myelin/graph/attributes.h>
#include <myelin/spec/training.h>

#include <string>
#include <string_view>
#include <vector>

namespace myelin::spec {

struct ComponentKind {
    std::string name;
    std::string doc;
    std::vector<graph::AttrDesc> options;
};

const std::vector<ComponentKind>& loss_kinds();
const std::vector<ComponentKind>& optimizer_kinds();
const std::vector<ComponentKind>& scheduler_kinds();
const std::vector<ComponentKind>& data_source_kinds();
const std::vector<ComponentKind>& transform_kinds();
// nullptr when `name` is not among `kinds`.
const ComponentKind* find_component(const std::vector<ComponentKind>& kinds, std::string_view name);

// Whether the loss wants int64 class indices (classification) rather than float targets.
bool loss_takes_class_indices(std::string_view loss_kind);

// The options of `choice` with defaults filled in, after checking the kind is among `kinds`
// and every option against its description. Throws myelin::Error "unknown <what> 'X' (known:
// ...)" or "<kind>: <problem>".
graph::Attrs checked_options(const std::vector<ComponentKind>& kinds, const Choice& choice,
                             const char* what);

} // namespace myelin::spec
