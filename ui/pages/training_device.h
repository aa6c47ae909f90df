#pragma once
// The Training page's device picker: the CPU and each CUDA device by name and memory. A device
// training cannot use is greyed, with the reason as its tooltip and in the note under the list
// (the runtime's own words where there is no usable GPU). The selectable device is what the
// trainer runs on.
class QWidget;

namespace myelin::ui {

// A combo box "trainDevice" (item data: "cpu", "cuda:N") over a note "trainDeviceNote".
QWidget* makeDevicePicker(QWidget* parent);

} // namespace myelin::ui
