#pragma once
// The changes made while a recorded run was paused, as the inspection views mark them.
#include "widgets/change_marks.h"

#include <cstdint>
#include <vector>

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

// `run`'s run events of kind "change" (what RunChanged recorded), in step order.
std::vector<RunChange> recordedChanges(store::RunStore& store, int64_t run);

} // namespace myelin::ui
