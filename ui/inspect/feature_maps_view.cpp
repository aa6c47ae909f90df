#include "inspect/feature_maps_view.h"

#include "inspect/feature_map_widgets.h"
#include "inspect/view_frame.h"
#include "widgets/theme.h"

#include <myelin/error.h>

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace myelin::ui {

namespace {

constexpr int kThumbnailSize = 44;
const int kChannelCounts[] = {16, 32, 64};

// One channel of one example as an image: each value scaled to the channel's own range;
// NaN and infinities in the error colour, so they stand out of any grey.
QImage renderChannel(const store::FeatureMap& map, int example, int channel,
                     const train::ChannelStats& stats) {
    QImage image(int(map.width), int(map.height), QImage::Format_RGB32);
    const double span = stats.max - stats.min;
    for (int y = 0; y < image.height(); ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        for (int x = 0; x < image.width(); ++x) {
            const double v = map.at(example, channel, y, x);
            // A constant channel (a dead ReLU's zeros) has no range: drawn as its minimum.
            line[x] = !std::isfinite(v)
                          ? colors::kError.rgb()
                          : FeatureMapsView::shade(span > 0 ? (v - stats.min) / span : 0.0);
        }
    }
    return image;
}

// The probe example as a picture: RGB for 3 channels, else its first channel in grey, over
// the example's own range.
QImage inputImage(const store::FeatureMap& input, int example) {
    const bool rgb = input.channels == 3;
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (int64_t c = 0; c < (rgb ? 3 : 1); ++c)
        for (int64_t y = 0; y < input.height; ++y)
            for (int64_t x = 0; x < input.width; ++x) {
                const double v = input.at(example, c, y, x);
                if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
            }
    const double span = high > low ? high - low : 1.0;
    const auto level = [&](int64_t c, int y, int x) {
        const double v = input.at(example, c, y, x);
        return std::isfinite(v) ? int(std::lround((v - low) / span * 255.0)) : 0;
    };
    QImage image(int(input.width), int(input.height), QImage::Format_RGB32);
    for (int y = 0; y < image.height(); ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        for (int x = 0; x < image.width(); ++x)
            line[x] = rgb ? qRgb(level(0, y, x), level(1, y, x), level(2, y, x))
                          : FeatureMapsView::shade(level(0, y, x) / 255.0);
    }
    return image;
}

} // namespace

// ---- the view -------------------------------------------------------------------------------

QRgb FeatureMapsView::shade(double t) {
    // From the theme's text colour (the minimum) to the surface (the maximum): a grey ramp in
    // the studio's own tones.
    t = std::clamp(t, 0.0, 1.0);
    const QColor& low = colors::kText;
    const QColor& high = colors::kSurface;
    const auto mix = [t](int a, int b) { return int(std::lround(a + (b - a) * t)); };
    return qRgb(mix(low.red(), high.red()), mix(low.green(), high.green()),
                mix(low.blue(), high.blue()));
}

FeatureMapsView::FeatureMapsView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("featureMapsView"));
    layerBox_ = new QComboBox(this);
    layerBox_->setObjectName(QStringLiteral("featureMapsLayer"));
    layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    exampleBox_ = new QComboBox(this);
    exampleBox_->setObjectName(QStringLiteral("featureMapsExample"));
    exampleBox_->setIconSize(QSize(24, 24));
    exampleBox_->setToolTip(tr("The probe example: one of the first validation examples, run "
                               "through the model at every capture"));
    exampleThumb_ = new QLabel(this);
    exampleThumb_->setObjectName(QStringLiteral("featureMapsThumbnail"));
    exampleThumb_->setFixedSize(kThumbnailSize, kThumbnailSize);
    exampleThumb_->setAlignment(Qt::AlignCenter);
    firstBox_ = new QSpinBox(this);
    firstBox_->setObjectName(QStringLiteral("featureMapsFirstChannel"));
    firstBox_->setToolTip(tr("The first channel shown"));
    countBox_ = new QComboBox(this);
    countBox_->setObjectName(QStringLiteral("featureMapsChannelCount"));
    for (int n : kChannelCounts)
        countBox_->addItem(QString::number(n), n);
    countBox_->setCurrentIndex(countBox_->findData(count_));
    stateLabel_ = new QLabel(this);
    stateLabel_->setObjectName(QStringLiteral("featureMapsState"));
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Layer"), this));
    top->addWidget(layerBox_);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Example"), this));
    top->addWidget(exampleBox_);
    top->addWidget(exampleThumb_);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Channels from"), this));
    top->addWidget(firstBox_);
    top->addWidget(new QLabel(tr("show"), this));
    top->addWidget(countBox_);
    top->addSpacing(12);
    top->addWidget(stateLabel_, 1);

    grid_ = new ChannelGrid(this);
    panel_ = new ChannelPanel(this);
    grid_->onClick = [this](int channel) { enlargeChannel(channel); };

    rangeLabel_ = new QLabel(this);
    rangeLabel_->setObjectName(QStringLiteral("featureMapsRange"));
    rangeLabel_->setWordWrap(true);
    stepSlider_ = new QSlider(Qt::Horizontal, this);
    stepSlider_->setObjectName(QStringLiteral("featureMapsStep"));
    stepLabel_ = new QLabel(this);
    stepLabel_->setMinimumWidth(150);
    followNewest_ = new QCheckBox(tr("Follow newest"), this);
    followNewest_->setObjectName(QStringLiteral("featureMapsFollow"));
    followNewest_->setToolTip(tr("Show each new capture as it arrives while a run goes"));
    auto* stepRow = new QHBoxLayout;
    stepRow->addWidget(new QLabel(tr("Step"), this));
    stepRow->addWidget(stepSlider_, 1);
    stepRow->addWidget(stepLabel_);
    stepRow->addWidget(followNewest_);
    auto* below = new QVBoxLayout;
    below->setContentsMargins(0, 0, 0, 0);
    below->addWidget(rangeLabel_);
    below->addLayout(stepRow);

    const ViewFrame frame = makeViewFrame(this, top, grid_, panel_, below,
                                          QStringLiteral("featureMapsMessage"), Qt::Horizontal);
    stack_ = frame.stack;
    message_ = frame.message;
    mapsPage_ = frame.plots;

    shownRun_.setPoll([this] {
        if (isVisible()) reload(); // hidden: nothing is read
    });
    connect(layerBox_, &QComboBox::activated, this, [this] {
        wantedLayer_ = layer();
        loadSteps();
    });
    connect(exampleBox_, &QComboBox::activated, this, [this](int index) { setExample(index); });
    connect(firstBox_, &QSpinBox::valueChanged, this,
            [this](int first) { setChannelRange(first, count_); });
    connect(countBox_, &QComboBox::activated, this,
            [this](int index) { setChannelRange(first_, countBox_->itemData(index).toInt()); });
    connect(stepSlider_, &QSlider::valueChanged, this, [this](int index) {
        if (index >= 0 && size_t(index) < steps_.size()) selectStep(steps_[size_t(index)]);
    });
    connect(followNewest_, &QCheckBox::toggled, this, [this](bool on) {
        if (on && !steps_.empty() && shownStep() != steps_.back()) loadMap(steps_.back());
    });
    panel_->clear(tr("Click a channel to enlarge it."));
    showMessage(tr("No run to show yet. The feature maps of convolution layers appear here once "
                   "a run has captured them (Training > Capture: feature maps every 500 steps)."));
}

FeatureMapsView::~FeatureMapsView() = default;

bool FeatureMapsView::openStore(const QString& path) {
    QString error;
    const bool open = shownRun_.open(path, &error);
    if (!error.isEmpty()) showMessage(tr("Cannot read the run store: %1").arg(error));
    return open;
}

void FeatureMapsView::showRun(const QString& storePath, int64_t run, bool live) {
    if (!openStore(storePath)) return;
    if (run != shownRun_.run()) {
        map_.reset();
        input_.reset();
        steps_.clear();
        layers_.clear();
        enlarged_ = -1;
        example_ = 0;
    }
    shownRun_.show(run, live);
    followNewest_->setChecked(live);
    if (isVisible())
        reload();
    else
        stale_ = true;
}

void FeatureMapsView::runFinished() {
    if (!shownRun_.finish()) return;
    if (isVisible())
        reload(); // the last captures
    else
        stale_ = true;
}

void FeatureMapsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (shownRun_.live() || stale_) reload();
}

void FeatureMapsView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

QString FeatureMapsView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

void FeatureMapsView::setLayer(const std::string& layer) {
    wantedLayer_ = layer;
    const int index = layerBox_->findData(QString::fromStdString(layer));
    if (index < 0 || index == layerBox_->currentIndex()) return;
    layerBox_->setCurrentIndex(index);
    if (isVisible())
        loadSteps();
    else
        stale_ = true;
}

std::vector<std::string> FeatureMapsView::layers() const {
    std::vector<std::string> names;
    for (const auto& l : layers_)
        names.push_back(l.name);
    return names;
}

std::string FeatureMapsView::layer() const {
    return layerBox_->currentData().toString().toStdString();
}

std::optional<int64_t> FeatureMapsView::shownStep() const {
    return map_ ? std::optional<int64_t>(map_->step) : std::nullopt;
}

int FeatureMapsView::examples() const {
    return map_ ? int(map_->examples) : 0;
}

int FeatureMapsView::channels() const {
    return map_ ? int(map_->channels) : 0;
}

std::vector<int> FeatureMapsView::shownChannels() const {
    std::vector<int> out;
    for (const auto& tile : grid_->tiles())
        out.push_back(tile.channel);
    return out;
}

float FeatureMapsView::shownValue(int channel, int y, int x) const {
    if (!map_ || channel < 0 || channel >= map_->channels || y < 0 || y >= map_->height || x < 0 ||
        x >= map_->width)
        return std::numeric_limits<float>::quiet_NaN();
    return map_->at(example_, channel, y, x);
}

QImage FeatureMapsView::channelImage(int channel) const {
    for (const auto& tile : grid_->tiles())
        if (tile.channel == channel) return tile.image;
    return {};
}

QRect FeatureMapsView::channelRect(int channel) const {
    return grid_->rectOf(channel);
}

QWidget* FeatureMapsView::grid() const {
    return grid_;
}

QString FeatureMapsView::enlargedText() const {
    return enlarged_ >= 0 ? panel_->caption() : QString();
}

QImage FeatureMapsView::exampleThumbnail(int example) const {
    if (!input_ || example < 0 || example >= input_->examples) return {};
    return inputImage(*input_, example);
}

QString FeatureMapsView::rangeText() const {
    return rangeLabel_->text();
}

QString FeatureMapsView::emptyText() {
    std::optional<int64_t> every;
    std::optional<store::MetricSample> last;
    try {
        every = train::feature_maps_interval(*shownRun_.store(), shownRun_.run());
        last = shownRun_.store()->nearest_metric_point(shownRun_.run(), "loss",
                                                       std::numeric_limits<int64_t>::max());
    } catch (const Error& e) {
        return tr("Cannot read run %1: %2")
            .arg(shownRun_.run())
            .arg(QString::fromStdString(e.what()));
    }
    if (every && *every == 0)
        return tr("Run #%1 captured no feature maps (capture is off: Training > Capture > "
                  "feature maps).")
            .arg(shownRun_.run());
    const QString interval = !every        ? tr("every few hundred steps")
                             : *every == 1 ? tr("every step")
                                           : tr("every %1 steps").arg(*every);
    if (shownRun_.live())
        return tr("Feature maps are captured %1 — none yet (run #%2 is at step %3).")
            .arg(interval)
            .arg(shownRun_.run())
            .arg(last ? last->step : 0);
    if (!every || !last || last->step < *every)
        return tr("Run #%1 ended at step %2, before its first feature-map capture (%3).")
            .arg(shownRun_.run())
            .arg(last ? last->step : 0)
            .arg(interval);
    return tr("Run #%1 captured no feature maps: no layer of its model has image-shaped "
              "outputs [channels, height, width] (convolution and pooling layers do).")
        .arg(shownRun_.run());
}

void FeatureMapsView::reload() {
    stale_ = false;
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    try {
        layers_ = train::layers_with_feature_maps(*shownRun_.store(), shownRun_.run());
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    {
        const QSignalBlocker blocker(layerBox_);
        const std::string keep = wantedLayer_.empty() ? layer() : wantedLayer_;
        layerBox_->clear();
        for (const auto& l : layers_)
            layerBox_->addItem(
                QString::fromStdString(l.kind.empty() ? l.name : l.name + " (" + l.kind + ")"),
                QString::fromStdString(l.name));
        const int index = layerBox_->findData(QString::fromStdString(keep));
        layerBox_->setCurrentIndex(index >= 0 ? index : 0);
    }
    if (layers_.empty()) {
        map_.reset();
        steps_.clear();
        stateLabel_->clear();
        updateExamples(); // none
        showMessage(emptyText());
        return;
    }
    loadSteps();
}

void FeatureMapsView::loadSteps() {
    if (!shownRun_.store() || shownRun_.run() < 0 || layerBox_->count() == 0) return;
    const std::string name = layer();
    try {
        steps_ = shownRun_.store()->feature_map_steps(shownRun_.run(), name);
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    if (steps_.empty()) return;
    // Following: the newest; otherwise the step shown so far (nearest, for another layer).
    const int64_t target = followNewest_->isChecked() || !map_ ? steps_.back() : map_->step;
    if (map_ && mapLayer_ == name && map_->step == target) {
        updateStepControls(); // nothing new to read
        if (stack_->currentWidget() != mapsPage_) draw();
        return;
    }
    loadMap(target);
}

void FeatureMapsView::loadMap(int64_t step) {
    if (!shownRun_.store() || shownRun_.run() < 0 || layerBox_->count() == 0) return;
    const std::string name = layer();
    try {
        auto map = shownRun_.store()->feature_map(shownRun_.run(), name, step);
        if (!map) { // gone since the layers were listed (the run was deleted)
            map_.reset();
            showMessage(emptyText());
            return;
        }
        map_ = std::move(map);
        mapLayer_ = name;
        if (!input_) input_ = shownRun_.store()->probe_input(shownRun_.run()); // once it is there
    } catch (const Error& e) {
        map_.reset();
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    example_ = std::clamp(example_, 0, int(map_->examples) - 1);
    if (enlarged_ >= map_->channels) enlarged_ = -1;
    draw();
}

void FeatureMapsView::selectStep(int64_t step) {
    {
        const QSignalBlocker blocker(followNewest_);
        followNewest_->setChecked(false); // a step chosen stays chosen
    }
    loadMap(step);
}

void FeatureMapsView::setExample(int example) {
    if (!map_ || example < 0 || example >= map_->examples) return;
    example_ = example;
    draw();
}

void FeatureMapsView::setChannelRange(int first, int count) {
    count_ = std::max(1, count);
    first_ = std::max(0, first);
    if (map_) first_ = std::min(first_, int(map_->channels) - 1);
    {
        const QSignalBlocker a(firstBox_), b(countBox_);
        firstBox_->setValue(first_);
        const int index = countBox_->findData(count_);
        if (index >= 0) countBox_->setCurrentIndex(index);
    }
    if (map_) draw();
}

void FeatureMapsView::enlargeChannel(int channel) {
    enlarged_ = map_ && channel >= 0 && channel < map_->channels ? channel : -1;
    draw();
}

void FeatureMapsView::updateExamples() {
    const QSignalBlocker blocker(exampleBox_);
    const int count = examples();
    if (exampleBox_->count() != count || exampleBox_->itemIcon(0).isNull() != !input_) {
        exampleBox_->clear();
        for (int k = 0; k < count; ++k) {
            const QImage thumb = exampleThumbnail(k);
            if (thumb.isNull())
                exampleBox_->addItem(tr("#%1").arg(k + 1));
            else
                exampleBox_->addItem(QPixmap::fromImage(thumb.scaled(24, 24, Qt::KeepAspectRatio,
                                                                     Qt::FastTransformation)),
                                     tr("#%1").arg(k + 1));
        }
    }
    exampleBox_->setCurrentIndex(example_);
    const QImage thumb = exampleThumbnail(example_);
    exampleThumb_->setVisible(!thumb.isNull());
    if (!thumb.isNull())
        exampleThumb_->setPixmap(QPixmap::fromImage(thumb.scaled(
            kThumbnailSize, kThumbnailSize, Qt::KeepAspectRatio, Qt::FastTransformation)));
}

void FeatureMapsView::updateStepControls() {
    const QSignalBlocker blocker(stepSlider_);
    stepSlider_->setRange(0, std::max(0, int(steps_.size()) - 1));
    const auto at = map_ ? std::find(steps_.begin(), steps_.end(), map_->step) : steps_.end();
    if (at != steps_.end()) stepSlider_->setValue(int(at - steps_.begin()));
    stepLabel_->setText(map_ ? tr("step %1 (%2 of %3)")
                                   .arg(map_->step)
                                   .arg(at - steps_.begin() + 1)
                                   .arg(steps_.size())
                             : QString());
    if (steps_.empty()) {
        stateLabel_->clear();
        return;
    }
    const QString captures =
        steps_.size() == 1 ? tr("1 capture") : tr("%1 captures").arg(steps_.size());
    stateLabel_->setText(
        shownRun_.live()
            ? tr("● live: %1, newest step %2").arg(captures).arg(steps_.back())
            : tr("%1, steps %2 to %3").arg(captures).arg(steps_.front()).arg(steps_.back()));
}

void FeatureMapsView::draw() {
    if (!map_) return;
    stack_->setCurrentWidget(mapsPage_);
    const int channels = int(map_->channels);
    {
        const QSignalBlocker blocker(firstBox_);
        firstBox_->setRange(0, std::max(0, channels - 1));
        first_ = std::min(first_, std::max(0, channels - 1));
        firstBox_->setValue(first_);
    }
    std::vector<ChannelTile> tiles;
    double low = std::numeric_limits<double>::infinity(), high = -low;
    int64_t nonfinite = 0;
    for (int c = first_; c < std::min(channels, first_ + count_); ++c) {
        ChannelTile tile;
        tile.channel = c;
        tile.stats = train::channel_stats(*map_, example_, c);
        tile.image = renderChannel(*map_, example_, c, tile.stats);
        if (std::isfinite(tile.stats.min)) low = std::min(low, tile.stats.min);
        if (std::isfinite(tile.stats.max)) high = std::max(high, tile.stats.max);
        nonfinite += tile.stats.nonfinite;
        tiles.push_back(std::move(tile));
    }
    const int shown = int(tiles.size());
    grid_->setTiles(std::move(tiles), enlarged_);

    if (enlarged_ >= 0) {
        const train::ChannelStats stats = train::channel_stats(*map_, example_, enlarged_);
        panel_->showChannel(renderChannel(*map_, example_, enlarged_, stats), stats,
                            tr("%1 · channel %2 · example #%3 · step %4\n%5")
                                .arg(layerBox_->currentText())
                                .arg(enlarged_)
                                .arg(example_ + 1)
                                .arg(map_->step)
                                .arg(statsText(stats)));
    } else {
        panel_->clear(tr("Click a channel to enlarge it."));
    }
    QString range =
        tr("Channels %1–%2 of %3, %4×%5 each; each is scaled to its own range, dark = its "
           "minimum, light = its maximum. Across them, example #%6's values at step %7 range "
           "from %8 to %9.")
            .arg(first_)
            .arg(first_ + shown - 1)
            .arg(channels)
            .arg(map_->width)
            .arg(map_->height)
            .arg(example_ + 1)
            .arg(map_->step)
            .arg(number(low), number(high));
    if (nonfinite > 0) range += tr(" NaN or infinite values (%1) are drawn in red.").arg(nonfinite);
    rangeLabel_->setText(range);
    updateExamples();
    updateStepControls();
}

} // namespace myelin::ui
