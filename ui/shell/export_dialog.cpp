#include "shell/export_dialog.h"

#include "runs/checkpoint_picker.h"

#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/io/checkpoint.h>

#include <QButtonGroup>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <filesystem>

namespace myelin::ui {

namespace {

using exporters::Format;

QString describe(Format format) {
    switch (format) {
    case Format::Onnx:
        return QObject::tr("ONNX (opset 17, batch size free): for ONNX Runtime, OpenCV and other "
                           "inference engines");
    case Format::PyTorch:
        return QObject::tr("PyTorch code: one .py with the model as an nn.Module and a loader for "
                           "the weights (needs only torch)");
    case Format::Safetensors:
        return QObject::tr("safetensors with the project, classes, input and preprocessing inside "
                           "(myelin eval opens it alone), and a model card beside it");
    }
    return {};
}

QString withExtension(const QString& path, Format format) {
    const QFileInfo info(path);
    return QDir(info.path())
        .filePath(info.completeBaseName() +
                  QString::fromLatin1(exporters::format_extension(format)));
}

} // namespace

ExportDialog::ExportDialog(const QString& storePath, qint64 run, const QString& outputFolder,
                           QWidget* parent)
    : QDialog(parent), outputFolder_(outputFolder) {
    setObjectName(QStringLiteral("exportDialog"));
    setWindowTitle(tr("Export a Trained Model"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    picker_ = new CheckpointPicker(this);
    form->addRow(tr("Checkpoint"), picker_);

    auto* formats = new QVBoxLayout;
    formatGroup_ = new QButtonGroup(this);
    for (Format format : {Format::Onnx, Format::PyTorch, Format::Safetensors}) {
        auto* button = new QRadioButton(describe(format), this);
        button->setObjectName(QStringLiteral("exportFormat_") +
                              QString::fromLatin1(exporters::format_name(format)));
        formatGroup_->addButton(button, int(format));
        formats->addWidget(button);
    }
    formatGroup_->button(int(Format::Onnx))->setChecked(true);
    form->addRow(tr("Format"), formats);

    output_ = new QLineEdit(this);
    output_->setObjectName(QStringLiteral("exportOutput"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, &ExportDialog::chooseOutput);
    auto* outputRow = new QHBoxLayout;
    outputRow->addWidget(output_, 1);
    outputRow->addWidget(browse);
    form->addRow(tr("Save as"), outputRow);
    layout->addLayout(form);

    plan_ = new QLabel(this);
    plan_->setObjectName(QStringLiteral("exportPlan"));
    plan_->setWordWrap(true);
    plan_->setTextFormat(Qt::RichText);
    plan_->setMinimumHeight(90);
    plan_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    layout->addWidget(plan_, 1);
    outcome_ = new QLabel(this);
    outcome_->setObjectName(QStringLiteral("exportOutcome"));
    outcome_->setWordWrap(true);
    outcome_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(outcome_);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    exportButton_ = buttons->addButton(tr("Export"), QDialogButtonBox::ActionRole);
    exportButton_->setObjectName(QStringLiteral("exportStart"));
    // Export does not close the dialog: the outcome is read here, then Close.
    connect(exportButton_, &QPushButton::clicked, this, &ExportDialog::startExport);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);

    connect(picker_, &CheckpointPicker::changed, this, &ExportDialog::onCheckpointChanged);
    connect(formatGroup_, &QButtonGroup::idClicked, this, [this] {
        if (!output_->text().isEmpty())
            output_->setText(withExtension(output_->text(), Format(formatGroup_->checkedId())));
        updatePlan();
    });
    connect(output_, &QLineEdit::textChanged, this, &ExportDialog::updatePlan);
    connect(&watcher_, &QFutureWatcher<QString>::finished, this, &ExportDialog::onExportDone);
    picker_->setStorePath(storePath);
    if (run >= 0) picker_->selectRun(run);
    if (!picker_->problem().isEmpty()) outcome_->setText(picker_->problem());
    resize(820, 400);
}

ExportDialog::~ExportDialog() {
    watcher_.waitForFinished();
}

void ExportDialog::onCheckpointChanged() {
    const QString checkpoint = picker_->checkpointPath();
    if (!checkpoint.isEmpty()) {
        // <run name>-run<id>-step<step>.<ext>, or the file's own name.
        QString base = QFileInfo(checkpoint).completeBaseName();
        if (const auto step = picker_->checkpointStep()) {
            QString name = picker_->runName();
            name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")),
                         QStringLiteral("_"));
            base = QStringLiteral("%1-run%2-step%3")
                       .arg(name.isEmpty() ? QStringLiteral("model") : name)
                       .arg(picker_->runId())
                       .arg(*step);
        }
        output_->setText(QDir(outputFolder_)
                             .filePath(base + QString::fromLatin1(exporters::format_extension(
                                                  Format(formatGroup_->checkedId())))));
    }
    updatePlan();
}

QString ExportDialog::checkpointPath() const {
    return picker_->checkpointPath();
}

void ExportDialog::setFormat(int format) {
    formatGroup_->button(format)->click();
}

void ExportDialog::chooseOutput() {
    const Format format = Format(formatGroup_->checkedId());
    const QString file = QFileDialog::getSaveFileName(
        this, tr("Export As"), output_->text(),
        QStringLiteral("*") + QString::fromLatin1(exporters::format_extension(format)));
    if (!file.isEmpty()) output_->setText(file);
}

void ExportDialog::updatePlan() {
    const QString checkpoint = checkpointPath();
    const Format format = Format(formatGroup_->checkedId());
    const QString out = output_->text();
    exportButton_->setEnabled(!checkpoint.isEmpty() && !out.isEmpty() && !watcher_.isRunning());
    if (checkpoint.isEmpty()) {
        plan_->setText(tr("Choose a checkpoint: runs that wrote one are listed above."));
        return;
    }
    QStringList lines;
    lines << tr("Writes <b>%1</b>").arg(out.toHtmlEscaped());
    if (format == Format::Safetensors)
        lines << tr("and its model card <b>%1</b>")
                     .arg(QString::fromStdString(
                              exporters::model_card_path(out.toStdString()).string())
                              .toHtmlEscaped());
    lines << tr("from %1.").arg(checkpoint.toHtmlEscaped());
    if (format == Format::Onnx) {
        try {
            const auto source =
                exporters::load_export_source(std::nullopt, checkpoint.toStdString());
            const auto notes = exporters::onnx_runtime_notes(source);
            if (notes.empty())
                lines << tr("Runs in ONNX Runtime and in OpenCV 4.6's DNN module (Debian 12).");
            else {
                lines << tr("Runs in ONNX Runtime. OpenCV 4.6's DNN module cannot run all of it:");
                for (const auto& note : notes)
                    lines << QStringLiteral("&nbsp;&nbsp;• ") +
                                 QString::fromStdString(note).toHtmlEscaped();
            }
        } catch (const Error& e) {
            lines << tr("<b>Cannot export this checkpoint:</b> %1")
                         .arg(QString::fromUtf8(e.what()).toHtmlEscaped());
            exportButton_->setEnabled(false);
        }
    }
    if (QFileInfo::exists(out) && out != writtenPath_)
        lines << tr("The file exists and will be replaced.");
    plan_->setText(lines.join(QStringLiteral("<br>")));
}

void ExportDialog::startExport() {
    if (watcher_.isRunning()) return;
    const std::string checkpoint = checkpointPath().toStdString();
    const std::string out = output_->text().toStdString();
    const Format format = Format(formatGroup_->checkedId());
    writtenPath_ = output_->text();
    exportButton_->setEnabled(false);
    plan_->setEnabled(false);
    outcome_->setText(tr("Exporting…"));
    watcher_.setFuture(QtConcurrent::run([checkpoint, out, format]() -> QString {
        try {
            const auto source = exporters::load_export_source(std::nullopt, checkpoint);
            exporters::export_model(source, format, out);
            // Read back what was written before saying it is done.
            if (format == Format::Safetensors) {
                const io::Checkpoint written = io::load_checkpoint(out);
                if (written.model.size() != source.weights.size())
                    return QObject::tr("%1 was written but reads back with %2 tensors, not %3")
                        .arg(QString::fromStdString(out))
                        .arg(written.model.size())
                        .arg(source.weights.size());
            } else if (format == Format::Onnx) {
                const std::string bytes = exporters::onnx_model_bytes(source);
                if (std::filesystem::file_size(out) != bytes.size())
                    return QObject::tr("%1 was written but its size differs from the model's")
                        .arg(QString::fromStdString(out));
            } else if (std::filesystem::file_size(out) == 0) {
                return QObject::tr("%1 was written empty").arg(QString::fromStdString(out));
            }
            return {};
        } catch (const std::exception& e) {
            return QString::fromUtf8(e.what());
        }
    }));
}

void ExportDialog::onExportDone() {
    const QString error = watcher_.result();
    if (!error.isEmpty()) writtenPath_.clear();
    if (error.isEmpty()) {
        const qint64 bytes = QFileInfo(writtenPath_).size();
        outcome_->setText(tr("Written and read back: %1 (%2).")
                              .arg(writtenPath_, QLocale().formattedDataSize(bytes)));
    } else {
        outcome_->setText(tr("Nothing was written: %1").arg(error));
    }
    plan_->setEnabled(true);
    updatePlan();
    emit exportFinished(error.isEmpty());
}

QString ExportDialog::outcome() const {
    return outcome_->text();
}

} // namespace myelin::ui
