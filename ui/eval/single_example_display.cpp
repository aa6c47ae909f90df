// The Try-one-example view's displays: the input, the prediction (top-k probability bars or
// the predicted values) and one layer's activation (a grid of feature maps for [C, H, W]
// outputs, a histogram of the values otherwise).
#include "eval/example_render.h"
#include "eval/single_example_view.h"
#include "inspect/feature_map_widgets.h"
#include "widgets/theme.h"

#include <QLabel>
#include <QListWidget>
#include <QStackedWidget>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace myelin::ui {

namespace {

constexpr int kTopClasses = 5;
constexpr int kMostChannels = 64;
constexpr int kHistogramBins = 30;
constexpr int kInputSide = 168; // the input picture's side in pixels

std::vector<double> hostValues(const Tensor& t) {
    const Tensor x = t.reshape({-1}).to(DType::Float64).contiguous();
    return std::vector<double>(x.data<double>(), x.data<double>() + x.numel());
}

// Every channel of a [C, H, W] activation as a tile scaled to its own range.
std::vector<ChannelTile> channelTiles(const Tensor& activation) {
    const Tensor x = activation.to(DType::Float32).contiguous();
    const int64_t channels = std::min<int64_t>(x.size(0), kMostChannels);
    const int64_t height = x.size(1), width = x.size(2);
    const float* v = x.data<float>();
    std::vector<ChannelTile> tiles;
    for (int64_t c = 0; c < channels; ++c) {
        const float* map = v + c * height * width;
        train::ChannelStats s;
        s.min = std::numeric_limits<double>::infinity();
        s.max = -s.min;
        double sum = 0;
        int64_t finite = 0;
        for (int64_t i = 0; i < height * width; ++i) {
            if (!std::isfinite(map[i])) {
                ++s.nonfinite;
                continue;
            }
            s.min = std::min(s.min, double(map[i]));
            s.max = std::max(s.max, double(map[i]));
            sum += map[i];
            ++finite;
        }
        if (finite == 0) s.min = s.max = 0;
        s.mean = finite ? sum / double(finite) : 0;
        QImage image(int(width), int(height), QImage::Format_RGB32);
        const double span = s.max - s.min;
        for (int y = 0; y < image.height(); ++y) {
            auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
            for (int px = 0; px < image.width(); ++px) {
                const double value = map[y * width + px];
                line[px] = !std::isfinite(value)
                               ? colors::kError.rgb()
                               : FeatureMapsView::shade(span > 0 ? (value - s.min) / span : 0.0);
            }
        }
        tiles.push_back({int(c), image, s});
    }
    return tiles;
}

} // namespace

void SingleExampleView::showInput(const Tensor& raw, const QString& caption, const Tensor& target) {
    QString text = caption;
    if (target.defined() && target.numel() > 0) {
        if (!classNames_.empty())
            text +=
                tr(" — true class: %1").arg(eval::classLabel(classNames_, target.item<int64_t>()));
        else
            text += tr(" — true value: %1").arg(eval::exampleValuesText(target, 4));
    }
    const QImage image = eval::exampleImage(raw);
    if (!image.isNull()) {
        inputPicture_->setPixmap(QPixmap::fromImage(
            image.scaled(kInputSide, kInputSide, Qt::KeepAspectRatio, Qt::FastTransformation)));
        inputPicture_->show();
        inputText_->setText(text);
    } else {
        inputPicture_->clear();
        inputPicture_->hide();
        inputText_->setText(text + QStringLiteral("\n") + eval::exampleValuesText(raw, 16));
    }
}

void SingleExampleView::showPrediction(const Tensor& target) {
    top_.clear();
    predicted_ = -1;
    probabilities_->clearPlottables();
    probabilities_->clearItems();
    if (classNames_.empty()) {
        // Regression: the predicted values, beside the target when it is known.
        QString text = tr("Predicted: %1").arg(eval::exampleValuesText(output_, 8));
        if (target.defined() && target.numel() == output_.numel()) {
            const auto p = hostValues(output_), t = hostValues(target);
            if (p.size() == 1) text += tr(" (residual %1)").arg(p[0] - t[0], 0, 'g', 4);
        }
        predictionText_->setText(text);
        probabilities_->hide();
        return;
    }
    // Softmax of the output, as the Evaluation computes it; argmax the first largest.
    const std::vector<double> logits = hostValues(output_);
    const double top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t c = 0; c < p.size(); ++c)
        sum += p[c] = std::exp(logits[c] - top);
    for (double& v : p)
        v /= sum;
    predicted_ = 0;
    for (size_t c = 0; c < logits.size(); ++c) {
        if (std::isnan(logits[c])) {
            predicted_ = int64_t(c);
            break;
        }
        if (logits[c] > logits[size_t(predicted_)]) predicted_ = int64_t(c);
    }
    std::vector<int64_t> order(p.size());
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
    for (size_t k = 0; k < order.size() && k < size_t(kTopClasses); ++k)
        top_.emplace_back(order[k], p[size_t(order[k])]);
    QString text = tr("Predicted: <b>%1</b> (p %2)")
                       .arg(eval::classLabel(classNames_, predicted_).toHtmlEscaped(),
                            eval::probabilityText(p[size_t(predicted_)]));
    if (target.defined() && target.numel() == 1) {
        const int64_t t = target.item<int64_t>();
        text += t == predicted_ ? tr(" — correct") : tr(" — wrong");
    }
    predictionText_->setText(text);

    // The top classes as horizontal bars, the most probable on top.
    auto* bars = new QCPBars(probabilities_->yAxis, probabilities_->xAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colors::kAccent);
    bars->setWidth(0.65);
    QVector<double> keys, values;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t k = 0; k < top_.size(); ++k) {
        const double key = double(top_.size() - k);
        keys << key;
        values << top_[k].second;
        ticker->addTick(key, eval::classLabel(classNames_, top_[k].first));
    }
    bars->setData(keys, values, true);
    // Each bar's probability at its end.
    for (int k = 0; k < keys.size(); ++k) {
        auto* label = new QCPItemText(probabilities_);
        label->position->setAxes(probabilities_->xAxis, probabilities_->yAxis);
        label->position->setCoords(values[k], keys[k]);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setColor(colors::kText);
        label->setText(eval::probabilityText(values[k]));
    }
    probabilities_->yAxis->setTicker(ticker);
    probabilities_->yAxis->setRange(0.4, double(top_.size()) + 0.6);
    probabilities_->xAxis->setRange(0, 1.15); // room for the numbers
    probabilities_->xAxis->ticker()->setTickCount(5);
    probabilities_->xAxis->setLabel(tr("probability"));
    probabilities_->show();
    probabilities_->replot();
}

void SingleExampleView::showLayer(int row) {
    if (row < 0 || row >= int(activations_.size())) {
        layerTitle_->clear();
        return;
    }
    const Activation& a = activations_[size_t(row)];
    const QString name = QString::fromStdString(a.layer);
    if (a.values.dim() == 3) {
        const int64_t channels = a.values.size(0);
        grid_->setTiles(channelTiles(a.values), -1);
        layerTitle_->setText(
            channels > kMostChannels
                ? tr("%1: the first %2 of %3 feature maps, each over its own range (dark: low)")
                      .arg(name)
                      .arg(kMostChannels)
                      .arg(channels)
                : tr("%1: %2 feature maps, each over its own range (dark: low)")
                      .arg(name)
                      .arg(channels));
        layerStack_->setCurrentWidget(grid_);
        return;
    }
    const std::vector<double> values = hostValues(a.values);
    double low = std::numeric_limits<double>::infinity(), high = -low, sum = 0;
    int64_t finite = 0;
    for (double v : values)
        if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v), sum += v, ++finite;
    histogram_->clearPlottables();
    if (finite > 0) {
        const double width = high > low ? (high - low) / kHistogramBins : 1.0;
        QVector<double> centres(kHistogramBins), counts(kHistogramBins, 0.0);
        for (int b = 0; b < kHistogramBins; ++b)
            centres[b] = low + (b + 0.5) * width;
        for (double v : values)
            if (std::isfinite(v))
                counts[std::clamp(int((v - low) / width), 0, kHistogramBins - 1)] += 1;
        auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
        bars->setPen(Qt::NoPen);
        bars->setBrush(colors::kAccent);
        bars->setWidth(width * 0.9);
        bars->setData(centres, counts, true);
        histogram_->xAxis->setRange(low - width, high + width);
        histogram_->yAxis->setRange(0, *std::max_element(counts.begin(), counts.end()) * 1.1);
    }
    histogram_->replot();
    layerTitle_->setText(tr("%1: %2 values, min %3, max %4, mean %5")
                             .arg(name)
                             .arg(values.size())
                             .arg(finite ? low : 0.0, 0, 'g', 4)
                             .arg(finite ? high : 0.0, 0, 'g', 4)
                             .arg(finite ? sum / double(finite) : 0.0, 0, 'g', 4));
    layerStack_->setCurrentWidget(histogram_);
}

void SingleExampleView::selectLayer(const std::string& layer) {
    for (size_t i = 0; i < activations_.size(); ++i)
        if (activations_[i].layer == layer) layerList_->setCurrentRow(int(i));
}

std::string SingleExampleView::selectedLayer() const {
    const int row = layerList_->currentRow();
    return row >= 0 && row < int(activations_.size()) ? activations_[size_t(row)].layer
                                                      : std::string();
}

bool SingleExampleView::showsFeatureMaps() const {
    return layerStack_->currentWidget() == grid_ && !grid_->tiles().empty();
}

QWidget* SingleExampleView::featureMapGrid() const {
    return grid_;
}

} // namespace myelin::ui
