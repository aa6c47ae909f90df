#include "eval/single_example_view.h"

#include "eval/example_render.h"
#include "inspect/feature_map_widgets.h"
#include "widgets/theme.h"

#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/io/project.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace myelin::ui {

namespace {

constexpr int kInputSide = 168; // the input picture's side in pixels

QString shapeText(const Tensor& t) {
    QStringList dims;
    for (int64_t d : t.sizes())
        dims << QString::number(d);
    return QStringLiteral("[%1]").arg(dims.join(QStringLiteral(", ")));
}

} // namespace

SingleExampleView::SingleExampleView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("singleExampleView"));
    title_ = new QLabel(tr("No model loaded."), this);
    title_->setObjectName(QStringLiteral("singleExampleTitle"));
    title_->setProperty("class", QStringLiteral("sectionHeading"));

    indexBox_ = new QSpinBox(this);
    indexBox_->setObjectName(QStringLiteral("singleExampleIndex"));
    indexBox_->setKeyboardTracking(false);
    connect(indexBox_, &QSpinBox::valueChanged, this, [this](int i) { showExample(i); });
    previous_ = new QPushButton(tr("◀ Previous"), this);
    next_ = new QPushButton(tr("Next ▶"), this);
    connect(previous_, &QPushButton::clicked, this,
            [this] { showExample(std::max<int64_t>(0, index_ - 1)); });
    connect(next_, &QPushButton::clicked, this, [this] { showExample(index_ + 1); });
    openImage_ = new QPushButton(tr("Open image…"), this);
    openImage_->setObjectName(QStringLiteral("singleExampleOpenImage"));
    connect(openImage_, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open an image"), QString(),
                                         tr("Images (*.png *.jpg *.jpeg *.bmp *.gif *.pgm *.ppm)"));
        if (!path.isEmpty()) openImage(path);
    });
    row_ = new QLineEdit(this);
    row_->setObjectName(QStringLiteral("singleExampleRow"));
    row_->setPlaceholderText(tr("values, comma-separated"));
    runRow_ = new QPushButton(tr("Predict"), this);
    connect(runRow_, &QPushButton::clicked, this, [this] { showRow(row_->text()); });
    connect(row_, &QLineEdit::returnPressed, this, [this] { showRow(row_->text()); });
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Test example"), this));
    controls->addWidget(indexBox_);
    controls->addWidget(previous_);
    controls->addWidget(next_);
    controls->addSpacing(16);
    controls->addWidget(openImage_);
    controls->addWidget(row_, 1);
    controls->addWidget(runRow_);
    controls->addStretch();

    problemLabel_ = new QLabel(this);
    problemLabel_->setObjectName(QStringLiteral("singleExampleProblem"));
    problemLabel_->setProperty("class", QStringLiteral("fieldError"));
    problemLabel_->setWordWrap(true);
    problemLabel_->hide();

    // Left column: the input and the prediction.
    inputPicture_ = new QLabel(this);
    inputPicture_->setObjectName(QStringLiteral("singleExampleInput"));
    inputPicture_->setAlignment(Qt::AlignCenter);
    inputPicture_->setMinimumSize(kInputSide, kInputSide);
    inputText_ = new QLabel(this);
    inputText_->setWordWrap(true);
    inputText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    predictionText_ = new QLabel(this);
    predictionText_->setObjectName(QStringLiteral("singleExamplePrediction"));
    predictionText_->setWordWrap(true);
    probabilities_ = new QCustomPlot(this);
    probabilities_->setObjectName(QStringLiteral("singleExampleProbabilities"));
    probabilities_->setMinimumHeight(170);
    stylePlot(probabilities_, {probabilities_->xAxis, probabilities_->yAxis});
    auto* left = new QWidget(this);
    left->setMinimumWidth(330);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(inputPicture_);
    leftLayout->addWidget(inputText_);
    leftLayout->addWidget(predictionText_);
    leftLayout->addWidget(probabilities_, 1);

    // Right: the layers, and the chosen one's activation.
    layerList_ = new QListWidget(this);
    layerList_->setObjectName(QStringLiteral("singleExampleLayers"));
    layerList_->setMaximumWidth(260);
    connect(layerList_, &QListWidget::currentRowChanged, this, &SingleExampleView::showLayer);
    layerTitle_ = new QLabel(this);
    layerTitle_->setObjectName(QStringLiteral("singleExampleLayerTitle"));
    grid_ = new ChannelGrid(this);
    histogram_ = new QCustomPlot(this);
    histogram_->setObjectName(QStringLiteral("singleExampleHistogram"));
    stylePlot(histogram_, {histogram_->xAxis, histogram_->yAxis});
    histogram_->xAxis->setLabel(tr("activation value"));
    histogram_->yAxis->setLabel(tr("values"));
    layerStack_ = new QStackedWidget(this);
    layerStack_->addWidget(grid_);
    layerStack_->addWidget(histogram_);
    auto* layerPane = new QWidget(this);
    auto* layerLayout = new QVBoxLayout(layerPane);
    layerLayout->setContentsMargins(0, 0, 0, 0);
    layerLayout->addWidget(layerTitle_);
    layerLayout->addWidget(layerStack_, 1);
    auto* right = new QSplitter(Qt::Horizontal, this);
    right->addWidget(layerList_);
    right->addWidget(layerPane);
    right->setStretchFactor(1, 1);

    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 5);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(title_);
    layout->addLayout(controls);
    layout->addWidget(problemLabel_);
    layout->addWidget(split, 1);
    updateControls();
}

SingleExampleView::~SingleExampleView() = default;

QString SingleExampleView::message() const {
    return problem_;
}

QString SingleExampleView::inputNote() const {
    return inputNote_;
}

int64_t SingleExampleView::exampleCount() const {
    return dataset_ ? dataset_->size() : 0;
}

void SingleExampleView::say(const QString& problem) {
    problem_ = problem;
    problemLabel_->setText(problem);
    problemLabel_->setVisible(!problem.isEmpty());
}

void SingleExampleView::updateControls() {
    const bool model = trainer_ != nullptr;
    const bool tabular = model && !imageInput_;
    indexBox_->setEnabled(model && exampleCount() > 0);
    previous_->setEnabled(model && index_ > 0);
    next_->setEnabled(model && index_ + 1 < exampleCount());
    openImage_->setVisible(model && imageInput_);
    row_->setVisible(tabular);
    runRow_->setVisible(tabular);
}

void SingleExampleView::setModel(const io::Project& project, const QString& projectDir,
                                 const QString& checkpointPath) {
    trainer_.reset();
    dataset_.reset();
    activations_.clear();
    layerList_->clear();
    index_ = -1;
    std::string split;
    QGuiApplication::setOverrideCursor(Qt::WaitCursor);
    try {
        trainer_ = train::trainer_for_checkpoint(project, projectDir.toStdString(),
                                                 checkpointPath.toStdString());
        dataset_ = train::evaluation_dataset(*trainer_, &split);
    } catch (const std::exception& e) {
        QGuiApplication::restoreOverrideCursor();
        trainer_.reset();
        title_->setText(tr("%1 cannot be tried").arg(QFileInfo(checkpointPath).fileName()));
        say(QString::fromUtf8(e.what()));
        updateControls();
        return;
    }
    QGuiApplication::restoreOverrideCursor();
    classNames_ = trainer_->data().class_names;
    imageInput_ = dataset_->size() > 0 && eval::isImageInput(dataset_->get(0).input);
    title_->setText(tr("%1: %2 %3 examples")
                        .arg(QFileInfo(checkpointPath).fileName())
                        .arg(QLocale().toString(qlonglong(dataset_->size())))
                        .arg(QString::fromStdString(split)));
    const QSignalBlocker block(indexBox_);
    indexBox_->setRange(0, int(std::max<int64_t>(0, dataset_->size() - 1)));
    say({});
    if (dataset_->size() > 0) showExample(0);
    updateControls();
}

void SingleExampleView::showExample(int64_t index) {
    if (!trainer_ || !dataset_) return;
    if (index < 0 || index >= dataset_->size()) {
        say(tr("There is no example %1: the %2 examples are numbered 0 to %3.")
                .arg(index)
                .arg(dataset_->size())
                .arg(dataset_->size() - 1));
        return;
    }
    const data::Example example = dataset_->get(index);
    index_ = index;
    {
        const QSignalBlocker block(indexBox_);
        indexBox_->setValue(int(index));
    }
    inputNote_.clear();
    say({});
    run(example.input, tr("Example %1").arg(index), example.target);
    updateControls();
}

bool SingleExampleView::openImage(const QString& path) {
    if (!trainer_ || !dataset_ || dataset_->size() == 0) return false;
    if (!imageInput_) {
        say(tr("This project's inputs are not images: enter a row of values instead."));
        return false;
    }
    QImage image(path);
    if (image.isNull()) {
        say(tr("%1 is not an image that can be read (PNG, JPEG, BMP, GIF, PGM or PPM).")
                .arg(QFileInfo(path).fileName()));
        return false;
    }
    const Tensor like = dataset_->get(0).input;
    const bool planar = like.dim() == 3;
    const int64_t channels = planar ? like.size(0) : 1;
    const int height = int(like.size(planar ? 1 : 0)), width = int(like.size(planar ? 2 : 1));
    if (channels != 1 && channels != 3) {
        say(tr("The model takes %1 channels; only grey (1) and colour (3) images can be opened.")
                .arg(channels));
        return false;
    }
    QStringList notes;
    if (image.width() != width || image.height() != height) {
        notes << tr("resized from %1×%2 to %3×%4 pixels")
                     .arg(image.width())
                     .arg(image.height())
                     .arg(width)
                     .arg(height);
        image = image.scaled(width, height, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    }
    if (channels == 1 && !image.isGrayscale()) notes << tr("converted to grey");
    image =
        image.convertToFormat(channels == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
    Tensor raw = empty({channels, height, width}, DType::UInt8);
    uint8_t* out = raw.data<uint8_t>();
    for (int y = 0; y < height; ++y) {
        const uchar* line = image.constScanLine(y);
        for (int x = 0; x < width; ++x)
            for (int64_t c = 0; c < channels; ++c)
                out[(c * height + y) * width + x] = line[x * channels + c];
    }
    if (like.dtype() != DType::UInt8) {
        // The data's images are floats: the file's 0..255 as 0..1, as ToTensor reads them.
        raw = raw.to(DType::Float32).div_(255.0).to(like.dtype());
        notes << tr("scaled to 0..1");
    }
    if (!planar) raw = raw.squeeze(0);
    inputNote_ = notes.join(QStringLiteral(", "));
    index_ = -1;
    say({});
    run(raw,
        QFileInfo(path).fileName() +
            (inputNote_.isEmpty() ? QString()
                                  : QStringLiteral(" (") + inputNote_ + QStringLiteral(")")),
        Tensor());
    updateControls();
    return true;
}

bool SingleExampleView::showRow(const QString& csvRow) {
    if (!trainer_ || !dataset_ || dataset_->size() == 0) return false;
    const Tensor like = dataset_->get(0).input;
    if (imageInput_) {
        say(tr("This project's inputs are images: open an image file instead."));
        return false;
    }
    const QStringList fields = csvRow.split(QLatin1Char(','));
    if (fields.size() != like.numel()) {
        say(tr("The row has %1 value(s); the model takes %2.")
                .arg(fields.size())
                .arg(like.numel()));
        return false;
    }
    std::vector<float> values;
    for (int i = 0; i < fields.size(); ++i) {
        bool ok = false;
        const double v = fields[i].trimmed().toDouble(&ok);
        if (!ok) {
            say(tr("Value %1 of the row, '%2', is not a number.")
                    .arg(i + 1)
                    .arg(fields[i].trimmed()));
            return false;
        }
        values.push_back(float(v));
    }
    Tensor raw =
        from_vector(values, {int64_t(values.size())}).reshape(like.sizes()).to(like.dtype());
    index_ = -1;
    inputNote_.clear();
    say({});
    run(raw, tr("The row entered"), Tensor());
    updateControls();
    return true;
}

void SingleExampleView::run(const Tensor& raw, const QString& caption, const Tensor& target) {
    const train::DataSplits& data = trainer_->data();
    Generator generator(trainer_->spec().seed);
    Tensor input = data.eval_transform ? (*data.eval_transform)(raw, generator) : raw;
    graph::GraphModule& model = trainer_->model();
    const bool wasTraining = model.is_training();
    model.eval();
    std::vector<Activation> activations;
    std::vector<HookHandle> hooks;
    for (const auto& [name, layer] : model.named_children())
        hooks.push_back(layer->register_forward_hook(
            [&activations, name = name](nn::Module& m, const TensorList&, const Tensor& out) {
                if (out.defined() && out.dim() >= 1 && out.size(0) == 1)
                    activations.push_back({name, m.type_name(), out.select(0, 0).contiguous()});
                return Tensor();
            }));
    Tensor output;
    try {
        autograd::NoGradGuard noGrad;
        AutocastGuard amp(trainer_->autocast_dtype());
        output = model(input.unsqueeze(0)).select(0, 0).contiguous();
    } catch (const std::exception& e) {
        say(QString::fromUtf8(e.what()));
    }
    for (auto& hook : hooks)
        hook.remove();
    model.train(wasTraining);
    if (!output.defined()) return;
    output_ = output;
    activations_ = std::move(activations);
    showInput(raw, caption, target);
    showPrediction(target);
    const std::string keep = selectedLayer();
    {
        const QSignalBlocker block(layerList_);
        layerList_->clear();
        for (const Activation& a : activations_)
            layerList_->addItem(QStringLiteral("%1  %2  %3")
                                    .arg(QString::fromStdString(a.layer),
                                         QString::fromStdString(a.kind), shapeText(a.values)));
    }
    int row = 0;
    for (size_t i = 0; i < activations_.size(); ++i)
        if (activations_[i].layer == keep) row = int(i);
    layerList_->setCurrentRow(row);
    showLayer(row);
}

} // namespace myelin::ui
