#pragma once
// Train > Compute Backends…: the backends this process can train on, with their details.
#include <QDialog>

namespace myelin::ui {

class BackendsDialog : public QDialog {
    Q_OBJECT

  public:
    explicit BackendsDialog(QWidget* parent = nullptr);
};

} // namespace myelin::ui
