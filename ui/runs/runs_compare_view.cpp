#include "runs/runs_compare_view.h"

#include "inspect/view_frame.h"
#include "runs/runs_compare_picker.h"
#include "runs/smoothing.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>

namespace myelin::ui {

namespace {

constexpr int kSliderSteps = 1000; // the smoothing slider's value / 1000 is the weight
constexpr int kPlotMinHeight = 240;
constexpr int kLivePollMs = 2000;

QLabel* noteLabel(QWidget* parent, const QString& name) {
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setProperty("class", QStringLiteral("componentDoc"));
    label->setWordWrap(true);
    label->setVisible(false);
    return label;
}

} // namespace

RunsCompareView::RunsCompareView(QWidget* parent)
    : QWidget(parent), smoothing_(kDefaultSmoothingWeight) {
    setObjectName(QStringLiteral("runsCompareView"));

    xBox_ = new QComboBox(this);
    xBox_->setObjectName(QStringLiteral("compareXAxis"));
    xBox_->addItem(tr("Step"), int(XAxis::Step));
    xBox_->addItem(tr("Epoch"), int(XAxis::Epoch));
    xBox_->addItem(tr("Wall time"), int(XAxis::WallTime));
    xBox_->setToolTip(tr("Epoch: steps placed between the recorded epoch ends.\nWall time: "
                         "seconds since the run started (a fork continues its parent's time)."));
    logBox_ = new QCheckBox(tr("Log y"), this);
    logBox_->setObjectName(QStringLiteral("compareLogY"));
    logBox_->setToolTip(tr("A log axis cannot show values ≤ 0: they are left out (the notes "
                           "under the plot say how many)."));
    smoothSlider_ = new QSlider(Qt::Horizontal, this);
    smoothSlider_->setObjectName(QStringLiteral("compareSmoothing"));
    smoothSlider_->setRange(0, int(std::lround(kMaxSmoothingWeight * kSliderSteps)));
    smoothSlider_->setFixedWidth(180);
    smoothSlider_->setToolTip(tr("Debiased exponential moving average, as TensorBoard's: 0 "
                                 "draws the raw values; above 0 they are drawn faint behind."));
    smoothLabel_ = new QLabel(this);
    smoothLabel_->setObjectName(QStringLiteral("compareSmoothingValue"));
    smoothLabel_->setFixedWidth(
        smoothLabel_->fontMetrics().horizontalAdvance(QStringLiteral("0.000")) + 4);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("X axis"), this));
    top->addWidget(xBox_);
    top->addSpacing(14);
    top->addWidget(logBox_);
    top->addSpacing(14);
    top->addWidget(new QLabel(tr("Smoothing"), this));
    top->addWidget(smoothSlider_);
    top->addWidget(smoothLabel_);
    top->addStretch(1);

    // Left: the series picker.
    picker_ = new SeriesPicker(this);
    connect(picker_, &SeriesPicker::toggled, this, [this](const QString& key, bool on) {
        QStringList keys = series_;
        if (on && !keys.contains(key)) keys << key;
        if (!on) keys.removeAll(key);
        setSeries(keys);
    });

    // Right, top: the plots, one per picked series.
    auto* plotsPanel = new QWidget(this);
    auto* plotsOuter = new QVBoxLayout(plotsPanel);
    plotsOuter->setContentsMargins(0, 0, 0, 0);
    runNotes_ = noteLabel(plotsPanel, QStringLiteral("compareRunNotes"));
    noPlot_ = new QLabel(tr("Pick a series on the left to plot it."), plotsPanel);
    noPlot_->setObjectName(QStringLiteral("compareNoSeries"));
    noPlot_->setProperty("class", QStringLiteral("viewMessage"));
    noPlot_->setAlignment(Qt::AlignCenter);
    auto* plotsInner = new QWidget;
    plotLayout_ = new QVBoxLayout(plotsInner);
    plotLayout_->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(plotsPanel);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(plotsInner);
    plotsOuter->addWidget(runNotes_);
    plotsOuter->addWidget(noPlot_, 1);
    plotsOuter->addWidget(scroll, 1);

    // Right, bottom: the parameter table.
    auto* tablePanel = new QWidget(this);
    auto* tableLayout = new QVBoxLayout(tablePanel);
    tableLayout->setContentsMargins(0, 4, 0, 0);
    onlyDiff_ = new QCheckBox(tr("Only differences"), tablePanel);
    onlyDiff_->setObjectName(QStringLiteral("compareOnlyDifferences"));
    onlyDiff_->setChecked(true);
    paramNotes_ = noteLabel(tablePanel, QStringLiteral("compareParamNotes"));
    auto* heading = new QLabel(tr("PARAMETERS"), tablePanel);
    heading->setProperty("class", QStringLiteral("sectionHeading"));
    auto* tableTop = new QHBoxLayout;
    tableTop->addWidget(heading);
    tableTop->addSpacing(12);
    tableTop->addWidget(onlyDiff_);
    tableTop->addSpacing(12);
    tableTop->addWidget(paramNotes_, 1);
    table_ = new QTableWidget(tablePanel);
    table_->setObjectName(QStringLiteral("compareParams"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setWordWrap(false);
    tableLayout->addLayout(tableTop);
    tableLayout->addWidget(table_, 1);

    auto* rightSplit = new QSplitter(Qt::Vertical, this);
    rightSplit->addWidget(plotsPanel);
    rightSplit->addWidget(tablePanel);
    rightSplit->setStretchFactor(0, 3);
    rightSplit->setStretchFactor(1, 1);
    rightSplit->setSizes({720, 240}); // proportions: the plots get three quarters
    auto* body = new QSplitter(Qt::Horizontal, this);
    body->addWidget(picker_);
    body->addWidget(rightSplit);
    body->setStretchFactor(0, 0);
    body->setStretchFactor(1, 1);
    body->setSizes({230, 900});

    message_ = new QLabel(this);
    message_->setObjectName(QStringLiteral("compareMessage"));
    message_->setAlignment(Qt::AlignCenter);
    message_->setWordWrap(true);
    message_->setProperty("class", QStringLiteral("viewMessage"));
    stack_ = new QStackedWidget(this);
    stack_->addWidget(message_);
    stack_->addWidget(body);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 8, 10, 8);
    layout->addLayout(top);
    layout->addWidget(stack_, 1);

    setSmoothing(smoothing_);
    connect(xBox_, &QComboBox::activated, this,
            [this](int index) { setXAxis(XAxis(xBox_->itemData(index).toInt())); });
    connect(logBox_, &QCheckBox::toggled, this, &RunsCompareView::setLogY);
    connect(smoothSlider_, &QSlider::valueChanged, this,
            [this](int value) { setSmoothing(double(value) / kSliderSteps); });
    connect(onlyDiff_, &QCheckBox::toggled, this, &RunsCompareView::fillTable);
    live_ = new QTimer(this);
    live_->setInterval(kLivePollMs);
    connect(live_, &QTimer::timeout, this, [this] {
        if (isVisible()) refresh(); // hidden, it reads nothing; showEvent catches up
    });
    redraw();
}

RunsCompareView::~RunsCompareView() = default;

bool RunsCompareView::openStore() {
    if (store_) return true;
    QString error;
    store_ = openStoreForReading(storePath_, &error);
    if (!store_)
        showMessage(error.isEmpty() ? tr("No run store yet: runs appear here once a model is "
                                         "trained.")
                                    : tr("Cannot read the run store: %1").arg(error));
    return store_ != nullptr;
}

void RunsCompareView::setStorePath(const QString& path) {
    if (path == storePath_ && store_) return;
    storePath_ = path;
    store_.reset();
    reload();
}

void RunsCompareView::setRuns(const QList<qint64>& runs) {
    runs_ = runs;
    reload();
}

void RunsCompareView::reload() {
    cache_.clear();
    readRuns();
    fillPicker();
    fillTable();
    redraw();
    if (isLive())
        live_->start();
    else
        live_->stop();
}

bool RunsCompareView::isLive() const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [](const RunEntry& entry) { return entry.running; });
}

void RunsCompareView::refresh() {
    if (!store_ || !isLive()) return;
    const QStringList keysBefore = availableSeries();
    try {
        for (RunEntry& entry : entries_) {
            if (!entry.running) continue;
            entry.running = store_->run(entry.id).status == store::RunStatus::Running;
            entry.epochs.reset();
            for (auto it = cache_.begin(); it != cache_.end();)
                it = it->first.first == entry.id ? cache_.erase(it) : std::next(it);
        }
    } catch (const Error&) {
        reload(); // a run went away: read the selection again, saying what is missing
        return;
    }
    // The picker is rebuilt only when a key appeared (rebuilding loses its scroll position).
    QStringList keysNow;
    for (const std::string& key : readSeriesKeys())
        keysNow << QString::fromStdString(key);
    QStringList sortedBefore = keysBefore;
    sortedBefore.sort();
    keysNow.sort();
    if (keysNow != sortedBefore) fillPicker();
    redraw();
    if (!isLive()) live_->stop();
}

void RunsCompareView::readRuns() {
    entries_.clear();
    runProblems_.clear();
    lineageNotes_.clear();
    if (runs_.isEmpty() || !openStore()) return;
    std::set<qint64> seen;
    for (qint64 id : runs_) {
        if (!seen.insert(id).second) continue;
        RunEntry entry;
        entry.id = id;
        try {
            const store::Run run = store_->run(id);
            entry.label = tr("#%1 %2").arg(id).arg(QString::fromStdString(run.name));
            entry.running = run.status == store::RunStatus::Running;
            entry.lineage = compare::readLineage(*store_, id);
            entry.params = store_->params(id);
            for (const store::RunEvent& e : store_->events(id))
                if (e.kind == "change") entry.changes.emplace_back(e.step, e.message);
        } catch (const store::StoreError& e) {
            // An unknown id, or a store that cannot be read now (locked, damaged).
            const bool unknown =
                std::string_view(e.what()).find("does not exist") != std::string_view::npos;
            runProblems_ << (unknown ? tr("Run %1 is not in the store.").arg(id)
                                     : tr("Cannot read run %1: %2").arg(id).arg(e.what()));
            continue;
        } catch (const Error& e) {
            runProblems_ << tr("Cannot read run %1: %2").arg(id).arg(e.what());
            continue;
        }
        for (const std::string& problem : entry.lineage->problems)
            runProblems_ << QString::fromStdString(problem);
        if (!entry.lineage->ancestors.empty()) {
            const compare::Ancestor& parent = entry.lineage->ancestors.back();
            lineageNotes_ << (parent.branchKnown
                                  ? tr("#%1 continues #%2 from step %3 (its history is drawn "
                                       "dimmed).")
                                        .arg(id)
                                        .arg(parent.run)
                                        .arg(parent.lastStep)
                                  : tr("#%1 continues #%2 (its history is drawn dimmed).")
                                        .arg(id)
                                        .arg(parent.run));
        }
        entries_.push_back(std::move(entry));
    }
    // A run keeps its colour when others join or leave the selection: the colour of its id,
    // or the next one no other selected run has.
    const int palette = int(std::size(colors::kRunColors));
    std::vector<bool> taken(size_t(palette), false);
    for (RunEntry& entry : entries_) {
        int index = int((entry.id - 1) % palette + palette) % palette;
        for (int tries = 0; tries < palette && taken[size_t(index)]; ++tries)
            index = (index + 1) % palette;
        taken[size_t(index)] = true;
        entry.color = runColor(index);
    }
}

QStringList RunsCompareView::availableSeries() const {
    return picker_->keys();
}

std::set<std::string> RunsCompareView::readSeriesKeys() const {
    std::set<std::string> keys;
    for (const RunEntry& entry : entries_) {
        try {
            for (const std::string& key : store_->metric_keys(entry.id))
                keys.insert(key);
        } catch (const Error&) {
            // readRuns read this run a moment ago; a failure now shows when it is drawn
        }
    }
    return keys;
}

void RunsCompareView::fillPicker() {
    const std::set<std::string> keys = readSeriesKeys();
    picker_->setKeys(keys, series_);
    // Nothing picked yet: the loss, when the runs have one.
    if (series_.isEmpty() && keys.count("loss")) setSeries({QStringLiteral("loss")});
}

void RunsCompareView::setSeries(const QStringList& keys) {
    QStringList unique;
    for (const QString& key : keys)
        if (!key.isEmpty() && !unique.contains(key)) unique << key;
    const bool changed = unique != series_;
    series_ = unique;
    picker_->setTicked(series_);
    redraw();
    if (changed) emit seriesChanged(series_);
}

void RunsCompareView::setSmoothing(double weight) {
    smoothing_ = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, kMaxSmoothingWeight);
    {
        const QSignalBlocker blocker(smoothSlider_);
        smoothSlider_->setValue(int(std::lround(smoothing_ * kSliderSteps)));
    }
    smoothLabel_->setText(QString::number(smoothing_, 'f', 3));
    redraw(true);
}

void RunsCompareView::setLogY(bool on) {
    logY_ = on;
    const QSignalBlocker blocker(logBox_);
    logBox_->setChecked(on);
    redraw();
}

void RunsCompareView::setXAxis(XAxis x) {
    xAxis_ = x;
    xBox_->setCurrentIndex(xBox_->findData(int(x)));
    redraw();
}

void RunsCompareView::setRunHidden(qint64 run, bool hidden) {
    if (hidden)
        hiddenRuns_.insert(run);
    else
        hiddenRuns_.erase(run);
    redraw(true); // the person's zoom stays
}

void RunsCompareView::setOnlyDifferences(bool on) {
    onlyDiff_->setChecked(on); // its toggled handler refills the table
}

bool RunsCompareView::onlyDifferences() const {
    return onlyDiff_->isChecked();
}

void RunsCompareView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

const compare::LineageSeries& RunsCompareView::seriesOf(RunEntry& run, const std::string& key) {
    const auto slot = std::make_pair(run.id, key);
    auto it = cache_.find(slot);
    if (it == cache_.end())
        it = cache_.emplace(slot, compare::readSeries(*store_, *run.lineage, key)).first;
    if (xAxis_ == XAxis::WallTime) compare::readWallTimes(*store_, it->second, key);
    return it->second;
}

void RunsCompareView::redraw(bool keepRanges) {
    if (!stack_) return; // not built yet
    if (runs_.isEmpty()) {
        if (!storePath_.isEmpty() && !openStore()) return;
        showMessage(tr("Select two or more runs to compare."));
        return;
    }
    if (!openStore()) return;
    if (entries_.empty()) {
        showMessage(runProblems_.join(QLatin1Char('\n')));
        return;
    }
    stack_->setCurrentIndex(1);
    QStringList runNotes = runProblems_ + lineageNotes_;
    if (entries_.size() == 1)
        runNotes.prepend(tr("One run selected: select another to compare with it."));
    runNotes_->setText(runNotes.join(QLatin1Char('\n')));
    runNotes_->setVisible(!runNotes.isEmpty());
    noPlot_->setVisible(series_.isEmpty());

    // One plot per picked key, in order; plots of keys no longer picked go.
    std::vector<std::unique_ptr<PlotEntry>> plots;
    for (const QString& key : series_) {
        auto old = std::find_if(plots_.begin(), plots_.end(),
                                [&](const auto& p) { return p && p->key == key; });
        if (old != plots_.end()) {
            plots.push_back(std::move(*old));
            continue;
        }
        auto entry = std::make_unique<PlotEntry>();
        entry->key = key;
        entry->box = new QWidget;
        auto* boxLayout = new QVBoxLayout(entry->box);
        boxLayout->setContentsMargins(0, 0, 0, 6);
        entry->plot = new QCustomPlot(entry->box);
        entry->plot->setObjectName(QStringLiteral("comparePlot"));
        entry->plot->setMinimumHeight(kPlotMinHeight);
        compare::setUpComparePlot(entry->plot);
        PlotEntry* raw = entry.get();
        connect(entry->plot, &QCustomPlot::legendClick, this,
                [this, raw](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
                    auto* entryItem = qobject_cast<QCPPlottableLegendItem*>(item);
                    if (!entryItem) return;
                    for (const auto& [run, graphs] : raw->drawn) {
                        if (graphs.line != entryItem->plottable()) continue;
                        // Queued: redrawing deletes the legend item the plot is still handling.
                        const qint64 id = run;
                        QMetaObject::invokeMethod(
                            this, [this, id] { setRunHidden(id, !isRunHidden(id)); },
                            Qt::QueuedConnection);
                        break;
                    }
                });
        entry->notes = noteLabel(entry->box, QStringLiteral("comparePlotNotes"));
        boxLayout->addWidget(entry->plot, 1);
        boxLayout->addWidget(entry->notes);
        plots.push_back(std::move(entry));
    }
    for (auto& stale : plots_)
        if (stale) delete stale->box;
    plots_ = std::move(plots);
    for (size_t i = 0; i < plots_.size(); ++i)
        plotLayout_->insertWidget(int(i), plots_[i]->box, 1); // moves a kept one into place

    try {
        if (xAxis_ == XAxis::Epoch)
            for (RunEntry& entry : entries_)
                if (!entry.epochs)
                    entry.epochs = compare::readEpochAnchors(*store_, *entry.lineage);
        for (auto& plot : plots_) {
            const compare::PlotOptions options{xAxis_, smoothing_, logY_,
                                               keepRanges && plot->fitted};
            plot->fitted = true;
            std::vector<compare::RunCurves> curves;
            const std::string key = plot->key.toStdString();
            for (size_t i = 0; i < entries_.size(); ++i) {
                RunEntry& entry = entries_[i];
                curves.push_back({entry.id, entry.label, entry.color, &seriesOf(entry, key),
                                  entry.epochs ? &*entry.epochs : nullptr,
                                  hiddenRuns_.count(entry.id) > 0});
            }
            QStringList notes =
                compare::drawRuns(plot->plot, plot->key, curves, options, plot->drawn);
            // Changes made while a run was paused: a dashed line in the run's colour at the step
            // (on the step axis), said in the notes.
            for (QCPAbstractItem* item : plot->changeMarks)
                plot->plot->removeItem(item);
            plot->changeMarks.clear();
            for (const RunEntry& entry : entries_) {
                if (hiddenRuns_.count(entry.id)) continue;
                for (const auto& [step, what] : entry.changes) {
                    if (xAxis_ == XAxis::Step) {
                        auto* line = new QCPItemStraightLine(plot->plot);
                        line->point1->setCoords(double(step), 0);
                        line->point2->setCoords(double(step), 1);
                        line->setPen(QPen(entry.color, 1, Qt::DashLine));
                        plot->changeMarks.push_back(line);
                    }
                    notes << tr("%1 changed after step %2: %3")
                                 .arg(entry.label)
                                 .arg(step)
                                 .arg(QString::fromStdString(what));
                }
            }
            plot->notes->setText(notes.join(QLatin1Char('\n')));
            plot->notes->setVisible(!notes.isEmpty());
        }
    } catch (const Error& e) {
        showMessage(tr("Cannot read the runs: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    replotAll();
}

void RunsCompareView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (isLive()) refresh(); // catch up with what was recorded while hidden
    replotAll();
}

void RunsCompareView::replotAll() {
    if (!isVisible()) return; // a hidden plot has no size to paint into; shown, it paints
    for (auto& plot : plots_)
        plot->plot->replot(QCustomPlot::rpQueuedReplot);
}

void RunsCompareView::fillTable() {
    std::vector<std::map<std::string, std::string>> params;
    for (const RunEntry& entry : entries_)
        params.push_back(entry.params);
    const std::vector<compare::ParamRow> rows = compare::paramRows(params);
    const bool onlyDiff = onlyDiff_->isChecked();
    int differing = 0;
    for (const auto& row : rows)
        differing += row.differs;

    table_->clear();
    table_->setColumnCount(int(entries_.size()) + 1);
    table_->setHorizontalHeaderItem(0, new QTableWidgetItem(tr("Parameter")));
    for (size_t i = 0; i < entries_.size(); ++i) {
        auto* header = new QTableWidgetItem(entries_[i].label);
        header->setForeground(entries_[i].color);
        table_->setHorizontalHeaderItem(int(i) + 1, header);
    }
    table_->setRowCount(0);
    for (const auto& row : rows) {
        if (onlyDiff && !row.differs) continue;
        const int r = table_->rowCount();
        table_->insertRow(r);
        auto* keyItem = new QTableWidgetItem(QString::fromStdString(row.key));
        keyItem->setToolTip(keyItem->text());
        table_->setItem(r, 0, keyItem);
        for (size_t i = 0; i < row.values.size(); ++i) {
            const auto& value = row.values[i];
            auto* item =
                new QTableWidgetItem(value ? QString::fromStdString(*value) : tr("(not set)"));
            item->setToolTip(item->text());
            if (!value) item->setForeground(colors::kFaintText);
            if (row.differs) item->setBackground(colors::kDiffCell);
            table_->setItem(r, int(i) + 1, item);
        }
    }
    table_->resizeColumnsToContents();
    for (int c = 0; c < table_->columnCount(); ++c)
        table_->setColumnWidth(c, std::min(table_->columnWidth(c), 320));

    QString note;
    if (entries_.size() < 2)
        note = tr("Select two or more runs to compare their parameters.");
    else if (rows.empty())
        note = tr("The selected runs recorded no parameters.");
    else if (differing == 0)
        note = tr("All %1 parameters are the same in the selected runs.").arg(rows.size());
    else
        note = tr("%1 of %2 parameters differ (highlighted).").arg(differing).arg(rows.size());
    paramNotes_->setText(note);
    paramNotes_->setVisible(true);
}

QVector<QPointF> RunsCompareView::plotted(const QString& key, qint64 run, Curve curve) const {
    for (const auto& plot : plots_) {
        if (plot->key != key) continue;
        const auto it = plot->drawn.find(run);
        if (it == plot->drawn.end()) return {};
        const compare::DrawnRun& d = it->second;
        switch (curve) {
        case Curve::Line:
            return compare::graphPoints(d.line);
        case Curve::Raw:
            return compare::graphPoints(d.raw);
        case Curve::History:
            return compare::graphPoints(d.history);
        case Curve::HistoryRaw:
            return compare::graphPoints(d.historyRaw);
        case Curve::Join:
            return compare::graphPoints(d.join);
        }
    }
    return {};
}

QCustomPlot* RunsCompareView::plot(const QString& key) const {
    for (const auto& plot : plots_)
        if (plot->key == key) return plot->plot;
    return nullptr;
}

QString RunsCompareView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

QString RunsCompareView::notes(const QString& key) const {
    for (const auto& plot : plots_)
        if (plot->key == key) return plot->notes->text();
    return {};
}

QString RunsCompareView::paramNotes() const {
    return paramNotes_->text();
}

QStringList RunsCompareView::shownParams() const {
    QStringList keys;
    for (int r = 0; r < table_->rowCount(); ++r)
        keys << table_->item(r, 0)->text();
    return keys;
}

} // namespace myelin::ui
