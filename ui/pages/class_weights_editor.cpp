// The class-weights table of the Training page and the worker that reads the data's classes
// (class_weights_editor.h).
#include "pages/class_weights_editor.h"

#include "pages/page_text.h"

#include <myelin/train/class_weights.h>

#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <exception>

namespace myelin::ui {

// --- ClassCountsLoader ------------------------------------------------------------------------

namespace {
struct CountsResult {
    train::ClassCounts counts;
    QString error;
};
} // namespace

void ClassCountsLoader::request(const spec::DataSpec& data, const std::filesystem::path& dir,
                                uint64_t seed) {
    Key key{data, dir, seed};
    // Loader settings do not change the split.
    const spec::DataSpec defaults;
    key.data.batch_size = defaults.batch_size;
    key.data.num_workers = defaults.num_workers;
    key.data.shuffle = defaults.shuffle;
    key.data.drop_last = defaults.drop_last;
    if (wanted_ && *wanted_ == key) return;
    wanted_ = key;
    if (!running_) start();
}

void ClassCountsLoader::start() {
    running_ = true;
    const Key key = *wanted_;
    auto* watcher = new QFutureWatcher<CountsResult>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, key] {
        watcher->deleteLater();
        running_ = false;
        if (!(wanted_ && *wanted_ == key)) {
            start(); // the spec changed while this one was read
            return;
        }
        const CountsResult r = watcher->result();
        loaded_ = key;
        known_ = r.error.isEmpty();
        names_ = r.counts.names;
        counts_ = r.counts.counts;
        error_ = r.error;
        emit changed();
    });
    // The task works on copies; the result comes back on the GUI thread.
    watcher->setFuture(QtConcurrent::run([key] {
        CountsResult r;
        try {
            r.counts = train::training_class_counts(key.data, key.dir, key.seed);
            if (r.counts.names.empty())
                r.error = QObject::tr("The data has no classes (its targets are numbers).");
        } catch (const std::exception& e) {
            r.error = QString::fromUtf8(e.what());
        } catch (...) {
            r.error = QObject::tr("The data could not be read (unknown error).");
        }
        return r;
    }));
    emit changed();
}

// --- ClassWeightsEditor -----------------------------------------------------------------------

namespace {
enum Column { kClass, kCount, kWeight };

QString weightText(double v) {
    return QString::number(v, 'g', 6);
}
} // namespace

ClassWeightsEditor::ClassWeightsEditor(ClassCountsLoader* classes, QWidget* parent)
    : QWidget(parent), classes_(classes) {
    setObjectName(QStringLiteral("classWeights"));
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(4);

    view_ = new QTableWidget(0, 3, this);
    view_->setObjectName(QStringLiteral("classWeightsTable"));
    view_->setHorizontalHeaderLabels({tr("Class"), tr("Examples"), tr("Weight")});
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setSectionResizeMode(kClass, QHeaderView::Stretch);
    view_->horizontalHeader()->setSectionResizeMode(kCount, QHeaderView::ResizeToContents);
    view_->horizontalHeader()->setSectionResizeMode(kWeight, QHeaderView::ResizeToContents);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                           QAbstractItemView::AnyKeyPressed);
    view_->setToolTip(tr("Each class's weight in the loss (PyTorch's weight=): a class with "
                         "weight 2 counts twice. Examples: the class's count in the training "
                         "split. Double-click a weight to change it."));
    column->addWidget(view_);

    auto* buttons = new QHBoxLayout;
    buttons->setSpacing(6);
    balance_ = new QPushButton(tr("Balance classes"), this);
    balance_->setObjectName(QStringLiteral("classWeightsBalance"));
    balance_->setToolTip(tr("Weights from the training split's class counts: n_samples / "
                            "(n_classes × count), scikit-learn's \"balanced\". Rare classes "
                            "weigh more."));
    reset_ = new QPushButton(tr("Reset"), this);
    reset_->setObjectName(QStringLiteral("classWeightsReset"));
    reset_->setToolTip(tr("Every class weighs 1 (no weights)."));
    buttons->addWidget(balance_);
    buttons->addWidget(reset_);
    buttons->addStretch(1);
    column->addLayout(buttons);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("classWeightsStatus"));
    status_->setWordWrap(true);
    status_->setProperty("class", QStringLiteral("fieldWarning"));
    status_->hide();
    column->addWidget(status_);

    connect(view_, &QTableWidget::itemChanged, this, &ClassWeightsEditor::onItemChanged);
    connect(balance_, &QPushButton::clicked, this, &ClassWeightsEditor::balance);
    connect(reset_, &QPushButton::clicked, this, [this] {
        if (!table_.empty()) emit edited(graph::NumberTable{}, tr("Reset the class weights"));
    });
    connect(classes_, &ClassCountsLoader::changed, this, &ClassWeightsEditor::rebuild);
    rebuild();
}

void ClassWeightsEditor::showTable(const graph::NumberTable& table) {
    table_ = table;
    rebuild();
}

std::vector<double> ClassWeightsEditor::shownWeights() const {
    std::vector<double> out;
    for (int r = 0; r < view_->rowCount(); ++r)
        out.push_back(view_->item(r, kWeight)->data(Qt::UserRole).toDouble());
    return out;
}

void ClassWeightsEditor::rebuild() {
    showing_ = true;
    const std::vector<std::string>& names = classes_->names();
    std::vector<std::string> extra; // named in the project, not a class of the data
    for (const auto& [name, v] : table_.by_name)
        if (std::find(names.begin(), names.end(), name) == names.end()) extra.push_back(name);
    view_->setRowCount(int(names.size() + extra.size()));
    QLocale locale;
    auto setRow = [&](int r, const std::string& name, const QString& count, double weight,
                      bool known) {
        auto* nameItem = new QTableWidgetItem(
            known ? QString::fromStdString(name)
                  : tr("%1 (not in the data)").arg(QString::fromStdString(name)));
        nameItem->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        nameItem->setData(Qt::UserRole, QString::fromStdString(name));
        auto* countItem = new QTableWidgetItem(count);
        countItem->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        countItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto* weightItem = new QTableWidgetItem(weightText(weight));
        weightItem->setData(Qt::UserRole, weight);
        weightItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        view_->setItem(r, kClass, nameItem);
        view_->setItem(r, kCount, countItem);
        view_->setItem(r, kWeight, weightItem);
    };
    for (size_t i = 0; i < names.size(); ++i) {
        const double* w = table_.find(names[i]);
        const QString count = i < classes_->counts().size()
                                  ? locale.toString(qlonglong(classes_->counts()[i]))
                                  : QString();
        setRow(int(i), names[i], count, w ? *w : 1.0, true);
    }
    for (size_t i = 0; i < extra.size(); ++i)
        setRow(int(names.size() + i), extra[i], QString(), *table_.find(extra[i]),
               !classes_->known());
    // Up to 10 rows without scrolling.
    const int rows = std::clamp(view_->rowCount(), 1, 10);
    view_->setFixedHeight(view_->horizontalHeader()->height() +
                          rows * view_->verticalHeader()->defaultSectionSize() +
                          2 * view_->frameWidth());

    balance_->setEnabled(classes_->known());
    reset_->setEnabled(!table_.empty());
    QString status;
    if (classes_->loading())
        status = tr("Reading the data's classes…");
    else if (!classes_->error().isEmpty())
        status = tr("The data's classes are not known: %1").arg(classes_->error());
    else if (classes_->known() && !extra.empty())
        status = tr("The data has no class named %1: training refuses these weights.")
                     .arg(QString::fromStdString(extra.front()));
    status_->setText(status);
    status_->setVisible(!status.isEmpty());
    showing_ = false;
}

graph::NumberTable ClassWeightsEditor::tableOf(const std::vector<double>& weights) const {
    graph::NumberTable out;
    const std::vector<std::string>& names = classes_->names();
    for (size_t i = 0; i < names.size() && i < weights.size(); ++i)
        if (weights[i] != 1.0) out.by_name.emplace_back(names[i], weights[i]);
    for (const auto& [name, v] : table_.by_name)
        if (std::find(names.begin(), names.end(), name) == names.end())
            out.by_name.emplace_back(name, v);
    return out;
}

void ClassWeightsEditor::onItemChanged(QTableWidgetItem* item) {
    if (showing_ || item->column() != kWeight) return;
    const int row = item->row();
    const std::string name = view_->item(row, kClass)->data(Qt::UserRole).toString().toStdString();
    bool ok = false;
    const double v = QLocale().toDouble(item->text().trimmed(), &ok);
    const double value = ok ? v : item->text().trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(value) || value < 0) {
        const QString why = tr("The weight of %1 must be a number >= 0, got \"%2\".")
                                .arg(QString::fromStdString(name), item->text());
        rebuild();
        status_->setText(why);
        status_->show();
        return;
    }
    graph::NumberTable after;
    if (row < int(classes_->names().size())) {
        std::vector<double> weights = shownWeights();
        weights[size_t(row)] = value;
        after = tableOf(weights);
    } else {
        after = table_;
        for (auto& [n, w] : after.by_name)
            if (n == name) w = value;
    }
    if (after == table_) {
        rebuild();
        return;
    }
    emit edited(
        after,
        tr("Change the weight of %1 to %2").arg(QString::fromStdString(name), weightText(value)));
}

void ClassWeightsEditor::balance() {
    if (!classes_->known()) return;
    const graph::NumberTable after = tableOf(train::balanced_class_weights(classes_->counts()));
    if (after != table_) emit edited(after, tr("Balance the class weights"));
}

} // namespace myelin::ui
