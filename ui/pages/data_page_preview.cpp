// The Data page's preview, computed: computePreview runs train::make_data on a worker thread
// (QtConcurrent::run, the result back on the GUI thread through a QFutureWatcher) and turns its
// first training examples into pictures or table rows, its class counts or target histogram
// (core's train::summarize); the debounced scheduling around it starts one load at a time and
// drops the results of specs that changed meanwhile.
#include "pages/data_page.h"

#include "document/project_document.h"
#include "pages/data_page_preview.h"
#include "pages/page_text.h"

#include <myelin/data/readers.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>
#include <myelin/train/capture.h>
#include <myelin/train/data_setup.h>

#include <QEventLoop>
#include <QFutureWatcher>
#include <QLabel>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

namespace myelin::ui {

namespace {

constexpr int kPreviewExamples = 24;
constexpr int kMaxTableColumns = 32;
constexpr int kHistogramBins = 24;

QString shapeText(const Dims& dims) {
    return QString::fromStdString(dims.str());
}

// The spec as far as the examples go: loader settings do not change what make_data returns.
spec::DataSpec previewKey(spec::DataSpec spec) {
    const spec::DataSpec defaults;
    spec.batch_size = defaults.batch_size;
    spec.num_workers = defaults.num_workers;
    spec.shuffle = defaults.shuffle;
    spec.drop_last = defaults.drop_last;
    return spec;
}

// Unwraps Subsets down to the CSV table, for its column names.
const data::CsvDataset* csvBehind(const data::Dataset* dataset) {
    while (dataset != nullptr) {
        if (const auto* csv = dynamic_cast<const data::CsvDataset*>(dataset)) return csv;
        const auto* subset = dynamic_cast<const data::Subset*>(dataset);
        dataset = subset != nullptr ? subset->dataset().get() : nullptr;
    }
    return nullptr;
}

// Runs on the worker thread: make_data and everything the preview draws from its result.
DataPreview computePreview(const spec::DataSpec& spec, const std::filesystem::path& dir,
                           uint64_t seed) {
    DataPreview out;
    const train::DataSplits splits = train::make_data(spec, dir, seed);
    out.train = splits.train->size();
    out.validation = splits.validation ? splits.validation->size() : -1;
    out.test = splits.test ? splits.test->size() : -1;
    out.inputShape = shapeText(splits.input_shape);
    out.inputDtype = QString::fromLatin1(dtype_name(splits.input_dtype));
    out.classNames = splits.class_names;
    if (splits.classification()) out.classCounts = splits.train->class_counts();

    // The first examples as the model sees them in training: the training transforms applied.
    Generator gen(seed);
    const int64_t shown = std::min<int64_t>(kPreviewExamples, out.train);
    std::vector<Tensor> inputs;
    QStringList labels;
    for (int64_t i = 0; i < shown; ++i) {
        const data::Example example = splits.train->get(i);
        Tensor input =
            splits.train_transform ? (*splits.train_transform)(example.input, gen) : example.input;
        inputs.push_back(input.to(DType::Float32).contiguous());
        if (splits.classification()) {
            const int64_t label = splits.train->label(i);
            labels << (label >= 0 && label < int64_t(out.classNames.size())
                           ? QString::fromStdString(out.classNames[size_t(label)])
                           : QString::number(label));
        } else if (example.target.defined() && example.target.numel() == 1) {
            labels << numberText(example.target.to(DType::Float32).item());
        } else {
            labels << QString();
        }
    }
    if (!inputs.empty()) {
        // Over the finite values (core's summary of each example).
        out.valueMin = std::numeric_limits<double>::infinity();
        out.valueMax = -std::numeric_limits<double>::infinity();
        for (const Tensor& t : inputs) {
            const train::TensorSummary s = train::summarize(t, 1);
            if (s.finite_count == 0) continue;
            out.valueMin = std::min(out.valueMin, s.min);
            out.valueMax = std::max(out.valueMax, s.max);
        }
        if (out.valueMin > out.valueMax) out.valueMin = out.valueMax = 0;
    }

    const Tensor first = inputs.empty() ? Tensor() : inputs.front();
    const bool image =
        first.defined() &&
        (first.dim() == 2 || (first.dim() == 3 && (first.size(0) == 1 || first.size(0) == 3)));
    if (image) {
        // One scale for every picture (min..max of all shown), so brightness compares across them.
        const double range = out.valueMax - out.valueMin;
        auto level = [&](float v) {
            if (!std::isfinite(v) || range <= 0) return 128;
            return int(std::lround((double(v) - out.valueMin) / range * 255.0));
        };
        for (size_t n = 0; n < inputs.size(); ++n) {
            const Tensor& t = inputs[n];
            const int channels = t.dim() == 3 ? int(t.size(0)) : 1;
            const int h = int(t.size(-2)), w = int(t.size(-1));
            const float* v = t.data<float>();
            QImage img(w, h, QImage::Format_RGB32);
            for (int y = 0; y < h; ++y) {
                auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
                for (int x = 0; x < w; ++x) {
                    const int64_t at = int64_t(y) * w + x, plane = int64_t(h) * w;
                    if (channels == 3)
                        line[x] =
                            qRgb(level(v[at]), level(v[plane + at]), level(v[2 * plane + at]));
                    else
                        line[x] = qRgb(level(v[at]), level(v[at]), level(v[at]));
                }
            }
            out.images.push_back(std::move(img));
            out.captions << labels.value(int(n));
        }
    } else if (splits.text_encoder) {
        computeTextPreview(splits, out);
    } else if (first.defined() && first.dim() == 1) {
        const int64_t features = first.size(0);
        const int64_t columns = std::min<int64_t>(features, kMaxTableColumns);
        const data::CsvDataset* csv = csvBehind(splits.train.get());
        const bool named = csv != nullptr && int64_t(csv->feature_names().size()) == features;
        for (int64_t c = 0; c < columns; ++c)
            out.columns << (named ? QString::fromStdString(csv->feature_names()[size_t(c)])
                                  : QStringLiteral("x%1").arg(c));
        if (columns < features)
            out.columns << QStringLiteral("… (%1 more)").arg(features - columns);
        out.columns << (csv != nullptr && !csv->target_name().empty()
                            ? QString::fromStdString(csv->target_name())
                            : QStringLiteral("target"));
        for (size_t n = 0; n < inputs.size(); ++n) {
            QStringList row;
            const float* v = inputs[n].data<float>();
            for (int64_t c = 0; c < columns; ++c)
                row << numberText(v[c]);
            if (columns < features) row << QString();
            row << labels.value(int(n));
            out.rows.push_back(row);
        }
    } else if (first.defined()) {
        out.examplesNote =
            QObject::tr("Examples of shape %1 have no picture or table view.").arg(out.inputShape);
    }

    if (!splits.classification()) {
        const data::CsvDataset* csv = csvBehind(splits.train.get());
        out.targetName = csv != nullptr && !csv->target_name().empty()
                             ? QString::fromStdString(csv->target_name())
                             : QObject::tr("target");
        std::vector<double> targets;
        targets.reserve(size_t(out.train));
        for (int64_t i = 0; i < out.train; ++i) {
            const Tensor t = splits.train->get(i).target;
            if (t.defined() && t.numel() == 1) targets.push_back(t.to(DType::Float32).item());
        }
        if (!targets.empty()) {
            // Core's summary: min, mean, max of the finite targets and equal-width bins over
            // [min, max] (numpy.histogram's rules).
            const train::TensorSummary s =
                train::summarize(from_vector(targets, {int64_t(targets.size())}), kHistogramBins);
            out.targetMin = s.min;
            out.targetMean = s.mean;
            out.targetMax = s.max;
            out.histogramWidth = (s.hist_high - s.hist_low) / kHistogramBins;
            for (int b = 0; b < kHistogramBins; ++b) {
                out.histogramCenters.push_back(s.hist_low + (b + 0.5) * out.histogramWidth);
                out.histogramCounts.push_back(double(s.histogram[size_t(b)]));
            }
        }
    }
    out.ok = true;
    return out;
}

} // namespace

// The watchers are the page's children: destroyed with it, they take a loading preview's result
// nowhere, and the task itself only reads its own copies.
DataPage::~DataPage() = default;

void DataPage::maybeSchedulePreview() {
    refreshLoaderFacts(); // the seed line follows the Training page
    if (!document_->isOpen()) return;
    const spec::DataSpec key = previewKey(document_->project().data);
    const uint64_t seed = document_->project().train.seed;
    const QString dir = document_->dataDirectory();
    if (requested_ && *requested_ == key && requestedSeed_ == seed && requestedDir_ == dir) return;
    requested_ = key;
    requestedSeed_ = seed;
    requestedDir_ = dir;
    schedulePreview();
}

void DataPage::schedulePreview() {
    ++generation_;
    status_->setText(tr("Loading…"));
    // A hidden page (another tab) loads when it is shown, not on every edit elsewhere.
    if (!isVisible()) {
        waitingForShow_ = true;
        debounce_->stop();
        return;
    }
    debounce_->start();
}

void DataPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (waitingForShow_) {
        waitingForShow_ = false;
        debounce_->stop();
        startPreview();
    }
}

void DataPage::refreshPreview() {
    if (!document_->isOpen()) return;
    requested_ = previewKey(document_->project().data);
    requestedSeed_ = document_->project().train.seed;
    requestedDir_ = document_->dataDirectory();
    ++generation_;
    waitingForShow_ = false;
    debounce_->stop();
    startPreview();
}

bool DataPage::previewPending() const {
    return running_ || debounce_->isActive() || waitingForShow_;
}

bool DataPage::waitForPreview(int timeoutMs) {
    if (!previewPending()) return lastOk_;
    QEventLoop loop;
    QTimer timeout;
    timeout.setSingleShot(true);
    connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
    const auto done = connect(this, &DataPage::previewFinished, &loop, [this, &loop] {
        if (!previewPending()) loop.quit();
    });
    timeout.start(timeoutMs);
    loop.exec();
    disconnect(done);
    return !previewPending() && lastOk_;
}

void DataPage::startPreview() {
    if (!document_->isOpen() || running_) return; // a running one restarts when it finishes
    status_->setText(tr("Loading…"));
    running_ = true;
    const spec::DataSpec spec = document_->project().data;
    const std::filesystem::path dir = document_->dataDirectory().toStdString();
    const uint64_t seed = document_->project().train.seed;
    const uint64_t generation = generation_;
    // The task works on copies and never touches the page or the document; its result comes
    // back through a watcher on the GUI thread.
    auto* watcher = new QFutureWatcher<DataPreview>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
        watcher->deleteLater();
        finishPreview(watcher->result());
    });
    watcher->setFuture(QtConcurrent::run([spec, dir, seed, generation] {
        DataPreview result;
        try {
            result = computePreview(spec, dir, seed);
        } catch (const std::exception& e) {
            result.ok = false;
            result.error = QString::fromStdString(e.what());
        } catch (...) {
            result.ok = false;
            result.error = QObject::tr("The data could not be loaded (unknown error).");
        }
        result.generation = generation;
        return result;
    }));
}

void DataPage::finishPreview(const DataPreview& result) {
    running_ = false;
    if (result.generation != generation_) {
        // The spec changed while this one loaded: load the new one unless its debounce will.
        if (!debounce_->isActive() && !waitingForShow_ && document_->isOpen()) startPreview();
        if (!previewPending()) status_->clear();
        return;
    }
    status_->clear();
    lastOk_ = result.ok;
    if (result.ok)
        showPreview(result);
    else
        showPreviewError(result.error);
    emit previewFinished(result.ok);
}

} // namespace myelin::ui
