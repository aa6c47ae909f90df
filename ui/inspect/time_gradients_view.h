#pragma once
// Gradient through Time, the inspection view for recurrent layers (RNN, LSTM, GRU): for the
// chosen layer, the norm of dL/dh_t on the run's probe examples against the time step t, one
// line per layer of its stack and direction (linear or log y axis), at a recorded step chosen
// with the slider below (or following the newest while a run goes; the canvas's step scrubber
// moves it too); and under it, across the recorded steps, how far the gradient shrinks through
// time (each line's smallest over its largest per-step norm), with the shown step marked.
//
// It reads the run store only (train::TimeGradientEvent rows, captured every
// training.capture.feature_maps_every steps) and shows the run the Gradient Flow view shows;
// live, it re-reads every two seconds while shown. available() says whether the run has
// recurrent layers at all: the shell shows the view's tab only then (availabilityChanged); a
// live run's availability is re-checked every two seconds even while the view is hidden.
#include "inspect/shown_run.h"

#include <myelin/store/run_store.h>

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;
class QSlider;
class QStackedWidget;

namespace myelin::ui {

class TimeGradientsView : public QWidget {
    Q_OBJECT

  public:
    explicit TimeGradientsView(QWidget* parent = nullptr);
    ~TimeGradientsView() override;

    // Shows `run` of the store at `storePath`; `live`: it is being recorded, so new captures are
    // read every two seconds (while shown) and the step follows the newest one.
    void showRun(const QString& storePath, int64_t run, bool live);
    void runFinished();
    void setLayer(const std::string& layer);
    // The recorded step nearest `step`; stops following the newest.
    void selectStep(int64_t step);
    void setFollowNewest(bool follow);
    void setLogScale(bool log);

    int64_t run() const { return shownRun_.run(); }
    bool isLive() const { return shownRun_.live(); }
    // The run has recurrent layers (recorded series, or recurrent kinds among its layers).
    bool available() const { return available_; }
    std::vector<std::string> layers() const; // with series, forward order
    std::string layer() const;
    const std::vector<int64_t>& steps() const { return steps_; } // the layer's recorded steps
    std::optional<int64_t> shownStep() const;
    // The series the upper plot draws (by stack layer, then direction).
    const std::vector<store::TimeGradientSeries>& shownSeries() const { return shown_; }
    // The lower plot's values: per series index, per recorded step, smallest / largest norm.
    const std::vector<std::vector<double>>& shrinkage() const { return shrinkage_; }
    bool logScale() const;
    QString message() const; // what the view says instead of plots; empty when it plots
    QCustomPlot* plot() const { return plot_; }
    QCustomPlot* shrinkagePlot() const { return shrinkPlot_; }

    // "layer 0 forward", "reverse" ... as the legend names a series.
    static QString seriesName(const store::TimeGradientSeries& series, bool stacked,
                              bool bidirectional);

  signals:
    void availabilityChanged(bool available);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    void reload();          // layers, availability, then the current layer
    void loadLayer();       // its steps, the shrinkage over them, the shown step
    void loadStep(int64_t); // reads the series at one step
    void draw();
    void drawShrinkage();
    void updateStepControls();
    void setAvailable(bool available);
    void refreshAvailability(); // while hidden and live: only whether the tab should show
    void showMessage(const QString& text);
    bool openStore(const QString& path);

    ShownRun shownRun_{this};
    bool available_ = false;
    std::vector<std::string> layers_;
    std::vector<int64_t> steps_;
    std::vector<store::TimeGradientSeries> shown_;
    std::vector<std::string> shrinkNames_; // per series of the layer, in shown_'s order
    std::vector<std::vector<double>> shrinkage_;

    QComboBox* layerBox_ = nullptr;
    QCheckBox* logBox_ = nullptr;
    QLabel* stateLabel_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QWidget* plotPage_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCustomPlot* shrinkPlot_ = nullptr;
    QCPItemStraightLine* marker_ = nullptr;
    QSlider* stepSlider_ = nullptr;
    QLabel* stepLabel_ = nullptr;
    QCheckBox* followNewest_ = nullptr;
};

} // namespace myelin::ui
