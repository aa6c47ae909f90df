#pragma once
// Help > Plugins…: the folders searched for plugins, the plugins loaded with the kinds each adds,
// and the ones refused with the reason (what `myelin plugins` prints).
#include <QDialog>

namespace myelin::ui {

class PluginsDialog : public QDialog {
    Q_OBJECT

  public:
    explicit PluginsDialog(QWidget* parent = nullptr);
};

} // namespace myelin::ui
