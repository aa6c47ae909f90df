#include "inspect/recorded_changes.h"

#include <myelin/store/run_store.h>

#include <algorithm>

namespace myelin::ui {

std::vector<RunChange> recordedChanges(store::RunStore& store, int64_t run) {
    std::vector<RunChange> changes;
    for (const store::RunEvent& e : store.events(run))
        if (e.kind == "change") changes.push_back({e.step, QString::fromStdString(e.message)});
    std::stable_sort(changes.begin(), changes.end(),
                     [](const RunChange& a, const RunChange& b) { return a.step < b.step; });
    return changes;
}

} // namespace myelin::ui
