#pragma once
// Feature Maps, the third inspection view: for one layer with [examples, channels, height,
// width] outputs, a grid of its channels on one of the run's probe examples at a recorded step,
// each channel scaled to its own min..max (dark to light); clicking a channel enlarges it beside
// the grid with its min, max and mean. Layer, step (slider over the recorded steps, or following
// the newest while a run goes), example (with a thumbnail of the input when it is an image) and
// the channel range are chosen above and below the grid. It reads the run store only and shows
// the run the Gradient Flow view shows; live, it re-reads every two seconds while shown and
// reads nothing while hidden. When nothing was captured it says why instead of an empty grid.
#include "inspect/shown_run.h"

#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>

#include <QImage>
#include <QRect>
#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QStackedWidget;

namespace myelin::ui {

class ChannelGrid;
class ChannelPanel;

class FeatureMapsView : public QWidget {
    Q_OBJECT

  public:
    explicit FeatureMapsView(QWidget* parent = nullptr);
    ~FeatureMapsView() override;

    // Shows `run` of the store at `storePath`; `live`: it is being recorded, so new captures
    // are read every two seconds (while shown) and the step follows the newest one.
    void showRun(const QString& storePath, int64_t run, bool live);
    void runFinished();
    void setLayer(const std::string& layer);
    // The recorded step nearest `step`; stops following the newest.
    void selectStep(int64_t step);
    void setExample(int example);
    // Channels first .. first + count - 1 (clipped to the layer's channels).
    void setChannelRange(int first, int count);
    // Enlarges a shown channel (as a click on it does); -1 closes the enlarged view.
    void enlargeChannel(int channel);

    int64_t run() const { return shownRun_.run(); }
    bool isLive() const { return shownRun_.live(); }
    std::vector<std::string> layers() const; // with feature maps, forward order
    std::string layer() const;
    const std::vector<int64_t>& steps() const { return steps_; } // the layer's recorded steps
    std::optional<int64_t> shownStep() const;
    int examples() const;
    int example() const { return example_; }
    int channels() const;
    int firstChannel() const { return first_; }
    int channelCount() const { return count_; }
    std::vector<int> shownChannels() const;
    // The stored value behind pixel (x, y) of `channel` for the shown example and step.
    float shownValue(int channel, int y, int x) const;
    // The channel's image as the grid draws it (one pixel per value); null when not shown.
    QImage channelImage(int channel) const;
    // Where the grid draws the channel, in grid() coordinates (empty when not shown).
    QRect channelRect(int channel) const;
    QWidget* grid() const;
    int enlargedChannel() const { return enlarged_; }
    QString enlargedText() const; // the enlarged channel's caption with min, max and mean
    QImage exampleThumbnail(int example) const; // null when the probe input is not an image
    QString message() const; // what the view says instead of the grid; empty when it shows one
    QString rangeText() const;

    // The grey a value scaled to [0, 1] of its channel's range is drawn in (0: the minimum).
    static QRgb shade(double t);

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    void reload();              // layers, then the current layer's steps and map
    void loadSteps();           // the layer's steps, then the map to show
    void loadMap(int64_t step); // reads one map (and the probe input once)
    void draw();                // tiles, enlarged channel, texts
    void updateStepControls();
    void updateExamples();
    void showMessage(const QString& text);
    QString emptyText();
    bool openStore(const QString& path);

    ShownRun shownRun_{this};
    bool stale_ = false; // asked to show something while hidden: read when shown
    std::string wantedLayer_;
    std::vector<train::RecordedLayer> layers_;
    std::vector<int64_t> steps_;
    std::optional<store::FeatureMap> map_;
    std::string mapLayer_; // the layer map_ belongs to
    std::optional<store::FeatureMap> input_;
    int example_ = 0;
    int first_ = 0;
    int count_ = 32;
    int enlarged_ = -1;

    QComboBox* layerBox_ = nullptr;
    QComboBox* exampleBox_ = nullptr;
    QLabel* exampleThumb_ = nullptr;
    QSpinBox* firstBox_ = nullptr;
    QComboBox* countBox_ = nullptr;
    QLabel* stateLabel_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QWidget* mapsPage_ = nullptr;
    ChannelGrid* grid_ = nullptr;
    ChannelPanel* panel_ = nullptr;
    QLabel* rangeLabel_ = nullptr;
    QSlider* stepSlider_ = nullptr;
    QLabel* stepLabel_ = nullptr;
    QCheckBox* followNewest_ = nullptr;
};

} // namespace myelin::ui
