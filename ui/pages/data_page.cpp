#include "pages/data_page.h"

#include "document/project_document.h"
#include "widgets/attr_editor.h"
#include "widgets/theme.h"

#include <myelin/data/readers.h>
#include <myelin/data/sampler.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>
#include <myelin/train/data_setup.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <tuple>

namespace myelin::ui {

// What one run of make_data gives the page; filled on the worker thread (QImage is safe there).
struct DataPreview {
    uint64_t generation = 0;
    bool ok = false;
    QString error;
    int64_t train = 0;
    int64_t validation = -1; // -1: no such split
    int64_t test = -1;
    QString inputShape;
    QString inputDtype;
    double valueMin = 0, valueMax = 0; // over the examples shown
    std::vector<std::string> classNames;
    std::vector<int64_t> classCounts;
    // Images ([1, H, W], [3, H, W] or [H, W] inputs) with their captions.
    std::vector<QImage> images;
    QStringList captions;
    // Tabular (1-D) inputs: a header and the first rows, the target last.
    QStringList columns;
    std::vector<QStringList> rows;
    // Neither: why there is no picture.
    QString examplesNote;
    // Regression: the target over the training split.
    QString targetName;
    double targetMin = 0, targetMean = 0, targetMax = 0;
    std::vector<double> histogramCenters, histogramCounts;
    double histogramWidth = 0;
};

// The worker posts its result through this while the page lives; the destructor clears `page`
// under the mutex, so the page cannot go away in the middle of a post.
struct PreviewGuard {
    std::mutex mutex;
    DataPage* page = nullptr;
};

namespace {

constexpr int kPreviewExamples = 24;
constexpr int kMaxTableColumns = 32;
constexpr int kHistogramBins = 24;

const char* kStyleSheet = R"(
#dataPage, #dataSettings, #dataPreviewPanel { background: #FFFFFF; }
#dataSettingsScroll { border: none; border-right: 1px solid #DDE1E6; background: #FFFFFF; }
#dataPageTitle { font-size: 12pt; font-weight: bold; color: #1F2933; }
#dataSourceDoc, #dataTransformDoc, #dataLoaderFacts, #dataStatus, #dataExamplesNote,
#dataTargetStats { color: #52606D; }
#dataSummary { color: #1F2933; }
#dataError {
    color: #C62828; background: #FDECEA; border: 1px solid #F5C2BE; border-radius: 4px;
    padding: 8px 10px;
}
#dataTransforms { border: 1px solid #DDE1E6; border-radius: 3px; }
)";

QString groupDigits(int64_t n) { // 1234567 -> "1,234,567", as everywhere in the studio
    return QString::fromStdString(graph::format_count(n));
}

QString shapeText(const Dims& dims) {
    return QString::fromStdString(dims.str());
}

QString numberText(double v) {
    return QString::number(v, 'g', 4);
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

// The box layout that holds `widget` somewhere below `layout`.
QBoxLayout* boxHolding(QLayout* layout, QWidget* widget) {
    if (layout == nullptr) return nullptr;
    if (auto* box = qobject_cast<QBoxLayout*>(layout); box != nullptr && box->indexOf(widget) >= 0)
        return box;
    for (int i = 0; i < layout->count(); ++i)
        if (QBoxLayout* found = boxHolding(layout->itemAt(i)->layout(), widget)) return found;
    return nullptr;
}

QString transformLabel(const spec::Choice& choice, int index) {
    QString text =
        QStringLiteral("%1.  %2").arg(index + 1).arg(QString::fromStdString(choice.kind));
    const spec::ComponentKind* kind = spec::find_component(spec::transform_kinds(), choice.kind);
    if (kind == nullptr || kind->options.empty()) return text;
    QStringList parts;
    const graph::Attrs options = graph::with_defaults(kind->options, choice.options);
    for (const auto& [name, value] : options.items()) {
        const QString shown = attrValueText(value);
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(name),
                                             shown.isEmpty() ? QStringLiteral("auto") : shown);
    }
    return text + QStringLiteral("   (") + parts.join(QStringLiteral(", ")) + QLatin1Char(')');
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
        out.valueMin = std::numeric_limits<double>::infinity();
        out.valueMax = -std::numeric_limits<double>::infinity();
        for (const Tensor& t : inputs) {
            const float* v = t.data<float>();
            for (int64_t k = 0; k < t.numel(); ++k) {
                if (!std::isfinite(v[k])) continue;
                out.valueMin = std::min(out.valueMin, double(v[k]));
                out.valueMax = std::max(out.valueMax, double(v[k]));
            }
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
            const auto [lo, hi] = std::minmax_element(targets.begin(), targets.end());
            out.targetMin = *lo;
            out.targetMax = *hi;
            double sum = 0;
            for (double t : targets)
                sum += t;
            out.targetMean = sum / double(targets.size());
            const double width = out.targetMax > out.targetMin
                                     ? (out.targetMax - out.targetMin) / kHistogramBins
                                     : 1.0;
            out.histogramWidth = width;
            out.histogramCounts.assign(kHistogramBins, 0);
            for (int b = 0; b < kHistogramBins; ++b)
                out.histogramCenters.push_back(out.targetMin + (b + 0.5) * width);
            for (double t : targets) {
                const int b = std::clamp(int((t - out.targetMin) / width), 0, kHistogramBins - 1);
                out.histogramCounts[size_t(b)] += 1;
            }
        }
    }
    out.ok = true;
    return out;
}

} // namespace

// The first training examples as pictures in a grid, each with its label below; the tile size
// follows the widget so all of them fit.
class ExampleGrid : public QWidget {
  public:
    explicit ExampleGrid(QWidget* parent) : QWidget(parent) {
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    }
    void setExamples(std::vector<QImage> images, QStringList captions) {
        images_ = std::move(images);
        captions_ = std::move(captions);
        update();
    }
    int count() const { return int(images_.size()); }
    QSize sizeHint() const override { return {760, 330}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

  protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), colors::kSurface);
        const int n = count();
        if (n == 0) return;
        const int captionH = fontMetrics().height() + 4;
        const int gap = 10;
        // The column count that gives the largest tiles.
        int bestCols = 1, bestSide = 0;
        for (int cols = 1; cols <= n; ++cols) {
            const int rows = (n + cols - 1) / cols;
            const int side = std::min((width() - gap * (cols - 1)) / cols,
                                      (height() - rows * captionH - gap * (rows - 1)) / rows);
            if (side > bestSide) bestSide = side, bestCols = cols;
        }
        // Beyond 4x a picture shows no more detail, only less of the grid fits the eye.
        const QSize native = images_.front().size();
        const int side = std::min(bestSide, 4 * std::max(native.width(), native.height()));
        if (side < 8) return;
        const int cellW =
            std::max(side, std::min(side + 40, (width() - gap * (bestCols - 1)) / bestCols));
        p.setPen(colors::kText);
        for (int i = 0; i < n; ++i) {
            const int r = i / bestCols, c = i % bestCols;
            const int x = c * (cellW + gap), y = r * (side + captionH + gap);
            const QRect target(x + (cellW - side) / 2, y, side, side);
            p.drawImage(target, images_[size_t(i)]); // no smoothing: data pixels stay visible
            p.setPen(colors::kBorder);
            p.drawRect(target.adjusted(0, 0, -1, -1));
            p.setPen(colors::kText);
            const QRect text(x - gap / 2, y + side + 2, cellW + gap, captionH - 2);
            p.drawText(text, Qt::AlignHCenter | Qt::AlignTop,
                       fontMetrics().elidedText(captions_.value(i), Qt::ElideRight, text.width()));
        }
    }

  private:
    std::vector<QImage> images_;
    QStringList captions_;
};

DataPage::DataPage(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document), guard_(std::make_shared<PreviewGuard>()) {
    guard_->page = this;
    setObjectName(QStringLiteral("dataPage"));
    setStyleSheet(QString::fromLatin1(kStyleSheet) + QString::fromLatin1(kFormStyleSheet));
    setAttribute(Qt::WA_StyledBackground, true);

    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("dataSettingsScroll"));
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // the form follows the width
    scroll->setFixedWidth(380);
    scroll->setWidget(buildSettings());
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(scroll);
    layout->addWidget(buildPreview(), 1);

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(300);
    connect(debounce_, &QTimer::timeout, this, &DataPage::startPreview);

    connect(document_, &ProjectDocument::dataSpecChanged, this, [this] {
        refresh();
        maybeSchedulePreview();
    });
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        selectedTransform_ = document_->project().data.transforms.empty() ? -1 : 0;
        requested_.reset(); // a new project previews even when its spec equals the old one
        refresh();
        maybeSchedulePreview();
    });
    // The split is seeded with the training seed; relative paths follow the project file.
    connect(document_, &ProjectDocument::trainSpecChanged, this, &DataPage::maybeSchedulePreview);
    connect(document_, &ProjectDocument::filePathChanged, this, &DataPage::maybeSchedulePreview);
    selectedTransform_ = document_->project().data.transforms.empty() ? -1 : 0;
    refresh();
    maybeSchedulePreview();
}

DataPage::~DataPage() {
    {
        const std::lock_guard lock(guard_->mutex);
        guard_->page = nullptr;
    }
    if (worker_.joinable()) worker_.join();
}

std::pair<QLabel*, QWidget*> DataPage::addDocAndForm(const QString& docName) {
    auto* doc = new QLabel(settings_);
    doc->setObjectName(docName);
    doc->setWordWrap(true);
    settingsColumn_->addWidget(doc);
    auto* form = new QWidget(settings_);
    settingsColumn_->addWidget(form);
    return {doc, form};
}

QWidget* DataPage::buildSettings() {
    settings_ = new QWidget;
    settings_->setObjectName(QStringLiteral("dataSettings"));
    settingsColumn_ = new QVBoxLayout(settings_);
    settingsColumn_->setContentsMargins(14, 12, 14, 12);
    settingsColumn_->setSpacing(6);

    auto* title = new QLabel(tr("Data"), settings_);
    title->setObjectName(QStringLiteral("dataPageTitle"));
    settingsColumn_->addWidget(title);

    // Source.
    settingsColumn_->addWidget(sectionHeading(tr("Source"), settings_));
    source_ = new QComboBox(settings_);
    source_->setObjectName(QStringLiteral("dataSource"));
    for (const spec::ComponentKind& kind : spec::data_source_kinds()) {
        source_->addItem(QString::fromStdString(kind.name));
        source_->setItemData(source_->count() - 1, QString::fromStdString(kind.doc),
                             Qt::ToolTipRole);
    }
    connect(source_, &QComboBox::currentIndexChanged, this, &DataPage::commitSourceKind);
    settingsColumn_->addWidget(source_);
    std::tie(sourceDoc_, sourceForm_) = addDocAndForm(QStringLiteral("dataSourceDoc"));

    // Split and loading.
    settingsColumn_->addWidget(sectionHeading(tr("Split and loading"), settings_));
    auto* loader = new QFormLayout;
    loader->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    loader->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    loader->setHorizontalSpacing(12);
    loader->setVerticalSpacing(6);
    validation_ = new QDoubleSpinBox(settings_);
    validation_->setObjectName(QStringLiteral("dataValidationFraction"));
    validation_->setRange(0.0, 0.9);
    validation_->setDecimals(3);
    validation_->setSingleStep(0.05);
    validation_->setKeyboardTracking(false);
    validation_->setToolTip(tr("Share of the training examples held out for validation (a "
                               "seeded random split; 0: no validation)."));
    batchSize_ = new QSpinBox(settings_);
    batchSize_->setObjectName(QStringLiteral("dataBatchSize"));
    batchSize_->setRange(1, 1 << 20);
    batchSize_->setKeyboardTracking(false);
    batchSize_->setAccelerated(true);
    batchSize_->setToolTip(tr("Examples per mini-batch."));
    workers_ = new QSpinBox(settings_);
    workers_->setObjectName(QStringLiteral("dataWorkers"));
    workers_->setRange(0, 64);
    workers_->setKeyboardTracking(false);
    workers_->setToolTip(tr("Loader threads that read and transform batches ahead of the "
                            "training loop (0: load on the training thread)."));
    shuffle_ = new QCheckBox(tr("Reshuffle every epoch"), settings_);
    shuffle_->setObjectName(QStringLiteral("dataShuffle"));
    shuffle_->setToolTip(tr("Visit the training examples in a new random order each epoch."));
    dropLast_ = new QCheckBox(tr("Drop the last partial batch"), settings_);
    dropLast_->setObjectName(QStringLiteral("dataDropLast"));
    dropLast_->setToolTip(tr("Skip the final batch of an epoch when it has fewer examples than "
                             "the batch size."));
    for (QWidget* w : {static_cast<QWidget*>(validation_), static_cast<QWidget*>(batchSize_),
                       static_cast<QWidget*>(workers_)})
        w->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    loader->addRow(tr("Validation"), validation_);
    loader->addRow(tr("Batch size"), batchSize_);
    loader->addRow(tr("Workers"), workers_);
    loader->addRow(tr("Shuffle"), shuffle_);
    loader->addRow(tr("Drop last"), dropLast_);
    settingsColumn_->addLayout(loader);
    connect(validation_, &QDoubleSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(batchSize_, &QSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(workers_, &QSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(shuffle_, &QCheckBox::toggled, this, &DataPage::commitLoader);
    connect(dropLast_, &QCheckBox::toggled, this, &DataPage::commitLoader);

    // Transforms.
    settingsColumn_->addWidget(sectionHeading(tr("Transforms (in order)"), settings_));
    transforms_ = new QListWidget(settings_);
    transforms_->setObjectName(QStringLiteral("dataTransforms"));
    transforms_->setFixedHeight(118);
    transforms_->setToolTip(tr("Applied in this order to each training example on the loader "
                               "threads; random augmentation is for training only."));
    settingsColumn_->addWidget(transforms_);
    connect(transforms_, &QListWidget::currentRowChanged, this, [this](int row) {
        selectedTransform_ = row;
        rebuildTransformForm();
    });

    auto* buttons = new QHBoxLayout;
    buttons->setSpacing(4);
    addTransform_ = new QPushButton(tr("Add"), settings_);
    addTransform_->setObjectName(QStringLiteral("dataAddTransform"));
    addTransform_->setToolTip(tr("Append a transform."));
    auto* menu = new QMenu(addTransform_);
    menu->setObjectName(QStringLiteral("dataAddTransformMenu"));
    menu->setToolTipsVisible(true);
    for (const spec::ComponentKind& kind : spec::transform_kinds()) {
        const QString name = QString::fromStdString(kind.name);
        QAction* action = menu->addAction(name);
        action->setObjectName(QStringLiteral("addTransform_") + name);
        action->setToolTip(QString::fromStdString(kind.doc));
        connect(action, &QAction::triggered, this, [this, name] { addTransform(name); });
    }
    addTransform_->setMenu(menu);
    removeTransform_ = new QPushButton(tr("Remove"), settings_);
    removeTransform_->setObjectName(QStringLiteral("dataRemoveTransform"));
    moveUp_ = new QPushButton(tr("Up"), settings_);
    moveUp_->setObjectName(QStringLiteral("dataMoveTransformUp"));
    moveUp_->setToolTip(tr("Apply the selected transform earlier."));
    moveDown_ = new QPushButton(tr("Down"), settings_);
    moveDown_->setObjectName(QStringLiteral("dataMoveTransformDown"));
    moveDown_->setToolTip(tr("Apply the selected transform later."));
    connect(removeTransform_, &QPushButton::clicked, this, &DataPage::removeTransform);
    connect(moveUp_, &QPushButton::clicked, this, [this] { moveTransform(-1); });
    connect(moveDown_, &QPushButton::clicked, this, [this] { moveTransform(1); });
    buttons->addWidget(addTransform_);
    buttons->addWidget(removeTransform_);
    buttons->addStretch(1);
    buttons->addWidget(moveUp_);
    buttons->addWidget(moveDown_);
    settingsColumn_->addLayout(buttons);
    std::tie(transformDoc_, transformForm_) = addDocAndForm(QStringLiteral("dataTransformDoc"));
    settingsColumn_->addStretch(1);
    return settings_;
}

QWidget* DataPage::buildPreview() {
    auto* panel = new QWidget(this);
    panel->setObjectName(QStringLiteral("dataPreviewPanel"));
    panel->setAttribute(Qt::WA_StyledBackground, true);
    auto* column = new QVBoxLayout(panel);
    column->setContentsMargins(18, 12, 18, 12);
    column->setSpacing(6);

    auto* header = new QHBoxLayout;
    header->addWidget(sectionHeading(tr("Preview"), panel));
    header->addStretch(1);
    status_ = new QLabel(panel);
    status_->setObjectName(QStringLiteral("dataStatus"));
    header->addWidget(status_);
    refresh_ = new QPushButton(tr("Refresh"), panel);
    refresh_->setObjectName(QStringLiteral("dataRefreshPreview"));
    refresh_->setToolTip(tr("Load the data again (files may have changed on disk)."));
    connect(refresh_, &QPushButton::clicked, this, &DataPage::refreshPreview);
    header->addWidget(refresh_);
    column->addLayout(header);

    summary_ = new QLabel(panel);
    summary_->setObjectName(QStringLiteral("dataSummary"));
    summary_->setTextFormat(Qt::RichText);
    summary_->setWordWrap(true);
    loaderFacts_ = new QLabel(panel);
    loaderFacts_->setObjectName(QStringLiteral("dataLoaderFacts"));
    loaderFacts_->setWordWrap(true);
    error_ = new QLabel(panel);
    error_->setObjectName(QStringLiteral("dataError"));
    error_->setWordWrap(true);
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->hide();
    column->addWidget(summary_);
    column->addWidget(loaderFacts_);
    column->addWidget(error_);

    // Examples and chart, in a box hidden while there is nothing to show (no project, an error).
    previewSections_ = new QWidget(panel);
    auto* sections = new QVBoxLayout(previewSections_);
    sections->setContentsMargins(0, 0, 0, 0);
    sections->setSpacing(6);
    column->addWidget(previewSections_, 1);
    column->addStretch(0); // takes the space while the sections are hidden
    examplesCaption_ = sectionHeading(tr("Training examples (after transforms)"), panel);
    sections->addWidget(examplesCaption_);
    examples_ = new QStackedWidget(panel);
    grid_ = new ExampleGrid(examples_);
    grid_->setObjectName(QStringLiteral("dataPreviewGrid"));
    table_ = new QTableWidget(examples_);
    table_->setObjectName(QStringLiteral("dataPreviewTable"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->verticalHeader()->setDefaultSectionSize(22);
    table_->horizontalHeader()->setDefaultAlignment(Qt::AlignRight | Qt::AlignVCenter);
    examplesNote_ = new QLabel(examples_);
    examplesNote_->setObjectName(QStringLiteral("dataExamplesNote"));
    examplesNote_->setAlignment(Qt::AlignCenter);
    examplesNote_->setWordWrap(true);
    examples_->addWidget(grid_);
    examples_->addWidget(table_);
    examples_->addWidget(examplesNote_);
    sections->addWidget(examples_, 3);

    chartCaption_ = sectionHeading(tr("Class balance (training split)"), panel);
    sections->addWidget(chartCaption_);
    targetStats_ = new QLabel(panel);
    targetStats_->setObjectName(QStringLiteral("dataTargetStats"));
    targetStats_->setTextFormat(Qt::RichText);
    targetStats_->hide();
    sections->addWidget(targetStats_);
    chart_ = new QCustomPlot(panel);
    chart_->setObjectName(QStringLiteral("dataClassChart"));
    chart_->setMinimumHeight(200);
    stylePlot(chart_, {chart_->xAxis, chart_->yAxis});
    QFont tickFont = font();
    tickFont.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
    for (QCPAxis* axis : {chart_->xAxis, chart_->yAxis}) {
        axis->setSubTickPen(Qt::NoPen);
        axis->setTickLabelFont(tickFont);
        axis->setLabelFont(tickFont);
    }
    chart_->xAxis->grid()->setVisible(false);
    chart_->yAxis->setLabel(tr("examples"));
    sections->addWidget(chart_, 2);
    return panel;
}

void DataPage::rebuildSourceForm() {
    // The old editors may be inside one of their own signals: delete them later.
    for (QObject* child : sourceForm_->findChildren<QObject*>())
        disconnect(child, nullptr, this, nullptr);
    sourceForm_->hide();
    sourceForm_->deleteLater();
    sourceRows_.clear();

    auto* box = new QWidget(settings_);
    auto* form = new QFormLayout(box);
    form->setContentsMargins(0, 2, 0, 2);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setHorizontalSpacing(12);
    form->setVerticalSpacing(6);
    const spec::ComponentKind* kind =
        spec::find_component(spec::data_source_kinds(), shownSourceKind_);
    if (kind != nullptr) {
        sourceRows_.build(kind->options, form, box, this,
                          [this](const AttrRow& row, const graph::AttrValue& value) {
                              commitSourceOption(row, value);
                          });
        for (const auto& row : sourceRows_.rows()) {
            // Options that name a file or a folder (core says which) get a Browse button.
            const graph::AttrDesc::Path path = row->desc.path;
            QBoxLayout* line =
                path != graph::AttrDesc::Path::None ? boxHolding(form, row->editor) : nullptr;
            if (line == nullptr) continue;
            auto* browse = new QToolButton(box);
            const QString name = QString::fromStdString(row->desc.name);
            browse->setObjectName(QStringLiteral("browse_") + name);
            browse->setText(tr("Browse…"));
            const bool folder = path == graph::AttrDesc::Path::Folder;
            browse->setToolTip(folder ? tr("Choose the folder.") : tr("Choose the file."));
            line->addWidget(browse);
            connect(browse, &QToolButton::clicked, this,
                    [this, name, folder] { browseFor(name, folder); });
        }
    }
    const int at = settingsColumn_->indexOf(sourceDoc_) + 1;
    settingsColumn_->insertWidget(at, box);
    sourceForm_ = box;
}

void DataPage::rebuildTransformForm() {
    const auto& transforms = document_->project().data.transforms;
    const spec::Choice* selected =
        selectedTransform_ >= 0 && selectedTransform_ < int(transforms.size())
            ? &transforms[size_t(selectedTransform_)]
            : nullptr;
    const std::string kindName = selected != nullptr ? selected->kind : std::string();
    const spec::ComponentKind* kind = spec::find_component(spec::transform_kinds(), kindName);
    removeTransform_->setEnabled(selected != nullptr && document_->isOpen());
    moveUp_->setEnabled(selected != nullptr && selectedTransform_ > 0 && document_->isOpen());
    moveDown_->setEnabled(selected != nullptr && selectedTransform_ + 1 < int(transforms.size()) &&
                          document_->isOpen());
    transformDoc_->setText(kind != nullptr ? QString::fromStdString(kind->doc)
                           : selected != nullptr
                               ? tr("Unknown transform '%1'.").arg(QString::fromStdString(kindName))
                               : (transforms.empty()
                                      ? tr("No transforms: the examples are used as read.")
                                      : QString()));
    transformDoc_->setVisible(!transformDoc_->text().isEmpty());

    if (kindName != shownTransformKind_) {
        for (QObject* child : transformForm_->findChildren<QObject*>())
            disconnect(child, nullptr, this, nullptr);
        transformForm_->hide();
        transformForm_->deleteLater();
        transformRows_.clear();
        shownTransformKind_ = kindName;
        auto* box = new QWidget(settings_);
        auto* form = new QFormLayout(box);
        form->setContentsMargins(0, 2, 0, 2);
        form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setHorizontalSpacing(12);
        form->setVerticalSpacing(6);
        if (kind != nullptr)
            transformRows_.build(kind->options, form, box, this,
                                 [this](const AttrRow& row, const graph::AttrValue& value) {
                                     commitTransformOption(row, value);
                                 });
        const int at = settingsColumn_->indexOf(transformDoc_) + 1;
        settingsColumn_->insertWidget(at, box);
        transformForm_ = box;
    }
    if (selected != nullptr) transformRows_.show(selected->options);
    transformRows_.setEnabled(document_->isOpen());
    transformForm_->setVisible(!transformRows_.empty());
}

void DataPage::refresh() {
    const bool open = document_->isOpen();
    const spec::DataSpec& spec = document_->project().data;
    settings_->setEnabled(open);
    refresh_->setEnabled(open);

    {
        const QSignalBlocker blocker(source_);
        const int index = source_->findText(QString::fromStdString(spec.source.kind));
        source_->setCurrentIndex(index);
    }
    const spec::ComponentKind* kind =
        spec::find_component(spec::data_source_kinds(), spec.source.kind);
    sourceDoc_->setText(
        kind != nullptr
            ? QString::fromStdString(kind->doc)
            : tr("Unknown data source '%1'.").arg(QString::fromStdString(spec.source.kind)));
    if (spec.source.kind != shownSourceKind_) {
        shownSourceKind_ = spec.source.kind;
        rebuildSourceForm();
    }
    sourceRows_.show(spec.source.options);
    // Paths read from their start; the whole of a long one is in the tooltip.
    for (const auto& row : sourceRows_.rows())
        if (auto* edit = qobject_cast<QLineEdit*>(row->editor);
            edit != nullptr && row->desc.path != graph::AttrDesc::Path::None) {
            edit->setCursorPosition(0);
            edit->setToolTip(
                QString::fromStdString(row->desc.doc) +
                (edit->text().isEmpty() ? QString() : QStringLiteral("\n") + edit->text()));
        }

    {
        const QSignalBlocker b1(validation_), b2(batchSize_), b3(workers_), b4(shuffle_),
            b5(dropLast_);
        validation_->setValue(spec.validation_fraction);
        batchSize_->setValue(int(std::clamp<int64_t>(spec.batch_size, 1, batchSize_->maximum())));
        workers_->setValue(spec.num_workers);
        shuffle_->setChecked(spec.shuffle);
        dropLast_->setChecked(spec.drop_last);
    }
    refreshTransformList();
    refreshLoaderFacts();
    if (!open) {
        debounce_->stop();
        ++generation_; // a preview still loading is of a project no longer open
        requested_.reset();
        waitingForShow_ = false;
        trainSize_ = 0;
        errorText_.clear();
        clearPreview(tr("Open or create a project to set up its data."));
        status_->clear();
    }
}

void DataPage::refreshTransformList() {
    const auto& transforms = document_->project().data.transforms;
    if (selectedTransform_ >= int(transforms.size()))
        selectedTransform_ = int(transforms.size()) - 1;
    if (selectedTransform_ < 0 && !transforms.empty()) selectedTransform_ = 0;
    {
        const QSignalBlocker blocker(transforms_);
        transforms_->clear();
        for (size_t i = 0; i < transforms.size(); ++i) {
            auto* item = new QListWidgetItem(transformLabel(transforms[i], int(i)), transforms_);
            const spec::ComponentKind* kind =
                spec::find_component(spec::transform_kinds(), transforms[i].kind);
            if (kind != nullptr) item->setToolTip(QString::fromStdString(kind->doc));
        }
        transforms_->setCurrentRow(selectedTransform_);
    }
    rebuildTransformForm();
}

void DataPage::refreshLoaderFacts() {
    const spec::DataSpec& spec = document_->project().data;
    if (!document_->isOpen() || trainSize_ <= 0 || !errorText_.isEmpty()) {
        loaderFacts_->clear();
        loaderFacts_->hide();
        return;
    }
    const int64_t batch = std::max<int64_t>(1, spec.batch_size);
    const int64_t batches = data::batch_count(trainSize_, batch, spec.drop_last);
    QStringList facts;
    facts << tr("%1 batches of %2 per epoch").arg(groupDigits(batches), groupDigits(batch));
    if (spec.drop_last && trainSize_ % batch != 0)
        facts << tr("%1 examples dropped each epoch").arg(groupDigits(trainSize_ % batch));
    facts << (spec.shuffle ? tr("reshuffled every epoch") : tr("fixed order"));
    facts << (spec.num_workers == 1  ? tr("1 loader thread")
              : spec.num_workers > 1 ? tr("%1 loader threads").arg(spec.num_workers)
                                     : tr("loaded on the training thread"));
    facts << tr("split seed %1 (Training page)").arg(document_->project().train.seed);
    loaderFacts_->setText(facts.join(QStringLiteral("  ·  ")));
    loaderFacts_->show();
}

void DataPage::apply(const spec::DataSpec& after, const QString& text, const QString& mergeKey) {
    document_->applyDataEdit(after, text, mergeKey);
}

void DataPage::commitSourceKind(int index) {
    const auto& kinds = spec::data_source_kinds();
    if (index < 0 || index >= int(kinds.size())) return;
    const spec::ComponentKind& kind = kinds[size_t(index)];
    spec::DataSpec spec = document_->project().data;
    if (spec.source.kind == kind.name) return;
    // Options of another source mean nothing here: start from the new kind's defaults.
    spec.source = spec::Choice{kind.name, graph::with_defaults(kind.options, {})};
    apply(spec, tr("Change data source to %1").arg(QString::fromStdString(kind.name)));
}

void DataPage::commitSourceOption(const AttrRow& row, const graph::AttrValue& value) {
    spec::DataSpec spec = document_->project().data;
    const graph::AttrValue* current = spec.source.options.find(row.desc.name);
    if (current != nullptr ? *current == value : value == row.desc.default_value) return;
    spec.source.options.set(row.desc.name, value);
    const QString name = QString::fromStdString(row.desc.name);
    apply(spec,
          tr("Change %1 of the %2 source to %3")
              .arg(name, QString::fromStdString(spec.source.kind), attrValueText(value)),
          QStringLiteral("data.source.") + name);
}

void DataPage::commitTransformOption(const AttrRow& row, const graph::AttrValue& value) {
    spec::DataSpec spec = document_->project().data;
    if (selectedTransform_ < 0 || selectedTransform_ >= int(spec.transforms.size())) return;
    spec::Choice& transform = spec.transforms[size_t(selectedTransform_)];
    const graph::AttrValue* current = transform.options.find(row.desc.name);
    if (current != nullptr ? *current == value : value == row.desc.default_value) return;
    transform.options.set(row.desc.name, value);
    const QString name = QString::fromStdString(row.desc.name);
    apply(spec,
          tr("Change %1 of %2 to %3")
              .arg(name, QString::fromStdString(transform.kind), attrValueText(value)),
          QStringLiteral("data.transform.%1.%2").arg(selectedTransform_).arg(name));
}

void DataPage::commitLoader() {
    spec::DataSpec spec = document_->project().data;
    if (validation_->value() != spec.validation_fraction) {
        spec.validation_fraction = validation_->value();
        apply(spec,
              tr("Change validation fraction to %1").arg(numberText(spec.validation_fraction)),
              QStringLiteral("data.validation_fraction"));
    } else if (batchSize_->value() != spec.batch_size) {
        spec.batch_size = batchSize_->value();
        apply(spec, tr("Change batch size to %1").arg(spec.batch_size),
              QStringLiteral("data.batch_size"));
    } else if (workers_->value() != spec.num_workers) {
        spec.num_workers = workers_->value();
        apply(spec, tr("Change loader threads to %1").arg(spec.num_workers),
              QStringLiteral("data.num_workers"));
    } else if (shuffle_->isChecked() != spec.shuffle) {
        spec.shuffle = shuffle_->isChecked();
        apply(spec, spec.shuffle ? tr("Turn shuffling on") : tr("Turn shuffling off"));
    } else if (dropLast_->isChecked() != spec.drop_last) {
        spec.drop_last = dropLast_->isChecked();
        apply(spec, spec.drop_last ? tr("Drop the last partial batch")
                                   : tr("Keep the last partial batch"));
    }
}

void DataPage::browseFor(const QString& option, bool folder) {
    const spec::DataSpec& spec = document_->project().data;
    const graph::AttrValue* value = spec.source.options.find(option.toStdString());
    const QString current = value != nullptr && std::holds_alternative<std::string>(*value)
                                ? QString::fromStdString(std::get<std::string>(*value))
                                : QString();
    const QDir base(document_->dataDirectory());
    const QString start = current.isEmpty() ? base.path() : base.absoluteFilePath(current);
    const QString chosen =
        folder ? QFileDialog::getExistingDirectory(this, tr("Choose %1").arg(option), start)
               : QFileDialog::getOpenFileName(this, tr("Choose %1").arg(option), start);
    if (chosen.isEmpty()) return;
    // Inside the project's folder the path is stored relative, so the project can move.
    QString stored = QFileInfo(chosen).absoluteFilePath();
    if (!document_->filePath().isEmpty()) {
        const QString relative = base.relativeFilePath(stored);
        if (!relative.startsWith(QStringLiteral(".."))) stored = relative;
    }
    if (const AttrRow* row = sourceRows_.find(option))
        commitSourceOption(*row, graph::AttrValue(stored.toStdString()));
}

void DataPage::addTransform(const QString& kindName) {
    const spec::ComponentKind* kind =
        spec::find_component(spec::transform_kinds(), kindName.toStdString());
    if (kind == nullptr || !document_->isOpen()) return;
    spec::DataSpec spec = document_->project().data;
    spec.transforms.push_back({kind->name, graph::with_defaults(kind->options, {})});
    selectedTransform_ = int(spec.transforms.size()) - 1;
    apply(spec, tr("Add transform %1").arg(kindName));
}

void DataPage::removeTransform() {
    spec::DataSpec spec = document_->project().data;
    if (selectedTransform_ < 0 || selectedTransform_ >= int(spec.transforms.size())) return;
    const QString kind = QString::fromStdString(spec.transforms[size_t(selectedTransform_)].kind);
    spec.transforms.erase(spec.transforms.begin() + selectedTransform_);
    selectedTransform_ = std::min(selectedTransform_, int(spec.transforms.size()) - 1);
    apply(spec, tr("Remove transform %1").arg(kind));
}

void DataPage::moveTransform(int delta) {
    spec::DataSpec spec = document_->project().data;
    const int from = selectedTransform_, to = selectedTransform_ + delta;
    if (from < 0 || to < 0 || from >= int(spec.transforms.size()) ||
        to >= int(spec.transforms.size()))
        return;
    std::swap(spec.transforms[size_t(from)], spec.transforms[size_t(to)]);
    const QString kind = QString::fromStdString(spec.transforms[size_t(to)].kind);
    selectedTransform_ = to;
    apply(spec, delta < 0 ? tr("Move transform %1 up").arg(kind)
                          : tr("Move transform %1 down").arg(kind));
}

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
    worker_ = std::thread([guard = guard_, spec, dir, seed, generation] {
        auto result = std::make_shared<DataPreview>();
        try {
            *result = computePreview(spec, dir, seed);
        } catch (const std::exception& e) {
            result->ok = false;
            result->error = QString::fromStdString(e.what());
        } catch (...) {
            result->ok = false;
            result->error = QObject::tr("The data could not be loaded (unknown error).");
        }
        result->generation = generation;
        const std::lock_guard lock(guard->mutex);
        if (DataPage* page = guard->page)
            QMetaObject::invokeMethod(
                page, [page, result] { page->finishPreview(result); }, Qt::QueuedConnection);
    });
}

void DataPage::finishPreview(std::shared_ptr<DataPreview> result) {
    if (worker_.joinable()) worker_.join(); // it has posted its result and is returning
    running_ = false;
    if (result->generation != generation_) {
        // The spec changed while this one loaded: load the new one unless its debounce will.
        if (!debounce_->isActive() && !waitingForShow_ && document_->isOpen()) startPreview();
        if (!previewPending()) status_->clear();
        return;
    }
    status_->clear();
    lastOk_ = result->ok;
    if (result->ok)
        showPreview(*result);
    else
        showPreviewError(result->error);
    emit previewFinished(result->ok);
}

void DataPage::clearPreview(const QString& note) {
    summary_->setText(note);
    loaderFacts_->hide();
    grid_->setExamples({}, {});
    table_->clear();
    table_->setRowCount(0);
    table_->setColumnCount(0);
    examplesNote_->setText(QString());
    examples_->setCurrentWidget(examplesNote_);
    targetStats_->hide();
    chart_->clearPlottables();
    chart_->clearItems();
    chart_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    chart_->xAxis->setLabel(QString());
    chart_->replot();
    previewSections_->hide();
    error_->hide();
}

void DataPage::showPreviewError(const QString& message) {
    errorText_ = message;
    trainSize_ = 0;
    clearPreview(tr("No preview: the data could not be loaded."));
    error_->setText(message);
    error_->show();
    refreshLoaderFacts();
}

void DataPage::showPreview(const DataPreview& p) {
    errorText_.clear();
    error_->clear();
    error_->hide();
    previewSections_->show();
    trainSize_ = p.train;

    QStringList sizes;
    sizes << tr("<b>%1</b> training").arg(groupDigits(p.train));
    sizes << (p.validation >= 0 ? tr("<b>%1</b> validation").arg(groupDigits(p.validation))
                                : tr("no validation split"));
    sizes << (p.test >= 0 ? tr("<b>%1</b> test").arg(groupDigits(p.test)) : tr("no test split"));
    QString task =
        p.classNames.empty()       ? tr("regression of <b>%1</b>").arg(p.targetName.toHtmlEscaped())
        : p.classNames.size() == 1 ? tr("<b>1</b> class")
                                   : tr("<b>%1</b> classes").arg(int(p.classNames.size()));
    summary_->setText(sizes.join(QStringLiteral("  ·  ")) + QStringLiteral("<br>") +
                      tr("Input <tt>%1</tt> %2, values %3 … %4  ·  %5")
                          .arg(p.inputShape.toHtmlEscaped(), p.inputDtype, numberText(p.valueMin),
                               numberText(p.valueMax), task));
    refreshLoaderFacts();

    // Examples.
    grid_->setExamples(p.images, p.captions);
    table_->clear();
    table_->setRowCount(0);
    table_->setColumnCount(0);
    if (!p.images.empty()) {
        examplesCaption_->setText(
            tr("First %1 training examples, as the model sees them (after transforms)")
                .arg(int(p.images.size()))
                .toUpper());
        examples_->setCurrentWidget(grid_);
    } else if (!p.rows.empty()) {
        examplesCaption_->setText(
            tr("First %1 training rows (after transforms)").arg(int(p.rows.size())).toUpper());
        table_->setColumnCount(int(p.columns.size()));
        table_->setHorizontalHeaderLabels(p.columns);
        table_->setRowCount(int(p.rows.size()));
        for (int r = 0; r < int(p.rows.size()); ++r)
            for (int c = 0; c < int(p.rows[size_t(r)].size()); ++c) {
                auto* item = new QTableWidgetItem(p.rows[size_t(r)][c]);
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                if (c == int(p.columns.size()) - 1) {
                    QFont bold = item->font();
                    bold.setBold(true);
                    item->setFont(bold); // the target
                }
                table_->setItem(r, c, item);
            }
        // A few columns share the width; many keep their own and scroll.
        table_->horizontalHeader()->setSectionResizeMode(
            p.columns.size() <= 12 ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
        examples_->setCurrentWidget(table_);
    } else {
        examplesCaption_->setText(tr("Training examples").toUpper());
        examplesNote_->setText(p.examplesNote.isEmpty() ? tr("The training split is empty.")
                                                        : p.examplesNote);
        examples_->setCurrentWidget(examplesNote_);
    }

    // Class balance, or the target's distribution for regression.
    chart_->clearPlottables();
    chart_->clearItems();
    auto* bars = new QCPBars(chart_->xAxis, chart_->yAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colors::kAccent);
    double top = 0;
    if (!p.classNames.empty()) {
        chartCaption_->setText(tr("Class balance (training split)").toUpper());
        targetStats_->hide();
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        QVector<double> keys, values;
        for (size_t c = 0; c < p.classNames.size(); ++c) {
            const double count = c < p.classCounts.size() ? double(p.classCounts[c]) : 0.0;
            keys << double(c);
            values << count;
            ticker->addTick(double(c), QString::fromStdString(p.classNames[c]));
            top = std::max(top, count);
        }
        bars->setWidth(0.7);
        bars->setData(keys, values, true);
        chart_->xAxis->setTicker(ticker);
        chart_->xAxis->setTickLabelRotation(p.classNames.size() > 12 ? 45 : 0);
        chart_->xAxis->setLabel(QString());
        chart_->xAxis->setRange(-0.6, double(p.classNames.size()) - 0.4);
        // Counts above the bars while they fit.
        if (p.classNames.size() <= 20)
            for (int c = 0; c < int(keys.size()); ++c) {
                auto* label = new QCPItemText(chart_);
                label->position->setCoords(keys[c], values[c]);
                label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
                label->setText(groupDigits(int64_t(values[c])));
                label->setColor(colors::kMutedText);
                label->setFont(chart_->xAxis->tickLabelFont());
                label->setPadding(QMargins(0, 0, 0, 2));
            }
    } else {
        chartCaption_->setText(
            tr("Distribution of %1 (training split)").arg(p.targetName).toUpper());
        targetStats_->setText(
            tr("min <b>%1</b>  ·  mean <b>%2</b>  ·  max <b>%3</b>")
                .arg(numberText(p.targetMin), numberText(p.targetMean), numberText(p.targetMax)));
        targetStats_->show();
        QVector<double> keys(p.histogramCenters.begin(), p.histogramCenters.end());
        QVector<double> values(p.histogramCounts.begin(), p.histogramCounts.end());
        for (double v : values)
            top = std::max(top, v);
        bars->setWidth(p.histogramWidth * 0.92);
        bars->setData(keys, values, true);
        chart_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        chart_->xAxis->setTickLabelRotation(0);
        chart_->xAxis->setLabel(p.targetName);
        if (!keys.isEmpty())
            chart_->xAxis->setRange(keys.front() - p.histogramWidth,
                                    keys.back() + p.histogramWidth);
    }
    chart_->yAxis->setRange(0, std::max(1.0, top * 1.15));
    chart_->replot();
}

int DataPage::previewImageCount() const {
    return grid_->count();
}

} // namespace myelin::ui
