#pragma once
// Gradient flow, the first inspection view: for one run in the store, every layer's gradient
// norm (or update/weight ratio, or weight norm) over the steps, one line per layer on a log
// axis coloured by the layer's category, and below it one bar per layer in model order at the
// selected step. It reads the run store only — the same rows `myelin runs layers` prints — so a
// run looks the same live and reopened later. While a run goes it reads the rows newer than the
// ones it holds four times a second (and replots only while shown); a long finished run is read
// as min/max buckets, which keep spikes. Every move of the selected step also gives the layers'
// health (badgesChanged), which the main window draws on the canvas.
#include "inspect/shown_run.h"
#include "widgets/change_marks.h"

#include <myelin/train/layer_inspection.h>

#include <QColor>
#include <QString>
#include <QWidget>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QLabel;
class QSlider;
class QStackedWidget;

namespace myelin::ui {

class GradientFlowView : public QWidget {
    Q_OBJECT

  public:
    // GradientMagnitude: lines of max |grad| per layer; bars of max |grad| (light) with mean
    // |grad| (dark) in front, as the plot_grad_flow recipe draws them.
    enum class Measure { GradientNorm, UpdateRatio, WeightNorm, GradientMagnitude };

    explicit GradientFlowView(QWidget* parent = nullptr);
    ~GradientFlowView() override;

    // The store the runs are read from; refills the run list.
    void setStorePath(const QString& path);
    // Shows a run; `live`: it is being recorded now, so new rows are read as they arrive and
    // the selected step follows the newest one.
    void showRun(int64_t run, bool live = false);
    // The live run ended: read what it wrote last and stop polling.
    void runFinished();
    // Re-reads the list of runs in the store (keeps the shown run selected).
    void refreshRuns();
    void setMeasure(Measure measure);
    // Moves the selected step (the bars) to the recorded step nearest `step`.
    void selectStep(int64_t step);
    // Keep the selected step on the newest recorded one (live), or leave it where it is.
    void setFollowNewest(bool follow);
    // Draws `layer`'s line bold and the others faint (empty: all alike).
    void highlightLayer(const std::string& layer);
    const std::string& highlightedLayer() const { return highlighted_; }

    int64_t run() const { return shownRun_.run(); }
    const QString& storePath() const { return shownRun_.path(); }
    bool isLive() const { return shownRun_.live(); }
    Measure measure() const { return measure_; }
    std::optional<int64_t> selectedStep() const { return table_.norms_step; }
    // Steps where the run was changed while paused, marked on the lines.
    const std::vector<int64_t>& changeSteps() const { return changeMarks_->steps(); }
    // The layers with a line, in model order (their module names).
    std::vector<std::string> plottedLayers() const;
    // The value the line of `layer` shows at `step`; unset when it has no point there.
    std::optional<double> plottedValue(const std::string& layer, int64_t step) const;
    // The bar of `layer` at the selected step; unset when it has none.
    std::optional<double> barValue(const std::string& layer) const;
    // GradientMagnitude: the mean |grad| bar of `layer` (barValue is its max |grad|).
    std::optional<double> meanBarValue(const std::string& layer) const;
    // What the view says instead of plots, when it has nothing to plot; empty when it plots.
    QString message() const;
    QCustomPlot* linesPlot() const { return lines_; }
    QCustomPlot* barsPlot() const { return bars_; }

  signals:
    // The layers' health at the selected step (after every move of the step, live or not);
    // the main window puts it on the canvas as badges. Empty: no run, or nothing recorded.
    void badgesChanged(const std::vector<myelin::train::LayerBadge>& badges);
    // Another run is shown (the other inspection views follow it).
    void runShown(qint64 run, bool live);
    // The selected step or the recorded range moved (the canvas's step scrubber mirrors it).
    void stepsChanged(qint64 run, qint64 selected, qint64 first, qint64 last, bool following);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    void reload();               // everything of the run, for the current measure
    void readNewRows();          // live: rows newer than the ones held
    void moveBars(int64_t step); // to the recorded step nearest `step`
    void updateBars();           // the selected step's values
    void updateStepControls();
    void showMessage(const QString& text);
    void setLiveRendering(bool live);
    void replot();
    std::optional<double> valueOfBar(const QCPBars* bars, const std::string& layer) const;
    std::string family() const;
    bool openStore(const QString& path);

    ShownRun shownRun_; // the store, the run, live, the timer reading new rows
    Measure measure_ = Measure::GradientNorm;
    std::vector<train::RecordedLayer> layers_;      // with a series of the measure, model order
    std::vector<train::RecordedLayer> modelLayers_; // the run's model, read once per reload
    std::map<std::string, QCPGraph*> graphs_;
    std::map<std::string, int64_t> lastStep_; // per layer: the newest step held
    std::vector<int64_t> steps_;              // the recorded norm steps (of the first layer)
    train::LayerStatsTable table_;            // the bars' step
    std::string highlighted_;
    std::map<std::string, QColor> colors_; // each layer's own line colour

    QComboBox* runBox_ = nullptr;
    QComboBox* measureBox_ = nullptr;
    QLabel* stateLabel_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QWidget* plotPage_ = nullptr; // the plots and the step row
    QCustomPlot* lines_ = nullptr;
    QCustomPlot* bars_ = nullptr;
    QCPBars* barItems_ = nullptr;
    QCPBars* meanBars_ = nullptr; // GradientMagnitude only
    QCPItemStraightLine* stepMarker_ = nullptr;
    QCPItemStraightLine* guide_ = nullptr; // the 1e-3 update-ratio guide
    std::unique_ptr<ChangeMarks> changeMarks_;
    QSlider* stepSlider_ = nullptr;
    QLabel* stepLabel_ = nullptr;
    QCheckBox* followNewest_ = nullptr;
};

} // namespace myelin::ui
