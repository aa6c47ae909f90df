#include "runs/run_tree_model.h"

#include "widgets/theme.h"

#include <myelin/train/lr_finder.h>
#include <myelin/train/metrics.h>

#include <QDateTime>
#include <QPainter>
#include <QPixmap>

#include <algorithm>
#include <cmath>
#include <set>

namespace myelin::ui {

namespace {
constexpr int kStatusCount = 5;

QColor statusColor(store::RunStatus status) {
    switch (status) {
    case store::RunStatus::Running:
        return colors::kRunRunning;
    case store::RunStatus::Finished:
        return colors::kRunFinished;
    case store::RunStatus::Stopped:
        return colors::kRunStopped;
    case store::RunStatus::Failed:
        return colors::kRunFailed;
    case store::RunStatus::Interrupted:
        return colors::kRunInterrupted;
    }
    return colors::kText;
}

QIcon statusDot(const QColor& color) {
    QPixmap pixmap(12, 12);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(Qt::NoPen);
    painter.setBrush(color);
    painter.drawEllipse(QRectF(2, 2, 8, 8));
    return QIcon(pixmap);
}

// Which key metric and whether best (true) or last a column shows; false when not a metric.
bool metricColumn(int column, size_t* metric, bool* best) {
    const int offset = column - RunTreeModel::FirstMetricColumn;
    if (offset < 0 || offset >= 2 * int(kKeyMetrics.size())) return false;
    *metric = size_t(offset / 2);
    *best = offset % 2 == 0;
    return true;
}

QString firstLine(const std::string& text) {
    const QString all = QString::fromStdString(text);
    const qsizetype end = all.indexOf(QLatin1Char('\n'));
    return end < 0 ? all : all.left(end) + QStringLiteral(" …");
}
} // namespace

RunTreeModel::RunTreeModel(QObject* parent)
    : QAbstractItemModel(parent), now_(double(QDateTime::currentMSecsSinceEpoch()) / 1000.0) {
    for (int s = 0; s < kStatusCount; ++s)
        statusIcons_.push_back(statusDot(statusColor(store::RunStatus(s))));
}

std::vector<std::pair<int64_t, int64_t>>
RunTreeModel::structureOf(const std::vector<RunRecord>& records) const {
    std::set<int64_t> ids;
    for (const auto& r : records)
        ids.insert(r.run.id);
    std::vector<std::pair<int64_t, int64_t>> out;
    out.reserve(records.size());
    for (const auto& r : records) {
        const auto& parent = r.run.parent_run;
        out.emplace_back(r.run.id, parent && ids.count(*parent) ? *parent : -1);
    }
    return out;
}

void RunTreeModel::setRecords(std::vector<RunRecord> records) {
    auto structure = structureOf(records);
    if (structure != structure_) {
        beginResetModel();
        structure_ = std::move(structure);
        rebuild(std::move(records));
        endResetModel();
        return;
    }
    // Same runs, same tree: update the rows that show something else, in place.
    for (auto& record : records) {
        Node& node = nodes_[size_t(byId_.at(record.run.id))];
        if (sameDisplay(node.record, record)) continue;
        node.record = std::move(record);
        const int self = byId_.at(node.record.run.id);
        emit dataChanged(createIndex(node.row, 0, quintptr(self)),
                         createIndex(node.row, ColumnCount - 1, quintptr(self)));
    }
}

void RunTreeModel::rebuild(std::vector<RunRecord> records) {
    nodes_.clear();
    roots_.clear();
    byId_.clear();
    nodes_.resize(records.size());
    for (size_t i = 0; i < records.size(); ++i) {
        nodes_[i].record = std::move(records[i]);
        byId_.emplace(nodes_[i].record.run.id, int(i));
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const int64_t parent = structure_[i].second;
        std::vector<int>& siblings =
            parent < 0 ? roots_ : nodes_[size_t(byId_.at(parent))].children;
        nodes_[i].parent = parent < 0 ? -1 : byId_.at(parent);
        nodes_[i].row = int(siblings.size());
        siblings.push_back(int(i));
    }
}

void RunTreeModel::setNow(double now) {
    now_ = now;
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].record.run.status == store::RunStatus::Running) {
            const QModelIndex cell = createIndex(nodes_[i].row, DurationColumn, quintptr(i));
            emit dataChanged(cell, cell, {Qt::DisplayRole, SortRole});
        }
}

bool RunTreeModel::hasRunning() const {
    return std::any_of(nodes_.begin(), nodes_.end(), [](const Node& n) {
        return n.record.run.status == store::RunStatus::Running;
    });
}

const RunRecord* RunTreeModel::record(const QModelIndex& index) const {
    if (!index.isValid() || index.model() != this || index.internalId() >= nodes_.size())
        return nullptr;
    return &nodes_[index.internalId()].record;
}

const RunRecord* RunTreeModel::recordOf(qint64 run) const {
    auto it = byId_.find(run);
    return it == byId_.end() ? nullptr : &nodes_[size_t(it->second)].record;
}

QModelIndex RunTreeModel::indexOf(qint64 run, int column) const {
    auto it = byId_.find(run);
    if (it == byId_.end()) return {};
    return createIndex(nodes_[size_t(it->second)].row, column, quintptr(it->second));
}

bool RunTreeModel::hasMetric(size_t metric) const {
    return std::any_of(nodes_.begin(), nodes_.end(),
                       [&](const Node& n) { return n.record.metrics[metric].present; });
}

QStringList RunTreeModel::allTags() const {
    std::set<std::string> tags;
    for (const Node& n : nodes_)
        tags.insert(n.record.run.tags.begin(), n.record.run.tags.end());
    QStringList out;
    for (const auto& tag : tags)
        out << QString::fromStdString(tag);
    return out;
}

QModelIndex RunTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (column < 0 || column >= ColumnCount || row < 0) return {};
    const std::vector<int>& rows = parent.isValid() ? nodes_[parent.internalId()].children : roots_;
    if (size_t(row) >= rows.size()) return {};
    return createIndex(row, column, quintptr(rows[size_t(row)]));
}

QModelIndex RunTreeModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) return {};
    const int parent = nodes_[child.internalId()].parent;
    if (parent < 0) return {};
    return createIndex(nodes_[size_t(parent)].row, 0, quintptr(parent));
}

int RunTreeModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) return int(roots_.size());
    if (parent.column() != 0) return 0;
    return int(nodes_[parent.internalId()].children.size());
}

int RunTreeModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

QVariant RunTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    size_t metric = 0;
    bool best = false;
    const bool isMetric = metricColumn(section, &metric, &best);
    if (role == Qt::ToolTipRole && isMetric) {
        const KeyMetricInfo& m = kKeyMetrics[metric];
        return best ? QStringLiteral("The %1 value of %2 over the run")
                          .arg(train::higher_is_better(m.key) ? QStringLiteral("highest")
                                                              : QStringLiteral("lowest"),
                               QLatin1String(m.key))
                    : QStringLiteral("%1 at the run's last step").arg(QLatin1String(m.key));
    }
    if (role != Qt::DisplayRole) return {};
    if (isMetric)
        return QStringLiteral("%1 %2").arg(best ? QStringLiteral("Best") : QStringLiteral("Last"),
                                           QLatin1String(kKeyMetrics[metric].label));
    switch (section) {
    case NameColumn:
        return QStringLiteral("Name");
    case IdColumn:
        return QStringLiteral("ID");
    case StatusColumn:
        return QStringLiteral("Status");
    case LineageColumn:
        return QStringLiteral("Branched");
    case StartedColumn:
        return QStringLiteral("Started");
    case DurationColumn:
        return QStringLiteral("Duration");
    case DeviceColumn:
        return QStringLiteral("Device");
    case TagsColumn:
        return QStringLiteral("Tags");
    case NoteColumn:
        return QStringLiteral("Note");
    default:
        return {};
    }
}

QVariant RunTreeModel::display(const RunRecord& record, int column) const {
    const store::Run& r = record.run;
    size_t metric = 0;
    bool best = false;
    if (metricColumn(column, &metric, &best)) {
        const KeyMetricValues& m = record.metrics[metric];
        if (!m.present) return {};
        return metricText(best ? m.best : m.last);
    }
    switch (column) {
    case NameColumn:
        return QString::fromStdString(r.name);
    case IdColumn:
        return QString::number(r.id);
    case StatusColumn:
        return statusText(r.status);
    case LineageColumn:
        return lineageText(r);
    case StartedColumn:
        return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(r.started_at * 1000)))
            .toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    case DurationColumn:
        return durationText(runSeconds(r, now_));
    case DeviceColumn: {
        QString text = QString::fromStdString(r.device);
        if (r.threads > 0)
            text += (text.isEmpty() ? QString() : QStringLiteral(" · ")) +
                    QStringLiteral("%1 threads").arg(r.threads);
        return text;
    }
    case TagsColumn:
        return tagsText(r.tags);
    case NoteColumn:
        return firstLine(r.note);
    default:
        return {};
    }
}

QVariant RunTreeModel::sortValue(const RunRecord& record, int column) const {
    const store::Run& r = record.run;
    size_t metric = 0;
    bool best = false;
    if (metricColumn(column, &metric, &best)) {
        const KeyMetricValues& m = record.metrics[metric];
        const double v = best ? m.best : m.last;
        return m.present && !std::isnan(v) ? QVariant(v) : QVariant();
    }
    switch (column) {
    case IdColumn:
        return QVariant(qint64(r.id));
    case StatusColumn:
        return QVariant(int(r.status));
    case LineageColumn:
        return r.branch_step ? QVariant(qint64(*r.branch_step)) : QVariant();
    case StartedColumn:
        return QVariant(r.started_at);
    case DurationColumn:
        return QVariant(runSeconds(r, now_));
    default:
        return display(record, column);
    }
}

QString RunTreeModel::toolTip(const RunRecord& record, int column) const {
    const store::Run& r = record.run;
    switch (column) {
    case NameColumn: {
        QStringList lines{QStringLiteral("#%1 %2").arg(r.id).arg(QString::fromStdString(r.name))};
        if (!r.project_path.empty())
            lines << QStringLiteral("Project: %1").arg(QString::fromStdString(r.project_path));
        if (!r.parent_checkpoint.empty())
            lines << QStringLiteral("Started from: %1")
                         .arg(QString::fromStdString(r.parent_checkpoint));
        return lines.join(QLatin1Char('\n'));
    }
    case StatusColumn:
    case LineageColumn:
        if (column == LineageColumn && !r.parent_checkpoint.empty())
            return QString::fromStdString(r.parent_checkpoint);
        return QString::fromStdString(r.error);
    case DeviceColumn:
        return r.host.empty() ? QString()
                              : QStringLiteral("%1, process %2")
                                    .arg(QString::fromStdString(r.host))
                                    .arg(r.pid);
    case NoteColumn:
        return QString::fromStdString(r.note);
    default: {
        size_t metric = 0;
        bool best = false;
        if (metricColumn(column, &metric, &best) && record.metrics[metric].present && !best)
            return QStringLiteral("at step %1").arg(record.metrics[metric].lastStep);
        return {};
    }
    }
}

QVariant RunTreeModel::data(const QModelIndex& index, int role) const {
    const RunRecord* record = this->record(index);
    if (!record) return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return display(*record, column);
    case SortRole:
        return sortValue(*record, column);
    case RunIdRole:
        return QVariant(qint64(record->run.id));
    case Qt::ToolTipRole: {
        const QString tip = toolTip(*record, column);
        return tip.isEmpty() ? QVariant() : QVariant(tip);
    }
    case Qt::ForegroundRole:
        if (column == StatusColumn) return statusColor(record->run.status);
        return {};
    case Qt::DecorationRole:
        if (column == StatusColumn) return statusIcons_[size_t(record->run.status)];
        return {};
    case Qt::TextAlignmentRole: {
        size_t metric = 0;
        bool best = false;
        if (column == IdColumn || column == DurationColumn || metricColumn(column, &metric, &best))
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    default:
        return {};
    }
}

// ---- RunFilterProxy -------------------------------------------------------------------------

RunFilterProxy::RunFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setRecursiveFilteringEnabled(true);
    setSortRole(RunTreeModel::SortRole);
    setSortCaseSensitivity(Qt::CaseInsensitive);
}

const RunTreeModel* RunFilterProxy::runs() const {
    return static_cast<const RunTreeModel*>(sourceModel());
}

void RunFilterProxy::setText(const QString& text) {
    text_ = text.trimmed();
    invalidateFilter();
}

void RunFilterProxy::setStatus(std::optional<store::RunStatus> status) {
    status_ = status;
    invalidateFilter();
}

void RunFilterProxy::setTag(const QString& tag) {
    tag_ = tag.toStdString();
    invalidateFilter();
}

void RunFilterProxy::setProject(const std::string& path, bool only) {
    project_ = path;
    projectOnly_ = only && !path.empty();
    invalidate(); // filter and order
}

bool RunFilterProxy::isOfProject(const RunRecord& record) const {
    return !project_.empty() && record.run.project_path == project_;
}

bool RunFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const RunRecord* record = runs()->record(runs()->index(sourceRow, 0, sourceParent));
    if (!record) return false;
    const store::Run& r = record->run;
    if (status_ && r.status != *status_) return false;
    if (!tag_.empty() && std::find(r.tags.begin(), r.tags.end(), tag_) == r.tags.end())
        return false;
    // Learning-rate range tests are runs of their own kind: shown when their tag is chosen.
    if (tag_ != train::kLrFindTag &&
        std::find(r.tags.begin(), r.tags.end(), train::kLrFindTag) != r.tags.end())
        return false;
    if (projectOnly_ && !isOfProject(*record)) return false;
    if (text_.isEmpty()) return true;
    auto has = [&](const std::string& field) {
        return QString::fromStdString(field).contains(text_, Qt::CaseInsensitive);
    };
    return has(r.name) || has(r.note) || std::any_of(r.tags.begin(), r.tags.end(), has) ||
           QString::number(r.id) == text_;
}

bool RunFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
    if (!project_.empty() && !projectOnly_) {
        // The project's runs first, whichever way the column is sorted.
        const bool l = isOfProject(*runs()->record(left)), r = isOfProject(*runs()->record(right));
        if (l != r) return (sortOrder() == Qt::AscendingOrder) == l;
    }
    const QVariant a = left.data(RunTreeModel::SortRole), b = right.data(RunTreeModel::SortRole);
    if (!a.isValid() || !b.isValid()) return !a.isValid() && b.isValid();
    if (a.typeId() == QMetaType::QString)
        return QString::compare(a.toString(), b.toString(), Qt::CaseInsensitive) < 0;
    return QPartialOrdering::Less == QVariant::compare(a, b);
}

} // namespace myelin::ui
