#pragma once
// Compare runs (issue 14, item 3): any recorded series of the selected runs overlaid, one colour
// per run, smoothed with TensorBoard's debiased EMA (raw drawn faint behind), on a linear or log
// y axis against step, epoch or wall time; a fork's inherited history drawn dimmed up to its
// branch step; and the runs' parameters side by side, by default only those that differ.
//
// Wiring: setStorePath(the store the studio trains into), then setRuns(the runs selected in
// the runs browser). reload() re-reads the store (new points of running runs, renamed runs).
#include "runs/runs_compare_plot.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QCPAbstractItem;
class QCustomPlot;
class QLabel;
class QShowEvent;
class QSlider;
class QStackedWidget;
class QTableWidget;
class QTimer;
class QVBoxLayout;

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

class SeriesPicker;

class RunsCompareView : public QWidget {
    Q_OBJECT
  public:
    using XAxis = compare::XAxis;
    // The curves of one run on one plot (see compare::DrawnRun).
    enum class Curve { Line, Raw, History, HistoryRaw, Join };

    explicit RunsCompareView(QWidget* parent = nullptr);
    ~RunsCompareView() override;

    void setStorePath(const QString& path);
    // The runs to compare, in legend (and colour) order; ids not in the store get a note.
    void setRuns(const QList<qint64>& runs);
    QList<qint64> runs() const { return runs_; }
    // Reads the runs again from the store (their series, names and parameters).
    void reload();
    // Reads the new points of the selected runs that are still running (a 2 s timer calls it
    // while the view is shown and one of them runs).
    void refresh();
    bool isLive() const; // one of the selected runs is running

    // Every series key of the selected runs, in the picker's order.
    QStringList availableSeries() const;
    // One plot per key, in this order (ticked in the picker). Kept when the runs change; keys
    // no selected run has show a note on their plot.
    void setSeries(const QStringList& keys);
    QStringList series() const { return series_; }

    void setSmoothing(double weight); // clamped to [0, kMaxSmoothingWeight]
    double smoothing() const { return smoothing_; }
    void setLogY(bool on);
    bool logY() const { return logY_; }
    void setXAxis(XAxis x);
    XAxis xAxis() const { return xAxis_; }
    void setOnlyDifferences(bool on);
    bool onlyDifferences() const;
    // A run hidden stays in the legends, greyed, with its curves not drawn (clicking its legend
    // entry toggles it).
    void setRunHidden(qint64 run, bool hidden);
    bool isRunHidden(qint64 run) const { return hiddenRuns_.count(run) > 0; }

    // What is drawn, for tests and benches: a run's curve on the plot of `key` as (x, y)
    // points; the plot itself (null when `key` is not plotted).
    QVector<QPointF> plotted(const QString& key, qint64 run, Curve curve) const;
    QCustomPlot* plot(const QString& key) const;
    // The text standing in for the plots (empty while they show); the notes under a plot;
    // the notes above the parameter table.
    QString message() const;
    QString notes(const QString& key) const;
    QString paramNotes() const;
    // The parameter keys the table shows, top to bottom.
    QStringList shownParams() const;

  signals:
    // The series picked changed (ticks in the picker or setSeries).
    void seriesChanged(const QStringList& keys);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    struct RunEntry {
        qint64 id = 0;
        QString label; // "#7 name"
        QColor color;
        std::optional<compare::Lineage> lineage;
        std::optional<compare::Anchors> epochs; // read on first use
        std::map<std::string, std::string> params;
        bool running = false;
        // Settings changed while the run was paused (store events of kind "change"): step, what.
        std::vector<std::pair<int64_t, std::string>> changes;
    };
    struct PlotEntry {
        QString key;
        QWidget* box = nullptr;
        QCustomPlot* plot = nullptr;
        QLabel* notes = nullptr;
        std::map<int64_t, compare::DrawnRun> drawn;
        std::vector<QCPAbstractItem*> changeMarks; // dashed lines at the runs' changes
        bool fitted = false;                       // its axes were fitted to the curves once
    };

    bool openStore();
    void readRuns();
    std::set<std::string> readSeriesKeys() const; // of the selected runs
    void fillPicker();
    // keepRanges: the axes stay where the person moved them (a smoothing change).
    void redraw(bool keepRanges = false);
    void fillTable();
    void showMessage(const QString& text);
    const compare::LineageSeries& seriesOf(RunEntry& run, const std::string& key);
    void replotAll();

    QString storePath_;
    std::unique_ptr<store::RunStore> store_;
    QList<qint64> runs_;
    std::vector<RunEntry> entries_; // the runs found in the store, in runs_ order
    QStringList runProblems_;       // runs not in the store, lineage problems
    QStringList lineageNotes_;      // "#3 continues #1 from step 300 ..."
    std::map<std::pair<qint64, std::string>, compare::LineageSeries> cache_;
    QStringList series_;
    std::set<qint64> hiddenRuns_;
    double smoothing_;
    bool logY_ = false;
    XAxis xAxis_ = XAxis::Step;

    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QComboBox* xBox_ = nullptr;
    QCheckBox* logBox_ = nullptr;
    QSlider* smoothSlider_ = nullptr;
    QLabel* smoothLabel_ = nullptr;
    SeriesPicker* picker_ = nullptr;
    QLabel* runNotes_ = nullptr;
    QLabel* noPlot_ = nullptr;
    QVBoxLayout* plotLayout_ = nullptr;
    std::vector<std::unique_ptr<PlotEntry>> plots_;
    QCheckBox* onlyDiff_ = nullptr;
    QLabel* paramNotes_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTimer* live_ = nullptr;
};

} // namespace myelin::ui
