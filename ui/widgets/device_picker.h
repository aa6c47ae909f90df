#pragma once
// The device picker of the Training page and the resume / fork dialog: the CPU and each CUDA device
// by name and memory. A device training cannot use is greyed, with the reason as its tooltip and in
// the note under the list (the runtime's own words where there is no usable GPU). It shows the
// project's training.device; a device the project names that is not listed (cuda:3 on a machine
// with one GPU) gets a greyed entry of its own, and a selected device that cannot be used says so
// in the note (Train then refuses to start with that reason).
#include <QString>
#include <QWidget>

class QComboBox;
class QLabel;

namespace myelin::ui {

// A combo box "trainDevice" (item data: "cpu", "cuda:N"; "cuda" for the entry standing for
// CUDA where there is no GPU) over a note "trainDeviceNote".
class DevicePicker : public QWidget {
    Q_OBJECT

  public:
    explicit DevicePicker(QWidget* parent = nullptr);

    // Selects the entry of `device` ("cpu", "cuda", "cuda:N", as training.device holds it)
    // without emitting deviceChosen.
    void setDevice(const QString& device);
    // The selected entry's device text.
    QString device() const;

  signals:
    // The user chose an entry (a usable one: greyed entries cannot be chosen).
    void deviceChosen(const QString& device);

  private:
    void addDevice(const QString& text, const QString& data, const QString& refusal);
    void updateNote();

    QComboBox* combo_ = nullptr;
    QLabel* note_ = nullptr;
    QString gpuNote_;    // why the GPUs cannot be used, shown whatever is selected
    int fixedCount_ = 0; // entries of this machine; an entry after them is the project's
};

} // namespace myelin::ui
