#pragma once
// What the runs browser's worker threads hand back to it. Internal to ui/runs.
#include "runs/run_records.h"
#include "runs/run_tree_model.h"

#include <myelin/store/run_store.h>

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace myelin::ui {

// One read of the store (runs_browser.cpp, loadRuns).
struct RunsLoad {
    uint64_t generation = 0;                                 // of the store path it was started for
    std::shared_ptr<store::RunStore> store;                  // open, when it could be opened
    QString error;                                           // the store's message
    store::StoreProblem problem = store::StoreProblem::None; // of `error`
    bool missing = false;                                    // no store file yet
    bool unchanged = false;                                  // same data version as the last read
    std::optional<uint64_t> version;
    std::vector<RunRecord> records;
};

// What deleting the selected runs did (runs_browser_actions.cpp).
struct DeleteOutcome {
    QList<qint64> deleted;
    QStringList refused;   // "run 4: <the store's message>"
    QStringList keptFiles; // "path: why"
    int removedFiles = 0;
};

} // namespace myelin::ui
