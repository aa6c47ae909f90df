#pragma once
// What the runs browser shows of one run, read from the store in one go (on a worker thread),
// and the texts and CSV made from it. Internal to ui/runs.
#include <myelin/store/run_store.h>

#include <QString>
#include <QStringList>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace myelin::ui {

// The metrics with best / last columns, when a run has them: best is the minimum of a loss, the
// maximum of an accuracy (which way is better: spec::describe_metric).
struct KeyMetricInfo {
    const char* key;
    const char* label; // in column headers
};
inline constexpr std::array<KeyMetricInfo, 3> kKeyMetrics{{
    {"loss", "loss"},
    {"val_loss", "val loss"},
    {"val_accuracy", "val acc"},
}};

struct KeyMetricValues {
    bool present = false;
    double best = std::numeric_limits<double>::quiet_NaN();
    double last = std::numeric_limits<double>::quiet_NaN();
    int64_t lastStep = 0;
    bool operator==(const KeyMetricValues& other) const;
};

struct RunRecord {
    store::Run run; // project_json left empty
    std::array<KeyMetricValues, kKeyMetrics.size()> metrics;
};

// Every run of the store, newest first, with its key metrics: list_runs and one range read per
// key metric (block summaries), so 1,000 runs with millions of points read in milliseconds.
std::vector<RunRecord> readRunRecords(store::RunStore& store);

// Whether two records show the same (a refresh updates only the rows that changed).
bool sameDisplay(const RunRecord& a, const RunRecord& b);

// Texts of the table.
QString statusText(store::RunStatus status); // "Finished"
// "forked at step 200", "resumed at step 300", "resumed from a file", "" for a fresh run.
QString lineageText(const store::Run& run);
QString durationText(double seconds);                   // "2 h 05 min", "3 min 20 s", "41 s"
QString metricText(double value);                       // 4 significant digits; "nan"
QString tagsText(const std::vector<std::string>& tags); // "a, b"
QString countText(qint64 n, const char* one, const char* many); // "1 run", "3 runs"
// The seconds a run took, or has taken so far while running (`now`: unix seconds).
double runSeconds(const store::Run& run, double now);
// An absolute, normal path, as the store records a project file.
std::string normalProjectPath(const QString& path);

// The CSV of `records` (RFC 4180: fields with a comma, quote or line break quoted, quotes
// doubled; CRLF line ends): a header, then one line per run.
QByteArray runsCsv(const std::vector<const RunRecord*>& records, double now);

} // namespace myelin::ui
