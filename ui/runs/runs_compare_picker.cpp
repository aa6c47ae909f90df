#include "runs/runs_compare_picker.h"

#include <myelin/spec/components.h>

#include <QLineEdit>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace myelin::ui {

namespace {

QString lossGroup() {
    return QObject::tr("Loss and metrics");
}
QString progressGroup() {
    return QObject::tr("Optimizer and progress");
}
QString otherGroup() {
    return QObject::tr("Other");
}

// The group of a series key: the loss and metrics first, then the optimizer and the run's
// progress, then the per-layer families (grad_norm/<layer>, ...), then the rest.
QString groupOf(const QString& key) {
    if (spec::describe_metric(key.toStdString())) return lossGroup();
    if (key == QLatin1String("lr") || key == QLatin1String("samples_per_second") ||
        key == QLatin1String("epoch"))
        return progressGroup();
    const qsizetype slash = key.indexOf(QLatin1Char('/'));
    if (slash > 0) return QObject::tr("%1 per layer").arg(key.left(slash));
    return otherGroup();
}

int groupRank(const QString& group) {
    if (group == lossGroup()) return 0;
    if (group == progressGroup()) return 1;
    if (group == otherGroup()) return 3;
    return 2;
}

// Keys grouped in the picker's order; "loss" leads its group.
std::vector<std::pair<QString, QStringList>> groupKeys(const std::set<std::string>& keys) {
    std::map<std::pair<int, QString>, QStringList> groups;
    for (const std::string& key : keys) {
        const QString k = QString::fromStdString(key);
        const QString group = groupOf(k);
        QStringList& list = groups[{groupRank(group), group}];
        if (k == QLatin1String("loss"))
            list.prepend(k);
        else
            list.append(k);
    }
    std::vector<std::pair<QString, QStringList>> out;
    for (auto& [rank, list] : groups)
        out.emplace_back(rank.second, list);
    return out;
}

} // namespace

SeriesPicker::SeriesPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("compareSeriesFilter"));
    filter_->setPlaceholderText(tr("Filter series"));
    filter_->setClearButtonEnabled(true);
    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("compareSeries"));
    tree_->setHeaderHidden(true);
    tree_->setRootIsDecorated(true);
    tree_->setToolTip(tr("Tick a series to plot it for every selected run"));
    layout->addWidget(filter_);
    layout->addWidget(tree_, 1);
    connect(filter_, &QLineEdit::textChanged, this, &SeriesPicker::applyFilter);
    connect(tree_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item) {
        if (filling_ || !item->parent()) return;
        emit toggled(item->data(0, Qt::UserRole).toString(), item->checkState(0) == Qt::Checked);
    });
}

void SeriesPicker::setKeys(const std::set<std::string>& keys, const QStringList& ticked) {
    filling_ = true;
    tree_->clear();
    for (const auto& [group, list] : groupKeys(keys)) {
        auto* groupItem = new QTreeWidgetItem(tree_, {group});
        groupItem->setFlags(Qt::ItemIsEnabled);
        groupItem->setToolTip(0, tr("%1 (%n series)", nullptr, int(list.size())).arg(group));
        QFont bold = groupItem->font(0);
        bold.setBold(true);
        groupItem->setFont(0, bold);
        for (const QString& key : list) {
            auto* item = new QTreeWidgetItem(groupItem, {key});
            item->setData(0, Qt::UserRole, key);
            item->setToolTip(0, key); // per-layer keys can be wider than the picker
            item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
            item->setCheckState(0, ticked.contains(key) ? Qt::Checked : Qt::Unchecked);
        }
        // Per-layer families can hold hundreds of keys: open only where something is ticked.
        const bool any = std::any_of(list.begin(), list.end(),
                                     [&](const QString& k) { return ticked.contains(k); });
        groupItem->setExpanded(groupRank(group) < 2 || any);
    }
    filling_ = false;
    applyFilter(filter_->text());
}

QStringList SeriesPicker::keys() const {
    QStringList keys;
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        const QTreeWidgetItem* group = tree_->topLevelItem(g);
        for (int i = 0; i < group->childCount(); ++i)
            keys << group->child(i)->data(0, Qt::UserRole).toString();
    }
    return keys;
}

void SeriesPicker::setTicked(const QStringList& ticked) {
    filling_ = true;
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = tree_->topLevelItem(g);
        for (int i = 0; i < group->childCount(); ++i) {
            QTreeWidgetItem* item = group->child(i);
            const bool on = ticked.contains(item->data(0, Qt::UserRole).toString());
            item->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
            if (on) group->setExpanded(true);
        }
    }
    filling_ = false;
}

void SeriesPicker::applyFilter(const QString& text) {
    for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = tree_->topLevelItem(g);
        int shown = 0;
        for (int i = 0; i < group->childCount(); ++i) {
            QTreeWidgetItem* item = group->child(i);
            const bool match = item->text(0).contains(text, Qt::CaseInsensitive);
            item->setHidden(!match);
            shown += match;
        }
        group->setHidden(shown == 0);
        if (!text.isEmpty() && shown > 0) group->setExpanded(true);
    }
}

} // namespace myelin::ui
