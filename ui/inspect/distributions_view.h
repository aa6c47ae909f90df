#pragma once
// Distributions, the second inspection view: for one layer of a run, its activation or gradient
// histograms over the steps they were captured at, as a steps x values heatmap (every step's
// histogram re-binned to one common range, coloured by the share of values in each bin) or as
// percentile bands (5-95, 25-75, median) or as a ridgeline (TensorBoard's "offset" view: one
// curve per captured step, older ones further back; at most 24, evenly spread); below it, the zero
// fraction (or the NaN/Inf count) of every layer at every captured step in one strip (dead units
// show as a dark row, non-finite values as red cells), and
// which layers ever had NaN/Inf. It reads the run store only; it shows the run the Gradient Flow
// view shows.
#include "inspect/shown_run.h"
#include "widgets/change_marks.h"

#include <myelin/train/layer_inspection.h>

#include <QString>
#include <QWidget>

#include <memory>
#include <string>
#include <vector>

class QComboBox;
class QCPColorMap;
class QCPColorScale;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;
class QStackedWidget;

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

class DistributionsView : public QWidget {
    Q_OBJECT

  public:
    enum class Mode { Heatmap, Percentiles, Ridgeline };
    // What the strip under the plot shows per layer and captured step.
    enum class StripMetric { ZeroFraction, NonFinite };

    explicit DistributionsView(QWidget* parent = nullptr);
    ~DistributionsView() override;

    // Shows `run` of the store at `storePath`; `live`: re-read every two seconds while shown.
    void showRun(const QString& storePath, int64_t run, bool live);
    void runFinished();
    void setLayer(const std::string& layer);
    void setGradients(bool gradients); // false: activations
    void setMode(Mode mode);
    void setStripMetric(StripMetric metric);
    // Marks `step` (the step the badges and the Gradient Flow bars show) with a line across the
    // step axis of the plot and the strip; a negative step removes it.
    void markStep(int64_t step);
    int64_t markedStep() const { return markedStep_; }
    // Steps where the run was changed while paused, marked on the strip (and on the plot where
    // its x axis is the step).
    const std::vector<int64_t>& changeSteps() const { return stripChanges_->steps(); }

    int64_t run() const { return shownRun_.run(); }
    std::vector<std::string> layers() const; // with histograms, model order
    std::string layer() const;
    // What the heatmap holds: per captured step, the share of values in each of its bins (each
    // column sums to 1), over [valueLow(), valueHigh()].
    const std::vector<int64_t>& steps() const { return steps_; }
    const std::vector<std::vector<double>>& columns() const { return columns_; }
    double valueLow() const { return low_; }
    double valueHigh() const { return high_; }
    // The percentile bands' values at captured step index i: p5, p25, p50, p75, p95.
    const std::vector<std::vector<double>>& percentiles() const { return percentiles_; }
    // The captured-step indices the ridgeline draws, oldest first (empty in the other modes).
    const std::vector<size_t>& ridges() const { return ridges_; }
    // The strip: rows are stripLayers(), columns stripSteps(); values are zero fractions, or
    // NaN/Inf counts (activations + gradients) for StripMetric::NonFinite.
    const std::vector<std::string>& stripLayers() const { return stripLayers_; }
    const std::vector<int64_t>& stripSteps() const { return stripSteps_; }
    double stripValue(size_t layer, size_t step) const;
    QString message() const; // what it says instead of plots; empty when it plots
    QString nonFiniteText() const;

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    void reload();
    void loadLayer();
    void loadStrip();
    void draw();
    void drawRidgeline();
    void drawStrip(); // the zero strip and the state line
    void showMessage(const QString& text);
    bool openStore(const QString& path);

    ShownRun shownRun_{this};
    Mode mode_ = Mode::Heatmap;
    StripMetric stripMetric_ = StripMetric::ZeroFraction;
    int64_t markedStep_ = -1;
    QCPItemStraightLine* plotMarker_ = nullptr;
    QCPItemStraightLine* stripMarker_ = nullptr;
    std::vector<RunChange> changes_;
    std::unique_ptr<ChangeMarks> plotChanges_, stripChanges_;
    std::vector<train::RecordedLayer> layers_;
    std::vector<int64_t> steps_;
    std::vector<std::vector<double>> columns_;
    std::vector<std::vector<double>> percentiles_;
    std::vector<size_t> ridges_;
    double low_ = 0, high_ = 1;
    std::vector<std::string> stripLayers_;
    std::vector<int64_t> stripSteps_;
    std::vector<double> strip_; // row-major, NaN where not recorded

    QComboBox* layerBox_ = nullptr;
    QComboBox* kindBox_ = nullptr;
    QComboBox* modeBox_ = nullptr;
    QComboBox* stripBox_ = nullptr;
    QCPColorScale* stripScale_ = nullptr;
    QLabel* stateLabel_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QWidget* plotPage_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCPColorMap* heatmap_ = nullptr;
    QCustomPlot* stripPlot_ = nullptr;
    QCPColorMap* stripMap_ = nullptr;
    QLabel* nonFinite_ = nullptr;
};

} // namespace myelin::ui
