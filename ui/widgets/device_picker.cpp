#include "widgets/device_picker.h"

#include "widgets/wrapped_label.h"

#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>

#include <QComboBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

QString gibibytes(int64_t bytes) {
    return QStringLiteral("%1 GiB").arg(double(bytes) / double(int64_t(1) << 30), 0, 'f', 1);
}

// "cuda" and "cuda:0" are one device; text that names none stays as it is.
QString normalized(const QString& device) {
    try {
        return QString::fromStdString(parse_device(device.toStdString()).str());
    } catch (const Error&) {
        return device;
    }
}

// Why training cannot run on `device` (empty when it can).
QString refusalOf(const QString& device) {
    try {
        check_training_device(parse_device(device.toStdString()));
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

DevicePicker::DevicePicker(QWidget* parent) : QWidget(parent) {
    combo_ = new QComboBox(this);
    combo_->setObjectName(QStringLiteral("trainDevice"));
    combo_->setToolTip(tr("Where training runs (the project's training.device)."));

    QString cpuDetails;
    for (const BackendInfo& b : available_backends())
        if (b.type == DeviceType::CPU) cpuDetails = QString::fromStdString(b.details);
    addDevice(tr("CPU · %1").arg(cpuDetails), QStringLiteral("cpu"), {});

    const CudaStatus& cuda = cuda_status();
    if (cuda.devices.empty()) {
        const QString reason = QString::fromStdString(cuda.reason);
        addDevice(cuda.compiled ? tr("CUDA · no usable GPU") : tr("CUDA · not in this build"),
                  QStringLiteral("cuda"), reason);
        gpuNote_ = tr("GPU: %1").arg(reason);
    }
    for (const GpuInfo& gpu : cuda.devices) {
        const QString device = QString::fromStdString(cuda_device(gpu.index).str());
        const QString refusal = refusalOf(device);
        addDevice(QStringLiteral("%1 · %2 · %3")
                      .arg(device, QString::fromStdString(gpu.name), gibibytes(gpu.total_memory)),
                  device, refusal);
        if (!refusal.isEmpty() && gpuNote_.isEmpty()) gpuNote_ = refusal;
    }
    fixedCount_ = combo_->count();
    combo_->setCurrentIndex(0);

    note_ = new WrappedLabel(this);
    note_->setObjectName(QStringLiteral("trainDeviceNote"));
    note_->setWordWrap(true);
    note_->setProperty("class", QStringLiteral("componentDoc"));
    updateNote();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(combo_);
    layout->addWidget(note_);

    connect(combo_, &QComboBox::currentIndexChanged, this, [this] {
        updateNote();
        emit deviceChosen(device());
    });
}

void DevicePicker::addDevice(const QString& text, const QString& data, const QString& refusal) {
    combo_->addItem(text, data);
    const int row = combo_->count() - 1;
    if (refusal.isEmpty()) return;
    combo_->setItemData(row, refusal, Qt::ToolTipRole);
    if (auto* model = qobject_cast<QStandardItemModel*>(combo_->model()))
        model->item(row)->setEnabled(false);
}

void DevicePicker::setDevice(const QString& device) {
    const QSignalBlocker blocker(combo_);
    while (combo_->count() > fixedCount_)
        combo_->removeItem(combo_->count() - 1);
    int row = -1;
    for (int i = 0; i < combo_->count() && row < 0; ++i)
        if (normalized(combo_->itemData(i).toString()) == normalized(device)) row = i;
    if (row < 0) {
        addDevice(tr("%1 · from the project").arg(device), device, refusalOf(device));
        row = combo_->count() - 1;
    }
    combo_->setCurrentIndex(row);
    updateNote();
}

QString DevicePicker::device() const {
    return combo_->currentData().toString();
}

void DevicePicker::updateNote() {
    const int row = combo_->currentIndex();
    const QString refusal = combo_->itemData(row, Qt::ToolTipRole).toString();
    const auto* model = qobject_cast<QStandardItemModel*>(combo_->model());
    const bool usable = model == nullptr || row < 0 || model->item(row)->isEnabled();
    const QString note = usable ? gpuNote_
                                : tr("This project trains on %1, which cannot be used here; "
                                     "choose the CPU to train on this machine.\n%2")
                                      .arg(device(), refusal);
    note_->setText(note);
    note_->setVisible(!note.isEmpty());
}

} // namespace myelin::ui
