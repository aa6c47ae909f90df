#pragma once
// The runs browser's model: every run of the store as a tree (resumed and forked runs under
// their parent), and the proxy that sorts and filters it. Internal to ui/runs.
#include "runs/run_records.h"

#include <QAbstractItemModel>
#include <QIcon>
#include <QSortFilterProxyModel>

#include <optional>
#include <unordered_map>
#include <vector>

namespace myelin::ui {

class RunTreeModel : public QAbstractItemModel {
    Q_OBJECT

  public:
    enum Column {
        NameColumn,
        IdColumn,
        StatusColumn,
        LineageColumn,
        StartedColumn,
        DurationColumn,
        DeviceColumn,
        FirstMetricColumn, // best, last of each key metric
        TagsColumn = FirstMetricColumn + 2 * int(kKeyMetrics.size()),
        NoteColumn,
        ColumnCount
    };
    enum Role {
        RunIdRole = Qt::UserRole + 1,
        SortRole, // a number or text to sort by; invalid: no value (sorts first)
    };

    explicit RunTreeModel(QObject* parent = nullptr);

    // Shows `records` (newest first). When the runs and their parents are the same as shown,
    // only the rows that changed are updated (selection and expansion stay); otherwise the model
    // is reset.
    void setRecords(std::vector<RunRecord> records);
    // Clock for running runs' durations (unix seconds); durationsChanged when any is running.
    void setNow(double now);
    double now() const { return now_; }
    bool hasRunning() const;

    int runCount() const { return int(nodes_.size()); }
    const RunRecord* record(const QModelIndex& index) const;
    const RunRecord* recordOf(qint64 run) const;
    QModelIndex indexOf(qint64 run, int column = 0) const;
    // Whether any run has the key metric (its columns are hidden otherwise).
    bool hasMetric(size_t metric) const;
    QStringList allTags() const; // sorted

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    struct Node {
        RunRecord record;
        int parent = -1; // node index; -1: top level
        int row = 0;     // among its parent's children (or the top level)
        std::vector<int> children;
    };
    void rebuild(std::vector<RunRecord> records);
    std::vector<std::pair<int64_t, int64_t>> structureOf(const std::vector<RunRecord>& r) const;
    QVariant display(const RunRecord& record, int column) const;
    QVariant sortValue(const RunRecord& record, int column) const;
    QString toolTip(const RunRecord& record, int column) const;

    std::vector<Node> nodes_;
    std::vector<int> roots_;
    std::unordered_map<int64_t, int> byId_;
    std::vector<std::pair<int64_t, int64_t>> structure_; // (run, shown parent or -1), in order
    double now_ = 0;
    std::vector<QIcon> statusIcons_;
};

// Sorts (by the SortRole of the column) and filters: text in name, tags or note, one status,
// one tag, and the runs of one project (only, or first). Filtering is recursive: a parent
// stays while any of its children matches.
class RunFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT

  public:
    explicit RunFilterProxy(QObject* parent = nullptr);

    void setText(const QString& text);
    void setStatus(std::optional<store::RunStatus> status);
    void setTag(const QString& tag); // empty: any
    // Runs recorded with this project file (normal absolute path; empty: no project): only those
    // when `only`, else those first in any sort order.
    void setProject(const std::string& path, bool only);
    bool isOfProject(const RunRecord& record) const;

  protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

  private:
    const RunTreeModel* runs() const;

    QString text_;
    std::optional<store::RunStatus> status_;
    std::string tag_;
    std::string project_;
    bool projectOnly_ = false;
};

} // namespace myelin::ui
