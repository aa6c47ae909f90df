#include "pages/training_device.h"

#include "pages/training_page_form.h"

#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>

#include <QComboBox>
#include <QLabel>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

QString gibibytes(int64_t bytes) {
    return QStringLiteral("%1 GiB").arg(double(bytes) / double(int64_t(1) << 30), 0, 'f', 1);
}

// Adds an entry; a non-empty `refusal` greys it and becomes its tooltip.
void addDevice(QComboBox* combo, const QString& text, const QString& data, const QString& refusal) {
    combo->addItem(text, data);
    const int row = combo->count() - 1;
    if (refusal.isEmpty()) return;
    combo->setItemData(row, refusal, Qt::ToolTipRole);
    if (auto* model = qobject_cast<QStandardItemModel*>(combo->model()))
        model->item(row)->setEnabled(false);
}

} // namespace

QWidget* makeDevicePicker(QWidget* parent) {
    auto* box = new QWidget(parent);
    auto* combo = new QComboBox(box);
    combo->setObjectName(QStringLiteral("trainDevice"));
    combo->setToolTip(QObject::tr("Where training runs."));

    QString cpuDetails;
    for (const BackendInfo& b : available_backends())
        if (b.type == DeviceType::CPU) cpuDetails = QString::fromStdString(b.details);
    addDevice(combo, QObject::tr("CPU · %1").arg(cpuDetails), QStringLiteral("cpu"), {});

    const CudaStatus& cuda = cuda_status();
    QString note;
    if (cuda.devices.empty()) {
        const QString reason = QString::fromStdString(cuda.reason);
        addDevice(combo,
                  cuda.compiled ? QObject::tr("CUDA · no usable GPU")
                                : QObject::tr("CUDA · not in this build"),
                  QStringLiteral("cuda"), reason);
        note = QObject::tr("GPU: %1").arg(reason);
    }
    for (const GpuInfo& gpu : cuda.devices) {
        const Device device = cuda_device(gpu.index);
        QString refusal;
        try {
            check_training_device(device);
        } catch (const Error& e) {
            refusal = QString::fromStdString(e.what());
        }
        addDevice(combo,
                  QStringLiteral("%1 · %2 · %3")
                      .arg(QString::fromStdString(device.str()), QString::fromStdString(gpu.name),
                           gibibytes(gpu.total_memory)),
                  QString::fromStdString(device.str()), refusal);
        if (!refusal.isEmpty() && note.isEmpty()) note = refusal;
    }
    combo->setCurrentIndex(0);

    QLabel* noteLabel = training_form::noteLabel(QStringLiteral("trainDeviceNote"), box);
    noteLabel->setProperty("class", QStringLiteral("componentDoc"));
    noteLabel->setText(note);
    noteLabel->setVisible(!note.isEmpty());

    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(combo);
    layout->addWidget(noteLabel);
    return box;
}

} // namespace myelin::ui
