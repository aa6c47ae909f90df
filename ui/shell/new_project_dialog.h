#pragma once
// File > New: an empty model, or a copy of one of the bundled example projects.
#include <QDialog>

class QListWidget;

namespace myelin::ui {

// The folder of the bundled example projects (*.myelin), the first that exists of:
//   $MYELIN_EXAMPLES_DIR
//   <executable's folder>/../share/myelin/examples      (an installed studio)
//   <executable's folder>/../../resources/examples      (build/app/myelin-studio in a checkout)
//   <executable's folder>/../resources/examples
//   $MYELIN_SOURCE_DIR/resources/examples               (tests and development shells)
// Empty when none exists.
QString exampleDirectory();

class NewProjectDialog : public QDialog {
    Q_OBJECT

  public:
    explicit NewProjectDialog(QWidget* parent = nullptr);

    // The example chosen, or empty for an empty model.
    QString selectedExample() const;
    QListWidget* list() const { return list_; }

  private:
    QListWidget* list_ = nullptr;
};

} // namespace myelin::ui
